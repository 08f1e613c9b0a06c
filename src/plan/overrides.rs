//! `--set` split by what it reaches: scenario fields (applied to the
//! scenario first: `records`, `phases.NAME.threads`), environment fields
//! (`server.memory`, `scale`) and knobs of the matrix's engines. A key
//! that is none of these is refused with the keys that are.

use crate::spec::diag::{Diagnostic, Diagnostics, unknown_hint};
use crate::spec::overrides::{ENV_KEYS, is_env_key};
use crate::spec::scenario_set::{self, Applied};
use crate::spec::{Engine, Project, Scenario};

/// The `--set` flags of a plan, split.
pub(super) struct Sets<'a> {
    /// Every flag as given, to point a scenario-field error at its flag.
    pub all: &'a [(String, String)],
    /// The scenario with its fields set, and what that changed.
    pub applied: Applied,
    /// Environment fields, in order.
    pub env: Vec<(String, String)>,
    /// Knobs, in order.
    pub knobs: Vec<(String, String)>,
}

impl Sets<'_> {
    /// The scenario as planned (its `--set` fields applied).
    pub fn scenario(&self) -> &Scenario {
        &self.applied.scenario
    }

    /// Whether a `--set` gave knob `key`.
    pub(crate) fn sets_knob(&self, key: &str) -> bool {
        self.knobs.iter().any(|(k, _)| k == key)
    }
}

/// A diagnostic at the flag `--set KEY=VALUE`.
pub(super) fn set_flag(key: &str, value: &str, msg: String, hint: Option<String>) -> Diagnostic {
    Diagnostic::flag("--set", format!("{key}={value}"), msg, hint)
}

/// Split `overrides`: scenario fields are applied, environment fields and
/// knobs sorted out; an unknown key goes into `diags`. A knob must be
/// known to at least one engine of the matrix.
pub(super) fn split<'a>(
    project: &Project,
    s: &Scenario,
    overrides: &'a [(String, String)],
    diags: &mut Diagnostics,
) -> Sets<'a> {
    let applied = scenario_set::apply(s, overrides, diags);
    let s = &applied.scenario;
    let engines: Vec<&Engine> = s
        .matrix
        .engines
        .iter()
        .filter_map(|r| project.engines.get(&r.engine))
        .collect();
    let (mut env, mut knobs) = (Vec::new(), Vec::new());
    for (k, v) in overrides {
        if scenario_set::is_scenario_key(k) {
            continue;
        } else if is_env_key(k) {
            env.push((k.clone(), v.clone()));
        } else if engines.iter().any(|e| e.knobs.contains_key(k)) {
            knobs.push((k.clone(), v.clone()));
        } else {
            diags.push(unknown_key(s, &engines, k, v));
        }
    }
    Sets {
        all: overrides,
        applied,
        env,
        knobs,
    }
}

/// `--set k=v` that is no scenario field, environment field nor knob.
fn unknown_key(s: &Scenario, engines: &[&Engine], k: &str, v: &str) -> Diagnostic {
    let scenario_keys = scenario_set::keys_of(s);
    let mut known: Vec<&str> = ENV_KEYS.to_vec();
    known.extend(scenario_keys.iter().map(String::as_str));
    for e in engines {
        known.extend(e.knob_names());
    }
    known.sort();
    known.dedup();
    let labels: Vec<String> = s.matrix.engines.iter().map(|e| e.label()).collect();
    set_flag(
        k,
        v,
        format!(
            "unknown key `{k}`: not a scenario field, an environment field nor a knob of {}",
            labels.join(", ")
        ),
        Some(unknown_hint(k, &known)),
    )
}

/// `--env NAME` must name an environment of the matrix.
pub(super) fn check_env_filter(s: &Scenario, env_filter: Option<&str>, diags: &mut Diagnostics) {
    let Some(f) = env_filter else {
        return;
    };
    if s.matrix.environments.iter().any(|e| e.name == f) {
        return;
    }
    let known: Vec<&str> = s
        .matrix
        .environments
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    diags.push(Diagnostic::flag(
        "--env",
        f,
        format!("environment `{f}` is not in the matrix of {}", s.name),
        Some(unknown_hint(f, &known)),
    ));
}
