//! Engine launches for the sandbox tests. Also compiled into the
//! `sandbox_hold` fixture (tests/bin/sandbox_hold.rs), so it uses nothing
//! but benchcage's library.

#![allow(dead_code)]

use benchcage::model::{EngineLaunch, Probe, Program, Readiness};
use benchcage::units::Duration;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `argv` run as `program` on `port`, its data dir (`data/`) and log
/// (`engine.log`) under `dir`, ready when `probe` answers within
/// `timeout_s`; engine `test`, version `local`, no init, no user.
pub fn launch(
    dir: &Path,
    program: Program,
    argv: Vec<String>,
    port: u16,
    probe: Probe,
    timeout_s: u64,
) -> EngineLaunch {
    EngineLaunch {
        engine: "test".into(),
        version: "local".into(),
        program,
        argv,
        env: BTreeMap::new(),
        port,
        data_dir: dir.join("data"),
        config_files: vec![],
        init: vec![],
        user: None,
        readiness: Readiness {
            probe,
            timeout: Duration::from_secs(timeout_s),
        },
        log_path: dir.join("engine.log"),
    }
}

/// The binary `argv[0]` with `argv` (see [`launch`]).
pub fn binary(
    dir: &Path,
    argv: Vec<String>,
    port: u16,
    probe: Probe,
    timeout_s: u64,
) -> EngineLaunch {
    let program = Program::Binary(PathBuf::from(&argv[0]));
    launch(dir, program, argv, port, probe, timeout_s)
}

/// Owned arguments.
pub fn args(argv: &[&str]) -> Vec<String> {
    argv.iter().map(|a| a.to_string()).collect()
}

/// redis-server on `port` with its data dir and log under `dir`, no
/// persistence, two IO threads (so that pinning covers several threads).
pub fn redis_binary(dir: &Path, port: u16) -> EngineLaunch {
    let data = dir.join("data");
    let argv = args(&[
        "/usr/bin/redis-server",
        "--bind",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--dir",
        &data.to_string_lossy(),
        "--save",
        "",
        "--appendonly",
        "no",
        "--io-threads",
        "2",
    ]);
    EngineLaunch {
        engine: "redis".into(),
        ..binary(dir, argv, port, Probe::Redis, 15)
    }
}
