//! Real servers for tests, on free loopback ports, in temp dirs.
//!
//! Every server runs in its own process group; `Drop` stops the group
//! (TERM, then KILL after a grace period), reaps it, and removes the temp
//! dir, so a panicking test leaves nothing behind.

use benchcage::model::Probe;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which engine a test server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Redis,
    Postgres,
    Mariadb,
    Secantus,
}

/// A running server; stopped and cleaned when dropped.
pub struct Server {
    pub kind: Kind,
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    _tmp: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts a server of `kind` and waits until `clients::ping` answers.
    pub fn start(kind: Kind) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("benchcage-test-srv-")
            .tempdir()
            .expect("temp dir");
        let dir = tmp.path().to_path_buf();
        let port = free_port();
        let mut server = Server {
            kind,
            port,
            dir: dir.clone(),
            child: None,
            _tmp: Some(tmp),
        };
        let log = std::fs::File::create(dir.join("server.log")).expect("log file");
        let mut cmd = match kind {
            Kind::Redis => {
                let mut c = Command::new("redis-server");
                c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                    .args(["--save", "", "--appendonly", "no"])
                    .arg("--dir")
                    .arg(&dir);
                c
            }
            Kind::Postgres => {
                let data = dir.join("data");
                let uid = postgres_uid();
                std::os::unix::fs::chown(&dir, Some(uid), Some(uid)).expect("chown");
                run_ok(
                    Command::new(pg_bin("initdb"))
                        .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
                        .arg("-D")
                        .arg(&data)
                        .uid(uid)
                        .gid(uid)
                        .current_dir(&dir),
                );
                let mut c = Command::new(pg_bin("postgres"));
                c.arg("-D")
                    .arg(&data)
                    .arg("-k")
                    .arg(&dir)
                    .args(["-h", "127.0.0.1", "-p", &port.to_string()])
                    .args(["-c", "fsync=off", "-c", "shared_buffers=32MB"])
                    .uid(uid)
                    .gid(uid)
                    .current_dir(&dir);
                c
            }
            Kind::Mariadb => {
                let data = dir.join("data");
                run_ok(
                    Command::new("mariadb-install-db")
                        .args(["--no-defaults", "--user=root", "--skip-test-db"])
                        .arg(format!("--datadir={}", data.display()))
                        // Its own temp dir: not the host's /tmp, which
                        // other tests and servers share.
                        .arg(format!("--tmpdir={}", data.display()))
                        .arg("--auth-root-authentication-method=normal"),
                );
                let mut c = Command::new("mariadbd");
                c.args(["--no-defaults", "--user=root", "--bind-address=127.0.0.1"])
                    .arg(format!("--port={port}"))
                    .arg(format!("--datadir={}", data.display()))
                    .arg(format!("--socket={}", dir.join("mysqld.sock").display()))
                    .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
                    .arg(format!("--tmpdir={}", data.display()))
                    .args([
                        "--innodb-buffer-pool-size=64M",
                        "--innodb-flush-log-at-trx-commit=0",
                        "--skip-log-bin",
                        "--plugin-load-add=ha_rocksdb",
                    ]);
                c
            }
            Kind::Secantus => {
                let mut c = Command::new("secantusd-py");
                c.args(["--host", "127.0.0.1", "--port", &port.to_string()])
                    .arg("--storage-path")
                    .arg(dir.join("data"))
                    .args(["--log-level", "WARNING"]);
                c
            }
        };
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0);
        server.child = Some(
            cmd.spawn()
                .unwrap_or_else(|e| panic!("spawn {kind:?}: {e}")),
        );
        server.wait_ready();
        server
    }

    /// The probe that pings this server.
    pub fn probe(&self) -> Probe {
        match self.kind {
            Kind::Redis => Probe::Redis,
            Kind::Postgres => Probe::Postgres {
                user: "postgres".into(),
                database: "postgres".into(),
            },
            Kind::Mariadb => Probe::Mysql {
                user: "root".into(),
            },
            Kind::Secantus => Probe::Mongodb,
        }
    }

    /// Store URL for `benchcage drive`.
    pub fn url(&self) -> String {
        match self.kind {
            Kind::Redis => format!("redis://127.0.0.1:{}", self.port),
            Kind::Postgres => format!("postgres://postgres@127.0.0.1:{}/postgres", self.port),
            Kind::Mariadb => format!("mysql://root@127.0.0.1:{}/mysql", self.port),
            Kind::Secantus => format!("mongodb://127.0.0.1:{}", self.port),
        }
    }

    /// The server's log so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    fn wait_ready(&mut self) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let probe = self.probe();
        loop {
            let r = rt.block_on(benchcage::clients::ping(&probe, self.port));
            if r.is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "{:?} exited {status} before ready:\n{}",
                    self.kind,
                    self.log()
                );
            }
            if Instant::now() > deadline {
                panic!("{:?} not ready in 60s ({r:?}):\n{}", self.kind, self.log());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SecantusDB only: stops the server and starts it again on the same
    /// port and data with `extra` arguments (`--auth`); waits until the
    /// port accepts connections (an auth-only server refuses the probe).
    pub fn restart_secantus_with(&mut self, extra: &[&str]) {
        assert_eq!(self.kind, Kind::Secantus);
        self.stop();
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("server.log"))
            .expect("log file");
        let mut c = Command::new("secantusd-py");
        c.args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .arg("--storage-path")
            .arg(self.dir.join("data"))
            .args(["--log-level", "WARNING"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0);
        self.child = Some(c.spawn().expect("spawn secantusd-py"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "not listening:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pgid = child.id() as i32;
        // SIGTERM lets postgres and mariadb remove their shared memory and sockets.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if let Some(t) = self._tmp.take() {
            let _ = t.close();
        }
    }
}

/// A MongoDB endpoint on loopback `port`, database `t`.
pub fn mongo_endpoint(port: u16) -> benchcage::clients::Endpoint {
    let mut ep = benchcage::clients::Endpoint::loopback(port);
    ep.database = Some("t".into());
    ep
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().unwrap().port()
}

fn pg_bin(name: &str) -> PathBuf {
    Path::new("/usr/lib/postgresql/15/bin").join(name)
}

fn postgres_uid() -> u32 {
    nix::unistd::User::from_name("postgres")
        .ok()
        .flatten()
        .expect("a `postgres` user (apt-get install postgresql)")
        .uid
        .as_raw()
}

fn run_ok(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
