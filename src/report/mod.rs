//! Reports of one or more runs: HTML (one self-contained file with inline
//! SVG charts), Markdown (the same tables), CSV and JSON (one row per cell x
//! phase x operation kind). One `Exporter` trait, four formats behind it.
//!
//! `view` computes what is shown once; the exporters only lay it out.
//! `stats` holds the statistics `view` and `compare` share, `fmt` the
//! number formatting, `charts` the SVG.

pub mod by_version;
pub mod charts;
pub mod compare;
pub mod csv;
pub mod fmt;
pub mod html;
pub mod json;
pub mod markdown;
pub mod stats;
pub mod view;

use crate::results::atomic::{AtomicWriteError, write_atomic};
use crate::results::flat::FlatRow;
use crate::results::history::{self, HistoryError};
use crate::results::layout::RunData;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// What a report is made from.
#[derive(Debug, Clone, Default)]
pub struct ReportInput {
    /// The runs to report, in the order given.
    pub runs: Vec<RunData>,
    /// Rows of past runs of the same scenario from the history (for the
    /// trend); empty when there is no history or several runs are reported.
    pub past: Vec<FlatRow>,
}

/// A report that could not be produced.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReportError {
    #[error("cannot serialize the report: {0}")]
    Serialize(#[from] serde_json::Error),
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

/// Turns runs into one report file's text.
pub(crate) trait Exporter {
    /// The whole report.
    fn export(&self, input: &ReportInput) -> Result<String, ReportError>;
}

/// The report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Html,
    Markdown,
    Json,
    Csv,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "html" => Ok(Format::Html),
            "md" | "markdown" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            other => Err(format!(
                "unknown report format `{other}`; use html, md, json or csv"
            )),
        }
    }
}

impl Format {
    /// File extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Markdown => "md",
            Format::Json => "json",
            Format::Csv => "csv",
        }
    }
    /// The exporter for this format.
    pub(crate) fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Html => Box::new(html::Html),
            Format::Markdown => Box::new(markdown::Markdown),
            Format::Json => Box::new(json::Json),
            Format::Csv => Box::new(csv::Csv),
        }
    }
}

/// Number of past runs the trend shows.
pub(crate) const TREND_RUNS: usize = 12;

/// The report input for `runs`, with the past runs of the scenario from
/// the history at `history_db` when exactly one run is reported.
pub(crate) fn input_with_history(
    runs: Vec<RunData>,
    history_db: &Path,
) -> Result<ReportInput, HistoryError> {
    let past = match runs.as_slice() {
        [one] => {
            let ids = history::last_finished_runs(
                history_db,
                &one.run.scenario,
                TREND_RUNS,
                Some(&one.run.started_at),
                Some(&one.run.run_id),
            )?;
            history::rows_of_runs(history_db, &ids)?
        }
        _ => Vec::new(),
    };
    Ok(ReportInput { runs, past })
}

/// Write the report of one run (with its trend from the history at
/// `history_db`, when it has past runs) to `out`, or to
/// `<run folder>/report.<ext>`; returns the path written. What `benchcage
/// run` calls when a run ends. A history that cannot be read only costs
/// the trend.
pub(crate) fn write_run_report(
    run: RunData,
    history_db: &Path,
    format: Format,
    out: Option<&Path>,
) -> Result<PathBuf, ReportError> {
    let path = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| run.dir.join(format!("report.{}", format.extension())));
    let input = input_with_history(vec![run.clone()], history_db).unwrap_or(ReportInput {
        runs: vec![run],
        past: Vec::new(),
    });
    write_report(&input, format, &path)?;
    Ok(path)
}

/// Render `input` in `format` and write it atomically to `path`.
pub(crate) fn write_report(
    input: &ReportInput,
    format: Format,
    path: &Path,
) -> Result<(), ReportError> {
    let text = format.exporter().export(input)?;
    write_atomic(path, text.as_bytes())?;
    Ok(())
}
