//! Line and scatter charts: phase bands, axes, one polyline per series
//! and a marker per point where points are sparse.

use super::axis::{Mapped, map_axis};
use super::svg::{Frame, left_margin, legend, n, svg_open, truncate, y_axis};
use super::{CHAR_W, Line, Point, SeriesStyle, XyChart, esc};
use std::fmt::Write as _;

/// The plot area of an x/y chart and its two axes.
struct Plot {
    frame: Frame,
    x: Mapped,
    y: Mapped,
}

impl Plot {
    fn px(&self, v: f64) -> f64 {
        self.frame.x(&self.x, v)
    }
    fn py(&self, v: f64) -> f64 {
        self.frame.y(&self.y, v)
    }
}

/// Each series once, in the order drawn.
fn dedup_styles(styles: impl Iterator<Item = SeriesStyle>) -> Vec<SeriesStyle> {
    let mut out: Vec<SeriesStyle> = Vec::new();
    for s in styles {
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    }
    out
}

/// The chart as an `<svg>` element.
pub(super) fn svg(c: &XyChart) -> String {
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
    let (mx, my) = (map_axis(&c.x, &xs), map_axis(&c.y, &ys));
    let left = left_margin(&my.ticks);
    let right = c.width - 18.0;
    let styles: Vec<SeriesStyle> = dedup_styles(c.lines.iter().map(|l| l.style.clone()));
    let (legend_svg, legend_h) = legend(&styles, left, 8.0, right - left, true);
    let plot = Plot {
        frame: Frame {
            left,
            top: 8.0 + legend_h + 8.0,
            right,
            bottom: c.height - 44.0,
        },
        x: mx,
        y: my,
    };
    let points = c.lines.iter().map(|l| l.points.len()).sum();
    let mut out = svg_open(&c.id, &c.title, c.width, c.height, points);
    let clip = format!("clip-{}", c.id);
    let f = &plot.frame;
    let _ = write!(
        out,
        "<defs><clipPath id=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>",
        esc(&clip),
        n(f.left),
        n(f.top - 4.0),
        n(f.right - f.left),
        n(f.bottom - f.top + 8.0)
    );
    out.push_str(&legend_svg);
    bands(&mut out, c, &plot);
    y_axis(&mut out, &plot.y, &c.y.label, f);
    x_axis(&mut out, c, &plot);
    let _ = write!(out, "<g clip-path=\"url(#{})\">", esc(&clip));
    for l in &c.lines {
        line(&mut out, l, &plot);
    }
    out.push_str("</g></svg>");
    out
}

/// The shaded x ranges, each with its label where it fits.
fn bands(out: &mut String, c: &XyChart, plot: &Plot) {
    let f = &plot.frame;
    for (i, b) in c.bands.iter().enumerate() {
        let (x0, x1) = (plot.px(b.x0).max(f.left), plot.px(b.x1).min(f.right));
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
            n(f.top),
            n(x1 - x0),
            n(f.bottom - f.top),
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
                n(f.top + 12.0),
                esc(&label)
            );
        }
    }
}

/// Ticks and labels of the x axis, its line and its title.
fn x_axis(out: &mut String, c: &XyChart, plot: &Plot) {
    let f = &plot.frame;
    for (v, l) in &plot.x.ticks {
        let x = plot.px(*v);
        let _ = write!(
            out,
            "<line class=\"xtick\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            n(x),
            n(f.bottom),
            n(x),
            n(f.bottom + 5.0),
            n(x),
            n(f.bottom + 18.0),
            esc(l)
        );
    }
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        n(f.left),
        n(f.bottom),
        n(f.right),
        n(f.bottom),
        n((f.left + f.right) / 2.0),
        n(c.height - 8.0),
        esc(&c.x.label)
    );
}

/// One series: its polyline (held between points for a step line) and
/// its markers (always for a single point).
fn line(out: &mut String, l: &Line, plot: &Plot) {
    let pts: Vec<&Point> = l
        .points
        .iter()
        .filter(|p| plot.x.usable(p.x) && plot.y.usable(p.y))
        .collect();
    let mut coords: Vec<(f64, f64)> = Vec::new();
    for (i, p) in pts.iter().enumerate() {
        if l.step && i > 0 {
            coords.push((plot.px(p.x), plot.py(pts[i - 1].y)));
        }
        coords.push((plot.px(p.x), plot.py(p.y)));
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
                n(plot.px(p.x)),
                n(plot.py(p.y)),
                l.style.color,
                esc(&p.tip)
            );
        }
    }
}
