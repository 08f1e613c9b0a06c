//! What to start for a cell: the program, its argv, environment, files and
//! readiness.

use super::readiness::Readiness;
use crate::units::Bytes;
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

/// The placeholders a `cache_resize:` statement may use for the new size.
pub const CACHE_PLACEHOLDERS: [&str; 2] = ["{cache_bytes}", "{cache_mib}"];

/// `cache_resize:` with the new size filled in.
pub fn fill_cache_resize(statement: &str, cache: Bytes) -> String {
    statement
        .replace("{cache_bytes}", &cache.0.to_string())
        .replace("{cache_mib}", &(cache.0 >> 20).max(1).to_string())
}
