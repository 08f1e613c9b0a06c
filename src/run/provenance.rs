//! What a run records about what ran it: benchcage's version and git
//! revision, and the sha256 of every spec file the plan used.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// benchcage's version (from Cargo.toml).
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The git revision of the checkout at `home` (`git rev-parse`), with
/// `-dirty` when it has uncommitted changes; `unknown` outside a checkout.
pub fn git_rev(home: &Path) -> String {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(home)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match run(&["rev-parse", "--short=12", "HEAD"]) {
        Some(rev) if !rev.is_empty() => {
            let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{rev}-dirty") } else { rev }
        }
        _ => "unknown".to_string(),
    }
}

/// sha256 of a file's bytes, hex.
pub(crate) fn file_hash(path: &Path) -> std::io::Result<String> {
    Ok(hex::encode(Sha256::digest(std::fs::read(path)?)))
}

/// sha256 of each file, keyed by its path relative to `home` when it is
/// under it; unreadable files are skipped.
pub fn spec_hashes<'a>(
    home: &Path,
    files: impl IntoIterator<Item = &'a Path>,
) -> BTreeMap<String, String> {
    files
        .into_iter()
        .filter_map(|p| {
            let hash = file_hash(p).ok()?;
            let shown = p.strip_prefix(home).unwrap_or(p).display().to_string();
            Some((shown, hash))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_files_are_hashed_by_their_path_under_home() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("scenarios/a.yaml");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, "name: a\n").unwrap();
        let h = spec_hashes(t.path(), [f.as_path()]);
        assert_eq!(h.len(), 1);
        assert_eq!(h["scenarios/a.yaml"].len(), 64);
    }

    #[test]
    fn this_checkout_has_a_git_revision() {
        let rev = git_rev(Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(rev == "unknown" || rev.len() >= 12, "{rev}");
    }
}
