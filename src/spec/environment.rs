//! Environments: where an engine runs and how it is constrained.
//!
//! ```yaml
//! description: write-up 003, 4 cores and 16 GiB
//! backend: docker            # cgroup (default) | docker
//! server:
//!   cpus: 0-3                # CPU set the engine is pinned to
//!   memory: 16GiB            # hard cap; omit for no cap
//!   swap: off                # off (default) | a size on top of the cap
//!   io: {read_bps: 200MiB, write_bps: 200MiB, read_iops: 5000, write_iops: 5000}
//!   pids: 4096
//!   steal_allowance: 30%     # hypervisor steal time a phase may lose and stay valid (default none)
//!   disk: {size: 20GiB}      # the data dir on a filesystem of this size (default: the work root's)
//! client: {cpus: 4-5}        # load generator, outside the server's cgroup
//!                            # node: other puts it on another node (run --on slurm)
//! cache: 12GiB               # or a share of the memory cap: 75%; or `default`:
//!                            # the engine sizes its own (engines/*.yaml `default_cache:`)
//! hog: {leave: 16GiB}        # or none
//! scale: 1                   # multiplies memory, cache, hog and dataset
//! allow_cache_overcommit: false
//! host: {transparent_hugepages: off}  # leave (default) | off: `never` for each cell, restored after
//! ```

use super::de::{Fields, FromNode, check_spec_name, choice};
use super::diag::{Cx, Origin};
use super::yaml::Node;
use crate::model::{Backend, ClientNode, IoLimits, SwapPolicy, ThpPolicy};
use crate::units::{Bytes, CpuSet, Duration, Share, SizeOrShare};
use std::collections::BTreeMap;

/// Smallest memory cap accepted: below this no engine starts.
pub(crate) const MIN_MEMORY: Bytes = Bytes(16 * Bytes::MIB);
/// Smallest data disk accepted (`server.disk.size`): below this an ext4
/// filesystem holds little more than its own journal.
pub(crate) const MIN_DISK: Bytes = Bytes(16 * Bytes::MIB);
/// Cache used when an environment names none: half the memory cap.
pub(crate) const DEFAULT_CACHE_SHARE: f64 = 0.5;

/// Who sizes the engine's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheChoice {
    /// benchcage, from `cache:` (50% of the cap when omitted).
    #[default]
    Planned,
    /// The engine, by its version's own default (`cache: default`).
    EngineDefault,
}

/// An environment spec (`environments/<name>.yaml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Environment {
    pub name: String,
    pub description: String,
    pub backend: Backend,
    pub server: Server,
    pub client: Client,
    /// Engine cache: absolute or a share of the memory cap; `None` = 50%.
    pub cache: Option<SizeOrShare>,
    /// Whether benchcage sets the cache or leaves it to the engine
    /// (`cache: default`, "out of the box").
    pub cache_choice: CacheChoice,
    pub hog: Hog,
    /// Factor applied to memory, cache, hog and dataset (ratios hold).
    pub scale: f64,
    /// Let cache + engine overhead exceed the memory cap on purpose.
    pub allow_cache_overcommit: bool,
    /// Host settings benchcage changes for each cell and restores after.
    pub host: HostSettings,
    /// The servers of each cell (a matrix entry may give its own).
    pub topology: crate::model::Topology,
    /// Members of a topology may share the server's CPUs when there are
    /// fewer CPUs than members (`plan` lists it as a deviation).
    pub share_cpus: bool,
    /// `member_cpus: {router: ["4", "5"], config_server: ["3"]}`: the CPUs
    /// of a topology's members by role, one set per member of the role in
    /// start order, each among the server's; members of roles not listed
    /// share out the server's CPUs that are left.
    pub member_cpus: BTreeMap<String, Vec<CpuSet>>,
    /// The network between the client and the server (`network:`); none:
    /// the loopback as it is.
    pub network: Option<crate::network::Network>,
    pub origin: Origin,
}

/// `host:`: kernel settings of the whole machine that benchcage changes
/// for each cell of the environment and restores after it (and in
/// `cleanup` after a crash).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostSettings {
    /// `transparent_hugepages: off` writes `never` (TokuMX refuses THP `always`).
    pub transparent_hugepages: ThpPolicy,
}

impl FromNode for ThpPolicy {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        choice(
            node,
            cx,
            path,
            &[("leave", ThpPolicy::Leave), ("off", ThpPolicy::Off)],
        )
    }
}

impl FromNode for HostSettings {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(node, cx, path, &["transparent_hugepages"])?;
        Some(HostSettings {
            transparent_hugepages: f.or(cx, "transparent_hugepages", ThpPolicy::Leave),
        })
    }
}

/// The server side of an environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    pub cpus: CpuSet,
    /// Hard memory cap; `None` = no cap (bounded by the host, or the hog).
    pub memory: Option<Bytes>,
    pub swap: SwapPolicy,
    pub io: IoLimits,
    pub pids: u64,
    /// The share of the server's CPUs the hypervisor may take (steal time)
    /// before a phase counts as contended; `None`: none beyond the
    /// contention limit. For a host whose hypervisor is busy, said in the
    /// plan and recorded with every phase.
    pub steal_allowance: Option<Share>,
    /// `disk: {size: 20GiB}`: the data dir on a filesystem of this size
    /// (a loop-mounted image file); `None`: on the work root's own.
    pub disk: Option<Bytes>,
}

/// The error of a data disk under [`MIN_DISK`], for the spec and `--set`.
pub(crate) fn disk_floor_problem(size: Bytes) -> Option<(String, String)> {
    (size < MIN_DISK).then(|| {
        (
            format!("a data disk of {size} is too small: its filesystem would hold little but its own journal"),
            format!("use at least {MIN_DISK}, or leave `server.disk` out to keep the data dir on the work root's filesystem"),
        )
    })
}

/// `server.disk: {size: 20GiB}`.
fn disk_from_node(n: &Node, cx: &mut Cx) -> Option<Bytes> {
    let f = Fields::open(n, cx, "server.disk", &["size"])?;
    let size = f.req::<Bytes>(cx, "size")?;
    if let Some((message, hint)) = disk_floor_problem(size) {
        cx.error(f.pos_of("size"), "server.disk.size", message, Some(hint));
    }
    Some(size)
}

/// The most steal a phase may be allowed: beyond it the server had less
/// than a tenth of the CPUs the environment promised.
pub(crate) const MAX_STEAL_ALLOWANCE: f64 = 0.9;

/// The client (load generator) side.
#[derive(Debug, Clone, PartialEq)]
pub struct Client {
    pub cpus: CpuSet,
    /// `node: other`: on another node of a Slurm allocation.
    pub node: ClientNode,
}

/// A memory hog: locks host RAM so that only `leave` remains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Hog {
    None,
    Leave(Bytes),
}

impl FromNode for ClientNode {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let table = [("same", ClientNode::Same), ("other", ClientNode::Other)];
        choice(node, cx, path, &table)
    }
}

impl FromNode for Backend {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let table = [("cgroup", Backend::Cgroup), ("docker", Backend::Docker)];
        choice(node, cx, path, &table)
    }
}

impl FromNode for SwapPolicy {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        match node.scalar() {
            Some("off" | "none" | "0" | "false") => Some(SwapPolicy::Off),
            _ => Bytes::from_node(node, cx, path).map(SwapPolicy::Limit),
        }
    }
}

impl FromNode for Hog {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        if matches!(node.scalar(), Some("none" | "off")) {
            return Some(Hog::None);
        }
        let f = Fields::open(node, cx, path, &["leave"])?;
        let leave = f.req::<String>(cx, "leave")?;
        match crate::sandbox::hog::parse_leave(&leave) {
            Ok(b) => Some(Hog::Leave(b)),
            Err(e) => {
                cx.error(
                    f.pos_of("leave"),
                    &format!("{path}.leave"),
                    e.to_string(),
                    None,
                );
                None
            }
        }
    }
}

fn io_limits(node: &Node, cx: &mut Cx, path: &str) -> Option<IoLimits> {
    let f = Fields::open(
        node,
        cx,
        path,
        &["read_bps", "write_bps", "read_iops", "write_iops"],
    )?;
    let limits = IoLimits {
        read_bps: f.opt::<Bytes>(cx, "read_bps").map(|b| b.0),
        write_bps: f.opt::<Bytes>(cx, "write_bps").map(|b| b.0),
        read_iops: f.opt::<u64>(cx, "read_iops"),
        write_iops: f.opt::<u64>(cx, "write_iops"),
    };
    for (key, v) in [
        ("read_bps", limits.read_bps),
        ("write_bps", limits.write_bps),
        ("read_iops", limits.read_iops),
        ("write_iops", limits.write_iops),
    ] {
        if v == Some(0) {
            cx.error(
                f.pos_of(key),
                &format!("{path}.{key}"),
                format!("{key}: 0 would stop every read or write of the engine"),
                Some("give a positive limit, or leave the field out for no limit".into()),
            );
        }
    }
    Some(limits)
}

/// `server:`: its CPUs, memory cap, swap, IO limits and pids.
fn server_from_node(n: &Node, cx: &mut Cx) -> Option<Server> {
    let s = Fields::open(
        n,
        cx,
        "server",
        &[
            "cpus",
            "memory",
            "swap",
            "io",
            "pids",
            "steal_allowance",
            "disk",
        ],
    )?;
    let cpus = s.req::<CpuSet>(cx, "cpus");
    let memory = s.opt::<Bytes>(cx, "memory");
    let swap = s.or(cx, "swap", SwapPolicy::Off);
    let io = s
        .get("io")
        .and_then(|n| io_limits(n, cx, "server.io"))
        .unwrap_or_default();
    let pids = s.or(cx, "pids", 4096u64);
    if pids == 0 {
        cx.error(
            s.pos_of("pids"),
            "server.pids",
            "pids must be at least 1",
            None,
        );
    }
    if let Some(m) = memory
        && m < MIN_MEMORY
    {
        cx.error(
            s.pos_of("memory"),
            "server.memory",
            format!("a memory cap of {m} is too small for any engine"),
            Some(format!("use at least {MIN_MEMORY}")),
        );
    }
    let steal_allowance = s.opt::<Share>(cx, "steal_allowance");
    if let Some(a) = steal_allowance
        && a.fraction() > MAX_STEAL_ALLOWANCE
    {
        cx.error(
            s.pos_of("steal_allowance"),
            "server.steal_allowance",
            format!("a steal allowance of {a} would accept a phase whose server had almost no CPU"),
            Some("use at most 90%, or run on a quieter host or on dedicated CPUs".into()),
        );
    }
    let disk = match s.get("disk") {
        Some(n) => Some(disk_from_node(n, cx)?),
        None => None,
    };
    Some(Server {
        cpus: cpus?,
        memory,
        swap,
        io,
        pids,
        steal_allowance,
        disk,
    })
}

/// `network:` between the client and the server: `{delay: 100us,
/// jitter: 10us, rate: 10gbit, loss: 0%, emulation: auto}`.
fn network_from_node(n: &Node, cx: &mut Cx) -> Option<crate::network::Network> {
    use crate::network::Emulation;
    let f = Fields::open(
        n,
        cx,
        "network",
        &["delay", "jitter", "rate", "loss", "emulation"],
    )?;
    // Each part is optional: a link of a rate only has no delay.
    let delay = f.opt::<Duration>(cx, "delay").unwrap_or_default();
    let jitter = f.opt::<Duration>(cx, "jitter");
    let rate = f.opt::<crate::units::Rate>(cx, "rate");
    let loss = match f.opt::<String>(cx, "loss") {
        None => 0.0,
        Some(text) => match crate::network::parse_loss(&text) {
            Ok(l) => l,
            Err(e) => {
                cx.error(f.pos_of("loss"), "network.loss", e.0, None);
                return None;
            }
        },
    };
    let emulation = match f.get("emulation") {
        Some(node) => choice(node, cx, "network.emulation", &Emulation::ALL)?,
        None => Emulation::Auto,
    };
    let network = crate::network::Network {
        delay,
        jitter,
        rate,
        loss,
        emulation,
    };
    for p in network.problems() {
        cx.error(
            f.pos_of(p.field),
            &format!("network.{}", p.field),
            p.message,
            Some(p.hint),
        );
    }
    Some(network)
}

/// `scale:`, above 0 and at most 64.
fn scale_of(f: &Fields, cx: &mut Cx) -> f64 {
    let scale = f.or(cx, "scale", 1.0f64);
    if !(scale > 0.0 && scale <= 64.0) {
        cx.error(
            f.pos_of("scale"),
            "scale",
            format!("scale {scale} is out of range"),
            Some("a factor above 0 and at most 64, e.g. 0.125 for 1/8".into()),
        );
    }
    scale
}

impl Environment {
    /// Read an environment from its YAML tree, reporting every problem.
    pub(crate) fn from_node(name: &str, node: &Node, cx: &mut Cx) -> Option<Environment> {
        let f = Fields::open(
            node,
            cx,
            "",
            &[
                "name",
                "description",
                "backend",
                "server",
                "client",
                "cache",
                "hog",
                "scale",
                "allow_cache_overcommit",
                "host",
                "topology",
                "share_cpus",
                "member_cpus",
                "network",
            ],
        )?;
        check_spec_name(&f, cx, name);
        let server = f.get("server").and_then(|n| server_from_node(n, cx));
        if f.get("server").is_none() {
            f.req::<String>(cx, "server");
        }
        let client = match f.get("client") {
            Some(n) => Fields::open(n, cx, "client", &["cpus", "node"]).and_then(|c| {
                let node = c.or(cx, "node", ClientNode::Same);
                c.req::<CpuSet>(cx, "cpus")
                    .map(|cpus| Client { cpus, node })
            }),
            None => {
                f.req::<String>(cx, "client");
                None
            }
        };
        let scale = scale_of(&f, cx);
        let engine_default = f.get("cache").and_then(|n| n.scalar()) == Some("default");
        let env = Environment {
            name: name.to_string(),
            description: f.or(cx, "description", String::new()),
            backend: f.or(cx, "backend", Backend::Cgroup),
            server: server?,
            client: client?,
            cache: if engine_default {
                None
            } else {
                f.opt(cx, "cache")
            },
            cache_choice: if engine_default {
                CacheChoice::EngineDefault
            } else {
                CacheChoice::Planned
            },
            hog: f.or(cx, "hog", Hog::None),
            scale,
            allow_cache_overcommit: f.or(cx, "allow_cache_overcommit", false),
            host: f.or(cx, "host", HostSettings::default()),
            topology: f.or(cx, "topology", crate::model::Topology::Standalone),
            share_cpus: f.or(cx, "share_cpus", false),
            member_cpus: f.or(cx, "member_cpus", BTreeMap::new()),
            network: match f.get("network") {
                Some(n) => Some(network_from_node(n, cx)?),
                None => None,
            },
            origin: Origin::default(),
        };
        Some(env)
    }

    /// Checks that need no host: CPU sets apart, cache under the cap, the
    /// hog leaving room for the cap. Reported against this spec's origin.
    pub(crate) fn static_checks(&self) -> Vec<super::diag::Diagnostic> {
        let mut out = Vec::new();
        let overlap = self.server.cpus.intersection(&self.client.cpus);
        if !overlap.is_empty() {
            out.push(
                self.origin.diag(
                    "client.cpus",
                    format!(
                        "client CPUs {} overlap the server's {} on {}",
                        self.client.cpus, self.server.cpus, overlap
                    ),
                    Some(
                        "the load generator must not steal the server's budget; give it other CPUs"
                            .into(),
                    ),
                ),
            );
        }
        if self.server.cpus.is_empty() {
            out.push(
                self.origin
                    .diag("server.cpus", "the server needs at least one CPU", None),
            );
        }
        let r = self.resolved();
        if let (Some(mem), Some(cache)) = (r.memory, r.cache_abs)
            && cache > mem
            && !self.allow_cache_overcommit
        {
            out.push(self.origin.diag(
                "cache",
                format!("cache {cache} is larger than the memory cap {mem}"),
                Some("lower `cache`, raise `server.memory`, or set `allow_cache_overcommit: true` to reproduce an overcommitted engine".into()),
            ));
        }
        if let Some(SizeOrShare::Share(s)) = self.cache
            && s.fraction() > 1.0
            && !self.allow_cache_overcommit
        {
            out.push(self.origin.diag(
                "cache",
                format!("cache {s} of the memory cap is more than all of it"),
                Some("use at most 100%, or set `allow_cache_overcommit: true`".into()),
            ));
        }
        if let (Some(mem), Hog::Leave(leave)) = (r.memory, r.hog)
            && mem > leave
        {
            out.push(self.origin.diag(
                "hog.leave",
                format!("the hog leaves {leave} but the server's memory cap is {mem}"),
                Some("the cap could never be reached; leave at least the cap, or drop `server.memory`".into()),
            ));
        }
        out.extend(self.member_cpu_problems());
        if self.server.io.read_iops == Some(0) || self.server.io.write_iops == Some(0) {
            out.push(self.origin.diag(
                "server.io",
                "an IO limit of 0 stops all IO",
                Some("omit a limit to leave it unthrottled".into()),
            ));
        }
        out
    }

    /// `member_cpus`: known roles (`plan` checks the CPUs against the
    /// server's as `--set` leaves them, and against each other).
    fn member_cpu_problems(&self) -> Vec<super::diag::Diagnostic> {
        let roles = crate::model::Role::NAMES;
        self.member_cpus
            .keys()
            .filter(|role| !roles.contains(&role.as_str()))
            .map(|role| {
                self.origin.diag(
                    &format!("member_cpus.{role}"),
                    format!("unknown member role `{role}`"),
                    Some(format!("one of: {}", roles.join(", "))),
                )
            })
            .collect()
    }

    /// Sizes with this environment's scale applied.
    pub fn resolved(&self) -> Resolved {
        let memory = self.server.memory.map(|m| m.scaled(self.scale));
        let cache_abs = match self.cache {
            Some(SizeOrShare::Absolute(b)) => Some(b.scaled(self.scale)),
            Some(SizeOrShare::Share(s)) => memory.map(|m| s.of(m)),
            None => memory.map(|m| crate::units::Share(DEFAULT_CACHE_SHARE).of(m)),
        };
        let hog = match self.hog {
            Hog::None => Hog::None,
            Hog::Leave(b) => Hog::Leave(b.scaled(self.scale)),
        };
        Resolved {
            memory,
            cache_abs,
            hog,
        }
    }
}

/// An environment's sizes after scaling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resolved {
    pub memory: Option<Bytes>,
    /// Absolute cache when it can be known without the host.
    pub cache_abs: Option<Bytes>,
    pub hog: Hog,
}
