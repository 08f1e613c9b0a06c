//! `benchcage changes` over a history made from copies of one real run
//! (a redis cell's short phase): sixteen nights whose throughput steps
//! down 15% at night 11 raise an alarm (exit 1) naming that night; ±1%
//! noise alone raises nothing (exit 0); `--ack` silences the alarm.
//!
//! The copies are made by `support::nights`.
//!
//! Needs root and redis-server (one real run of a few seconds).

mod support;

use support::copies::real_run;
use support::nights::{bc, history, noise};

#[test]
fn a_15_percent_step_is_an_alarm_noise_is_not_and_ack_silences_it() {
    let tmp = tempfile::Builder::new()
        .prefix("benchcage-changes-test-")
        .tempdir()
        .unwrap();
    let real = real_run(tmp.path(), "tests/scenarios/run-short-phase.yaml", &[]);

    let stepped = tmp.path().join("stepped");
    let ids = history(&real, &stepped, 16, |n| {
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
    history(&real, &flat, 16, noise);
    let (code, text) = bc(&flat, &["changes", "--window", "16"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.starts_with("0 change point(s)"), "{text}");
}
