//! `sandbox_hold`: the fixture of the fault-injection tests in
//! tests/sandbox.rs, built as an example (by `cargo test`, or by those
//! tests through `support::cli::fixture`) and never installed. Uses
//! only benchcage's library.
//!
//! Provisions a cgroup sandbox, starts redis, optionally a hog, holds at a
//! stage until SIGINT/SIGTERM, then tears down. `--panic` panics there,
//! and the ledger backstop (`ledger::reap_run`) still cleans up. Like
//! `benchcage run`, it restarts itself in a delegated scope when systemd
//! has not given it one.

#[path = "../support/launch.rs"]
mod launch;

use benchcage::model::{CellLimits, IoLimits, SwapPolicy};
use benchcage::sandbox::cgroup::{CgroupConfig, CgroupSandbox};
use benchcage::sandbox::cgroupfs::delegation;
use benchcage::sandbox::hog::{self, Hog};
use benchcage::sandbox::{EngineId, Sandbox, free_port, ledger, ready};
use benchcage::units::{Bytes, CpuSet};
use clap::Parser;
use futures::FutureExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::signal::unix::{SignalKind, signal};

const BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// Where the fixture stops and waits for a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum HoldStage {
    Provision,
    Start,
    Ready,
}

impl HoldStage {
    fn name(self) -> &'static str {
        match self {
            HoldStage::Provision => "provision",
            HoldStage::Start => "start",
            HoldStage::Ready => "ready",
        }
    }
}

/// Where the fixture panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PanicIn {
    Main,
    Task,
}

/// Hold a cgroup sandbox with redis until a signal.
#[derive(Debug, Parser)]
struct Args {
    /// Run id of the sandbox.
    #[arg(long)]
    run_id: String,
    /// Folder for the data dir and the engine log.
    #[arg(long)]
    dir: PathBuf,
    /// Hold after this stage.
    #[arg(long, value_enum, default_value = "ready")]
    until: HoldStage,
    /// Also start a memory hog leaving this much.
    #[arg(long, requires = "benchcage")]
    hog_leave: Option<String>,
    /// The benchcage binary that runs the hog (`benchcage hog`).
    #[arg(long)]
    benchcage: Option<PathBuf>,
    /// Panic once the stage is reached.
    #[arg(long, value_enum)]
    panic: Option<PanicIn>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(mut cmd) = delegation::scope_command() {
        let err = cmd.exec();
        eprintln!("warning: could not restart in a delegated scope with systemd-run: {err}");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match rt.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(benchcage::error::exit_code_for(&err))
        }
    }
}

async fn run(args: &Args) -> anyhow::Result<()> {
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
        anyhow::bail!("teardown leaked: {}", report.leaked.join("; "));
    }
    match outcome {
        Ok(r) => r,
        Err(_) => anyhow::bail!("the held run panicked; cleaned up"),
    }
}

async fn hold(args: &Args, sb: &mut CgroupSandbox) -> anyhow::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let limits = CellLimits {
        server_cpus: CpuSet::new([0]),
        client_cpus: CpuSet::new([1]),
        memory: Bytes::from_mib(256),
        swap: SwapPolicy::Off,
        pids: 256,
        io: IoLimits::default(),
        disk: None,
        client_node: Default::default(),
    };
    sb.provision(&limits).await?;
    let mut hog = None;
    if let (Some(leave), Some(exe)) = (&args.hog_leave, &args.benchcage) {
        let leave = hog::parse_leave(leave).map_err(|e| anyhow::anyhow!("--hog-leave: {e}"))?;
        let h = Hog::start(
            exe,
            leave,
            Some(sb.ledger_mut()?),
            std::time::Duration::from_secs(60),
        )
        .await?;
        println!("hog pid {} locked {}", h.pid(), h.locked().0);
        hog = Some(h);
    }
    if args.until != HoldStage::Provision {
        let launch = launch::redis_binary(&args.dir, free_port()?);
        let h = sb.start_engine(&launch).await?;
        match &h.id {
            EngineId::Pid(pid) => println!("engine pid {pid}"),
            EngineId::Container(id) => println!("engine container {id}"),
        }
        if args.until == HoldStage::Ready {
            ready::wait_ready(sb, &launch).await?;
        }
    }
    let stage = args.until.name();
    println!("reached {stage}");
    match args.panic {
        Some(PanicIn::Main) => panic!("injected panic in the main task at {stage}"),
        Some(PanicIn::Task) => {
            let task = async move {
                let inject = true;
                if inject {
                    panic!("injected panic in a spawned task");
                }
            };
            if let Err(e) = tokio::spawn(task).await {
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
