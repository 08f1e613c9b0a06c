//! Change points over history (docs/reports.md, "Change points"): every
//! series of results a nightly makes (engine@version x environment x
//! phase x threads x operation x metric, on one hardware class), one
//! value per run, searched with E-Divisive means ([`edivisive`]). A
//! change point is a run after which the series is different, with the
//! size of the difference and its interval; the newest change point of a
//! series that is a regression, recent and not acknowledged is an alarm.

pub mod edivisive;

use crate::results::flat::{FlatRow, Verdict};
use edivisive::{ChangePoint, Options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// What a series measures, and which way is worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    Throughput,
    LatencyP99,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::LatencyP99 => "p99",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Metric::Throughput => "ops/s",
            Metric::LatencyP99 => "us",
        }
    }

    /// Whether a relative change `c` (after / before - 1) is for the worse.
    fn worse(self, c: f64) -> bool {
        match self {
            Metric::Throughput => c < 0.0,
            Metric::LatencyP99 => c > 0.0,
        }
    }

    fn of(self, row: &FlatRow) -> Option<f64> {
        match self {
            Metric::Throughput => Some(row.throughput),
            Metric::LatencyP99 => row.lat_p99_us,
        }
    }
}

/// Which results form one series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeriesKey {
    pub engine: String,
    pub version: String,
    pub environment: String,
    pub phase: String,
    pub threads: u32,
    pub op: String,
    pub metric: Metric,
    pub hardware_class: String,
}

impl SeriesKey {
    /// `redis@7.0 quickstart workload-a t2 READ throughput`.
    pub fn label(&self) -> String {
        format!(
            "{}@{} {} {} t{} {} {}",
            self.engine,
            self.version,
            self.environment,
            self.phase,
            self.threads,
            self.op,
            self.metric.name()
        )
    }
}

/// One run's value of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub run_id: String,
    pub started_at: String,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub key: SeriesKey,
    /// In run start order.
    pub points: Vec<Point>,
}

/// The series in `rows`: only phases that are results (ok and valid),
/// the mean over a run's repetitions as that run's value.
pub(crate) fn series_of(rows: &[FlatRow]) -> Vec<Series> {
    type Sums = BTreeMap<(String, String), (f64, usize)>;
    let mut by_key: BTreeMap<SeriesKey, Sums> = BTreeMap::new();
    for r in rows {
        if r.status != Verdict::Ok || !r.fidelity_valid {
            continue;
        }
        for metric in [Metric::Throughput, Metric::LatencyP99] {
            let Some(v) = metric.of(r).filter(|v| v.is_finite()) else {
                continue;
            };
            let key = SeriesKey {
                engine: r.engine.clone(),
                version: r.version.clone(),
                environment: r.environment.clone(),
                phase: r.phase.clone(),
                threads: r.threads,
                op: r.op.clone(),
                metric,
                hardware_class: r.hardware_class.clone(),
            };
            let run = (r.run_started_at.clone(), r.run_id.clone());
            let e = by_key.entry(key).or_default().entry(run).or_default();
            e.0 += v;
            e.1 += 1;
        }
    }
    by_key
        .into_iter()
        .map(|(key, runs)| Series {
            key,
            points: runs
                .into_iter()
                .map(|((started_at, run_id), (sum, n))| Point {
                    run_id,
                    started_at,
                    value: sum / n as f64,
                })
                .collect(),
        })
        .collect()
}

/// A change point of a series, as `benchcage changes` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `cp-` and ten hex digits of the series and the run: stable, for
    /// `--ack`.
    pub id: String,
    pub series: SeriesKey,
    /// The first run after the change.
    pub run_id: String,
    pub started_at: String,
    /// The means of the segments before and after.
    pub before: f64,
    pub after: f64,
    /// after / before - 1, and its 95% interval (bootstrap of the two
    /// segments' means).
    pub change: f64,
    pub interval: (f64, f64),
    pub p_value: f64,
    /// Worse for this metric (less throughput, more latency).
    pub regression: bool,
    /// The newest change point of its series.
    pub newest: bool,
    /// Among the series' last `window` runs.
    pub recent: bool,
    pub acknowledged: bool,
}

impl Change {
    /// An alarm: the newest change of its series, a recent regression
    /// that nobody acknowledged.
    pub(crate) fn is_alarm(&self) -> bool {
        self.newest && self.regression && self.recent && !self.acknowledged
    }

    pub fn unit(&self) -> &'static str {
        self.series.metric.unit()
    }
}

/// The id of a change of `series` at `run_id`.
pub(crate) fn change_id(series: &SeriesKey, run_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(series.label().as_bytes());
    h.update(b"|");
    h.update(series.hardware_class.as_bytes());
    h.update(b"|");
    h.update(run_id.as_bytes());
    let hex: String = h.finalize()[..5]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("cp-{hex}")
}

/// Every change point of every series, the newest runs' last.
/// `window`: how many of a series' last runs count as recent; `acked`:
/// the acknowledged change ids.
pub fn changes(
    series: &[Series],
    opts: &Options,
    window: usize,
    acked: &BTreeSet<String>,
) -> Vec<Change> {
    let mut out = Vec::new();
    for s in series {
        let values: Vec<f64> = s.points.iter().map(|p| p.value).collect();
        let cps = edivisive::detect(&values, opts);
        let mut bounds: Vec<usize> = vec![0];
        bounds.extend(cps.iter().map(|c| c.index));
        bounds.push(values.len());
        for (k, cp) in cps.iter().enumerate() {
            out.push(change_at(
                s,
                &values,
                cp,
                (bounds[k], bounds[k + 2]),
                window,
                acked,
                opts,
            ));
            if k + 1 == cps.len()
                && let Some(last) = out.last_mut()
            {
                last.newest = true;
            }
        }
    }
    out.sort_by(|a, b| {
        (a.started_at.as_str(), a.series.label()).cmp(&(b.started_at.as_str(), b.series.label()))
    });
    out
}

/// The change at `cp` of series `s`, between its neighbours `(from, to)`.
fn change_at(
    s: &Series,
    values: &[f64],
    cp: &ChangePoint,
    (from, to): (usize, usize),
    window: usize,
    acked: &BTreeSet<String>,
    opts: &Options,
) -> Change {
    let (left, right) = (&values[from..cp.index], &values[cp.index..to]);
    let (before, after) = (mean(left), mean(right));
    let change = after / before - 1.0;
    let interval = ratio_interval(left, right, opts.seed ^ cp.index as u64);
    let point = &s.points[cp.index];
    let id = change_id(&s.key, &point.run_id);
    Change {
        acknowledged: acked.contains(&id),
        id,
        series: s.key.clone(),
        run_id: point.run_id.clone(),
        started_at: point.started_at.clone(),
        before,
        after,
        change,
        interval,
        p_value: cp.p_value,
        regression: s.key.metric.worse(change),
        newest: false,
        recent: cp.index + window >= values.len(),
    }
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

/// The 95% percentile interval of mean(b) / mean(a) - 1 over 2,000
/// resamples of each side (nights are independent runs: a plain
/// bootstrap).
pub(crate) fn ratio_interval(a: &[f64], b: &[f64], seed: u64) -> (f64, f64) {
    let mut g = StdRng::seed_from_u64(seed);
    let mut resample = |x: &[f64]| {
        let s: f64 = (0..x.len()).map(|_| x[g.random_range(0..x.len())]).sum();
        s / x.len() as f64
    };
    let mut r: Vec<f64> = (0..2000)
        .map(|_| {
            let ma = resample(a);
            resample(b) / ma - 1.0
        })
        .collect();
    r.sort_by(f64::total_cmp);
    (r[49], r[1949])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(run: usize, throughput: f64) -> FlatRow {
        FlatRow {
            run_id: format!("run-{run:02}"),
            run_started_at: format!("2026-11-{:02}T02:00:00Z", run + 1),
            engine: "redis".into(),
            version: "7.0".into(),
            environment: "quickstart".into(),
            phase: "reads".into(),
            threads: 2,
            op: "READ".into(),
            status: Verdict::Ok,
            fidelity_valid: true,
            throughput,
            lat_p99_us: Some(1_000_000.0 / throughput),
            ..FlatRow::default()
        }
    }

    fn nights(values: &[f64]) -> Vec<FlatRow> {
        values.iter().enumerate().map(|(i, v)| row(i, *v)).collect()
    }

    #[test]
    fn a_step_down_is_a_recent_regression_in_throughput_and_in_latency() {
        let mut g = StdRng::seed_from_u64(11);
        let v: Vec<f64> = (0..16)
            .map(|i| {
                (if i >= 10 { 850.0 } else { 1000.0 }) * (1.0 + 0.01 * edivisive::normal(&mut g))
            })
            .collect();
        let series = series_of(&nights(&v));
        assert_eq!(series.len(), 2);
        let found = changes(&series, &Options::default(), 6, &BTreeSet::new());
        assert_eq!(found.len(), 2, "{found:#?}");
        for c in &found {
            assert_eq!(c.run_id, "run-10");
            assert!(c.is_alarm(), "{c:#?}");
            assert!(c.interval.0 <= c.change && c.change <= c.interval.1);
        }
        let t = found
            .iter()
            .find(|c| c.series.metric == Metric::Throughput)
            .unwrap();
        assert!((t.change + 0.15).abs() < 0.02, "{}", t.change);
        assert!(t.interval.1 < -0.1, "{:?}", t.interval);
        // Not recent within the last 5 runs (it is 6 back); acknowledged.
        let old = changes(&series, &Options::default(), 5, &BTreeSet::new());
        assert!(old.iter().all(|c| !c.is_alarm()));
        let acked: BTreeSet<String> = found.iter().map(|c| c.id.clone()).collect();
        let quiet = changes(&series, &Options::default(), 6, &acked);
        assert!(quiet.iter().all(|c| c.acknowledged && !c.is_alarm()));
    }

    #[test]
    fn an_improvement_is_a_change_but_no_alarm() {
        let v: Vec<f64> = (0..16)
            .map(|i| if i >= 10 { 1200.0 } else { 1000.0 })
            .collect();
        let found = changes(
            &series_of(&nights(&v)),
            &Options::default(),
            6,
            &BTreeSet::new(),
        );
        let t = found
            .iter()
            .find(|c| c.series.metric == Metric::Throughput)
            .unwrap();
        assert!(!t.regression && !t.is_alarm());
        assert!((t.change - 0.2).abs() < 1e-9);
    }

    #[test]
    fn phases_that_are_not_results_stay_out_of_the_series() {
        let mut rows = nights(&[1000.0, 1000.0, 10.0]);
        rows[2].fidelity_valid = false;
        rows[1].status = Verdict::Failed;
        let s = series_of(&rows);
        assert_eq!(s[0].points.len(), 1);
    }

    #[test]
    fn repetitions_of_a_run_make_one_point_at_their_mean() {
        let mut rows = nights(&[1000.0]);
        rows.push(FlatRow {
            repetition: 1,
            throughput: 2000.0,
            ..rows[0].clone()
        });
        let s = series_of(&rows);
        assert_eq!(s[0].points.len(), 1);
        assert_eq!(s[0].points[0].value, 1500.0);
    }

    #[test]
    fn change_ids_are_stable_and_differ_by_run_and_series() {
        let k = series_of(&nights(&[1.0]))[0].key.clone();
        assert_eq!(change_id(&k, "a"), change_id(&k, "a"));
        assert_ne!(change_id(&k, "a"), change_id(&k, "b"));
        let other = SeriesKey {
            threads: 4,
            ..k.clone()
        };
        assert_ne!(change_id(&k, "a"), change_id(&other, "a"));
        assert!(change_id(&k, "a").starts_with("cp-") && change_id(&k, "a").len() == 13);
    }
}
