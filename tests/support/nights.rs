//! A history of nights made from copies of one real run (`changes.rs`,
//! `site.rs`): the copies keep the real run's records and scale its
//! figures; each is marked a result (the real phase may have been voided
//! by a busy host, which is not what those tests are about).

use super::cli::{BIN, bc_in, repo, run_dir_of};
use super::files::walk;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One real run (`benchcage run ARGS`, a scenario path under the
/// repository first) into `tmp/real`; returns its run folder.
pub fn real_run(tmp: &Path, args: &[&str]) -> PathBuf {
    let out = bc_in(
        &repo(),
        &tmp.join("real"),
        &tmp.join("work"),
        &tmp.join("state"),
    )
    .arg("run")
    .args(args)
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

/// Scale every throughput in `v` by `f` and every latency by `1 / f`, and
/// make every phase a result.
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
                    (_, Some(t)) if under_latency => *x = Value::from(t / f),
                    _ => scale(x, f, under_latency || k == "latency_us"),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| scale(x, f, under_latency)),
        _ => {}
    }
}

/// Copy `real` as night `n` (1-based) of November with its figures times
/// `f`, into `results`; returns its run id.
pub fn night(real: &Path, results: &Path, n: u32, f: f64) -> String {
    let id = format!("202611{n:02}-020000-{n:04x}");
    let dir = results.join(&id);
    for entry in walk(real) {
        let rel = entry.strip_prefix(real).unwrap();
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        if entry.extension().is_some_and(|e| e == "json") {
            let mut v: Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
            scale(&mut v, f, false);
            if rel == Path::new("run.json") {
                v["run_id"] = Value::String(id.clone());
                v["started_at"] = Value::String(format!("2026-11-{n:02}T02:00:00+00:00"));
                v["finished_at"] = Value::String(format!("2026-11-{n:02}T02:01:00+00:00"));
            }
            std::fs::write(&to, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        } else {
            std::fs::copy(&entry, &to).unwrap();
        }
    }
    id
}

/// `benchcage ARGS --results RESULTS`: exit code and stdout with stderr.
pub fn bc(results: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .arg("--results")
        .arg(results)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code().unwrap_or(-1), format!("{text}{err}"))
}

/// `count` nights with the factors `f(night)`, indexed into a history.
pub fn history(real: &Path, results: &Path, count: u32, f: impl Fn(u32) -> f64) -> Vec<String> {
    let ids: Vec<String> = (1..=count).map(|n| night(real, results, n, f(n))).collect();
    let mut args = vec!["history", "--index"];
    args.extend(ids.iter().map(String::as_str));
    let (code, text) = bc(results, &args);
    assert_eq!(code, 0, "{text}");
    ids
}

/// ±1% of noise, the same for every run of a test.
pub fn noise(n: u32) -> f64 {
    1.0 + 0.01 * ((n as f64 * 2.39996).sin())
}
