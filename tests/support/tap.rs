//! A wire tap in front of a real MongoDB-protocol server: a TCP proxy on
//! a free loopback port that passes every byte both ways and keeps each
//! OP_MSG command a client sent (its body, as relaxed extended JSON), so a
//! test sees what really went over the wire, whatever the server keeps.

use benchcage::clients::mongodb::{document_json, wire};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A running tap; its threads end when it is dropped and its clients
/// have gone.
pub struct Tap {
    /// Where clients connect.
    pub port: u16,
    commands: Arc<Mutex<Vec<serde_json::Value>>>,
    stop: Arc<AtomicBool>,
}

impl Tap {
    /// A tap in front of the server on 127.0.0.1:`server`.
    pub fn start(server: u16) -> Tap {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let commands = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopped) = (commands.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let upstream = TcpStream::connect(("127.0.0.1", server)).expect("the server");
                let (mut from, mut to) =
                    (upstream.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Write);
                });
                let seen = seen.clone();
                std::thread::spawn(move || relay(client, upstream, &seen));
            }
        });
        Tap {
            port,
            commands,
            stop,
        }
    }

    /// Every command sent through the tap so far, in order.
    pub fn commands(&self) -> Vec<serde_json::Value> {
        self.commands.lock().unwrap().clone()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread, which then sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Passes the client's messages to the server one at a time, keeping
/// each OP_MSG body, until the client closes.
fn relay(mut client: TcpStream, mut server: TcpStream, seen: &Mutex<Vec<serde_json::Value>>) {
    let mut header = [0u8; wire::HEADER_LEN];
    while client.read_exact(&mut header).is_ok() {
        let h = wire::Header::parse(&header).expect("a message header");
        let mut msg = header.to_vec();
        msg.resize(h.length.max(wire::HEADER_LEN), 0);
        if client.read_exact(&mut msg[wire::HEADER_LEN..]).is_err() {
            break;
        }
        if h.op == wire::OP_MSG {
            let body = wire::parse_reply(&msg)
                .ok()
                .and_then(|r| wire::documents(&msg, r.docs).next())
                .and_then(Result::ok)
                .and_then(|d| document_json(d).ok());
            if let Some(body) = body {
                seen.lock().unwrap().push(body);
            }
        }
        if server.write_all(&msg).is_err() {
            break;
        }
    }
    let _ = server.shutdown(Shutdown::Write);
}
