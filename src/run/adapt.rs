//! From a planned cell to the work of one cell: its key, its launch, and
//! an executor per phase, each running the typed config the plan made.

use crate::metrics::fidelity::IoBoundThresholds;
use crate::model::phase::{Expect, Length};
use crate::model::{Backend, CellLimits, Program};
use crate::plan::{PhaseConfig, PlannedCell, PlannedPhase};
use crate::run::cell::{
    CacheResize, CellWork, EngineFacts, LaunchFn, Leader, PhaseStep, ReplicaLaunchFn, ReplicaWork,
    SnapshotWork,
};
use crate::run::exec::DriveExec;
use crate::run::key::cell_key;
use crate::run::phase::Unrunnable;
use crate::units::Bytes;
use crate::workload::DriveConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The key and group (key without the repetition) of a planned cell,
/// computed from its [`identity`](PlannedCell::identity).
pub fn keys_of(cell: &PlannedCell) -> (String, String) {
    let key = cell_key(
        &format!(
            "{}-{}-{}-r{}",
            cell.engine, cell.version, cell.environment, cell.repetition
        ),
        &cell.identity(cell.repetition),
    );
    let group = cell_key(
        &format!("{}-{}-{}", cell.engine, cell.version, cell.environment),
        &cell.identity(0),
    );
    (key, group)
}

/// Check every generator config of a cell before anything is created:
/// a config the load generator would refuse is bad input.
pub(crate) fn check_configs(work: &CellWork) -> Result<(), Unrunnable> {
    for step in work.load.iter().chain(work.phases.iter()) {
        for &t in &step.threads {
            step.exec
                .check(t)
                .map_err(|e| Unrunnable(format!("{} phase `{}`: {e}", work.label, step.name)))?;
        }
    }
    Ok(())
}

/// The work of one planned cell. `exe` is the benchcage binary that runs
/// the load generator as a child.
/// `snapshots` is the cache; `None` loads every cell afresh.
pub fn cell_work(
    cell: &PlannedCell,
    exe: PathBuf,
    facts: Arc<dyn EngineFacts>,
    snapshots: Option<&crate::snapshot::store::Cache>,
) -> CellWork {
    let (key, group) = keys_of(cell);
    let planned = Arc::new(cell.clone());
    let launch = launch_fn(planned.clone());
    let (limits, replicas) = members_of(&planned);
    let replicas_len = replicas.len();
    let load = load_step(&planned, &exe);
    let phases = cell
        .phases
        .iter()
        .map(|pp| phase_step(&planned, pp, &exe))
        .collect();
    CellWork {
        key,
        cache_overcommit: cell.cache_overcommit,
        steal_allowance: cell.steal_allowance.map_or(0.0, |a| a.fraction()),
        network: cell.network.clone(),
        quick_stop: cell.quick_stop.clone(),
        group,
        label: cell.id.clone(),
        engine: cell.engine.clone(),
        version: cell.version.clone(),
        environment: cell.environment.clone(),
        backend: cell.backend,
        image: match (&cell.backend, &cell.program) {
            (Backend::Docker, Program::Image(i)) => Some(i.clone()),
            _ => None,
        },
        limits,
        limits_record: limits_record(cell),
        knobs: cell.knobs.clone(),
        repetition: cell.repetition,
        launch,
        facts,
        load,
        settle: cell.settle.unwrap_or_default(),
        cache_resize: cache_resize(cell),
        phases,
        io_bound: IoBoundThresholds::default(),
        hog_leave: cell.hog_leave,
        thp: cell.transparent_hugepages,
        thp_need: cell.thp_need,
        exe,
        expect_version: None,
        package: None,
        snapshot: snapshot_work(cell, replicas_len, snapshots),
        replicas,
        topology: cell.topology,
        sharding: cell.sharding.clone().filter(|_| sharded(cell)),
        initiate: cell
            .replication
            .as_ref()
            .filter(|_| replicas_len > 0 && !sharded(cell))
            .map(|r| r.initiate.clone())
            .unwrap_or_default(),
        set: cell
            .members
            .first()
            .and_then(|m| m.set_name(cell.members.len(), routed(cell))),
        node: None,
    }
}

/// How the cell's server is launched: the planned argv with this run's
/// port and folders filled in, and its rendered config files.
fn launch_fn(p: Arc<PlannedCell>) -> LaunchFn {
    Arc::new(move |port, data_dir, config_dir, log_path| {
        let files = p
            .configs
            .iter()
            .map(|c| (c.name.clone(), c.content.clone()))
            .collect();
        Ok((p.launch(port, data_dir, config_dir, log_path), files))
    })
}

/// The load phase, when the cell loads: the built-in generator's config
/// at the load's thread count.
fn load_step(planned: &Arc<PlannedCell>, exe: &Path) -> Option<PhaseStep> {
    let load = planned.load.as_ref().zip(planned.load_config.as_ref());
    load.map(|(l, config)| PhaseStep {
        name: "load".into(),
        exec: drive_exec(planned, config, exe),
        threads: vec![l.threads],
        expect_io_bound: false,
        length: None,
        loads: false,
    })
}

/// The snapshot a cell may restore or save, when a cache is given. A
/// replica set's data is in every member: one data dir is not it, so a
/// cell with replicas has none.
fn snapshot_work(
    cell: &PlannedCell,
    replicas: usize,
    snapshots: Option<&crate::snapshot::store::Cache>,
) -> Option<SnapshotWork> {
    cell.snapshot
        .as_ref()
        .filter(|_| replicas == 0)
        .zip(snapshots)
        .map(|(s, cache)| SnapshotWork {
            id: s.id.clone(),
            key: s.key.clone(),
            verify: s.verify,
            checkpoint: s.checkpoint.clone(),
            cache: cache.clone(),
            later: Bytes(0),
        })
}

/// What the cells after each one need where the data dirs go, in run
/// order: the most any one of them needs (its data disk's size, else its
/// data's estimate, as plan checks it), zero for the last. A snapshot
/// saved there stays, while a cell's data dir goes at its teardown.
pub(crate) fn later_room(cells: &[PlannedCell]) -> Vec<Bytes> {
    let mut out = vec![Bytes(0); cells.len()];
    let mut most = Bytes(0);
    for (i, c) in cells.iter().enumerate().rev() {
        out[i] = most;
        let needs = c
            .limits
            .disk
            .or(c.footprint.as_ref().map(|f| f.estimate))
            .unwrap_or_default();
        most = most.max(needs);
    }
    out
}

/// The first member's limits (its CPUs from the topology's split) and the
/// other members, each with its CPUs and the cell's memory cap, how it
/// joins and whom it follows; one server keeps the cell's limits.
fn members_of(cell: &Arc<PlannedCell>) -> (CellLimits, Vec<ReplicaWork>) {
    let mut limits = cell.limits.clone();
    let Some(primary) = cell.members.first().filter(|_| cell.members.len() > 1) else {
        return (limits, Vec::new());
    };
    limits.server_cpus = primary.cpus.clone();
    let sharded = sharded(cell);
    let join = if sharded {
        cell.sharding.as_ref().map(|s| s.member_join.clone())
    } else {
        cell.replication.as_ref().map(|r| r.replica_join.clone())
    }
    .unwrap_or_default();
    let (count, sets) = (cell.members.len(), routed(cell));
    let replicas = cell.members[1..]
        .iter()
        .map(|m| {
            let p = cell.clone();
            let own = m.configs.clone();
            let role = m.role;
            let launch: ReplicaLaunchFn =
                Arc::new(move |port, data_dir, config_dir, log_path, fills| {
                    let configs = if own.is_empty() { &p.configs } else { &own };
                    let files = configs
                        .iter()
                        .map(|c| (c.name.clone(), c.content.clone()))
                        .collect();
                    let mut launch = match role {
                        crate::model::Role::Router => {
                            p.router_launch(port, data_dir, config_dir, log_path)
                        }
                        // A shard member starts empty, as the first one did.
                        _ if sharded => p.launch(port, data_dir, config_dir, log_path),
                        _ => p.replica_launch(port, data_dir, config_dir, log_path),
                    };
                    fill_launch(&mut launch, fills);
                    Ok((launch, files))
                });
            ReplicaWork {
                name: m.name.clone(),
                role: m.role,
                limits: CellLimits {
                    server_cpus: m.cpus.clone(),
                    ..cell.limits.clone()
                },
                launch,
                join: join.clone(),
                shard: m.shard,
                set: m.set_name(count, sets),
                leader: leader_of(&cell.members, m),
            }
        })
        .collect();
    (limits, replicas)
}

/// The run's placeholders filled in a member's argv and init.
fn fill_launch(launch: &mut crate::model::EngineLaunch, fills: &[(&str, String)]) {
    let fill = |a: &mut String| {
        for (k, v) in fills {
            *a = a.replace(k, v);
        }
    };
    launch.argv.iter_mut().for_each(fill);
    launch.init.iter_mut().flatten().for_each(fill);
}

/// Whether the cell is a sharded cluster with routers (MongoDB), whose
/// config servers and shards are replica sets.
fn routed(cell: &PlannedCell) -> bool {
    sharded(cell) && cell.sharding.as_ref().is_some_and(|s| s.routers)
}

/// Whether the cell is a sharded cluster.
fn sharded(cell: &PlannedCell) -> bool {
    matches!(cell.topology, crate::model::Topology::Sharded { .. })
}

/// Whom member `m` follows: a replica set's secondary the primary (the
/// cell's server), a shard's secondary its shard's primary, a config
/// server after the first the first (the cell's server: config servers
/// start first), a shard's primary or a router nobody.
fn leader_of(
    members: &[crate::plan::members::PlannedMember],
    m: &crate::plan::members::PlannedMember,
) -> Leader {
    use crate::model::Role;
    match m.role {
        Role::Secondary | Role::ConfigServer => Leader::Cell,
        Role::ShardSecondary => {
            let at = members
                .iter()
                .position(|o| o.role == Role::ShardPrimary && o.shard == m.shard);
            match at {
                Some(0) => Leader::Cell,
                Some(i) => Leader::Member(i - 1),
                None => Leader::None,
            }
        }
        _ => Leader::None,
    }
}

/// The cell's limits as its record shows them.
fn limits_record(cell: &PlannedCell) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    out.insert("server_cpus".into(), cell.limits.server_cpus.to_string());
    out.insert("client_cpus".into(), cell.limits.client_cpus.to_string());
    out.insert("memory".into(), cell.limits.memory.to_string());
    out.insert("cache".into(), cell.cache.to_string());
    if let Some(from) = &cell.cache_from {
        out.insert("cache_from".into(), from.clone());
    }
    out.insert("swap".into(), cell.limits.swap.to_string());
    if let Some(h) = cell.hog_leave {
        out.insert("hog_leave".into(), h.to_string());
    }
    out
}

/// How settle resizes the engine's cache with the settled cap: only with
/// a cap, and only when the engine has a `cache_resize:` statement.
fn cache_resize(cell: &PlannedCell) -> Option<CacheResize> {
    let settle = cell.settle.unwrap_or_default();
    cell.cache_resize
        .clone()
        .filter(|_| settle.memory.is_some())
        .map(|statement| CacheResize {
            statement,
            planned_cache: cell.cache,
            planned_cap: cell.limits.memory,
        })
}

/// One measured run of the cell.
fn phase_step(cell: &Arc<PlannedCell>, pp: &PlannedPhase, exe: &Path) -> PhaseStep {
    PhaseStep {
        name: pp.phase.name.clone(),
        exec: phase_exec(cell, pp, exe),
        threads: vec![pp.threads],
        expect_io_bound: matches!(pp.phase.expect, Some(Expect::IoBound)),
        length: match (&pp.config, pp.phase.length) {
            // The phase's deadline would cut the set-up short (a sysbench
            // prepare of 64M rows outlasts any measured run); the tool's
            // own per-step limits bound it instead.
            (PhaseConfig::Tool(t), _) if t.has_setup() => None,
            (PhaseConfig::Tool(t), Length::Duration(d)) => {
                Some(pp.phase.warmup.std() + d.std() + tool_start_allowance(t, pp))
            }
            (_, Length::Duration(d)) => Some(pp.phase.warmup.std() + d.std()),
            (_, Length::Operations(_)) => None,
        },
        loads: matches!(&pp.config, PhaseConfig::Tool(t) if t.has_setup()),
    }
}

/// What a tool takes to start beside its measured time, per run of it:
/// its own start, then one connection (and sysbench's prepared
/// statements) per thread. 1024 sysbench threads on one server CPU took
/// 16 s more than their 70 s of warmup and run.
const TOOL_START: std::time::Duration = std::time::Duration::from_secs(10);
const TOOL_START_PER_THREAD: std::time::Duration = std::time::Duration::from_millis(25);

/// The start allowance of a tool phase: one per run of the tool (the
/// warmup is a run of its own).
fn tool_start_allowance(
    t: &crate::workload::tools::ToolConfig,
    pp: &PlannedPhase,
) -> std::time::Duration {
    let runs = if t.runs_warmup() && !pp.phase.warmup.std().is_zero() {
        2
    } else {
        1
    };
    (TOOL_START + TOOL_START_PER_THREAD * pp.threads) * runs
}

/// The load generator's executor for a planned config of the cell.
fn drive_exec(cell: &Arc<PlannedCell>, config: &DriveConfig, exe: &Path) -> Arc<DriveExec> {
    let label = if config.load {
        format!("{}:load", config.workload.generator().name())
    } else {
        config.label()
    };
    let remote = cell
        .remote_client
        .clone()
        .map(|r| (r, cell.limits.client_cpus.clone()));
    let cell = cell.clone();
    Arc::new(DriveExec {
        label,
        config: config.clone(),
        store: Arc::new(move |ports| cell.store_url(ports)),
        program: exe.to_path_buf(),
        remote,
    })
}

fn phase_exec(
    cell: &Arc<PlannedCell>,
    pp: &PlannedPhase,
    exe: &Path,
) -> Arc<dyn crate::run::phase::PhaseExec> {
    match &pp.config {
        PhaseConfig::Builtin(c) => drive_exec(cell, c, exe),
        PhaseConfig::Tool(t) => crate::run::tools::tool_exec(cell.clone(), t.clone(), pp.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::phase::PhaseExec;

    fn project() -> crate::spec::Project {
        crate::spec::Project::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn each_cell_leaves_room_for_the_largest_of_the_cells_after_it() {
        let p = crate::plan::plan(&project(), "quickstart", &[], None, None).unwrap();
        let base = p.cells[0].clone();
        let estimate = base.footprint.as_ref().unwrap().estimate;
        let with = |disk: Option<Bytes>, scale: u64| {
            let mut c = base.clone();
            c.limits.disk = disk;
            if let Some(f) = &mut c.footprint {
                f.estimate = Bytes(estimate.0 * scale);
            }
            c
        };
        // A disk counts at its size, whatever the data's estimate.
        let cells = [
            with(None, 1),
            with(None, 5),
            with(Some(Bytes(1 << 30)), 1),
            with(None, 2),
        ];
        let mut no_estimate = with(None, 1);
        no_estimate.footprint = None;
        let room = later_room(&[cells.to_vec(), vec![no_estimate]].concat());
        assert_eq!(
            room,
            [
                Bytes(1 << 30),
                Bytes(1 << 30),
                Bytes(estimate.0 * 2),
                Bytes(0),
                Bytes(0)
            ]
        );
        assert!(estimate.0 * 5 < 1 << 30, "{estimate}");
    }

    #[test]
    fn a_client_placed_on_another_node_reaches_the_server_on_its_nodes_address() {
        let p = crate::plan::plan(&project(), "quickstart", &[], None, None).unwrap();
        let mut cell = p.cells[0].clone();
        let before = cell.command.clone();
        // A loopback address (the test cluster's): nothing to add.
        let mut local = cell.clone();
        local.place_client(crate::model::RemoteClient {
            node: "vm-b".into(),
            address: "127.0.0.1".into(),
        });
        assert_eq!(local.command, before);
        cell.place_client(crate::model::RemoteClient {
            node: "node2".into(),
            address: "192.0.2.7".into(),
        });
        assert_eq!(
            &cell.command[before.len()..],
            ["--bind", "127.0.0.1", "192.0.2.7"]
        );
        assert_eq!(cell.store_url(&[6379]), "redis://192.0.2.7:6379");
        let cell = Arc::new(cell);
        let exec = drive_exec(&cell, cell.load_config.as_ref().unwrap(), Path::new("bc"));
        let (r, cpus) = exec.remote.as_ref().unwrap();
        assert_eq!((r.node.as_str(), cpus), ("node2", &cell.limits.client_cpus));
    }

    #[test]
    fn a_planned_config_reaches_the_generator_as_drive_reads_it() {
        let p = crate::plan::plan(&project(), "quickstart", &[], None, None).unwrap();
        let cell = Arc::new(p.cells[0].clone());
        let load = drive_exec(&cell, cell.load_config.as_ref().unwrap(), Path::new("bc"));
        let cfg = load.config_for(&[6379], 3);
        let text = serde_json::to_string(&cfg).unwrap();
        let read: DriveConfig = serde_json::from_str(&text).unwrap();
        assert_eq!(read, cfg);
        assert_eq!(read.store.as_deref(), Some("redis://127.0.0.1:6379"));
        assert_eq!(
            (read.load, read.reset, read.load_threads),
            (true, true, Some(3))
        );
        assert_eq!(load.describe(), "ycsb:load");
        assert!(load.check(3).is_ok());
    }

    #[test]
    fn a_tool_phase_with_a_set_up_step_has_no_phase_deadline_and_a_measured_phase_has_one() {
        let project = project();
        let builtin = crate::plan::plan(&project, "quickstart", &[], None, None).unwrap();
        let cell = Arc::new(builtin.cells[0].clone());
        let step = phase_step(&cell, &cell.phases[0], Path::new("bc"));
        assert!(step.length.is_some());
        // sysbench prepares its tables inside the phase's first run: 64M
        // rows outlast any measured length, so only the tool's own step
        // limits bound it.
        let tool =
            crate::plan::plan(&project, "tests/scenarios/run-tool.yaml", &[], None, None).unwrap();
        let cell = Arc::new(tool.cells[0].clone());
        let pp = &cell.phases[0];
        assert!(matches!(&pp.config, PhaseConfig::Tool(t) if t.has_setup()));
        assert_eq!(phase_step(&cell, pp, Path::new("bc")).length, None);
    }

    #[test]
    fn a_tool_phase_deadline_allows_each_run_of_the_tool_to_connect_its_threads() {
        let sets: Vec<(String, String)> = [
            ("threads", "2,1024"),
            ("warmup", "10s"),
            ("duration", "60s"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let plan = crate::plan::plan(
            &project(),
            "tests/scenarios/run-tool-sweep.yaml",
            &sets,
            None,
            None,
        )
        .unwrap();
        let cell = Arc::new(plan.cells[0].clone());
        let at = |threads: u32| {
            let pp = cell.phases.iter().find(|p| p.threads == threads).unwrap();
            phase_step(&cell, pp, Path::new("bc")).length.unwrap()
        };
        // 10 s of warmup and 60 s, each run with 10 s + 25 ms a thread to
        // start: 1024 threads get 2 x 35.6 s beside their 70 s (they took 86 s).
        assert_eq!(at(1024).as_millis(), 70_000 + 2 * (10_000 + 25 * 1024));
        // The first count prepares the tables: no phase deadline at all.
        let first = cell.phases.iter().find(|p| p.threads == 2).unwrap();
        assert_eq!(phase_step(&cell, first, Path::new("bc")).length, None);
    }

    #[test]
    fn a_tool_sweep_prepares_before_its_first_count_and_cleans_up_after_its_last() {
        use crate::workload::tools::Tool;
        let plan = crate::plan::plan(
            &project(),
            "tests/scenarios/run-tool-sweep.yaml",
            &[],
            None,
            None,
        )
        .unwrap();
        let cell = Arc::new(plan.cells[0].clone());
        let steps: Vec<(u32, bool, bool, bool)> = cell
            .phases
            .iter()
            .map(|pp| {
                let PhaseConfig::Tool(t) = &pp.config else {
                    panic!("{}: not a tool", pp.id)
                };
                let Tool::Sysbench(s) = &t.tool else {
                    panic!("{}: not sysbench", pp.id)
                };
                let deadline = phase_step(&cell, pp, Path::new("bc")).length.is_some();
                (pp.threads, s.prepare, s.cleanup, deadline)
            })
            .collect();
        // (threads, prepare, cleanup, phase deadline): only the first count
        // prepares, so only it goes without the phase's deadline.
        assert_eq!(
            steps,
            [
                (1, true, false, false),
                (2, false, false, true),
                (4, false, true, true)
            ]
        );
    }

    #[test]
    fn a_replica_set_is_another_cell_than_the_same_engine_as_one_server() {
        let p = crate::plan::plan(&project(), "replica-sets-here", &[], None, Some("postgres"))
            .unwrap();
        let [alone, set] = [&p.cells[0], &p.cells[1]];
        assert_eq!((alone.members.len(), set.members.len()), (1, 3));
        // The same rendered configs: only the topology tells them apart.
        assert_eq!(alone.configs, set.configs);
        assert_ne!(keys_of(alone).0, keys_of(set).0);
        assert_ne!(keys_of(alone).1, keys_of(set).1);
        // One server keeps the key it had before topologies.
        let mut plain = alone.clone();
        plain.members.clear();
        assert_eq!(keys_of(alone), keys_of(&plain));
    }

    #[test]
    fn store_knobs_reach_the_load_generators_url_and_the_cell_key() {
        use crate::workload::stores::StoreTarget;
        let project = project();
        let sets: Vec<(String, String)> = [
            ("write_concern", "majority"),
            ("write_journal", "true"),
            ("read_preference", "nearest"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let plan = |sets: &[(String, String)]| {
            crate::plan::plan(
                &project,
                "003-mongodb-3.2-here",
                sets,
                None,
                Some("secantusdb"),
            )
            .unwrap()
            .cells
            .remove(0)
        };
        let cell = plan(&sets);
        let planned = Arc::new(cell.clone());
        let exe = Path::new("bc");
        let load = drive_exec(&planned, cell.load_config.as_ref().unwrap(), exe);
        let PhaseConfig::Builtin(first) = &cell.phases[0].config else {
            panic!("workload-a runs the built-in generator");
        };
        let phase = drive_exec(&planned, first, exe);
        let (load, phase) = (load.config_for(&[27017], 4), phase.config_for(&[27017], 4));
        let url = "mongodb://127.0.0.1:27017/?journal=true&readPreference=nearest&w=majority";
        assert_eq!(
            (load.store.as_deref(), phase.store.as_deref()),
            (Some(url), Some(url))
        );
        let t = StoreTarget::parse(url).unwrap();
        assert_eq!(
            t.mongo.describe(),
            "writes acknowledged with w: majority, j: true; reads from nearest"
        );
        assert_eq!(t.endpoint.database, None);
        let plain = plan(&[]);
        assert_eq!(plain.store_url(&[1]), "mongodb://127.0.0.1:1");
        assert_eq!(
            plain.store_url(&[1, 2, 3]),
            "mongodb://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"
        );
        // Another write concern is another cell; none leaves the key as it was.
        assert_ne!(keys_of(&cell), keys_of(&plain));
        let mut unset = cell.clone();
        unset.store_options.clear();
        unset.knobs = plain.knobs.clone();
        assert_eq!(keys_of(&unset), keys_of(&plain));
    }
}
