//! A scenario turned into cells: engine@version x environment x repetition,
//! each with resolved limits, cache, knobs, rendered configs, the scaled
//! dataset and its phase runs. Planning creates nothing; it refuses a cell
//! that does not fit this host (CPUs, RAM, hog, swap accounting, cache).
//!
//! One step a file, in the order a cell is planned:
//! - `overrides`: `--set` split into scenario fields, environment fields
//!   and knobs;
//! - `env`: each environment of the matrix scaled and overridden;
//! - `program`: the binary or image, and the user it runs as;
//! - `knobs`: knobs layered from their sources, the cache rounded;
//! - `fit`, `host_fit`: what the environment, the cache, the load generator
//!   and the data need of this host;
//! - `workload`: the scenario's work as the load generator's and the
//!   tools' typed configs;
//! - `cells`: the entry expanded into typed cells;
//! - `estimate`, `footprint`, `deviations`: how long, how much disk, and
//!   how the plan differs from the specs and the write-up.

use crate::host::HostFacts;
use crate::spec::Project;
use crate::spec::diag::{Diagnostic, Diagnostics, unknown_hint};
use crate::spec::engine::{Engine, EngineVersion};
use crate::spec::scenario::{EngineRef, EnvRef, Scenario, Work};
use crate::units::{Bytes, Duration};
use std::collections::BTreeMap;
use std::path::Path;

mod cell;
mod cells;
mod claims;
pub(crate) mod describe;
pub mod deviations;
mod env;
pub mod estimate;
pub(crate) mod fetches;
mod fit;
pub mod footprint;
mod host_fit;
mod identity;
mod knobs;
pub mod members;
mod overrides;
mod program;
pub(crate) mod settle;
pub mod snapshot;
mod workload;

pub use cell::{PhaseConfig, PlannedCell, PlannedPhase, StoreOption};
pub use identity::{CellIdentity, LimitsIdentity, WorkloadIdentity};
pub use program::{HostBinaryError, host_binary, resolve_binary};

/// Memory kept free beside the hog so the host stays responsive.
pub(crate) const HOG_MARGIN: Bytes = crate::sandbox::hog::SAFETY_MARGIN;

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
    pub estimate: estimate::Estimate,
    /// How the plan departs from the specs as written (scale, `set`,
    /// `--set`, sizes an engine rounds).
    pub deviations: Vec<String>,
    /// The write-up the scenario reproduces, and every way the plan
    /// differs from what it published.
    pub reproduces: Option<deviations::WriteupComparison>,
    /// The write-up's claims a run of this plan decides, sides resolved
    /// to the matrix's entries.
    pub claims: Vec<crate::model::claim::Claim>,
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
    /// The specs the plan was made from: what a run asks of them after
    /// planning goes through the methods below, so `run` never reads a
    /// spec itself.
    project: Project,
}

/// What a run checks of a cell's engine version beside its plan: whether
/// its server reports the version (`reports_own_version`), and where its
/// binary comes from (a fetched version names its package).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VersionSource {
    pub reports_own_version: bool,
    pub source: Option<crate::model::Source>,
}

impl CommandPlan {
    /// The engine versions the cells run that the fetch cache under
    /// `root` lacks, each once, in cell order.
    pub(crate) fn pending_fetches(&self, root: &Path) -> Vec<crate::fetch::Pending> {
        fetches::pending(&self.project, &self.plan.cells, root)
    }

    /// The scenario's file, as the specs name it (relative to the home).
    pub(crate) fn scenario_file(&self) -> &str {
        &self.scenario.origin.file
    }

    /// What the specs say of `engine@version`; `None` for an engine they
    /// do not hold.
    pub(crate) fn version_source(&self, engine: &str, version: &str) -> Option<VersionSource> {
        let e = self.project.engines.get(engine)?;
        Some(VersionSource {
            reports_own_version: e.reports_own_version,
            source: e
                .version(Some(version))
                .and_then(|(_, ev)| ev.source.clone()),
        })
    }
}

/// The scenario (name or path) of the project under `home` and its plan
/// on `host`, with the `--set` flags parsed and applied.
pub(crate) fn plan_command_line(
    home: &Path,
    scenario: &str,
    set_flags: &[String],
    env_filter: Option<&str>,
    only: Option<&str>,
    host: &HostFacts,
) -> Result<CommandPlan, Diagnostics> {
    let overrides = crate::spec::overrides::parse_set_flags(set_flags)?;
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
        project,
    })
}

/// What `validate` found: errors (exit 2) and warnings.
#[derive(Debug, Default)]
pub(crate) struct Validation {
    pub errors: Diagnostics,
    /// Binaries not installed on this host, each once: no fault of the
    /// specs (a run of a scenario that uses the engine still refuses).
    pub warnings: Diagnostics,
}

impl Validation {
    fn absorb(&mut self, other: Validation) {
        self.errors.extend(other.errors);
        for w in other.warnings.0 {
            if !self.warnings.iter().any(|x| x == &w) {
                self.warnings.push(w);
            }
        }
    }
}

/// Plan every scenario of `project` on this host: CPUs, RAM, hog, swap
/// accounting, cache under the cap; a binary not installed is a warning.
pub(crate) fn validate_on_host(project: &Project, host: &HostFacts) -> Validation {
    let mut all = Validation::default();
    for s in project.scenarios.values() {
        all.absorb(validate_scenario(project, s, host));
    }
    all
}

/// Plan one scenario as `validate` does: a binary not installed is a
/// warning, everything else that `plan` refuses an error.
pub(crate) fn validate_scenario(project: &Project, s: &Scenario, host: &HostFacts) -> Validation {
    let mut missing = Diagnostics::default();
    let flags = PlanFlags {
        host_checks: true,
        binaries: Binaries::Noted,
    };
    let errors = plan_inner(project, s, &[], None, None, host, &flags, &mut missing)
        .err()
        .unwrap_or_default();
    let mut v = Validation::default();
    v.absorb(Validation {
        errors,
        warnings: missing,
    });
    v
}

/// What a binary that is not installed on this host does to a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Binaries {
    /// Refuses its cells (plan, run).
    Required,
    /// Is noted apart and its cells are planned with the bare name
    /// (validate).
    Noted,
}

/// How a plan is made.
struct PlanFlags {
    /// Off for `render`: a config for a bigger machine renders anywhere.
    host_checks: bool,
    binaries: Binaries,
}

impl PlanFlags {
    /// `plan` and `run`: every check, every binary there.
    const RUN: PlanFlags = PlanFlags {
        host_checks: true,
        binaries: Binaries::Required,
    };
    /// `render`: no host checks.
    const RENDER: PlanFlags = PlanFlags {
        host_checks: false,
        binaries: Binaries::Required,
    };
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
    let mut missing = Diagnostics::default();
    plan_inner(
        project,
        s,
        overrides,
        env_filter,
        only,
        host,
        &PlanFlags::RUN,
        &mut missing,
    )
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
    check_render_args(project, engine, &name, version.as_deref(), env)?;
    let s = render_scenario(engine, name, version, env);
    let host = HostFacts::probe();
    let mut missing = Diagnostics::default();
    let plan = plan_inner(
        project,
        &s,
        overrides,
        None,
        None,
        &host,
        &PlanFlags::RENDER,
        &mut missing,
    )?;
    Ok(plan
        .cells
        .into_iter()
        .next()
        .expect("one engine x one environment"))
}

/// What `render` plans: a scenario of one engine in one environment, with
/// no data and no phases, so that its one cell has the engine's configs
/// as a run would render them.
fn render_scenario(flag: &str, engine: String, version: Option<String>, env: &str) -> Scenario {
    Scenario {
        name: format!("render-{flag}-{env}"),
        description: String::new(),
        matrix: crate::spec::scenario::Matrix::cross(
            vec![EngineRef {
                engine,
                version,
                knobs: BTreeMap::new(),
                label: None,
                field: flag.into(),
                topology: None,
            }],
            vec![EnvRef {
                name: env.into(),
                scale: None,
                set: Vec::new(),
                field: env.into(),
            }],
        ),
        knobs: BTreeMap::new(),
        dataset: None,
        repetitions: 1,
        load: None,
        settle: None,
        phases: Vec::new(),
        reproduces: None,
        snapshots: crate::spec::scenario::SnapshotUse::default(),
        origin: Default::default(),
    }
}

/// `render`'s engine (and version) and environment exist.
fn check_render_args(
    project: &Project,
    engine: &str,
    name: &str,
    version: Option<&str>,
    env: &str,
) -> Result<(), Diagnostics> {
    let mut diags = Diagnostics::default();
    let flag = |field: &str, msg: String, hint: Option<String>| {
        Diagnostic::flag("render", field, msg, hint)
    };
    match project.engines.get(name) {
        None => {
            let known: Vec<&str> = project.engines.keys().map(String::as_str).collect();
            diags.push(flag(
                engine,
                format!("unknown engine `{name}`"),
                Some(unknown_hint(name, &known)),
            ));
        }
        Some(e) => {
            if let Some(v) = version
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
    diags.into_result(())
}

/// What every step of a plan reads.
struct Planning<'a> {
    project: &'a Project,
    sets: &'a overrides::Sets<'a>,
    host: &'a HostFacts,
    /// Off for `render`: a config for a bigger machine renders anywhere.
    host_checks: bool,
    binaries: Binaries,
    /// Binaries not installed, with [`Binaries::Noted`].
    missing: std::cell::RefCell<Diagnostics>,
    /// `--only`: cells whose id contains it.
    only: Option<&'a str>,
}

/// One engine entry of the matrix in one environment.
struct Entry<'a> {
    ep: &'a env::EnvPlan<'a>,
    engine: &'a Engine,
    er: &'a EngineRef,
    version: &'a str,
    ev: &'a EngineVersion,
    /// `engine@version`.
    label: String,
    /// The entry's `label:`, else `label`; cell ids start with it.
    cell_label: String,
}

/// The plan, or why not; with [`Binaries::Noted`], each binary that is not
/// installed goes to `missing` instead.
#[allow(clippy::too_many_arguments)]
fn plan_inner(
    project: &Project,
    s: &Scenario,
    overrides: &[(String, String)],
    env_filter: Option<&str>,
    only: Option<&str>,
    host: &HostFacts,
    flags: &PlanFlags,
    missing: &mut Diagnostics,
) -> Result<Plan, Diagnostics> {
    let host_checks = flags.host_checks;
    let mut diags = Diagnostics::default();
    // Scenario fields first (`records`, `phases.NAME.threads`), then
    // environment fields and knobs.
    let sets = overrides::split(project, s, overrides, &mut diags);
    let s = sets.scenario();
    overrides::check_env_filter(s, env_filter, &mut diags);
    let mut deviations = set_deviations(&sets);
    if host_checks {
        fit::check_work_free(host, &mut diags);
    }
    let cx = Planning {
        project,
        sets: &sets,
        host,
        host_checks,
        binaries: flags.binaries,
        missing: std::cell::RefCell::new(std::mem::take(missing)),
        only,
    };
    let mut cells = Vec::new();
    for (i, eref) in s.matrix.environments.iter().enumerate() {
        if env_filter.is_none_or(|f| f == eref.name) {
            cells.extend(cx.environment(i, eref, &mut deviations, &mut diags));
        }
    }
    *missing = cx.missing.into_inner();
    if diags.is_empty() && cells.is_empty() {
        diags.push(no_cell_matches(only));
    }
    let estimate = estimate::of_cells(project, &cells);
    deviations.extend(unrun_warmups(s));
    deviations.dedup();
    let reproduces = s
        .reproduces
        .as_ref()
        .map(|r| deviations::compare(project, r, s, &cells));
    diags.into_result(Plan {
        scenario: s.name.clone(),
        description: s.description.clone(),
        cells,
        estimated_duration: estimate.total(),
        estimate,
        deviations,
        reproduces,
        claims: claims::resolve(project, s),
    })
}

/// The deviations `--set` makes: scenario and environment fields, then
/// knobs.
fn set_deviations(sets: &overrides::Sets) -> Vec<String> {
    let mut deviations = sets.applied.deviations.clone();
    for (k, v) in &sets.knobs {
        deviations.push(format!("{k} = {} (--set)", v.trim()));
    }
    deviations
}

/// `--only` left no cell.
fn no_cell_matches(only: Option<&str>) -> Diagnostic {
    Diagnostic::flag(
        "--only",
        only.unwrap_or_default(),
        "no cell matches",
        Some("`benchcage plan SCENARIO` without --only lists the cell ids".into()),
    )
}

/// YCSB and commands start measuring at once: their phase's warmup is not
/// run (sysbench and pgbench run themselves for it first).
fn unrun_warmups(s: &Scenario) -> Vec<String> {
    s.phases
        .iter()
        .filter(|p| {
            matches!(
                p.work,
                Work::Tool(
                    crate::spec::scenario::Tool::Ycsb { .. }
                        | crate::spec::scenario::Tool::Command { .. }
                        | crate::spec::scenario::Tool::Pytpcc(_)
                )
            ) && !p.warmup.std().is_zero()
        })
        .map(|p| {
            format!(
                "phase {}: warmup {} is not run: YCSB, py-tpcc and commands start measuring at once",
                p.name, p.warmup
            )
        })
        .collect()
}

/// A step's refusal goes into `diags`.
fn ok_or_push<T>(r: Result<T, Diagnostic>, diags: &mut Diagnostics) -> Option<T> {
    r.map_err(|d| diags.push(d)).ok()
}

impl Planning<'_> {
    /// The cells of every engine of the matrix in one environment (the
    /// `index`th of the matrix).
    fn environment(
        &self,
        index: usize,
        eref: &EnvRef,
        deviations: &mut Vec<String>,
        diags: &mut Diagnostics,
    ) -> Vec<PlannedCell> {
        let (s, sets) = (self.sets.scenario(), self.sets);
        let Some(ep) = env::resolve(self.project, &sets.applied, eref, &sets.env, diags) else {
            return Vec::new();
        };
        let before = diags.len();
        if self.host_checks {
            fit::check_env_on_host(s, &ep, self.host, diags);
        }
        for d in &ep.deviations {
            deviations.push(format!("{}: {d}", ep.name));
        }
        if diags.len() > before {
            return Vec::new();
        }
        let mut cells = Vec::new();
        for er in s.matrix.engines_in(index) {
            if let Some(entry) = self.entry(&ep, er, diags) {
                cells.extend(self.cells_of(&entry, deviations, diags).unwrap_or_default());
            }
        }
        cells
    }

    /// The matrix entry `er` in environment `ep`, its version resolved.
    fn entry<'e>(
        &'e self,
        ep: &'e env::EnvPlan<'e>,
        er: &'e EngineRef,
        diags: &mut Diagnostics,
    ) -> Option<Entry<'e>> {
        let engine = self.project.engines.get(&er.engine)?;
        let Some((version, ev)) = engine.version(er.version.as_deref()) else {
            let v = er.version.as_deref().unwrap_or("");
            diags.push(self.sets.scenario().origin.diag(
                &er.field,
                format!("{} has no version `{v}`", engine.name),
                Some(unknown_hint(v, &engine.version_names())),
            ));
            return None;
        };
        let label = format!("{}@{version}", engine.name);
        Some(Entry {
            ep,
            engine,
            er,
            version,
            ev,
            cell_label: er.label.clone().unwrap_or_else(|| label.clone()),
            label,
        })
    }

    /// The cells of one entry, each step in turn; `None` when a step
    /// refuses it (the diagnostics say why).
    fn cells_of(
        &self,
        e: &Entry,
        deviations: &mut Vec<String>,
        diags: &mut Diagnostics,
    ) -> Option<Vec<PlannedCell>> {
        let (s, host) = (self.sets.scenario(), self.host);
        let program = match program::resolve(e, s, self.host_checks) {
            Ok(p) => p,
            Err(program::Unresolved::NotInstalled { binary, diag })
                if self.binaries == Binaries::Noted =>
            {
                self.missing.borrow_mut().push(*diag);
                crate::model::Program::Binary(binary)
            }
            Err(program::Unresolved::NotInstalled { diag, .. })
            | Err(program::Unresolved::Refused(diag)) => {
                diags.push(*diag);
                return None;
            }
        };
        if self.host_checks
            && let Some(d) = fit::thp_refusal(e, s, host)
        {
            diags.push(d);
            return None;
        }
        let members = members::plan(e, s, deviations, diags)?;
        let network = fit::network_of(e, s, host, self.host_checks)
            .map_err(|d| diags.push(*d))
            .ok()?;
        if self.host_checks {
            fit::check_member_sum(e, s, members.len(), host, diags)?;
        }
        let memory = e.ep.effective_memory(host.mem_total);
        let knobs = knobs::resolve(e, self.sets, memory, host.mem_total, deviations, diags)?;
        fit::check_cache(e, self.sets, &knobs, diags)?;
        let (configs, members) = self.render_members(e, &knobs, members, diags)?;
        let work = cells::ScaledWork::of(e, &self.sets.applied, &self.project.home);
        if let Some(d) = fit::client_node_refusal(e, s, members.len(), &work.phases) {
            diags.push(d);
            return None;
        }
        fit::check_fixed_cache(e, self.sets, &knobs, work.footprint.as_ref(), diags)?;
        if self.host_checks {
            self.check_work(e, &work, members.len(), diags)?;
        }
        let user = ok_or_push(program::user(e), diags)?;
        let shaping = snapshot::shaping_configs(&self.project.home, e, &knobs, &configs);
        let parts = cells::Parts {
            members,
            program,
            image_binary: program::image_binary(e),
            knobs,
            configs,
            shaping,
            user,
            work,
            memory,
            network,
        };
        Some(cells::expand(e, s, &parts, self.only))
    }

    /// The cell's config files (its first member's), and the members,
    /// each given its own files where they differ from those.
    fn render_members(
        &self,
        e: &Entry,
        knobs: &knobs::Knobs,
        mut members: Vec<members::PlannedMember>,
        diags: &mut Diagnostics,
    ) -> Option<(
        Vec<crate::render::RenderedConfig>,
        Vec<members::PlannedMember>,
    )> {
        let count = members.len();
        // MongoDB's config servers and shards are replica sets; a Redis
        // Cluster's shards are not.
        let sets = e.engine.sharding.as_ref().is_some_and(|s| s.routers);
        let first = members
            .first()
            .map(|m| m.context(0, count, sets))
            .unwrap_or_else(crate::render::MemberContext::standalone);
        let configs = self.render(e, knobs, first, diags)?;
        for (i, m) in members.iter_mut().enumerate().skip(1) {
            let own = self.render(e, knobs, m.context(i, count, sets), diags)?;
            if own != configs {
                m.configs = own;
            }
        }
        Some((configs, members))
    }

    /// The engine's config files from its templates and the cell's knobs,
    /// for one member of its topology.
    fn render(
        &self,
        e: &Entry,
        knobs: &knobs::Knobs,
        member: crate::render::MemberContext,
        diags: &mut Diagnostics,
    ) -> Option<Vec<crate::render::RenderedConfig>> {
        let input = crate::render::RenderInput {
            engine: e.engine,
            version: e.version,
            environment: &e.ep.name,
            cache: knobs.cache,
            memory: e.ep.env.memory,
            cpus: e.ep.env.server_cpus.len(),
            knobs: &knobs.typed,
            member,
        };
        let rendered = crate::render::render_all(&self.project.home, &input).map_err(|err| {
            e.engine.origin.diag(
                "config_files",
                format!("{}: {err}", e.label),
                Some("fix the template".into()),
            )
        });
        ok_or_push(rendered, diags)
    }

    /// The load generator's threads and records, and the data on disk, fit
    /// this host.
    fn check_work(
        &self,
        e: &Entry,
        work: &cells::ScaledWork,
        members: usize,
        diags: &mut Diagnostics,
    ) -> Option<()> {
        let before = diags.len();
        let at = host_fit::SetOrSpec {
            sets: self.sets.all,
            s: self.sets.scenario(),
        };
        // Every member is capped alike: the generator has what they leave.
        let caps =
            e.ep.env
                .memory
                .map(|c| Bytes(c.0.saturating_mul(members as u64)));
        let client = host_fit::client_capacity(self.host, caps, e.ep.hog_leave());
        host_fit::check_generator(
            &at,
            work.dataset.as_ref(),
            &work.phases,
            work.footprint.as_ref(),
            &client,
            diags,
        );
        if let Some(fp) = &work.footprint {
            host_fit::check_disk(&at, &e.label, e.ep.env.scale, fp, self.host, diags);
        }
        (diags.len() == before).then_some(())
    }
}

/// A scale that brings `want` under `have`, as a power of two fraction.
pub(super) fn suggest_scale(want: Bytes, have: Bytes) -> f64 {
    let mut s = 1.0f64;
    while want.0 as f64 * s > have.0 as f64 && s > 1.0 / 1024.0 {
        s /= 2.0;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ThpNeed, ThpPolicy};
    use crate::sandbox::thp::ThpMode;
    use crate::spec::scenario::{Builtin, Length, Tool, YcsbWorkload};
    use crate::units::CpuSet;
    use crate::workload::bounds;
    use std::path::PathBuf;

    fn project() -> Project {
        Project::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    fn host(cpus: &str, total_gib: u64, avail_gib: u64) -> HostFacts {
        let mut h = HostFacts::probe();
        h.online_cpus = cpus.parse::<CpuSet>().unwrap();
        h.mem_total = Bytes::from_gib(total_gib);
        h.mem_available = Bytes::from_gib(avail_gib);
        h.swap_accounting = true;
        // Room for every shipped scenario, whatever this host's disk holds.
        h.work_free = Some(Bytes::from_gib(1024));
        h.work_free_set = None;
        h
    }

    #[test]
    fn tokumx_cells_on_a_host_with_thp_always_are_refused_unless_the_environment_turns_it_off() {
        use crate::sandbox::thp::ThpState;
        let p = project();
        let s = &p.scenarios["003-mongodb-3.2"];
        let mut h = host("0-1", 24, 20);
        h.thp = Ok(Some(ThpState {
            enabled: ThpMode::Always,
            defrag: Some("madvise".into()),
        }));
        let e = plan_on(&p, s, &[], Some("c4-16g"), None, &h).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.len(), 2, "the two TokuMX cells, not MongoDB's: {text}");
        for v in ["tokumx@1.5", "tokumx@2.0.2"] {
            assert!(
                text.contains(&format!(
                    "{v} refuses to start while transparent huge pages are `always`"
                )),
                "{text}"
            );
        }
        assert!(
            text.contains("--set host.transparent_hugepages=off") && text.contains("echo never >"),
            "{text}"
        );
        let off = [("host.transparent_hugepages".to_string(), "off".to_string())];
        let plan = plan_on(&p, s, &off, Some("c4-16g"), None, &h).unwrap();
        assert_eq!(plan.cells.len(), 4);
        assert!(
            plan.cells
                .iter()
                .all(|c| c.transparent_hugepages == ThpPolicy::Off)
        );
        // madvise (and never) are fine for TokuMX as they are.
        h.thp = Ok(Some(ThpState {
            enabled: ThpMode::Madvise,
            defrag: None,
        }));
        let plan = plan_on(&p, s, &[], Some("c4-16g"), None, &h).unwrap();
        let toku = plan.cells.iter().find(|c| c.engine == "tokumx").unwrap();
        assert_eq!(
            (toku.transparent_hugepages, toku.thp_need),
            (ThpPolicy::Leave, ThpNeed::NotAlways)
        );
        let bad = [(
            "host.transparent_hugepages".to_string(),
            "never".to_string(),
        )];
        let e = plan_on(&p, s, &bad, Some("c4-16g"), None, &h)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`never` is not off or leave"), "{e}");
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
    fn a_myrocks_cell_carries_its_table_engine_and_its_cache_question_from_its_spec() {
        use crate::spec::facts::FactQuery;
        let p = project();
        let s = &p.scenarios["doesnt-fit-in-ram"];
        let plan = plan_on(&p, s, &[], None, None, &host("0-1", 24, 20)).unwrap();
        let c = &plan.cells[0];
        assert_eq!(c.engine, "myrocks");
        let load = c.load_config.as_ref().unwrap();
        assert_eq!((load.engine.as_deref(), load.load), (Some("rocksdb"), true));
        for pp in &c.phases {
            match &pp.config {
                PhaseConfig::Builtin(w) => assert_eq!(w.engine.as_deref(), Some("rocksdb")),
                PhaseConfig::Tool(t) => panic!("{}: a tool, {t:?}", pp.id),
            }
        }
        assert_eq!(
            c.facts.cache_size,
            FactQuery::Sql("SELECT CAST(@@rocksdb_block_cache_size AS CHAR)".into())
        );
        // MariaDB keeps the probe's defaults: InnoDB tables, its buffer pool.
        let mariadb = &p.engines["mariadb"];
        assert_eq!(mariadb.storage_engine, None);
        assert_eq!(
            mariadb.facts,
            crate::spec::facts::Facts::defaults(&mariadb.readiness.probe)
        );
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

    fn sets(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_dataset_that_does_not_fit_the_free_disk_is_refused_with_a_record_count_that_does() {
        let p = project();
        let s = &p.scenarios["quickstart"];
        let mut h = host("0-1", 24, 20);
        h.work_dir = PathBuf::from("/work/here");
        // 50000 records x 1083 B x 3 (redis) is about 155 MiB.
        h.work_free = Some(Bytes::from_mib(100));
        let e = plan_on(&p, s, &[], None, None, &h).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.len(), 1, "{text}");
        assert!(text.starts_with("scenarios/quickstart.yaml:6:"), "{text}");
        assert!(
            text.contains(
                "redis@7.0: the data would take about 154.9MiB (50000 records x 1083 B x 3 for the engine), but /work/here (where the engine's data dir goes) has 100.0MiB free"
            ),
            "{text}"
        );
        // 100 MiB / 3 / 1083 B.
        assert!(text.contains("--set records=32273 fits"), "{text}");
        let ok = plan_on(&p, s, &sets(&[("records", "32273")]), None, None, &h).unwrap();
        let fp = ok.cells[0].footprint.as_ref().unwrap();
        assert!(fp.estimate <= Bytes::from_mib(100), "{fp}");
        let e = plan_on(&p, s, &sets(&[("records", "32274")]), None, None, &h).unwrap_err();
        assert!(
            e.to_string().contains("--set: records=32274: redis@7.0"),
            "{e}"
        );
    }

    #[test]
    fn a_tool_dataset_that_does_not_fit_the_free_disk_is_refused_with_a_scale() {
        let p = project();
        let s = &p.scenarios["002-sysbench-fractal-tree"];
        let mut h = host("0-1", 24, 20);
        h.work_free = Some(Bytes::from_gib(4));
        let e = plan_on(&p, s, &[], None, None, &h).unwrap_err().to_string();
        // 8 tables x 8000000 rows at scale 0.5, 400 B each on disk: 23.8
        // GiB; an eighth of that fits, at scale 0.5 / 8.
        assert!(
            e.contains("the data would take about 23.8GiB (8 x 8000000 sysbench rows x 400 B (sysbench-oltp))"),
            "{e}"
        );
        assert!(e.contains("phases[0].tool"), "{e}");
        assert!(e.contains("--set scale=0.0625"), "{e}");
        assert!(plan_on(&p, s, &sets(&[("scale", "0.0625")]), None, None, &h).is_ok());
        h.work_free = None;
        assert!(plan_on(&p, s, &[], None, None, &h).is_ok());
    }

    #[test]
    fn members_whose_caps_add_up_beyond_the_host_are_refused_naming_the_sum() {
        let p = project();
        let s = &p.scenarios["004-tpcc-mongodb-replica-set"];
        // This host: each 22.5GiB cap fits its 23.5GiB, three do not.
        let mut h = host("0-1", 24, 22);
        h.mem_total = Bytes::from_mib(23 * 1024 + 512);
        let e = plan_on(&p, s, &sets(&[("scale", "0.45")]), None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mongodb@4.0 replica_set:3: 3 member(s) x 22.5GiB memory cap + benchcage's own 256MiB = 67.8GiB, more than 23.5GiB (this host's 23.5GiB of RAM)"),
            "{e}"
        );
        assert!(e.contains("give it at most 7.8GiB"), "{e}");
        assert!(!e.contains("standalone"), "one member fits: {e}");
        // Write-up 004's own: 3 x 50GiB on a 64GiB machine.
        let big = host("0-1", 64, 60);
        let e = plan_on(&p, s, &sets(&[("scale", "1")]), None, None, &big)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 member(s) x 50.0GiB memory cap + benchcage's own 256MiB = 150.2GiB, more than 64.0GiB"), "{e}");
        assert!(plan_on(&p, s, &sets(&[("scale", "0.125")]), None, None, &h).is_ok());
        // Beside a hog: the caps and the hog's lock against MemAvailable.
        let mut q = p.clone();
        let mut rs = q.scenarios["quickstart"].clone();
        rs.matrix.engines[0].topology = Some(crate::model::Topology::ReplicaSet { members: 3 });
        let env = q.environments.get_mut("quickstart").unwrap();
        env.share_cpus = true;
        env.server.memory = Some(Bytes::from_gib(1));
        env.hog = crate::spec::environment::Hog::Leave(Bytes::from_gib(2));
        let e = plan_on(&q, &rs, &[], None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("3 member(s) x 1.0GiB memory cap + the hog's lock 19.8GiB + benchcage's own 256MiB = 23.0GiB, more than 21.8GiB (the 22.0GiB available (MemAvailable) less the hog's 256MiB margin)"),
            "{e}"
        );
        q.environments.get_mut("quickstart").unwrap().hog =
            crate::spec::environment::Hog::Leave(Bytes::from_gib(4));
        assert!(plan_on(&q, &rs, &[], None, None, &h).is_ok());
    }

    #[test]
    fn a_replica_set_gets_one_member_per_cpu_or_shares_them_only_when_allowed() {
        let mut p = project();
        let mut s = p.scenarios["quickstart"].clone();
        s.matrix.engines[0].topology = Some(crate::model::Topology::ReplicaSet { members: 3 });
        let h = host("0-1", 24, 20);
        // quickstart's server has one CPU: three members cannot each have one.
        let e = plan_on(&p, &s, &[], None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("replica_set:3: 3 members cannot each have CPUs of their own among the server's 1 CPU(s)"),
            "{e}"
        );
        assert!(e.contains("share_cpus: true"), "{e}");
        // Allowed to share: every member on CPU 1, and plan says so.
        p.environments.get_mut("quickstart").unwrap().share_cpus = true;
        let plan = plan_on(&p, &s, &[], None, None, &h).unwrap();
        let c = &plan.cells[0];
        let names: Vec<&str> = c.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["m0", "m1", "m2"]);
        assert!(c.members.iter().all(|m| m.cpus.to_string() == "1"));
        assert_eq!(c.members[0].role, crate::model::Role::Primary);
        assert!(
            plan.deviations
                .iter()
                .any(|d| d == "quickstart replica_set:3: the 3 members share the server's CPUs 1 (share_cpus)"),
            "{:?}",
            plan.deviations
        );
        // A replica set is never snapshot: its data is in every member.
        let standalone = plan_on(&p, &p.scenarios["quickstart"], &[], None, None, &h).unwrap();
        assert_eq!(standalone.cells[0].members.len(), 1);
        assert!(standalone.cells[0].snapshot.is_some());
        assert!(c.snapshot.is_none());
        // An engine that declares no such topology is refused.
        p.engines.get_mut("redis").unwrap().topologies.clear();
        let e = plan_on(&p, &s, &[], None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot run as replica_set:3: it declares standalone only"),
            "{e}"
        );
    }

    #[test]
    fn a_redis_cluster_has_no_router_and_every_member_renders_cluster_mode() {
        let mut p = project();
        let mut s = p.scenarios["quickstart"].clone();
        p.environments.get_mut("quickstart").unwrap().share_cpus = true;
        let h = host("0-1", 24, 20);
        let sharded = |routers, config_servers| crate::model::Topology::Sharded {
            shards: 3,
            replicas_per_shard: 1,
            config_servers,
            routers,
            key: crate::model::ShardKeyKind::Hashed,
        };
        s.matrix.engines[0].topology = Some(sharded(1, 0));
        let e = plan_on(&p, &s, &[], None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("redis@7.0's sharded cluster has no router: give `routers: 0`"),
            "{e}"
        );
        s.matrix.engines[0].topology = Some(sharded(0, 1));
        let e = plan_on(&p, &s, &[], None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has no config server: give `config_servers: 0`"),
            "{e}"
        );
        // Redis Cluster spreads keys by hash slots only.
        s.matrix.engines[0].topology = Some(crate::model::Topology::Sharded {
            shards: 3,
            replicas_per_shard: 1,
            config_servers: 0,
            routers: 0,
            key: crate::model::ShardKeyKind::Ranged,
        });
        let e = plan_on(&p, &s, &[], None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("redis@7.0's sharded cluster cannot spread records by a ranged key: it knows hashed only"),
            "{e}"
        );
        s.matrix.engines[0].topology = Some(sharded(0, 0));
        // CPUs by role: one set per member of it.
        let env = p.environments.get_mut("quickstart").unwrap();
        env.member_cpus
            .insert("shard_primary".into(), vec!["1".parse().unwrap()]);
        let e = plan_on(&p, &s, &[], None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("member_cpus.shard_primary: redis@7.0 sharded:3x1+0cfg+0router: 1 CPU set(s) listed for its 3 shard_primary member(s)"),
            "{e}"
        );
        let env = p.environments.get_mut("quickstart").unwrap();
        env.member_cpus.clear();
        let plan = plan_on(&p, &s, &[], None, None, &h).unwrap();
        let c = &plan.cells[0];
        let names: Vec<&str> = c.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["shard0-m0", "shard1-m0", "shard2-m0"]);
        assert!(c.sharding.as_ref().is_some_and(|sh| !sh.routers));
        for m in &c.members {
            let configs = if m.configs.is_empty() {
                &c.configs
            } else {
                &m.configs
            };
            assert!(
                configs[0].content.contains("\ncluster-enabled yes\n"),
                "{}",
                m.name
            );
        }
        // A standalone redis is not in cluster mode.
        let one = plan_on(&p, &p.scenarios["quickstart"], &[], None, None, &h).unwrap();
        assert!(!one.cells[0].configs[0].content.contains("cluster-enabled"));
    }

    #[test]
    fn each_mariadb_replica_set_member_gets_a_server_id_of_its_own_and_a_binary_log() {
        let mut p = project();
        let mut s = p.scenarios["quickstart"].clone();
        s.knobs.clear();
        s.matrix.engines[0].engine = "mariadb".into();
        s.matrix.engines[0].version = None;
        let h = host("0-1", 24, 20);
        let alone = plan_on(&p, &s, &[], None, None, &h).unwrap();
        let cnf = &alone.cells[0].configs[0].content;
        assert!(
            cnf.contains("\nskip-log-bin\n") && !cnf.contains("server_id"),
            "{cnf}"
        );
        assert!(alone.cells[0].members.iter().all(|m| m.configs.is_empty()));
        s.matrix.engines[0].topology = Some(crate::model::Topology::ReplicaSet { members: 3 });
        p.environments.get_mut("quickstart").unwrap().share_cpus = true;
        let plan = plan_on(&p, &s, &[], None, None, &h).unwrap();
        let c = &plan.cells[0];
        let cnf = |configs: &[crate::render::RenderedConfig]| configs[0].content.clone();
        let primary = cnf(&c.configs);
        assert!(
            primary.contains("\nserver_id = 1\nlog_bin = mariadb-bin\n"),
            "{primary}"
        );
        assert!(!primary.contains("skip-log-bin"), "{primary}");
        // The first member uses the cell's files; the others their own.
        assert!(c.members[0].configs.is_empty());
        for (i, m) in c.members.iter().enumerate().skip(1) {
            let own = cnf(&m.configs);
            assert!(own.contains(&format!("\nserver_id = {}\n", i + 1)), "{own}");
            assert!(
                own.contains(&format!("member {} (secondary) of 3", m.name)),
                "{own}"
            );
        }
        // A template that does not use `member` gives every member the same.
        s.matrix.engines[0].engine = "redis".into();
        let plan = plan_on(&p, &s, &[], None, None, &h).unwrap();
        assert!(plan.cells[0].members.iter().all(|m| m.configs.is_empty()));
    }

    #[test]
    fn connection_knobs_grow_with_the_largest_thread_count_unless_given() {
        let p = project();
        let s = &p.scenarios["002-sysbench-fractal-tree"];
        let h = host("0-1", 24, 20);
        let plan = plan_on(&p, s, &[], None, None, &h).unwrap();
        let c = &plan.cells[0];
        // 1024 threads: 1 connection each + 50, 256 statements each.
        assert_eq!(c.knobs["max_connections"], "1074");
        assert_eq!(c.knobs["max_prepared_stmt_count"], "262144");
        assert!(
            c.raised_knobs
                .contains(&"max_connections=1074: 1 per thread x 1024 threads + 50 spare".into()),
            "{:?}",
            c.raised_knobs
        );
        let my_cnf = &c.configs[0].content;
        assert!(my_cnf.contains("max_connections = 1074\n"), "{my_cnf}");
        assert!(
            my_cnf.contains("max_prepared_stmt_count = 262144\n"),
            "{my_cnf}"
        );
        // Few threads: the defaults stand and nothing is raised.
        let few = plan_on(&p, s, &sets(&[("threads", "8")]), None, None, &h).unwrap();
        assert_eq!(few.cells[0].knobs["max_connections"], "500");
        assert!(few.cells[0].raised_knobs.is_empty());
        // Given below what the threads need: refused at the flag.
        let e = plan_on(&p, s, &sets(&[("max_connections", "600")]), None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("max_connections=600 is below the 1074 that 1024 client threads need"),
            "{e}"
        );
        // Given high enough: kept as given.
        let ok = plan_on(&p, s, &sets(&[("max_connections", "2000")]), None, None, &h).unwrap();
        assert_eq!(ok.cells[0].knobs["max_connections"], "2000");
    }

    #[test]
    fn threads_beyond_what_the_client_memory_holds_are_refused_at_their_phase() {
        let p = project();
        let s = &p.scenarios["quickstart"];
        // 2 GiB of RAM, a 256 MiB server cap: the generator may take 1.75 GiB.
        let h = host("0-1", 2, 2);
        assert!(plan_on(&p, s, &[], None, None, &h).is_ok());
        let e = plan_on(&p, s, &sets(&[("threads", "4096")]), None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--set: threads=4096: phase workload-a: 4096 threads may need"),
            "{e}"
        );
        assert!(
            e.contains("more than the load generator may take: 1.8GiB, this host's 2.0GiB of RAM less the server's 256.0MiB cap"),
            "{e}"
        );
        assert!(e.contains("(hint: use at most"), "{e}");
        // Written in the scenario, the error points at its line.
        let mut big = s.clone();
        big.phases[0].threads = vec![4096];
        let e = plan_on(&p, &big, &[], None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("scenarios/quickstart.yaml:"), "{e}");
        assert!(
            e.contains("phases[0].threads: phase workload-a: 4096 threads"),
            "{e}"
        );
    }

    #[test]
    fn threads_beyond_the_open_files_limit_are_refused() {
        let p = project();
        let s = &p.scenarios["quickstart"];
        let mut h = host("0-1", 24, 20);
        h.open_files = 100;
        assert!(plan_on(&p, s, &sets(&[("threads", "36")]), None, None, &h).is_ok());
        let e = plan_on(&p, s, &sets(&[("threads", "37")]), None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(e.contains("37 threads need 101 open files"), "{e}");
        assert!(e.contains("use at most 36 threads"), "{e}");
    }

    #[test]
    fn records_and_what_a_phase_inserts_stay_within_the_key_space() {
        let p = project();
        let mut s = p.scenarios["quickstart"].clone();
        s.phases[0].work = Work::Builtin(Builtin::Ycsb {
            workload: YcsbWorkload::D,
            distribution: crate::workload::Distribution::Latest,
        });
        s.phases[0].length = Length::Operations(2_000_000);
        let mut h = host("0-1", 24, 20);
        h.work_free = None;
        let max = bounds::MAX_RECORDS;
        // Workload D inserts 5%: 100000 records on top.
        let fits = (max - 100_000).to_string();
        assert!(plan_on(&p, &s, &sets(&[("records", &fits)]), None, None, &h).is_ok());
        let over = (max - 99_999).to_string();
        let e = plan_on(&p, &s, &sets(&[("records", &over)]), None, None, &h)
            .unwrap_err()
            .to_string();
        assert!(e.contains("and up to 100000 inserted ones"), "{e}");
    }

    #[test]
    fn swap_allowed_on_a_host_without_swap_is_refused_and_off_is_not() {
        let p = project();
        let s = &p.scenarios["quickstart"];
        let set = |v: &str| vec![("server.swap".to_string(), v.to_string())];
        let mut h = host("0-1", 24, 20);
        h.swap_total = Bytes(0);
        let e = plan_on(&p, s, &set("1GiB"), None, None, &h).unwrap_err();
        assert!(
            e.to_string()
                .contains("the server may swap 1GiB but this host has no swap"),
            "{e}"
        );
        assert!(plan_on(&p, s, &set("off"), None, None, &h).is_ok());
        h.swap_total = Bytes::from_gib(4);
        assert!(plan_on(&p, s, &set("1GiB"), None, None, &h).is_ok());
    }

    #[test]
    fn a_hog_scaled_under_the_floor_is_refused() {
        let p = project();
        let s = &p.scenarios["002-sysbench-fractal-tree"];
        let set = vec![("scale".to_string(), "0.015625".to_string())];
        let e = plan_on(&p, s, &set, None, None, &host("0-1", 24, 20)).unwrap_err();
        assert!(
            e.to_string().contains(
                "after scaling: a hog that leaves 256MiB would leave the host no room to run"
            ),
            "{e}"
        );
    }

    #[test]
    fn suggested_scales_are_powers_of_two_that_fit() {
        assert_eq!(
            suggest_scale(Bytes::from_gib(50), Bytes::from_gib(24)).to_string(),
            "0.25"
        );
        assert_eq!(
            suggest_scale(Bytes::from_gib(1), Bytes::from_gib(24)).to_string(),
            "1"
        );
    }
}
