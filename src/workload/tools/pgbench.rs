//! pgbench (Debian postgresql-contrib): `-i` to initialise, then a builtin
//! or custom script (`-f`) per thread count, parsed from `tps = ...`,
//! `latency average = ...`, `--progress` lines and `-r` statement latencies.

use super::{Ctx, Parsed, ToolError, Unreadable, exec, mean_only, num, op, parse_error};
use crate::results::model::{PhaseResult, SecondSample};
use crate::workload::stores::StoreKind;
use regex::Regex;
use std::path::PathBuf;
use std::time::Duration;

fn default_scale() -> u32 {
    1
}
fn yes() -> bool {
    true
}

/// `tool: {pgbench: {...}}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PgbenchConfig {
    /// `-s` for `-i`.
    #[serde(default = "default_scale")]
    pub scale: u32,
    /// `-b`: tpcb-like, simple-update or select-only.
    #[serde(default)]
    pub builtin: Option<String>,
    /// `-f`: a custom script.
    #[serde(default)]
    pub script: Option<PathBuf>,
    /// Run `pgbench -i` first.
    #[serde(default = "yes")]
    pub init: bool,
    /// Extra run options (`-M prepared`).
    #[serde(default)]
    pub args: Vec<String>,
}

fn capture(re: &str, text: &str) -> Option<f64> {
    Regex::new(re)
        .ok()?
        .captures_iter(text)
        .last()
        .and_then(|c| num(&c[1]))
}

/// Reads a pgbench run's output.
pub fn parse(text: &str) -> Result<Parsed, Unreadable> {
    let tps = capture(
        r"(?m)^tps = ([\d.]+) \(without initial connection time\)",
        text,
    )
    .or_else(|| capture(r"(?m)^tps = ([\d.]+)", text))
    .ok_or("no `tps = ...` line")?;
    let done = capture(
        r"(?m)^number of transactions actually processed: (\d+)",
        text,
    )
    .ok_or("no `number of transactions actually processed` line")?;
    let failed = capture(r"(?m)^number of failed transactions: (\d+)", text).unwrap_or(0.0);
    let avg_ms = capture(r"(?m)^latency average = ([\d.]+) ms", text);
    let secs = if tps > 0.0 { done / tps } else { 0.0 };
    let progress = Regex::new(
        r"(?m)^progress: ([\d.]+) s, ([\d.]+) tps, lat ([\d.]+) ms stddev [\d.NaN]+(?:, (\d+) failed)?",
    )
    .map_err(|e| e.to_string())?;
    let mut prev_t = 0.0;
    let series = progress
        .captures_iter(text)
        .map(|c| {
            let t = num(&c[1]).unwrap_or(0.0);
            let ops = (num(&c[2]).unwrap_or(0.0) * (t - prev_t)).round() as u64;
            prev_t = t;
            SecondSample {
                t: (t.round() as u64).saturating_sub(1),
                ops,
                errors: c.get(4).and_then(|m| num(m.as_str())).unwrap_or(0.0) as u64,
                by_kind: [("TRANSACTION".to_string(), ops)].into(),
            }
        })
        .collect();
    let mut ops = std::collections::BTreeMap::new();
    ops.insert(
        "TRANSACTION".to_string(),
        op(
            done as u64,
            failed as u64,
            tps,
            mean_only(avg_ms.map(|ms| ms * 1000.0)),
        ),
    );
    // `-r`: "   0.127   0  SELECT ..." (PostgreSQL 15 adds a failures column).
    if let Some(at) = text.find("statement latencies in milliseconds") {
        let stmt = Regex::new(r"^\s+([\d.]+)\s+(?:(\d+)\s+)?(.+)$").map_err(|e| e.to_string())?;
        for line in text[at..].lines().skip(1) {
            let Some(c) = stmt.captures(line) else { break };
            let sql = c[3].trim();
            if sql.starts_with('\\') {
                continue;
            }
            let key: String = format!("SQL {}", sql.chars().take(60).collect::<String>());
            ops.insert(
                key,
                op(
                    done as u64,
                    c.get(2).and_then(|m| num(m.as_str())).unwrap_or(0.0) as u64,
                    tps,
                    mean_only(num(&c[1]).map(|ms| ms * 1000.0)),
                ),
            );
        }
    }
    Ok(Parsed {
        duration_s: secs,
        ops,
        series,
        tool_ops_per_sec: Some(tps),
    })
}

/// A config pgbench can run against a store of `kind`.
fn check(c: &PgbenchConfig, kind: StoreKind) -> Result<(), ToolError> {
    if kind != StoreKind::Postgres {
        return Err(ToolError::Unsupported {
            tool: "pgbench",
            kind,
            hint: "pgbench only talks to postgres",
        });
    }
    if c.builtin.is_some() && c.script.is_some() {
        return Err(ToolError::Config(
            "pgbench: give `builtin` or `script`, not both".into(),
        ));
    }
    if let Some(s) = &c.script
        && !s.is_file()
    {
        return Err(ToolError::Config(format!(
            "pgbench script {} does not exist",
            s.display()
        )));
    }
    Ok(())
}

/// `pgbench:NAME` of the builtin or script the phase runs.
fn label(c: &PgbenchConfig) -> String {
    match (&c.builtin, &c.script) {
        (Some(b), _) => format!("pgbench:{b}"),
        (None, Some(s)) => format!(
            "pgbench:{}",
            s.file_stem()
                .map(|x| x.to_string_lossy())
                .unwrap_or_default()
        ),
        (None, None) => "pgbench:tpcb-like".into(),
    }
}

/// The run's argv with `n` clients for `duration`, before the connection
/// flags and the database.
fn run_argv(c: &PgbenchConfig, n: u32, duration: Duration) -> Vec<String> {
    let mut argv = vec![
        "pgbench".to_string(),
        "-c".into(),
        n.to_string(),
        "-j".into(),
        n.to_string(),
        "-T".into(),
        duration.as_secs().max(1).to_string(),
        "-P".into(),
        "1".into(),
        "-r".into(),
        "-n".into(),
    ];
    if let Some(b) = &c.builtin {
        argv.extend(["-b".to_string(), b.clone()]);
    }
    if let Some(s) = &c.script {
        argv.extend(["-f".to_string(), s.display().to_string()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

/// Init once, then one run per thread count.
pub async fn run(
    c: &PgbenchConfig,
    ctx: &Ctx<'_, impl Fn(&mut tokio::process::Command)>,
) -> Result<Vec<PhaseResult>, ToolError> {
    let (t, threads, duration, out_dir, hook) =
        (ctx.target, ctx.threads, ctx.duration, ctx.out_dir, ctx.hook);
    check(c, t.kind)?;
    let conn = [
        "-h".to_string(),
        "127.0.0.1".into(),
        "-p".into(),
        t.port.to_string(),
        "-U".into(),
        t.user.clone().unwrap_or_else(|| "postgres".into()),
    ];
    let db = t.db.clone().unwrap_or_else(|| "postgres".into());
    let env: Vec<(&str, String)> = t
        .password
        .iter()
        .map(|p| ("PGPASSWORD", p.clone()))
        .collect();
    let mut raw_setup = Vec::new();
    if c.init {
        let mut argv = vec![
            "pgbench".to_string(),
            "-i".into(),
            "-s".into(),
            c.scale.to_string(),
        ];
        argv.extend(conn.iter().cloned());
        argv.push(db.clone());
        let limit = Duration::from_secs(3600);
        let r = exec(argv, &env, out_dir, "pgbench-init.txt".into(), limit, hook).await?;
        // pgbench's scale: `scale` branches, 10 tellers and 100,000
        // accounts a branch, read back.
        let s = u64::from(c.scale);
        let want: Vec<(String, u64)> = [
            ("pgbench_branches", s),
            ("pgbench_tellers", 10 * s),
            ("pgbench_accounts", 100_000 * s),
        ]
        .into_iter()
        .map(|(t, n)| (t.to_string(), n))
        .collect();
        let tables: Vec<String> = want.iter().map(|(n, _)| n.clone()).collect();
        let found = super::sql_counts(t, &db, &tables, "pgbench -i").await?;
        if let Some(found) = super::short_of(&found, &want) {
            return Err(ToolError::Unloaded {
                step: "pgbench -i",
                found,
                log: out_dir.join(&r.file),
            });
        }
        raw_setup.push(r.file);
    }
    let label = label(c);
    let mut results = Vec::new();
    let argv_for = |n: u32, d: Duration| {
        let mut argv = run_argv(c, n, d);
        argv.extend(conn.iter().cloned());
        argv.push(db.clone());
        argv
    };
    for &n in threads {
        let mut raw = raw_setup.clone();
        if !ctx.warmup.is_zero() {
            // The same run, unmeasured: caches and connections warm up.
            let file = format!("pgbench-warmup-{n}.txt");
            let limit = ctx.warmup + Duration::from_secs(120);
            let w = exec(argv_for(n, ctx.warmup), &env, out_dir, file, limit, hook).await?;
            raw.push(w.file);
        }
        let file = format!("pgbench-run-{n}.txt");
        let limit = duration + Duration::from_secs(120);
        let r = exec(argv_for(n, duration), &env, out_dir, file, limit, hook).await?;
        let parsed = parse(&r.text).map_err(parse_error("pgbench", out_dir, &r.file))?;
        raw.push(r.file);
        results.push(parsed.into_result(&label, n, raw));
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_run_output_gives_tps_latency_progress_and_statements() {
        let p = parse(include_str!(
            "../../../tests/fixtures/tools/pgbench-15-select-only.txt"
        ))
        .unwrap();
        let t = &p.ops["TRANSACTION"];
        assert_eq!(t.count, 46_635);
        assert_eq!(t.errors, 0);
        assert!((t.throughput - 15_597.141243).abs() < 1e-6);
        assert!((t.latency_us.mean.unwrap() - 128.0).abs() < 1e-9);
        assert_eq!(p.series.len(), 3);
        assert_eq!(p.series[1].t, 1);
        assert_eq!(p.series[1].ops, 16_047);
        let stmt = &p.ops["SQL SELECT abalance FROM pgbench_accounts WHERE aid = :aid;"];
        assert!((stmt.latency_us.mean.unwrap() - 127.0).abs() < 1e-9);
        assert!(!p.ops.keys().any(|k| k.contains("\\set")));
        assert!((p.duration_s - 46_635.0 / 15_597.141243).abs() < 1e-9);
    }

    #[test]
    fn init_output_is_not_a_run() {
        assert!(
            parse(include_str!(
                "../../../tests/fixtures/tools/pgbench-15-init.txt"
            ))
            .is_err()
        );
    }
}
