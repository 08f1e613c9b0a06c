//! An engine entry in an environment expanded into its cells: one per
//! settle cap of a sweep and repetition, each carrying the scenario's work
//! at the environment's scale (the dataset, one measured run per phase and
//! thread count) and everything resolved before it.

use super::env::{scale_phase, scaled_count};
use super::footprint::{self, Footprint};
use super::knobs::Knobs;
use super::{Entry, PhaseConfig, PlannedCell, PlannedPhase, workload};
use crate::model::Settle;
use crate::model::{CellLimits, Program};
use crate::render::RenderedConfig;
use crate::spec::Scenario;
use crate::spec::scenario::Dataset;
use crate::spec::scenario_set::Applied;
use crate::units::Bytes;
use crate::workload::DriveConfig;
use std::path::Path;

/// The scenario's work at an environment's scale.
pub(super) struct ScaledWork {
    /// The dataset, its records scaled unless `--set records` gave them.
    pub dataset: Option<Dataset>,
    /// Measured runs in order: one per phase and thread count.
    pub phases: Vec<PlannedPhase>,
    /// The load generator's config for the scenario's load.
    pub load: Option<DriveConfig>,
    /// The cell's data on disk, estimated.
    pub footprint: Option<Footprint>,
}

impl ScaledWork {
    /// The work of the scenario (`--set` applied) for the entry; `home`
    /// resolves a pgbench script.
    pub fn of(e: &Entry, applied: &Applied, home: &Path) -> ScaledWork {
        let s = &applied.scenario;
        let scale = e.ep.env.scale;
        let dataset = s.dataset.clone().map(|mut d| {
            d.records = applied
                .records
                .unwrap_or_else(|| scaled_count(d.records, scale));
            d
        });
        let storage_engine = e.engine.storage_engine.as_deref();
        let mut phases = Vec::new();
        for p in s.phases.iter().map(|p| scale_phase(p, scale)) {
            let config = workload::phase_config(&p, dataset.as_ref(), storage_engine, home);
            let last = p.threads.len().saturating_sub(1);
            phases.extend(p.threads.iter().enumerate().map(|(i, &t)| PlannedPhase {
                id: format!("{}/t{t}", p.name),
                threads: t,
                phase: p.clone(),
                config: match &config {
                    PhaseConfig::Tool(c) => PhaseConfig::Tool(c.in_sweep(i == 0, i == last)),
                    builtin => builtin.clone(),
                },
            }));
        }
        let load = s
            .load
            .as_ref()
            .map(|l| workload::load_config(l, dataset.as_ref(), storage_engine));
        let footprint = footprint::estimate(
            s.load.as_ref(),
            dataset.as_ref(),
            &phases,
            e.engine.disk_factor,
        );
        ScaledWork {
            dataset,
            phases,
            load,
            footprint,
        }
    }
}

/// Everything an entry's cells share, resolved by the steps before.
pub(super) struct Parts {
    /// The topology's members with their CPUs (one for `standalone`).
    pub members: Vec<super::members::PlannedMember>,
    pub program: Program,
    pub image_binary: String,
    pub knobs: Knobs,
    pub configs: Vec<RenderedConfig>,
    /// The config files as they shape the data files: the snapshot key's
    /// part (`snapshot::shaping_configs`).
    pub shaping: std::collections::BTreeMap<String, Vec<String>>,
    pub user: String,
    pub work: ScaledWork,
    /// The memory the cells may use: the cap, what the hog leaves, or the
    /// host's RAM.
    pub memory: Bytes,
    /// The environment's network, its emulation chosen for this host
    /// ([`super::fit::network_of`]).
    pub network: Option<crate::network::Network>,
}

/// The entry's cells whose id contains `only` (all without it): one per
/// settle cap and repetition.
pub(super) fn expand(
    e: &Entry,
    s: &Scenario,
    parts: &Parts,
    only: Option<&str>,
) -> Vec<PlannedCell> {
    let settles: Vec<Option<Settle>> = match &s.settle {
        Some(sw) => sw.cells().into_iter().map(Some).collect(),
        None => vec![None],
    };
    let sweep = settles.len() > 1;
    let mut cells = Vec::new();
    for (settle, rep) in settles
        .iter()
        .flat_map(|st| (0..s.repetitions).map(move |r| (st, r)))
    {
        // A sweep of settle caps is one environment per cap in ids,
        // records and reports, so cells stay apart everywhere.
        let environment = match settle.as_ref().and_then(|st| st.memory) {
            Some(m) if sweep => format!("{}-{}", e.ep.name, m.tag()),
            _ => e.ep.name.clone(),
        };
        let id = format!("{}/{environment}/r{rep}", e.cell_label);
        if only.is_some_and(|o| !id.contains(o)) {
            continue;
        }
        let mut cell = planned_cell(e, s, parts, id, environment);
        cell.settle = *settle;
        cell.repetition = rep;
        cells.push(cell);
    }
    cells
}

/// One cell of the entry (repetition 0, no settle).
fn planned_cell(
    e: &Entry,
    s: &Scenario,
    parts: &Parts,
    id: String,
    environment: String,
) -> PlannedCell {
    let (engine, env) = (e.engine, &e.ep.env);
    PlannedCell {
        id,
        engine: engine.name.clone(),
        version: e.version.to_string(),
        environment,
        backend: env.backend,
        program: parts.program.clone(),
        limits: CellLimits {
            server_cpus: env.server_cpus.clone(),
            client_cpus: env.client_cpus.clone(),
            memory: parts.memory,
            swap: env.swap,
            pids: env.pids,
            io: env.io.clone(),
            disk: env.disk,
            client_node: env.client_node,
        },
        cache: parts.knobs.cache,
        cache_from: parts.knobs.cache_from.clone(),
        cache_resize: engine
            .cache_resize
            .clone()
            .filter(|_| parts.knobs.has_cache_knob),
        quick_stop: engine.quick_stop.clone(),
        cache_overcommit: env.allow_cache_overcommit || parts.knobs.engine_default_cache,
        steal_allowance: env.steal_allowance,
        network: parts.network.clone(),
        hog_leave: e.ep.hog_leave(),
        knobs: parts.knobs.canonical(),
        store_options: parts.knobs.store_options.clone(),
        raised_knobs: parts.knobs.raised.clone(),
        transparent_hugepages: env.thp,
        thp_need: engine.transparent_hugepages,
        configs: parts.configs.clone(),
        dataset: parts.work.dataset.clone(),
        load: s.load.clone(),
        load_config: parts.work.load.clone(),
        settle: None,
        phases: parts.work.phases.clone(),
        repetition: 0,
        scale: env.scale,
        command: engine.command.clone(),
        listen: engine.listen.clone(),
        remote_client: None,
        init: engine.init.clone(),
        user: parts.user.clone(),
        env: engine.env.clone(),
        readiness: engine.readiness.clone(),
        facts: engine.facts.clone(),
        image_binary: parts.image_binary.clone(),
        spec_files: spec_files(e, s),
        footprint: parts.work.footprint.clone(),
        snapshot: super::snapshot::of(e, s, parts),
        topology: super::members::topology_of(e),
        members: parts.members.clone(),
        replication: engine.replication.clone(),
        sharding: engine.sharding.as_deref().cloned(),
    }
}

/// Spec files a cell was planned from, relative to the project home
/// (scenario, environment, engine, templates), for provenance hashes.
fn spec_files(e: &Entry, s: &Scenario) -> Vec<String> {
    let mut files = vec![
        s.origin.file.clone(),
        e.ep.spec.origin.file.clone(),
        e.engine.origin.file.clone(),
    ];
    files.extend(
        e.engine
            .config_files
            .iter()
            .map(|c| format!("templates/{}", c.template)),
    );
    files.retain(|f| !f.is_empty());
    files
}
