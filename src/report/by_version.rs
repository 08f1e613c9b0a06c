//! `compare --by-version`: within one run, each version of an engine is
//! the candidate against the version before it (in version order, `12` <
//! `13` < `17`, `6.2` < `7.0` < `8.2`), cell by cell on the same setup
//! (environment, backend, threads, limits, knobs). The rows are re-keyed
//! so that [`super::compare::compare`] matches them as it matches two runs.

use super::compare::{self, Comparison, Metric, Seconds, Threshold};
use crate::results::flat::{FlatRow, flatten, setup_group};
use crate::results::layout::RunData;
use crate::results::order::natural_cmp;
use std::collections::{BTreeMap, BTreeSet};

/// One step from a version to the next of one engine on one setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub engine: String,
    pub from: String,
    pub to: String,
}

/// The rows of every step, keyed so that a step's base and candidate rows
/// share a cell group, with a label per group.
#[derive(Debug, Default)]
pub struct Steps {
    pub steps: Vec<Step>,
    pub base: Vec<FlatRow>,
    pub candidate: Vec<FlatRow>,
    pub labels: BTreeMap<String, String>,
}

/// `setup` maps a row's cell key to its version-free setup group.
pub fn steps(rows: &[FlatRow], setup: &BTreeMap<String, String>) -> Steps {
    let setup_of = |r: &FlatRow| setup.get(&r.cell_key).cloned().unwrap_or_default();
    // (engine, setup) -> versions present.
    let mut versions: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for r in rows {
        versions
            .entry((r.engine.clone(), setup_of(r)))
            .or_default()
            .insert(r.version.clone());
    }
    let mut out = Steps::default();
    for ((engine, group), set) in versions {
        let mut ordered: Vec<String> = set.into_iter().collect();
        ordered.sort_by(|a, b| natural_cmp(a, b));
        for pair in ordered.windows(2) {
            let (from, to) = (&pair[0], &pair[1]);
            let key = format!("{group}:{engine}@{from}->{to}");
            let of = |v: &str| {
                rows.iter()
                    .filter(|r| r.engine == engine && r.version == v && setup_of(r) == group)
                    .map(|r| FlatRow {
                        cell_group: key.clone(),
                        ..r.clone()
                    })
                    .collect::<Vec<_>>()
            };
            let cand = of(to);
            let env = cand
                .first()
                .map(|r| r.environment.clone())
                .unwrap_or_default();
            out.labels
                .insert(key.clone(), format!("{engine} {from} -> {to} / {env}"));
            out.base.extend(of(from));
            out.candidate.extend(cand);
            let step = Step {
                engine: engine.clone(),
                from: from.clone(),
                to: to.clone(),
            };
            if !out.steps.contains(&step) {
                out.steps.push(step);
            }
        }
    }
    out
}

/// Every step of `run`'s versions compared on `metrics`, as
/// `compare --by-version` prints it and the report's Versions section
/// marks it; `None` when no engine ran at two versions on one setup.
pub(crate) fn compare_run(
    run: &RunData,
    threshold: Threshold,
    metrics: &[Metric],
) -> Option<(Steps, Comparison)> {
    let setup: BTreeMap<String, String> = run
        .cells
        .iter()
        .map(|c| (c.record.key.clone(), setup_group(&c.record)))
        .collect();
    let steps = steps(&flatten(run), &setup);
    if steps.steps.is_empty() {
        return None;
    }
    let mut seconds = Seconds::default();
    seconds.add(run);
    let bases = metrics
        .iter()
        .map(|m| (*m, compare::base_from_run(&steps.base, *m, &seconds)))
        .collect();
    let base_failed = compare::failed_phases(&steps.base);
    let result = compare::compare(
        &bases,
        &base_failed,
        &steps.labels,
        &steps.candidate,
        &seconds,
        threshold,
    );
    Some((steps, result))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(engine: &str, version: &str, setup: &str, tput: f64) -> FlatRow {
        FlatRow {
            cell_key: format!("{engine}-{version}-{setup}"),
            cell_group: format!("g-{engine}-{version}-{setup}"),
            engine: engine.into(),
            version: version.into(),
            environment: "quickstart".into(),
            phase: "run".into(),
            op: "READ".into(),
            threads: 4,
            throughput: tput,
            ..FlatRow::default()
        }
    }

    fn setups(rows: &[FlatRow]) -> BTreeMap<String, String> {
        rows.iter()
            .map(|r| {
                (
                    r.cell_key.clone(),
                    r.cell_key.rsplit('-').next().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn each_version_is_paired_with_the_one_before_it_in_version_order() {
        let rows = vec![
            row("postgres", "17", "a", 5.0),
            row("postgres", "9.6", "a", 1.0),
            row("postgres", "12", "a", 2.0),
            row("redis", "8.2", "a", 9.0),
            row("redis", "6.2", "a", 8.0),
            row("mariadb", "10.11", "a", 3.0),
        ];
        let s = steps(&rows, &setups(&rows));
        let names: Vec<String> = s
            .steps
            .iter()
            .map(|st| format!("{} {}->{}", st.engine, st.from, st.to))
            .collect();
        assert_eq!(
            names,
            ["postgres 9.6->12", "postgres 12->17", "redis 6.2->8.2"]
        );
        // A version in the middle is the candidate of one step and the base
        // of the next; the two sides of a step share a group.
        assert_eq!(s.base.len(), 3);
        assert_eq!(s.candidate.len(), 3);
        for (b, c) in s.base.iter().zip(&s.candidate) {
            assert_eq!(b.cell_group, c.cell_group);
            assert_eq!(b.engine, c.engine);
            assert!(natural_cmp(&b.version, &c.version).is_lt());
        }
        assert!(
            s.labels
                .values()
                .any(|l| l == "postgres 12 -> 17 / quickstart")
        );
    }

    #[test]
    fn versions_on_different_setups_are_not_paired() {
        let rows = vec![
            row("postgres", "12", "a", 2.0),
            row("postgres", "13", "b", 2.0),
        ];
        assert!(steps(&rows, &setups(&rows)).steps.is_empty());
    }
}
