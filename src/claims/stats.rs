//! The verdict a claim's interval gives (the interval itself is
//! `crate::stats::ratio_interval`, shared with `benchcage compare`).

use crate::model::claim::{Expect, Verdict};

/// The verdict of an interval `[lo, hi]` of a/b on what was expected:
/// `Holds` when all of it is on the claimed side, `Reversed` when all of
/// it is on the other, `Inconclusive` when it crosses. For `a ~ b` the
/// claimed side is the band `[1/(1+t), 1+t]`; it is reversed only when the
/// whole interval is outside the band.
pub(crate) fn decide(expect: Expect, lo: f64, hi: f64) -> Verdict {
    match expect {
        Expect::Greater if lo > 1.0 => Verdict::Holds,
        Expect::Greater if hi < 1.0 => Verdict::Reversed,
        Expect::Less if hi < 1.0 => Verdict::Holds,
        Expect::Less if lo > 1.0 => Verdict::Reversed,
        Expect::About { tolerance } => {
            let (low, high) = (1.0 / (1.0 + tolerance), 1.0 + tolerance);
            if lo >= low && hi <= high {
                Verdict::Holds
            } else if hi < low || lo > high {
                Verdict::Reversed
            } else {
                Verdict::Inconclusive
            }
        }
        _ => Verdict::Inconclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_equal_holds_inside_the_band_and_is_reversed_wholly_outside() {
        let about = Expect::About { tolerance: 0.1 };
        assert_eq!(decide(about, 0.95, 1.05), Verdict::Holds);
        assert_eq!(decide(about, 1.2, 1.5), Verdict::Reversed);
        assert_eq!(decide(about, 0.5, 0.8), Verdict::Reversed);
        assert_eq!(decide(about, 0.95, 1.2), Verdict::Inconclusive);
    }
}
