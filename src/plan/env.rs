//! An environment entry of the matrix as its cells see it: the
//! environment's spec at the scale the scenario or `--set` gives, then its
//! `set:` fields, then the environment fields of `--set`. Every value
//! remembers where it came from, so an error points at that line or flag.

use super::overrides::set_flag;
use crate::spec::diag::{Diagnostic, Diagnostics};
use crate::spec::environment::Hog;
use crate::spec::overrides::{CellEnv, parse_scale};
use crate::spec::scenario::{EnvRef, Phase, Scenario, Tool, Work};
use crate::spec::scenario_set::Applied;
use crate::spec::{Environment, Project};
use crate::units::{Bytes, SizeOrShare};
use std::collections::BTreeMap;

/// Where a resolved environment value came from, to point errors at it.
#[derive(Debug, Clone)]
enum Src {
    /// A field of the scenario (`matrix.environments[0].set.cache`).
    Scenario(String),
    /// A `--set` flag (`cache=1GiB`).
    Flag(String),
}

/// An environment of the matrix, resolved.
pub(super) struct EnvPlan<'a> {
    pub name: String,
    pub spec: &'a Environment,
    pub env: CellEnv,
    sources: BTreeMap<String, Src>,
    /// How it departs from its spec (scale, `set:`, `--set`).
    pub deviations: Vec<String>,
}

impl EnvPlan<'_> {
    /// A diagnostic about environment field `key`, at the scenario line or
    /// `--set` flag that set it, else at the environment's own line.
    pub fn diag(
        &self,
        scenario: &Scenario,
        key: &str,
        msg: String,
        hint: Option<String>,
    ) -> Diagnostic {
        match self.sources.get(key) {
            Some(Src::Scenario(field)) => scenario.origin.diag(field, msg, hint),
            Some(Src::Flag(flag)) => Diagnostic::flag("--set", flag.clone(), msg, hint),
            _ => self.spec.origin.diag(key, msg, hint),
        }
    }

    /// Memory the hog leaves to everything else, when there is a hog.
    pub fn hog_leave(&self) -> Option<Bytes> {
        match self.env.hog {
            Hog::Leave(b) => Some(b),
            Hog::None => None,
        }
    }

    /// The memory a cell may use: the cap, else what the hog leaves,
    /// else the host's RAM.
    pub(crate) fn effective_memory(&self, host_memory: Bytes) -> Bytes {
        self.env.memory.or(self.hog_leave()).unwrap_or(host_memory)
    }
}

/// A count at a scale, never below 1.
pub(super) fn scaled_count(n: u64, scale: f64) -> u64 {
    ((n as f64 * scale).round() as u64).max(1)
}

/// Resolve an environment entry of the matrix: scale, then `set:`, then
/// `--set`. `None` when the entry names no environment or a value is bad
/// (the diagnostics say which).
pub(super) fn resolve<'a>(
    project: &'a Project,
    applied: &Applied,
    eref: &EnvRef,
    env_sets: &[(String, String)],
    diags: &mut Diagnostics,
) -> Option<EnvPlan<'a>> {
    let s = &applied.scenario;
    let Some(spec) = project.environments.get(&eref.name) else {
        diags.push(s.origin.diag(
            &eref.field,
            format!("unknown environment `{}`", eref.name),
            None,
        ));
        return None;
    };
    let mut sources = BTreeMap::new();
    let scale = resolve_scale(spec, s, eref, env_sets, &mut sources, diags);
    let mut plan = EnvPlan {
        name: spec.name.clone(),
        spec,
        env: CellEnv::scaled(spec, scale),
        sources,
        deviations: Vec::new(),
    };
    if (scale - spec.scale).abs() > f64::EPSILON || scale != 1.0 {
        let line = scale_deviation(&plan, applied);
        plan.deviations.push(line);
    }
    let scenario_sets = eref.set.iter().map(|(k, v)| {
        let field = format!("{}.set.{k}", eref.field);
        (k, v, Src::Scenario(field))
    });
    let flag_sets = env_sets
        .iter()
        .map(|(k, v)| (k, v, Src::Flag(format!("{k}={v}"))));
    let mut ok = true;
    for (k, v, src) in scenario_sets.chain(flag_sets) {
        if k != "scale" {
            ok &= apply_set(&mut plan, s, k, v, src, diags);
        }
    }
    ok.then_some(plan)
}

/// The scale of an environment entry: its spec's, else the scenario's
/// `scale:`, else `set: {scale: ..}`, else `--set scale=..` (the last wins).
fn resolve_scale(
    spec: &Environment,
    s: &Scenario,
    eref: &EnvRef,
    env_sets: &[(String, String)],
    sources: &mut BTreeMap<String, Src>,
    diags: &mut Diagnostics,
) -> f64 {
    let mut scale = spec.scale;
    if let Some(sc) = eref.scale {
        scale = sc;
        sources.insert(
            "scale".to_string(),
            Src::Scenario(format!("{}.scale", eref.field)),
        );
    }
    for (_, v) in eref.set.iter().filter(|(k, _)| k == "scale") {
        let field = format!("{}.set.scale", eref.field);
        match parse_scale(v) {
            Ok(sc) => {
                scale = sc;
                sources.insert("scale".into(), Src::Scenario(field));
            }
            Err((m, h)) => diags.push(s.origin.diag(&field, m, h)),
        }
    }
    for (_, v) in env_sets.iter().filter(|(k, _)| k == "scale") {
        match parse_scale(v) {
            Ok(sc) => {
                scale = sc;
                sources.insert("scale".into(), Src::Flag(format!("scale={v}")));
            }
            Err((m, h)) => diags.push(set_flag("scale", v, m, h)),
        }
    }
    scale
}

/// What a scale changes: `scale 0.5, memory 16GiB -> 8GiB, records ...`.
fn scale_deviation(plan: &EnvPlan, applied: &Applied) -> String {
    let s = &applied.scenario;
    let (scale, env) = (plan.env.scale, &plan.env);
    let r = CellEnv::scaled(plan.spec, 1.0);
    let mut parts = vec![format!("scale {scale}")];
    if let (Some(a), Some(b)) = (r.memory, env.memory) {
        parts.push(format!("memory {a} -> {b}"));
    }
    if let (Some(SizeOrShare::Absolute(a)), Some(SizeOrShare::Absolute(b))) = (r.cache, env.cache) {
        parts.push(format!("cache {a} -> {b}"));
    }
    if let (Hog::Leave(a), Hog::Leave(b)) = (r.hog, env.hog) {
        parts.push(format!("hog leaves {a} -> {b}"));
    }
    if let Some(d) = &s.dataset
        && applied.records.is_none()
    {
        parts.push(format!(
            "records {} -> {}",
            d.records,
            scaled_count(d.records, scale)
        ));
    }
    parts.extend(scaled_tool_sizes(s, scale));
    parts.join(", ")
}

/// Apply one `set:` or `--set` environment field; false when refused.
fn apply_set(
    plan: &mut EnvPlan,
    s: &Scenario,
    key: &str,
    value: &str,
    src: Src,
    diags: &mut Diagnostics,
) -> bool {
    let applied = plan.env.apply(key, value);
    match (applied, src) {
        (Ok(()), src) => {
            let by = match src {
                Src::Scenario(_) => "scenario",
                Src::Flag(_) => "--set",
            };
            plan.deviations.push(format!("{key} = {value} ({by})"));
            plan.sources.insert(key.to_string(), src);
            true
        }
        (Err((m, h)), Src::Scenario(field)) => {
            diags.push(s.origin.diag(&field, m, h));
            false
        }
        (Err((m, h)), Src::Flag(_)) => {
            diags.push(set_flag(key, value, m, h));
            false
        }
    }
}

/// A tool's data set shrinks with the environment like the dataset does.
pub(super) fn scale_phase(p: &Phase, scale: f64) -> Phase {
    let mut p = p.clone();
    let by = |n: u64| scaled_count(n, scale);
    match &mut p.work {
        Work::Tool(Tool::Sysbench { table_size, .. }) => *table_size = by(*table_size),
        Work::Tool(Tool::Pgbench { scale: s, .. }) => *s = by(*s as u64) as u32,
        Work::Tool(Tool::Pytpcc(t)) => t.warehouses = by(t.warehouses),
        Work::Tool(Tool::Command { argv, scaled, .. }) => {
            for (k, v) in scaled.iter_mut() {
                *v = by(*v);
                let mark = format!("{{{k}}}");
                for a in argv.iter_mut() {
                    *a = a.replace(&mark, &v.to_string());
                }
            }
        }
        _ => {}
    }
    p
}

/// Tool sizes that shrink with scale: `table_size 16000000 -> 8000000`.
fn scaled_tool_sizes(s: &Scenario, scale: f64) -> Vec<String> {
    let mut out = Vec::new();
    for p in &s.phases {
        let q = scale_phase(p, scale);
        let pairs: Vec<(String, u64, u64)> = match (&p.work, &q.work) {
            (
                Work::Tool(Tool::Sysbench { table_size: a, .. }),
                Work::Tool(Tool::Sysbench { table_size: b, .. }),
            ) => vec![("table_size".into(), *a, *b)],
            (
                Work::Tool(Tool::Pgbench { scale: a, .. }),
                Work::Tool(Tool::Pgbench { scale: b, .. }),
            ) => {
                vec![("pgbench scale".into(), *a as u64, *b as u64)]
            }
            (Work::Tool(Tool::Pytpcc(a)), Work::Tool(Tool::Pytpcc(b))) => {
                vec![("warehouses".into(), a.warehouses, b.warehouses)]
            }
            (
                Work::Tool(Tool::Command { scaled: a, .. }),
                Work::Tool(Tool::Command { scaled: b, .. }),
            ) => a
                .iter()
                .filter_map(|(k, v)| b.get(k).map(|w| (k.clone(), *v, *w)))
                .collect(),
            _ => Vec::new(),
        };
        for (what, a, b) in pairs {
            let line = format!("{} {what} {a} -> {b}", p.name);
            if a != b && !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}
