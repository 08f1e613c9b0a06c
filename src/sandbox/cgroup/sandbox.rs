//! [`CgroupSandbox`]: the [`Sandbox`] trait on cgroups v1 or v2.

use crate::model::{CellLimits, EngineLaunch, Program, SwapPolicy};
use crate::sandbox::cgroupfs::group::{self, Group, GroupLimits, TOP};
use crate::sandbox::cgroupfs::hierarchy::Hierarchy;
use crate::sandbox::cgroupfs::{io, remove};
use crate::sandbox::disk;
use crate::sandbox::ledger::{self, Ledger, Resource};
use crate::sandbox::process::{self, ClientPlacer, Launch};
use crate::sandbox::ready::LOG_TAIL_LINES;
use crate::sandbox::roots;
use crate::sandbox::stats::StatsReader;
use crate::sandbox::{
    EngineHandle, EngineId, EngineStatus, NetworkNamespace, Provisioned, Sandbox, SandboxError,
    StopReport, TeardownReport, check_run_id,
};
use crate::units::Bytes;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where a cgroup sandbox keeps its state.
#[derive(Debug, Clone)]
pub struct CgroupConfig {
    pub hierarchy: Hierarchy,
    /// Ledger folder (see [`ledger`]).
    pub ledger_root: PathBuf,
    /// A path on the disk that will hold data dirs: its block device gets the IO limits.
    pub data_root: PathBuf,
}

impl CgroupConfig {
    /// This host's hierarchy, the default ledger folder, data under `data_root`.
    pub fn detect(data_root: &Path) -> Result<CgroupConfig, SandboxError> {
        Ok(CgroupConfig {
            hierarchy: Hierarchy::detect()?,
            ledger_root: ledger::default_root(),
            data_root: data_root.to_path_buf(),
        })
    }
}

struct Engine {
    child: tokio::process::Child,
    status: EngineStatus,
}

/// A sandbox made of `benchcage/<run-id>/{server,client}` cgroups.
pub struct CgroupSandbox {
    run_id: String,
    cfg: CgroupConfig,
    ledger: Option<Ledger>,
    top: Group,
    run: Group,
    server: Group,
    client: Group,
    limits: Option<CellLimits>,
    engine: Option<Engine>,
    stats: StatsReader,
    /// The network namespace everything starts in (the kernel emulation
    /// of the cell's network), by name.
    netns: Option<String>,
}

fn is_not_found(e: &SandboxError) -> bool {
    match e {
        SandboxError::CgroupCreate { source, .. }
        | SandboxError::CgroupRead { source, .. }
        | SandboxError::CgroupWrite { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    }
}

impl CgroupSandbox {
    /// A sandbox for `run_id`; nothing is created until `provision`.
    pub fn new(run_id: &str, cfg: CgroupConfig) -> Result<CgroupSandbox, SandboxError> {
        check_run_id(run_id)?;
        let top = Group::at(&cfg.hierarchy, Path::new(TOP), "top");
        let run_rel = Path::new(TOP).join(run_id);
        let run = Group::at(&cfg.hierarchy, &run_rel, "run");
        let server = Group::at(&cfg.hierarchy, &run_rel.join("server"), "server");
        let client = Group::at(&cfg.hierarchy, &run_rel.join("client"), "client");
        let stats = StatsReader::new(server.dirs.clone(), client.dirs.clone());
        Ok(CgroupSandbox {
            run_id: run_id.to_string(),
            cfg,
            ledger: None,
            top,
            run,
            server,
            client,
            limits: None,
            engine: None,
            stats,
            netns: None,
        })
    }

    /// The server group (its directories, e.g. for the sampler).
    pub fn server_group(&self) -> &Group {
        &self.server
    }

    /// The client group.
    pub fn client_group(&self) -> &Group {
        &self.client
    }

    /// The ledger file of this sandbox.
    pub fn ledger_path(&self) -> PathBuf {
        ledger::path_for(&self.cfg.ledger_root, &self.run_id)
    }

    /// The open ledger, to record run-level resources (e.g. the hog).
    pub fn ledger_mut(&mut self) -> Result<&mut Ledger, SandboxError> {
        if self.ledger.is_none() {
            self.ledger = Some(Ledger::open(&self.cfg.ledger_root, &self.run_id)?);
        }
        Ok(self.ledger.as_mut().expect("opened above"))
    }

    /// The run's group and its server and client groups, recorded in
    /// one ledger append (one fsync) before any of them is made.
    fn record_groups(&mut self) -> Result<(), SandboxError> {
        let groups = [&self.run, &self.server, &self.client]
            .iter()
            .map(|g| Resource::Cgroup {
                dirs: g.dirs.clone(),
            })
            .collect();
        self.ledger_mut()?.record_all(groups)
    }

    fn create_parents(&mut self) -> Result<(), SandboxError> {
        // A concurrent teardown may remove the shared top folder between our
        // mkdirs and writes (ENOENT): creating it again is enough.
        let mut tries = 0;
        loop {
            let made =
                group::ensure_parent(&self.top).and_then(|()| group::ensure_parent(&self.run));
            match made {
                Err(e) if is_not_found(&e) && tries < 5 => tries += 1,
                other => return other,
            }
        }
    }

    fn make_group(
        &mut self,
        which: &str,
        limits: &GroupLimits,
        out: &mut BTreeMap<String, String>,
    ) -> Result<(), SandboxError> {
        let g = if which == "server" {
            self.server.clone()
        } else {
            self.client.clone()
        };
        g.create()?;
        g.apply(limits)?;
        g.read_back(limits, out)
    }

    /// Copy each kept config to where the engine reads it (a folder of
    /// the work dir, recorded before it is made), readable by the engine's
    /// user alone: the engine drops privileges and may not be able to
    /// reach the results folder the kept copy is in.
    fn install_configs(
        &mut self,
        launch: &EngineLaunch,
        user: Option<process::Identity>,
    ) -> Result<(), SandboxError> {
        let err = |path: &Path, detail: String| SandboxError::DataDir {
            path: path.to_path_buf(),
            detail,
        };
        for (kept, engine_path) in &launch.config_files {
            let Some(dir) = engine_path.parent().filter(|_| kept != engine_path) else {
                continue;
            };
            if !dir.exists() {
                // In the ledger already (`record_dirs`).
                roots::create_dirs(dir, 0o700).map_err(|e| err(dir, e.to_string()))?;
                if let Some(id) = user {
                    give_to(dir, id)?;
                }
            }
            std::fs::copy(kept, engine_path)
                .and_then(|_| {
                    std::fs::set_permissions(engine_path, std::fs::Permissions::from_mode(0o600))
                })
                .map_err(|e| {
                    err(
                        engine_path,
                        format!("copying config {}: {e}", kept.display()),
                    )
                })?;
            if let (Some(name), Some(id)) = (&launch.user, user) {
                give_to(engine_path, id)?;
                process::check_reachable(engine_path, name, id)?;
            }
        }
        Ok(())
    }

    /// The engine's data dir, in the ledger before it is made, owned by
    /// the engine's user.
    fn prepare_data_dir(
        &mut self,
        launch: &EngineLaunch,
        user: Option<process::Identity>,
    ) -> Result<(), SandboxError> {
        if !launch.data_dir.exists() {
            // In the ledger already (`record_dirs`).
            // Folders on the way get a mode the engine's user can traverse.
            roots::create_dirs(&launch.data_dir, roots::SEARCHABLE).map_err(|e| {
                SandboxError::DataDir {
                    path: launch.data_dir.clone(),
                    detail: e.to_string(),
                }
            })?;
        }
        self.attach_disk(&launch.data_dir)?;
        if let Some(id) = user {
            // postgres and mariadb refuse a data dir they do not own.
            give_to(&launch.data_dir, id)?;
        }
        Ok(())
    }

    /// The data dir and the config folders the launch needs that do not
    /// exist yet, recorded in one ledger append before any is made.
    fn record_dirs(&mut self, launch: &EngineLaunch) -> Result<(), SandboxError> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        let configs = launch
            .config_files
            .iter()
            .filter(|(kept, engine_path)| kept != engine_path)
            .filter_map(|(_, engine_path)| engine_path.parent());
        for dir in std::iter::once(launch.data_dir.as_path()).chain(configs) {
            if !dir.exists() && !dirs.iter().any(|d| d == dir) {
                dirs.push(dir.to_path_buf());
            }
        }
        let dirs = dirs
            .into_iter()
            .map(|path| Resource::DataDir { path })
            .collect();
        self.ledger_mut()?.record_all(dirs)
    }

    /// The file of the sandbox's network namespace, when it has one.
    fn netns_path(&self) -> Option<PathBuf> {
        self.netns.as_deref().map(crate::network::netns::path_of)
    }

    /// The data disk of the limits, mounted on `dir` (see [`disk::attach`]).
    fn attach_disk(&mut self, dir: &Path) -> Result<(), SandboxError> {
        let size = self.limits.as_ref().and_then(|l| l.disk);
        disk::attach(self.ledger_mut()?, dir, size)
    }

    fn engine_mut(&mut self) -> Result<&mut Engine, SandboxError> {
        self.engine.as_mut().ok_or(SandboxError::NoEngine)
    }
}

#[async_trait::async_trait]
impl Sandbox for CgroupSandbox {
    fn run_id(&self) -> &str {
        &self.run_id
    }

    async fn provision(&mut self, limits: &CellLimits) -> Result<Provisioned, SandboxError> {
        let wants_io = limits.io != Default::default();
        let dev = if wants_io {
            Some(io::data_device(
                &self.cfg.data_root,
                Path::new("/sys/dev/block"),
            )?)
        } else {
            None
        };
        self.record_groups()?;
        self.create_parents()?;
        let mut read_back = BTreeMap::new();
        let server = GroupLimits {
            cpus: Some(limits.server_cpus.clone()),
            memory: Some((limits.memory, limits.swap)),
            pids: Some(limits.pids),
            io: dev.map(|d| (d, limits.io.clone())),
        };
        self.make_group("server", &server, &mut read_back)?;
        let client = GroupLimits {
            cpus: Some(limits.client_cpus.clone()),
            ..GroupLimits::default()
        };
        self.make_group("client", &client, &mut read_back)?;
        self.limits = Some(limits.clone());
        read_back.insert("hierarchy".into(), self.cfg.hierarchy.version().into());
        Ok(Provisioned { read_back })
    }

    fn claim_data_dir(&mut self, dir: &Path) -> Result<(), SandboxError> {
        if !dir.exists() {
            self.ledger_mut()?.record(Resource::DataDir {
                path: dir.to_path_buf(),
            })?;
        }
        roots::create_dirs(dir, roots::SEARCHABLE).map_err(|e| SandboxError::DataDir {
            path: dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        self.attach_disk(dir)
    }

    async fn start_engine(&mut self, launch: &EngineLaunch) -> Result<EngineHandle, SandboxError> {
        let limits = self
            .limits
            .clone()
            .ok_or_else(|| SandboxError::Unsupported("start_engine before provision".into()))?;
        if let Program::Image(image) = &launch.program {
            return Err(SandboxError::Unsupported(format!(
                "image `{image}` needs the docker backend; the cgroup backend runs local binaries"
            )));
        }
        let user = launch
            .user
            .as_deref()
            .map(process::lookup_user)
            .transpose()?;
        if let (Some(name), Some(id)) = (&launch.user, user) {
            process::check_reachable(&launch.data_dir, name, id)?;
            if let Program::Binary(p) = &launch.program {
                process::check_program_reachable(p, name, id)?;
            }
        }
        self.record_dirs(launch)?;
        self.prepare_data_dir(launch, user)?;
        self.install_configs(launch, user)?;
        let procs = self.server.procs_files();
        let netns = self.netns_path();
        run_inits(launch, &procs, user, netns.as_deref()).await?;
        let l = Launch {
            argv: &launch.argv,
            env: &launch.env,
            procs: &procs,
            user,
            log_path: &launch.log_path,
            cwd: Some(&launch.data_dir),
            netns: netns.as_deref(),
        };
        let child = process::spawn(&l)?;
        let pid = child.id().unwrap_or(0);
        let start_time = ledger::process_start_time(pid as i32).unwrap_or(0);
        self.engine = Some(Engine {
            child,
            status: EngineStatus::Running,
        });
        // The pid is only known now; it is inside the ledgered cgroup already.
        self.ledger_mut()?.record(Resource::Process {
            pid: pid as i32,
            start_time,
            cgroup: ledger::process_cgroup(pid as i32),
        })?;
        let mut read_back = BTreeMap::new();
        process::read_back_cpus_allowed(pid, &limits.server_cpus, &mut read_back)?;
        Ok(EngineHandle {
            image: None,
            id: EngineId::Pid(pid),
            port: launch.port,
            log_path: launch.log_path.clone(),
            read_back,
        })
    }

    fn stats_reader(&self) -> StatsReader {
        self.stats.clone()
    }

    fn client_placer(&self) -> ClientPlacer {
        ClientPlacer::new(self.client.procs_files()).in_netns(self.netns_path())
    }

    async fn isolate_network(
        &mut self,
        network: &crate::network::Network,
    ) -> Result<NetworkNamespace, SandboxError> {
        use crate::network::netns;
        let name = netns::name_for(&self.run_id);
        let fail = |e: netns::NamespaceError| SandboxError::Netns {
            name: name.clone(),
            detail: e.0,
        };
        self.ledger_mut()?
            .record(Resource::Netns { name: name.clone() })?;
        self.netns = Some(name.clone());
        netns::create(&name).map_err(fail)?;
        netns::shape(&name, network).map_err(fail)?;
        let qdiscs = netns::qdiscs(&name).map_err(fail)?;
        Ok(NetworkNamespace {
            path: netns::path_of(&name),
            name,
            qdiscs,
            container: None,
        })
    }

    fn join_network(&mut self, ns: &NetworkNamespace) -> Result<(), SandboxError> {
        self.netns = Some(ns.name.clone());
        Ok(())
    }

    fn set_memory_cap(&self, cap: Bytes, swap: SwapPolicy) -> Result<(), SandboxError> {
        self.server.set_memory_cap(cap, swap)
    }

    fn drop_page_cache(&self) -> Result<(), SandboxError> {
        self.server.drop_page_cache()
    }

    fn server_pids(&self) -> Vec<u32> {
        self.server.pids()
    }

    async fn engine_status(&mut self) -> Result<EngineStatus, SandboxError> {
        let Some(e) = self.engine.as_mut() else {
            return Ok(EngineStatus::NotStarted);
        };
        if e.status == EngineStatus::Running
            && let Ok(Some(s)) = e.child.try_wait()
        {
            e.status = process::status_of(s);
        }
        Ok(e.status)
    }

    async fn stop_engine(&mut self, grace: Duration) -> Result<StopReport, SandboxError> {
        let dirs = self.server.dirs.clone();
        let e = self.engine_mut()?;
        let deadline = Instant::now() + grace + Duration::from_secs(10);
        let report = process::stop(&mut e.child, grace, &dirs, deadline).await;
        e.status = report.status;
        Ok(report)
    }

    async fn teardown(&mut self, budget: Duration) -> Result<TeardownReport, SandboxError> {
        let started = Instant::now();
        let deadline = started + budget;
        if self
            .engine
            .as_ref()
            .is_some_and(|e| e.status == EngineStatus::Running)
        {
            let grace = (budget / 4).min(Duration::from_secs(2));
            self.stop_engine(grace).await?;
        }
        let entries = match &self.ledger {
            Some(l) => l.entries()?,
            // Never opened: this sandbox created nothing. A ledger at that
            // path belongs to someone else (a live run with the same id)
            // and is not ours to read or reap (issue 15, D1).
            None => Vec::new(),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let reaped = ledger::reap_entries(&entries, left).await;
        let mut leaked = reaped.leaked;
        for e in &entries {
            if e.resource.exists() && !matches!(e.resource, Resource::Container { .. }) {
                let what = e.resource.describe();
                if !leaked.iter().any(|l| l.starts_with(&what)) {
                    leaked.push(format!("{what}: still present after teardown"));
                }
            }
        }
        if leaked.is_empty()
            && let Some(l) = self.ledger.take()
        {
            l.finish()?;
        }
        self.engine = None;
        self.limits = None;
        self.netns = None;
        Ok(TeardownReport {
            removed: reaped.removed,
            leaked,
            elapsed_ms: started.elapsed().as_millis() as u64,
        })
    }
}

/// Run the launch's `init` commands to their end, each inside the server
/// group (`procs`); a failed one is [`SandboxError::Init`] with the log tail.
async fn run_inits(
    launch: &EngineLaunch,
    procs: &[PathBuf],
    user: Option<process::Identity>,
    netns: Option<&Path>,
) -> Result<(), SandboxError> {
    for argv in &launch.init {
        let l = Launch {
            argv,
            env: &launch.env,
            procs,
            user,
            log_path: &launch.log_path,
            cwd: Some(&launch.data_dir),
            netns,
        };
        let status = process::run_to_end(&l).await?;
        if !status.success() {
            return Err(SandboxError::Init {
                argv: argv.join(" "),
                status: process::describe(process::status_of(status)),
                log_path: launch.log_path.clone(),
                log_tail: process::log_tail(&launch.log_path, LOG_TAIL_LINES),
            });
        }
    }
    Ok(())
}

/// Make `path` (a folder or file benchcage created) the engine user's.
fn give_to(path: &Path, id: process::Identity) -> Result<(), SandboxError> {
    std::os::unix::fs::chown(path, Some(id.uid), Some(id.gid)).map_err(|e| SandboxError::DataDir {
        path: path.to_path_buf(),
        detail: format!("chown to uid {}: {e}", id.uid),
    })
}

/// Every pid in the sandbox's server group (for tests and the sampler).
pub fn server_pids(sb: &CgroupSandbox) -> Vec<i32> {
    remove::pids_in(&sb.server.dirs).into_iter().collect()
}

/// Backstop only: a sandbox dropped without `teardown` (a bug, or a panic
/// unwinding past it) still has its ledger; reap it on a helper thread,
/// since async work cannot run inside `drop` on a runtime thread.
impl Drop for CgroupSandbox {
    fn drop(&mut self) {
        let Some(ledger) = self.ledger.take() else {
            return;
        };
        let Ok(entries) = ledger.entries() else {
            return;
        };
        if entries.is_empty() {
            let _ = ledger.finish();
            return;
        }
        if let Some(e) = self.engine.as_mut() {
            let _ = e.child.start_kill();
        }
        let reaped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            let report = rt.block_on(ledger::reap_entries(&entries, Duration::from_secs(20)));
            Some(report.leaked.is_empty())
        })
        .join();
        if let Ok(Some(true)) = reaped {
            let _ = ledger.finish();
        }
    }
}
