//! Request distributions with YCSB's semantics: uniform, zipfian
//! (scrambled, constant 0.99), latest, hotspot and sequential.

use super::keys::fnv64;
use super::rng::Rng;

/// YCSB's default zipfian constant.
pub(crate) const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Item count of YCSB's `ScrambledZipfianGenerator`: draws are made over
/// this many items and hashed onto the key space.
pub(crate) const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// zeta(SCRAMBLED_ITEM_COUNT, 0.99), precomputed by YCSB.
pub(crate) const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// The request distribution named in a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    Uniform,
    Zipfian,
    Latest,
    Hotspot,
    Sequential,
}

impl std::str::FromStr for Distribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "uniform" => Distribution::Uniform,
            "zipfian" => Distribution::Zipfian,
            "latest" => Distribution::Latest,
            "hotspot" => Distribution::Hotspot,
            "sequential" => Distribution::Sequential,
            other => {
                return Err(format!(
                    "unknown distribution `{other}`; use uniform, zipfian, latest, hotspot or sequential"
                ));
            }
        })
    }
}

/// Terms [`zeta`] adds one by one; beyond them, the rest of the sum is
/// computed in closed form.
const ZETA_EXACT_TERMS: u64 = 100_000;

/// Sum of 1/(i+1)^theta for i in [from, to), added to `initial`.
///
/// YCSB adds every term, which takes minutes for the billions of records
/// a dataset may have (and the latest distribution computes it at the
/// start of a phase). After [`ZETA_EXACT_TERMS`] terms the tail is taken
/// from the Euler-Maclaurin formula, whose error there is below 1e-20 of
/// the sum.
pub(crate) fn zeta(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    let exact_to = to.min(from.saturating_add(ZETA_EXACT_TERMS));
    let mut sum = initial;
    for i in from..exact_to {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    if exact_to < to {
        // Terms k = a..=b of k^-theta, with k = i + 1.
        let (a, b) = ((exact_to + 1) as f64, to as f64);
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (f(a) + f(b)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    sum
}

/// YCSB's `ZipfianGenerator`: item 0 is the most popular. The item count
/// may grow; zeta is then extended incrementally.
#[derive(Debug, Clone)]
pub(crate) struct Zipfian {
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    count: u64,
    eta: f64,
    half_pow_theta: f64,
}

impl Zipfian {
    /// Over `count` items; `zetan` when known (it is costly for huge counts).
    pub fn new(count: u64, theta: f64, zetan: Option<f64>) -> Zipfian {
        let count = count.max(1);
        let zetan = zetan.unwrap_or_else(|| zeta(0, count, theta, 0.0));
        let mut z = Zipfian {
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2: zeta(0, 2, theta, 0.0),
            zetan,
            count,
            eta: 0.0,
            half_pow_theta: 0.5f64.powf(theta),
        };
        z.eta = z.eta_for(count);
        z
    }

    fn eta_for(&self, n: u64) -> f64 {
        (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// Grows the item count (never shrinks, like YCSB's default).
    pub(crate) fn grow_to(&mut self, count: u64) {
        if count > self.count {
            self.zetan = zeta(self.count, count, self.theta, self.zetan);
            self.count = count;
            self.eta = self.eta_for(count);
        }
    }

    /// A draw in [0, count).
    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1.min(self.count - 1);
        }
        let v = (self.count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(self.count - 1)
    }
}

/// Chooses record numbers for operations on existing records.
#[derive(Debug, Clone)]
pub(crate) enum KeyChooser {
    Uniform,
    /// Scrambled zipfian over `items` (records plus expected inserts).
    Zipfian {
        zipf: Zipfian,
        items: u64,
    },
    /// Zipfian over the inserted records, most recent first.
    Latest {
        zipf: Zipfian,
    },
    /// `hot_data` of the records take `hot_ops` of the operations.
    Hotspot {
        hot_data: f64,
        hot_ops: f64,
    },
    /// Each worker walks the records in order from its own offset.
    Sequential {
        next: u64,
    },
}

impl KeyChooser {
    /// A chooser for `dist`; `items` is the record count plus expected
    /// inserts; `start` the sequential offset of this worker.
    pub fn new(dist: Distribution, items: u64, hot: (f64, f64), start: u64) -> KeyChooser {
        match dist {
            Distribution::Uniform => KeyChooser::Uniform,
            Distribution::Zipfian => KeyChooser::Zipfian {
                zipf: Zipfian::new(
                    SCRAMBLED_ITEM_COUNT,
                    ZIPFIAN_CONSTANT,
                    Some(SCRAMBLED_ZETAN),
                ),
                items: items.max(1),
            },
            Distribution::Latest => KeyChooser::Latest {
                zipf: Zipfian::new(items, ZIPFIAN_CONSTANT, None),
            },
            Distribution::Hotspot => KeyChooser::Hotspot {
                hot_data: hot.0,
                hot_ops: hot.1,
            },
            Distribution::Sequential => KeyChooser::Sequential { next: start },
        }
    }

    /// A record number in [0, count), where `count` records exist now.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng, count: u64) -> u64 {
        let count = count.max(1);
        match self {
            KeyChooser::Uniform => rng.below(count),
            KeyChooser::Zipfian { zipf, items } => loop {
                let k = fnv64(zipf.next(rng)) % *items;
                if k < count {
                    return k;
                }
            },
            KeyChooser::Latest { zipf } => {
                zipf.grow_to(count);
                let back = zipf.next(rng);
                count - 1 - back.min(count - 1)
            }
            KeyChooser::Hotspot { hot_data, hot_ops } => {
                let hot = ((count as f64 * *hot_data) as u64).clamp(1, count);
                let cold = count - hot;
                if rng.next_f64() < *hot_ops || cold == 0 {
                    rng.below(hot)
                } else {
                    hot + rng.below(cold)
                }
            }
            KeyChooser::Sequential { next } => {
                let k = *next % count;
                *next = next.wrapping_add(1);
                k
            }
        }
    }
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipfian => "zipfian",
            Distribution::Latest => "latest",
            Distribution::Hotspot => "hotspot",
            Distribution::Sequential => "sequential",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeta_of_a_long_range_matches_the_term_by_term_sum() {
        let exact = |from: u64, to: u64| {
            let mut s = 0.0;
            for i in from..to {
                s += 1.0 / ((i + 1) as f64).powf(ZIPFIAN_CONSTANT);
            }
            s
        };
        for (from, to) in [
            (0, 3_000_000),
            (1_000, 2_500_000),
            (0, ZETA_EXACT_TERMS + 1),
        ] {
            let want = exact(from, to);
            let got = zeta(from, to, ZIPFIAN_CONSTANT, 0.0);
            assert!(
                ((got - want) / want).abs() < 1e-12,
                "{from}..{to}: {got} vs {want}"
            );
        }
        // YCSB's precomputed constant for 10^10 items, in well under a
        // second. YCSB added 10^10 doubles one by one, so its value carries
        // rounding of its own: they agree to 1e-10.
        let t = std::time::Instant::now();
        let z = zeta(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, 0.0);
        assert!(
            ((z - SCRAMBLED_ZETAN) / SCRAMBLED_ZETAN).abs() < 1e-10,
            "{z}"
        );
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }

    const DRAWS: usize = 100_000;

    /// Pearson chi-square of observed counts against expected probabilities.
    fn chi_square(observed: &[u64], expected_p: &[f64], n: usize) -> f64 {
        observed
            .iter()
            .zip(expected_p)
            .map(|(&o, &p)| {
                let e = p * n as f64;
                (o as f64 - e).powi(2) / e
            })
            .sum()
    }

    #[test]
    fn zipfian_ranks_follow_the_zipf_law() {
        let n = 1000u64;
        let z = Zipfian::new(n, ZIPFIAN_CONSTANT, None);
        let mut rng = Rng::new(11, 0);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..DRAWS {
            counts[z.next(&mut rng) as usize] += 1;
        }
        let zn = zeta(0, n, ZIPFIAN_CONSTANT, 0.0);
        // Quantile check: the share of the top m ranks against the exact
        // law. YCSB's (Gray et al.) approximation is within 0.02 of it;
        // uniform or reversed draws miss by 0.1 to 0.9.
        for m in [1u64, 2, 10, 100, 500] {
            let got = counts[..m as usize].iter().sum::<u64>() as f64 / DRAWS as f64;
            let want = zeta(0, m, ZIPFIAN_CONSTANT, 0.0) / zn;
            assert!((got - want).abs() < 0.02, "top {m}: {got} vs {want}");
        }
        // Ranks 0 and 1 are drawn exactly: chi-square with 2 dof (p=0.001: 13.8).
        let p0 = 1.0 / zn;
        let p1 = 0.5f64.powf(ZIPFIAN_CONSTANT) / zn;
        let obs = [counts[0], counts[1], DRAWS as u64 - counts[0] - counts[1]];
        let chi = chi_square(&obs, &[p0, p1, 1.0 - p0 - p1], DRAWS);
        assert!(chi < 13.8, "chi-square {chi}: {obs:?}");
    }

    #[test]
    fn scrambled_zipfian_spreads_hot_keys_but_keeps_the_skew() {
        let n = 10_000u64;
        let mut c = KeyChooser::new(Distribution::Zipfian, n, (0.2, 0.8), 0);
        let mut rng = Rng::new(5, 0);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..DRAWS {
            counts[c.next(&mut rng, n) as usize] += 1;
        }
        let hottest = counts.iter().enumerate().max_by_key(|(_, c)| **c).unwrap();
        // The hottest key is not key 0 (scrambled) and takes about 1/zetan.
        assert_ne!(hottest.0, 0);
        let share = *hottest.1 as f64 / DRAWS as f64;
        let want = 1.0 / SCRAMBLED_ZETAN;
        assert!(
            (share - want).abs() < 0.01,
            "hottest share {share}, want {want}"
        );
        let mut sorted = counts.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top1pct: u64 = sorted[..100].iter().sum();
        // About sum(1/i^0.99, i<=100)/zetan = 0.196 of the draws.
        assert!(top1pct as f64 / DRAWS as f64 > 0.18, "top 1% got {top1pct}");
    }

    #[test]
    fn latest_favours_the_most_recent_records() {
        let n = 10_000u64;
        let mut c = KeyChooser::new(Distribution::Latest, n, (0.2, 0.8), 0);
        let mut rng = Rng::new(9, 0);
        let mut newest = 0;
        let mut recent_1pct = 0;
        for _ in 0..DRAWS {
            let k = c.next(&mut rng, n);
            assert!(k < n);
            if k == n - 1 {
                newest += 1;
            }
            if k >= n - n / 100 {
                recent_1pct += 1;
            }
        }
        let zn = zeta(0, n, ZIPFIAN_CONSTANT, 0.0);
        let share = newest as f64 / DRAWS as f64;
        assert!((share - 1.0 / zn).abs() < 0.01, "newest share {share}");
        assert!(recent_1pct as f64 / DRAWS as f64 > 0.4, "{recent_1pct}");
        // As records are inserted, the favourite moves to the new end.
        assert!(c.next(&mut rng, n + 500) > n / 2);
    }

    #[test]
    fn hotspot_sends_eighty_percent_to_twenty_percent_of_the_data() {
        let n = 10_000u64;
        let mut c = KeyChooser::new(Distribution::Hotspot, n, (0.2, 0.8), 0);
        let mut rng = Rng::new(3, 0);
        let hot = (0..DRAWS).filter(|_| c.next(&mut rng, n) < n / 5).count();
        let share = hot as f64 / DRAWS as f64;
        assert!((share - 0.8).abs() < 0.01, "hot share {share}");
        let mut c = KeyChooser::new(Distribution::Hotspot, n, (0.1, 0.9), 0);
        let hot = (0..DRAWS).filter(|_| c.next(&mut rng, n) < n / 10).count();
        assert!((hot as f64 / DRAWS as f64 - 0.9).abs() < 0.01);
    }

    #[test]
    fn uniform_passes_a_chi_square_test() {
        let mut c = KeyChooser::new(Distribution::Uniform, 100, (0.2, 0.8), 0);
        let mut rng = Rng::new(4, 0);
        let mut counts = vec![0u64; 100];
        for _ in 0..DRAWS {
            counts[c.next(&mut rng, 100) as usize] += 1;
        }
        let chi = chi_square(&counts, &[0.01; 100], DRAWS);
        // 99 dof, p=0.001: 148.2.
        assert!(chi < 148.2, "chi-square {chi}");
    }

    #[test]
    fn sequential_walks_in_order_and_wraps() {
        let mut c = KeyChooser::new(Distribution::Sequential, 5, (0.2, 0.8), 3);
        let mut rng = Rng::new(1, 0);
        let got: Vec<u64> = (0..6).map(|_| c.next(&mut rng, 5)).collect();
        assert_eq!(got, vec![3, 4, 0, 1, 2, 3]);
    }

    #[test]
    fn same_seed_draws_the_same_keys() {
        let draw = |seed| {
            let mut c = KeyChooser::new(Distribution::Zipfian, 1000, (0.2, 0.8), 0);
            let mut rng = Rng::new(seed, 0);
            (0..1000)
                .map(|_| c.next(&mut rng, 1000))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
    }
}
