//! Copies of a real run folder with its figures scaled: history, change
//! points and comparisons made from one short real run instead of many.
//!
//! A copy keeps the real run's records and scales every throughput, the
//! per-second counts of its series (so intervals see the same change)
//! and, inversely, every latency; each phase is marked a result (the real
//! phase may have been voided by a busy host, which is not what the tests
//! that copy it are about).

use super::cli::{bc_in, repo, run_dir_of};
use super::files::walk;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Run `scenario` (a path under the repository) once with `extra`
/// arguments (`--set ...`), its results, work and state under `tmp`;
/// returns the run's folder.
pub fn real_run(tmp: &Path, scenario: &str, extra: &[&str]) -> PathBuf {
    let out = bc_in(
        &repo(),
        &tmp.join("real"),
        &tmp.join("work"),
        &tmp.join("state"),
    )
    .args(["run", scenario])
    .args(extra)
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    run_dir_of(&stdout)
}

/// Scale every throughput in `v` by `f`, every per-second count of a
/// `series` too, and every latency by `1 / f`; make every phase a result.
pub fn scale(v: &mut Value, f: f64, under_latency: bool) {
    match v {
        Value::Object(m) => {
            if m.get("status").and_then(Value::as_str) == Some("invalid") {
                m.insert("status".into(), Value::String("ok".into()));
                m.remove("reason");
            }
            if let Some(Value::Array(vs)) = m.get_mut("violations") {
                vs.clear();
            }
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x.as_f64()) {
                    ("throughput", Some(t)) => *x = Value::from(t * f),
                    ("series", _) => scale_seconds(x, f),
                    (_, Some(t)) if under_latency => *x = Value::from(t / f),
                    _ => scale(x, f, under_latency || k == "latency_us"),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| scale(x, f, under_latency)),
        _ => {}
    }
}

/// The counts of each second (`ops` and each kind's) times `f`, rounded.
fn scale_seconds(series: &mut Value, f: f64) {
    let times = |x: &mut Value| {
        if let Some(n) = x.as_f64() {
            *x = Value::from((n * f).round() as u64);
        }
    };
    for second in series.as_array_mut().into_iter().flatten() {
        if let Some(ops) = second.get_mut("ops") {
            times(ops);
        }
        if let Some(Value::Object(kinds)) = second.get_mut("by_kind") {
            kinds.values_mut().for_each(times);
        }
    }
}

/// Copy the run folder `real` into `results` as run `id` that ran from
/// `started_at` to `finished_at` (RFC 3339), its figures times `f`.
pub fn copy_run(
    real: &Path,
    results: &Path,
    id: &str,
    (started_at, finished_at): (&str, &str),
    f: f64,
) {
    let dir = results.join(id);
    for entry in walk(real) {
        let rel = entry.strip_prefix(real).unwrap();
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        if entry.extension().is_some_and(|e| e == "json") {
            let mut v: Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
            scale(&mut v, f, false);
            if rel == Path::new("run.json") {
                v["run_id"] = Value::String(id.to_string());
                v["started_at"] = Value::String(started_at.to_string());
                v["finished_at"] = Value::String(finished_at.to_string());
            }
            std::fs::write(&to, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        } else {
            std::fs::copy(&entry, &to).unwrap();
        }
    }
}
