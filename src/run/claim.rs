//! CPU claims: which live run holds which CPUs, so that a run whose CPUs
//! another live run holds waits for them instead of sharing them (two runs
//! pinned to the same CPUs each lost half their throughput, issue 15, D2).
//!
//! A claim is one small file per cell, `<dir>/<sandbox-id>.cpus`, naming
//! the run, its owner (pid and start time, as in the ledger) and the CPUs
//! of its server and client. The folder is machine-wide, like the CPUs:
//! [`DEFAULT_DIR`] (`/run/benchcage/cpus`, gone at reboot), whatever
//! ledger folder a run uses. A claim whose owner is dead (SIGKILL) counts
//! for nothing and is removed by the next run that looks. Checking and
//! writing happen under an flock of `<dir>/.lock`, so two runs starting at
//! once cannot both take the same CPUs.

use crate::sandbox::ledger::{is_alive, process_start_time};
use crate::units::CpuSet;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Environment variable that moves the claims folder (unit tests).
pub(crate) const DIR_ENV: &str = "BENCHCAGE_CPU_CLAIMS";
/// Claims folder when `$BENCHCAGE_CPU_CLAIMS` is not set.
pub(crate) const DEFAULT_DIR: &str = "/run/benchcage/cpus";
const SUFFIX: &str = "cpus";
/// How often a waiting run looks again.
const POLL: Duration = Duration::from_millis(250);

/// The claims folder in effect.
pub(crate) fn default_dir() -> PathBuf {
    std::env::var_os(DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// One claim file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Claim {
    pub run: String,
    pub owner_pid: i32,
    pub owner_start: u64,
    /// Every CPU the cell pins (server and client), as a list (`0-1`).
    pub cpus: String,
}

/// A held claim; the file goes when it is dropped.
#[derive(Debug)]
pub(crate) struct Held {
    path: PathBuf,
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What a claim that must wait found in its way.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Busy {
    pub run: String,
    pub owner_pid: i32,
    /// The CPUs both want.
    pub cpus: CpuSet,
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run {} (pid {}) holds CPU(s) {}",
            self.run, self.owner_pid, self.cpus
        )
    }
}

/// Why no claim was taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClaimError {
    #[error("CPU claims in {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("interrupted while waiting for CPUs")]
    Interrupted,
}

/// Take `cpus` for `id` (a cell's sandbox id) of `run`, waiting while a
/// live run holds any of them; `waiting` is told once, with who holds
/// them. Gives up when `stop` is cancelled.
pub(crate) async fn acquire(
    dir: &Path,
    id: &str,
    run: &str,
    cpus: &CpuSet,
    stop: &CancellationToken,
    mut waiting: impl FnMut(&Busy),
) -> Result<Held, ClaimError> {
    let mut told = false;
    loop {
        match try_acquire(dir, id, run, cpus)? {
            Ok(held) => return Ok(held),
            Err(busy) => {
                if !told {
                    waiting(&busy);
                    told = true;
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.cancelled() => return Err(ClaimError::Interrupted),
        }
    }
}

/// One attempt: the claim, or who is in the way.
pub(crate) fn try_acquire(
    dir: &Path,
    id: &str,
    run: &str,
    cpus: &CpuSet,
) -> Result<Result<Held, Busy>, ClaimError> {
    let io = |source| ClaimError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".lock"))
        .map_err(io)?;
    let _guard: Flock<File> =
        Flock::lock(lock, FlockArg::LockExclusive).map_err(|(_, e)| io(std::io::Error::from(e)))?;
    let path = dir.join(format!("{id}.{SUFFIX}"));
    for (other, claim) in live_claims(dir).map_err(io)? {
        if other == path {
            continue;
        }
        let theirs: CpuSet = claim.cpus.parse().unwrap_or_default();
        let both = theirs.intersection(cpus);
        if !both.is_empty() {
            return Ok(Err(Busy {
                run: claim.run,
                owner_pid: claim.owner_pid,
                cpus: both,
            }));
        }
    }
    let me = std::process::id() as i32;
    let claim = Claim {
        run: run.to_string(),
        owner_pid: me,
        owner_start: process_start_time(me).unwrap_or(0),
        cpus: cpus.to_list(),
    };
    let text = serde_json::to_vec(&claim).map_err(|e| io(std::io::Error::other(e)))?;
    std::fs::write(&path, text).map_err(io)?;
    Ok(Ok(Held { path }))
}

/// Claims whose owner lives; claims of dead owners are removed.
fn live_claims(dir: &Path) -> std::io::Result<Vec<(PathBuf, Claim)>> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(dir)?.flatten() {
        let path = f.path();
        if path.extension().and_then(|e| e.to_str()) != Some(SUFFIX) {
            continue;
        }
        let claim: Option<Claim> = std::fs::read(&path)
            .ok()
            .and_then(|t| serde_json::from_slice(&t).ok());
        match claim {
            Some(c) if is_alive(c.owner_pid, c.owner_start) => out.push((path, c)),
            _ => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(list: &str) -> CpuSet {
        list.parse().unwrap()
    }

    #[test]
    fn overlapping_cpus_wait_for_the_live_holder_and_disjoint_ones_do_not() {
        let t = tempfile::tempdir().unwrap();
        let first = try_acquire(t.path(), "a-01", "a", &cpus("0-1"))
            .unwrap()
            .unwrap();
        let busy = try_acquire(t.path(), "b-01", "b", &cpus("1"))
            .unwrap()
            .unwrap_err();
        assert_eq!(busy.run, "a");
        assert_eq!(busy.cpus, cpus("1"));
        assert!(busy.to_string().contains("run a (pid"), "{busy}");
        let other = try_acquire(t.path(), "c-01", "c", &cpus("2-3")).unwrap();
        assert!(other.is_ok());
        drop(first);
        assert!(
            try_acquire(t.path(), "b-01", "b", &cpus("1"))
                .unwrap()
                .is_ok()
        );
    }

    #[test]
    fn a_claim_of_a_dead_owner_counts_for_nothing_and_is_removed() {
        let t = tempfile::tempdir().unwrap();
        let dead = Claim {
            run: "dead".into(),
            owner_pid: i32::MAX - 1,
            owner_start: 1,
            cpus: "0-1".into(),
        };
        let path = t.path().join("dead-01.cpus");
        std::fs::write(&path, serde_json::to_vec(&dead).unwrap()).unwrap();
        assert!(
            try_acquire(t.path(), "x-01", "x", &cpus("1"))
                .unwrap()
                .is_ok()
        );
        assert!(!path.exists());
    }
}
