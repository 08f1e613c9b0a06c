//! A vendor's release tarball imported into the cache (`benchcage fetch
//! ENGINE@VERSION --tarball FILE`), for versions nobody can download from
//! here (MongoDB 2.x, TokuMX): the user has the file; benchcage checks it
//! and never downloads one.
//!
//! The file's name must carry the product and release the engine spec pins
//! (`mongodb-linux-x86_64-2.6.12.tgz` for `mongodb@2.6`), its top folder
//! the same release, and it must hold only relative files, folders and
//! links with an executable `bin/<binary>` (`images::tarball` scans it).
//! Unpacked into a partial folder of the cache, its `bin/<binary>
//! --version` must print the release (`db version v2.6.12`; TokuMX's
//! mongod prints `TokuMX mongod server v2.0.2-mongodb-2.4.10, using TokuKV
//! rev ...`, the version line its source's `mongodVersion()` writes). Any
//! refusal leaves nothing in the cache. The record keeps the file's sha256
//! and the release the binary printed.

use super::{FetchError, Fetched, Source, cache, io_err};
use crate::images::tarball as release;
use std::path::Path;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// The server's name in `bin/` of a release tarball: `bin/mongod` gives
/// `mongod`.
pub fn server_name(binary: &str) -> Option<&str> {
    binary
        .strip_prefix("bin/")
        .filter(|n| !n.is_empty() && !n.contains('/') && *n != "..")
}

/// What `--version` of a release printed as its release, from the line
/// that `line` starts (`db version`): `db version v2.6.12` gives `2.6.12`.
pub fn reported_release(output: &str, line: &str) -> Option<String> {
    output.lines().find_map(|l| {
        let at = l.find(line)?;
        let rest = l[at + line.len()..].trim_start_matches([':', ' ', '\t']);
        let rest = rest.strip_prefix('v').unwrap_or(rest);
        let v: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != ',')
            .collect();
        (!v.is_empty()).then_some(v)
    })
}

/// Whether a reported release is `release`: the same, or it with a
/// vendor's suffix (`2.0.2-mongodb-2.4.10` is TokuMX 2.0.2, `3.2.22-3.12`
/// Percona's 3.2.22).
pub fn same_release(reported: &str, release: &str) -> bool {
    reported
        .strip_prefix(release)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

/// The product of the release the spec pins (`pinned`, release `want`),
/// when the file's `name` reads as that same release; else why not.
fn name_of_release(name: &str, pinned: &str, want: &str, what: &str) -> Result<String, String> {
    let product = release::release_of_name(pinned)
        .map(|(p, _)| p)
        .unwrap_or_default();
    match release::release_of_name(name) {
        None => Err(
            "its name does not read as a release tarball's (PRODUCT-VERSION-linux-x86_64[-FLAVOR].tar.gz or PRODUCT-linux-x86_64[-DISTRO]-VERSION.tgz)".into(),
        ),
        Some((p, v)) if p != product || v != want => Err(format!(
            "its name says {p} {v}, and {what} is {product} {want}"
        )),
        Some(_) => Ok(product),
    }
}

/// The release `binary --version` printed (its `version_line`), when it
/// is `want`; else why the tarball is not that release.
fn release_printed(
    printed: &str,
    version_line: &str,
    want: &str,
    binary: &str,
) -> Result<String, String> {
    match reported_release(printed, version_line) {
        Some(got) if same_release(&got, want) => Ok(got),
        Some(got) => Err(format!(
            "its {binary} --version says it is {got}, not {want}; nothing was imported"
        )),
        None => Err(format!(
            "its {binary} --version printed no `{version_line}` line ({}); nothing was imported",
            crate::error::excerpt(printed.trim())
        )),
    }
}

/// Import `file` as `engine@version` from its tarball `source` into the
/// cache under `root`: `binary` is the version's `bin/NAME`. A file already
/// imported (the same sha256, every file whole) is left as it is; another
/// one replaces it.
pub fn import(
    root: &Path,
    engine: &str,
    version: &str,
    source: &Source,
    binary: &str,
    file: &Path,
    stop: &CancellationToken,
) -> Result<Fetched, FetchError> {
    let Source::Tarball {
        file: pinned,
        release: want,
        version_line,
    } = source
    else {
        unreachable!("import takes a tarball source")
    };
    let what = format!("{engine}@{version}");
    let root = &std::path::absolute(root).map_err(io_err(&what, root))?;
    let bad = |detail: String| FetchError::BadTarball {
        what: what.clone(),
        path: file.to_path_buf(),
        detail,
        hint: format!(
            "give the server tarball of release {want} ({pinned}), as its vendor published it"
        ),
    };
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let product = name_of_release(name, pinned, want, &what).map_err(bad)?;
    let server = server_name(binary).unwrap_or("mongod");
    let released = |err| FetchError::Release {
        what: what.clone(),
        err,
    };
    let open = || {
        std::fs::File::open(file)
            .map(std::io::BufReader::new)
            .map_err(io_err(&what, file))
    };
    let layout = release::scan(file, open()?, server).map_err(released)?;
    release::check_folder(file, &product, want, &layout).map_err(released)?;
    let checksum = format!("sha256-{}", layout.sha256);
    if let Some(i) = cache::recorded(root, engine, version, source) {
        if i.record.checksum == checksum && cache::verify_sums(&i, Some(binary)).is_ok() {
            return Ok(Fetched {
                install: i,
                seconds: 0.0,
                from_cache: true,
                repaired: None,
            });
        }
        cache::discard(root, engine, version)?;
    }
    let started = Instant::now();
    let bytes = std::fs::metadata(file).map_err(io_err(&what, file))?.len();
    let install = cache::install(root, engine, version, source, |staging, _| {
        release::unpack(file, open()?, &layout, staging).map_err(released)?;
        let program = staging.join(binary);
        let (out, err) = super::run_program(
            &what,
            &program,
            &["--version"],
            staging,
            stop,
            || bad(format!("{binary} is not in it once unpacked")),
        )
        .map_err(|e| match e {
            FetchError::ToolFailed { detail, .. } => bad(format!(
                "its {binary} --version failed ({detail}); is it the build for this system (x86_64 Linux)?"
            )),
            other => other,
        })?;
        let printed = format!("{out}{err}");
        let got = release_printed(&printed, version_line, want, binary).map_err(bad)?;
        Ok(cache::Filled {
            checksum: checksum.clone(),
            bytes,
            reported_version: Some(got),
        })
    })?;
    Ok(Fetched {
        install,
        seconds: started.elapsed().as_secs_f64(),
        from_cache: false,
        repaired: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_read_from_each_vendors_version_line() {
        let mongodb = "db version v2.6.12\n2016-09-22T12:00:00.000+0000 git version: d73c92b1c85703828b55c2916a5dd4ad46535f6a\n";
        assert_eq!(
            reported_release(mongodb, "db version").as_deref(),
            Some("2.6.12")
        );
        let tokumx = "TokuMX mongod server v2.0.2-mongodb-2.4.10, using TokuKV rev 1d6ad5d\n";
        let got = reported_release(tokumx, "TokuMX mongod server").unwrap();
        assert_eq!(got, "2.0.2-mongodb-2.4.10");
        assert!(same_release(&got, "2.0.2"));
        assert!(same_release("3.2.22-3.12", "3.2.22"));
        assert!(same_release("2.6.12", "2.6.12"));
        for (got, want) in [
            ("2.6.11", "2.6.12"),
            ("2.6.120", "2.6.12"),
            ("2.4.10", "2.0.2"),
        ] {
            assert!(!same_release(got, want), "{got} {want}");
        }
        assert_eq!(
            reported_release("mongod: no such option\n", "db version"),
            None
        );
    }
}
