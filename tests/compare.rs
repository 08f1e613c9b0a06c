//! `benchcage compare` on real run folders of one repetition (a redis
//! cell's phase of 12 s, `tests/scenarios/run-short-phase.yaml`): two runs
//! of the same cell give no verdict that their interval does not carry,
//! and a 30% drop planted in a copy (throughput, per-second counts and
//! latencies scaled, `support::copies`) is a regression with exit 1.
//!
//! Needs root and redis-server (two real runs of a few seconds each).

mod support;

use std::path::Path;
use support::clean::assert_run_left_nothing;
use support::copies::{copy_run, real_run};
use support::nights::bc;

const SCENARIO: &str = "tests/scenarios/run-short-phase.yaml";

/// `benchcage compare ARGS --results RESULTS`: exit code and what it said.
fn compare(results: &Path, args: &[&str]) -> (i32, String) {
    bc(results, &[&["compare"], args].concat())
}

/// One row of the comparison: its line, the interval of its change in
/// percent, and its verdict word.
struct Row<'a> {
    line: &'a str,
    lo: f64,
    hi: f64,
    verdict: &'a str,
}

/// Said in a row whose sides are one value each without per-second
/// series (a load too short to have four whole seconds).
const NO_INTERVAL: &str = "none (one value a side)";

/// The rows of the table (between its header and the blank line) that
/// carry an interval; a row without one must be inconclusive and say what
/// would settle it.
fn rows(out: &str) -> Vec<Row<'_>> {
    let pct = |s: &str| -> f64 { s.trim().trim_end_matches('%').parse().unwrap() };
    out.lines()
        .skip_while(|l| !l.starts_with("cell "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|line| {
            if line.contains(NO_INTERVAL) {
                assert!(
                    line.contains("inconclusive (more repetitions would settle it)"),
                    "a row without an interval has a verdict: {line}"
                );
                return false;
            }
            true
        })
        .map(|line| {
            let open = line
                .rfind("  [")
                .unwrap_or_else(|| panic!("no interval in `{line}`:\n{out}"));
            let close = open + line[open..].find(']').unwrap();
            let (lo, hi) = line[open + 3..close].split_once(", ").unwrap();
            let verdict = line[close + 1..].split_whitespace().next().unwrap();
            Row {
                line,
                lo: pct(lo),
                hi: pct(hi),
                verdict,
            }
        })
        .collect()
}

/// The relative standard deviation of a run's measured seconds.
fn spread(run: &Path) -> f64 {
    let mut worst: f64 = 0.0;
    for cell in support::files::cell_dirs(run) {
        let rec: serde_json::Value = support::files::read_json(&cell.join("cell.json"));
        for p in rec["phases"].as_array().into_iter().flatten() {
            let xs: Vec<f64> = p["series"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["ops"].as_f64())
                .collect();
            let full = &xs[..xs.len().saturating_sub(1)];
            if full.len() < 2 {
                continue;
            }
            let m = full.iter().sum::<f64>() / full.len() as f64;
            let var = full.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (full.len() - 1) as f64;
            worst = worst.max(var.sqrt() / m);
        }
    }
    worst
}

/// A real run of 20 seconds (the scenario's 4 give too few seconds for
/// an interval a 30% drop clears), that left nothing behind. A phase
/// whose seconds a busy host shook by more than 8% (others' builds on a
/// shared machine) is run again, up to three runs, and the steadiest is
/// kept: the test is about compare, not the host.
fn steady_run(tmp: &Path) -> std::path::PathBuf {
    let mut best: Option<(f64, std::path::PathBuf)> = None;
    for _ in 0..3 {
        let run = real_run(tmp, SCENARIO, &["--set", "duration=20s"]);
        let id = run.file_name().unwrap().to_string_lossy().to_string();
        assert_run_left_nothing(
            tmp,
            &tmp.join("real"),
            &tmp.join("work"),
            &tmp.join("state"),
            &id,
        );
        let s = spread(&run);
        if best.as_ref().is_none_or(|(b, _)| s < *b) {
            best = Some((s, run));
        }
        if s <= 0.08 {
            break;
        }
    }
    best.unwrap().1
}

/// Two real runs, each copied as a result (`a` and `b`), and `a` copied
/// again with its figures times 0.7 (`a-drop`), under `results`.
fn runs(tmp: &Path, results: &Path) -> [String; 3] {
    let mut ids = Vec::new();
    for (id, at) in [
        ("20261201-020000-aaaa", "2026-12-01T02:00:00+00:00"),
        ("20261202-020000-bbbb", "2026-12-02T02:00:00+00:00"),
    ] {
        let real = steady_run(tmp);
        copy_run(&real, results, id, (at, at), 1.0);
        if ids.is_empty() {
            copy_run(
                &real,
                results,
                "20261203-020000-drop",
                ("2026-12-03T02:00:00+00:00", "2026-12-03T02:00:00+00:00"),
                0.7,
            );
        }
        ids.push(id.to_string());
    }
    [
        ids[0].clone(),
        ids[1].clone(),
        "20261203-020000-drop".into(),
    ]
}

/// The per-second series of every phase of a run folder, for a failure's
/// message.
fn seconds(run: &Path) -> String {
    let mut out = String::new();
    for cell in support::files::cell_dirs(run) {
        let rec: serde_json::Value = support::files::read_json(&cell.join("cell.json"));
        for p in rec["phases"].as_array().into_iter().flatten() {
            let ops: Vec<String> = p["series"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s["ops"].to_string())
                .collect();
            out.push_str(&format!(
                "{} t{}: {}\n",
                p["name"],
                p["threads"],
                ops.join(" ")
            ));
        }
    }
    out
}

#[test]
fn one_repetition_a_side_gives_an_interval_and_only_the_verdicts_it_supports() {
    let tmp = tempfile::Builder::new()
        .prefix("benchcage-compare-test-")
        .tempdir()
        .unwrap();
    let results = tmp.path().join("results");
    let [a, b, drop] = runs(tmp.path(), &results);

    // Two runs of the same cell: n = 1 a side, an interval from each
    // phase's own seconds, and a verdict only where all of it is beyond
    // (or all within) the 5% threshold.
    let (code, out) = compare(&results, &[&a, &b, "--threshold", "5%"]);
    assert!(!out.contains('±'), "{out}");
    let same = rows(&out);
    assert!(!same.is_empty(), "{out}");
    for r in &same {
        assert!(r.lo < r.hi, "a point is no interval: {}", r.line);
        let consistent = match r.verdict {
            "ok" => r.lo >= -5.0 && r.hi <= 5.0,
            "inconclusive" => {
                (r.lo < -5.0 && r.hi >= -5.0)
                    || (r.lo <= 5.0 && r.hi > 5.0)
                    || (r.lo < -5.0 && r.hi > 5.0)
            }
            "REGRESSION" => r.hi < -5.0,
            "better" => r.lo > 5.0,
            other => panic!("verdict `{other}` in {}", r.line),
        };
        assert!(
            consistent,
            "the verdict does not follow the interval: {}",
            r.line
        );
        if r.verdict == "inconclusive" {
            assert!(r.line.contains("would settle it"), "{}", r.line);
        }
    }
    let regressed = same.iter().any(|r| r.verdict == "REGRESSION");
    assert_eq!(code, i32::from(regressed), "{out}");

    // A 30% drop of the same run is a regression: its whole interval is
    // beyond the threshold, and compare exits 1.
    let (code, out) = compare(&results, &[&a, &drop, "--threshold", "5%"]);
    assert_eq!(code, 1, "{out}\n{}", seconds(&results.join(&a)));
    let read = rows(&out)
        .into_iter()
        .find(|r| r.line.contains("workload-c t2") && r.line.contains("READ"))
        .unwrap_or_else(|| panic!("no workload-c READ row in:\n{out}"));
    assert_eq!(read.verdict, "REGRESSION", "{}", read.line);
    assert!(read.line.contains("-30.0%"), "{}", read.line);
    assert!(
        read.lo < -30.0 && read.hi > -30.0 && read.hi < -5.0,
        "{}",
        read.line
    );

    // Its p99 has no per-second series and one value a side: no interval,
    // so no verdict; more repetitions would give one.
    let (code, out) = compare(&results, &[&a, &drop, "--metric", "p99"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.lines().any(|l| l.contains("workload-c t2")
            && l.contains("inconclusive (more repetitions would settle it)")),
        "{out}"
    );
    assert!(!out.contains("REGRESSION") && !out.contains('±'), "{out}");
}
