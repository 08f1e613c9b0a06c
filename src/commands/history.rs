//! `benchcage history [--engine E] [--scenario S] [--since DATE]`: list
//! runs from results/history.sqlite; `--index RUN...` (re)indexes runs.

use crate::cli::HistoryArgs;
use crate::commands::report::load_runs;
use crate::error::bad_input;
use crate::results::history::{self, RunFilter};
use crate::results::layout;
use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(home: &Path, args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let root = args.results.root(home);
    let db = root.join(layout::HISTORY_FILE);
    if !args.index.is_empty() {
        let runs = load_runs(&root, &args.index)?;
        let mut h = history::History::open(&db)?;
        for r in &runs {
            let n = h
                .index_run(r)
                .with_context(|| format!("cannot index run {}", r.run.run_id))?;
            println!("indexed {}: {} rows", r.run.run_id, n);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let filter = RunFilter {
        engine: args.engine.clone(),
        scenario: args.scenario.clone(),
        since: since_of(args)?,
    };
    if !db.is_file() {
        if !args.ids {
            println!(
                "no history yet: {} does not exist (runs are indexed when they finish)",
                db.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let runs = history::list_runs(&db, &filter)?;
    if args.ids {
        for r in &runs {
            println!("{}", r.run_id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        println!("no runs match in {}", db.display());
        return Ok(ExitCode::SUCCESS);
    }
    print_runs(&runs);
    Ok(ExitCode::SUCCESS)
}

/// `--since`, checked to be a date.
fn since_of(args: &HistoryArgs) -> anyhow::Result<Option<String>> {
    let Some(s) = &args.since else {
        return Ok(None);
    };
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| {
        bad_input(format!(
            "--since `{s}` is not a date; write YYYY-MM-DD, e.g. 2026-11-01"
        ))
    })?;
    Ok(Some(s.clone()))
}

/// The runs as a table, one line each, columns padded to their widths.
fn print_runs(runs: &[history::RunSummary]) {
    let head = [
        "run",
        "started",
        "scenario",
        "status",
        "cells",
        "results",
        "not results",
        "engines",
    ];
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|r| {
            [
                r.run_id.clone(),
                r.started_at.clone(),
                r.scenario.clone(),
                r.status.to_string(),
                r.cells.to_string(),
                r.phases_ok.to_string(),
                r.phases_excluded.to_string(),
                r.engines.join(", "),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    println!("{}", line(head.to_vec()));
    for r in &rows {
        println!("{}", line(r.iter().map(String::as_str).collect()));
    }
}
