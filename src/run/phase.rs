//! How a measured (or load) phase runs: behind [`PhaseExec`], so the cell
//! lifecycle does not care whether it is the built-in load generator (a
//! `benchcage drive` child) or an external tool. Every child process is
//! placed in the client group by the [`PhaseEnv::place`] hook before it runs.

use crate::results::model::PhaseResult;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Puts a child process into the client group (pinned to the client CPUs,
/// outside the server's budget) before it is spawned.
pub(crate) type PlaceHook =
    Arc<dyn Fn(&mut std::process::Command) -> std::io::Result<()> + Send + Sync>;

/// What a phase gets from the cell.
#[derive(Clone)]
pub struct PhaseEnv {
    /// Loopback port of the engine (a sharded cluster's first router).
    pub port: u16,
    /// Every port the client may connect to, `port` first: a sharded
    /// cluster's routers, over which the built-in load generator spreads
    /// its connections; external tools use `port` only.
    pub ports: Vec<u16>,
    /// The members of the replica set `port` is the primary of, `port`
    /// first (just `port` without a set; empty in a sharded cluster).
    pub set_ports: Vec<u16>,
    /// Connections for this run of the phase.
    pub threads: u32,
    /// The cell folder: raw outputs go here.
    pub cell_dir: PathBuf,
    /// File stem for this phase's raw outputs (`02-workload-a-t4`).
    pub stem: String,
    /// Cancelled when the run is interrupted or the engine died.
    pub cancel: CancellationToken,
    pub place: PlaceHook,
    /// Latest operations per second, for the live view.
    pub progress: watch::Sender<Option<f64>>,
}

/// Why a phase cannot run as configured, found before anything is
/// created: bad input (exit code 2), which callers only report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unrunnable(pub String);

/// One phase's work.
#[async_trait::async_trait]
pub trait PhaseExec: Send + Sync {
    /// What the phase runs, for labels (`ycsb:a`, `sysbench:oltp_read_write`).
    fn describe(&self) -> String;
    /// Check the phase's configuration for a thread count, creating nothing.
    fn check(&self, threads: u32) -> Result<(), Unrunnable>;
    /// Run to the end (or until cancelled) and return the parsed result.
    async fn run(&self, env: PhaseEnv) -> anyhow::Result<PhaseResult>;
}
