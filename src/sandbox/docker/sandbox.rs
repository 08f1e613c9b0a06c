//! [`DockerSandbox`]: one cell's engine in a container (host networking,
//! or the namespace of a holder container for the kernel emulation of the
//! cell's network; engine as PID 1, limits set by the daemon and read back
//! from the container's cgroup), the load generator in a host cgroup of
//! its own.

use super::DockerBackendError;
use super::cgroups;
use super::client::DockerClient;
use super::image;
use super::reap::{Removal, remove_fully};
use super::spec::{self, Owner, Role};
use crate::model::{CellLimits, EngineLaunch, ImageRecord, Program, SwapPolicy};
use crate::sandbox::cgroupfs::group::{self, Group, GroupLimits, TOP};
use crate::sandbox::cgroupfs::hierarchy::Hierarchy;
use crate::sandbox::cgroupfs::{io, memory};
use crate::sandbox::disk;
use crate::sandbox::ledger::{self, Ledger, Resource};
use crate::sandbox::process::{self, ClientPlacer};
use crate::sandbox::ready::LOG_TAIL_LINES;
use crate::sandbox::stats::StatsReader;
use crate::sandbox::{
    EngineHandle, EngineId, EngineStatus, NetworkNamespace, Provisioned, Sandbox, SandboxError,
    StopOutcome, StopReport, TeardownReport, check_run_id,
};
use crate::units::Bytes;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

const SYS_DEV_BLOCK: &str = "/sys/dev/block";

/// The engine container once started.
#[derive(Debug)]
struct Engine {
    name: String,
    id: String,
    /// The container's cgroup directories (controller -> dir).
    dirs: BTreeMap<String, PathBuf>,
    logs: Option<JoinHandle<()>>,
    /// Reaped by `stop_engine`: no longer running, status known.
    stopped: Option<EngineStatus>,
}

/// A Docker sandbox for one cell of a run: the engine in containers
/// labelled with run, cell and owner; the load generator in the host group
/// `benchcage/<run-id>/client` (the same place the cgroup backend uses).
#[derive(Debug)]
pub struct DockerSandbox {
    owner: Owner,
    ledger_root: PathBuf,
    ledger: Option<Ledger>,
    client: Option<DockerClient>,
    hierarchy: Hierarchy,
    limits: Option<CellLimits>,
    top: Group,
    run: Group,
    client_group: Group,
    /// Container names created so far, in creation order (ledger order).
    containers: Vec<String>,
    engine: Option<Engine>,
    stats: StatsReader,
    pull: image::PullPolicy,
    /// The image the holder of the cell's network namespace runs (the
    /// cell's own image; the kernel emulation of its network).
    network_image: Option<String>,
    /// The namespace every container of the sandbox joins (the kernel
    /// emulation of the cell's network), its own or another sandbox's.
    netns: Option<NetworkNamespace>,
}

fn backend(e: impl Into<DockerBackendError>) -> SandboxError {
    SandboxError::Docker(e.into())
}

/// `Exited` from a container exit code: 128+N is signal N (Docker's convention for PID 1).
fn exited(code: Option<i64>) -> EngineStatus {
    match code {
        Some(c) if (129..=192).contains(&c) => EngineStatus::Exited {
            code: None,
            signal: Some((c - 128) as i32),
        },
        c => EngineStatus::Exited {
            code: c.map(|c| c as i32),
            signal: None,
        },
    }
}

impl DockerSandbox {
    /// A sandbox for `cell_id` of `run_id`, recording what it creates in the
    /// run's ledger under `ledger_root` (see [`crate::sandbox::ledger`]);
    /// nothing is created until `provision`.
    pub fn new(
        run_id: &str,
        cell_id: &str,
        hierarchy: Hierarchy,
        ledger_root: &Path,
    ) -> Result<DockerSandbox, SandboxError> {
        check_run_id(run_id)?;
        let run_rel = Path::new(TOP).join(run_id);
        let client_group = Group::at(&hierarchy, &run_rel.join("client"), "client");
        Ok(DockerSandbox {
            owner: Owner::this_process(run_id, cell_id),
            ledger_root: ledger_root.to_path_buf(),
            ledger: None,
            client: None,
            top: Group::at(&hierarchy, Path::new(TOP), "top"),
            run: Group::at(&hierarchy, &run_rel, "run"),
            stats: StatsReader::new(BTreeMap::new(), client_group.dirs.clone()),
            client_group,
            hierarchy,
            limits: None,
            containers: Vec::new(),
            engine: None,
            pull: image::PullPolicy::default(),
            network_image: None,
            netns: None,
        })
    }

    /// Bound the wait for a registry's first answer when an image is missing.
    pub fn with_pull_timeout(mut self, first_answer: Duration) -> Self {
        self.pull = image::PullPolicy::Missing(first_answer);
        self
    }

    /// Whether a missing image is pulled (`run --pull`).
    pub fn with_pull(mut self, policy: image::PullPolicy) -> Self {
        self.pull = policy;
        self
    }

    /// The image the holder of the cell's network namespace runs, should
    /// the cell's network be emulated by the kernel: the cell's own image
    /// (which has `sh` and `sleep`).
    pub fn with_network_image(mut self, image: Option<String>) -> Self {
        self.network_image = image;
        self
    }

    /// The container whose network namespace the sandbox's containers
    /// join, if any.
    fn network_holder(&self) -> Option<&str> {
        self.netns.as_ref().and_then(|n| n.container.as_deref())
    }

    /// The ledger file of this sandbox.
    pub fn ledger_path(&self) -> PathBuf {
        ledger::path_for(&self.ledger_root, &self.owner.run_id)
    }

    /// The engine container's id, once started.
    pub fn container_id(&self) -> Option<&str> {
        self.engine.as_ref().map(|e| e.id.as_str())
    }

    /// The engine container's cgroup directories, once started.
    pub fn container_cgroup_dirs(&self) -> Option<&BTreeMap<String, PathBuf>> {
        self.engine.as_ref().map(|e| &e.dirs)
    }

    /// The engine container's cgroup, once it runs.
    fn server_group(&self) -> Option<Group> {
        self.engine
            .as_ref()
            .filter(|e| !e.dirs.is_empty())
            .map(|e| Group {
                label: "server".into(),
                dirs: e.dirs.clone(),
            })
    }

    fn client(&self) -> Result<&DockerClient, SandboxError> {
        self.client
            .as_ref()
            .ok_or_else(|| backend(DockerBackendError::NotProvisioned))
    }

    /// The open ledger, to record run-level resources.
    pub fn ledger_mut(&mut self) -> Result<&mut Ledger, SandboxError> {
        if self.ledger.is_none() {
            self.ledger = Some(Ledger::open(&self.ledger_root, &self.owner.run_id)?);
        }
        Ok(self.ledger.as_mut().expect("opened above"))
    }

    /// Ledger entry first, then `docker create`. A create that returned
    /// warnings is removed again and reported.
    async fn create(
        &mut self,
        spec: &super::client::ContainerSpec,
    ) -> Result<String, SandboxError> {
        self.ledger_mut()?.record(Resource::Container {
            id: spec.name.clone(),
        })?;
        if !self.containers.contains(&spec.name) {
            self.containers.push(spec.name.clone());
        }
        let client = self.client()?.clone();
        match client.create(spec).await {
            Ok(id) => Ok(id),
            Err(e) => {
                if let super::client::DockerError::CreateWarnings { id, .. } = &e {
                    let _ = client.remove(id).await;
                }
                Err(backend(e))
            }
        }
    }

    /// Append the container's output to `log_path` until it stops.
    fn stream_logs(&self, id: &str, log_path: &Path) -> Result<JoinHandle<()>, SandboxError> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(|e| SandboxError::DataDir {
                path: log_path.to_path_buf(),
                detail: format!("opening the engine log: {e}"),
            })?;
        let mut stream = Box::pin(self.client()?.logs(id));
        Ok(tokio::spawn(async move {
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(bytes) => {
                        let _ = file.write_all(&bytes);
                    }
                    Err(e) => {
                        let _ = writeln!(file, "benchcage: log stream ended: {e}");
                        break;
                    }
                }
            }
            let _ = file.flush();
        }))
    }

    /// Run one init command in its own container under the cell's limits
    /// and wait for it; a non-zero exit is [`SandboxError::Init`].
    async fn run_init(
        &mut self,
        role: Role<'_>,
        image: &str,
        launch: &EngineLaunch,
        io_device: Option<&Path>,
    ) -> Result<(), SandboxError> {
        let limits = self
            .limits
            .clone()
            .ok_or_else(|| backend(DockerBackendError::NotProvisioned))?;
        let holder = self.network_holder();
        let spec = spec::container_spec(
            &self.owner,
            &role,
            image,
            (launch, holder),
            &limits,
            io_device,
        )
        .map_err(backend)?;
        let id = self.create(&spec).await?;
        let client = self.client()?.clone();
        client.start(&id).await.map_err(backend)?;
        // After start: the daemon ends a follow on a container not yet running.
        let logs = self.stream_logs(&id, &launch.log_path)?;
        let code = client.wait(&id).await.map_err(backend)?;
        let _ = tokio::time::timeout(Duration::from_secs(5), logs).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        remove_fully(&client, &id, Duration::from_secs(1), deadline)
            .await
            .map_err(backend)?;
        if code != 0 {
            return Err(SandboxError::Init {
                argv: role.argv.join(" "),
                status: format!("exit code {code}"),
                log_path: launch.log_path.clone(),
                log_tail: process::log_tail(&launch.log_path, LOG_TAIL_LINES),
            });
        }
        Ok(())
    }

    /// Where the running container's cgroup is: from its PID 1's
    /// /proc/<pid>/cgroup, else from the daemon's cgroup driver.
    async fn locate_cgroup(
        &self,
        id: &str,
        pid: u32,
    ) -> Result<(BTreeMap<String, PathBuf>, String), SandboxError> {
        let hier = &self.hierarchy;
        let from_proc = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .ok()
            .and_then(|t| cgroups::relative_from_proc(&t));
        let rel = match from_proc {
            Some(r) => r,
            None => {
                let info = self.client()?.info().await.map_err(backend)?;
                cgroups::relative_from_driver(&info.cgroup_driver, &info.cgroup_version, id)
            }
        };
        let dirs = hier.mount_dirs(&rel);
        let mem = dirs
            .get("memory")
            .or_else(|| dirs.get("unified"))
            .cloned()
            .unwrap_or_default();
        if !mem.exists() {
            return Err(backend(DockerBackendError::CgroupNotFound {
                id: id.to_string(),
                tried: mem,
            }));
        }
        Ok((dirs, format!("/{}", rel.display())))
    }

    /// The running engine's cgroup and every limit read back from it and
    /// from its threads' allowed CPUs.
    async fn read_back_engine(
        &self,
        id: &str,
        pid: u32,
        limits: &CellLimits,
        io_dev: Option<String>,
    ) -> Result<(BTreeMap<String, PathBuf>, String, BTreeMap<String, String>), SandboxError> {
        let (dirs, memcg) = self.locate_cgroup(id, pid).await?;
        let mut read_back = BTreeMap::new();
        let server = Group {
            label: "server".into(),
            dirs: dirs.clone(),
        };
        server.read_back(&Self::group_limits(limits, io_dev), &mut read_back)?;
        process::read_back_cpus_allowed(pid, &limits.server_cpus, &mut read_back)?;
        Ok((dirs, memcg, read_back))
    }

    fn group_limits(limits: &CellLimits, io_dev: Option<String>) -> GroupLimits {
        GroupLimits {
            cpus: Some(limits.server_cpus.clone()),
            memory: Some((limits.memory, limits.swap)),
            pids: Some(limits.pids),
            io: io_dev.map(|d| (d, limits.io.clone())),
        }
    }

    /// The launch's image, present (pulled when missing), and what the
    /// daemon knows of it: by id and registry digest, since a tag may move
    /// later.
    async fn image_of(&self, launch: &EngineLaunch) -> Result<(String, ImageRecord), SandboxError> {
        let image = match &launch.program {
            Program::Image(i) => i.clone(),
            Program::Binary(p) => {
                return Err(backend(DockerBackendError::NotAnImage {
                    engine: launch.engine.clone(),
                    version: launch.version.clone(),
                    program: p.clone(),
                }));
            }
        };
        image::ensure_image(self.client()?, &image, self.pull)
            .await
            .map_err(backend)?;
        match self.client()?.image_facts(&image).await.map_err(backend)? {
            Some(f) => Ok((
                image.clone(),
                ImageRecord {
                    reference: image,
                    id: f.id,
                    repo_digests: f.repo_digests,
                },
            )),
            None => Err(backend(DockerBackendError::ImageMissing {
                image,
                why: "it went away right after it was checked".into(),
                hint: "run again; if it keeps going, something removes images".into(),
            })),
        }
    }

    /// The data dir (in the ledger first) and the log's folder, and the
    /// data device (`major:minor`, its /dev node) when IO is throttled.
    fn prepare_dirs(
        &mut self,
        launch: &EngineLaunch,
        limits: &CellLimits,
    ) -> Result<(Option<String>, Option<PathBuf>), SandboxError> {
        if !launch.data_dir.exists() {
            self.ledger_mut()?.record(Resource::DataDir {
                path: launch.data_dir.clone(),
            })?;
        }
        for dir in [Some(launch.data_dir.as_path()), launch.log_path.parent()]
            .into_iter()
            .flatten()
        {
            std::fs::create_dir_all(dir).map_err(|e| SandboxError::DataDir {
                path: dir.to_path_buf(),
                detail: e.to_string(),
            })?;
        }
        disk::attach(self.ledger_mut()?, &launch.data_dir, limits.disk)?;
        if limits.io == Default::default() {
            return Ok((None, None));
        }
        let dev = io::data_device(&launch.data_dir, Path::new(SYS_DEV_BLOCK))?;
        let node = spec::device_path(&dev, Path::new(SYS_DEV_BLOCK)).ok_or_else(|| {
            backend(DockerBackendError::NoDeviceNode {
                dev: dev.clone(),
                path: launch.data_dir.clone(),
            })
        })?;
        Ok((Some(dev), Some(node)))
    }

    /// The data dir's owner set from inside the image (the engine's user
    /// exists only there), then the launch's `init` commands, each in a
    /// container of its own under the cell's limits.
    async fn run_inits(
        &mut self,
        image: &str,
        launch: &EngineLaunch,
        io_node: Option<&Path>,
    ) -> Result<(), SandboxError> {
        if let Some(user) = launch.user.as_deref().filter(|u| *u != "root") {
            let argv = vec![
                "chown".to_string(),
                "-R".to_string(),
                format!("{user}:"),
                launch.data_dir.display().to_string(),
            ];
            let role = Role {
                name: "chown",
                argv: &argv,
                user: None,
            };
            self.run_init(role, image, launch, io_node).await?;
        }
        for (i, argv) in launch.init.iter().enumerate() {
            let name = format!("init-{i}");
            let role = Role {
                name: &name,
                argv,
                user: launch.user.as_deref(),
            };
            self.run_init(role, image, launch, io_node).await?;
        }
        Ok(())
    }

    /// Create and start the engine's container, stream its log, find its
    /// cgroup and read every limit back; the container id and the limits.
    /// An engine that exits at once is reported with its log tail.
    async fn run_engine(
        &mut self,
        image: &str,
        launch: &EngineLaunch,
        limits: &CellLimits,
        io_dev: Option<String>,
        io_node: Option<&Path>,
    ) -> Result<(String, BTreeMap<String, String>), SandboxError> {
        let role = Role {
            name: "engine",
            argv: &launch.argv,
            user: launch.user.as_deref(),
        };
        let holder = self.network_holder();
        let spec =
            spec::container_spec(&self.owner, &role, image, (launch, holder), limits, io_node)
                .map_err(backend)?;
        let id = self.create(&spec).await?;
        let client = self.client()?.clone();
        self.engine = Some(Engine {
            name: spec.name.clone(),
            id: id.clone(),
            dirs: BTreeMap::new(),
            logs: None,
            stopped: None,
        });
        client.start(&id).await.map_err(backend)?;
        let logs = self.stream_logs(&id, &launch.log_path)?;
        if let Some(e) = self.engine.as_mut() {
            e.logs = Some(logs);
        }
        let state = client.inspect(&id).await.map_err(backend)?;
        let checked = if state.running {
            self.read_back_engine(&id, state.pid, limits, io_dev).await
        } else {
            Err(SandboxError::NoEngine)
        };
        let (dirs, memcg, mut read_back) = match checked {
            Ok(c) => c,
            Err(e) => {
                // An engine that died at once explains a failed read-back
                // (its cgroup goes with it): report the exit and its log.
                // The daemon may still call it running for a moment while
                // it dies (its cgroup already half gone): give it 2 s.
                let mut now = client.inspect(&id).await.map_err(backend)?;
                for _ in 0..20 {
                    if !now.running {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    now = client.inspect(&id).await.map_err(backend)?;
                }
                if now.running {
                    return Err(e);
                }
                if let Some(e) = self.engine.as_mut().and_then(|e| e.logs.take()) {
                    let _ = tokio::time::timeout(Duration::from_secs(5), e).await;
                }
                return Err(SandboxError::EngineExited {
                    status: process::describe(exited(now.exit_code)),
                    log_path: launch.log_path.clone(),
                    log_tail: process::log_tail(&launch.log_path, LOG_TAIL_LINES),
                });
            }
        };
        read_back.insert("docker/container".into(), id.clone());
        // The kernel's name of the memory cgroup, for its OOM records.
        self.stats.set_server(dirs.clone(), memcg);
        let engine = self.engine.as_mut().expect("set above");
        engine.dirs = dirs;
        Ok((id, read_back))
    }
}

#[async_trait::async_trait]
impl Sandbox for DockerSandbox {
    fn run_id(&self) -> &str {
        &self.owner.run_id
    }

    /// Connect to the daemon and create the host cgroup the load generator
    /// runs in; the server's limits are applied when its container is made.
    async fn provision(&mut self, limits: &CellLimits) -> Result<Provisioned, SandboxError> {
        let client = DockerClient::connect().await.map_err(backend)?;
        let info = client.info().await.map_err(backend)?;
        self.client = Some(client);
        let mut out = Provisioned::default();
        out.read_back
            .insert("docker/server_version".into(), info.server_version);
        out.read_back
            .insert("docker/cgroup_driver".into(), info.cgroup_driver);
        out.read_back
            .insert("docker/cgroup_version".into(), info.cgroup_version);
        out.read_back
            .insert("hierarchy".into(), self.hierarchy.version().into());
        let run = self.run.dirs.clone();
        self.ledger_mut()?.record(Resource::Cgroup { dirs: run })?;
        group::ensure_parent(&self.top)?;
        group::ensure_parent(&self.run)?;
        let client_dirs = self.client_group.dirs.clone();
        self.ledger_mut()?
            .record(Resource::Cgroup { dirs: client_dirs })?;
        let client_limits = GroupLimits {
            cpus: Some(limits.client_cpus.clone()),
            ..GroupLimits::default()
        };
        self.client_group.create()?;
        self.client_group.apply(&client_limits)?;
        self.client_group
            .read_back(&client_limits, &mut out.read_back)?;
        self.limits = Some(limits.clone());
        Ok(out)
    }

    fn claim_data_dir(&mut self, dir: &Path) -> Result<(), SandboxError> {
        if !dir.exists() {
            self.ledger_mut()?.record(Resource::DataDir {
                path: dir.to_path_buf(),
            })?;
        }
        std::fs::create_dir_all(dir).map_err(|e| SandboxError::DataDir {
            path: dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        let size = self.limits.as_ref().and_then(|l| l.disk);
        disk::attach(self.ledger_mut()?, dir, size)
    }

    async fn start_engine(&mut self, launch: &EngineLaunch) -> Result<EngineHandle, SandboxError> {
        let limits = self
            .limits
            .clone()
            .ok_or_else(|| backend(DockerBackendError::NotProvisioned))?;
        // Started again after a snapshot: the stopped engine's container
        // goes first, as the new one takes its name.
        if let Some(old) = self.engine.take() {
            let client = self.client()?.clone();
            let deadline = Instant::now() + Duration::from_secs(30);
            remove_fully(&client, &old.name, Duration::from_secs(1), deadline)
                .await
                .map_err(backend)?;
        }
        let (image, image_record) = self.image_of(launch).await?;
        let (io_dev, io_node) = self.prepare_dirs(launch, &limits)?;
        self.run_inits(&image, launch, io_node.as_deref()).await?;
        let (id, read_back) = self
            .run_engine(&image, launch, &limits, io_dev, io_node.as_deref())
            .await?;
        Ok(EngineHandle {
            image: Some(image_record),
            id: EngineId::Container(id),
            port: launch.port,
            log_path: launch.log_path.clone(),
            read_back,
        })
    }

    /// Counters from the container's cgroup files while it exists. Once the
    /// engine (PID 1) is gone the daemon removes that cgroup: then the last
    /// reading stands, with OOM kills from the kernel's own records.
    fn stats_reader(&self) -> StatsReader {
        self.stats.clone()
    }

    fn client_placer(&self) -> ClientPlacer {
        ClientPlacer::new(self.client_group.procs_files())
            .in_netns(self.netns.as_ref().map(|n| n.path.clone()))
    }

    /// The namespace is a container's of its own, `network_mode: none`
    /// (only a loopback), which holds it for the cell's life: started
    /// here (ledger first), its namespace named `benchcage-<run id>`
    /// under /run/netns (`ip netns attach`, ledgered before), the qdisc
    /// set on its loopback and read back. The engine's and the init
    /// commands' containers join it (`container:<holder>`); the client
    /// enters its file.
    async fn isolate_network(
        &mut self,
        network: &crate::network::Network,
    ) -> Result<NetworkNamespace, SandboxError> {
        use crate::network::netns;
        let limits = self
            .limits
            .clone()
            .ok_or_else(|| backend(DockerBackendError::NotProvisioned))?;
        let image = self.network_image.clone().ok_or_else(|| {
            SandboxError::Unsupported(
                "the kernel emulation of a docker cell's network needs the cell's image for the container that holds its namespace (DockerSandbox::with_network_image)".into(),
            )
        })?;
        let name = netns::name_for(&self.owner.run_id);
        let fail = |e: netns::NamespaceError| SandboxError::Netns {
            name: name.clone(),
            detail: e.0,
        };
        image::ensure_image(self.client()?, &image, self.pull)
            .await
            .map_err(backend)?;
        let spec = spec::network_holder(&self.owner, &image, &limits);
        let id = self.create(&spec).await?;
        let client = self.client()?.clone();
        client.start(&id).await.map_err(backend)?;
        let state = client.inspect(&id).await.map_err(backend)?;
        if !state.running || state.pid == 0 {
            return Err(fail(netns::NamespaceError(format!(
                "the container {} that holds the namespace is not running ({})",
                spec.name, state.status
            ))));
        }
        self.ledger_mut()?
            .record(Resource::Netns { name: name.clone() })?;
        netns::attach(&name, state.pid).map_err(fail)?;
        netns::shape(&name, network).map_err(fail)?;
        let qdiscs = netns::qdiscs(&name).map_err(fail)?;
        let ns = NetworkNamespace {
            path: netns::path_of(&name),
            name,
            qdiscs,
            container: Some(spec.name),
        };
        self.netns = Some(ns.clone());
        Ok(ns)
    }

    fn join_network(&mut self, ns: &NetworkNamespace) -> Result<(), SandboxError> {
        if ns.container.is_none() {
            return Err(SandboxError::Unsupported(format!(
                "namespace {} is no container's, and a docker container can only join another container's",
                ns.name
            )));
        }
        self.netns = Some(ns.clone());
        Ok(())
    }

    fn set_memory_cap(&self, cap: Bytes, swap: SwapPolicy) -> Result<(), SandboxError> {
        match self.server_group() {
            Some(g) => g.set_memory_cap(cap, swap),
            None => Err(SandboxError::Unsupported(
                "this sandbox exposes no server memory cgroup; settle cannot shrink the cap".into(),
            )),
        }
    }

    fn drop_page_cache(&self) -> Result<(), SandboxError> {
        match self.server_group() {
            Some(g) => g.drop_page_cache(),
            None => memory::drop_host_cache(),
        }
    }

    fn server_pids(&self) -> Vec<u32> {
        self.server_group().map(|g| g.pids()).unwrap_or_default()
    }

    async fn engine_status(&mut self) -> Result<EngineStatus, SandboxError> {
        let Some(engine) = self.engine.as_ref() else {
            return Ok(EngineStatus::NotStarted);
        };
        if let Some(s) = engine.stopped {
            return Ok(s);
        }
        let client = self.client()?.clone();
        match client.inspect(&engine.id).await {
            Ok(s) if s.running => Ok(EngineStatus::Running),
            Ok(s) => {
                // Let the log stream drain so that errors carry the last lines.
                if let Some(logs) = self.engine.as_mut().and_then(|e| e.logs.take()) {
                    let _ = tokio::time::timeout(Duration::from_secs(2), logs).await;
                }
                Ok(exited(s.exit_code))
            }
            Err(e) if e.is_not_found() => Err(backend(DockerBackendError::ContainerGone {
                name: engine.name.clone(),
            })),
            Err(e) => Err(backend(e)),
        }
    }

    /// `docker stop` with `grace`: SIGTERM to PID 1, SIGKILL after `grace`;
    /// the daemon then kills everything else in the container.
    async fn stop_engine(&mut self, grace: Duration) -> Result<StopReport, SandboxError> {
        let client = self.client()?.clone();
        let engine = self.engine.as_mut().ok_or(SandboxError::NoEngine)?;
        if let Some(status) = engine.stopped {
            return Ok(StopReport {
                outcome: StopOutcome::AlreadyExited,
                swept: vec![],
                status,
            });
        }
        let before = match client.inspect(&engine.id).await {
            Ok(s) => s,
            Err(e) if e.is_not_found() => {
                return Err(backend(DockerBackendError::ContainerGone {
                    name: engine.name.clone(),
                }));
            }
            Err(e) => return Err(backend(e)),
        };
        let started = Instant::now();
        if before.running {
            client.stop(&engine.id, grace).await.map_err(backend)?;
        }
        let after = client.inspect(&engine.id).await.map_err(backend)?;
        let status = exited(after.exit_code);
        let outcome = if !before.running {
            StopOutcome::AlreadyExited
        } else if after.exit_code == Some(137) && started.elapsed() >= grace {
            StopOutcome::Killed
        } else {
            StopOutcome::Terminated
        };
        if let Some(logs) = engine.logs.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), logs).await;
        }
        engine.stopped = Some(status);
        Ok(StopReport {
            outcome,
            swept: vec![],
            status,
        })
    }

    /// Remove every container (newest first: stop, then force-remove with
    /// volumes; 404 is done, 409 polled), then what else the ledger holds
    /// (client cgroup, run parent, data dir), all within `budget`; verify
    /// nothing labelled with this cell is left.
    async fn teardown(&mut self, budget: Duration) -> Result<TeardownReport, SandboxError> {
        let started = Instant::now();
        let deadline = started + budget;
        let mut report = TeardownReport::default();
        if let Some(client) = self.client.clone() {
            let grace = Duration::from_secs(5).min(budget / 4);
            while let Some(name) = self.containers.last().cloned() {
                match remove_fully(&client, &name, grace, deadline).await {
                    Ok(Removal::Removed) => report.removed.push(format!("container {name}")),
                    Ok(Removal::Absent) => {}
                    Err(e) => report.leaked.push(format!("container {name}: {e}")),
                }
                self.containers.pop();
            }
            let label = format!("{}={}", spec::LABEL_CELL, self.owner.cell_id);
            match client.list_labelled(&label).await {
                Ok(left) => {
                    for c in left
                        .iter()
                        .filter(|c| c.labels.get(spec::LABEL_RUN) == Some(&self.owner.run_id))
                    {
                        report
                            .leaked
                            .push(format!("container {} still listed ({})", c.name, c.state));
                    }
                }
                Err(e) => report.leaked.push(format!("verifying removal: {e}")),
            }
        }
        if let Some(engine) = self.engine.as_mut()
            && let Some(logs) = engine.logs.take()
        {
            let left = deadline.saturating_duration_since(Instant::now());
            if tokio::time::timeout(left, logs).await.is_err() {
                report.leaked.push("engine log stream still open".into());
            }
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
        report.removed.extend(reaped.removed);
        report.leaked.extend(reaped.leaked);
        // The shared top folder goes when no other run uses it (EBUSY: in use).
        for d in self.top.dirs.values() {
            let _ = std::fs::remove_dir(d);
        }
        if report.is_clean()
            && let Some(l) = self.ledger.take()
        {
            l.finish()?;
        }
        self.limits = None;
        self.netns = None;
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }
}

impl Drop for DockerSandbox {
    /// Backstop only (a panic before teardown): teardown is the explicit
    /// step. What is still here is removed from a separate thread with its
    /// own runtime: containers, then the ledger's other entries.
    fn drop(&mut self) {
        let names = std::mem::take(&mut self.containers);
        let Some(ledger) = self.ledger.take() else {
            return;
        };
        let worker = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let deadline = Instant::now() + Duration::from_secs(20);
                if !names.is_empty()
                    && let Ok(client) = DockerClient::connect().await
                {
                    for name in names.iter().rev() {
                        let _ = remove_fully(&client, name, Duration::from_secs(1), deadline).await;
                    }
                }
                let entries = ledger.entries().unwrap_or_default();
                let left = deadline.saturating_duration_since(Instant::now());
                if ledger::reap_entries(&entries, left).await.leaked.is_empty() {
                    let _ = ledger.finish();
                }
            });
        });
        let _ = worker.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_exit_code_above_128_is_the_signal_that_killed_pid_1() {
        assert_eq!(
            exited(Some(137)),
            EngineStatus::Exited {
                code: None,
                signal: Some(9)
            }
        );
        assert_eq!(
            exited(Some(3)),
            EngineStatus::Exited {
                code: Some(3),
                signal: None
            }
        );
        assert_eq!(
            exited(None),
            EngineStatus::Exited {
                code: None,
                signal: None
            }
        );
    }
}
