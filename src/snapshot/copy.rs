//! Copies of a data dir, kept exact: owners, modes, sparse files and
//! links as they are (`cp -a`, `tar -p` as root). On one filesystem a copy
//! is a reflink where the filesystem has them (btrfs, XFS: no data is
//! copied) and a plain copy elsewhere; to another disk it is a compressed
//! archive (zstd when installed, gzip otherwise), which also costs that
//! disk less room.

use super::{SnapshotError, io_err};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How a snapshot holds its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    /// A copy of the folder (`data/`), reflinked where the filesystem can.
    Dir,
    /// A compressed tar archive (`data.tar.zst` or `data.tar.gz`).
    Archive,
}

/// The device of `path`, or of its nearest existing parent.
fn device_of(path: &Path) -> Option<u64> {
    path.ancestors()
        .find_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.dev())
}

/// Whether `a` and `b` are on one filesystem (a reflink, or at least a
/// local copy, can join them).
pub(crate) fn same_filesystem(a: &Path, b: &Path) -> bool {
    matches!((device_of(a), device_of(b)), (Some(x), Some(y)) if x == y)
}

/// Run `argv`; its stderr becomes the error.
fn run(argv: &[&str]) -> Result<(), SnapshotError> {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| SnapshotError::Command {
            argv: argv.join(" "),
            status: "could not start".into(),
            stderr: e.to_string(),
        })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    Err(SnapshotError::Command {
        argv: argv.join(" "),
        status: out.status.to_string(),
        stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
    })
}

/// Whether a program is on the PATH.
fn installed(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// The archive file for `dir_entry`: zstd when installed, gzip otherwise.
pub(crate) fn archive_path(entry: &Path) -> PathBuf {
    if installed("zstd") {
        entry.join("data.tar.zst")
    } else {
        entry.join("data.tar.gz")
    }
}

/// Copy the contents of `src` into `dst` (created), exactly.
pub fn copy_dir(src: &Path, dst: &Path) -> Result<(), SnapshotError> {
    std::fs::create_dir_all(dst).map_err(io_err(dst))?;
    let from = format!("{}/.", src.display());
    let to = dst.display().to_string();
    run(&["cp", "-a", "--reflink=auto", &from, &to])
}

/// Pack the contents of `src` into the archive `file` (its suffix picks
/// the compression).
pub fn pack(src: &Path, file: &Path) -> Result<(), SnapshotError> {
    let (src, file) = (src.display().to_string(), file.display().to_string());
    run(&["tar", "-C", &src, "--numeric-owner", "-caf", &file, "."])
}

/// Unpack the archive `file` into `dst` (created), owners and modes kept.
pub(crate) fn unpack(file: &Path, dst: &Path) -> Result<(), SnapshotError> {
    std::fs::create_dir_all(dst).map_err(io_err(dst))?;
    let (file, dst) = (file.display().to_string(), dst.display().to_string());
    run(&[
        "tar",
        "-C",
        &dst,
        "--numeric-owner",
        "--same-owner",
        "-xpf",
        &file,
    ])
}

/// Bytes the files under `dir` take on disk (allocated blocks, so a
/// sparse file counts what it holds; reflinked blocks count in full).
pub(crate) fn disk_usage(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&d) else {
            continue;
        };
        total += meta.blocks() * 512;
        if !meta.is_dir() {
            continue;
        }
        if let Ok(entries) = std::fs::read_dir(&d) {
            stack.extend(entries.flatten().map(|e| e.path()));
        }
    }
    total
}

/// Write back and evict the page cache of every file under `dir`: the
/// copy a restore made went through benchcage's own memory cgroup, and the
/// engine must not find its data cached outside its memory cap. Only
/// these files are evicted (a host-wide `drop_caches` would cost every
/// other process its cache and took seconds here). Returns the bytes
/// evicted.
///
/// Two passes: every file's writeback is started first, then each is
/// waited for and dropped. `sync_file_range` writes the data pages without
/// a journal commit per file (`fdatasync` per file cost ~1 ms each on
/// ext4: over a second for a PostgreSQL data dir of 1000 files); clean
/// pages are all `POSIX_FADV_DONTNEED` needs.
pub(crate) fn evict(dir: &Path) -> Result<u64, SnapshotError> {
    use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
    let files = regular_files(dir)?;
    for path in &files {
        let f = std::fs::File::open(path).map_err(io_err(path))?;
        write_back(&f, libc::SYNC_FILE_RANGE_WRITE).map_err(io_err(path))?;
    }
    let mut bytes = 0;
    for path in &files {
        let f = std::fs::File::open(path).map_err(io_err(path))?;
        let wait = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        write_back(&f, wait).map_err(io_err(path))?;
        posix_fadvise(&f, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED)
            .map_err(|e| io_err(path)(std::io::Error::from(e)))?;
        bytes += f.metadata().map(|m| m.len()).unwrap_or(0);
    }
    Ok(bytes)
}

/// `sync_file_range(2)` over the whole file with `flags`.
fn write_back(f: &std::fs::File, flags: libc::c_uint) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid open descriptor, a whole-file range, no memory passed.
    let rc = unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Every regular file under `dir` (symlinks are not followed).
pub(super) fn regular_files(dir: &Path) -> Result<Vec<PathBuf>, SnapshotError> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(io_err(&d))?;
        for e in entries.flatten() {
            match e.file_type() {
                Ok(k) if k.is_dir() => stack.push(e.path()),
                Ok(k) if k.is_file() => files.push(e.path()),
                _ => {}
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tree(root: &Path) {
        std::fs::create_dir_all(root.join("base/1")).unwrap();
        std::fs::write(root.join("base/1/table"), vec![7u8; 10_000]).unwrap();
        std::fs::write(root.join("PG_VERSION"), "16\n").unwrap();
        std::fs::set_permissions(
            root.join("PG_VERSION"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::os::unix::fs::symlink("base/1/table", root.join("link")).unwrap();
    }

    fn same(a: &Path, b: &Path) {
        assert_eq!(
            std::fs::read(a.join("base/1/table")).unwrap(),
            vec![7u8; 10_000]
        );
        assert_eq!(
            std::fs::read(b.join("base/1/table")).unwrap(),
            vec![7u8; 10_000]
        );
        let mode = |p: &Path| {
            std::fs::metadata(p.join("PG_VERSION"))
                .unwrap()
                .permissions()
                .mode()
        };
        assert_eq!(mode(a) & 0o777, 0o600);
        assert_eq!(mode(b) & 0o777, 0o600);
        assert_eq!(
            std::fs::read_link(b.join("link")).unwrap(),
            Path::new("base/1/table")
        );
    }

    #[test]
    fn a_folder_copy_and_an_archive_round_trip_keep_contents_modes_and_links() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        tree(&src);
        let copy = t.path().join("copy");
        copy_dir(&src, &copy).unwrap();
        same(&src, &copy);
        let entry = t.path().join("entry");
        std::fs::create_dir_all(&entry).unwrap();
        let file = archive_path(&entry);
        pack(&src, &file).unwrap();
        let back = t.path().join("back");
        unpack(&file, &back).unwrap();
        same(&src, &back);
        assert!(disk_usage(&src) >= 10_000);
        assert!(same_filesystem(&src, &back));
    }

    #[test]
    fn a_failed_copy_says_what_failed_and_why() {
        let t = tempfile::tempdir().unwrap();
        let e = copy_dir(&t.path().join("missing"), &t.path().join("dst"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("`cp -a --reflink=auto"), "{e}");
        assert!(e.contains("No such file"), "{e}");
    }

    /// The bytes of `path` in the page cache, as util-linux's fincore
    /// reports them.
    fn cached(path: &Path) -> u64 {
        let out = Command::new("fincore")
            .args(["--bytes", "--noheadings", "--output", "RES"])
            .arg(path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    #[test]
    fn evicted_files_leave_the_page_cache() {
        // On a disk: tmpfs pages cannot be evicted.
        let dir = tempfile::Builder::new()
            .prefix("benchcage-evict-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let file = dir.path().join("sub/data");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, vec![1u8; 4 << 20]).unwrap();
        assert!(cached(&file) > 0, "a file just written is cached");
        assert_eq!(evict(dir.path()).unwrap(), 4 << 20);
        assert_eq!(cached(&file), 0);
    }
}
