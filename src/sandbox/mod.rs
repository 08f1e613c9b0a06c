//! Sandboxes: the trait every backend implements (cgroup, docker), the types
//! that cross it, and the pieces they share (hog, ledger, readiness).
//!
//! The contract, in lifecycle order: `provision` (cgroups or container
//! resources, limits read back), `start_engine` (engine inside its limits
//! from its first instruction, log captured), readiness is checked by the
//! caller with `ready`, `stats` any time, `stop_engine`, `teardown` (always,
//! explicit, async, verified gone). Backend crates (cgroups-rs, bollard) never
//! appear in these types. The kernel counters and the client group are
//! reached through handles that need no access to the sandbox
//! ([`StatsReader`], [`ClientPlacer`]); the cgroup-file layer both
//! backends share is [`cgroupfs`].

use crate::model::{CellLimits, EngineLaunch, ImageRecord, SwapPolicy};
use crate::units::Bytes;
use process::ClientPlacer;
use stats::StatsReader;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Kernel counters of one cgroup (server or client), read from cgroup files.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CgroupStats {
    pub memory_usage: u64,
    pub memory_max_usage: u64,
    pub memory_limit: u64,
    pub page_cache: u64,
    pub rss: u64,
    pub inactive_file: u64,
    pub major_faults: u64,
    pub failcnt: u64,
    pub oom_kills: u64,
    pub cpu_usec: u64,
    pub io_read_bytes: u64,
    pub io_write_bytes: u64,
}

pub mod backoff;
pub mod cgroup;
pub mod cgroupfs;
pub mod disk;
pub mod docker;
pub mod hog;
pub mod ledger;
pub mod process;
pub mod ready;
pub mod reap;
pub mod roots;
pub mod stats;
pub mod thp;

/// What `provision` created, with the limits read back from the kernel.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Provisioned {
    /// Kernel file (relative to its controller's cgroup dir, prefixed by the
    /// group, e.g. `server/memory.limit_in_bytes`) -> value read back.
    pub read_back: BTreeMap<String, String>,
}

/// How a started engine is addressed.
/// A cell's network namespace ([`Sandbox::isolate_network`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkNamespace {
    /// Its name under /run/netns.
    pub name: String,
    /// Its file, to enter it.
    pub path: PathBuf,
    /// The qdiscs on its loopback, read back after they were set.
    pub qdiscs: Vec<String>,
    /// The container whose namespace it is, which a container joins
    /// (`container:<name>`) where it cannot name a namespace's file
    /// (the docker backend); `None` for a namespace benchcage made.
    pub container: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EngineId {
    /// Process id of the engine's leader (cgroup backend).
    Pid(u32),
    /// Container id (docker backend).
    Container(String),
}

/// A started engine.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EngineHandle {
    pub id: EngineId,
    pub port: u16,
    pub log_path: PathBuf,
    /// Limits read back from the engine's view, e.g. `Cpus_allowed_list`.
    pub read_back: BTreeMap<String, String>,
    /// The image a container backend ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageRecord>,
}

/// Whether the engine still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EngineStatus {
    Running,
    /// Exited with a code, or was killed by a signal.
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
    },
    /// Never started, or already stopped and reaped by `stop_engine`.
    NotStarted,
}

/// How an engine stopped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StopOutcome {
    /// Exited within the grace period after SIGTERM.
    Terminated,
    /// Needed SIGKILL (ignored SIGTERM or hung).
    Killed,
    /// Had already exited before stop was asked.
    AlreadyExited,
}

/// What `stop_engine` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StopReport {
    pub outcome: StopOutcome,
    /// Pids still in the cgroup after the leader went (double-forked daemons), killed by the sweep.
    pub swept: Vec<u32>,
    pub status: EngineStatus,
}

/// What `teardown` removed and what it could not.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TeardownReport {
    /// Resources removed, in removal order (`cgroup memory/benchcage/<id>/server`).
    pub removed: Vec<String>,
    /// Resources still present after the budget ran out, with the reason.
    pub leaked: Vec<String>,
    pub elapsed_ms: u64,
}

impl TeardownReport {
    /// Nothing was left behind.
    pub fn is_clean(&self) -> bool {
        self.leaked.is_empty()
    }
}

/// Errors of the sandbox layer: one variant per external call, each naming
/// the path, pid or container it concerned.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cgroup support: {0}")]
    Unsupported(String),
    #[error("creating cgroup {path}: {source}")]
    CgroupCreate {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing `{value}` to {path}: {source}")]
    CgroupWrite {
        path: PathBuf,
        value: String,
        source: std::io::Error,
    },
    #[error("reading {path}: {source}")]
    CgroupRead {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("removing cgroup {path}: {detail}")]
    CgroupRemove { path: PathBuf, detail: String },
    #[error(
        "limit not applied: {file} reads `{got}` but the spec asks `{want}`; the kernel refused or rounded it"
    )]
    LimitMismatch {
        file: String,
        want: String,
        got: String,
    },
    #[error("stat of data dir {path} (for its IO device): {source}")]
    DataDevice {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("preparing data dir {path}: {detail}")]
    DataDir { path: PathBuf, detail: String },
    #[error("user `{user}` for the engine: {detail}")]
    User { user: String, detail: String },
    #[error("starting `{program}`: {source}; check the engine's binary path")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("init command `{argv}` failed with {status}; engine log {log_path}:\n{log_tail}")]
    Init {
        argv: String,
        status: String,
        log_path: PathBuf,
        log_tail: String,
    },
    #[error("engine exited ({status}) before it was ready; engine log {log_path}:\n{log_tail}")]
    EngineExited {
        status: String,
        log_path: PathBuf,
        log_tail: String,
    },
    #[error("engine not ready after {timeout}: {last_error}; engine log {log_path}:\n{log_tail}")]
    NotReady {
        timeout: crate::units::Duration,
        last_error: String,
        log_path: PathBuf,
        log_tail: String,
    },
    #[error("signalling pid {pid}: {source}")]
    Signal { pid: i32, source: nix::Error },
    #[error("ledger {path}: {source}")]
    Ledger {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("memory hog: {0}")]
    Hog(String),
    #[error("transparent huge pages: {0}")]
    Thp(#[from] thp::ThpError),
    #[error("engine not started yet; call start_engine first")]
    NoEngine,
    #[error("{call}: {detail}")]
    Backend { call: &'static str, detail: String },
    /// The docker backend (daemon calls, images, containers).
    #[error("network namespace {name}: {detail}")]
    Netns { name: String, detail: String },
    #[error(transparent)]
    Docker(#[from] docker::DockerBackendError),
}

/// A place where engines run under limits: the cgroup backend and the docker
/// backend implement it. Lifecycle: `provision`, `start_engine`, (caller
/// checks readiness with `ready::wait_ready`), `stats` any time,
/// `stop_engine`, `teardown` (always, even after errors).
#[async_trait::async_trait]
pub trait Sandbox: Send {
    /// The run id this sandbox belongs to.
    fn run_id(&self) -> &str;

    /// Create the server and client groups with `limits`, read every limit
    /// back from the kernel; a mismatch is [`SandboxError::LimitMismatch`].
    async fn provision(&mut self, limits: &CellLimits) -> Result<Provisioned, SandboxError>;

    /// Create the engine's data dir, in the ledger, before `start_engine`:
    /// a snapshot is restored into it, and teardown and `cleanup` remove
    /// it like one the engine filled.
    fn claim_data_dir(&mut self, dir: &std::path::Path) -> Result<(), SandboxError>;

    /// Run the launch's `init` commands and then the engine, inside the
    /// server limits from its first instruction, output to `log_path`.
    /// Once the engine was stopped it may be started again (after a
    /// snapshot of its data), with no `init`.
    async fn start_engine(&mut self, launch: &EngineLaunch) -> Result<EngineHandle, SandboxError>;

    /// A reader of the server's and the client's kernel counters that
    /// needs nothing of the sandbox: the sampler reads through it while
    /// the lifecycle holds the sandbox. Before the server group exists
    /// (the Docker backend's, until the engine's container runs) the
    /// server's counters read as zero.
    fn stats_reader(&self) -> StatsReader;

    /// Kernel counters of the server group.
    async fn stats(&self) -> Result<CgroupStats, SandboxError> {
        self.stats_reader().server()
    }

    /// Kernel counters of the client group.
    async fn client_stats(&self) -> Result<CgroupStats, SandboxError> {
        self.stats_reader().client()
    }

    /// Places commands in the client group (pinned to the client CPUs,
    /// outside the server's budget) without the sandbox: for the load
    /// generator and external tools, before they are spawned.
    fn client_placer(&self) -> ClientPlacer;

    /// The kernel emulation of the cell's network: a namespace of the
    /// sandbox's own (in the ledger before it is made) whose loopback
    /// carries `network`'s qdisc; everything the sandbox starts from then
    /// on (the engine, its init commands, the client's processes) starts
    /// inside it. Call after `provision`, before `start_engine`.
    async fn isolate_network(
        &mut self,
        network: &crate::network::Network,
    ) -> Result<NetworkNamespace, SandboxError>;

    /// Share the namespace `ns` another sandbox of the cell made (a
    /// topology's members share the cell's server's): everything this
    /// sandbox starts from then on starts inside it; it is neither made
    /// nor removed here. Call after `provision`, before `start_engine`.
    fn join_network(&mut self, ns: &NetworkNamespace) -> Result<(), SandboxError>;

    /// Make `cmd` start inside the client group; see [`Sandbox::client_placer`].
    fn prepare_client(&self, cmd: &mut std::process::Command) -> Result<(), SandboxError> {
        self.client_placer().place(cmd)
    }

    /// Set the server's memory cap (swap policy kept) on the running
    /// sandbox: settle shrinks it after the load.
    fn set_memory_cap(&self, cap: Bytes, swap: SwapPolicy) -> Result<(), SandboxError>;

    /// Drop the page cache charged to the server so that the phases start
    /// cold; without a server memory cgroup, the host's.
    fn drop_page_cache(&self) -> Result<(), SandboxError>;

    /// Every pid in the server's group (the engine and its children).
    fn server_pids(&self) -> Vec<u32>;

    /// Whether the engine still runs (reaps it if it exited).
    async fn engine_status(&mut self) -> Result<EngineStatus, SandboxError>;

    /// SIGTERM, wait `grace`, SIGKILL, then kill whatever is left in the group.
    async fn stop_engine(&mut self, grace: std::time::Duration)
    -> Result<StopReport, SandboxError>;

    /// Remove everything this sandbox created (reverse ledger order) within
    /// `budget`, verify it is gone, and report what leaked instead of hanging.
    async fn teardown(
        &mut self,
        budget: std::time::Duration,
    ) -> Result<TeardownReport, SandboxError>;
}

/// Run ids become directory names: keep them to a safe alphabet.
pub(crate) fn check_run_id(run_id: &str) -> Result<(), SandboxError> {
    let ok = !run_id.is_empty()
        && run_id.len() <= 128
        && !run_id.starts_with('.')
        && run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(SandboxError::Unsupported(format!(
            "run id `{run_id}` must be 1-128 characters of A-Z a-z 0-9 - _ . (not starting with a dot)"
        )))
    }
}

/// A free loopback port: bind 127.0.0.1:0 and release it. Racy by nature;
/// the engine failing to bind is reported with its log tail.
pub fn free_port() -> Result<u16, SandboxError> {
    let listener =
        std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| SandboxError::Backend {
            call: "bind 127.0.0.1:0",
            detail: e.to_string(),
        })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| SandboxError::Backend {
            call: "local_addr",
            detail: e.to_string(),
        })
}
