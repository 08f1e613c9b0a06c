//! From a cell's limits and engine launch to the container the daemon
//! creates: names, labels, limits, mounts. Pure, so it is unit tested.

use super::DockerBackendError;
use super::client::{Bind, Blkio, ContainerSpec, DeviceRate};
use crate::model::{CellLimits, EngineLaunch, SwapPolicy};
use crate::sandbox::ledger;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Label with the run id on every benchcage container.
pub const LABEL_RUN: &str = "benchcage.run";
/// Label with the cell id.
pub const LABEL_CELL: &str = "benchcage.cell";
/// Label with the pid of the benchcage process that owns the container.
pub const LABEL_OWNER_PID: &str = "benchcage.owner-pid";
/// Label with that process's start time (clock ticks after boot), so that a
/// reused pid is not mistaken for a live owner.
pub const LABEL_OWNER_START: &str = "benchcage.owner-start";
/// Label with the container's role in the cell (`engine`, `init-0`, ...).
pub const LABEL_ROLE: &str = "benchcage.role";

/// Who owns a container: run, cell and the owning process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub run_id: String,
    pub cell_id: String,
    pub pid: u32,
    /// Field 22 of /proc/<pid>/stat.
    pub start: u64,
}

impl Owner {
    /// This process as the owner of `run_id`/`cell_id`.
    pub fn this_process(run_id: &str, cell_id: &str) -> Owner {
        let pid = std::process::id();
        Owner {
            run_id: run_id.into(),
            cell_id: cell_id.into(),
            pid,
            start: ledger::process_start_time(pid as i32).unwrap_or(0),
        }
    }

    /// The labels every container of this owner carries.
    pub fn labels(&self, role: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (LABEL_RUN.to_string(), self.run_id.clone()),
            (LABEL_CELL.to_string(), self.cell_id.clone()),
            (LABEL_OWNER_PID.to_string(), self.pid.to_string()),
            (LABEL_OWNER_START.to_string(), self.start.to_string()),
            (LABEL_ROLE.to_string(), role.to_string()),
        ])
    }

    /// `benchcage-<run>-<cell>-<role>`, with characters Docker refuses in a
    /// name replaced by `-`.
    pub fn container_name(&self, role: &str) -> String {
        let raw = format!("benchcage-{}-{}-{role}", self.run_id, self.cell_id);
        raw.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    }
}

/// Whether the owner recorded in a container's labels is still alive (same
/// pid and start time); a container without owner labels has no live owner.
pub fn owner_alive(labels: &BTreeMap<String, String>) -> bool {
    let pid = labels
        .get(LABEL_OWNER_PID)
        .and_then(|p| p.parse::<i32>().ok());
    let start = labels
        .get(LABEL_OWNER_START)
        .and_then(|s| s.parse::<u64>().ok());
    match (pid, start) {
        (Some(pid), Some(start)) => ledger::is_alive(pid, start),
        _ => false,
    }
}

/// The `/dev` path of a block device `major:minor` (Docker resolves the
/// path itself); /dev/block links are absent in minimal containers, so the
/// name comes from sysfs.
pub fn device_path(dev: &str, sys_dev_block: &Path) -> Option<PathBuf> {
    let uevent = std::fs::read_to_string(sys_dev_block.join(dev).join("uevent")).ok()?;
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(|name| Path::new("/dev").join(name))
}

/// A bind mount; relative paths are taken from benchcage's working
/// directory, as the cgroup backend would open them.
fn bind(host: &Path, container: &Path, read_only: bool) -> Result<Bind, DockerBackendError> {
    let abs = |p: &Path| {
        std::path::absolute(p).map_err(|_| DockerBackendError::BadMount { path: p.into() })
    };
    let (host, container) = (abs(host)?, abs(container)?);
    for p in [&host, &container] {
        let s = p.to_string_lossy();
        if s.contains(':') || s.contains(',') {
            return Err(DockerBackendError::BadMount { path: p.clone() });
        }
    }
    Ok(Bind {
        host,
        container,
        read_only,
    })
}

/// One container of a cell: the engine, or one init command.
#[derive(Debug, Clone, Copy)]
pub struct Role<'a> {
    /// `engine`, `init-0`, `chown`...
    pub name: &'a str,
    pub argv: &'a [String],
    /// `None` runs as the image's default user (root for local images).
    pub user: Option<&'a str>,
}

/// The container for one role of a cell. The data dir is mounted at its
/// host path, so argv placeholders filled with host paths mean the same
/// inside; config files are mounted read-only. Its network is the host's,
/// or the namespace of the container `network` names (the kernel
/// emulation of the cell's network, [`network_holder`]).
pub fn container_spec(
    owner: &Owner,
    role: &Role<'_>,
    image: &str,
    (launch, network): (&EngineLaunch, Option<&str>),
    limits: &CellLimits,
    io_device: Option<&Path>,
) -> Result<ContainerSpec, DockerBackendError> {
    if role.argv.is_empty() {
        return Err(DockerBackendError::EmptyArgv {
            role: role.name.to_string(),
        });
    }
    let memory = limits.memory.as_u64() as i64;
    // The daemon doubles the memory as memory+swap when MemorySwap is 0 or
    // unset; "no swap" must be said as MemorySwap == Memory.
    let memory_swap = match limits.swap {
        SwapPolicy::Off => memory,
        SwapPolicy::Limit(s) => memory + s.as_u64() as i64,
    };
    let data = bind(&launch.data_dir, &launch.data_dir, false)?;
    let working_dir = Some(data.container.clone());
    let mut binds = vec![data];
    for (host, engine_path) in &launch.config_files {
        binds.push(bind(host, engine_path, true)?);
    }
    let rates = |v: Option<u64>| -> Vec<DeviceRate> {
        match (v, io_device) {
            (Some(rate), Some(dev)) => vec![DeviceRate {
                device: dev.to_path_buf(),
                rate,
            }],
            _ => vec![],
        }
    };
    Ok(ContainerSpec {
        name: owner.container_name(role.name),
        image: image.to_string(),
        argv: role.argv.to_vec(),
        env: launch.env.clone(),
        user: role.user.map(str::to_string),
        labels: owner.labels(role.name),
        cpuset_cpus: limits.server_cpus.to_string(),
        // One memory node on the hosts benchcage targets; the cgroup backend
        // copies the parent's mems the same way.
        cpuset_mems: online_mems(),
        memory,
        memory_swap,
        pids_limit: limits.pids as i64,
        blkio: Blkio {
            read_bps: rates(limits.io.read_bps),
            write_bps: rates(limits.io.write_bps),
            read_iops: rates(limits.io.read_iops),
            write_iops: rates(limits.io.write_iops),
        },
        binds,
        working_dir,
        network_mode: network_mode(network),
    })
}

/// Docker's network mode of a container in the namespace of the container
/// `holder`, or on the host's network without one.
fn network_mode(holder: Option<&str>) -> String {
    holder.map_or_else(|| "host".into(), |h| format!("container:{h}"))
}

/// What the holder of a cell's network namespace runs: a shell that
/// sleeps and exits at once on SIGTERM (as PID 1 it would ignore the
/// signal and `docker stop` would wait its grace out).
pub const HOLDER_ARGV: [&str; 3] = [
    "sh",
    "-c",
    "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done",
];

/// The container that holds a cell's network namespace (the kernel
/// emulation): `network_mode: none`, so its namespace has only a
/// loopback; the engine, its init commands and the members join it
/// (`container:<name>`). It runs [`HOLDER_ARGV`] in the cell's image on
/// the server's CPUs, with a small memory cap of its own.
pub fn network_holder(owner: &Owner, image: &str, limits: &CellLimits) -> ContainerSpec {
    const HOLDER_MEMORY: i64 = 32 << 20;
    ContainerSpec {
        name: owner.container_name(HOLDER_ROLE),
        image: image.to_string(),
        argv: HOLDER_ARGV.iter().map(|a| a.to_string()).collect(),
        env: BTreeMap::new(),
        user: None,
        labels: owner.labels(HOLDER_ROLE),
        cpuset_cpus: limits.server_cpus.to_string(),
        cpuset_mems: online_mems(),
        memory: HOLDER_MEMORY,
        memory_swap: HOLDER_MEMORY,
        pids_limit: 8,
        blkio: Blkio::default(),
        binds: Vec::new(),
        working_dir: None,
        network_mode: "none".into(),
    }
}

/// The role (and name suffix) of the container holding the cell's
/// network namespace.
pub const HOLDER_ROLE: &str = "network";

/// The host's online memory nodes (`0` on a machine without NUMA info).
fn online_mems() -> String {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "0".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IoLimits, Probe, Program, Readiness};
    use crate::units::{Bytes, CpuSet};

    fn owner() -> Owner {
        Owner {
            run_id: "20261130-101500-ab12".into(),
            cell_id: "redis@7.0/vm 1g".into(),
            pid: 42,
            start: 7,
        }
    }

    fn launch() -> EngineLaunch {
        EngineLaunch {
            engine: "redis".into(),
            version: "7.0".into(),
            program: Program::Image("benchcage/redis:7.0".into()),
            argv: vec!["redis-server".into(), "/etc/redis.conf".into()],
            env: BTreeMap::from([("LANG".into(), "C.UTF-8".into())]),
            port: 16379,
            data_dir: "/var/tmp/cell/data".into(),
            config_files: vec![("/var/tmp/cell/redis.conf".into(), "/etc/redis.conf".into())],
            init: vec![],
            user: None,
            readiness: Readiness {
                probe: Probe::Redis,
                timeout: crate::units::Duration::from_secs(5),
            },
            log_path: "/var/tmp/cell/engine.log".into(),
        }
    }

    fn engine(l: &EngineLaunch) -> Role<'_> {
        Role {
            name: "engine",
            argv: &l.argv,
            user: None,
        }
    }

    fn limits(swap: SwapPolicy) -> CellLimits {
        CellLimits {
            server_cpus: CpuSet::new([1]),
            client_cpus: CpuSet::new([0]),
            memory: Bytes::from_mib(256),
            swap,
            pids: 512,
            io: IoLimits {
                write_bps: Some(1 << 20),
                ..IoLimits::default()
            },
            disk: None,
            client_node: Default::default(),
        }
    }

    fn spec(l: &EngineLaunch, swap: SwapPolicy, dev: Option<&Path>) -> ContainerSpec {
        container_spec(&owner(), &engine(l), "img", (l, None), &limits(swap), dev).unwrap()
    }

    #[test]
    fn a_cells_containers_join_the_holder_of_its_network_namespace() {
        let l = launch();
        assert_eq!(spec(&l, SwapPolicy::Off, None).network_mode, "host");
        let holder = network_holder(&owner(), "img", &limits(SwapPolicy::Off));
        assert_eq!(
            holder.network_mode, "none",
            "a namespace with only a loopback"
        );
        assert_eq!(holder.labels[LABEL_ROLE], HOLDER_ROLE);
        assert!(holder.name.ends_with("-network"), "{}", holder.name);
        let joined = container_spec(
            &owner(),
            &engine(&l),
            "img",
            (&l, Some(&holder.name)),
            &limits(SwapPolicy::Off),
            None,
        )
        .unwrap();
        assert_eq!(joined.network_mode, format!("container:{}", holder.name));
    }

    #[test]
    fn no_swap_is_said_as_memory_swap_equal_to_memory() {
        let l = launch();
        let s = spec(&l, SwapPolicy::Off, None);
        assert_eq!(s.memory, 256 << 20);
        assert_eq!(s.memory_swap, s.memory);
        let s = spec(&l, SwapPolicy::Limit(Bytes::from_mib(64)), None);
        assert_eq!(s.memory_swap, (256 + 64) << 20);
    }

    #[test]
    fn every_container_carries_run_cell_and_owner_labels_and_a_docker_safe_name() {
        let l = launch();
        let s = spec(&l, SwapPolicy::Off, None);
        assert_eq!(s.labels[LABEL_RUN], "20261130-101500-ab12");
        assert_eq!(s.labels[LABEL_CELL], "redis@7.0/vm 1g");
        assert_eq!(s.labels[LABEL_OWNER_PID], "42");
        assert_eq!(s.labels[LABEL_OWNER_START], "7");
        assert_eq!(
            s.name,
            "benchcage-20261130-101500-ab12-redis-7.0-vm-1g-engine"
        );
        assert_eq!(s.cpuset_cpus, "1");
        assert_eq!(s.pids_limit, 512);
    }

    #[test]
    fn data_dir_is_mounted_read_write_and_configs_read_only() {
        let l = launch();
        let s = spec(&l, SwapPolicy::Off, None);
        assert_eq!(s.binds.len(), 2);
        assert!(!s.binds[0].read_only);
        assert_eq!(s.binds[0].container, PathBuf::from("/var/tmp/cell/data"));
        assert!(s.binds[1].read_only);
        assert_eq!(s.binds[1].container, PathBuf::from("/etc/redis.conf"));
    }

    #[test]
    fn io_throttles_name_the_data_device_only_when_asked() {
        let l = launch();
        let dev = PathBuf::from("/dev/vda");
        let s = spec(&l, SwapPolicy::Off, Some(&dev));
        assert_eq!(
            s.blkio.write_bps,
            vec![DeviceRate {
                device: dev,
                rate: 1 << 20
            }]
        );
        assert!(s.blkio.read_bps.is_empty());
    }

    #[test]
    fn relative_paths_are_mounted_where_benchcage_would_open_them() {
        let mut l = launch();
        l.data_dir = "results/cell/data".into();
        l.config_files = vec![(
            "results/cell/redis.conf".into(),
            "results/cell/redis.conf".into(),
        )];
        let s = spec(&l, SwapPolicy::Off, None);
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(s.binds[0].host, cwd.join("results/cell/data"));
        assert_eq!(s.binds[1].container, cwd.join("results/cell/redis.conf"));
        assert_eq!(s.working_dir, Some(cwd.join("results/cell/data")));
    }

    #[test]
    fn a_path_with_a_colon_cannot_be_mounted() {
        let mut l = launch();
        l.data_dir = "/var/tmp/a:b".into();
        let err = container_spec(
            &owner(),
            &engine(&l),
            "img",
            (&l, None),
            &limits(SwapPolicy::Off),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("/var/tmp/a:b"), "{err}");
    }

    #[test]
    fn a_dead_or_reused_owner_pid_is_not_alive() {
        let me = Owner::this_process("r", "c");
        assert!(owner_alive(&me.labels("engine")));
        let mut reused = me.labels("engine");
        reused.insert(LABEL_OWNER_START.into(), (me.start + 1).to_string());
        assert!(!owner_alive(&reused));
        let mut dead = me.labels("engine");
        dead.insert(LABEL_OWNER_PID.into(), "4194304".into());
        assert!(!owner_alive(&dead));
    }

    #[test]
    fn device_path_comes_from_the_sysfs_uevent() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("254:0")).unwrap();
        std::fs::write(
            t.path().join("254:0/uevent"),
            "MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n",
        )
        .unwrap();
        assert_eq!(
            device_path("254:0", t.path()),
            Some(PathBuf::from("/dev/vda"))
        );
        assert_eq!(device_path("8:0", t.path()), None);
    }
}
