//! Atomic file writes: a reader sees the old file or the whole new one,
//! never a torn or empty file, even after a crash or a full disk.
//!
//! The temp file lives in the destination folder (a rename across file
//! systems is a copy, not atomic), is fsynced before the rename, and the
//! folder is fsynced after it so the new name itself survives a power cut.

use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A failed atomic write, naming the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AtomicWriteError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot serialize the content of {path}: {source}")]
    Serialize {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write `bytes` to `path` atomically: temp file in the same folder, fsync,
/// rename over `path`, fsync the folder. Creates the folder if missing. On
/// any error the temp file is removed and `path` is left as it was.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AtomicWriteError> {
    let io_err = |source| AtomicWriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = folder_of(path);
    fs::create_dir_all(&dir).map_err(io_err)?;
    let tmp = temp_path(&dir, path);
    let result = write_and_sync(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(e));
    }
    sync_dir(&dir).map_err(io_err)
}

/// Write several files atomically as one step, `files` in order: every
/// temp file is written, then all are fsynced at once (one journal commit
/// serves them), renamed in the given order, and each folder fsynced once.
/// A reader sees each file old or whole; put the file that says the rest
/// is complete (`cell.json`) last: renames in one folder reach the journal
/// in order, so it is never there without the files before it. On an
/// error every temp file is removed; files renamed before it stay whole.
pub(crate) fn write_all_atomic(files: &[(PathBuf, Vec<u8>)]) -> Result<(), AtomicWriteError> {
    let mut temps: Vec<(PathBuf, &Path)> = Vec::with_capacity(files.len());
    let cleanup = |temps: &[(PathBuf, &Path)]| {
        for (tmp, _) in temps {
            let _ = fs::remove_file(tmp);
        }
    };
    for (path, bytes) in files {
        let dir = folder_of(path);
        let made = fs::create_dir_all(&dir).and_then(|()| {
            let tmp = temp_path(&dir, path);
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            temps.push((tmp, path));
            f.write_all(bytes)
        });
        if let Err(source) = made {
            cleanup(&temps);
            return Err(AtomicWriteError::Io {
                path: path.clone(),
                source,
            });
        }
    }
    // fsyncs issued together: the file system commits them in one go.
    let synced: Vec<(usize, io::Error)> = std::thread::scope(|s| {
        let handles: Vec<_> = temps
            .iter()
            .enumerate()
            .map(|(i, (tmp, _))| s.spawn(move || (i, File::open(tmp).and_then(|f| f.sync_all()))))
            .collect();
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok((_, Ok(()))) => None,
                Ok((i, Err(e))) => Some((i, e)),
                Err(_) => Some((0, io::Error::other("an fsync thread panicked"))),
            })
            .collect()
    });
    if let Some((i, source)) = synced.into_iter().next() {
        cleanup(&temps);
        return Err(AtomicWriteError::Io {
            path: temps[i].1.to_path_buf(),
            source,
        });
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (n, (tmp, path)) in temps.iter().enumerate() {
        if let Err(source) = fs::rename(tmp, path) {
            cleanup(&temps[n..]);
            return Err(AtomicWriteError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
        let dir = folder_of(path);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for dir in dirs {
        sync_dir(&dir).map_err(|source| AtomicWriteError::Io { path: dir, source })?;
    }
    Ok(())
}

/// Serialize `value` as pretty JSON (with a final newline), as
/// [`write_all_atomic`] takes it.
pub(crate) fn json_bytes<T: Serialize>(
    path: &Path,
    value: &T,
) -> Result<Vec<u8>, AtomicWriteError> {
    let mut bytes =
        serde_json::to_vec_pretty(value).map_err(|source| AtomicWriteError::Serialize {
            path: path.to_path_buf(),
            source,
        })?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn temp_path(dir: &Path, path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_string());
    dir.join(format!(
        ".{name}.tmp.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Serialize `value` as pretty JSON (with a final newline) and write it
/// atomically.
pub(crate) fn write_json_atomic<T: Serialize>(
    path: &Path,
    value: &T,
) -> Result<(), AtomicWriteError> {
    write_atomic(path, &json_bytes(path, value)?)
}

fn write_and_sync(tmp: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    f.write_all(bytes)?;
    f.sync_all()
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_replaces_the_whole_file_and_leaves_no_temp_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/run.json");
        write_atomic(&path, b"first version, long").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("run.json")]);
    }

    #[test]
    fn failed_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        write_atomic(&path, b"old").unwrap();
        // A folder where the file should be makes the rename fail.
        let blocked = dir.path().join("blocked");
        fs::create_dir_all(blocked.join("child")).unwrap();
        assert!(write_atomic(&blocked, b"new").is_err());
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(temps_in(dir.path()), 0);
    }

    fn temps_in(dir: &Path) -> usize {
        fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".tmp.")
            })
            .count()
    }

    #[test]
    fn files_written_together_are_all_whole_and_leave_no_temp_behind() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("cell/samples.json");
        let b = dir.path().join("cell/config/redis.conf");
        let c = dir.path().join("cell/cell.json");
        write_atomic(&c, b"old").unwrap();
        write_all_atomic(&[
            (a.clone(), b"samples".to_vec()),
            (b.clone(), b"port 1".to_vec()),
            (c.clone(), b"finished".to_vec()),
        ])
        .unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"samples");
        assert_eq!(fs::read(&b).unwrap(), b"port 1");
        assert_eq!(fs::read(&c).unwrap(), b"finished");
        assert_eq!(temps_in(&dir.path().join("cell")), 0);
        assert_eq!(temps_in(&dir.path().join("cell/config")), 0);
    }

    #[test]
    fn a_failed_file_keeps_the_files_after_it_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let cell = dir.path().join("cell.json");
        write_atomic(&cell, b"running").unwrap();
        // A folder where a file should be makes its rename fail.
        let blocked = dir.path().join("samples.json");
        fs::create_dir_all(blocked.join("child")).unwrap();
        let err = write_all_atomic(&[
            (blocked.clone(), b"samples".to_vec()),
            (cell.clone(), b"finished".to_vec()),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("samples.json"), "{err}");
        assert_eq!(
            fs::read(&cell).unwrap(),
            b"running",
            "the last file is not renamed"
        );
        assert_eq!(temps_in(dir.path()), 0);
    }

    #[test]
    fn json_is_pretty_and_ends_with_a_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.json");
        let mut m = std::collections::BTreeMap::new();
        m.insert("b", 2);
        m.insert("a", 1);
        write_json_atomic(&path, &m).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "{\n  \"a\": 1,\n  \"b\": 2\n}\n"
        );
    }
}
