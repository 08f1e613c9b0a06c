//! The "doesn't fit in RAM" section: throughput, major faults per
//! operation and device bytes read per operation against the memory cap
//! each phase ran under (the kernel's reading during the phase, from the
//! flat rows), over the data size.
//!
//! A line is one engine@version at one thread count; its points are the
//! distinct caps its phase ran at, each the mean of the cells at that cap.
//! A phase that ran at one cap everywhere (the load of a settle sweep) is
//! one point: a table row, not a chart.

use super::configs::{PhaseObs, family};
use super::series::SeriesMap;
use super::{Figure, Section, Table, slug};
use crate::report::charts::{
    Axis, Chart, DASHES, Line, Point, Scale, SeriesStyle, Unit, WIDTH, XyChart,
};
use crate::report::fmt::{self, or_dash};
use crate::report::stats::mean;
use crate::results::flat::FlatRow;
use crate::results::order::Natural;
use std::collections::{BTreeMap, BTreeSet};

/// The observations of one line at one cap.
struct AtCap<'a> {
    cap: u64,
    obs: Vec<&'a PhaseObs>,
}

impl AtCap<'_> {
    /// Mean over the cells at this cap of what `f` knows.
    fn mean_of(&self, f: impl Fn(&FlatRow) -> Option<f64>) -> Option<f64> {
        let v: Vec<f64> = self.obs.iter().filter_map(|o| f(&o.head)).collect();
        (!v.is_empty()).then(|| mean(&v))
    }
    /// Memory cap over data size, mean over the cells (their data sizes
    /// differ a little).
    fn ratio(&self) -> f64 {
        let cap = self.cap as f64;
        self.mean_of(|h| h.data_size_bytes.filter(|d| *d > 0).map(|d| cap / d as f64))
            .unwrap_or(0.0)
    }
    fn throughput(&self) -> f64 {
        self.mean_of(|h| Some(h.phase_throughput)).unwrap_or(0.0)
    }
    fn n(&self) -> usize {
        self.obs.len()
    }
}

/// One line of a phase: its style and its points by cap (ascending).
struct Sweep<'a> {
    style: SeriesStyle,
    threads: u32,
    caps: BTreeMap<u64, AtCap<'a>>,
}

type LineKey = (Natural, u32);

/// Names lines: engine@version, plus the environment without its settle
/// sweep's tag (from the recorded cap) when there are several, plus the
/// run when there are several.
fn line_name(o: &PhaseObs, multi_env: bool, multi_run: bool) -> String {
    let h = &o.head;
    let mut parts = vec![format!("{}@{}", h.engine, h.version)];
    if multi_env {
        parts.push(h.sweep_environment.clone());
    }
    if multi_run {
        parts.push(h.run_id.clone());
    }
    parts.join(" · ")
}

/// The lines of one phase family, from the ok observations whose cap and
/// data size are known.
fn sweeps<'a>(obs: &'a [PhaseObs], series: &SeriesMap, phase: &str) -> Vec<Sweep<'a>> {
    let distinct =
        |f: &dyn Fn(&PhaseObs) -> String| obs.iter().map(f).collect::<BTreeSet<String>>().len() > 1;
    let multi_env = distinct(&|o| o.head.sweep_environment.clone());
    let multi_run = distinct(&|o| o.head.run_id.clone());
    let mut lines: BTreeMap<LineKey, Sweep> = BTreeMap::new();
    for o in obs.iter().filter(|o| family(&o.head.phase) == phase) {
        let (Some(cap), Some(_)) = (o.head.memory_limit_bytes, o.head.data_size_bytes) else {
            continue;
        };
        let name = line_name(o, multi_env, multi_run);
        let line = lines
            .entry((Natural(name.clone()), o.head.threads))
            .or_insert_with(|| Sweep {
                style: SeriesStyle {
                    name,
                    dash: String::new(),
                    ..series.style(&o.head)
                },
                threads: o.head.threads,
                caps: BTreeMap::new(),
            });
        line.caps
            .entry(cap)
            .or_insert_with(|| AtCap { cap, obs: vec![] })
            .obs
            .push(o);
    }
    let mut per_name: BTreeMap<String, usize> = BTreeMap::new();
    for (name, _) in lines.keys() {
        *per_name.entry(name.0.clone()).or_default() += 1;
    }
    let mut dashes: BTreeMap<String, usize> = BTreeMap::new();
    let mut out: Vec<Sweep> = lines.into_values().collect();
    for s in &mut out {
        if per_name[&s.style.name] > 1 {
            s.style.name = format!("{} · {} threads", s.style.name, s.threads);
        }
        // Lines that share a color (one engine@version) differ in dash.
        let i = dashes.entry(s.style.color.clone()).or_default();
        s.style.dash = DASHES[*i % DASHES.len()].to_string();
        *i += 1;
    }
    out
}

/// Table columns that start every row: the line and the cap.
const HEAD: [(&str, bool); 4] = [
    ("Engine", false),
    ("Threads", true),
    ("Memory cap", true),
    ("Memory / data (ratio)", true),
];

fn head(s: &Sweep, p: &AtCap) -> Vec<String> {
    vec![
        s.style.name.clone(),
        s.threads.to_string(),
        fmt::bytes(p.cap as f64),
        fmt::ratio(p.ratio()),
    ]
}

fn cols(rest: &[(&'static str, bool)]) -> Vec<(&'static str, bool)> {
    let mut c = HEAD.to_vec();
    c.extend_from_slice(rest);
    c
}

/// What one figure of a sweep plots and tabulates.
struct Measure {
    id: &'static str,
    title: &'static str,
    axis: &'static str,
    unit: Unit,
    /// The plotted value of a point, `None` when unknown.
    value: fn(&AtCap) -> Option<f64>,
    format: fn(f64) -> String,
    /// Table columns after `HEAD`, and their cells.
    columns: &'static [(&'static str, bool)],
    cells: fn(&AtCap) -> Vec<String>,
}

const MEASURES: [Measure; 3] = [
    Measure {
        id: "fit-throughput",
        title: "Throughput as the data stops fitting in RAM",
        axis: "throughput (ops/s, mean of the cells at each cap)",
        unit: Unit::Ops,
        value: |p| Some(p.throughput()),
        format: fmt::ops,
        columns: &[("ops/s (mean of N)", true), ("N (cells)", true)],
        cells: |p| vec![fmt::ops(p.throughput()), p.n().to_string()],
    },
    Measure {
        id: "fit-faults",
        title: "Major page faults per operation as the data stops fitting in RAM",
        axis: "major faults per operation (mean of the cells)",
        unit: Unit::Plain,
        value: |p| p.mean_of(|h| h.major_faults_per_op),
        format: fmt::small,
        columns: &[
            ("Major faults per op (mean of N)", true),
            ("Major faults per s (mean of N)", true),
            ("Major faults (mean of N)", true),
            ("Operations (mean of N)", true),
            ("N (cells)", true),
        ],
        cells: |p| {
            vec![
                or_dash(p.mean_of(|h| h.major_faults_per_op), fmt::small),
                or_dash(p.mean_of(|h| h.major_faults_per_s), fmt::small),
                or_dash(p.mean_of(|h| h.major_faults.map(|v| v as f64)), fmt::small),
                or_dash(p.mean_of(|h| Some(h.phase_ops as f64)), fmt::small),
                p.n().to_string(),
            ]
        },
    },
    Measure {
        id: "fit-reads",
        title: "Bytes read from the device per operation as the data stops fitting in RAM",
        axis: "device bytes read per operation (mean of the cells)",
        unit: Unit::Bytes,
        value: |p| p.mean_of(|h| h.read_bytes_per_op),
        format: fmt::bytes,
        columns: &[
            ("Read per op (mean of N)", true),
            ("Read per s (mean of N)", true),
            ("Read (mean of N)", true),
            ("Operations (mean of N)", true),
            ("N (cells)", true),
        ],
        cells: |p| {
            vec![
                or_dash(p.mean_of(|h| h.read_bytes_per_op), fmt::bytes),
                or_dash(p.mean_of(|h| h.read_bytes_per_s), fmt::bytes_per_sec),
                or_dash(p.mean_of(|h| h.read_bytes.map(|v| v as f64)), fmt::bytes),
                or_dash(p.mean_of(|h| Some(h.phase_ops as f64)), fmt::small),
                p.n().to_string(),
            ]
        },
    },
];

/// One figure of the phase's sweeps: a line per sweep, a row per point.
fn figure(m: &Measure, phase: &str, sweeps: &[&Sweep]) -> Figure {
    let mut table = Table::new(format!("{}: {phase}", m.title), &cols(m.columns));
    let mut lines = Vec::new();
    for s in sweeps {
        let mut points = Vec::new();
        for p in s.caps.values() {
            table.rows.push([head(s, p), (m.cells)(p)].concat());
            let Some(y) = (m.value)(p) else { continue };
            points.push(Point {
                x: p.ratio(),
                y,
                tip: format!(
                    "{} · cap {} = {} of the data: {} (mean of {})",
                    s.style.name,
                    fmt::bytes(p.cap as f64),
                    fmt::ratio(p.ratio()),
                    (m.format)(y),
                    p.n()
                ),
            });
        }
        lines.push(Line {
            style: s.style.clone(),
            points,
            markers: true,
            step: false,
        });
    }
    Figure {
        chart: Chart::Xy(XyChart {
            id: format!("{}-{}", m.id, slug(phase)),
            title: format!("{}: {phase}", m.title),
            x: Axis::log(
                "memory cap during the phase / data size (ratio, log₂)",
                Scale::Log2,
                Unit::Ratio,
            ),
            y: Axis::zero(m.axis, m.unit),
            lines,
            bands: vec![],
            width: WIDTH,
            height: 300.0,
        }),
        table,
    }
}

/// The table of phases that ran at a single cap.
fn one_cap_table() -> Table {
    let mut c = vec![("Phase", false)];
    c.extend(cols(&[
        ("ops/s (mean of N)", true),
        ("Major faults per op (mean of N)", true),
        ("Major faults per s (mean of N)", true),
        ("Read per op (mean of N)", true),
        ("Read per s (mean of N)", true),
        ("N (cells)", true),
    ]));
    Table::new(
        "Phases that ran at one cap in every cell: one point each, not a sweep",
        &c,
    )
}

fn one_cap_row(phase: &str, s: &Sweep, p: &AtCap) -> Vec<String> {
    let mut row = vec![phase.to_string()];
    row.extend(head(s, p));
    row.extend([
        fmt::ops(p.throughput()),
        or_dash(p.mean_of(|h| h.major_faults_per_op), fmt::small),
        or_dash(p.mean_of(|h| h.major_faults_per_s), fmt::small),
        or_dash(p.mean_of(|h| h.read_bytes_per_op), fmt::bytes),
        or_dash(p.mean_of(|h| h.read_bytes_per_s), fmt::bytes_per_sec),
        p.n().to_string(),
    ]);
    row
}

/// The section: for each phase that ran at several caps, throughput,
/// major faults per operation and device reads per operation against the
/// cap; the phases that ran at one cap in a table beside them.
pub(super) fn memory_section(obs: &[PhaseObs], series: &SeriesMap, phases: &[String]) -> Section {
    let mut figures = Vec::new();
    let mut single = one_cap_table();
    for phase in phases {
        let all = sweeps(obs, series, phase);
        let (swept, flat): (Vec<&Sweep>, Vec<&Sweep>) = all.iter().partition(|s| s.caps.len() > 1);
        for s in flat {
            for p in s.caps.values() {
                single.rows.push(one_cap_row(phase, s, p));
            }
        }
        if !swept.is_empty() {
            figures.extend(MEASURES.iter().map(|m| figure(m, phase, &swept)));
        }
    }
    let tables = if figures.is_empty() || single.rows.is_empty() {
        vec![]
    } else {
        vec![single]
    };
    Section {
        id: "memory".into(),
        title: "Doesn't fit in RAM".into(),
        note: "x: the memory cap the kernel reported during the phase, over the data size on \
               disk (a ratio, log₂ axis): to the left less of the data fits. One line per \
               engine and thread count that ran a phase at several caps; each point is the \
               mean of the cells at that cap. Costs are per operation: the server's major \
               faults and the bytes it read from the device during the phase, divided by the \
               phase's operations (per second in the tables too). As the cap bites, throughput \
               falls and the cost per operation rises: for an engine that memory-maps its \
               files both rise, for one that reads with read(2) the device reads do."
            .into(),
        figures,
        tables,
        empty: "No phase ran at more than one memory cap.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::configs::observations;
    use super::super::testing::row;
    use super::*;

    const MIB: u64 = 1 << 20;

    /// A cell of a settle sweep of `ram-sweep` over 400 MiB of data, its
    /// phase `phase` run under `cap_mib`.
    fn at(cell: &str, phase: &str, cap_mib: u64, tput: f64) -> FlatRow {
        FlatRow {
            environment: format!("ram-sweep-mem{}pct", cap_mib * 100 / 400),
            sweep_environment: "ram-sweep".into(),
            memory_limit_bytes: Some(cap_mib * MIB),
            data_size_bytes: Some(400 * MIB),
            major_faults_per_op: Some(400.0 / cap_mib as f64),
            ..row("myrocks", cell, phase, 4, tput)
        }
    }

    fn section_of(rows: &[FlatRow], phases: &[&str]) -> Section {
        let phases: Vec<String> = phases.iter().map(|p| p.to_string()).collect();
        memory_section(&observations(rows), &SeriesMap::new(rows, &[]), &phases)
    }

    #[test]
    fn the_cells_of_a_settle_sweep_are_one_line_through_their_caps() {
        let rows = [
            at("a", "reads", 800, 900.0),
            at("b", "reads", 100, 100.0),
            at("c", "reads", 400, 500.0),
            at("d", "reads", 200, 300.0),
        ];
        let s = section_of(&rows, &["reads"]);
        let ids: Vec<&str> = s.figures.iter().map(|f| f.chart.id()).collect();
        assert_eq!(
            ids,
            [
                "fit-throughput-reads",
                "fit-faults-reads",
                "fit-reads-reads"
            ]
        );
        let Chart::Xy(chart) = &s.figures[0].chart else {
            panic!("an x/y chart expected")
        };
        let [line] = chart.lines.as_slice() else {
            panic!("one line expected")
        };
        assert_eq!(line.style.name, "myrocks@1.0");
        let xy: Vec<(f64, f64)> = line.points.iter().map(|p| (p.x, p.y)).collect();
        assert_eq!(
            xy,
            [(0.25, 100.0), (0.5, 300.0), (1.0, 500.0), (2.0, 900.0)]
        );
        assert_eq!(
            s.figures[1].table.rows[0],
            [
                "myrocks@1.0",
                "4",
                "100 MiB",
                "0.25×",
                "4.00",
                "—",
                "—",
                "1,000",
                "1"
            ]
        );
        assert!(s.tables.is_empty());
    }

    #[test]
    fn a_phase_at_one_cap_is_a_table_row_beside_the_sweeps() {
        let rows = [
            FlatRow {
                phase_index: 0,
                ..at("a", "load", 1024, 50.0)
            },
            FlatRow {
                phase_index: 1,
                ..at("a", "reads", 800, 900.0)
            },
            FlatRow {
                phase_index: 1,
                ..at("b", "reads", 100, 100.0)
            },
        ];
        let s = section_of(&rows, &["load", "reads"]);
        assert_eq!(s.figures.len(), 3);
        let [single] = s.tables.as_slice() else {
            panic!("one table expected")
        };
        assert_eq!(single.rows.len(), 1);
        assert_eq!(
            single.rows[0][..5],
            ["load", "myrocks@1.0", "4", "1 GiB", "2.56×"]
        );
        // Without a sweep there is nothing to stand beside.
        let s = section_of(&rows[..1], &["load"]);
        assert!(s.figures.is_empty() && s.tables.is_empty());
    }

    #[test]
    fn engines_in_different_sweeps_are_named_by_their_sweep_environment() {
        let other = |r: FlatRow| FlatRow {
            environment: r.environment.replace("ram-sweep", "disk-sweep"),
            sweep_environment: "disk-sweep".into(),
            ..r
        };
        let rows = [
            at("a", "reads", 800, 900.0),
            at("b", "reads", 100, 100.0),
            other(at("c", "reads", 800, 800.0)),
            other(at("d", "reads", 100, 50.0)),
        ];
        let s = section_of(&rows, &["reads"]);
        let Chart::Xy(chart) = &s.figures[0].chart else {
            panic!("an x/y chart expected")
        };
        let names: Vec<&str> = chart.lines.iter().map(|l| l.style.name.as_str()).collect();
        assert_eq!(
            names,
            ["myrocks@1.0 · disk-sweep", "myrocks@1.0 · ram-sweep"]
        );
        assert_ne!(chart.lines[0].style.dash, chart.lines[1].style.dash);
    }
}
