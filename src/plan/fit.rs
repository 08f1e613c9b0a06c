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
    let (cache, overhead) = (knobs.cache, e.engine.cache_overhead);
    if let Some(cap) = ep.env.memory.or(ep.hog_leave())
        && knobs.has_cache_knob
        && cache.0 + overhead.0 > cap.0
        && !ep.env.allow_cache_overcommit
    {
        let msg = format!(
            "{label}: cache {cache} + engine overhead {overhead} does not fit under the memory cap {cap} (or what the hog leaves)"
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
