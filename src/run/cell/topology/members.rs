//! One member of a topology after the cell's server: its sandbox, how it
//! starts and joins, how it is watched after a phase and collected at the
//! end, and the sampler of the followers' replication lag.

use super::{CellCtx, CellWork, CellWriter, Leader, ReplicaWork, Stop, member};
use crate::metrics::{fidelity, procfs};
use crate::model::cluster::{PRIMARY_PORT, SET_NAME};
use crate::model::{EngineLaunch, Role};
use crate::results::model::{CellRecord, LagSample};
use crate::sandbox::stats::StatsReader;
use crate::sandbox::{EngineId, EngineStatus, Sandbox};
use std::path::Path;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A member while the cell runs.
pub(super) struct ReplicaRun {
    pub(super) name: String,
    pub(super) role: Role,
    /// Taken by teardown.
    pub(super) sandbox: Option<Box<dyn Sandbox + Sync>>,
    pub(super) stats: StatsReader,
    pub(super) port: u16,
    engine_pid: Option<u32>,
    oom_at_start: u64,
    /// When its engine started.
    pub(super) started: Option<Instant>,
    /// What it runs: its limits, launch and join statements.
    work: ReplicaWork,
    /// Whom it copies.
    pub(super) leader: Leader,
    /// The cell's network namespace (the kernel emulation), which the
    /// member shares with the cell's server.
    pub(super) netns: Option<crate::sandbox::NetworkNamespace>,
    /// From the host's loopback into the namespace on the member's port,
    /// for benchcage's own connections to it; stopped by teardown.
    pub(super) bridge: Option<crate::network::relay::Relay>,
}

impl ReplicaRun {
    pub(super) fn new(rw: &ReplicaWork, sandbox: Box<dyn Sandbox + Sync>) -> ReplicaRun {
        ReplicaRun {
            name: rw.name.clone(),
            role: rw.role,
            work: rw.clone(),
            leader: rw.leader,
            stats: sandbox.stats_reader(),
            sandbox: Some(sandbox),
            port: 0,
            engine_pid: None,
            oom_at_start: 0,
            started: None,
            netns: None,
            bridge: None,
        }
    }

    /// A sharded cluster's router: the client's way in.
    pub(super) fn is_router(&self) -> bool {
        self.role == Role::Router
    }

    /// How it is named in violations and reasons: a secondary follows a
    /// primary, a shard's primary follows nobody.
    pub(super) fn what(&self) -> &'static str {
        match self.leader {
            Leader::None if self.is_router() => "router",
            Leader::None => "member",
            _ => "secondary",
        }
    }

    pub(super) fn sandbox(&mut self) -> &mut (dyn Sandbox + Sync) {
        self.sandbox
            .as_deref_mut()
            .expect("a secondary's sandbox is only taken by teardown")
    }
}

/// Provision and start the member `rr`, its
/// config and launch kept under `members/<name>/`, then wait until it
/// answers and send it its join statements. `fills` beside
/// `{primary_port}` and `{set_name}`: the run's placeholders in its argv.
pub(super) async fn start(
    work: &CellWork,
    ctx: &CellCtx,
    rr: &mut ReplicaRun,
    record: &mut CellRecord,
    writer: &dyn CellWriter,
    primary: u16,
    fills: &[(&str, String)],
) -> Result<(), Stop> {
    let rw = rr.work.clone();
    let rw = &rw;
    let provisioned = rr.sandbox().provision(&rw.limits).await?;
    rr.oom_at_start = rr.stats.server()?.oom_kills;
    rr.port = crate::sandbox::free_port()?;
    if let Some(ns) = rr.netns.clone() {
        rr.sandbox().join_network(&ns)?;
        let bridge = super::super::network::bridge_into(&ns, rr.port, &work.limits)?;
        rr.bridge = Some(bridge);
    }
    let dir = super::super::cell_work_dir(ctx).join(&rw.name);
    let kept = ctx.cell_dir.join("members").join(&rw.name);
    let mut all = vec![
        (PRIMARY_PORT, primary.to_string()),
        (SET_NAME, rw.set.clone().unwrap_or_default()),
    ];
    all.extend(fills.iter().cloned());
    let (mut launch, files) = (rw.launch)(
        rr.port,
        &dir.join("data"),
        &dir.join("config"),
        &kept.join("engine.log"),
        &all,
    )?;
    std::fs::create_dir_all(kept.join("config")).map_err(anyhow::Error::from)?;
    writer.keep_configs(
        &kept.join("config"),
        &files,
        &mut launch,
        &kept.join("launch.json"),
    )?;
    let handle = rr.sandbox().start_engine(&launch).await?;
    rr.started = Some(Instant::now());
    if let EngineId::Pid(pid) = handle.id {
        rr.engine_pid = Some(pid);
    }
    let member = member(record, &rw.name);
    member.role = rw.role.name().to_string();
    member.lag_unit = work.facts.lag_unit().map(String::from);
    member.cpus = rw.limits.server_cpus.to_string();
    member.port = rr.port;
    member.limits_read_back = provisioned.read_back;
    member.limits_read_back.extend(handle.read_back);
    ready_and_join(work, ctx, rr, rw, &launch, primary).await
}

/// Wait until the member answers, then send its join statements.
async fn ready_and_join(
    work: &CellWork,
    ctx: &CellCtx,
    rr: &mut ReplicaRun,
    rw: &ReplicaWork,
    launch: &EngineLaunch,
    primary: u16,
) -> Result<(), Stop> {
    let what = rr.what();
    tokio::select! {
        res = crate::sandbox::ready::wait_ready(rr.sandbox(), launch) => {
            res.map_err(|e| Stop::Failed(format!("{what} {}: {e}", rw.name)))?;
        }
        _ = ctx.stop.cancelled() => return Err(Stop::Interrupted),
    }
    for statement in &rw.join {
        let statement = statement.replace(PRIMARY_PORT, &primary.to_string());
        work.facts
            .execute(rr.port, &statement)
            .await
            .map_err(|e| Stop::Failed(format!("{what} {}: `{statement}`: {e}", rw.name)))?;
    }
    Ok(())
}

/// Why the member does not stand for the phase that just ended: it died,
/// or (a follower of `leader`) it is no longer linked.
pub(super) async fn broken(
    work: &CellWork,
    rr: &mut ReplicaRun,
    leader: Option<u16>,
    record: &mut CellRecord,
) -> Option<String> {
    let what = rr.what();
    let sb = rr.sandbox.as_deref_mut()?;
    let member = member(record, &rr.name);
    match sb.engine_status().await {
        Ok(EngineStatus::Running) => {}
        Ok(status) => {
            member.engine_restarts = 1;
            return Some(format!(
                "{what} {} died during the phase ({})",
                rr.name,
                crate::sandbox::process::describe(status)
            ));
        }
        Err(e) => return Some(format!("{what} {}: {e}", rr.name)),
    }
    let leader = leader?;
    match work.facts.replica_state(leader, rr.port).await {
        Ok(s) if s.linked => {
            member.max_behind = member.max_behind.max(s.behind);
            None
        }
        Ok(_) => Some(format!(
            "replication to secondary {} broke during the phase",
            rr.name
        )),
        Err(e) => Some(format!("secondary {}: {e}", rr.name)),
    }
}

/// The member's thread CPUs and OOM kills, with their violations.
pub(super) fn collect(rr: &mut ReplicaRun, record: &mut CellRecord) {
    let Some(sb) = rr.sandbox.as_deref() else {
        return;
    };
    let pids: Vec<u32> = sb
        .server_pids()
        .into_iter()
        .chain(rr.engine_pid)
        .collect::<std::collections::BTreeSet<u32>>()
        .into_iter()
        .collect();
    let member = member(record, &rr.name);
    member.engine_thread_cpus = procfs::thread_cpus(Path::new(procfs::PROC), &pids);
    let mut found =
        fidelity::thread_cpu_violations(&member.engine_thread_cpus, &rr.work.limits.server_cpus);
    if let Ok(stats) = rr.stats.server() {
        member.oom_kills = stats.oom_kills.saturating_sub(rr.oom_at_start);
    }
    found.extend(fidelity::supervision_violations(
        member.oom_kills,
        member.engine_restarts,
    ));
    let name = format!("{} {}", rr.what(), rr.name);
    record
        .fidelity
        .violations
        .extend(found.into_iter().map(|v| format!("{name}: {v}")));
}

/// How often the followers' replication state is read, and how long one
/// reading may take.
const LAG_PERIOD: Duration = Duration::from_secs(1);

/// Reads every follower's replication state every [`LAG_PERIOD`], each
/// reading labelled with the stage or phase then running.
pub(super) struct LagSampler {
    stop: CancellationToken,
    join: tokio::task::JoinHandle<Vec<(usize, LagSample)>>,
}

impl LagSampler {
    /// `pairs`: (index, leader's port, its port) of every follower.
    pub(super) fn start(
        work: &CellWork,
        pairs: Vec<(usize, u16, u16)>,
        epoch: Instant,
        label: Arc<StdMutex<String>>,
    ) -> LagSampler {
        let facts = work.facts.clone();
        let stop = CancellationToken::new();
        let until = stop.clone();
        let join = tokio::spawn(async move {
            let mut out = Vec::new();
            let mut tick = tokio::time::interval(LAG_PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = until.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let t_ms = epoch.elapsed().as_millis() as u64;
                let phase = label.lock().unwrap_or_else(|e| e.into_inner()).clone();
                for &(i, leader, port) in &pairs {
                    let read = tokio::time::timeout(LAG_PERIOD, facts.replica_state(leader, port));
                    let (linked, behind) = match read.await {
                        Ok(Ok(s)) => (s.linked, Some(s.behind)),
                        _ => (false, None),
                    };
                    let phase = phase.clone();
                    out.push((
                        i,
                        LagSample {
                            t_ms,
                            phase,
                            linked,
                            behind,
                        },
                    ));
                }
            }
            out
        });
        LagSampler { stop, join }
    }

    /// Stop, and every sample taken, by member index.
    pub(super) async fn finish(self) -> Vec<(usize, LagSample)> {
        self.stop.cancel();
        self.join.await.unwrap_or_default()
    }
}
