//! Sparklines: one series as a small line with no axes, for a table cell
//! (the results site's index). The newest point and a marked point (a
//! change point) are `.mark` circles with a tooltip, the line a
//! `polyline.series`, like the other charts, so a browser test can count
//! what was drawn.

use super::svg::n;
use super::{Point, esc};
use std::fmt::Write as _;

/// Width and height of a sparkline's coordinate system.
pub const SPARK_W: f64 = 160.0;
pub const SPARK_H: f64 = 32.0;

/// `points` (x in order) as an inline `<svg class="spark">`; `mark` is
/// the index of a point to circle (a change point). Non-finite values
/// are left out.
pub fn sparkline(id: &str, title: &str, points: &[Point], mark: Option<usize>) -> String {
    let shown: Vec<(usize, &Point)> = points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.x.is_finite() && p.y.is_finite())
        .collect();
    let mut out = format!(
        "<svg class=\"spark\" data-chart=\"{}\" data-points=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(id),
        shown.len(),
        n(SPARK_W),
        n(SPARK_H),
        n(SPARK_W),
        n(SPARK_H),
        esc(title)
    );
    let (Some(first), Some(last)) = (shown.first(), shown.last()) else {
        out.push_str("</svg>");
        return out;
    };
    let (x0, x1) = (first.1.x, last.1.x);
    let (lo, hi) = shown
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (_, p)| {
            (lo.min(p.y), hi.max(p.y))
        });
    let pad = 3.0;
    let fx = |x: f64| {
        if x1 > x0 {
            pad + (x - x0) / (x1 - x0) * (SPARK_W - 2.0 * pad)
        } else {
            SPARK_W / 2.0
        }
    };
    let fy = |y: f64| {
        if hi > lo {
            SPARK_H - pad - (y - lo) / (hi - lo) * (SPARK_H - 2.0 * pad)
        } else {
            SPARK_H / 2.0
        }
    };
    out.push_str("<polyline class=\"series\" points=\"");
    for (k, (_, p)) in shown.iter().enumerate() {
        if k > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{},{}", n(fx(p.x)), n(fy(p.y)));
    }
    out.push_str("\"/>");
    let mut circle = |class: &str, p: &Point| {
        let _ = write!(
            out,
            "<circle class=\"mark {class}\" cx=\"{}\" cy=\"{}\" r=\"2.6\"><title>{}</title></circle>",
            n(fx(p.x)),
            n(fy(p.y)),
            esc(&p.tip)
        );
    };
    if let Some((_, p)) = mark.and_then(|m| shown.iter().find(|(i, _)| *i == m)) {
        circle("change", p);
    }
    circle("last", last.1);
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(ys: &[f64]) -> Vec<Point> {
        ys.iter()
            .enumerate()
            .map(|(i, y)| Point {
                x: i as f64,
                y: *y,
                tip: format!("night {i}"),
            })
            .collect()
    }

    #[test]
    fn a_sparkline_draws_every_point_and_circles_the_change_and_the_newest() {
        let svg = sparkline("s<1>", "a & b", &pts(&[1.0, 2.0, 3.0, 2.5]), Some(2));
        assert!(svg.contains("data-points=\"4\""));
        let line = &svg[svg.find(" points=\"").unwrap() + 9..];
        assert_eq!(line[..line.find('"').unwrap()].split(' ').count(), 4);
        assert_eq!(svg.matches("class=\"mark ").count(), 2);
        assert!(svg.contains("<title>night 2</title>") && svg.contains("<title>night 3</title>"));
        assert!(svg.contains("s&lt;1&gt;") && svg.contains("a &amp; b"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn a_flat_or_single_point_sparkline_stays_inside_its_box() {
        for ys in [vec![5.0], vec![5.0, 5.0, 5.0], vec![f64::NAN, 1.0]] {
            let svg = sparkline("s", "t", &pts(&ys), None);
            assert!(!svg.contains("NaN") && svg.contains("polyline"), "{svg}");
        }
        assert!(!sparkline("s", "t", &[], None).contains("polyline"));
    }
}
