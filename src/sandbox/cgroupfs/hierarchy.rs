//! Which cgroup hierarchy this host has and where each controller is
//! mounted. The only file that imports cgroups-rs: it is used for discovery
//! (mountinfo parsing, unified-mode check); every file access goes through
//! our own root-path code so that it is testable on a temp dir.

use super::delegation::V2Place;
use crate::sandbox::SandboxError;
use cgroups_rs::fs::Controllers;
use cgroups_rs::fs::hierarchies::{V1, is_cgroup2_unified_mode};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the unified hierarchy is mounted.
pub(crate) const V2_MOUNT: &str = "/sys/fs/cgroup";

/// The v1 controllers a sandbox uses, each in its own directory tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Controller {
    Cpuset,
    Cpu,
    Cpuacct,
    Memory,
    Pids,
    Blkio,
    Freezer,
}

impl Controller {
    /// Every controller a v1 sandbox creates a group in.
    pub const ALL: [Controller; 7] = [
        Controller::Cpuset,
        Controller::Cpu,
        Controller::Cpuacct,
        Controller::Memory,
        Controller::Pids,
        Controller::Blkio,
        Controller::Freezer,
    ];

    /// The kernel's name for the controller.
    pub fn name(self) -> &'static str {
        match self {
            Controller::Cpuset => "cpuset",
            Controller::Cpu => "cpu",
            Controller::Cpuacct => "cpuacct",
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Blkio => "blkio",
            Controller::Freezer => "freezer",
        }
    }

    fn crate_controller(self) -> Controllers {
        match self {
            Controller::Cpuset => Controllers::CpuSet,
            Controller::Cpu => Controllers::Cpu,
            Controller::Cpuacct => Controllers::CpuAcct,
            Controller::Memory => Controllers::Mem,
            Controller::Pids => Controllers::Pids,
            Controller::Blkio => Controllers::BlkIo,
            Controller::Freezer => Controllers::Freezer,
        }
    }
}

/// A cgroup hierarchy rooted at real mount points or at a test fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// One mount per controller (a controller may share a mount with
    /// another, e.g. `cpu,cpuacct`; then both map to the same path).
    V1 {
        mounts: BTreeMap<Controller, PathBuf>,
    },
    /// The unified hierarchy mounted at `mount`; benchcage's own groups go
    /// under `base` (the mount itself, or the subtree systemd delegated to
    /// benchcage, see [`super::delegation`]).
    V2 { mount: PathBuf, base: PathBuf },
}

impl Hierarchy {
    /// Detect this host's hierarchy: v2 when /sys/fs/cgroup is cgroup2
    /// (with the subtree benchcage may use; an error under systemd when it
    /// has none), else v1 with every controller benchcage needs mounted.
    pub fn detect() -> Result<Hierarchy, SandboxError> {
        if is_cgroup2_unified_mode() {
            let mount = PathBuf::from(V2_MOUNT);
            let base = V2Place::probe(&mount).base()?;
            return Ok(Hierarchy::V2 { mount, base });
        }
        let v1 = V1::new();
        let mut mounts = BTreeMap::new();
        for c in Controller::ALL {
            match v1.get_mount_point(c.crate_controller()) {
                Some((mount_point, _root)) => {
                    mounts.insert(c, mount_point);
                }
                None => {
                    return Err(SandboxError::Unsupported(format!(
                        "cgroup v1 controller `{}` is not mounted; mount it (mount -t cgroup -o {} cgroup /sys/fs/cgroup/{}) or boot with the unified hierarchy",
                        c.name(),
                        c.name(),
                        c.name()
                    )));
                }
            }
        }
        Ok(Hierarchy::V1 { mounts })
    }

    /// A v1 hierarchy with every controller as a folder of `root` (tests).
    pub fn v1_at(root: &Path) -> Hierarchy {
        Hierarchy::V1 {
            mounts: Controller::ALL
                .iter()
                .map(|c| (*c, root.join(c.name())))
                .collect(),
        }
    }

    /// A v2 hierarchy whose groups go right under `root` (tests).
    pub fn v2_at(root: &Path) -> Hierarchy {
        Hierarchy::V2 {
            mount: root.to_path_buf(),
            base: root.to_path_buf(),
        }
    }

    /// `v1` or `v2`, for records and `doctor`.
    pub fn version(&self) -> &'static str {
        match self {
            Hierarchy::V1 { .. } => "v1",
            Hierarchy::V2 { .. } => "v2",
        }
    }

    /// Directories of benchcage's own group at `relative` (e.g.
    /// `benchcage/<id>/server`), keyed by controller name (`unified` on v2).
    pub fn dirs(&self, relative: &Path) -> BTreeMap<String, PathBuf> {
        match self {
            Hierarchy::V2 { base, .. } => {
                BTreeMap::from([("unified".to_string(), base.join(relative))])
            }
            v1 => v1.mount_dirs(relative),
        }
    }

    /// Directories of any group by its path from the mount (e.g. a
    /// container's `system.slice/docker-<id>.scope` from /proc/<pid>/cgroup).
    pub(crate) fn mount_dirs(&self, relative: &Path) -> BTreeMap<String, PathBuf> {
        match self {
            Hierarchy::V1 { mounts } => mounts
                .iter()
                .map(|(c, m)| (c.name().to_string(), m.join(relative)))
                .collect(),
            Hierarchy::V2 { mount, .. } => {
                BTreeMap::from([("unified".to_string(), mount.join(relative))])
            }
        }
    }
}
