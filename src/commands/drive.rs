//! `benchcage drive`: a complete, standalone load generator against a
//! server that is already running. Prints the YCSB-style summary and
//! writes the phase results as JSON.

use crate::cli::DriveArgs;
use crate::error::bad_input;
use crate::results::model::PhaseResult;
use crate::workload::{self, DriveConfig, ErrorBudget, Threads, WorkloadError, WorkloadKind};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

pub async fn run(_home: &Path, args: &DriveArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(args)?;
    let v = cfg.validate().map_err(|e| match e {
        WorkloadError::Config(mut p) => match &args.config {
            Some(path) => bad_input(format!("workload config {}: {p}", path.display())),
            None => {
                p.as_flags = true;
                bad_input(p.to_string())
            }
        },
        WorkloadError::Url(_) => bad_input(e.to_string()),
        other => anyhow::Error::new(other),
    })?;
    // A Slurm job step (a client on another node) says where it runs, as
    // Slurm placed it: the phase's log is the proof.
    if let (Ok(node), Ok(step)) = (
        std::env::var("SLURMD_NODENAME"),
        std::env::var("SLURM_STEP_ID"),
    ) {
        eprintln!("drive: on node {node} (Slurm step {step})");
    }
    // Validation counted on the hard limit: one open file per connection.
    workload::bounds::raise_open_files();
    let cancel = CancellationToken::new();
    let on_int = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_int.cancel();
        }
    });
    let results = workload::run(&v, &cancel).await.map_err(|e| match e {
        WorkloadError::Occupied(_) | WorkloadError::Config(_) => bad_input(e.to_string()),
        other => anyhow::Error::new(other).context(format!(
            "driving {}",
            crate::workload::stores::redact_url(cfg.store.as_deref().unwrap_or(""))
        )),
    })?;
    print_summary(&results);
    if let Some(path) = &args.json {
        write_json(path, &results)?;
    }
    let failed: Vec<String> = results
        .iter()
        .filter_map(|r| match &r.status {
            crate::results::model::PhaseStatus::Ok => None,
            crate::results::model::PhaseStatus::Failed { reason }
            | crate::results::model::PhaseStatus::Invalid { reason }
            | crate::results::model::PhaseStatus::Oom { reason } => Some(format!(
                "phase `{}` ({} threads): {reason}{}",
                r.name,
                r.threads,
                r.first_errors()
                    .map(|e| format!("; first errors: {e}"))
                    .unwrap_or_default()
            )),
        })
        .collect();
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        anyhow::bail!("{}", failed.join("; "))
    }
}

/// The workload config from `--config` or from the flags.
fn config(args: &DriveArgs) -> anyhow::Result<DriveConfig> {
    match &args.config {
        Some(path) => config_file(path, args),
        None => config_from_flags(args),
    }
}

/// The workload config of a `--config` file, with `--store`,
/// `--progress` and `--reset` over it.
fn config_file(path: &std::path::Path, args: &DriveArgs) -> anyhow::Result<DriveConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading workload config {}", path.display()))?;
    let mut cfg: DriveConfig = serde_json::from_str(&text).map_err(|e| {
        bad_input(format!(
            "{}:{}:{}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    if args.store.is_some() {
        cfg.store = args.store.clone();
    }
    if args.progress {
        cfg.progress = true;
    }
    if args.reset {
        cfg.reset = true;
    }
    Ok(cfg)
}

/// `--FLAG: what is wrong` as bad input.
fn bad(flag: &str, e: String) -> anyhow::Error {
    bad_input(format!("--{flag}: {e}"))
}

/// The workload config from the flags.
fn config_from_flags(args: &DriveArgs) -> anyhow::Result<DriveConfig> {
    let mut cfg = DriveConfig {
        name: "run".into(),
        store: args.store.clone(),
        records: args.records,
        field_count: args.field_count,
        field_length: args.field_length,
        key_padding: args.key_padding,
        operations: args.operations,
        target: args.target,
        seed: args.seed,
        load: args.load,
        reset: args.reset,
        batch: args.batch,
        progress: args.progress,
        warehouses: args.warehouses,
        denormalize: args.denormalize,
        ..Default::default()
    };
    (cfg.workload, cfg.mix) = workload_of(&args.workload)?;
    if let Some(d) = &args.duration {
        cfg.duration = Some(d.parse().map_err(|e| bad("duration", format!("{e}")))?);
    }
    if let Some(d) = &args.warmup {
        cfg.warmup = Some(d.parse().map_err(|e| bad("warmup", format!("{e}")))?);
    }
    cfg.threads = threads_of(&args.threads)?;
    if let Some(d) = &args.distribution {
        cfg.distribution = Some(d.parse().map_err(|e: String| bad("distribution", e))?);
    }
    cfg.insert_order = serde_json::from_value(serde_json::Value::String(
        args.insert_order.to_ascii_lowercase(),
    ))
    .map_err(|_| bad("insert-order", "use hashed or ordered".into()))?;
    if let Some(q) = &args.queries {
        cfg.queries = Some(
            serde_json::from_value(serde_json::Value::String(q.clone()))
                .map_err(|_| bad("queries", "use by_ticker, interval or day".into()))?,
        );
    }
    if let Some(n) = args.collections {
        if n == 0 {
            return Err(bad("collections", "give at least 1 collection".into()));
        }
        cfg.collections = Some(n);
    }
    cfg.data_length = args.data_length;
    cfg.error_budget = match args.error_budget.trim().parse::<u64>() {
        Ok(n) => ErrorBudget::Count(n),
        Err(_) => ErrorBudget::Share(args.error_budget.clone()),
    };
    Ok(cfg)
}

/// `--workload`: a..f, candles, tpcc, sysbench-mongo, iibench, or a mix like `read=0.9,update=0.1`.
fn workload_of(flag: &str) -> anyhow::Result<(WorkloadKind, Option<BTreeMap<String, f64>>)> {
    let w = flag.trim().to_ascii_lowercase();
    if !w.contains('=') {
        let kind = serde_json::from_value(serde_json::Value::String(w.clone())).map_err(|_| {
            bad(
                "workload",
                format!(
                    "`{w}` is not a..f, candles, tpcc, sysbench-mongo, iibench, or a mix like read=0.9,update=0.1"
                ),
            )
        })?;
        return Ok((kind, None));
    }
    let mut mix = BTreeMap::new();
    for part in w.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, val) = part
            .split_once('=')
            .ok_or_else(|| bad("workload", format!("`{part}` is not kind=share")))?;
        let val: f64 = val
            .trim()
            .parse()
            .map_err(|_| bad("workload", format!("`{val}` is not a number")))?;
        mix.insert(k.trim().to_string(), val);
    }
    Ok((WorkloadKind::Custom, Some(mix)))
}

/// `--threads`: a count, or a list like `1,4,16` to sweep.
fn threads_of(flag: &str) -> anyhow::Result<Threads> {
    let threads: Vec<u32> = flag
        .split(',')
        .map(|t| t.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            bad(
                "threads",
                format!("`{flag}` is not a count or a list like 1,4,16"),
            )
        })?;
    Ok(match threads.as_slice() {
        [one] => Threads::One(*one),
        _ => Threads::Sweep(threads),
    })
}

fn print_summary(results: &[PhaseResult]) {
    let many = results.len() > 1;
    for r in results {
        if many {
            println!("# phase {} ({}), {} threads", r.name, r.workload, r.threads);
        }
        print!("{}", workload::summary::ycsb_text(r));
    }
}

/// Writes the results atomically (temp file, fsync, rename).
fn write_json(path: &Path, results: &[PhaseResult]) -> anyhow::Result<()> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(results)?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    let tmp = path.with_extension("json.tmp");
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    if let Some(d) = dir
        && let Ok(dirf) = std::fs::File::open(d)
    {
        let _ = dirf.sync_all();
    }
    Ok(())
}
