//! The results site (`benchcage site`, docs/reports.md "Results site"):
//! static, self-contained pages over the whole history of a results
//! folder. `index.html` lists every series (engine@version x environment
//! x phase x threads x operation x metric, as `crate::changes` makes
//! them) with a sparkline and its latest change point, and every run
//! with a link to its own report; one `engine-<name>.html` per engine
//! shows its versions and environments over time.
//!
//! The pages hold their CSS and SVG inline and a Content-Security-Policy
//! that allows nothing else, so they make no request when viewed. Links
//! to run reports are relative paths from the site to the results folder.
//!
//! `build` checks its input before it writes anything, renders every
//! page in memory (`pages`), and `publish` writes them into a folder
//! beside the target and renames it into place.

mod pages;
mod publish;

use crate::changes::{self, edivisive::Options};
use crate::results::history::{self, HistoryError, RunFilter};
use crate::results::layout;
use std::path::{Path, PathBuf};

pub use publish::MARKER;

/// A series' last runs that count as recent for an alarm: the default
/// of `benchcage changes --window`.
pub(crate) const WINDOW: usize = 5;

/// What `build` wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    pub dir: PathBuf,
    pub pages: usize,
    pub runs: usize,
    pub series: usize,
    pub changes: usize,
}

/// Why a site was not built. Nothing is written for any of them.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error(
        "results folder {path} does not exist: pass the folder `benchcage run --results` wrote to with --results DIR"
    )]
    NoResults { path: PathBuf },
    #[error(
        "{path} has no history ({file} is missing): runs are indexed when they finish; `benchcage history --index RUN` indexes older run folders"
    )]
    NoHistory { path: PathBuf, file: PathBuf },
    #[error(
        "-o {path} is a file: pass a folder for the site (made if missing, replaced if an earlier `benchcage site` wrote it)"
    )]
    OutIsFile { path: PathBuf },
    #[error(
        "-o {path} is a folder that `benchcage site` did not write (no {MARKER} in it, and not empty): pass a new or empty folder, or the one an earlier `benchcage site` wrote"
    )]
    NotASite { path: PathBuf },
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("cannot write the site {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SiteError {
    /// A problem with what the user passed (exit 2), not with the host.
    pub(crate) fn is_bad_input(&self) -> bool {
        matches!(
            self,
            SiteError::NoResults { .. }
                | SiteError::NoHistory { .. }
                | SiteError::OutIsFile { .. }
                | SiteError::NotASite { .. }
                | SiteError::History(HistoryError::Corrupt { .. })
        )
    }
}

/// Build the site of the results folder `results` into the folder `out`
/// (made, or replaced whole when an earlier build wrote it).
pub fn build(results: &Path, out: &Path) -> Result<Built, SiteError> {
    let db = results.join(layout::HISTORY_FILE);
    if !results.is_dir() {
        return Err(SiteError::NoResults {
            path: results.to_path_buf(),
        });
    }
    if !db.is_file() {
        return Err(SiteError::NoHistory {
            path: results.to_path_buf(),
            file: db,
        });
    }
    publish::check_target(out)?;

    let mut runs = history::list_runs(&db, &RunFilter::default())?;
    runs.reverse(); // oldest first
    let ids: Vec<String> = runs.iter().map(|r| r.run_id.clone()).collect();
    let rows = history::rows_of_runs(&db, &ids)?;
    let acked = history::acknowledged(&db)?;
    let series = changes::series_of(&rows);
    let found = changes::changes(&series, &Options::default(), WINDOW, &acked);

    let to_results = publish::relative_to(out, results).map_err(|source| SiteError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let reports = runs
        .iter()
        .map(|r| {
            let file = layout::RunPaths::new(results, &r.run_id)
                .dir
                .join("report.html");
            file.is_file()
                .then(|| publish::href(&to_results.join(&r.run_id).join("report.html")))
        })
        .collect();
    let data = pages::Data {
        runs: &runs,
        reports,
        series: &series,
        changes: &found,
    };
    let files = pages::render(&data);
    let built = Built {
        dir: out.to_path_buf(),
        pages: files.len(),
        runs: runs.len(),
        series: series.len(),
        changes: found.len(),
    };
    publish::write(out, &files)?;
    Ok(built)
}
