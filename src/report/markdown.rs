//! Markdown export: the report's tables, ready to paste into a write-up or
//! a pull request (GitHub-flavoured: pipe tables, `<details>` blocks).

use crate::report::view::{Table, View, build};
use crate::report::{Exporter, ReportError, ReportInput};
use std::fmt::Write as _;

/// The tables of the HTML report, as Markdown.
pub(crate) struct Markdown;

impl Exporter for Markdown {
    fn export(&self, input: &ReportInput) -> Result<String, ReportError> {
        Ok(render(&build(input)))
    }
}

/// Text as one table cell or heading: pipes escaped, one line, and HTML
/// markup shown as text (a version key or label is input: GitHub renders
/// raw `<img>`, `<script>` or `<details>` in Markdown).
fn cell(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// A pipe table; numeric columns right-aligned.
fn table(out: &mut String, t: &Table) {
    let head: Vec<String> = t.headers.iter().map(|h| cell(h)).collect();
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let align: Vec<&str> = t
        .numeric
        .iter()
        .map(|n| if *n { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "| {} |", align.join(" | "));
    for r in &t.rows {
        let row: Vec<String> = r.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
}

fn render(v: &View) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmark report: {}\n", cell(&v.title));
    let summary: Vec<String> = v
        .summary
        .iter()
        .map(|(k, val)| format!("**{}:** {}", cell(k), cell(val)))
        .collect();
    let _ = writeln!(out, "{}\n", summary.join(" · "));
    for t in &v.run_tables {
        let _ = writeln!(
            out,
            "<details><summary>{}: host and versions</summary>\n",
            cell(&t.title)
        );
        table(&mut out, t);
        out.push_str("</details>\n\n");
    }
    if !v.excluded.rows.is_empty() {
        out.push_str("## Not results\n\n");
        out.push_str(
            "These phases failed, were invalidated by their fidelity checks or were OOM-killed; \
             they appear in no chart or result table.\n\n",
        );
        table(&mut out, &v.excluded);
    }
    for s in &v.sections {
        let _ = writeln!(out, "## {}\n\n{}\n", s.title, s.note);
        if s.figures.is_empty() && s.tables.is_empty() {
            let _ = writeln!(out, "_{}_\n", s.empty);
        }
        for t in s.figures.iter().map(|f| &f.table).chain(&s.tables) {
            let _ = writeln!(out, "### {}\n", cell(&t.title));
            table(&mut out, t);
        }
    }
    if !v.cells.is_empty() {
        out.push_str("## Per cell\n\n");
    }
    for c in &v.cells {
        let _ = writeln!(out, "### {}\n", cell(&c.label));
        table(&mut out, &c.table);
        if let Some(errors) = &c.errors {
            let _ = writeln!(out, "**{}**\n", cell(&errors.title));
            table(&mut out, errors);
        }
        out.push_str("<details><summary>Host, limits and fidelity</summary>\n\n");
        for d in &c.details {
            let _ = writeln!(out, "**{}**\n", cell(&d.title));
            table(&mut out, d);
        }
        out.push_str("</details>\n\n");
    }
    out.push_str("## All results\n\n");
    table(&mut out, &v.all_rows);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_in_a_cell_is_shown_as_text_and_pipes_stay_in_their_cell() {
        assert_eq!(
            cell("7.0<img src=x onerror=alert(1)>|a&b\nc"),
            "7.0&lt;img src=x onerror=alert(1)&gt;\\|a&amp;b c"
        );
    }
}
