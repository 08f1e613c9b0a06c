//! Emptying and removing groups. cgroups-rs `delete()` kills nothing (and
//! its `kill()` is v2 only), so removal is ours: freeze, SIGKILL every pid,
//! thaw, wait until empty, then `rmdir` with backoff on EBUSY, and report
//! what is left instead of hanging.

use super::files::{self, CGROUP_PROCS, V2_CGROUP_KILL};
use super::freezer;
use crate::sandbox::SandboxError;
use crate::sandbox::backoff::Backoff;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Every pid listed in any of the group's directories.
pub fn pids_in(dirs: &BTreeMap<String, PathBuf>) -> BTreeSet<i32> {
    dirs.values()
        .flat_map(|d| files::pids(&d.join(CGROUP_PROCS)))
        .collect()
}

/// Kill every process in the group and wait until it is empty, within
/// `deadline`. Returns the pids that were signalled, or the pids still
/// listed when the deadline passed.
pub async fn kill_all(
    dirs: &BTreeMap<String, PathBuf>,
    deadline: Instant,
) -> Result<Vec<i32>, Vec<i32>> {
    let mut signalled = BTreeSet::new();
    // Killed tasks leave the group within a few ms of the signal.
    let mut pause = Backoff::up_to(Duration::from_millis(20));
    let v2_dir = dirs.get("unified");
    let freezer_dir = v2_dir.or_else(|| dirs.get("freezer"));
    loop {
        let pids = pids_in(dirs);
        if pids.is_empty() {
            return Ok(signalled.into_iter().collect());
        }
        if Instant::now() >= deadline {
            return Err(pids.into_iter().collect());
        }
        if let Some(d) = v2_dir.filter(|d| d.join(V2_CGROUP_KILL).exists()) {
            // cgroup.kill (Linux 5.14) kills the whole subtree atomically.
            let _ = files::write(&d.join(V2_CGROUP_KILL), "1");
            signalled.extend(pids.iter().copied());
        } else {
            // Freeze first so that nothing forks between reading the list and the kill.
            let frozen = match freezer_dir.filter(|d| d.exists()) {
                Some(d) => freezer::freeze(d, v2_dir.is_some(), Duration::from_millis(500))
                    .await
                    .is_ok(),
                None => false,
            };
            for pid in pids_in(dirs) {
                if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                    signalled.insert(pid);
                }
            }
            if frozen && let Some(d) = freezer_dir {
                let _ = freezer::thaw(d, v2_dir.is_some());
            }
        }
        pause.sleep(deadline).await;
    }
}

/// `rmdir` one group directory, retrying EBUSY with backoff until
/// `deadline`. A missing directory is already removed.
pub async fn rmdir(dir: &Path, deadline: Instant) -> Result<(), SandboxError> {
    let mut pause = Backoff::up_to(Duration::from_millis(100));
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // EBUSY: tasks that were just killed may still be exiting.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                pause.sleep(deadline).await;
            }
            Err(e) => {
                let left = files::pids(&dir.join(CGROUP_PROCS));
                return Err(SandboxError::CgroupRemove {
                    path: dir.to_path_buf(),
                    detail: format!("{e}; pids still inside: {}", pid_list(&left)),
                });
            }
        }
    }
}

/// Pids as a message lists them: `12, 34`.
fn pid_list(pids: &[i32]) -> String {
    pids.iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Kill everything in the group, then remove its directories (every
/// controller). Returns the removed paths, or the error naming what leaked.
pub async fn remove_group(
    dirs: &BTreeMap<String, PathBuf>,
    deadline: Instant,
) -> Result<Vec<PathBuf>, SandboxError> {
    if let Err(left) = kill_all(dirs, deadline).await {
        let any = dirs.values().next().cloned().unwrap_or_default();
        return Err(SandboxError::CgroupRemove {
            path: any,
            detail: format!(
                "pids {} still inside after SIGKILL; is one stuck in D state?",
                pid_list(&left)
            ),
        });
    }
    let mut removed = Vec::new();
    for dir in dirs.values() {
        if dir.exists() {
            // A frozen v1 freezer dir can still be removed, but never leave one frozen.
            rmdir(dir, deadline).await?;
            removed.push(dir.clone());
        }
        remove_empty_top(dir);
    }
    Ok(removed)
}

/// Once a run's own folder (`benchcage/<run-id>`) is gone, remove the shared
/// `benchcage` top folder too when no other run uses it, so the machine is
/// left as it was found. ENOTEMPTY/EBUSY mean another run is live: keep it
/// (group creation retries when it races this removal).
fn remove_empty_top(dir: &Path) {
    let Some(parent) = dir.parent() else { return };
    if parent.file_name() == Some(std::ffi::OsStr::new(super::group::TOP)) && !dir.exists() {
        let _ = std::fs::remove_dir(parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn removing_the_last_run_removes_the_shared_top_folder() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join(super::super::group::TOP);
        let run = top.join("r1");
        std::fs::create_dir_all(&run).unwrap();
        let dirs = BTreeMap::from([("memory".to_string(), run.clone())]);
        remove_group(&dirs, Instant::now() + Duration::from_secs(1))
            .await
            .unwrap();
        assert!(!run.exists());
        assert!(!top.exists(), "the empty top folder was left behind");
    }

    #[tokio::test]
    async fn the_top_folder_stays_while_another_run_uses_it() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join(super::super::group::TOP);
        std::fs::create_dir_all(top.join("r1")).unwrap();
        std::fs::create_dir_all(top.join("r2")).unwrap();
        let dirs = BTreeMap::from([("memory".to_string(), top.join("r1"))]);
        remove_group(&dirs, Instant::now() + Duration::from_secs(1))
            .await
            .unwrap();
        assert!(top.join("r2").exists());
    }
}
