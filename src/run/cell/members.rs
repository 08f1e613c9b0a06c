//! A replica set's secondaries, or a sharded cluster's members after the
//! first (issue 12; with routers, they start last and the client connects
//! to them): each in a sandbox of its own with its CPUs and memory
//! cap, made and joined as the engine's `replication:` or `sharding:`
//! says (the cluster formed by `shards`), each follower followed until it
//! has nothing left to replay before the load and after it, its records
//! digested against its leader's, watched after every phase, and torn
//! down with the cell.

use super::*;
use crate::model::EngineLaunch;
use crate::results::model::LagSample;
use crate::spec::engine::{CONFIG_SET, PRIMARY_PORT, SET_NAME};

/// How long the secondaries get to catch up with the primary.
pub const IN_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// A secondary while the cell runs.
pub(super) struct ReplicaRun {
    pub name: String,
    /// Taken by teardown.
    pub sandbox: Option<Box<dyn Sandbox + Sync>>,
    pub stats: StatsReader,
    pub port: u16,
    pub engine_pid: Option<u32>,
    pub oom_at_start: u64,
    /// When its engine started.
    pub started: Option<Instant>,
    /// The CPUs it was given, to check its threads against.
    pub cpus: crate::units::CpuSet,
    /// Whom it copies.
    pub leader: Leader,
    /// A sharded cluster's router: the client's way in.
    pub router: bool,
}

impl ReplicaRun {
    pub fn new(rw: &ReplicaWork, sandbox: Box<dyn Sandbox + Sync>) -> ReplicaRun {
        ReplicaRun {
            name: rw.name.clone(),
            cpus: rw.limits.server_cpus.clone(),
            leader: rw.leader,
            router: rw.role == crate::model::Role::Router.name(),
            stats: sandbox.stats_reader(),
            sandbox: Some(sandbox),
            port: 0,
            engine_pid: None,
            oom_at_start: 0,
            started: None,
        }
    }

    /// How it is named in violations and reasons: a secondary follows a
    /// primary, a shard's primary follows nobody.
    fn what(&self) -> &'static str {
        match self.leader {
            Leader::None if self.router => "router",
            Leader::None => "member",
            _ => "secondary",
        }
    }

    fn sandbox(&mut self) -> &mut (dyn Sandbox + Sync) {
        self.sandbox
            .as_deref_mut()
            .expect("a secondary's sandbox is only taken by teardown")
    }
}

/// The fidelity entry of the secondary `name`.
fn member<'a>(
    rec: &'a mut crate::results::model::CellRecord,
    name: &str,
) -> &'a mut crate::results::model::MemberFidelity {
    rec.fidelity.members.entry(name.to_string()).or_default()
}

/// Where the client connects: a sharded cluster's routers, else the
/// cell's server.
pub(super) fn client_ports(r: &Running) -> Vec<u16> {
    let routers: Vec<u16> = r
        .replicas
        .iter()
        .filter(|rr| rr.router)
        .map(|rr| rr.port)
        .collect();
    if routers.is_empty() {
        vec![r.port]
    } else {
        routers
    }
}

/// The ports of the replica set the cell's server is the primary of,
/// that server first; just that server when it has no set, and nothing
/// in a sharded cluster (its client goes through the routers).
pub(super) fn set_ports(r: &Running) -> Vec<u16> {
    if r.replicas.iter().any(|rr| rr.router) {
        return Vec::new();
    }
    let mut ports = vec![r.port];
    ports.extend(
        r.replicas
            .iter()
            .filter(|rr| rr.leader == Leader::Cell)
            .map(|rr| rr.port),
    );
    ports
}

/// The port of the member `rr` follows; `None` for a shard's primary.
pub(super) fn leader_port(r: &Running, leader: Leader) -> Option<u16> {
    match leader {
        Leader::Cell => Some(r.port),
        Leader::Member(i) => r.replicas.get(i).map(|l| l.port),
        Leader::None => None,
    }
}

/// Provision, start and join every member after the first, form the
/// topology, then wait until each follower has nothing left to replay.
/// A cluster with routers starts its routers last, once its config
/// servers' and shards' replica sets have their primaries.
pub(super) async fn start_replicas(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    writer: &dyn CellWriter,
) -> Result<(), Stop> {
    let (routers, others): (Vec<usize>, Vec<usize>) =
        (0..work.replicas.len()).partition(|&i| r.replicas[i].router);
    for i in others {
        start_member(work, ctx, r, writer, i, &[]).await?;
    }
    match work.sharding.as_ref() {
        Some(spec) if spec.routers => {
            let config_set = super::shards::initiate_sets(work, ctx, r, spec).await?;
            for i in routers {
                let fills = [(CONFIG_SET, config_set.clone())];
                start_member(work, ctx, r, writer, i, &fills).await?;
            }
            super::shards::add_shards(work, ctx, r, spec).await?;
        }
        _ => {
            // Plan gives routers only to an engine whose `sharding:` has them.
            for i in routers {
                start_member(work, ctx, r, writer, i, &[]).await?;
            }
            if work.sharding.is_some() {
                super::shards::form(work, ctx, r).await?;
            }
        }
    }
    initiate(work, r).await?;
    wait_in_sync(work, ctx, r).await?;
    r.lag = Some(LagSampler::start(work, r));
    Ok(())
}

/// Provision and start member `i` of `work.replicas`, its config and
/// launch kept under `members/<name>/`, then wait until it answers and
/// send it its join statements. `fills` beside `{primary_port}` and
/// `{set_name}`: the run's placeholders in its argv.
async fn start_member(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    writer: &dyn CellWriter,
    i: usize,
    fills: &[(&str, String)],
) -> Result<(), Stop> {
    let rw = &work.replicas[i];
    let primary = r.port;
    let rr = &mut r.replicas[i];
    let provisioned = rr.sandbox().provision(&rw.limits).await?;
    rr.oom_at_start = rr.stats.server()?.oom_kills;
    rr.port = crate::sandbox::free_port()?;
    let dir = super::cell_work_dir(ctx).join(&rw.name);
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
    super::stages::keep_configs(writer, &kept.join("config"), &files, &mut launch)?;
    writer.file(
        &kept.join("launch.json"),
        &serde_json::to_vec_pretty(&launch).map_err(anyhow::Error::from)?,
    )?;
    let handle = rr.sandbox().start_engine(&launch).await?;
    rr.started = Some(Instant::now());
    if let EngineId::Pid(pid) = handle.id {
        rr.engine_pid = Some(pid);
    }
    let member = member(&mut r.record, &rw.name);
    member.role = rw.role.clone();
    member.lag_unit = work.facts.lag_unit().map(String::from);
    member.cpus = rw.limits.server_cpus.to_string();
    member.port = rr.port;
    member.limits_read_back = provisioned.read_back;
    member.limits_read_back.extend(handle.read_back);
    ready_and_join(work, ctx, rr, rw, &launch, primary).await
}

/// `[{"_id": 0, "host": "127.0.0.1:P", "priority": 2}, ...]`: the members
/// on `ports` as `{set_members}`, the first with the highest priority so
/// that it is the one elected.
pub(super) fn set_members(ports: &[u16]) -> String {
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
pub(super) async fn initiate_set(
    work: &CellWork,
    port: u16,
    statements: &[String],
    set: &str,
    ports: &[u16],
) -> Result<(), Stop> {
    let members = set_members(ports);
    for statement in statements {
        let statement = statement
            .replace(crate::spec::engine::SET_MEMBERS, &members)
            .replace(SET_NAME, set);
        work.facts.execute(port, &statement).await.map_err(|e| {
            Stop::Failed(format!(
                "initiating the replica set {set}: `{statement}`: {e}"
            ))
        })?;
    }
    Ok(())
}

/// Send the primary the engine's `replication.initiate`, every member
/// named in `{set_members}` (the primary first, with the highest
/// priority, so that it is the one elected).
async fn initiate(work: &CellWork, r: &Running) -> Result<(), Stop> {
    if work.initiate.is_empty() {
        return Ok(());
    }
    let ports: Vec<u16> = std::iter::once(r.port)
        .chain(r.replicas.iter().map(|rr| rr.port))
        .collect();
    let set = work.set.as_deref().unwrap_or_default();
    initiate_set(work, r.port, &work.initiate, set, &ports).await
}

/// How often the secondaries' replication state is read, and how long
/// one reading may take.
const LAG_PERIOD: Duration = Duration::from_secs(1);

/// Reads every secondary's replication state every [`LAG_PERIOD`], each
/// reading labelled with the stage or phase then running.
pub(super) struct LagSampler {
    stop: CancellationToken,
    join: tokio::task::JoinHandle<Vec<(usize, LagSample)>>,
}

impl LagSampler {
    fn start(work: &CellWork, r: &Running) -> LagSampler {
        let facts = work.facts.clone();
        // (index, leader's port, its port) of every follower.
        let pairs: Vec<(usize, u16, u16)> = r
            .replicas
            .iter()
            .enumerate()
            .filter_map(|(i, rr)| Some((i, leader_port(r, rr.leader)?, rr.port)))
            .collect();
        let label = r
            .sampler
            .as_ref()
            .map(|s| s.phase_label())
            .unwrap_or_default();
        let (epoch, stop) = (r.epoch, CancellationToken::new());
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
}

/// Stop reading the secondaries' lag; each one's series goes into its
/// fidelity entry, and its most behind into `max_behind`.
pub(super) async fn finish_lag(r: &mut Running) {
    let Some(lag) = r.lag.take() else {
        return;
    };
    lag.stop.cancel();
    for (i, sample) in lag.join.await.unwrap_or_default() {
        let Some(rr) = r.replicas.get(i) else {
            continue;
        };
        let member = member(&mut r.record, &rr.name);
        member.max_behind = member.max_behind.max(sample.behind.unwrap_or(0));
        member.lag.push(sample);
    }
}

/// The kernel counters of the primary (`server`, `client`) and of every
/// secondary, by member name, for the cell's sampler.
pub(super) struct TopologyStats {
    pub primary: StatsReader,
    pub secondaries: Vec<(String, StatsReader)>,
}

#[async_trait::async_trait]
impl StatsSource for TopologyStats {
    async fn stats(&self, target: Target) -> anyhow::Result<CgroupStats> {
        self.primary.stats(target).await
    }

    async fn member_stats(&self) -> Vec<(String, CgroupStats)> {
        self.secondaries
            .iter()
            .filter_map(|(name, s)| Some((name.clone(), s.server().ok()?)))
            .collect()
    }
}

/// Wait until the secondary answers, then send its join statements.
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

/// Until every secondary is linked to the primary with nothing left to
/// replay, within [`IN_SYNC_TIMEOUT`]; records how long each took from
/// its start (the first time) and the most it was behind.
pub(super) async fn wait_in_sync(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
) -> Result<(), Stop> {
    let deadline = Instant::now() + IN_SYNC_TIMEOUT;
    let mut pause = Duration::from_millis(20);
    loop {
        let mut waiting = Vec::new();
        for rr in &r.replicas {
            let Some(leader) = leader_port(r, rr.leader) else {
                continue;
            };
            let member = member(&mut r.record, &rr.name);
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

/// After the load: every secondary caught up, and its records' digest
/// equal to the primary's; a difference is a fidelity violation.
pub(super) async fn compare_records(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
) -> Result<(), Stop> {
    wait_in_sync(work, ctx, r).await?;
    let digest = |port: u16, whose: String| async move {
        work.facts
            .digest(port)
            .await
            .map_err(|e| Stop::Failed(format!("digesting {whose}'s records: {e}")))
    };
    let primary = digest(r.port, "the primary".into()).await?;
    let mut digests: Vec<String> = Vec::new();
    for rr in &r.replicas {
        let own = digest(rr.port, rr.name.clone()).await?;
        let leader = match rr.leader {
            Leader::Cell => Some(&primary),
            Leader::Member(i) => digests.get(i),
            Leader::None => None,
        };
        if let Some(want) = leader.filter(|want| **want != own) {
            r.record.fidelity.violations.push(format!(
                "secondary {} holds other records than its primary after the load ({own} against {want})",
                rr.name
            ));
        }
        member(&mut r.record, &rr.name).data_digest = Some(own.clone());
        digests.push(own);
    }
    // Through a router, the whole cluster's records.
    let entry = client_ports(r)[0];
    r.record.data_digest = Some(if entry != r.port {
        digest(entry, "the cluster through its first router".into()).await?
    } else if work.sharding.is_some() {
        work.facts
            .cluster_digest(r.port)
            .await
            .map_err(|e| Stop::Failed(format!("digesting the cluster's records: {e}")))?
    } else {
        primary
    });
    Ok(())
}

/// Why the phase that just ended does not stand for the topology: a
/// secondary that died, or one no longer linked to the primary.
pub(super) async fn broken_during_phase(work: &CellWork, r: &mut Running) -> Option<String> {
    let mut why = Vec::new();
    let leaders: Vec<Option<u16>> = r
        .replicas
        .iter()
        .map(|rr| leader_port(r, rr.leader))
        .collect();
    for (rr, leader) in r.replicas.iter_mut().zip(leaders) {
        let what = rr.what();
        let Some(sb) = rr.sandbox.as_deref_mut() else {
            continue;
        };
        let member = member(&mut r.record, &rr.name);
        match sb.engine_status().await {
            Ok(EngineStatus::Running) => {}
            Ok(status) => {
                member.engine_restarts = 1;
                why.push(format!(
                    "{what} {} died during the phase ({})",
                    rr.name,
                    crate::sandbox::process::describe(status)
                ));
                continue;
            }
            Err(e) => {
                why.push(format!("{what} {}: {e}", rr.name));
                continue;
            }
        }
        let Some(leader) = leader else {
            continue;
        };
        match work.facts.replica_state(leader, rr.port).await {
            Ok(s) if s.linked => member.max_behind = member.max_behind.max(s.behind),
            Ok(_) => why.push(format!(
                "replication to secondary {} broke during the phase",
                rr.name
            )),
            Err(e) => why.push(format!("secondary {}: {e}", rr.name)),
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Whether the member `i` of `work.replicas` (`None`: the cell's server)
/// holds records: not a router, nor a config server.
pub(super) fn holds_records(work: &CellWork, i: Option<usize>) -> bool {
    use crate::model::Role;
    match i {
        Some(i) => ![Role::Router.name(), Role::ConfigServer.name()]
            .contains(&work.replicas[i].role.as_str()),
        // Config servers start first, so a cluster that has them has one as
        // its first member.
        None => work.topology.sharded_counts().2 == 0,
    }
}

/// The settle step on every other member that holds records: its memory
/// cap shrunk as the cell's (a share of its own data), read back into its
/// fidelity entry, and its page cache dropped.
pub(super) async fn settle(work: &CellWork, ctx: &CellCtx, r: &mut Running) -> Result<(), Stop> {
    for i in (0..work.replicas.len()).filter(|&i| holds_records(work, Some(i))) {
        let name = &work.replicas[i].name;
        let port = r.replicas[i].port;
        if let Some(want) = work.settle.memory {
            let on_disk = || disk::dir_size(&super::cell_work_dir(ctx).join(name).join("data"));
            let data = work.facts.data_size(port).await.filter(|b| *b > 0);
            let (cap, why) = super::stages::settle_cap(want, data.unwrap_or_else(on_disk));
            // The cache first, as on the cell's server.
            if let Some(resize) = &work.settle.cache {
                let (read_back, violation) =
                    super::stages::resize_cache(work, resize, port, cap).await;
                member(&mut r.record, name)
                    .limits_read_back
                    .insert("engine cache after settle".into(), read_back);
                r.record
                    .fidelity
                    .violations
                    .extend(violation.map(|v| format!("member {name}: {v}")));
            }
            let rr = &mut r.replicas[i];
            rr.sandbox().set_memory_cap(cap, work.limits.swap)?;
            let limit = rr.stats.server()?.memory_limit;
            member(&mut r.record, name).limits_read_back.insert(
                "memory limit after settle".into(),
                format!("{limit} (settled to {cap}: {why})"),
            );
        }
        if work.settle.drop_caches {
            r.replicas[i].sandbox().drop_page_cache()?;
        }
    }
    Ok(())
}

/// The CPU time the secondaries' cgroups have used so far, in µs.
pub(super) fn cpu_usec(r: &Running) -> u64 {
    r.replicas
        .iter()
        .filter_map(|rr| rr.stats.server().ok())
        .map(|s| s.cpu_usec)
        .sum()
}

/// Each secondary's thread CPUs and OOM kills, with their violations.
pub(super) fn collect(r: &mut Running) {
    for rr in &mut r.replicas {
        let Some(sb) = rr.sandbox.as_deref() else {
            continue;
        };
        let pids: Vec<u32> = sb
            .server_pids()
            .into_iter()
            .chain(rr.engine_pid)
            .collect::<std::collections::BTreeSet<u32>>()
            .into_iter()
            .collect();
        let member = member(&mut r.record, &rr.name);
        member.engine_thread_cpus = procfs::thread_cpus(Path::new(procfs::PROC), &pids);
        let mut found = fidelity::thread_cpu_violations(&member.engine_thread_cpus, &rr.cpus);
        if let Ok(stats) = rr.stats.server() {
            member.oom_kills = stats.oom_kills.saturating_sub(rr.oom_at_start);
        }
        found.extend(fidelity::supervision_violations(
            member.oom_kills,
            member.engine_restarts,
        ));
        let name = format!("{} {}", rr.what(), rr.name);
        r.record
            .fidelity
            .violations
            .extend(found.into_iter().map(|v| format!("{name}: {v}")));
    }
}

/// Tear every secondary down; the leaks in words.
pub(super) async fn teardown_all(r: &mut Running, hurry: &CancellationToken) -> Vec<String> {
    let mut leaks = Vec::new();
    for rr in &mut r.replicas {
        if let Some(sb) = rr.sandbox.take()
            && let Some(leak) = super::end::teardown(sb, hurry).await
        {
            leaks.push(format!("{} {}: {leak}", rr.what(), rr.name));
        }
    }
    leaks
}
