//! What every section starts from: the ok phases of the cells as
//! observations, grouped into configurations (the repetitions of one
//! series, run, cell group, phase and thread count). Pure statistics over
//! the flat rows.

use super::series::SeriesMap;
use crate::report::charts::SeriesStyle;
use crate::report::stats::{self, mean};
use crate::results::flat::{FlatRow, NO_OP, Verdict};
use crate::results::order::{Natural, natural_cmp};
use std::collections::BTreeMap;

/// Names of the latency fields, in [`Config::latency`] order.
pub(super) const PCT_NAMES: [&str; 5] = ["p50", "p95", "p99", "p99.9", "max"];

/// Mean latency per field of [`PCT_NAMES`]; `None` where no repetition
/// reported the field.
pub(super) type Percentiles = [Option<f64>; 5];

/// The first row of one ok phase of one cell, and all its rows.
#[derive(Clone)]
pub(super) struct PhaseObs {
    pub(super) head: FlatRow,
    pub(super) ops: Vec<FlatRow>,
}

/// The repetitions of one configuration's phase.
#[derive(Clone)]
pub(super) struct Config {
    pub(super) style: SeriesStyle,
    pub(super) head: FlatRow,
    pub(super) reps: Vec<PhaseObs>,
}

impl Config {
    /// Each repetition's phase throughput.
    pub(super) fn throughputs(&self) -> Vec<f64> {
        self.reps.iter().map(|o| o.head.phase_throughput).collect()
    }
    /// The headline figure's name and its mean over the repetitions that
    /// have one (TPC-C's `tpmC`).
    pub(super) fn headline(&self) -> Option<(String, f64)> {
        let hs: Vec<_> = self
            .reps
            .iter()
            .filter_map(|o| o.head.headline.as_ref())
            .collect();
        let name = hs.first()?.name.clone();
        Some((name, mean(&hs.iter().map(|h| h.value).collect::<Vec<_>>())))
    }
    /// Mean throughput over the repetitions.
    pub(super) fn mean(&self) -> f64 {
        mean(&self.throughputs())
    }
    /// Mean over repetitions of each latency field, per operation kind;
    /// `None` for a field no repetition reported (never charted).
    pub(super) fn latency(&self) -> BTreeMap<String, Percentiles> {
        let mut acc: BTreeMap<String, Vec<Percentiles>> = BTreeMap::new();
        for r in self.reps.iter().flat_map(|o| &o.ops) {
            if r.op != NO_OP {
                acc.entry(r.op.clone()).or_default().push([
                    r.lat_p50_us,
                    r.lat_p95_us,
                    r.lat_p99_us,
                    r.lat_p999_us,
                    r.lat_max_us,
                ]);
            }
        }
        acc.into_iter()
            .map(|(op, v)| {
                let mut m = [None; 5];
                for (i, slot) in m.iter_mut().enumerate() {
                    let known: Vec<f64> = v.iter().filter_map(|x| x[i]).collect();
                    *slot = (!known.is_empty()).then(|| mean(&known));
                }
                (op, m)
            })
            .collect()
    }
}

/// Ok phases of `rows`, one observation per cell and phase.
pub(super) fn observations(rows: &[FlatRow]) -> Vec<PhaseObs> {
    let mut by: BTreeMap<(String, String, u32), PhaseObs> = BTreeMap::new();
    let mut order: Vec<(String, String, u32)> = Vec::new();
    for r in rows.iter().filter(|r| r.status == Verdict::Ok) {
        let k = (r.run_id.clone(), r.cell_key.clone(), r.phase_index);
        by.entry(k.clone())
            .or_insert_with(|| {
                order.push(k.clone());
                PhaseObs {
                    head: r.clone(),
                    ops: Vec::new(),
                }
            })
            .ops
            .push(r.clone());
    }
    order.into_iter().filter_map(|k| by.remove(&k)).collect()
}

/// Group observations into configurations: series, run, cell group, phase
/// and its thread count.
pub(super) fn configs(obs: &[PhaseObs], series: &SeriesMap) -> Vec<Config> {
    let mut out: Vec<Config> = Vec::new();
    for o in obs {
        let style = series.style(&o.head);
        match out.iter_mut().find(|c| {
            c.style.name == style.name
                && c.head.run_id == o.head.run_id
                && c.head.cell_group == o.head.cell_group
                && c.head.threads == o.head.threads
                && c.head.phase == o.head.phase
                && c.head.hardware_class == o.head.hardware_class
        }) {
            Some(c) => c.reps.push(o.clone()),
            None => out.push(Config {
                style,
                head: o.head.clone(),
                reps: vec![o.clone()],
            }),
        }
    }
    // Cells of two hardware classes are two configurations, each named
    // with its class.
    let classes: std::collections::BTreeSet<&str> =
        out.iter().map(|c| c.head.hardware_class.as_str()).collect();
    if classes.len() > 1 {
        for c in &mut out {
            c.head.group_label = format!("{} [{}]", c.head.group_label, c.head.hardware_class);
        }
    }
    out
}

/// A phase's family: its name without a `/t<threads>` suffix, so that the
/// phases of one thread sweep inside a cell chart together.
pub fn family(phase: &str) -> &str {
    match phase.rsplit_once("/t") {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => phase,
    }
}

/// Phase families in the order they run.
pub(super) fn phase_order(rows: &[FlatRow]) -> Vec<String> {
    let mut first: BTreeMap<String, u32> = BTreeMap::new();
    for r in rows {
        let e = first
            .entry(family(&r.phase).to_string())
            .or_insert(r.phase_index);
        *e = (*e).min(r.phase_index);
    }
    let mut v: Vec<(u32, String)> = first.into_iter().map(|(p, i)| (i, p)).collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

/// Series in legend order (by name, numbers by value).
pub(super) fn series_list(cfgs: &[Config]) -> Vec<SeriesStyle> {
    let mut v: Vec<SeriesStyle> = Vec::new();
    for c in cfgs {
        if !v.iter().any(|s| s.name == c.style.name) {
            v.push(c.style.clone());
        }
    }
    v.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    v
}

/// The configurations of one phase family.
pub(super) fn in_family<'a>(cfgs: &'a [Config], phase: &str) -> Vec<&'a Config> {
    cfgs.iter()
        .filter(|c| family(&c.head.phase) == phase)
        .collect()
}

/// The series of `all` (in legend order) that have a configuration in `some`.
pub(super) fn series_of(all: &[Config], some: &[&Config]) -> Vec<SeriesStyle> {
    series_list(all)
        .into_iter()
        .filter(|s| some.iter().any(|c| c.style.name == s.name))
        .collect()
}

/// The highest mean throughput of the configurations `keep` selects;
/// `None` when it selects none.
pub(super) fn best_mean(cfgs: &[&Config], keep: impl Fn(&Config) -> bool) -> Option<f64> {
    stats::max(cfgs.iter().filter(|c| keep(c)).map(|c| c.mean()))
}

/// The best configuration (highest mean throughput) of each series in a phase.
pub(super) fn best_per_series<'a>(cfgs: &'a [Config], phase: &str) -> Vec<&'a Config> {
    let mut best: BTreeMap<Natural, &Config> = BTreeMap::new();
    for c in in_family(cfgs, phase) {
        let e = best.entry(Natural(c.style.name.clone())).or_insert(c);
        if c.mean() > e.mean() {
            *e = c;
        }
    }
    best.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{configs_of, row};
    use super::*;

    #[test]
    fn phases_of_a_thread_sweep_share_a_family() {
        assert_eq!(family("workload-a/t16"), "workload-a");
        assert_eq!(family("workload-a"), "workload-a");
        assert_eq!(family("odd/tx"), "odd/tx");
    }

    #[test]
    fn repetitions_are_one_configuration_and_failed_phases_none() {
        let failed = FlatRow {
            status: Verdict::Failed,
            ..row("redis", "r3", "run", 4, 5.0)
        };
        let rows = [
            row("redis", "r1", "run", 4, 100.0),
            row("redis", "r2", "run", 4, 200.0),
            failed,
            row("redis", "t8", "run", 8, 400.0),
        ];
        let obs = observations(&rows);
        assert_eq!(obs.len(), 3);
        let cfgs = configs(&obs, &SeriesMap::new(&rows, &[]));
        assert_eq!(cfgs.len(), 2);
        assert_eq!(cfgs[0].throughputs(), [100.0, 200.0]);
        assert_eq!(cfgs[0].mean(), 150.0);
        let best = best_per_series(&cfgs, "run");
        assert_eq!(best.len(), 1);
        assert_eq!(best[0].head.threads, 8);
        assert_eq!(
            best_mean(&in_family(&cfgs, "run"), |c| c.head.threads == 4),
            Some(150.0)
        );
    }

    #[test]
    fn latency_is_the_mean_over_repetitions_and_unknown_stays_unknown() {
        let mut a = row("redis", "r1", "run", 4, 100.0);
        a.lat_p99_us = Some(3000.0);
        let b = row("redis", "r2", "run", 4, 100.0);
        let b = FlatRow {
            lat_p50_us: Some(3000.0),
            ..b
        };
        let rows = [a, b];
        let lat = configs_of(&rows)[0].latency();
        assert_eq!(lat["READ"][0], Some(2000.0));
        assert_eq!(lat["READ"][2], Some(3000.0));
        assert_eq!(lat["READ"][1], None);
    }

    #[test]
    fn phase_families_come_in_the_order_they_ran() {
        let mut load = row("redis", "r1", "load", 4, 1.0);
        load.phase_index = 0;
        let mut b = row("redis", "r1", "b/t8", 8, 1.0);
        b.phase_index = 2;
        let mut a = row("redis", "r1", "a", 4, 1.0);
        a.phase_index = 1;
        assert_eq!(phase_order(&[b, a, load]), ["load", "a", "b"]);
    }
}
