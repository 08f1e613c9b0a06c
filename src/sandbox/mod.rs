//! Sandboxes: the trait every backend implements (cgroup, docker), the types
//! that cross it, and the pieces they share (hog, ledger, readiness).
//!
//! The contract, in lifecycle order: `provision` (cgroups or container
//! resources, limits read back), `start_engine` (engine inside its limits
//! from its first instruction, log captured), readiness is checked by the
//! caller with `ready`, `stats` any time, `stop_engine`, `teardown` (always,
//! explicit, async, verified gone). Backend crates (cgroups-rs, bollard) never
//! appear in these types.

use crate::units::{Bytes, CpuSet};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which backend a cell runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Cgroup,
    Docker,
}

/// Swap allowed to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SwapPolicy {
    /// No swap at all (v1: memsw = memory; v2: swap.max = 0).
    Off,
    /// At most this much swap on top of the memory cap.
    Limit(Bytes),
}

/// IO throttles for the data device; `None` means unthrottled.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IoLimits {
    pub read_bps: Option<u64>,
    pub write_bps: Option<u64>,
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
}

/// Limits of one cell, already resolved from the environment (scale applied).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CellLimits {
    pub server_cpus: CpuSet,
    pub client_cpus: CpuSet,
    pub memory: Bytes,
    pub swap: SwapPolicy,
    pub pids: u64,
    pub io: IoLimits,
}

/// What to start and how to tell it is ready.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EngineLaunch {
    pub engine: String,
    pub version: String,
    pub program: Program,
    /// Full argv (argv[0] is the program), placeholders already filled.
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Loopback port the engine listens on (127.0.0.1 only).
    pub port: u16,
    /// Host path of the engine's data directory.
    pub data_dir: PathBuf,
    /// Rendered config files: host path -> path the engine reads.
    pub config_files: Vec<(PathBuf, PathBuf)>,
    /// Commands to run once before the first start (initdb, mariadb-install-db...), argv arrays.
    pub init: Vec<Vec<String>>,
    /// Run as this user (postgres refuses to run as root).
    pub user: Option<String>,
    pub readiness: Readiness,
    /// Where stdout and stderr go.
    pub log_path: PathBuf,
}

/// A local binary (cgroup backend) or an image (docker backend).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Program {
    Binary(PathBuf),
    Image(String),
}

/// Readiness is data: which protocol round trip proves the engine serves.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Readiness {
    pub probe: Probe,
    pub timeout: crate::units::Duration,
}

/// A protocol-level probe (a TCP connect is not enough).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Probe {
    /// `PING` answered `PONG`.
    Redis,
    /// `SELECT 1` over the PostgreSQL protocol.
    Postgres { user: String, database: String },
    /// `SELECT 1` over the MySQL protocol.
    Mysql { user: String },
    /// `{ping: 1}` over the MongoDB wire protocol.
    Mongodb,
}

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
