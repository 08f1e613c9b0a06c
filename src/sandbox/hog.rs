//! The memory hog: a separate process, outside every sandbox cgroup, that
//! mmaps, mlocks and writes memory once so that only `leave` remains
//! for everything else (page cache included). Sized from MemAvailable
//! minus `leave` minus a safety margin; refuses (exit code 2) when it
//! cannot lock what it must; holds until SIGINT/SIGTERM or until its
//! parent dies; the kernel releases locked memory on every exit path.
//!
//! Two halves: [`hold`] runs inside `benchcage hog --leave SIZE`; [`Hog`]
//! is the caller's handle: it starts that process, waits for its `locked`
//! line, checks VmLck in /proc/<pid>/status, and records it in the ledger.

use crate::sandbox::SandboxError;
use crate::sandbox::ledger::{self, Ledger, Resource};
use crate::units::Bytes;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// Kept free on top of `leave`: MemAvailable is an estimate, and the
/// kernel, benchcage and the hog itself need room while locking. `plan`
/// keeps the same margin, so a plan that fits is a hog that starts.
pub(crate) const SAFETY_MARGIN: Bytes = Bytes(256 * Bytes::MIB);
/// The least a hog may leave: below it the host (kernel, sshd, benchcage,
/// the engine) has no room, whatever the spec or the flag says.
pub(crate) const MIN_LEAVE: Bytes = Bytes(512 * Bytes::MIB);
/// How often the holding hog checks that its parent is alive. It does
/// nothing else: locked pages stay resident without being touched again
/// (a hog that re-wrote 14 GiB every second took 20-40% of a CPU beside
/// the engine it was meant to leave alone).
pub(crate) const WATCH_PERIOD: Duration = Duration::from_secs(1);
/// The first stdout line of a hog that locked its memory starts with this.
pub(crate) const LOCKED_PREFIX: &str = "locked ";

fn hog_err(msg: impl Into<String>) -> SandboxError {
    SandboxError::Hog(msg.into())
}

fn meminfo_field(name: &str) -> Result<Bytes, SandboxError> {
    let text = std::fs::read_to_string("/proc/meminfo")
        .map_err(|e| hog_err(format!("reading /proc/meminfo: {e}")))?;
    kib_field(&text, name).ok_or_else(|| hog_err(format!("/proc/meminfo has no {name}")))
}

fn kib_field(text: &str, name: &str) -> Option<Bytes> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| Bytes(kib * 1024))
}

/// MemAvailable from /proc/meminfo.
pub fn mem_available() -> Result<Bytes, SandboxError> {
    meminfo_field("MemAvailable")
}

/// Mlocked from /proc/meminfo: all locked memory on the host.
pub fn mlocked_total() -> Result<Bytes, SandboxError> {
    meminfo_field("Mlocked")
}

/// VmLck of a process; `None` when it is gone.
pub fn vm_lck(pid: u32) -> Option<Bytes> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    kib_field(&text, "VmLck")
}

/// Reads what a hog leaves, as `hog --leave` and a spec's `hog.leave`
/// both do: a size with its unit (a bare `16` is refused, not read as 16
/// bytes) of at least [`MIN_LEAVE`]. The error says what to write.
pub fn parse_leave(text: &str) -> Result<Bytes, BadLeave> {
    let t = text.trim();
    if t.ends_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(BadLeave::NoUnit(crate::error::excerpt(t).into_owned()));
    }
    let leave: Bytes = t
        .parse()
        .map_err(|e: crate::units::UnitError| BadLeave::Size(e.0))?;
    check_leave(leave)?;
    Ok(leave)
}

/// Why a hog's `leave` is refused; the message says what to write.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadLeave {
    /// A bare number (`16`), which is not read as bytes.
    #[error(
        "`{0}` has no unit; write the size with its unit, e.g. `16GiB` or `512MiB` (`B` for bytes)"
    )]
    NoUnit(String),
    /// Not a size.
    #[error("{0}")]
    Size(String),
    /// Under [`MIN_LEAVE`].
    #[error(
        "a hog that leaves {0} would leave the host no room to run; leave at least {min}",
        min = MIN_LEAVE
    )]
    TooLittle(Bytes),
}

/// Refuses a `leave` under [`MIN_LEAVE`].
pub(crate) fn check_leave(leave: Bytes) -> Result<(), BadLeave> {
    if leave < MIN_LEAVE {
        return Err(BadLeave::TooLittle(leave));
    }
    Ok(())
}

/// How much to lock so that `leave` remains, given `available`; refuses
/// a `leave` under [`MIN_LEAVE`], and when nothing (or less than a page)
/// would be locked.
pub fn plan(available: Bytes, leave: Bytes) -> Result<Bytes, SandboxError> {
    check_leave(leave).map_err(|e| hog_err(e.to_string()))?;
    let need = Bytes(leave.0 + SAFETY_MARGIN.0);
    if available.0 <= need.0 {
        return Err(hog_err(format!(
            "cannot leave {leave}: only {available} is available (MemAvailable), and {SAFETY_MARGIN} is kept as a safety margin; ask for a smaller --leave"
        )));
    }
    let page = 4096;
    let lock = (available.0 - need.0) / page * page;
    if lock == 0 {
        return Err(hog_err(format!(
            "nothing to lock: MemAvailable {available} is already at or below --leave {leave} plus the margin"
        )));
    }
    Ok(Bytes(lock))
}

/// Locked anonymous memory; unlocked and unmapped on drop.
pub struct Locked {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value and only read through it.
unsafe impl Send for Locked {}

impl Locked {
    /// mmap `size` bytes and mlock them (raising RLIMIT_MEMLOCK first).
    pub fn lock(size: Bytes) -> Result<Locked, SandboxError> {
        let len = size.0 as usize;
        let unlimited = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: plain syscalls on values we own; results are checked.
        unsafe {
            // Without CAP_SYS_RESOURCE raising fails, but CAP_IPC_LOCK alone lets
            // mlock ignore the limit; a real shortfall shows up as mlock failing.
            libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited);
            let ptr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if ptr == libc::MAP_FAILED {
                return Err(hog_err(format!(
                    "mmap of {size}: {}",
                    std::io::Error::last_os_error()
                )));
            }
            if libc::mlock(ptr, len) != 0 {
                let e = std::io::Error::last_os_error();
                libc::munmap(ptr, len);
                return Err(hog_err(format!(
                    "mlock of {size}: {e}; run as root with CAP_IPC_LOCK, or raise RLIMIT_MEMLOCK (ulimit -l)"
                )));
            }
            Ok(Locked {
                ptr: ptr.cast(),
                len,
            })
        }
    }

    /// Write every page once: each is then the hog's own, never the shared
    /// zero page.
    pub(crate) fn touch(&mut self) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: off < len, inside our mapping.
            unsafe { std::ptr::write_volatile(self.ptr.add(off), 1) };
            off += 4096;
        }
    }

    /// Bytes locked.
    pub fn len(&self) -> Bytes {
        Bytes(self.len as u64)
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from mmap in `lock`.
        unsafe {
            libc::munlock(self.ptr.cast(), self.len);
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// The hog's first line: what it locked, what it leaves for everything
/// else and the safety margin it keeps on top, both, so that the sum is
/// what is really left (`leaving 22538MiB + 256MiB margin`).
pub(crate) fn locked_line(lock: Bytes, leave: Bytes, pid: u32) -> String {
    format!(
        "{LOCKED_PREFIX}{} bytes ({lock}), leaving {leave} + {SAFETY_MARGIN} safety margin ({} in all) unlocked; pid {pid}; Ctrl-C releases it",
        lock.0,
        Bytes(leave.0 + SAFETY_MARGIN.0)
    )
}

/// The hog process body: lock, announce, hold until SIGINT/SIGTERM or the
/// parent's death (checked every [`WATCH_PERIOD`]), using no CPU.
pub async fn hold(leave: Bytes) -> Result<(), SandboxError> {
    use tokio::signal::unix::{SignalKind, signal};
    // Handlers first: a signal right after the `locked` line must release, not kill.
    let mut term = signal(SignalKind::terminate()).map_err(|e| hog_err(e.to_string()))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| hog_err(e.to_string()))?;
    let parent = nix::unistd::getppid();
    let lock = plan(mem_available()?, leave)?;
    let mut mem = Locked::lock(lock)?;
    mem.touch();
    let pid = std::process::id();
    let held = vm_lck(pid).unwrap_or_default();
    if held.0 < lock.0 {
        return Err(hog_err(format!(
            "VmLck is {held} after locking {lock}; the kernel did not lock it all"
        )));
    }
    println!("{}", locked_line(lock, leave, pid));
    let mut tick = tokio::time::interval(WATCH_PERIOD);
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = tick.tick() => {
                if nix::unistd::getppid() != parent {
                    break;
                }
            }
        }
    }
    drop(mem);
    Ok(())
}

/// A running hog process, seen from the process that started it.
#[derive(Debug)]
pub struct Hog {
    child: tokio::process::Child,
    pid: u32,
    locked: Bytes,
    stopped: bool,
}

impl Hog {
    /// Start `exe hog --leave <bytes>` and wait until it has locked its
    /// memory (VmLck checked). `exe` is the benchcage binary (see
    /// [`benchcage_exe`]). Recorded in `ledger` so that `cleanup` kills it
    /// after a SIGKILL of benchcage.
    pub async fn start(
        exe: &Path,
        leave: Bytes,
        ledger: Option<&mut Ledger>,
        timeout: Duration,
    ) -> Result<Hog, SandboxError> {
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["hog", "--leave", &format!("{}B", leave.0)])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let me = std::process::id() as i32;
        // SAFETY: prctl and getppid are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                // Die with the parent, and do not start at all if it is already gone.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != me {
                    return Err(std::io::Error::other("parent exited"));
                }
                Ok(())
            });
        }
        let mut child = tokio::process::Command::from(cmd)
            .spawn()
            .map_err(|e| hog_err(format!("starting {} hog: {e}", exe.display())))?;
        let pid = child.id().unwrap_or(0);
        if let Some(l) = ledger {
            l.record(Resource::Hog {
                pid: pid as i32,
                start_time: ledger::process_start_time(pid as i32).unwrap_or(0),
                cgroup: ledger::process_cgroup(pid as i32),
            })?;
        }
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(timeout, lines.next_line()).await;
        let locked = match first {
            Ok(Ok(Some(line))) => line
                .strip_prefix(LOCKED_PREFIX)
                .and_then(|r| r.split_whitespace().next()?.parse().ok())
                .map(Bytes),
            _ => None,
        };
        let Some(locked) = locked else {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            let status = child.wait().await.ok();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err).await;
            }
            return Err(hog_err(format!(
                "the hog did not lock its memory within {:.0}s ({}): {}",
                timeout.as_secs_f64(),
                status.map(|s| s.to_string()).unwrap_or_default(),
                err.trim()
            )));
        };
        let hog = Hog {
            child,
            pid,
            locked,
            stopped: false,
        };
        if let Err(e) = hog.check() {
            hog.stop().await;
            return Err(e);
        }
        Ok(hog)
    }

    /// Error unless the hog is alive and still holds what it locked (a run
    /// whose hog lost its memory is invalid).
    pub fn check(&self) -> Result<Bytes, SandboxError> {
        match vm_lck(self.pid) {
            Some(v) if v.0 >= self.locked.0 => Ok(v),
            Some(v) => Err(hog_err(format!(
                "hog pid {} holds {v} locked, less than the {} it locked",
                self.pid, self.locked
            ))),
            None => Err(hog_err(format!("hog pid {} is gone", self.pid))),
        }
    }

    /// Bytes the hog locked.
    pub fn locked(&self) -> Bytes {
        self.locked
    }

    /// The hog's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// SIGTERM, then SIGKILL after 5 s; waits until it is gone.
    pub async fn stop(mut self) {
        let _ = kill(Pid::from_raw(self.pid as i32), Signal::SIGTERM);
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        self.stopped = true;
    }
}

/// Backstop: a hog dropped without `stop` is killed (the kernel then
/// releases its memory); the pid is still ours since it was not reaped.
impl Drop for Hog {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.child.start_kill();
        }
    }
}

/// The benchcage binary to re-exec as the hog (this process's executable).
pub fn benchcage_exe() -> Result<std::path::PathBuf, SandboxError> {
    std::env::current_exe().map_err(|e| hog_err(format!("finding the benchcage binary: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hog_leaves_the_requested_memory_plus_the_margin() {
        let got = plan(Bytes::from_gib(8), Bytes::from_gib(6)).unwrap();
        assert_eq!(got.0, Bytes::from_gib(2).0 - SAFETY_MARGIN.0);
    }

    #[test]
    fn hog_refuses_to_leave_more_than_is_available() {
        let err = plan(Bytes::from_gib(4), Bytes::from_gib(6)).unwrap_err();
        assert!(err.to_string().contains("smaller --leave"), "{err}");
    }

    #[test]
    fn the_locked_line_names_what_was_asked_and_the_margin_left_beside_it() {
        let leave = parse_leave("22538MiB").unwrap();
        let line = locked_line(Bytes::from_gib(1), leave, 42);
        assert!(line.starts_with(LOCKED_PREFIX), "{line}");
        assert!(
            line.contains("leaving 22538MiB + 256MiB safety margin (22794MiB in all)"),
            "{line}"
        );
    }

    #[test]
    fn meminfo_fields_are_read_in_kib() {
        let t = "MemTotal: 100 kB\nMlocked:      14892 kB\n";
        assert_eq!(kib_field(t, "Mlocked"), Some(Bytes(14892 * 1024)));
        assert_eq!(kib_field(t, "VmLck"), None);
    }
}
