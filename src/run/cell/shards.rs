//! A sharded cluster formed from members that answer (issue 12), as the
//! engine's `sharding:` says: each shard's primary takes its share of the
//! hash slots, each shard's secondaries follow their primary by node id,
//! and every member is asked until it reports the cluster whole. The
//! first member (the cell's server) is shard 0's primary: an engine with
//! config servers or routers has no `sharding:` that `run` starts.

use super::members::leader_port;
use super::*;
use crate::clients::redis_cluster::shard_slots;
use crate::spec::engine::{MEMBER_COUNT, SHARD_PRIMARY_ID, SHARD_SLOTS, ShardingSpec};

/// Give every shard its slots, join every shard's secondaries, then wait
/// until every member says the cluster is whole, within
/// [`super::members::IN_SYNC_TIMEOUT`].
pub(super) async fn form(work: &CellWork, ctx: &CellCtx, r: &mut Running) -> Result<(), Stop> {
    let Some(spec) = &work.sharding else {
        return Ok(());
    };
    let deadline = Instant::now() + super::members::IN_SYNC_TIMEOUT;
    let (shards, _, _) = work.topology.sharded_counts();
    let primaries = std::iter::once(("the first member".to_string(), r.port, 0)).chain(
        r.replicas
            .iter()
            .zip(&work.replicas)
            .filter(|(rr, _)| leader_port(r, rr.leader).is_none())
            .filter_map(|(rr, rw)| Some((rr.name.clone(), rr.port, rw.shard?))),
    );
    for (name, port, shard) in primaries.collect::<Vec<_>>() {
        let slots = shard_slots(shard, shards)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        for statement in &spec.shard_init {
            let statement = statement.replace(SHARD_SLOTS, &slots);
            work.facts.execute(port, &statement).await.map_err(|e| {
                Stop::Failed(format!(
                    "shard {shard} ({name}): `{}`: {e}",
                    short(&statement)
                ))
            })?;
        }
    }
    for rr in &r.replicas {
        let Some(leader) = leader_port(r, rr.leader) else {
            continue;
        };
        join_leader(work, ctx, spec, (&rr.name, rr.port), leader, deadline).await?;
    }
    let mut ports = vec![("the first member".to_string(), r.port)];
    ports.extend(r.replicas.iter().map(|rr| (rr.name.clone(), rr.port)));
    wait_whole(work, ctx, spec, &ports, deadline).await
}

/// Send a shard secondary its `replica_join`, its primary's node id
/// filled; again until the secondary knows the primary (the cluster's
/// gossip carries it there after the meeting) or the deadline.
async fn join_leader(
    work: &CellWork,
    ctx: &CellCtx,
    spec: &ShardingSpec,
    (name, port): (&str, u16),
    leader: u16,
    deadline: Instant,
) -> Result<(), Stop> {
    let id = match &spec.node_id {
        Some(ask) => work
            .facts
            .reply(leader, ask)
            .await
            .map_err(|e| Stop::Failed(format!("asking {name}'s primary for its id: {e}")))?
            .trim()
            .to_string(),
        None => String::new(),
    };
    for statement in &spec.replica_join {
        let statement = statement.replace(SHARD_PRIMARY_ID, &id);
        retry(ctx, deadline, || work.facts.execute(port, &statement))
            .await
            .map_err(|e| failed(ctx, format!("{name}: `{statement}`: {e}")))?;
    }
    Ok(())
}

/// Until every member's reply to `ready.statement` holds each expected
/// line.
async fn wait_whole(
    work: &CellWork,
    ctx: &CellCtx,
    spec: &ShardingSpec,
    ports: &[(String, u16)],
    deadline: Instant,
) -> Result<(), Stop> {
    let Some(ready) = &spec.ready else {
        return Ok(());
    };
    let count = ports.len().to_string();
    let expect: Vec<String> = ready
        .expect
        .iter()
        .map(|l| l.replace(MEMBER_COUNT, &count))
        .collect();
    let whole = || async {
        for (name, port) in ports {
            let reply = work.facts.reply(*port, &ready.statement).await?;
            let lines: Vec<&str> = reply.lines().map(str::trim).collect();
            if let Some(missing) = expect.iter().find(|l| !lines.contains(&l.as_str())) {
                return Err(format!("{name} does not say `{missing}` yet"));
            }
        }
        Ok(())
    };
    retry(ctx, deadline, whole).await.map_err(|e| {
        let secs = super::members::IN_SYNC_TIMEOUT.as_secs();
        failed(
            ctx,
            format!("the sharded cluster was not whole within {secs}s: {e}"),
        )
    })
}

/// A retry's end: interrupted when the run was, else failed with `why`.
fn failed(ctx: &CellCtx, why: String) -> Stop {
    if ctx.stop.is_cancelled() {
        Stop::Interrupted
    } else {
        Stop::Failed(why)
    }
}

/// `attempt` until it succeeds; its last error at the deadline.
async fn retry<F, Fut, T>(ctx: &CellCtx, deadline: Instant, mut attempt: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let mut pause = Duration::from_millis(20);
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = ctx.stop.cancelled() => return Err("interrupted".into()),
        }
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// A statement cut for an error message (a shard's slot list is long).
fn short(statement: &str) -> String {
    match statement.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &statement[..at]),
        None => statement.to_string(),
    }
}
