//! "Throughput by engine and version": per phase, a bar for each
//! engine@version at its best configuration, with a whisker over the
//! repetitions' min to max.

use super::configs::{Config, best_per_series, series_list};
use super::{Figure, Section, Table};
use crate::report::charts::{Axis, Bar, BarChart, BarGroup, Chart, SeriesStyle, Unit, WIDTH};
use crate::report::fmt;
use crate::report::stats::min_max;

const TITLE: &str = "Throughput by engine and version";

/// What the bar of one series' best configuration in a phase shows.
struct Best<'a> {
    config: &'a Config,
    /// Position of its series in the legend.
    series: usize,
    mean: f64,
    min: f64,
    max: f64,
    reps: usize,
}

/// Per phase that has a result, the best configuration of each series.
fn best_bars<'a>(
    cfgs: &'a [Config],
    phases: &[String],
    styles: &[SeriesStyle],
) -> Vec<(String, Vec<Best<'a>>)> {
    phases
        .iter()
        .filter_map(|phase| {
            let best: Vec<Best> = best_per_series(cfgs, phase)
                .into_iter()
                .map(|c| {
                    let t = c.throughputs();
                    let (min, max) = min_max(&t);
                    Best {
                        config: c,
                        series: styles
                            .iter()
                            .position(|s| s.name == c.style.name)
                            .unwrap_or(0),
                        mean: c.mean(),
                        min,
                        max,
                        reps: t.len(),
                    }
                })
                .collect();
            (!best.is_empty()).then(|| (phase.clone(), best))
        })
        .collect()
}

fn bar(phase: &str, b: &Best) -> Bar {
    Bar {
        series: b.series,
        value: b.mean,
        range: (b.reps > 1).then_some((b.min, b.max)),
        tip: format!(
            "{} · {} · {} threads: {} ops/s (n={})",
            b.config.style.name,
            phase,
            b.config.head.threads,
            fmt::ops(b.mean),
            b.reps
        ),
    }
}

/// A table row; with `headline`, the phase's headline figure last
/// (`tpmC 1234.5`, or `–`).
fn row(phase: &str, b: &Best, headline: bool) -> Vec<String> {
    let c = b.config;
    let mut r = vec![
        phase.to_string(),
        c.style.name.clone(),
        c.head.group_label.clone(),
        c.head.threads.to_string(),
        fmt::ops(b.mean),
        fmt::ops(b.min),
        fmt::ops(b.max),
        b.reps.to_string(),
    ];
    if headline {
        r.push(match c.headline() {
            Some((name, v)) => format!("{name} {}", fmt::ops(v)),
            None => "–".into(),
        });
    }
    r
}

/// The section: one bar chart of every phase, and its table.
pub(super) fn section(cfgs: &[Config], phases: &[String]) -> Section {
    let styles = series_list(cfgs);
    let bars = best_bars(cfgs, phases, &styles);
    // A column for the headline figures (tpmC) when a phase has one.
    let headline = bars
        .iter()
        .flat_map(|(_, best)| best)
        .any(|b| b.config.headline().is_some());
    let mut cols = vec![
        ("Phase", false),
        ("Engine", false),
        ("Configuration", false),
        ("Threads", true),
        ("ops/s", true),
        ("min", true),
        ("max", true),
        ("Reps", true),
    ];
    if headline {
        cols.push(("Headline", true));
    }
    let mut table = Table::new(TITLE, &cols);
    let mut groups = Vec::new();
    for (phase, best) in bars {
        table
            .rows
            .extend(best.iter().map(|b| row(&phase, b, headline)));
        groups.push(BarGroup {
            bars: best.iter().map(|b| bar(&phase, b)).collect(),
            label: phase,
        });
    }
    let figures = if groups.is_empty() {
        vec![]
    } else {
        vec![Figure {
            chart: Chart::Bar(BarChart {
                id: "throughput".into(),
                title: TITLE.into(),
                y: Axis::zero("throughput (ops/s)", Unit::Ops),
                series: styles,
                groups,
                width: WIDTH,
                height: 340.0,
            }),
            table,
        }]
    };
    Section {
        id: "throughput".into(),
        title: TITLE.into(),
        note: "Each engine@version at its best configuration for the phase (highest mean over \
               repetitions); whiskers span the repetitions' min to max."
            .into(),
        figures,
        tables: vec![],
        empty: "No phase produced a result.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{configs_of, row, run_phase};
    use super::*;
    use crate::report::charts::Chart;

    fn section_of(rows: &[crate::results::flat::FlatRow]) -> Section {
        section(&configs_of(rows), &run_phase())
    }

    #[test]
    fn each_engine_shows_its_best_configuration_with_the_spread_of_its_repetitions() {
        let rows = [
            row("redis", "r1", "run", 4, 900.0),
            row("redis", "r2", "run", 4, 1100.0),
            row("redis", "t1", "run", 1, 300.0),
            row("postgres", "p1", "run", 4, 500.0),
        ];
        let s = section_of(&rows);
        let [fig] = s.figures.as_slice() else {
            panic!("one figure expected")
        };
        assert_eq!(
            fig.table.rows,
            [
                [
                    "run",
                    "postgres@1.0",
                    "postgres@1.0 / 4 threads",
                    "4",
                    "500",
                    "500",
                    "500",
                    "1"
                ],
                [
                    "run",
                    "redis@1.0",
                    "redis@1.0 / 4 threads",
                    "4",
                    "1,000",
                    "900",
                    "1,100",
                    "2"
                ],
            ]
        );
        let Chart::Bar(chart) = &fig.chart else {
            panic!("a bar chart expected")
        };
        let bars = &chart.groups[0].bars;
        assert_eq!(bars[0].range, None);
        assert_eq!(bars[1].range, Some((900.0, 1100.0)));
        assert_eq!(bars[1].series, 1);
    }

    #[test]
    fn a_phase_with_a_headline_figure_shows_its_mean_in_a_column_of_its_own() {
        use crate::results::model::Headline;
        let tpcc = |cell: &str, tpmc: f64| crate::results::flat::FlatRow {
            headline: Some(Headline::tpmc(tpmc)),
            ..row("postgres", cell, "run", 4, 50.0)
        };
        let rows = [
            tpcc("p1", 1200.0),
            tpcc("p2", 1400.0),
            row("redis", "r1", "run", 4, 900.0),
        ];
        let s = section_of(&rows);
        let table = &s.figures[0].table;
        assert_eq!(table.headers.last().map(String::as_str), Some("Headline"));
        assert_eq!(table.rows[0][8], "tpmC 1,300");
        assert_eq!(table.rows[1][8], "–");
    }

    #[test]
    fn no_result_leaves_the_section_empty() {
        let s = section_of(&[]);
        assert!(s.figures.is_empty());
        assert_eq!(s.empty, "No phase produced a result.");
    }
}
