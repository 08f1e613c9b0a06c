//! The cache of fetched engine versions: `<root>/engines/<engine>@<version>/`
//! with `install.json` (what was installed, from where, its checksum).
//!
//! An install is unpacked in `.partial-<engine>@<version>-<pid>` beside the
//! final folder and renamed into place only when complete, so a folder
//! named after a version is always whole. A fetch that fails removes its
//! partial folder; one killed mid-way leaves it with its pid, and the next
//! fetch removes every partial folder whose process is gone.
//!
//! The record lists every unpacked file with its size and sha256: a
//! version whose files are not all there at their sizes (a binary
//! deleted, a file truncated) is not installed to anything that asks
//! ([`installed`]), and `fetch` also checks the checksums
//! ([`verify_sums`]); either way it is fetched again.

use super::{FetchError, Source, io_err};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The record written last into an installed version's folder.
pub const RECORD: &str = "install.json";

/// The cache root: `BENCHCAGE_CACHE`, else `$XDG_CACHE_HOME/benchcage`;
/// else `/var/cache/benchcage` for root (engines run as their own users,
/// such as `postgres`, and must read the binaries, which /root does not
/// let them), else `~/.cache/benchcage`. Always absolute: a relative one
/// is taken from the current folder.
pub fn root() -> PathBuf {
    let root = given_root();
    std::path::absolute(&root).unwrap_or(root)
}

fn given_root() -> PathBuf {
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
    /// Every file unpacked (path in the folder -> size and sha256), and
    /// every symlink made; empty in records written before it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, FileSum>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<String>,
    /// The release the installed server says it is (an imported tarball's
    /// `bin/mongod --version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_version: Option<String>,
}

impl InstallRecord {
    /// Where a cell's binary came from, as its fidelity records it:
    /// `npm PACKAGE@VERSION sha512-...`, `the release tarball FILE
    /// sha256-... (reports 2.6.12)`.
    pub fn package(&self) -> String {
        let mut out = format!("{} {}", self.source.describe(), self.checksum);
        if let Some(v) = &self.reported_version {
            out.push_str(&format!(" (reports {v})"));
        }
        out
    }
}

/// What filling a partial folder gives the record.
#[derive(Debug, Clone, PartialEq)]
pub struct Filled {
    /// The verified checksum (`sha512-...`, `sha256-...`).
    pub checksum: String,
    /// Bytes downloaded or read.
    pub bytes: u64,
    pub reported_version: Option<String>,
}

impl From<(String, u64)> for Filled {
    fn from((checksum, bytes): (String, u64)) -> Filled {
        Filled {
            checksum,
            bytes,
            reported_version: None,
        }
    }
}

/// One unpacked file as the install recorded it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FileSum {
    pub size: u64,
    pub sha256: String,
}

/// Why an installed folder is not whole.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Broken {
    #[error("{0} is missing")]
    Missing(String),
    #[error("{path} has {got} bytes, not the {want} unpacked")]
    Size { path: String, want: u64, got: u64 },
    #[error("{0} does not hold the bytes unpacked (its sha256 differs)")]
    Sum(String),
    #[error("the engine's binary {0} is not a file in it")]
    Binary(String),
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

/// The installed version, if it came from `source` and its folder holds
/// every file the install recorded at its size.
pub fn installed(root: &Path, engine: &str, version: &str, source: &Source) -> Option<Installed> {
    recorded(root, engine, version, source).filter(|i| check_sizes(i).is_ok())
}

/// The installed version whose `binary` (a path in its folder) is there
/// too: what a cell can run.
pub fn usable(
    root: &Path,
    engine: &str,
    version: &str,
    source: &Source,
    binary: Option<&str>,
) -> Option<Installed> {
    installed(root, engine, version, source)
        .filter(|i| binary.is_none_or(|b| i.dir.join(b).is_file()))
}

/// The record of `engine@version` from `source`, whatever its folder holds.
pub fn recorded(root: &Path, engine: &str, version: &str, source: &Source) -> Option<Installed> {
    let dir = dir_of(root, engine, version);
    let text = std::fs::read_to_string(dir.join(RECORD)).ok()?;
    let record: InstallRecord = serde_json::from_str(&text).ok()?;
    (record.source == *source).then_some(Installed { dir, record })
}

/// Every recorded file is there at its size, every link is a link, and
/// `binary` (when given) is a file.
pub fn check(i: &Installed, binary: Option<&str>) -> Result<(), Broken> {
    check_sizes(i)?;
    match binary {
        Some(b) if !i.dir.join(b).is_file() => Err(Broken::Binary(b.to_string())),
        _ => Ok(()),
    }
}

fn check_sizes(i: &Installed) -> Result<(), Broken> {
    for (path, sum) in &i.record.files {
        match std::fs::symlink_metadata(i.dir.join(path)) {
            Ok(m) if m.is_file() && m.len() == sum.size => {}
            Ok(m) if m.is_file() => {
                return Err(Broken::Size {
                    path: path.clone(),
                    want: sum.size,
                    got: m.len(),
                });
            }
            _ => return Err(Broken::Missing(path.clone())),
        }
    }
    for l in &i.record.links {
        if !std::fs::symlink_metadata(i.dir.join(l)).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Broken::Missing(l.clone()));
        }
    }
    Ok(())
}

/// [`check`], and every recorded file's sha256 as unpacked.
pub fn verify_sums(i: &Installed, binary: Option<&str>) -> Result<(), Broken> {
    check(i, binary)?;
    for (path, sum) in &i.record.files {
        let got = super::digest_file::<sha2::Sha256>(&i.dir.join(path)).map(hex::encode);
        if got.ok().as_deref() != Some(sum.sha256.as_str()) {
            return Err(Broken::Sum(path.clone()));
        }
    }
    Ok(())
}

/// Move a broken install out of the way and remove it: the next fetch
/// installs afresh. (Renamed first, to a partial name carrying this
/// process's pid, so that no reader sees it half removed, and a fetch
/// killed meanwhile leaves what the next one sweeps.)
pub fn discard(root: &Path, engine: &str, version: &str) -> Result<(), FetchError> {
    let what = format!("{engine}@{version}");
    let dir = dir_of(root, engine, version);
    let aside = root
        .join("engines")
        .join(format!(".partial-{what}-broken-{}", std::process::id()));
    std::fs::rename(&dir, &aside).map_err(io_err(&what, &dir))?;
    std::fs::remove_dir_all(&aside).map_err(io_err(&what, &aside))
}

/// What an unpacked folder holds: every regular file with its size and
/// sha256, every symlink (`.download` and the record left out).
fn manifest(dir: &Path) -> std::io::Result<(BTreeMap<String, FileSum>, Vec<String>)> {
    let mut files = BTreeMap::new();
    let mut links = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let path = e.path();
            let rel = path
                .strip_prefix(dir)
                .expect("under the folder")
                .to_string_lossy()
                .into_owned();
            if rel == RECORD || rel == ".download" {
                continue;
            }
            let t = e.file_type()?;
            if t.is_symlink() {
                links.push(rel);
            } else if t.is_dir() {
                stack.push(path);
            } else if t.is_file() {
                let size = e.metadata()?.len();
                let sha256 = hex::encode(super::digest_file::<sha2::Sha256>(&path)?);
                files.insert(rel, FileSum { size, sha256 });
            }
        }
    }
    links.sort();
    Ok((files, links))
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
/// returns the verified checksum and the bytes downloaded ([`Filled`]);
/// then record it and rename it into place.
pub fn install<F: Into<Filled>>(
    root: &Path,
    engine: &str,
    version: &str,
    source: &Source,
    fill: impl FnOnce(&Path, &Path) -> Result<F, FetchError>,
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
    let Filled {
        checksum,
        bytes,
        reported_version,
    } = fill(&staging, &downloads)?.into();
    std::fs::remove_dir_all(&downloads).map_err(io_err(&what, &downloads))?;
    let (files, links) = manifest(&staging).map_err(io_err(&what, &staging))?;
    let record = InstallRecord {
        engine: engine.to_string(),
        version: version.to_string(),
        source: source.clone(),
        checksum,
        bytes,
        fetched_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        files,
        links,
        reported_version,
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
            Err::<Filled, _>(FetchError::Checksum {
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
    fn an_install_missing_or_changing_a_file_is_not_installed_and_is_discarded() {
        let tmp = tempfile::tempdir().unwrap();
        let fill = |staging: &Path, _: &Path| {
            std::fs::create_dir_all(staging.join("bin")).unwrap();
            std::fs::write(staging.join("bin/server"), "server").unwrap();
            std::fs::write(staging.join("bin/lib.so.1.2"), "lib").unwrap();
            std::os::unix::fs::symlink("lib.so.1.2", staging.join("bin/lib.so.1")).unwrap();
            Ok(("sha256-ab".into(), 1))
        };
        let ok = install(tmp.path(), "e", "1", &source(), fill).unwrap();
        assert_eq!(ok.record.files.len(), 2, "{:?}", ok.record.files);
        assert_eq!(ok.record.links, ["bin/lib.so.1"]);
        assert!(verify_sums(&ok, Some("bin/server")).is_ok());
        assert!(usable(tmp.path(), "e", "1", &source(), Some("bin/server")).is_some());
        // A binary the spec names that the package lacks: not usable.
        assert!(usable(tmp.path(), "e", "1", &source(), Some("bin/other")).is_none());

        // Same size, other bytes: only the checksums tell.
        std::fs::write(ok.dir.join("bin/lib.so.1.2"), "LIB").unwrap();
        assert!(installed(tmp.path(), "e", "1", &source()).is_some());
        assert_eq!(
            verify_sums(&ok, None),
            Err(Broken::Sum("bin/lib.so.1.2".into()))
        );
        // Truncated, then deleted: not installed.
        std::fs::write(ok.dir.join("bin/server"), "se").unwrap();
        assert!(installed(tmp.path(), "e", "1", &source()).is_none());
        std::fs::remove_file(ok.dir.join("bin/server")).unwrap();
        assert!(installed(tmp.path(), "e", "1", &source()).is_none());
        let rec = recorded(tmp.path(), "e", "1", &source()).unwrap();
        assert_eq!(
            check(&rec, Some("bin/server")),
            Err(Broken::Missing("bin/server".into()))
        );
        discard(tmp.path(), "e", "1").unwrap();
        let left: Vec<_> = std::fs::read_dir(tmp.path().join("engines"))
            .unwrap()
            .flatten()
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // Installed again from scratch.
        assert!(install(tmp.path(), "e", "1", &source(), fill).is_ok());
        assert!(installed(tmp.path(), "e", "1", &source()).is_some());
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
