//! Finding and reading spec files: regular files only, and bounded.
//!
//! A spec home is user input. A FIFO named `scenarios/x.yaml` would block
//! a plain `open`, a symlink to `/dev/zero` would be read forever, and a
//! directory or a symlink loop cannot be read at all. Each is refused here
//! with its own message, without blocking and without reading more than a
//! spec can hold, so one bad entry never stalls a command.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The largest spec file read (shipped specs are under 2 KiB).
pub const MAX_SPEC_BYTES: u64 = 1024 * 1024;

/// The largest template read (shipped templates are under 4 KiB).
pub const MAX_TEMPLATE_BYTES: u64 = 256 * 1024;

/// Why a file was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("is not a regular file (it is {0}); a spec must be a plain file")]
    NotRegular(&'static str),
    #[error("is larger than {limit} bytes; this cannot be a spec")]
    TooLarge { limit: u64 },
    #[error("is not UTF-8 text")]
    NotText,
    #[error("cannot be read: {0}")]
    Io(String),
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a plain file"
    }
}

fn io_message(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ELOOP) => "a symlink loop".into(),
        _ => e.to_string(),
    }
}

/// Read a regular file (symlinks followed) of at most `limit` bytes as text.
/// Never blocks on a FIFO and never reads more than `limit + 1` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> Result<String, ReadError> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| ReadError::Io(io_message(&e)))?;
    // The type of what was opened, not of what the name pointed at earlier.
    let meta = file.metadata().map_err(|e| ReadError::Io(io_message(&e)))?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular(kind_of(meta.file_type())));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Io(io_message(&e)))?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotText)
}

/// The `.yaml` and `.yml` entries of a folder, sorted. Entries of any type
/// are listed: `read_bounded` tells a user what is wrong with each.
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Spec names that two files claim (`x.yaml` and `x.yml`), with both files.
pub fn ambiguous(files: &[PathBuf]) -> Vec<(String, Vec<PathBuf>)> {
    let mut by_name: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
    for f in files {
        by_name
            .entry(super::spec_name(f))
            .or_default()
            .push(f.clone());
    }
    by_name.into_iter().filter(|(_, v)| v.len() > 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.yaml");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let start = std::time::Instant::now();
        assert_eq!(read_bounded(&p, 100), Err(ReadError::NotRegular("a FIFO")));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn devices_directories_and_loops_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let zero = t.path().join("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(
            read_bounded(&zero, 100),
            Err(ReadError::NotRegular("a character device"))
        );
        let dir = t.path().join("d.yaml");
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(
            read_bounded(&dir, 100),
            Err(ReadError::NotRegular("a directory"))
        );
        let a = t.path().join("a.yaml");
        let b = t.path().join("b.yaml");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert_eq!(
            read_bounded(&a, 100),
            Err(ReadError::Io("a symlink loop".into()))
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_it_is_read() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.yaml");
        std::fs::write(&p, "a".repeat(101)).unwrap();
        assert_eq!(
            read_bounded(&p, 100),
            Err(ReadError::TooLarge { limit: 100 })
        );
        std::fs::write(&p, "a".repeat(100)).unwrap();
        assert_eq!(read_bounded(&p, 100).unwrap().len(), 100);
    }

    #[test]
    fn two_files_for_one_name_are_ambiguous() {
        let files = [
            PathBuf::from("s/a.yaml"),
            PathBuf::from("s/a.yml"),
            PathBuf::from("s/b.yaml"),
        ];
        let amb = ambiguous(&files);
        assert_eq!(amb.len(), 1);
        assert_eq!(amb[0].0, "a");
    }
}
