//! Kernel file names and the only two ways benchcage touches a cgroup file:
//! read and write, each mapped to a [`SandboxError`] naming the path.

use crate::sandbox::SandboxError;
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) const CGROUP_PROCS: &str = "cgroup.procs";

pub(crate) const V1_CPUSET_CPUS: &str = "cpuset.cpus";
pub(crate) const V1_CPUSET_MEMS: &str = "cpuset.mems";
pub(crate) const V2_CPUSET_CPUS: &str = "cpuset.cpus";
pub(crate) const V2_CPUSET_MEMS: &str = "cpuset.mems";
pub(crate) const V2_CPUSET_MEMS_EFFECTIVE: &str = "cpuset.mems.effective";

pub(crate) const V1_MEMORY_LIMIT: &str = "memory.limit_in_bytes";
pub(crate) const V1_MEMSW_LIMIT: &str = "memory.memsw.limit_in_bytes";
pub(crate) const V1_MEMORY_USAGE: &str = "memory.usage_in_bytes";
pub(crate) const V1_MEMORY_MAX_USAGE: &str = "memory.max_usage_in_bytes";
pub(crate) const V1_MEMORY_FAILCNT: &str = "memory.failcnt";
pub(crate) const V1_MEMSW_FAILCNT: &str = "memory.memsw.failcnt";
pub(crate) const V1_MEMORY_OOM_CONTROL: &str = "memory.oom_control";
pub(crate) const V1_MEMORY_FORCE_EMPTY: &str = "memory.force_empty";
pub(crate) const MEMORY_STAT: &str = "memory.stat";
pub(crate) const V2_MEMORY_MAX: &str = "memory.max";
pub(crate) const V2_MEMORY_SWAP_MAX: &str = "memory.swap.max";
pub(crate) const V2_MEMORY_CURRENT: &str = "memory.current";
pub(crate) const V2_MEMORY_PEAK: &str = "memory.peak";
pub(crate) const V2_MEMORY_EVENTS: &str = "memory.events";
pub(crate) const V2_MEMORY_RECLAIM: &str = "memory.reclaim";

pub(crate) const PIDS_MAX: &str = "pids.max";

pub(crate) const V1_BLKIO_READ_BPS: &str = "blkio.throttle.read_bps_device";
pub(crate) const V1_BLKIO_WRITE_BPS: &str = "blkio.throttle.write_bps_device";
pub(crate) const V1_BLKIO_READ_IOPS: &str = "blkio.throttle.read_iops_device";
pub(crate) const V1_BLKIO_WRITE_IOPS: &str = "blkio.throttle.write_iops_device";
pub(crate) const V1_BLKIO_SERVICE_BYTES: &str = "blkio.throttle.io_service_bytes_recursive";
pub(crate) const V2_IO_MAX: &str = "io.max";
pub(crate) const V2_IO_STAT: &str = "io.stat";

pub(crate) const V1_CPUACCT_USAGE: &str = "cpuacct.usage";
pub(crate) const V2_CPU_STAT: &str = "cpu.stat";

pub(crate) const V1_FREEZER_STATE: &str = "freezer.state";
pub(crate) const V2_CGROUP_FREEZE: &str = "cgroup.freeze";
pub(crate) const V2_CGROUP_EVENTS: &str = "cgroup.events";
pub(crate) const V2_CGROUP_KILL: &str = "cgroup.kill";
pub(crate) const V2_SUBTREE_CONTROL: &str = "cgroup.subtree_control";
pub(crate) const V2_CONTROLLERS: &str = "cgroup.controllers";

/// Read a cgroup file as text.
pub fn read(path: &Path) -> Result<String, SandboxError> {
    std::fs::read_to_string(path).map_err(|source| SandboxError::CgroupRead {
        path: path.to_path_buf(),
        source,
    })
}

/// Read a cgroup file, trimmed.
pub(crate) fn read_trim(path: &Path) -> Result<String, SandboxError> {
    Ok(read(path)?.trim().to_string())
}

/// Read a cgroup file holding one number.
pub fn read_u64(path: &Path) -> Result<u64, SandboxError> {
    let text = read_trim(path)?;
    text.parse().map_err(|_| SandboxError::CgroupRead {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("`{text}` is not a number"),
        ),
    })
}

/// Write one value to a cgroup file (one `write(2)`, as the kernel wants).
pub fn write(path: &Path, value: &str) -> Result<(), SandboxError> {
    std::fs::write(path, value).map_err(|source| SandboxError::CgroupWrite {
        path: path.to_path_buf(),
        value: value.to_string(),
        source,
    })
}

/// Parse a flat keyed file (`key value` per line), skipping lines that are
/// not `key number`.
pub fn flat_keyed(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace();
            let key = it.next()?;
            let value = it.next()?.parse().ok()?;
            Some((key.to_string(), value))
        })
        .collect()
}

/// Pids listed in a `cgroup.procs` or `tasks` file; a vanished cgroup has none.
pub fn pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_keyed_skips_lines_without_a_number() {
        let m = flat_keyed("cache 4096\nrss 8192\nweird\nx y\n");
        assert_eq!(m.len(), 2);
        assert_eq!(m["rss"], 8192);
    }
}
