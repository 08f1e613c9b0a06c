//! "Per cell": each cell's throughput, memory against the cap and disk
//! reads on its own clock (phases as shaded bands), the table of its
//! phases and, one click away, its records.

mod details;
mod members;
mod resources;

use super::series::SeriesMap;
use super::{CellView, Table, slug};
use crate::report::ReportInput;
use crate::report::charts::{Axis, Band, Chart, Line, Point, SeriesStyle, Unit, WIDTH, XyChart};
use crate::report::fmt;
use crate::results::flat::{FlatRow, UNLIMITED_CAP, Verdict, cells_in_order, phase_verdict};
use crate::results::layout::CellData;
use crate::results::model::{CellRecord, PhaseResult, ResourceSample, RunRecord};
use resources::{
    PhaseRes, ResKey, phase_resources, phase_windows, read_rates, secs, server_samples,
};
use std::collections::BTreeMap;

/// Each phase's name, verdict and reason.
type Verdicts = [(String, Verdict, String)];

/// The views of every cell of every run, each run's in reading order.
pub(super) fn views(input: &ReportInput, series: &SeriesMap) -> Vec<CellView> {
    let res = &phase_resources(input);
    input
        .runs
        .iter()
        .flat_map(|run| {
            cells_in_order(run)
                .into_iter()
                .map(move |c| view(&run.run, c, series, res))
        })
        .collect()
}

fn view(
    run: &RunRecord,
    cell: &CellData,
    series: &SeriesMap,
    res: &BTreeMap<ResKey, PhaseRes>,
) -> CellView {
    let rec = &cell.record;
    let style = series.style(&FlatRow {
        run_id: run.run_id.clone(),
        environment: rec.environment.clone(),
        engine: rec.engine.clone(),
        version: rec.version.clone(),
        ..FlatRow::default()
    });
    let verdicts: Vec<(String, Verdict, String)> = (0..rec.phases.len())
        .map(|i| {
            let (v, r) = phase_verdict(rec, i);
            (rec.phases[i].name.clone(), v, r)
        })
        .collect();
    let windows = phase_windows(cell);
    let clock = Clock {
        id: slug(&format!("{}-{}", run.run_id, rec.key)),
        label: &rec.label,
        bands: bands(&verdicts, &windows),
        color: &style.color,
    };
    let mut charts = Vec::new();
    charts.extend(ops_chart(&clock, rec, &verdicts, &windows, &style));
    charts.extend(server_charts(&clock, cell));
    charts.extend(member_charts(&clock, cell));
    let restored = rec
        .load_source
        .as_ref()
        .is_some_and(crate::results::model::LoadSource::restored);
    CellView {
        anchor: format!("cell-{}", clock.id),
        label: if restored {
            format!("{} (on data restored from a snapshot)", rec.label)
        } else {
            rec.label.clone()
        },
        run_id: run.run_id.clone(),
        key: rec.key.clone(),
        table: phase_table(run, rec, &verdicts, res),
        errors: error_table(rec),
        series: style,
        phases: verdicts,
        charts,
        details: details::tables(run, cell),
    }
}

/// What every chart of a cell shares: its id, label, phase bands and color.
struct Clock<'a> {
    id: String,
    label: &'a str,
    bands: Vec<Band>,
    color: &'a str,
}

impl Clock<'_> {
    /// A chart over the cell's clock.
    fn chart(&self, kind: &str, title: &str, y: Axis, lines: Vec<Line>) -> Chart {
        Chart::Xy(XyChart {
            id: format!("cell-{kind}-{}", self.id),
            title: format!("{title}: {}", self.label),
            x: Axis::zero("time since the cell started (s)", Unit::Seconds),
            y,
            lines,
            bands: self.bands.clone(),
            width: WIDTH,
            height: 220.0,
        })
    }
}

/// The phases as shaded bands; those that are not results say so.
fn bands(verdicts: &Verdicts, windows: &[(f64, f64)]) -> Vec<Band> {
    verdicts
        .iter()
        .zip(windows)
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
        .collect()
}

/// A line style of its own on a cell's chart.
fn named(name: &str, color: &str, dash: &str) -> SeriesStyle {
    SeriesStyle {
        name: name.to_string(),
        color: color.to_string(),
        dash: dash.to_string(),
    }
}

/// Throughput over the ok phases: each second of a phase's series, or its
/// mean at both ends of its window when it has none.
fn ops_points(rec: &CellRecord, verdicts: &Verdicts, windows: &[(f64, f64)]) -> Vec<Point> {
    let mut points = Vec::new();
    for ((p, (_, v, _)), (start, end)) in rec.phases.iter().zip(verdicts).zip(windows) {
        if *v == Verdict::Ok {
            points.extend(phase_points(p, *start, *end));
        }
    }
    points
}

fn phase_points(p: &PhaseResult, start: f64, end: f64) -> Vec<Point> {
    if p.series.is_empty() {
        return [start, end]
            .into_iter()
            .map(|x| Point {
                x,
                y: p.throughput,
                tip: format!("{}: {} ops/s", p.name, fmt::ops(p.throughput)),
            })
            .collect();
    }
    p.series
        .iter()
        .map(|s| Point {
            x: start + s.t as f64,
            y: s.ops as f64,
            tip: format!(
                "{} t={}s: {} ops/s",
                p.name,
                s.t,
                fmt::thousands(s.ops as i64)
            ),
        })
        .collect()
}

fn ops_chart(
    clock: &Clock,
    rec: &CellRecord,
    verdicts: &Verdicts,
    windows: &[(f64, f64)],
    style: &SeriesStyle,
) -> Option<Chart> {
    let points = ops_points(rec, verdicts, windows);
    if points.is_empty() {
        return None;
    }
    let line = Line {
        style: SeriesStyle {
            name: "ops/s".into(),
            ..style.clone()
        },
        points,
        markers: false,
        step: false,
    };
    Some(clock.chart(
        "ops",
        "ops/s over time",
        Axis::zero("throughput (ops/s)", Unit::Ops),
        vec![line],
    ))
}

/// Memory against the cap and disk reads, from the server's samples;
/// none without samples.
fn server_charts(clock: &Clock, cell: &CellData) -> Vec<Chart> {
    let samples = server_samples(cell);
    if samples.is_empty() {
        return vec![];
    }
    let mut lines = vec![
        sample_line(&samples, named("memory used", clock.color, ""), |s| {
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
    let mut charts = vec![clock.chart(
        "mem",
        "Memory against the cap",
        Axis::zero("memory", Unit::Bytes),
        lines,
    )];
    let reads: Vec<Point> = read_rates(&samples)
        .into_iter()
        .map(|(t, rate)| Point {
            x: t,
            y: rate,
            tip: format!("{t:.0}s: {} read", fmt::bytes_per_sec(rate)),
        })
        .collect();
    if !reads.is_empty() {
        let line = Line {
            style: named("bytes read from disk", clock.color, ""),
            points: reads,
            markers: false,
            step: false,
        };
        charts.push(clock.chart(
            "disk",
            "Disk reads",
            Axis::zero("disk reads", Unit::BytesPerSec),
            vec![line],
        ));
    }
    charts
}

/// A topology's members: CPU and memory of each, and each secondary's
/// replication lag; none for one server.
fn member_charts(clock: &Clock, cell: &CellData) -> Vec<Chart> {
    let mut charts = Vec::new();
    let cpu = members::cpu_lines(cell);
    if !cpu.is_empty() {
        charts.push(clock.chart(
            "member-cpu",
            "CPU per member",
            Axis::zero("CPUs used", Unit::Plain),
            cpu,
        ));
        charts.push(clock.chart(
            "member-mem",
            "Memory per member",
            Axis::zero("memory", Unit::Bytes),
            members::memory_lines(cell),
        ));
    }
    let lag = members::lag_lines(cell);
    if lag.iter().any(|l| !l.points.is_empty()) {
        charts.push(clock.chart(
            "lag",
            "Replication lag (behind the primary, read every second)",
            Axis::zero("behind the primary", members::lag_axis_unit(cell)),
            lag,
        ));
    }
    charts
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
            let t = secs(s);
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

/// `amount` per operation of `ops`, formatted; `—` without operations.
fn per_op(amount: f64, ops: u64, format: fn(f64) -> String) -> String {
    if ops == 0 {
        fmt::DASH.into()
    } else {
        format(amount / ops as f64)
    }
}

/// One row per phase: its verdict, throughput and what it cost the server.
fn phase_table(
    run: &RunRecord,
    rec: &CellRecord,
    verdicts: &Verdicts,
    res: &BTreeMap<ResKey, PhaseRes>,
) -> Table {
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
    // A cell on restored data measured no load: its row says why.
    if let Some(crate::results::model::LoadSource::Snapshot {
        key,
        load_s,
        from_run,
        ..
    }) = &rec.load_source
    {
        let mut row = vec![
            "load".to_string(),
            format!(
                "RESTORED: not measured in this cell (snapshot {key}, loaded in {load_s:.1}s by run {from_run})"
            ),
        ];
        row.resize(table.headers.len(), fmt::DASH.into());
        table.rows.push(row);
    }
    for (i, (p, (_, v, _))) in rec.phases.iter().zip(verdicts).enumerate() {
        let r = res
            .get(&(run.run_id.clone(), rec.key.clone(), i as u32))
            .copied()
            .unwrap_or_default();
        table.rows.push(vec![
            p.name.clone(),
            v.as_str().to_uppercase(),
            p.threads.to_string(),
            if *v == Verdict::Ok {
                fmt::ops(p.throughput)
            } else {
                fmt::DASH.into()
            },
            fmt::thousands(p.total_errors as i64),
            fmt::bytes_or_dash(r.memory_limit),
            fmt::bytes(r.peak_memory as f64),
            fmt::thousands(r.major_faults as i64),
            per_op(r.major_faults as f64, p.total_ops, fmt::small),
            fmt::bytes(r.read_bytes as f64),
            per_op(r.read_bytes as f64, p.total_ops, fmt::bytes),
        ]);
    }
    table
}

/// The first distinct errors the phases of `rec` kept, per phase and
/// operation kind (at most a few each, cut short); `None` without any.
fn error_table(rec: &CellRecord) -> Option<Table> {
    let mut table = Table::new(
        format!("First errors of {}", rec.label),
        &[
            ("Phase", false),
            ("Operation", false),
            ("Failed", true),
            ("Error", false),
        ],
    );
    for p in &rec.phases {
        for (kind, op) in &p.ops {
            for (i, msg) in op.error_samples.iter().enumerate() {
                table.rows.push(vec![
                    if i == 0 {
                        format!("{} t{}", p.name, p.threads)
                    } else {
                        String::new()
                    },
                    kind.clone(),
                    if i == 0 {
                        fmt::thousands(op.errors as i64)
                    } else {
                        String::new()
                    },
                    msg.clone(),
                ]);
            }
        }
    }
    (!table.rows.is_empty()).then_some(table)
}

#[cfg(test)]
mod tests {
    use super::resources::tests::cell;
    use super::*;
    use crate::results::layout::RunData;
    use crate::results::model::PhaseStatus;

    fn input() -> ReportInput {
        let mut c = cell();
        c.record.label = "redis@7.0 / small".into();
        c.record.engine = "redis".into();
        c.record.version = "7.0".into();
        c.record.phases[1].status = PhaseStatus::Oom {
            reason: "killed".into(),
        };
        ReportInput {
            runs: vec![RunData {
                dir: "r".into(),
                run: RunRecord {
                    run_id: "r1".into(),
                    ..RunRecord::default()
                },
                cells: vec![c],
                unfinished: vec![],
                claims: None,
            }],
            past: vec![],
        }
    }

    #[test]
    fn a_cell_charts_its_ok_phases_and_marks_the_others() {
        let input = input();
        let [v]: [CellView; 1] = views(&input, &SeriesMap::new(&[], &[])).try_into().unwrap();
        assert_eq!(v.anchor, "cell-r1-k");
        let ids: Vec<&str> = v.charts.iter().map(|c| c.id()).collect();
        assert_eq!(ids, ["cell-ops-r1-k", "cell-mem-r1-k", "cell-disk-r1-k"]);
        let Chart::Xy(ops) = &v.charts[0] else {
            panic!("an x/y chart expected")
        };
        // The OOM phase is not a result: only the load's two ends are drawn.
        let xs: Vec<f64> = ops.lines[0].points.iter().map(|p| p.x).collect();
        assert_eq!(xs, [0.0, 2.0]);
        assert_eq!(ops.bands[1].label, "run: OOM");
        assert!(ops.bands[1].excluded);
    }

    #[test]
    fn the_phase_table_shows_costs_per_operation_and_no_throughput_for_a_failure() {
        let input = input();
        let [v]: [CellView; 1] = views(&input, &SeriesMap::new(&[], &[])).try_into().unwrap();
        let run = &v.table.rows[1];
        assert_eq!(run[..4], ["run", "OOM", "4", "—"]);
        // The samples labelled `run` (5..=9 s): 40 major faults and
        // 16 KiB over 1000 operations, under a 1 GiB cap; peak 9 MiB
        // within the phase's window (5..=8 s).
        assert_eq!(
            run[5..],
            ["1 GiB", "9 MiB", "40", "0.0400", "16 KiB", "16.4 B"]
        );
    }

    fn with_errors() -> ReportInput {
        let mut input = input();
        let run = &mut input.runs[0].cells[0].record.phases[1];
        run.total_errors = 12;
        run.ops.insert(
            "UPDATE".into(),
            crate::results::model::OpStats {
                errors: 12,
                error_samples: vec![
                    "postgres at 127.0.0.1:5432: db error: foreign usertable (SQLSTATE P0001)"
                        .into(),
                    "no answer within 30s (operation timeout)".into(),
                ],
                ..Default::default()
            },
        );
        input
    }

    #[test]
    fn a_cell_without_failed_operations_has_no_error_table() {
        let [v]: [CellView; 1] = views(&input(), &SeriesMap::new(&[], &[]))
            .try_into()
            .unwrap();
        assert_eq!(v.errors, None);
    }

    #[test]
    fn the_first_errors_of_a_phase_are_listed_per_operation_kind() {
        let [v]: [CellView; 1] = views(&with_errors(), &SeriesMap::new(&[], &[]))
            .try_into()
            .unwrap();
        let t = v.errors.expect("an error table");
        assert_eq!(t.title, "First errors of redis@7.0 / small");
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][..3], ["run t4", "UPDATE", "12"]);
        assert!(t.rows[0][3].contains("foreign usertable (SQLSTATE P0001)"));
        assert_eq!(t.rows[1][..3], ["", "UPDATE", ""]);
        assert!(t.rows[1][3].contains("operation timeout"));
    }

    #[test]
    fn markdown_and_html_reports_show_the_servers_first_errors() {
        use crate::report::Exporter;
        let input = with_errors();
        let md = crate::report::markdown::Markdown.export(&input).unwrap();
        assert!(md.contains("**First errors of redis@7.0 / small**"), "{md}");
        assert!(md.contains("| run t4 | UPDATE | 12 | postgres at 127.0.0.1:5432: db error: foreign usertable (SQLSTATE P0001) |"), "{md}");
        let html = crate::report::html::Html.export(&input).unwrap();
        assert!(html.contains("<caption>First errors of redis@7.0 / small</caption>"));
        assert!(html.contains("db error: foreign usertable (SQLSTATE P0001)"));
        let clean = crate::report::markdown::Markdown
            .export(&super::tests::input())
            .unwrap();
        assert!(!clean.contains("First errors"));
    }

    #[test]
    fn a_restored_cell_has_a_load_row_that_says_why_it_measured_none() {
        let mut input = input();
        input.runs[0].cells[0].record.load_source =
            Some(crate::results::model::LoadSource::Snapshot {
                key: "0123456789abcdef".into(),
                restore_s: 0.4,
                load_s: 12.5,
                from_run: "20261201-120000-abcd".into(),
            });
        let [v]: [CellView; 1] = views(&input, &SeriesMap::new(&[], &[])).try_into().unwrap();
        let load = &v.table.rows[0];
        assert_eq!(load.len(), v.table.headers.len());
        assert_eq!(load[0], "load");
        assert_eq!(
            load[1],
            "RESTORED: not measured in this cell (snapshot 0123456789abcdef, loaded in 12.5s by run 20261201-120000-abcd)"
        );
        assert!(load[2..].iter().all(|c| c == "—"), "{load:?}");
    }
}
