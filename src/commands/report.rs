//! `benchcage report RUN... [--format html|md|json|csv] [-o FILE]`.

use crate::cli::ReportArgs;
use crate::error::bad_input;
use crate::report::{Format, ReportInput, input_with_history, write_report};
use crate::results::layout::{self, RunData};
use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub async fn run(home: &Path, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let format: Format = args.format.parse().map_err(bad_input)?;
    let root = args.results.root(home);
    let runs = load_runs(&root, &args.runs)?;
    let input = match input_with_history(runs.clone(), &root.join(layout::HISTORY_FILE)) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("warning: no trend over past runs: {e}");
            ReportInput { runs, past: vec![] }
        }
    };
    let out = match &args.out {
        Some(p) if p.as_os_str() == "-" => {
            let text = format
                .exporter()
                .export(&input)
                .context("cannot render the report")?;
            std::io::stdout()
                .write_all(text.as_bytes())
                .context("cannot write the report to standard output")?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(p) => p.clone(),
        None => input.runs[0]
            .dir
            .join(format!("report.{}", format.extension())),
    };
    write_report(&input, format, &out).context("cannot write the report")?;
    let shown = std::path::absolute(&out).unwrap_or(out);
    println!("{}", shown.display());
    Ok(ExitCode::SUCCESS)
}

/// Resolve run ids (in the results folder `root`) or folders and load
/// them; an unknown run is bad input.
pub(crate) fn load_runs(root: &Path, args: &[String]) -> anyhow::Result<Vec<RunData>> {
    let dirs: Vec<PathBuf> = args
        .iter()
        .map(|a| layout::resolve_run(root, a).map_err(|e| bad_input(e.to_string())))
        .collect::<anyhow::Result<_>>()?;
    // A damaged run.json or cell.json is bad input (exit 2), like an
    // unknown run: the user named a run that cannot be read.
    dirs.iter()
        .map(|d| {
            layout::load_run(d).map_err(|e| {
                bad_input(format!(
                    "cannot load the run in {}: {e}; restore the file from a copy, or give another run",
                    d.display()
                ))
            })
        })
        .collect()
}
