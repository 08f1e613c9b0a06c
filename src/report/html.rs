//! HTML export: one self-contained file. Styles inline, charts inline SVG,
//! no scripts, no web fonts, nothing fetched: it opens offline and can be
//! mailed or attached to a CI run as is.

use crate::report::charts::esc;
use crate::report::fmt;
use crate::report::view::{CellView, Figure, Section, Table, View, build};
use crate::report::{Exporter, ReportError, ReportInput};
use crate::results::flat::Verdict;
use std::fmt::Write as _;

/// The full report as a single HTML page.
pub(crate) struct Html;

impl Exporter for Html {
    fn export(&self, input: &ReportInput) -> Result<String, ReportError> {
        Ok(render(&build(input)))
    }
}

/// The reports' style sheet (inline in every page; the results site
/// reuses it).
pub(crate) const CSS: &str = r#"
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--card:#fff;--accent:#0969da;--bad:#cf222e;--badbg:#ffebe9;--ok:#1a7f37;--okbg:#dafbe1;--warn:#9a6700;--warnbg:#fff8c5}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--soft);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans","DejaVu Sans",Arial,sans-serif}
.wrap{max-width:1240px;margin:0 auto;padding:0 24px}
header.top{background:#0d1117;color:#e6edf3;padding:28px 0 24px}
header.top .eyebrow{font-size:12px;letter-spacing:.08em;text-transform:uppercase;color:#8b949e}
header.top h1{margin:4px 0 6px;font-size:28px;font-weight:650;letter-spacing:-.01em}
header.top .sub{color:#9198a1;font-size:14px}
.stats{display:flex;flex-wrap:wrap;gap:12px;margin:20px 0 0;padding:0}
.stats div{background:#161b22;border:1px solid #30363d;border-radius:8px;padding:10px 16px;min-width:120px}
.stats dt{font-size:12px;color:#8b949e;margin:0}
.stats dd{margin:2px 0 0;font-size:18px;font-weight:600;color:#f0f6fc}
.stats div.bad dd{color:#ff7b72}
header.top details{margin-top:16px;color:#c9d1d9;font-size:13px}
header.top details summary{cursor:pointer;color:#8b949e}
header.top table{background:transparent;color:#c9d1d9}
header.top td,header.top th{border-color:#30363d}
nav.toc{display:flex;flex-wrap:wrap;gap:6px 18px;padding:14px 24px;font-size:14px;border-bottom:1px solid var(--line);background:#fff;position:sticky;top:0;z-index:2}
nav.toc a{color:var(--muted);text-decoration:none}
nav.toc a:hover{color:var(--accent)}
main{padding-bottom:48px}
section{margin-top:36px}
h2{font-size:21px;margin:0 0 4px;font-weight:650}
h3{font-size:15px;margin:0 0 8px;font-weight:600}
p.note{margin:0 0 16px;color:var(--muted);font-size:14px;max-width:860px}
p.empty{color:var(--muted);font-style:italic}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(540px,1fr));gap:20px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px;min-width:0}
figure{margin:0}
svg.chart{display:block;width:100%;height:auto;font-family:inherit}
svg.chart text{font-size:12px}
svg.chart .tick{fill:#59636e;font-size:11px}
svg.chart .axis-label{fill:#393f46;font-size:12px;font-weight:600}
svg.chart .grid{stroke:#eef1f4}
svg.chart .xtick,svg.chart .axis{stroke:#9ba5b0}
svg.chart .series{fill:none;stroke-width:2.2;stroke-linejoin:round;stroke-linecap:round}
svg.chart .mark{stroke:#fff;stroke-width:1.5}
svg.chart .bar{stroke:none}
svg.chart .whisker{stroke:#24292f;stroke-width:1.3;fill:none}
svg.chart .bar-label{font-size:10.5px;fill:#393f46}
svg.chart .lg{fill:#24292f;font-size:12px}
svg.chart .band.even{fill:#f6f8fa}
svg.chart .band.odd{fill:#eef2f6}
svg.chart .band.excluded{fill:#ffebe9}
svg.chart .band-label{font-size:10.5px;fill:#6e7781}
svg.chart .band-label.excluded{fill:#cf222e;font-weight:600}
.tablewrap{overflow-x:auto;margin-top:12px}
table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums;background:#fff}
th,td{padding:4px 8px;border-bottom:1px solid #eaeef2;text-align:left;white-space:nowrap}
th{font-weight:600;color:var(--muted);background:var(--soft);border-bottom:1px solid var(--line)}
td.num,th.num{text-align:right}
tr:hover td{background:#f6f8fa}
caption{caption-side:top;text-align:left;font-weight:600;font-size:13px;padding:0 0 6px;color:var(--fg)}
.callout{background:var(--badbg);border:1px solid #ffcecb;border-radius:10px;padding:14px 18px}
.callout h2{color:var(--bad);font-size:17px}
.callout p{margin:2px 0 10px;font-size:14px}
.callout table td{white-space:normal}
.badge{display:inline-block;font-size:11.5px;font-weight:600;border-radius:999px;padding:1px 8px;margin:0 4px 4px 0;border:1px solid transparent}
.badge.ok{background:var(--okbg);color:var(--ok)}
.badge.failed,.badge.oom{background:var(--badbg);color:var(--bad);border-color:#ffcecb}
.badge.invalid{background:var(--warnbg);color:var(--warn);border-color:#f5e0a0}
.cells{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:20px}
.cell h3{display:flex;align-items:center;gap:8px;flex-wrap:wrap}
.cell .swatch{width:12px;height:12px;border-radius:3px;display:inline-block}
.cell .key{font:12px ui-monospace,SFMono-Regular,"DejaVu Sans Mono",monospace;color:var(--muted)}
.cell .charts{display:grid;gap:6px}
.figs table,.cell table,.solo table{font-size:12px}
.solo{margin-top:20px}
.figs th,.figs td{padding:3px 6px}
.cell th,.cell td{padding:3px 6px}
details.more{margin-top:10px;font-size:13px}
details.more summary{cursor:pointer;color:var(--accent);font-weight:600}
details.more .kv{display:grid;grid-template-columns:repeat(auto-fit,minmax(240px,1fr));gap:12px;margin-top:10px}
details.more td{white-space:normal;word-break:break-word}
td.bad{color:var(--bad);font-weight:600}
footer{color:var(--muted);font-size:12px;padding:24px 0 40px}
@media print{nav.toc{position:static}.card{break-inside:avoid}}
"#;

/// A table cell: escaped text, or links when it is a list of Markdown
/// links to anchors of the page (`[label](#anchor), ...`).
fn td_html(c: &str) -> String {
    let links: Option<Vec<String>> = c
        .split(", ")
        .map(|part| {
            let (label, anchor) = part
                .strip_prefix('[')?
                .strip_suffix(')')?
                .split_once("](#")?;
            Some(format!("<a href=\"#{}\">{}</a>", esc(anchor), esc(label)))
        })
        .collect();
    match links {
        Some(l) if !c.is_empty() => l.join(", "),
        _ => esc(c),
    }
}

fn table_html(out: &mut String, t: &Table, caption: bool) {
    out.push_str("<div class=\"tablewrap\"><table>");
    if caption && !t.title.is_empty() {
        let _ = write!(out, "<caption>{}</caption>", esc(&t.title));
    }
    if t.headers.iter().any(|h| !h.is_empty()) {
        out.push_str("<thead><tr>");
        for (h, num) in t.headers.iter().zip(&t.numeric) {
            let _ = write!(
                out,
                "<th{}>{}</th>",
                if *num { " class=\"num\"" } else { "" },
                esc(h)
            );
        }
        out.push_str("</tr></thead>");
    }
    out.push_str("<tbody>");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let num = t.numeric.get(i).copied().unwrap_or(false);
            let bad = matches!(c.as_str(), "FAILED" | "OOM" | "INVALID" | "UNFINISHED")
                || c.starts_with("INVALID:");
            let class = match (num, bad) {
                (true, _) => " class=\"num\"",
                (false, true) => " class=\"bad\"",
                _ => "",
            };
            let _ = write!(out, "<td{class}>{}</td>", td_html(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
}

fn figure_html(out: &mut String, f: &Figure) {
    let _ = write!(
        out,
        "<figure class=\"card\" id=\"fig-{}\"><h3>{}</h3>{}",
        esc(f.chart.id()),
        esc(f.chart.title()),
        f.chart.svg()
    );
    table_html(out, &f.table, false);
    out.push_str("</figure>");
}

fn badge(v: Verdict, name: &str, reason: &str) -> String {
    let text = if v == Verdict::Ok {
        name.to_string()
    } else {
        format!("{name}: {}", v.as_str().to_uppercase())
    };
    format!(
        "<span class=\"badge {}\" title=\"{}\">{}</span>",
        v.as_str(),
        esc(reason),
        esc(&text)
    )
}

fn cell_html(out: &mut String, c: &CellView, multi_run: bool) {
    let _ = write!(
        out,
        "<article class=\"card cell\" id=\"{}\"><h3><span class=\"swatch\" style=\"background:{}\"></span>{}</h3><div>",
        esc(&c.anchor),
        esc(&c.series.color),
        esc(&c.label)
    );
    for (name, v, reason) in &c.phases {
        out.push_str(&badge(*v, name, reason));
    }
    out.push_str("</div><div class=\"charts\">");
    for ch in &c.charts {
        out.push_str(&ch.svg());
    }
    out.push_str("</div>");
    table_html(out, &c.table, false);
    if let Some(errors) = &c.errors {
        table_html(out, errors, true);
    }
    let _ = write!(
        out,
        "<details class=\"more\"><summary>Host, limits and fidelity</summary><div class=\"key\">cell {}{}</div><div class=\"kv\">",
        esc(&c.key),
        if multi_run {
            format!(" · run {}", esc(&c.run_id))
        } else {
            String::new()
        }
    );
    for t in &c.details {
        table_html(out, t, true);
    }
    out.push_str("</div></details></article>");
}

fn render(v: &View) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>benchcage · {}</title><style>{}</style></head><body>",
        esc(&v.title),
        CSS
    );
    header_html(&mut out, v);
    toc_html(&mut out, v);
    out.push_str("<main class=\"wrap\">");
    if !v.excluded.rows.is_empty() {
        excluded_html(&mut out, &v.excluded);
    }
    for s in &v.sections {
        section_html(&mut out, s);
    }
    out.push_str("<section id=\"cells\"><h2>Per cell</h2><p class=\"note\">Throughput per second, the server's memory against its cap, and disk reads, on the cell's clock; shaded bands are phases (red: not a result). Host, limits and the fidelity record are one click away.</p><div class=\"cells\">");
    let multi_run = v.runs.len() > 1;
    for c in &v.cells {
        cell_html(&mut out, c, multi_run);
    }
    out.push_str("</div></section><section id=\"all\"><h2>All results</h2><p class=\"note\">One row per cell, phase and operation kind; latency measured from the actual send.</p><div class=\"card\">");
    table_html(&mut out, &v.all_rows, false);
    let _ = writeln!(
        out,
        "</div></section></main><footer class=\"wrap\">Generated by benchcage {}. Self-contained: no scripts, fonts or network.</footer></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// The dark header: title, one line per run, the key facts and the runs'
/// tables one click away.
fn header_html(out: &mut String, v: &View) {
    let sub = v
        .runs
        .iter()
        .map(|r| {
            format!(
                "{} · started {} · {} · {} ({} cores)",
                r.run_id,
                fmt::timestamp(&r.started_at),
                r.status,
                r.host.hostname,
                r.host.cores
            )
        })
        .collect::<Vec<_>>()
        .join("<br>");
    let _ = write!(
        out,
        "<header class=\"top\"><div class=\"wrap\"><div class=\"eyebrow\">benchcage report</div><h1>{}</h1><div class=\"sub\">{}</div><dl class=\"stats\">",
        esc(&v.title),
        sub
    );
    for (k, val) in &v.summary {
        let bad = k == "Not results" && val != "0";
        let _ = write!(
            out,
            "<div{}><dt>{}</dt><dd>{}</dd></div>",
            if bad { " class=\"bad\"" } else { "" },
            esc(k),
            esc(val)
        );
    }
    out.push_str("</dl><details><summary>Runs, hosts and versions</summary>");
    for t in &v.run_tables {
        table_html(out, t, true);
    }
    out.push_str("</details></div></header>");
}

/// Links to every part of the report.
fn toc_html(out: &mut String, v: &View) {
    out.push_str("<nav class=\"toc\">");
    if !v.excluded.rows.is_empty() {
        out.push_str("<a href=\"#excluded\">Not results</a>");
    }
    for s in &v.sections {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", esc(&s.id), esc(&s.title));
    }
    out.push_str("<a href=\"#cells\">Per cell</a><a href=\"#all\">All results</a></nav>");
}

/// What is not a result, called out in red.
fn excluded_html(out: &mut String, excluded: &Table) {
    let n = excluded.rows.len();
    let _ = write!(
        out,
        "<section id=\"excluded\" class=\"callout\"><h2>{} phase{} not counted as results</h2><p>Failed, invalidated by a fidelity check, OOM-killed or unfinished: left out of every chart and result table.</p>",
        n,
        if n == 1 { " is" } else { "s are" }
    );
    table_html(out, excluded, false);
    out.push_str("</section>");
}

/// A section: its note, figures in a grid, then its other tables.
fn section_html(out: &mut String, s: &Section) {
    let _ = write!(
        out,
        "<section id=\"{}\"><h2>{}</h2><p class=\"note\">{}</p>",
        esc(&s.id),
        esc(&s.title),
        esc(&s.note)
    );
    if s.figures.is_empty() && s.tables.is_empty() {
        let _ = write!(out, "<p class=\"empty\">{}</p>", esc(&s.empty));
    }
    if !s.figures.is_empty() {
        out.push_str("<div class=\"figs\">");
        for f in &s.figures {
            figure_html(out, f);
        }
        out.push_str("</div>");
    }
    for t in &s.tables {
        out.push_str("<div class=\"card solo\">");
        table_html(out, t, true);
        out.push_str("</div>");
    }
    out.push_str("</section>");
}
