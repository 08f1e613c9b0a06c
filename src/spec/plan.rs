//! A scenario turned into cells: engine@version x environment x repetition,
//! each with resolved limits, cache, knobs, rendered configs, the scaled
//! dataset and its phase runs. Planning creates nothing; it refuses a cell
//! that does not fit this host (CPUs, RAM, hog, swap accounting, cache).

use super::diag::{Diagnostic, Diagnostics, unknown_hint};
use super::engine::{Engine, KnobValue};
use super::environment::{DEFAULT_CACHE_SHARE, Hog};
use super::overrides::{CellEnv, ENV_KEYS, is_env_key, parse_scale};
use super::scenario::{Dataset, Load, Phase, Scenario, Settle, Tool, Work};
use super::{Environment, Project};
use crate::host::{CgroupLayout, HostFacts};
use crate::render::{RenderInput, RenderedConfig};
use crate::sandbox::{Backend, CellLimits, EngineLaunch, Program, Readiness, SwapPolicy};
use crate::units::{Bytes, Duration, Share, SizeOrShare};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Memory kept free beside the hog so the host stays responsive.
pub const HOG_MARGIN: Bytes = Bytes(256 * Bytes::MIB);

/// A planned scenario.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    pub scenario: String,
    pub description: String,
    pub cells: Vec<PlannedCell>,
    /// Rough wall time of the whole matrix (start, load, tool prepares,
    /// settle, phases, teardown).
    pub estimated_duration: Duration,
    /// `estimated_duration` step by step.
    pub estimate: super::estimate::Estimate,
    /// How the plan departs from the specs as written (scale, `set`,
    /// `--set`, sizes an engine rounds).
    pub deviations: Vec<String>,
    /// The write-up the scenario reproduces, and every way the plan
    /// differs from what it published.
    pub reproduces: Option<super::deviations::WriteupComparison>,
}

/// One cell: an engine version in an environment, one repetition.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlannedCell {
    /// `redis@7.0/quickstart/r0`; `--only` matches a substring of it.
    pub id: String,
    pub engine: String,
    pub version: String,
    pub environment: String,
    pub backend: Backend,
    /// Resolved binary (cgroup) or image (docker).
    pub program: Program,
    /// Resolved limits. `memory` is the cap to set: the environment's, or
    /// without one what the hog leaves, or the host's RAM.
    pub limits: CellLimits,
    /// Engine cache (the `cache_size` knob).
    pub cache: Bytes,
    /// Memory the hog leaves to everything else, when there is a hog.
    pub hog_leave: Option<Bytes>,
    /// Final knobs after defaults, the environment's cache, scenario
    /// knobs and `--set`, in canonical text.
    pub knobs: BTreeMap<String, String>,
    pub configs: Vec<RenderedConfig>,
    /// The dataset at this environment's scale.
    pub dataset: Option<Dataset>,
    pub load: Option<Load>,
    pub settle: Option<Settle>,
    /// Measured runs in order: one per phase and thread count.
    pub phases: Vec<PlannedPhase>,
    pub repetition: u32,
    pub scale: f64,
    /// argv and init with placeholders, filled by `launch`.
    pub command: Vec<String>,
    pub init: Vec<Vec<String>>,
    /// The user the engine and its `init` commands run as: the engine's
    /// `user:`, else [`DEFAULT_USER`](super::engine::DEFAULT_USER).
    pub user: String,
    pub env: BTreeMap<String, String>,
    pub readiness: Readiness,
    /// The binary inside the image (docker backend) for `{binary}`.
    pub image_binary: String,
    /// Spec files this cell was planned from, relative to the project home
    /// (scenario, environment, engine, templates), for provenance hashes.
    pub spec_files: Vec<String>,
}

/// One measured run: a phase at one thread count.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PlannedPhase {
    /// `workload-a/t4`.
    pub id: String,
    pub threads: u32,
    pub phase: Phase,
}

impl PlannedCell {
    /// The launch description for the sandbox, placeholders filled:
    /// `{binary}`, `{bin_dir}`, `{port}`, `{data_dir}`, `{config_dir}`,
    /// `{config:<name>}`.
    pub fn launch(
        &self,
        port: u16,
        data_dir: &Path,
        config_dir: &Path,
        log_path: &Path,
    ) -> EngineLaunch {
        let port_text = port.to_string();
        let fill = |arg: &str| self.fill(arg, &port_text, data_dir, config_dir);
        EngineLaunch {
            engine: self.engine.clone(),
            version: self.version.clone(),
            program: self.program.clone(),
            argv: self.command.iter().map(|a| fill(a)).collect(),
            env: self.env.clone(),
            port,
            data_dir: data_dir.to_path_buf(),
            config_files: self
                .configs
                .iter()
                .map(|c| (config_dir.join(&c.name), config_dir.join(&c.name)))
                .collect(),
            init: self
                .init
                .iter()
                .map(|argv| argv.iter().map(|a| fill(a)).collect())
                .collect(),
            user: Some(self.user.clone()),
            readiness: self.readiness.clone(),
            log_path: log_path.to_path_buf(),
        }
    }

    /// The binary as the engine's argv sees it (inside the image for docker).
    fn binary(&self) -> String {
        match &self.program {
            Program::Binary(p) => p.display().to_string(),
            Program::Image(_) => self.image_binary.clone(),
        }
    }

    /// `arg` as `plan` shows it: `{binary}` and `{bin_dir}` filled, the
    /// per-run values left as `{port}`, `{data_dir}`, `{config_dir}`.
    pub fn shown_arg(&self, arg: &str) -> String {
        self.fill(
            arg,
            "{port}",
            Path::new("{data_dir}"),
            Path::new("{config_dir}"),
        )
    }

    fn fill(&self, arg: &str, port: &str, data_dir: &Path, config_dir: &Path) -> String {
        let binary = self.binary();
        let bin_dir = Path::new(&binary)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let mut out = arg
            .replace("{binary}", &binary)
            .replace("{bin_dir}", &bin_dir)
            .replace("{port}", port)
            .replace("{data_dir}", &data_dir.display().to_string())
            .replace("{config_dir}", &config_dir.display().to_string());
        for c in &self.configs {
            out = out.replace(
                &format!("{{config:{}}}", c.name),
                &config_dir.join(&c.name).display().to_string(),
            );
        }
        out
    }

    /// Write the rendered configs into `config_dir`; returns their paths.
    pub fn write_configs(&self, config_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(config_dir)?;
        let mut out = Vec::new();
        for c in &self.configs {
            let p = config_dir.join(&c.name);
            std::fs::write(&p, &c.content)?;
            out.push(p);
        }
        Ok(out)
    }
}

/// Where a resolved environment value came from, to point errors at it.
#[derive(Debug, Clone)]
enum Src {
    Scenario(String),
    Flag(String),
}

struct EnvPlan {
    name: String,
    env: CellEnv,
    sources: BTreeMap<String, Src>,
    deviations: Vec<String>,
}

impl EnvPlan {
    fn diag(
        &self,
        envspec: &Environment,
        scenario: &Scenario,
        key: &str,
        msg: String,
        hint: Option<String>,
    ) -> Diagnostic {
        match self.sources.get(key) {
            Some(Src::Scenario(field)) => scenario.origin.diag(field, msg, hint),
            Some(Src::Flag(flag)) => Diagnostic::flag("--set", flag.clone(), msg, hint),
            _ => envspec.origin.diag(key, msg, hint),
        }
    }
}

/// Plan a scenario (name or path) on this host.
pub fn plan(
    project: &Project,
    scenario: &str,
    overrides: &[(String, String)],
    env_filter: Option<&str>,
    only: Option<&str>,
) -> Result<Plan, Diagnostics> {
    let host = HostFacts::probe();
    let s = project.find_scenario(scenario)?;
    plan_on(project, &s, overrides, env_filter, only, &host)
}

/// What a `plan` or `run` command line names.
#[derive(Debug)]
pub struct CommandPlan {
    pub scenario: Scenario,
    /// The `--set` flags, parsed.
    pub overrides: Vec<(String, String)>,
    pub plan: Plan,
    /// Problems of specs in the home that this scenario does not use:
    /// worth a warning, not a stop.
    pub warnings: Diagnostics,
}

/// The scenario (name or path) of the project under `home` and its plan
/// on `host`, with the `--set` flags parsed and applied.
pub fn plan_command_line(
    home: &Path,
    scenario: &str,
    set_flags: &[String],
    env_filter: Option<&str>,
    only: Option<&str>,
    host: &HostFacts,
) -> Result<CommandPlan, Diagnostics> {
    let overrides = super::overrides::parse_set_flags(set_flags)?;
    let (project, diags) = Project::load_all(home);
    let scenario = match project.find_scenario(scenario) {
        Ok(s) => s,
        Err(own) => {
            // Problems of the home itself (no specs at all) come first.
            let mut all = Diagnostics(
                diags
                    .0
                    .into_iter()
                    .filter(|d| !project.is_spec_file(&d.file))
                    .collect(),
            );
            all.extend(own);
            return Err(all);
        }
    };
    let (fatal, warnings) = project.split_for(&scenario, diags);
    fatal.into_result(())?;
    let plan = plan_on(&project, &scenario, &overrides, env_filter, only, host)?;
    Ok(CommandPlan {
        scenario,
        overrides,
        plan,
        warnings,
    })
}

/// Resolve a binary: a path must exist; a bare name is looked up on PATH.
pub fn resolve_binary(b: &str) -> Option<PathBuf> {
    if b.contains('/') {
        let p = PathBuf::from(b);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(b))
            .find(|p| p.is_file())
    })
}

/// Plan a parsed scenario against given host facts.
pub fn plan_on(
    project: &Project,
    s: &Scenario,
    overrides: &[(String, String)],
    env_filter: Option<&str>,
    only: Option<&str>,
    host: &HostFacts,
) -> Result<Plan, Diagnostics> {
    plan_inner(project, s, overrides, env_filter, only, host, true)
}

/// Render one engine's configs for one environment, as `benchcage render`
/// does: the same knob resolution as a plan, without the host checks (a
/// config for a bigger machine may be rendered anywhere).
pub fn render_engine(
    project: &Project,
    engine: &str,
    env: &str,
    overrides: &[(String, String)],
) -> Result<PlannedCell, Diagnostics> {
    let (name, version) = match engine.split_once('@') {
        Some((e, v)) => (e.to_string(), Some(v.to_string())),
        None => (engine.to_string(), None),
    };
    let mut diags = Diagnostics::default();
    let flag = |field: &str, msg: String, hint: Option<String>| {
        Diagnostic::flag("render", field, msg, hint)
    };
    match project.engines.get(&name) {
        None => {
            let known: Vec<&str> = project.engines.keys().map(String::as_str).collect();
            diags.push(flag(
                engine,
                format!("unknown engine `{name}`"),
                Some(unknown_hint(&name, &known)),
            ));
        }
        Some(e) => {
            if let Some(v) = &version
                && e.version(Some(v)).is_none()
            {
                diags.push(flag(
                    engine,
                    format!("{name} has no version `{v}`"),
                    Some(unknown_hint(v, &e.version_names())),
                ));
            }
        }
    }
    if !project.environments.contains_key(env) {
        let known: Vec<&str> = project.environments.keys().map(String::as_str).collect();
        diags.push(flag(
            env,
            format!("unknown environment `{env}`"),
            Some(unknown_hint(env, &known)),
        ));
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let s = Scenario {
        name: format!("render-{engine}-{env}"),
        description: String::new(),
        matrix: super::scenario::Matrix {
            engines: vec![super::scenario::EngineRef {
                engine: name,
                version,
                knobs: BTreeMap::new(),
                label: None,
                field: engine.into(),
            }],
            environments: vec![super::scenario::EnvRef {
                name: env.into(),
                scale: None,
                set: Vec::new(),
                field: env.into(),
            }],
        },
        knobs: BTreeMap::new(),
        dataset: None,
        repetitions: 1,
        load: None,
        settle: None,
        phases: Vec::new(),
        reproduces: None,
        origin: Default::default(),
    };
    let plan = plan_inner(
        project,
        &s,
        overrides,
        None,
        None,
        &HostFacts::probe(),
        false,
    )?;
    Ok(plan
        .cells
        .into_iter()
        .next()
        .expect("one engine x one environment"))
}

fn plan_inner(
    project: &Project,
    s: &Scenario,
    overrides: &[(String, String)],
    env_filter: Option<&str>,
    only: Option<&str>,
    host: &HostFacts,
    host_checks: bool,
) -> Result<Plan, Diagnostics> {
    let mut diags = Diagnostics::default();
    let flag = |k: &str, v: &str, msg: String, hint: Option<String>| {
        Diagnostic::flag("--set", format!("{k}={v}"), msg, hint)
    };
    // Scenario fields first (`records`, `phases.NAME.threads`), then
    // environment fields and knobs.
    let applied = super::scenario_set::apply(s, overrides, &mut diags);
    let s = &applied.scenario;
    let overrides: Vec<(String, String)> = overrides
        .iter()
        .filter(|(k, _)| !super::scenario_set::is_scenario_key(k))
        .cloned()
        .collect();
    let mut deviations = applied.deviations.clone();

    // Split --set into environment fields and knobs; a knob must be known
    // to at least one engine of the matrix.
    let engines: Vec<&Engine> = s
        .matrix
        .engines
        .iter()
        .filter_map(|r| project.engines.get(&r.engine))
        .collect();
    let mut env_sets = Vec::new();
    let mut knob_sets = Vec::new();
    for (k, v) in &overrides {
        if is_env_key(k) {
            env_sets.push((k.clone(), v.clone()));
        } else if engines.iter().any(|e| e.knobs.contains_key(k)) {
            knob_sets.push((k.clone(), v.clone()));
        } else {
            let scenario_keys = super::scenario_set::keys_of(s);
            let mut known: Vec<&str> = ENV_KEYS.to_vec();
            known.extend(scenario_keys.iter().map(String::as_str));
            for e in &engines {
                known.extend(e.knob_names());
            }
            known.sort();
            known.dedup();
            diags.push(flag(
                k,
                v,
                format!(
                    "unknown key `{k}`: not a scenario field, an environment field nor a knob of {}",
                    s.matrix
                        .engines
                        .iter()
                        .map(|e| e.label())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some(unknown_hint(k, &known)),
            ));
        }
    }

    if let Some(f) = env_filter
        && !s.matrix.environments.iter().any(|e| e.name == f)
    {
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

    for (k, v) in &knob_sets {
        deviations.push(format!("{k} = {} (--set)", v.trim()));
    }
    let mut cells = Vec::new();
    for eref in &s.matrix.environments {
        if env_filter.is_some_and(|f| f != eref.name) {
            continue;
        }
        let Some(envspec) = project.environments.get(&eref.name) else {
            diags.push(s.origin.diag(
                &eref.field,
                format!("unknown environment `{}`", eref.name),
                None,
            ));
            continue;
        };
        let Some(ep) = plan_env(envspec, &applied, eref, &env_sets, &mut diags) else {
            continue;
        };
        let before = diags.len();
        if host_checks {
            check_env_on_host(envspec, s, &ep, host, &mut diags);
        }
        for d in &ep.deviations {
            deviations.push(format!("{}: {d}", ep.name));
        }
        if diags.len() > before {
            continue;
        }
        for er in &s.matrix.engines {
            let Some(engine) = project.engines.get(&er.engine) else {
                continue;
            };
            let Some((version, ev)) = engine.version(er.version.as_deref()) else {
                diags.push(s.origin.diag(
                    &er.field,
                    format!(
                        "{} has no version `{}`",
                        engine.name,
                        er.version.clone().unwrap_or_default()
                    ),
                    Some(unknown_hint(
                        er.version.as_deref().unwrap_or(""),
                        &engine.version_names(),
                    )),
                ));
                continue;
            };
            let label = format!("{}@{version}", engine.name);
            let cell_label = er.label.clone().unwrap_or_else(|| label.clone());
            // The program for the backend.
            let program = match ep.env.backend {
                // `render` shows the config whatever the backend can run.
                Backend::Cgroup if !host_checks && ev.binary.is_none() => {
                    Program::Image(ev.image.clone().unwrap_or_default())
                }
                Backend::Docker if !host_checks && ev.image.is_none() => {
                    Program::Binary(PathBuf::from(ev.binary.clone().unwrap_or_default()))
                }
                Backend::Cgroup => match &ev.binary {
                    None => {
                        diags.push(ep.diag(envspec, s, "backend", format!("{label} has no local binary for the cgroup backend"), Some(match &ev.image {
                            Some(i) => format!("run it in docker (image {i}): set `backend: docker` or --set backend=docker"),
                            None => "add `binary:` to the engine version".into(),
                        })));
                        continue;
                    }
                    Some(b) => match resolve_binary(b) {
                        Some(p) => Program::Binary(p),
                        None if !host_checks => Program::Binary(PathBuf::from(b)),
                        None => {
                            diags.push(engine.origin.diag(&format!("versions.{version}.binary"), format!("{label}: binary `{b}` is not installed on this host"), Some(match &ev.image {
                                Some(i) => format!("install it (make deps), or run the image {i} with --set backend=docker"),
                                None => "install it (make deps)".into(),
                            })));
                            continue;
                        }
                    },
                },
                Backend::Docker => match &ev.image {
                    Some(i) => Program::Image(i.clone()),
                    None => {
                        diags.push(ep.diag(envspec, s, "backend", format!("{label} has no image for the docker backend"), Some("use the cgroup backend (--set backend=cgroup) or add `image:` to the engine version".into())));
                        continue;
                    }
                },
            };
            let image_binary = ev
                .image_binary
                .clone()
                .or_else(|| ev.binary.clone())
                .unwrap_or_else(|| engine.name.clone());

            // Memory: the cap, or what the host (or the hog) leaves.
            let hog_leave = match ep.env.hog {
                Hog::Leave(b) => Some(b),
                Hog::None => None,
            };
            let cap = ep.env.memory;
            let effective = cap.or(hog_leave).unwrap_or(host.mem_total);

            // Knobs: defaults, cache from the environment, scenario, engine entry, --set.
            let mut raw: BTreeMap<String, (String, String)> = BTreeMap::new();
            for (k, knob) in &engine.knobs {
                if let Some(d) = &knob.default {
                    raw.insert(
                        k.clone(),
                        (d.clone(), format!("engines/{}.yaml", engine.name)),
                    );
                }
            }
            let env_cache = match ep.env.cache {
                Some(c) => c.resolve(effective),
                None => Share(DEFAULT_CACHE_SHARE).of(effective),
            };
            let has_cache_knob = engine.knobs.contains_key("cache_size");
            if has_cache_knob {
                raw.insert(
                    "cache_size".into(),
                    (env_cache.to_string(), format!("environment {}", ep.name)),
                );
            }
            for (k, v) in &s.knobs {
                raw.insert(k.clone(), (v.clone(), format!("knobs.{k}")));
            }
            for (k, v) in &er.knobs {
                raw.insert(k.clone(), (v.clone(), format!("{}.knobs.{k}", er.field)));
            }
            for (k, v) in &knob_sets {
                if engine.knobs.contains_key(k) {
                    raw.insert(k.clone(), (v.clone(), format!("--set {k}")));
                }
            }
            let mut typed: BTreeMap<String, KnobValue> = BTreeMap::new();
            let mut knob_err = false;
            for (k, (v, from)) in &raw {
                let Some(knob) = engine.knobs.get(k) else {
                    knob_err = true;
                    diags.push(s.origin.diag(
                        from,
                        format!("{label} has no knob `{k}`"),
                        Some(unknown_hint(k, &engine.knob_names())),
                    ));
                    continue;
                };
                match knob.parse(v) {
                    Ok(tv) => {
                        typed.insert(k.clone(), tv);
                    }
                    Err(msg) => {
                        knob_err = true;
                        if from.starts_with("--set") {
                            diags.push(flag(k, v, msg, None));
                        } else {
                            diags.push(s.origin.diag(from, msg, None));
                        }
                    }
                }
            }
            for (k, other) in engine.conflicting_knobs(&typed) {
                knob_err = true;
                // Report where a user turned one of them on, not the default.
                let (v, from) = [&k, &other]
                    .iter()
                    .filter_map(|n| raw.get(*n))
                    .find(|(_, from)| !from.starts_with("engines/"))
                    .unwrap_or(&raw[&k]);
                let msg = format!("{label}: knobs `{k}` and `{other}` cannot both be true");
                let hint = Some(format!(
                    "turn one of them off; {k}: {}",
                    engine.knobs[&k].description
                ));
                if let Some(key) = from.strip_prefix("--set ") {
                    diags.push(flag(key, v, msg, hint));
                } else {
                    diags.push(s.origin.diag(from, msg, hint));
                }
            }
            if knob_err {
                continue;
            }
            let mut cache = match typed.get("cache_size") {
                Some(KnobValue::Size(b)) => *b,
                _ => env_cache,
            };
            if let Some(step) = engine.knobs.get("cache_size").and_then(|k| k.step.as_ref())
                && let Some(got) = step.round(version, cache)
            {
                if got > cache {
                    diags.push(ep.diag(
                        envspec,
                        s,
                        "cache",
                        format!("{label} takes cache_size in whole {}: {cache} would become {got}, more than planned", step.size),
                        Some(format!("give a cache of at least {}, or a version from {} on", step.size, step.before.as_deref().unwrap_or("?"))),
                    ));
                    continue;
                }
                deviations.push(format!(
                    "{}: {cell_label}: cache {cache} becomes {got} ({label} takes cache_size in whole {})",
                    ep.name, step.size
                ));
                cache = got;
                typed.insert("cache_size".into(), KnobValue::Size(got));
            }
            let cache_from_flag = knob_sets.iter().any(|(k, _)| k == "cache_size");
            if let Some(cap) = cap.or(hog_leave)
                && has_cache_knob
                && cache.0 + engine.cache_overhead.0 > cap.0
                && !ep.env.allow_cache_overcommit
            {
                let msg = format!(
                    "{label}: cache {cache} + engine overhead {} does not fit under the memory cap {cap} (or what the hog leaves)",
                    engine.cache_overhead
                );
                let hint = Some("lower the cache, raise server.memory, or set allow_cache_overcommit: true to reproduce an overcommitted engine".to_string());
                if cache_from_flag {
                    diags.push(flag("cache_size", &cache.to_string(), msg, hint));
                } else {
                    diags.push(ep.diag(envspec, s, "cache", msg, hint));
                }
                continue;
            }
            if cache.0 == 0 && has_cache_knob {
                diags.push(ep.diag(
                    envspec,
                    s,
                    "cache",
                    format!("{label}: the cache resolves to 0 bytes"),
                    Some("give `cache` a size".into()),
                ));
                continue;
            }

            let input = RenderInput {
                engine,
                version,
                environment: &ep.name,
                cache,
                memory: cap,
                cpus: ep.env.server_cpus.len(),
                knobs: &typed,
            };
            let configs = match crate::render::render_all(&project.home, &input) {
                Ok(c) => c,
                Err(e) => {
                    diags.push(engine.origin.diag(
                        "config_files",
                        format!("{label}: {e}"),
                        Some("fix the template".into()),
                    ));
                    continue;
                }
            };
            let dataset = s.dataset.clone().map(|mut d| {
                d.records = applied
                    .records
                    .unwrap_or(((d.records as f64 * ep.env.scale).round() as u64).max(1));
                d
            });
            let scale = ep.env.scale;
            let phases: Vec<PlannedPhase> = s
                .phases
                .iter()
                .map(|p| scale_phase(p, scale))
                .flat_map(|p| {
                    p.threads.clone().into_iter().map(move |t| PlannedPhase {
                        id: format!("{}/t{t}", p.name),
                        threads: t,
                        phase: p.clone(),
                    })
                })
                .collect();
            let mut spec_files = vec![
                s.origin.file.clone(),
                envspec.origin.file.clone(),
                engine.origin.file.clone(),
            ];
            spec_files.extend(
                engine
                    .config_files
                    .iter()
                    .map(|c| format!("templates/{}", c.template)),
            );
            spec_files.retain(|f| !f.is_empty());
            let limits = CellLimits {
                server_cpus: ep.env.server_cpus.clone(),
                client_cpus: ep.env.client_cpus.clone(),
                memory: effective,
                swap: ep.env.swap,
                pids: ep.env.pids,
                io: ep.env.io.clone(),
            };
            let settles: Vec<Option<Settle>> = match &s.settle {
                Some(sw) => sw.cells().into_iter().map(Some).collect(),
                None => vec![None],
            };
            let sweep = settles.len() > 1;
            for (settle, rep) in settles
                .iter()
                .flat_map(|st| (0..s.repetitions).map(move |r| (st, r)))
            {
                // A sweep of settle caps is one environment per cap in ids,
                // records and reports, so cells stay apart everywhere.
                let environment = match settle.as_ref().and_then(|st| st.memory) {
                    Some(m) if sweep => format!("{}-{}", ep.name, m.tag()),
                    _ => ep.name.clone(),
                };
                let id = format!("{cell_label}/{environment}/r{rep}");
                if only.is_some_and(|o| !id.contains(o)) {
                    continue;
                }
                cells.push(PlannedCell {
                    id,
                    engine: engine.name.clone(),
                    version: version.to_string(),
                    environment,
                    backend: ep.env.backend,
                    program: program.clone(),
                    limits: limits.clone(),
                    cache,
                    hog_leave,
                    knobs: typed
                        .iter()
                        .map(|(k, v)| (k.clone(), v.canonical()))
                        .collect(),
                    configs: configs.clone(),
                    dataset: dataset.clone(),
                    load: s.load.clone(),
                    settle: settle.clone(),
                    phases: phases.clone(),
                    repetition: rep,
                    scale: ep.env.scale,
                    command: engine.command.clone(),
                    init: engine.init.clone(),
                    user: engine
                        .user
                        .clone()
                        .unwrap_or_else(|| super::engine::DEFAULT_USER.into()),
                    env: engine.env.clone(),
                    readiness: engine.readiness.clone(),
                    image_binary: image_binary.clone(),
                    spec_files: spec_files.clone(),
                });
            }
        }
    }
    if diags.is_empty() && cells.is_empty() {
        diags.push(Diagnostic::flag(
            "--only",
            only.unwrap_or_default(),
            "no cell matches",
            Some("`benchcage plan SCENARIO` without --only lists the cell ids".into()),
        ));
    }
    let per_cell: Vec<super::estimate::Estimate> =
        cells.iter().map(super::estimate::cell).collect();
    let estimate = super::estimate::Estimate::sum(&per_cell);
    for p in &s.phases {
        if matches!(p.work, Work::Tool(_)) && !p.warmup.std().is_zero() {
            deviations.push(format!(
                "phase {}: warmup {} is not run, tools start measuring at once",
                p.name, p.warmup
            ));
        }
    }
    deviations.dedup();
    let reproduces = s
        .reproduces
        .as_ref()
        .map(|r| super::deviations::compare(project, r, s, &cells));
    diags.into_result(Plan {
        scenario: s.name.clone(),
        description: s.description.clone(),
        cells,
        estimated_duration: estimate.total(),
        estimate,
        deviations,
        reproduces,
    })
}

/// A tool's data set shrinks with the environment like the dataset does.
fn scale_phase(p: &Phase, scale: f64) -> Phase {
    let mut p = p.clone();
    let by = |n: u64| ((n as f64 * scale).round() as u64).max(1);
    match &mut p.work {
        Work::Tool(Tool::Sysbench { table_size, .. }) => *table_size = by(*table_size),
        Work::Tool(Tool::Pgbench { scale: s, .. }) => *s = by(*s as u64) as u32,
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

/// Resolve an environment entry of the matrix: scale, then `set:`, then `--set`.
fn plan_env(
    envspec: &Environment,
    applied: &super::scenario_set::Applied,
    eref: &super::scenario::EnvRef,
    env_sets: &[(String, String)],
    diags: &mut Diagnostics,
) -> Option<EnvPlan> {
    let s = &applied.scenario;
    let mut deviations = Vec::new();
    let mut sources = BTreeMap::new();
    let mut scale = envspec.scale;
    if let Some(sc) = eref.scale {
        scale = sc;
        sources.insert(
            "scale".to_string(),
            Src::Scenario(format!("{}.scale", eref.field)),
        );
    }
    for (k, v) in &eref.set {
        if k == "scale" {
            match parse_scale(v) {
                Ok(sc) => {
                    scale = sc;
                    sources.insert(
                        "scale".into(),
                        Src::Scenario(format!("{}.set.scale", eref.field)),
                    );
                }
                Err((m, h)) => {
                    diags.push(s.origin.diag(&format!("{}.set.scale", eref.field), m, h))
                }
            }
        }
    }
    for (k, v) in env_sets {
        if k == "scale" {
            match parse_scale(v) {
                Ok(sc) => {
                    scale = sc;
                    sources.insert("scale".into(), Src::Flag(format!("scale={v}")));
                }
                Err((m, h)) => diags.push(Diagnostic::flag("--set", format!("scale={v}"), m, h)),
            }
        }
    }
    let mut env = CellEnv::scaled(envspec, scale);
    if (scale - envspec.scale).abs() > f64::EPSILON || scale != 1.0 {
        let r = CellEnv::scaled(envspec, 1.0);
        let mut parts = vec![format!("scale {scale}")];
        if let (Some(a), Some(b)) = (r.memory, env.memory) {
            parts.push(format!("memory {a} -> {b}"));
        }
        if let (Some(SizeOrShare::Absolute(a)), Some(SizeOrShare::Absolute(b))) =
            (r.cache, env.cache)
        {
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
                ((d.records as f64 * scale).round() as u64).max(1)
            ));
        }
        parts.extend(scaled_tool_sizes(s, scale));
        deviations.push(parts.join(", "));
    }
    let mut ok = true;
    for (k, v) in &eref.set {
        if k == "scale" {
            continue;
        }
        let field = format!("{}.set.{k}", eref.field);
        match env.apply(k, v) {
            Ok(()) => {
                sources.insert(k.clone(), Src::Scenario(field));
                deviations.push(format!("{k} = {v} (scenario)"));
            }
            Err((m, h)) => {
                ok = false;
                diags.push(s.origin.diag(&field, m, h));
            }
        }
    }
    for (k, v) in env_sets {
        if k == "scale" {
            continue;
        }
        match env.apply(k, v) {
            Ok(()) => {
                sources.insert(k.clone(), Src::Flag(format!("{k}={v}")));
                deviations.push(format!("{k} = {v} (--set)"));
            }
            Err((m, h)) => {
                ok = false;
                diags.push(Diagnostic::flag("--set", format!("{k}={v}"), m, h));
            }
        }
    }
    ok.then_some(EnvPlan {
        name: envspec.name.clone(),
        env,
        sources,
        deviations,
    })
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

/// Refuse what this host cannot give: CPUs, RAM, hog room, swap accounting.
fn check_env_on_host(
    envspec: &Environment,
    s: &Scenario,
    ep: &EnvPlan,
    host: &HostFacts,
    diags: &mut Diagnostics,
) {
    let e = &ep.env;
    let n_online = host.online_cpus.len();
    for (key, cpus) in [
        ("server.cpus", &e.server_cpus),
        ("client.cpus", &e.client_cpus),
    ] {
        if cpus.is_empty() {
            diags.push(ep.diag(envspec, s, key, "the CPU set is empty".into(), None));
        } else if !cpus.is_subset(&host.online_cpus) {
            diags.push(ep.diag(
                envspec,
                s,
                key,
                format!(
                    "this host has {n_online} CPUs online ({}); `{key}: {cpus}` asks for {} including ones it lacks",
                    host.online_cpus,
                    cpus.len()
                ),
                Some(format!(
                    "fit it to this host in the scenario (`{{name: {}, set: {{server.cpus: \"1\", client.cpus: \"0\"}}}}`) or with --set {key}=...",
                    ep.name
                )),
            ));
        }
    }
    let overlap = e.server_cpus.intersection(&e.client_cpus);
    if !overlap.is_empty() {
        diags.push(ep.diag(
            envspec,
            s,
            "client.cpus",
            format!(
                "client CPUs {} overlap the server's {} on {overlap}",
                e.client_cpus, e.server_cpus
            ),
            Some("the load generator must run on other CPUs than the server".into()),
        ));
    }
    if let Some(m) = e.memory
        && m > host.mem_total
    {
        diags.push(ep.diag(
            envspec,
            s,
            "server.memory",
            format!(
                "the memory cap {m} is more than this host's RAM ({})",
                host.mem_total
            ),
            Some(format!(
                "scale the environment (e.g. `scale: {}`) or --set server.memory=SIZE",
                suggest_scale(m, host.mem_total)
            )),
        ));
    }
    if let Hog::Leave(leave) = e.hog {
        let room = host.mem_available.saturating_sub(HOG_MARGIN);
        if leave >= room {
            diags.push(ep.diag(
                envspec,
                s,
                "hog.leave",
                format!(
                    "the hog should leave {leave} but only {} is available ({} after a {HOG_MARGIN} margin): it would lock nothing",
                    approx(host.mem_available),
                    approx(room)
                ),
                Some(format!("scale the environment (e.g. `scale: {}`) or --set hog.leave=SIZE", suggest_scale(leave, room))),
            ));
        }
        if let Some(m) = e.memory
            && m > leave
        {
            diags.push(ep.diag(
                envspec,
                s,
                "hog.leave",
                format!("the hog leaves {leave} but the memory cap is {m}: the cap could never be reached"),
                Some("leave at least the cap".into()),
            ));
        }
    }
    if let SwapPolicy::Limit(_) = e.swap
        && !host.swap_accounting
    {
        diags.push(ep.diag(
            envspec,
            s,
            "server.swap",
            "swap is limited but this kernel has no swap accounting (no memory.memsw.* on cgroup v1)".into(),
            Some("boot with swapaccount=1, or use `swap: off`".into()),
        ));
    }
    if e.backend == Backend::Cgroup && host.cgroup == CgroupLayout::None {
        diags.push(ep.diag(
            envspec,
            s,
            "backend",
            "no cgroup hierarchy is mounted on this host".into(),
            Some("see `benchcage doctor`".into()),
        ));
    }
}

/// A host-sized amount, rounded for reading: `23.5GiB`, `512.0MiB`.
pub fn approx(b: Bytes) -> String {
    if b.0 >= Bytes::GIB {
        format!("{:.1}GiB", b.as_gib_f64())
    } else {
        format!("{:.1}MiB", b.as_mib_f64())
    }
}

/// A scale that brings `want` under `have`, as a power of two fraction.
fn suggest_scale(want: Bytes, have: Bytes) -> String {
    let mut s = 1.0f64;
    while want.0 as f64 * s > have.0 as f64 && s > 1.0 / 1024.0 {
        s /= 2.0;
    }
    format!("{s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::CpuSet;

    fn project() -> Project {
        Project::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    fn host(cpus: &str, total_gib: u64, avail_gib: u64) -> HostFacts {
        let mut h = HostFacts::probe();
        h.online_cpus = cpus.parse::<CpuSet>().unwrap();
        h.mem_total = Bytes::from_gib(total_gib);
        h.mem_available = Bytes::from_gib(avail_gib);
        h.swap_accounting = true;
        h
    }

    #[test]
    fn a_thread_sweep_gives_one_measured_run_per_value() {
        let p = project();
        let s = &p.scenarios["003-mongodb-3.2"];
        let plan = plan_on(&p, s, &[], Some("c4-16g"), None, &host("0-1", 24, 20)).unwrap();
        assert_eq!(plan.cells.len(), 4);
        let ids: Vec<&str> = plan.cells[0].phases.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids[..3],
            [
                "read-update-50-50/t16",
                "read-update-50-50/t32",
                "read-update-50-50/t64"
            ]
        );
        assert_eq!(plan.cells[0].phases.len(), 9);
    }

    #[test]
    fn scale_shrinks_memory_cache_hog_dataset_and_tool_tables_alike() {
        let p = project();
        let s = &p.scenarios["002-sysbench-fractal-tree"];
        let plan = plan_on(&p, s, &[], None, None, &host("0-1", 24, 20)).unwrap();
        let c = &plan.cells[0];
        assert_eq!(c.hog_leave, Some(Bytes::from_gib(8)));
        assert_eq!(c.cache, Bytes::from_gib(4));
        assert_eq!(c.limits.memory, Bytes::from_gib(8));
        match &c.phases[0].phase.work {
            Work::Tool(Tool::Sysbench { table_size, .. }) => assert_eq!(*table_size, 8_000_000),
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn a_smaller_host_refuses_what_a_bigger_one_accepts() {
        let p = project();
        let s = &p.scenarios["002-sysbench-fractal-tree"];
        let e = plan_on(&p, s, &[], None, None, &host("0-1", 8, 6)).unwrap_err();
        assert!(
            e.to_string()
                .contains("the hog should leave 8GiB but only 6.0GiB"),
            "{e}"
        );
        let e = plan_on(&p, s, &[], None, None, &host("0", 24, 20)).unwrap_err();
        assert!(
            e.to_string()
                .contains("this host has 1 CPUs online (0); `server.cpus: 1` asks for 1"),
            "{e}"
        );
    }

    #[test]
    fn repetitions_make_one_cell_each_with_its_index() {
        let p = project();
        let mut s = p.scenarios["quickstart"].clone();
        s.repetitions = 3;
        let plan = plan_on(&p, &s, &[], None, None, &host("0-1", 24, 20)).unwrap();
        let reps: Vec<u32> = plan.cells.iter().map(|c| c.repetition).collect();
        assert_eq!(reps, vec![0, 1, 2]);
        assert_eq!(plan.cells[2].id, "redis@7.0/quickstart/r2");
        let only = plan_on(&p, &s, &[], None, Some("/r1"), &host("0-1", 24, 20)).unwrap();
        assert_eq!(only.cells.len(), 1);
        let none = plan_on(&p, &s, &[], None, Some("nope"), &host("0-1", 24, 20)).unwrap_err();
        assert!(none.to_string().contains("no cell matches"));
    }

    #[test]
    fn suggested_scales_are_powers_of_two_that_fit() {
        assert_eq!(
            suggest_scale(Bytes::from_gib(50), Bytes::from_gib(24)),
            "0.25"
        );
        assert_eq!(suggest_scale(Bytes::from_gib(1), Bytes::from_gib(24)), "1");
    }
}
