//! What to start for a cell: the program, its argv, environment, files and
//! readiness.

use super::readiness::Readiness;
use std::collections::BTreeMap;
use std::path::PathBuf;

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
