//! "Not results": phases that failed, were invalidated by a fidelity
//! check or OOM-killed, and cells that did not finish; left out of every
//! chart and result table.

use super::{Table, cell_label};
use crate::report::ReportInput;
use crate::report::fmt;
use crate::results::flat::{FlatRow, Verdict};
use std::collections::BTreeSet;

/// One row per phase that is not a result (once, not per operation
/// kind), then one per unfinished cell.
pub(super) fn table(input: &ReportInput, rows: &[FlatRow]) -> Table {
    let mut t = Table::new(
        "Not results",
        &[
            ("Run", false),
            ("Cell", false),
            ("Phase", false),
            ("Status", false),
            ("Reason", false),
        ],
    );
    let mut seen = BTreeSet::new();
    for r in rows.iter().filter(|r| r.status != Verdict::Ok) {
        if seen.insert((r.run_id.as_str(), r.cell_key.as_str(), r.phase_index)) {
            t.rows.push(vec![
                r.run_id.clone(),
                cell_label(r),
                r.phase.clone(),
                r.status.as_str().to_uppercase(),
                r.reason.clone(),
            ]);
        }
    }
    for run in &input.runs {
        for key in &run.unfinished {
            t.rows.push(vec![
                run.run.run_id.clone(),
                key.clone(),
                fmt::DASH.into(),
                "UNFINISHED".into(),
                "no cell.json: the cell did not run or was interrupted".into(),
            ]);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::super::testing::row;
    use super::*;
    use crate::results::layout::RunData;

    #[test]
    fn a_phase_that_is_not_a_result_is_listed_once_and_an_unfinished_cell_too() {
        let oom = FlatRow {
            status: Verdict::Oom,
            reason: "oom_kill 1".into(),
            ..row("redis", "c", "run", 4, 0.0)
        };
        let other_kind = FlatRow {
            op: "UPDATE".into(),
            ..oom.clone()
        };
        let input = ReportInput {
            runs: vec![RunData {
                dir: "r".into(),
                run: Default::default(),
                cells: vec![],
                unfinished: vec!["k9".into()],
                claims: None,
            }],
            past: vec![],
        };
        let ok = row("redis", "d", "run", 4, 10.0);
        let t = table(&input, &[oom, other_kind, ok]);
        assert_eq!(
            t.rows,
            [
                [
                    "run1",
                    "redis@1.0 / 4 threads / rep 1",
                    "run",
                    "OOM",
                    "oom_kill 1"
                ],
                [
                    "",
                    "k9",
                    "—",
                    "UNFINISHED",
                    "no cell.json: the cell did not run or was interrupted"
                ],
            ]
        );
    }
}
