//! Where the site goes: the target checked before anything is written,
//! relative links from the site to the results folder, and the pages
//! written into a folder beside the target that then takes its place in
//! one rename (an exchange when an earlier site is there), so a failed
//! build leaves the earlier site whole and no half-written one.

use super::SiteError;
use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
use std::path::{Component, Path, PathBuf};

/// The file that marks a folder as a site `benchcage site` wrote, and so
/// one it may replace.
pub const MARKER: &str = ".benchcage-site";

/// Refuse a target that is a file, or a folder with something in it that
/// no earlier build wrote.
pub(super) fn check_target(out: &Path) -> Result<(), SiteError> {
    let Ok(meta) = std::fs::symlink_metadata(out) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return Err(SiteError::OutIsFile {
            path: out.to_path_buf(),
        });
    }
    let empty = std::fs::read_dir(out)
        .map_err(|source| SiteError::Write {
            path: out.to_path_buf(),
            source,
        })?
        .next()
        .is_none();
    if empty || out.join(MARKER).is_file() {
        Ok(())
    } else {
        Err(SiteError::NotASite {
            path: out.to_path_buf(),
        })
    }
}

/// The path from the folder `out` (which may not exist yet) to `to`,
/// `../..`-style, both taken as absolute with symlinks of their existing
/// parts resolved.
pub(super) fn relative_to(out: &Path, to: &Path) -> std::io::Result<PathBuf> {
    let from = resolved(out)?;
    let to = resolved(to)?;
    let (f, t): (Vec<Component>, Vec<Component>) =
        (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..f.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c.as_os_str());
    }
    Ok(rel)
}

/// `p` absolute, its longest existing ancestor canonicalized.
fn resolved(p: &Path) -> std::io::Result<PathBuf> {
    let abs = std::path::absolute(p)?;
    let mut tail = Vec::new();
    let mut head = abs.as_path();
    loop {
        if let Ok(c) = head.canonicalize() {
            let mut out = c;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return Ok(out);
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_os_string());
                head = parent;
            }
            _ => return Ok(abs),
        }
    }
}

/// A relative path as an `href`: `/`-separated, every byte outside
/// letters, digits and `-._~` percent-encoded.
pub(super) fn href(p: &Path) -> String {
    let mut out = String::new();
    for (i, c) in p.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        for b in c.as_os_str().as_encoded_bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(*b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// Write `files` (name, content) and the marker into a new folder beside
/// `out`, then put it in `out`'s place.
pub(super) fn write(out: &Path, files: &[(String, String)]) -> Result<(), SiteError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SiteError::Write { path, source }
    };
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(err(&parent))?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "site".into());
    // Removed on every early return: nothing half-written stays.
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.building-"))
        .tempdir_in(&parent)
        .map_err(err(&parent))?;
    for (file, html) in files {
        let path = staging.path().join(file);
        std::fs::write(&path, html).map_err(err(&path))?;
    }
    let marker = staging.path().join(MARKER);
    std::fs::write(
        &marker,
        "written by `benchcage site`; the next build replaces this folder whole\n",
    )
    .map_err(err(&marker))?;
    if std::fs::symlink_metadata(out).is_ok() {
        // Swap the new site and the old one in one step; the old one is
        // then in the staging folder, which goes when `staging` drops.
        renameat2(
            AT_FDCWD,
            staging.path(),
            AT_FDCWD,
            out,
            RenameFlags::RENAME_EXCHANGE,
        )
        .map_err(|e| SiteError::Write {
            path: out.to_path_buf(),
            source: e.into(),
        })?;
    } else {
        let dir = staging.keep();
        std::fs::rename(&dir, out).map_err(|source| {
            let _ = std::fs::remove_dir_all(&dir);
            SiteError::Write {
                path: out.to_path_buf(),
                source,
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_path_climbs_to_the_common_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let results = tmp.path().join("results");
        std::fs::create_dir(&results).unwrap();
        assert_eq!(
            relative_to(&tmp.path().join("www/site"), &results).unwrap(),
            PathBuf::from("../../results")
        );
        assert_eq!(
            relative_to(&results.join("site"), &results).unwrap(),
            PathBuf::from("..")
        );
    }

    #[test]
    fn hrefs_encode_what_a_url_path_cannot_hold() {
        assert_eq!(
            href(Path::new("../res ults/r#1/report.html")),
            "../res%20ults/r%231/report.html"
        );
    }
}
