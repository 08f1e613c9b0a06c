//! "Versions": in a run with several versions of an engine, each phase's
//! throughput over the versions in version order (`12` < `13` < `17`), one
//! chart per engine, setup and phase, with its 95% interval as a band (the
//! repetitions' and per-second series' bootstrap that `compare` uses) and
//! every step that `compare --by-version` calls a regression or better
//! marked on the version it reached.

use super::{Figure, Section, Table, slug};
use crate::report::by_version;
use crate::report::charts::{Axis, Chart, Line, Point, SeriesStyle, Unit, WIDTH, XyChart};
use crate::report::compare::{Change, Metric, Threshold};
use crate::report::fmt;
use crate::results::flat::{Verdict, phase_verdict, setup_group};
use crate::results::layout::RunData;
use crate::results::order::natural_cmp;
use crate::stats::{Blocks, Obs, ratio_interval};
use std::collections::BTreeMap;

/// What the section marks as a change: the default of `compare`.
const THRESHOLD: Threshold = Threshold(0.05);

/// One chart's data: an engine's phase on one setup, per version.
#[derive(Debug, Default)]
struct Curve {
    engine: String,
    environment: String,
    phase: String,
    threads: u32,
    /// Version -> each valid repetition's throughput and seconds.
    versions: BTreeMap<String, Vec<Obs>>,
}

/// A version's point: mean and 95% interval of its throughput.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Level {
    mean: f64,
    lo: f64,
    hi: f64,
    n: usize,
}

fn level(obs: &[Obs]) -> Option<Level> {
    let r = ratio_interval(obs, &[Obs::value(1.0)], Blocks::Auto)?;
    Some(Level {
        mean: r.ratio,
        lo: r.lo,
        hi: r.hi,
        n: obs.len(),
    })
}

/// The curves of `run`: every (engine, setup, phase, threads) measured at
/// two versions or more; a phase that is not a result counts for nothing.
fn curves(run: &RunData) -> Vec<Curve> {
    let mut by: BTreeMap<(String, String, String, u32), Curve> = BTreeMap::new();
    for cell in &run.cells {
        let rec = &cell.record;
        for (i, p) in rec.phases.iter().enumerate() {
            if phase_verdict(rec, i).0 != Verdict::Ok {
                continue;
            }
            let key = (
                rec.engine.clone(),
                setup_group(rec),
                p.name.clone(),
                p.threads,
            );
            let c = by.entry(key).or_insert_with(|| Curve {
                engine: rec.engine.clone(),
                environment: rec.environment.clone(),
                phase: p.name.clone(),
                threads: p.threads,
                ..Curve::default()
            });
            c.versions
                .entry(rec.version.clone())
                .or_default()
                .push(Obs {
                    value: p.throughput,
                    series: p.per_second(None),
                });
        }
    }
    by.into_values().filter(|c| c.versions.len() >= 2).collect()
}

/// (engine, environment, `phase tTHREADS`, version reached) -> the changes
/// `compare --by-version` found on that step, in words.
type Marks = BTreeMap<(String, String, String, String), Vec<String>>;

fn marks(run: &RunData) -> Marks {
    let mut out = Marks::new();
    let Some((steps, cmp)) = by_version::compare_run(run, THRESHOLD, &[Metric::Throughput]) else {
        return out;
    };
    for row in &cmp.rows {
        if !matches!(row.verdict, Change::Regression | Change::Better) {
            continue;
        }
        let Some(i) = row.change else { continue };
        // The label is `engine from -> to / environment`.
        let Some(step) = steps.steps.iter().find(|s| {
            row.label
                .starts_with(&format!("{} {} -> {} /", s.engine, s.from, s.to))
        }) else {
            continue;
        };
        // `... / environment`, and ` [hardware class]` when two are compared.
        let tail = row.label.rsplit(" / ").next().unwrap_or_default();
        let env = tail.split(" [").next().unwrap_or_default().to_string();
        let word = if row.verdict == Change::Regression {
            "REGRESSION"
        } else {
            "better"
        };
        out.entry((step.engine.clone(), env, row.phase.clone(), step.to.clone()))
            .or_default()
            .push(format!(
                "{word} vs {}: {} {} [{}, {}]",
                step.from,
                row.op,
                fmt::percent(i.change),
                fmt::percent(i.lo),
                fmt::percent(i.hi)
            ));
    }
    out
}

fn line(name: &str, color: &str, dash: &str, markers: bool) -> Line {
    Line {
        style: SeriesStyle {
            name: name.into(),
            color: color.into(),
            dash: dash.into(),
        },
        points: vec![],
        markers,
        step: false,
    }
}

/// One version's point on the chart: where it is, what it measured, and
/// what `compare --by-version` said of the step to it (empty: nothing).
struct Mark<'a> {
    x: f64,
    version: &'a str,
    level: Level,
    said: String,
}

impl Mark<'_> {
    fn tip(&self, engine: &str) -> String {
        let l = &self.level;
        let said = if self.said.is_empty() {
            String::new()
        } else {
            format!(" · {}", self.said)
        };
        format!(
            "{engine}@{}: {} ops/s [{}, {}], {} repetition(s){said}",
            self.version,
            fmt::ops(l.mean),
            fmt::ops(l.lo),
            fmt::ops(l.hi),
            l.n
        )
    }

    fn row(&self) -> Vec<String> {
        let l = &self.level;
        vec![
            self.version.to_string(),
            fmt::ops(l.mean),
            format!("{} - {}", fmt::ops(l.lo), fmt::ops(l.hi)),
            l.n.to_string(),
            if self.said.is_empty() {
                fmt::DASH.into()
            } else {
                self.said.clone()
            },
        ]
    }
}

/// The curve's versions in version order, each measured one with its level
/// and the change marked on it.
fn points<'a>(c: &'a Curve, versions: &[&'a String], marks: &Marks) -> Vec<Mark<'a>> {
    versions
        .iter()
        .enumerate()
        .filter_map(|(x, v)| {
            let level = level(&c.versions[*v])?;
            let key = (
                c.engine.clone(),
                c.environment.clone(),
                format!("{} t{}", c.phase, c.threads),
                (*v).clone(),
            );
            Some(Mark {
                x: x as f64,
                version: v.as_str(),
                level,
                said: marks.get(&key).map(|m| m.join("; ")).unwrap_or_default(),
            })
        })
        .collect()
}

/// The mean, the interval's two edges (dashed) and, when any, the changed
/// versions (red markers).
fn lines(engine: &str, points: &[Mark]) -> Vec<Line> {
    let blue = "#1f77b4";
    let mut mean = line("mean", blue, "", true);
    let mut lo = line("95% interval, low", blue, "4 3", false);
    let mut hi = line("95% interval, high", blue, "4 3", false);
    let mut changed = line("changed (compare --by-version)", "#d62728", "0 1", true);
    for m in points {
        let at = |y: f64| Point {
            x: m.x,
            y,
            tip: m.tip(engine),
        };
        mean.points.push(at(m.level.mean));
        lo.points.push(at(m.level.lo));
        hi.points.push(at(m.level.hi));
        if !m.said.is_empty() {
            changed.points.push(at(m.level.mean));
        }
    }
    let mut lines = vec![mean, lo, hi];
    if !changed.points.is_empty() {
        lines.push(changed);
    }
    lines
}

fn figure(c: &Curve, marks: &Marks) -> Figure {
    let mut versions: Vec<&String> = c.versions.keys().collect();
    versions.sort_by(|a, b| natural_cmp(a, b));
    let title = format!(
        "{} over its versions: {} / {} / {} threads",
        c.engine, c.phase, c.environment, c.threads
    );
    let points = points(c, &versions, marks);
    let mut table = Table::new(
        title.clone(),
        &[
            ("Version", false),
            ("ops/s", true),
            ("95% interval", true),
            ("repetitions", true),
            ("Change from the version before", false),
        ],
    );
    table.rows = points.iter().map(Mark::row).collect();
    Figure {
        chart: Chart::Xy(XyChart {
            id: format!(
                "versions-{}",
                slug(&format!(
                    "{} {} {} {}",
                    c.engine, c.environment, c.phase, c.threads
                ))
            ),
            title,
            x: Axis::categories("version", versions.iter().map(|v| (*v).clone()).collect()),
            y: Axis::zero("throughput (ops/s)", Unit::Ops),
            lines: lines(&c.engine, &points),
            bands: vec![],
            width: WIDTH,
            height: 300.0,
        }),
        table,
    }
}

/// The section, when one run holds an engine at two versions or more on
/// one setup.
pub(super) fn section(run: &RunData) -> Option<Section> {
    let curves = curves(run);
    if curves.is_empty() {
        return None;
    }
    let marks = marks(run);
    Some(Section {
        id: "versions".into(),
        title: "Versions".into(),
        note: "Each engine's throughput over its versions in version order, per setup \
               (environment, threads, knobs) and phase: the mean of its valid repetitions \
               with the 95% interval as dashed lines (a bootstrap of the repetitions and of \
               each one's per-second series in moving blocks, as `compare` makes it), and \
               in red each version that `compare --by-version` finds better or worse than \
               the version before it by more than 5% over its whole interval."
            .into(),
        figures: curves.iter().map(|c| figure(c, &marks)).collect(),
        tables: vec![],
        empty: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(v: f64) -> Obs {
        Obs {
            value: v,
            series: (0..12)
                .map(|i| v + if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect(),
        }
    }

    #[test]
    fn versions_go_in_version_order_with_their_interval_and_the_marked_step() {
        let mut c = Curve {
            engine: "postgres".into(),
            environment: "quickstart".into(),
            phase: "reads".into(),
            threads: 4,
            ..Curve::default()
        };
        for (v, t) in [("9.6", 900.0), ("17", 1000.0), ("13", 1100.0)] {
            c.versions.insert(v.into(), vec![obs(t)]);
        }
        let mut m = Marks::new();
        m.insert(
            (
                "postgres".into(),
                "quickstart".into(),
                "reads t4".into(),
                "17".into(),
            ),
            vec!["REGRESSION vs 13: READ -9.1% [-12.0%, -6.0%]".into()],
        );
        let f = figure(&c, &m);
        let versions: Vec<&str> = f.table.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(versions, ["9.6", "13", "17"]);
        assert_eq!(
            f.table.rows[2][4],
            "REGRESSION vs 13: READ -9.1% [-12.0%, -6.0%]"
        );
        assert_eq!(f.table.rows[0][4], fmt::DASH);
        let Chart::Xy(chart) = &f.chart else {
            panic!("an x/y chart")
        };
        assert_eq!(chart.x.categories, ["9.6", "13", "17"]);
        let (mean, lo, hi) = (&chart.lines[0], &chart.lines[1], &chart.lines[2]);
        for i in 0..3 {
            assert!(lo.points[i].y <= mean.points[i].y && mean.points[i].y <= hi.points[i].y);
            assert!(
                hi.points[i].y > lo.points[i].y,
                "a series that varies has a band"
            );
        }
        let changed = &chart.lines[3];
        assert_eq!(changed.points.len(), 1);
        assert_eq!(changed.points[0].x, 2.0);
    }
}
