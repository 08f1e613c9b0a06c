//! Regression checks: a candidate run against a baseline, cell group by
//! cell group (repetitions of one configuration together), phase by phase,
//! operation kind by operation kind.
//!
//! Noise band: 2 × the sample standard deviation of the baseline's values
//! divided by their mean (0 with a single value). The baseline's values are
//! its repetitions for a run baseline, and the per-run means of the last N
//! runs for `best-of-last:N`. A candidate is a regression when it is worse
//! than the baseline by more than `threshold + band`.

use crate::report::fmt;
use crate::report::stats::mean;
use crate::results::flat::{FlatRow, NO_OP, Verdict};
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
    pub fn higher_is_better(self) -> bool {
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
    pub value: f64,
    /// Relative noise band (0.03 = ±3%).
    pub band: f64,
    /// Values the band came from.
    pub n: usize,
}

/// Where a row is matched: hardware class, cell group, phase, its
/// threads, operation kind. Rows of two hardware classes never match.
pub type MatchKey = (String, String, String, u32, String);

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
pub fn fill_unknown_classes<'a>(rows: impl IntoIterator<Item = &'a mut FlatRow>) {
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

/// 2 × sample standard deviation over the mean; 0 for fewer than 2 values.
pub fn noise_band(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    if m == 0.0 {
        return 0.0;
    }
    let var = values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    2.0 * var.sqrt() / m.abs()
}

/// Ok values per match key.
fn ok_values(rows: &[FlatRow], metric: Metric) -> BTreeMap<MatchKey, Vec<f64>> {
    let mut m: BTreeMap<MatchKey, Vec<f64>> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.status == Verdict::Ok && r.op != NO_OP)
    {
        if let Some(v) = metric.of(r) {
            m.entry(key(r)).or_default().push(v);
        }
    }
    m
}

/// (cell group, phase, threads) with a phase that is not a result.
pub fn failed_phases<'a>(rows: impl IntoIterator<Item = &'a FlatRow>) -> BTreeSet<PhaseKey> {
    rows.into_iter()
        .filter(|r| r.status != Verdict::Ok)
        .map(phase_key)
        .collect()
}

/// Baseline from one run: the mean of the repetitions, band from their spread.
pub fn base_from_run(rows: &[FlatRow], metric: Metric) -> BTreeMap<MatchKey, BaseStat> {
    ok_values(rows, metric)
        .into_iter()
        .map(|(k, v)| {
            (
                k,
                BaseStat {
                    value: mean(&v),
                    band: noise_band(&v),
                    n: v.len(),
                },
            )
        })
        .collect()
}

/// Baseline from several runs (`best-of-last:N`): per key, the best of the
/// runs' means; the band from the spread of those means.
pub fn base_best_of(runs: &[Vec<FlatRow>], metric: Metric) -> BTreeMap<MatchKey, BaseStat> {
    let mut per: BTreeMap<MatchKey, Vec<f64>> = BTreeMap::new();
    for rows in runs {
        for (k, v) in ok_values(rows, metric) {
            per.entry(k).or_default().push(mean(&v));
        }
    }
    per.into_iter()
        .map(|(k, means)| {
            let best = if metric.higher_is_better() {
                means.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            } else {
                means.iter().copied().fold(f64::INFINITY, f64::min)
            };
            (
                k,
                BaseStat {
                    value: best,
                    band: noise_band(&means),
                    n: means.len(),
                },
            )
        })
        .collect()
}

/// The verdict on one compared value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Better,
    /// Worse or better, but within threshold + band.
    Same,
    Regression,
    /// The candidate's phase failed, was invalid or OOM where no phase of
    /// the base's (cell group, phase) did.
    Failed,
    /// In the base, not in the candidate.
    Missing,
    /// In the candidate, not in the base.
    New,
}

impl Change {
    fn word(self) -> &'static str {
        match self {
            Change::Better => "better",
            Change::Same => "ok",
            Change::Regression => "REGRESSION",
            Change::Failed => "FAILED",
            Change::Missing => "missing",
            Change::New => "new",
        }
    }
    /// Whether this makes `compare` exit 1.
    pub fn fails(self) -> bool {
        matches!(self, Change::Regression | Change::Failed)
    }
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
    /// (candidate - base) / base.
    pub change: Option<f64>,
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

/// The relative change of `candidate` against the base, and whether it
/// is worse (or better) than `threshold` beyond the base's noise band.
fn judge(metric: Metric, threshold: Threshold, base: &BaseStat, candidate: f64) -> (Change, f64) {
    let change = if base.value == 0.0 {
        0.0
    } else {
        (candidate - base.value) / base.value
    };
    let worse = if metric.higher_is_better() {
        -change
    } else {
        change
    };
    let limit = threshold.0 + base.band;
    let verdict = if worse > limit {
        Change::Regression
    } else if -worse > limit {
        Change::Better
    } else {
        Change::Same
    };
    (verdict, change)
}

/// The verdict on one key, its change and a note; `None` when neither
/// side has the key.
fn assess(
    metric: Metric,
    threshold: Threshold,
    key: &MatchKey,
    base: Option<&BaseStat>,
    candidate: Option<f64>,
    failures: &NewFailures,
) -> Option<(Change, Option<f64>, String)> {
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
        (Some(b), Some(cv), None) => {
            let (v, change) = judge(metric, threshold, b, cv);
            (v, Some(change), String::new())
        }
    })
}

/// Compare a candidate's rows against baselines (one per metric).
/// `labels` names each cell group (from either side).
pub fn compare(
    bases: &BTreeMap<Metric, BTreeMap<MatchKey, BaseStat>>,
    base_failed: &BTreeSet<PhaseKey>,
    labels: &BTreeMap<String, String>,
    candidate: &[FlatRow],
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
        let cand = ok_values(candidate, *metric);
        let keys: BTreeSet<&MatchKey> = base.keys().chain(cand.keys()).collect();
        for k in keys {
            let b = base.get(k).cloned();
            let c = cand.get(k).map(|v| (mean(v), v.len()));
            let Some((verdict, change, note)) =
                assess(*metric, threshold, k, b.as_ref(), c.map(|c| c.0), &failures)
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
    cand: &BTreeMap<MatchKey, Vec<f64>>,
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
    "band",
    "candidate",
    "n",
    "change",
    "verdict",
];

/// Which columns are right-aligned (numbers).
const RIGHT: [bool; 11] = [
    false, false, false, false, true, true, true, true, true, true, false,
];

/// One compared row's cells, in `HEAD` order.
fn cells(r: &ChangeRow) -> [String; 11] {
    let base = |f: &dyn Fn(&BaseStat) -> String| fmt::or_dash(r.base.as_ref(), f);
    [
        r.label.clone(),
        r.phase.clone(),
        r.op.clone(),
        r.metric.name().to_string(),
        base(&|b| r.metric.show(b.value)),
        base(&|b| b.n.to_string()),
        base(&|b| format!("±{:.1}%", b.band * 100.0)),
        fmt::or_dash(r.candidate, |(v, _)| r.metric.show(v)),
        fmt::or_dash(r.candidate, |(_, n)| n.to_string()),
        fmt::or_dash(r.change, fmt::percent),
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
        "\n{} compared, {} regression{} (worse than {:.1}% beyond the noise band; \
         band = 2 × standard deviation of the base's repetitions / mean)\n",
        c.compared(),
        fails,
        if fails == 1 { "" } else { "s" },
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

    fn run_cmp(base: &[FlatRow], cand: &[FlatRow], metric: Metric) -> Comparison {
        let mut bases = BTreeMap::new();
        bases.insert(metric, base_from_run(base, metric));
        compare(
            &bases,
            &failed_phases(base),
            &BTreeMap::new(),
            cand,
            Threshold(0.05),
        )
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
    fn noise_band_is_two_sigma_over_mean() {
        let b = noise_band(&[90.0, 110.0]);
        // sd = 14.142..., 2 sd / 100
        assert!((b - 0.28284).abs() < 1e-4, "{b}");
        assert_eq!(noise_band(&[100.0]), 0.0);
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
        let base = [row("g", 1, 1000.0)];
        let slow = [row("g", 1, 800.0)];
        let c = run_cmp(&base, &slow, Metric::P99);
        assert_eq!(c.rows[0].verdict, Change::Regression);
        assert!(c.rows[0].change.unwrap() > 0.2);
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
        let mut bases = BTreeMap::new();
        bases.insert(Metric::Throughput, base_from_run(&base, Metric::Throughput));
        let c = compare(&bases, &BTreeSet::new(), &labels, &slow, Threshold(0.05));
        let text = render(&c, "a", "b");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..2], ["base: a", "candidate: b"]);
        assert!(lines[3].starts_with("cell               "), "{text}");
        assert!(lines[3].ends_with("  change  verdict"), "{text}");
        assert!(lines[4].starts_with("redis@7.0 / small  run t0"), "{text}");
        assert!(lines[4].contains("1,001 ops/s  2  ±0.3%"), "{text}");
        assert!(lines[4].ends_with("-10.1%  REGRESSION"), "{text}");
        assert!(text.ends_with(
            "1 compared, 1 regression (worse than 5.0% beyond the noise band; \
             band = 2 × standard deviation of the base's repetitions / mean)\n"
        ));
    }

    #[test]
    fn best_of_takes_the_best_run_and_the_spread_of_runs() {
        let runs = vec![vec![row("g", 1, 1000.0)], vec![row("g", 1, 1100.0)]];
        let b = base_best_of(&runs, Metric::Throughput);
        let s = &b[&(
            String::new(),
            "g".to_string(),
            "run".to_string(),
            0,
            "READ".to_string(),
        )];
        assert_eq!(s.value, 1100.0);
        assert_eq!(s.n, 2);
        assert!(s.band > 0.0);
    }
}
