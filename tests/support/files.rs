//! Reading and writing what runs leave, and project homes in temp dirs.

use std::path::{Path, PathBuf};

/// A file's text, trimmed; a failure names the path.
pub fn read_text(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .to_string()
}

/// A JSON file as `T`; a failure names the path.
pub fn read_json<T: serde::de::DeserializeOwned>(p: &Path) -> T {
    let text = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `value` as pretty JSON at `path`, its folder created.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// Every file under `dir`, sorted.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// A copy of the tree `from` at `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// A temp project home (named `prefix...`) with the shipped engines,
/// templates and environments, and an empty scenarios/ folder.
pub fn temp_home(prefix: &str) -> tempfile::TempDir {
    let t = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    for d in ["engines", "templates", "environments"] {
        copy_dir(&super::cli::repo().join(d), &t.path().join(d));
    }
    std::fs::create_dir_all(t.path().join("scenarios")).unwrap();
    t
}

/// The cell folders of a run folder, sorted.
pub fn cell_dirs(run_dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(run_dir.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// The first repetition of a snapshot key loaded and saved, the second
/// restored: `first`'s and `second`'s `load_source` say so.
pub fn assert_saved_then_restored(
    what: &str,
    first: &benchcage::results::model::CellRecord,
    second: &benchcage::results::model::CellRecord,
) {
    use benchcage::results::model::LoadSource;
    assert!(
        matches!(
            first.load_source,
            Some(LoadSource::Fresh { saved: true, .. })
        ),
        "{what} r0: {:?}",
        first.load_source
    );
    assert!(
        second
            .load_source
            .as_ref()
            .is_some_and(LoadSource::restored),
        "{what} r1: {:?}",
        second.load_source
    );
}
