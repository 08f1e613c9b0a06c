//! "Trend over past runs": this run and the finished runs of the same
//! scenario before it (from the history), each engine@version at its best
//! configuration per run.

use super::configs::{Config, best_mean, configs, in_family, observations, series_of};
use super::series::SeriesMap;
use super::{Figure, Section, Table, series_columns, slug};
use crate::report::charts::{Axis, Chart, Line, Point, SeriesStyle, Unit, WIDTH, XyChart};
use crate::report::fmt;
use crate::results::flat::FlatRow;
use std::collections::BTreeSet;

/// A run on the trend's axis.
struct Run {
    id: String,
    /// Its start, `MM-DD HH:MM`, or its id when the time is unreadable.
    label: String,
}

/// The runs of `rows`, oldest first.
fn runs(rows: &[FlatRow]) -> Vec<Run> {
    let started: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r.run_started_at.clone(), r.run_id.clone()))
        .collect();
    started
        .into_iter()
        .map(|(t, id)| Run {
            label: if t.len() >= 16 {
                t[5..16].replace('T', " ")
            } else {
                id.clone()
            },
            id,
        })
        .collect()
}

/// Each series' best mean throughput in each run, for one phase.
struct Trend {
    styles: Vec<SeriesStyle>,
    /// `[run][series]`; `None` where the series has no result in the run.
    best: Vec<Vec<Option<f64>>>,
}

/// The trend of a phase; `None` when no run has a result in it.
fn trend(cfgs: &[Config], runs: &[Run], phase: &str) -> Option<Trend> {
    let in_phase = in_family(cfgs, phase);
    if in_phase.is_empty() {
        return None;
    }
    let styles = series_of(cfgs, &in_phase);
    let best = runs
        .iter()
        .map(|run| {
            styles
                .iter()
                .map(|s| {
                    best_mean(&in_phase, |c| {
                        c.style.name == s.name && c.head.run_id == run.id
                    })
                })
                .collect()
        })
        .collect();
    Some(Trend { styles, best })
}

fn figure(phase: &str, runs: &[Run], t: &Trend) -> Figure {
    let mut table = Table::new(
        format!("Trend: {phase}"),
        &series_columns("Run", false, &t.styles),
    );
    let mut lines: Vec<Line> = t
        .styles
        .iter()
        .map(|s| Line {
            style: s.clone(),
            points: vec![],
            markers: true,
            step: false,
        })
        .collect();
    for (ri, (run, best)) in runs.iter().zip(&t.best).enumerate() {
        let mut row = vec![run.id.clone()];
        for (line, m) in lines.iter_mut().zip(best) {
            if let Some(m) = *m {
                line.points.push(Point {
                    x: ri as f64,
                    y: m,
                    tip: format!("{} · {}: {} ops/s", line.style.name, run.id, fmt::ops(m)),
                });
            }
            row.push(fmt::or_dash(*m, fmt::ops));
        }
        table.rows.push(row);
    }
    Figure {
        chart: Chart::Xy(XyChart {
            id: format!("trend-{}", slug(phase)),
            title: format!("Trend over past runs: {phase}"),
            x: Axis::categories(
                "run (start time, UTC)",
                runs.iter().map(|r| r.label.clone()).collect(),
            ),
            y: Axis::zero("throughput (ops/s)", Unit::Ops),
            lines,
            bands: vec![],
            width: WIDTH,
            height: 300.0,
        }),
        table,
    }
}

/// The section: a figure per phase, over this run and the past ones.
pub(super) fn section(
    rows: &[FlatRow],
    past: &[FlatRow],
    series: &SeriesMap,
    phases: &[String],
) -> Section {
    let all: Vec<FlatRow> = past.iter().chain(rows).cloned().collect();
    let runs = runs(&all);
    let cfgs = configs(&observations(&all), series);
    let figures = phases
        .iter()
        .filter_map(|phase| Some(figure(phase, &runs, &trend(&cfgs, &runs, phase)?)))
        .collect();
    Section {
        id: "trend".into(),
        title: "Trend over past runs".into(),
        note: "This run (rightmost) and the finished runs of the same scenario before it, from \
               results/history.sqlite; each engine@version at its best configuration."
            .into(),
        figures,
        tables: vec![],
        empty: "No past runs of this scenario in the history.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{in_run, row};
    use super::*;

    #[test]
    fn each_run_is_a_column_and_a_series_missing_from_a_run_is_a_dash() {
        let past = [
            in_run(
                row("redis", "a", "run", 4, 100.0),
                "old",
                "2026-11-20T02:00:00Z",
            ),
            in_run(
                row("postgres", "b", "run", 4, 50.0),
                "old",
                "2026-11-20T02:00:00Z",
            ),
        ];
        let now = [row("redis", "a", "run", 4, 120.0)];
        let series = SeriesMap::new(&now, &past);
        let s = section(&now, &past, &series, &["run".to_string()]);
        let [fig] = s.figures.as_slice() else {
            panic!("one figure expected")
        };
        assert_eq!(
            fig.table.headers,
            ["Run", "postgres@1.0 (ops/s)", "redis@1.0 (ops/s)"]
        );
        assert_eq!(
            fig.table.rows,
            [["old", "50.0", "100"], ["run1", "—", "120"]]
        );
        let Chart::Xy(chart) = &fig.chart else {
            panic!("an x/y chart expected")
        };
        assert_eq!(chart.x.categories, ["11-20 02:00", "11-29 02:00"]);
        assert_eq!(chart.lines[0].points.len(), 1);
    }
}
