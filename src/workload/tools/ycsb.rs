//! YCSB (Java) and go-ycsb output, for users who bring their own install:
//! `[READ], Operations, N` sections (with `[READ-FAILED]` counted as
//! errors of READ) and go-ycsb's `READ - Takes(s): ..., Count: N` lines
//! (with `READ_ERROR` counted as errors of READ).

use super::{Ctx, Parsed, ToolError, Unreadable, num, run_each, set_latency};
use crate::results::model::{OpStats, PhaseResult};
use regex::Regex;
use std::collections::BTreeMap;

/// `tool: {ycsb: {argv: [...]}}`: the command to run; `{port}`,
/// `{threads}`, `{duration_s}`, `{host}`, `{user}`, `{db}` are filled in.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct YcsbConfig {
    pub argv: Vec<String>,
}

/// Java YCSB's `[SECTION], Metric, value` lines.
fn parse_java(text: &str) -> Option<Parsed> {
    let line = Regex::new(r"(?m)^\s*\[([A-Z0-9_\-%]+)\], ([^,]+), (.+?)\s*$").ok()?;
    let mut runtime_ms = None;
    let mut tool_rate = None;
    let mut ops: BTreeMap<String, OpStats> = BTreeMap::new();
    let mut failed: BTreeMap<String, u64> = BTreeMap::new();
    let mut returned_errors: BTreeMap<String, u64> = BTreeMap::new();
    for c in line.captures_iter(text) {
        let (section, metric, value) = (&c[1], c[2].trim(), &c[3]);
        if section == "OVERALL" {
            match metric {
                "RunTime(ms)" => runtime_ms = num(value),
                "RunTime(sec)" => runtime_ms = num(value).map(|s| s * 1000.0),
                "Throughput(ops/sec)" => tool_rate = num(value),
                _ => {}
            }
            continue;
        }
        if section == "CLEANUP"
            || section.starts_with("TOTAL_G")
            || section.starts_with("Intended-")
        {
            continue;
        }
        if let Some(base) = section.strip_suffix("-FAILED") {
            if metric == "Operations" {
                *failed.entry(base.to_string()).or_default() += num(value).unwrap_or(0.0) as u64;
            }
            continue;
        }
        let op = ops.entry(section.to_string()).or_default();
        // A value YCSB printed as `NaN`, or not at all, stays unset.
        let Some(v) = num(value) else {
            continue;
        };
        match metric {
            "Operations" => op.count = v as u64,
            m if m.starts_with("Return=") => {
                if m != "Return=OK" {
                    *returned_errors.entry(section.to_string()).or_default() += v as u64;
                }
            }
            m => {
                // `AverageLatency(us)`, `95thPercentileLatency(us)`, `99.9PercentileLatency(us)`.
                let name = m
                    .trim_end_matches("Latency(us)")
                    .trim_end_matches("Percentile");
                let name = match name {
                    "Average" => "avg",
                    "Min" => "min",
                    "Max" => "max",
                    "99.9" => "99.9th",
                    other => other,
                };
                set_latency(&mut op.latency_us, name, v);
            }
        }
    }
    let secs = runtime_ms? / 1000.0;
    for (k, n) in failed.iter().chain(returned_errors.iter()) {
        let op = ops.entry(k.clone()).or_default();
        op.errors = op.errors.max(*n);
    }
    // `[READ], Operations` counts successes only; failures are measured
    // under `[READ-FAILED]` and also listed as `Return=ERROR` (or NOT_FOUND).
    for op in ops.values_mut() {
        op.throughput = if secs > 0.0 {
            op.count as f64 / secs
        } else {
            0.0
        };
    }
    Some(Parsed {
        duration_s: secs,
        ops,
        series: Vec::new(),
        tool_ops_per_sec: tool_rate,
    })
}

/// go-ycsb's final `KIND - Takes(s): ..., Count: N, OPS: ..., Avg(us): ...` lines.
fn parse_go(text: &str) -> Option<Parsed> {
    let start = text.rfind("Run finished, takes").unwrap_or(0);
    let body = &text[start..];
    let line = Regex::new(r"(?m)^([A-Z_\-]+)\s+- Takes\(s\): ([\d.]+), Count: (\d+)(.*)$").ok()?;
    let field = Regex::new(r"([\w.]+)\(us\): ([\d.]+)").ok()?;
    let rate = Regex::new(r"OPS: ([\d.]+)").ok()?;
    let mut ops: BTreeMap<String, OpStats> = BTreeMap::new();
    let mut secs: f64 = 0.0;
    let mut tool_rate = None;
    for c in line.captures_iter(body) {
        let kind = &c[1];
        let takes = num(&c[2]).unwrap_or(0.0);
        let count = num(&c[3]).unwrap_or(0.0) as u64;
        if kind == "TOTAL" {
            tool_rate = rate.captures(&c[4]).and_then(|m| num(&m[1]));
            continue;
        }
        if let Some(base) = kind.strip_suffix("_ERROR") {
            ops.entry(base.to_string()).or_default().errors += count;
            continue;
        }
        secs = secs.max(takes);
        let op = ops.entry(kind.to_string()).or_default();
        op.count = count;
        for f in field.captures_iter(&c[4]) {
            if let Some(v) = num(&f[2]) {
                set_latency(&mut op.latency_us, &f[1].to_ascii_lowercase(), v);
            }
        }
        op.throughput = if takes > 0.0 {
            count as f64 / takes
        } else {
            0.0
        };
    }
    if ops.is_empty() {
        return None;
    }
    Some(Parsed {
        duration_s: secs,
        ops,
        series: Vec::new(),
        tool_ops_per_sec: tool_rate,
    })
}

/// Java YCSB output, else go-ycsb output.
pub fn parse(text: &str) -> Result<Parsed, Unreadable> {
    parse_java(text)
        .or_else(|| parse_go(text))
        .ok_or_else(|| "neither `[OVERALL], RunTime(ms)` nor go-ycsb `Takes(s)` lines found".into())
}

/// Runs the user's YCSB command once per thread count.
pub async fn run(
    c: &YcsbConfig,
    ctx: &Ctx<'_, impl Fn(&mut tokio::process::Command)>,
) -> Result<Vec<PhaseResult>, ToolError> {
    run_each("ycsb", &c.argv, ctx, |text, _| parse(text)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_ycsb_output_counts_read_failed_as_errors() {
        let p = parse(include_str!(
            "../../../tests/fixtures/tools/ycsb-java-scylla-workloadf-read-failed.txt"
        ))
        .unwrap();
        assert_eq!(p.duration_s, 1828.064);
        let read = &p.ops["READ"];
        assert_eq!(read.count, 199_996_147);
        assert_eq!(read.errors, 3853);
        assert_eq!(read.latency_us.p99, Some(127_167.0));
        // This YCSB printed no median and no p99.9: they are unknown, not 0.
        assert_eq!((read.latency_us.p50, read.latency_us.p999), (None, None));
        assert_eq!(read.latency_us.min, Some(161.0));
        assert_eq!(p.ops["UPDATE"].count, 99_999_552);
        assert_eq!(p.ops["READ-MODIFY-WRITE"].latency_us.p95, Some(28_063.0));
        assert!(!p.ops.contains_key("CLEANUP") && !p.ops.contains_key("READ-FAILED"));
        let r = p.into_result("ycsb-external", 840, vec![]);
        assert_eq!(r.total_errors, 3853);
        // 200M operations in all, as `[OVERALL]` says: RMWs' reads and
        // updates are not counted twice.
        assert_eq!(r.total_ops + r.total_errors, 200_000_000);
        assert!((r.throughput - 109_403.0).abs() < 10.0, "{}", r.throughput);
        // YCSB's own rate counts the failed reads too; both are kept.
        assert_eq!(r.tool_ops_per_sec, Some(109_405.359_987_396_5));
        let json = serde_json::to_value(&r).unwrap();
        assert!(
            json["ops"]["READ"]["latency_us"].get("p50").is_none(),
            "{json}"
        );
    }

    #[test]
    fn go_ycsb_output_counts_error_lines_as_errors() {
        let p = parse(include_str!(
            "../../../tests/fixtures/tools/go-ycsb-mysql-workloada-update-error.txt"
        ))
        .unwrap();
        assert_eq!(p.ops["READ"].count, 5_000_934);
        assert_eq!(p.ops["READ"].latency_us.p99, Some(19_000.0));
        assert_eq!(p.ops["UPDATE"].count, 4_998_915);
        assert_eq!(p.ops["UPDATE"].errors, 23);
        assert_eq!(p.duration_s, 549.3);
        assert!(!p.ops.contains_key("UPDATE_ERROR"));
    }

    #[test]
    fn benchcage_drive_output_reads_back() {
        let text = "[OVERALL], RunTime(ms), 2000\n[OVERALL], Throughput(ops/sec), 50.0\n\
                    [READ], Operations, 100\n[READ], AverageLatency(us), 12.5\n\
                    [READ], Return=OK, 100\n[READ], Return=ERROR, 4\n[READ-FAILED], Operations, 4\n";
        let p = parse(text).unwrap();
        assert_eq!(p.ops["READ"].count, 100);
        assert_eq!(p.ops["READ"].errors, 4);
        assert_eq!(p.ops["READ"].throughput, 50.0);
    }

    #[test]
    fn output_without_results_is_an_error() {
        assert!(parse("Exception in thread main").is_err());
    }
}
