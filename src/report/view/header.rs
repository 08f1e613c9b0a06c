//! The report's header: its title, the key facts and one table of facts
//! per run.

use super::series::ev;
use super::{Table, kv_table};
use crate::report::ReportInput;
use crate::report::fmt;
use crate::results::flat::FlatRow;
use crate::results::model::{HostInfo, RunRecord};
use crate::results::order::Natural;
use std::collections::BTreeSet;

/// `scenario — run` for one run, `N runs: a, b` for several.
pub(super) fn title(input: &ReportInput) -> String {
    match input.runs.as_slice() {
        [one] => format!("{} — {}", one.run.scenario, one.run.run_id),
        many => format!(
            "{} runs: {}",
            many.len(),
            many.iter()
                .map(|r| r.run.run_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What the header counts: scenarios, engines, cells, phases, results
/// (`results` ok phases) and what is not a result (`excluded` rows).
pub(super) fn summary(
    input: &ReportInput,
    rows: &[FlatRow],
    results: usize,
    excluded: usize,
) -> Vec<(String, String)> {
    let scenarios: BTreeSet<&str> = input.runs.iter().map(|r| r.run.scenario.as_str()).collect();
    let phases: BTreeSet<(&str, &str, u32)> = rows
        .iter()
        .map(|r| (r.run_id.as_str(), r.cell_key.as_str(), r.phase_index))
        .collect();
    let engines: BTreeSet<Natural> = rows.iter().map(|r| Natural(ev(r))).collect();
    let cells: usize = input.runs.iter().map(|r| r.cells.len()).sum();
    vec![
        ("Scenario".to_string(), join(scenarios)),
        (
            "Engines".to_string(),
            join(engines.into_iter().map(|e| e.0)),
        ),
        ("Cells".to_string(), cells.to_string()),
        ("Phases".to_string(), phases.len().to_string()),
        ("Results".to_string(), results.to_string()),
        ("Not results".to_string(), excluded.to_string()),
        (
            "Hardware".to_string(),
            join(
                rows.iter()
                    .map(|r| r.hardware_class.as_str())
                    .collect::<BTreeSet<_>>(),
            ),
        ),
    ]
}

fn join<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    items
        .into_iter()
        .map(|s| s.as_ref().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A run's facts: scenario, status, times, host, versions, overrides.
pub(super) fn run_table(run: &RunRecord) -> Table {
    let mut kv = vec![
        (
            "Scenario".to_string(),
            format!("{} ({})", run.scenario, short(&run.scenario_hash)),
        ),
        ("Status".into(), run.status.to_string()),
        ("Started".into(), fmt::timestamp(&run.started_at)),
        (
            "Finished".into(),
            fmt::or_dash(run.finished_at.as_deref(), fmt::timestamp),
        ),
    ];
    kv.extend(host_facts(&run.host));
    kv.push((
        "benchcage".into(),
        format!("{} ({})", run.benchcage_version, short(&run.git_rev)),
    ));
    if !run.overrides.is_empty() {
        kv.push((
            "Overrides".into(),
            join(run.overrides.iter().map(|(k, v)| format!("{k}={v}"))),
        ));
    }
    kv_table(&format!("Run {}", run.run_id), kv)
}

/// The host's name, CPU, memory, kernel and cgroup version.
pub(super) fn host_facts(h: &HostInfo) -> Vec<(String, String)> {
    vec![
        ("Host".into(), h.hostname.clone()),
        ("CPU".into(), format!("{} ({} cores)", h.cpu_model, h.cores)),
        ("Memory".into(), fmt::bytes(h.memory_bytes as f64)),
        ("Kernel".into(), h.kernel.clone()),
        ("cgroup".into(), h.cgroup_version.clone()),
        ("Hardware class".into(), h.class()),
    ]
}

/// A hash cut to 12 characters.
fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::layout::RunData;

    fn run(id: &str) -> RunData {
        RunData {
            dir: id.into(),
            run: RunRecord {
                run_id: id.into(),
                scenario: "nightly".into(),
                scenario_hash: "0123456789abcdef".into(),
                started_at: "2026-11-29T02:00:00Z".into(),
                ..RunRecord::default()
            },
            cells: vec![],
            unfinished: vec![],
            claims: None,
        }
    }

    #[test]
    fn one_run_is_titled_by_its_scenario_and_several_by_their_ids() {
        let one = ReportInput {
            runs: vec![run("a")],
            past: vec![],
        };
        assert_eq!(title(&one), "nightly — a");
        let two = ReportInput {
            runs: vec![run("a"), run("b")],
            past: vec![],
        };
        assert_eq!(title(&two), "2 runs: a, b");
    }

    #[test]
    fn the_run_table_shortens_hashes_and_dashes_an_unfinished_run() {
        let t = run_table(&run("a").run);
        assert_eq!(t.title, "Run a");
        assert_eq!(t.rows[0], ["Scenario", "nightly (0123456789ab)"]);
        assert_eq!(t.rows[2], ["Started", "2026-11-29 02:00:00 UTC"]);
        assert_eq!(t.rows[3], ["Finished", "—"]);
        assert_eq!(t.rows[4][0], "Host");
    }

    #[test]
    fn the_summary_counts_phases_once_across_operation_kinds() {
        let input = ReportInput {
            runs: vec![run("run1")],
            past: vec![],
        };
        let a = super::super::testing::row("redis", "c", "run", 4, 1.0);
        let b = FlatRow {
            op: "UPDATE".into(),
            ..a.clone()
        };
        let s = summary(&input, &[a, b], 1, 0);
        assert_eq!(s[1], ("Engines".to_string(), "redis@1.0".to_string()));
        assert_eq!(s[3], ("Phases".to_string(), "1".to_string()));
    }
}
