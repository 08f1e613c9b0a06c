//! What a report shows, computed once from the runs: sections of charts,
//! each with the table of its data, the cells' time series and records,
//! and what is not a result. The HTML exporter draws all of it; the
//! Markdown exporter prints the same tables.
//!
//! Only phases whose verdict is ok feed a chart or a result table; the
//! others are listed with their reason.
//!
//! One file per part of the report. In each, the statistics are pure
//! functions over the flat rows or the cell records, apart from the
//! formatting that turns their results into charts and tables:
//! - `configs` and `series`: what every section starts from (ok phases
//!   grouped into configurations; the name, color and dash of a series);
//! - `header`: title, key facts and the runs' tables; `excluded`: what is
//!   not a result;
//! - the sections: `claims` (the write-up's findings, first), `throughput`, `threads`, `latency`, `fit` (doesn't fit
//!   in RAM), `size`, `topology` (single node vs replica set), `trend`;
//! - `cell`: each cell's time series, phase table and records;
//!   `all_rows`: every row.

mod all_rows;
mod cell;
mod claims;
mod configs;
mod excluded;
mod fit;
mod header;
mod latency;
mod series;
mod size;
#[cfg(test)]
mod testing;
mod threads;
mod throughput;
mod topology;
mod trend;
mod versions;

pub use configs::family;

use crate::report::ReportInput;
use crate::report::charts::{Chart, SeriesStyle};
use crate::report::fmt;
use crate::results::flat::{FlatRow, Verdict, flatten};
use crate::results::model::RunRecord;
use configs::{PhaseObs, configs, observations, phase_order};
use series::SeriesMap;

/// A table: headers, which columns are numeric (right-aligned), rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with columns (header, numeric).
    fn new<S: AsRef<str>>(title: impl Into<String>, cols: &[(S, bool)]) -> Self {
        Table {
            title: title.into(),
            headers: cols.iter().map(|c| c.0.as_ref().to_string()).collect(),
            numeric: cols.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }
}

/// A chart with the table of its data under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub chart: Chart,
    pub table: Table,
}

/// One part of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// HTML anchor.
    pub id: String,
    pub title: String,
    /// One paragraph: what the charts show and how values were chosen.
    pub note: String,
    pub figures: Vec<Figure>,
    /// Tables without a chart, after the figures.
    pub tables: Vec<Table>,
    /// Said instead when there are no figures and no tables.
    pub empty: String,
}

/// One cell: its time series, summary table and records.
#[derive(Debug, Clone, PartialEq)]
pub struct CellView {
    pub anchor: String,
    pub label: String,
    pub run_id: String,
    pub key: String,
    pub series: SeriesStyle,
    /// Each phase's name, verdict and reason.
    pub phases: Vec<(String, Verdict, String)>,
    /// ops/s, memory against the cap, disk reads.
    pub charts: Vec<Chart>,
    pub table: Table,
    /// The first errors of each phase and operation kind that failed
    /// operations; `None` when no operation failed.
    pub errors: Option<Table>,
    /// Host, limits, knobs, fidelity: shown one click away.
    pub details: Vec<Table>,
}

/// Everything a report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub title: String,
    pub runs: Vec<RunRecord>,
    /// Key facts for the header: label, value.
    pub summary: Vec<(String, String)>,
    /// Run and host facts, one table per run.
    pub run_tables: Vec<Table>,
    /// Phases that are not results, and cells that did not finish.
    pub excluded: Table,
    pub sections: Vec<Section>,
    pub cells: Vec<CellView>,
    pub all_rows: Table,
}

/// Build the view of a report.
pub fn build(input: &ReportInput) -> View {
    let rows: Vec<FlatRow> = input.runs.iter().flat_map(flatten).collect();
    let series = SeriesMap::new(&rows, &input.past);
    let obs = observations(&rows);
    let excluded = excluded::table(input, &rows);
    View {
        title: header::title(input),
        runs: input.runs.iter().map(|r| r.run.clone()).collect(),
        summary: header::summary(input, &rows, obs.len(), excluded.rows.len()),
        run_tables: input
            .runs
            .iter()
            .map(|r| header::run_table(&r.run))
            .collect(),
        excluded,
        sections: sections(input, &rows, &obs, &series),
        cells: cell::views(input, &series),
        all_rows: all_rows::table(&rows, input.runs.len() > 1),
    }
}

/// The chart sections, in reading order; a section with one figure gives
/// its chart a row of its own.
fn sections(
    input: &ReportInput,
    rows: &[FlatRow],
    obs: &[PhaseObs],
    series: &SeriesMap,
) -> Vec<Section> {
    let cfgs = configs(obs, series);
    let phases = phase_order(rows);
    let mut sections: Vec<Section> = claims::section(input).into_iter().collect();
    sections.extend([
        throughput::section(&cfgs, &phases),
        threads::section(&cfgs, &phases),
        latency::section(&cfgs, &phases),
        fit::memory_section(obs, series, &phases),
        size::section(obs, series),
    ]);
    sections.extend(topology::section(input, rows));
    if let [run] = input.runs.as_slice() {
        sections.extend(versions::section(run));
    }
    if input.runs.len() == 1 && !input.past.is_empty() {
        sections.push(trend::section(rows, &input.past, series, &phases));
    }
    for s in &mut sections {
        if let [only] = s.figures.as_mut_slice() {
            only.chart.widen();
        }
    }
    sections
}

/// A row's cell as tables name it: its group's label and repetition.
fn cell_label(r: &FlatRow) -> String {
    format!("{} / rep {}", r.group_label, r.repetition)
}

/// A two-column table of facts; says `none` when there are none.
fn kv_table(title: &str, kv: Vec<(String, String)>) -> Table {
    let mut t = Table::new(title, &[("", false), ("", false)]);
    t.rows = kv.into_iter().map(|(k, v)| vec![k, v]).collect();
    if t.rows.is_empty() {
        t.rows.push(vec![fmt::DASH.into(), "none".into()]);
    }
    t
}

/// `s` as an HTML id: lower-case letters and digits, runs of anything
/// else as one `-`.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// `(name (ops/s), numeric)` columns, one per series, after `first`.
fn series_columns(first: &str, numeric: bool, styles: &[SeriesStyle]) -> Vec<(String, bool)> {
    let mut cols = vec![(first.to_string(), numeric)];
    cols.extend(styles.iter().map(|s| (format!("{} (ops/s)", s.name), true)));
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_keep_letters_and_digits_and_collapse_the_rest() {
        assert_eq!(slug("Workload A / t16"), "workload-a-t16");
        assert_eq!(slug("--x--"), "x");
    }

    #[test]
    fn a_fact_table_without_facts_says_none() {
        let t = kv_table("Knobs", vec![]);
        assert_eq!(t.rows, vec![vec!["—".to_string(), "none".to_string()]]);
        let t = kv_table("Knobs", vec![("a".into(), "1".into())]);
        assert_eq!(t.rows, vec![vec!["a".to_string(), "1".to_string()]]);
    }
}
