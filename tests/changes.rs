//! `benchcage changes` over a history made from copies of one real run
//! (a redis cell's short phase): sixteen nights whose throughput steps
//! down 15% at night 11 raise an alarm (exit 1) naming that night; ±1%
//! noise alone raises nothing (exit 0); `--ack` silences the alarm.
//!
//! The copies keep the real run's records and scale its figures
//! (`support::copies`).
//!
//! Needs root and redis-server (one real run of a few seconds).

mod support;

use std::path::Path;
use std::process::Command;
use support::cli::BIN;
use support::copies::{copy_run, real_run};

/// Copy `real` as night `n` (1-based) of November with its figures times
/// `f`, into `results`; returns its run id.
fn night(real: &Path, results: &Path, n: u32, f: f64) -> String {
    let id = format!("202611{n:02}-020000-{n:04x}");
    copy_run(
        real,
        results,
        &id,
        &format!("2026-11-{n:02}T02:00:00+00:00"),
        f,
    );
    id
}

/// `benchcage ARGS --results RESULTS`: exit code and stdout.
fn bc(results: &Path, args: &[&str]) -> (i32, String) {
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

/// Sixteen nights with the factors `f(night)`, indexed into a history.
fn history(real: &Path, results: &Path, f: impl Fn(u32) -> f64) -> Vec<String> {
    let ids: Vec<String> = (1..=16).map(|n| night(real, results, n, f(n))).collect();
    let mut args = vec!["history", "--index"];
    args.extend(ids.iter().map(String::as_str));
    let (code, text) = bc(results, &args);
    assert_eq!(code, 0, "{text}");
    ids
}

/// ±1% of noise, the same for every run of the test.
fn noise(n: u32) -> f64 {
    1.0 + 0.01 * ((n as f64 * 2.39996).sin())
}

#[test]
fn a_15_percent_step_is_an_alarm_noise_is_not_and_ack_silences_it() {
    let tmp = tempfile::Builder::new()
        .prefix("benchcage-changes-test-")
        .tempdir()
        .unwrap();
    let real = real_run(tmp.path(), "tests/scenarios/run-short-phase.yaml", &[]);

    let stepped = tmp.path().join("stepped");
    let ids = history(&real, &stepped, |n| {
        noise(n) * if n >= 11 { 0.85 } else { 1.0 }
    });
    // Night 11 of 16 is the sixth run from the end: recent in a window of
    // six, older than the default five (listed, no alarm).
    let (code, text) = bc(&stepped, &["changes"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("regression (older)"), "{text}");
    let (code, text) = bc(&stepped, &["changes", "--window", "6"]);
    assert_eq!(code, 1, "{text}");
    let alarm = text
        .lines()
        .find(|l| l.contains("REGRESSION") && l.contains("workload-c t2 READ throughput"))
        .unwrap_or_else(|| panic!("no throughput regression in:\n{text}"));
    assert!(alarm.contains(&ids[10]), "the step is at night 11: {alarm}");
    assert!(
        alarm.contains("redis@7.0 quickstart workload-c t2 READ"),
        "{alarm}"
    );
    assert!(alarm.contains("-15."), "{alarm}");
    // Acknowledged, every alarm of the step is silenced (throughput and p99).
    let alarms: Vec<String> = text
        .lines()
        .filter(|l| l.contains("REGRESSION"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert!(!alarms.is_empty());
    for id in &alarms {
        let (code, said) = bc(&stepped, &["changes", "--ack", id, "--note", "test"]);
        assert_eq!(code, 0, "{said}");
        assert!(said.contains(&format!("acknowledged {id}")), "{said}");
    }
    let (code, text) = bc(&stepped, &["changes", "--window", "6"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("(acknowledged)"), "{text}");
    // An id that is no change point is bad input.
    let (code, text) = bc(&stepped, &["changes", "--ack", "cp-0000000000"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("no change point cp-0000000000"), "{text}");

    let flat = tmp.path().join("flat");
    history(&real, &flat, noise);
    let (code, text) = bc(&flat, &["changes", "--window", "16"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.starts_with("0 change point(s)"), "{text}");
}
