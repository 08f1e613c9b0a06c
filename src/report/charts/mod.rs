//! Hand-written inline SVG charts: line/scatter charts on linear, log2 or
//! log10 axes, and grouped bar charts. No scripts, no fonts, no network:
//! the SVG is text inside the HTML file.
//!
//! Every data point is a `.mark` element (a circle or a bar) with a
//! `<title>` tooltip, and every line a `polyline.series`, so a browser
//! test can count what was drawn.
//!
//! `axis` maps data to axes (arithmetic only); `svg` holds the pieces
//! every chart draws with; `xy` and `bar` draw the two kinds, `spark` the
//! sparklines of a table cell.

mod axis;
mod bar;
mod spark;
mod svg;
mod xy;

pub use spark::{SPARK_H, SPARK_W, sparkline};

use crate::report::fmt;

/// Colors per series, in order (Tableau 10: distinct and color-blind safe
/// for the first few).
pub(crate) const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Dash patterns that tell apart series of one color (same engine@version
/// in different environments or runs).
pub(crate) const DASHES: [&str; 4] = ["", "7 4", "2 3", "9 3 2 3"];

/// Default width of a chart's coordinate system; the SVG scales to its box.
pub(crate) const WIDTH: f64 = 600.0;
/// Width for a chart that has a row to itself.
pub(crate) const WIDE: f64 = 1080.0;
const CHAR_W: f64 = 6.8;

/// How one series looks: its name in the legend, color and dash.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesStyle {
    pub name: String,
    pub color: String,
    /// SVG `stroke-dasharray`; empty for a solid line.
    pub dash: String,
}

/// Axis scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    Log2,
    Log10,
}

/// What an axis measures, which decides how its ticks read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    Plain,
    Ops,
    Micros,
    Bytes,
    BytesPerSec,
    PerSec,
    Ratio,
    Seconds,
}

impl Unit {
    /// A tick label.
    pub(crate) fn tick(self, v: f64) -> String {
        match self {
            Unit::Plain if v.abs() < 10_000.0 => fmt::trim_float(v),
            Unit::Plain | Unit::Ops | Unit::PerSec => fmt::compact(v),
            Unit::Micros => fmt::micros(v),
            Unit::Bytes => fmt::bytes(v),
            Unit::BytesPerSec => fmt::bytes_per_sec(v),
            Unit::Ratio => fmt::ratio(v),
            Unit::Seconds => format!("{}s", fmt::trim_float(v)),
        }
    }
}

/// One axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Axis title, with its unit: `throughput (ops/s)`.
    pub label: String,
    pub scale: Scale,
    pub unit: Unit,
    /// Start a linear axis at zero.
    pub from_zero: bool,
    /// Categorical axis: point x values are indices into these labels.
    pub categories: Vec<String>,
}

impl Axis {
    /// A linear axis starting at zero.
    pub fn zero(label: impl Into<String>, unit: Unit) -> Self {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            unit,
            from_zero: true,
            categories: Vec::new(),
        }
    }
    /// A logarithmic axis.
    pub fn log(label: impl Into<String>, scale: Scale, unit: Unit) -> Self {
        Axis {
            label: label.into(),
            scale,
            unit,
            from_zero: false,
            categories: Vec::new(),
        }
    }
    /// A categorical axis.
    pub(crate) fn categories(label: impl Into<String>, categories: Vec<String>) -> Self {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            unit: Unit::Plain,
            from_zero: false,
            categories,
        }
    }
}

/// One data point with its tooltip.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub tip: String,
}

/// A series on an x/y chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub style: SeriesStyle,
    pub points: Vec<Point>,
    /// Draw a marker at each point (sparse data); dense time series do not.
    pub markers: bool,
    /// Hold each value until the next point (a limit that changes in steps).
    pub step: bool,
}

/// A shaded x range with a label (a phase, or a phase that is excluded).
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
    pub label: String,
    pub excluded: bool,
}

/// Lines and markers on two axes.
#[derive(Debug, Clone, PartialEq)]
pub struct XyChart {
    /// Unique within the page; also the `data-chart` attribute.
    pub id: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    pub bands: Vec<Band>,
    pub width: f64,
    pub height: f64,
}

/// One bar: a value of one series, with an optional min..max whisker.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Index into `BarChart::series`.
    pub series: usize,
    pub value: f64,
    pub range: Option<(f64, f64)>,
    pub tip: String,
}

/// Bars that stand together over one category label.
#[derive(Debug, Clone, PartialEq)]
pub struct BarGroup {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// Grouped bars on a linear axis from zero.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub id: String,
    pub title: String,
    pub y: Axis,
    pub series: Vec<SeriesStyle>,
    pub groups: Vec<BarGroup>,
    pub width: f64,
    pub height: f64,
}

/// Any chart.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Xy(XyChart),
    Bar(BarChart),
}

impl Chart {
    pub fn id(&self) -> &str {
        match self {
            Chart::Xy(c) => &c.id,
            Chart::Bar(c) => &c.id,
        }
    }
    pub fn title(&self) -> &str {
        match self {
            Chart::Xy(c) => &c.title,
            Chart::Bar(c) => &c.title,
        }
    }
    /// Give the chart a row to itself: a wider coordinate system so that
    /// its text keeps its size.
    pub(crate) fn widen(&mut self) {
        match self {
            Chart::Xy(c) => c.width = WIDE,
            Chart::Bar(c) => c.width = WIDE,
        }
    }
    /// Data points the chart holds (points of every line, or bars).
    pub fn data_points(&self) -> usize {
        match self {
            Chart::Xy(c) => c.lines.iter().map(|l| l.points.len()).sum(),
            Chart::Bar(c) => c.groups.iter().map(|g| g.bars.len()).sum(),
        }
    }
    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> String {
        match self {
            Chart::Xy(c) => xy::svg(c),
            Chart::Bar(c) => bar::svg(c),
        }
    }
}

/// Escape text for XML and HTML.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style() -> SeriesStyle {
        SeriesStyle {
            name: "redis@7.0".into(),
            color: PALETTE[0].into(),
            dash: String::new(),
        }
    }

    #[test]
    fn every_point_becomes_a_marker_with_a_tooltip() {
        let c = Chart::Xy(XyChart {
            id: "t".into(),
            title: "t".into(),
            x: Axis::log("threads", Scale::Log2, Unit::Plain),
            y: Axis::zero("ops/s", Unit::Ops),
            lines: vec![Line {
                style: style(),
                points: (0..4)
                    .map(|i| Point {
                        x: 2f64.powi(i),
                        y: 100.0 * i as f64,
                        tip: format!("p{i}"),
                    })
                    .collect(),
                markers: true,
                step: false,
            }],
            bands: vec![],
            width: WIDTH,
            height: 300.0,
        });
        let svg = c.svg();
        assert_eq!(svg.matches("class=\"mark\"").count(), 4);
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(svg.contains("<title>p3</title>"));
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn bars_carry_their_whiskers_and_values() {
        let c = Chart::Bar(BarChart {
            id: "b".into(),
            title: "b".into(),
            y: Axis::zero("ops/s", Unit::Ops),
            series: vec![style()],
            groups: vec![BarGroup {
                label: "workload-a".into(),
                bars: vec![Bar {
                    series: 0,
                    value: 1500.0,
                    range: Some((1400.0, 1600.0)),
                    tip: "x".into(),
                }],
            }],
            width: WIDTH,
            height: 300.0,
        });
        let svg = c.svg();
        assert_eq!(svg.matches("class=\"mark bar\"").count(), 1);
        assert!(svg.contains("class=\"whisker\""));
        assert!(svg.contains(">1.5k<"));
    }
}
