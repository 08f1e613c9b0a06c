//! pids: the cap on tasks, so a fork bomb stays inside the group.

use super::files::{self, PIDS_MAX};
use crate::sandbox::SandboxError;
use std::collections::BTreeMap;
use std::path::Path;

/// Set `pids.max` (same file name on v1 and v2).
pub fn apply(dir: &Path, max: u64) -> Result<(), SandboxError> {
    files::write(&dir.join(PIDS_MAX), &max.to_string())
}

/// Read `pids.max` back; error unless it is `max`.
pub fn read_back(
    dir: &Path,
    label: &str,
    max: u64,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SandboxError> {
    let got = files::read_trim(&dir.join(PIDS_MAX))?;
    let file = format!("{label}/{PIDS_MAX}");
    if got != max.to_string() {
        return Err(SandboxError::LimitMismatch {
            file,
            want: max.to_string(),
            got,
        });
    }
    out.insert(file, got);
    Ok(())
}
