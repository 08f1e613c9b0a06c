//! External tools run against an engine, each output saved raw next to the
//! parsed result: sysbench (JSON from a report hook, text as fallback),
//! pgbench (init, builtin or custom scripts), YCSB / go-ycsb output, and
//! any command with named patterns.

use super::ErrorBudget;
use super::stores::StoreKind;
use crate::results::model::{OpStats, Percentiles, PhaseResult, PhaseStatus, SecondSample};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod command;
pub mod pgbench;
pub mod pyenv;
pub mod pytpcc;
pub mod sysbench;
pub mod ycsb;

/// Which tool a phase runs, as the scenario's `tool:` block names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    Sysbench(sysbench::SysbenchConfig),
    Pgbench(pgbench::PgbenchConfig),
    Ycsb(ycsb::YcsbConfig),
    Command(command::CommandConfig),
    Pytpcc(pytpcc::PytpccConfig),
}

/// A tool phase: the tool and the errors it may report and still pass.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolConfig {
    #[serde(flatten)]
    pub tool: Tool,
    #[serde(default)]
    pub error_budget: ErrorBudget,
    /// Run the tool this long, unmeasured, before each measured run (the
    /// phase's `warmup`); only tools that [`run a warmup`](Self::runs_warmup).
    #[serde(skip)]
    pub warmup: Duration,
}

impl ToolConfig {
    /// Whether a run of the tool starts with a set-up step (sysbench
    /// prepare, pgbench init) that can take far longer than the measured
    /// run: 64M sysbench rows take many minutes. Each step is bounded by
    /// its own limit instead of the phase's length.
    pub(crate) fn has_setup(&self) -> bool {
        match &self.tool {
            Tool::Sysbench(c) => c.prepare,
            Tool::Pgbench(c) => c.init,
            Tool::Pytpcc(c) => c.load,
            Tool::Ycsb(_) | Tool::Command(_) => false,
        }
    }

    /// Whether the tool runs a phase's warmup: sysbench and pgbench run
    /// themselves for the warmup first, with the same threads, and that run
    /// is not counted. YCSB and commands start measuring at once.
    pub(crate) fn runs_warmup(&self) -> bool {
        matches!(self.tool, Tool::Sysbench(_) | Tool::Pgbench(_))
    }

    /// The config for one thread count of a sweep inside a cell: the
    /// set-up (sysbench prepare, pgbench init) before the `first` only and
    /// sysbench's cleanup after the `last` only, so every count runs on the
    /// same tables, prepared once, as the write-ups ran them.
    pub(crate) fn in_sweep(&self, first: bool, last: bool) -> ToolConfig {
        let mut c = self.clone();
        match &mut c.tool {
            Tool::Sysbench(s) => {
                s.prepare &= first;
                s.cleanup &= last;
            }
            Tool::Pgbench(p) => p.init &= first,
            Tool::Ycsb(_) | Tool::Command(_) | Tool::Pytpcc(_) => {}
        }
        c
    }
}

/// The engine a tool talks to (always 127.0.0.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolTarget {
    pub kind: StoreKind,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    pub db: Option<String>,
    /// The replica set `port` is the primary of; `None` for one server.
    pub replica_set: Option<ReplicaSeeds>,
}

/// A replica set as a client names it: its name and members' ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaSeeds {
    pub name: String,
    pub ports: Vec<u16>,
}

/// Why a tool phase could not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{tool} cannot drive {kind}; {hint}")]
    Unsupported {
        tool: &'static str,
        kind: StoreKind,
        hint: &'static str,
    },
    #[error("starting `{program}`: {source} (is it installed? `make deps`)")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{argv}` failed ({status}); output in {log}:\n{tail}")]
    Failed {
        argv: String,
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("`{argv}` ran longer than {secs}s and was killed; output in {log}")]
    Timeout {
        argv: String,
        secs: u64,
        log: PathBuf,
    },
    #[error("could not read {tool}'s output in {log}: {msg}")]
    Parse {
        tool: &'static str,
        log: PathBuf,
        msg: String,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("tool config: {0}")]
    Config(String),
    #[error(transparent)]
    Client(#[from] crate::clients::ClientError),
    #[error(transparent)]
    Env(#[from] pyenv::PyEnvError),
    /// A set-up step exited 0 without leaving its rows (read back).
    #[error("{step} exited 0, but its data is not there: {found}; its output is in {log}")]
    Unloaded {
        step: &'static str,
        found: String,
        log: PathBuf,
    },
    /// Reading back what a set-up step left failed.
    #[error("counting the rows {step} left: {source}")]
    Count {
        step: &'static str,
        #[source]
        source: crate::workload::stores::StoreError,
    },
}

/// The rows of each SQL table of `target`'s database `db`, read back.
pub(crate) async fn sql_counts(
    t: &ToolTarget,
    db: &str,
    tables: &[String],
    step: &'static str,
) -> Result<BTreeMap<String, u64>, ToolError> {
    use crate::workload::stores::{mysql::my_count, postgres::pg_count};
    let mut ep = crate::clients::Endpoint::loopback(t.port);
    ep.user = t.user.clone();
    ep.password = t.password.clone();
    ep.database = Some(db.to_string());
    let mut found = BTreeMap::new();
    for table in tables {
        let n = match t.kind {
            StoreKind::Postgres => pg_count(&ep, table).await,
            StoreKind::Mysql => my_count(&ep, table).await,
            _ => Ok(0),
        }
        .map_err(|source| ToolError::Count { step, source })?;
        found.insert(table.clone(), n);
    }
    Ok(found)
}

/// The tables a tool's set-up (sysbench prepare, pgbench init, py-tpcc's
/// load) left with fewer rows than it must have, in words (`CUSTOMER 0 of
/// 30000, STOCK 0 of 100000`); `None` when every one is whole. Tools exit
/// 0 after a set-up whose workers failed, so the rows are read back.
pub(crate) fn short_of(found: &BTreeMap<String, u64>, want: &[(String, u64)]) -> Option<String> {
    let short: Vec<String> = want
        .iter()
        .filter_map(|(t, w)| {
            let got = found.get(t).copied().unwrap_or(0);
            (got < *w).then(|| format!("{t} {got} of {w}"))
        })
        .collect();
    (!short.is_empty()).then(|| {
        let whole: Vec<String> = want
            .iter()
            .filter(|(t, w)| found.get(t).copied().unwrap_or(0) >= *w)
            .map(|(t, w)| format!("{t} {w}"))
            .collect();
        if whole.is_empty() {
            short.join(", ")
        } else {
            format!("{} (whole: {})", short.join(", "), whole.join(", "))
        }
    })
}

/// Runs `tool` once with `threads` connections for `duration`, writing raw
/// output into `out_dir`. `hook` adjusts every spawned command (the run
/// command uses it to place the process in the client cgroup).
pub async fn run_tool(
    tool: &ToolConfig,
    target: &ToolTarget,
    threads: u32,
    duration: Duration,
    out_dir: &Path,
    hook: impl Fn(&mut tokio::process::Command),
) -> Result<PhaseResult, ToolError> {
    let mut v = run_tool_sweep(tool, target, &[threads], duration, out_dir, hook).await?;
    Ok(v.remove(0))
}

/// Like [`run_tool`] for a list of thread counts: set-up (sysbench
/// prepare, pgbench init) once, one run per count, clean-up once.
pub async fn run_tool_sweep(
    tool: &ToolConfig,
    target: &ToolTarget,
    threads: &[u32],
    duration: Duration,
    out_dir: &Path,
    hook: impl Fn(&mut tokio::process::Command),
) -> Result<Vec<PhaseResult>, ToolError> {
    if threads.is_empty() || threads.contains(&0) {
        return Err(ToolError::Config(format!(
            "threads {}: give counts of at least 1",
            crate::display::list(threads)
        )));
    }
    let budget = tool.error_budget.budget().map_err(ToolError::Config)?;
    std::fs::create_dir_all(out_dir).map_err(|e| ToolError::Io {
        what: format!("creating {}", out_dir.display()),
        source: e,
    })?;
    let ctx = Ctx {
        target,
        threads,
        warmup: if tool.runs_warmup() {
            tool.warmup
        } else {
            Duration::ZERO
        },
        duration,
        out_dir,
        hook: &hook,
    };
    let mut results = match &tool.tool {
        Tool::Sysbench(c) => sysbench::run(c, &ctx).await?,
        Tool::Pgbench(c) => pgbench::run(c, &ctx).await?,
        Tool::Ycsb(c) => ycsb::run(c, &ctx).await?,
        Tool::Command(c) => command::run(c, &ctx).await?,
        Tool::Pytpcc(c) => pytpcc::run(c, &ctx).await?,
    };
    for r in &mut results {
        if r.status.is_ok() && !budget.allows(r.total_errors, r.total_ops + r.total_errors) {
            r.status = PhaseStatus::Failed {
                reason: format!(
                    "the tool reported {} failed operations, over the error budget ({budget})",
                    r.total_errors
                ),
            };
        }
    }
    Ok(results)
}

/// What every tool run gets: where, how many, how long, and the spawn hook.
pub struct Ctx<'a, H> {
    pub target: &'a ToolTarget,
    pub threads: &'a [u32],
    /// Unmeasured run before each count; zero for none.
    pub warmup: Duration,
    pub duration: Duration,
    pub out_dir: &'a Path,
    pub hook: &'a H,
}

/// Output of one finished process.
pub(crate) struct Ran {
    pub text: String,
    /// File name of the raw output, relative to the output folder.
    pub file: String,
}

/// Replaces `{host} {port} {user} {password} {db} {threads} {duration_s}`.
pub(crate) fn fill(arg: &str, t: &ToolTarget, threads: u32, duration: Duration) -> String {
    arg.replace("{host}", "127.0.0.1")
        .replace("{port}", &t.port.to_string())
        .replace("{user}", t.user.as_deref().unwrap_or(""))
        .replace("{password}", t.password.as_deref().unwrap_or(""))
        .replace("{db}", t.db.as_deref().unwrap_or(""))
        .replace("{threads}", &threads.to_string())
        .replace("{duration_s}", &duration.as_secs().to_string())
}

/// Runs `argv` with stdout and stderr into `out_dir/file`, under `limit`;
/// a non-zero exit is an error carrying the output's tail.
pub(crate) async fn exec(
    argv: Vec<String>,
    env: &[(&str, String)],
    out_dir: &Path,
    file: String,
    limit: Duration,
    hook: &impl Fn(&mut tokio::process::Command),
) -> Result<Ran, ToolError> {
    let log = out_dir.join(&file);
    let io = |what: String| move |e| ToolError::Io { what, source: e };
    let f = std::fs::File::create(&log).map_err(io(format!("creating {}", log.display())))?;
    let f2 = f
        .try_clone()
        .map_err(io(format!("opening {}", log.display())))?;
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(f)
        .stderr(f2)
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    hook(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| ToolError::Spawn {
        program: argv[0].clone(),
        source: e,
    })?;
    let shown = argv.join(" ");
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(s) => s.map_err(io(format!("waiting for `{shown}`")))?,
        Err(_) => {
            let _ = child.kill().await;
            return Err(ToolError::Timeout {
                argv: shown,
                secs: limit.as_secs(),
                log,
            });
        }
    };
    let text = std::fs::read_to_string(&log).map_err(io(format!("reading {}", log.display())))?;
    if !status.success() {
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        return Err(ToolError::Failed {
            argv: shown,
            status: status.to_string(),
            log,
            tail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    Ok(Ran { text, file })
}

/// What a parser read from a tool's output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub duration_s: f64,
    pub ops: BTreeMap<String, OpStats>,
    pub series: Vec<SecondSample>,
    /// The overall rate the tool printed, kept beside benchcage's own.
    pub tool_ops_per_sec: Option<f64>,
}

impl Parsed {
    /// The phase result, with totals summed over kinds. YCSB also counts a
    /// read-modify-write's read under READ and its update under UPDATE;
    /// those are taken out of the totals so each operation counts once.
    pub(crate) fn into_result(self, workload: &str, threads: u32, raw: Vec<String>) -> PhaseResult {
        let rmw = self.ops.get("READ-MODIFY-WRITE");
        let (inner_ok, inner_errors) = rmw.map_or((0, 0), |o| (2 * o.count, o.errors));
        let total_ops = self.ops.values().map(|o| o.count).sum::<u64>();
        let total_ops = total_ops.saturating_sub(inner_ok);
        let total_errors = self.ops.values().map(|o| o.errors).sum::<u64>();
        let total_errors = total_errors.saturating_sub(inner_errors);
        let throughput = if self.duration_s > 0.0 {
            total_ops as f64 / self.duration_s
        } else {
            self.ops.values().map(|o| o.throughput).sum()
        };
        PhaseResult {
            name: workload.to_string(),
            workload: workload.to_string(),
            threads,
            duration_s: self.duration_s,
            total_ops,
            total_errors,
            throughput,
            tool_ops_per_sec: self.tool_ops_per_sec,
            headline: None,
            mongo_tpcc: None,
            ops: self.ops,
            series: self.series,
            status: PhaseStatus::Ok,
            raw_outputs: raw,
            tool_env: None,
        }
    }
}

/// One kind's statistics from a tool's summary.
pub(crate) fn op(count: u64, errors: u64, throughput: f64, latency_us: Percentiles) -> OpStats {
    OpStats {
        count,
        errors,
        throughput,
        calls: None,
        latency_us,
        intended_latency_us: None,
        error_samples: Vec::new(),
    }
}

/// Latency percentiles with only the mean known.
pub(crate) fn mean_only(mean_us: Option<f64>) -> Percentiles {
    Percentiles {
        mean: mean_us,
        ..Default::default()
    }
}

/// Sets the percentile a tool calls `name` (avg, min, max, 50th, 95th,
/// 99th, 99.9th); unknown names are ignored.
pub(crate) fn set_latency(p: &mut Percentiles, name: &str, v: f64) {
    let v = Some(v);
    match name {
        "avg" => p.mean = v,
        "min" => p.min = v,
        "max" => p.max = v,
        "50th" => p.p50 = v,
        "95th" => p.p95 = v,
        "99th" => p.p99 = v,
        "99.9th" => p.p999 = v,
        _ => {}
    }
}

/// The parse error for the output saved in `out_dir/file`.
pub(crate) fn parse_error(
    tool: &'static str,
    out_dir: &Path,
    file: &str,
) -> impl FnOnce(Unreadable) -> ToolError {
    let log = out_dir.join(file);
    move |e| ToolError::Parse {
        tool,
        log,
        msg: e.0,
    }
}

/// Why a tool's output does not read as a result: what is missing or
/// malformed in it. Callers only report it, as [`ToolError::Parse`] with
/// the log it came from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

impl From<String> for Unreadable {
    fn from(s: String) -> Unreadable {
        Unreadable(s)
    }
}

impl From<&str> for Unreadable {
    fn from(s: &str) -> Unreadable {
        Unreadable(s.to_string())
    }
}

/// Runs a user command once per thread count (placeholders filled) and
/// parses each output with `parse(text, wall seconds)`.
pub(crate) async fn run_each(
    tool: &'static str,
    argv: &[String],
    ctx: &Ctx<'_, impl Fn(&mut tokio::process::Command)>,
    parse: impl Fn(&str, f64) -> Result<Parsed, Unreadable>,
) -> Result<Vec<PhaseResult>, ToolError> {
    let (t, threads, duration, out_dir, hook) =
        (ctx.target, ctx.threads, ctx.duration, ctx.out_dir, ctx.hook);
    if argv.is_empty() {
        return Err(ToolError::Config(format!("{tool}: `argv` is empty")));
    }
    let mut results = Vec::new();
    for &n in threads {
        let filled: Vec<String> = argv.iter().map(|a| fill(a, t, n, duration)).collect();
        let file = format!("{tool}-run-{n}.txt");
        let limit = duration.max(Duration::from_secs(60)) * 4;
        let started = std::time::Instant::now();
        let r = exec(filled, &[], out_dir, file, limit, hook).await?;
        let parsed = parse(&r.text, started.elapsed().as_secs_f64())
            .map_err(parse_error(tool, out_dir, &r.file))?;
        let label = if tool == "ycsb" {
            "ycsb-external"
        } else {
            tool
        };
        results.push(parsed.into_result(label, n, vec![r.file]));
    }
    Ok(results)
}

/// A number in a tool's output (`1,234.5` and `1234.5` alike); `NaN`
/// and infinities (YCSB prints `NaN` for a kind without operations) are
/// no number.
pub(crate) fn num(s: &str) -> Option<f64> {
    s.trim()
        .replace(',', "")
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}
