//! The cache of fetched engine versions: `<root>/engines/<engine>@<version>/`
//! with `install.json` (what was installed, from where, its checksum).
//!
//! An install is unpacked in `.partial-<engine>@<version>-<pid>` beside the
//! final folder and renamed into place only when complete, so a folder
//! named after a version is always whole. A fetch that fails removes its
//! partial folder; one killed mid-way leaves it with its pid, and the next
//! fetch removes every partial folder whose process is gone.

use super::{FetchError, Source, io_err};
use std::path::{Path, PathBuf};

/// The record written last into an installed version's folder.
pub const RECORD: &str = "install.json";

/// The cache root: `BENCHCAGE_CACHE`, else `$XDG_CACHE_HOME/benchcage`;
/// else `/var/cache/benchcage` for root (engines run as their own users,
/// such as `postgres`, and must read the binaries, which /root does not
/// let them), else `~/.cache/benchcage`.
pub fn root() -> PathBuf {
    if let Some(dir) = std::env::var_os("BENCHCAGE_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("benchcage");
    }
    if nix::unistd::geteuid().is_root() {
        return PathBuf::from("/var/cache/benchcage");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
    PathBuf::from(home).join(".cache").join("benchcage")
}

/// What `install.json` holds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InstallRecord {
    pub engine: String,
    pub version: String,
    pub source: Source,
    /// The verified checksum of the downloaded package (`sha512-...`,
    /// `sha256-...`).
    pub checksum: String,
    /// Bytes downloaded.
    pub bytes: u64,
    pub fetched_at: String,
}

/// An installed version: its folder and record.
#[derive(Debug, Clone)]
pub struct Installed {
    pub dir: PathBuf,
    pub record: InstallRecord,
}

/// The folder of `engine@version` under `root`.
pub fn dir_of(root: &Path, engine: &str, version: &str) -> PathBuf {
    root.join("engines").join(format!("{engine}@{version}"))
}

/// The installed version, if its folder is complete and came from `source`.
pub fn installed(root: &Path, engine: &str, version: &str, source: &Source) -> Option<Installed> {
    let dir = dir_of(root, engine, version);
    let text = std::fs::read_to_string(dir.join(RECORD)).ok()?;
    let record: InstallRecord = serde_json::from_str(&text).ok()?;
    (record.source == *source).then_some(Installed { dir, record })
}

/// Every installed version under `root`, by folder name.
pub fn list(root: &Path) -> Vec<Installed> {
    let mut out: Vec<Installed> = std::fs::read_dir(root.join("engines"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path().join(RECORD)).ok()?;
            let record = serde_json::from_str(&text).ok()?;
            Some(Installed {
                dir: e.path(),
                record,
            })
        })
        .collect();
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    out
}

/// Removes the partial folder unless disarmed.
struct Partial(Option<PathBuf>);

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// Install into a partial folder with `fill(staging, downloads)`, which
/// returns the verified checksum and the bytes downloaded; then record it
/// and rename it into place.
pub fn install(
    root: &Path,
    engine: &str,
    version: &str,
    source: &Source,
    fill: impl FnOnce(&Path, &Path) -> Result<(String, u64), FetchError>,
) -> Result<Installed, FetchError> {
    let what = format!("{engine}@{version}");
    let engines = root.join("engines");
    create_readable(&engines).map_err(io_err(&what, &engines))?;
    remove_stale_partials(&engines);
    let name = format!("{engine}@{version}");
    let staging = engines.join(format!(".partial-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let mut guard = Partial(Some(staging.clone()));
    let downloads = staging.join(".download");
    create_readable(&downloads).map_err(io_err(&what, &downloads))?;
    let (checksum, bytes) = fill(&staging, &downloads)?;
    std::fs::remove_dir_all(&downloads).map_err(io_err(&what, &downloads))?;
    let record = InstallRecord {
        engine: engine.to_string(),
        version: version.to_string(),
        source: source.clone(),
        checksum,
        bytes,
        fetched_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    let text = serde_json::to_string_pretty(&record).expect("serializable");
    let rec_path = staging.join(RECORD);
    std::fs::write(&rec_path, text).map_err(io_err(&what, &rec_path))?;
    let dir = dir_of(root, engine, version);
    // A folder of an older source (another pin) is replaced.
    if dir.exists() && installed(root, engine, version, source).is_none() {
        std::fs::remove_dir_all(&dir).map_err(io_err(&what, &dir))?;
    }
    match std::fs::rename(&staging, &dir) {
        Ok(()) => guard.0 = None,
        // Another fetch of the same version finished first: keep its folder.
        Err(_) if installed(root, engine, version, source).is_some() => {}
        Err(e) => return Err(io_err(&what, &dir)(e)),
    }
    Ok(Installed { dir, record })
}

/// A folder readable (and searchable) by every user: engines run as their
/// own users.
fn create_readable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
}

/// Remove `.partial-*-<pid>` folders whose process is gone.
fn remove_stale_partials(engines: &Path) {
    for e in std::fs::read_dir(engines).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(".partial-") else {
            continue;
        };
        let pid = rest.rsplit('-').next().and_then(|p| p.parse::<i32>().ok());
        let alive = pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Source {
        Source::Pypi {
            package: "p".into(),
            version: "1".into(),
            sha256: "ab".into(),
        }
    }

    #[test]
    fn a_failed_fill_leaves_no_folder_and_a_good_one_is_found_again() {
        let tmp = tempfile::tempdir().unwrap();
        let err = install(tmp.path(), "e", "1", &source(), |staging, _| {
            std::fs::write(staging.join("half"), "x").unwrap();
            Err(FetchError::Checksum {
                what: "e@1".into(),
                want: "a".into(),
                got: "b".into(),
            })
        });
        assert!(err.is_err());
        let left: Vec<_> = std::fs::read_dir(tmp.path().join("engines"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert!(installed(tmp.path(), "e", "1", &source()).is_none());

        let ok = install(tmp.path(), "e", "1", &source(), |staging, downloads| {
            assert!(downloads.is_dir());
            std::fs::write(staging.join("bin"), "x").unwrap();
            Ok(("sha256-ab".into(), 1))
        })
        .unwrap();
        assert_eq!(ok.dir, dir_of(tmp.path(), "e", "1"));
        assert!(ok.dir.join("bin").is_file() && !ok.dir.join(".download").exists());
        let again = installed(tmp.path(), "e", "1", &source()).unwrap();
        assert_eq!(again.record.checksum, "sha256-ab");
        // Another pin of the same version is not this install.
        let other = Source::Pypi {
            package: "p".into(),
            version: "1".into(),
            sha256: "cd".into(),
        };
        assert!(installed(tmp.path(), "e", "1", &other).is_none());
        assert_eq!(list(tmp.path()).len(), 1);
    }

    #[test]
    fn partial_folders_of_dead_processes_are_removed_and_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let engines = tmp.path().join("engines");
        let dead = engines.join(".partial-e@1-999999999");
        let live = engines.join(format!(".partial-e@2-{}", std::process::id()));
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::create_dir_all(&live).unwrap();
        remove_stale_partials(&engines);
        assert!(!dead.exists());
        assert!(live.exists());
    }
}
