//! The planned cell: everything one engine version in one environment,
//! one repetition, needs to run, resolved and typed, and how it becomes
//! the sandbox's launch description.

use crate::model::Settle;
use crate::model::{Backend, CellLimits, EngineLaunch, Program, Readiness, ThpNeed, ThpPolicy};
use crate::render::RenderedConfig;
use crate::spec::facts::Facts;
use crate::spec::scenario::{Dataset, Load, Phase};
use crate::units::Bytes;
use crate::workload::DriveConfig;
use crate::workload::tools::ToolConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Where the cache comes from when no knob sets it: the page cache
    /// under the cap (MMAPv1 has none of its own), or what the engine
    /// chooses itself (`cache: default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_from: Option<String>,
    /// The statement that resizes the cache at run time (the engine's
    /// `cache_resize:`), when the engine has one and a cache knob: settle
    /// runs it with the settled cap's share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_resize: Option<String>,
    /// The statement that stops the engine at once at teardown (the
    /// engine's `quick_stop:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quick_stop: Option<String>,
    /// The environment allows a cache over the cap.
    #[serde(skip)]
    pub cache_overcommit: bool,
    /// Steal time a phase may lose and stay valid (`server.steal_allowance`);
    /// a judgement of the results, not a condition of the cell: not in its key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steal_allowance: Option<crate::units::Share>,
    /// The network between the client and the server, its emulation
    /// chosen for this host (never `auto`).
    pub network: Option<crate::network::Network>,
    /// Memory the hog leaves to everything else, when there is a hog.
    pub hog_leave: Option<Bytes>,
    /// Final knobs after defaults, the environment's cache, scenario
    /// knobs and `--set`, in canonical text.
    pub knobs: BTreeMap<String, String>,
    /// Options of the built-in load generator's store URL set by knobs
    /// (`w`, `journal`, `readPreference` for MongoDB), by option name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub store_options: Vec<StoreOption>,
    /// Knobs the plan raised for the scenario's thread count
    /// (`max_connections=1074: 1 per thread x 1024 threads + 50 spare`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub raised_knobs: Vec<String>,
    pub configs: Vec<RenderedConfig>,
    /// The dataset at this environment's scale.
    pub dataset: Option<Dataset>,
    pub load: Option<Load>,
    /// The load generator's config for `load`; the store URL and the
    /// thread count are filled in when the cell runs.
    #[serde(skip)]
    pub load_config: Option<DriveConfig>,
    pub settle: Option<Settle>,
    /// Measured runs in order: one per phase and thread count.
    pub phases: Vec<PlannedPhase>,
    pub repetition: u32,
    pub scale: f64,
    /// argv and init with placeholders, filled by `launch`.
    pub command: Vec<String>,
    /// argv appended to `command` for a client on another node, with
    /// `{address}` (the engine's `listen:`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub listen: Vec<String>,
    /// The client on another node, once its Slurm job placed it
    /// ([`PlannedCell::place_client`]); `None` on the server's machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_client: Option<crate::model::RemoteClient>,
    pub init: Vec<Vec<String>>,
    /// What the environment asks of the host's transparent huge pages.
    pub transparent_hugepages: ThpPolicy,
    /// What the engine needs of them (TokuMX: not `always`).
    pub thp_need: ThpNeed,
    /// The user the engine and its `init` commands run as: the engine's
    /// `user:`, else [`DEFAULT_USER`](crate::spec::engine::DEFAULT_USER).
    pub user: String,
    pub env: BTreeMap<String, String>,
    pub readiness: Readiness,
    /// How the engine is asked about its data and cache after the load.
    #[serde(skip)]
    pub facts: Facts,
    /// The binary inside the image (docker backend) for `{binary}`.
    pub image_binary: String,
    /// Spec files this cell was planned from, relative to the project home
    /// (scenario, environment, engine, templates), for provenance hashes.
    pub spec_files: Vec<String>,
    /// The cell's data on disk, estimated; `None` when it writes nothing
    /// countable.
    pub footprint: Option<super::footprint::Footprint>,
    /// The key its load is snapshot under, when it may restore one
    /// instead of loading; `None` loads afresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<super::snapshot::SnapshotPlan>,
    /// One server, a replica set or a sharded cluster.
    pub topology: crate::model::Topology,
    /// The topology's members, each with its CPUs: one sandbox each.
    pub members: Vec<super::members::PlannedMember>,
    /// How a replica set's secondaries join (the engine's `replication:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<crate::spec::engine::ReplicationSpec>,
    /// How a sharded cluster's members form it (the engine's `sharding:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharding: Option<crate::spec::engine::ShardingSpec>,
}

/// A store URL option a knob sets: `write_concern=1` gives `w=1`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoreOption {
    pub knob: String,
    pub option: String,
    /// The knob's canonical value.
    pub value: String,
}

/// One measured run: a phase at one thread count.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PlannedPhase {
    /// `workload-a/t4`.
    pub id: String,
    pub threads: u32,
    /// The phase as the scenario gives it, scaled; cell keys are made of it.
    pub phase: Phase,
    /// What the phase's executor runs.
    #[serde(skip)]
    pub config: PhaseConfig,
}

/// What a measured run runs, typed for its executor.
#[derive(Debug, Clone, PartialEq)]
pub enum PhaseConfig {
    /// The built-in load generator's config; the store URL and the thread
    /// count are filled in when the cell runs.
    Builtin(DriveConfig),
    /// An external tool's.
    Tool(ToolConfig),
}

impl PlannedCell {
    /// The store URL of a planned cell's built-in load generator: the
    /// probe's URL with the store options its knobs set
    /// (`mongodb://127.0.0.1:PORT/?w=1&journal=true`); several ports make a
    /// seed list (`mongodb://127.0.0.1:P1,127.0.0.1:P2`: a cluster's routers).
    pub(crate) fn store_url(&self, ports: &[u16]) -> String {
        let host = self
            .remote_client
            .as_ref()
            .map_or("127.0.0.1", |r| r.address.as_str());
        let hosts: Vec<String> = match ports {
            [] => vec![format!("{host}:0")],
            _ => ports.iter().map(|p| format!("{host}:{p}")).collect(),
        };
        let base = self.readiness.probe.url_at(&hosts.join(","));
        if self.store_options.is_empty() {
            return base;
        }
        let query: Vec<String> = self
            .store_options
            .iter()
            .map(|o| format!("{}={}", o.option, o.value))
            .collect();
        format!("{base}/?{}", query.join("&"))
    }

    /// Put the client on another node: the load generator's store URL
    /// names the server node's `address`, and the server also listens on
    /// it (the engine's `listen:` argv) unless it is a loopback address,
    /// which it listens on already.
    pub fn place_client(&mut self, remote: crate::model::RemoteClient) {
        let loopback = remote
            .address
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback());
        if !loopback {
            let args = self
                .listen
                .iter()
                .map(|a| a.replace("{address}", &remote.address));
            self.command.extend(args);
        }
        self.remote_client = Some(remote);
    }

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

    /// The launch of a replica set's secondary: the primary's, with the
    /// engine's `replication.replica_init` instead of `init` when it
    /// gives one; `{primary_port}` is left for the run to fill.
    pub(crate) fn replica_launch(
        &self,
        port: u16,
        data_dir: &Path,
        config_dir: &Path,
        log_path: &Path,
    ) -> EngineLaunch {
        let mut launch = self.launch(port, data_dir, config_dir, log_path);
        if let Some(rep) = self
            .replication
            .as_ref()
            .filter(|r| !r.replica_init.is_empty())
        {
            launch.init = rep
                .replica_init
                .iter()
                .map(|argv| self.fill_argv(argv, port, data_dir, config_dir))
                .collect();
        }
        launch
    }

    /// The launch of a sharded cluster's router: the engine's
    /// `sharding.router_command` instead of its command, and no `init` (a
    /// router keeps no data); `{config_set}` is left for the run to fill.
    pub(crate) fn router_launch(
        &self,
        port: u16,
        data_dir: &Path,
        config_dir: &Path,
        log_path: &Path,
    ) -> EngineLaunch {
        let mut launch = self.launch(port, data_dir, config_dir, log_path);
        if let Some(command) = self
            .sharding
            .as_ref()
            .map(|s| &s.router_command)
            .filter(|c| !c.is_empty())
        {
            launch.argv = self.fill_argv(command, port, data_dir, config_dir);
            launch.init.clear();
        }
        launch
    }

    /// `argv` with the launch placeholders filled for a member on `port`.
    fn fill_argv(
        &self,
        argv: &[String],
        port: u16,
        data_dir: &Path,
        config_dir: &Path,
    ) -> Vec<String> {
        let port = port.to_string();
        argv.iter()
            .map(|a| self.fill(a, &port, data_dir, config_dir))
            .collect()
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
    pub(crate) fn shown_arg(&self, arg: &str) -> String {
        self.fill(
            arg,
            "{port}",
            Path::new("{data_dir}"),
            Path::new("{config_dir}"),
        )
    }

    fn fill(&self, arg: &str, port: &str, data_dir: &Path, config_dir: &Path) -> String {
        self.fill_as(&self.binary(), arg, port, data_dir, config_dir)
    }

    /// `arg` of a config check (no `{port}`): the placeholders filled with
    /// a host `binary`, whatever the cell's backend.
    pub(crate) fn fill_with_binary(
        &self,
        arg: &str,
        binary: &Path,
        data_dir: &Path,
        config_dir: &Path,
    ) -> String {
        let binary = binary.display().to_string();
        self.fill_as(&binary, arg, "{port}", data_dir, config_dir)
    }

    fn fill_as(
        &self,
        binary: &str,
        arg: &str,
        port: &str,
        data_dir: &Path,
        config_dir: &Path,
    ) -> String {
        let bin_dir = Path::new(&binary)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let mut out = arg
            .replace("{binary}", binary)
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
    pub(crate) fn write_configs(&self, config_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
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
