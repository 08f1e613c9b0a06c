//! An engine's release tarball: the version its name carries, its layout
//! (one top folder or none, `bin/<binary>` inside), and its entries
//! appended to an image's root filesystem under one install folder. The
//! only importer of `tar` and `flate2`.

use flate2::read::GzDecoder;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// Why a tarball cannot become an image.
#[derive(Debug, thiserror::Error)]
pub enum TarballError {
    #[error(
        "{name}: the file name must read `{engine}-VERSION-linux-x86_64[-FLAVOR].tar.gz` (as `{engine}-2.0.2-linux-x86_64-main.tar.gz`), the version only digits and dots; the image tag is that version"
    )]
    BadName { name: String, engine: String },
    #[error(
        "{path}: the file name says version {from_name} but its folder `{folder}` says {from_folder}; rename the file or use the tarball of {from_name}"
    )]
    VersionMismatch {
        path: PathBuf,
        from_name: String,
        folder: String,
        from_folder: String,
    },
    #[error("{path}: cannot read it as a gzip-compressed tar: {detail}")]
    Unreadable { path: PathBuf, detail: String },
    #[error(
        "{path}: entry `{entry}` {why}; a release tarball holds relative paths, files, folders and links only"
    )]
    BadEntry {
        path: PathBuf,
        entry: String,
        why: &'static str,
    },
    #[error(
        "{path}: no executable {wanted} in it ({found}); is it the server tarball of the release?"
    )]
    NoBinary {
        path: PathBuf,
        wanted: String,
        found: String,
    },
    #[error("reading the base root filesystem {path}: {detail}")]
    Base { path: PathBuf, detail: String },
    #[error("writing the image's root filesystem: {0}")]
    Write(String),
}

/// The version in a release tarball's file name:
/// `tokumx-2.0.2-linux-x86_64-main.tar.gz` gives `2.0.2` for `tokumx`,
/// `mongodb-linux-x86_64-2.6.12.tgz` `2.6.12` for `mongodb`.
pub fn version_from_name(engine: &str, name: &str) -> Result<String, TarballError> {
    match release_of_name(name) {
        Some((product, version)) if product == engine => Ok(version),
        _ => Err(TarballError::BadName {
            name: crate::error::excerpt(name).into_owned(),
            engine: engine.to_string(),
        }),
    }
}

/// The product and the version a release tarball's file name carries, in
/// either vendor's form: `PRODUCT-VERSION-linux-x86_64[-FLAVOR]` (TokuMX:
/// `tokumx-2.0.2-linux-x86_64-main.tar.gz`) or
/// `PRODUCT-linux-x86_64[-DISTRO]-VERSION` (MongoDB:
/// `mongodb-linux-x86_64-2.6.12.tgz`,
/// `mongodb-linux-x86_64-debian12-7.0.37.tgz`), ending in `.tar.gz` or
/// `.tgz`.
pub fn release_of_name(name: &str) -> Option<(String, String)> {
    let stem = name
        .strip_suffix(".tar.gz")
        .or_else(|| name.strip_suffix(".tgz"))?;
    release_of_stem(stem)
}

/// [`release_of_name`] of a name without its suffix (a top folder:
/// `mongodb-linux-x86_64-2.6.12`, `tokumx-2.0.2-linux-x86_64`).
fn release_of_stem(stem: &str) -> Option<(String, String)> {
    const PLATFORM: &str = "-linux-x86_64";
    let at = stem.find(PLATFORM)?;
    let (before, after) = (&stem[..at], &stem[at + PLATFORM.len()..]);
    let words = |s: &str| {
        s.split('-')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric()))
    };
    // PRODUCT-VERSION-linux-x86_64[-FLAVOR]
    if let Some((product, version)) = before.rsplit_once('-')
        && is_version(version)
        && words(product)
        && (after.is_empty() || after.strip_prefix('-').is_some_and(words))
    {
        return Some((product.to_string(), version.to_string()));
    }
    // PRODUCT-linux-x86_64[-DISTRO]-VERSION
    let rest = after.strip_prefix('-')?;
    let (distro, version) = rest.rsplit_once('-').unwrap_or(("", rest));
    (is_version(version) && words(before) && (distro.is_empty() || words(distro)))
        .then(|| (before.to_string(), version.to_string()))
}

/// `2.0.2`, `1.5`: two to four dot-separated numbers.
fn is_version(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    (2..=4).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// What a scan of the tarball found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The folder every entry sits in (`tokumx-2.0.2-linux-x86_64`), or
    /// empty when `bin/` is at the top.
    pub top: PathBuf,
    /// sha256 of the tarball file, hex.
    pub sha256: String,
    pub entries: u64,
    /// Bytes of file content.
    pub bytes: u64,
    /// Folders under the top with shared libraries (`lib64`, `lib`).
    pub lib_dirs: Vec<String>,
}

/// The relative path of an entry, or why it is refused.
fn relative(path: &Path) -> Result<PathBuf, &'static str> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err("climbs out with `..`"),
            Component::RootDir | Component::Prefix(_) => return Err("is an absolute path"),
        }
    }
    Ok(out)
}

/// An entry `raw` of the tarball at `path` refused for `why`.
fn bad_entry(path: &Path, raw: &Path, why: &'static str) -> TarballError {
    TarballError::BadEntry {
        path: path.to_path_buf(),
        entry: crate::error::excerpt(&raw.display().to_string()).into_owned(),
        why,
    }
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// Read the whole tarball at `path` (gzip-compressed) and check that it
/// holds an executable `bin/<binary>`, at its top or in its one top
/// folder, and nothing but relative files, folders and links.
pub fn scan(path: &Path, file: impl Read, binary: &str) -> Result<Layout, TarballError> {
    let unreadable = |e: std::io::Error| TarballError::Unreadable {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let mut hashing = Hashing {
        inner: file,
        hash: Sha256::new(),
    };
    let mut archive = tar::Archive::new(GzDecoder::new(&mut hashing));
    let mut tops = std::collections::BTreeSet::new();
    let mut executables = Vec::new();
    // Every folder named by an entry or holding one.
    let mut dirs = std::collections::BTreeSet::new();
    let (mut entries, mut bytes) = (0u64, 0u64);
    for entry in archive.entries().map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let raw = entry.path().map_err(unreadable)?.into_owned();
        let bad = |why| bad_entry(path, &raw, why);
        let rel = relative(&raw).map_err(bad)?;
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if entry.header().mode().unwrap_or(0) & 0o111 != 0 {
                    executables.push(rel.clone());
                }
                bytes += entry.size();
            }
            tar::EntryType::Directory => {}
            tar::EntryType::Symlink => {}
            tar::EntryType::Link => {
                let target = entry.link_name().map_err(unreadable)?.unwrap_or_default();
                relative(&target).map_err(|_| bad("is a hard link out of the tarball"))?;
            }
            _ => return Err(bad("is a device, FIFO or other special file")),
        }
        if let Some(first) = rel.components().next() {
            tops.insert(PathBuf::from(first.as_os_str()));
        }
        if kind == tar::EntryType::Directory {
            dirs.insert(rel.clone());
        }
        dirs.extend(
            rel.ancestors()
                .skip(1)
                .filter(|a| !a.as_os_str().is_empty())
                .map(Path::to_path_buf),
        );
        entries += 1;
    }
    // Read to the end so that the hash covers the whole file.
    std::io::copy(&mut hashing, &mut std::io::sink()).map_err(unreadable)?;
    let top =
        binary_top(&tops, &dirs, &executables, binary).ok_or_else(|| TarballError::NoBinary {
            path: path.to_path_buf(),
            wanted: format!("bin/{binary} or FOLDER/bin/{binary}"),
            found: describe_executables(&executables),
        })?;
    let lib_dirs = ["lib64", "lib"]
        .iter()
        .filter(|d| dirs.contains(&top.join(d)))
        .map(|d| d.to_string())
        .collect();
    Ok(Layout {
        top,
        sha256: hex::encode(hashing.hash.finalize()),
        entries,
        bytes,
        lib_dirs,
    })
}

/// Where `bin/<binary>` is: the tarball's top (an empty path) or its one
/// top folder.
fn binary_top(
    tops: &std::collections::BTreeSet<PathBuf>,
    dirs: &std::collections::BTreeSet<PathBuf>,
    executables: &[PathBuf],
    binary: &str,
) -> Option<PathBuf> {
    let want = Path::new("bin").join(binary);
    if executables.contains(&want) {
        return Some(PathBuf::new());
    }
    match (tops.len(), tops.iter().next()) {
        (1, Some(t)) if dirs.contains(t) && executables.contains(&t.join(&want)) => Some(t.clone()),
        _ => None,
    }
}

/// The first five executables of a tarball that lacks the binary.
fn describe_executables(executables: &[PathBuf]) -> String {
    if executables.is_empty() {
        return "no executable file at all".to_string();
    }
    let mut names: Vec<String> = executables
        .iter()
        .take(5)
        .map(|p| p.display().to_string())
        .collect();
    if executables.len() > 5 {
        names.push(format!("and {} more", executables.len() - 5));
    }
    format!("executables: {}", names.join(", "))
}

/// The version the top folder names (`tokumx-2.0.2-linux-x86_64` and
/// `mongodb-linux-x86_64-2.6.12` give `2.0.2` and `2.6.12`), when it
/// names one.
pub fn version_of_folder(engine: &str, folder: &Path) -> Option<String> {
    let name = folder.to_str()?;
    if let Some((product, version)) = release_of_stem(name) {
        return (product == engine).then_some(version);
    }
    let rest = name.strip_prefix(engine)?.strip_prefix('-')?;
    let version = rest.split('-').next()?;
    is_version(version).then(|| version.to_string())
}

/// Refuse a tarball whose top folder names another version than its
/// file's name.
pub fn check_folder(
    path: &Path,
    engine: &str,
    from_name: &str,
    layout: &Layout,
) -> Result<(), TarballError> {
    match version_of_folder(engine, &layout.top) {
        Some(from_folder) if from_folder != from_name => Err(TarballError::VersionMismatch {
            path: path.to_path_buf(),
            from_name: from_name.to_string(),
            folder: layout.top.display().to_string(),
            from_folder,
        }),
        _ => Ok(()),
    }
}

/// Unpack the entries under `layout.top` of the gzip-compressed release
/// tarball into `dest` (an empty folder), the top folder left out: files
/// with their modes (no owner, no set-id bits), folders, symlinks as they
/// are, hard links within `dest`. Nothing is written outside `dest`: an
/// entry whose folder is a symlink out of it is refused.
pub fn unpack(
    path: &Path,
    tarball: impl Read,
    layout: &Layout,
    dest: &Path,
) -> Result<(), TarballError> {
    use std::os::unix::fs::PermissionsExt;
    let unreadable = |e: std::io::Error| TarballError::Unreadable {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let write = |e: std::io::Error| TarballError::Write(e.to_string());
    let root = dest.canonicalize().map_err(write)?;
    let mut archive = tar::Archive::new(GzDecoder::new(tarball));
    for entry in archive.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let raw = entry.path().map_err(unreadable)?.into_owned();
        let bad = |why| bad_entry(path, &raw, why);
        let rel = relative(&raw).map_err(bad)?;
        let Ok(inner) = rel.strip_prefix(&layout.top) else {
            continue;
        };
        if inner.as_os_str().is_empty() {
            continue;
        }
        let target = dest.join(inner);
        let parent = target.parent().unwrap_or(dest);
        std::fs::create_dir_all(parent).map_err(write)?;
        if !parent.canonicalize().map_err(write)?.starts_with(&root) {
            return Err(bad("lies under a symlink out of the tarball"));
        }
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&target).map_err(write)?;
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                    .map_err(write)?;
            }
            tar::EntryType::Symlink => {
                let to = entry.link_name().map_err(unreadable)?.unwrap_or_default();
                std::os::unix::fs::symlink(&to, &target).map_err(write)?;
            }
            tar::EntryType::Link => {
                let to = entry.link_name().map_err(unreadable)?.unwrap_or_default();
                let to = relative(&to).map_err(|_| bad("is a hard link out of the tarball"))?;
                let to = to.strip_prefix(&layout.top).unwrap_or(&to);
                std::fs::hard_link(dest.join(to), &target).map_err(write)?;
            }
            _ => {
                entry.set_preserve_mtime(true);
                entry.unpack(&target).map_err(write)?;
                let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))
                    .map_err(write)?;
            }
        }
    }
    Ok(())
}

/// Write one tar stream to `out`: every entry of the base root filesystem
/// (an uncompressed tar), then a folder `dest` and every entry of the
/// gzip-compressed release tarball moved from `layout.top` into `dest`,
/// owned by root. Returns `out` once the stream is complete.
pub fn compose<W: Write>(
    base_path: &Path,
    base: impl Read,
    tarball_path: &Path,
    tarball: impl Read,
    layout: &Layout,
    dest: &Path,
    out: W,
) -> Result<W, TarballError> {
    let write = |e: std::io::Error| TarballError::Write(e.to_string());
    let mut builder = tar::Builder::new(out);
    let base_err = |e: std::io::Error| TarballError::Base {
        path: base_path.to_path_buf(),
        detail: e.to_string(),
    };
    let mut base = tar::Archive::new(base);
    for entry in base.entries().map_err(base_err)? {
        let mut entry = entry.map_err(base_err)?;
        let path = entry.path().map_err(base_err)?.into_owned();
        let rel = relative(&path).map_err(|why| TarballError::Base {
            path: base_path.to_path_buf(),
            detail: format!("entry {} {why}", path.display()),
        })?;
        // The root folder itself: the daemon makes its own.
        if rel.as_os_str().is_empty() {
            continue;
        }
        append(&mut builder, &mut entry, &rel, None).map_err(write)?;
    }
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o755);
    dir.set_size(0);
    dir.set_uid(0);
    dir.set_gid(0);
    dir.set_username("root").map_err(write)?;
    dir.set_groupname("root").map_err(write)?;
    dir.set_mtime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    );
    builder
        .append_data(&mut dir, dest, std::io::empty())
        .map_err(write)?;
    let unreadable = |e: std::io::Error| TarballError::Unreadable {
        path: tarball_path.to_path_buf(),
        detail: e.to_string(),
    };
    let mut archive = tar::Archive::new(GzDecoder::new(tarball));
    for entry in archive.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let path = entry.path().map_err(unreadable)?.into_owned();
        let rel = relative(&path).unwrap_or_default();
        let Ok(inner) = rel.strip_prefix(&layout.top) else {
            continue;
        };
        if inner.as_os_str().is_empty() {
            continue;
        }
        let moved = dest.join(inner);
        append(&mut builder, &mut entry, &moved, Some((&layout.top, dest))).map_err(write)?;
    }
    builder.into_inner().map_err(write)
}

/// Append one entry at `path`; with `owned_by_root`, chown it to root and
/// move a hard link's target from the first folder to the second.
fn append<W: Write, R: Read>(
    builder: &mut tar::Builder<W>,
    entry: &mut tar::Entry<'_, R>,
    path: &Path,
    owned_by_root: Option<(&Path, &Path)>,
) -> std::io::Result<()> {
    let mut header = entry.header().clone();
    if owned_by_root.is_some() {
        header.set_uid(0);
        header.set_gid(0);
        // Old-style headers have no user names; the ids are what counts.
        let _ = header.set_username("root");
        let _ = header.set_groupname("root");
    }
    match header.entry_type() {
        tar::EntryType::Symlink | tar::EntryType::Link => {
            let target = entry.link_name()?.unwrap_or_default().into_owned();
            let target = match owned_by_root {
                Some((from, to)) if header.entry_type() == tar::EntryType::Link => {
                    let rel = relative(&target).unwrap_or_default();
                    to.join(rel.strip_prefix(from).unwrap_or(&rel))
                }
                _ => target,
            };
            header.set_size(0);
            builder.append_link(&mut header, path, target)
        }
        _ => builder.append_data(&mut header, path, entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_comes_from_the_release_file_name() {
        for (name, v) in [
            ("tokumx-2.0.2-linux-x86_64-main.tar.gz", "2.0.2"),
            ("tokumx-1.5.0-linux-x86_64.tar.gz", "1.5.0"),
            ("tokumx-2.0.2-linux-x86_64-enterprise-main.tgz", "2.0.2"),
        ] {
            assert_eq!(version_from_name("tokumx", name).unwrap(), v, "{name}");
        }
        for (name, v) in [
            ("mongodb-linux-x86_64-2.6.12.tgz", "2.6.12"),
            ("mongodb-linux-x86_64-debian12-7.0.37.tgz", "7.0.37"),
            ("mongodb-linux-x86_64-2.2.3.tar.gz", "2.2.3"),
        ] {
            assert_eq!(version_from_name("mongodb", name).unwrap(), v, "{name}");
        }
        assert_eq!(
            version_of_folder("mongodb", Path::new("mongodb-linux-x86_64-2.6.12")).as_deref(),
            Some("2.6.12")
        );
        for bad in [
            "mongodb-linux-x86_64.tgz",
            "mongodb-linux-x86_64-latest.tgz",
            "mongodb-linux-x86_64-debian12-.tgz",
            "mongodb-linux-arm64-2.6.12.tgz",
        ] {
            assert!(version_from_name("mongodb", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_file_name_without_a_clean_version_is_refused_with_the_expected_form() {
        for name in [
            "tokumx.tar.gz",
            "tokumx-latest-linux-x86_64.tar.gz",
            "tokumx-2-linux-x86_64.tar.gz",
            "tokumx-2.0.2;rm-linux-x86_64.tar.gz",
            "tokumx-2.0.2-linux-arm64.tar.gz",
            "tokumx-2.0.2-linux-x86_64-.tar.gz",
            "tokumx-2.0.2-linux-x86_64.zip",
            "mongodb-2.0.2-linux-x86_64.tar.gz",
            "tokumx-2.0.2.1.1-linux-x86_64.tar.gz",
        ] {
            let e = version_from_name("tokumx", name).unwrap_err().to_string();
            assert!(
                e.contains("tokumx-VERSION-linux-x86_64") && e.contains(name),
                "{name}: {e}"
            );
        }
    }

    /// A gzip-compressed tar of `(path, mode, content)` files.
    fn tarball(files: &[(&str, u32, &[u8])]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (path, mode, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_mode(*mode);
            h.set_size(data.len() as u64);
            h.set_uid(1000);
            b.append_data(&mut h, path, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn a_tarball_with_one_top_folder_and_bin_mongod_is_accepted() {
        let t = tarball(&[
            (
                "tokumx-2.0.2-linux-x86_64/bin/mongod",
                0o755,
                b"#!/bin/sh\n",
            ),
            (
                "tokumx-2.0.2-linux-x86_64/lib64/libtokufractaltree.so",
                0o644,
                b"elf",
            ),
            ("tokumx-2.0.2-linux-x86_64/README", 0o644, b"hi"),
        ]);
        let l = scan(Path::new("t.tar.gz"), &t[..], "mongod").unwrap();
        assert_eq!(l.top, PathBuf::from("tokumx-2.0.2-linux-x86_64"));
        assert_eq!((l.entries, l.bytes), (3, 15));
        assert_eq!(l.lib_dirs, vec!["lib64".to_string()]);
        assert_eq!(l.sha256, hex::encode(Sha256::digest(&t)));
        assert_eq!(
            version_of_folder("tokumx", &l.top).as_deref(),
            Some("2.0.2")
        );
    }

    #[test]
    fn a_tarball_without_an_executable_mongod_is_refused_naming_what_it_holds() {
        for files in [
            vec![("x/bin/mongo", 0o755, &b""[..]), ("x/README", 0o644, b"")],
            vec![("x/bin/mongod", 0o644, &b""[..])],
            vec![
                ("a/bin/mongod", 0o755, &b""[..]),
                ("b/bin/mongod", 0o755, b""),
            ],
        ] {
            let e = scan(Path::new("t.tar.gz"), &tarball(&files)[..], "mongod")
                .unwrap_err()
                .to_string();
            assert!(e.contains("no executable bin/mongod"), "{e}");
        }
        let e = scan(Path::new("t.tar.gz"), &b"not gzip"[..], "mongod")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.tar.gz: cannot read it"), "{e}");
    }

    /// A release tarball of `top/bin/mongod` (a script) and `top/file`.
    fn with_mongod(top: &str, file: &str, body: &[u8]) -> Vec<u8> {
        let (mongod, other) = (format!("{top}/bin/mongod"), format!("{top}/{file}"));
        tarball(&[(&mongod, 0o755, b"#!/bin/sh\n"), (&other, 0o644, body)])
    }

    /// A gzip-compressed tar of an executable `x/bin/mongod`, then what
    /// `more` appends.
    fn mongod_and(more: impl FnOnce(&mut tar::Builder<&mut Vec<u8>>)) -> Vec<u8> {
        let mut raw = Vec::new();
        {
            let mut b = tar::Builder::new(&mut raw);
            let mut h = tar::Header::new_gnu();
            h.set_size(0);
            h.set_mode(0o755);
            b.append_data(&mut h, "x/bin/mongod", &b""[..]).unwrap();
            more(&mut b);
            b.finish().unwrap();
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&raw).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn entries_that_climb_out_or_are_special_files_are_refused() {
        let t = mongod_and(|b| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Fifo);
            h.set_size(0);
            b.append_data(&mut h, "x/fifo", &b""[..]).unwrap();
        });
        let e = scan(Path::new("t.tar.gz"), &t[..], "mongod")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`x/fifo` is a device, FIFO"), "{e}");
    }

    #[test]
    fn unpack_leaves_the_top_folder_out_and_writes_nothing_outside_its_folder() {
        let t = with_mongod("mongodb-linux-x86_64-2.6.12", "README", b"hi");
        let layout = scan(Path::new("t.tgz"), &t[..], "mongod").unwrap();
        let dest = tempfile::tempdir().unwrap();
        unpack(Path::new("t.tgz"), &t[..], &layout, dest.path()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dest.path().join("bin/mongod"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(std::fs::read(dest.path().join("README")).unwrap(), b"hi");

        // A folder that is a symlink out, and an entry under it.
        let outside = tempfile::tempdir().unwrap();
        let t = mongod_and(|b| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            b.append_link(&mut h, "x/out", outside.path()).unwrap();
            let mut h = tar::Header::new_gnu();
            h.set_size(2);
            h.set_mode(0o644);
            b.append_data(&mut h, "x/out/f", &b"no"[..]).unwrap();
        });
        let layout = scan(Path::new("t.tgz"), &t[..], "mongod").unwrap();
        let dest = tempfile::tempdir().unwrap();
        let e = unpack(Path::new("t.tgz"), &t[..], &layout, dest.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`x/out/f` lies under a symlink out of the tarball"),
            "{e}"
        );
        assert!(!outside.path().join("f").exists());
    }

    /// A header as GNU tar writes it for a root-owned file.
    fn header() -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(1);
        h
    }

    #[test]
    fn the_image_stream_holds_the_base_then_the_release_under_its_folder_owned_by_root() {
        let mut base = Vec::new();
        {
            let mut b = tar::Builder::new(&mut base);
            let mut h = header();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            b.append_data(&mut h, "./", std::io::empty()).unwrap();
            let long = format!("./usr/share/{}/file", "d".repeat(120));
            let mut h = header();
            h.set_mode(0o644);
            h.set_size(3);
            b.append_data(&mut h, &long, &b"abc"[..]).unwrap();
            let mut h = header();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            b.append_link(&mut h, "./bin", "usr/bin").unwrap();
            b.finish().unwrap();
        }
        let release = with_mongod("tokumx-2.0.2-linux-x86_64", "lib64/libx.so", b"so");
        let layout = scan(Path::new("r.tar.gz"), &release[..], "mongod").unwrap();
        let out = compose(
            Path::new("base.tar"),
            &base[..],
            Path::new("r.tar.gz"),
            &release[..],
            &layout,
            Path::new("opt/tokumx"),
            Vec::new(),
        )
        .unwrap();
        let mut seen = Vec::new();
        let mut archive = tar::Archive::new(&out[..]);
        for e in archive.entries().unwrap() {
            let mut e = e.unwrap();
            let p = e.path().unwrap().display().to_string();
            let (uid, mode) = (e.header().uid().unwrap(), e.header().mode().unwrap());
            let link = e
                .link_name()
                .unwrap()
                .map(|l| l.display().to_string())
                .unwrap_or_default();
            let mut body = String::new();
            e.read_to_string(&mut body).unwrap();
            seen.push(format!("{p} {uid} {mode:o} {link}{body}"));
        }
        let long = format!("usr/share/{}/file 0 644 abc", "d".repeat(120));
        assert_eq!(
            seen,
            vec![
                long.as_str(),
                "bin 0 777 usr/bin",
                "opt/tokumx 0 755 ",
                "opt/tokumx/bin/mongod 0 755 #!/bin/sh\n",
                "opt/tokumx/lib64/libx.so 0 644 so",
            ]
        );
    }
}
