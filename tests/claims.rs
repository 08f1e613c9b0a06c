//! A write-up's claims decided by a real run: two redis cells (the
//! append-only file synced on every write and never), one true claim and
//! one false one. Needs root (cgroups). Leaves nothing behind.

mod support;

use benchcage::model::claim::{ClaimsRecord, Verdict};
use std::path::PathBuf;
use support::clean::assert_run_left_nothing;
use support::cli::{BIN, bc_in, run_dir_of};
use support::files::read_json;
use support::host::host_contention;

const HOME: &str = env!("CARGO_MANIFEST_DIR");

/// The verdict of claim `id`, or `not measured` only when every reason is
/// a neighbour's or the hypervisor's CPU time (another test on the host):
/// then `None`, the one case this test may not decide.
fn verdict_of(record: &ClaimsRecord, id: &str) -> Option<Verdict> {
    let o = record.claims.iter().find(|o| o.claim.id == id).unwrap();
    if o.verdict == Verdict::NotMeasured {
        let why = o.reason.clone().unwrap_or_default();
        assert!(host_contention(&why), "{id} not measured: {why}");
        return None;
    }
    Some(o.verdict)
}

#[test]
fn a_true_claim_holds_a_false_one_is_reversed_and_claims_exits_1() {
    let tmp = tempfile::Builder::new()
        .prefix("benchcage-claims-test-")
        .tempdir()
        .unwrap();
    let (results, work, state) = (
        tmp.path().join("results"),
        tmp.path().join("work"),
        tmp.path().join("state"),
    );
    let home = PathBuf::from(HOME);
    let out = bc_in(&home, &results, &work, &state)
        .args(["run", "tests/scenarios/run-claims.yaml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let dir = run_dir_of(&stdout);
    let run_id = dir.file_name().unwrap().to_string_lossy().to_string();
    assert_run_left_nothing(tmp.path(), &results, &work, &state, &run_id);
    assert!(
        stdout.contains("claims of the write-up"),
        "{stdout}\n{stderr}"
    );

    let record: ClaimsRecord = read_json(&dir.join("claims.json"));
    let truth = verdict_of(&record, "no-fsync-updates-faster");
    let lie = verdict_of(&record, "fsync-always-updates-faster");
    if let Some(v) = truth {
        assert_eq!(v, Verdict::Holds, "{record:#?}");
    }
    if let Some(v) = lie {
        assert_eq!(v, Verdict::Reversed, "{record:#?}");
    }
    let measured = record.claims.iter().find(|o| o.ratio.is_some());
    if let Some(o) = measured {
        assert!(o.lo.unwrap() <= o.ratio.unwrap() && o.ratio.unwrap() <= o.hi.unwrap());
        assert!(!o.a_cells.is_empty() && !o.b_cells.is_empty());
    }

    let claims = std::process::Command::new(BIN)
        .args(["--home", HOME, "claims", &run_id, "--results"])
        .arg(&results)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&claims.stdout).to_string();
    assert!(text.contains("no-fsync-updates-faster"), "{text}");
    let want = if lie.is_some() { 1 } else { 0 };
    assert_eq!(claims.status.code(), Some(want), "{text}");

    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(report.contains("Claims"), "no Claims section");
    for o in &record.claims {
        assert!(
            report.contains(&o.claim.says),
            "{} not in the report",
            o.claim.id
        );
        assert!(report.contains(o.verdict.as_str()));
    }
    let history =
        benchcage::results::history::claim_verdicts(&results.join("history.sqlite"), &run_id)
            .unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
}
