//! One `benchcage run` session, from a command line to a finished run:
//! plan (refusing what cannot run), fetch what the cache lacks, make the
//! tools' environments, reap what dead runs left, turn each planned cell
//! into its work, run the matrix (here or as Slurm jobs), then index the
//! run in the history and write its report. `commands::run` parses the
//! flags, calls [`run`] and maps the [`Outcome`] to an exit code.

use crate::cli::{On, RunArgs, ScenarioArgs};
use crate::host::HostFacts;
use crate::model::Backend;
use crate::plan::{CommandPlan, Plan, VersionSource, plan_command_line};
use crate::report;
use crate::results::{history, layout};
use crate::run::adapt;
use crate::run::cell::CellWork;
use crate::run::cluster::{self, SlurmOptions};
use crate::run::facts::ProbeFacts;
use crate::run::matrix::{self, MatrixOutcome, PrepareFn, RunInfo, SandboxFactory};
use crate::run::provenance;
use crate::run::signals::Interrupts;
use crate::sandbox::cgroup::sandbox::{CgroupConfig, CgroupSandbox};
use crate::sandbox::cgroupfs::Hierarchy;
use crate::sandbox::docker::DockerSandbox;
use crate::sandbox::docker::client::DockerClient;
use crate::sandbox::docker::image::{PullPolicy, ensure_image};
use crate::sandbox::{Sandbox, ledger, reap};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a session ended.
pub(crate) enum Outcome {
    /// The matrix ran, here or on Slurm.
    Matrix {
        out: MatrixOutcome,
        /// How many cells the plan had.
        planned: usize,
        /// The command line that resumes the run (without `--resume`).
        command_line: Vec<String>,
        /// The run's HTML report, when it could be written.
        report: Option<PathBuf>,
    },
    /// One cell of a cluster run, on its node (`--slurm-cell`).
    Cell(CellEnd),
}

/// How the one cell of a `--slurm-cell` job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CellEnd {
    Finished,
    Failed,
    Interrupted,
}

/// Run the session `args` asks for, in the project under `home`.
pub(crate) async fn run(home: &Path, args: &RunArgs) -> anyhow::Result<Outcome> {
    if let Some(target) = &args.slurm_cell {
        return run_cell_job(home, args, target).await.map(Outcome::Cell);
    }
    let interrupts = Interrupts::install().context("installing the Ctrl-C handler")?;
    let host = HostFacts::probe();
    let cp = plan_or_refuse(home, args, &host)?;
    fetch_pending(&cp, args.fetch, &interrupts).await?;
    let plan = &cp.plan;
    make_tool_envs(plan, args.fetch).await?;
    let results_root = results_root(home, args)?;
    let remote = plan.cells.iter().find(|c| !c.limits.client_node.is_same());
    if args.on == On::Slurm {
        crate::slurm::check_cluster()
            .await
            .map_err(crate::error::bad_input)?;
        if let Some(c) = remote {
            check_two_nodes(&c.id, args.partition.as_deref()).await?;
        }
    } else if let Some(c) = remote {
        return Err(crate::error::bad_input(format!(
            "cell {} puts its client on another node (client.node: other), and this run has one machine; run it with `--on slurm` on a cluster whose partition has two nodes or more, or `--set client.node=same`",
            c.id
        )));
    } else {
        reap_leftovers().await?;
    }
    let cells = cell_works(&cp, snapshots_on(args))?;
    let info = RunInfo {
        overrides: cp.overrides.iter().cloned().collect(),
        host: host_info(&host),
        command_line: command_line(home, args, &results_root),
        ..provenance_of(home, &cp)
    };
    let pull = pull_policy(args);
    let out = match args.on {
        On::Local => {
            matrix::run_matrix(
                info.clone(),
                cells,
                &results_root,
                args.resume.as_deref(),
                sandbox_factory(pull),
                image_preparer(pull),
                interrupts,
            )
            .await?
        }
        On::Slurm => {
            let opts = SlurmOptions {
                partition: args.partition.clone(),
                account: args.account.clone(),
                max_parallel: args.max_parallel.unwrap_or(0),
                worker_argv: job_argv(home, args, &results_root)?,
                chdir: std::path::absolute(home).context("resolving --home")?,
            };
            let resume = args.resume.as_deref();
            cluster::run_on_slurm(info.clone(), cells, &results_root, resume, opts, interrupts)
                .await?
        }
    };
    // Decided before the history and the report, which both show them.
    crate::claims::text::decide(&out.dir, &plan.claims);
    let report = index_and_report(&out.dir, &results_root.join(layout::HISTORY_FILE));
    Ok(Outcome::Matrix {
        out,
        planned: plan.cells.len(),
        command_line: info.command_line,
        report,
    })
}

/// The plan of the command line, its unused-spec warnings printed; bad
/// input when it refuses or has no cell.
fn plan_or_refuse(home: &Path, args: &RunArgs, host: &HostFacts) -> anyhow::Result<CommandPlan> {
    let cp = command_plan(home, &args.target, host)?;
    if cp.plan.cells.is_empty() {
        return Err(crate::error::bad_input(format!(
            "scenario `{}` has no cell matching --env/--only; `benchcage plan {}` lists them",
            cp.plan.scenario, args.target.scenario
        )));
    }
    for c in cp.plan.cells.iter().filter(|c| c.members.len() > 1) {
        let why = match (&c.topology, &c.replication) {
            (crate::model::Topology::ReplicaSet { .. }, Some(_)) => continue,
            (crate::model::Topology::ReplicaSet { .. }, None) => format!(
                "engine {} declares no `replication:` (how a secondary joins its primary)",
                c.engine
            ),
            (crate::model::Topology::Sharded { .. }, _) if c.sharding.is_some() => continue,
            _ => format!(
                "engine {} declares no `sharding:` (how its members form a sharded cluster)",
                c.engine
            ),
        };
        return Err(crate::error::bad_input(format!(
            "cell {}: `plan` lays out its {} members, but {why}; run it with `topology: standalone`",
            c.id,
            c.topology.key()
        )));
    }
    Ok(cp)
}

/// The results folder, absolute: engines run with their data dir as
/// working directory and read their configs from the cell folder.
fn results_root(home: &Path, args: &RunArgs) -> anyhow::Result<PathBuf> {
    std::path::absolute(
        args.results
            .clone()
            .unwrap_or_else(|| layout::results_root(home)),
    )
    .context("resolving the results folder")
}

/// Leftovers of runs that died (SIGKILL, power cut) go first, so this run
/// starts from a clean machine.
async fn reap_leftovers() -> anyhow::Result<()> {
    let state_dir = ledger::default_root();
    crate::sandbox::roots::check_state_dir(&state_dir)
        .map_err(|e| crate::error::bad_input(e.to_string()))?;
    // The same reaper as `cleanup`: containers too (issue 15, D6).
    match reap::reap_dead_runs(&state_dir, false).await {
        Ok(dead) => say_reaped(&dead),
        Err(e) => eprintln!("warning: checking for leftovers of dead runs: {e}"),
    }
    Ok(())
}

/// What the run loop needs of each planned cell, its configs checked and
/// its expected version and package filled in.
fn cell_works(cp: &CommandPlan, snapshots: bool) -> anyhow::Result<Vec<CellWork>> {
    let plan = &cp.plan;
    let exe = std::env::current_exe().context("finding the benchcage binary")?;
    let cache = if snapshots {
        Some(crate::snapshot::store::Cache::from_env().map_err(crate::error::bad_input)?)
    } else {
        None
    };
    let later = adapt::later_room(&plan.cells);
    let cells: Vec<CellWork> = plan
        .cells
        .iter()
        .zip(later)
        .map(|(c, later)| {
            let mut work = adapt::cell_work(
                c,
                exe.clone(),
                Arc::new(ProbeFacts {
                    probe: c.readiness.probe.clone(),
                    facts: c.facts.clone(),
                    digest_sql: c.snapshot.as_ref().and_then(|s| s.digest_sql.clone()),
                }),
                cache.as_ref(),
            );
            if let Some(sw) = &mut work.snapshot {
                sw.later = later;
            }
            work
        })
        .collect();
    for c in &cells {
        adapt::check_configs(c).map_err(|e| crate::error::bad_input(e.0))?;
    }
    Ok(with_versions(cp, cells))
}

/// The run's provenance: scenario, the hash of every spec file it read,
/// benchcage's version and git revision (overrides, host and command line
/// left empty).
fn provenance_of(home: &Path, cp: &CommandPlan) -> RunInfo {
    let plan = &cp.plan;
    let scenario_file = resolve(home, cp.scenario_file());
    let mut spec_files: Vec<PathBuf> = vec![scenario_file.clone()];
    for c in &plan.cells {
        spec_files.extend(c.spec_files.iter().map(|f| resolve(home, f)));
    }
    spec_files.sort();
    spec_files.dedup();
    RunInfo {
        scenario: plan.scenario.clone(),
        scenario_hash: provenance::file_hash(&scenario_file).unwrap_or_default(),
        spec_hashes: provenance::spec_hashes(home, spec_files.iter().map(PathBuf::as_path)),
        benchcage_version: provenance::version(),
        git_rev: provenance::git_rev(home),
        ..RunInfo::default()
    }
}

/// Each cell's sandbox: a cgroup or a container, by its backend.
fn sandbox_factory(pull: PullPolicy) -> SandboxFactory {
    let work_root = matrix::work_root();
    Box::new(move |cell: &CellWork, id: &str| {
        let sb: Box<dyn Sandbox + Sync> = match cell.backend {
            Backend::Cgroup => {
                crate::sandbox::roots::create_dirs(&work_root, crate::sandbox::roots::SEARCHABLE)?;
                Box::new(CgroupSandbox::new(id, CgroupConfig::detect(&work_root)?)?)
            }
            Backend::Docker => Box::new(
                DockerSandbox::new(id, &cell.key, Hierarchy::detect()?, &ledger::default_root())?
                    .with_pull(pull)
                    .with_network_image(cell.image.clone()),
            ),
        };
        Ok(sb)
    })
}

/// Before a docker cell: its image, pulled under `pull`.
fn image_preparer(pull: PullPolicy) -> PrepareFn {
    Box::new(move |cell: &CellWork| {
        Box::pin(async move {
            if let (Backend::Docker, Some(image)) = (cell.backend, &cell.image) {
                let client = DockerClient::connect().await?;
                ensure_image(&client, image, pull).await?;
            }
            Ok(())
        })
    })
}

/// The finished run indexed in the history `db` and its HTML report
/// written (its path returned); a failure of either is a warning, the
/// results stand.
fn index_and_report(run_dir: &Path, db: &Path) -> Option<PathBuf> {
    match layout::load_run(run_dir) {
        Ok(data) => {
            if let Err(e) = history::index_run(db, &data) {
                eprintln!(
                    "warning: the run is not in the history ({e}); its results stand. Once {} is writable, index it with `benchcage history --index {}`",
                    db.display(),
                    data.run.run_id
                );
            }
            match report::write_run_report(data, db, report::Format::Html, None) {
                Ok(path) => Some(path),
                Err(e) => {
                    eprintln!("warning: writing the HTML report: {e}");
                    None
                }
            }
        }
        Err(e) => {
            eprintln!("warning: reading the run back for the history: {e}");
            None
        }
    }
}

/// One line for what the start of the run reaped, and a warning for every
/// ledger or entry it did not trust (`benchcage cleanup` lists them).
fn say_reaped(dead: &reap::DeadRuns) {
    let (kept, done): (Vec<_>, Vec<_>) = dead
        .runs
        .iter()
        .partition(|r| r.unreadable.is_some() || !r.refused.is_empty());
    if !done.is_empty() {
        eprintln!("cleaned up what {} dead run(s) left behind", done.len());
    }
    if !dead.containers.removed.is_empty() {
        eprintln!(
            "removed {} container(s) of dead runs",
            dead.containers.removed.len()
        );
    }
    for r in kept {
        eprintln!(
            "warning: ledger {} was not fully acted on (`benchcage cleanup --dry-run` says why)",
            r.ledger.display()
        );
    }
    if dead.leaked() > 0 {
        eprintln!(
            "warning: {} leftover(s) of dead runs could not be removed; `benchcage cleanup` lists them",
            dead.leaked()
        );
    }
}

/// What each cell's server must report as its version, and the package
/// its binary came from (a fetched version).
fn with_versions(cp: &CommandPlan, mut cells: Vec<CellWork>) -> Vec<CellWork> {
    let root = crate::fetch::cache::root();
    for c in &mut cells {
        let Some(VersionSource {
            reports_own_version,
            source,
        }) = cp.version_source(&c.engine, &c.version)
        else {
            continue;
        };
        if reports_own_version {
            c.expect_version = Some(c.version.clone());
        }
        if c.backend == Backend::Cgroup
            && let Some(s) = source.filter(crate::fetch::Source::cached)
            && let Some(i) = crate::fetch::cache::installed(&root, &c.engine, &c.version, &s)
        {
            c.package = Some(i.record.package());
        }
    }
    cells
}

/// The Python environments the plan's tools run in: made with `--fetch`,
/// else bad input naming the first missing one, before anything is created.
async fn make_tool_envs(plan: &Plan, fetch: bool) -> anyhow::Result<()> {
    if !fetch {
        return crate::plan::describe::missing_tool_envs(plan);
    }
    for e in crate::plan::describe::tool_envs(plan) {
        if e.record().is_some() {
            continue;
        }
        let started = std::time::Instant::now();
        let dir = e.dir.clone();
        let r = tokio::task::spawn_blocking(move || e.make())
            .await?
            .with_context(|| format!("making {}", dir.display()))?;
        eprintln!(
            "made {} ({}) in {:.1}s",
            dir.display(),
            r.packages
                .iter()
                .map(|(p, v)| format!("{p} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The engine versions the cells need and the cache lacks: fetched with
/// `--fetch`, else bad input naming them, before anything is created.
async fn fetch_pending(
    cp: &CommandPlan,
    fetch: bool,
    interrupts: &Interrupts,
) -> anyhow::Result<()> {
    let root = crate::fetch::cache::root();
    let pending = cp.pending_fetches(&root);
    if pending.is_empty() {
        return Ok(());
    }
    if !fetch {
        let labels: Vec<String> = pending.iter().map(|p| p.label()).collect();
        return Err(crate::error::bad_input(format!(
            "{} not in the cache ({}): run with --fetch, or first `benchcage fetch {}`",
            labels.join(", "),
            root.display(),
            labels.join(" ")
        )));
    }
    for p in pending {
        let root = root.clone();
        let (e, v, s, b) = (
            p.engine.clone(),
            p.version.clone(),
            p.source.clone(),
            p.binary.clone(),
        );
        let stop = interrupts.stop.clone();
        let f = tokio::task::spawn_blocking(move || {
            crate::fetch::fetch(&root, &e, &v, &s, b.as_deref(), &stop)
        })
        .await?
        .with_context(|| format!("fetching {}", p.label()))?;
        eprintln!(
            "fetched {} ({}) in {:.1}s",
            p.label(),
            p.source.describe(),
            f.seconds
        );
    }
    Ok(())
}

/// This run's command line without `--resume`, for the resume hint: the
/// home (when it is not the current folder), the scenario (absolute when
/// it is a file under the current folder), `--env`, `--only`, every
/// `--set` in order, and the results folder when one was given.
fn command_line(home: &Path, args: &RunArgs, results_root: &Path) -> Vec<String> {
    let text = |p: &Path| p.to_string_lossy().into_owned();
    let mut argv = vec!["benchcage".to_string()];
    let abs_home = std::path::absolute(home).unwrap_or_else(|_| home.to_path_buf());
    let cwd = std::env::current_dir().ok();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if !cwd.as_deref().is_some_and(|c| same(c, &abs_home)) {
        argv.extend(["--home".into(), text(&abs_home)]);
    }
    argv.push("run".into());
    let scenario = Path::new(&args.target.scenario);
    argv.push(match std::path::absolute(scenario) {
        Ok(abs) if scenario.is_file() => text(&abs),
        _ => args.target.scenario.clone(),
    });
    for (flag, value) in [("--env", &args.target.env), ("--only", &args.target.only)] {
        if let Some(v) = value {
            argv.extend([flag.to_string(), v.clone()]);
        }
    }
    for kv in &args.target.set {
        argv.extend(["--set".to_string(), kv.clone()]);
    }
    if args.results.is_some() {
        argv.extend(["--results".into(), text(results_root)]);
    }
    if args.fetch {
        argv.push("--fetch".into());
    }
    if args.pull == crate::cli::Pull::Never {
        argv.extend(["--pull".into(), "never".into()]);
    }
    if args.no_snapshots {
        argv.push("--no-snapshots".into());
    }
    if args.on == On::Slurm {
        argv.extend(["--on".into(), "slurm".into()]);
        for (flag, value) in [
            ("--partition", &args.partition),
            ("--account", &args.account),
        ] {
            if let Some(v) = value {
                argv.extend([flag.to_string(), v.clone()]);
            }
        }
        if let Some(n) = args.max_parallel {
            argv.extend(["--max-parallel".into(), n.to_string()]);
        }
    }
    argv
}

/// What a Slurm job runs for a cell (before `--slurm-cell`): this
/// binary, the home and results folder absolute (the nodes share them),
/// and the run's flags but those of the submitter.
fn job_argv(home: &Path, args: &RunArgs, results_root: &Path) -> anyhow::Result<Vec<String>> {
    let local = RunArgs {
        on: On::Local,
        partition: None,
        account: None,
        max_parallel: None,
        slurm_cell: None,
        results: Some(results_root.to_path_buf()),
        resume: None,
        target: crate::cli::ScenarioArgs {
            scenario: args.target.scenario.clone(),
            env: args.target.env.clone(),
            only: args.target.only.clone(),
            set: args.target.set.clone(),
        },
        ..*args
    };
    let mut argv = command_line(home, &local, results_root);
    let exe = std::env::current_exe().context("finding the benchcage binary")?;
    argv[0] = exe.to_string_lossy().into_owned();
    if argv.get(1).map(String::as_str) != Some("--home") {
        let abs = std::path::absolute(home).context("resolving --home")?;
        argv.splice(
            1..1,
            ["--home".to_string(), abs.to_string_lossy().into_owned()],
        );
    }
    Ok(argv)
}

/// Snapshots unless `--no-snapshots` or BENCHCAGE_SNAPSHOTS=off.
fn snapshots_on(args: &RunArgs) -> bool {
    !args.no_snapshots && !crate::snapshot::store::off_by_env()
}

/// One cell of a cluster run, on its node (`--slurm-cell RUN/KEY`): the
/// node and the job's allocation recorded, the cell checked to fit in it,
/// then run into the submitter's run folder.
async fn run_cell_job(home: &Path, args: &RunArgs, target: &str) -> anyhow::Result<CellEnd> {
    let host = HostFacts::probe();
    let mut node = crate::run::node::slurm_node(&host_info(&host)).await;
    let interrupts = Interrupts::install().context("installing the Ctrl-C handler")?;
    let Some((run_id, key)) = target.split_once('/') else {
        return Err(crate::error::bad_input(format!(
            "--slurm-cell {target}: expected RUN/KEY"
        )));
    };
    let mut cp = plan_or_refuse(home, args, &host)?;
    fetch_pending(&cp, args.fetch, &interrupts).await?;
    make_tool_envs(&cp.plan, args.fetch).await?;
    let results_root = results_root(home, args)?;
    reap_leftovers().await?;
    let placed = place_remote_client(&mut cp.plan, key, &mut node).await;
    let mut cells = cell_works(&cp, snapshots_on(args))?;
    let Some(index) = cells.iter().position(|c| c.key == key) else {
        return Err(crate::error::bad_input(format!(
            "--slurm-cell {target}: node {} plans no cell {key}; its specs or its benchcage differ from the submitter's (a shared project folder keeps them equal)",
            node.name
        )));
    };
    cells[index].node = Some(node);
    let cell = &cells[index];
    if let Some(why) = placed.err().or_else(|| {
        cell.node
            .as_ref()
            .and_then(|n| crate::run::node::outside_allocation(cell, n))
    }) {
        let paths = crate::results::layout::RunPaths::new(&results_root, run_id);
        let dir = paths.cell(key).dir;
        matrix::set_aside_attempt(&paths.dir, &dir)?;
        matrix::failed_before_start(cell, &dir, &why)?;
        eprintln!("cell {key} FAILED: {why}");
        return Ok(CellEnd::Failed);
    }
    let pull = pull_policy(args);
    let out = matrix::run_one_cell(
        &cells,
        index,
        &results_root,
        run_id,
        sandbox_factory(pull),
        image_preparer(pull),
        interrupts,
    )
    .await?;
    Ok(if out.interrupted {
        CellEnd::Interrupted
    } else if out.failed > 0 {
        CellEnd::Failed
    } else {
        CellEnd::Finished
    })
}

/// A cell whose client goes on another node (labelled `label`) needs
/// two nodes of `partition`: bad input before any job when it has fewer.
async fn check_two_nodes(label: &str, partition: Option<&str>) -> anyhow::Result<()> {
    let nodes = crate::slurm::partition_nodes(partition)
        .await
        .map_err(|e| crate::error::bad_input(format!("{e:#}")))?;
    if nodes >= 2 {
        return Ok(());
    }
    let name = partition.map_or("the default partition".to_string(), |p| {
        format!("partition {p}")
    });
    Err(crate::error::bad_input(format!(
        "cell {label} puts its client on another node (client.node: other): its job needs two nodes, and {name} has {nodes}; name a partition of two nodes or more with --partition"
    )))
}

/// The planned cell `key`, if its client goes on another node: placed on
/// the allocation's other node, its server listening on this node's
/// address, and the placement recorded on `node`. Why it cannot be, if so.
async fn place_remote_client(
    plan: &mut Plan,
    key: &str,
    node: &mut crate::results::model::NodeRecord,
) -> Result<(), String> {
    let Some(cell) = plan.cells.iter_mut().find(|c| adapt::keys_of(c).0 == key) else {
        return Ok(());
    };
    if cell.limits.client_node.is_same() {
        return Ok(());
    }
    let remote = crate::run::node::remote_client(node).await?;
    cell.place_client(remote.clone());
    node.client = Some(remote);
    Ok(())
}

fn pull_policy(args: &RunArgs) -> PullPolicy {
    match args.pull {
        crate::cli::Pull::Missing => PullPolicy::default(),
        crate::cli::Pull::Never => PullPolicy::Never,
    }
}

fn resolve(home: &Path, file: &str) -> PathBuf {
    let p = PathBuf::from(file);
    if p.is_absolute() { p } else { home.join(p) }
}

/// The host record with the cgroup layout filled in.
fn host_info(host: &HostFacts) -> crate::results::model::HostInfo {
    let mut info = host.info();
    info.cgroup_version = host.cgroup.to_string();
    info.class = crate::results::model::hardware_class(&info);
    info
}

/// The plan of the scenario a command line names, on `host`; the specs
/// it does not use but that have problems are warned about.
pub fn command_plan(
    home: &Path,
    target: &ScenarioArgs,
    host: &HostFacts,
) -> anyhow::Result<CommandPlan> {
    let cp = plan_command_line(
        home,
        &target.scenario,
        &target.set,
        target.env.as_deref(),
        target.only.as_deref(),
        host,
    )?;
    // Problems of specs the scenario does not use, on stderr: they stop
    // nothing, and `benchcage validate` lists them.
    for d in cp.warnings.iter() {
        eprintln!("warning: {d}");
    }
    if !cp.warnings.is_empty() {
        eprintln!(
            "warning: these specs are not used by this scenario; `benchcage validate` checks them all"
        );
    }
    if let Some(msg) = shared_key(&cp.plan) {
        return Err(crate::error::bad_input(format!(
            "{}: {msg}",
            cp.scenario_file()
        )));
    }
    Ok(cp)
}

/// Two cells of `plan` with one cell key (the same engine, version,
/// configs, limits and workload under two matrix entries, whatever their
/// labels) would run into one folder: the first such pair, in words.
fn shared_key(plan: &Plan) -> Option<String> {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for c in &plan.cells {
        let (key, _) = crate::run::adapt::keys_of(c);
        if let Some(first) = seen.insert(key.clone(), c.id.as_str()) {
            let entry = |id: &str| id.split('/').next().unwrap_or(id).to_string();
            return Some(format!(
                "the matrix entries `{}` and `{}` plan the same cell (`{first}` and `{}` share the cell key {key}: the same engine, version, configs, limits and workload); \
                 remove one, give one other knobs, or use `repetitions:` to run it more than once",
                entry(first),
                entry(&c.id),
                c.id
            ));
        }
    }
    None
}
