//! SVG pieces every chart draws with: numbers for attributes, the open
//! tag, the legend, the y axis, and text that has to fit.

use super::axis::Mapped;
use super::{CHAR_W, SeriesStyle, esc};
use std::fmt::Write as _;

/// A number for an SVG attribute: two decimals, no `-0`.
pub(super) fn n(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    if s == "-0" { "0".into() } else { s }
}

/// The plot area inside a chart, in SVG units.
pub(super) struct Frame {
    pub(super) left: f64,
    pub(super) top: f64,
    pub(super) right: f64,
    pub(super) bottom: f64,
}

impl Frame {
    /// The SVG x of data value `v` on axis `m`.
    pub(super) fn x(&self, m: &Mapped, v: f64) -> f64 {
        self.left + m.frac(v) * (self.right - self.left)
    }
    /// The SVG y of data value `v` on axis `m`.
    pub(super) fn y(&self, m: &Mapped, v: f64) -> f64 {
        self.bottom - m.frac(v) * (self.bottom - self.top)
    }
}

/// Lay out legend items left to right, wrapping; returns the SVG and its height.
pub(super) fn legend(
    styles: &[SeriesStyle],
    left: f64,
    top: f64,
    width: f64,
    line: bool,
) -> (String, f64) {
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

/// The chart's `<svg>` open tag: its id, data points and title for tests
/// and screen readers.
pub(super) fn svg_open(id: &str, title: &str, width: f64, height: f64, points: usize) -> String {
    format!(
        "<svg class=\"chart\" data-chart=\"{}\" data-points=\"{points}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(id),
        n(width),
        n(height),
        esc(title)
    )
}

/// Left margin wide enough for the longest y tick label.
pub(super) fn left_margin(ticks: &[(f64, String)]) -> f64 {
    let longest = ticks
        .iter()
        .map(|(_, l)| l.chars().count())
        .max()
        .unwrap_or(3);
    (longest as f64 * CHAR_W + 28.0).max(92.0)
}

/// Grid lines and tick labels of the y axis, and its title.
pub(super) fn y_axis(out: &mut String, m: &Mapped, label: &str, f: &Frame) {
    for (v, l) in &m.ticks {
        let y = f.y(m, *v);
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            n(f.left),
            n(y),
            n(f.right),
            n(y),
            n(f.left - 6.0),
            n(y + 4.0),
            esc(l)
        );
    }
    let cy = (f.top + f.bottom) / 2.0;
    let _ = write!(
        out,
        "<text class=\"axis-label\" x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">{}</text>",
        n(cy),
        n(cy),
        esc(label)
    );
}

/// Bars of a dashed series (the same engine@version in another run or
/// environment) are drawn lighter with an outline, so they stay apart
/// from the solid one.
pub(super) fn variant_fill(s: &SeriesStyle) -> String {
    if s.dash.is_empty() {
        String::new()
    } else {
        format!(
            " fill-opacity=\"0.45\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"{}\"",
            s.color, s.dash
        )
    }
}

/// Cut `s` to `max` characters with an ellipsis.
pub(super) fn truncate(s: &str, max: usize) -> String {
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

    #[test]
    fn attribute_numbers_drop_trailing_zeros_and_negative_zero() {
        assert_eq!(n(12.5), "12.5");
        assert_eq!(n(3.0), "3");
        assert_eq!(n(-0.001), "0");
    }

    #[test]
    fn long_text_is_cut_with_an_ellipsis() {
        assert_eq!(truncate("workload-a", 20), "workload-a");
        assert_eq!(truncate("workload-a", 5), "work…");
        assert_eq!(truncate("workload-a", 1), "");
    }

    #[test]
    fn a_legend_wraps_when_its_items_do_not_fit() {
        let style = |name: &str| SeriesStyle {
            name: name.into(),
            color: "#000".into(),
            dash: String::new(),
        };
        let (svg, h) = legend(&[style("a"), style("b")], 0.0, 0.0, 1000.0, true);
        assert_eq!(h, 18.0);
        assert_eq!(svg.matches("class=\"lg\"").count(), 2);
        let (_, h) = legend(&[style("a"), style("b")], 0.0, 0.0, 60.0, false);
        assert_eq!(h, 36.0);
    }
}
