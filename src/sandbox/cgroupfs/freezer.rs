//! Freezing a group so that nothing in it can fork while it is being
//! killed (v1 freezer.state, v2 cgroup.freeze).

use super::files::{self, *};
use crate::sandbox::SandboxError;
use crate::sandbox::backoff::Backoff;
use std::path::Path;
use std::time::{Duration, Instant};

/// Freeze the group at `dir` (a v1 freezer dir or a v2 group) and wait
/// until the kernel says it is frozen, at most `timeout`. A group that
/// cannot freeze in time is still killed, so a timeout is not an error.
pub async fn freeze(dir: &Path, v2: bool, timeout: Duration) -> Result<bool, SandboxError> {
    let deadline = Instant::now() + timeout;
    if v2 {
        files::write(&dir.join(V2_CGROUP_FREEZE), "1")?;
    } else {
        files::write(&dir.join(V1_FREEZER_STATE), "FROZEN")?;
    }
    let mut pause = Backoff::up_to(Duration::from_millis(10));
    loop {
        if is_frozen(dir, v2)? {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        pause.sleep(deadline).await;
    }
}

/// Whether the group is fully frozen.
pub fn is_frozen(dir: &Path, v2: bool) -> Result<bool, SandboxError> {
    if v2 {
        let events = flat_keyed(&files::read(&dir.join(V2_CGROUP_EVENTS))?);
        Ok(events.get("frozen") == Some(&1))
    } else {
        Ok(files::read_trim(&dir.join(V1_FREEZER_STATE))? == "FROZEN")
    }
}

/// Thaw the group (SIGKILLed tasks of a frozen v1 group die only once thawed).
pub fn thaw(dir: &Path, v2: bool) -> Result<(), SandboxError> {
    if v2 {
        files::write(&dir.join(V2_CGROUP_FREEZE), "0")
    } else {
        files::write(&dir.join(V1_FREEZER_STATE), "THAWED")
    }
}
