//! Facts about this machine: CPUs online, RAM, MemAvailable, cgroup layout,
//! swap accounting, kernel, CPU model. The only importer of `sysinfo`.
//!
//! Readers take a root path (`/` normally) so tests can point them at a
//! fake tree of kernel files.

use crate::sandbox::thp::{ThpFiles, ThpState};
use crate::units::{Bytes, CpuSet};
use std::path::{Path, PathBuf};

/// How cgroups are mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupLayout {
    /// Only v1 controllers under /sys/fs/cgroup/<controller>.
    V1,
    /// v1 controllers plus cgroup2 at /sys/fs/cgroup/unified (systemd's hybrid).
    Hybrid,
    /// Unified cgroup2 at /sys/fs/cgroup.
    V2,
    /// Nothing usable is mounted.
    None,
}

/// What benchcage needs to know about the host.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HostFacts {
    /// From /sys/devices/system/cpu/online.
    pub online_cpus: CpuSet,
    pub mem_total: Bytes,
    pub mem_available: Bytes,
    pub swap_total: Bytes,
    pub cgroup: CgroupLayout,
    /// Controllers available to benchcage (v1 mounts, or v2 cgroup.controllers).
    pub controllers: Vec<String>,
    /// v1 `memory.memsw.*` present (or v2 `memory.swap.max`): swap can be limited.
    pub swap_accounting: bool,
    pub kernel: String,
    pub cpu_model: String,
    pub hostname: String,
    /// Where engine data dirs go ([`work_root`](crate::sandbox::roots::work_root)).
    pub work_dir: PathBuf,
    /// Free space there for an unprivileged writer, or as
    /// `BENCHCAGE_WORK_FREE` sets it; `None` when unknown (a fake root in
    /// tests, statvfs failed, or the variable is not a size).
    pub work_free: Option<Bytes>,
    /// `BENCHCAGE_WORK_FREE` as given, when it is set.
    pub work_free_set: Option<String>,
    /// The hard limit on open files (`ulimit -Hn`): one per connection.
    pub open_files: u64,
    /// Transparent huge pages (`/sys/kernel/mm/transparent_hugepage`, or
    /// `$BENCHCAGE_THP_ROOT`): `Ok(None)` when the kernel has none.
    pub thp: Result<Option<ThpState>, String>,
    /// The kernel has netem (`sch_netem` loaded, built in or loadable):
    /// the kernel emulation of a network can give a delay, jitter or loss
    /// ([`crate::network::netns::netem_available`]).
    pub netem: bool,
}

/// v1 controllers benchcage uses.
pub(crate) const V1_CONTROLLERS: &[&str] = &[
    "cpuset", "cpu", "cpuacct", "memory", "blkio", "pids", "freezer",
];

/// The online CPUs under `root`, else as many as this process may use.
fn online_cpus(root: &Path) -> CpuSet {
    std::fs::read_to_string(root.join("sys/devices/system/cpu/online"))
        .ok()
        .and_then(|s| s.trim().parse::<CpuSet>().ok())
        .unwrap_or_else(|| {
            CpuSet::new(
                0..std::thread::available_parallelism()
                    .map(|n| n.get() as u32)
                    .unwrap_or(1),
            )
        })
}

/// A `KEY: N kB` line of /proc/meminfo, in bytes.
fn meminfo_value(meminfo: &str, key: &str) -> Option<Bytes> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let n: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(Bytes(n * 1024))
    })
}

/// This host's memory (total, available), kernel, CPU model and host
/// name from sysinfo; zeros and empty strings when it cannot tell.
fn system_facts() -> (Bytes, Bytes, String, String, String) {
    let Ok(mut sys) = sysinfo::System::new() else {
        return (
            Bytes(0),
            Bytes(0),
            String::new(),
            String::new(),
            String::new(),
        );
    };
    sys.refresh_memory();
    sys.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
    let model = sys
        .cpus()
        .first()
        .map(|c| c.brand().trim().to_string())
        .unwrap_or_default();
    (
        Bytes(sys.total_memory()),
        Bytes(sys.available_memory()),
        sysinfo::System::kernel_version().unwrap_or_default(),
        model,
        sysinfo::System::host_name().unwrap_or_default(),
    )
}

/// The CPU model of `proc/cpuinfo` under `root`.
fn cpu_model_at(root: &Path) -> String {
    std::fs::read_to_string(root.join("proc/cpuinfo"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default()
}

impl HostFacts {
    /// Read the facts of this host.
    pub fn probe() -> HostFacts {
        Self::probe_at(Path::new("/"))
    }

    /// Read the facts from a root holding `proc/` and `sys/` (tests use a temp dir).
    pub(crate) fn probe_at(root: &Path) -> HostFacts {
        let online = online_cpus(root);
        let meminfo = std::fs::read_to_string(root.join("proc/meminfo")).unwrap_or_default();
        let kb = |key: &str| meminfo_value(&meminfo, key);
        let is_real_root = root == Path::new("/");
        let (sys_total, sys_avail, kernel, cpu_model, hostname) = if is_real_root {
            system_facts()
        } else {
            let model = cpu_model_at(root);
            (Bytes(0), Bytes(0), String::new(), model, String::new())
        };
        let cmdline = std::fs::read_to_string(root.join("proc/cmdline")).unwrap_or_default();
        let (cgroup, controllers, swap_accounting) =
            cgroup_facts(&root.join("sys/fs/cgroup"), &cmdline);
        let work_dir = crate::sandbox::roots::work_root();
        let work_free_set = std::env::var(crate::sandbox::roots::WORK_FREE_ENV).ok();
        let work_free = match (&work_free_set, is_real_root) {
            (Some(v), _) => v.parse::<Bytes>().ok(),
            (None, true) => disk_available(&work_dir).ok(),
            (None, false) => None,
        };
        let thp_files = if is_real_root {
            ThpFiles::current()
        } else {
            ThpFiles::at(root.join("sys/kernel/mm/transparent_hugepage"))
        };
        HostFacts {
            work_dir,
            work_free,
            work_free_set,
            open_files: crate::workload::bounds::open_files_limit(),
            online_cpus: online,
            mem_total: kb("MemTotal").unwrap_or(sys_total),
            mem_available: kb("MemAvailable").unwrap_or(sys_avail),
            swap_total: kb("SwapTotal").unwrap_or_default(),
            cgroup,
            controllers,
            swap_accounting,
            kernel,
            cpu_model,
            hostname,
            thp: thp_files.read().map_err(|e| e.to_string()),
            netem: crate::network::netns::netem_available(root),
        }
    }

    /// The record a run stores.
    pub(crate) fn info(&self) -> crate::results::model::HostInfo {
        crate::results::model::HostInfo {
            hostname: self.hostname.clone(),
            cpu_model: self.cpu_model.clone(),
            cores: self.online_cpus.len() as u32,
            kernel: self.kernel.clone(),
            memory_bytes: self.mem_total.0,
            transparent_hugepages: match &self.thp {
                Ok(Some(t)) => Some(match &t.defrag {
                    Some(d) => format!("{}, defrag {d}", t.enabled),
                    None => t.enabled.to_string(),
                }),
                _ => None,
            },
            ..Default::default()
        }
    }
}

/// Layout, controllers and swap accounting from a cgroup mount root.
pub(crate) fn cgroup_facts(cg: &Path, cmdline: &str) -> (CgroupLayout, Vec<String>, bool) {
    let v2_root = cg.join("cgroup.controllers");
    if v2_root.exists() {
        let ctrls = read_words(&v2_root);
        // memory.swap.max sits next to memory.current in every group with
        // the memory controller, unless the kernel was built or booted
        // without swap accounting (swapaccount=0). With no such group yet
        // (a bare v2 root), the boot line is all there is to go by.
        let with_memory: Vec<PathBuf> = std::fs::read_dir(cg)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.join("memory.current").exists())
                    .collect()
            })
            .unwrap_or_default();
        let swap = match with_memory.first() {
            Some(g) => g.join("memory.swap.max").exists(),
            None => {
                ctrls.iter().any(|c| c == "memory")
                    && !cmdline.split_whitespace().any(|w| w == "swapaccount=0")
            }
        };
        return (CgroupLayout::V2, ctrls, swap);
    }
    let v1: Vec<String> = V1_CONTROLLERS
        .iter()
        .filter(|c| cg.join(c).join("tasks").exists() || cg.join(c).join("cgroup.procs").exists())
        .map(|c| c.to_string())
        .collect();
    if v1.is_empty() {
        return (CgroupLayout::None, Vec::new(), false);
    }
    let swap = cg.join("memory/memory.memsw.limit_in_bytes").exists();
    let unified: PathBuf = cg.join("unified/cgroup.controllers");
    let layout = if unified.exists() {
        CgroupLayout::Hybrid
    } else {
        CgroupLayout::V1
    };
    (layout, v1, swap)
}

fn read_words(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

impl std::fmt::Display for CgroupLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CgroupLayout::V1 => "v1",
            CgroupLayout::Hybrid => "hybrid",
            CgroupLayout::V2 => "v2",
            CgroupLayout::None => "none",
        })
    }
}

/// Bytes available to an unprivileged writer on the filesystem of `path`
/// (the nearest existing ancestor when `path` does not exist yet).
pub(crate) fn disk_available(path: &Path) -> std::io::Result<Bytes> {
    let mut p = path;
    while !p.exists() {
        p = p.parent().unwrap_or(Path::new("/"));
    }
    let st = nix::sys::statvfs::statvfs(p).map_err(std::io::Error::from)?;
    Ok(Bytes(
        st.blocks_available() as u64 * st.fragment_size() as u64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "").unwrap();
    }

    #[test]
    fn a_v1_tree_with_memsw_and_unified_is_hybrid_with_swap_accounting() {
        let t = tempfile::tempdir().unwrap();
        let cg = t.path().join("sys/fs/cgroup");
        for c in ["memory", "cpuset", "cpu"] {
            touch(&cg.join(c).join("tasks"));
        }
        touch(&cg.join("memory/memory.memsw.limit_in_bytes"));
        std::fs::create_dir_all(cg.join("unified")).unwrap();
        std::fs::write(cg.join("unified/cgroup.controllers"), "").unwrap();
        std::fs::create_dir_all(t.path().join("sys/devices/system/cpu")).unwrap();
        std::fs::write(t.path().join("sys/devices/system/cpu/online"), "0-3,6\n").unwrap();
        std::fs::create_dir_all(t.path().join("proc")).unwrap();
        std::fs::write(
            t.path().join("proc/meminfo"),
            "MemTotal:       1024 kB\nMemAvailable:    512 kB\nSwapTotal: 0 kB\n",
        )
        .unwrap();
        let h = HostFacts::probe_at(t.path());
        assert_eq!(h.cgroup, CgroupLayout::Hybrid);
        assert!(h.swap_accounting);
        assert_eq!(h.online_cpus.to_list(), "0-3,6");
        assert_eq!(h.mem_total, Bytes(1024 * 1024));
        assert_eq!(h.mem_available, Bytes(512 * 1024));
        assert_eq!(h.controllers, vec!["cpuset", "cpu", "memory"]);
    }

    #[test]
    fn a_v1_tree_without_memsw_has_no_swap_accounting() {
        let t = tempfile::tempdir().unwrap();
        let cg = t.path().join("sys/fs/cgroup");
        touch(&cg.join("memory/tasks"));
        let (layout, _, swap) = cgroup_facts(&cg, "");
        assert_eq!(layout, CgroupLayout::V1);
        assert!(!swap);
    }

    #[test]
    fn a_unified_tree_is_v2_with_its_controllers() {
        let t = tempfile::tempdir().unwrap();
        let cg = t.path();
        std::fs::write(cg.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
        // A bare root: the boot line decides.
        assert!(cgroup_facts(cg, "console=ttyS0").2);
        assert!(!cgroup_facts(cg, "swapaccount=0 quiet").2);
        touch(&cg.join("user.slice/memory.current"));
        assert!(!cgroup_facts(cg, "").2, "a memory group without swap files");
        touch(&cg.join("user.slice/memory.swap.max"));
        let (layout, ctrls, swap) = cgroup_facts(cg, "swapaccount=0");
        assert_eq!(layout, CgroupLayout::V2);
        assert_eq!(ctrls.len(), 5);
        assert!(swap, "the files win over the boot line");
    }

    #[test]
    fn this_host_reports_online_cpus_and_memory() {
        let h = HostFacts::probe();
        assert!(!h.online_cpus.is_empty());
        assert!(h.mem_total.0 > 0 && h.mem_available <= h.mem_total);
    }

    #[test]
    fn a_cgroup_layout_reads_as_its_name() {
        assert_eq!(CgroupLayout::Hybrid.to_string(), "hybrid");
    }
}
