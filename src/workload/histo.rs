//! Per-worker recording of outcomes: HDR histograms (the only importer of
//! `hdrhistogram`), counts, error samples and a per-second series. Each
//! worker owns one `Recorder`; the collector merges them at the end, so
//! the hot path never shares or allocates.

use crate::results::model::{OpStats, Percentiles, SecondSample};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Distinct error messages kept per kind.
const ERROR_SAMPLES: usize = 5;

/// What one kind has recorded.
#[derive(Debug, Clone)]
struct KindRec {
    ok: u64,
    errors: u64,
    /// Nanoseconds from the send.
    sent: Histogram<u64>,
    /// Nanoseconds from the intended start (target rate only).
    intended: Option<Histogram<u64>>,
    error_samples: Vec<String>,
}

fn new_hist() -> Histogram<u64> {
    // Auto-resizing, 3 significant digits: grows only to the values seen.
    Histogram::new(3).expect("3 significant digits is a valid precision")
}

impl KindRec {
    fn new(intended: bool) -> KindRec {
        KindRec {
            ok: 0,
            errors: 0,
            sent: new_hist(),
            intended: intended.then(new_hist),
            error_samples: Vec::new(),
        }
    }
}

/// Outcomes of one worker (or, after merging, of a whole phase).
#[derive(Debug, Clone)]
pub struct Recorder {
    names: Vec<&'static str>,
    kinds: Vec<KindRec>,
    /// Per second: successes per kind, then errors, flattened.
    series: Vec<u64>,
}

impl Recorder {
    /// A recorder for operation kinds `names` (indexed by position).
    pub fn new(names: &[&'static str], intended: bool) -> Recorder {
        Recorder {
            names: names.to_vec(),
            kinds: names.iter().map(|_| KindRec::new(intended)).collect(),
            series: Vec::new(),
        }
    }

    fn width(&self) -> usize {
        self.names.len() + 1
    }

    fn bump_second(&mut self, second: usize, slot: usize) {
        let w = self.width();
        let need = (second + 1) * w;
        if self.series.len() < need {
            self.series.resize(need, 0);
        }
        self.series[second * w + slot] += 1;
    }

    /// A success of `kind` that took `sent_ns` (and `intended_ns` from its
    /// intended start), finishing in measured second `second`.
    #[inline]
    pub fn ok(&mut self, kind: usize, sent_ns: u64, intended_ns: Option<u64>, second: usize) {
        let k = &mut self.kinds[kind];
        k.ok += 1;
        let _ = k.sent.record(sent_ns.max(1));
        if let (Some(h), Some(v)) = (k.intended.as_mut(), intended_ns) {
            let _ = h.record(v.max(1));
        }
        self.bump_second(second, kind);
    }

    /// A failure of `kind`; its message is kept if new and there is room.
    pub fn error(&mut self, kind: usize, msg: &dyn std::fmt::Display, second: usize) {
        let k = &mut self.kinds[kind];
        k.errors += 1;
        if k.error_samples.len() < ERROR_SAMPLES {
            let m = msg.to_string();
            if !k.error_samples.contains(&m) {
                k.error_samples.push(m);
            }
        }
        let slot = self.names.len();
        self.bump_second(second, slot);
    }

    /// Adds another recorder of the same kinds.
    pub fn merge(&mut self, other: &Recorder) {
        for (a, b) in self.kinds.iter_mut().zip(&other.kinds) {
            a.ok += b.ok;
            a.errors += b.errors;
            let _ = a.sent.add(&b.sent);
            if let (Some(x), Some(y)) = (a.intended.as_mut(), b.intended.as_ref()) {
                let _ = x.add(y);
            }
            for m in &b.error_samples {
                if a.error_samples.len() < ERROR_SAMPLES && !a.error_samples.contains(m) {
                    a.error_samples.push(m.clone());
                }
            }
        }
        if self.series.len() < other.series.len() {
            self.series.resize(other.series.len(), 0);
        }
        for (a, b) in self.series.iter_mut().zip(&other.series) {
            *a += b;
        }
    }

    /// Successes over every kind.
    pub fn total_ok(&self) -> u64 {
        self.kinds.iter().map(|k| k.ok).sum()
    }

    /// Failures over every kind.
    pub fn total_errors(&self) -> u64 {
        self.kinds.iter().map(|k| k.errors).sum()
    }

    /// Per-kind statistics over a window of `secs` seconds; kinds that
    /// never ran are left out.
    pub fn op_stats(&self, secs: f64) -> BTreeMap<String, OpStats> {
        self.names
            .iter()
            .zip(&self.kinds)
            .filter(|(_, k)| k.ok + k.errors > 0)
            .map(|(n, k)| {
                let stats = OpStats {
                    count: k.ok,
                    errors: k.errors,
                    throughput: if secs > 0.0 { k.ok as f64 / secs } else { 0.0 },
                    latency_us: percentiles(&k.sent),
                    intended_latency_us: k.intended.as_ref().map(percentiles),
                    error_samples: k.error_samples.clone(),
                };
                (n.to_string(), stats)
            })
            .collect()
    }

    /// The per-second series.
    pub fn series(&self) -> Vec<SecondSample> {
        let w = self.width();
        self.series
            .chunks(w)
            .enumerate()
            .map(|(t, row)| SecondSample {
                t: t as u64,
                ops: row[..w - 1].iter().sum(),
                errors: row[w - 1],
                by_kind: self
                    .names
                    .iter()
                    .zip(row)
                    .filter(|(_, c)| **c > 0)
                    .map(|(n, c)| (n.to_string(), *c))
                    .collect(),
            })
            .collect()
    }
}

/// Nanosecond histogram to microsecond percentiles.
fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    Percentiles {
        min: us(h.min()),
        mean: h.mean() / 1000.0,
        p50: us(h.value_at_quantile(0.50)),
        p95: us(h.value_at_quantile(0.95)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_recorders_report_counts_percentiles_and_series() {
        let mut a = Recorder::new(&["READ", "UPDATE"], false);
        let mut b = Recorder::new(&["READ", "UPDATE"], false);
        for i in 1..=100u64 {
            a.ok(0, i * 1000, None, 0);
        }
        b.ok(1, 5_000, None, 1);
        b.error(1, &"boom", 1);
        b.error(1, &"boom", 1);
        a.merge(&b);
        let s = a.op_stats(2.0);
        assert_eq!(s["READ"].count, 100);
        assert!((s["READ"].latency_us.p50 - 50.0).abs() < 0.5);
        assert!((s["READ"].latency_us.max - 100.0).abs() < 0.5);
        assert_eq!(s["READ"].throughput, 50.0);
        assert_eq!(s["UPDATE"].count, 1);
        assert_eq!(s["UPDATE"].errors, 2);
        assert_eq!(s["UPDATE"].error_samples, vec!["boom".to_string()]);
        let series = a.series();
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].ops, 100);
        assert_eq!(series[1].ops, 1);
        assert_eq!(series[1].errors, 2);
        assert_eq!(a.total_errors(), 2);
    }
}
