//! Engine processes: spawned inside their cgroup from the first
//! instruction (the child writes itself to every `cgroup.procs` in
//! `pre_exec`, before `exec`), in their own session and process group,
//! optionally as an unprivileged user, output appended to a log file.
//! Stop is SIGTERM to the group, a grace period, SIGKILL, then a sweep of
//! every pid still in the cgroup.

use crate::sandbox::cgroupfs::remove;
use crate::sandbox::{EngineStatus, SandboxError, StopOutcome, StopReport};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How the child detaches from benchcage's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detach {
    /// `setsid`: own session and process group (engines).
    Session,
    /// `setpgid(0, 0)`: own process group (load generators, tools).
    Group,
}

/// A resolved unprivileged user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
}

/// Look up a local user by name.
pub(crate) fn lookup_user(name: &str) -> Result<Identity, SandboxError> {
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(Identity {
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
        }),
        Ok(None) => Err(SandboxError::User {
            user: name.to_string(),
            detail: "no such user; create it or install the engine's package".into(),
        }),
        Err(e) => Err(SandboxError::User {
            user: name.to_string(),
            detail: e.to_string(),
        }),
    }
}

/// Error unless `id` can reach `path`: every ancestor directory needs the
/// search bit for the user (the engine runs unprivileged and chdirs there).
pub(crate) fn check_reachable(path: &Path, user: &str, id: Identity) -> Result<(), SandboxError> {
    unreachable_dir(path, user, id).map_or(Ok(()), |why| {
        Err(SandboxError::DataDir {
            path: path.to_path_buf(),
            detail: format!(
                "{why}; point BENCHCAGE_WORK at a folder the user can reach (the default is in the system temp dir)"
            ),
        })
    })
}

/// Error unless the engine's binary is reachable for `id` (a program
/// installed in a private home, e.g. root's Python, is not).
pub(crate) fn check_program_reachable(
    path: &Path,
    user: &str,
    id: Identity,
) -> Result<(), SandboxError> {
    unreachable_dir(path, user, id).map_or(Ok(()), |why| {
        Err(SandboxError::User {
            user: user.to_string(),
            detail: format!(
                "the engine's binary {}: {why}; install the engine where the user can run it, or set `user: root` in the engine's spec",
                path.display()
            ),
        })
    })
}

/// Why `id` cannot reach `path`, if it cannot: the first ancestor without
/// the search bit for it.
fn unreachable_dir(path: &Path, user: &str, id: Identity) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    if id.uid == 0 {
        return None;
    }
    for dir in path.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(dir) else {
            continue;
        };
        let mode = meta.mode();
        let bit = if meta.uid() == id.uid {
            0o100
        } else if meta.gid() == id.gid {
            0o010
        } else {
            0o001
        };
        if mode & bit == 0 {
            return Some(format!(
                "user `{user}` cannot reach it: {} is mode {:o}, and benchcage does not change the mode of folders it did not create",
                dir.display(),
                mode & 0o7777
            ));
        }
    }
    None
}

/// Places commands in a sandbox's client group without the sandbox: the
/// group's `cgroup.procs` files and nothing else, so a phase places the
/// processes it spawns while the lifecycle holds the sandbox.
#[derive(Debug, Clone)]
pub struct ClientPlacer {
    procs: Vec<PathBuf>,
    /// The cell's network namespace (its file), when it has one.
    netns: Option<PathBuf>,
}

impl ClientPlacer {
    /// A placer into the group whose `cgroup.procs` files are `procs`.
    pub fn new(procs: Vec<PathBuf>) -> Self {
        ClientPlacer { procs, netns: None }
    }

    /// The same placer, its processes also in the network namespace whose
    /// file is `netns` (the kernel emulation of the cell's network).
    pub(crate) fn in_netns(mut self, netns: Option<PathBuf>) -> Self {
        self.netns = netns;
        self
    }

    /// Make `cmd` start inside the client group, in a process group of its
    /// own (pinned to the client CPUs, outside the server's budget), and
    /// in the cell's network namespace if it has one.
    pub fn place(&self, cmd: &mut std::process::Command) -> Result<(), SandboxError> {
        join_in_pre_exec(cmd, &self.procs, Detach::Group, None, self.netns.as_deref())
    }
}

/// Make `cmd` join the cgroups whose `cgroup.procs` files are `procs`,
/// enter the network namespace whose file is `netns` (if any), detach,
/// and drop to `user`, all in the child before `exec`. The files are
/// opened here (by root) so the child only calls `write(2)` and `setns(2)`.
pub fn join_in_pre_exec(
    cmd: &mut std::process::Command,
    procs: &[PathBuf],
    detach: Detach,
    user: Option<Identity>,
    netns: Option<&Path>,
) -> Result<(), SandboxError> {
    let netns = netns
        .map(|p| {
            crate::network::netns::open(p).map_err(|source| SandboxError::Netns {
                name: p.display().to_string(),
                detail: format!("opening it: {source}"),
            })
        })
        .transpose()?;
    let fds: Vec<OwnedFd> = procs
        .iter()
        .map(|p| {
            OpenOptions::new()
                .write(true)
                .open(p)
                .map(OwnedFd::from)
                .map_err(|source| SandboxError::CgroupWrite {
                    path: p.clone(),
                    value: "0".into(),
                    source,
                })
        })
        .collect::<Result<_, _>>()?;
    // SAFETY: the closure only makes async-signal-safe calls (write, setns,
    // setsid, setpgid, setgroups, setgid, setuid) on values prepared
    // before fork.
    unsafe {
        cmd.pre_exec(move || {
            for fd in &fds {
                // "0" means the writing process itself, on v1 and v2.
                if libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(ns) = &netns
                && libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            let rc = match detach {
                Detach::Session => libc::setsid(),
                Detach::Group => libc::setpgid(0, 0),
            };
            if rc < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(id) = user
                && (libc::setgroups(0, std::ptr::null()) < 0
                    || libc::setgid(id.gid) < 0
                    || libc::setuid(id.uid) < 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Where a process's POSIX shared memory lives.
const DEV_SHM: &str = "/dev/shm";

/// Make `cmd` start in an IPC namespace and a `/dev/shm` of its own, as a
/// container does: what the engine leaves there when it is killed
/// (PostgreSQL's `PostgreSQL.*` segments and its System V segment after a
/// SIGKILL or a PANIC on a full disk) goes with its last process, not
/// onto the host for good. The private `/dev/shm` is a tmpfs whose pages
/// are charged to the engine's memory cgroup as the host's were. Only as
/// root (it takes CAP_SYS_ADMIN); elsewhere a no-op. Register it before
/// [`join_in_pre_exec`], which may drop the user.
pub(crate) fn private_ipc_in_pre_exec(cmd: &mut std::process::Command) {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let shm = std::path::Path::new(DEV_SHM)
        .is_dir()
        .then(|| std::ffi::CString::new(DEV_SHM).expect("no NUL"));
    let tmpfs = std::ffi::CString::new("tmpfs").expect("no NUL");
    let opts = std::ffi::CString::new("mode=1777").expect("no NUL");
    let root = std::ffi::CString::new("/").expect("no NUL");
    // SAFETY: unshare and mount are system calls, async-signal-safe, on
    // strings made before fork.
    unsafe {
        cmd.pre_exec(move || {
            let flags = if shm.is_some() {
                libc::CLONE_NEWIPC | libc::CLONE_NEWNS
            } else {
                libc::CLONE_NEWIPC
            };
            if libc::unshare(flags) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(shm) = &shm {
                // A slave of the host's mounts: the tmpfs below stays in
                // this namespace, and the host's unmounts still reach it.
                let slave = libc::MS_REC | libc::MS_SLAVE;
                if libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    slave,
                    std::ptr::null(),
                ) < 0
                    || libc::mount(
                        tmpfs.as_ptr(),
                        shm.as_ptr(),
                        tmpfs.as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV,
                        opts.as_ptr().cast(),
                    ) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// What to run inside a group.
#[derive(Debug, Clone)]
pub struct Launch<'a> {
    pub argv: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub procs: &'a [PathBuf],
    pub user: Option<Identity>,
    pub log_path: &'a Path,
    pub cwd: Option<&'a Path>,
    /// The network namespace's file the process starts in, if any.
    pub netns: Option<&'a Path>,
}

fn command(l: &Launch<'_>) -> Result<std::process::Command, SandboxError> {
    let program = l.argv.first().ok_or_else(|| SandboxError::Spawn {
        program: String::new(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"),
    })?;
    if let Some(parent) = l.log_path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| SandboxError::Spawn {
            program: program.clone(),
            source,
        })?;
    }
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(l.log_path)
        .map_err(|source| SandboxError::Spawn {
            program: format!("{program} (log {})", l.log_path.display()),
            source,
        })?;
    let log2 = log.try_clone().map_err(|source| SandboxError::Spawn {
        program: program.clone(),
        source,
    })?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(&l.argv[1..])
        .envs(l.env)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2));
    if let Some(cwd) = l.cwd {
        cmd.current_dir(cwd);
    }
    private_ipc_in_pre_exec(&mut cmd);
    join_in_pre_exec(&mut cmd, l.procs, Detach::Session, l.user, l.netns)?;
    Ok(cmd)
}

/// Start a long-running process (the engine); tokio reaps it.
pub fn spawn(l: &Launch<'_>) -> Result<tokio::process::Child, SandboxError> {
    let cmd = command(l)?;
    tokio::process::Command::from(cmd)
        .spawn()
        .map_err(|source| SandboxError::Spawn {
            program: l.argv[0].clone(),
            source,
        })
}

/// Run a one-shot command (an `init` step) to its end.
pub(crate) async fn run_to_end(l: &Launch<'_>) -> Result<ExitStatus, SandboxError> {
    spawn(l)?
        .wait()
        .await
        .map_err(|source| SandboxError::Spawn {
            program: l.argv[0].clone(),
            source,
        })
}

/// An exit status as [`EngineStatus`].
pub(crate) fn status_of(s: ExitStatus) -> EngineStatus {
    EngineStatus::Exited {
        code: s.code(),
        signal: s.signal(),
    }
}

/// Human form of a status: `exit code 1`, `signal 9`.
pub(crate) fn describe(s: EngineStatus) -> String {
    match s {
        EngineStatus::Exited { code: Some(c), .. } => format!("exit code {c}"),
        EngineStatus::Exited {
            signal: Some(sig), ..
        } => match nix::sys::signal::Signal::try_from(sig) {
            Ok(name) => format!("killed by signal {sig} ({name})"),
            Err(_) => format!("killed by signal {sig}"),
        },
        EngineStatus::Exited { .. } => "exited".into(),
        EngineStatus::Running => "running".into(),
        EngineStatus::NotStarted => "not started".into(),
    }
}

/// The last `n` lines of an engine's log (its stdout and stderr), or, when
/// there are none, a line that says so: an error never shows an empty log.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) => return format!("(no engine log: {e})"),
    };
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return "(the engine printed nothing on stdout or stderr; if its config sends its log to a file, look there)".into();
    }
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Stop `child` (leader of process group `pgid`): SIGTERM to the group,
/// wait `grace`, SIGKILL, then kill whatever is still in `cgroup_dirs`
/// (daemons that double-forked out of the group).
pub async fn stop(
    child: &mut tokio::process::Child,
    grace: Duration,
    cgroup_dirs: &BTreeMap<String, PathBuf>,
    deadline: Instant,
) -> StopReport {
    let pgid = child.id().map(|p| p as i32);
    let mut outcome = StopOutcome::AlreadyExited;
    let mut status = match child.try_wait() {
        Ok(Some(s)) => Some(status_of(s)),
        _ => None,
    };
    if status.is_none() {
        if let Some(pg) = pgid {
            let _ = kill(Pid::from_raw(-pg), Signal::SIGTERM);
            // A stopped (SIGSTOP) engine only sees SIGTERM once it runs again.
            let _ = kill(Pid::from_raw(-pg), Signal::SIGCONT);
        }
        match tokio::time::timeout(grace, child.wait()).await {
            Ok(Ok(s)) => {
                outcome = StopOutcome::Terminated;
                status = Some(status_of(s));
            }
            _ => {
                outcome = StopOutcome::Killed;
                if let Some(pg) = pgid {
                    let _ = kill(Pid::from_raw(-pg), Signal::SIGKILL);
                }
                let _ = child.start_kill();
                status = child.wait().await.ok().map(status_of);
            }
        }
    } else if let Some(pg) = pgid {
        // The leader is gone; its group may live on.
        let _ = kill(Pid::from_raw(-pg), Signal::SIGKILL);
    }
    let swept = match remove::kill_all(cgroup_dirs, deadline).await {
        Ok(p) | Err(p) => p.into_iter().map(|p| p as u32).collect(),
    };
    StopReport {
        outcome,
        swept,
        status: status.unwrap_or(EngineStatus::NotStarted),
    }
}

/// `Cpus_allowed_list` of every thread of `pid` (tid -> list).
pub fn cpus_allowed(pid: u32) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(v) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        {
            out.insert(tid, v.trim().to_string());
        }
    }
    out
}

/// Check that every thread of `pid` may run on exactly `want` (read back
/// from /proc/<pid>/task/*/status) and record the leader's list as
/// `Cpus_allowed_list`.
pub(crate) fn read_back_cpus_allowed(
    pid: u32,
    want: &crate::units::CpuSet,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SandboxError> {
    for (tid, cpus) in cpus_allowed(pid) {
        if cpus.parse().ok().as_ref() != Some(want) {
            return Err(SandboxError::LimitMismatch {
                file: format!("/proc/{pid}/task/{tid}/status Cpus_allowed_list"),
                want: want.to_string(),
                got: cpus,
            });
        }
        if tid == pid {
            out.insert("Cpus_allowed_list".into(), cpus);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_tail_of_an_engine_that_printed_nothing_says_so() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("engine.log");
        std::fs::write(&log, "\n\n").unwrap();
        let tail = log_tail(&log, 20);
        assert!(
            tail.contains("printed nothing on stdout or stderr"),
            "{tail}"
        );
        let missing = log_tail(&t.path().join("none.log"), 20);
        assert!(missing.starts_with("(no engine log:"), "{missing}");
        std::fs::write(&log, "one\n\ntwo\nthree\n").unwrap();
        assert_eq!(log_tail(&log, 2), "two\nthree");
    }
}
