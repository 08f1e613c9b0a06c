//! The round trip a cell's network really has, measured before its load:
//! a TCP connect-and-echo probe (one byte out, one back, `n` times on one
//! connection after the connect), the median kept for fidelity.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Round trips of one probe, sorted.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RoundTrips {
    /// How many echoes were timed.
    pub count: usize,
    pub median_us: u64,
    pub p10_us: u64,
    pub p90_us: u64,
}

impl RoundTrips {
    fn of(mut times: Vec<Duration>) -> RoundTrips {
        times.sort();
        let at = |q: f64| {
            let i = ((times.len() - 1) as f64 * q).round() as usize;
            times[i].as_micros() as u64
        };
        RoundTrips {
            count: times.len(),
            median_us: at(0.5),
            p10_us: at(0.1),
            p90_us: at(0.9),
        }
    }

    pub fn median(&self) -> Duration {
        Duration::from_micros(self.median_us)
    }
}

/// An echo server on `addr` (port 0 picks one) that serves each connection
/// on a thread of its own, until it is dropped.
pub struct Echo {
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Echo {
    pub fn start(addr: SocketAddr) -> io::Result<Echo> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let halt = stop.clone();
        let thread = std::thread::Builder::new()
            .name("probe-echo".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if halt.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    let Ok(mut s) = conn else { continue };
                    std::thread::spawn(move || {
                        let _ = s.set_nodelay(true);
                        let mut b = [0u8; 512];
                        while let Ok(n) = s.read(&mut b) {
                            if n == 0 || s.write_all(&b[..n]).is_err() {
                                break;
                            }
                        }
                    });
                }
            })?;
        Ok(Echo {
            addr,
            thread: Some(thread),
            stop,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Times `n` one-byte echoes through `addr` (which must lead to an echo
/// server), after one untimed echo that opens the path.
pub fn round_trips(addr: SocketAddr, n: usize, timeout: Duration) -> io::Result<RoundTrips> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(timeout))?;
    let mut b = [0u8; 1];
    let mut echo = |s: &mut TcpStream| -> io::Result<Duration> {
        let t = Instant::now();
        s.write_all(b"p")?;
        s.read_exact(&mut b)?;
        Ok(t.elapsed())
    };
    echo(&mut s)?;
    let times = (0..n.max(1))
        .map(|_| echo(&mut s))
        .collect::<io::Result<Vec<_>>>()?;
    Ok(RoundTrips::of(times))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Shape, relay::Relay};

    #[test]
    fn the_probe_measures_the_delay_a_relay_adds() {
        let echo = Echo::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let direct = round_trips(echo.addr(), 50, Duration::from_secs(5)).unwrap();
        let shape = Shape {
            delay: Duration::from_millis(1),
            ..Shape::default()
        };
        let relay = Relay::start("127.0.0.1:0".parse().unwrap(), echo.addr(), shape, &[]).unwrap();
        let relayed = round_trips(relay.addr(), 50, Duration::from_secs(5)).unwrap();
        relay.stop();
        assert_eq!(relayed.count, 50);
        assert!(
            direct.median() < Duration::from_millis(1),
            "loopback {direct:?}"
        );
        assert!(
            relayed.median() >= Duration::from_millis(2),
            "relayed {relayed:?}"
        );
        assert!(
            relayed.median() < Duration::from_millis(4),
            "relayed {relayed:?}"
        );
        assert!(relayed.p10_us <= relayed.median_us && relayed.median_us <= relayed.p90_us);
    }
}
