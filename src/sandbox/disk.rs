//! A data disk of its own (`server.disk: {size: 20GiB}`): an ext4
//! filesystem of that size, in a sparse image file beside the data dir
//! (under the work root), loop-mounted on the data dir. Both backends use
//! it: the cgroup backend's engine writes into the mount, the docker
//! backend bind-mounts it into the container.
//!
//! Making one: the image (sparse, `set_len`), `mkfs.ext4 -q -F -m 0` (no
//! blocks kept for root: the engine's user may fill all of it), `losetup
//! --find --show`, `mount`, then `losetup -d` (the kernel frees the loop
//! device when the filesystem is unmounted) and `lost+found` removed (an
//! engine's init refuses a data dir that is not empty). The ledger holds a
//! [`crate::sandbox::ledger::Resource::Disk`] before the image exists.
//!
//! Removing one, also for a dead run: unmount the data dir if it is a
//! mount point, detach every loop device whose backing file is the image,
//! delete the image. Each step is skipped when already done.

use crate::sandbox::SandboxError;
use crate::sandbox::backoff::Backoff;
use crate::units::Bytes;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The image file of the data disk mounted on `data_dir`: beside it.
pub fn image_for(data_dir: &Path) -> PathBuf {
    let mut name = data_dir.file_name().unwrap_or_default().to_os_string();
    name.push(".disk.img");
    data_dir.with_file_name(name)
}

/// What the filesystem on a data dir reads back (statvfs and the mount
/// table): recorded in the cell's fidelity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DiskReadBack {
    /// Blocks x fragment size: the filesystem's size, its metadata left out.
    pub size: Bytes,
    /// What an unprivileged user may still write.
    pub available: Bytes,
    /// The filesystem type from the mount table (`ext4`).
    pub fs_type: String,
    /// Whether the data dir is a mount point of its own.
    pub mounted: bool,
}

/// Why a data disk could not be made.
fn failed(data_dir: &Path, detail: String) -> SandboxError {
    SandboxError::DataDir {
        path: data_dir.to_path_buf(),
        detail: format!("making its data disk: {detail}"),
    }
}

/// Run a tool; its stdout trimmed, its stderr in the error.
fn tool(argv: &[&str]) -> Result<String, String> {
    crate::systool::output(argv, "e2fsprogs and util-linux")
        .map(|out| out.trim().to_string())
        .map_err(|e| e.0)
}

/// Make a filesystem of `size` and mount it on `data_dir` (which exists
/// and is empty). The caller recorded the disk in the ledger first.
pub fn create(data_dir: &Path, size: Bytes) -> Result<(), SandboxError> {
    let image = image_for(data_dir);
    let err = |d: String| failed(data_dir, d);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&image)
        .map_err(|e| err(format!("creating {}: {e}", image.display())))?;
    file.set_len(size.0)
        .map_err(|e| err(format!("sizing {} to {size}: {e}", image.display())))?;
    drop(file);
    let img = image.to_string_lossy().to_string();
    let dir = data_dir.to_string_lossy().to_string();
    tool(&["mkfs.ext4", "-q", "-F", "-m", "0", &img]).map_err(err)?;
    let dev = tool(&["losetup", "--find", "--show", &img]).map_err(err)?;
    let mounted = tool(&["mount", "-t", "ext4", &dev, &dir]);
    // Mounted or not, the device goes when nothing holds it any more.
    let _ = tool(&["losetup", "-d", &dev]);
    mounted.map_err(err)?;
    std::fs::remove_dir(data_dir.join("lost+found"))
        .map_err(|e| err(format!("removing lost+found: {e}")))
}

/// Give the data dir `data_dir` (made, empty) its disk of `size`, once:
/// recorded in `ledger` before the image exists; nothing when `size` is
/// `None` or the disk is mounted already (a restart, a restored snapshot).
pub fn attach(
    ledger: &mut crate::sandbox::ledger::Ledger,
    data_dir: &Path,
    size: Option<Bytes>,
) -> Result<(), SandboxError> {
    let Some(size) = size else {
        return Ok(());
    };
    if is_mount_point(data_dir) {
        return Ok(());
    }
    ledger.record(crate::sandbox::ledger::Resource::Disk {
        image: image_for(data_dir),
        mount: data_dir.to_path_buf(),
    })?;
    create(data_dir, size)
}

/// Whether `dir` is a mount point (in this process's mount table).
pub fn is_mount_point(dir: &Path) -> bool {
    mount_of(dir).is_some()
}

/// The filesystem type mounted on `dir` (the newest mount on it).
fn mount_of(dir: &Path) -> Option<String> {
    mounts()
        .into_iter()
        .rev()
        .find(|(point, _)| point == dir)
        .map(|(_, fs_type)| fs_type)
}

/// Every mount point of this process and its filesystem type, oldest
/// first, from /proc/self/mountinfo.
fn mounts() -> Vec<(PathBuf, String)> {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    table
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let point = PathBuf::from(unescape(fields.get(4)?));
            let dash = fields.iter().position(|f| *f == "-")?;
            Some((point, fields.get(dash + 1)?.to_string()))
        })
        .collect()
}

/// The mount table writes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = chars.by_ref().take(3).collect();
            match u8::from_str_radix(&code, 8) {
                Ok(b) => out.push(b as char),
                Err(_) => out.push_str(&code),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The loop devices whose backing file is `image`.
fn loop_devices_of(image: &Path) -> Vec<PathBuf> {
    loop_devices()
        .into_iter()
        .filter(|(_, backing)| backing == image)
        .map(|(dev, _)| dev)
        .collect()
}

/// Every attached loop device and its backing file (`/sys/block/loop*`;
/// a backing file deleted since reads as its old path).
fn loop_devices() -> Vec<(PathBuf, PathBuf)> {
    let Ok(dir) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .filter_map(|e| {
            let b = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            let backing = PathBuf::from(b.trim().trim_end_matches(" (deleted)"));
            Some((Path::new("/dev").join(e.file_name()), backing))
        })
        .collect()
}

/// Whether anything of the disk on `data_dir` is left.
pub fn exists(data_dir: &Path, image: &Path) -> bool {
    image.exists() || is_mount_point(data_dir) || !loop_devices_of(image).is_empty()
}

/// Unmount, detach, delete: each step when still needed, within
/// `deadline`.
pub async fn remove(data_dir: &Path, image: &Path, deadline: Instant) -> Result<(), String> {
    let dir = data_dir.to_string_lossy().to_string();
    // A process killed a moment ago (cleanup after a SIGKILL kills the
    // engine just before) may still hold files on it while it exits:
    // "target is busy" is retried, backing off, until the reaper's deadline.
    let mut pause = Backoff::up_to(Duration::from_millis(100));
    while is_mount_point(data_dir) {
        match tool(&["umount", &dir]) {
            Ok(_) => break,
            Err(_) if Instant::now() < deadline => pause.sleep(deadline).await,
            Err(e) => return Err(e),
        }
    }
    for dev in loop_devices_of(image) {
        let dev = dev.to_string_lossy().to_string();
        // Already detached with autoclear: gone once unmounted.
        if let Err(e) = tool(&["losetup", "-d", &dev])
            && loop_devices_of(image)
                .iter()
                .any(|d| d.to_string_lossy() == dev)
        {
            return Err(e);
        }
    }
    match std::fs::remove_file(image) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("{}: {e}", image.display()))
        }
        _ => Ok(()),
    }
}

/// The filesystem of `data_dir` as the kernel reports it.
pub fn read_back(data_dir: &Path) -> std::io::Result<DiskReadBack> {
    let st = nix::sys::statvfs::statvfs(data_dir).map_err(std::io::Error::from)?;
    let frag = st.fragment_size() as u64;
    Ok(DiskReadBack {
        size: Bytes(st.blocks() as u64 * frag),
        available: Bytes(st.blocks_available() as u64 * frag),
        fs_type: mount_of(data_dir).unwrap_or_default(),
        mounted: is_mount_point(data_dir),
    })
}

/// Every loop device with a backing file under `under` and every mount
/// point under it: what a test checks is gone.
pub fn leftovers_under(under: &Path) -> Vec<String> {
    let mounted = mounts()
        .into_iter()
        .filter(|(point, _)| point.starts_with(under))
        .map(|(point, _)| format!("mount {}", point.display()));
    let looped = loop_devices()
        .into_iter()
        .filter(|(_, backing)| backing.starts_with(under))
        .map(|(dev, backing)| format!("loop device {} of {}", dev.display(), backing.display()));
    mounted.chain(looped).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_sits_beside_the_data_dir() {
        assert_eq!(
            image_for(Path::new("/w/run/cell/data")),
            PathBuf::from("/w/run/cell/data.disk.img")
        );
    }

    #[test]
    fn mount_table_escapes_are_undone() {
        assert_eq!(unescape(r"/a\040b\134c"), "/a b\\c");
    }
}
