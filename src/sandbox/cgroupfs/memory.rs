//! memory: the hard cap and swap. v1 `memsw` is memory+swap, so "no swap"
//! is memsw = limit; v2 `memory.swap.max` is swap alone, so it is 0.

use super::files::{self, *};
use crate::model::SwapPolicy;
use crate::sandbox::SandboxError;
use crate::units::Bytes;
use std::collections::BTreeMap;
use std::path::Path;

/// The v1 memory+swap value for a cap and a swap policy.
pub(crate) fn v1_memsw(memory: Bytes, swap: SwapPolicy) -> u64 {
    match swap {
        SwapPolicy::Off => memory.0,
        SwapPolicy::Limit(s) => memory.0 + s.0,
    }
}

/// The v2 `memory.swap.max` value for a swap policy.
pub(crate) fn v2_swap_max(swap: SwapPolicy) -> u64 {
    match swap {
        SwapPolicy::Off => 0,
        SwapPolicy::Limit(s) => s.0,
    }
}

/// Set the cap (v1: limit before memsw, since memsw may never be below it).
pub(crate) fn apply_v1(dir: &Path, memory: Bytes, swap: SwapPolicy) -> Result<(), SandboxError> {
    let memsw = dir.join(V1_MEMSW_LIMIT);
    // memsw files are missing when the kernel runs without swap accounting.
    if !memsw.exists() {
        return files::write(&dir.join(V1_MEMORY_LIMIT), &memory.0.to_string());
    }
    // The kernel refuses (EINVAL) a memory limit above the memsw limit, so
    // a cap that grows (settle at 200% of data) raises memsw first.
    let current = files::read_trim(&dir.join(V1_MEMORY_LIMIT))
        .ok()
        .and_then(|t| t.parse::<u64>().ok());
    let write_memory = || files::write(&dir.join(V1_MEMORY_LIMIT), &memory.0.to_string());
    let write_memsw = || files::write(&memsw, &v1_memsw(memory, swap).to_string());
    if current.is_some_and(|c| memory.0 > c) {
        write_memsw()?;
        write_memory()
    } else {
        write_memory()?;
        write_memsw()
    }
}

/// Set the cap on v2.
pub(crate) fn apply_v2(dir: &Path, memory: Bytes, swap: SwapPolicy) -> Result<(), SandboxError> {
    files::write(&dir.join(V2_MEMORY_MAX), &memory.0.to_string())?;
    if dir.join(V2_MEMORY_SWAP_MAX).exists() {
        files::write(
            &dir.join(V2_MEMORY_SWAP_MAX),
            &v2_swap_max(swap).to_string(),
        )?;
    }
    Ok(())
}

fn expect(
    dir: &Path,
    name: &str,
    label: &str,
    want: u64,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SandboxError> {
    if !dir.join(name).exists() {
        return Ok(());
    }
    let got = files::read_trim(&dir.join(name))?;
    let file = format!("{label}/{name}");
    if got != want.to_string() {
        return Err(SandboxError::LimitMismatch {
            file,
            want: want.to_string(),
            got,
        });
    }
    out.insert(file, got);
    Ok(())
}

/// Read the v1 cap back (the kernel rounds to pages: a cap that is not a
/// multiple of the page size is a mismatch, reported as such).
pub(crate) fn read_back_v1(
    dir: &Path,
    label: &str,
    memory: Bytes,
    swap: SwapPolicy,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SandboxError> {
    expect(dir, V1_MEMORY_LIMIT, label, memory.0, out)?;
    expect(dir, V1_MEMSW_LIMIT, label, v1_memsw(memory, swap), out)
}

/// Read the v2 cap back.
pub(crate) fn read_back_v2(
    dir: &Path,
    label: &str,
    memory: Bytes,
    swap: SwapPolicy,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SandboxError> {
    expect(dir, V2_MEMORY_MAX, label, memory.0, out)?;
    expect(dir, V2_MEMORY_SWAP_MAX, label, v2_swap_max(swap), out)
}

/// Drop the group's page cache so that the next phase starts cold
/// (v1 charges cache to whoever touched it first).
pub(crate) fn drop_cache(dir: &Path, v2: bool) -> Result<(), SandboxError> {
    if v2 {
        let usage = files::read_u64(&dir.join(V2_MEMORY_CURRENT))?;
        // memory.reclaim answers EAGAIN when it could not reclaim it all; that is fine.
        match files::write(&dir.join(V2_MEMORY_RECLAIM), &usage.to_string()) {
            Err(SandboxError::CgroupWrite { source, .. })
                if source.raw_os_error() == Some(libc::EAGAIN) =>
            {
                Ok(())
            }
            other => other,
        }
    } else {
        files::write(&dir.join(V1_MEMORY_FORCE_EMPTY), "0")
    }
}

/// The host's `drop_caches`, which drops clean page cache host-wide.
const HOST_DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Drop the host's clean page cache (for a group without a memory cgroup).
pub(crate) fn drop_host_cache() -> Result<(), SandboxError> {
    files::write(Path::new(HOST_DROP_CACHES), "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_swap_means_memsw_equals_the_cap_on_v1_and_zero_swap_on_v2() {
        let m = Bytes::from_mib(256);
        assert_eq!(v1_memsw(m, SwapPolicy::Off), m.0);
        assert_eq!(v2_swap_max(SwapPolicy::Off), 0);
        let s = SwapPolicy::Limit(Bytes::from_mib(64));
        assert_eq!(v1_memsw(m, s), Bytes::from_mib(320).0);
        assert_eq!(v2_swap_max(s), Bytes::from_mib(64).0);
    }

    #[test]
    fn a_cap_the_kernel_rounded_is_a_mismatch() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join(V2_MEMORY_MAX), "1048576\n").unwrap();
        let mut out = BTreeMap::new();
        let err = read_back_v2(
            t.path(),
            "server",
            Bytes(1048577),
            SwapPolicy::Off,
            &mut out,
        )
        .unwrap_err();
        assert!(matches!(err, SandboxError::LimitMismatch { .. }), "{err}");
    }
}
