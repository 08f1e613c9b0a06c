//! "Data size on disk": per engine@version, the data size its cells
//! reported after load (mean, min and max over the cells).

use super::configs::PhaseObs;
use super::series::SeriesMap;
use super::{Figure, Section, Table};
use crate::report::charts::{Axis, Bar, BarChart, BarGroup, Chart, SeriesStyle, Unit, WIDTH};
use crate::report::fmt;
use crate::report::stats::{mean, min_max};
use crate::results::order::Natural;
use std::collections::BTreeMap;

/// The data sizes of one series' cells.
struct Sizes {
    style: SeriesStyle,
    cells: usize,
    mean: f64,
    min: f64,
    max: f64,
}

/// Per series (in name order), the sizes of the cells that have a
/// result and reported one; each cell counts once.
fn sizes(obs: &[PhaseObs], series: &SeriesMap) -> Vec<Sizes> {
    let mut per: BTreeMap<Natural, (SeriesStyle, BTreeMap<String, u64>)> = BTreeMap::new();
    for o in obs {
        if let Some(b) = o.head.data_size_bytes {
            let s = series.style(&o.head);
            per.entry(Natural(s.name.clone()))
                .or_insert_with(|| (s, BTreeMap::new()))
                .1
                .insert(o.head.cell_key.clone(), b);
        }
    }
    per.into_values()
        .map(|(style, by_cell)| {
            let v: Vec<f64> = by_cell.values().map(|b| *b as f64).collect();
            let (min, max) = min_max(&v);
            Sizes {
                style,
                cells: v.len(),
                mean: mean(&v),
                min,
                max,
            }
        })
        .collect()
}

fn group(i: usize, s: &Sizes) -> BarGroup {
    let name = &s.style.name;
    BarGroup {
        label: name.clone(),
        bars: vec![Bar {
            series: i,
            value: s.mean,
            range: (s.min < s.max).then_some((s.min, s.max)),
            tip: format!("{name}: {} on disk (n={})", fmt::bytes(s.mean), s.cells),
        }],
    }
}

/// The section: one bar per engine@version, and its table.
pub(super) fn section(obs: &[PhaseObs], series: &SeriesMap) -> Section {
    let all = sizes(obs, series);
    let mut table = Table::new(
        "Data size on disk",
        &[
            ("Engine", false),
            ("Cells", true),
            ("Mean", true),
            ("Min", true),
            ("Max", true),
        ],
    );
    table.rows = all
        .iter()
        .map(|s| {
            vec![
                s.style.name.clone(),
                s.cells.to_string(),
                fmt::bytes(s.mean),
                fmt::bytes(s.min),
                fmt::bytes(s.max),
            ]
        })
        .collect();
    let figures = if all.is_empty() {
        vec![]
    } else {
        vec![Figure {
            chart: Chart::Bar(BarChart {
                id: "data-size".into(),
                title: "Data size on disk per engine".into(),
                y: Axis::zero("data size on disk", Unit::Bytes),
                groups: all.iter().enumerate().map(|(i, s)| group(i, s)).collect(),
                series: all.into_iter().map(|s| s.style).collect(),
                width: WIDTH,
                height: 300.0,
            }),
            table,
        }]
    };
    Section {
        id: "size".into(),
        title: "Data size on disk".into(),
        note: "After load, as the engine (or du) reported it; mean over the cells that \
               produced a result."
            .into(),
        figures,
        tables: vec![],
        empty: "No cell reported its data size.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::configs::observations;
    use super::super::testing::row;
    use super::*;
    use crate::results::flat::FlatRow;

    #[test]
    fn each_engine_shows_the_mean_and_spread_of_its_cells_data_sizes() {
        let sized = |cell: &str, phase_index: u32, mib: u64| FlatRow {
            data_size_bytes: Some(mib << 20),
            phase_index,
            ..row("redis", cell, "run", 4, 100.0)
        };
        // Two phases of one cell count once.
        let rows = [sized("a", 0, 100), sized("a", 1, 100), sized("b", 0, 300)];
        let s = section(&observations(&rows), &SeriesMap::new(&rows, &[]));
        let [fig] = s.figures.as_slice() else {
            panic!("one figure expected")
        };
        assert_eq!(
            fig.table.rows,
            [["redis@1.0", "2", "200 MiB", "100 MiB", "300 MiB"]]
        );
        let none = [row("redis", "a", "run", 4, 100.0)];
        assert!(
            section(&observations(&none), &SeriesMap::new(&none, &[]))
                .figures
                .is_empty()
        );
    }
}
