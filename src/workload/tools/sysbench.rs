//! sysbench 1.0 (Debian): prepare, run per thread count, cleanup. Results
//! come from a report hook (a wrapper script that loads the test, then
//! replaces `sysbench.hooks.report_intermediate` and `report_cumulative`
//! with functions printing one JSON object per line after a marker); the
//! text report is parsed when no hook output is found.

use super::{Ctx, Parsed, Ran, ToolError, ToolTarget, Unreadable, exec, op, parse_error};
use crate::clients::Endpoint;
use crate::clients::mysql::MyConn;
use crate::results::model::{Percentiles, PhaseResult, SecondSample};
use crate::workload::stores::StoreKind;
use regex::Regex;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where Debian installs the bundled tests.
pub(crate) const TEST_DIR: &str = "/usr/share/sysbench";
/// Prefix of each hook line.
pub const MARKER: &str = "BENCHCAGE-JSON ";

fn default_tables() -> u32 {
    1
}
fn default_table_size() -> u64 {
    10_000
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

/// `tool: {sysbench: {...}}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SysbenchConfig {
    /// A bundled test (`oltp_read_write`, `oltp_point_select`...) or a Lua script path.
    pub test: String,
    #[serde(default = "default_tables")]
    pub tables: u32,
    #[serde(default = "default_table_size")]
    pub table_size: u64,
    /// Extra options for every step (`--mysql-storage-engine=rocksdb`).
    #[serde(default)]
    pub args: Vec<String>,
    /// Threads of `prepare` (sysbench's `--threads` at that step): each
    /// fills its share of the tables. Write-up 002 loads with 8.
    #[serde(default = "one")]
    pub loaders: u32,
    /// Run `prepare` first and `cleanup` last.
    #[serde(default = "yes")]
    pub prepare: bool,
    #[serde(default = "yes")]
    pub cleanup: bool,
}

impl SysbenchConfig {
    fn script(&self) -> PathBuf {
        if self.test.contains('/') || self.test.ends_with(".lua") {
            PathBuf::from(&self.test)
        } else {
            Path::new(TEST_DIR).join(format!("{}.lua", self.test))
        }
    }

    fn short_name(&self) -> String {
        self.script()
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.test.clone())
    }
}

/// The wrapper script: loads the test, then installs the JSON hooks.
pub(crate) fn wrapper_lua(test_script: &Path) -> String {
    let path = test_script
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    format!(
        r#"-- Written by benchcage: run the test, report as JSON lines.
dofile("{path}")
local function emit(kind, stat)
  io.write(string.format('{MARKER}{{"kind":"%s","time_total":%.6f,"time_interval":%.6f,"threads":%u,"events":%u,"reads":%u,"writes":%u,"other":%u,"errors":%u,"reconnects":%u,"latency_pct_ms":%.6f,"latency_min_ms":%.6f,"latency_avg_ms":%.6f,"latency_max_ms":%.6f}}\n',
    kind, stat.time_total, stat.time_interval, stat.threads_running, stat.events,
    stat.reads, stat.writes, stat.other, stat.errors, stat.reconnects,
    stat.latency_pct * 1000, (stat.latency_min or 0) * 1000,
    (stat.latency_avg or 0) * 1000, (stat.latency_max or 0) * 1000))
  io.flush()
end
sysbench.hooks.report_intermediate = function(stat)
  emit("intermediate", stat)
  sysbench.report_default(stat)
end
sysbench.hooks.report_cumulative = function(stat) emit("cumulative", stat) end
"#
    )
}

/// One hook line.
#[derive(Debug, Clone, serde::Deserialize)]
struct HookStat {
    kind: String,
    time_total: f64,
    time_interval: f64,
    events: u64,
    errors: u64,
    latency_pct_ms: f64,
    latency_min_ms: f64,
    latency_avg_ms: f64,
    latency_max_ms: f64,
}

fn ms_to_us(v: f64) -> f64 {
    v * 1000.0
}

/// Reads the hook's JSON lines; `None` when there are none.
pub(crate) fn parse_hook(text: &str) -> Result<Option<Parsed>, Unreadable> {
    let mut series = Vec::new();
    let mut cumulative: Option<HookStat> = None;
    for line in text.lines() {
        let Some(json) = line.trim().strip_prefix(MARKER) else {
            continue;
        };
        let s: HookStat =
            serde_json::from_str(json).map_err(|e| format!("hook line `{line}`: {e}"))?;
        if s.kind == "cumulative" {
            cumulative = Some(s);
        } else {
            series.push(SecondSample {
                t: (s.time_total.round() as u64).saturating_sub(1),
                ops: s.events,
                errors: s.errors,
                by_kind: [("TRANSACTION".to_string(), s.events)].into(),
            });
        }
    }
    let Some(c) = cumulative else {
        return if series.is_empty() {
            Ok(None)
        } else {
            Err("intermediate reports but no final report (did sysbench stop early?)".into())
        };
    };
    let secs = c.time_total.max(c.time_interval);
    // The hook reports sysbench's `--percentile` (95 unless changed).
    let latency = Percentiles {
        min: Some(ms_to_us(c.latency_min_ms)),
        mean: Some(ms_to_us(c.latency_avg_ms)),
        p95: Some(ms_to_us(c.latency_pct_ms)),
        max: Some(ms_to_us(c.latency_max_ms)),
        ..Default::default()
    };
    let op = op(
        c.events,
        c.errors,
        if secs > 0.0 {
            c.events as f64 / secs
        } else {
            0.0
        },
        latency,
    );
    Ok(Some(Parsed {
        duration_s: secs,
        ops: [("TRANSACTION".to_string(), op)].into(),
        series,
        tool_ops_per_sec: None,
    }))
}

fn capture(re: &str, text: &str) -> Option<f64> {
    Regex::new(re)
        .ok()?
        .captures_iter(text)
        .last()
        .and_then(|c| super::num(&c[1]))
}

/// Reads sysbench's default text report.
pub(crate) fn parse_text(text: &str) -> Result<Parsed, Unreadable> {
    let events = capture(r"(?m)^\s*transactions:\s+(\d+)", text)
        .or_else(|| capture(r"(?m)^\s*total number of events:\s+(\d+)", text))
        .ok_or("no `transactions:` or `total number of events:` line")?;
    let secs = capture(r"(?m)^\s*total time:\s+([\d.]+)s", text).ok_or("no `total time:` line")?;
    let errors = capture(r"(?m)^\s*ignored errors:\s+(\d+)", text).unwrap_or(0.0);
    // A line sysbench did not print stays `None`.
    let lat = |name: &str| capture(&format!(r"(?m)^\s*{name}:\s+([\d.,]+)"), text).map(ms_to_us);
    let interval = Regex::new(r"(?m)^\[ (\d+)s \] thds: \d+ tps: ([\d.]+) .*?err/s:? ([\d.]+)")
        .map_err(|e| e.to_string())?;
    let series = interval
        .captures_iter(text)
        .map(|c| {
            let tps = super::num(&c[2]).unwrap_or(0.0).round() as u64;
            SecondSample {
                t: super::num(&c[1]).unwrap_or(1.0) as u64 - 1,
                ops: tps,
                errors: super::num(&c[3]).unwrap_or(0.0).round() as u64,
                by_kind: [("TRANSACTION".to_string(), tps)].into(),
            }
        })
        .collect();
    let latency = Percentiles {
        min: lat("min"),
        mean: lat("avg"),
        p50: lat(r"50th percentile"),
        p95: lat(r"95th percentile"),
        p99: lat(r"99th percentile"),
        max: lat("max"),
        ..Default::default()
    };
    let op = op(
        events as u64,
        errors as u64,
        if secs > 0.0 { events / secs } else { 0.0 },
        latency,
    );
    Ok(Parsed {
        duration_s: secs,
        ops: [("TRANSACTION".to_string(), op)].into(),
        series,
        tool_ops_per_sec: capture(
            r"(?m)^\s*transactions:\s+\d+\s+\(([\d.]+) per sec\.\)",
            text,
        )
        .or_else(|| capture(r"(?m)^\s*events/s \(eps\):\s+([\d.]+)", text)),
    })
}

/// Hook output when present, the text report otherwise.
pub fn parse(text: &str) -> Result<Parsed, Unreadable> {
    match parse_hook(text)? {
        Some(p) => Ok(p),
        None => parse_text(text),
    }
}

fn connection_args(t: &ToolTarget) -> Result<Vec<String>, ToolError> {
    let db = t.db.clone().unwrap_or_else(|| "sbtest".into());
    let (driver, p) = match t.kind {
        StoreKind::Mysql => ("mysql", "mysql"),
        StoreKind::Postgres => ("pgsql", "pgsql"),
        kind => {
            return Err(ToolError::Unsupported {
                tool: "sysbench",
                kind,
                hint: "use a mysql or postgres engine",
            });
        }
    };
    let mut a = vec![
        format!("--db-driver={driver}"),
        format!("--{p}-host=127.0.0.1"),
        format!("--{p}-port={}", t.port),
        format!("--{p}-db={db}"),
    ];
    if let Some(u) = &t.user {
        a.push(format!("--{p}-user={u}"));
    }
    if let Some(pw) = &t.password {
        a.push(format!("--{p}-password={pw}"));
    }
    Ok(a)
}

/// Makes sure the MySQL database exists (sysbench does not create it).
async fn ensure_database(t: &ToolTarget) -> Result<(), ToolError> {
    if t.kind != StoreKind::Mysql {
        return Ok(());
    }
    let mut ep = Endpoint::loopback(t.port);
    ep.user = t.user.clone();
    ep.password = t.password.clone();
    let mut c = MyConn::connect(&ep).await?;
    let db = t.db.clone().unwrap_or_else(|| "sbtest".into());
    c.exec_text(&format!("CREATE DATABASE IF NOT EXISTS `{db}`"))
        .await?;
    Ok(())
}

/// The bundled OLTP tests' prepare fills `sbtest1..N` with `table_size`
/// rows each; a prepare that exited 0 without them fails the phase with
/// what it left. Other tests and scripts make tables of their own.
async fn check_prepared(c: &SysbenchConfig, t: &ToolTarget, log: &Path) -> Result<(), ToolError> {
    let bundled = c.script().parent() == Some(Path::new(TEST_DIR));
    if !(bundled && c.short_name().starts_with("oltp_")) {
        return Ok(());
    }
    let want: Vec<(String, u64)> = (1..=c.tables)
        .map(|i| (format!("sbtest{i}"), c.table_size))
        .collect();
    let tables: Vec<String> = want.iter().map(|(n, _)| n.clone()).collect();
    let db = t.db.clone().unwrap_or_else(|| "sbtest".into());
    let found = super::sql_counts(t, &db, &tables, "sysbench prepare").await?;
    match super::short_of(&found, &want) {
        None => Ok(()),
        Some(found) => Err(ToolError::Unloaded {
            step: "sysbench prepare",
            found,
            log: log.to_path_buf(),
        }),
    }
}

/// Prepare, one run per thread count, cleanup.
pub async fn run(
    c: &SysbenchConfig,
    ctx: &Ctx<'_, impl Fn(&mut tokio::process::Command)>,
) -> Result<Vec<PhaseResult>, ToolError> {
    let (t, threads, duration, out_dir, hook) =
        (ctx.target, ctx.threads, ctx.duration, ctx.out_dir, ctx.hook);
    let script = c.script();
    if !script.is_file() {
        return Err(ToolError::Config(format!(
            "sysbench test `{}`: {} does not exist; bundled tests are in {TEST_DIR}",
            c.test,
            script.display()
        )));
    }
    let wrapper = out_dir.join("sysbench-report-hook.lua");
    std::fs::write(&wrapper, wrapper_lua(&script)).map_err(|e| ToolError::Io {
        what: format!("writing {}", wrapper.display()),
        source: e,
    })?;
    ensure_database(t).await?;
    let mut common = connection_args(t)?;
    common.push(format!("--tables={}", c.tables));
    common.push(format!("--table-size={}", c.table_size));
    common.extend(c.args.iter().cloned());
    let argv = |script: &Path, extra: &[String], step: &str| {
        let mut v = vec!["sysbench".to_string(), script.display().to_string()];
        v.extend(common.iter().cloned());
        v.extend(extra.iter().cloned());
        v.push(step.to_string());
        v
    };
    let name = c.short_name();
    // An hour, or longer for big tables: prepare inserts at well over
    // 10,000 rows a second on one CPU, so a slower one is stuck.
    let rows = u64::from(c.tables).saturating_mul(c.table_size);
    let setup_limit = Duration::from_secs((rows / 10_000).max(3600));
    let loaders = vec![format!("--threads={}", c.loaders.max(1))];
    let setup = |step: &str, tag: &str| {
        let file = format!("sysbench-{tag}.txt");
        let extra: &[String] = if step == "prepare" { &loaders } else { &[] };
        exec(
            argv(&script, extra, step),
            &[],
            out_dir,
            file,
            setup_limit,
            hook,
        )
    };
    let mut raw_setup = Vec::new();
    if c.prepare {
        // Tables left by an earlier, interrupted run would make prepare fail.
        let _ = setup("cleanup", "precleanup").await;
        let prepared = setup("prepare", "prepare").await?;
        check_prepared(c, t, &out_dir.join(&prepared.file)).await?;
        raw_setup.push(prepared.file);
    }
    let mut results = Vec::new();
    let run_for = |n: u32, d: Duration| {
        let extra = vec![
            format!("--threads={n}"),
            format!("--time={}", d.as_secs().max(1)),
            "--report-interval=1".to_string(),
            "--percentile=95".to_string(),
        ];
        argv(&wrapper, &extra, "run")
    };
    let warmup = ctx.warmup;
    for &n in threads {
        let mut raw = raw_setup.clone();
        if !warmup.is_zero() {
            // The same run, unmeasured: caches and connections warm up.
            let file = format!("sysbench-warmup-{n}.txt");
            let limit = warmup + Duration::from_secs(120);
            let w = exec(run_for(n, warmup), &[], out_dir, file, limit, hook).await?;
            raw.push(w.file);
        }
        let file = format!("sysbench-run-{n}.txt");
        let limit = duration + Duration::from_secs(120);
        let run = run_for(n, duration);
        let Ran { text, file } = exec(run, &[], out_dir, file, limit, hook).await?;
        let parsed = parse(&text).map_err(parse_error("sysbench", out_dir, &file))?;
        raw.push(file);
        results.push(parsed.into_result(&format!("sysbench:{name}"), n, raw));
    }
    if c.cleanup {
        let r = setup("cleanup", "cleanup").await?;
        if let Some(last) = results.last_mut() {
            last.raw_outputs.push(r.file);
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_json_gives_events_errors_latency_and_series() {
        let p = parse(include_str!(
            "../../../tests/fixtures/tools/sysbench-1.0.20-point-select-json-hook.txt"
        ))
        .unwrap();
        let t = &p.ops["TRANSACTION"];
        assert_eq!(t.count, 203_279);
        assert_eq!(t.errors, 0);
        assert!((t.latency_us.mean.unwrap() - 29.156).abs() < 1e-6);
        assert!((t.latency_us.p95.unwrap() - 49.77).abs() < 1e-6);
        assert!((t.latency_us.max.unwrap() - 6357.07).abs() < 1e-6);
        assert_eq!(
            p.series.iter().map(|s| s.ops).collect::<Vec<_>>(),
            vec![65_284, 71_266, 66_728]
        );
        assert!((p.duration_s - 3.005859).abs() < 1e-9);
    }

    #[test]
    fn text_report_is_the_fallback_and_counts_ignored_errors() {
        let p = parse(include_str!(
            "../../../tests/fixtures/tools/sysbench-1.0.20-oltp-read-write-text.txt"
        ))
        .unwrap();
        let t = &p.ops["TRANSACTION"];
        assert_eq!(t.count, 1619);
        assert_eq!(t.errors, 12);
        assert!((t.latency_us.p95.unwrap() - 8740.0).abs() < 1e-6);
        assert!((t.latency_us.mean.unwrap() - 3710.0).abs() < 1e-6);
        assert_eq!(p.duration_s, 3.0072);
        assert_eq!(p.series.len(), 3);
        assert_eq!(p.series[1].errors, 7);
    }

    #[test]
    fn the_wrapper_loads_the_test_and_sets_both_hooks() {
        let w = wrapper_lua(Path::new("/usr/share/sysbench/oltp_read_write.lua"));
        assert!(w.starts_with("-- Written by benchcage"));
        assert!(w.contains(r#"dofile("/usr/share/sysbench/oltp_read_write.lua")"#));
        assert!(w.contains("sysbench.hooks.report_cumulative = function"));
        assert!(w.contains("sysbench.hooks.report_intermediate = function"));
        assert!(w.contains(MARKER));
    }
}
