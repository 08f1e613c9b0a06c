//! One cell, start to end (docs/DESIGN.md): provision, render, start, ready,
//! load, settle, phases, collect, teardown, write. Teardown always runs,
//! with its own time budget, whatever happened before; a finished phase is
//! on disk before the next one starts; `cell.json` is written last and is
//! what `--resume` trusts.

use crate::metrics::fidelity::{self, IoBoundThresholds};
use crate::metrics::procfs;
use crate::metrics::sampler::{Sampler, StatsSource, Target};
use crate::model::{Backend, CellLimits, CellStatus, EngineLaunch, Settle, ThpNeed, ThpPolicy};
use crate::plan::settle;
use crate::results::model::{CellRecord, FidelityRecord, PhaseResult, PhaseStatus};
use crate::run::disk;
use crate::run::live::{Live, Status};
use crate::run::phase::{PhaseEnv, PhaseExec, PlaceHook};
use crate::sandbox::hog::Hog;
use crate::sandbox::ledger::{self, Ledger};
use crate::sandbox::stats::StatsReader;
use crate::sandbox::thp::{self, ThpFiles, ThpMode};
use crate::sandbox::{CgroupStats, EngineId, EngineStatus, Sandbox, SandboxError};
use crate::units::Bytes;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

mod data_disk;
mod end;
mod measure;
mod network;
mod stages;
mod topology;

use end::{QuickStop, collect, restore_host, teardown};
use measure::{measure, run_one};
use stages::{
    load_data, provision, render, restore_snapshot, save_snapshot, settle_memory, start,
    start_restored, verify_records,
};
use topology::Topology;

/// Builds the engine launch for a port, data dir, config dir and log path,
/// with the rendered config files (file name -> content) to write first.
pub(crate) type LaunchFn = Arc<
    dyn Fn(u16, &Path, &Path, &Path) -> anyhow::Result<(EngineLaunch, Vec<(String, String)>)>
        + Send
        + Sync,
>;

/// What the engine itself says about its data and cache, over its own
/// protocol (the version comes from the readiness probe).
#[async_trait::async_trait]
pub trait EngineFacts: Send + Sync {
    /// Data (and index) size the engine reports, when it does.
    async fn data_size(&self, port: u16) -> Option<u64>;
    /// Cache size the engine reports it uses.
    async fn cache_size(&self, port: u16) -> Option<u64>;
    /// A digest of the load generator's records, equal for equal data
    /// (snapshots are checked with it).
    async fn digest(&self, port: u16) -> Result<String, FactsError>;
    /// Send one statement (SQL, a redis command, or a MongoDB command as
    /// JSON) and wait for it.
    async fn execute(&self, port: u16, statement: &str) -> Result<(), FactsError>;
    /// Send one statement and return its reply as text (a node id, a
    /// cluster's state).
    async fn reply(&self, port: u16, statement: &str) -> Result<String, FactsError>;
    /// A digest of the records of the whole sharded cluster the member on
    /// `port` belongs to: equal to [`EngineFacts::digest`] of one server
    /// holding the same records.
    async fn cluster_digest(&self, port: u16) -> Result<String, FactsError>;
    /// The data size of the whole sharded cluster the member on `port`
    /// belongs to: the sum over its shards' primaries.
    async fn cluster_data_size(&self, port: u16) -> Option<u64>;
    /// How the secondary on `replica` follows the primary on `primary`.
    async fn replica_state(&self, primary: u16, replica: u16) -> Result<ReplicaState, FactsError>;
    /// What [`ReplicaState::behind`] counts: `None` for bytes, else the
    /// unit (`ms`).
    fn lag_unit(&self) -> Option<&'static str> {
        None
    }
    /// `Ok` once the member on `port` is its replica set's writable
    /// primary; else what it is instead.
    async fn writable_primary(&self, port: u16) -> Result<(), FactsError>;
    /// The shards of `names` that the router on `port` does not list yet.
    async fn missing_shards(&self, port: u16, names: &[String]) -> Result<Vec<String>, FactsError>;
}

/// Why the engine could not say what [`EngineFacts`] asked.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    /// Connecting to the engine, the statement, or its reply failed.
    #[error(transparent)]
    Client(#[from] crate::clients::ClientError),
    /// benchcage does not ask this engine's protocol this (`what` says
    /// what it does ask).
    #[error("benchcage {what}")]
    Unsupported { what: &'static str },
    /// A replica set member that is not its set's writable primary: what
    /// it is instead.
    #[error("it is {0}")]
    NotPrimary(String),
    /// The topology is not there yet (a router that does not list a
    /// shard, a member that does not say the cluster is whole).
    #[error("{0}")]
    NotYet(String),
    /// The run was interrupted while waiting.
    #[error("interrupted")]
    Interrupted,
}

/// A secondary's replication, as the engines report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaState {
    /// Connected to the primary and receiving.
    pub linked: bool,
    /// What it has still to receive or replay (bytes of stream or WAL;
    /// milliseconds of oplog time on MongoDB: see `EngineFacts::lag_unit`).
    pub behind: u64,
}

/// Builds a member's launch: port, data dir, config dir, log path, and
/// the run's placeholders filled in its argv and init (`{primary_port}`,
/// `{set_name}`, `{config_set}`).
pub(crate) type ReplicaLaunchFn = Arc<
    dyn Fn(
            u16,
            &Path,
            &Path,
            &Path,
            &[(&str, String)],
        ) -> anyhow::Result<(EngineLaunch, Vec<(String, String)>)>
        + Send
        + Sync,
>;

/// One secondary of a replica set: its own sandbox and limits.
#[derive(Clone)]
pub struct ReplicaWork {
    /// `m1`, `m2`.
    pub name: String,
    pub role: crate::model::Role,
    pub limits: CellLimits,
    pub launch: ReplicaLaunchFn,
    /// Statements sent to it once it answers, `{primary_port}` unfilled.
    pub join: Vec<String>,
    /// The shard it belongs to, in a sharded cluster.
    pub shard: Option<u32>,
    /// The replica set it is a member of (`{set_name}`): `benchcage`,
    /// `cfg`, `shard0`.
    pub set: Option<String>,
    /// The member whose data it copies, whose lag it is followed by.
    pub leader: Leader,
}

/// Whom a member follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leader {
    /// The cell's server (a replica set's primary, shard 0's primary).
    Cell,
    /// Another member: its index in `CellWork::replicas`.
    Member(usize),
    /// Nobody: a shard's primary.
    None,
}

/// How settle resizes the engine's cache: the planned cache's share of
/// the planned cap, applied to the settled cap, set with the engine's
/// statement.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheResize {
    /// The engine's `cache_resize:` statement, `{cache_bytes}` unfilled.
    pub statement: String,
    /// The cache the cell started with.
    pub planned_cache: Bytes,
    /// The cap it started under.
    pub planned_cap: Bytes,
}

impl CacheResize {
    /// The cache for `cap`: the planned cache's share of the planned cap,
    /// rounded down to a MiB, at least 1 MiB.
    pub(crate) fn cache_for(&self, cap: Bytes) -> Bytes {
        let share = self.planned_cache.0 as f64 / self.planned_cap.0.max(1) as f64;
        let bytes = (cap.0 as f64 * share) as u64;
        Bytes((bytes >> 20).max(1) << 20)
    }

    /// Resize the engine's cache on `port` to its share of the settled
    /// `cap` with the engine's statement, and read back what the engine
    /// reports: the read-back in words, and a violation when the
    /// statement failed.
    async fn apply(
        &self,
        facts: &dyn EngineFacts,
        port: u16,
        cap: Bytes,
    ) -> (String, Option<String>) {
        let want = self.cache_for(cap);
        let statement = crate::model::launch::fill_cache_resize(&self.statement, want);
        let failed = facts.execute(port, &statement).await.err();
        let now = facts.cache_size(port).await;
        let shown = now.map_or("not reported".to_string(), |b| Bytes(b).to_string());
        let read_back = format!(
            "{shown} (resized to {want}: the {} cache's share of the {} cap, applied to {})",
            self.planned_cache,
            self.planned_cap,
            crate::display::approx(cap)
        );
        let violation = failed.map(|e| {
            format!(
                "settle could not resize the engine's cache to {want} under the {} cap (`{}`): {e}",
                crate::display::exact(cap),
                crate::error::excerpt(&statement)
            )
        });
        (read_back, violation)
    }
}

/// One phase of a cell: its runs, one per thread count (a thread sweep is
/// a list of sub-results of one cell, in order, sharing the loaded data).
#[derive(Clone)]
pub struct PhaseStep {
    pub name: String,
    pub exec: Arc<dyn PhaseExec>,
    pub threads: Vec<u32>,
    pub expect_io_bound: bool,
    /// Warm-up plus duration of a timed phase; `None` for a phase that
    /// runs a number of operations (the load). A timed phase that runs
    /// past it by [`PHASE_GRACE`] is stopped and fails.
    pub length: Option<Duration>,
    /// The step's first run fills the database itself (sysbench prepare,
    /// pgbench init): the data is measured after it, not before.
    pub loads: bool,
}

/// Everything needed to run one cell, built from the plan.
#[derive(Clone)]
pub struct CellWork {
    pub key: String,
    /// The environment allows a cache over the cap
    /// (`allow_cache_overcommit`): recorded, never a violation.
    pub cache_overcommit: bool,
    /// Steal time a phase may lose and stay valid (`server.steal_allowance`).
    pub steal_allowance: f64,
    /// The network between the client and the server (`network:`).
    pub network: Option<crate::network::Network>,
    /// Sent to the cell's server at teardown, before SIGTERM: the
    /// engine's `quick_stop:` statement, on which it exits at once.
    pub quick_stop: Option<String>,
    /// The key without the repetition: the same for every repetition.
    pub group: String,
    pub label: String,
    pub engine: String,
    pub version: String,
    pub environment: String,
    pub backend: Backend,
    /// The engine's image on the docker backend (pulled before the cell
    /// starts when it is missing).
    pub image: Option<String>,
    pub limits: CellLimits,
    /// Planned limits in words (memory, cache, CPUs, hog) for the record.
    pub limits_record: BTreeMap<String, String>,
    pub knobs: BTreeMap<String, String>,
    pub repetition: u32,
    pub launch: LaunchFn,
    pub facts: Arc<dyn EngineFacts>,
    pub load: Option<PhaseStep>,
    /// The settle step: the cap to set after the load, and whether to
    /// drop the page cache.
    pub settle: Settle,
    /// Resize the engine's cache with the settled cap, where the engine
    /// can (only with a settle cap).
    pub cache_resize: Option<CacheResize>,
    pub phases: Vec<PhaseStep>,
    pub io_bound: IoBoundThresholds,
    /// Lock host memory so that only this much is left, before the load.
    pub hog_leave: Option<Bytes>,
    /// `Off`: the host's transparent huge pages are `never` during the
    /// cell (recorded in a ledger first, restored at teardown).
    pub thp: ThpPolicy,
    /// What the engine needs of them (TokuMX refuses `always`).
    pub thp_need: ThpNeed,
    /// The benchcage binary (the hog and the load generator run as it).
    pub exe: PathBuf,
    /// The version the server must report (the listed one), when its
    /// engine reports its own; a mismatch is a fidelity violation.
    pub expect_version: Option<String>,
    /// The fetched package the binary came from, with its checksum.
    pub package: Option<String>,
    /// The snapshot of the cell's load: restored instead of loading when
    /// the cache has it, saved after the load when not.
    pub snapshot: Option<SnapshotWork>,
    /// A replica set's secondaries, or a sharded cluster's members after
    /// the first (the cell's server is the primary, the first shard's
    /// primary, or the first config server when the cluster has routers);
    /// empty for one server.
    pub replicas: Vec<ReplicaWork>,
    /// One server, a replica set or a sharded cluster.
    pub topology: crate::model::Topology,
    /// How a sharded cluster's members form it.
    pub sharding: Option<crate::model::cluster::ShardingSpec>,
    /// Sent to a replica set's primary once every secondary answers,
    /// `{set_members}` unfilled.
    pub initiate: Vec<String>,
    /// The replica set the cell's server is a member of (`{set_name}`).
    pub set: Option<String>,
    /// The cluster node this cell runs on as a job (`run --on slurm`).
    pub node: Option<crate::results::model::NodeRecord>,
}

impl CellWork {
    /// Every CPU the cell uses: its server's, its client's, its members'.
    pub(crate) fn all_cpus(&self) -> crate::units::CpuSet {
        crate::units::CpuSet::new(
            self.limits
                .server_cpus
                .iter()
                .chain(self.limits.client_cpus.iter())
                .chain(
                    self.replicas
                        .iter()
                        .flat_map(|m| m.limits.server_cpus.iter()),
                ),
        )
    }
}

/// A cell's snapshot key and the cache it is kept in.
#[derive(Debug, Clone)]
pub struct SnapshotWork {
    pub id: String,
    pub key: crate::snapshot::SnapshotKey,
    /// Digest the records after the load or restore, and compare.
    pub verify: bool,
    /// Sent to the engine before its clean stop (redis: `SAVE`).
    pub checkpoint: Option<String>,
    pub cache: crate::snapshot::store::Cache,
    /// The most room one later cell of the run needs where the data dirs
    /// go (see [`crate::run::adapt::later_room`]): a save leaves it.
    pub later: crate::units::Bytes,
}

/// Where a cell runs and how it reports.
pub struct CellCtx {
    pub run_id: String,
    /// Id of this cell's sandbox (cgroup names, ledger): `<run-id>-<nn>`.
    pub sandbox_id: String,
    pub cell_dir: PathBuf,
    /// Parent of the engine's data dir (outside the results disk).
    pub work_dir: PathBuf,
    pub stop: CancellationToken,
    pub hurry: CancellationToken,
    pub live: Arc<StdMutex<Live>>,
    /// `2/4`.
    pub position: String,
}

/// How long the hog may take to lock its memory.
const HOG_TIMEOUT: Duration = Duration::from_secs(120);

/// How long teardown may take, whatever happened before.
pub(crate) const TEARDOWN_BUDGET: Duration = Duration::from_secs(60);
/// SIGTERM grace before SIGKILL (none when the user pressed Ctrl-C twice).
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);
/// How long a timed phase may run past its length before it is stopped
/// (issue 15, D4: a frozen engine hung a 12 s phase for over 100 s). A
/// healthy engine's last operations take milliseconds, and the load
/// generator then writes its result; 15 s covers a slow disk. It is below
/// the operation timeout ([`crate::workload::driver::OP_TIMEOUT`]), so a
/// frozen engine fails a timed phase with this clear reason.
pub(crate) const PHASE_GRACE: Duration = Duration::from_secs(15);
/// How long a stopped phase gets to hand back its result before it is
/// abandoned (its load generator is killed with it).
const CANCEL_GRACE: Duration = Duration::from_secs(8);

/// Why a cell did not finish.
#[derive(Debug)]
enum Stop {
    Failed(String),
    Interrupted,
}

impl From<anyhow::Error> for Stop {
    fn from(e: anyhow::Error) -> Self {
        Stop::Failed(format!("{e:#}"))
    }
}

impl From<SandboxError> for Stop {
    fn from(e: SandboxError) -> Self {
        Stop::Failed(e.to_string())
    }
}

struct Running {
    /// The cell's sandbox; teardown takes it once the lifecycle is over.
    sandbox: Option<Box<dyn Sandbox + Sync>>,
    /// Its kernel counters, read without it.
    stats: StatsReader,
    record: CellRecord,
    stage_start: Instant,
    stage: String,
    sampler: Option<Sampler>,
    port: u16,
    engine_pid: Option<u32>,
    launch: Option<EngineLaunch>,
    hog: Option<(Hog, Ledger)>,
    /// The ledger of this cell's change to the host's THP setting.
    thp: Option<Ledger>,
    phase_time: Duration,
    oom_at_start: u64,
    epoch: Instant,
    /// Set by a phase whose result is recorded but that ends the cell (the
    /// engine was OOM-killed, the phase overran its deadline).
    abort: Option<String>,
    /// The members beside the cell's server (none for one server).
    topology: Topology,
    /// The relays imposing the environment's network on the client.
    links: Option<network::Links>,
    /// The kernel emulation: the cell's namespace and the bridge into it.
    isolation: Option<network::Isolation>,
}

impl Running {
    /// A cell about to run in `sandbox`, nothing started yet.
    fn new(
        work: &CellWork,
        sandbox: Box<dyn Sandbox + Sync>,
        replicas: Vec<Box<dyn Sandbox + Sync>>,
        epoch: Instant,
    ) -> Running {
        Running {
            stats: sandbox.stats_reader(),
            sandbox: Some(sandbox),
            record: base_record(work),
            stage_start: Instant::now(),
            stage: String::new(),
            sampler: None,
            port: 0,
            engine_pid: None,
            launch: None,
            hog: None,
            thp: None,
            phase_time: Duration::ZERO,
            oom_at_start: 0,
            epoch,
            abort: None,
            topology: Topology::new(work, replicas),
            links: None,
            isolation: None,
        }
    }

    /// The ports the client is given: the server's, or the relays' in
    /// front of them when the environment has a network.
    fn client_ports(&self) -> Vec<u16> {
        let ports = self.topology.client_ports(self.port);
        match &self.links {
            Some(l) => l.client_ports(&ports),
            None => ports,
        }
    }

    /// The sandbox, until teardown takes it (after the lifecycle, which is
    /// its only user).
    fn sandbox(&mut self) -> &mut (dyn Sandbox + Sync) {
        self.sandbox
            .as_deref_mut()
            .expect("the sandbox is only taken by teardown, after the lifecycle")
    }

    fn enter(&mut self, ctx: &CellCtx, stage: &str) {
        self.leave();
        self.stage = stage.to_string();
        self.stage_start = Instant::now();
        if let Some(s) = &self.sampler {
            s.set_phase(stage);
        }
        show(ctx, &self.record.label, stage, None, None);
    }

    fn leave(&mut self) {
        if !self.stage.is_empty() {
            let secs = self.stage_start.elapsed().as_secs_f64();
            *self.record.stage_s.entry(self.stage.clone()).or_default() += secs;
        }
        self.stage.clear();
    }
}

fn show(ctx: &CellCtx, label: &str, stage: &str, ops: Option<f64>, mem: Option<(u64, u64)>) {
    let status = Status {
        cell: format!("{} {label}", ctx.position),
        stage: stage.to_string(),
        ops_per_s: ops,
        memory: mem.map(|m| m.0),
        memory_cap: mem.map(|m| m.1),
    };
    ctx.live
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .show(&status);
}

#[async_trait::async_trait]
impl StatsSource for StatsReader {
    async fn stats(&self, target: Target) -> anyhow::Result<CgroupStats> {
        Ok(match target {
            Target::Server => self.server()?,
            Target::Client => self.client()?,
        })
    }
}

/// Run one cell to the end and write its records. Never returns early
/// without tearing the sandbox down. Returns the record as written.
/// `replicas` are the sandboxes of a replica set's secondaries, in
/// `work.replicas` order (empty for one server).
pub async fn run_cell(
    work: &CellWork,
    sandbox: Box<dyn Sandbox + Sync>,
    replicas: Vec<Box<dyn Sandbox + Sync>>,
    ctx: &CellCtx,
    writer: &dyn CellWriter,
) -> anyhow::Result<CellRecord> {
    let epoch = Instant::now();
    let mut r = Running::new(work, sandbox, replicas, epoch);
    std::fs::create_dir_all(&ctx.cell_dir)?;
    let outcome = lifecycle(work, ctx, &mut r, writer).await;
    // The data disk, while it is still mounted.
    data_disk::record(work, &mut r);
    let outcome = data_disk::explain(work, &mut r, outcome);
    // Read before teardown removes the cgroup, however the cell ended: an
    // engine OOM-killed mid-phase never reaches `collect` (issue 15, D3).
    if let Ok(last) = r.stats.server() {
        count_oom_kills(
            &mut r.record.fidelity,
            last.oom_kills.saturating_sub(r.oom_at_start),
        );
    }

    r.enter(ctx, "teardown");
    network::close(&mut r);
    let samples = match r.sampler.take() {
        Some(s) => s.finish().await,
        None => Vec::new(),
    };
    let mut leaked = r.topology.teardown(&mut r.record, &ctx.hurry).await;
    if let Some(sandbox) = r.sandbox.take() {
        let quick = work
            .quick_stop
            .clone()
            .filter(|_| r.engine_pid.is_some() || r.record.image.is_some())
            .map(|statement| QuickStop {
                facts: work.facts.clone(),
                port: r.port,
                statement,
            });
        leaked.extend(teardown(sandbox, quick, &ctx.hurry).await);
    }
    if let Some((hog, ledger)) = r.hog.take() {
        hog.stop().await;
        let _ = ledger.finish();
    }
    // Last, as it was first: the host's THP setting goes back.
    let thp_leak = match r.thp.take() {
        Some(l) => restore_host(l).await,
        None => None,
    };
    r.leave();
    let data_dir = cell_work_dir(ctx);
    let _ = std::fs::remove_dir_all(&data_dir);

    let rec = &mut r.record;
    rec.overhead_s = epoch.elapsed().saturating_sub(r.phase_time).as_secs_f64();
    let leak = leaked
        .into_iter()
        .chain(thp_leak)
        .reduce(|a, b| format!("{a}; {b}"));
    conclude(rec, outcome, leak);
    // `cell.json` last: once it is there, the cell's other files are.
    writer.end(&ctx.cell_dir, &samples, rec)?;
    Ok(r.record)
}

/// The cell's status from how the lifecycle ended; a leak left by the
/// teardown is a violation, and fails a cell that had finished.
fn conclude(rec: &mut CellRecord, outcome: Result<(), Stop>, leak: Option<String>) {
    match outcome {
        Ok(()) => rec.status = CellStatus::Finished,
        Err(Stop::Interrupted) => {
            rec.status = CellStatus::Interrupted;
            rec.failure = Some("interrupted before the cell finished".into());
        }
        Err(Stop::Failed(why)) => {
            rec.status = CellStatus::Failed;
            rec.failure = Some(why);
        }
    }
    if let Some(leak) = leak {
        rec.fidelity.violations.push(leak.clone());
        if rec.status == CellStatus::Finished {
            rec.status = CellStatus::Failed;
            rec.failure = Some(leak);
        }
    }
}

/// Host settings the cell's environment asks for, before anything else:
/// transparent huge pages to `never` (the old mode in a ledger first).
/// A cell whose engine refuses THP `always` fails here, with the reason,
/// when the host turned to `always` after the plan.
fn host_settings(work: &CellWork, ctx: &CellCtx, r: &mut Running) -> Result<(), Stop> {
    let files = ThpFiles::current();
    if work.thp == ThpPolicy::Off {
        let ledger = Ledger::open(&ledger::default_root(), &format!("{}-thp", ctx.sandbox_id))?;
        let ledger = r.thp.insert(ledger);
        if let Some(change) = thp::turn_off(&files, ledger)? {
            r.record.limits.insert(
                "transparent_hugepages".into(),
                format!(
                    "never (the host's {} is restored after the cell)",
                    change.old
                ),
            );
            let now = thp::read_mode(&change.file).map_err(SandboxError::from)?;
            r.record
                .fidelity
                .limits_read_back
                .insert("host/transparent_hugepage/enabled".into(), now.to_string());
        }
    } else if work.thp_need == ThpNeed::NotAlways
        && let Ok(Some(state)) = files.read()
        && state.enabled == ThpMode::Always
    {
        return Err(Stop::Failed(format!(
            "{} refuses to start while transparent huge pages are `always`, as {} now says; \
             set `host: {{transparent_hugepages: off}}` in the environment, or echo never > {}",
            work.engine,
            files.enabled_path().display(),
            files.enabled_path().display()
        )));
    }
    Ok(())
}

/// Record `kills` OOM kills in the fidelity record, with their violation,
/// unless `collect` already counted as many.
fn count_oom_kills(f: &mut FidelityRecord, kills: u64) {
    if kills > f.oom_kills {
        f.violations
            .retain(|v| !v.starts_with(fidelity::OOM_VIOLATION_PREFIX));
        f.oom_kills = kills;
        f.violations
            .extend(fidelity::supervision_violations(kills, 0));
    }
}

/// Where a cell's files go; the run writes them atomically.
pub trait CellWriter: Send + Sync {
    fn phase(
        &self,
        cell_dir: &Path,
        index: usize,
        stem: &str,
        result: &PhaseResult,
    ) -> anyhow::Result<()>;
    /// The cell's last files as one step: its samples, its fidelity
    /// record, and `cell.json` last (what `--resume` trusts).
    fn end(
        &self,
        cell_dir: &Path,
        samples: &[crate::results::model::ResourceSample],
        rec: &CellRecord,
    ) -> anyhow::Result<()>;
    fn cell(&self, cell_dir: &Path, rec: &CellRecord) -> anyhow::Result<()>;
    fn file(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<()>;
    /// Several files as one step, in order (see
    /// `results::atomic::write_all_atomic`).
    fn files(&self, files: &[(PathBuf, Vec<u8>)]) -> anyhow::Result<()>;

    /// The rendered config files kept in `kept_dir`, where the launch's
    /// sandbox installs them from, and the launch itself as
    /// `launch_json`, written as one step.
    fn keep_configs(
        &self,
        kept_dir: &Path,
        files: &[(String, String)],
        launch: &mut EngineLaunch,
        launch_json: &Path,
    ) -> anyhow::Result<()> {
        let mut kept: Vec<(PathBuf, Vec<u8>)> = files
            .iter()
            .map(|(name, content)| (kept_dir.join(name), content.as_bytes().to_vec()))
            .collect();
        for (kept, engine_path) in &mut launch.config_files {
            if let Some(name) = engine_path.file_name() {
                *kept = kept_dir.join(name);
            }
        }
        kept.push((
            launch_json.to_path_buf(),
            serde_json::to_vec_pretty(launch)?,
        ));
        self.files(&kept)
    }
}

fn base_record(work: &CellWork) -> CellRecord {
    CellRecord {
        key: work.key.clone(),
        group: work.group.clone(),
        label: work.label.clone(),
        engine: work.engine.clone(),
        version: work.version.clone(),
        environment: work.environment.clone(),
        backend: work.backend.name().into(),
        topology: work.topology.key(),
        threads: work
            .phases
            .iter()
            .flat_map(|p| p.threads.iter().copied())
            .max()
            .unwrap_or(0),
        repetition: work.repetition,
        limits: work.limits_record.clone(),
        knobs: work.knobs.clone(),
        status: CellStatus::Running,
        settle: Some(work.settle),
        node: work.node.clone(),
        ..Default::default()
    }
}

/// The cell's stages in order; each leaves what the next needs in `r`.
async fn lifecycle(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    writer: &dyn CellWriter,
) -> Result<(), Stop> {
    r.enter(ctx, "provision");
    provision(work, ctx, r).await?;
    check(ctx)?;

    r.enter(ctx, "render");
    let mut launch = render(work, ctx, r, writer)?;
    check(ctx)?;

    let pristine = launch.clone();
    let restored = match &work.snapshot {
        Some(sw) => {
            r.enter(ctx, "restore");
            restore_snapshot(sw, ctx, r, &mut launch, writer)?
        }
        None => None,
    };
    check(ctx)?;

    r.enter(ctx, "start");
    let restored = match restored {
        Some(meta) => start_restored(work, ctx, r, &mut launch, &pristine, meta, writer).await?,
        None => {
            start(ctx, r, &launch, false).await?;
            None
        }
    };

    if !r.topology.is_empty() {
        r.enter(ctx, "replicas");
        start_members(work, ctx, r, writer).await?;
    }
    r.record.topology_ready_s = Some(r.epoch.elapsed().as_secs_f64());

    if let Some(leave) = work.hog_leave {
        r.enter(ctx, "hog");
        start_hog(work, ctx, r, leave).await?;
    }

    if let Some(net) = &work.network {
        r.enter(ctx, "network");
        network::open(work, net, r)?;
    }

    let mut index = 0usize;
    if let Some(load) = work.load.as_ref().filter(|_| restored.is_none()) {
        r.enter(ctx, "load");
        load_data(work, ctx, r, writer, load).await?;
        index += 1;
        verify_records(work, r).await?;
        if !r.topology.is_empty() {
            r.enter(ctx, "replicas");
            let record = &mut r.record;
            r.topology.compare(work, ctx, r.port, record).await?;
        }
        if let Some(sw) = &work.snapshot {
            check(ctx)?;
            r.enter(ctx, "snapshot");
            save_snapshot(work, sw, ctx, r, &launch).await?;
        }
    }
    check(ctx)?;

    r.enter(ctx, "settle");
    settle_memory(work, ctx, r).await?;
    check(ctx)?;

    measure(work, ctx, r, writer, index).await?;

    r.enter(ctx, "collect");
    collect(work, ctx, r).await?;
    Ok(())
}

/// The stage `replicas`: the other members of the topology started, then
/// the replica set or cluster formed (its lag sampled from here on).
async fn start_members(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    writer: &dyn CellWriter,
) -> Result<(), Stop> {
    let (port, record) = (r.port, &mut r.record);
    r.topology.start(work, ctx, port, record, writer).await?;
    let label = r
        .sampler
        .as_ref()
        .map(|s| s.phase_label())
        .unwrap_or_default();
    let record = &mut r.record;
    let lag = (r.epoch, label);
    r.topology
        .initiate(work, ctx, port, record, writer, lag)
        .await?;
    Ok(())
}

/// The stage `hog`: the memory hog started under its own ledger, leaving
/// `leave` of the host's memory, and the memory it locked recorded.
async fn start_hog(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    leave: Bytes,
) -> Result<(), Stop> {
    let mut ledger = Ledger::open(&ledger::default_root(), &format!("{}-hog", ctx.sandbox_id))?;
    let hog = Hog::start(&work.exe, leave, Some(&mut ledger), HOG_TIMEOUT).await?;
    r.record.fidelity.hog_locked_bytes = Some(hog.locked().as_u64());
    r.hog = Some((hog, ledger));
    Ok(())
}

/// Stop between stages once the run is interrupted.
fn check(ctx: &CellCtx) -> Result<(), Stop> {
    if ctx.stop.is_cancelled() {
        Err(Stop::Interrupted)
    } else {
        Ok(())
    }
}

/// The cell's folder under the run's work dir: short (`<work>/<run>/01`),
/// since engines put unix sockets in their data dir and a socket path may
/// not exceed 107 bytes.
fn cell_work_dir(ctx: &CellCtx) -> PathBuf {
    let nn = ctx.sandbox_id.rsplit('-').next().unwrap_or("cell");
    ctx.work_dir.join(nn)
}

/// Lifecycle stages that are benchcage's own work (not load, not phases).
pub(crate) const OWN_STAGES: &[&str] = &[
    "provision",
    "render",
    "restore",
    "snapshot",
    "start",
    "ready",
    "network",
    "replicas",
    "hog",
    "settle",
    "collect",
    "teardown",
];

/// Seconds a cell spent in benchcage's own stages: its overhead beside the
/// engine's load and the measured phases.
pub(crate) fn own_overhead_s(rec: &CellRecord) -> f64 {
    OWN_STAGES.iter().filter_map(|s| rec.stage_s.get(*s)).sum()
}

/// `02-workload-a-t4`: the phase file stem (also used for raw outputs).
pub fn stem(index: usize, name: &str, threads: u32) -> String {
    format!(
        "{:02}-{}-t{threads}",
        index + 1,
        crate::results::layout::file_safe(name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resized_cache_keeps_its_share_of_the_cap_in_whole_mib() {
        let r = CacheResize {
            statement: "SET GLOBAL rocksdb_block_cache_size = {cache_bytes}".into(),
            planned_cache: Bytes::from_mib(256),
            planned_cap: Bytes::from_gib(1),
        };
        assert_eq!(r.cache_for(Bytes::from_mib(240)), Bytes::from_mib(60));
        assert_eq!(r.cache_for(Bytes::from_gib(2)), Bytes::from_mib(512));
        assert_eq!(
            r.cache_for(Bytes::from_mib(2)),
            Bytes::from_mib(1),
            "never 0"
        );
        let s = crate::model::launch::fill_cache_resize(&r.statement, Bytes::from_mib(60));
        assert_eq!(s, "SET GLOBAL rocksdb_block_cache_size = 62914560");
        let wt =
            r#"{"setParameter": 1, "wiredTigerEngineRuntimeConfig": "cache_size={cache_mib}M"}"#;
        assert_eq!(
            crate::model::launch::fill_cache_resize(wt, Bytes::from_mib(60)),
            r#"{"setParameter": 1, "wiredTigerEngineRuntimeConfig": "cache_size=60M"}"#
        );
    }
}
