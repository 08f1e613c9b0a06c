//! The cell's network stage: between the engine being ready and the load,
//! the relays that impose the environment's `network:` on every client
//! connection (one per client port), and the probe that measures the
//! round trip the emulation really gives before anything is measured
//! through it. benchcage's own connections (readiness, facts, counting
//! records) go straight to the server.

use super::{CellWork, Running, Stop};
use crate::network::probe::{self, Echo, RoundTrips};
use crate::network::relay::{Relay, RelayStats};
use crate::network::{Network, Shape};
use crate::results::model::NetworkFidelity;
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

    /// Stops every relay; what they did together.
    pub(super) fn stop(self) -> RelayStats {
        stop_all(self.relays)
    }
}

/// Stops `relays`; what they did together.
pub(super) fn stop_all(relays: Vec<Relay>) -> RelayStats {
    let mut all = RelayStats::default();
    let mut late_sum = 0.0;
    for r in relays {
        let s = r.stop();
        late_sum += s.late_mean_us * s.chunks as f64;
        all.connections += s.connections;
        all.chunks += s.chunks;
        all.bytes += s.bytes;
        all.lost += s.lost;
        all.cpu_us += s.cpu_us;
        all.late_max_us = all.late_max_us.max(s.late_max_us);
    }
    if all.chunks > 0 {
        all.late_mean_us = late_sum / all.chunks as f64;
    }
    all
}

/// The relay a follower reaches its leader on `leader` through: the same
/// shape as the client's link, on the client's CPUs (a link costs neither
/// server).
pub(super) fn link(
    network: &Network,
    leader: u16,
    limits: &crate::model::CellLimits,
) -> Result<Relay, Stop> {
    let cpus: Vec<u32> = limits.client_cpus.iter().collect();
    Relay::start(
        loopback(0),
        loopback(leader),
        network.shape(u64::from(leader)),
        &cpus,
    )
    .map_err(|e| Stop::Failed(format!("network: starting a replication link's relay: {e}")))
}

/// The `network` stage: the relays in front of the client ports, and the
/// probe's record (a violation when the round trip is off).
pub(super) fn open(work: &CellWork, network: &Network, r: &mut Running) -> Result<(), Stop> {
    let seed = u64::from_str_radix(work.key.get(..16).unwrap_or("0"), 16).unwrap_or(0);
    let cpus: Vec<u32> = work.limits.client_cpus.iter().collect();
    let ports = r.topology.client_ports(r.port);
    let (links, fidelity, violation) = connect(network, seed, &ports, &cpus)?;
    r.record.fidelity.network = Some(fidelity);
    r.record.fidelity.violations.extend(violation);
    r.links = Some(links);
    Ok(())
}

/// At teardown: the relays stop, and what they did joins the record.
pub(super) fn close(r: &mut Running) {
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
    for &port in server_ports {
        let relay = Relay::start(loopback(0), loopback(port), shape.clone(), cpus)
            .map_err(|e| fail("starting the relay", e))?;
        links.ports.insert(port, relay.addr().port());
        links.relays.push(relay);
    }
    let (bare, through) =
        probe_both(&shape, cpus).map_err(|e| fail("probing the round trip", e))?;
    let violation = judge(network, &through);
    let fidelity = NetworkFidelity {
        asked: network.clone(),
        loopback: bare,
        round_trip: through,
        relay: None,
        links: None,
    };
    Ok((links, fidelity, violation))
}

fn probe_both(shape: &Shape, cpus: &[u32]) -> std::io::Result<(RoundTrips, RoundTrips)> {
    let echo = Echo::start(loopback(0))?;
    let bare = probe::round_trips(echo.addr(), PROBE_ECHOES, PROBE_TIMEOUT)?;
    let relay = Relay::start(loopback(0), echo.addr(), shape.clone(), cpus)?;
    let through = probe::round_trips(relay.addr(), PROBE_ECHOES, PROBE_TIMEOUT);
    relay.stop();
    Ok((bare, through?))
}

/// A measured round trip outside 0.5x-2x of the asked one makes the cell
/// invalid: its numbers were not measured over the network it claims.
pub(crate) fn judge(network: &Network, measured: &RoundTrips) -> Option<String> {
    let asked = network.delay.std() * 2;
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
    }
}
