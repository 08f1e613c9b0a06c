//! The snapshot cache: `<root>/<id>/` per key, with `meta.json` (the key,
//! the form, sizes, when it was made and last used, what the fresh load
//! measured) and the data as `data/` or a compressed archive.
//!
//! The root is `BENCHCAGE_SNAPSHOTS` (`off` turns snapshots off), else `snapshots/` in benchcage's
//! cache (`BENCHCAGE_CACHE`, `/var/cache/benchcage` for root). Its size is
//! capped by `BENCHCAGE_SNAPSHOT_LIMIT` (a size, `0` turns saving off),
//! else a quarter of its filesystem, and never more than the entries take
//! now plus the filesystem's free space: saving a snapshot first removes the
//! least recently used ones until it fits. An entry is written under
//! `.partial-<id>-<pid>` and renamed into place when whole, so a folder
//! named after an id is always complete; partial folders of dead
//! processes are removed when the cache is opened.
//!
//! Each entry keeps a manifest of its files (sizes and SHA-256), checked
//! on every restore: an entry that fails it, or that the engine cannot
//! start on, is quarantined (`.quarantine-<id>-<secs>/` with `reason.txt`,
//! removed by the next prune) so that the next load replaces it. A
//! restore holds a shared `flock` on the entry's folder from its copy to
//! its bookkeeping; removing an entry takes it exclusively, without
//! waiting, and keeps an entry a restore holds (issue 34, points 9-12).

use super::copy::{self, Form};
use super::manifest::Manifest;
use super::{SnapshotError, SnapshotKey, io_err};
use crate::units::Bytes;
use nix::fcntl::{Flock, FlockArg};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Environment variable that moves the cache.
pub const ROOT_ENV: &str = "BENCHCAGE_SNAPSHOTS";
/// The value of [`ROOT_ENV`] that turns snapshots off, as `run
/// --no-snapshots` does.
pub(crate) const OFF: &str = "off";
/// Environment variable that caps the cache's size.
pub(crate) const LIMIT_ENV: &str = "BENCHCAGE_SNAPSHOT_LIMIT";
/// An entry's record, written last.
pub(crate) const META: &str = "meta.json";
/// A quarantined entry's folder name starts with this.
pub(crate) const QUARANTINE: &str = ".quarantine-";
/// Why an entry was quarantined, in its folder.
pub(crate) const REASON: &str = "reason.txt";
/// Free room a snapshot must leave on the results disk, when the cache is
/// on it: [`RESULTS_DISK_SHARE`] of the disk, but at least the floor and
/// at most the ceiling. Without the ceiling a 2 TB disk with 150 GB free
/// would never take a snapshot (it kept 200 GB).
pub(crate) const RESULTS_DISK_FLOOR: Bytes = Bytes(2 << 30);
pub(crate) const RESULTS_DISK_CEILING: Bytes = Bytes(10 << 30);
pub(crate) const RESULTS_DISK_SHARE: f64 = 0.10;

/// What an entry holds and how it was made.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    pub id: String,
    pub key: SnapshotKey,
    pub form: Form,
    /// Bytes the entry takes on the cache's disk.
    pub stored_bytes: u64,
    /// Bytes of the data dir it holds.
    pub data_bytes: u64,
    pub created: String,
    pub last_used: String,
    /// Restores so far.
    #[serde(default)]
    pub uses: u64,
    /// The run whose load it holds.
    pub from_run: String,
    /// Seconds the load took, and the save.
    pub load_s: f64,
    pub save_s: f64,
    /// What the engine reported after the fresh load: data size, and the
    /// records' digest when the scenario verifies snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_size_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// What a fresh load measured, stored with its snapshot.
#[derive(Debug, Clone, Default)]
pub struct LoadFacts {
    pub from_run: String,
    pub load_s: f64,
    pub data_size_bytes: Option<u64>,
    pub digest: Option<String>,
}

/// Why a snapshot was not saved, though nothing failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Skipped {
    /// Over the cache's limit on its own.
    TooBig { need: Bytes, limit: Bytes },
    /// The cache shares the results disk, and it would run low.
    ResultsDiskLow { free: Bytes, keep: Bytes },
    /// The cache shares the disk the run's data dirs go on, and a later
    /// cell of the run would not find its data's room there.
    LaterCellShort { free: Bytes, later: Bytes },
    /// Another run saved it first.
    AlreadySaved,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skipped::TooBig { need, limit } => write!(
                f,
                "not saved: the data ({need}) is over the snapshot cache's limit ({limit}; {LIMIT_ENV})"
            ),
            Skipped::ResultsDiskLow { free, keep } => write!(
                f,
                "not saved: the snapshot cache is on the results disk, which has {free} free and must keep {keep} free ({:.0}% of it, {RESULTS_DISK_FLOOR} to {RESULTS_DISK_CEILING}; {ROOT_ENV} moves the cache)",
                RESULTS_DISK_SHARE * 100.0
            ),
            Skipped::LaterCellShort { free, later } => write!(
                f,
                "not saved: the snapshot cache is on the disk of the engines' data, which would keep {free} free after this cell, and a later cell of this run needs {later} there ({ROOT_ENV} moves the cache)"
            ),
            Skipped::AlreadySaved => write!(f, "not saved: another run saved the same key first"),
        }
    }
}

/// The room a save leaves for what comes after it.
#[derive(Debug, Clone, Copy)]
pub struct Room<'a> {
    /// The cell's results folder: its disk keeps
    /// [`results_disk_keep`] free.
    pub results: &'a Path,
    /// Where the run's data dirs (or their disk images) go.
    pub work: &'a Path,
    /// The most room one later cell of the run needs there: its data
    /// disk's size, or its data's estimate; zero when none is left.
    pub later: Bytes,
}

/// The snapshot cache.
#[derive(Debug, Clone)]
pub struct Cache {
    pub root: PathBuf,
    /// Most bytes its entries may take.
    pub limit: Bytes,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Whether the environment turns snapshots off (`BENCHCAGE_SNAPSHOTS=off`).
pub(crate) fn off_by_env() -> bool {
    std::env::var(ROOT_ENV).is_ok_and(|v| v.trim() == OFF)
}

impl Cache {
    /// The cache as the environment places and sizes it.
    pub(crate) fn from_env() -> Result<Cache, String> {
        if off_by_env() {
            return Err(format!(
                "{ROOT_ENV}={OFF} turns the snapshot cache off; unset it, or set it to the cache's folder"
            ));
        }
        let root = std::env::var_os(ROOT_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| crate::fetch::cache::root().join("snapshots"));
        let limit = match std::env::var(LIMIT_ENV) {
            Ok(v) if !v.trim().is_empty() => v
                .trim()
                .parse::<Bytes>()
                .map_err(|e| format!("{LIMIT_ENV}={v}: {e} (give a size such as 20GiB, or 0)"))?,
            _ => default_limit(&root),
        };
        Ok(Cache { root, limit })
    }

    fn entry_dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// Every complete entry, most recently used first. Partial folders of
    /// dead processes are removed on the way.
    pub fn entries(&self) -> Vec<Meta> {
        let Ok(dir) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(rest) = name.strip_prefix(".partial-") {
                remove_if_dead(&e.path(), rest);
                continue;
            }
            // Quarantined entries are no entries.
            if name.starts_with('.') {
                continue;
            }
            if let Some(m) = read_meta(&e.path()) {
                out.push(m);
            }
        }
        out.sort_by(|a, b| b.last_used.cmp(&a.last_used).then(a.id.cmp(&b.id)));
        out
    }

    /// The entry for `id`, when it is whole.
    pub fn find(&self, id: &str) -> Option<Meta> {
        read_meta(&self.entry_dir(id)).filter(|m| m.id == id)
    }

    /// Bytes all entries take.
    pub fn used(&self) -> u64 {
        self.entries().iter().map(|m| m.stored_bytes).sum()
    }

    /// Why a snapshot of `data_dir` under `id` would not be saved, asked
    /// before the engine is stopped for it: already there, over the limit,
    /// too big for the results disk the cache shares, or taking the room
    /// a later cell needs for its data.
    pub(crate) fn would_skip(&self, id: &str, data_dir: &Path, room: Room) -> Option<Skipped> {
        self.data_bytes_to_save(id, data_dir, room).err()
    }

    /// The bytes `data_dir` takes (one walk of it), or why it would not
    /// be saved.
    fn data_bytes_to_save(&self, id: &str, data_dir: &Path, room: Room) -> Result<u64, Skipped> {
        if self.find(id).is_some() {
            return Err(Skipped::AlreadySaved);
        }
        let data_bytes = copy::disk_usage(data_dir);
        if Bytes(data_bytes) > self.limit {
            return Err(Skipped::TooBig {
                need: Bytes(data_bytes),
                limit: self.limit,
            });
        }
        match results_disk_low(&self.root, room.results, data_bytes)
            .or_else(|| later_cell_short(&self.root, room.work, room.later))
        {
            Some(skip) => Err(skip),
            None => Ok(data_bytes),
        }
    }

    /// Copy `data_dir` (the engine stopped) into a new entry for `key`.
    /// Removes least recently used entries to stay under the limit first.
    /// `room` is what the save must leave free (see [`Room`]).
    pub fn save(
        &self,
        key: &SnapshotKey,
        data_dir: &Path,
        room: Room,
        facts: LoadFacts,
    ) -> Result<Result<Meta, Skipped>, SnapshotError> {
        let id = key.id();
        let data_bytes = match self.data_bytes_to_save(&id, data_dir, room) {
            Ok(b) => b,
            Err(skip) => return Ok(Err(skip)),
        };
        self.prune_to(self.limit.0.saturating_sub(data_bytes));
        std::fs::create_dir_all(&self.root).map_err(io_err(&self.root))?;
        let started = std::time::Instant::now();
        let partial = self
            .root
            .join(format!(".partial-{id}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        let written = self.write_entry(&partial, key, data_dir, data_bytes, facts, started);
        let meta = match written {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&partial);
                return Err(e);
            }
        };
        match std::fs::rename(&partial, self.entry_dir(&id)) {
            Ok(()) => Ok(Ok(meta)),
            Err(_) if self.find(&id).is_some() => {
                let _ = std::fs::remove_dir_all(&partial);
                Ok(Err(Skipped::AlreadySaved))
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&partial);
                Err(io_err(&self.entry_dir(&id))(e))
            }
        }
    }

    fn write_entry(
        &self,
        dir: &Path,
        key: &SnapshotKey,
        data_dir: &Path,
        data_bytes: u64,
        facts: LoadFacts,
        started: std::time::Instant,
    ) -> Result<Meta, SnapshotError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let form = if copy::same_filesystem(&self.root, data_dir) {
            copy::copy_dir(data_dir, &dir.join("data"))?;
            Manifest::of(&dir.join("data"))?.write(dir)?;
            Form::Dir
        } else {
            let archive = copy::archive_path(dir);
            copy::pack(data_dir, &archive)?;
            archive_manifest(dir)?.write(dir)?;
            Form::Archive
        };
        let stamp = now();
        let meta = Meta {
            id: key.id(),
            key: key.clone(),
            form,
            stored_bytes: copy::disk_usage(dir),
            data_bytes,
            created: stamp.clone(),
            last_used: stamp,
            uses: 0,
            from_run: facts.from_run,
            load_s: facts.load_s,
            save_s: started.elapsed().as_secs_f64(),
            data_size_bytes: facts.data_size_bytes,
            digest: facts.digest,
        };
        write_meta(dir, &meta)?;
        Ok(meta)
    }

    /// Fill `dest` (absent or empty) with the entry's data, checked
    /// against its manifest, and mark it used. Holds the entry's lease
    /// throughout, so that no prune removes it meanwhile and its
    /// bookkeeping never re-creates a removed entry. `Broken` when the data
    /// is not whole (the caller quarantines it), `Gone` when it was removed
    /// first.
    pub fn restore(&self, meta: &Meta, dest: &Path) -> Result<(), SnapshotError> {
        let lease = self.lease(&meta.id)?;
        let dir = self.entry_dir(&meta.id);
        let broken = |why: String| SnapshotError::Broken {
            id: meta.id.clone(),
            why,
        };
        let manifest = Manifest::read(&dir).map_err(|e| broken(format!("no manifest ({e})")))?;
        match meta.form {
            Form::Dir => {
                copy::copy_dir(&dir.join("data"), dest).map_err(|e| broken(e.to_string()))?;
                let found = manifest.check(dest)?;
                if !found.is_empty() {
                    return Err(broken(mismatch(&found)));
                }
            }
            Form::Archive => {
                let found = manifest.check_files(&dir, &archive_names())?;
                if !found.is_empty() {
                    return Err(broken(mismatch(&found)));
                }
                let file = archive_names()
                    .iter()
                    .map(|n| dir.join(n))
                    .find(|p| p.is_file())
                    .ok_or_else(|| broken("its archive is missing".into()))?;
                copy::unpack(&file, dest).map_err(|e| broken(e.to_string()))?;
            }
        }
        let mut used = meta.clone();
        used.last_used = now();
        used.uses += 1;
        // Only the bookkeeping: a failure here loses nothing. Under the
        // lease the folder is still the entry's.
        if lease.holds() {
            let _ = write_meta(&dir, &used);
        }
        Ok(())
    }

    /// Keep `digest` as the records' digest of the entry `id`, which had
    /// none (digested at its first verified restore).
    pub(crate) fn set_digest(&self, id: &str, digest: &str) -> Result<(), SnapshotError> {
        let lease = self.lease(id)?;
        let dir = self.entry_dir(id);
        let Some(mut meta) = read_meta(&dir) else {
            return Ok(());
        };
        meta.digest = Some(digest.to_string());
        if lease.holds() {
            write_meta(&dir, &meta)?;
        }
        Ok(())
    }

    /// A shared hold on the entry `id` (restores share it; a removal
    /// waits for none and skips a held entry). `Gone` when the entry is no
    /// longer there.
    pub(crate) fn lease(&self, id: &str) -> Result<Lease, SnapshotError> {
        let dir = self.entry_dir(id);
        let gone = || SnapshotError::Gone { id: id.to_string() };
        let file = std::fs::File::open(&dir).map_err(|_| gone())?;
        let lock = Flock::lock(file, FlockArg::LockShared)
            .map_err(|(_, e)| io_err(&dir)(std::io::Error::from(e)))?;
        let lease = Lease { lock, dir };
        // Removed between the open and the lock: another folder, or none.
        if lease.holds() {
            Ok(lease)
        } else {
            Err(gone())
        }
    }

    /// Move the entry `id` out of the cache's ids, with `reason` beside it
    /// (`cache ls` shows it; the next prune removes it), so that the next
    /// load of its key saves a new one. Waits for restores that hold it.
    pub(crate) fn quarantine(&self, id: &str, reason: &str) -> Result<(), SnapshotError> {
        let dir = self.entry_dir(id);
        let Ok(file) = std::fs::File::open(&dir) else {
            return Ok(());
        };
        let _lock = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, e)| io_err(&dir)(std::io::Error::from(e)))?;
        let secs = chrono::Utc::now().timestamp();
        let to = self.root.join(format!("{QUARANTINE}{id}-{secs}"));
        match std::fs::rename(&dir, &to) {
            Ok(()) => {}
            // Quarantined or removed by another run meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err(&dir)(e)),
        }
        std::fs::write(to.join(REASON), format!("{reason}\n")).map_err(io_err(&to))
    }

    /// Quarantined entries: folder, id and reason.
    pub fn quarantined(&self) -> Vec<(PathBuf, String, String)> {
        let Ok(dir) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut out: Vec<(PathBuf, String, String)> = dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let rest = name.strip_prefix(QUARANTINE)?;
                let id = rest.rsplit_once('-').map_or(rest, |(id, _)| id).to_string();
                let reason = std::fs::read_to_string(e.path().join(REASON)).unwrap_or_default();
                Some((e.path(), id, reason.trim().to_string()))
            })
            .collect();
        out.sort();
        out
    }

    /// Remove least recently used entries until they take at most `keep`
    /// bytes; the removed ones, in order.
    /// Quarantined entries count and go first.
    pub(crate) fn prune_to(&self, keep: u64) -> Vec<Meta> {
        let mut entries = self.entries();
        let mut used: u64 = entries.iter().map(|m| m.stored_bytes).sum();
        let quarantined = self.quarantined();
        used += quarantined
            .iter()
            .map(|(p, _, _)| copy::disk_usage(p))
            .sum::<u64>();
        for (path, _, _) in quarantined {
            if used <= keep {
                break;
            }
            let bytes = copy::disk_usage(&path);
            if std::fs::remove_dir_all(&path).is_ok() {
                used = used.saturating_sub(bytes);
            }
        }
        let mut removed = Vec::new();
        while used > keep {
            let Some(oldest) = entries.pop() else { break };
            if self.remove(&oldest.id).is_ok() {
                used = used.saturating_sub(oldest.stored_bytes);
                removed.push(oldest);
            }
        }
        removed
    }

    /// Remove one entry: renamed out of its id first, so that no reader
    /// ever sees half of it. `Busy` when a restore holds it: it is kept.
    pub fn remove(&self, id: &str) -> Result<(), SnapshotError> {
        let dir = self.entry_dir(id);
        let file = std::fs::File::open(&dir).map_err(io_err(&dir))?;
        let _lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(l) => l,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                return Err(SnapshotError::Busy { id: id.to_string() });
            }
            Err((_, e)) => return Err(io_err(&dir)(std::io::Error::from(e))),
        };
        let doomed = self
            .root
            .join(format!(".partial-{id}-{}", std::process::id()));
        std::fs::rename(&dir, &doomed).map_err(io_err(&dir))?;
        std::fs::remove_dir_all(&doomed).map_err(io_err(&doomed))
    }
}

/// A restore's shared hold on an entry's folder; released when dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    lock: Flock<std::fs::File>,
    dir: PathBuf,
}

impl Lease {
    /// Whether the entry's path is still the folder held.
    fn holds(&self) -> bool {
        let held = self.lock.metadata().map(|m| (m.dev(), m.ino()));
        let there = std::fs::metadata(&self.dir).map(|m| (m.dev(), m.ino()));
        matches!((held, there), (Ok(a), Ok(b)) if a == b)
    }
}

/// The names an entry's archive may have.
fn archive_names() -> [&'static str; 2] {
    ["data.tar.zst", "data.tar.gz"]
}

/// The manifest of an entry's archive (whichever it has).
fn archive_manifest(entry: &Path) -> Result<Manifest, SnapshotError> {
    let mut m = Manifest::default();
    for name in archive_names() {
        let path = entry.join(name);
        if path.is_file() {
            m.files.extend(Manifest::of_file(&path, name)?.files);
        }
    }
    Ok(m)
}

/// A manifest check's findings in one line (the first three).
fn mismatch(found: &[String]) -> String {
    let more = found.len().saturating_sub(3);
    let mut text = format!(
        "its files differ from its manifest: {}",
        found[..found.len().min(3)].join("; ")
    );
    if more > 0 {
        text.push_str(&format!(" (and {more} more)"));
    }
    text
}

/// A quarter of the filesystem that holds `root`, at least 1 GiB, capped
/// by what can be had there: the entries' bytes now plus its free space.
fn default_limit(root: &Path) -> Bytes {
    let mut p = root;
    while !p.exists() {
        p = p.parent().unwrap_or(Path::new("/"));
    }
    let Ok(st) = nix::sys::statvfs::statvfs(p) else {
        return Bytes(1 << 30);
    };
    let size = st.blocks() * st.fragment_size();
    let free = st.blocks_available() * st.fragment_size();
    let held = Cache {
        root: root.to_path_buf(),
        limit: Bytes(0),
    }
    .used();
    limit_of(size, free, held)
}

/// The default limit on a filesystem of `size` bytes with `free` bytes
/// free, the cache's entries taking `held`.
fn limit_of(size: u64, free: u64, held: u64) -> Bytes {
    Bytes((size / 4).max(1 << 30).min(held.saturating_add(free)))
}

/// When the cache shares the results disk: skip a save that would leave
/// it less than its floor.
fn results_disk_low(root: &Path, results: &Path, need: u64) -> Option<Skipped> {
    if !copy::same_filesystem(root, results) {
        return None;
    }
    let mut p = results;
    while !p.exists() {
        p = p.parent().unwrap_or(Path::new("/"));
    }
    let st = nix::sys::statvfs::statvfs(p).ok()?;
    let size = st.blocks() * st.fragment_size();
    let free = st.blocks_available() * st.fragment_size();
    let keep = results_disk_keep(size);
    (free.saturating_sub(need) < keep.0).then_some(Skipped::ResultsDiskLow {
        free: Bytes(free),
        keep,
    })
}

/// When the cache shares the disk where the run's data dirs go: skip a
/// save that would leave a later cell less than it needs there. This
/// cell's data dir (or its disk image) goes at its teardown and holds at
/// least the snapshot's bytes, so what is free then is what is free now.
fn later_cell_short(root: &Path, work: &Path, later: Bytes) -> Option<Skipped> {
    if later.0 == 0 || !copy::same_filesystem(root, work) {
        return None;
    }
    let free = crate::host::disk_available(work).ok()?;
    (free < later).then_some(Skipped::LaterCellShort { free, later })
}

/// What a save must leave free on a results disk of `size` bytes.
fn results_disk_keep(size: u64) -> Bytes {
    Bytes(
        ((size as f64 * RESULTS_DISK_SHARE) as u64)
            .clamp(RESULTS_DISK_FLOOR.0, RESULTS_DISK_CEILING.0),
    )
}

fn read_meta(dir: &Path) -> Option<Meta> {
    let text = std::fs::read(dir.join(META)).ok()?;
    serde_json::from_slice(&text).ok()
}

fn write_meta(dir: &Path, meta: &Meta) -> Result<(), SnapshotError> {
    crate::results::atomic::write_json_atomic(&dir.join(META), meta).map_err(|e| {
        SnapshotError::Io {
            path: dir.join(META),
            source: std::io::Error::other(e.to_string()),
        }
    })
}

/// `.partial-<id>-<pid>`: removed when that process is gone.
fn remove_if_dead(path: &Path, rest: &str) {
    let pid = rest.rsplit('-').next().and_then(|p| p.parse::<i32>().ok());
    let alive = pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
    if !alive {
        let _ = std::fs::remove_dir_all(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_save_on_the_results_disk_keeps_a_tenth_of_it_free_between_2_and_10_gib() {
        const GIB: u64 = 1 << 30;
        assert_eq!(results_disk_keep(10 * GIB), Bytes(2 * GIB));
        assert_eq!(results_disk_keep(50 * GIB), Bytes(5 * GIB));
        // The disk CI failed on: 252 GB with 26 GB free kept 25.2 GB.
        assert_eq!(results_disk_keep(252 * GIB), Bytes(10 * GIB));
        assert_eq!(results_disk_keep(2048 * GIB), Bytes(10 * GIB));
        let said = Skipped::ResultsDiskLow {
            free: Bytes(26 * GIB),
            keep: results_disk_keep(252 * GIB),
        }
        .to_string();
        assert!(
            said.contains("must keep 10GiB free (10% of it, 2GiB to 10GiB;"),
            "{said}"
        );
    }

    #[test]
    fn the_default_limit_is_a_quarter_of_the_disk_but_never_more_than_it_can_hold() {
        const GIB: u64 = 1 << 30;
        // Room enough: a quarter of the disk.
        assert_eq!(limit_of(400 * GIB, 300 * GIB, 0), Bytes(100 * GIB));
        // A nearly full disk: what the entries hold plus what is free.
        assert_eq!(limit_of(400 * GIB, 10 * GIB, 5 * GIB), Bytes(15 * GIB));
        // A small disk: the 1 GiB floor, but not beyond the free space.
        assert_eq!(limit_of(2 * GIB, 2 * GIB, 0), Bytes(GIB));
        assert_eq!(limit_of(2 * GIB, GIB / 2, 0), Bytes(GIB / 2));
        // The limit on a real folder is within its filesystem's free space.
        let t = tempfile::tempdir().unwrap();
        let free = crate::host::disk_available(t.path()).unwrap();
        assert!(default_limit(t.path()) <= free);
    }

    /// Room with no later cell: the results in `t`, the data dirs too.
    fn room(t: &Path) -> Room<'_> {
        Room {
            results: t,
            work: t,
            later: Bytes(0),
        }
    }

    fn cache(t: &Path, limit: u64) -> Cache {
        Cache {
            root: t.join("snapshots"),
            limit: Bytes(limit),
        }
    }

    fn data(t: &Path, name: &str, bytes: usize) -> PathBuf {
        let d = t.join(name);
        std::fs::create_dir_all(d.join("base")).unwrap();
        std::fs::write(d.join("base/table"), vec![1u8; bytes]).unwrap();
        d
    }

    fn facts() -> LoadFacts {
        LoadFacts {
            from_run: "20261201-120000-abcd".into(),
            load_s: 25.0,
            data_size_bytes: Some(8192),
            digest: Some("d1".into()),
        }
    }

    #[test]
    fn a_saved_snapshot_restores_the_same_files_and_counts_its_uses() {
        let t = tempfile::tempdir().unwrap();
        let c = cache(t.path(), 1 << 30);
        let key = crate::snapshot::tests::key();
        let src = data(t.path(), "data", 50_000);
        let meta = c
            .save(&key, &src, room(t.path()), facts())
            .unwrap()
            .unwrap();
        assert_eq!(meta.id, key.id());
        assert_eq!(meta.form, Form::Dir);
        assert_eq!(meta.digest.as_deref(), Some("d1"));
        assert!(meta.stored_bytes >= 50_000);
        // Saved once: a second save of the same key is skipped.
        let again = c.save(&key, &src, room(t.path()), facts()).unwrap();
        assert_eq!(again.unwrap_err(), Skipped::AlreadySaved);
        let dest = t.path().join("restored");
        c.restore(&c.find(&key.id()).unwrap(), &dest).unwrap();
        assert_eq!(
            std::fs::read(dest.join("base/table")).unwrap(),
            vec![1u8; 50_000]
        );
        assert_eq!(c.find(&key.id()).unwrap().uses, 1);
        assert_eq!(c.entries().len(), 1);
        // No partial folder is left.
        let names: Vec<String> = std::fs::read_dir(&c.root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![key.id()]);
    }

    #[test]
    fn a_save_leaves_a_later_cell_of_the_run_the_room_its_data_needs() {
        let t = tempfile::tempdir().unwrap();
        let c = cache(t.path(), 1 << 30);
        let src = data(t.path(), "d", 50_000);
        let key = crate::snapshot::tests::key();
        let free = crate::host::disk_available(t.path()).unwrap();
        // A later cell needing more than the data dirs' disk has free.
        let short = Room {
            later: Bytes(free.0 + (1 << 30)),
            ..room(t.path())
        };
        let skipped = c.save(&key, &src, short, facts()).unwrap().unwrap_err();
        assert!(
            matches!(skipped, Skipped::LaterCellShort { later, .. } if later == short.later),
            "{skipped}"
        );
        assert!(
            skipped
                .to_string()
                .contains("a later cell of this run needs"),
            "{skipped}"
        );
        assert!(c.entries().is_empty());
        // The data dirs on another disk than the cache's: it takes none of
        // their room.
        let elsewhere = Room {
            work: Path::new("/proc"),
            ..short
        };
        assert_eq!(c.would_skip(&key.id(), &src, elsewhere), None);
        // A later cell that fits: saved.
        let fits = Room {
            later: Bytes(1 << 20),
            ..short
        };
        c.save(&key, &src, fits, facts()).unwrap().unwrap();
        assert_eq!(c.entries().len(), 1);
    }

    #[test]
    fn the_least_recently_used_go_first_and_an_entry_over_the_limit_is_not_saved() {
        let t = tempfile::tempdir().unwrap();
        // Room for two entries of ~100 kB, not three.
        let c = cache(t.path(), 250_000);
        let mut ids = Vec::new();
        for seed in 1..=3u64 {
            let mut key = crate::snapshot::tests::key();
            key.seed = seed;
            let src = data(t.path(), &format!("d{seed}"), 100_000);
            c.save(&key, &src, room(t.path()), facts())
                .unwrap()
                .unwrap();
            ids.push(key.id());
            std::thread::sleep(std::time::Duration::from_millis(1100));
        }
        let left: Vec<String> = c.entries().into_iter().map(|m| m.id).collect();
        assert_eq!(left, vec![ids[2].clone(), ids[1].clone()]);
        assert!(c.used() <= 250_000);
        let big = data(t.path(), "big", 400_000);
        let mut key = crate::snapshot::tests::key();
        key.seed = 9;
        let skipped = c
            .save(&key, &big, room(t.path()), facts())
            .unwrap()
            .unwrap_err();
        assert!(
            skipped
                .to_string()
                .contains("over the snapshot cache's limit"),
            "{skipped}"
        );
        assert_eq!(c.prune_to(0).len(), 2);
        assert!(c.entries().is_empty());
    }

    #[test]
    fn a_partial_entry_of_a_dead_process_is_removed_and_never_found() {
        let t = tempfile::tempdir().unwrap();
        let c = cache(t.path(), 1 << 30);
        let partial = c.root.join(".partial-0123456789abcdef-999999999");
        std::fs::create_dir_all(partial.join("data")).unwrap();
        assert!(c.find("0123456789abcdef").is_none());
        assert!(c.entries().is_empty());
        assert!(!partial.exists());
    }

    #[test]
    fn a_truncated_file_fails_the_restore_and_a_quarantined_entry_is_replaced_by_the_next_save() {
        let t = tempfile::tempdir().unwrap();
        let c = cache(t.path(), 1 << 30);
        let key = crate::snapshot::tests::key();
        let src = data(t.path(), "data", 50_000);
        c.save(&key, &src, room(t.path()), facts())
            .unwrap()
            .unwrap();
        let entry = c.root.join(key.id());
        assert!(entry.join(crate::snapshot::manifest::MANIFEST).is_file());
        // Half of a table file is lost in the cache.
        std::fs::write(entry.join("data/base/table"), vec![1u8; 25_000]).unwrap();
        let dest = t.path().join("restored");
        let e = c.restore(&c.find(&key.id()).unwrap(), &dest).unwrap_err();
        assert!(
            matches!(&e, SnapshotError::Broken { why, .. }
                if why.contains("base/table holds 25000 bytes, not 50000")),
            "{e}"
        );
        c.quarantine(&key.id(), &e.to_string()).unwrap();
        // Neither found nor listed: plan and `cache ls` promise nothing.
        assert!(c.find(&key.id()).is_none());
        assert!(c.entries().is_empty());
        let q = c.quarantined();
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].1, key.id());
        assert!(q[0].2.contains("holds 25000 bytes"), "{:?}", q[0]);
        // The next load saves a new entry under the key; a prune clears
        // the quarantined one.
        let saved = c.save(&key, &src, room(t.path()), facts()).unwrap();
        assert!(saved.is_ok(), "{saved:?}");
        let dest2 = t.path().join("restored2");
        c.restore(&c.find(&key.id()).unwrap(), &dest2).unwrap();
        assert_eq!(
            std::fs::read(dest2.join("base/table")).unwrap().len(),
            50_000
        );
        c.prune_to(1 << 30);
        assert_eq!(c.quarantined().len(), 1, "kept while there is room");
        // Room for the new entry alone (its size on disk, blocks included,
        // differs from one filesystem to another).
        let room = c.entries()[0].stored_bytes;
        c.prune_to(room);
        assert!(c.quarantined().is_empty());
        assert_eq!(c.entries().len(), 1);
    }

    #[test]
    fn a_prune_keeps_an_entry_a_restore_holds_and_never_leaves_a_ghost_of_it() {
        let t = tempfile::tempdir().unwrap();
        let c = cache(t.path(), 1 << 30);
        let key = crate::snapshot::tests::key();
        let src = data(t.path(), "data", 10_000);
        c.save(&key, &src, room(t.path()), facts())
            .unwrap()
            .unwrap();
        let meta = c.find(&key.id()).unwrap();
        // Another run is restoring it: a prune (another process's cache
        // handle) keeps it.
        let other = cache(t.path(), 1 << 30);
        let held = c.lease(&key.id()).unwrap();
        assert!(other.prune_to(0).is_empty());
        assert!(matches!(
            other.remove(&key.id()),
            Err(SnapshotError::Busy { .. })
        ));
        drop(held);
        assert_eq!(other.prune_to(0).len(), 1);
        // A restore that comes after the prune finds it gone, and its
        // bookkeeping re-creates nothing.
        let dest = t.path().join("restored");
        let e = c.restore(&meta, &dest).unwrap_err();
        assert!(matches!(e, SnapshotError::Gone { .. }), "{e}");
        assert!(c.set_digest(&key.id(), "d2").is_err());
        assert!(!c.root.join(key.id()).exists(), "a ghost entry is left");
        assert_eq!(std::fs::read_dir(&c.root).unwrap().count(), 0);
    }
}
