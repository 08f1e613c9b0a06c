//! What runs a cell's engine: a local binary (cgroup backend) or an image
//! (docker backend), and the user it runs as.

use super::Entry;
use crate::model::{Backend, Program};
use crate::spec::Scenario;
use crate::spec::diag::Diagnostic;
use std::path::PathBuf;

/// Resolve a binary: a path must exist; a bare name is looked up on PATH.
pub fn resolve_binary(b: &str) -> Option<PathBuf> {
    if b.contains('/') {
        let p = PathBuf::from(b);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(b))
            .find(|p| p.is_file())
    })
}

/// Why a version's binary cannot run on this host.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostBinaryError {
    #[error(
        "{label} has no host binary, only {image}; its config can only be checked where the engine runs"
    )]
    NoBinary { label: String, image: String },
    #[error("{label} is not fetched yet; run `benchcage fetch {label}` first")]
    NotFetched { label: String },
    #[error(
        "{label} is not imported yet; import the release tarball you have: `benchcage fetch {label} --tarball {file}`"
    )]
    NotImported { label: String, file: String },
    #[error("{label}: binary `{binary}` is not installed on this host; install it ({how})")]
    NotInstalled {
        label: String,
        binary: String,
        how: String,
    },
}

/// The host binary of `engine@version`, whatever backend an environment
/// names: a fetched version's from the cache (when fetched), else the
/// `binary:` on this host.
pub fn host_binary(
    engine: &crate::spec::Engine,
    version: &str,
    ev: &crate::spec::engine::EngineVersion,
) -> Result<PathBuf, HostBinaryError> {
    let label = format!("{}@{version}", engine.name);
    let Some(b) = &ev.binary else {
        return Err(HostBinaryError::NoBinary {
            label,
            image: ev
                .image
                .as_deref()
                .map_or("an image".into(), |i| format!("the image {i}")),
        });
    };
    match &ev.source {
        Some(source) if source.cached() => {
            let root = crate::fetch::cache::root();
            crate::fetch::cache::installed(&root, &engine.name, version, source)
                .map(|i| i.dir.join(b))
                .filter(|p| p.is_file())
                .ok_or(match source {
                    crate::model::Source::Tarball { file, .. } => HostBinaryError::NotImported {
                        label,
                        file: file.clone(),
                    },
                    _ => HostBinaryError::NotFetched { label },
                })
        }
        source => resolve_binary(b).ok_or_else(|| HostBinaryError::NotInstalled {
            label,
            binary: b.clone(),
            how: match source {
                Some(crate::model::Source::Debian { package }) => {
                    format!("`apt-get install {package}`, or make deps")
                }
                _ => "make deps".into(),
            },
        }),
    }
}

/// Why an entry has no program on this host.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Unresolved {
    /// Its binary is not installed here: a cell of it cannot start, but a
    /// spec that names it is sound (`validate` warns, `run` refuses).
    NotInstalled {
        binary: PathBuf,
        diag: Box<Diagnostic>,
    },
    /// Anything else: the spec and the backend do not go together.
    Refused(Box<Diagnostic>),
}

impl From<Diagnostic> for Unresolved {
    fn from(d: Diagnostic) -> Self {
        Unresolved::Refused(Box::new(d))
    }
}

/// The program for the entry's backend. Without host checks (`render`),
/// whatever the version names stands in, so a config shows whatever the
/// backend can run.
pub(super) fn resolve(e: &Entry, s: &Scenario, host_checks: bool) -> Result<Program, Unresolved> {
    let ev = e.ev;
    match e.ep.env.backend {
        Backend::Cgroup if !host_checks && ev.binary.is_none() => {
            Ok(Program::Image(ev.image.clone().unwrap_or_default()))
        }
        Backend::Docker if !host_checks && ev.image.is_none() => Ok(Program::Binary(
            PathBuf::from(ev.binary.clone().unwrap_or_default()),
        )),
        Backend::Cgroup => local_binary(e, s, host_checks),
        Backend::Docker => match &ev.image {
            Some(i) => Ok(Program::Image(i.clone())),
            None => Err(e
                .ep
                .diag(
                    s,
                    "backend",
                    format!("{} has no image for the docker backend", e.label),
                    Some("use the cgroup backend (--set backend=cgroup) or add `image:` to the engine version".into()),
                )
                .into()),
        },
    }
}

/// The version's `binary:`, installed on this host.
fn local_binary(e: &Entry, s: &Scenario, host_checks: bool) -> Result<Program, Unresolved> {
    let (ev, label) = (e.ev, &e.label);
    let Some(b) = &ev.binary else {
        return Err(Unresolved::from(e.ep.diag(
            s,
            "backend",
            format!("{label} has no local binary for the cgroup backend"),
            Some(match &ev.image {
                Some(i) => format!(
                    "run it in docker (image {i}): set `backend: docker` or --set backend=docker"
                ),
                None => "add `binary:` to the engine version".into(),
            }),
        )));
    };
    if let Some(source) = ev.source.as_ref().filter(|s| s.cached()) {
        // Where the cache has it, or will once fetched (`plan` lists what a
        // run must fetch first); a tarball nobody downloads must be
        // imported before a plan takes it.
        let root = crate::fetch::cache::root();
        let dir = crate::fetch::cache::dir_of(&root, &e.engine.name, e.version);
        if let crate::model::Source::Tarball { file, .. } = source
            && host_checks
            && crate::fetch::cache::usable(&root, &e.engine.name, e.version, source, Some(b))
                .is_none()
        {
            return Err(not_imported(e, file, &root));
        }
        return Ok(Program::Binary(dir.join(b)));
    }
    match resolve_binary(b) {
        Some(p) => Ok(Program::Binary(p)),
        None if !host_checks => Ok(Program::Binary(PathBuf::from(b))),
        None => Err(Unresolved::NotInstalled {
            binary: PathBuf::from(b),
            diag: Box::new(e.engine.origin.diag(
                &format!("versions.{}.binary", e.version),
                format!("{label}: binary `{b}` is not installed on this host"),
                Some(match &ev.image {
                    Some(i) => {
                        format!(
                            "install it (make deps), or run the image {i} with --set backend=docker"
                        )
                    }
                    None => "install it (make deps)".into(),
                }),
            )),
        }),
    }
}

/// A tarball version whose release the cache does not hold: the command
/// that imports it, and the image that runs it meanwhile.
fn not_imported(e: &Entry, file: &str, root: &std::path::Path) -> Unresolved {
    let label = &e.label;
    let docker = match &e.ev.image {
        Some(i) => format!(", or run the image {i} with --set backend=docker"),
        None => String::new(),
    };
    Unresolved::NotInstalled {
        binary: PathBuf::from(e.ev.binary.clone().unwrap_or_default()),
        diag: Box::new(e.engine.origin.diag(
            &format!("versions.{}.source", e.version),
            format!(
                "{label} runs on the cgroup backend from its release tarball, which is not imported into the cache ({}); benchcage downloads no tarball",
                root.display()
            ),
            Some(format!(
                "import the file you have: `benchcage fetch {label} --tarball {file}`{docker}"
            )),
        )),
    }
}

/// The binary inside the image (docker backend) for `{binary}`.
pub(super) fn image_binary(e: &Entry) -> String {
    e.ev.image_binary
        .clone()
        .or_else(|| e.ev.binary.clone())
        .unwrap_or_else(|| e.engine.name.clone())
}

/// The user the engine and its `init` commands run as. The cgroup backend
/// runs the engine as a host user, who must exist; a container's users
/// live in its image.
pub(super) fn user(e: &Entry) -> Result<String, Diagnostic> {
    let user = e
        .engine
        .user
        .clone()
        .unwrap_or_else(|| crate::spec::engine::DEFAULT_USER.into());
    if e.ep.env.backend == Backend::Cgroup
        && let Err(err) = crate::sandbox::process::lookup_user(&user)
    {
        return Err(e.engine.origin.diag(
            "user",
            format!("{}: {err}", e.label),
            Some(format!(
                "create it (`useradd --system {user}`), name an existing user, or `user: root`"
            )),
        ));
    }
    Ok(user)
}
