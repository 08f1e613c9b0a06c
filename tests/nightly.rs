//! The nightly that ships: `scripts/nightly.sh` runs a matrix and every
//! check on it, two nights in a row, into a results folder of its own;
//! a scenario that cannot start exits 2 with nothing checked; the systemd
//! units in `contrib/systemd/` pass `systemd-analyze verify` (and a
//! broken copy does not).
//!
//! Needs root and redis-server (two real runs of a few seconds).

mod support;

use std::path::Path;
use std::process::Command;
use support::cli::{BIN, repo};

/// `scripts/nightly.sh` on `scenario`, into `tmp`: exit code and output.
fn night(tmp: &Path, scenario: &str) -> (i32, String) {
    let out = Command::new("bash")
        .arg(repo().join("scripts/nightly.sh"))
        .env("BENCHCAGE", BIN)
        .env("BENCHCAGE_HOME", repo())
        .env("BENCHCAGE_RESULTS", tmp.join("results"))
        .env("BENCHCAGE_WORK", tmp.join("work"))
        .env("BENCHCAGE_STATE_DIR", tmp.join("state"))
        .env("NIGHTLY_SCENARIO", scenario)
        .env("NIGHTLY_FETCH", "no")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn two_nights_run_report_compare_and_search_for_changes_and_a_bad_scenario_exits_2() {
    let tmp = tempfile::Builder::new()
        .prefix("benchcage-nightly-test-")
        .tempdir()
        .unwrap();
    for n in 1..=2 {
        let (code, text) = night(tmp.path(), "tests/scenarios/run-short-phase.yaml");
        let run = text
            .lines()
            .find_map(|l| l.strip_prefix("results: "))
            .map(|d| Path::new(d.trim()).to_path_buf())
            .unwrap_or_else(|| panic!("night {n} made no run:\n{text}"));
        assert!(run.join("report.html").is_file(), "{text}");
        for step in [
            "nightly: report",
            "compare --by-version: not applicable to this matrix",
            "nightly: changes",
        ] {
            assert!(text.contains(step), "night {n} lacks `{step}`:\n{text}");
        }
        if n == 1 {
            assert!(text.contains("first night of run-short-phase"), "{text}");
        } else {
            assert!(text.contains("nightly: compare best-of-last:5"), "{text}");
        }
        // The exit code is what the checks said: 1 exactly when one failed
        // (a phase a busy host voided leaves compare nothing to compare).
        let failed = text.contains(": FAILED") || text.contains("could not check");
        assert_eq!(code, i32::from(failed), "night {n}:\n{text}");
        let id = run.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            text.contains(&format!("done: run {id}, exit {code}")),
            "{text}"
        );
    }
    let (code, text) = night(tmp.path(), "tests/scenarios/no-such-scenario.yaml");
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("the run did not start (exit 2)"), "{text}");
    let runs = std::fs::read_dir(tmp.path().join("results"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("run.json").is_file())
        .count();
    assert_eq!(runs, 2, "the bad night made no run");
}

/// The units with their install path set to this checkout, in `dir`.
fn units_in(dir: &Path, edit: impl Fn(String) -> String) {
    let home = repo().display().to_string();
    for unit in ["benchcage-nightly.service", "benchcage-nightly.timer"] {
        let text = std::fs::read_to_string(repo().join("contrib/systemd").join(unit)).unwrap();
        std::fs::write(dir.join(unit), edit(text.replace("/opt/benchcage", &home))).unwrap();
    }
}

fn verify(dir: &Path) -> (bool, String) {
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(dir.join("benchcage-nightly.service"))
        .arg(dir.join("benchcage-nightly.timer"))
        .output()
        .expect("systemd-analyze (Debian's systemd; scripts/deps.sh installs it)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_systemd_units_pass_systemd_analyze_verify() {
    let good = tempfile::tempdir().unwrap();
    units_in(good.path(), |t| t);
    let (ok, why) = verify(good.path());
    assert!(ok, "{why}");
    // The check can fail: a service whose script is missing does.
    let bad = tempfile::tempdir().unwrap();
    units_in(bad.path(), |t| {
        t.replace("scripts/nightly.sh", "scripts/missing.sh")
    });
    let (ok, why) = verify(bad.path());
    assert!(!ok, "a missing ExecStart passed verify: {why}");
}
