//! Finding spec files; reading them, regular files only and bounded, is
//! `crate::bounded`'s (templates are read the same way).
//!
//! A spec home is user input. A FIFO named `scenarios/x.yaml` would block
//! a plain `open`, a symlink to `/dev/zero` would be read forever, and a
//! directory or a symlink loop cannot be read at all. Each is refused here
//! with its own message, without blocking and without reading more than a
//! spec can hold, so one bad entry never stalls a command.

use std::path::{Path, PathBuf};

pub use crate::bounded::{MAX_SPEC_BYTES, MAX_TEMPLATE_BYTES, ReadError, read_bounded};

/// The `.yaml` and `.yml` entries of a folder, sorted. Entries of any type
/// are listed: `read_bounded` tells a user what is wrong with each.
pub(crate) fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Spec names that two files claim (`x.yaml` and `x.yml`), with both files.
pub(crate) fn ambiguous(files: &[PathBuf]) -> Vec<(String, Vec<PathBuf>)> {
    let mut by_name: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
    for f in files {
        by_name
            .entry(super::spec_name(f))
            .or_default()
            .push(f.clone());
    }
    by_name.into_iter().filter(|(_, v)| v.len() > 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.yaml");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let start = std::time::Instant::now();
        assert_eq!(read_bounded(&p, 100), Err(ReadError::NotRegular("a FIFO")));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn devices_directories_and_loops_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let zero = t.path().join("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(
            read_bounded(&zero, 100),
            Err(ReadError::NotRegular("a character device"))
        );
        let dir = t.path().join("d.yaml");
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(
            read_bounded(&dir, 100),
            Err(ReadError::NotRegular("a directory"))
        );
        let a = t.path().join("a.yaml");
        let b = t.path().join("b.yaml");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert_eq!(
            read_bounded(&a, 100),
            Err(ReadError::Io("a symlink loop".into()))
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_it_is_read() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.yaml");
        std::fs::write(&p, "a".repeat(101)).unwrap();
        assert_eq!(
            read_bounded(&p, 100),
            Err(ReadError::TooLarge { limit: 100 })
        );
        std::fs::write(&p, "a".repeat(100)).unwrap();
        assert_eq!(read_bounded(&p, 100).unwrap().len(), 100);
    }

    #[test]
    fn two_files_for_one_name_are_ambiguous() {
        let files = [
            PathBuf::from("s/a.yaml"),
            PathBuf::from("s/a.yml"),
            PathBuf::from("s/b.yaml"),
        ];
        let amb = ambiguous(&files);
        assert_eq!(amb.len(), 1);
        assert_eq!(amb[0].0, "a");
    }
}
