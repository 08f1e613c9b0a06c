//! A published finding of a write-up as data: what is compared (a metric of
//! one phase, side `a` against side `b`), the ratio a/b the write-up
//! reports, and how it is expected to come out. Read from
//! `reproduces.claims` (`spec/writeup.rs`), resolved to the cells that play
//! each side by the plan (`plan/claims.rs`), decided after a run
//! (`claims/`), kept in `claims.json` and the history.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a claim compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Operations per second of the phase (or of its `op`).
    Throughput,
    /// 99th percentile latency of the phase's `op` (or of its busiest kind).
    LatencyP99,
    /// The data's size on disk after the load.
    DataSize,
    /// TPC-C new orders per minute (the phase's headline).
    Tpmc,
    /// Seconds the load phase took.
    LoadTime,
}

impl Metric {
    /// Every metric, by the word specs use.
    pub const ALL: [(&'static str, Metric); 5] = [
        ("throughput", Metric::Throughput),
        ("latency_p99", Metric::LatencyP99),
        ("data_size", Metric::DataSize),
        ("tpmc", Metric::Tpmc),
        ("load_time", Metric::LoadTime),
    ];
    /// The word specs use.
    pub fn as_str(self) -> &'static str {
        Metric::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(w, _)| w)
    }
    /// The metric a spec word names.
    pub fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.iter().find(|(w, _)| *w == s).map(|(_, m)| *m)
    }
    /// Whether the metric belongs to a phase (all but `data_size`, which
    /// is the cell's).
    pub fn needs_phase(self) -> bool {
        !matches!(self, Metric::DataSize)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the write-up says side `a` compares with side `b`, on the metric's
/// own scale (`a > b` on latency means a is slower).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Greater,
    Less,
    /// Within `tolerance` (0.10 = 10%) of each other, either way.
    About {
        tolerance: f64,
    },
}

/// The tolerance of `a ~ b` when the claim gives none.
pub(crate) const DEFAULT_TOLERANCE: f64 = 0.10;

impl Expect {
    /// Parse `a > b`, `a < b`, `a ~ b` (spaces optional).
    pub fn parse(s: &str, tolerance: Option<f64>) -> Option<Expect> {
        let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        match compact.as_str() {
            "a>b" => Some(Expect::Greater),
            "a<b" => Some(Expect::Less),
            "a~b" => Some(Expect::About {
                tolerance: tolerance.unwrap_or(DEFAULT_TOLERANCE),
            }),
            _ => None,
        }
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Greater => f.write_str("a > b"),
            Expect::Less => f.write_str("a < b"),
            Expect::About { tolerance } => write!(f, "a ~ b (within {:.0}%)", tolerance * 100.0),
        }
    }
}

/// One side of a claim: who it is in the write-up, and the matrix entries
/// that play it here (their cell labels, `redis@7.0` or a label).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// As the claim names it (`tokumx@2.0.2`).
    pub name: String,
    /// Cell labels of the matrix entries that play it (the part of a cell
    /// id before `/<environment>/r<n>`).
    pub entries: Vec<String>,
}

/// A claim of a write-up, resolved against the scenario's matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub id: String,
    /// In the write-up's words.
    pub says: String,
    pub metric: Metric,
    /// The scenario's phase; `None` for `data_size`.
    pub phase: Option<String>,
    /// One operation kind of the phase (`INSERT`); `None` = all of them.
    pub op: Option<String>,
    /// The phase's thread count to compare at; `None` = its only one, or
    /// the highest of a sweep.
    pub threads: Option<u32>,
    /// The environment to compare in; `None` = the matrix's only one.
    pub environment: Option<String>,
    pub a: Side,
    pub b: Side,
    /// a / b as the write-up reports it.
    pub published: Option<f64>,
    pub expect: Expect,
    /// On a scenario whose stand-ins play the write-up's engines: what the
    /// pair here stands for (`LSM vs B-tree`).
    pub stands_for: Option<String>,
}

/// What a run says of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The whole interval of a/b is on the claimed side.
    Holds,
    /// The whole interval is on the other side.
    Reversed,
    /// The interval crosses.
    Inconclusive,
    /// A side is missing, invalid or failed (the outcome says why).
    NotMeasured,
}

impl Verdict {
    /// The words reports and `benchcage claims` print.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Reversed => "reversed",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotMeasured => "not measured",
        }
    }
    /// Parse the words of `as_str`.
    pub fn parse(s: &str) -> Option<Verdict> {
        [
            Verdict::Holds,
            Verdict::Reversed,
            Verdict::Inconclusive,
            Verdict::NotMeasured,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One claim decided by one run: the measured ratio a/b, its 95%
/// interval, the verdict and the cells behind each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub claim: Claim,
    pub verdict: Verdict,
    /// Why the claim is `not measured`, or how the interval was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Measured a / b.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lo: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hi: Option<f64>,
    /// Each side's figure (mean over its repetitions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_value: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_value: Option<f64>,
    /// Keys of the cells behind each side.
    pub a_cells: Vec<String>,
    pub b_cells: Vec<String>,
}

/// `claims.json` of a run folder: every claim of its scenario, decided.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClaimsRecord {
    pub claims: Vec<Outcome>,
}

impl ClaimsRecord {
    /// Whether any claim came out reversed.
    pub(crate) fn any_reversed(&self) -> bool {
        self.claims.iter().any(|o| o.verdict == Verdict::Reversed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_word_parses_back_to_itself() {
        for (w, m) in Metric::ALL {
            assert_eq!(Metric::parse(w), Some(m));
            assert_eq!(m.as_str(), w);
        }
        assert_eq!(Metric::parse("speed"), None);
    }

    #[test]
    fn expectations_parse_with_or_without_spaces() {
        assert_eq!(Expect::parse("a > b", None), Some(Expect::Greater));
        assert_eq!(Expect::parse("a<b", None), Some(Expect::Less));
        assert_eq!(
            Expect::parse("a ~ b", None),
            Some(Expect::About { tolerance: 0.10 })
        );
        assert_eq!(Expect::parse("b > a", None), None);
    }
}
