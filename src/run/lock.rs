//! One live process per run: a run holds an exclusive `flock` on its own
//! results folder (`results/<run-id>/`) from its start to its end, so that
//! `run --resume ID` while run ID is still live is refused before it reads,
//! moves or tears down anything of that run (issue 15, D1).
//!
//! Why a lock on the folder and not a pid file: the kernel drops the lock
//! when the holder dies, even by SIGKILL, so a dead run never blocks its
//! resume, and nothing is left behind in the results.

use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The held lock of one run; released when dropped (or the process dies).
#[derive(Debug)]
pub(crate) struct RunLock {
    _lock: Flock<File>,
}

/// Why a run could not be locked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    /// Another live process holds the run.
    #[error("run `{run}` is still live{}; wait for it to end, or stop it first (Ctrl-C in its terminal, or `kill -TERM` its pid)", holder.map(|p| format!(" (benchcage pid {p})")).unwrap_or_default())]
    Held { run: String, holder: Option<u32> },
    #[error("locking run folder {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl RunLock {
    /// Lock the run folder `dir` (created if missing) for run `run`,
    /// without waiting.
    pub(crate) fn acquire(dir: &Path, run: &str) -> Result<RunLock, LockError> {
        let io = |source| LockError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let file = File::open(dir).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(RunLock { _lock: lock }),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(LockError::Held {
                run: run.to_string(),
                holder: holder_pid(
                    &std::fs::read_to_string("/proc/locks").unwrap_or_default(),
                    meta.ino(),
                ),
            }),
            Err((_, e)) => Err(io(std::io::Error::from(e))),
        }
    }
}

/// The pid holding a FLOCK on inode `ino`, from the text of /proc/locks
/// (`1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF`).
fn holder_pid(locks: &str, ino: u64) -> Option<u32> {
    locks.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (kind, pid, id) = (f.get(1)?, f.get(4)?, f.get(5)?);
        let line_ino: u64 = id.rsplit(':').next()?.parse().ok()?;
        (*kind == "FLOCK" && line_ino == ino)
            .then(|| pid.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_run_refuses_a_second_lock_and_names_the_holder() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("run-1");
        let held = RunLock::acquire(&dir, "run-1").unwrap();
        let err = RunLock::acquire(&dir, "run-1").unwrap_err();
        match &err {
            LockError::Held { run, holder } => {
                assert_eq!(run, "run-1");
                assert_eq!(*holder, Some(std::process::id()));
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("still live"), "{err}");
        drop(held);
        RunLock::acquire(&dir, "run-1").unwrap();
    }

    #[test]
    fn the_holder_is_read_from_proc_locks() {
        let text = "1: POSIX  ADVISORY  WRITE 77 00:1a:42 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 1234 08:01:42 0 EOF\n";
        assert_eq!(holder_pid(text, 42), Some(1234));
        assert_eq!(holder_pid(text, 43), None);
    }
}
