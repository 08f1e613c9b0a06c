//! A cell's topology in one home (issue 12; docs/ARCHITECTURE.md): a
//! replica set's secondaries, or a sharded cluster's members after the
//! first (with routers, they start last and the client connects to them).
//! The cell's stages call [`Topology`] once each: `start` (each member in
//! a sandbox of its own with its CPUs and memory cap, joined as the
//! engine's `replication:` or `sharding:` says), `initiate` (the sets and
//! the cluster formed, every follower caught up, its lag sampled),
//! `compare` (records digested against the leader's after the load),
//! `settle`, `check_phase` (watched after every phase), `collect` and
//! `teardown`. One server is a topology without members: every call is
//! then a no-op and the client connects to the cell's server.
//!
//! `members.rs` holds what one member does, `shards.rs` how a sharded
//! cluster is formed; both only reach up to this file.

use super::{CellCtx, CellWork, CellWriter, Leader, ReplicaWork, Stop};
use crate::metrics::sampler::{StatsSource, Target};
use crate::model::Role;
use crate::model::cluster::{SET_MEMBERS, SET_NAME};
use crate::results::model::{CellRecord, MemberFidelity};
use crate::run::disk;
use crate::sandbox::stats::StatsReader;
use crate::sandbox::{CgroupStats, Sandbox};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

mod members;
mod shards;

use members::{LagSampler, ReplicaRun};

/// How long the secondaries get to catch up with the primary.
const IN_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// The members of a cell's topology after its server, while the cell
/// runs, in `work.replicas` order.
pub(super) struct Topology {
    members: Vec<ReplicaRun>,
    /// Reads their lag every second once they follow the primary.
    lag: Option<LagSampler>,
    /// With a `network:` the proxy imposes, the relay each follower
    /// reaches its primary through, so that replication crosses the same
    /// emulated network (under the kernel emulation the members share the
    /// cell's namespace and reach each other over its loopback).
    links: Vec<crate::network::relay::Relay>,
}

impl Topology {
    /// `sandboxes` are the members' own, in `work.replicas` order (none
    /// for one server).
    pub(super) fn new(work: &CellWork, sandboxes: Vec<Box<dyn Sandbox + Sync>>) -> Topology {
        Topology {
            members: work
                .replicas
                .iter()
                .zip(sandboxes)
                .map(|(rw, sb)| ReplicaRun::new(rw, sb))
                .collect(),
            lag: None,
            links: Vec::new(),
        }
    }

    /// The kernel emulation: every member starts inside the cell's
    /// namespace `ns`, so replication crosses its loopback's qdisc (with a
    /// delay, each hop between members pays it, as the client's does).
    pub(super) fn share_network(&mut self, ns: &crate::sandbox::NetworkNamespace) {
        for rr in &mut self.members {
            rr.netns = Some(ns.clone());
        }
    }

    /// One server: no member beside the cell's.
    pub(super) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Provision, start and join every member but the routers (they
    /// start once the sets they route to are formed, in `initiate`).
    /// `primary` is the cell's server's port.
    pub(super) async fn start(
        &mut self,
        work: &CellWork,
        ctx: &CellCtx,
        primary: u16,
        record: &mut CellRecord,
        writer: &dyn CellWriter,
    ) -> Result<(), Stop> {
        for rr in self.members.iter_mut().filter(|rr| !rr.is_router()) {
            let leader = match &work.network {
                Some(net) if net.emulation != crate::network::Emulation::Kernel => {
                    let relay = super::network::link(net, primary, &work.limits)?;
                    let port = relay.addr().port();
                    self.links.push(relay);
                    port
                }
                _ => primary,
            };
            members::start(work, ctx, rr, record, writer, leader, &[]).await?;
        }
        Ok(())
    }

    /// Form the topology: a sharded cluster's sets initiated, its routers
    /// started and sent the shards (or a cluster's slots given out), the
    /// replica set initiated on the primary; then wait until each
    /// follower has nothing left to replay, and sample its lag from then
    /// on, each sample labelled as the cell's sampler's `label`.
    pub(super) async fn initiate(
        &mut self,
        work: &CellWork,
        ctx: &CellCtx,
        primary: u16,
        record: &mut CellRecord,
        writer: &dyn CellWriter,
        (epoch, label): (Instant, Arc<StdMutex<String>>),
    ) -> Result<(), Stop> {
        let routers: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.members[i].is_router())
            .collect();
        match work.sharding.as_ref() {
            Some(spec) if spec.routers => {
                let config_set = shards::initiate_sets(work, ctx, self, primary, spec).await?;
                for i in routers {
                    let fills = [(crate::model::cluster::CONFIG_SET, config_set.clone())];
                    let rr = &mut self.members[i];
                    members::start(work, ctx, rr, record, writer, primary, &fills).await?;
                }
                shards::add_shards(work, ctx, self, primary, spec).await?;
            }
            _ => {
                // Plan gives routers only to an engine whose `sharding:` has them.
                for i in routers {
                    let rr = &mut self.members[i];
                    members::start(work, ctx, rr, record, writer, primary, &[]).await?;
                }
                if let Some(spec) = &work.sharding {
                    shards::form(work, ctx, self, primary, spec).await?;
                }
            }
        }
        self.initiate_set_of(work, primary).await?;
        self.wait_in_sync(work, ctx, primary, record).await?;
        self.lag = Some(LagSampler::start(
            work,
            self.followers(primary),
            epoch,
            label,
        ));
        Ok(())
    }

    /// Send the primary the engine's `replication.initiate`, every member
    /// named in `{set_members}` (the primary first, with the highest
    /// priority, so that it is the one elected).
    async fn initiate_set_of(&self, work: &CellWork, primary: u16) -> Result<(), Stop> {
        if work.initiate.is_empty() {
            return Ok(());
        }
        let ports: Vec<u16> = std::iter::once(primary)
            .chain(self.members.iter().map(|rr| rr.port))
            .collect();
        let set = work.set.as_deref().unwrap_or_default();
        initiate_set(work, primary, &work.initiate, set, &ports).await
    }

    /// Until every follower is linked to its leader with nothing left to
    /// replay, within [`IN_SYNC_TIMEOUT`]; records how long each took
    /// from its start (the first time) and the most it was behind.
    async fn wait_in_sync(
        &self,
        work: &CellWork,
        ctx: &CellCtx,
        primary: u16,
        record: &mut CellRecord,
    ) -> Result<(), Stop> {
        let deadline = Instant::now() + IN_SYNC_TIMEOUT;
        let mut pause = Duration::from_millis(20);
        loop {
            let mut waiting = Vec::new();
            for rr in &self.members {
                let Some(leader) = self.leader_port(primary, rr.leader) else {
                    continue;
                };
                let member = member(record, &rr.name);
                match work.facts.replica_state(leader, rr.port).await {
                    Ok(s) if s.linked && s.behind == 0 => {
                        if member.in_sync_s.is_none() {
                            member.in_sync_s = rr.started.map(|t| t.elapsed().as_secs_f64());
                        }
                    }
                    Ok(s) => {
                        member.max_behind = member.max_behind.max(s.behind);
                        let link = if s.linked { "linked" } else { "not linked" };
                        waiting.push(format!("{}: {link}, {} bytes behind", rr.name, s.behind));
                    }
                    Err(e) => waiting.push(format!("{}: {e}", rr.name)),
                }
            }
            if waiting.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Stop::Failed(format!(
                    "the secondaries did not catch up with their primaries within {}s ({})",
                    IN_SYNC_TIMEOUT.as_secs(),
                    waiting.join("; ")
                )));
            }
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = ctx.stop.cancelled() => return Err(Stop::Interrupted),
            }
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// After the load: every follower caught up, and its records' digest
    /// equal to its leader's (a difference is a fidelity violation); the
    /// cell's digest is the whole cluster's.
    pub(super) async fn compare(
        &mut self,
        work: &CellWork,
        ctx: &CellCtx,
        primary: u16,
        record: &mut CellRecord,
    ) -> Result<(), Stop> {
        self.wait_in_sync(work, ctx, primary, record).await?;
        let digest = |port: u16, whose: String| async move {
            work.facts
                .digest(port)
                .await
                .map_err(|e| Stop::Failed(format!("digesting {whose}'s records: {e}")))
        };
        let first = digest(primary, "the primary".into()).await?;
        let mut digests: Vec<String> = Vec::new();
        for rr in &self.members {
            let own = digest(rr.port, rr.name.clone()).await?;
            let leader = match rr.leader {
                Leader::Cell => Some(&first),
                Leader::Member(i) => digests.get(i),
                Leader::None => None,
            };
            if let Some(want) = leader.filter(|want| **want != own) {
                record.fidelity.violations.push(format!(
                    "secondary {} holds other records than its primary after the load ({own} against {want})",
                    rr.name
                ));
            }
            member(record, &rr.name).data_digest = Some(own.clone());
            digests.push(own);
        }
        // Through a router, the whole cluster's records.
        let entry = self.client_ports(primary)[0];
        record.data_digest = Some(if entry != primary {
            digest(entry, "the cluster through its first router".into()).await?
        } else if work.sharding.is_some() {
            work.facts
                .cluster_digest(primary)
                .await
                .map_err(|e| Stop::Failed(format!("digesting the cluster's records: {e}")))?
        } else {
            first
        });
        Ok(())
    }

    /// The settle step on every other member that holds records: its
    /// memory cap shrunk as the cell's (a share of its own data), read
    /// back into its fidelity entry, and its page cache dropped.
    pub(super) async fn settle(
        &mut self,
        work: &CellWork,
        ctx: &CellCtx,
        record: &mut CellRecord,
    ) -> Result<(), Stop> {
        for i in (0..work.replicas.len()).filter(|&i| holds_records(&work.replicas[i])) {
            let name = &work.replicas[i].name;
            let rr = &mut self.members[i];
            if let Some(want) = work.settle.memory {
                let on_disk = || disk::dir_size(&super::cell_work_dir(ctx).join(name).join("data"));
                let data = work.facts.data_size(rr.port).await.filter(|b| *b > 0);
                let (cap, why) = crate::plan::settle::cap_for(want, data.unwrap_or_else(on_disk));
                // The cache first, as on the cell's server.
                if let Some(resize) = &work.cache_resize {
                    let (read_back, violation) =
                        resize.apply(work.facts.as_ref(), rr.port, cap).await;
                    member(record, name)
                        .limits_read_back
                        .insert("engine cache after settle".into(), read_back);
                    record
                        .fidelity
                        .violations
                        .extend(violation.map(|v| format!("member {name}: {v}")));
                }
                rr.sandbox().set_memory_cap(cap, work.limits.swap)?;
                let limit = rr.stats.server()?.memory_limit;
                member(record, name).limits_read_back.insert(
                    "memory limit after settle".into(),
                    format!("{limit} (settled to {}: {why})", crate::display::exact(cap)),
                );
            }
            if work.settle.drop_caches {
                rr.sandbox().drop_page_cache()?;
            }
        }
        Ok(())
    }

    /// Why the phase that just ended does not stand for the topology: a
    /// member that died, or a follower no longer linked to its leader.
    pub(super) async fn check_phase(
        &mut self,
        work: &CellWork,
        primary: u16,
        record: &mut CellRecord,
    ) -> Option<String> {
        let leaders: Vec<Option<u16>> = self
            .members
            .iter()
            .map(|rr| self.leader_port(primary, rr.leader))
            .collect();
        let mut why = Vec::new();
        for (rr, leader) in self.members.iter_mut().zip(leaders) {
            why.extend(members::broken(work, rr, leader, record).await);
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Each member's thread CPUs and OOM kills, with their violations.
    pub(super) fn collect(&mut self, record: &mut CellRecord) {
        for rr in &mut self.members {
            members::collect(rr, record);
        }
    }

    /// Stop sampling the lag (each member's series goes into its fidelity
    /// entry, its most behind into `max_behind`), then tear every member
    /// down; the leaks in words.
    pub(super) async fn teardown(
        &mut self,
        record: &mut CellRecord,
        hurry: &CancellationToken,
    ) -> Vec<String> {
        if let Some(lag) = self.lag.take() {
            for (i, sample) in lag.finish().await {
                let Some(rr) = self.members.get(i) else {
                    continue;
                };
                let member = member(record, &rr.name);
                member.max_behind = member.max_behind.max(sample.behind.unwrap_or(0));
                member.lag.push(sample);
            }
        }
        if !self.links.is_empty() {
            let stats = super::network::stop_all(std::mem::take(&mut self.links));
            if let Some(n) = record.fidelity.network.as_mut() {
                n.links = Some(stats);
            }
        }
        let bridges: Vec<_> = self
            .members
            .iter_mut()
            .filter_map(|rr| rr.bridge.take())
            .collect();
        let bridges = (!bridges.is_empty()).then(|| super::network::stop_all(bridges));
        if let Some(bridges) = bridges
            && let Some(ns) = record
                .fidelity
                .network
                .as_mut()
                .and_then(|n| n.namespace.as_mut())
        {
            // The members' bridges carried benchcage's own traffic too.
            let server = ns.bridge.take().unwrap_or_default();
            ns.bridge = Some(crate::network::relay::RelayStats::sum([server, bridges]));
        }
        let mut leaks = Vec::new();
        for rr in &mut self.members {
            if let Some(sb) = rr.sandbox.take()
                && let Some(leak) = super::end::teardown(sb, None, hurry).await
            {
                leaks.push(format!("{} {}: {leak}", rr.what(), rr.name));
            }
        }
        leaks
    }

    /// Where the client connects: a sharded cluster's routers, else the
    /// cell's server (on `primary`).
    pub(super) fn client_ports(&self, primary: u16) -> Vec<u16> {
        let routers: Vec<u16> = self
            .members
            .iter()
            .filter(|rr| rr.is_router())
            .map(|rr| rr.port)
            .collect();
        if routers.is_empty() {
            vec![primary]
        } else {
            routers
        }
    }

    /// The ports of the replica set the cell's server is the primary of,
    /// that server first; just that server when it has no set, and
    /// nothing in a sharded cluster (its client goes through the routers).
    pub(super) fn set_ports(&self, primary: u16) -> Vec<u16> {
        if self.members.iter().any(ReplicaRun::is_router) {
            return Vec::new();
        }
        let mut ports = vec![primary];
        ports.extend(
            self.members
                .iter()
                .filter(|rr| rr.leader == Leader::Cell)
                .map(|rr| rr.port),
        );
        ports
    }

    /// The CPU time the members' cgroups have used so far, in µs.
    pub(super) fn cpu_usec(&self) -> u64 {
        self.members
            .iter()
            .filter_map(|rr| rr.stats.server().ok())
            .map(|s| s.cpu_usec)
            .sum()
    }

    /// The members' server processes (they may share the server's CPUs:
    /// the topology's own work, not contention).
    pub(super) fn server_pids(&self) -> Vec<u32> {
        self.members
            .iter()
            .filter_map(|rr| rr.sandbox.as_deref())
            .flat_map(|sb| sb.server_pids())
            .collect()
    }

    /// The kernel counters of the cell's server (`primary`: its
    /// `server` and `client`) and of every member, for the cell's sampler.
    pub(super) fn stats(&self, primary: StatsReader) -> Arc<dyn StatsSource> {
        Arc::new(TopologyStats {
            primary,
            members: self
                .members
                .iter()
                .map(|rr| (rr.name.clone(), rr.stats.clone()))
                .collect(),
        })
    }

    /// The port of the member a follower follows; `None` for a shard's
    /// primary or a router.
    fn leader_port(&self, primary: u16, leader: Leader) -> Option<u16> {
        match leader {
            Leader::Cell => Some(primary),
            Leader::Member(i) => self.members.get(i).map(|l| l.port),
            Leader::None => None,
        }
    }

    /// (index, leader's port, its port) of every follower.
    fn followers(&self, primary: u16) -> Vec<(usize, u16, u16)> {
        self.members
            .iter()
            .enumerate()
            .filter_map(|(i, rr)| Some((i, self.leader_port(primary, rr.leader)?, rr.port)))
            .collect()
    }
}

/// Whether the cell's server holds records: not when a sharded cluster
/// has config servers (they start first, so the server is one of them).
pub(super) fn server_holds_records(work: &CellWork) -> bool {
    work.topology.sharded_counts().2 == 0
}

/// Whether a member holds records: not a router, nor a config server.
fn holds_records(rw: &ReplicaWork) -> bool {
    !matches!(rw.role, Role::Router | Role::ConfigServer)
}

/// The fidelity entry of the member `name`.
fn member<'a>(rec: &'a mut CellRecord, name: &str) -> &'a mut MemberFidelity {
    rec.fidelity.members.entry(name.to_string()).or_default()
}

/// `[{"_id": 0, "host": "127.0.0.1:P", "priority": 2}, ...]`: the members
/// on `ports` as `{set_members}`, the first with the highest priority so
/// that it is the one elected.
fn set_members(ports: &[u16]) -> String {
    let members: Vec<serde_json::Value> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            serde_json::json!({
                "_id": i,
                "host": format!("127.0.0.1:{port}"),
                "priority": if i == 0 { 2 } else { 1 },
            })
        })
        .collect();
    serde_json::Value::Array(members).to_string()
}

/// Send `statements` to the member on `port`, `{set_name}` and
/// `{set_members}` (the members on `ports`) filled.
async fn initiate_set(
    work: &CellWork,
    port: u16,
    statements: &[String],
    set: &str,
    ports: &[u16],
) -> Result<(), Stop> {
    let members = set_members(ports);
    for statement in statements {
        let statement = statement
            .replace(SET_MEMBERS, &members)
            .replace(SET_NAME, set);
        work.facts.execute(port, &statement).await.map_err(|e| {
            Stop::Failed(format!(
                "initiating the replica set {set}: `{statement}`: {e}"
            ))
        })?;
    }
    Ok(())
}

/// The kernel counters of the primary (`server`, `client`) and of every
/// member, by member name, for the cell's sampler.
struct TopologyStats {
    primary: StatsReader,
    members: Vec<(String, StatsReader)>,
}

#[async_trait::async_trait]
impl StatsSource for TopologyStats {
    async fn stats(&self, target: Target) -> anyhow::Result<CgroupStats> {
        self.primary.stats(target).await
    }

    async fn member_stats(&self) -> Vec<(String, CgroupStats)> {
        self.members
            .iter()
            .filter_map(|(name, s)| Some((name.clone(), s.server().ok()?)))
            .collect()
    }
}
