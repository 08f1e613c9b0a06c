//! The cell's data disk (`server.disk`) as the run sees it: its size and
//! filesystem read back into the fidelity record when the cell's stages end
//! (before teardown unmounts it),
//! and a failure that a full disk caused said as such, with the disk named
//! (not as the engine's own error about a file it could not extend).

use super::{CellWork, Running, Stop};
use crate::results::model::{DiskFidelity, PhaseStatus};
use crate::sandbox::disk;
use crate::units::Bytes;
use std::path::Path;

/// What the kernel and engines write when a write found no room.
const NO_SPACE: [&str; 3] = ["No space left on device", "ENOSPC", "disk is full"];
/// Free space under which a disk counts as full: ext4 refuses a write
/// well before its last block is taken.
const FULL_UNDER: f64 = 0.02;

/// Read the data disk back (statvfs, the mount table) into the fidelity
/// record; a data dir that is not a mount of its own is a violation.
pub(super) fn record(work: &CellWork, r: &mut Running) {
    let (Some(asked), Some(launch)) = (work.limits.disk, r.launch.as_ref()) else {
        return;
    };
    let f = &mut r.record.fidelity;
    match disk::read_back(&launch.data_dir) {
        Ok(read_back) => {
            if !read_back.mounted {
                f.violations.push(format!(
                    "the data disk of {asked} was not mounted on the data dir {}: the engine wrote to the work root's filesystem",
                    launch.data_dir.display()
                ));
            }
            f.disk = Some(DiskFidelity { asked, read_back });
        }
        Err(e) => f.violations.push(format!(
            "the data disk of {asked} could not be read back on {}: {e}",
            launch.data_dir.display()
        )),
    }
}

/// A failed cell whose data disk is full (little space left, or the
/// engine's log or the failure says so) fails for that reason, named
/// first; its failed phase's reason too. Read before teardown unmounts it.
pub(super) fn explain(
    work: &CellWork,
    r: &mut Running,
    outcome: Result<(), Stop>,
) -> Result<(), Stop> {
    let Err(Stop::Failed(why)) = outcome else {
        return outcome;
    };
    let Some(full) = full_reason(work, r, &why) else {
        return Err(Stop::Failed(why));
    };
    if let Some(PhaseStatus::Failed { reason }) = r.record.phases.last_mut().map(|p| &mut p.status)
    {
        *reason = format!("{full}; {reason}");
    }
    Err(Stop::Failed(format!("{full}; {why}")))
}

/// "the data disk of 64MiB is full (...)", when it is.
fn full_reason(work: &CellWork, r: &Running, why: &str) -> Option<String> {
    let asked = work.limits.disk?;
    let launch = r.launch.as_ref()?;
    let (data_dir, log) = (&launch.data_dir, &launch.log_path);
    let read = disk::read_back(data_dir).ok().filter(|d| d.mounted);
    let nearly_full = read
        .as_ref()
        .is_some_and(|d| (d.available.0 as f64) < d.size.0 as f64 * FULL_UNDER);
    let said = said_no_space(why) || log_says_no_space(log);
    if !nearly_full && !said {
        return None;
    }
    let left = match &read {
        Some(d) => format!("{} of {} free", d.available, d.size),
        None => "its filesystem already gone".into(),
    };
    let seen = if said {
        "No space left on device"
    } else {
        "almost no space left"
    };
    Some(format!(
        "the data disk of {asked} is full (ENOSPC: {seen}; {left} on {}): give the environment a larger `server.disk.size` (e.g. --set server.disk.size={}) or load fewer records",
        data_dir.display(),
        Bytes(asked.0.saturating_mul(2))
    ))
}

fn said_no_space(text: &str) -> bool {
    NO_SPACE.iter().any(|s| text.contains(s))
}

/// The engine log's last lines say a write found no room.
fn log_says_no_space(log: &Path) -> bool {
    said_no_space(&crate::sandbox::process::log_tail(log, LOG_LINES))
}

/// Lines of the engine log read for ENOSPC: an engine that stops on it
/// says so among its last ones.
const LOG_LINES: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_log_with_enospc_is_read_from_its_tail() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("engine.log");
        let mut text = "fine\n".repeat(5_000);
        text.push_str(
            "\nPANIC: could not write to file \"pg_wal/xlogtemp.12\": No space left on device\n",
        );
        std::fs::write(&log, text).unwrap();
        assert!(log_says_no_space(&log));
        std::fs::write(&log, "all fine\n").unwrap();
        assert!(!log_says_no_space(&log));
        assert!(!log_says_no_space(&t.path().join("missing.log")));
    }
}
