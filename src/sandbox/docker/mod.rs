//! The Docker backend: engines in containers with the same limits as the
//! cgroup backend, read back from the container's own cgroup with the same
//! reader. `client` is the only importer of bollard; `sandbox` implements
//! the [`crate::sandbox::Sandbox`] trait; `reap` serves `cleanup` and
//! `doctor`.

pub mod cgroups;
pub mod client;
pub mod image;
pub mod reap;
pub mod sandbox;
pub mod spec;

pub use client::{DaemonInfo, DockerError};
pub use reap::{ReapOutcome, daemon_report, reap_dead_runs, remove_containers};
pub use sandbox::DockerSandbox;

use std::path::PathBuf;

/// What can go wrong in the Docker backend beyond a single API call.
#[derive(Debug, thiserror::Error)]
pub enum DockerBackendError {
    #[error(transparent)]
    Api(#[from] DockerError),
    #[error("image {image} is not on this machine ({why}); {hint}")]
    ImageMissing {
        image: String,
        why: String,
        hint: String,
    },
    #[error(
        "image {image} is not on this machine and pulling it from registry {registry} failed: {cause}; check that {registry} is up and serves it, or put the image on this machine (`docker load`)"
    )]
    PullFailed {
        image: String,
        registry: String,
        cause: String,
    },
    #[error(
        "container {name} was removed while the run used it (someone ran `docker rm`?); the cell is invalid"
    )]
    ContainerGone { name: String },
    #[error(
        "cannot bind-mount {path}: Docker needs a path without `:` or `,`; move the data dir or config file"
    )]
    BadMount { path: PathBuf },
    #[error("the {role} container has an empty argv")]
    EmptyArgv { role: String },
    #[error(
        "the docker backend runs images, but {engine}@{version} names a local binary {program}; give that engine version an `image:` or use the cgroup backend"
    )]
    NotAnImage {
        engine: String,
        version: String,
        program: PathBuf,
    },
    #[error("cgroup of container {id} not found at {tried}")]
    CgroupNotFound { id: String, tried: PathBuf },
    #[error("no /dev node for block device {dev} (holding {path}); IO limits need it")]
    NoDeviceNode { dev: String, path: PathBuf },
    #[error("the docker sandbox is not provisioned yet; call provision first")]
    NotProvisioned,
}
