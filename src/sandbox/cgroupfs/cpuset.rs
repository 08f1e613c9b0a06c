//! cpuset: the CPUs (and memory nodes) a group may run on.

use super::files::{self, *};
use crate::sandbox::SandboxError;
use crate::units::CpuSet;
use std::collections::BTreeMap;
use std::path::Path;

/// Give a freshly made v1 cpuset parent its parent's CPUs and nodes.
/// v1 creates cpuset groups empty, and attaching a task to a group with an
/// empty `cpuset.mems` fails with ENOSPC, so every level must be filled.
pub(crate) fn v1_inherit(parent: &Path, dir: &Path) -> Result<(), SandboxError> {
    for name in [V1_CPUSET_CPUS, V1_CPUSET_MEMS] {
        if files::read_trim(&dir.join(name))?.is_empty() {
            files::write(&dir.join(name), &files::read_trim(&parent.join(name))?)?;
        }
    }
    Ok(())
}

/// Pin the group to `cpus` with the parent's memory nodes (mems first:
/// ENOSPC otherwise, see [`v1_inherit`]).
pub fn apply(parent: &Path, dir: &Path, cpus: &CpuSet) -> Result<(), SandboxError> {
    let mems = files::read_trim(&parent.join(V1_CPUSET_MEMS))?;
    if !mems.is_empty() {
        files::write(&dir.join(V1_CPUSET_MEMS), &mems)?;
    }
    files::write(&dir.join(V1_CPUSET_CPUS), &cpus.to_string())
}

/// Read `cpuset.cpus` back; error unless it is exactly `cpus`.
pub fn read_back(
    dir: &Path,
    label: &str,
    cpus: &CpuSet,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SandboxError> {
    let got = files::read_trim(&dir.join(V1_CPUSET_CPUS))?;
    let mems = files::read_trim(&dir.join(V1_CPUSET_MEMS))?;
    let file = format!("{label}/{V1_CPUSET_CPUS}");
    if got.parse::<CpuSet>().ok().as_ref() != Some(cpus) {
        return Err(SandboxError::LimitMismatch {
            file,
            want: cpus.to_string(),
            got,
        });
    }
    out.insert(file, got);
    out.insert(format!("{label}/{V1_CPUSET_MEMS}"), mems);
    Ok(())
}
