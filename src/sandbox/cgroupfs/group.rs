//! One group of a sandbox (`benchcage/<run-id>/server`) across every
//! controller: create its parents and itself, apply and read back limits,
//! and the `cgroup.procs` files a process writes to join it.

use super::files::{self, *};
use super::hierarchy::Hierarchy;
use super::{cpuset, delegation, io, memory, pids, remove};
use crate::model::{IoLimits, SwapPolicy};
use crate::sandbox::SandboxError;
use crate::units::{Bytes, CpuSet};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The top folder of every benchcage group.
pub const TOP: &str = "benchcage";

/// The limits one group gets.
#[derive(Debug, Clone, Default)]
pub struct GroupLimits {
    pub cpus: Option<CpuSet>,
    pub memory: Option<(Bytes, SwapPolicy)>,
    pub pids: Option<u64>,
    /// `major:minor` of the data device and its throttles.
    pub io: Option<(String, IoLimits)>,
}

/// A group's directories, one per controller (`unified` on v2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Short name used in read-back keys (`server`, `client`).
    pub label: String,
    pub dirs: BTreeMap<String, PathBuf>,
}

/// Controllers enabled for children on v2.
pub const V2_CONTROLLERS_WANTED: [&str; 5] = ["cpuset", "cpu", "io", "memory", "pids"];

impl Group {
    /// The group at `relative` in `hier`, not created yet.
    pub fn at(hier: &Hierarchy, relative: &Path, label: &str) -> Group {
        Group {
            label: label.to_string(),
            dirs: hier.dirs(relative),
        }
    }

    /// Whether this group lives in the v2 hierarchy.
    pub(crate) fn is_v2(&self) -> bool {
        self.dirs.contains_key("unified")
    }

    /// Create the directory in every controller. Parents must exist
    /// (see [`ensure_parent`]); an existing directory is reused.
    pub fn create(&self) -> Result<(), SandboxError> {
        for (controller, dir) in &self.dirs {
            mkdir(dir)?;
            let parent = dir.parent().unwrap_or(dir);
            if controller == "cpuset" {
                cpuset::v1_inherit(parent, dir)?;
            }
        }
        Ok(())
    }

    /// Apply `limits`; `None` fields are left at the kernel default.
    pub fn apply(&self, limits: &GroupLimits) -> Result<(), SandboxError> {
        if let Some(d) = self.dirs.get("unified") {
            let parent = d.parent().unwrap_or(d);
            if let Some(c) = &limits.cpus {
                files::write(&d.join(V2_CPUSET_CPUS), &c.to_string())?;
                let mems =
                    files::read_trim(&parent.join(V2_CPUSET_MEMS_EFFECTIVE)).unwrap_or_default();
                if !mems.is_empty() {
                    files::write(&d.join(V2_CPUSET_MEMS), &mems)?;
                }
            }
            if let Some((m, s)) = limits.memory {
                memory::apply_v2(d, m, s)?;
            }
            if let Some(p) = limits.pids {
                pids::apply(d, p)?;
            }
            if let Some((dev, l)) = &limits.io {
                io::apply_v2(d, dev, l)?;
            }
            return Ok(());
        }
        if let (Some(c), Some(d)) = (&limits.cpus, self.dirs.get("cpuset")) {
            cpuset::apply(d.parent().unwrap_or(d), d, c)?;
        }
        if let (Some((m, s)), Some(d)) = (limits.memory, self.dirs.get("memory")) {
            memory::apply_v1(d, m, s)?;
        }
        if let (Some(p), Some(d)) = (limits.pids, self.dirs.get("pids")) {
            pids::apply(d, p)?;
        }
        if let (Some((dev, l)), Some(d)) = (&limits.io, self.dirs.get("blkio")) {
            io::apply_v1(d, dev, l)?;
        }
        Ok(())
    }

    /// Read every applied limit back; a value that differs is an error.
    pub fn read_back(
        &self,
        limits: &GroupLimits,
        out: &mut BTreeMap<String, String>,
    ) -> Result<(), SandboxError> {
        let label = &self.label;
        let (cpu_dir, mem_dir, pids_dir, io_dir) = match self.dirs.get("unified") {
            Some(d) => (Some(d), Some(d), Some(d), Some(d)),
            None => (
                self.dirs.get("cpuset"),
                self.dirs.get("memory"),
                self.dirs.get("pids"),
                self.dirs.get("blkio"),
            ),
        };
        let v2 = self.is_v2();
        if let (Some(c), Some(d)) = (&limits.cpus, cpu_dir) {
            cpuset::read_back(d, label, c, out)?;
        }
        if let (Some((m, s)), Some(d)) = (limits.memory, mem_dir) {
            if v2 {
                memory::read_back_v2(d, label, m, s, out)?;
            } else {
                memory::read_back_v1(d, label, m, s, out)?;
            }
        }
        if let (Some(p), Some(d)) = (limits.pids, pids_dir) {
            pids::read_back(d, label, p, out)?;
        }
        if let (Some((dev, l)), Some(d)) = (&limits.io, io_dir) {
            if v2 {
                io::read_back_v2(d, label, dev, l, out)?;
            } else {
                io::read_back_v1(d, label, dev, l, out)?;
            }
        }
        Ok(())
    }

    /// The `cgroup.procs` files a process writes `0` to in order to join.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.values().map(|d| d.join(CGROUP_PROCS)).collect()
    }

    /// The memory directory (v1 memory controller, or the v2 group).
    pub(crate) fn memory_dir(&self) -> Option<&Path> {
        self.dirs
            .get("unified")
            .or_else(|| self.dirs.get("memory"))
            .map(PathBuf::as_path)
    }

    /// Set the memory cap of the live group (swap policy kept), e.g.
    /// after the load.
    pub(crate) fn set_memory_cap(&self, cap: Bytes, swap: SwapPolicy) -> Result<(), SandboxError> {
        match self.memory_dir() {
            Some(d) if self.is_v2() => memory::apply_v2(d, cap, swap),
            Some(d) => memory::apply_v1(d, cap, swap),
            None => Err(SandboxError::Unsupported(format!(
                "the {} group has no memory cgroup; its cap cannot change",
                self.label
            ))),
        }
    }

    /// Drop the page cache charged to the group; without a memory cgroup,
    /// the host's.
    pub fn drop_page_cache(&self) -> Result<(), SandboxError> {
        match self.memory_dir() {
            Some(d) => memory::drop_cache(d, self.is_v2()),
            None => memory::drop_host_cache(),
        }
    }

    /// Every pid in the group, in any of its controllers.
    pub fn pids(&self) -> Vec<u32> {
        remove::pids_in(&self.dirs)
            .into_iter()
            .filter_map(|p| u32::try_from(p).ok())
            .collect()
    }
}

/// `mkdir` that accepts an existing directory.
pub fn mkdir(dir: &Path) -> Result<(), SandboxError> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(SandboxError::CgroupCreate {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Make a parent level (`benchcage`, `benchcage/<run-id>`) usable for
/// children: v1 cpuset values copied down, v2 controllers enabled below it.
pub fn ensure_parent(group: &Group) -> Result<(), SandboxError> {
    group.create()?;
    if let Some(d) = group.dirs.get("unified") {
        let parent = d.parent().unwrap_or(d);
        // No internal processes: a delegated parent still holding
        // benchcage itself could not enable controllers for children.
        delegation::evacuate(parent)?;
        enable_v2_controllers(parent)?;
        enable_v2_controllers(d)?;
    }
    Ok(())
}

/// Enable the controllers benchcage needs in a v2 group's subtree.
pub fn enable_v2_controllers(dir: &Path) -> Result<(), SandboxError> {
    let available = files::read(&dir.join(V2_CONTROLLERS))?;
    let enabled = files::read(&dir.join(V2_SUBTREE_CONTROL)).unwrap_or_default();
    let want: Vec<String> = V2_CONTROLLERS_WANTED
        .iter()
        .filter(|c| available.split_whitespace().any(|a| a == **c))
        .filter(|c| !enabled.split_whitespace().any(|a| a == **c))
        .map(|c| format!("+{c}"))
        .collect();
    if want.is_empty() {
        return Ok(());
    }
    files::write(&dir.join(V2_SUBTREE_CONTROL), &want.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v2 tree as the kernel would show it, files only.
    fn v2_fixture(root: &Path) {
        std::fs::write(root.join(V2_CONTROLLERS), "cpuset cpu io memory pids\n").unwrap();
        std::fs::write(root.join(V2_SUBTREE_CONTROL), "").unwrap();
    }

    #[test]
    fn v2_group_gets_its_limits_written_and_read_back_on_a_fixture() {
        let t = tempfile::tempdir().unwrap();
        v2_fixture(t.path());
        let hier = Hierarchy::v2_at(t.path());
        let top = Group::at(&hier, Path::new(TOP), "top");
        let dir = t.path().join(TOP);
        // The kernel fills a new group with these files.
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(V2_CONTROLLERS), "cpuset cpu io memory pids\n").unwrap();
        std::fs::write(dir.join(V2_CPUSET_MEMS_EFFECTIVE), "0\n").unwrap();
        ensure_parent(&top).unwrap();
        assert_eq!(
            std::fs::read_to_string(t.path().join(V2_SUBTREE_CONTROL)).unwrap(),
            "+cpuset +cpu +io +memory +pids"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join(V2_SUBTREE_CONTROL)).unwrap(),
            "+cpuset +cpu +io +memory +pids"
        );
        let g = Group::at(&hier, &Path::new(TOP).join("r1"), "server");
        g.create().unwrap();
        let limits = GroupLimits {
            cpus: Some("0-1".parse().unwrap()),
            memory: Some((Bytes::from_mib(64), SwapPolicy::Off)),
            pids: Some(128),
            io: Some((
                "254:0".into(),
                IoLimits {
                    write_bps: Some(1 << 20),
                    ..IoLimits::default()
                },
            )),
        };
        let d = t.path().join(TOP).join("r1");
        // Files the kernel would create with the group.
        std::fs::write(d.join(V2_MEMORY_SWAP_MAX), "max").unwrap();
        g.apply(&limits).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.join(V2_MEMORY_MAX)).unwrap(),
            "67108864"
        );
        assert_eq!(
            std::fs::read_to_string(d.join(V2_MEMORY_SWAP_MAX)).unwrap(),
            "0"
        );
        assert_eq!(
            std::fs::read_to_string(d.join(V2_IO_MAX)).unwrap(),
            "254:0 wbps=1048576"
        );
        let mut out = BTreeMap::new();
        g.read_back(&limits, &mut out).unwrap();
        assert_eq!(out["server/memory.max"], "67108864");
        assert_eq!(out["server/cpuset.cpus"], "0-1");
        assert_eq!(out["server/pids.max"], "128");
        assert_eq!(g.procs_files(), vec![d.join(CGROUP_PROCS)]);
    }

    #[test]
    fn v1_group_has_one_directory_per_controller_and_inherits_cpuset_mems() {
        let t = tempfile::tempdir().unwrap();
        let hier = Hierarchy::v1_at(t.path());
        for d in hier.dirs(Path::new("")).values() {
            std::fs::create_dir_all(d).unwrap();
        }
        let cs = t.path().join("cpuset");
        std::fs::write(cs.join(V1_CPUSET_CPUS), "0-1\n").unwrap();
        std::fs::write(cs.join(V1_CPUSET_MEMS), "0\n").unwrap();
        std::fs::create_dir(cs.join(TOP)).unwrap();
        std::fs::write(cs.join(TOP).join(V1_CPUSET_CPUS), "").unwrap();
        std::fs::write(cs.join(TOP).join(V1_CPUSET_MEMS), "").unwrap();
        let top = Group::at(&hier, Path::new(TOP), "top");
        top.create().unwrap();
        assert_eq!(
            files::read_trim(&cs.join(TOP).join(V1_CPUSET_MEMS)).unwrap(),
            "0"
        );
        assert_eq!(top.dirs.len(), 7);
        assert_eq!(top.procs_files().len(), 7);
    }
}
