//! py-tpcc (`tpcc.py`, the user's own install) against MongoDB, run as
//! its users run it: benchcage writes the driver's config file and starts
//! `tpcc.py --config FILE ... mongodb` from its own directory (it finds
//! its drivers as `./drivers/*driver.py`, relative to the current one).
//!
//! Two versions are in use, and both print their results differently:
//! the original (apavlo/py-tpcc, Python 2) prints a 4-column table to
//! stdout (`Executed`, total time in microseconds, `Rate`); the
//! MongoDB-maintained one (mongodb-labs/py-tpcc) logs a 13-column table
//! (`Complete`, total time in seconds, percentiles in ms, `Aborts`) and a
//! line `... TpmC for ... WH: <tpmC> <new orders> total <secs> durSec`.
//! The metric is NEW ORDER transactions per minute: the TpmC line's when
//! printed, else NEW_ORDER's count over the run's seconds. A load-only run
//! (`--no-execute`) prints no figure: its load time is the process's wall
//! time, as the write-ups measured it with `time`.

use super::pyenv::PyEnv;
use super::{
    Ctx, Parsed, ToolError, ToolTarget, Unreadable, exec, mean_only, num, op, parse_error,
};
use crate::clients::Endpoint;
use crate::clients::mongodb::MongoConn;
use crate::results::model::{Headline, OpStats, Percentiles, PhaseResult, PhaseStatus, ToolEnv};
use crate::workload::stores::StoreKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The program py-tpcc's users run.
pub(crate) const PROGRAM: &str = "tpcc.py";
/// The config file benchcage writes, in the tool's output folder.
pub const CONFIG_FILE: &str = "pytpcc-mongodb.cfg";
/// The driver py-tpcc loads for `mongodb`, relative to its directory.
const DRIVER: &str = "drivers/mongodbdriver.py";

fn yes() -> bool {
    true
}
fn default_database() -> String {
    "tpcc".into()
}

/// `tool: {pytpcc: {warehouses, load, path, python, denormalize, ...}}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PytpccConfig {
    /// `--warehouses`.
    pub warehouses: u64,
    /// Load only (`--no-execute`), timed; otherwise run the transactions
    /// on the data a load left (`--no-load --duration`).
    #[serde(default)]
    pub load: bool,
    /// `tpcc.py` or the directory holding it; default: `tpcc.py` on PATH.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// The interpreter (`python2`, `pypy`); default: `tpcc.py` itself.
    #[serde(default)]
    pub python: Option<String>,
    /// py-tpcc's `denormalize` (its default: true).
    #[serde(default = "yes")]
    pub denormalize: bool,
    /// MongoDB-maintained py-tpcc only: false writes `notransactions =
    /// True` (multi-document transactions need a replica set).
    #[serde(default = "yes")]
    pub transactions: bool,
    /// The database (`name` in the config file).
    #[serde(default = "default_database")]
    pub database: String,
    /// `write_concern` in the config file; the run fills it from the
    /// cell's `write_concern` knob.
    #[serde(default)]
    pub write_concern: Option<String>,
    /// The load's floor rate, warehouses a minute; `None`:
    /// [`LOAD_FLOOR_PER_MIN`]. See [`time_limit`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_load_rate: Option<f64>,
    /// The pymongo this py-tpcc was written for (`3.13.0` for the
    /// MongoDB-maintained one, which calls `Collection.insert`): it runs
    /// under benchcage's virtualenv with that pymongo, not the host's.
    #[serde(default)]
    pub pymongo: Option<String>,
    /// That virtualenv's folder; the plan fills it from the cache.
    #[serde(default)]
    pub python_env: Option<PathBuf>,
}

impl PytpccConfig {
    /// The virtualenv this py-tpcc runs in, when it has a pinned pymongo.
    pub fn env(&self) -> Option<PyEnv> {
        let v = self.pymongo.as_deref()?;
        let mut e = PyEnv::pymongo(&crate::fetch::cache::root(), v);
        if let Some(dir) = &self.python_env {
            e.dir = dir.clone();
        }
        Some(e)
    }
}

/// The floor rate of a py-tpcc load unless the scenario gives one: half a
/// warehouse a minute. Write-up 004's MongoDB 4.4 loaded 1000 warehouses
/// in 259 minutes (3.9 a minute, 100 clients on 40 CPUs); a load at an
/// eighth of that on one CPU still finishes, and one slower is stuck.
pub(crate) const LOAD_FLOOR_PER_MIN: f64 = 0.5;

/// The least time any py-tpcc step is given: an hour.
const MIN_LIMIT: Duration = Duration::from_secs(3600);

/// How long a py-tpcc step may run before it is killed: a load gets its
/// warehouses at the floor rate (`min_load_rate`, else
/// [`LOAD_FLOOR_PER_MIN`]), the transactions 4x the phase's duration,
/// each at least an hour.
pub(crate) fn time_limit(c: &PytpccConfig, duration: Duration) -> Duration {
    let timed = duration.max(Duration::from_secs(60)) * 4;
    if !c.load {
        return timed;
    }
    load_limit(c.warehouses, c.min_load_rate, duration)
}

/// A load's limit: `warehouses` at `rate` (else [`LOAD_FLOOR_PER_MIN`])
/// a minute, never under 4x the phase's `duration` nor an hour, in
/// whole minutes.
pub(crate) fn load_limit(warehouses: u64, rate: Option<f64>, duration: Duration) -> Duration {
    let rate = rate.unwrap_or(LOAD_FLOOR_PER_MIN);
    let minutes = (warehouses as f64 / rate).ceil().min(1e8) as u64;
    Duration::from_secs(minutes * 60)
        .max(duration.max(Duration::from_secs(60)) * 4)
        .max(MIN_LIMIT)
}

/// Where `tpcc.py` is and the directory it must run from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub script: PathBuf,
    pub dir: PathBuf,
}

/// Finds `tpcc.py`: the config's `path` (the script or its directory), or
/// `tpcc.py` on `search` (PATH's directories), symlinks resolved so that
/// its drivers are beside it.
pub(crate) fn locate(
    path: Option<&Path>,
    search: Option<&std::ffi::OsStr>,
) -> Result<Located, ToolError> {
    let given = match path {
        Some(p) if p.is_dir() => p.join(PROGRAM),
        Some(p) => p.to_path_buf(),
        None => search
            .into_iter()
            .flat_map(std::env::split_paths)
            .map(|d| d.join(PROGRAM))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                ToolError::Config(format!(
                    "{PROGRAM} is not on PATH; give `path: /path/to/py-tpcc/pytpcc/tpcc.py` \
                     in the phase's `pytpcc` block"
                ))
            })?,
    };
    let script = given.canonicalize().map_err(|e| {
        ToolError::Config(format!(
            "py-tpcc `{}`: {e}; `path` names tpcc.py or its directory",
            given.display()
        ))
    })?;
    let dir = script
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    if !dir.join(DRIVER).is_file() {
        return Err(ToolError::Config(format!(
            "no {DRIVER} beside {}: `path` must point into py-tpcc's `pytpcc` directory",
            script.display()
        )));
    }
    Ok(Located { script, dir })
}

/// The `[mongodb]` section py-tpcc reads with `--config`: `host` and
/// `port`, which the original reads, and `uri`, which the
/// MongoDB-maintained one reads. That one takes `host`/`port` only when
/// `uri` is absent, and then writes its default `uri`
/// (`mongodb://localhost:27017`) into the config its worker processes
/// are handed, so without a `uri` every worker after the first connects
/// to localhost:27017. A replica set's `uri` lists its members.
/// `denormalize` is empty for false: the original takes the raw string,
/// so `False` would be true there; the other compares with `True`.
pub fn config_file(c: &PytpccConfig, t: &ToolTarget) -> String {
    let mut s = format!(
        "# written by benchcage for {PROGRAM} --config\n[mongodb]\nhost = 127.0.0.1\nport = {}\nuri = {}\nname = {}\ndenormalize = {}\n",
        t.port,
        uri(t),
        c.database,
        if c.denormalize { "True" } else { "" },
    );
    if !c.transactions {
        s.push_str("notransactions = True\n");
    }
    if let Some(w) = &c.write_concern {
        s.push_str(&format!("write_concern = {w}\n"));
    }
    s
}

/// `mongodb://127.0.0.1:PORT/`, or a replica set's seed list and name.
pub fn uri(t: &ToolTarget) -> String {
    match &t.replica_set {
        Some(rs) if !rs.ports.is_empty() => {
            let hosts: Vec<String> = rs.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
            format!("mongodb://{}/?replicaSet={}", hosts.join(","), rs.name)
        }
        _ => format!("mongodb://127.0.0.1:{}/", t.port),
    }
}

/// The command line for `threads` clients (the config file at `config`).
pub fn argv(
    c: &PytpccConfig,
    at: &Located,
    config: &Path,
    threads: u32,
    duration: Duration,
) -> Vec<String> {
    let mut v: Vec<String> = c.python.iter().cloned().collect();
    v.push(at.script.display().to_string());
    v.extend([
        "--config".into(),
        config.display().to_string(),
        "--warehouses".into(),
        c.warehouses.to_string(),
        "--clients".into(),
        threads.to_string(),
    ]);
    if c.load {
        v.push("--no-execute".into());
    } else {
        v.extend([
            "--no-load".into(),
            "--duration".into(),
            duration.as_secs().max(1).to_string(),
        ]);
    }
    v.push("mongodb".into());
    v
}

/// What py-tpcc printed for a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PytpccOutput {
    pub parsed: Parsed,
    /// NEW ORDER transactions per minute.
    pub tpmc: f64,
    /// `Data Loading Time: N seconds`, for a run that also loaded.
    pub load_s: Option<f64>,
}

/// The transactions of py-tpcc's tables.
const TXNS: &[&str] = &[
    "DELIVERY",
    "NEW_ORDER",
    "ORDER_STATUS",
    "PAYMENT",
    "STOCK_LEVEL",
];

/// Reads either version's final table (the last one printed).
pub fn parse(text: &str) -> Result<PytpccOutput, Unreadable> {
    let start = text
        .rfind("Execution Results after ")
        .ok_or("no `Execution Results after N seconds` table")?;
    let table = &text[start..];
    let secs = table["Execution Results after ".len()..]
        .split_whitespace()
        .next()
        .and_then(num)
        .ok_or("no seconds after `Execution Results after`")?;
    // The MongoDB-maintained version's header says `Complete`, the
    // original's `Executed`; their time columns differ in unit.
    let labs = table
        .lines()
        .take(4)
        .any(|l| l.contains("Complete") && l.contains("Aborts"));
    let mut ops = BTreeMap::new();
    for line in table.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        let Some(&name) = t.first() else { continue };
        if !TXNS.contains(&name) || !line.starts_with("  ") {
            continue;
        }
        let stats = if labs { labs_row(&t) } else { original_row(&t) }
            .ok_or_else(|| format!("the {name} row does not read: `{}`", line.trim()))?;
        ops.insert(name.to_string(), stats);
    }
    let new_orders = ops
        .get("NEW_ORDER")
        .map(|o| o.count)
        .ok_or("no NEW_ORDER row in the results table")?;
    for o in ops.values_mut() {
        o.throughput = if secs > 0.0 {
            o.count as f64 / secs
        } else {
            0.0
        };
    }
    let tpmc = match tpmc_line(table) {
        Some(v) => v,
        None if secs > 0.0 => new_orders as f64 * 60.0 / secs,
        None => return Err("the run lasted 0 seconds: no NEW ORDER rate".into()),
    };
    let load_s = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Data Loading Time: "))
        .filter_map(|r| r.split_whitespace().next().and_then(num))
        .next_back();
    Ok(PytpccOutput {
        parsed: Parsed {
            duration_s: secs,
            ops,
            series: Vec::new(),
            tool_ops_per_sec: None,
        },
        tpmc,
        load_s,
    })
}

/// `NAME count time_us rate txn/s`: the mean latency is the total time
/// over the count.
fn original_row(t: &[&str]) -> Option<OpStats> {
    let count = t.get(1).and_then(|s| s.parse::<u64>().ok())?;
    let total_us = t.get(2).and_then(|s| num(s))?;
    let mean = (count > 0).then(|| total_us / count as f64);
    Some(op(count, 0, 0.0, mean_only(mean)))
}

/// `NAME count time_s percent retries min p50 p75 p90 p95 p99 max aborts`,
/// latencies in milliseconds.
fn labs_row(t: &[&str]) -> Option<OpStats> {
    if t.len() < 13 {
        return None;
    }
    let count = t[1].parse::<u64>().ok()?;
    let total_s = num(t[2])?;
    let ms = |i: usize| num(t[i]).map(|v| v * 1000.0);
    let latency = Percentiles {
        mean: (count > 0).then(|| total_s * 1e6 / count as f64),
        min: ms(5),
        p50: ms(6),
        p95: ms(9),
        p99: ms(10),
        max: ms(11),
        ..Default::default()
    };
    let aborts = t[12].parse::<u64>().ok()?;
    Some(op(count, aborts, 0.0, latency))
}

/// The number after `WH:` on the MongoDB-maintained version's TpmC line.
fn tpmc_line(text: &str) -> Option<f64> {
    let line = text.lines().rev().find(|l| l.contains(" TpmC for "))?;
    let after = line.split_once(" WH: ")?.1;
    after.split_whitespace().next().and_then(num)
}

/// Runs py-tpcc once per thread count: a timed load, or the transactions.
/// A load passes only when its data is there, read back from the server:
/// py-tpcc exits 0 when every loader worker failed.
pub async fn run(
    c: &PytpccConfig,
    ctx: &Ctx<'_, impl Fn(&mut tokio::process::Command)>,
) -> Result<Vec<PhaseResult>, ToolError> {
    check_target(ctx.target)?;
    if c.warehouses == 0 {
        return Err(ToolError::Config(
            "pytpcc: warehouses must be at least 1".into(),
        ));
    }
    let at = locate(c.path.as_deref(), std::env::var_os("PATH").as_deref())?;
    let mut c = c.clone();
    let tool_env = match c.env() {
        Some(env) => {
            let rec = env.ready()?;
            let python = env.python().display().to_string();
            c.python = Some(python.clone());
            Some(ToolEnv {
                python,
                version: rec.python,
                packages: rec.packages,
            })
        }
        None => None,
    };
    let out_dir = ctx.out_dir.canonicalize().map_err(|e| ToolError::Io {
        what: format!("resolving {}", ctx.out_dir.display()),
        source: e,
    })?;
    let config = out_dir.join(CONFIG_FILE);
    std::fs::write(&config, config_file(&c, ctx.target)).map_err(|e| ToolError::Io {
        what: format!("writing {}", config.display()),
        source: e,
    })?;
    let hook = |cmd: &mut tokio::process::Command| {
        cmd.current_dir(&at.dir);
        (ctx.hook)(cmd);
    };
    let mut results = Vec::new();
    for &n in ctx.threads {
        let step = if c.load { "load" } else { "run" };
        let file = format!("pytpcc-{step}-{n}.txt");
        let limit = time_limit(&c, ctx.duration);
        let argv = argv(&c, &at, &config, n, ctx.duration);
        let started = std::time::Instant::now();
        let ran = exec(argv, &[], &out_dir, file, limit, &hook).await?;
        let wall = started.elapsed().as_secs_f64();
        let raw = vec![ran.file.clone(), CONFIG_FILE.to_string()];
        let mut r = if c.load {
            let mut r = load_result(c.warehouses, n, wall, raw);
            let found = loaded(ctx.target, &c.database).await?;
            if let Some(short) = super::short_of(&found, &expected(c.warehouses)) {
                r.status = PhaseStatus::Failed {
                    reason: format!(
                        "py-tpcc exited 0, but its load is not there: {short} (counted in database `{}`; its output is {})",
                        c.database, ran.file
                    ),
                };
            }
            r
        } else {
            let out = parse(&ran.text).map_err(parse_error("py-tpcc", &out_dir, &ran.file))?;
            let mut r = out.parsed.into_result("pytpcc", n, raw);
            r.headline = Some(Headline::tpmc(out.tpmc));
            r
        };
        r.tool_env = tool_env.clone();
        results.push(r);
    }
    Ok(results)
}

/// Items and, per warehouse, districts, customers and stock: TPC-C's
/// cardinalities (clause 1.2.1), which py-tpcc loads at scale factor 1.
const ITEMS: u64 = 100_000;
const DISTRICTS: u64 = 10;
const CUSTOMERS: u64 = 30_000;
const STOCK: u64 = 100_000;

/// The collections a load of `warehouses` must leave, with their counts.
pub fn expected(warehouses: u64) -> Vec<(String, u64)> {
    [
        ("WAREHOUSE", warehouses),
        ("DISTRICT", DISTRICTS * warehouses),
        ("CUSTOMER", CUSTOMERS * warehouses),
        ("STOCK", STOCK * warehouses),
        ("ITEM", ITEMS),
    ]
    .into_iter()
    .map(|(n, c)| (n.to_string(), c))
    .collect()
}

/// The documents of each collection a load must leave, read back.
async fn loaded(t: &ToolTarget, database: &str) -> Result<BTreeMap<String, u64>, ToolError> {
    let mut conn = MongoConn::connect(&Endpoint::loopback(t.port)).await?;
    let mut found = BTreeMap::new();
    for (coll, _) in expected(1) {
        let r = conn
            .run_json(database, &serde_json::json!({ "count": coll }))
            .await?;
        found.insert(coll, r["n"].as_u64().unwrap_or(0));
    }
    Ok(found)
}

/// A load-only run: its wall time, with the warehouses as its operations.
fn load_result(warehouses: u64, threads: u32, wall_s: f64, raw: Vec<String>) -> PhaseResult {
    let per_s = if wall_s > 0.0 {
        warehouses as f64 / wall_s
    } else {
        0.0
    };
    Parsed {
        duration_s: wall_s,
        ops: [(
            "WAREHOUSE".to_string(),
            op(warehouses, 0, per_s, mean_only(None)),
        )]
        .into(),
        series: Vec::new(),
        tool_ops_per_sec: None,
    }
    .into_result("pytpcc:load", threads, raw)
}

fn check_target(t: &ToolTarget) -> Result<(), ToolError> {
    match t.kind {
        StoreKind::Mongodb => Ok(()),
        kind => Err(ToolError::Unsupported {
            tool: "py-tpcc",
            kind,
            hint: "benchcage runs its mongodb driver only; use a mongodb engine",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGINAL: &str =
        include_str!("../../../tests/fixtures/tools/pytpcc-original-mongodb-run.txt");
    const ORIGINAL_LOADED: &str =
        include_str!("../../../tests/fixtures/tools/pytpcc-original-mongodb-load-and-run.txt");
    const LABS: &str = include_str!("../../../tests/fixtures/tools/pytpcc-mongodb-labs-run.txt");

    #[test]
    fn the_original_table_gives_new_orders_per_minute_from_the_count_and_seconds() {
        let out = parse(ORIGINAL).unwrap();
        assert_eq!(out.parsed.duration_s, 60.0);
        assert_eq!(out.tpmc, 4617.0);
        let no = &out.parsed.ops["NEW_ORDER"];
        assert_eq!((no.count, no.errors), (4617, 0));
        // 98240134.4394 us over 4617 transactions.
        assert!((no.latency_us.mean.unwrap() - 21277.9).abs() < 0.1);
        let counts: Vec<u64> = out.parsed.ops.values().map(|o| o.count).collect();
        assert_eq!(counts, [412, 4617, 398, 4486, 413]);
        assert_eq!(out.load_s, None);
        let r = out.parsed.into_result("pytpcc", 4, vec![]);
        assert_eq!(r.total_ops, 10326, "TOTAL is not a transaction");
    }

    #[test]
    fn a_run_that_also_loaded_reports_its_load_time() {
        let out = parse(ORIGINAL_LOADED).unwrap();
        assert_eq!((out.load_s, out.tpmc), (Some(754.0), 4617.0));
    }

    #[test]
    fn the_mongodb_labs_table_gives_the_tpmc_it_printed_with_aborts_and_percentiles() {
        let out = parse(LABS).unwrap();
        // Its TpmC line divides by the exact 300.41 s: 1973, not 9876 / 5.
        assert_eq!(out.tpmc, 1973.0);
        assert_eq!(out.parsed.duration_s, 300.0);
        let no = &out.parsed.ops["NEW_ORDER"];
        assert_eq!((no.count, no.errors), (9876, 12));
        let l = &no.latency_us;
        assert_eq!(
            (l.p50, l.p99, l.max),
            (Some(55_820.0), Some(95_140.0), Some(287_540.0))
        );
        // 498.215 s over 9876 transactions.
        assert!((l.mean.unwrap() - 50_447.0).abs() < 1.0, "{l:?}");
        assert_eq!(out.parsed.ops["PAYMENT"].errors, 3);
        assert_eq!(out.parsed.ops.len(), 5);
    }

    #[test]
    fn output_without_a_results_table_is_an_error_that_says_what_is_missing() {
        let e = parse("03-14-2021 10:01:12 [<module>:241] INFO : Initializing\n")
            .unwrap_err()
            .0;
        assert!(e.contains("Execution Results"), "{e}");
        let no_new_order = ORIGINAL.replace("NEW_ORDER", "NEWORDER");
        assert!(parse(&no_new_order).unwrap_err().0.contains("NEW_ORDER"));
    }

    fn target(port: u16) -> ToolTarget {
        ToolTarget {
            kind: StoreKind::Mongodb,
            port,
            user: None,
            password: None,
            db: None,
            replica_set: None,
        }
    }

    #[test]
    fn the_config_file_names_loopback_the_port_the_uri_and_the_write_concern() {
        let mut c: PytpccConfig = serde_yaml::from_str("{warehouses: 2}").unwrap();
        c.write_concern = Some("majority".into());
        let text = config_file(&c, &target(27123));
        // `host`/`port` for the original, `uri` for the MongoDB-maintained
        // one, whose workers otherwise connect to localhost:27017.
        assert!(text.contains(
            "[mongodb]\nhost = 127.0.0.1\nport = 27123\nuri = mongodb://127.0.0.1:27123/\nname = tpcc\n"
        ));
        assert!(
            text.contains("denormalize = True\n") && text.contains("write_concern = majority\n")
        );
        assert!(!text.contains("notransactions") && !text.contains("27017"));
        c.denormalize = false;
        c.transactions = false;
        let text = config_file(&c, &target(1));
        assert!(text.contains("denormalize = \n") && text.contains("notransactions = True\n"));
    }

    #[test]
    fn a_replica_sets_uri_lists_its_members_and_names_the_set() {
        let mut t = target(30001);
        t.replica_set = Some(super::super::ReplicaSeeds {
            name: "benchcage".into(),
            ports: vec![30001, 30002, 30003],
        });
        assert_eq!(
            uri(&t),
            "mongodb://127.0.0.1:30001,127.0.0.1:30002,127.0.0.1:30003/?replicaSet=benchcage"
        );
    }

    #[test]
    fn a_load_must_leave_tpccs_cardinalities_for_its_warehouses() {
        let want = expected(2);
        let mut found: BTreeMap<String, u64> = want.iter().map(|(t, n)| (t.clone(), *n)).collect();
        assert_eq!(super::super::short_of(&found, &want), None);
        found.insert("CUSTOMER".into(), 0);
        found.remove("STOCK");
        assert_eq!(
            super::super::short_of(&found, &want).unwrap(),
            "CUSTOMER 0 of 60000, STOCK 0 of 200000 (whole: WAREHOUSE 2, DISTRICT 20, ITEM 100000)"
        );
    }

    #[test]
    fn a_load_runs_without_executing_and_a_run_without_loading() {
        let at = Located {
            script: "/opt/py-tpcc/pytpcc/tpcc.py".into(),
            dir: "/opt/py-tpcc/pytpcc".into(),
        };
        let mut c: PytpccConfig =
            serde_yaml::from_str("{warehouses: 125, load: true, python: pypy}").unwrap();
        let a = argv(&c, &at, Path::new("/r/c.cfg"), 100, Duration::from_secs(60));
        assert_eq!(
            a.join(" "),
            "pypy /opt/py-tpcc/pytpcc/tpcc.py --config /r/c.cfg --warehouses 125 --clients 100 --no-execute mongodb"
        );
        c.load = false;
        c.python = None;
        let a = argv(&c, &at, Path::new("/r/c.cfg"), 10, Duration::from_secs(300));
        assert!(
            a.join(" ")
                .ends_with("--clients 10 --no-load --duration 300 mongodb")
        );
        assert!(
            !a.iter().any(|x| x == "--port"),
            "py-tpcc has no --port flag"
        );
    }

    #[test]
    fn a_load_is_given_its_warehouses_at_the_floor_rate_not_four_times_the_duration() {
        let hour = Duration::from_secs(3600);
        let mut c: PytpccConfig = serde_yaml::from_str("{warehouses: 1000, load: true}").unwrap();
        // Write-up 004: a 60 min phase, and 4.4 loaded for 259 minutes.
        let limit = time_limit(&c, hour);
        assert_eq!(limit, Duration::from_secs(2000 * 60));
        assert!(limit > Duration::from_secs(259 * 60));
        c.min_load_rate = Some(4.0);
        assert_eq!(time_limit(&c, hour), Duration::from_secs(250 * 60));
        c.min_load_rate = Some(20.0);
        assert_eq!(
            time_limit(&c, hour),
            4 * hour,
            "never below 4x the duration"
        );
        c.warehouses = 1;
        assert_eq!(
            time_limit(&c, Duration::from_secs(1)),
            hour,
            "at least an hour"
        );
        c.load = false;
        assert_eq!(
            time_limit(&c, Duration::from_secs(300)),
            Duration::from_secs(1200)
        );
    }

    #[test]
    fn tpcc_py_is_found_on_path_and_must_have_its_drivers_beside_it() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("pytpcc");
        std::fs::create_dir_all(home.join("drivers")).unwrap();
        std::fs::write(home.join(PROGRAM), "").unwrap();
        let e = locate(None, Some(home.as_os_str()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("drivers/mongodbdriver.py"), "{e}");
        std::fs::write(home.join(DRIVER), "").unwrap();
        let at = locate(None, Some(home.as_os_str())).unwrap();
        assert_eq!(at.dir, home.canonicalize().unwrap());
        assert_eq!(locate(Some(&home), None).unwrap(), at);
        let e = locate(None, Some(d.path().as_os_str()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not on PATH") && e.contains("path:"), "{e}");
    }
}
