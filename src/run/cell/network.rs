//! The cell's network. The proxy emulation: in the stage `network`,
//! between the engine being ready and the load, the relays that impose
//! the environment's `network:` on every client connection (one per
//! client port), and the probe that measures the round trip the emulation
//! really gives before anything is measured through it; benchcage's own
//! connections (readiness, facts, counting records) go straight to the
//! server. The kernel emulation: at provision, a namespace of the cell's
//! own with the qdiscs on its loopback ([`isolate`]; on docker, a holder
//! container's), which the engine, a topology's members and every client
//! process start in; at render, a bridge from the host's loopback into it
//! on the engine's port ([`bridge`]; each member gets one on its port,
//! [`bridge_into`]), so benchcage's own connections reach the engine at
//! the same address; in the stage `network`, the probe inside the
//! namespace, the qdiscs read back and every server process checked to be
//! inside; each phase's traffic from the qdisc's counter ([`qdisc_sent`]).

use super::{CellWork, Running, Stop};
use crate::network::probe::{self, Echo, RoundTrips};
use crate::network::relay::{Relay, RelayStats, Wire};
use crate::network::{Emulation, Network, Shape};
use crate::results::model::{NamespaceFidelity, NetworkFidelity, PhaseTraffic};
use crate::sandbox::NetworkNamespace;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Echoes a probe times, as issue 30 asks: the median of 100.
const PROBE_ECHOES: usize = 100;
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The relays in front of the cell's client ports.
pub(super) struct Links {
    relays: Vec<Relay>,
    /// Server port -> the relay's port the client is given instead.
    ports: BTreeMap<u16, u16>,
}

impl Links {
    /// The ports the client is given for `server_ports`.
    pub(super) fn client_ports(&self, server_ports: &[u16]) -> Vec<u16> {
        server_ports
            .iter()
            .map(|p| self.ports.get(p).copied().unwrap_or(*p))
            .collect()
    }

    /// What the relays did so far, together.
    pub(super) fn stats(&self) -> RelayStats {
        RelayStats::sum(self.relays.iter().map(Relay::stats))
    }

    /// Stops every relay; what they did together.
    pub(super) fn stop(self) -> RelayStats {
        stop_all(self.relays)
    }
}

/// Stops `relays`; what they did together.
pub(super) fn stop_all(relays: Vec<Relay>) -> RelayStats {
    RelayStats::sum(relays.into_iter().map(Relay::stop))
}

/// The relay a follower reaches its leader on `leader` through: the same
/// shape as the client's link, on the client's CPUs (a link costs neither
/// server).
pub(super) fn link(
    network: &Network,
    leader: u16,
    limits: &crate::model::CellLimits,
) -> Result<Relay, Stop> {
    let shape = network.shape(u64::from(leader));
    on_client_cpus((0, leader), shape, limits, None)
        .map_err(|e| Stop::Failed(format!("network: starting a replication link's relay: {e}")))
}

/// A relay from the host's 127.0.0.1:`listen` (0: any free port) to
/// 127.0.0.1:`upstream` (inside the namespace whose file is `netns`, if
/// any), its threads on the client's CPUs.
fn on_client_cpus(
    (listen, upstream): (u16, u16),
    shape: Shape,
    limits: &crate::model::CellLimits,
    netns: Option<&std::path::Path>,
) -> std::io::Result<Relay> {
    let cpus: Vec<u32> = limits.client_cpus.iter().collect();
    Relay::start_in(loopback(listen), loopback(upstream), shape, &cpus, netns)
}

/// The kernel emulation's namespace and the bridge into it.
pub(super) struct Isolation {
    ns: NetworkNamespace,
    /// From the host's 127.0.0.1:port to the namespace's, for
    /// benchcage's own connections to the engine (started at render).
    bridge: Option<Relay>,
}

/// At provision, for the kernel emulation: the cell's namespace with the
/// network's qdisc on its loopback; the sandbox starts everything in it,
/// and so do the topology's members (they share it: replication crosses
/// the same loopback).
pub(super) async fn isolate(network: &Network, r: &mut Running) -> Result<(), Stop> {
    if network.emulation != Emulation::Kernel {
        return Ok(());
    }
    let ns = r.sandbox().isolate_network(network).await?;
    r.topology.share_network(&ns);
    r.isolation = Some(Isolation { ns, bridge: None });
    Ok(())
}

/// At render, for the kernel emulation: a bridge from the host's loopback
/// on the engine's port to the same port inside the namespace (each
/// namespace has its ports of its own), with no delay of its own: the
/// readiness checks, facts and record counts reach the engine at
/// 127.0.0.1:port as they would without a namespace (over its qdisc).
pub(super) fn bridge(work: &CellWork, r: &mut Running) -> Result<(), Stop> {
    let port = r.port;
    let Some(iso) = r.isolation.as_mut() else {
        return Ok(());
    };
    iso.bridge = Some(bridge_into(&iso.ns, port, &work.limits)?);
    Ok(())
}

/// A bridge from the host's 127.0.0.1:`port` to the same port inside
/// namespace `ns`, on the client's CPUs (a member's port, or the cell's
/// server's).
pub(super) fn bridge_into(
    ns: &NetworkNamespace,
    port: u16,
    limits: &crate::model::CellLimits,
) -> Result<Relay, Stop> {
    on_client_cpus((port, port), Shape::default(), limits, Some(&ns.path)).map_err(|e| {
        Stop::Failed(format!(
            "network: a bridge from 127.0.0.1:{port} into namespace {}: {e}",
            ns.name
        ))
    })
}

/// The `network` stage: the relays in front of the client ports (proxy)
/// or the namespace's qdiscs and the engine in it (kernel), and the
/// probe's record (a violation when the round trip is off).
pub(super) fn open(work: &CellWork, network: &Network, r: &mut Running) -> Result<(), Stop> {
    if let Some(iso) = &r.isolation {
        // A container's engine has no pid of the cell's own: the first
        // process of its cgroup is its PID 1.
        let engine = r
            .engine_pid
            .or_else(|| r.sandbox.as_ref()?.server_pids().first().copied());
        let (fidelity, mut violations) = kernel(network, &iso.ns, engine)?;
        violations.extend(members_outside(&iso.ns, &r.topology.server_pids()));
        r.record.fidelity.network = Some(fidelity);
        r.record.fidelity.violations.extend(violations);
        return Ok(());
    }
    let seed = u64::from_str_radix(work.key.get(..16).unwrap_or("0"), 16).unwrap_or(0);
    let cpus: Vec<u32> = work.limits.client_cpus.iter().collect();
    let ports = r.topology.client_ports(r.port);
    let (links, fidelity, violation) = connect(network, seed, &ports, &cpus)?;
    r.record.fidelity.network = Some(fidelity);
    r.record.fidelity.violations.extend(violation);
    r.links = Some(links);
    Ok(())
}

/// At teardown: the relays stop, and what they did joins the record; the
/// bridge into the namespace stops (the sandbox removes the namespace).
pub(super) fn close(r: &mut Running) {
    if let Some(bridge) = r.isolation.as_mut().and_then(|i| i.bridge.take()) {
        let stats = bridge.stop();
        if let Some(ns) = r
            .record
            .fidelity
            .network
            .as_mut()
            .and_then(|n| n.namespace.as_mut())
        {
            ns.bridge = Some(stats);
        }
    }
    if let Some(links) = r.links.take() {
        let stats = links.stop();
        if let Some(n) = r.record.fidelity.network.as_mut() {
            n.relay = Some(stats);
        }
    }
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Starts a relay per client port with the network's shape, then probes
/// the round trip: once on the bare loopback, once through a relay of the
/// same shape to an echo server of its own. A probe whose median is
/// outside half to twice the asked round trip is a violation.
fn connect(
    network: &Network,
    seed: u64,
    server_ports: &[u16],
    cpus: &[u32],
) -> Result<(Links, NetworkFidelity, Option<String>), Stop> {
    let shape = network.shape(seed);
    let fail = |what: &str, e: std::io::Error| Stop::Failed(format!("network: {what}: {e}"));
    let mut links = Links {
        relays: Vec::new(),
        ports: BTreeMap::new(),
    };
    // One link for every client port (a cluster's routers): the client's
    // traffic to all of them shares the rate, as it shares a host's NIC.
    let wire = Wire::default();
    for &port in server_ports {
        let relay = Relay::start_on(
            loopback(0),
            loopback(port),
            shape.clone(),
            cpus,
            wire.clone(),
        )
        .map_err(|e| fail("starting the relay", e))?;
        links.ports.insert(port, relay.addr().port());
        links.relays.push(relay);
    }
    let (bare, through) =
        probe_both(&shape, cpus).map_err(|e| fail("probing the round trip", e))?;
    let violation = judge(network, &through);
    Ok((links, measured(network, bare, through, None), violation))
}

/// The kernel emulation's record: the round trip on the host's loopback
/// and inside the namespace (an echo server and its client both there),
/// the qdiscs read back, and the engine's namespace. Violations: the
/// round trip off, a qdisc missing, an engine outside the namespace.
fn kernel(
    network: &Network,
    ns: &NetworkNamespace,
    engine: Option<u32>,
) -> Result<(NetworkFidelity, Vec<String>), Stop> {
    let fail = |what: &str, e: std::io::Error| Stop::Failed(format!("network: {what}: {e}"));
    let bare = probe_once().map_err(|e| fail("probing the loopback", e))?;
    let path = ns.path.clone();
    let through = std::thread::spawn(move || {
        let fd = crate::network::netns::open(&path)?;
        crate::network::netns::enter(&fd)?;
        probe_once()
    })
    .join()
    .unwrap_or_else(|_| Err(std::io::Error::other("the probe's thread panicked")))
    .map_err(|e| {
        fail(
            &format!("probing the round trip in namespace {}", ns.name),
            e,
        )
    })?;
    let namespace = NamespaceFidelity {
        name: ns.name.clone(),
        qdiscs: ns.qdiscs.clone(),
        inode: crate::network::netns::inode(&ns.path),
        engine_inode: engine
            .and_then(|pid| crate::network::netns::inode(format!("/proc/{pid}/ns/net").as_ref())),
        bridge: None,
    };
    let mut violations: Vec<String> = judge(network, &through).into_iter().collect();
    violations.extend(namespace_violations(network, &namespace));
    Ok((
        measured(network, bare, through, Some(namespace)),
        violations,
    ))
}

/// The record of a network before the load: what was asked, the round
/// trips measured, the kernel emulation's namespace.
fn measured(
    network: &Network,
    loopback: RoundTrips,
    round_trip: RoundTrips,
    namespace: Option<NamespaceFidelity>,
) -> NetworkFidelity {
    NetworkFidelity {
        asked: network.clone(),
        loopback,
        round_trip,
        relay: None,
        links: None,
        namespace,
    }
}

/// An echo server and the probe, both where the calling thread is.
fn probe_once() -> std::io::Result<RoundTrips> {
    let echo = Echo::start(loopback(0))?;
    probe::round_trips(echo.addr(), PROBE_ECHOES, PROBE_TIMEOUT)
}

/// What the namespace's record shows wrong: the qdisc the network needs
/// not read back, or the engine not inside the namespace.
fn namespace_violations(network: &Network, ns: &NamespaceFidelity) -> Vec<String> {
    let mut out = Vec::new();
    let kind = crate::network::netns::qdisc(network)
        .into_iter()
        .next()
        .unwrap_or_default();
    if !ns
        .qdiscs
        .iter()
        .any(|q| q.starts_with(&format!("qdisc {kind} ")))
    {
        out.push(format!(
            "network: namespace {} has no {kind} qdisc on its loopback (read back: {}); the cell was not measured over the network it claims",
            ns.name,
            ns.qdiscs.join(" | ")
        ));
    }
    if ns.engine_inode.is_none() || ns.engine_inode != ns.inode {
        out.push(format!(
            "network: the engine was not inside namespace {} (its /proc/PID/ns/net is {:?}, the namespace's {:?})",
            ns.name, ns.engine_inode, ns.inode
        ));
    }
    out
}

/// A member's process outside the cell's namespace (the members share
/// it, so that replication crosses its loopback): a violation naming them.
fn members_outside(ns: &NetworkNamespace, pids: &[u32]) -> Option<String> {
    let inside = crate::network::netns::inode(&ns.path);
    let outside: Vec<String> = pids
        .iter()
        // A process gone meanwhile (no inode) is no evidence either way.
        .filter(|pid| {
            crate::network::netns::inode(format!("/proc/{pid}/ns/net").as_ref())
                .is_some_and(|i| Some(i) != inside)
        })
        .map(u32::to_string)
        .collect();
    (!outside.is_empty()).then(|| {
        format!(
            "network: the members' processes {} were not inside namespace {}; replication did not cross the emulated network",
            outside.join(", "),
            ns.name
        )
    })
}

fn probe_both(shape: &Shape, cpus: &[u32]) -> std::io::Result<(RoundTrips, RoundTrips)> {
    let echo = Echo::start(loopback(0))?;
    let bare = probe::round_trips(echo.addr(), PROBE_ECHOES, PROBE_TIMEOUT)?;
    let relay = Relay::start(loopback(0), echo.addr(), shape.clone(), cpus)?;
    let through = probe::round_trips(relay.addr(), PROBE_ECHOES, PROBE_TIMEOUT);
    relay.stop();
    Ok((bare, through?))
}

/// What crossed the link over `took`, from the relays' counters.
pub(super) fn traffic(during: &RelayStats, took: Duration) -> PhaseTraffic {
    PhaseTraffic {
        seconds: took.as_secs_f64(),
        bytes_to_server: during.bytes_to_server,
        bytes_to_client: during.bytes_to_client,
        bytes_both: None,
    }
}

/// Under the kernel emulation: the bytes its qdisc has sent so far (both
/// directions), to take a phase's traffic as the difference; `None`
/// without a namespace or when `tc` cannot say.
pub(super) fn qdisc_sent(r: &Running) -> Option<u64> {
    let iso = r.isolation.as_ref()?;
    crate::network::netns::sent_bytes(&iso.ns.name).ok()
}

/// What crossed the namespace's loopback over `took`: the qdisc's count
/// from `before` to `after`, both directions together.
pub(super) fn qdisc_traffic(before: u64, after: u64, took: Duration) -> PhaseTraffic {
    PhaseTraffic {
        seconds: took.as_secs_f64(),
        bytes_both: Some(after.saturating_sub(before)),
        ..PhaseTraffic::default()
    }
}

/// A phase whose busier direction carried more than the asked rate by
/// over 10% was not measured on the link it claims (the relay paces every
/// connection of the cell on one shared link, so this is the check that
/// it did).
pub(crate) fn rate_violation(network: &Network, t: &PhaseTraffic) -> Option<String> {
    let rate = network.rate?;
    let asked = rate.bytes_per_sec();
    let got = t.busiest_bytes_per_s();
    (got > asked * 1.10).then(|| {
        format!(
            "network: the link carried {:.0} B/s in its busier direction, over the asked rate {rate} ({asked:.0} B/s) by more than 10%; the phase was not measured on the link it claims",
            got
        )
    })
}

/// A measured round trip outside 0.5x-2x of the asked one makes the cell
/// invalid: its numbers were not measured over the network it claims.
/// A link without a delay (a rate or a loss only) asks no round trip, so
/// there is none to hold.
pub(crate) fn judge(network: &Network, measured: &RoundTrips) -> Option<String> {
    let asked = network.delay.std() * 2;
    if asked.is_zero() {
        return None;
    }
    let got = measured.median();
    (got < asked / 2 || got > asked * 2).then(|| {
        format!(
            "network: the measured round trip was {}us, outside half to twice the asked {}us (delay {} each way, {} emulation); the cell was not measured over the network it claims",
            got.as_micros(),
            asked.as_micros(),
            network.delay,
            network.emulation.name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Emulation;

    fn net(delay: &str) -> Network {
        Network {
            delay: delay.parse().unwrap(),
            jitter: None,
            rate: None,
            loss: 0.0,
            emulation: Emulation::Proxy,
        }
    }

    fn rt(median_us: u64) -> RoundTrips {
        RoundTrips {
            count: 100,
            median_us,
            p10_us: median_us,
            p90_us: median_us,
        }
    }

    #[test]
    fn a_round_trip_within_half_to_twice_the_asked_one_is_valid() {
        assert_eq!(
            judge(&net("0us"), &rt(90)),
            None,
            "no delay, nothing to hold"
        );
        assert_eq!(judge(&net("1ms"), &rt(2100)), None);
        assert_eq!(judge(&net("1ms"), &rt(1000)), None);
        assert!(
            judge(&net("1ms"), &rt(900))
                .unwrap()
                .contains("outside half to twice")
        );
        assert!(
            judge(&net("100us"), &rt(450))
                .unwrap()
                .contains("asked 200us")
        );
        // A link of a rate only asks no round trip.
        assert_eq!(judge(&net("0us"), &rt(90)), None);
    }

    #[test]
    fn a_phase_over_the_rate_by_more_than_a_tenth_is_void() {
        let mut n = net("0us");
        n.rate = Some("10mbit".parse().unwrap());
        let t = |to_client: u64| PhaseTraffic {
            seconds: 2.0,
            bytes_to_server: 1000,
            bytes_to_client: to_client,
            bytes_both: None,
        };
        // 1,250,000 B/s asked.
        assert_eq!(rate_violation(&n, &t(2_700_000)), None);
        let v = rate_violation(&n, &t(2_800_000)).unwrap();
        assert!(v.contains("1400000 B/s") && v.contains("10mbit"), "{v}");
        assert_eq!(rate_violation(&net("1ms"), &t(u64::MAX / 4)), None);
    }
}
