//! "Latency percentiles per operation kind": for each phase and operation
//! kind, each series' best configuration through p50 to max.

use super::configs::{Config, PCT_NAMES, Percentiles, best_per_series};
use super::{Figure, Section, Table, slug};
use crate::report::charts::{Axis, Chart, Line, Point, Scale, Unit, WIDTH, XyChart};
use crate::report::fmt;
use std::collections::BTreeMap;

/// Per operation kind of a phase, the percentiles of each series' best
/// configuration that recorded the kind.
fn percentiles<'a>(
    cfgs: &'a [Config],
    phase: &str,
) -> BTreeMap<String, Vec<(&'a Config, Percentiles)>> {
    let mut out: BTreeMap<String, Vec<(&Config, Percentiles)>> = BTreeMap::new();
    for c in best_per_series(cfgs, phase) {
        for (op, lat) in c.latency() {
            out.entry(op).or_default().push((c, lat));
        }
    }
    out
}

fn line(c: &Config, op: &str, lat: &Percentiles) -> Option<Line> {
    let points: Vec<Point> = lat
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            v.map(|v| Point {
                x: i as f64,
                y: v,
                tip: format!(
                    "{} · {op} {}: {}",
                    c.style.name,
                    PCT_NAMES[i],
                    fmt::micros(v)
                ),
            })
        })
        .collect();
    (!points.is_empty()).then(|| Line {
        style: c.style.clone(),
        points,
        markers: true,
        step: false,
    })
}

/// The figure of one operation kind; `None` when no series has a
/// percentile to draw.
fn figure(phase: &str, op: &str, best: &[(&Config, Percentiles)]) -> Option<Figure> {
    let mut table = Table::new(
        format!("Latency: {phase} / {op}"),
        &[
            ("Engine", false),
            ("Threads", true),
            ("p50 (ms)", true),
            ("p95 (ms)", true),
            ("p99 (ms)", true),
            ("p99.9 (ms)", true),
            ("max (ms)", true),
        ],
    );
    for (c, lat) in best {
        let mut row = vec![c.style.name.clone(), c.head.threads.to_string()];
        row.extend(lat.iter().map(|v| fmt::ms_or_dash(*v)));
        table.rows.push(row);
    }
    let lines: Vec<Line> = best
        .iter()
        .filter_map(|(c, lat)| line(c, op, lat))
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(Figure {
        chart: Chart::Xy(XyChart {
            id: format!("latency-{}-{}", slug(phase), slug(op)),
            title: format!("Latency percentiles: {phase} / {op}"),
            x: Axis::categories(
                "percentile",
                PCT_NAMES.iter().map(|s| s.to_string()).collect(),
            ),
            y: Axis::log("latency (log₁₀)", Scale::Log10, Unit::Micros),
            lines,
            bands: vec![],
            width: WIDTH,
            height: 300.0,
        }),
        table,
    })
}

/// The section: a figure per phase and operation kind.
pub(super) fn section(cfgs: &[Config], phases: &[String]) -> Section {
    let mut figures = Vec::new();
    for phase in phases {
        for (op, best) in percentiles(cfgs, phase) {
            figures.extend(figure(phase, &op, &best));
        }
    }
    Section {
        id: "latency".into(),
        title: "Latency percentiles per operation kind".into(),
        note: "Measured from the actual send, at each engine's best configuration for the \
               phase; percentiles are the mean over repetitions."
            .into(),
        figures,
        tables: vec![],
        empty: "No phase recorded latencies.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{configs_of, row, run_phase};
    use super::*;
    use crate::results::flat::FlatRow;

    #[test]
    fn each_operation_kind_gets_a_figure_and_unreported_percentiles_a_dash() {
        let update = FlatRow {
            op: "UPDATE".into(),
            lat_p50_us: None,
            ..row("redis", "r1", "run", 4, 100.0)
        };
        let rows = [row("redis", "r1", "run", 4, 100.0), update];
        let s = section(&configs_of(&rows), &run_phase());
        // UPDATE has no percentile at all: a table row but nothing to draw.
        let [read] = s.figures.as_slice() else {
            panic!("one figure expected")
        };
        assert_eq!(read.chart.id(), "latency-run-read");
        assert_eq!(
            read.table.rows,
            [["redis@1.0", "4", "1.00", "—", "—", "—", "—"]]
        );
        assert_eq!(read.chart.data_points(), 1);
    }
}
