//! Transparent huge pages (THP): the host-wide kernel setting in
//! `/sys/kernel/mm/transparent_hugepage/` (`enabled`, `defrag`), read by
//! `doctor` and `plan`, and turned to `never` for a cell whose environment
//! asks for it (`host: {transparent_hugepages: off}`).
//!
//! Why: TokuMX (its fractal-tree library, `huge_page_detection.cc` of
//! Tokutek's ft-index) refuses to start when either
//! `/sys/kernel/mm/transparent_hugepage/enabled` or RHEL 6's
//! `/sys/kernel/mm/redhat_transparent_hugepage/enabled` contains
//! `[always]`, or when a fresh 2 MiB anonymous mapping comes back huge
//! (mincore after touching one byte). `madvise` passes both checks: the
//! library never asks for huge pages. It does not read `defrag`, which
//! only matters once huge pages are handed out.
//!
//! The change is written to a ledger before it is made, so the old value
//! is restored at the cell's teardown, or by `cleanup` (and the start of
//! the next run) after a SIGKILL. A restore writes back only over the
//! `never` benchcage set: if someone changed the setting since, theirs
//! stays.
//!
//! Kernel files: reading `enabled` gives every mode with the selected one
//! in brackets (`always [madvise] never`); writing one word selects it.
//! The folder is injectable ([`ThpFiles::at`]) so tests run on a temp dir,
//! and `$BENCHCAGE_THP_ROOT` moves it for a whole process.

use crate::sandbox::SandboxError;
use crate::sandbox::ledger::{Ledger, NotRemoved, Resource};
use std::path::{Path, PathBuf};

/// Environment variable that moves the THP folder (tests use a temp dir).
pub const ROOT_ENV: &str = "BENCHCAGE_THP_ROOT";
/// Where the kernel has THP's settings.
pub(crate) const DEFAULT_ROOT: &str = "/sys/kernel/mm/transparent_hugepage";
/// Whether anonymous memory gets huge pages: always, madvise, never.
pub(crate) const ENABLED: &str = "enabled";
/// Whether the kernel compacts memory to hand out huge pages.
pub(crate) const DEFRAG: &str = "defrag";

/// The mode of `enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpMode {
    /// Every anonymous mapping large enough gets huge pages.
    Always,
    /// Only mappings that ask with madvise(MADV_HUGEPAGE).
    Madvise,
    /// None.
    Never,
}

impl ThpMode {
    /// The word the kernel reads and writes.
    pub fn word(self) -> &'static str {
        match self {
            ThpMode::Always => "always",
            ThpMode::Madvise => "madvise",
            ThpMode::Never => "never",
        }
    }

    fn from_word(w: &str) -> Option<ThpMode> {
        match w {
            "always" => Some(ThpMode::Always),
            "madvise" => Some(ThpMode::Madvise),
            "never" => Some(ThpMode::Never),
            _ => None,
        }
    }
}

impl std::fmt::Display for ThpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// The selected word of each THP file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ThpState {
    pub enabled: ThpMode,
    /// The selected `defrag` mode (`always`, `defer`, `defer+madvise`,
    /// `madvise`, `never`); `None` when the file is missing.
    pub defrag: Option<String>,
}

/// Why a THP file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ThpError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing `{value}` to {path}: {source}")]
    Write {
        path: PathBuf,
        value: String,
        source: std::io::Error,
    },
    #[error("{path} reads `{text}`, which selects no mode of always, madvise or never")]
    Unreadable { path: PathBuf, text: String },
    #[error("{path} reads `{got}` after benchcage wrote `{want}`; the kernel did not take it")]
    NotApplied {
        path: PathBuf,
        want: ThpMode,
        got: ThpMode,
    },
}

/// The selected word of a THP file: the one in brackets. A file that
/// holds a single word (a plain file written by a test) is that word.
fn selected(text: &str) -> Option<&str> {
    let t = text.trim();
    if let Some(start) = t.find('[') {
        let end = t[start..].find(']')?;
        return Some(&t[start + 1..start + end]);
    }
    (!t.is_empty() && !t.contains(char::is_whitespace)).then_some(t)
}

/// The THP files of a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThpFiles {
    root: PathBuf,
}

impl ThpFiles {
    /// This process's THP folder: `$BENCHCAGE_THP_ROOT`, else the kernel's.
    pub fn current() -> ThpFiles {
        ThpFiles::at(
            std::env::var_os(ROOT_ENV)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_ROOT)),
        )
    }

    /// THP files under `root` (tests use a temp dir).
    pub fn at(root: impl Into<PathBuf>) -> ThpFiles {
        ThpFiles { root: root.into() }
    }

    /// The `enabled` file.
    pub fn enabled_path(&self) -> PathBuf {
        self.root.join(ENABLED)
    }

    /// Both settings; `None` when the kernel has no THP (no `enabled`).
    pub fn read(&self) -> Result<Option<ThpState>, ThpError> {
        if !self.enabled_path().exists() {
            return Ok(None);
        }
        let enabled = read_mode(&self.enabled_path())?;
        let defrag_path = self.root.join(DEFRAG);
        let defrag = match std::fs::read_to_string(&defrag_path) {
            Ok(t) => selected(&t).map(str::to_string),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ThpError::Read {
                    path: defrag_path,
                    source,
                });
            }
        };
        Ok(Some(ThpState { enabled, defrag }))
    }
}

/// The selected mode of an `enabled` file.
pub fn read_mode(path: &Path) -> Result<ThpMode, ThpError> {
    let text = std::fs::read_to_string(path).map_err(|source| ThpError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    selected(&text)
        .and_then(ThpMode::from_word)
        .ok_or_else(|| ThpError::Unreadable {
            path: path.to_path_buf(),
            text: crate::error::excerpt(text.trim()).into_owned(),
        })
}

/// Select `mode` in an `enabled` file and read it back.
pub fn write_mode(path: &Path, mode: ThpMode) -> Result<(), ThpError> {
    std::fs::write(path, mode.word()).map_err(|source| ThpError::Write {
        path: path.to_path_buf(),
        value: mode.word().into(),
        source,
    })?;
    let got = read_mode(path)?;
    if got != mode {
        return Err(ThpError::NotApplied {
            path: path.to_path_buf(),
            want: mode,
            got,
        });
    }
    Ok(())
}

/// A change benchcage made: `file` was `old` and is now `never`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThpChange {
    pub file: PathBuf,
    pub old: ThpMode,
}

/// Select `never` in `files`' `enabled`, the old mode in `ledger` first.
/// Returns the change to undo; `None` when it already was `never` (or
/// the kernel has no THP), and nothing was written.
pub(crate) fn turn_off(
    files: &ThpFiles,
    ledger: &mut Ledger,
) -> Result<Option<ThpChange>, SandboxError> {
    let file = files.enabled_path();
    if !file.exists() {
        return Ok(None);
    }
    let old = read_mode(&file)?;
    if old == ThpMode::Never {
        return Ok(None);
    }
    ledger.record(Resource::Thp {
        file: file.clone(),
        old,
    })?;
    write_mode(&file, ThpMode::Never)?;
    Ok(Some(ThpChange { file, old }))
}

/// Whether the `never` a run selected in `file` is still there to undo.
pub(crate) fn change_in_place(file: &Path, old: ThpMode) -> bool {
    old != ThpMode::Never && read_mode(file).ok() == Some(ThpMode::Never)
}

/// Put `old` back in `file` if it still reads the `never` benchcage
/// selected; a mode someone set since is left alone.
pub fn restore(file: &Path, old: ThpMode) -> Result<(), NotRemoved> {
    if !change_in_place(file, old) {
        return Ok(());
    }
    write_mode(file, old).map_err(|e| NotRemoved(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A THP folder in a temp dir, `enabled` and `defrag` as the kernel
    /// shows them.
    fn fake(enabled: &str, defrag: &str) -> (tempfile::TempDir, ThpFiles) {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join(ENABLED), format!("{enabled}\n")).unwrap();
        std::fs::write(t.path().join(DEFRAG), format!("{defrag}\n")).unwrap();
        let f = ThpFiles::at(t.path());
        (t, f)
    }

    fn ledger(t: &tempfile::TempDir) -> Ledger {
        let root = t.path().join("state");
        Ledger::open(&root, "thp-unit").unwrap()
    }

    #[test]
    fn the_selected_modes_are_read_from_the_kernels_format() {
        let (_t, f) = fake(
            "always [madvise] never",
            "always defer [defer+madvise] madvise never",
        );
        let s = f.read().unwrap().unwrap();
        assert_eq!(s.enabled, ThpMode::Madvise);
        assert_eq!(s.defrag.as_deref(), Some("defer+madvise"));
        let (_t, f) = fake("[always] madvise never", "[always] defer");
        assert_eq!(f.read().unwrap().unwrap().enabled, ThpMode::Always);
    }

    #[test]
    fn a_kernel_without_thp_reads_as_none_and_nothing_is_changed() {
        let t = tempfile::tempdir().unwrap();
        let f = ThpFiles::at(t.path().join("absent"));
        assert_eq!(f.read().unwrap(), None);
        let mut l = ledger(&t);
        assert_eq!(turn_off(&f, &mut l).unwrap(), None);
        assert!(l.entries().unwrap().is_empty());
    }

    #[test]
    fn an_unreadable_enabled_file_is_an_error_naming_it() {
        let (_t, f) = fake("sometimes", "never");
        let e = f.read().unwrap_err().to_string();
        assert!(e.contains("enabled reads `sometimes`"), "{e}");
    }

    #[test]
    fn turning_off_records_the_old_mode_before_writing_never_and_restore_puts_it_back() {
        let (t, f) = fake("[always] madvise never", "[madvise]");
        let mut l = ledger(&t);
        let change = turn_off(&f, &mut l).unwrap().unwrap();
        assert_eq!(change.old, ThpMode::Always);
        assert_eq!(read_mode(&f.enabled_path()).unwrap(), ThpMode::Never);
        let entries = l.entries().unwrap();
        assert_eq!(
            entries[0].resource,
            Resource::Thp {
                file: f.enabled_path(),
                old: ThpMode::Always
            }
        );
        assert!(change_in_place(&change.file, change.old));
        restore(&change.file, change.old).unwrap();
        assert_eq!(read_mode(&f.enabled_path()).unwrap(), ThpMode::Always);
        assert!(!change_in_place(&change.file, change.old));
        // Already never: nothing recorded, nothing written.
        let (t2, f2) = fake("always madvise [never]", "[never]");
        let mut l2 = ledger(&t2);
        assert_eq!(turn_off(&f2, &mut l2).unwrap(), None);
        assert!(l2.entries().unwrap().is_empty());
    }

    #[test]
    fn a_mode_someone_set_after_the_run_is_not_overwritten_by_the_restore() {
        let (t, f) = fake("always [madvise] never", "[madvise]");
        let mut l = ledger(&t);
        let change = turn_off(&f, &mut l).unwrap().unwrap();
        write_mode(&f.enabled_path(), ThpMode::Always).unwrap();
        restore(&change.file, change.old).unwrap();
        assert_eq!(read_mode(&f.enabled_path()).unwrap(), ThpMode::Always);
    }
}
