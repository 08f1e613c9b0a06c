//! `benchcage changes [--results DIR] [--window N] [--ack ID]`: change
//! points over the history (`crate::changes`); exit 1 when the newest
//! change point of a series is a recent regression nobody acknowledged.

use crate::changes::{self, Change, edivisive::Options};
use crate::cli::ChangesArgs;
use crate::error::bad_input;
use crate::results::{history, layout};
use std::path::Path;
use std::process::ExitCode;

pub async fn run(home: &Path, args: &ChangesArgs) -> anyhow::Result<ExitCode> {
    if args.window == 0 {
        return Err(bad_input("--window must be 1 or more runs"));
    }
    let db = args.results.root(home).join(layout::HISTORY_FILE);
    if !db.is_file() {
        println!(
            "no history yet: {} does not exist (runs are indexed when they finish)",
            db.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let rows = history::all_rows(&db).map_err(history_input)?;
    let series = changes::series_of(&rows);
    let acked = history::acknowledged(&db).map_err(history_input)?;
    let found = changes::changes(&series, &Options::default(), args.window, &acked);
    if let Some(id) = &args.ack {
        let Some(c) = found.iter().find(|c| &c.id == id) else {
            return Err(bad_input(format!(
                "no change point {id} in {}: `benchcage changes` lists them with their ids",
                db.display()
            )));
        };
        history::acknowledge(&db, id, args.note.as_deref().unwrap_or(""))?;
        println!(
            "acknowledged {id}: {} at run {} ({:+.1}%)",
            c.series.label(),
            c.run_id,
            c.change * 100.0
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_changes(&found, series.len(), rows.len());
    let alarms: Vec<&Change> = found.iter().filter(|c| c.is_alarm()).collect();
    if alarms.is_empty() {
        println!(
            "no unacknowledged regression among the newest change points of the last {} run(s) of each series",
            args.window
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} unacknowledged regression(s) in the last {} run(s): {}; `benchcage changes --ack ID` acknowledges one",
        alarms.len(),
        args.window,
        alarms
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(ExitCode::from(1))
}

/// A damaged history is bad input (exit 2), never a regression (exit 1).
fn history_input(e: history::HistoryError) -> anyhow::Error {
    match e {
        history::HistoryError::Corrupt { .. } => bad_input(e.to_string()),
        other => anyhow::Error::new(other),
    }
}

fn print_changes(found: &[Change], series: usize, rows: usize) {
    println!(
        "{} change point(s) in {series} series ({rows} result rows; E-Divisive means, permutation p <= {})",
        found.len(),
        Options::default().significance
    );
    if found.is_empty() {
        return;
    }
    println!(
        "{:<13} {:<24} {:<10} {:<48} {:>22} {:>24} {:>6}  VERDICT",
        "ID", "RUN", "DATE", "SERIES", "BEFORE -> AFTER", "CHANGE (95% CI)", "P"
    );
    for c in found {
        let verdict = match (c.regression, c.is_alarm(), c.acknowledged) {
            (true, true, _) => "REGRESSION",
            (true, false, true) => "regression (acknowledged)",
            (true, false, false) => "regression (older)",
            (false, ..) => "improvement",
        };
        println!(
            "{:<13} {:<24} {:<10} {:<48} {:>22} {:>24} {:>6.3}  {verdict}",
            c.id,
            c.run_id,
            c.started_at.get(..10).unwrap_or(&c.started_at),
            c.series.label(),
            format!("{:.0} -> {:.0} {}", c.before, c.after, c.unit()),
            format!(
                "{:+.1}% [{:+.1}, {:+.1}]",
                c.change * 100.0,
                c.interval.0 * 100.0,
                c.interval.1 * 100.0
            ),
            c.p_value,
        );
    }
}
