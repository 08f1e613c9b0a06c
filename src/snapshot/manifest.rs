//! An entry's manifest: the size and SHA-256 of every file it holds
//! (`manifest.json`), written when the entry is saved and checked when it
//! is restored, so that a file truncated or changed in the cache is never
//! restored silently (issue 34, point 9).

use super::copy::regular_files;
use super::{SnapshotError, io_err};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The manifest's file name in an entry.
pub(crate) const MANIFEST: &str = "manifest.json";

/// One file of an entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileSum {
    pub bytes: u64,
    pub sha256: String,
}

/// Every regular file under a folder, by its path relative to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub files: BTreeMap<String, FileSum>,
}

impl Manifest {
    /// The manifest of the files under `dir`.
    pub fn of(dir: &Path) -> Result<Manifest, SnapshotError> {
        let mut files = BTreeMap::new();
        for path in regular_files(dir)? {
            let rel = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            files.insert(rel, sum(&path)?);
        }
        Ok(Manifest { files })
    }

    /// The manifest of one file, under `name`.
    pub(crate) fn of_file(path: &Path, name: &str) -> Result<Manifest, SnapshotError> {
        Ok(Manifest {
            files: BTreeMap::from([(name.to_string(), sum(path)?)]),
        })
    }

    /// How the files `names` (those that exist, or that the manifest
    /// lists) in `dir` differ from the manifest.
    pub(crate) fn check_files(
        &self,
        dir: &Path,
        names: &[&str],
    ) -> Result<Vec<String>, SnapshotError> {
        let mut now = Manifest::default();
        for name in names {
            let path = dir.join(name);
            if path.is_file() {
                now.files.extend(Manifest::of_file(&path, name)?.files);
            }
        }
        Ok(self.differences(&now))
    }

    /// How the files under `dir` differ from the manifest, in words (at
    /// most a few); empty when they match.
    pub fn check(&self, dir: &Path) -> Result<Vec<String>, SnapshotError> {
        Ok(self.differences(&Manifest::of(dir)?))
    }

    /// How `now` differs from the manifest, in words.
    fn differences(&self, now: &Manifest) -> Vec<String> {
        let mut out = Vec::new();
        for (name, want) in &self.files {
            match now.files.get(name) {
                None => out.push(format!("{name} is missing")),
                Some(got) if got.bytes != want.bytes => out.push(format!(
                    "{name} holds {} bytes, not {}",
                    got.bytes, want.bytes
                )),
                Some(got) if got.sha256 != want.sha256 => {
                    out.push(format!("{name} has another checksum"))
                }
                Some(_) => {}
            }
        }
        for name in now.files.keys().filter(|n| !self.files.contains_key(*n)) {
            out.push(format!("{name} is not in the manifest"));
        }
        out
    }

    /// Read an entry's manifest.
    pub fn read(entry: &Path) -> Result<Manifest, SnapshotError> {
        let path = entry.join(MANIFEST);
        let text = std::fs::read(&path).map_err(io_err(&path))?;
        serde_json::from_slice(&text).map_err(|e| io_err(&path)(std::io::Error::other(e)))
    }

    /// Write it into an entry.
    pub fn write(&self, entry: &Path) -> Result<(), SnapshotError> {
        let path = entry.join(MANIFEST);
        crate::results::atomic::write_json_atomic(&path, self)
            .map_err(|e| io_err(&path)(std::io::Error::other(e.to_string())))
    }
}

/// Size and SHA-256 of one file.
fn sum(path: &Path) -> Result<FileSum, SnapshotError> {
    let mut f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok(FileSum {
        bytes,
        sha256: hex::encode(h.finalize()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_changed_missing_or_added_file_is_named_by_the_check() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("base")).unwrap();
        std::fs::write(t.path().join("base/table"), vec![1u8; 10_000]).unwrap();
        std::fs::write(t.path().join("aof"), b"*1\r\n$4\r\nPING\r\n").unwrap();
        std::fs::write(t.path().join("gone"), b"x").unwrap();
        let m = Manifest::of(t.path()).unwrap();
        assert_eq!(m.files.len(), 3);
        assert!(m.check(t.path()).unwrap().is_empty());
        std::fs::write(t.path().join("base/table"), vec![1u8; 5_000]).unwrap();
        std::fs::write(t.path().join("aof"), b"*1\r\n$4\r\nPONG\r\n").unwrap();
        std::fs::remove_file(t.path().join("gone")).unwrap();
        std::fs::write(t.path().join("new"), b"y").unwrap();
        let found = m.check(t.path()).unwrap();
        assert_eq!(
            found,
            vec![
                "aof has another checksum".to_string(),
                "base/table holds 5000 bytes, not 10000".to_string(),
                "gone is missing".to_string(),
                "new is not in the manifest".to_string(),
            ]
        );
    }
}
