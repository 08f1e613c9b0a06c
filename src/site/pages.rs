//! The site's pages as HTML text, from the history already read: pure
//! functions, no file access. Every page carries the reports' style sheet
//! inline and a Content-Security-Policy that forbids any fetch.

use crate::changes::{Change, Metric, Series, SeriesKey};
use crate::report::charts::{
    self, Axis, Chart, DASHES, Line, PALETTE, Point, SeriesStyle, Unit, XyChart, esc,
};
use crate::report::{fmt, html::CSS};
use crate::results::history::RunSummary;
use crate::results::layout::file_safe;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The policy in every page: nothing is fetched, styles are inline, an
/// image may only be a `data:` URL.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const SITE_CSS: &str = "svg.spark{display:block}svg.spark .series{fill:none;stroke:#0969da;stroke-width:1.4;stroke-linejoin:round}svg.spark .mark.last{fill:#0969da}svg.spark .mark.change{fill:#cf222e}tr.alarm td{background:var(--badbg)}td.wrap{white-space:normal}a{color:var(--accent)}header.top a{color:#e6edf3}";

/// What the pages show.
pub struct Data<'a> {
    /// Oldest first.
    pub runs: &'a [RunSummary],
    /// Per run: the relative link to its report, when it has one.
    pub reports: Vec<Option<String>>,
    pub series: &'a [Series],
    pub changes: &'a [Change],
}

impl Data<'_> {
    fn run_index(&self) -> BTreeMap<&str, usize> {
        self.runs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.run_id.as_str(), i))
            .collect()
    }

    /// The run id linked to its report, or plain when it has none.
    fn run_link(&self, index: &BTreeMap<&str, usize>, run_id: &str) -> String {
        match index.get(run_id).and_then(|i| self.reports[*i].as_ref()) {
            Some(h) => format!("<a href=\"{}\">{}</a>", esc(h), esc(run_id)),
            None => esc(run_id),
        }
    }

    fn engines(&self) -> BTreeSet<&str> {
        self.series.iter().map(|s| s.key.engine.as_str()).collect()
    }
}

/// Every page: (file name, HTML).
pub fn render(d: &Data) -> Vec<(String, String)> {
    let mut out = vec![("index.html".to_string(), index(d))];
    for engine in d.engines() {
        out.push((engine_file(engine), engine_page(d, engine)));
    }
    out
}

/// The file of an engine's page.
pub(crate) fn engine_file(engine: &str) -> String {
    format!("engine-{}.html", file_safe(engine))
}

fn head(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"{}\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>benchcage · {}</title><style>{CSS}{SITE_CSS}</style></head><body>",
        esc(CSP),
        esc(title)
    );
}

fn header(out: &mut String, eyebrow: &str, title: &str, sub: &str, stats: &[(&str, String)]) {
    let _ = write!(
        out,
        "<header class=\"top\"><div class=\"wrap\"><div class=\"eyebrow\">{}</div><h1>{}</h1><div class=\"sub\">{sub}</div><dl class=\"stats\">",
        esc(eyebrow),
        esc(title)
    );
    for (k, v) in stats {
        let _ = write!(out, "<div><dt>{}</dt><dd>{}</dd></div>", esc(k), esc(v));
    }
    out.push_str("</dl></div></header>");
}

fn nav(out: &mut String, d: &Data, here: Option<&str>) {
    out.push_str("<nav class=\"toc\"><a href=\"index.html\">All series</a><a href=\"index.html#runs\">Runs</a>");
    for e in d.engines() {
        let _ = write!(
            out,
            "<a href=\"{}\"{}>{}</a>",
            esc(&engine_file(e)),
            if here == Some(e) {
                " aria-current=\"page\""
            } else {
                ""
            },
            esc(e)
        );
    }
    out.push_str("</nav>");
}

fn span(d: &Data) -> String {
    match (d.runs.first(), d.runs.last()) {
        (Some(a), Some(b)) => format!(
            "{} runs from {} to {}",
            d.runs.len(),
            day(&a.started_at),
            day(&b.started_at)
        ),
        _ => "no runs".into(),
    }
}

fn day(at: &str) -> &str {
    at.get(..10).unwrap_or(at)
}

fn value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Throughput => format!("{} ops/s", fmt::compact(v)),
        Metric::LatencyP99 => fmt::micros(v),
    }
}

/// The newest change point of each series.
fn latest_changes<'a>(d: &'a Data) -> BTreeMap<&'a SeriesKey, &'a Change> {
    let mut m: BTreeMap<&SeriesKey, &Change> = BTreeMap::new();
    for c in d.changes {
        let e = m.entry(&c.series).or_insert(c);
        if (c.started_at.as_str(), c.run_id.as_str()) > (e.started_at.as_str(), e.run_id.as_str()) {
            *e = c;
        }
    }
    m
}

fn verdict(c: &Change) -> &'static str {
    match (c.regression, c.is_alarm(), c.acknowledged) {
        (true, true, _) => "REGRESSION",
        (true, false, true) => "regression (acknowledged)",
        (true, false, false) => "regression (older)",
        (false, ..) => "improvement",
    }
}

fn change_text(c: &Change) -> String {
    format!(
        "{:+.1}% [{:+.1}, {:+.1}]",
        c.change * 100.0,
        c.interval.0 * 100.0,
        c.interval.1 * 100.0
    )
}

fn index(d: &Data) -> String {
    let mut out = String::with_capacity(64 * 1024 + d.series.len() * 4096);
    head(&mut out, "results");
    let alarms = d.changes.iter().filter(|c| c.is_alarm()).count();
    header(
        &mut out,
        "benchcage results site",
        "Results over time",
        &esc(&span(d)),
        &[
            ("runs", d.runs.len().to_string()),
            ("series", d.series.len().to_string()),
            ("change points", d.changes.len().to_string()),
            ("unacknowledged regressions", alarms.to_string()),
        ],
    );
    nav(&mut out, d, None);
    out.push_str("<main class=\"wrap\">");
    series_table(&mut out, d);
    runs_table(&mut out, d, None);
    out.push_str("</main></body></html>\n");
    out
}

fn series_table(out: &mut String, d: &Data) {
    let index = d.run_index();
    let latest = latest_changes(d);
    let _ = write!(
        out,
        "<section id=\"series\"><h2>Series</h2><p class=\"note\">Every series in the history: one value a run (the mean of its repetitions; only phases that are results), oldest on the left. A red dot marks the series' latest change point (E-Divisive means, as <code>benchcage changes</code> finds them), a blue one the newest run. A regression is an alarm when it is among the last {} runs of its series and nobody acknowledged it.</p><div class=\"card tablewrap\"><table><thead><tr><th>series</th><th class=\"num\">runs</th><th>over time</th><th class=\"num\">newest</th><th>latest change point</th><th>change (95% CI)</th><th>verdict</th></tr></thead><tbody>",
        super::WINDOW
    );
    for (i, s) in d.series.iter().enumerate() {
        let change = latest.get(&s.key).copied();
        let mark = change.and_then(|c| s.points.iter().position(|p| p.run_id == c.run_id));
        let pts = spark_points(s, &index);
        let last = s.points.last().map(|p| p.value).unwrap_or(f64::NAN);
        let _ = write!(
            out,
            "<tr{}><td><a href=\"{}\">{}</a></td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td>",
            if change.is_some_and(Change::is_alarm) {
                " class=\"alarm\""
            } else {
                ""
            },
            esc(&engine_file(&s.key.engine)),
            esc(&s.key.label()),
            s.points.len(),
            charts::sparkline(&format!("spark-{i}"), &s.key.label(), &pts, mark),
            esc(&value(s.key.metric, last)),
        );
        match change {
            Some(c) => {
                let _ = write!(
                    out,
                    "<td>{} · {}</td><td>{}</td><td>{}</td></tr>",
                    esc(day(&c.started_at)),
                    d.run_link(&index, &c.run_id),
                    esc(&change_text(c)),
                    verdict(c)
                );
            }
            None => out.push_str("<td>none</td><td></td><td></td></tr>"),
        }
    }
    out.push_str("</tbody></table></div></section>");
}

fn spark_points(s: &Series, index: &BTreeMap<&str, usize>) -> Vec<Point> {
    s.points
        .iter()
        .map(|p| Point {
            x: index.get(p.run_id.as_str()).copied().unwrap_or(0) as f64,
            y: p.value,
            tip: format!(
                "{} · {} · {}",
                day(&p.started_at),
                p.run_id,
                value(s.key.metric, p.value)
            ),
        })
        .collect()
}

/// The runs, newest first; only those with `engine` when given.
fn runs_table(out: &mut String, d: &Data, engine: Option<&str>) {
    let prefix = engine.map(|e| format!("{e}@"));
    out.push_str("<section id=\"runs\"><h2>Runs</h2><p class=\"note\">Newest first. A run id links to that run's own report (<code>report.html</code> in its run folder) when it has one; <code>benchcage report RUN</code> writes it.</p><div class=\"card tablewrap\"><table><thead><tr><th>started</th><th>run</th><th>scenario</th><th>status</th><th class=\"num\">cells</th><th class=\"num\">results</th><th class=\"num\">excluded</th><th>engines</th></tr></thead><tbody>");
    for (i, r) in d.runs.iter().enumerate().rev() {
        if let Some(p) = &prefix
            && !r.engines.iter().any(|e| e.starts_with(p.as_str()))
        {
            continue;
        }
        let link = match &d.reports[i] {
            Some(h) => format!("<a href=\"{}\">{}</a>", esc(h), esc(&r.run_id)),
            None => format!("{} <small>(no report)</small>", esc(&r.run_id)),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{link}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"wrap\">{}</td></tr>",
            esc(&fmt::timestamp(&r.started_at)),
            esc(&r.scenario),
            esc(&r.status.to_string()),
            r.cells,
            r.phases_ok,
            r.phases_excluded,
            esc(&r.engines.join(", "))
        );
    }
    out.push_str("</tbody></table></div></section>");
}

/// What one chart of an engine page shows: a phase, its threads, an
/// operation and a metric; its lines are the versions x environments.
type ChartKey<'a> = (&'a str, u32, &'a str, Metric);

fn engine_page(d: &Data, engine: &str) -> String {
    let index = d.run_index();
    let series: Vec<&Series> = d.series.iter().filter(|s| s.key.engine == engine).collect();
    let versions: Vec<&str> = {
        let mut v: Vec<&str> = series.iter().map(|s| s.key.version.as_str()).collect();
        v.sort_by(|a, b| crate::results::order::natural_cmp(a, b));
        v.dedup();
        v
    };
    let envs: Vec<&str> = series
        .iter()
        .map(|s| s.key.environment.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let changes: Vec<&Change> = d
        .changes
        .iter()
        .filter(|c| c.series.engine == engine)
        .collect();
    let runs_with: BTreeSet<&str> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.run_id.as_str()))
        .collect();

    let mut out = String::with_capacity(256 * 1024);
    head(&mut out, engine);
    header(
        &mut out,
        "benchcage results site · engine",
        engine,
        &format!(
            "versions {} · environments {}",
            esc(&versions.join(", ")),
            esc(&envs.join(", "))
        ),
        &[
            ("runs", runs_with.len().to_string()),
            ("series", series.len().to_string()),
            ("change points", changes.len().to_string()),
            (
                "unacknowledged regressions",
                changes.iter().filter(|c| c.is_alarm()).count().to_string(),
            ),
        ],
    );
    nav(&mut out, d, Some(engine));
    out.push_str("<main class=\"wrap\">");

    // Versions x environments: when each was measured.
    out.push_str("<section id=\"versions\"><h2>Versions and environments</h2><p class=\"note\">Each version in each environment (and hardware class): its first and newest run in the history, and its change points over all its series.</p><div class=\"card tablewrap\"><table><thead><tr><th>version</th><th>environment</th><th>hardware class</th><th>first run</th><th>newest run</th><th class=\"num\">runs</th><th class=\"num\">change points</th></tr></thead><tbody>");
    for v in &versions {
        let mut by_env: BTreeMap<(&str, &str), BTreeSet<(&str, &str)>> = BTreeMap::new();
        for s in series.iter().filter(|s| s.key.version == *v) {
            by_env
                .entry((&s.key.environment, &s.key.hardware_class))
                .or_default()
                .extend(
                    s.points
                        .iter()
                        .map(|p| (p.started_at.as_str(), p.run_id.as_str())),
                );
        }
        for ((env, hw), runs) in by_env {
            let (first, last) = (runs.first().unwrap(), runs.last().unwrap());
            let n_changes = changes
                .iter()
                .filter(|c| {
                    c.series.version == *v
                        && c.series.environment == env
                        && c.series.hardware_class == hw
                })
                .count();
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} · {}</td><td>{} · {}</td><td class=\"num\">{}</td><td class=\"num\">{n_changes}</td></tr>",
                esc(v),
                esc(env),
                esc(hw),
                esc(day(first.0)),
                d.run_link(&index, first.1),
                esc(day(last.0)),
                d.run_link(&index, last.1),
                runs.len()
            );
        }
    }
    out.push_str("</tbody></table></div></section>");

    // One chart per phase x threads x operation x metric.
    let mut charts_of: BTreeMap<ChartKey, Vec<&Series>> = BTreeMap::new();
    for s in &series {
        charts_of
            .entry((&s.key.phase, s.key.threads, &s.key.op, s.key.metric))
            .or_default()
            .push(s);
    }
    let first_day = d.runs.first().map(|r| day(&r.started_at)).unwrap_or("");
    let _ = write!(
        out,
        "<section id=\"over-time\"><h2>Over time</h2><p class=\"note\">Each version (color) in each environment (dash) over the runs of the history, oldest first (run 0 started {}). Hover a line for its runs.</p><div class=\"figs\">",
        esc(first_day)
    );
    for (n, ((phase, threads, op, metric), lines)) in charts_of.into_iter().enumerate() {
        let title = format!("{phase} t{threads} {op} {}", metric.name());
        let chart = Chart::Xy(XyChart {
            id: format!("over-time-{n}"),
            title: title.clone(),
            x: Axis::zero("run (oldest first)", Unit::Plain),
            y: match metric {
                Metric::Throughput => Axis::zero("throughput (ops/s)", Unit::Ops),
                Metric::LatencyP99 => Axis::zero("p99 latency", Unit::Micros),
            },
            lines: lines
                .iter()
                .map(|s| {
                    let vi = versions
                        .iter()
                        .position(|v| *v == s.key.version)
                        .unwrap_or(0);
                    let ei = envs
                        .iter()
                        .position(|e| *e == s.key.environment)
                        .unwrap_or(0);
                    let pts = spark_points(s, &index);
                    Line {
                        style: SeriesStyle {
                            name: format!(
                                "{}@{} {}",
                                s.key.engine, s.key.version, s.key.environment
                            ),
                            color: PALETTE[vi % PALETTE.len()].into(),
                            dash: DASHES[ei % DASHES.len()].into(),
                        },
                        markers: pts.len() <= 40,
                        step: false,
                        points: pts,
                    }
                })
                .collect(),
            bands: Vec::new(),
            width: charts::WIDTH,
            height: 300.0,
        });
        let _ = write!(
            out,
            "<figure class=\"card\"><h3>{}</h3>{}</figure>",
            esc(&title),
            chart.svg()
        );
    }
    out.push_str("</div></section>");

    // Change points, newest first.
    out.push_str("<section id=\"changes\"><h2>Change points</h2>");
    if changes.is_empty() {
        out.push_str("<p class=\"empty\">No change point in any series of this engine.</p>");
    } else {
        out.push_str("<div class=\"card tablewrap\"><table><thead><tr><th>id</th><th>started</th><th>run</th><th>series</th><th class=\"num\">before → after</th><th>change (95% CI)</th><th class=\"num\">p</th><th>verdict</th></tr></thead><tbody>");
        for c in changes.iter().rev() {
            let _ = write!(
                out,
                "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{} → {}</td><td>{}</td><td class=\"num\">{:.3}</td><td>{}</td></tr>",
                if c.is_alarm() { " class=\"alarm\"" } else { "" },
                esc(&c.id),
                esc(day(&c.started_at)),
                d.run_link(&index, &c.run_id),
                esc(&c.series.label()),
                esc(&value(c.series.metric, c.before)),
                esc(&value(c.series.metric, c.after)),
                esc(&change_text(c)),
                c.p_value,
                verdict(c)
            );
        }
        out.push_str("</tbody></table></div>");
    }
    out.push_str("</section>");
    runs_table(&mut out, d, Some(engine));
    out.push_str("</main></body></html>\n");
    out
}
