//! The legacy MongoDB server the tests bring (`legacy_mongo.py`): wire 0
//! (a 2.4-era server such as TokuMX), 2 (MongoDB 2.6) or 4 (MongoDB 3.2), on a free
//! loopback port, stopped when dropped; a replica set member, config
//! server or router when asked.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running legacy server.
pub struct LegacyMongo {
    pub port: u16,
    pub wire: i32,
    child: Child,
}

impl LegacyMongo {
    /// Starts a server announcing `wire` (0, 2 or 4) and waits for its port.
    pub fn start(wire: i32) -> LegacyMongo {
        Self::start_with(wire, &[])
    }

    /// [`LegacyMongo::start`] with more arguments: a topology role
    /// (`--replset NAME`, `--configsvr`, `--mongos`, `--repl-delay S`).
    pub fn start_with(wire: i32, extra: &[&str]) -> LegacyMongo {
        let port = super::server::free_port();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/legacy_mongo.py");
        let child = Command::new("python3")
            .arg(script)
            .args(["--port", &port.to_string(), "--wire", &wire.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("python3 runs the legacy server");
        let s = LegacyMongo { port, wire, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "legacy server not listening in 20s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }

    /// Store URL for `benchcage drive`.
    pub fn url(&self) -> String {
        format!("mongodb://127.0.0.1:{}", self.port)
    }
}

impl Drop for LegacyMongo {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}
