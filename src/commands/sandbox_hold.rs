//! `benchcage sandbox-hold` (hidden): a fixture for fault-injection tests.
//! Provisions a cgroup sandbox, starts redis, optionally a hog, holds at a
//! stage until SIGINT/SIGTERM, then tears down. `--panic` panics there,
//! and the ledger backstop (`ledger::reap_run`) still cleans up.

use crate::cli::{HoldStage, PanicIn, SandboxHoldArgs};
use crate::sandbox::cgroup::{CgroupConfig, CgroupSandbox};
use crate::sandbox::hog::{self, Hog};
use crate::sandbox::{
    CellLimits, EngineLaunch, IoLimits, Probe, Program, Readiness, Sandbox, SwapPolicy, free_port,
    ledger, ready,
};
use crate::units::{Bytes, CpuSet, Duration};
use futures::FutureExt;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tokio::signal::unix::{SignalKind, signal};

const BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

fn reached(stage: &str) {
    println!("reached {stage}");
}

/// redis-server on `port` with its data dir and log under `dir`, no
/// persistence, two IO threads (so that pinning covers several threads).
pub fn redis_launch(dir: &Path, port: u16) -> EngineLaunch {
    let data = dir.join("data");
    EngineLaunch {
        engine: "redis".into(),
        version: "local".into(),
        program: Program::Binary(PathBuf::from("/usr/bin/redis-server")),
        argv: [
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
        ]
        .map(String::from)
        .to_vec(),
        env: BTreeMap::new(),
        port,
        data_dir: data.clone(),
        config_files: vec![],
        init: vec![],
        user: None,
        readiness: Readiness {
            probe: Probe::Redis,
            timeout: Duration::from_secs(15),
        },
        log_path: dir.join("engine.log"),
    }
}

async fn hold(args: &SandboxHoldArgs, sb: &mut CgroupSandbox) -> anyhow::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let limits = CellLimits {
        server_cpus: CpuSet::new([0]),
        client_cpus: CpuSet::new([1]),
        memory: Bytes::from_mib(256),
        swap: SwapPolicy::Off,
        pids: 256,
        io: IoLimits::default(),
    };
    sb.provision(&limits).await?;
    let mut hog = None;
    if let Some(leave) = &args.hog_leave {
        let leave: Bytes = leave.parse()?;
        let exe = hog::benchcage_exe()?;
        let h = Hog::start(
            &exe,
            leave,
            Some(sb.ledger_mut()?),
            std::time::Duration::from_secs(60),
        )
        .await?;
        println!("hog pid {} locked {}", h.pid(), h.locked().0);
        hog = Some(h);
    }
    if args.until != HoldStage::Provision {
        let launch = redis_launch(&args.dir, free_port()?);
        let h = sb.start_engine(&launch).await?;
        println!("engine {:?}", h.id);
        if args.until == HoldStage::Ready {
            ready::wait_ready(sb, &launch).await?;
        }
    }
    let stage = format!("{:?}", args.until).to_lowercase();
    reached(&stage);
    match args.panic {
        Some(PanicIn::Main) => panic!("injected panic in the main task at {stage}"),
        Some(PanicIn::Task) => {
            let task = async move {
                let inject = true;
                if inject {
                    panic!("injected panic in a spawned task");
                }
            };
            let r = tokio::spawn(task).await;
            if let Err(e) = r {
                anyhow::bail!("spawned task failed: {e}");
            }
        }
        None => {}
    }
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
    if let Some(h) = hog {
        h.stop().await;
    }
    Ok(())
}

pub async fn run(_home: &Path, args: &SandboxHoldArgs) -> anyhow::Result<ExitCode> {
    let root = ledger::default_root();
    ledger::reap_dead(&root, false).await?;
    let cfg = CgroupConfig::detect(&args.dir)?;
    let mut sb = CgroupSandbox::new(&args.run_id, cfg)?;
    let outcome = std::panic::AssertUnwindSafe(hold(args, &mut sb))
        .catch_unwind()
        .await;
    // Teardown runs on every path: success, error, signal, panic.
    let report = sb.teardown(BUDGET).await;
    if outcome.is_err() {
        // Backstop: the ledger knows everything even if the sandbox state is odd.
        ledger::reap_run(&root, &args.run_id, BUDGET).await?;
    }
    let report = report?;
    println!(
        "teardown removed {} leaked {}",
        report.removed.len(),
        report.leaked.len()
    );
    if !report.is_clean() {
        anyhow::bail!("teardown leaked: {:?}", report.leaked);
    }
    match outcome {
        Ok(r) => r.map(|()| ExitCode::SUCCESS),
        Err(_) => anyhow::bail!("the held run panicked; cleaned up"),
    }
}
