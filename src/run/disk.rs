//! Free space on the results disk, checked before a run starts: a run that
//! would fill the disk halfway through loses more than one that never starts.

use crate::units::Bytes;
use std::path::Path;

/// Free space a run needs on the results disk before it starts: phase
/// files, samples, configs, and the engine's log.
pub(crate) const MIN_FREE: Bytes = Bytes(64 << 20);

/// An error in words when the results disk has less than `need` free.
/// Callers only report it.
pub(crate) fn check_free(path: &Path, need: Bytes) -> anyhow::Result<Bytes> {
    let free = crate::host::disk_available(path)
        .map_err(|e| anyhow::anyhow!("free space of {}: {e}", path.display()))?;
    if free < need {
        anyhow::bail!(
            "the results disk at {} has {free} free; a run needs at least {need}. Free space or point --results elsewhere",
            path.display()
        );
    }
    Ok(free)
}

/// Write-ahead and redo logs: on disk, but not the data set. A memory cap
/// "as a share of the data" is a share of tables and indexes.
pub(crate) const LOG_NAMES: &[&str] = &[
    "pg_wal",
    "#innodb_redo",
    "ib_logfile0",
    "ib_logfile1",
    "journal",
];

/// Total size of the files under `dir` (the engine's data on disk), like
/// `du --apparent-size`, without write-ahead logs ([`LOG_NAMES`]);
/// unreadable entries are skipped.
pub(crate) fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if LOG_NAMES.iter().any(|n| e.file_name() == *n) {
                continue;
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}

/// Bytes held back in a run's folder for its final run record.
pub(crate) const RESERVE_BYTES: usize = 1 << 20;

/// The file that holds them: hidden, never a cell.
pub(crate) const RESERVE_FILE: &str = ".reserve";

/// Room held on the results disk while a run's cells write: a cell that
/// fills the disk would otherwise leave no room to mark the run failed
/// (its record would say `running` for ever). Dropping it frees the room
/// just before the final record is written.
#[derive(Debug)]
pub(crate) struct Reserve(Option<std::path::PathBuf>);

impl Reserve {
    /// Hold [`RESERVE_BYTES`] in `dir`; holds nothing when the disk has
    /// not that much (the run's start checked for more).
    pub fn hold(dir: &Path) -> Reserve {
        let path = dir.join(RESERVE_FILE);
        match std::fs::write(&path, vec![0u8; RESERVE_BYTES]) {
            Ok(()) => Reserve(Some(path)),
            Err(_) => {
                let _ = std::fs::remove_file(&path);
                Reserve(None)
            }
        }
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_size_adds_up_nested_files_but_not_the_wal() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        std::fs::write(t.path().join("x"), vec![0u8; 1000]).unwrap();
        std::fs::write(t.path().join("a/b/y"), vec![0u8; 24]).unwrap();
        std::fs::create_dir_all(t.path().join("pg_wal")).unwrap();
        std::fs::write(t.path().join("pg_wal/000001"), vec![0u8; 4096]).unwrap();
        assert_eq!(dir_size(t.path()), 1024);
    }

    #[test]
    fn a_reserve_holds_its_room_until_dropped() {
        let t = tempfile::tempdir().unwrap();
        let r = Reserve::hold(t.path());
        let file = t.path().join(RESERVE_FILE);
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            RESERVE_BYTES as u64
        );
        drop(r);
        assert!(!file.exists());
    }

    #[test]
    fn a_disk_with_too_little_room_is_refused_before_the_run() {
        let t = tempfile::tempdir().unwrap();
        assert!(check_free(t.path(), Bytes(1)).is_ok());
        let err = check_free(&t.path().join("not/yet"), Bytes(u64::MAX))
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs at least"), "{err}");
    }
}
