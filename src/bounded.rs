//! Reading a file the user gives (a spec, a template): regular files
//! only, and bounded.
//!
//! A spec home is user input. A FIFO named `scenarios/x.yaml` would block
//! a plain `open`, a symlink to `/dev/zero` would be read forever, and a
//! directory or a symlink loop cannot be read at all. Each is refused here
//! with its own message, without blocking and without reading more than a
//! spec can hold, so one bad entry never stalls a command.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

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
