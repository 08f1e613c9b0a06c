//! Operation kinds and mixes: YCSB workloads A-F and custom proportions.

use super::dist::Distribution;
use super::rng::Rng;
use std::collections::BTreeMap;

/// One YCSB operation kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    Read = 0,
    Update = 1,
    Insert = 2,
    Scan = 3,
    ReadModifyWrite = 4,
}

impl OpKind {
    pub const ALL: [OpKind; 5] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
    ];

    /// Upper-case YCSB name.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan => "SCAN",
            OpKind::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }

    /// The scenario's lower-case name.
    pub fn key(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::ReadModifyWrite => "read_modify_write",
        }
    }
}

/// Proportions of each kind, normalised, ready to draw from.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// Proportion per kind, indexed by `OpKind as usize`.
    pub proportions: [f64; 5],
    cumulative: [f64; 5],
}

/// What is wrong with a custom mix's proportions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum MixProblem {
    /// A proportion below 0 (or not a number).
    Negative,
    /// Every proportion is 0.
    Empty,
    /// The proportions do not sum to 1: their sum.
    Sum(f64),
}

impl std::fmt::Display for MixProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MixProblem::Negative => f.write_str("mix proportions cannot be negative"),
            MixProblem::Empty => {
                f.write_str("mix has no operations: give at least one proportion above 0")
            }
            MixProblem::Sum(sum) => write!(f, "mix proportions sum to {sum}, not 1"),
        }
    }
}

/// The one rule for a custom mix, for a scenario's `mix:` and for `drive`
/// alike (docs/workloads.md): each proportion is at least 0, and they sum to 1.
pub(crate) fn check_proportions(proportions: &[f64; 5]) -> Vec<MixProblem> {
    let mut out = Vec::new();
    if proportions.iter().any(|p| !p.is_finite() || *p < 0.0) {
        out.push(MixProblem::Negative);
    }
    let total: f64 = proportions.iter().sum();
    if total == 0.0 {
        out.push(MixProblem::Empty);
    } else if (total - 1.0).abs() > 1e-6 {
        out.push(MixProblem::Sum(total));
    }
    out
}

/// Why a mix is refused: its proportions ([`MixProblem`]s, listed), an
/// unknown operation or a part that does not read. Callers report it
/// against the field that gave the mix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct BadMix(pub String);

impl Mix {
    /// From proportions per kind, which [`check_proportions`] accepts.
    pub fn new(proportions: [f64; 5]) -> Result<Mix, BadMix> {
        let problems = check_proportions(&proportions);
        if !problems.is_empty() {
            return Err(BadMix(crate::display::list(&problems)));
        }
        let total: f64 = proportions.iter().sum();
        let mut p = proportions;
        let mut cumulative = [0.0; 5];
        let mut acc = 0.0;
        for i in 0..5 {
            p[i] /= total;
            acc += p[i];
            cumulative[i] = acc;
        }
        cumulative[4] = 1.0 + f64::EPSILON;
        Ok(Mix {
            proportions: p,
            cumulative,
        })
    }

    /// From a scenario map like `{read: 0.9, update: 0.05, insert: 0.05}`.
    pub(crate) fn from_map(m: &BTreeMap<String, f64>) -> Result<Mix, BadMix> {
        let mut p = [0.0; 5];
        for (k, v) in m {
            let kind = OpKind::ALL
                .iter()
                .find(|o| o.key() == k.as_str() || (k == "rmw" && **o == OpKind::ReadModifyWrite))
                .ok_or_else(|| {
                    BadMix(format!(
                        "unknown operation `{k}` in mix; use read, update, insert, scan, read_modify_write"
                    ))
                })?;
            p[*kind as usize] = *v;
        }
        Mix::new(p)
    }

    /// From `read=0.9,update=0.05,insert=0.05`.
    pub fn parse(s: &str) -> Result<Mix, BadMix> {
        let mut m = BTreeMap::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| BadMix(format!("`{part}` in mix `{s}` is not `kind=proportion`")))?;
            let v: f64 = v
                .trim()
                .parse()
                .map_err(|_| BadMix(format!("`{v}` in mix `{s}` is not a number")))?;
            m.insert(k.trim().to_string(), v);
        }
        Mix::from_map(&m)
    }

    /// The mix and default distribution of YCSB core workload `a`..`f`.
    pub fn ycsb(letter: char) -> Option<(Mix, Distribution)> {
        let (p, d) = match letter.to_ascii_lowercase() {
            'a' => ([0.5, 0.5, 0.0, 0.0, 0.0], Distribution::Zipfian),
            'b' => ([0.95, 0.05, 0.0, 0.0, 0.0], Distribution::Zipfian),
            'c' => ([1.0, 0.0, 0.0, 0.0, 0.0], Distribution::Zipfian),
            'd' => ([0.95, 0.0, 0.05, 0.0, 0.0], Distribution::Latest),
            'e' => ([0.0, 0.0, 0.05, 0.95, 0.0], Distribution::Zipfian),
            'f' => ([0.5, 0.0, 0.0, 0.0, 0.5], Distribution::Zipfian),
            _ => return None,
        };
        Some((Mix::new(p).ok()?, d))
    }

    /// Proportion of `kind`.
    pub fn share(&self, kind: OpKind) -> f64 {
        self.proportions[kind as usize]
    }

    /// Draws the next kind.
    #[inline]
    pub fn next(&self, rng: &mut Rng) -> OpKind {
        let u = rng.next_f64();
        let mut i = 0;
        while i < 4 && u >= self.cumulative[i] {
            i += 1;
        }
        OpKind::ALL[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_mix_proportions_hold_over_100k_draws() {
        let mix = Mix::parse("read=0.9,update=0.05,insert=0.05").unwrap();
        let mut rng = Rng::new(1, 0);
        let mut counts = [0u64; 5];
        for _ in 0..100_000 {
            counts[mix.next(&mut rng) as usize] += 1;
        }
        let share = |k: OpKind| counts[k as usize] as f64 / 100_000.0;
        assert!((share(OpKind::Read) - 0.9).abs() < 0.005, "{counts:?}");
        assert!((share(OpKind::Update) - 0.05).abs() < 0.003, "{counts:?}");
        assert!((share(OpKind::Insert) - 0.05).abs() < 0.003, "{counts:?}");
        assert_eq!(counts[OpKind::Scan as usize], 0);
    }

    #[test]
    fn every_ycsb_workload_draws_its_table_proportions() {
        for letter in ['a', 'b', 'c', 'd', 'e', 'f'] {
            let (mix, _) = Mix::ycsb(letter).unwrap();
            let mut rng = Rng::new(2, 0);
            let mut counts = [0u64; 5];
            for _ in 0..100_000 {
                counts[mix.next(&mut rng) as usize] += 1;
            }
            for k in OpKind::ALL {
                let got = counts[k as usize] as f64 / 100_000.0;
                assert!(
                    (got - mix.share(k)).abs() < 0.006,
                    "workload {letter} {k:?}: {got} vs {}",
                    mix.share(k)
                );
            }
        }
        assert_eq!(Mix::ycsb('d').unwrap().1, Distribution::Latest);
        assert!(Mix::ycsb('g').is_none());
    }

    #[test]
    fn bad_mixes_are_refused_with_the_reason() {
        assert!(
            Mix::parse("read=0")
                .unwrap_err()
                .0
                .contains("no operations")
        );
        assert!(
            Mix::parse("delete=1")
                .unwrap_err()
                .0
                .contains("unknown operation")
        );
        assert!(Mix::parse("read=x").unwrap_err().0.contains("not a number"));
    }
}
