//! benchcage's own roots: the only places where reaping a ledger may
//! delete or kill anything, and the folders benchcage creates for itself.
//!
//! - the state dir (ledgers): `$BENCHCAGE_STATE_DIR` or
//!   `/var/lib/benchcage/ledger`; it must be owned by the user benchcage
//!   runs as (root) and private, or a ledger in it could be forged;
//! - the work root (engine data and config dirs): `$BENCHCAGE_WORK` or
//!   `<temp dir>/benchcage-work`;
//! - the cgroup top, `<mount>/benchcage`, in every controller.
//!
//! A ledger entry that names anything outside these is not acted on (see
//! `ledger`). Folders benchcage creates get their mode set explicitly, so
//! that an engine's unprivileged user can reach its data dir whatever the
//! umask; folders it did not create are never chmodded.

use crate::sandbox::SandboxError;
use crate::sandbox::cgroupfs::group::TOP;
use crate::sandbox::cgroupfs::{Hierarchy, delegation};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Why a recorded resource must not be acted on: it is not benchcage's (a
/// path outside the roots, a process in another cgroup). Reported as the
/// ledger's refused entries; never removed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NotOurs(pub String);

impl From<String> for NotOurs {
    fn from(s: String) -> NotOurs {
        NotOurs(s)
    }
}

impl From<&str> for NotOurs {
    fn from(s: &str) -> NotOurs {
        NotOurs(s.to_string())
    }
}

/// Environment variable that moves the work root.
pub(crate) const WORK_ENV: &str = "BENCHCAGE_WORK";
/// Environment variable that sets the free space `plan` counts on in the
/// work root instead of what the filesystem reports (a compressing
/// filesystem holds more than it says; tests pin it).
pub(crate) const WORK_FREE_ENV: &str = "BENCHCAGE_WORK_FREE";
/// Mode of the folders benchcage creates on the way to a data dir: others
/// may traverse them (the engine's user must), not list them.
pub(crate) const SEARCHABLE: u32 = 0o711;
/// Mode of a state dir benchcage creates.
pub(crate) const PRIVATE: u32 = 0o700;

/// Where engine data and config dirs go: a work folder beside the system
/// temp dir, never on the results disk (a full results disk must not kill
/// the engine).
pub fn work_root() -> PathBuf {
    let root = std::env::var_os(WORK_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("benchcage-work"));
    std::path::absolute(&root).unwrap_or(root)
}

/// The roots a dead run's ledger may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// The work root (data and config dirs live below it).
    pub work: PathBuf,
    /// `<mount>/benchcage` in every cgroup controller (v2: in this
    /// process's subtree; a run's groups in another delegated subtree are
    /// accepted too, see [`delegation::in_delegated_top`]).
    pub cgroups: Vec<PathBuf>,
}

impl Roots {
    /// This host's roots, from the environment and the cgroup mounts.
    pub fn current() -> Roots {
        let cgroups = Hierarchy::detect()
            .map(|h| h.dirs(Path::new(TOP)).into_values().collect())
            .unwrap_or_default();
        Roots {
            work: work_root(),
            cgroups,
        }
    }

    /// Ok when `path` is strictly below the work root, also once symlinks
    /// in its parent are resolved.
    pub(crate) fn check_work_path(&self, path: &Path) -> Result<(), NotOurs> {
        let outside = || {
            format!(
                "outside benchcage's work root {} (set {WORK_ENV} to the root the run used)",
                self.work.display()
            )
        };
        if !is_plain_absolute(path) || !path.starts_with(&self.work) || path == self.work {
            return Err(outside().into());
        }
        let (Some(parent), Ok(root)) = (path.parent(), self.work.canonicalize()) else {
            return Err(outside().into());
        };
        match parent.canonicalize() {
            Ok(p) if p.starts_with(&root) => Ok(()),
            Ok(p) => Err(NotOurs(format!(
                "{} (its folder resolves to {})",
                outside(),
                p.display()
            ))),
            Err(_) => Err(outside().into()),
        }
    }

    /// Ok when `dir` is a cgroup of run `run`: `<mount>/benchcage/<run>[/..]`.
    pub(crate) fn check_cgroup_dir(&self, dir: &Path, run: &str) -> Result<(), NotOurs> {
        let ok = is_plain_absolute(dir)
            && self
                .cgroups
                .iter()
                .any(|top| dir.starts_with(top.join(run)));
        if ok || (is_plain_absolute(dir) && delegation::in_delegated_top(dir, run)) {
            Ok(())
        } else {
            Err(NotOurs(format!(
                "not a cgroup of run {run} under benchcage's cgroup top ({})",
                self.cgroups
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }
}

/// An absolute path with no `.` or `..` in it.
fn is_plain_absolute(p: &Path) -> bool {
    p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// Error unless `dir` (when it exists) is a directory owned by the user
/// benchcage runs as and private to it: anyone else who can write there
/// could forge a ledger and have `cleanup` delete or kill what it names.
pub(crate) fn check_state_dir(dir: &Path) -> Result<(), SandboxError> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(state_err(dir, e.to_string())),
    };
    let me = nix::unistd::geteuid().as_raw();
    let mode = meta.mode() & 0o7777;
    let why = if !meta.is_dir() {
        Some("it is not a directory (a symlink or a file)".to_string())
    } else if meta.uid() != me {
        Some(format!(
            "it is owned by uid {}, not by uid {me} that benchcage runs as",
            meta.uid()
        ))
    } else if mode & 0o077 != 0 {
        Some(format!(
            "it is mode {mode:o}: other users may read or write it"
        ))
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(state_err(
            dir,
            format!(
                "refusing this state dir: {why}; a ledger there could be forged. Use a private folder (`chown root: DIR && chmod 700 DIR`) or set BENCHCAGE_STATE_DIR to a new path"
            ),
        )),
    }
}

fn state_err(dir: &Path, detail: String) -> SandboxError {
    SandboxError::Ledger {
        path: dir.to_path_buf(),
        source: std::io::Error::other(detail),
    }
}

/// Create the state dir private (mode 700) when it is missing, then check it.
pub(crate) fn ensure_state_dir(dir: &Path) -> Result<(), SandboxError> {
    create_dirs(dir, PRIVATE).map_err(|e| state_err(dir, e.to_string()))?;
    check_state_dir(dir)
}

/// Create `dir` and its missing parents; every folder created here gets
/// `mode` (whatever the umask). Existing folders are left as they are.
pub(crate) fn create_dirs(dir: &Path, mode: u32) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.exists()).collect();
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(work: &Path) -> Roots {
        Roots {
            work: work.to_path_buf(),
            cgroups: vec![PathBuf::from("/sys/fs/cgroup/memory/benchcage")],
        }
    }

    #[test]
    fn only_paths_strictly_below_the_work_root_are_ours() {
        let t = tempfile::tempdir().unwrap();
        let work = t.path().join("work");
        std::fs::create_dir_all(work.join("r1/01")).unwrap();
        let r = roots(&work);
        assert!(r.check_work_path(&work.join("r1/01/data")).is_ok());
        for bad in [
            work.clone(),
            work.join("r1/../../etc"),
            PathBuf::from("relative/data"),
            t.path().join("elsewhere"),
            PathBuf::from("/etc"),
        ] {
            let e = r.check_work_path(&bad).unwrap_err().0;
            assert!(e.contains("outside benchcage's work root"), "{e}");
        }
    }

    #[test]
    fn a_symlink_inside_the_work_root_that_leads_out_of_it_is_not_ours() {
        let t = tempfile::tempdir().unwrap();
        let work = t.path().join("work");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(outside.join("victim")).unwrap();
        std::os::unix::fs::symlink(&outside, work.join("link")).unwrap();
        let e = roots(&work)
            .check_work_path(&work.join("link/victim"))
            .unwrap_err()
            .0;
        assert!(e.contains("resolves to"), "{e}");
    }

    #[test]
    fn only_cgroups_of_the_ledgers_own_run_are_ours() {
        let r = roots(Path::new("/w"));
        let top = Path::new("/sys/fs/cgroup/memory/benchcage");
        assert!(
            r.check_cgroup_dir(&top.join("run-1/server"), "run-1")
                .is_ok()
        );
        for bad in [
            top.join("run-2/server"),
            top.to_path_buf(),
            top.join("run-1/../run-2"),
            PathBuf::from("/sys/fs/cgroup/memory/system.slice"),
        ] {
            assert!(r.check_cgroup_dir(&bad, "run-1").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_state_dir_others_can_read_or_write_is_refused_and_a_new_one_is_private() {
        let t = tempfile::tempdir().unwrap();
        let fresh = t.path().join("a/state");
        ensure_state_dir(&fresh).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = check_state_dir(&fresh).unwrap_err().to_string();
        assert!(e.contains("mode 755") && e.contains("chmod 700"), "{e}");
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&fresh, Some(65534), None).unwrap();
        let e = check_state_dir(&fresh).unwrap_err().to_string();
        assert!(e.contains("owned by uid 65534"), "{e}");
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&fresh, &link).unwrap();
        let e = check_state_dir(&link).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn folders_created_for_a_data_dir_get_the_mode_asked_and_existing_ones_keep_theirs() {
        let t = tempfile::tempdir().unwrap();
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        create_dirs(&t.path().join("w/r/01"), SEARCHABLE).unwrap();
        for d in ["w", "w/r", "w/r/01"] {
            let m = std::fs::metadata(t.path().join(d)).unwrap().mode() & 0o777;
            assert_eq!(m, SEARCHABLE, "{d}");
        }
        let m = std::fs::metadata(t.path()).unwrap().mode() & 0o777;
        assert_eq!(m, 0o700, "an existing folder is never chmodded");
    }
}
