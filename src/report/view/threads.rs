//! "Throughput vs client threads": for each phase that ran at several
//! thread counts, a line per series through its best mean at each count.

use super::configs::{Config, best_mean, in_family, series_of};
use super::{Figure, Section, Table, series_columns, slug};
use crate::report::charts::{Axis, Chart, Line, Point, Scale, SeriesStyle, Unit, WIDTH, XyChart};
use crate::report::fmt;
use std::collections::BTreeSet;

/// One series' best mean throughput at each thread count of a phase;
/// `None` where it did not run at that count.
struct Curve {
    style: SeriesStyle,
    at: Vec<Option<f64>>,
}

/// The thread counts of a phase (ascending) and each series' curve over
/// them; `None` when the phase ran at fewer than two thread counts.
fn curves(cfgs: &[Config], phase: &str) -> Option<(Vec<u32>, Vec<Curve>)> {
    let in_phase = in_family(cfgs, phase);
    let threads: BTreeSet<u32> = in_phase.iter().map(|c| c.head.threads).collect();
    if threads.len() < 2 {
        return None;
    }
    let curves = series_of(cfgs, &in_phase)
        .into_iter()
        .map(|style| Curve {
            at: threads
                .iter()
                .map(|t| {
                    best_mean(&in_phase, |c| {
                        c.style.name == style.name && c.head.threads == *t
                    })
                })
                .collect(),
            style,
        })
        .collect();
    Some((threads.into_iter().collect(), curves))
}

fn figure(phase: &str, threads: &[u32], curves: &[Curve]) -> Figure {
    let styles: Vec<SeriesStyle> = curves.iter().map(|c| c.style.clone()).collect();
    let mut table = Table::new(
        format!("Throughput vs threads: {phase}"),
        &series_columns("Threads", true, &styles),
    );
    table.rows = threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut row = vec![t.to_string()];
            row.extend(curves.iter().map(|c| fmt::or_dash(c.at[i], fmt::ops)));
            row
        })
        .collect();
    let lines = curves
        .iter()
        .map(|c| Line {
            style: c.style.clone(),
            points: threads
                .iter()
                .zip(&c.at)
                .filter_map(|(t, m)| {
                    m.map(|m| Point {
                        x: f64::from(*t),
                        y: m,
                        tip: format!("{} · {t} threads: {} ops/s", c.style.name, fmt::ops(m)),
                    })
                })
                .collect(),
            markers: true,
            step: false,
        })
        .collect();
    Figure {
        chart: Chart::Xy(XyChart {
            id: format!("threads-{}", slug(phase)),
            title: format!("Throughput vs client threads: {phase}"),
            x: Axis::log("client threads (log₂)", Scale::Log2, Unit::Plain),
            y: Axis::zero("throughput (ops/s)", Unit::Ops),
            lines,
            bands: vec![],
            width: WIDTH,
            height: 320.0,
        }),
        table,
    }
}

/// The section: a figure per phase that ran at several thread counts.
pub(super) fn section(cfgs: &[Config], phases: &[String]) -> Section {
    let figures = phases
        .iter()
        .filter_map(|phase| {
            let (threads, curves) = curves(cfgs, phase)?;
            Some(figure(phase, &threads, &curves))
        })
        .collect();
    Section {
        id: "threads".into(),
        title: "Throughput vs client threads".into(),
        note: "Mean over repetitions at each thread count, on a log₂ axis.".into(),
        figures,
        tables: vec![],
        empty: "No phase ran at more than one thread count.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{configs_of, row, run_phase};
    use super::*;

    #[test]
    fn each_series_is_a_line_through_its_mean_at_each_thread_count() {
        let rows = [
            row("redis", "a1", "run/t1", 1, 100.0),
            row("redis", "a2", "run/t1", 1, 300.0),
            row("redis", "b1", "run/t8", 8, 800.0),
            row("postgres", "c1", "run/t8", 8, 50.0),
        ];
        let s = section(&configs_of(&rows), &run_phase());
        let [fig] = s.figures.as_slice() else {
            panic!("one figure expected")
        };
        assert_eq!(
            fig.table.headers,
            ["Threads", "postgres@1.0 (ops/s)", "redis@1.0 (ops/s)"]
        );
        assert_eq!(fig.table.rows, [["1", "—", "200"], ["8", "50.0", "800"]]);
        let Chart::Xy(chart) = &fig.chart else {
            panic!("an x/y chart expected")
        };
        let redis: Vec<(f64, f64)> = chart.lines[1].points.iter().map(|p| (p.x, p.y)).collect();
        assert_eq!(redis, [(1.0, 200.0), (8.0, 800.0)]);
    }

    #[test]
    fn a_phase_at_one_thread_count_has_no_figure() {
        let rows = [row("redis", "a1", "run", 4, 100.0)];
        assert!(section(&configs_of(&rows), &run_phase()).figures.is_empty());
    }
}
