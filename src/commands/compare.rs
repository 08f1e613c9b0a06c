//! `benchcage compare BASE CANDIDATE [--threshold 5%] [--metric M]...`:
//! exit 0 without regression, 1 with one, 2 on bad input.

use crate::cli::CompareArgs;
use crate::commands::report::load_runs;
use crate::error::bad_input;
use crate::report::compare::{self, Metric, Threshold};
use crate::results::flat::{FlatRow, flatten};
use crate::results::history;
use crate::results::layout;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

const BEST_OF: &str = "best-of-last:";

/// A damaged history is bad input (exit 2), never a regression (exit 1).
fn history_input(e: history::HistoryError) -> anyhow::Error {
    match e {
        history::HistoryError::Corrupt { .. } => bad_input(e.to_string()),
        other => anyhow::Error::new(other),
    }
}

pub async fn run(home: &Path, args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let threshold: Threshold = args.threshold.parse().map_err(bad_input)?;
    let mut metrics: Vec<Metric> = args
        .metric
        .iter()
        .map(|m| m.parse::<Metric>().map_err(bad_input))
        .collect::<anyhow::Result<_>>()?;
    if metrics.is_empty() {
        metrics.push(Metric::Throughput);
    }
    metrics.sort();
    metrics.dedup();
    let best_of = match args.base.strip_prefix(BEST_OF) {
        Some(n) => Some(n.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
            bad_input(format!(
                "`{}`: N must be a whole number of runs, 1 or more (e.g. best-of-last:5)",
                args.base
            ))
        })?),
        None => None,
    };
    let cand = load_runs(home, std::slice::from_ref(&args.candidate))?.remove(0);
    let cand_rows = flatten(&cand);

    let (base_runs, base_name): (Vec<Vec<FlatRow>>, String) = match best_of {
        Some(n) => {
            let db = layout::history_db(home);
            let ids = history::last_finished_runs(
                &db,
                &cand.run.scenario,
                n,
                Some(&cand.run.started_at),
                Some(&cand.run.run_id),
            )
            .map_err(history_input)?;
            if ids.is_empty() {
                return Err(bad_input(format!(
                    "`{}`: the history {} holds no finished run of scenario `{}` before {}; \
                     give a run id as BASE, or index past runs with `benchcage history --index RUN`",
                    args.base,
                    db.display(),
                    cand.run.scenario,
                    cand.run.run_id
                )));
            }
            let rows = history::rows_of_runs(&db, &ids).map_err(history_input)?;
            let mut per: BTreeMap<String, Vec<FlatRow>> = BTreeMap::new();
            for r in rows {
                per.entry(r.run_id.clone()).or_default().push(r);
            }
            let name = format!(
                "best of the last {} finished runs ({})",
                ids.len(),
                ids.join(", ")
            );
            (per.into_values().collect(), name)
        }
        None => {
            let base = load_runs(home, std::slice::from_ref(&args.base))?.remove(0);
            let name = base.run.run_id.clone();
            (vec![flatten(&base)], name)
        }
    };

    let bases = metrics
        .iter()
        .map(|m| {
            let stat = if best_of.is_some() {
                compare::base_best_of(&base_runs, *m)
            } else {
                compare::base_from_run(&base_runs[0], *m)
            };
            (*m, stat)
        })
        .collect();
    let labels: BTreeMap<String, String> = base_runs
        .iter()
        .flatten()
        .chain(&cand_rows)
        .map(|r| (r.cell_group.clone(), r.group_label.clone()))
        .collect();
    let base_failed = compare::failed_phases(base_runs.iter().flatten());
    let result = compare::compare(&bases, &base_failed, &labels, &cand_rows, threshold);
    print!("{}", compare::render(&result, &base_name, &cand.run.run_id));
    Ok(if result.failures() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
