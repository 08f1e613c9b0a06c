//! TPC-C's random values (specification clause 2.1.6 and 4.3.2): uniform
//! numbers, NURand, customer last names from syllables, a-strings,
//! n-strings, zip codes and the "ORIGINAL" marker in item and stock data.

use crate::workload::rng::Rng;

/// NURand's `A` for customer last names (0..999).
pub(crate) const A_LAST: u64 = 255;
/// NURand's `A` for customer ids (1..3000).
pub(crate) const A_CUSTOMER: u64 = 1023;
/// NURand's `A` for item ids (1..100,000).
pub(crate) const A_ITEM: u64 = 8191;

/// The run-time constants `C` of NURand (clause 2.1.6.1). The load and the
/// run use `C` values for last names 65..119 apart (not 96 or 112), so the
/// run does not only look up the names the load made most common. They
/// are fixed, so a run against data another process loaded keeps the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constants {
    pub c_last: u64,
    pub c_id: u64,
    pub ol_i_id: u64,
}

/// The constants of the load.
pub(crate) const LOAD: Constants = Constants {
    c_last: 157,
    c_id: 259,
    ol_i_id: 7911,
};

/// The constants of the run: `c_last` 66 from the load's.
pub const RUN: Constants = Constants {
    c_last: 223,
    c_id: 259,
    ol_i_id: 7911,
};

/// The syllables of customer last names (clause 4.3.2.3).
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

const ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// TPC-C's random generator over the project's deterministic PRNG.
#[derive(Debug, Clone)]
pub(crate) struct TpccRng {
    pub rng: Rng,
}

impl TpccRng {
    pub fn new(seed: u64, stream: u64) -> TpccRng {
        TpccRng {
            rng: Rng::new(seed, stream),
        }
    }

    /// Uniform in `lo..=hi`.
    #[inline]
    pub fn uniform(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rng.below(hi - lo + 1)
    }

    /// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x`.
    #[inline]
    pub(crate) fn nurand(&mut self, a: u64, c: u64, x: u64, y: u64) -> u64 {
        (((self.uniform(0, a) | self.uniform(x, y)) + c) % (y - x + 1)) + x
    }

    /// A customer id of the run, NURand(1023, 1, 3000).
    pub(crate) fn customer_id(&mut self, k: &Constants, per_district: u64) -> u64 {
        self.nurand(A_CUSTOMER, k.c_id, 1, per_district)
    }

    /// An item id of the run, NURand(8191, 1, 100000).
    pub(crate) fn item_id(&mut self, k: &Constants, items: u64) -> u64 {
        self.nurand(A_ITEM, k.ol_i_id, 1, items)
    }

    /// A last name number of the run, NURand(255, 0, 999), scaled to
    /// `names` when a test loads fewer customers.
    pub(crate) fn last_name_number(&mut self, k: &Constants, names: u64) -> u64 {
        self.nurand(A_LAST, k.c_last, 0, names - 1)
    }

    /// A fixed-point amount in `lo..=hi` cents, as a float with two
    /// decimals.
    pub(crate) fn money(&mut self, lo_cents: u64, hi_cents: u64) -> f64 {
        self.uniform(lo_cents, hi_cents) as f64 / 100.0
    }

    /// Random letters and digits, `lo..=hi` long.
    pub(crate) fn astring(&mut self, lo: u64, hi: u64) -> String {
        let n = self.uniform(lo, hi) as usize;
        let mut s = String::with_capacity(n);
        for _ in 0..n {
            let i = self.rng.below(ALPHANUMERIC.len() as u64) as usize;
            s.push(ALPHANUMERIC[i] as char);
        }
        s
    }

    /// Random digits, `lo..=hi` long.
    pub(crate) fn nstring(&mut self, lo: u64, hi: u64) -> String {
        let n = self.uniform(lo, hi) as usize;
        (0..n)
            .map(|_| (b'0' + self.rng.below(10) as u8) as char)
            .collect()
    }

    /// A zip code: 4 random digits and `11111`.
    pub fn zip(&mut self) -> String {
        let mut z = self.nstring(4, 4);
        z.push_str("11111");
        z
    }

    /// A state: 2 random letters.
    pub fn state(&mut self) -> String {
        (0..2)
            .map(|_| (b'A' + self.rng.below(26) as u8) as char)
            .collect()
    }

    /// Item or stock data, 26..50 characters; 10% hold "ORIGINAL" at a
    /// random position.
    pub(crate) fn data_original(&mut self) -> String {
        let mut s = self.astring(26, 50);
        if self.uniform(1, 10) == 1 {
            let at = self.uniform(0, s.len() as u64 - 8) as usize;
            s.replace_range(at..at + 8, "ORIGINAL");
        }
        s
    }

    /// A tax rate, 0.0000..0.2000.
    pub(crate) fn tax(&mut self) -> f64 {
        self.uniform(0, 2000) as f64 / 10_000.0
    }
}

/// The last name of number `n` (0..999): its three digits as syllables.
pub(crate) fn last_name(n: u64) -> String {
    let mut s = String::with_capacity(15);
    s.push_str(SYLLABLES[(n / 100 % 10) as usize]);
    s.push_str(SYLLABLES[(n / 10 % 10) as usize]);
    s.push_str(SYLLABLES[(n % 10) as usize]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_are_three_syllables_of_the_number() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_favours_some_values() {
        let mut r = TpccRng::new(1, 0);
        let mut hits = vec![0u32; 3001];
        for _ in 0..300_000 {
            let c = r.customer_id(&RUN, 3000);
            assert!((1..=3000).contains(&c));
            hits[c as usize] += 1;
        }
        let max = *hits.iter().max().unwrap();
        // Uniform would give about 100 each; NURand skews it several-fold.
        assert!(max > 300, "most hits {max}");
    }

    #[test]
    fn the_run_constant_for_last_names_is_65_to_119_from_the_loads() {
        let d = RUN.c_last.abs_diff(LOAD.c_last);
        assert!((65..=119).contains(&d) && d != 96 && d != 112, "{d}");
    }

    #[test]
    fn a_tenth_of_item_data_is_original() {
        let mut r = TpccRng::new(3, 0);
        let n = (0..10_000)
            .filter(|_| r.data_original().contains("ORIGINAL"))
            .count();
        assert!((800..1200).contains(&n), "{n}");
    }
}
