//! Headless Chromium for the tests that look at HTML in a browser
//! (`fast_report.rs`, `site.rs`). It is required, not skipped: `make
//! test-env` installs it (scripts/deps.sh), and a missing browser fails
//! the test naming the package.

use std::process::Stdio;
use std::time::Duration;

/// A chromium run in its own process group and profile folder; both are
/// gone when it drops, whatever happened.
pub struct Chromium {
    pub profile: tempfile::TempDir,
    pgid: Option<i32>,
}

impl Chromium {
    pub fn new() -> Self {
        Chromium {
            profile: tempfile::Builder::new()
                .prefix("benchcage-chromium-")
                .tempdir()
                .unwrap(),
            pgid: None,
        }
    }

    /// Run chromium headless with `extra` args on `url`; returns stdout.
    pub fn run(&mut self, extra: &[&str], url: &str) -> String {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("/usr/bin/chromium");
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", self.profile.path().display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
        let child = cmd
            .spawn()
            .expect("chromium runs (apt-get install chromium)");
        self.pgid = Some(child.id() as i32);
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || {
            let out = child.wait_with_output();
            let _ = tx.send(());
            out
        });
        let done = rx.recv_timeout(Duration::from_secs(90)).is_ok();
        self.kill_group();
        let out = handle.join().unwrap().unwrap();
        assert!(done, "chromium did not finish within 90 s");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn kill_group(&mut self) {
        if let Some(pgid) = self.pgid {
            // The browser's helpers (zygote, renderer) share its group.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        self.kill_group();
    }
}
