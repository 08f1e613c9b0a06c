//! The Claims section, first in the report: each claim of the write-up a
//! run decided (`claims.json`), in the write-up's words, with the
//! published ratio, the measured one and its 95% interval, the verdict and
//! the cells behind each side (linked); and a chart of published against
//! measured ratios on log axes, where a claim that holds as published
//! sits on the diagonal.

use super::{Figure, Section, Table, slug};
use crate::model::claim::{Outcome, Verdict};
use crate::report::ReportInput;
use crate::report::charts::{
    Axis, Chart, Line, PALETTE, Point, Scale, SeriesStyle, Unit, WIDTH, XyChart,
};
use crate::report::fmt::{DASH, small};
use crate::results::layout::RunData;

/// `[label](#cell-<run>-<key>)` for each cell key of a side.
fn cell_links(run: &RunData, keys: &[String]) -> String {
    let links: Vec<String> = keys
        .iter()
        .map(|k| {
            let label = run
                .cells
                .iter()
                .find(|c| &c.record.key == k)
                .map_or(k.as_str(), |c| c.record.label.as_str());
            format!(
                "[{label}](#cell-{})",
                slug(&format!("{}-{k}", run.run.run_id))
            )
        })
        .collect();
    if links.is_empty() {
        DASH.into()
    } else {
        links.join(", ")
    }
}

fn measured(o: &Outcome) -> String {
    match (o.ratio, o.lo, o.hi) {
        (Some(r), Some(lo), Some(hi)) if lo < hi => {
            format!("{} [{}, {}]", small(r), small(lo), small(hi))
        }
        (Some(r), _, _) => small(r),
        _ => DASH.into(),
    }
}

fn verdict_text(o: &Outcome) -> String {
    match (&o.verdict, &o.reason) {
        (Verdict::NotMeasured, Some(r)) => format!("not measured: {r}"),
        (v, _) => v.as_str().to_string(),
    }
}

/// The claims table of one run.
fn table(run: &RunData, several: bool) -> Table {
    let title = if several {
        format!("Claims decided by run {}", run.run.run_id)
    } else {
        "Claims decided by this run".into()
    };
    let mut t = Table::new(
        title,
        &[
            ("claim", false),
            ("metric", false),
            ("a / b", false),
            ("published a/b", true),
            ("measured a/b [95%]", true),
            ("verdict", false),
            ("cells a", false),
            ("cells b", false),
        ],
    );
    for o in run.claims.iter().flat_map(|c| &c.claims) {
        let c = &o.claim;
        let mut what = c.metric.to_string();
        if let Some(p) = &c.phase {
            what.push_str(&format!(" in {p}"));
        }
        if let Some(op) = &c.op {
            what.push_str(&format!(" ({op})"));
        }
        let mut says = format!("{} ({})", c.says, c.id);
        if let Some(s) = &c.stands_for {
            says.push_str(&format!("; here: {s}"));
        }
        t.rows.push(vec![
            says,
            what,
            format!("{} / {}; expect {}", c.a.name, c.b.name, c.expect),
            c.published.map_or(DASH.into(), small),
            measured(o),
            verdict_text(o),
            cell_links(run, &o.a_cells),
            cell_links(run, &o.b_cells),
        ]);
    }
    t
}

/// Published against measured ratios, on log axes, with the diagonal.
fn chart(outcomes: &[&Outcome]) -> Option<Chart> {
    let points: Vec<(f64, f64, &Outcome)> = outcomes
        .iter()
        .filter_map(|o| Some((o.claim.published?, o.ratio?, *o)))
        .filter(|(p, m, _)| *p > 0.0 && *m > 0.0)
        .collect();
    if points.is_empty() {
        return None;
    }
    let (lo, hi) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), (p, m, _)| {
            (lo.min(p.min(*m)), hi.max(p.max(*m)))
        });
    let style = |name: &str, i: usize, dash: &str| SeriesStyle {
        name: name.into(),
        color: PALETTE[i % PALETTE.len()].into(),
        dash: dash.into(),
    };
    let mut lines = vec![Line {
        style: style("measured = published", 9, "4 4"),
        points: [lo, hi]
            .iter()
            .map(|v| Point {
                x: *v,
                y: *v,
                tip: String::new(),
            })
            .collect(),
        markers: false,
        step: false,
    }];
    for (i, v) in [Verdict::Holds, Verdict::Reversed, Verdict::Inconclusive]
        .into_iter()
        .enumerate()
    {
        let pts: Vec<Point> = points
            .iter()
            .filter(|(_, _, o)| o.verdict == v)
            .map(|(p, m, o)| Point {
                x: *p,
                y: *m,
                tip: format!(
                    "{}: published {}, measured {} ({})",
                    o.claim.id,
                    small(*p),
                    measured(o),
                    v.as_str()
                ),
            })
            .collect();
        if !pts.is_empty() {
            lines.push(Line {
                style: style(v.as_str(), i, ""),
                points: pts,
                markers: true,
                step: false,
            });
        }
    }
    Some(Chart::Xy(XyChart {
        id: "claims-ratios".into(),
        title: "Claims: published vs measured a/b".into(),
        x: Axis::log("published a/b (log)", Scale::Log10, Unit::Ratio),
        y: Axis::log("measured a/b (log)", Scale::Log10, Unit::Ratio),
        lines,
        bands: vec![],
        width: WIDTH,
        height: 320.0,
    }))
}

/// The section, when a run decided claims.
pub(super) fn section(input: &ReportInput) -> Option<Section> {
    let runs: Vec<&RunData> = input.runs.iter().filter(|r| r.claims.is_some()).collect();
    if runs.is_empty() {
        return None;
    }
    let several = input.runs.len() > 1;
    let outcomes: Vec<&Outcome> = runs
        .iter()
        .flat_map(|r| r.claims.iter().flat_map(|c| &c.claims))
        .collect();
    let tables: Vec<Table> = runs.iter().map(|r| table(r, several)).collect();
    let mut figures = Vec::new();
    let mut rest = tables;
    if let Some(chart) = chart(&outcomes) {
        figures.push(Figure {
            chart,
            table: rest.remove(0),
        });
    }
    Some(Section {
        id: slug("claims"),
        title: "Claims".into(),
        note: "The write-up's findings, decided by this run: the ratio a/b of the metric \
               with its 95% interval (a bootstrap over repetitions and over moving blocks of \
               each phase's per-second series, no narrower than AR(1) theory allows). \
               holds: the whole interval is on the claimed side; reversed: all of it is on \
               the other side; inconclusive: it crosses; not measured: a side is missing, \
               invalid or failed. Only phases with an ok verdict count."
            .into(),
        figures,
        tables: rest,
        empty: String::new(),
    })
}
