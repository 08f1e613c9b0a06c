//! The only file that imports bollard: one wrapper per Docker Engine API call,
//! each with its own error variant and its own time bound. Everything that
//! leaves this file is a benchcage type.

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::errors::Error as BollardError;
use bollard::models::{
    ContainerCreateBody, HostConfig, RestartPolicy, RestartPolicyNameEnum, ThrottleDevice,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, InspectContainerOptions,
    KillContainerOptionsBuilder, ListContainersOptionsBuilder, ListVolumesOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, RemoveVolumeOptionsBuilder,
    StartContainerOptions, StopContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures::{Stream, StreamExt};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

/// Why one Docker call failed, without bollard's types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The daemon answered with an HTTP error status.
    Status { code: u16, message: String },
    /// The call did not finish within its bound.
    TimedOut(Duration),
    /// The socket could not be reached or the connection broke.
    Transport(String),
}

impl Cause {
    /// The HTTP status the daemon answered with, if it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Cause::Status { code, .. } => Some(*code),
            _ => None,
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::Status { code, message } => write!(f, "daemon answered {code}: {message}"),
            Cause::TimedOut(d) => write!(f, "no answer within {}s", d.as_secs_f64()),
            Cause::Transport(m) => write!(f, "{m}"),
        }
    }
}

fn cause(err: BollardError) -> Cause {
    match err {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => Cause::Status {
            code: status_code,
            message,
        },
        BollardError::RequestTimeoutError => Cause::TimedOut(Duration::ZERO),
        other => Cause::Transport(other.to_string()),
    }
}

/// One variant per Docker call; each names what it was acting on.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error(
        "cannot reach the Docker daemon at {host}: {cause}; start it with `bash scripts/dockerd.sh` or set DOCKER_HOST"
    )]
    Connect { host: String, cause: Cause },
    #[error("docker version at {host}: {cause}")]
    Version { host: String, cause: Cause },
    #[error("docker info: {cause}")]
    Info { cause: Cause },
    #[error("docker image inspect {image}: {cause}")]
    InspectImage { image: String, cause: Cause },
    #[error("docker pull {image}: {cause}")]
    Pull { image: String, cause: Cause },
    #[error("docker import {image}: {cause}")]
    Import { image: String, cause: Cause },
    #[error("docker rmi {image}: {cause}")]
    RemoveImage { image: String, cause: Cause },
    #[error("docker create {name}: {cause}")]
    CreateContainer { name: String, cause: Cause },
    #[error("docker create {name} returned warnings (treated as errors): {}", warnings.join("; "))]
    CreateWarnings {
        name: String,
        id: String,
        warnings: Vec<String>,
    },
    #[error("docker start {id}: {cause}")]
    StartContainer { id: String, cause: Cause },
    #[error("docker inspect {id}: {cause}")]
    InspectContainer { id: String, cause: Cause },
    #[error("docker stop {id}: {cause}")]
    StopContainer { id: String, cause: Cause },
    #[error("docker kill {id}: {cause}")]
    KillContainer { id: String, cause: Cause },
    #[error("docker rm -f -v {id}: {cause}")]
    RemoveContainer { id: String, cause: Cause },
    #[error("docker wait {id}: {cause}")]
    WaitContainer { id: String, cause: Cause },
    #[error("docker logs {id}: {cause}")]
    Logs { id: String, cause: Cause },
    #[error("docker ps --filter {filter}: {cause}")]
    ListContainers { filter: String, cause: Cause },
    #[error("docker volume ls --filter {filter}: {cause}")]
    ListVolumes { filter: String, cause: Cause },
    #[error("docker volume rm {name}: {cause}")]
    RemoveVolume { name: String, cause: Cause },
}

impl DockerError {
    /// The failed call's cause, when there is one.
    pub fn cause(&self) -> Option<&Cause> {
        use DockerError::*;
        match self {
            Connect { cause, .. }
            | Version { cause, .. }
            | Info { cause }
            | InspectImage { cause, .. }
            | Pull { cause, .. }
            | Import { cause, .. }
            | RemoveImage { cause, .. }
            | CreateContainer { cause, .. }
            | StartContainer { cause, .. }
            | InspectContainer { cause, .. }
            | StopContainer { cause, .. }
            | KillContainer { cause, .. }
            | RemoveContainer { cause, .. }
            | WaitContainer { cause, .. }
            | Logs { cause, .. }
            | ListContainers { cause, .. }
            | ListVolumes { cause, .. }
            | RemoveVolume { cause, .. } => Some(cause),
            CreateWarnings { .. } => None,
        }
    }

    /// The daemon said the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.cause().and_then(Cause::status) == Some(404)
    }

    /// The daemon said the object is busy (removal already in progress).
    pub fn is_conflict(&self) -> bool {
        self.cause().and_then(Cause::status) == Some(409)
    }

    /// The daemon could not be reached or did not answer in time.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self.cause(),
            Some(Cause::Transport(_)) | Some(Cause::TimedOut(_))
        )
    }
}

/// Bounds for the calls that must not hang a run or its teardown.
const SHORT_CALL: Duration = Duration::from_secs(15);

async fn bounded<T>(
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, BollardError>>,
) -> Result<T, Cause> {
    match tokio::time::timeout(limit, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(BollardError::RequestTimeoutError)) | Err(_) => Err(Cause::TimedOut(limit)),
        Ok(Err(e)) => Err(cause(e)),
    }
}

/// Daemon facts `doctor` and the stats reader need.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DaemonInfo {
    pub host: String,
    pub server_version: String,
    pub api_version: String,
    /// `cgroupfs` or `systemd`.
    pub cgroup_driver: String,
    /// `1` or `2`.
    pub cgroup_version: String,
}

/// A bind mount into the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    pub host: PathBuf,
    pub container: PathBuf,
    pub read_only: bool,
}

/// A throttle on one block device (`/dev/...` path as the daemon sees it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRate {
    pub device: PathBuf,
    pub rate: u64,
}

/// Blkio throttles of a container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blkio {
    pub read_bps: Vec<DeviceRate>,
    pub write_bps: Vec<DeviceRate>,
    pub read_iops: Vec<DeviceRate>,
    pub write_iops: Vec<DeviceRate>,
}

/// Everything a benchcage container is created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    /// The engine's argv; argv[0] becomes the entrypoint so the engine is PID 1.
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub user: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub cpuset_cpus: String,
    pub cpuset_mems: String,
    pub memory: i64,
    /// Memory plus swap; equal to `memory` for no swap.
    pub memory_swap: i64,
    pub pids_limit: i64,
    pub blkio: Blkio,
    pub binds: Vec<Bind>,
    /// Working directory of the engine (its data dir, as on the cgroup backend).
    pub working_dir: Option<PathBuf>,
    /// Docker's network mode: `host` (the host's namespace), `none` (a
    /// namespace of its own with only a loopback) or `container:<name>`
    /// (that container's namespace).
    pub network_mode: String,
}

fn throttles(rates: &[DeviceRate]) -> Option<Vec<ThrottleDevice>> {
    (!rates.is_empty()).then(|| {
        rates
            .iter()
            .map(|r| ThrottleDevice {
                path: Some(r.device.display().to_string()),
                rate: Some(r.rate as i64),
            })
            .collect()
    })
}

impl ContainerSpec {
    fn body(&self) -> ContainerCreateBody {
        let binds = self
            .binds
            .iter()
            .map(|b| {
                let mode = if b.read_only { "ro" } else { "rw" };
                format!("{}:{}:{mode}", b.host.display(), b.container.display())
            })
            .collect();
        let host_config = HostConfig {
            network_mode: Some(self.network_mode.clone()),
            cpuset_cpus: Some(self.cpuset_cpus.clone()),
            cpuset_mems: Some(self.cpuset_mems.clone()),
            memory: Some(self.memory),
            memory_swap: Some(self.memory_swap),
            pids_limit: Some(self.pids_limit),
            blkio_device_read_bps: throttles(&self.blkio.read_bps),
            blkio_device_write_bps: throttles(&self.blkio.write_bps),
            blkio_device_read_iops: throttles(&self.blkio.read_iops),
            blkio_device_write_iops: throttles(&self.blkio.write_iops),
            binds: Some(binds),
            restart_policy: Some(RestartPolicy {
                name: Some(RestartPolicyNameEnum::NO),
                maximum_retry_count: None,
            }),
            // AutoRemove would lose the exit code and the cgroup counters.
            auto_remove: Some(false),
            // No docker-init: the engine itself is PID 1.
            init: Some(false),
            ..Default::default()
        };
        ContainerCreateBody {
            image: Some(self.image.clone()),
            entrypoint: Some(self.argv[..1.min(self.argv.len())].to_vec()),
            cmd: Some(self.argv.iter().skip(1).cloned().collect()),
            env: Some(self.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            user: self.user.clone(),
            working_dir: self.working_dir.as_ref().map(|d| d.display().to_string()),
            labels: Some(self.labels.clone().into_iter().collect()),
            attach_stdin: Some(false),
            tty: Some(false),
            host_config: Some(host_config),
            ..Default::default()
        }
    }
}

/// What `inspect` says about a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerState {
    pub id: String,
    pub name: String,
    /// `created`, `running`, `exited`, `removing`, `dead`...
    pub status: String,
    pub running: bool,
    /// Host pid of the container's PID 1 (0 when not running).
    pub pid: u32,
    pub exit_code: Option<i64>,
    pub labels: BTreeMap<String, String>,
}

/// A container from a labelled listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerEntry {
    pub id: String,
    pub name: String,
    pub state: String,
    pub labels: BTreeMap<String, String>,
}

/// One step of an image pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullStep {
    pub layer: Option<String>,
    pub status: String,
    pub current: Option<u64>,
    pub total: Option<u64>,
}

/// What `image inspect` says about a local image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFacts {
    /// `sha256:...`.
    pub id: String,
    pub size: u64,
    pub env: Vec<String>,
    pub labels: BTreeMap<String, String>,
    /// `repo@sha256:...` per registry it came from or went to, sorted;
    /// empty for an image built here.
    pub repo_digests: Vec<String>,
}

/// A connection to the Docker daemon (DOCKER_HOST rules, API version negotiated).
#[derive(Clone)]
pub struct DockerClient {
    inner: Docker,
    host: String,
}

impl std::fmt::Debug for DockerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerClient")
            .field("host", &self.host)
            .finish()
    }
}

/// The daemon address from DOCKER_HOST, or the local socket.
pub fn docker_host() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into())
}

impl DockerClient {
    /// Connects with the DOCKER_HOST rules and negotiates the API version
    /// (Debian's dockerd 20.10 speaks 1.41, older than bollard's default).
    pub async fn connect() -> Result<Self, DockerError> {
        let host = docker_host();
        let connect_err = |cause| DockerError::Connect {
            host: host.clone(),
            cause,
        };
        let docker = Docker::connect_with_defaults()
            .map_err(|e| connect_err(cause(e)))?
            .with_timeout(Duration::from_secs(120));
        let docker = bounded(SHORT_CALL, docker.negotiate_version())
            .await
            .map_err(connect_err)?;
        Ok(Self {
            inner: docker,
            host,
        })
    }

    /// The address this client talks to.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// `GET /version` and `GET /info`.
    pub async fn info(&self) -> Result<DaemonInfo, DockerError> {
        let version = bounded(SHORT_CALL, self.inner.version())
            .await
            .map_err(|cause| DockerError::Version {
                host: self.host.clone(),
                cause,
            })?;
        let info = bounded(SHORT_CALL, self.inner.info())
            .await
            .map_err(|cause| DockerError::Info { cause })?;
        Ok(DaemonInfo {
            host: self.host.clone(),
            server_version: version.version.unwrap_or_default(),
            api_version: version.api_version.unwrap_or_default(),
            cgroup_driver: info
                .cgroup_driver
                .map(|d| d.to_string())
                .unwrap_or_default(),
            cgroup_version: info
                .cgroup_version
                .map(|v| v.to_string())
                .unwrap_or_default(),
        })
    }

    /// `GET /images/{name}/json`: whether the image is present locally.
    pub async fn image_exists(&self, image: &str) -> Result<bool, DockerError> {
        match bounded(SHORT_CALL, self.inner.inspect_image(image)).await {
            Ok(_) => Ok(true),
            Err(c) if c.status() == Some(404) => Ok(false),
            Err(cause) => Err(DockerError::InspectImage {
                image: image.into(),
                cause,
            }),
        }
    }

    /// `GET /images/{name}/json`: the facts of a local image, `None` when
    /// there is no such image.
    pub async fn image_facts(&self, image: &str) -> Result<Option<ImageFacts>, DockerError> {
        match bounded(SHORT_CALL, self.inner.inspect_image(image)).await {
            Ok(i) => {
                let config = i.config.unwrap_or_default();
                Ok(Some(ImageFacts {
                    id: i.id.unwrap_or_default(),
                    size: i.size.unwrap_or(0).max(0) as u64,
                    env: config.env.unwrap_or_default(),
                    labels: config.labels.unwrap_or_default().into_iter().collect(),
                    repo_digests: {
                        let mut d = i.repo_digests.unwrap_or_default();
                        d.sort();
                        d
                    },
                }))
            }
            Err(c) if c.status() == Some(404) => Ok(None),
            Err(cause) => Err(DockerError::InspectImage {
                image: image.into(),
                cause,
            }),
        }
    }

    /// `POST /images/create?fromSrc=-` (`docker import`): an image named
    /// `image` (`repo:tag`) from the root filesystem tar that `body`
    /// streams, with Dockerfile `changes` (`ENV ...`, `LABEL ...`). An
    /// error in `body` aborts the upload, and the daemon keeps nothing.
    pub async fn import(
        &self,
        image: &str,
        changes: Vec<String>,
        body: impl Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static,
    ) -> Result<(), DockerError> {
        let err = |cause| DockerError::Import {
            image: image.into(),
            cause,
        };
        let (repo, tag) = image.rsplit_once(':').unwrap_or((image, "latest"));
        let options = CreateImageOptionsBuilder::default()
            .from_src("-")
            .repo(repo)
            .tag(tag)
            .changes(changes)
            .build();
        let body = bollard::body_try_stream(body.map(|chunk| chunk.map(Into::into)));
        let mut stream = self.inner.create_image(Some(options), Some(body), None);
        // The daemon answers once it has read the whole tar.
        let limit = Duration::from_secs(1800);
        loop {
            let next = tokio::time::timeout(limit, stream.next())
                .await
                .map_err(|_| err(Cause::TimedOut(limit)))?;
            match next {
                None => return Ok(()),
                Some(Err(e)) => return Err(err(cause(e))),
                Some(Ok(_)) => {}
            }
        }
    }

    /// `DELETE /images/{name}` without force: the daemon refuses (409) an
    /// image a container uses.
    pub async fn remove_image(&self, image: &str) -> Result<(), DockerError> {
        bounded(
            SHORT_CALL,
            self.inner.remove_image(
                image,
                None::<bollard::query_parameters::RemoveImageOptions>,
                None,
            ),
        )
        .await
        .map(|_| ())
        .map_err(|cause| DockerError::RemoveImage {
            image: image.into(),
            cause,
        })
    }

    /// `POST /images/create?fromImage=`: pulls an image; `on_step` sees each
    /// progress message. `first_answer` bounds the wait for the registry's
    /// first reply so that a machine without a registry fails quickly.
    pub async fn pull(
        &self,
        image: &str,
        first_answer: Duration,
        mut on_step: impl FnMut(PullStep),
    ) -> Result<(), DockerError> {
        let err = |cause| DockerError::Pull {
            image: image.into(),
            cause,
        };
        let options = CreateImageOptionsBuilder::default()
            .from_image(image)
            .build();
        let mut stream = self.inner.create_image(Some(options), None, None);
        let mut limit = first_answer;
        loop {
            let next = tokio::time::timeout(limit, stream.next())
                .await
                .map_err(|_| err(Cause::TimedOut(limit)))?;
            // Layers of a large image may take long; only silence is bounded.
            limit = Duration::from_secs(300);
            match next {
                None => return Ok(()),
                Some(Err(e)) => return Err(err(cause(e))),
                Some(Ok(info)) => {
                    if let Some(detail) = info.error_detail {
                        return Err(err(Cause::Status {
                            code: detail.code.unwrap_or(500) as u16,
                            message: detail.message.unwrap_or_default(),
                        }));
                    }
                    let progress = info.progress_detail.unwrap_or_default();
                    on_step(PullStep {
                        layer: info.id,
                        status: info.status.unwrap_or_default(),
                        current: progress.current.map(|c| c.max(0) as u64),
                        total: progress.total.map(|t| t.max(0) as u64),
                    });
                }
            }
        }
    }

    /// `POST /containers/create`. Warnings are errors: a limit the daemon
    /// could not apply (no swap accounting, no blkio) would silently not hold.
    pub async fn create(&self, spec: &ContainerSpec) -> Result<String, DockerError> {
        let options = CreateContainerOptionsBuilder::default()
            .name(&spec.name)
            .build();
        let created = bounded(
            SHORT_CALL,
            self.inner.create_container(Some(options), spec.body()),
        )
        .await
        .map_err(|cause| DockerError::CreateContainer {
            name: spec.name.clone(),
            cause,
        })?;
        if !created.warnings.is_empty() {
            return Err(DockerError::CreateWarnings {
                name: spec.name.clone(),
                id: created.id,
                warnings: created.warnings,
            });
        }
        Ok(created.id)
    }

    /// `POST /containers/{id}/start`.
    pub async fn start(&self, id: &str) -> Result<(), DockerError> {
        bounded(
            Duration::from_secs(60),
            self.inner
                .start_container(id, None::<StartContainerOptions>),
        )
        .await
        .map_err(|cause| DockerError::StartContainer {
            id: id.into(),
            cause,
        })
    }

    /// `GET /containers/{id}/json`.
    pub async fn inspect(&self, id: &str) -> Result<ContainerState, DockerError> {
        let c = bounded(
            SHORT_CALL,
            self.inner
                .inspect_container(id, None::<InspectContainerOptions>),
        )
        .await
        .map_err(|cause| DockerError::InspectContainer {
            id: id.into(),
            cause,
        })?;
        let state = c.state.unwrap_or_default();
        Ok(ContainerState {
            id: c.id.unwrap_or_else(|| id.into()),
            name: c
                .name
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            status: state.status.map(|s| s.to_string()).unwrap_or_default(),
            running: state.running.unwrap_or(false),
            pid: state.pid.unwrap_or(0).max(0) as u32,
            exit_code: state.exit_code,
            labels: c
                .config
                .and_then(|c| c.labels)
                .unwrap_or_default()
                .into_iter()
                .collect(),
        })
    }

    /// `POST /containers/{id}/stop?t=`: SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(&self, id: &str, grace: Duration) -> Result<(), DockerError> {
        let options = StopContainerOptionsBuilder::default()
            .t(grace.as_secs() as i32)
            .build();
        let result = bounded(
            grace + SHORT_CALL,
            self.inner.stop_container(id, Some(options)),
        )
        .await;
        match result {
            // 304: already stopped.
            Err(c) if c.status() == Some(304) => Ok(()),
            other => other.map_err(|cause| DockerError::StopContainer {
                id: id.into(),
                cause,
            }),
        }
    }

    /// `POST /containers/{id}/kill?signal=`.
    pub async fn kill(&self, id: &str, signal: &str) -> Result<(), DockerError> {
        let options = KillContainerOptionsBuilder::default()
            .signal(signal)
            .build();
        bounded(SHORT_CALL, self.inner.kill_container(id, Some(options)))
            .await
            .map_err(|cause| DockerError::KillContainer {
                id: id.into(),
                cause,
            })
    }

    /// `DELETE /containers/{id}?force=1&v=1`.
    pub async fn remove(&self, id: &str) -> Result<(), DockerError> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        bounded(
            Duration::from_secs(30),
            self.inner.remove_container(id, Some(options)),
        )
        .await
        .map_err(|cause| DockerError::RemoveContainer {
            id: id.into(),
            cause,
        })
    }

    /// `POST /containers/{id}/wait?condition=not-running`: the exit code.
    /// bollard reports a non-zero exit as an error; that is the engine's
    /// exit, not a Docker failure, so it is returned as a code here.
    pub async fn wait(&self, id: &str) -> Result<i64, DockerError> {
        let options = WaitContainerOptionsBuilder::default()
            .condition("not-running")
            .build();
        let mut stream = self.inner.wait_container(id, Some(options));
        match stream.next().await {
            Some(Ok(r)) => Ok(r.status_code),
            Some(Err(BollardError::DockerContainerWaitError { code, .. })) => Ok(code),
            Some(Err(e)) => Err(DockerError::WaitContainer {
                id: id.into(),
                cause: cause(e),
            }),
            None => Err(DockerError::WaitContainer {
                id: id.into(),
                cause: Cause::Transport("the daemon closed the wait stream".into()),
            }),
        }
    }

    /// `GET /containers/{id}/logs?follow=1`: stdout and stderr chunks until
    /// the container stops (or the daemon goes away).
    pub fn logs(&self, id: &str) -> impl Stream<Item = Result<Vec<u8>, DockerError>> + use<> {
        let options = LogsOptionsBuilder::default()
            .follow(true)
            .stdout(true)
            .stderr(true)
            .build();
        let id = id.to_string();
        self.inner
            .logs(&id, Some(options))
            .map(move |item| match item {
                Ok(LogOutput::StdOut { message })
                | Ok(LogOutput::StdErr { message })
                | Ok(LogOutput::Console { message })
                | Ok(LogOutput::StdIn { message }) => Ok(message.to_vec()),
                Err(e) => Err(DockerError::Logs {
                    id: id.clone(),
                    cause: cause(e),
                }),
            })
    }

    /// `GET /containers/json?all=1&filters={"label":[label]}`.
    pub async fn list_labelled(&self, label: &str) -> Result<Vec<ContainerEntry>, DockerError> {
        let filters = HashMap::from([("label".to_string(), vec![label.to_string()])]);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let list = bounded(SHORT_CALL, self.inner.list_containers(Some(options)))
            .await
            .map_err(|cause| DockerError::ListContainers {
                filter: format!("label={label}"),
                cause,
            })?;
        Ok(list
            .into_iter()
            .map(|c| ContainerEntry {
                id: c.id.unwrap_or_default(),
                name: c
                    .names
                    .unwrap_or_default()
                    .first()
                    .map(|n| n.trim_start_matches('/').to_string())
                    .unwrap_or_default(),
                state: c.state.map(|s| s.to_string()).unwrap_or_default(),
                labels: c.labels.unwrap_or_default().into_iter().collect(),
            })
            .collect())
    }

    /// `GET /volumes?filters={"label":[label]}`: volume names.
    pub async fn list_labelled_volumes(&self, label: &str) -> Result<Vec<String>, DockerError> {
        let filters = HashMap::from([("label".to_string(), vec![label.to_string()])]);
        let options = ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let list = bounded(SHORT_CALL, self.inner.list_volumes(Some(options)))
            .await
            .map_err(|cause| DockerError::ListVolumes {
                filter: format!("label={label}"),
                cause,
            })?;
        Ok(list
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.name)
            .collect())
    }

    /// `DELETE /volumes/{name}?force=1`.
    pub async fn remove_volume(&self, name: &str) -> Result<(), DockerError> {
        let options = RemoveVolumeOptionsBuilder::default().force(true).build();
        bounded(SHORT_CALL, self.inner.remove_volume(name, Some(options)))
            .await
            .map_err(|cause| DockerError::RemoveVolume {
                name: name.into(),
                cause,
            })
    }
}
