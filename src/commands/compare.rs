//! `benchcage compare BASE CANDIDATE [--threshold 5%] [--metric M]...`:
//! exit 0 without regression (an inconclusive row is none), 1 with one,
//! 2 on bad input. The runs' per-second series go with their rows
//! (`compare::Seconds`) so that every difference gets its interval.

use crate::cli::CompareArgs;
use crate::commands::report::load_runs;
use crate::error::bad_input;
use crate::report::by_version;
use crate::report::compare::{self, Metric, Seconds, Threshold};
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

/// `--threshold` and `--metric` (throughput when none), checked.
fn criteria(args: &CompareArgs) -> anyhow::Result<(Threshold, Vec<Metric>)> {
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
    Ok((threshold, metrics))
}

/// Exit 1 when the comparison found a regression or a new failure, or
/// could compare nothing (a guard that saw nothing must not pass).
fn verdict(result: &compare::Comparison) -> ExitCode {
    if result.failures() > 0 || result.compared() == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// N of a `best-of-last:N` base; `None` for a run id.
fn best_of_n(args: &CompareArgs) -> anyhow::Result<Option<usize>> {
    let Some(n) = args.base.strip_prefix(BEST_OF) else {
        return Ok(None);
    };
    let n = n.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
        bad_input(format!(
            "`{}`: N must be a whole number of runs, 1 or more (e.g. best-of-last:5)",
            args.base
        ))
    })?;
    Ok(Some(n))
}

/// The rows of the last `n` finished runs of the candidate's scenario
/// before it, one list a run, and the base's name; the per-second series
/// of those whose folders are still in the results folder go into
/// `seconds` (a run only in the history compares by its figures).
fn best_of_history(
    home: &Path,
    args: &CompareArgs,
    cand: &layout::RunData,
    n: usize,
    seconds: &mut Seconds,
) -> anyhow::Result<(Vec<Vec<FlatRow>>, String)> {
    let db = args.results.root(home).join(layout::HISTORY_FILE);
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
    let root = args.results.root(home);
    for id in &ids {
        if let Ok(run) = layout::load_run(&root.join(id)) {
            seconds.add(&run);
        }
    }
    let mut per: BTreeMap<String, Vec<FlatRow>> = BTreeMap::new();
    for r in rows {
        per.entry(r.run_id.clone()).or_default().push(r);
    }
    let name = format!(
        "best of the last {} finished runs ({})",
        ids.len(),
        ids.join(", ")
    );
    Ok((per.into_values().collect(), name))
}

pub async fn run(home: &Path, args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let (threshold, metrics) = criteria(args)?;
    if args.by_version {
        return by_version(home, args, threshold, &metrics);
    }
    let Some(candidate) = &args.candidate else {
        return Err(bad_input(format!(
            "compare needs a BASE and a CANDIDATE run (got only `{}`); \
             to compare the versions inside one run, use `benchcage compare --by-version {}`",
            args.base, args.base
        )));
    };
    let best_of = best_of_n(args)?;
    let cand = load_runs(&args.results.root(home), std::slice::from_ref(candidate))?.remove(0);
    let mut cand_rows = flatten(&cand);
    let mut seconds = Seconds::default();
    seconds.add(&cand);
    let (mut base_runs, base_name) = match best_of {
        Some(n) => best_of_history(home, args, &cand, n, &mut seconds)?,
        None => {
            let base =
                load_runs(&args.results.root(home), std::slice::from_ref(&args.base))?.remove(0);
            seconds.add(&base);
            let name = base.run.run_id.clone();
            (vec![flatten(&base)], name)
        }
    };

    compare::fill_unknown_classes(base_runs.iter_mut().flatten().chain(cand_rows.iter_mut()));
    let bases = metrics
        .iter()
        .map(|m| {
            let stat = if best_of.is_some() {
                compare::base_best_of(&base_runs, *m, &seconds)
            } else {
                compare::base_from_run(&base_runs[0], *m, &seconds)
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
    let result = compare::compare(
        &bases,
        &base_failed,
        &labels,
        &cand_rows,
        &seconds,
        threshold,
    );
    print!("{}", compare::render(&result, &base_name, &cand.run.run_id));
    Ok(verdict(&result))
}

/// `compare --by-version RUN`: each version of an engine in RUN against the
/// version before it.
fn by_version(
    home: &Path,
    args: &CompareArgs,
    threshold: Threshold,
    metrics: &[Metric],
) -> anyhow::Result<ExitCode> {
    if let Some(c) = &args.candidate {
        return Err(bad_input(format!(
            "--by-version compares the versions inside one run: give one run, not `{}` and `{c}`",
            args.base
        )));
    }
    if args.base.starts_with(BEST_OF) {
        return Err(bad_input(format!(
            "--by-version takes a run id, not `{}`",
            args.base
        )));
    }
    let run = load_runs(&args.results.root(home), std::slice::from_ref(&args.base))?.remove(0);
    let Some((steps, result)) = by_version::compare_run(&run, threshold, metrics) else {
        return Err(bad_input(format!(
            "run {} has no engine at two or more versions on the same setup, so there is no \
             version to compare with the one before it; run a version matrix \
             (e.g. scenarios/version-matrix.yaml) and compare that run",
            run.run.run_id
        )));
    };
    let names: Vec<String> = steps
        .steps
        .iter()
        .map(|s| format!("{} {} -> {}", s.engine, s.from, s.to))
        .collect();
    print!(
        "{}",
        compare::render(
            &result,
            &format!("each version of run {}", run.run.run_id),
            &format!("the next version ({})", names.join(", "))
        )
    );
    Ok(verdict(&result))
}
