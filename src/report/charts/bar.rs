//! Grouped bar charts: a group per category, a bar per series with an
//! optional min..max whisker and its value on top.

use super::axis::{Mapped, map_axis};
use super::svg::{Frame, left_margin, legend, n, svg_open, truncate, variant_fill, y_axis};
use super::{Bar, BarChart, BarGroup, CHAR_W, PALETTE, SeriesStyle, esc};
use std::fmt::Write as _;

/// Where bars go: the plot area, the y axis, the width of a group and of
/// a bar.
struct Layout {
    frame: Frame,
    y: Mapped,
    group_w: f64,
    bar_w: f64,
}

impl Layout {
    fn py(&self, v: f64) -> f64 {
        self.frame.y(&self.y, v)
    }
}

/// The series that have a bar, for the legend.
fn used_series(c: &BarChart) -> Vec<SeriesStyle> {
    c.series
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            c.groups
                .iter()
                .any(|g| g.bars.iter().any(|b| b.series == *i))
        })
        .map(|(_, s)| s.clone())
        .collect()
}

/// The chart as an `<svg>` element.
pub(super) fn svg(c: &BarChart) -> String {
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
    let (legend_svg, legend_h) = legend(&used_series(c), left, 8.0, right - left, false);
    let frame = Frame {
        left,
        top: 8.0 + legend_h + 18.0,
        right,
        bottom: c.height - 44.0,
    };
    let points = c.groups.iter().map(|g| g.bars.len()).sum();
    let mut out = svg_open(&c.id, &c.title, c.width, c.height, points);
    out.push_str(&legend_svg);
    y_axis(&mut out, &my, &c.y.label, &frame);
    let group_w = (right - left) / c.groups.len().max(1) as f64;
    let per_group = c
        .groups
        .iter()
        .map(|g| g.bars.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let layout = Layout {
        frame,
        y: my,
        group_w,
        bar_w: ((group_w * 0.8) / per_group).min(64.0),
    };
    for (gi, g) in c.groups.iter().enumerate() {
        group(&mut out, c, g, gi, &layout);
    }
    let f = &layout.frame;
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/></svg>",
        n(f.left),
        n(f.bottom),
        n(f.right),
        n(f.bottom)
    );
    out
}

/// The bars of group `gi`, centred in its slot, and its label under them.
fn group(out: &mut String, c: &BarChart, g: &BarGroup, gi: usize, layout: &Layout) {
    let f = &layout.frame;
    let cx = f.left + layout.group_w * (gi as f64 + 0.5);
    let x0 = cx - layout.bar_w * g.bars.len() as f64 / 2.0;
    for (bi, b) in g.bars.iter().enumerate() {
        bar(out, c, b, x0 + layout.bar_w * bi as f64, layout);
    }
    let room = (layout.group_w / CHAR_W).floor() as usize;
    let _ = write!(
        out,
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}<title>{}</title></text>",
        n(cx),
        n(f.bottom + 18.0),
        esc(&truncate(&g.label, room)),
        esc(&g.label)
    );
}

/// One bar at `x`: its rectangle, its whisker and, where it is wide
/// enough, its value.
fn bar(out: &mut String, c: &BarChart, b: &Bar, x: f64, layout: &Layout) {
    let (bw, bottom) = (layout.bar_w, layout.frame.bottom);
    let (color, variant) = c
        .series
        .get(b.series)
        .map(|s| (s.color.as_str(), variant_fill(s)))
        .unwrap_or((PALETTE[0], String::new()));
    let y = layout.py(b.value.max(0.0));
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
        let (ylo, yhi) = (layout.py(lo.max(0.0)), layout.py(hi.max(0.0)));
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
