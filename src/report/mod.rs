//! HTML, Markdown, CSV and JSON reports.
