//! From data values to an axis: its range, where a value falls on it and
//! its ticks. Pure arithmetic, no SVG.

use super::{Axis, Scale, Unit};
use crate::report::stats::min_max;

/// A mapping from data values to [0, 1] along an axis, with its ticks.
pub(super) struct Mapped {
    pub(super) scale: Scale,
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<(f64, String)>,
}

impl Mapped {
    /// Where `v` falls between the ends of the axis, 0 to 1.
    pub(super) fn frac(&self, v: f64) -> f64 {
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
    /// Whether `v` can be drawn (finite; positive on a log axis).
    pub(super) fn usable(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }
}

/// A round step near `raw`: 1, 2, 5 or 10 times a power of ten.
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

/// The axis that shows `values`.
pub(super) fn map_axis(axis: &Axis, values: &[f64]) -> Mapped {
    if !axis.categories.is_empty() {
        return categorical(&axis.categories);
    }
    let (min, max) = data_range(axis.scale, values);
    match axis.scale {
        Scale::Linear => linear(axis, min, max),
        Scale::Log2 | Scale::Log10 => logarithmic(axis, min, max),
    }
}

/// One tick per category, at its index.
fn categorical(categories: &[String]) -> Mapped {
    Mapped {
        scale: Scale::Linear,
        lo: -0.5,
        hi: categories.len() as f64 - 0.5,
        ticks: categories
            .iter()
            .enumerate()
            .map(|(i, c)| (i as f64, c.clone()))
            .collect(),
    }
}

/// The smallest and largest value the scale can show; 1 to 10 without one.
fn data_range(scale: Scale, values: &[f64]) -> (f64, f64) {
    let usable: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0))
        .collect();
    if usable.is_empty() {
        (1.0, 10.0)
    } else {
        min_max(&usable)
    }
}

fn linear(axis: &Axis, mut min: f64, mut max: f64) -> Mapped {
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

fn logarithmic(axis: &Axis, min: f64, max: f64) -> Mapped {
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
    // A short log₁₀ axis gets 2s and 5s between its powers.
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_short_log10_axis_ticks_at_two_and_five_too() {
        let axis = Axis::log("latency", Scale::Log10, Unit::Micros);
        let m = map_axis(&axis, &[150.0, 900.0]);
        let labels: Vec<&str> = m.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["100µs", "200µs", "500µs", "1ms"]);
    }

    #[test]
    fn categories_sit_at_their_index_and_no_data_still_makes_an_axis() {
        let m = map_axis(&Axis::categories("run", vec!["a".into(), "b".into()]), &[]);
        assert_eq!((m.lo, m.hi), (-0.5, 1.5));
        assert_eq!(m.frac(0.0), 0.25);
        let empty = map_axis(&Axis::zero("ops/s", Unit::Ops), &[]);
        assert_eq!((empty.lo, empty.hi), (0.0, 10.0));
        assert!(!map_axis(&Axis::log("x", Scale::Log2, Unit::Plain), &[]).usable(0.0));
    }
}
