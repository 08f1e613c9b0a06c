//! Hand-written inline SVG charts: line/scatter charts on linear, log2 or
//! log10 axes, and grouped bar charts. No scripts, no fonts, no network:
//! the SVG is text inside the HTML file.
//!
//! Every data point is a `.mark` element (a circle or a bar) with a
//! `<title>` tooltip, and every line a `polyline.series`, so a browser
//! test can count what was drawn.

use crate::report::fmt;
use std::fmt::Write as _;

/// Colors per series, in order (Tableau 10: distinct and color-blind safe
/// for the first few).
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Dash patterns that tell apart series of one color (same engine@version
/// in different environments or runs).
pub const DASHES: [&str; 4] = ["", "7 4", "2 3", "9 3 2 3"];

/// Default width of a chart's coordinate system; the SVG scales to its box.
pub const WIDTH: f64 = 600.0;
/// Width for a chart that has a row to itself.
pub const WIDE: f64 = 1080.0;
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
    pub fn tick(self, v: f64) -> String {
        match self {
            Unit::Plain if v.abs() < 10_000.0 => fmt::trim_float(v),
            Unit::Plain | Unit::Ops | Unit::PerSec => fmt::compact(v),
            Unit::Micros => fmt::micros(v),
            Unit::Bytes => fmt::bytes(v),
            Unit::BytesPerSec => format!("{}/s", fmt::bytes(v)),
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
    pub fn categories(label: impl Into<String>, categories: Vec<String>) -> Self {
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
    pub fn widen(&mut self) {
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
            Chart::Xy(c) => xy_svg(c),
            Chart::Bar(c) => bar_svg(c),
        }
    }
}

/// Escape text for XML and HTML.
pub fn esc(s: &str) -> String {
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

/// A number for an SVG attribute: two decimals, no `-0`.
fn n(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    if s == "-0" { "0".into() } else { s }
}

/// A mapping from data values to [0, 1] along an axis, with its ticks.
struct Mapped {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl Mapped {
    fn frac(&self, v: f64) -> f64 {
        let (a, b, x) = match self.scale {
            Scale::Linear => (self.lo, self.hi, v),
            Scale::Log2 => (self.lo.log2(), self.hi.log2(), v.log2()),
            Scale::Log10 => (self.lo.log10(), self.hi.log10(), v.log10()),
        };
        if (b - a).abs() < f64::EPSILON {
            0.5
        } else {
            (x - a) / (b - a)
        }
    }
    fn usable(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }
}

fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn map_axis(axis: &Axis, values: &[f64]) -> Mapped {
    if !axis.categories.is_empty() {
        let ticks = axis
            .categories
            .iter()
            .enumerate()
            .map(|(i, c)| (i as f64, c.clone()))
            .collect();
        return Mapped {
            scale: Scale::Linear,
            lo: -0.5,
            hi: axis.categories.len() as f64 - 0.5,
            ticks,
        };
    }
    let usable: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (axis.scale == Scale::Linear || *v > 0.0))
        .collect();
    let mut min = usable.iter().copied().fold(f64::INFINITY, f64::min);
    let mut max = usable.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if usable.is_empty() {
        min = 1.0;
        max = 10.0;
    }
    match axis.scale {
        Scale::Linear => {
            if axis.from_zero {
                min = min.min(0.0);
                max = max.max(0.0);
            }
            if (max - min).abs() < 1e-12 {
                let pad = if max.abs() > 0.0 {
                    max.abs() * 0.1
                } else {
                    1.0
                };
                if !axis.from_zero || min != 0.0 {
                    min -= pad;
                }
                max += pad;
            }
            // Bytes tick in round numbers of their own unit (100 MiB, not 95.4 MiB).
            let unit = match axis.unit {
                Unit::Bytes | Unit::BytesPerSec => {
                    let top = max.abs().max(min.abs()).max(1.0);
                    1024f64.powi((top.log2() / 10.0).floor().max(0.0) as i32)
                }
                _ => 1.0,
            };
            let step = nice_step((max - min) / 5.0 / unit) * unit;
            let lo = (min / step).floor() * step;
            let hi = (max / step).ceil() * step;
            let mut ticks = Vec::new();
            let mut t = lo;
            while t <= hi + step * 0.5 {
                let v = if t.abs() < step * 1e-9 { 0.0 } else { t };
                ticks.push((v, axis.unit.tick(v)));
                t += step;
            }
            Mapped {
                scale: Scale::Linear,
                lo,
                hi,
                ticks,
            }
        }
        Scale::Log2 | Scale::Log10 => {
            let base: f64 = if axis.scale == Scale::Log2 { 2.0 } else { 10.0 };
            let lg = |v: f64| v.ln() / base.ln();
            let mut a = lg(min).floor() as i32;
            let mut b = lg(max).ceil() as i32;
            if a == b {
                a -= 1;
                b += 1;
            }
            let span = (b - a) as usize;
            let every = span.div_ceil(10).max(1);
            let mut ticks = Vec::new();
            for k in a..=b {
                if ((k - a) as usize).is_multiple_of(every) {
                    let v = base.powi(k);
                    ticks.push((v, axis.unit.tick(v)));
                }
            }
            if axis.scale == Scale::Log10 && span <= 2 {
                for k in a..b {
                    for m in [2.0, 5.0] {
                        let v = m * base.powi(k);
                        ticks.push((v, axis.unit.tick(v)));
                    }
                }
                ticks.sort_by(|x, y| x.0.total_cmp(&y.0));
            }
            Mapped {
                scale: axis.scale,
                lo: base.powi(a),
                hi: base.powi(b),
                ticks,
            }
        }
    }
}

/// Lay out legend items left to right, wrapping; returns the SVG and its height.
fn legend(styles: &[SeriesStyle], left: f64, top: f64, width: f64, line: bool) -> (String, f64) {
    if styles.is_empty() {
        return (String::new(), 0.0);
    }
    let mut out = String::from("<g class=\"legend\">");
    let (mut x, mut y) = (left, top);
    for s in styles {
        let w = 28.0 + s.name.chars().count() as f64 * CHAR_W + 14.0;
        if x > left && x + w > left + width {
            x = left;
            y += 18.0;
        }
        if line {
            let _ = write!(
                out,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\" stroke-dasharray=\"{}\"/>",
                n(x),
                n(y + 6.0),
                n(x + 22.0),
                n(y + 6.0),
                s.color,
                s.dash
            );
        } else {
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" rx=\"2\" fill=\"{}\"{}/>",
                n(x + 4.0),
                n(y),
                s.color,
                variant_fill(s)
            );
        }
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" class=\"lg\">{}</text>",
            n(x + 28.0),
            n(y + 10.0),
            esc(&s.name)
        );
        x += w;
    }
    out.push_str("</g>");
    (out, y - top + 18.0)
}

fn svg_open(id: &str, title: &str, width: f64, height: f64, points: usize) -> String {
    format!(
        "<svg class=\"chart\" data-chart=\"{}\" data-points=\"{points}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(id),
        n(width),
        n(height),
        esc(title)
    )
}

/// Left margin wide enough for the longest y tick label.
fn left_margin(ticks: &[(f64, String)]) -> f64 {
    let longest = ticks
        .iter()
        .map(|(_, l)| l.chars().count())
        .max()
        .unwrap_or(3);
    (longest as f64 * CHAR_W + 28.0).max(92.0)
}

fn y_axis(out: &mut String, m: &Mapped, label: &str, plot: (f64, f64, f64, f64)) {
    let (left, top, right, bottom) = plot;
    for (v, l) in &m.ticks {
        let y = bottom - m.frac(*v) * (bottom - top);
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            n(left),
            n(y),
            n(right),
            n(y),
            n(left - 6.0),
            n(y + 4.0),
            esc(l)
        );
    }
    let cy = (top + bottom) / 2.0;
    let _ = write!(
        out,
        "<text class=\"axis-label\" x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">{}</text>",
        n(cy),
        n(cy),
        esc(label)
    );
}

fn xy_svg(c: &XyChart) -> String {
    let xs: Vec<f64> = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.x))
        .chain(c.bands.iter().flat_map(|b| [b.x0, b.x1]))
        .collect();
    let ys: Vec<f64> = c
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.y))
        .collect();
    let mx = map_axis(&c.x, &xs);
    let my = map_axis(&c.y, &ys);
    let left = left_margin(&my.ticks);
    let right = c.width - 18.0;
    let styles: Vec<SeriesStyle> = dedup_styles(c.lines.iter().map(|l| l.style.clone()));
    let (legend_svg, legend_h) = legend(&styles, left, 8.0, right - left, true);
    let top = 8.0 + legend_h + 8.0;
    let bottom = c.height - 44.0;
    let plot = (left, top, right, bottom);
    let px = |v: f64| left + mx.frac(v) * (right - left);
    let py = |v: f64| bottom - my.frac(v) * (bottom - top);
    let mut out = svg_open(
        &c.id,
        &c.title,
        c.width,
        c.height,
        c.lines.iter().map(|l| l.points.len()).sum(),
    );
    let clip = format!("clip-{}", c.id);
    let _ = write!(
        out,
        "<defs><clipPath id=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>",
        esc(&clip),
        n(left),
        n(top - 4.0),
        n(right - left),
        n(bottom - top + 8.0)
    );
    out.push_str(&legend_svg);
    for (i, b) in c.bands.iter().enumerate() {
        let (x0, x1) = (px(b.x0).max(left), px(b.x1).min(right));
        if x1 <= x0 {
            continue;
        }
        let class = if b.excluded {
            "band excluded"
        } else if i % 2 == 0 {
            "band even"
        } else {
            "band odd"
        };
        let _ = write!(
            out,
            "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
            n(x0),
            n(top),
            n(x1 - x0),
            n(bottom - top),
            esc(&b.label)
        );
        let room = ((x1 - x0 - 6.0) / (CHAR_W * 0.85)).floor().max(0.0) as usize;
        let label = truncate(&b.label, room);
        if !label.is_empty() {
            let _ = write!(
                out,
                "<text class=\"band-label{}\" x=\"{}\" y=\"{}\">{}</text>",
                if b.excluded { " excluded" } else { "" },
                n(x0 + 4.0),
                n(top + 12.0),
                esc(&label)
            );
        }
    }
    y_axis(&mut out, &my, &c.y.label, plot);
    for (v, l) in &mx.ticks {
        let x = px(*v);
        let _ = write!(
            out,
            "<line class=\"xtick\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            n(x),
            n(bottom),
            n(x),
            n(bottom + 5.0),
            n(x),
            n(bottom + 18.0),
            esc(l)
        );
    }
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        n(left),
        n(bottom),
        n(right),
        n(bottom),
        n((left + right) / 2.0),
        n(c.height - 8.0),
        esc(&c.x.label)
    );
    let _ = write!(out, "<g clip-path=\"url(#{})\">", esc(&clip));
    for l in &c.lines {
        let pts: Vec<&Point> = l
            .points
            .iter()
            .filter(|p| mx.usable(p.x) && my.usable(p.y))
            .collect();
        let mut coords: Vec<(f64, f64)> = Vec::new();
        for (i, p) in pts.iter().enumerate() {
            if l.step && i > 0 {
                coords.push((px(p.x), py(pts[i - 1].y)));
            }
            coords.push((px(p.x), py(p.y)));
        }
        if coords.len() > 1 {
            let list: Vec<String> = coords
                .iter()
                .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
                .collect();
            let _ = write!(
                out,
                "<polyline class=\"series\" points=\"{}\" stroke=\"{}\" stroke-dasharray=\"{}\"><title>{}</title></polyline>",
                list.join(" "),
                l.style.color,
                l.style.dash,
                esc(&l.style.name)
            );
        }
        if l.markers || pts.len() == 1 {
            for p in &pts {
                let _ = write!(
                    out,
                    "<circle class=\"mark\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"><title>{}</title></circle>",
                    n(px(p.x)),
                    n(py(p.y)),
                    l.style.color,
                    esc(&p.tip)
                );
            }
        }
    }
    out.push_str("</g></svg>");
    out
}

fn bar_svg(c: &BarChart) -> String {
    let values: Vec<f64> = c
        .groups
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .flat_map(|b| [Some(b.value), b.range.map(|r| r.1)])
        })
        .flatten()
        .collect();
    let my = map_axis(&c.y, &values);
    let left = left_margin(&my.ticks);
    let right = c.width - 18.0;
    let used: Vec<SeriesStyle> = c
        .series
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            c.groups
                .iter()
                .any(|g| g.bars.iter().any(|b| b.series == *i))
        })
        .map(|(_, s)| s.clone())
        .collect();
    let (legend_svg, legend_h) = legend(&used, left, 8.0, right - left, false);
    let top = 8.0 + legend_h + 18.0;
    let bottom = c.height - 44.0;
    let py = |v: f64| bottom - my.frac(v) * (bottom - top);
    let points = c.groups.iter().map(|g| g.bars.len()).sum();
    let mut out = svg_open(&c.id, &c.title, c.width, c.height, points);
    out.push_str(&legend_svg);
    y_axis(&mut out, &my, &c.y.label, (left, top, right, bottom));
    let groups = c.groups.len().max(1) as f64;
    let gw = (right - left) / groups;
    let per_group = c
        .groups
        .iter()
        .map(|g| g.bars.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let bw = ((gw * 0.8) / per_group).min(64.0);
    for (gi, g) in c.groups.iter().enumerate() {
        let cx = left + gw * (gi as f64 + 0.5);
        let x0 = cx - bw * g.bars.len() as f64 / 2.0;
        for (bi, b) in g.bars.iter().enumerate() {
            let (color, variant) = c
                .series
                .get(b.series)
                .map(|s| (s.color.as_str(), variant_fill(s)))
                .unwrap_or((PALETTE[0], String::new()));
            let x = x0 + bw * bi as f64;
            let y = py(b.value.max(0.0));
            let _ = write!(
                out,
                "<rect class=\"mark bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}><title>{}</title></rect>",
                n(x + 1.5),
                n(y),
                n((bw - 3.0).max(1.0)),
                n((bottom - y).max(0.5)),
                color,
                variant,
                esc(&b.tip)
            );
            let mut label_y = y - 4.0;
            if let Some((lo, hi)) = b.range {
                let (ylo, yhi) = (py(lo.max(0.0)), py(hi.max(0.0)));
                let mid = x + bw / 2.0;
                let _ = write!(
                    out,
                    "<path class=\"whisker\" d=\"M{} {}V{}M{} {}H{}M{} {}H{}\"/>",
                    n(mid),
                    n(ylo),
                    n(yhi),
                    n(mid - 4.0),
                    n(ylo),
                    n(mid + 4.0),
                    n(mid - 4.0),
                    n(yhi),
                    n(mid + 4.0)
                );
                label_y = label_y.min(yhi - 4.0);
            }
            if bw >= 26.0 {
                let _ = write!(
                    out,
                    "<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    n(x + bw / 2.0),
                    n(label_y),
                    esc(&c.y.unit.tick(b.value))
                );
            }
        }
        let room = (gw / CHAR_W).floor() as usize;
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}<title>{}</title></text>",
            n(cx),
            n(bottom + 18.0),
            esc(&truncate(&g.label, room)),
            esc(&g.label)
        );
    }
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/></svg>",
        n(left),
        n(bottom),
        n(right),
        n(bottom)
    );
    out
}

/// Bars of a dashed series (the same engine@version in another run or
/// environment) are drawn lighter with an outline, so they stay apart
/// from the solid one.
fn variant_fill(s: &SeriesStyle) -> String {
    if s.dash.is_empty() {
        String::new()
    } else {
        format!(
            " fill-opacity=\"0.45\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"{}\"",
            s.color, s.dash
        )
    }
}

fn dedup_styles(styles: impl Iterator<Item = SeriesStyle>) -> Vec<SeriesStyle> {
    let mut out: Vec<SeriesStyle> = Vec::new();
    for s in styles {
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    }
    out
}

/// Cut `s` to `max` characters with an ellipsis.
fn truncate(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max {
        s.to_string()
    } else if max <= 1 {
        String::new()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
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
    fn log2_axis_has_a_tick_per_power_of_two() {
        let axis = Axis::log("threads", Scale::Log2, Unit::Plain);
        let m = map_axis(&axis, &[1.0, 16.0, 1024.0]);
        assert_eq!(m.lo, 1.0);
        assert_eq!(m.hi, 1024.0);
        assert_eq!(m.ticks.first().unwrap().1, "1");
        assert_eq!(m.ticks.last().unwrap().1, "1024");
        assert!((m.frac(32.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn linear_axis_from_zero_covers_the_data_with_round_ticks() {
        let m = map_axis(&Axis::zero("ops/s", Unit::Ops), &[1234.0, 9876.0]);
        assert_eq!(m.lo, 0.0);
        assert_eq!(m.hi, 10000.0);
        let labels: Vec<&str> = m.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0", "2k", "4k", "6k", "8k", "10k"]);
    }

    #[test]
    fn byte_axes_tick_in_round_binary_units() {
        let m = map_axis(&Axis::zero("memory", Unit::Bytes), &[572.0 * 1048576.0]);
        let labels: Vec<&str> = m.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            [
                "0 B", "100 MiB", "200 MiB", "300 MiB", "400 MiB", "500 MiB", "600 MiB"
            ]
        );
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
