//! `--set` for a scenario's own fields, so a quick try needs no file edit:
//!
//! | key | what |
//! |---|---|
//! | `dataset.records` (or `records`) | records to load; final, `scale` does not shrink it |
//! | `dataset.field_count`, `dataset.field_length` | record shape |
//! | `load.threads`, `load.batch` | the load phase |
//! | `repetitions` | cells per configuration |
//! | `phases.threads` (or `threads`) | every phase: `4` or a sweep `1,4,16` |
//! | `phases.duration` (or `duration`), `phases.operations` (or `operations`), `phases.warmup` (or `warmup`) | every phase's length |
//! | `phases.NAME.threads` / `.duration` / `.operations` / `.warmup` | one phase |

use super::diag::{Diagnostic, Diagnostics, unknown_hint};
use super::scenario::{Length, Scenario, Work};
use crate::units::Duration;
use crate::workload::bounds;

/// Scenario fields `--set` reaches, besides `phases.NAME.FIELD`.
pub(crate) const SCENARIO_KEYS: &[&str] = &[
    "records",
    "dataset.records",
    "dataset.field_count",
    "dataset.field_length",
    "load.threads",
    "load.batch",
    "repetitions",
    "threads",
    "duration",
    "operations",
    "warmup",
    "phases.threads",
    "phases.duration",
    "phases.operations",
    "phases.warmup",
];

/// Fields of one phase `--set` reaches.
const PHASE_FIELDS: &[&str] = &["threads", "duration", "operations", "warmup"];

/// Is `key` a scenario field (not an environment field or a knob)?
pub(crate) fn is_scenario_key(key: &str) -> bool {
    SCENARIO_KEYS.contains(&key) || key.starts_with("phases.")
}

/// Every scenario key of `s`, with its phases' names spelled out, for hints.
pub fn keys_of(s: &Scenario) -> Vec<String> {
    let mut out: Vec<String> = SCENARIO_KEYS.iter().map(|k| k.to_string()).collect();
    for p in &s.phases {
        for f in PHASE_FIELDS {
            out.push(format!("phases.{}.{f}", p.name));
        }
    }
    out
}

/// The scenario with the `--set` scenario fields applied, and what was
/// applied in words (`records = 1000 (--set)`). `records` set here is
/// final: the plan does not scale it.
pub struct Applied {
    pub scenario: Scenario,
    pub deviations: Vec<String>,
    /// `dataset.records` as set, not to be scaled.
    pub records: Option<u64>,
}

type Refusal = (String, Option<String>);

/// Apply every scenario key of `sets` to a copy of `s`; problems go to
/// `diags` as `--set` errors.
pub fn apply(s: &Scenario, sets: &[(String, String)], diags: &mut Diagnostics) -> Applied {
    let mut out = Applied {
        scenario: s.clone(),
        deviations: Vec::new(),
        records: None,
    };
    for (k, v) in sets.iter().filter(|(k, _)| is_scenario_key(k)) {
        match apply_one(&mut out, k, v.trim()) {
            Ok(()) => out.deviations.push(format!("{k} = {} (--set)", v.trim())),
            Err((msg, hint)) => {
                diags.push(Diagnostic::flag("--set", format!("{k}={v}"), msg, hint))
            }
        }
    }
    out
}

fn apply_one(a: &mut Applied, key: &str, v: &str) -> Result<(), Refusal> {
    let s = &mut a.scenario;
    let key = match key {
        "records" => "dataset.records",
        "threads" | "duration" | "operations" | "warmup" => {
            return set_phases(s, None, key, v);
        }
        k => k,
    };
    if let Some(rest) = key.strip_prefix("phases.") {
        return match rest.rsplit_once('.') {
            Some((name, field)) => set_phases(s, Some(name), field, v),
            None => set_phases(s, None, rest, v),
        };
    }
    match key {
        "dataset.records" | "dataset.field_count" | "dataset.field_length" => {
            let Some(d) = s.dataset.as_mut() else {
                return Err((
                    format!("scenario {} has no dataset", s.name),
                    Some("its data comes from a tool's own prepare step".into()),
                ));
            };
            let n = number(v, 1, u64::MAX)?;
            match key {
                "dataset.records" => {
                    bounds::check_records(n, 0).map_err(refusal)?;
                    d.records = n;
                    a.records = Some(n);
                }
                "dataset.field_count" => d.field_count = small(n)?,
                _ => d.field_length = small(n)?,
            }
            bounds::check_record_shape(d.field_count, d.field_length).map_err(refusal)?;
        }
        "load.threads" | "load.batch" => {
            let Some(l) = s.load.as_mut() else {
                return Err((format!("scenario {} has no load phase", s.name), None));
            };
            if key == "load.threads" {
                l.threads = number(v, 1, bounds::MAX_THREADS as u64)? as u32;
            } else {
                l.batch = number(v, 1, bounds::MAX_BATCH)? as u32;
            }
        }
        "repetitions" => s.repetitions = number(v, 1, 100)? as u32,
        _ => return Err(unknown(s, key)),
    }
    Ok(())
}

/// Set one field on one phase (`Some(name)`) or on every phase.
fn set_phases(s: &mut Scenario, name: Option<&str>, field: &str, v: &str) -> Result<(), Refusal> {
    if !PHASE_FIELDS.contains(&field) {
        let key = match name {
            Some(n) => format!("phases.{n}.{field}"),
            None => format!("phases.{field}"),
        };
        return Err(unknown(s, &key));
    }
    if let Some(n) = name
        && !s.phases.iter().any(|p| p.name == n)
    {
        let known: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
        return Err((
            format!("scenario {} has no phase `{n}`", s.name),
            Some(unknown_hint(n, &known)),
        ));
    }
    for p in s
        .phases
        .iter_mut()
        .filter(|p| name.is_none_or(|n| n == p.name))
    {
        match field {
            "threads" => p.threads = thread_list(v)?,
            "duration" => p.length = Length::Duration(positive_duration(v)?),
            "warmup" => {
                let w = v.parse::<Duration>().map_err(|e| (e.0, None))?;
                bounds::check_seconds("warmup", w.as_secs_f64()).map_err(refusal)?;
                p.warmup = w;
            }
            _ => {
                if matches!(p.work, Work::Tool(_)) {
                    return Err((
                        format!(
                            "phase `{}` runs a tool, and tools run for a `duration`, not a count of operations",
                            p.name
                        ),
                        Some(format!("--set phases.{}.duration=60s", p.name)),
                    ));
                }
                p.length = Length::Operations(number(v, 1, bounds::MAX_OPERATIONS)?);
            }
        }
    }
    Ok(())
}

fn unknown(s: &Scenario, key: &str) -> Refusal {
    let keys = keys_of(s);
    let known: Vec<&str> = keys.iter().map(String::as_str).collect();
    (
        format!("unknown scenario field `{key}`"),
        Some(unknown_hint(key, &known)),
    )
}

fn number(v: &str, min: u64, max: u64) -> Result<u64, Refusal> {
    match v.replace('_', "").parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        Ok(n) => Err((format!("{n} is out of range"), Some(range(min, max)))),
        Err(_) => Err((
            format!("`{v}` is not a whole number"),
            Some(range(min, max)),
        )),
    }
}

fn range(min: u64, max: u64) -> String {
    if max == u64::MAX {
        format!("at least {min}")
    } else {
        format!("{min} to {max}")
    }
}

fn refusal(r: bounds::Refusal) -> Refusal {
    (r.message, r.hint)
}

fn small(n: u64) -> Result<u32, Refusal> {
    u32::try_from(n).map_err(|_| (format!("{n} is out of range"), None))
}

fn positive_duration(v: &str) -> Result<Duration, Refusal> {
    let d = v.parse::<Duration>().map_err(|e| (e.0, None))?;
    if d.std().is_zero() {
        return Err(("duration must be above 0".into(), None));
    }
    bounds::check_seconds("duration", d.as_secs_f64()).map_err(refusal)?;
    Ok(d)
}

/// `4` or a sweep `1,4,16`.
fn thread_list(v: &str) -> Result<Vec<u32>, Refusal> {
    let hint = || {
        Some(format!(
            "a count from 1 to {}, or a sweep like 1,4,16",
            bounds::MAX_THREADS
        ))
    };
    let mut out = Vec::new();
    for part in v.split(',') {
        let n = number(part.trim(), 1, bounds::MAX_THREADS as u64).map_err(|(m, _)| (m, hint()))?;
        out.push(n as u32);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Project;
    use std::path::Path;

    fn scenario(name: &str) -> Scenario {
        let p = Project::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        p.scenarios[name].clone()
    }

    fn sets(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn dataset_phase_and_repetition_fields_are_set_by_path_and_alias() {
        let s = scenario("version-matrix");
        let mut d = Diagnostics::default();
        let a = apply(
            &s,
            &sets(&[
                ("records", "1000"),
                ("phases.workload-b.threads", "2,8"),
                ("duration", "3s"),
                ("warmup", "0s"),
                ("repetitions", "2"),
                ("load.threads", "1"),
                ("server.memory", "1GiB"),
            ]),
            &mut d,
        );
        assert!(d.is_empty(), "{d}");
        let s2 = &a.scenario;
        assert_eq!(s2.dataset.as_ref().unwrap().records, 1000);
        assert_eq!(a.records, Some(1000));
        assert_eq!(s2.phases[0].threads, vec![2, 8]);
        assert_eq!(
            s2.phases[0].length,
            Length::Duration(Duration::from_secs(3))
        );
        assert_eq!(s2.repetitions, 2);
        assert_eq!(s2.load.as_ref().unwrap().threads, 1);
        assert_eq!(a.deviations.len(), 6, "{:#?}", a.deviations);
        assert!(a.deviations.contains(&"records = 1000 (--set)".to_string()));
    }

    #[test]
    fn a_bad_scenario_key_or_value_is_refused_with_the_valid_keys() {
        let s = scenario("quickstart");
        let mut d = Diagnostics::default();
        apply(
            &s,
            &sets(&[
                ("phases.nope.threads", "4"),
                ("phases.workload-a.treads", "4"),
                ("threads", "0"),
                ("repetitions", "many"),
            ]),
            &mut d,
        );
        let text = d.to_string();
        assert_eq!(d.len(), 4, "{text}");
        assert!(
            text.contains("has no phase `nope` (hint: known: `workload-a`)"),
            "{text}"
        );
        assert!(
            text.contains("unknown scenario field `phases.workload-a.treads`"),
            "{text}"
        );
        assert!(
            text.contains("did you mean `phases.workload-a.threads`?"),
            "{text}"
        );
        assert!(text.contains("`dataset.records`"), "{text}");
        assert!(text.contains("0 is out of range"), "{text}");
        assert!(text.contains("`many` is not a whole number"), "{text}");
    }

    #[test]
    fn operations_cannot_be_set_on_a_tool_phase() {
        let s = scenario("002-sysbench-fractal-tree");
        let mut d = Diagnostics::default();
        apply(
            &s,
            &sets(&[("operations", "100"), ("records", "5")]),
            &mut d,
        );
        let text = d.to_string();
        assert!(text.contains("tools run for a `duration`"), "{text}");
        assert!(text.contains("has no dataset"), "{text}");
    }
}
