//! Statistics the report and `compare` share: pure functions over numbers.

/// Arithmetic mean; 0 for no values.
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Smallest and largest value; (∞, -∞) for no values.
pub(crate) fn min_max(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// The largest value; `None` for no values.
pub fn max(v: impl IntoIterator<Item = f64>) -> Option<f64> {
    v.into_iter().fold(None, |acc: Option<f64>, m| {
        Some(acc.map_or(m, |a| a.max(m)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_min_and_max_of_a_few_values() {
        assert_eq!(mean(&[1.0, 2.0, 6.0]), 3.0);
        assert_eq!(mean(&[]), 0.0);
        assert_eq!(min_max(&[3.0, -1.0, 2.0]), (-1.0, 3.0));
        assert_eq!(max([1.0, 4.0, 2.0]), Some(4.0));
        assert_eq!(max([]), None);
    }
}
