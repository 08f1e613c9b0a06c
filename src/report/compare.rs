//! Regression checks: a candidate run against a baseline, cell group by
//! cell group (repetitions of one configuration together), phase by phase,
//! operation kind by operation kind.
//!
//! Each difference is the ratio of the candidate's mean to the base's with
//! its 95% interval (`crate::stats::ratio_interval`, the one the claims
//! use): a bootstrap over the repetitions of each side and, inside each
//! repetition, over its per-second throughput in moving blocks (so a side
//! of one repetition still has an interval, from its own phase), never
//! narrower than the AR(1) interval of those seconds. Latencies have no
//! per-second series: their interval comes from repetitions alone.
//!
//! The verdict needs the whole interval on one side of the threshold
//! ([`verdict`]): beyond it, a regression (or better); inside it, ok;
//! across it, inconclusive, with what would settle it. For
//! `best-of-last:N` the base is the best of the runs' means, and the
//! runs' repetitions (scaled to that best) give its spread.

use crate::report::fmt;
use crate::report::stats::mean;
use crate::results::flat::{FlatRow, NO_OP, Verdict};
use crate::results::layout::RunData;
use crate::stats::{Blocks, MIN_SERIES, Obs, ratio_interval};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::str::FromStr;

/// A metric to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    Throughput,
    Mean,
    P50,
    P95,
    P99,
    P999,
    Max,
}

impl FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "throughput" | "ops" => Metric::Throughput,
            "mean" => Metric::Mean,
            "p50" => Metric::P50,
            "p95" => Metric::P95,
            "p99" => Metric::P99,
            "p999" | "p99.9" => Metric::P999,
            "max" => Metric::Max,
            other => {
                return Err(format!(
                    "unknown metric `{other}`; use throughput, mean, p50, p95, p99, p999 or max"
                ));
            }
        })
    }
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::Mean => "mean",
            Metric::P50 => "p50",
            Metric::P95 => "p95",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::Max => "max",
        }
    }
    /// Throughput: higher is better. Latencies: lower is better.
    pub(crate) fn higher_is_better(self) -> bool {
        self == Metric::Throughput
    }
    /// The row's value; `None` for a latency the tool did not report.
    fn of(self, r: &FlatRow) -> Option<f64> {
        match self {
            Metric::Throughput => Some(r.throughput),
            Metric::Mean => r.lat_mean_us,
            Metric::P50 => r.lat_p50_us,
            Metric::P95 => r.lat_p95_us,
            Metric::P99 => r.lat_p99_us,
            Metric::P999 => r.lat_p999_us,
            Metric::Max => r.lat_max_us,
        }
    }
    fn show(self, v: f64) -> String {
        if self.higher_is_better() {
            format!("{} ops/s", fmt::ops(v))
        } else {
            format!("{} ms", fmt::ms(v))
        }
    }
}

/// A relative threshold, as a fraction (`5%` is 0.05).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold(pub f64);

impl FromStr for Threshold {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let num = t.strip_suffix('%').unwrap_or(t).trim();
        match num.parse::<f64>() {
            Ok(v) if (0.0..1000.0).contains(&v) => Ok(Threshold(v / 100.0)),
            _ => Err(format!(
                "threshold `{s}` is not a percentage; write e.g. `5%` (0 to 1000)"
            )),
        }
    }
}

/// What a baseline says about one (group, phase, kind, metric).
#[derive(Debug, Clone, PartialEq)]
pub struct BaseStat {
    /// The figure compared with: the mean of the repetitions (the best
    /// run's mean for `best-of-last:N`).
    pub value: f64,
    /// One observation a repetition, with its per-second series; their
    /// mean is `value`.
    pub obs: Vec<Obs>,
}

impl BaseStat {
    /// Repetitions behind the figure.
    pub fn n(&self) -> usize {
        self.obs.len()
    }
}

/// The per-second series of each phase and operation kind of some runs,
/// where a row finds its own: (run id, cell key, phase index, kind).
#[derive(Debug, Clone, Default)]
pub struct Seconds(BTreeMap<(String, String, u32, String), Vec<f64>>);

impl Seconds {
    /// Add every phase of `run`.
    pub fn add(&mut self, run: &RunData) {
        for cell in &run.cells {
            for (i, phase) in cell.record.phases.iter().enumerate() {
                for op in phase.ops.keys() {
                    let key = (
                        run.run.run_id.clone(),
                        cell.record.key.clone(),
                        i as u32,
                        op.clone(),
                    );
                    self.0.insert(key, phase.per_second(Some(op)));
                }
            }
        }
    }

    /// The series of the row's phase and kind (empty when not known: a
    /// run only in the history).
    fn of(&self, r: &FlatRow) -> Vec<f64> {
        self.0
            .get(&(
                r.run_id.clone(),
                r.cell_key.clone(),
                r.phase_index,
                r.op.clone(),
            ))
            .cloned()
            .unwrap_or_default()
    }
}

/// Where a row is matched: hardware class, cell group, phase, its
/// threads, operation kind. Rows of two hardware classes never match.
pub(crate) type MatchKey = (String, String, String, u32, String);

/// A phase of a cell group at one thread count, on one hardware class.
type PhaseKey = (String, String, String, u32);

fn key(r: &FlatRow) -> MatchKey {
    (
        r.hardware_class.clone(),
        r.cell_group.clone(),
        r.phase.clone(),
        r.threads,
        r.op.clone(),
    )
}

fn phase_key(r: &FlatRow) -> PhaseKey {
    (
        r.hardware_class.clone(),
        r.cell_group.clone(),
        r.phase.clone(),
        r.threads,
    )
}

/// Rows of runs recorded before hardware classes (an empty class) take
/// the class of the other rows when those all ran on one class; with
/// several, they stay apart (unknown hardware compares with nothing).
pub(crate) fn fill_unknown_classes<'a>(rows: impl IntoIterator<Item = &'a mut FlatRow>) {
    let mut rows: Vec<&mut FlatRow> = rows.into_iter().collect();
    let known: BTreeSet<String> = rows
        .iter()
        .filter(|r| !r.hardware_class.is_empty())
        .map(|r| r.hardware_class.clone())
        .collect();
    if let [one] = known.into_iter().collect::<Vec<_>>().as_slice() {
        for r in rows.iter_mut().filter(|r| r.hardware_class.is_empty()) {
            r.hardware_class = one.clone();
        }
    }
}

/// Ok observations per match key: the metric's value and, for
/// throughput, the phase's per-second series of that kind.
fn ok_values(rows: &[FlatRow], metric: Metric, seconds: &Seconds) -> BTreeMap<MatchKey, Vec<Obs>> {
    let mut m: BTreeMap<MatchKey, Vec<Obs>> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.status == Verdict::Ok && r.op != NO_OP)
    {
        if let Some(value) = metric.of(r) {
            let series = if metric == Metric::Throughput {
                seconds.of(r)
            } else {
                Vec::new()
            };
            m.entry(key(r)).or_default().push(Obs { value, series });
        }
    }
    m
}

fn values(obs: &[Obs]) -> Vec<f64> {
    obs.iter().map(|o| o.value).collect()
}

/// (cell group, phase, threads) with a phase that is not a result.
pub(crate) fn failed_phases<'a>(rows: impl IntoIterator<Item = &'a FlatRow>) -> BTreeSet<PhaseKey> {
    rows.into_iter()
        .filter(|r| r.status != Verdict::Ok)
        .map(phase_key)
        .collect()
}

/// Baseline from one run: the mean of its repetitions.
pub(crate) fn base_from_run(
    rows: &[FlatRow],
    metric: Metric,
    seconds: &Seconds,
) -> BTreeMap<MatchKey, BaseStat> {
    ok_values(rows, metric, seconds)
        .into_iter()
        .map(|(k, obs)| {
            let value = mean(&values(&obs));
            (k, BaseStat { value, obs })
        })
        .collect()
}

/// Baseline from several runs (`best-of-last:N`): per key, the best of
/// the runs' means; every run's repetitions, scaled so that their mean is
/// that best, give its spread (the spread between nights, which one
/// night's own seconds do not show).
pub(crate) fn base_best_of(
    runs: &[Vec<FlatRow>],
    metric: Metric,
    seconds: &Seconds,
) -> BTreeMap<MatchKey, BaseStat> {
    let mut per: BTreeMap<MatchKey, Vec<Vec<Obs>>> = BTreeMap::new();
    for rows in runs {
        for (k, obs) in ok_values(rows, metric, seconds) {
            per.entry(k).or_default().push(obs);
        }
    }
    per.into_iter()
        .map(|(k, runs)| {
            let means = runs.iter().map(|o| mean(&values(o)));
            let best = if metric.higher_is_better() {
                means.fold(f64::NEG_INFINITY, f64::max)
            } else {
                means.fold(f64::INFINITY, f64::min)
            };
            let all: Vec<Obs> = runs.into_iter().flatten().collect();
            let m = mean(&values(&all));
            let scale = if m > 0.0 { best / m } else { 1.0 };
            let obs = all
                .into_iter()
                .map(|o| Obs {
                    value: o.value * scale,
                    series: o.series,
                })
                .collect();
            (k, BaseStat { value: best, obs })
        })
        .collect()
}

/// The verdict on one compared value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The whole interval is better than the threshold.
    Better,
    /// The whole interval is within the threshold either way.
    Same,
    /// The whole interval is worse than the threshold.
    Regression,
    /// The interval reaches across the threshold: neither a regression
    /// nor ok; the row says what would settle it.
    Inconclusive(Settle),
    /// The candidate's phase failed, was invalid or OOM where no phase of
    /// the base's (cell group, phase) did.
    Failed,
    /// In the base, not in the candidate.
    Missing,
    /// In the candidate, not in the base.
    New,
}

/// What would narrow an inconclusive interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// The interval comes from repetitions (or a side has nothing else).
    MoreRepetitions,
    /// A side of one repetition gave its interval from its per-second
    /// series: a longer phase narrows it, and so do repetitions.
    LongerPhase,
}

impl Settle {
    fn words(self) -> &'static str {
        match self {
            Settle::MoreRepetitions => "more repetitions would settle it",
            Settle::LongerPhase => "a longer phase or more repetitions would settle it",
        }
    }
}

impl Change {
    fn word(self) -> &'static str {
        match self {
            Change::Better => "better",
            Change::Same => "ok",
            Change::Regression => "REGRESSION",
            Change::Inconclusive(_) => "inconclusive",
            Change::Failed => "FAILED",
            Change::Missing => "missing",
            Change::New => "new",
        }
    }
    /// Whether this makes `compare` exit 1 (inconclusive does not).
    pub fn fails(self) -> bool {
        matches!(self, Change::Regression | Change::Failed)
    }
}

/// A relative change, (candidate - base) / base, with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub change: f64,
    pub lo: f64,
    pub hi: f64,
    /// Whether anything was resampled: without it (one value a side and
    /// no per-second series) the interval is only the point.
    pub resampled: bool,
    /// What would narrow it.
    pub settle: Settle,
}

/// The verdict of an interval against the threshold, for a metric where
/// higher is better or worse: a regression (or better) only when the
/// whole interval is beyond the threshold, ok when all of it is within,
/// inconclusive when it reaches across (and always when nothing was
/// resampled: a point is no interval).
pub fn verdict(higher_is_better: bool, threshold: Threshold, i: &Interval) -> Change {
    if !i.resampled {
        return Change::Inconclusive(i.settle);
    }
    // How much worse, as an interval: a drop of throughput, a rise of latency.
    let (worse_lo, worse_hi) = if higher_is_better {
        (-i.hi, -i.lo)
    } else {
        (i.lo, i.hi)
    };
    let t = threshold.0;
    if worse_lo > t {
        Change::Regression
    } else if worse_hi < -t {
        Change::Better
    } else if worse_lo >= -t && worse_hi <= t {
        Change::Same
    } else {
        Change::Inconclusive(i.settle)
    }
}

/// The candidate's change against the base with its interval; `None`
/// when the base measured 0.
pub fn interval(base: &[Obs], candidate: &[Obs]) -> Option<Interval> {
    let r = ratio_interval(candidate, base, Blocks::Auto)?;
    let seconds = |side: &[Obs]| side.len() == 1 && side[0].series.len() >= MIN_SERIES;
    let settle = if seconds(base) || seconds(candidate) {
        Settle::LongerPhase
    } else {
        Settle::MoreRepetitions
    };
    Some(Interval {
        change: r.ratio - 1.0,
        lo: r.lo - 1.0,
        hi: r.hi - 1.0,
        resampled: r.resampled,
        settle,
    })
}

/// One compared (group, phase, kind, metric).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRow {
    pub label: String,
    pub phase: String,
    pub op: String,
    pub metric: Metric,
    pub base: Option<BaseStat>,
    /// Candidate mean and its number of repetitions.
    pub candidate: Option<(f64, usize)>,
    /// (candidate - base) / base with its 95% interval.
    pub change: Option<Interval>,
    pub verdict: Change,
    pub note: String,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub rows: Vec<ChangeRow>,
    pub threshold: Threshold,
    /// The hardware classes of the rows of both sides.
    pub classes: Vec<String>,
}

impl Comparison {
    /// Rows that make the comparison fail.
    pub fn failures(&self) -> usize {
        self.rows.iter().filter(|r| r.verdict.fails()).count()
    }

    /// Rows whose interval reaches across the threshold.
    pub fn inconclusive(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| matches!(r.verdict, Change::Inconclusive(_)))
            .count()
    }

    /// Rows with a value on both sides.
    pub fn compared(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.candidate.is_some() && r.base.is_some())
            .count()
    }
}

/// The candidate's new failures: (group, phase, threads) where it has a
/// phase that is not a result and the base had none, with the reason;
/// and per cell group the first such reason, since what the candidate
/// lacks in such a group failed too.
struct NewFailures {
    phases: BTreeMap<PhaseKey, String>,
    groups: BTreeMap<(String, String), String>,
}

fn new_failures(candidate: &[FlatRow], base_failed: &BTreeSet<PhaseKey>) -> NewFailures {
    let mut f = NewFailures {
        phases: BTreeMap::new(),
        groups: BTreeMap::new(),
    };
    for r in candidate.iter().filter(|r| r.status != Verdict::Ok) {
        let k = phase_key(r);
        if !base_failed.contains(&k) {
            let why = format!("{}: {}", r.status.as_str().to_uppercase(), r.reason);
            f.groups
                .entry((r.hardware_class.clone(), r.cell_group.clone()))
                .or_insert_with(|| why.clone());
            f.phases.entry(k).or_insert(why);
        }
    }
    f
}

/// The verdict on one key, its change and a note; `None` when neither
/// side has the key.
fn assess(
    metric: Metric,
    threshold: Threshold,
    key: &MatchKey,
    base: Option<&BaseStat>,
    candidate: Option<&[Obs]>,
    failures: &NewFailures,
) -> Option<(Change, Option<Interval>, String)> {
    let failed = failures
        .phases
        .get(&(key.0.clone(), key.1.clone(), key.2.clone(), key.3));
    Some(match (base, candidate, failed) {
        (Some(_), _, Some(reason)) => (Change::Failed, None, reason.clone()),
        (Some(_), None, None) => match failures.groups.get(&(key.0.clone(), key.1.clone())) {
            Some(why) => (Change::Failed, None, why.clone()),
            None => (Change::Missing, None, String::new()),
        },
        (None, Some(_), _) => (Change::New, None, String::new()),
        (None, None, _) => return None,
        (Some(b), Some(c), None) => match interval(&b.obs, c) {
            Some(i) => {
                let v = verdict(metric.higher_is_better(), threshold, &i);
                let note = match v {
                    Change::Inconclusive(s) => s.words().to_string(),
                    _ => String::new(),
                };
                (v, Some(i), note)
            }
            None => (
                Change::Inconclusive(Settle::MoreRepetitions),
                None,
                "the base measured 0".to_string(),
            ),
        },
    })
}

/// Compare a candidate's rows against baselines (one per metric).
/// `labels` names each cell group (from either side); `seconds` holds the
/// candidate's per-second series.
pub fn compare(
    bases: &BTreeMap<Metric, BTreeMap<MatchKey, BaseStat>>,
    base_failed: &BTreeSet<PhaseKey>,
    labels: &BTreeMap<String, String>,
    candidate: &[FlatRow],
    seconds: &Seconds,
    threshold: Threshold,
) -> Comparison {
    let failures = new_failures(candidate, base_failed);
    let classes: BTreeSet<&String> = bases
        .values()
        .flat_map(|b| b.keys().map(|k| &k.0))
        .chain(candidate.iter().map(|r| &r.hardware_class))
        .collect();
    let mut rows = Vec::new();
    for (metric, base) in bases {
        let cand = ok_values(candidate, *metric, seconds);
        let keys: BTreeSet<&MatchKey> = base.keys().chain(cand.keys()).collect();
        for k in keys {
            let b = base.get(k).cloned();
            let obs = cand.get(k).map(Vec::as_slice);
            let c = obs.map(|o| (mean(&values(o)), o.len()));
            let Some((verdict, change, note)) =
                assess(*metric, threshold, k, b.as_ref(), obs, &failures)
            else {
                continue;
            };
            let label = labels.get(&k.1).cloned().unwrap_or_else(|| k.1.clone());
            rows.push(ChangeRow {
                label: if classes.len() > 1 {
                    format!("{label} [{}]", k.0)
                } else {
                    label
                },
                phase: format!("{} t{}", k.2, k.3),
                op: k.4.clone(),
                metric: *metric,
                base: b,
                candidate: c,
                change,
                verdict,
                note: other_class_note(verdict, note, k, base, &cand),
            });
        }
    }
    Comparison {
        rows,
        threshold,
        classes: classes.into_iter().cloned().collect(),
    }
}

/// A row on one side only because the other side ran it on another
/// hardware class: said so, since such rows are never compared.
fn other_class_note(
    verdict: Change,
    note: String,
    k: &MatchKey,
    base: &BTreeMap<MatchKey, BaseStat>,
    cand: &BTreeMap<MatchKey, Vec<Obs>>,
) -> String {
    let keys: Vec<&MatchKey> = match verdict {
        Change::Missing => cand.keys().collect(),
        Change::New => base.keys().collect(),
        _ => return note,
    };
    let other: Vec<&String> = keys
        .into_iter()
        .filter(|o| o.0 != k.0 && (&o.1, &o.2, o.3, &o.4) == (&k.1, &k.2, k.3, &k.4))
        .map(|o| &o.0)
        .collect();
    match other.first() {
        Some(c) => format!(
            "not compared: the {} ran it on hardware class `{c}`",
            if verdict == Change::Missing {
                "candidate"
            } else {
                "base"
            }
        ),
        None => note,
    }
}

/// Column headers of the rendered comparison.
const HEAD: [&str; 11] = [
    "cell",
    "phase",
    "op",
    "metric",
    "base",
    "n",
    "candidate",
    "n",
    "change",
    "95% interval",
    "verdict",
];

/// Which columns are right-aligned (numbers).
const RIGHT: [bool; 11] = [
    false, false, false, false, true, true, true, true, true, true, false,
];

/// An interval of a change, `[-14.1%, -6.0%]`.
fn show_interval(i: &Interval) -> String {
    if i.resampled {
        format!("[{}, {}]", fmt::percent(i.lo), fmt::percent(i.hi))
    } else {
        "none (one value a side)".to_string()
    }
}

/// One compared row's cells, in `HEAD` order.
fn cells(r: &ChangeRow) -> [String; 11] {
    let base = |f: &dyn Fn(&BaseStat) -> String| fmt::or_dash(r.base.as_ref(), f);
    [
        r.label.clone(),
        r.phase.clone(),
        r.op.clone(),
        r.metric.name().to_string(),
        base(&|b| r.metric.show(b.value)),
        base(&|b| b.n().to_string()),
        fmt::or_dash(r.candidate, |(v, _)| r.metric.show(v)),
        fmt::or_dash(r.candidate, |(_, n)| n.to_string()),
        fmt::or_dash(r.change, |i| fmt::percent(i.change)),
        fmt::or_dash(r.change.as_ref(), show_interval),
        if r.note.is_empty() {
            r.verdict.word().to_string()
        } else {
            format!("{} ({})", r.verdict.word(), r.note)
        },
    ]
}

/// Lines of cells padded to their column's width; the last column is
/// not padded.
fn aligned(lines: &[[String; 11]]) -> Vec<String> {
    let mut widths: Vec<usize> = HEAD.iter().map(|h| h.chars().count()).collect();
    for l in lines {
        for (i, c) in l.iter().enumerate().take(10) {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: &[&str]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(c.chars().count());
            if i == 10 {
                s.push_str(c);
            } else if RIGHT[i] {
                let _ = write!(s, "{}{}  ", " ".repeat(pad), c);
            } else {
                let _ = write!(s, "{}{}  ", c, " ".repeat(pad));
            }
        }
        s.trim_end().to_string()
    };
    std::iter::once(line(&HEAD[..]))
        .chain(
            lines
                .iter()
                .map(|l| line(&l.each_ref().map(String::as_str)[..])),
        )
        .collect()
}

/// The comparison as an aligned text table with a summary line.
pub fn render(c: &Comparison, base_name: &str, cand_name: &str) -> String {
    let lines: Vec<[String; 11]> = c.rows.iter().map(cells).collect();
    let mut out = format!("base: {base_name}\ncandidate: {cand_name}\n");
    let classes: Vec<&str> = c
        .classes
        .iter()
        .map(String::as_str)
        .filter(|c| !c.is_empty())
        .collect();
    match classes.as_slice() {
        [] => {}
        [one] => {
            let _ = writeln!(out, "hardware class: {one}");
        }
        many => {
            let _ = writeln!(
                out,
                "hardware classes: {} (cells compare only within one class)",
                many.join("; ")
            );
        }
    }
    out.push('\n');
    for l in aligned(&lines) {
        out.push_str(&l);
        out.push('\n');
    }
    let fails = c.failures();
    let _ = write!(
        out,
        "\n{} compared, {} regression{}, {} inconclusive (a verdict needs the whole 95% \
         interval of the change beyond {:.1}%; inconclusive: the interval reaches across it)\n\
         interval: bootstrap of the ratio of the means over each side's repetitions and, for \
         throughput, over each repetition's per-second series in moving blocks\n",
        c.compared(),
        fails,
        if fails == 1 { "" } else { "s" },
        c.inconclusive(),
        c.threshold.0 * 100.0
    );
    if c.compared() == 0 {
        out.push_str(
            "nothing was compared: no phase has a valid result on both sides (see the \
             reports for why phases were invalid or failed), so no regression can be ruled out\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(group: &str, rep: u32, tput: f64) -> FlatRow {
        FlatRow {
            cell_group: group.into(),
            cell_key: format!("{group}-{rep}"),
            repetition: rep,
            phase: "run".into(),
            op: "READ".into(),
            throughput: tput,
            lat_p99_us: Some(1000.0 / tput * 1000.0),
            ..Default::default()
        }
    }

    /// Twenty seconds around each row's throughput, ±1% (a steady phase).
    fn steady(rows: &[&[FlatRow]]) -> Seconds {
        let mut s = Seconds::default();
        for r in rows.iter().copied().flatten() {
            let series = (0..20)
                .map(|t| r.throughput * (1.0 + 0.01 * (t as f64 * 2.4).sin()))
                .collect();
            s.0.insert(
                (
                    r.run_id.clone(),
                    r.cell_key.clone(),
                    r.phase_index,
                    r.op.clone(),
                ),
                series,
            );
        }
        s
    }

    fn run_cmp(base: &[FlatRow], cand: &[FlatRow], metric: Metric) -> Comparison {
        // The candidate is another run: its rows find their own seconds.
        let cand: Vec<FlatRow> = cand
            .iter()
            .map(|r| FlatRow {
                run_id: "cand".into(),
                ..r.clone()
            })
            .collect();
        let seconds = steady(&[base, &cand]);
        let mut bases = BTreeMap::new();
        bases.insert(metric, base_from_run(base, metric, &seconds));
        compare(
            &bases,
            &failed_phases(base),
            &BTreeMap::new(),
            &cand,
            &seconds,
            Threshold(0.05),
        )
    }

    fn change(change: f64, lo: f64, hi: f64) -> Interval {
        Interval {
            change,
            lo,
            hi,
            resampled: true,
            settle: Settle::LongerPhase,
        }
    }

    #[test]
    fn a_verdict_needs_the_whole_interval_beyond_the_threshold() {
        let t = Threshold(0.05);
        // Throughput: a drop wholly beyond 5% regresses; reaching across
        // -5% is inconclusive; wholly within ±5% is ok.
        let v = |lo, hi| verdict(true, t, &change((lo + hi) / 2.0, lo, hi));
        assert_eq!(v(-0.141, -0.060), Change::Regression);
        assert_eq!(v(-0.141, -0.040), Change::Inconclusive(Settle::LongerPhase));
        assert_eq!(v(-0.04, 0.03), Change::Same);
        assert_eq!(v(0.06, 0.20), Change::Better);
        assert_eq!(v(0.01, 0.20), Change::Inconclusive(Settle::LongerPhase));
        // Latency: higher is worse, so the same intervals flip.
        let l = |lo, hi| verdict(false, t, &change((lo + hi) / 2.0, lo, hi));
        assert_eq!(l(0.06, 0.14), Change::Regression);
        assert_eq!(l(-0.14, -0.06), Change::Better);
        assert_eq!(l(0.02, 0.14), Change::Inconclusive(Settle::LongerPhase));
        // A point is no interval: never a verdict, however large.
        let point = Interval {
            resampled: false,
            settle: Settle::MoreRepetitions,
            ..change(-0.5, -0.5, -0.5)
        };
        assert_eq!(
            verdict(true, t, &point),
            Change::Inconclusive(Settle::MoreRepetitions)
        );
        assert!(!Change::Inconclusive(Settle::MoreRepetitions).fails());
    }

    #[test]
    fn one_value_a_side_without_seconds_is_inconclusive_and_asks_for_repetitions() {
        let mut bases = BTreeMap::new();
        let base = [row("g", 1, 1000.0)];
        let none = Seconds::default();
        bases.insert(
            Metric::Throughput,
            base_from_run(&base, Metric::Throughput, &none),
        );
        let c = compare(
            &bases,
            &BTreeSet::new(),
            &BTreeMap::new(),
            &[row("g", 1, 700.0)],
            &none,
            Threshold(0.05),
        );
        assert_eq!(
            c.rows[0].verdict,
            Change::Inconclusive(Settle::MoreRepetitions)
        );
        assert_eq!(c.failures(), 0);
        let text = render(&c, "a", "b");
        assert!(text.contains("more repetitions would settle it"), "{text}");
        assert!(!text.contains("±0.0%"), "{text}");
    }

    #[test]
    fn one_repetition_a_side_takes_its_interval_from_its_seconds() {
        // One repetition each, 20 seconds each: a 30% drop is a regression
        // with an interval around it; a 4% change is ok; noisy seconds
        // leave a 7% drop inconclusive, asking for a longer phase.
        let c = run_cmp(
            &[row("g", 1, 1000.0)],
            &[row("g", 1, 700.0)],
            Metric::Throughput,
        );
        let i = c.rows[0].change.unwrap();
        assert_eq!(c.rows[0].verdict, Change::Regression, "{i:?}");
        assert!(i.lo < -0.3 && i.hi > -0.3 && i.hi < -0.25, "{i:?}");
        let c = run_cmp(
            &[row("g", 1, 1000.0)],
            &[row("g", 1, 1002.0)],
            Metric::Throughput,
        );
        assert_eq!(c.rows[0].verdict, Change::Same, "{:?}", c.rows[0].change);

        let noisy = |tput: f64, seed: f64| -> Vec<f64> {
            (0..10)
                .map(|t| tput * (1.0 + 0.15 * ((t as f64 + seed) * 1.7).sin()))
                .collect()
        };
        let (b, mut cand) = ([row("g", 1, 1000.0)], row("g", 1, 930.0));
        cand.run_id = "cand".into();
        let mut s = Seconds::default();
        s.0.insert(
            (String::new(), b[0].cell_key.clone(), 0, "READ".into()),
            noisy(1000.0, 0.0),
        );
        s.0.insert(
            ("cand".into(), cand.cell_key.clone(), 0, "READ".into()),
            noisy(930.0, 0.5),
        );
        let mut bases = BTreeMap::new();
        bases.insert(
            Metric::Throughput,
            base_from_run(&b, Metric::Throughput, &s),
        );
        let c = compare(
            &bases,
            &BTreeSet::new(),
            &BTreeMap::new(),
            &[cand],
            &s,
            Threshold(0.05),
        );
        assert_eq!(
            c.rows[0].verdict,
            Change::Inconclusive(Settle::LongerPhase),
            "{:?}",
            c.rows[0].change
        );
        assert!(render(&c, "a", "b").contains("a longer phase"));
    }

    #[test]
    fn cells_of_two_hardware_classes_are_never_compared_and_say_so() {
        let on = |class: &str, tput: f64| FlatRow {
            hardware_class: class.into(),
            ..row("g", 1, tput)
        };
        // Half the throughput on other hardware: not a regression.
        let c = run_cmp(
            &[on("epyc x64", 1000.0)],
            &[on("xeon x8", 500.0)],
            Metric::Throughput,
        );
        assert_eq!(c.compared(), 0);
        assert_eq!(c.failures(), 0);
        let missing = c
            .rows
            .iter()
            .find(|r| r.verdict == Change::Missing)
            .unwrap();
        assert!(
            missing.note.contains("hardware class `xeon x8`"),
            "{}",
            missing.note
        );
        assert!(missing.label.ends_with("[epyc x64]"), "{}", missing.label);
        let text = render(&c, "base", "cand");
        assert!(
            text.contains("hardware classes: epyc x64; xeon x8"),
            "{text}"
        );
        // The same class compares, and the one class is named.
        let same = run_cmp(
            &[on("epyc x64", 1000.0)],
            &[on("epyc x64", 500.0)],
            Metric::Throughput,
        );
        assert_eq!(same.failures(), 1);
        assert!(render(&same, "b", "c").contains("hardware class: epyc x64"));
        // Rows recorded before classes take the one class of the others.
        let mut rows = [on("", 1.0), on("epyc x64", 1.0)];
        fill_unknown_classes(rows.iter_mut());
        assert_eq!(rows[0].hardware_class, "epyc x64");
    }

    #[test]
    fn threshold_reads_percentages() {
        assert_eq!("5%".parse::<Threshold>().unwrap(), Threshold(0.05));
        assert_eq!("2.5".parse::<Threshold>().unwrap(), Threshold(0.025));
        assert!("abc".parse::<Threshold>().is_err());
        assert!("-5%".parse::<Threshold>().is_err());
    }

    #[test]
    fn ten_percent_slower_is_a_regression_and_faster_is_not() {
        let base = [row("g", 1, 1000.0), row("g", 2, 1002.0)];
        let slow = [row("g", 1, 900.0), row("g", 2, 902.0)];
        let c = run_cmp(&base, &slow, Metric::Throughput);
        assert_eq!(c.rows[0].verdict, Change::Regression);
        assert_eq!(c.failures(), 1);
        let fast = [row("g", 1, 1100.0)];
        assert_eq!(
            run_cmp(&base, &fast, Metric::Throughput).rows[0].verdict,
            Change::Better
        );
    }

    #[test]
    fn higher_latency_is_worse() {
        // Latencies have no seconds: their interval is over repetitions.
        let base = [row("g", 1, 1000.0), row("g", 2, 1004.0)];
        let slow = [row("g", 1, 800.0), row("g", 2, 803.0)];
        let c = run_cmp(&base, &slow, Metric::P99);
        assert_eq!(c.rows[0].verdict, Change::Regression);
        assert!(c.rows[0].change.unwrap().lo > 0.2);
    }

    #[test]
    fn a_candidate_phase_that_failed_fails_the_comparison() {
        let base = [row("g", 1, 1000.0)];
        let mut bad = row("g", 1, 0.0);
        bad.status = Verdict::Oom;
        bad.reason = "killed".into();
        bad.op = NO_OP.into();
        let c = run_cmp(&base, std::slice::from_ref(&bad), Metric::Throughput);
        assert_eq!(c.rows[0].verdict, Change::Failed);
        assert!(c.rows[0].note.contains("OOM"));
        // The same failure in the base is not new: nothing fails.
        let c = run_cmp(
            &[base[0].clone(), bad.clone()],
            std::slice::from_ref(&bad),
            Metric::Throughput,
        );
        assert_eq!(c.failures(), 0);
        // A cell that failed before its phases fails what the base measured.
        let mut early = row("g", 1, 0.0);
        early.status = Verdict::Failed;
        early.reason = "engine never ready".into();
        early.phase = NO_OP.into();
        early.op = NO_OP.into();
        let c = run_cmp(&base, &[early], Metric::Throughput);
        assert_eq!(c.rows[0].verdict, Change::Failed);
        assert!(c.rows[0].note.contains("never ready"));
    }

    #[test]
    fn the_rendering_aligns_numbers_right_and_counts_the_regressions() {
        let base = [row("g", 1, 1000.0), row("g", 2, 1002.0)];
        let slow = [row("g", 1, 900.0)];
        let mut labels = BTreeMap::new();
        labels.insert("g".to_string(), "redis@7.0 / small".to_string());
        let seconds = steady(&[&base, &slow]);
        let mut bases = BTreeMap::new();
        bases.insert(
            Metric::Throughput,
            base_from_run(&base, Metric::Throughput, &seconds),
        );
        let c = compare(
            &bases,
            &BTreeSet::new(),
            &labels,
            &slow,
            &seconds,
            Threshold(0.05),
        );
        let text = render(&c, "a", "b");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..2], ["base: a", "candidate: b"]);
        assert!(lines[3].starts_with("cell               "), "{text}");
        assert!(lines[3].ends_with("95% interval  verdict"), "{text}");
        assert!(lines[4].starts_with("redis@7.0 / small  run t0"), "{text}");
        assert!(lines[4].contains("1,001 ops/s  2"), "{text}");
        assert!(
            lines[4].contains("-10.1%  [-1") && lines[4].ends_with("]  REGRESSION"),
            "{text}"
        );
        assert!(
            text.contains(
                "1 compared, 1 regression, 0 inconclusive (a verdict needs the whole 95% \
                 interval of the change beyond 5.0%"
            ),
            "{text}"
        );
    }

    #[test]
    fn best_of_takes_the_best_run_and_the_spread_of_runs() {
        let runs = vec![vec![row("g", 1, 1000.0)], vec![row("g", 1, 1100.0)]];
        let b = base_best_of(&runs, Metric::Throughput, &Seconds::default());
        let s = &b[&(
            String::new(),
            "g".to_string(),
            "run".to_string(),
            0,
            "READ".to_string(),
        )];
        assert_eq!(s.value, 1100.0);
        assert_eq!(s.n(), 2);
        // Both nights, scaled to the best: their mean is the best, their
        // spread the nights' spread.
        let v: Vec<f64> = s.obs.iter().map(|o| o.value).collect();
        assert!((mean(&v) - 1100.0).abs() < 1e-9, "{v:?}");
        assert!(v[1] - v[0] > 90.0, "{v:?}");
    }
}
