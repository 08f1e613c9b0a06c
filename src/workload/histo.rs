//! Per-worker recording of outcomes: HDR histograms (the only importer of
//! `hdrhistogram`), counts, error samples and a per-second series. Each
//! worker owns one `Recorder`; the collector merges them at the end, so
//! the hot path never shares or allocates.

use crate::results::model::{OpStats, Percentiles, SecondSample};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Distinct error messages kept per kind: the first few, for the phase
/// result and the report (issue 34).
pub(crate) const ERROR_SAMPLES: usize = 3;
/// The most characters of one kept error message (a server's message may
/// be of any length).
pub(crate) const ERROR_SAMPLE_CHARS: usize = 300;

/// `msg` cut to [`ERROR_SAMPLE_CHARS`] characters, marked when cut.
fn clip(msg: String) -> String {
    match msg.char_indices().nth(ERROR_SAMPLE_CHARS) {
        Some((at, _)) => format!("{}…", &msg[..at]),
        None => msg,
    }
}

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
pub(crate) struct Recorder {
    names: Vec<&'static str>,
    kinds: Vec<KindRec>,
    /// Per second: successes per kind, then errors, then inner calls
    /// (already counted under their kind), flattened.
    series: Vec<u64>,
    /// Inner calls recorded under their kinds, left out of the totals.
    inner_ok: u64,
    inner_errors: u64,
}

impl Recorder {
    /// A recorder for operation kinds `names` (indexed by position).
    pub fn new(names: &[&'static str], intended: bool) -> Recorder {
        Recorder {
            names: names.to_vec(),
            kinds: names.iter().map(|_| KindRec::new(intended)).collect(),
            series: Vec::new(),
            inner_ok: 0,
            inner_errors: 0,
        }
    }

    fn width(&self) -> usize {
        self.names.len() + 2
    }

    fn bump_second(&mut self, second: usize, slot: usize, n: u64) {
        let w = self.width();
        let need = (second + 1) * w;
        if self.series.len() < need {
            self.series.resize(need, 0);
        }
        self.series[second * w + slot] += n;
    }

    /// `ops` successes of `kind` done together in one call (a batch of
    /// inserts is one call) that took `sent_ns` (and `intended_ns` from its
    /// intended start), finishing in measured second `second`. The call is
    /// one latency measurement, as YCSB measures each call it makes.
    #[inline]
    pub fn ok(
        &mut self,
        kind: usize,
        ops: u64,
        sent_ns: u64,
        intended_ns: Option<u64>,
        second: usize,
    ) {
        let k = &mut self.kinds[kind];
        k.ok += ops;
        let _ = k.sent.record(sent_ns.max(1));
        if let (Some(h), Some(v)) = (k.intended.as_mut(), intended_ns) {
            let _ = h.record(v.max(1));
        }
        self.bump_second(second, kind, ops);
    }

    /// `ops` failures of `kind` in one call; its message is kept if new and
    /// there is room.
    pub fn error(&mut self, kind: usize, ops: u64, msg: &dyn std::fmt::Display, second: usize) {
        self.count_error(kind, ops, msg);
        let slot = self.names.len();
        self.bump_second(second, slot, ops);
    }

    fn count_error(&mut self, kind: usize, ops: u64, msg: &dyn std::fmt::Display) {
        let k = &mut self.kinds[kind];
        k.errors += ops;
        if k.error_samples.len() < ERROR_SAMPLES {
            let m = clip(msg.to_string());
            if !k.error_samples.contains(&m) {
                k.error_samples.push(m);
            }
        }
    }

    /// A successful call made inside another operation (the read of a
    /// read-modify-write): counted and timed under its own kind, as YCSB's
    /// `DBWrapper` measures every call, but not again in the phase totals
    /// or in the per-second operations.
    pub(crate) fn inner_ok(
        &mut self,
        kind: usize,
        sent_ns: u64,
        intended_ns: Option<u64>,
        second: usize,
    ) {
        self.ok(kind, 1, sent_ns, intended_ns, second);
        self.inner_ok += 1;
        let slot = self.names.len() + 1;
        self.bump_second(second, slot, 1);
    }

    /// A failed call made inside another operation, which failed with it:
    /// an error of `kind`, not again in the phase totals.
    pub(crate) fn inner_error(&mut self, kind: usize, msg: &dyn std::fmt::Display) {
        self.count_error(kind, 1, msg);
        self.inner_errors += 1;
    }

    /// Adds another recorder of the same kinds.
    pub(crate) fn merge(&mut self, other: &Recorder) {
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
        self.inner_ok += other.inner_ok;
        self.inner_errors += other.inner_errors;
    }

    /// Successful operations over every kind (inner calls not again).
    pub(crate) fn total_ok(&self) -> u64 {
        self.kinds.iter().map(|k| k.ok).sum::<u64>() - self.inner_ok
    }

    /// Failed operations over every kind (inner calls not again).
    pub fn total_errors(&self) -> u64 {
        self.kinds.iter().map(|k| k.errors).sum::<u64>() - self.inner_errors
    }

    /// Per-kind statistics over a window of `secs` seconds; kinds that
    /// never ran are left out.
    pub(crate) fn op_stats(&self, secs: f64) -> BTreeMap<String, OpStats> {
        self.names
            .iter()
            .zip(&self.kinds)
            .filter(|(_, k)| k.ok + k.errors > 0)
            .map(|(n, k)| {
                let stats = OpStats {
                    count: k.ok,
                    errors: k.errors,
                    throughput: if secs > 0.0 { k.ok as f64 / secs } else { 0.0 },
                    calls: (k.sent.len() < k.ok).then(|| k.sent.len()),
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
        let n = self.names.len();
        self.series
            .chunks(self.width())
            .enumerate()
            .map(|(t, row)| SecondSample {
                t: t as u64,
                ops: row[..n].iter().sum::<u64>() - row[n + 1],
                errors: row[n],
                by_kind: self
                    .names
                    .iter()
                    .zip(&row[..n])
                    .filter(|(_, c)| **c > 0)
                    .map(|(n, c)| (n.to_string(), *c))
                    .collect(),
            })
            .collect()
    }
}

/// The most memory a [`Recorder`] for `kinds` operation kinds can come to
/// when latencies reach `max_ns` and the phase records `seconds` seconds:
/// its histograms grown to that range (two per kind when `intended`
/// latencies are kept too), plus the per-second series. A worker's
/// recorder holds only what it saw, so this is the worst case: one slow
/// answer of each kind grows every histogram to its full range.
pub(crate) fn recorder_bytes(kinds: usize, intended: bool, max_ns: u64, seconds: u64) -> u64 {
    let h = Histogram::<u64>::new_with_bounds(1, max_ns.max(2), 3)
        .expect("3 significant digits over a range of at least 2 is valid");
    let hist = (h.distinct_values() * std::mem::size_of::<u64>()) as u64;
    let per_kind = if intended { 2 * hist } else { hist };
    let series = seconds.saturating_mul((kinds as u64 + 2) * 8);
    (kinds as u64 * per_kind).saturating_add(series)
}

/// Nanosecond histogram to microsecond percentiles.
fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    let q = |q: f64| Some(us(h.value_at_quantile(q)));
    Percentiles {
        min: Some(us(h.min())),
        mean: Some(h.mean() / 1000.0),
        p50: q(0.50),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        max: Some(us(h.max())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_case_size_is_what_a_histogram_grows_to_at_the_longest_latency() {
        let max_ns = 30_000_000_000;
        let mut h = new_hist();
        let small = h.distinct_values();
        h.record(max_ns).unwrap();
        let grown = (h.distinct_values() * 8) as u64;
        assert!(grown > 50 * small as u64, "{small} -> {grown}");
        let one = recorder_bytes(1, false, max_ns, 0);
        assert!(
            grown <= one && one <= grown + grown / 10,
            "{grown} vs {one}"
        );
        assert_eq!(recorder_bytes(5, true, max_ns, 0), 10 * one);
        assert_eq!(recorder_bytes(5, false, max_ns, 60) - 5 * one, 60 * 7 * 8);
    }

    #[test]
    fn merged_recorders_report_counts_percentiles_and_series() {
        let mut a = Recorder::new(&["READ", "UPDATE"], false);
        let mut b = Recorder::new(&["READ", "UPDATE"], false);
        for i in 1..=100u64 {
            a.ok(0, 1, i * 1000, None, 0);
        }
        b.ok(1, 1, 5_000, None, 1);
        b.error(1, 1, &"boom", 1);
        b.error(1, 1, &"boom", 1);
        a.merge(&b);
        let s = a.op_stats(2.0);
        assert_eq!(s["READ"].count, 100);
        assert!((s["READ"].latency_us.p50.unwrap() - 50.0).abs() < 0.5);
        assert!((s["READ"].latency_us.max.unwrap() - 100.0).abs() < 0.5);
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

    #[test]
    fn a_batch_counts_every_record_and_is_one_latency_measurement() {
        let mut r = Recorder::new(&["INSERT"], false);
        r.ok(0, 100, 2_000_000, None, 0);
        r.ok(0, 100, 4_000_000, None, 0);
        r.error(0, 100, &"duplicate key", 1);
        let s = r.op_stats(1.0);
        assert_eq!(s["INSERT"].count, 200);
        assert_eq!(s["INSERT"].errors, 100);
        assert_eq!(s["INSERT"].throughput, 200.0);
        // Two measurements, 2 ms and 4 ms: the mean is 3 ms, not 30 us.
        assert!((s["INSERT"].latency_us.mean.unwrap() - 3000.0).abs() < 5.0);
        assert_eq!((r.total_ok(), r.total_errors()), (200, 100));
        let series = r.series();
        assert_eq!((series[0].ops, series[1].errors), (200, 100));
    }

    #[test]
    fn inner_calls_count_under_their_kind_but_not_in_the_totals() {
        let names = ["READ", "UPDATE", "READ-MODIFY-WRITE"];
        let mut a = Recorder::new(&names, false);
        a.ok(0, 1, 1_000, None, 0);
        a.inner_ok(0, 1_000, None, 0);
        a.inner_ok(1, 1_000, None, 0);
        a.ok(2, 1, 2_000, None, 0);
        a.inner_error(0, &"gone");
        a.error(2, 1, &"gone", 0);
        let mut total = Recorder::new(&names, false);
        total.merge(&a);
        let s = total.op_stats(1.0);
        assert_eq!((s["READ"].count, s["READ"].errors), (2, 1));
        assert_eq!(s["UPDATE"].count, 1);
        assert_eq!(
            (s["READ-MODIFY-WRITE"].count, s["READ-MODIFY-WRITE"].errors),
            (1, 1)
        );
        assert_eq!((total.total_ok(), total.total_errors()), (2, 1));
        let second = &total.series()[0];
        assert_eq!((second.ops, second.errors), (2, 1));
        assert_eq!(second.by_kind["READ"], 2);
    }

    #[test]
    fn error_samples_keep_a_few_distinct_messages_each_cut_short() {
        let mut r = Recorder::new(&["READ"], false);
        let long = "x".repeat(10_000);
        r.error(0, 1, &long, 0);
        for m in ["a", "a", "b", "c", "d"] {
            r.error(0, 1, &m, 0);
        }
        let s = &r.op_stats(1.0)["READ"];
        assert_eq!(s.errors, 6);
        assert_eq!(s.error_samples.len(), ERROR_SAMPLES);
        assert_eq!(s.error_samples[0].chars().count(), ERROR_SAMPLE_CHARS + 1);
        assert!(s.error_samples[0].ends_with('…'));
        assert_eq!(s.error_samples[1..], ["a", "b"]);
        assert_eq!(
            clip("é".repeat(400)).chars().count(),
            ERROR_SAMPLE_CHARS + 1
        );
    }
}
