//! What a report shows, computed once from the runs: sections of charts,
//! each with the table of its data, the cells' time series and records,
//! and what is not a result. The HTML exporter draws all of it; the
//! Markdown exporter prints the same tables.
//!
//! Only phases whose verdict is ok feed a chart or a result table; the
//! others are listed with their reason.

use crate::report::ReportInput;
use crate::report::charts::{
    Axis, Band, Bar, BarChart, BarGroup, Chart, DASHES, Line, PALETTE, Point, Scale, SeriesStyle,
    Unit, WIDTH, XyChart,
};
use crate::report::fmt;
use crate::results::flat::{
    FlatRow, NO_OP, UNLIMITED_CAP, Verdict, cells_in_order, flatten, phase_cost, phase_verdict,
};
use crate::results::layout::{CellData, sample_in_phase};
use crate::results::model::{ResourceSample, RunRecord};
use crate::results::order::{Natural, natural_cmp};
use std::collections::{BTreeMap, BTreeSet};

mod fit;

/// A table: headers, which columns are numeric (right-aligned), rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(title: impl Into<String>, cols: &[(&str, bool)]) -> Self {
        Table {
            title: title.into(),
            headers: cols.iter().map(|c| c.0.to_string()).collect(),
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

/// Names, colors and dashes of series: one color per `engine@version`,
/// dashes for the same engine@version in another environment or run.
struct SeriesMap {
    multi_env: bool,
    multi_run: bool,
    colors: BTreeMap<String, usize>,
    variants: BTreeMap<String, BTreeSet<Natural>>,
}

impl SeriesMap {
    fn new(rows: &[FlatRow], past: &[FlatRow]) -> Self {
        let envs: BTreeSet<&str> = rows.iter().map(|r| r.environment.as_str()).collect();
        let runs: BTreeSet<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
        let mut m = SeriesMap {
            multi_env: envs.len() > 1,
            multi_run: runs.len() > 1,
            colors: BTreeMap::new(),
            variants: BTreeMap::new(),
        };
        let evs: BTreeSet<Natural> = rows.iter().map(|r| Natural(ev(r))).collect();
        for (i, e) in evs.iter().enumerate() {
            m.colors.insert(e.0.clone(), i);
        }
        for r in past {
            let next = m.colors.len();
            m.colors.entry(ev(r)).or_insert(next);
        }
        for r in rows.iter().chain(past) {
            let v = m.variant(r);
            m.variants.entry(ev(r)).or_default().insert(Natural(v));
        }
        m
    }
    fn variant(&self, r: &FlatRow) -> String {
        let mut parts = Vec::new();
        if self.multi_env {
            parts.push(r.environment.clone());
        }
        if self.multi_run {
            parts.push(r.run_id.clone());
        }
        parts.join(" · ")
    }
    fn style(&self, r: &FlatRow) -> SeriesStyle {
        let e = ev(r);
        let v = self.variant(r);
        let color = self.colors.get(&e).copied().unwrap_or(0);
        let dash = self
            .variants
            .get(&e)
            .and_then(|vs| vs.iter().position(|x| x.0 == v))
            .unwrap_or(0);
        SeriesStyle {
            name: if v.is_empty() {
                e
            } else {
                format!("{e} · {v}")
            },
            color: PALETTE[color % PALETTE.len()].to_string(),
            dash: DASHES[dash % DASHES.len()].to_string(),
        }
    }
}

fn ev(r: &FlatRow) -> String {
    format!("{}@{}", r.engine, r.version)
}

/// The first row of one ok phase of one cell, and all its rows.
#[derive(Clone)]
struct PhaseObs {
    head: FlatRow,
    ops: Vec<FlatRow>,
}

/// The repetitions of one configuration's phase.
#[derive(Clone)]
struct Config {
    style: SeriesStyle,
    head: FlatRow,
    reps: Vec<PhaseObs>,
}

impl Config {
    fn throughputs(&self) -> Vec<f64> {
        self.reps.iter().map(|o| o.head.phase_throughput).collect()
    }
    fn mean(&self) -> f64 {
        mean(&self.throughputs())
    }
    /// Mean over repetitions of each latency field, per operation kind;
    /// `None` for a field no repetition reported (never charted).
    fn latency(&self) -> BTreeMap<String, [Option<f64>; 5]> {
        let mut acc: BTreeMap<String, Vec<[Option<f64>; 5]>> = BTreeMap::new();
        for o in &self.reps {
            for r in &o.ops {
                if r.op != NO_OP {
                    acc.entry(r.op.clone()).or_default().push([
                        r.lat_p50_us,
                        r.lat_p95_us,
                        r.lat_p99_us,
                        r.lat_p999_us,
                        r.lat_max_us,
                    ]);
                }
            }
        }
        acc.into_iter()
            .map(|(op, v)| {
                let mut m = [None; 5];
                for (i, slot) in m.iter_mut().enumerate() {
                    let known: Vec<f64> = v.iter().filter_map(|x| x[i]).collect();
                    *slot = (!known.is_empty()).then(|| mean(&known));
                }
                (op, m)
            })
            .collect()
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// Ok phases of `rows`, one observation per cell and phase.
fn observations(rows: &[FlatRow]) -> Vec<PhaseObs> {
    let mut by: BTreeMap<(String, String, u32), PhaseObs> = BTreeMap::new();
    let mut order: Vec<(String, String, u32)> = Vec::new();
    for r in rows.iter().filter(|r| r.status == Verdict::Ok) {
        let k = (r.run_id.clone(), r.cell_key.clone(), r.phase_index);
        by.entry(k.clone())
            .or_insert_with(|| {
                order.push(k.clone());
                PhaseObs {
                    head: r.clone(),
                    ops: Vec::new(),
                }
            })
            .ops
            .push(r.clone());
    }
    order.into_iter().filter_map(|k| by.remove(&k)).collect()
}

/// Group observations into configurations: series, run, cell group, phase
/// and its thread count.
fn configs(obs: &[PhaseObs], series: &SeriesMap) -> Vec<Config> {
    let mut out: Vec<Config> = Vec::new();
    for o in obs {
        let style = series.style(&o.head);
        match out.iter_mut().find(|c| {
            c.style.name == style.name
                && c.head.run_id == o.head.run_id
                && c.head.cell_group == o.head.cell_group
                && c.head.threads == o.head.threads
                && c.head.phase == o.head.phase
        }) {
            Some(c) => c.reps.push(o.clone()),
            None => out.push(Config {
                style,
                head: o.head.clone(),
                reps: vec![o.clone()],
            }),
        }
    }
    out
}

/// A phase's family: its name without a `/t<threads>` suffix, so that the
/// phases of one thread sweep inside a cell chart together.
pub fn family(phase: &str) -> &str {
    match phase.rsplit_once("/t") {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => phase,
    }
}

/// Phase families in the order they run.
fn phase_order(rows: &[FlatRow]) -> Vec<String> {
    let mut first: BTreeMap<String, u32> = BTreeMap::new();
    for r in rows {
        let e = first
            .entry(family(&r.phase).to_string())
            .or_insert(r.phase_index);
        *e = (*e).min(r.phase_index);
    }
    let mut v: Vec<(u32, String)> = first.into_iter().map(|(p, i)| (i, p)).collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

/// Series in legend order (by name, numbers by value).
fn series_list(cfgs: &[Config]) -> Vec<SeriesStyle> {
    let mut v: Vec<SeriesStyle> = Vec::new();
    for c in cfgs {
        if !v.iter().any(|s| s.name == c.style.name) {
            v.push(c.style.clone());
        }
    }
    v.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    v
}

/// The best configuration (highest mean throughput) of each series in a phase.
fn best_per_series<'a>(cfgs: &'a [Config], phase: &str) -> Vec<&'a Config> {
    let mut best: BTreeMap<Natural, &Config> = BTreeMap::new();
    for c in cfgs.iter().filter(|c| family(&c.head.phase) == phase) {
        let e = best.entry(Natural(c.style.name.clone())).or_insert(c);
        if c.mean() > e.mean() {
            *e = c;
        }
    }
    best.into_values().collect()
}

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

/// Build the view of a report.
pub fn build(input: &ReportInput) -> View {
    let rows: Vec<FlatRow> = input.runs.iter().flat_map(flatten).collect();
    let series = SeriesMap::new(&rows, &input.past);
    let obs = observations(&rows);
    let cfgs = configs(&obs, &series);
    let phases = phase_order(&rows);
    let resources = phase_resources(input);

    let mut sections = vec![
        throughput_section(&cfgs, &phases),
        threads_section(&cfgs, &phases),
        latency_section(&cfgs, &phases),
        fit::memory_section(&obs, &series, &phases),
        size_section(&obs, &series),
    ];
    if input.runs.len() == 1 && !input.past.is_empty() {
        sections.push(trend_section(&rows, &input.past, &series, &phases));
    }
    for s in &mut sections {
        if let [only] = s.figures.as_mut_slice() {
            only.chart.widen();
        }
    }

    let cells = input
        .runs
        .iter()
        .flat_map(|run| {
            cells_in_order(run)
                .into_iter()
                .map(|c| cell_view(&run.run, c, &series, &resources))
                .collect::<Vec<_>>()
        })
        .collect();

    let mut excluded = Table::new(
        "Not results",
        &[
            ("Run", false),
            ("Cell", false),
            ("Phase", false),
            ("Status", false),
            ("Reason", false),
        ],
    );
    let mut seen = BTreeSet::new();
    for r in rows.iter().filter(|r| r.status != Verdict::Ok) {
        if seen.insert((r.run_id.clone(), r.cell_key.clone(), r.phase_index)) {
            excluded.rows.push(vec![
                r.run_id.clone(),
                cell_label(r),
                r.phase.clone(),
                r.status.as_str().to_uppercase(),
                r.reason.clone(),
            ]);
        }
    }
    for run in &input.runs {
        for key in &run.unfinished {
            excluded.rows.push(vec![
                run.run.run_id.clone(),
                key.clone(),
                "—".into(),
                "UNFINISHED".into(),
                "no cell.json: the cell did not run or was interrupted".into(),
            ]);
        }
    }

    let title = match input.runs.as_slice() {
        [one] => format!("{} — {}", one.run.scenario, one.run.run_id),
        many => format!(
            "{} runs: {}",
            many.len(),
            many.iter()
                .map(|r| r.run.run_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let phases_total: BTreeSet<(String, String, u32)> = rows
        .iter()
        .map(|r| (r.run_id.clone(), r.cell_key.clone(), r.phase_index))
        .collect();
    let engines: BTreeSet<Natural> = rows.iter().map(|r| Natural(ev(r))).collect();
    let summary = vec![
        (
            "Scenario".to_string(),
            input
                .runs
                .iter()
                .map(|r| r.run.scenario.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "Engines".to_string(),
            engines
                .into_iter()
                .map(|e| e.0)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "Cells".to_string(),
            input
                .runs
                .iter()
                .map(|r| r.cells.len())
                .sum::<usize>()
                .to_string(),
        ),
        ("Phases".to_string(), phases_total.len().to_string()),
        ("Results".to_string(), obs.len().to_string()),
        ("Not results".to_string(), excluded.rows.len().to_string()),
    ];

    View {
        title,
        runs: input.runs.iter().map(|r| r.run.clone()).collect(),
        summary,
        run_tables: input.runs.iter().map(|r| run_table(&r.run)).collect(),
        excluded,
        sections,
        cells,
        all_rows: all_rows_table(&rows, input.runs.len() > 1),
    }
}

fn cell_label(r: &FlatRow) -> String {
    format!("{} / rep {}", r.group_label, r.repetition)
}

fn run_table(run: &RunRecord) -> Table {
    let mut t = Table::new(format!("Run {}", run.run_id), &[("", false), ("", false)]);
    let h = &run.host;
    let mut kv = vec![
        (
            "Scenario",
            format!("{} ({})", run.scenario, short(&run.scenario_hash)),
        ),
        ("Status", run.status.clone()),
        ("Started", fmt::timestamp(&run.started_at)),
        (
            "Finished",
            run.finished_at
                .as_deref()
                .map(fmt::timestamp)
                .unwrap_or_else(|| "—".into()),
        ),
        ("Host", h.hostname.clone()),
        ("CPU", format!("{} ({} cores)", h.cpu_model, h.cores)),
        ("Memory", fmt::bytes(h.memory_bytes as f64)),
        ("Kernel", h.kernel.clone()),
        ("cgroup", h.cgroup_version.clone()),
        (
            "benchcage",
            format!("{} ({})", run.benchcage_version, short(&run.git_rev)),
        ),
    ];
    if !run.overrides.is_empty() {
        kv.push((
            "Overrides",
            run.overrides
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    t.rows = kv
        .into_iter()
        .map(|(k, v)| vec![k.to_string(), v])
        .collect();
    t
}

fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

fn throughput_section(cfgs: &[Config], phases: &[String]) -> Section {
    let styles = series_list(cfgs);
    let mut groups = Vec::new();
    let mut table = Table::new(
        "Throughput by engine and version",
        &[
            ("Phase", false),
            ("Engine", false),
            ("Configuration", false),
            ("Threads", true),
            ("ops/s", true),
            ("min", true),
            ("max", true),
            ("Reps", true),
        ],
    );
    for phase in phases {
        let best = best_per_series(cfgs, phase);
        if best.is_empty() {
            continue;
        }
        let mut bars = Vec::new();
        for c in &best {
            let t = c.throughputs();
            let (lo, hi) = min_max(&t);
            let m = c.mean();
            bars.push(Bar {
                series: styles
                    .iter()
                    .position(|s| s.name == c.style.name)
                    .unwrap_or(0),
                value: m,
                range: (t.len() > 1).then_some((lo, hi)),
                tip: format!(
                    "{} · {} · {} threads: {} ops/s (n={})",
                    c.style.name,
                    phase,
                    c.head.threads,
                    fmt::ops(m),
                    t.len()
                ),
            });
            table.rows.push(vec![
                phase.clone(),
                c.style.name.clone(),
                c.head.group_label.clone(),
                c.head.threads.to_string(),
                fmt::ops(m),
                fmt::ops(lo),
                fmt::ops(hi),
                t.len().to_string(),
            ]);
        }
        groups.push(BarGroup {
            label: phase.clone(),
            bars,
        });
    }
    let figures = if groups.is_empty() {
        vec![]
    } else {
        vec![Figure {
            chart: Chart::Bar(BarChart {
                id: "throughput".into(),
                title: "Throughput by engine and version".into(),
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
        title: "Throughput by engine and version".into(),
        note: "Each engine@version at its best configuration for the phase (highest mean over \
               repetitions); whiskers span the repetitions' min to max."
            .into(),
        figures,
        tables: vec![],
        empty: "No phase produced a result.".into(),
    }
}

fn threads_section(cfgs: &[Config], phases: &[String]) -> Section {
    let mut figures = Vec::new();
    for phase in phases {
        let in_phase: Vec<&Config> = cfgs
            .iter()
            .filter(|c| family(&c.head.phase) == *phase)
            .collect();
        let threads: BTreeSet<u32> = in_phase.iter().map(|c| c.head.threads).collect();
        if threads.len() < 2 {
            continue;
        }
        let styles = series_list(cfgs)
            .into_iter()
            .filter(|s| in_phase.iter().any(|c| c.style.name == s.name))
            .collect::<Vec<_>>();
        let mut cols: Vec<(String, bool)> = vec![("Threads".into(), true)];
        cols.extend(styles.iter().map(|s| (format!("{} (ops/s)", s.name), true)));
        let col_refs: Vec<(&str, bool)> = cols.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        let mut table = Table::new(format!("Throughput vs threads: {phase}"), &col_refs);
        let mut lines = Vec::new();
        let mut grid: BTreeMap<u32, Vec<String>> = threads
            .iter()
            .map(|t| (*t, vec!["—".to_string(); styles.len()]))
            .collect();
        for (si, s) in styles.iter().enumerate() {
            let mut points = Vec::new();
            for t in &threads {
                let best = in_phase
                    .iter()
                    .filter(|c| c.style.name == s.name && c.head.threads == *t)
                    .map(|c| c.mean())
                    .fold(None, |acc: Option<f64>, m| {
                        Some(acc.map_or(m, |a| a.max(m)))
                    });
                if let Some(m) = best {
                    points.push(Point {
                        x: f64::from(*t),
                        y: m,
                        tip: format!("{} · {t} threads: {} ops/s", s.name, fmt::ops(m)),
                    });
                    if let Some(row) = grid.get_mut(t) {
                        row[si] = fmt::ops(m);
                    }
                }
            }
            lines.push(Line {
                style: s.clone(),
                points,
                markers: true,
                step: false,
            });
        }
        table.rows = grid
            .into_iter()
            .map(|(t, mut vals)| {
                let mut row = vec![t.to_string()];
                row.append(&mut vals);
                row
            })
            .collect();
        figures.push(Figure {
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
        });
    }
    Section {
        id: "threads".into(),
        title: "Throughput vs client threads".into(),
        note: "Mean over repetitions at each thread count, on a log₂ axis.".into(),
        figures,
        tables: vec![],
        empty: "No phase ran at more than one thread count.".into(),
    }
}

const PCT_NAMES: [&str; 5] = ["p50", "p95", "p99", "p99.9", "max"];

fn latency_section(cfgs: &[Config], phases: &[String]) -> Section {
    let mut figures = Vec::new();
    for phase in phases {
        let best = best_per_series(cfgs, phase);
        let ops: BTreeSet<String> = best.iter().flat_map(|c| c.latency().into_keys()).collect();
        for op in ops {
            let mut lines = Vec::new();
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
            for c in &best {
                let Some(lat) = c.latency().get(&op).copied() else {
                    continue;
                };
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
                let mut row = vec![c.style.name.clone(), c.head.threads.to_string()];
                row.extend(lat.iter().map(|v| fmt::ms_or_dash(*v)));
                table.rows.push(row);
                if points.is_empty() {
                    continue;
                }
                lines.push(Line {
                    style: c.style.clone(),
                    points,
                    markers: true,
                    step: false,
                });
            }
            if lines.is_empty() {
                continue;
            }
            figures.push(Figure {
                chart: Chart::Xy(XyChart {
                    id: format!("latency-{}-{}", slug(phase), slug(&op)),
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
            });
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

/// Per cell phase: major faults and bytes read, peak memory, the cap.
#[derive(Debug, Clone, Copy, Default)]
struct PhaseRes {
    major_faults: u64,
    read_bytes: u64,
    peak_memory: u64,
    memory_limit: Option<u64>,
}

type ResKey = (String, String, u32);

/// The server's samples of a cell (older records have no cgroup label).
fn server_samples(cell: &CellData) -> Vec<&ResourceSample> {
    cell.samples
        .iter()
        .filter(|s| s.cgroup.is_empty() || s.cgroup == "server")
        .collect()
}

/// Where each phase sits on the cell's clock, in seconds: from the first
/// sample labelled with the phase for its measured duration, else right
/// after the previous phase.
fn phase_windows(cell: &CellData) -> Vec<(f64, f64)> {
    let samples = server_samples(cell);
    let mut t = 0.0;
    cell.record
        .phases
        .iter()
        .map(|p| {
            let start = samples
                .iter()
                .find(|s| sample_in_phase(&s.phase, &p.name, p.threads))
                .map(|s| s.t_ms as f64 / 1000.0)
                .unwrap_or(t);
            t = start + p.duration_s;
            (start, t)
        })
        .collect()
}

fn window_stats(samples: &[&ResourceSample], from: f64, to: f64) -> PhaseRes {
    let inside: Vec<&ResourceSample> = samples
        .iter()
        .copied()
        .filter(|s| {
            let t = s.t_ms as f64 / 1000.0;
            t >= from - 0.5 && t <= to + 0.5
        })
        .collect();
    let (Some(first), Some(last)) = (inside.first(), inside.last()) else {
        return PhaseRes::default();
    };
    PhaseRes {
        major_faults: last.major_faults.saturating_sub(first.major_faults),
        read_bytes: last.io_read_bytes.saturating_sub(first.io_read_bytes),
        peak_memory: inside.iter().map(|s| s.memory_bytes).max().unwrap_or(0),
        memory_limit: None,
    }
}

fn phase_resources(input: &ReportInput) -> BTreeMap<ResKey, PhaseRes> {
    let mut out = BTreeMap::new();
    for run in &input.runs {
        for cell in &run.cells {
            let samples = server_samples(cell);
            for (i, (from, to)) in phase_windows(cell).into_iter().enumerate() {
                let mut r = window_stats(&samples, from, to);
                // The run's own per-phase counters (the same the flat rows
                // carry) beat the 1 s samples.
                let cost = phase_cost(cell, i);
                r.major_faults = cost.major_faults.unwrap_or(r.major_faults);
                r.read_bytes = cost.read_bytes.unwrap_or(r.read_bytes);
                r.memory_limit = cost.memory_limit_bytes;
                out.insert(
                    (run.run.run_id.clone(), cell.record.key.clone(), i as u32),
                    r,
                );
            }
        }
    }
    out
}

fn size_section(obs: &[PhaseObs], series: &SeriesMap) -> Section {
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
    let styles: Vec<SeriesStyle> = per.values().map(|(s, _)| s.clone()).collect();
    let mut groups = Vec::new();
    for (i, (Natural(name), (_, sizes))) in per.iter().enumerate() {
        let v: Vec<f64> = sizes.values().map(|b| *b as f64).collect();
        let (lo, hi) = min_max(&v);
        let m = mean(&v);
        groups.push(BarGroup {
            label: name.clone(),
            bars: vec![Bar {
                series: i,
                value: m,
                range: (lo < hi).then_some((lo, hi)),
                tip: format!("{name}: {} on disk (n={})", fmt::bytes(m), v.len()),
            }],
        });
        table.rows.push(vec![
            name.clone(),
            v.len().to_string(),
            fmt::bytes(m),
            fmt::bytes(lo),
            fmt::bytes(hi),
        ]);
    }
    let figures = if groups.is_empty() {
        vec![]
    } else {
        vec![Figure {
            chart: Chart::Bar(BarChart {
                id: "data-size".into(),
                title: "Data size on disk per engine".into(),
                y: Axis::zero("data size on disk", Unit::Bytes),
                series: styles,
                groups,
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

fn trend_section(
    rows: &[FlatRow],
    past: &[FlatRow],
    series: &SeriesMap,
    phases: &[String],
) -> Section {
    let all: Vec<FlatRow> = past.iter().chain(rows).cloned().collect();
    let mut runs: Vec<(String, String)> = all
        .iter()
        .map(|r| (r.run_started_at.clone(), r.run_id.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    runs.sort();
    let labels: Vec<String> = runs
        .iter()
        .map(|(t, id)| {
            if t.len() >= 16 {
                t[5..16].replace('T', " ")
            } else {
                id.clone()
            }
        })
        .collect();
    let obs = observations(&all);
    let cfgs = configs(&obs, series);
    let mut figures = Vec::new();
    for phase in phases {
        let in_phase: Vec<&Config> = cfgs
            .iter()
            .filter(|c| family(&c.head.phase) == *phase)
            .collect();
        if in_phase.is_empty() {
            continue;
        }
        let styles: Vec<SeriesStyle> = series_list(&cfgs)
            .into_iter()
            .filter(|s| in_phase.iter().any(|c| c.style.name == s.name))
            .collect();
        let mut cols: Vec<(String, bool)> = vec![("Run".into(), false)];
        cols.extend(styles.iter().map(|s| (format!("{} (ops/s)", s.name), true)));
        let col_refs: Vec<(&str, bool)> = cols.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        let mut table = Table::new(format!("Trend: {phase}"), &col_refs);
        let mut lines: Vec<Line> = styles
            .iter()
            .map(|s| Line {
                style: s.clone(),
                points: vec![],
                markers: true,
                step: false,
            })
            .collect();
        for (ri, (_, id)) in runs.iter().enumerate() {
            let mut row = vec![id.clone()];
            for (si, s) in styles.iter().enumerate() {
                let best = in_phase
                    .iter()
                    .filter(|c| c.style.name == s.name && c.head.run_id == *id)
                    .map(|c| c.mean())
                    .fold(None, |acc: Option<f64>, m| {
                        Some(acc.map_or(m, |a| a.max(m)))
                    });
                match best {
                    Some(m) => {
                        lines[si].points.push(Point {
                            x: ri as f64,
                            y: m,
                            tip: format!("{} · {id}: {} ops/s", s.name, fmt::ops(m)),
                        });
                        row.push(fmt::ops(m));
                    }
                    None => row.push("—".into()),
                }
            }
            table.rows.push(row);
        }
        figures.push(Figure {
            chart: Chart::Xy(XyChart {
                id: format!("trend-{}", slug(phase)),
                title: format!("Trend over past runs: {phase}"),
                x: Axis::categories("run (start time, UTC)", labels.clone()),
                y: Axis::zero("throughput (ops/s)", Unit::Ops),
                lines,
                bands: vec![],
                width: WIDTH,
                height: 300.0,
            }),
            table,
        });
    }
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

fn cell_view(
    run: &RunRecord,
    cell: &CellData,
    series: &SeriesMap,
    res: &BTreeMap<ResKey, PhaseRes>,
) -> CellView {
    let rec = &cell.record;
    let probe = FlatRow {
        run_id: run.run_id.clone(),
        environment: rec.environment.clone(),
        engine: rec.engine.clone(),
        version: rec.version.clone(),
        ..FlatRow::default()
    };
    let style = series.style(&probe);
    let windows = phase_windows(cell);
    let verdicts: Vec<(String, Verdict, String)> = rec
        .phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (v, r) = phase_verdict(rec, i);
            (p.name.clone(), v, r)
        })
        .collect();
    let bands: Vec<Band> = verdicts
        .iter()
        .zip(&windows)
        .map(|((name, v, _), (a, b))| Band {
            x0: *a,
            x1: *b,
            label: if *v == Verdict::Ok {
                name.clone()
            } else {
                format!("{name}: {}", v.as_str().to_uppercase())
            },
            excluded: *v != Verdict::Ok,
        })
        .collect();
    let id = slug(&format!("{}-{}", run.run_id, rec.key));
    let mut ops_points = Vec::new();
    for ((p, (v, _)), (start, end)) in rec
        .phases
        .iter()
        .zip(verdicts.iter().map(|x| (&x.1, &x.2)))
        .zip(&windows)
    {
        if *v != Verdict::Ok {
            continue;
        }
        if p.series.is_empty() {
            for x in [*start, *end] {
                ops_points.push(Point {
                    x,
                    y: p.throughput,
                    tip: format!("{}: {} ops/s", p.name, fmt::ops(p.throughput)),
                });
            }
        } else {
            for s in &p.series {
                ops_points.push(Point {
                    x: start + s.t as f64,
                    y: s.ops as f64,
                    tip: format!(
                        "{} t={}s: {} ops/s",
                        p.name,
                        s.t,
                        fmt::thousands(s.ops as i64)
                    ),
                });
            }
        }
    }
    let named = |name: &str, color: &str, dash: &str| SeriesStyle {
        name: name.to_string(),
        color: color.to_string(),
        dash: dash.to_string(),
    };
    let mut charts = Vec::new();
    if !ops_points.is_empty() {
        charts.push(Chart::Xy(XyChart {
            id: format!("cell-ops-{id}"),
            title: format!("ops/s over time: {}", rec.label),
            x: Axis::zero("time since the cell started (s)", Unit::Seconds),
            y: Axis::zero("throughput (ops/s)", Unit::Ops),
            lines: vec![Line {
                style: SeriesStyle {
                    name: "ops/s".into(),
                    ..style.clone()
                },
                points: ops_points,
                markers: false,
                step: false,
            }],
            bands: bands.clone(),
            width: WIDTH,
            height: 220.0,
        }));
    }
    let t = |s: &ResourceSample| s.t_ms as f64 / 1000.0;
    let samples = server_samples(cell);
    if !samples.is_empty() {
        let mut lines = vec![
            sample_line(&samples, named("memory used", &style.color, ""), |s| {
                Some(s.memory_bytes)
            }),
            sample_line(&samples, named("page cache", "#9aa0a6", "3 2"), |s| {
                Some(s.page_cache_bytes)
            }),
        ];
        let cap = sample_line(&samples, named("memory cap", "#d62728", "6 4"), |s| {
            (s.memory_limit_bytes > 0 && s.memory_limit_bytes < UNLIMITED_CAP)
                .then_some(s.memory_limit_bytes)
        });
        if !cap.points.is_empty() {
            lines.push(Line { step: true, ..cap });
        }
        charts.push(Chart::Xy(XyChart {
            id: format!("cell-mem-{id}"),
            title: format!("Memory against the cap: {}", rec.label),
            x: Axis::zero("time since the cell started (s)", Unit::Seconds),
            y: Axis::zero("memory", Unit::Bytes),
            lines,
            bands: bands.clone(),
            width: WIDTH,
            height: 220.0,
        }));
        let reads: Vec<Point> = samples
            .windows(2)
            .map(|w| {
                let dt = (w[1].t_ms.saturating_sub(w[0].t_ms) as f64 / 1000.0).max(1e-3);
                let rate = w[1].io_read_bytes.saturating_sub(w[0].io_read_bytes) as f64 / dt;
                Point {
                    x: t(w[1]),
                    y: rate,
                    tip: format!("{:.0}s: {}/s read", t(w[1]), fmt::bytes(rate)),
                }
            })
            .collect();
        if !reads.is_empty() {
            charts.push(Chart::Xy(XyChart {
                id: format!("cell-disk-{id}"),
                title: format!("Disk reads: {}", rec.label),
                x: Axis::zero("time since the cell started (s)", Unit::Seconds),
                y: Axis::zero("disk reads", Unit::BytesPerSec),
                lines: vec![Line {
                    style: named("bytes read from disk", &style.color, ""),
                    points: reads,
                    markers: false,
                    step: false,
                }],
                bands,
                width: WIDTH,
                height: 220.0,
            }));
        }
    }

    let mut table = Table::new(
        format!("Phases of {}", rec.label),
        &[
            ("Phase", false),
            ("Status", false),
            ("Threads", true),
            ("ops/s", true),
            ("Errors", true),
            ("Memory cap", true),
            ("Peak mem", true),
            ("Maj. faults", true),
            ("Faults per op", true),
            ("Read", true),
            ("Read per op", true),
        ],
    );
    for (i, p) in rec.phases.iter().enumerate() {
        let v = &verdicts[i].1;
        let r = res
            .get(&(run.run_id.clone(), rec.key.clone(), i as u32))
            .copied()
            .unwrap_or_default();
        let ok = *v == Verdict::Ok;
        table.rows.push(vec![
            p.name.clone(),
            v.as_str().to_uppercase(),
            p.threads.to_string(),
            if ok {
                fmt::ops(p.throughput)
            } else {
                "—".into()
            },
            fmt::thousands(p.total_errors as i64),
            r.memory_limit
                .map(|b| fmt::bytes(b as f64))
                .unwrap_or_else(|| "—".into()),
            fmt::bytes(r.peak_memory as f64),
            fmt::thousands(r.major_faults as i64),
            per_op(r.major_faults as f64, p.total_ops, fmt::small),
            fmt::bytes(r.read_bytes as f64),
            per_op(r.read_bytes as f64, p.total_ops, fmt::bytes),
        ]);
    }

    CellView {
        anchor: format!("cell-{id}"),
        label: rec.label.clone(),
        run_id: run.run_id.clone(),
        key: rec.key.clone(),
        series: style,
        phases: verdicts,
        charts,
        table,
        details: cell_details(run, cell),
    }
}

/// `amount` per operation of `ops`, formatted; `—` without operations.
fn per_op(amount: f64, ops: u64, format: fn(f64) -> String) -> String {
    if ops == 0 {
        "—".into()
    } else {
        format(amount / ops as f64)
    }
}

/// A line of one byte gauge of the samples, over the cell's clock.
fn sample_line(
    samples: &[&ResourceSample],
    style: SeriesStyle,
    value: impl Fn(&ResourceSample) -> Option<u64>,
) -> Line {
    let points = samples
        .iter()
        .filter_map(|s| {
            let v = value(s)?;
            let t = s.t_ms as f64 / 1000.0;
            Some(Point {
                x: t,
                y: v as f64,
                tip: format!("{t:.0}s: {} {}", fmt::bytes(v as f64), style.name),
            })
        })
        .collect();
    Line {
        style,
        points,
        markers: false,
        step: false,
    }
}

fn kv_table(title: &str, kv: Vec<(String, String)>) -> Table {
    let mut t = Table::new(title, &[("", false), ("", false)]);
    t.rows = kv.into_iter().map(|(k, v)| vec![k, v]).collect();
    if t.rows.is_empty() {
        t.rows.push(vec!["—".into(), "none".into()]);
    }
    t
}

fn cell_details(run: &RunRecord, cell: &CellData) -> Vec<Table> {
    let rec = &cell.record;
    let f = &rec.fidelity;
    let mut cpus: BTreeMap<&str, usize> = BTreeMap::new();
    for list in f.engine_thread_cpus.values() {
        *cpus.entry(list.as_str()).or_default() += 1;
    }
    let mut fidelity = vec![
        (
            "Verdict".to_string(),
            if f.is_valid() {
                "valid".to_string()
            } else {
                format!("INVALID: {}", f.violations.join("; "))
            },
        ),
        ("OOM kills".into(), f.oom_kills.to_string()),
        ("Engine restarts".into(), f.engine_restarts.to_string()),
        (
            "Engine threads by CPUs allowed".into(),
            if cpus.is_empty() {
                "—".into()
            } else {
                cpus.iter()
                    .map(|(l, n)| format!("{n} on {l}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        (
            "Hog locked".into(),
            f.hog_locked_bytes
                .map(|b| fmt::bytes(b as f64))
                .unwrap_or_else(|| "no hog".into()),
        ),
        (
            "Engine-reported cache".into(),
            f.engine_reported_cache_bytes
                .map(|b| fmt::bytes(b as f64))
                .unwrap_or_else(|| "—".into()),
        ),
    ];
    fidelity.extend(
        f.limits_read_back
            .iter()
            .map(|(k, v)| (format!("read back: {k}"), v.clone())),
    );
    let cell_facts = vec![
        ("Cell key".to_string(), rec.key.clone()),
        ("Engine".into(), format!("{}@{}", rec.engine, rec.version)),
        (
            "Engine reports version".into(),
            rec.engine_reported_version.clone(),
        ),
        (
            "Environment".into(),
            format!("{} ({})", rec.environment, rec.backend),
        ),
        ("Threads".into(), rec.threads.to_string()),
        ("Repetition".into(), rec.repetition.to_string()),
        (
            "Data size".into(),
            rec.data_size_bytes
                .map(|b| fmt::bytes(b as f64))
                .unwrap_or_else(|| "—".into()),
        ),
        ("Status".into(), rec.status.clone()),
        (
            "Failure".into(),
            rec.failure.clone().unwrap_or_else(|| "—".into()),
        ),
        ("Overhead (s)".into(), format!("{:.1}", rec.overhead_s)),
    ];
    let h = &run.host;
    vec![
        kv_table("Cell", cell_facts),
        kv_table(
            "Limits (planned)",
            rec.limits
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        kv_table("Fidelity record", fidelity),
        kv_table(
            "Knobs",
            rec.knobs
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        kv_table(
            "Host",
            vec![
                ("Host".into(), h.hostname.clone()),
                ("CPU".into(), format!("{} ({} cores)", h.cpu_model, h.cores)),
                ("Memory".into(), fmt::bytes(h.memory_bytes as f64)),
                ("Kernel".into(), h.kernel.clone()),
                ("cgroup".into(), h.cgroup_version.clone()),
            ],
        ),
    ]
}

fn all_rows_table(rows: &[FlatRow], with_run: bool) -> Table {
    let mut cols = vec![];
    if with_run {
        cols.push(("Run", false));
    }
    cols.extend([
        ("Cell", false),
        ("Phase", false),
        ("Op", false),
        ("Status", false),
        ("Threads", true),
        ("Memory cap", true),
        ("ops/s", true),
        ("p50 (ms)", true),
        ("p95 (ms)", true),
        ("p99 (ms)", true),
        ("p99.9 (ms)", true),
        ("max (ms)", true),
        ("Errors", true),
    ]);
    let mut t = Table::new("All results", &cols);
    for r in rows {
        let ok = r.status == Verdict::Ok && r.op != NO_OP;
        let num = |s: String| if ok { s } else { "—".to_string() };
        let mut row = vec![];
        if with_run {
            row.push(r.run_id.clone());
        }
        row.extend([
            cell_label(r),
            r.phase.clone(),
            r.op.clone(),
            r.status.as_str().to_uppercase(),
            r.threads.to_string(),
            r.memory_limit_bytes
                .map(|b| fmt::bytes(b as f64))
                .unwrap_or_else(|| "—".into()),
            num(fmt::ops(r.throughput)),
            num(fmt::ms_or_dash(r.lat_p50_us)),
            num(fmt::ms_or_dash(r.lat_p95_us)),
            num(fmt::ms_or_dash(r.lat_p99_us)),
            num(fmt::ms_or_dash(r.lat_p999_us)),
            num(fmt::ms_or_dash(r.lat_max_us)),
            fmt::thousands(r.errors as i64),
        ]);
        t.rows.push(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::family;

    #[test]
    fn phases_of_a_thread_sweep_share_a_family() {
        assert_eq!(family("workload-a/t16"), "workload-a");
        assert_eq!(family("workload-a"), "workload-a");
        assert_eq!(family("odd/tx"), "odd/tx");
    }
}
