//! E-Divisive means: change points in one series by hierarchical
//! bisection on the energy statistic, each accepted only by a permutation
//! test (Matteson and James, "A Nonparametric Approach for Multiple
//! Change Point Analysis of Multivariate Data", JASA 2014; the method of
//! MongoDB's performance CI, Daly et al., ICPE 2020, and of Hunter/Otava).
//!
//! For a split of a segment into `X` (length `n`) and `Y` (length `m`),
//! with distances `|a - b|` (alpha = 1):
//!
//! ```text
//! E = 2/(n m) sum |X_i - Y_j| - 2/(n(n-1)) sum_{i<k} |X_i - X_k| - 2/(m(m-1)) sum_{j<k} |Y_j - Y_k|
//! Q = n m / (n + m) * E
//! ```
//!
//! The best split of a segment maximises `Q`. Its significance is the
//! share of random reorderings of the segment whose best `Q` is at least
//! as large. Pure functions, a seeded generator: the same series gives
//! the same answer.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// How hard to look.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// A change point is kept when its permutation p-value is at most this.
    pub significance: f64,
    /// Reorderings per test.
    pub permutations: usize,
    /// The fewest points on either side of a change point.
    pub min_size: usize,
    /// Seed of the reorderings.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            significance: 0.01,
            permutations: 199,
            min_size: 3,
            seed: 0x5eed_c4a9_9e01_2026,
        }
    }
}

/// A change point: the series changes between `index - 1` and `index`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    /// The permutation test's p-value.
    pub p_value: f64,
    /// `Q` of the split.
    pub q: f64,
}

/// Change points of `series`, in index order.
pub fn detect(series: &[f64], opts: &Options) -> Vec<ChangePoint> {
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let mut cuts = vec![0, series.len()];
    let mut found: Vec<ChangePoint> = Vec::new();
    loop {
        // The best split among every segment between the cuts so far.
        let best = cuts
            .windows(2)
            .filter_map(|w| {
                best_split(&series[w[0]..w[1]], opts.min_size).map(|(at, q)| (w[0], w[1], at, q))
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((start, end, at, q)) = best else {
            break;
        };
        let p = p_value(&series[start..end], q, opts, &mut rng);
        if p > opts.significance {
            break;
        }
        found.push(ChangePoint {
            index: start + at,
            p_value: p,
            q,
        });
        cuts.push(start + at);
        cuts.sort_unstable();
    }
    found.sort_by_key(|c| c.index);
    found
}

/// The split of `x` that maximises `Q`, and `Q`; `None` when `x` is too
/// short for two sides of `min_size`.
///
/// O(n log n): the distances of each point to all others come from the
/// sorted values and their prefix sums, and those to the points before
/// it from a Fenwick tree over the ranks (a year of nightly series, with
/// its permutation tests, in milliseconds; `benchcage site`).
pub(crate) fn best_split(x: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let n = x.len();
    let min_size = min_size.max(2);
    if n < 2 * min_size {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut rank = vec![0usize; n];
    let mut sorted_prefix = vec![0.0; n + 1];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
        sorted_prefix[r + 1] = sorted_prefix[r] + x[i];
    }
    // to_all[i]: sum of |x_i - x_k| over every k.
    let to_all: Vec<f64> = (0..n)
        .map(|i| {
            let (r, v) = (rank[i], x[i]);
            let below = v * r as f64 - sorted_prefix[r];
            let above = (sorted_prefix[n] - sorted_prefix[r + 1]) - v * (n - r - 1) as f64;
            below + above
        })
        .collect();
    let total: f64 = to_all.iter().sum::<f64>() / 2.0;
    let mut left = Fenwick::new(n);
    let mut left_sum = 0.0;
    // Left = x[..t], right = x[t..]: within-left, between, within-right.
    let (mut wl, mut b, mut wr) = (0.0, 0.0, total);
    let mut best: Option<(usize, f64)> = None;
    for t in 0..n - min_size {
        // Move x[t] from the right side to the left.
        let (r, v) = (rank[t], x[t]);
        let (below_n, below_sum) = left.prefix(r);
        let (above_n, above_sum) = (t - below_n, left_sum - below_sum);
        let to_left = v * below_n as f64 - below_sum + above_sum - v * above_n as f64;
        let to_right = to_all[t] - to_left;
        left.add(r, v);
        left_sum += v;
        wl += to_left;
        b += to_right - to_left;
        wr -= to_right;
        let at = t + 1;
        if at < min_size {
            continue;
        }
        let (l, r) = (at as f64, (n - at) as f64);
        let e = 2.0 * b / (l * r) - 2.0 * wl / (l * (l - 1.0)) - 2.0 * wr / (r * (r - 1.0));
        let q = l * r / (l + r) * e;
        if best.is_none_or(|(_, bq)| q > bq) {
            best = Some((at, q));
        }
    }
    best
}

/// Counts and sums of values by rank, with prefix queries.
struct Fenwick {
    count: Vec<usize>,
    sum: Vec<f64>,
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick {
            count: vec![0; n + 1],
            sum: vec![0.0; n + 1],
        }
    }

    fn add(&mut self, rank: usize, v: f64) {
        let mut i = rank + 1;
        while i < self.count.len() {
            self.count[i] += 1;
            self.sum[i] += v;
            i += i & i.wrapping_neg();
        }
    }

    /// How many values of rank below `rank`, and their sum.
    fn prefix(&self, rank: usize) -> (usize, f64) {
        let (mut c, mut s, mut i) = (0, 0.0, rank);
        while i > 0 {
            c += self.count[i];
            s += self.sum[i];
            i -= i & i.wrapping_neg();
        }
        (c, s)
    }
}

/// The share of reorderings of `x` whose best split is at least `q`,
/// counting the observed order itself. It stops as soon as the share
/// is beyond the significance level: then the split is not kept and its
/// exact p-value is never shown (a noise series costs a few reorderings,
/// not all of them).
fn p_value(x: &[f64], q: f64, opts: &Options, rng: &mut StdRng) -> f64 {
    let mut shuffled = x.to_vec();
    let mut as_large = 0usize;
    let total = (opts.permutations + 1) as f64;
    for _ in 0..opts.permutations {
        shuffled.shuffle(rng);
        if best_split(&shuffled, opts.min_size).is_some_and(|(_, pq)| pq >= q) {
            as_large += 1;
            if (as_large + 1) as f64 / total > opts.significance {
                break;
            }
        }
    }
    (as_large + 1) as f64 / (opts.permutations + 1) as f64
}

/// A standard normal deviate (Box-Muller), for synthetic series.
pub fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `len` nights around 1000 with `noise` (a share) of Gaussian noise,
    /// shaped by `f(night)`.
    fn series(len: usize, noise: f64, seed: u64, f: impl Fn(usize) -> f64) -> Vec<f64> {
        let mut g = StdRng::seed_from_u64(seed);
        (0..len)
            .map(|i| 1000.0 * f(i) * (1.0 + noise * normal(&mut g)))
            .collect()
    }

    /// The share of `trials` seeded series in which `hit` holds of the
    /// change points found.
    fn rate(
        trials: u64,
        make: impl Fn(u64) -> Vec<f64>,
        hit: impl Fn(&[ChangePoint]) -> bool,
    ) -> f64 {
        let opts = Options::default();
        let hits = (0..trials)
            .filter(|s| hit(&detect(&make(*s), &opts)))
            .count();
        let r = hits as f64 / trials as f64;
        // `cargo test --lib edivisive -- --nocapture` prints the rates.
        eprintln!("rate: {hits} of {trials} = {r:.3}");
        r
    }

    /// The direct O(n^2) form of `best_split`, to check it against.
    fn quadratic_best_split(x: &[f64], min_size: usize) -> Option<(usize, f64)> {
        let n = x.len();
        let min_size = min_size.max(2);
        if n < 2 * min_size {
            return None;
        }
        // prefix[i][j]: sum of |x_i - x_k| for k < j.
        let prefix: Vec<Vec<f64>> = x
            .iter()
            .map(|a| {
                let mut row = Vec::with_capacity(n + 1);
                let mut s = 0.0;
                row.push(0.0);
                for b in x {
                    s += (a - b).abs();
                    row.push(s);
                }
                row
            })
            .collect();
        let total: f64 = (0..n).map(|i| prefix[i][n] - prefix[i][i + 1]).sum();
        // Left = x[..t], right = x[t..]: within-left, between, within-right.
        let (mut wl, mut b, mut wr) = (0.0, 0.0, total);
        let mut best: Option<(usize, f64)> = None;
        for t in 0..n - min_size {
            // Move x[t] from the right side to the left.
            let to_left = prefix[t][t];
            let to_right = prefix[t][n] - prefix[t][t + 1];
            wl += to_left;
            b += to_right - to_left;
            wr -= to_right;
            let at = t + 1;
            if at < min_size {
                continue;
            }
            let (l, r) = (at as f64, (n - at) as f64);
            let e = 2.0 * b / (l * r) - 2.0 * wl / (l * (l - 1.0)) - 2.0 * wr / (r * (r - 1.0));
            let q = l * r / (l + r) * e;
            if best.is_none_or(|(_, bq)| q > bq) {
                best = Some((at, q));
            }
        }
        best
    }

    #[test]
    fn the_fast_best_split_agrees_with_the_quadratic_one() {
        let mut g = StdRng::seed_from_u64(5);
        for len in [6usize, 7, 16, 30, 101, 365] {
            for _ in 0..20 {
                let mut x: Vec<f64> = (0..len)
                    .map(|i| {
                        1000.0 * (1.0 + 0.05 * normal(&mut g)) * if i > len / 3 { 0.9 } else { 1.0 }
                    })
                    .collect();
                // Ties, as rounded figures have.
                x[len / 2] = x[0];
                let (fast, slow) = (
                    best_split(&x, 3).unwrap(),
                    quadratic_best_split(&x, 3).unwrap(),
                );
                assert_eq!(fast.0, slow.0, "{x:?}");
                assert!(
                    (fast.1 - slow.1).abs() <= 1e-9 * slow.1.abs().max(1.0),
                    "{fast:?} {slow:?}"
                );
            }
        }
    }

    #[test]
    fn the_best_split_of_a_clean_step_is_the_step() {
        let mut x = vec![10.0; 8];
        x.extend([20.0; 6]);
        assert_eq!(best_split(&x, 3).unwrap().0, 8);
        assert_eq!(best_split(&x[..5], 3), None);
        // Q against a direct evaluation of the formula at one split.
        let (l, r) = (&x[..8], &x[8..]);
        let between: f64 = l
            .iter()
            .flat_map(|a| r.iter().map(move |b| (a - b).abs()))
            .sum();
        let q = 8.0 * 6.0 / 14.0 * (2.0 * between / 48.0);
        assert!((best_split(&x, 3).unwrap().1 - q).abs() < 1e-9);
    }

    #[test]
    fn a_15_percent_step_in_1_percent_noise_is_found_where_it_is() {
        // The step of the run test: night 11 of 16 drops by 15%.
        let step = |s| series(16, 0.01, s, |i| if i >= 10 { 0.85 } else { 1.0 });
        let found = rate(200, step, |c| c.iter().any(|c| c.index == 10));
        assert!(found >= 0.95, "found the step in {found} of the series");
        let exact = rate(200, step, |c| c.len() == 1 && c[0].index == 10);
        assert!(exact >= 0.85, "exactly the step in {exact}");
    }

    #[test]
    fn pure_noise_raises_few_false_alarms() {
        let noise = |s| series(30, 0.01, 1000 + s, |_| 1.0);
        let alarms = rate(200, noise, |c| !c.is_empty());
        // A 1% test over a bisection: few noise series get one.
        assert!(alarms <= 0.05, "false alarms in {alarms} of pure noise");
    }

    #[test]
    fn one_outlier_night_is_not_a_change() {
        let outlier = |s| series(30, 0.01, 2000 + s, |i| if i == 15 { 0.7 } else { 1.0 });
        let alarms = rate(200, outlier, |c| !c.is_empty());
        assert!(
            alarms <= 0.15,
            "an outlier night raised a change in {alarms}"
        );
    }

    #[test]
    fn a_slow_drift_is_found_somewhere_in_it() {
        // 1% a night for 30 nights, in 1% noise: a 30% slide.
        let drift = |s| series(30, 0.01, 3000 + s, |i| 1.0 - 0.01 * i as f64);
        let found = rate(100, drift, |c| !c.is_empty());
        assert!(found >= 0.9, "found the drift in {found}");
    }

    #[test]
    fn the_same_series_gives_the_same_answer() {
        let x = series(20, 0.02, 7, |i| if i >= 12 { 1.2 } else { 1.0 });
        assert_eq!(
            detect(&x, &Options::default()),
            detect(&x, &Options::default())
        );
    }
}
