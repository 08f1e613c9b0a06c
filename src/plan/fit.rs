//! Whether an environment and a cell's cache fit: the cache (and the
//! engine's overhead) under the memory cap, and what this host can give
//! (CPUs, RAM, hog room, swap and its accounting, a cgroup hierarchy,
//! transparent huge pages the engine accepts). The load generator's and
//! the data's fit are in `host_fit`.

use super::env::EnvPlan;
use super::knobs::Knobs;
use super::overrides::{Sets, set_flag};
use super::{Entry, HOG_MARGIN, suggest_scale};
use crate::display::approx;
use crate::host::{CgroupLayout, HostFacts};
use crate::model::{Backend, SwapPolicy, ThpNeed, ThpPolicy};
use crate::sandbox::thp::{ThpFiles, ThpMode};
use crate::spec::Scenario;
use crate::spec::diag::{Diagnostic, Diagnostics};
use crate::units::Bytes;

/// The free space the work dir's environment variable claims must be a size.
pub(super) fn check_work_free(host: &HostFacts, diags: &mut Diagnostics) {
    if let Some(v) = &host.work_free_set
        && let Err(e) = v.parse::<Bytes>()
    {
        diags.push(Diagnostic::flag(
            crate::sandbox::roots::WORK_FREE_ENV,
            crate::error::excerpt(v).into_owned(),
            e.0,
            Some("the free space to plan with in the work dir, like 200GiB; unset it to use what the filesystem reports".into()),
        ));
    }
}

/// The cache and the engine's overhead under the memory cap (or what the
/// hog leaves), unless the environment allows overcommit; and a cache of
/// more than nothing.
pub(super) fn check_cache(
    e: &Entry,
    sets: &Sets,
    knobs: &Knobs,
    diags: &mut Diagnostics,
) -> Option<()> {
    let (s, ep, label) = (sets.scenario(), e.ep, &e.label);
    let cache = knobs.cache;
    let figure = e.engine.cache_overhead.of(e.version);
    let overhead = figure.size;
    if let Some(cap) = ep.env.memory.or(ep.hog_leave())
        && knobs.has_cache_knob
        && cache.0 + overhead.0 > cap.0
        && !ep.env.allow_cache_overcommit
    {
        let msg = format!(
            "{label}: cache {cache} + engine overhead {figure} does not fit under the memory cap {cap} (or what the hog leaves)"
        );
        let hint = Some("lower the cache, raise server.memory, or set allow_cache_overcommit: true to reproduce an overcommitted engine".to_string());
        diags.push(if sets.sets_knob("cache_size") {
            set_flag("cache_size", &cache.to_string(), msg, hint)
        } else {
            ep.diag(s, "cache", msg, hint)
        });
        return None;
    }
    if cache.0 == 0 && knobs.has_cache_knob {
        diags.push(ep.diag(
            s,
            "cache",
            format!("{label}: the cache resolves to 0 bytes"),
            Some("give `cache` a size".into()),
        ));
        return None;
    }
    Some(())
}

/// What benchcage needs of the host beside its servers: its own process,
/// the sampler and the load generator's connections. Beside a hog it is
/// the hog's safety margin, which the hog keeps free for exactly this.
pub const OWN_NEED: Bytes = HOG_MARGIN;

/// What a cell's members together take of the host: each member's cap,
/// the hog's lock and benchcage's own need, summed against the host's
/// RAM (without a hog) or MemAvailable less the hog's margin (with one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MemberSum {
    pub members: u64,
    pub cap: Bytes,
    /// What the hog will lock, when there is one.
    pub hog_lock: Option<Bytes>,
    pub total: Bytes,
    /// What the host has to give.
    pub room: Bytes,
    /// `room` in words.
    pub room_from: String,
}

impl MemberSum {
    /// The sum for `members` members each capped at `cap` on `host`, with
    /// the hog (when `hog_leave`) sized as it will be.
    pub fn of(members: u64, cap: Bytes, hog_leave: Option<Bytes>, host: &HostFacts) -> MemberSum {
        let caps = cap.0.saturating_mul(members);
        let (hog_lock, room, room_from) = match hog_leave {
            Some(leave) => {
                let room = host.mem_available.saturating_sub(HOG_MARGIN);
                (
                    Some(room.saturating_sub(leave)),
                    room,
                    format!(
                        "the {} available (MemAvailable) less the hog's {HOG_MARGIN} margin",
                        approx(host.mem_available)
                    ),
                )
            }
            None => (
                None,
                host.mem_total,
                format!("this host's {} of RAM", approx(host.mem_total)),
            ),
        };
        let total = caps
            .saturating_add(hog_lock.map_or(0, |l| l.0))
            .saturating_add(OWN_NEED.0);
        MemberSum {
            members,
            cap,
            hog_lock,
            total: Bytes(total),
            room,
            room_from,
        }
    }

    /// The sum in words: `3 members x 22.5GiB + benchcage's own 256MiB = 67.8GiB`.
    fn text(&self) -> String {
        let hog = self
            .hog_lock
            .map(|l| format!(" + the hog's lock {}", approx(l)))
            .unwrap_or_default();
        format!(
            "{} member(s) x {} memory cap{hog} + benchcage's own {OWN_NEED} = {}",
            self.members,
            approx(self.cap),
            approx(self.total)
        )
    }
}

/// Refuse a cell whose members' caps, with the hog's lock and
/// benchcage's own need, add up to more than the host has; a cell
/// without a memory cap has nothing to sum.
pub(super) fn check_member_sum(
    e: &Entry,
    s: &Scenario,
    members: usize,
    host: &HostFacts,
    diags: &mut Diagnostics,
) -> Option<()> {
    let Some(cap) = e.ep.env.memory else {
        return Some(());
    };
    if cap > host.mem_total {
        // check_memory has said so for the single cap.
        return Some(());
    }
    let sum = MemberSum::of(members as u64, cap, e.ep.hog_leave(), host);
    if sum.total <= sum.room {
        return Some(());
    }
    let per_member = Bytes(
        sum.room
            .0
            .saturating_sub(sum.hog_lock.map_or(0, |l| l.0) + OWN_NEED.0)
            / sum.members.max(1),
    );
    diags.push(e.ep.diag(
        s,
        "server.memory",
        format!(
            "{} {}: {}, more than {} ({})",
            e.label,
            super::members::topology_of(e).key(),
            sum.text(),
            approx(sum.room),
            sum.room_from
        ),
        Some(format!(
            "each member gets the environment's cap: give it at most {} (--set server.memory=SIZE), use a smaller scale (e.g. `scale: {}`), or fewer members",
            approx(per_member),
            suggest_scale(sum.total, sum.room)
        )),
    ));
    None
}

/// An engine that cannot resize its cache at run time (no
/// `cache_resize:`, like PostgreSQL's shared_buffers) keeps the cache it
/// started with when settle shrinks the cap: refuse a cell whose cache
/// (and overhead) would not fit the smallest cap settle sets, as
/// estimated from the data the dataset loads (raw bytes: an engine
/// reports at least that, so the estimate errs towards refusing).
pub(super) fn check_fixed_cache(
    e: &Entry,
    sets: &Sets,
    knobs: &Knobs,
    footprint: Option<&super::footprint::Footprint>,
    diags: &mut Diagnostics,
) -> Option<()> {
    use crate::model::SettleMemory;
    let s = sets.scenario();
    let cache = knobs.cache;
    let figure = e.engine.cache_overhead.of(e.version);
    let overhead = figure.size;
    if e.engine.cache_resize.is_some() || !knobs.has_cache_knob || e.ep.env.allow_cache_overcommit {
        return Some(());
    }
    let data = footprint.map_or(0, |f| f.record_bytes.saturating_mul(f.loaded));
    let caps = s
        .settle
        .iter()
        .flat_map(|sw| sw.memory.iter())
        .filter_map(|m| match *m {
            SettleMemory::OfData(f) if data > 0 => Some((
                crate::plan::settle::settled_cap(crate::units::Share(f), Bytes(data)),
                format!("{} (about {} loaded)", m.text(), approx(Bytes(data))),
            )),
            SettleMemory::OfData(_) => None,
            SettleMemory::Absolute(b) => Some((b, m.text())),
        });
    let Some((cap, what)) = caps.min_by_key(|(c, _)| *c) else {
        return Some(());
    };
    if cache.0 + overhead.0 <= cap.0 {
        return Some(());
    }
    let most = Bytes(cap.0.saturating_sub(overhead.0));
    let msg = format!(
        "{}: settle sets the memory cap to {what}, about {}, but {} cannot resize its cache while it runs (its spec has no `cache_resize:`): the cache {cache} + engine overhead {figure} it starts with would not fit",
        e.label,
        approx(cap),
        e.engine.name
    );
    let hint = Some(format!(
        "give it a cache of at most {} (--set cache={}), settle to a larger share, or set allow_cache_overcommit: true to run it overcommitted",
        approx(most),
        Bytes(most.0 >> 20 << 20)
    ));
    diags.push(if sets.sets_knob("cache_size") {
        set_flag("cache_size", &cache.to_string(), msg, hint)
    } else {
        s.origin.diag("settle.memory", msg, hint)
    });
    None
}

/// Why a cell of the entry's engine cannot run on this host as the
/// environment leaves its transparent huge pages: the engine refuses
/// `always`, the host has it, and the environment does not have benchcage
/// turn it off.
pub(super) fn thp_refusal(e: &Entry, s: &Scenario, host: &HostFacts) -> Option<Diagnostic> {
    let always = matches!(&host.thp, Ok(Some(t)) if t.enabled == ThpMode::Always);
    if e.engine.transparent_hugepages != ThpNeed::NotAlways
        || e.ep.env.thp == ThpPolicy::Off
        || !always
    {
        return None;
    }
    let file = ThpFiles::current().enabled_path();
    Some(e.ep.diag(
        s,
        "host.transparent_hugepages",
        format!(
            "{} refuses to start while transparent huge pages are `always` ({} selects [always] on this host)",
            e.label,
            file.display()
        ),
        Some(format!(
            "have benchcage turn them off for each cell and restore them after: `host: {{transparent_hugepages: off}}` in environments/{}.yaml, or --set host.transparent_hugepages=off; or turn them off on the host: echo never > {} (as root; madvise works too)",
            e.ep.spec.name,
            file.display()
        )),
    ))
}

/// Refuse what this host cannot give: CPUs, RAM, hog room, swap
/// accounting, a cgroup hierarchy.
pub(super) fn check_env_on_host(
    s: &Scenario,
    ep: &EnvPlan,
    host: &HostFacts,
    diags: &mut Diagnostics,
) {
    check_cpus(s, ep, host, diags);
    check_memory(s, ep, host, diags);
    check_swap(s, ep, host, diags);
    check_data_disk(s, ep, host, diags);
    if ep.env.backend == Backend::Cgroup && host.cgroup == CgroupLayout::None {
        diags.push(ep.diag(
            s,
            "backend",
            "no cgroup hierarchy is mounted on this host".into(),
            Some("see `benchcage doctor`".into()),
        ));
    }
}

/// Server and client CPUs online, and apart.
fn check_cpus(s: &Scenario, ep: &EnvPlan, host: &HostFacts, diags: &mut Diagnostics) {
    let e = &ep.env;
    let n_online = host.online_cpus.len();
    for (key, cpus) in [
        ("server.cpus", &e.server_cpus),
        ("client.cpus", &e.client_cpus),
    ] {
        if cpus.is_empty() {
            diags.push(ep.diag(s, key, "the CPU set is empty".into(), None));
        } else if !cpus.is_subset(&host.online_cpus) {
            diags.push(ep.diag(
                s,
                key,
                format!(
                    "this host has {n_online} CPUs online ({}); `{key}: {cpus}` asks for {} including ones it lacks",
                    host.online_cpus,
                    cpus.len()
                ),
                Some(format!(
                    "fit it to this host in the scenario (`{{name: {}, set: {{server.cpus: \"1\", client.cpus: \"0\"}}}}`) or with --set {key}=...",
                    ep.name
                )),
            ));
        }
    }
    let overlap = e.server_cpus.intersection(&e.client_cpus);
    if !overlap.is_empty() {
        diags.push(ep.diag(
            s,
            "client.cpus",
            format!(
                "client CPUs {} overlap the server's {} on {overlap}",
                e.client_cpus, e.server_cpus
            ),
            Some("the load generator must run on other CPUs than the server".into()),
        ));
    }
}

/// The memory cap within the host's RAM, and the hog's leave within what
/// is available and above the cap.
fn check_memory(s: &Scenario, ep: &EnvPlan, host: &HostFacts, diags: &mut Diagnostics) {
    let e = &ep.env;
    if let Some(m) = e.memory
        && m > host.mem_total
    {
        diags.push(ep.diag(
            s,
            "server.memory",
            format!(
                "the memory cap {m} is more than this host's RAM ({})",
                host.mem_total
            ),
            Some(format!(
                "scale the environment (e.g. `scale: {}`) or --set server.memory=SIZE",
                suggest_scale(m, host.mem_total)
            )),
        ));
    }
    let Some(leave) = ep.hog_leave() else {
        return;
    };
    if let Err(m) = crate::sandbox::hog::check_leave(leave) {
        diags.push(ep.diag(
            s,
            "hog.leave",
            format!("after scaling: {m}"),
            Some("use a larger scale, or --set hog.leave=SIZE".into()),
        ));
    }
    let room = host.mem_available.saturating_sub(HOG_MARGIN);
    if leave >= room {
        diags.push(ep.diag(
            s,
            "hog.leave",
            format!(
                "the hog should leave {leave} but only {} is available ({} after a {HOG_MARGIN} margin): it would lock nothing",
                approx(host.mem_available),
                approx(room)
            ),
            Some(format!("scale the environment (e.g. `scale: {}`) or --set hog.leave=SIZE", suggest_scale(leave, room))),
        ));
    }
    if let Some(m) = e.memory
        && m > leave
    {
        diags.push(ep.diag(
            s,
            "hog.leave",
            format!(
                "the hog leaves {leave} but the memory cap is {m}: the cap could never be reached"
            ),
            Some("leave at least the cap".into()),
        ));
    }
}

/// The data disk (`server.disk.size`, scaled) above the floor and within
/// the free space of the work root, where its image file goes: the image
/// is sparse, but a disk the work root cannot back would fail the engine
/// with an error of the host's disk, not of its own.
fn check_data_disk(s: &Scenario, ep: &EnvPlan, host: &HostFacts, diags: &mut Diagnostics) {
    let Some(size) = ep.env.disk else {
        return;
    };
    if let Some((message, hint)) = crate::spec::environment::disk_floor_problem(size) {
        diags.push(ep.diag(
            s,
            "server.disk.size",
            format!("after scaling: {message}"),
            Some(hint),
        ));
    }
    if ep.env.io != Default::default() {
        diags.push(ep.diag(
            s,
            "server.disk.size",
            "a data disk with `server.io` limits: the disk's writes reach the host's device from the kernel's loop thread, outside the server's cgroup, so the limits would not hold".into(),
            Some("leave out either `server.io` or `server.disk`".into()),
        ));
    }
    if let Some(free) = host.work_free
        && size > free
    {
        diags.push(ep.diag(
            s,
            "server.disk.size",
            format!(
                "a data disk of {size} is more than the {} free in {} (where its image file goes)",
                approx(free),
                host.work_dir.display()
            ),
            Some(format!(
                "give a smaller disk (--set server.disk.size=SIZE), scale the environment (e.g. `scale: {}`), or point {} at a bigger disk",
                suggest_scale(size, free),
                crate::sandbox::roots::WORK_ENV
            )),
        ));
    }
}

/// Swap the server may use exists, and the kernel accounts for it.
fn check_swap(s: &Scenario, ep: &EnvPlan, host: &HostFacts, diags: &mut Diagnostics) {
    let SwapPolicy::Limit(n) = ep.env.swap else {
        return;
    };
    if n.0 > 0 && host.swap_total.0 == 0 {
        diags.push(ep.diag(
            s,
            "server.swap",
            format!("the server may swap {n} but this host has no swap (SwapTotal is 0): the limit would never be reached"),
            Some("use `swap: off`, or add swap to the host (swapon)".into()),
        ));
    }
    if !host.swap_accounting {
        diags.push(ep.diag(
            s,
            "server.swap",
            "swap is limited but this kernel has no swap accounting (no memory.memsw.* on cgroup v1)".into(),
            Some("boot with swapaccount=1, or use `swap: off`".into()),
        ));
    }
}

/// The environment's network as entry `e` has it on `host`: `auto` is
/// the kernel emulation where it can be (see [`kernel_refusal`]), else the
/// proxy; an explicit `kernel` it cannot have is refused (the host's netem
/// only with `host_checks`). Both backends and every topology can have it
/// (a topology's members share the cell's namespace).
pub(super) fn network_of(
    e: &Entry,
    s: &Scenario,
    host: &HostFacts,
    host_checks: bool,
) -> Result<Option<crate::network::Network>, Box<Diagnostic>> {
    use crate::network::Emulation;
    let Some(n) = &e.ep.env.network else {
        return Ok(None);
    };
    let refusal = kernel_refusal(n, host.netem);
    match (n.emulation, refusal) {
        (Emulation::Auto, r) => Ok(Some(n.clone().resolved(r.is_none()))),
        (Emulation::Kernel, Some((msg, hint))) if host_checks => {
            Err(Box::new(e.ep.diag(s, "network.emulation", msg, Some(hint))))
        }
        _ => Ok(Some(n.clone())),
    }
}

/// Why the kernel emulation (a namespace of the cell's own with netem or
/// a token bucket on its loopback) cannot impose `n` on a kernel with or
/// without netem: the message and the hint.
fn kernel_refusal(n: &crate::network::Network, netem: bool) -> Option<(String, String)> {
    let proxy = "use `emulation: proxy` (or `auto`, which picks it here): a relay in benchcage imposes the network";
    if crate::network::netns::needs_netem(n) && !netem {
        return Some((
            format!(
                "this host's kernel has no netem (sch_netem is not loaded, built in or loadable), which {} needs",
                n.describe()
            ),
            format!(
                "{proxy}; or ask only a rate (`delay: 0us`), which a token bucket imposes on any kernel; or load sch_netem (`modprobe sch_netem`)"
            ),
        ));
    }
    None
}

/// Why a cell of entry `e` cannot put its client on another node
/// (`client: {node: other}`), if it asks to: only the built-in load
/// generator is started there, against one server that can listen on
/// its node's address, over the cluster's own network.
pub(super) fn client_node_refusal(
    e: &Entry,
    s: &Scenario,
    members: usize,
    phases: &[crate::plan::cell::PlannedPhase],
) -> Option<Diagnostic> {
    if e.ep.env.client_node.is_same() {
        return None;
    }
    let why = if e.ep.env.network.is_some() {
        Some((
            "`network:` emulates the link between the client and the server, and `client.node: other` puts a real one between them: a cell has one or the other".to_string(),
            "drop `network:` to measure the cluster's own network, or `client.node` to emulate one".to_string(),
        ))
    } else if members > 1 {
        Some((
            format!(
                "a client on another node is built for one server; this cell has {members} members (they listen on 127.0.0.1 only)"
            ),
            "use a single server, or `client.node: same`".to_string(),
        ))
    } else if e.engine.listen.is_empty() {
        Some((
            format!("engine {} says no way to listen on its node's address (no `listen:` in engines/{}.yaml), so a client on another node cannot reach it", e.engine.name, e.engine.name),
            "add `listen:` to the engine spec (the argv that adds `{address}` to what it listens on), or use `client.node: same`".to_string(),
        ))
    } else {
        phases
            .iter()
            .find(|p| matches!(p.config, crate::plan::cell::PhaseConfig::Tool(_)))
            .map(|p| {
                (
                    format!("phase `{}` runs an external tool; only the built-in load generator runs on another node", p.phase.name),
                    "use a built-in workload there, or `client.node: same`".to_string(),
                )
            })
    }?;
    Some(e.ep.diag(s, "client.node", why.0, Some(why.1)))
}
