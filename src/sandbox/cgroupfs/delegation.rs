//! Where benchcage may create its groups on a cgroup v2 host.
//!
//! Without an init system that manages cgroups, benchcage's groups go under
//! the cgroup2 mount itself (`/sys/fs/cgroup/benchcage`). Under systemd as
//! PID 1 the tree belongs to systemd, which hands a subtree to a unit only
//! when the unit says `Delegate=yes` (systemd's CGROUP_DELEGATION.md): then
//! benchcage works inside its own delegated scope or service and nowhere
//! else, and outside one it refuses and says how to get one.
//!
//! A delegated group holds benchcage's own process, and cgroup v2's "no
//! internal processes" rule forbids enabling controllers for the children
//! of a group that has processes: [`evacuate`] first moves them into a
//! leaf, [`LAUNCHER`].

use super::files::{self, CGROUP_PROCS};
use crate::sandbox::SandboxError;
use std::path::{Path, PathBuf};

/// The leaf of a delegated group that holds the processes that were in it
/// (benchcage itself), so that the group may enable controllers below it.
pub const LAUNCHER: &str = "launcher";

/// The extended attribute systemd (v251+) sets on a unit's cgroup when it
/// delegates it (`user.delegate` for a user manager's units).
const DELEGATE_XATTRS: [&str; 2] = ["trusted.delegate", "user.delegate"];

/// What the v2 tree looks like from this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct V2Place {
    /// The cgroup2 mount (`/sys/fs/cgroup`).
    pub mount: PathBuf,
    /// This process's group, relative to the mount (`system.slice/x.scope`).
    pub own: PathBuf,
    /// Whether systemd is PID 1 (it owns the tree).
    pub systemd: bool,
    /// The nearest group at or above `own` that is delegated to us, relative
    /// to the mount; `None` when there is none.
    pub delegated: Option<PathBuf>,
}

impl V2Place {
    /// Read this process's place in the tree mounted at `mount`.
    pub fn probe(mount: &Path) -> V2Place {
        let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let own = own_group(&text).unwrap_or_default();
        let systemd = Path::new("/run/systemd/system").is_dir();
        let delegated = if systemd {
            nearest_delegated(&own, |rel| is_delegated(&mount.join(rel)))
        } else {
            None
        };
        V2Place {
            mount: mount.to_path_buf(),
            own,
            systemd,
            delegated,
        }
    }

    /// The folder benchcage's `benchcage/<run-id>` groups go under, or why
    /// there is none and what to do.
    pub fn base(&self) -> Result<PathBuf, SandboxError> {
        if !self.systemd {
            return Ok(self.mount.clone());
        }
        match &self.delegated {
            Some(d) => Ok(self.mount.join(d)),
            None => Err(SandboxError::Unsupported(format!(
                "systemd manages the cgroup tree and benchcage runs in /{}, which is not delegated to it; \
                 benchcage writes only into a subtree delegated to it: run it in its own scope, \
                 `systemd-run --scope -p Delegate=yes --quiet -- benchcage ...` \
                 (or from a unit with Delegate=yes)",
                self.own.display()
            ))),
        }
    }
}

/// Set on a benchcage that [`scope_command`] restarted in its own scope (so
/// it never does it twice); a user may set it to keep benchcage where it is.
pub const SCOPED_ENV: &str = "BENCHCAGE_SCOPED";

/// When this process needs a delegated subtree and has none but systemd can
/// give it one: the same command line, restarted by `systemd-run --scope -p
/// Delegate=yes` in a scope of its own (same pid, same terminal, same
/// environment). `None` when not needed or not possible.
pub fn scope_command() -> Option<std::process::Command> {
    let mount = Path::new(super::hierarchy::V2_MOUNT);
    if std::env::var_os(SCOPED_ENV).is_some() || !mount.join("cgroup.controllers").exists() {
        return None;
    }
    let place = V2Place::probe(mount);
    if !place.systemd || place.delegated.is_some() {
        return None;
    }
    let systemd_run = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.join("systemd-run"))
        .find(|p| p.is_file())?;
    let exe = std::env::current_exe().ok()?;
    let mut cmd = std::process::Command::new(systemd_run);
    cmd.args(["--scope", "-p", "Delegate=yes", "--quiet", "--collect"])
        .arg("--description=benchcage")
        .arg("--")
        .arg(exe)
        .args(std::env::args_os().skip(1))
        .env(SCOPED_ENV, "1");
    Some(cmd)
}

/// This process's v2 group (`0::/path` line of /proc/self/cgroup), relative.
pub fn own_group(proc_self_cgroup: &str) -> Option<PathBuf> {
    proc_self_cgroup.lines().find_map(|l| {
        l.strip_prefix("0::")
            .map(|p| PathBuf::from(p.trim().trim_start_matches('/')))
    })
}

/// The nearest of `own` and its ancestors (the root excluded) for which
/// `delegated` says yes.
pub fn nearest_delegated(own: &Path, delegated: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    own.ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .find(|p| delegated(p))
        .map(Path::to_path_buf)
}

/// Whether `dir` is a group of run `run` in a subtree systemd delegated
/// (`<mount>/<delegated>/benchcage/<run>/...`): where a run that restarted
/// itself in its own scope left its groups, for `cleanup` started elsewhere.
pub(crate) fn in_delegated_top(dir: &Path, run: &str) -> bool {
    let mount = Path::new(super::hierarchy::V2_MOUNT);
    let Ok(rel) = dir.strip_prefix(mount) else {
        return false;
    };
    if !mount.join("cgroup.controllers").exists() {
        return false;
    }
    let top = Path::new(super::group::TOP).join(run);
    rel.ancestors().any(|a| {
        a.ends_with(&top)
            && a.parent()
                .and_then(Path::parent)
                .is_some_and(|d| !d.as_os_str().is_empty() && is_delegated(&mount.join(d)))
    })
}

/// Whether systemd delegated the group at `dir`: its `trusted.delegate`
/// attribute, or for systemd before v251, the unit's `Delegate` property.
pub fn is_delegated(dir: &Path) -> bool {
    if DELEGATE_XATTRS
        .iter()
        .any(|name| xattr(dir, name).as_deref() == Some(b"1".as_slice()))
    {
        return true;
    }
    let Some(unit) = dir.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    if !(unit.ends_with(".scope") || unit.ends_with(".service") || unit.ends_with(".slice")) {
        return false;
    }
    std::process::Command::new("systemctl")
        .args(["show", "--property=Delegate", "--value", unit])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "yes")
}

fn xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let n = std::ffi::CString::new(name).ok()?;
    let mut buf = [0u8; 16];
    // SAFETY: both strings are NUL-terminated and the buffer length is passed.
    let len = unsafe {
        libc::getxattr(
            p.as_ptr(),
            n.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len() as libc::size_t,
        )
    };
    (len >= 0).then(|| buf[..len as usize].to_vec())
}

/// Make `base` able to enable controllers for its children: when it is
/// not the real root (which is exempt from the rule) and holds processes,
/// move every one of them into `base/launcher`. Returns the pids moved.
pub fn evacuate(base: &Path) -> Result<Vec<i32>, SandboxError> {
    // The real root has no cgroup.type; every other group has one.
    if !base.join("cgroup.type").exists() {
        return Ok(Vec::new());
    }
    let mut moved = Vec::new();
    // A process may fork while we move its parent: go round until empty.
    for _ in 0..10 {
        let pids = files::pids(&base.join(CGROUP_PROCS));
        if pids.is_empty() {
            return Ok(moved);
        }
        let leaf = base.join(LAUNCHER);
        super::group::mkdir(&leaf)?;
        for pid in pids {
            match files::write(&leaf.join(CGROUP_PROCS), &pid.to_string()) {
                Ok(()) => moved.push(pid),
                // ESRCH: it exited meanwhile.
                Err(SandboxError::CgroupWrite { source, .. })
                    if source.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_line_of_proc_self_cgroup_names_the_own_group() {
        let text = "0::/system.slice/run-u7.scope/launcher\n";
        assert_eq!(
            own_group(text).unwrap(),
            Path::new("system.slice/run-u7.scope/launcher")
        );
        assert_eq!(own_group("0::/\n").unwrap(), Path::new(""));
        assert_eq!(own_group("12:memory:/x\n"), None);
    }

    #[test]
    fn the_nearest_delegated_ancestor_is_the_base_and_the_root_never_is() {
        let own = Path::new("system.slice/run-u7.scope/launcher");
        let d = nearest_delegated(own, |p| p == Path::new("system.slice/run-u7.scope"));
        assert_eq!(d.unwrap(), Path::new("system.slice/run-u7.scope"));
        assert_eq!(nearest_delegated(own, |_| false), None);
        assert_eq!(nearest_delegated(Path::new(""), |_| true), None);
    }

    #[test]
    fn under_systemd_without_delegation_the_error_says_what_to_run() {
        let place = V2Place {
            mount: PathBuf::from("/sys/fs/cgroup"),
            own: PathBuf::from("user.slice/user-0.slice/session-1.scope"),
            systemd: true,
            delegated: None,
        };
        let err = place.base().unwrap_err().to_string();
        assert!(
            err.contains("/user.slice/user-0.slice/session-1.scope"),
            "{err}"
        );
        assert!(err.contains("systemd-run --scope -p Delegate=yes"), "{err}");
        let plain = V2Place {
            systemd: false,
            ..place.clone()
        };
        assert_eq!(plain.base().unwrap(), Path::new("/sys/fs/cgroup"));
        let delegated = V2Place {
            delegated: Some(PathBuf::from("system.slice/run-u7.scope")),
            ..place
        };
        assert_eq!(
            delegated.base().unwrap(),
            Path::new("/sys/fs/cgroup/system.slice/run-u7.scope")
        );
    }

    #[test]
    fn evacuating_the_real_root_moves_nothing() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join(CGROUP_PROCS), "1\n2\n").unwrap();
        assert!(evacuate(t.path()).unwrap().is_empty());
        assert!(!t.path().join(LAUNCHER).exists());
    }
}
