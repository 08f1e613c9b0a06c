//! A sharded cluster formed from members that answer (issue 12), as the
//! engine's `sharding:` says.
//!
//! Without routers (Redis Cluster): each shard's primary takes its share
//! of the hash slots, each shard's secondaries follow their primary by
//! node id, and every member is asked until it reports the cluster whole.
//! The first member (the cell's server) is shard 0's primary.
//!
//! With routers (MongoDB): the config servers (the first of them is the
//! cell's server) and each shard are replica sets, initiated on their
//! first member, which must then be a writable primary; the routers start
//! after, given the config servers' seed; the first router is sent every
//! shard and the data's sharding, and the cluster is whole once every
//! router lists every shard.

use super::{CellCtx, CellWork, IN_SYNC_TIMEOUT, Stop, Topology, initiate_set};
use crate::clients::redis_cluster::shard_slots;
use crate::model::Role;
use crate::model::cluster::{
    COLLECTION, DATABASE, MEMBER_COUNT, SET_NAME, SHARD_KEY, SHARD_PRIMARY_ID, SHARD_SET,
    SHARD_SLOTS, ShardingSpec,
};
use crate::run::cell::FactsError;
use std::time::{Duration, Instant};

/// One replica set of a cluster with routers: the config servers, or a
/// shard.
struct SetOf {
    name: String,
    config: bool,
    /// Its members' ports, its first member's (where it is initiated)
    /// first.
    ports: Vec<u16>,
}

/// The replica sets of the cluster, in start order: the cell's server's
/// (the config servers' when the cluster has any), then the others'.
fn sets(work: &CellWork, topology: &Topology, primary: u16) -> Vec<SetOf> {
    let (_, _, config_servers) = work.topology.sharded_counts();
    let mut out: Vec<SetOf> = Vec::new();
    let first = work.set.iter().map(|s| (s, primary, config_servers > 0));
    let rest = topology
        .members
        .iter()
        .zip(&work.replicas)
        .filter_map(|(rr, rw)| {
            let config = rw.role == Role::ConfigServer;
            Some((rw.set.as_ref()?, rr.port, config))
        });
    for (name, port, config) in first.chain(rest) {
        match out.iter_mut().find(|s| &s.name == name) {
            Some(set) => set.ports.push(port),
            None => out.push(SetOf {
                name: name.clone(),
                config,
                ports: vec![port],
            }),
        }
    }
    out
}

/// `SET/127.0.0.1:P1,127.0.0.1:P2`: a replica set as `{config_set}` and
/// `{shard_set}` name it.
fn seed(set: &SetOf) -> String {
    let hosts: Vec<String> = set.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    format!("{}/{}", set.name, hosts.join(","))
}

/// The `shard_data` statements, the load generator's database and
/// collection and the topology's key filled.
fn shard_data(spec: &ShardingSpec, topology: crate::model::Topology) -> Vec<String> {
    let key = match topology {
        crate::model::Topology::Sharded { key, .. } => key,
        _ => crate::model::ShardKeyKind::Hashed,
    };
    let key = spec.shard_keys.get(key.name()).cloned().unwrap_or_default();
    spec.shard_data
        .iter()
        .map(|statement| {
            statement
                .replace(DATABASE, crate::workload::stores::mongodb::DEFAULT_DB)
                .replace(COLLECTION, crate::workload::stores::TABLE)
                .replace(SHARD_KEY, &key)
        })
        .collect()
}

/// Initiate the config servers' replica set and each shard's on its first
/// member, as `config_initiate` and `shard_initiate` say, and wait until
/// each first member is a writable primary; returns the config servers'
/// seed for the routers' `{config_set}`.
pub(super) async fn initiate_sets(
    work: &CellWork,
    ctx: &CellCtx,
    topology: &Topology,
    primary: u16,
    spec: &ShardingSpec,
) -> Result<String, Stop> {
    let deadline = Instant::now() + IN_SYNC_TIMEOUT;
    let sets = sets(work, topology, primary);
    for set in &sets {
        let statements = if set.config {
            &spec.config_initiate
        } else {
            &spec.shard_initiate
        };
        initiate_set(work, set.ports[0], statements, &set.name, &set.ports).await?;
    }
    for set in &sets {
        retry(ctx, deadline, || work.facts.writable_primary(set.ports[0]))
            .await
            .map_err(|e| {
                let secs = IN_SYNC_TIMEOUT.as_secs();
                failed(
                    ctx,
                    format!(
                        "replica set {} had no primary within {secs}s: its first member {e}",
                        set.name
                    ),
                )
            })?;
    }
    Ok(sets.iter().find(|s| s.config).map(seed).unwrap_or_default())
}

/// Send the first router each shard (`add_shard`, again until it takes
/// it or the deadline) and then the data's sharding (`shard_data`, once);
/// wait until every router lists every shard.
pub(super) async fn add_shards(
    work: &CellWork,
    ctx: &CellCtx,
    topology: &Topology,
    primary: u16,
    spec: &ShardingSpec,
) -> Result<(), Stop> {
    let deadline = Instant::now() + IN_SYNC_TIMEOUT;
    let routers: Vec<(&str, u16)> = topology
        .members
        .iter()
        .filter(|rr| rr.is_router())
        .map(|rr| (rr.name.as_str(), rr.port))
        .collect();
    let Some(&(first, port)) = routers.first() else {
        return Err(Stop::Failed("the sharded cluster has no router".into()));
    };
    let shards: Vec<SetOf> = sets(work, topology, primary)
        .into_iter()
        .filter(|s| !s.config)
        .collect();
    for shard in &shards {
        let seed = seed(shard);
        for statement in &spec.add_shard {
            let statement = statement
                .replace(SHARD_SET, &seed)
                .replace(SET_NAME, &shard.name);
            retry(ctx, deadline, || work.facts.execute(port, &statement))
                .await
                .map_err(|e| failed(ctx, format!("{first}: `{statement}`: {e}")))?;
        }
    }
    for statement in shard_data(spec, work.topology) {
        work.facts
            .execute(port, &statement)
            .await
            .map_err(|e| Stop::Failed(format!("{first}: `{statement}`: {e}")))?;
    }
    let names: Vec<String> = shards.iter().map(|s| s.name.clone()).collect();
    let listed = || async {
        for (name, port) in &routers {
            let missing = work.facts.missing_shards(*port, &names).await?;
            if !missing.is_empty() {
                return Err(FactsError::NotYet(format!(
                    "{name} does not list {} yet",
                    missing.join(", ")
                )));
            }
        }
        Ok(())
    };
    retry(ctx, deadline, listed)
        .await
        .map_err(|e| not_whole(ctx, e))
}

/// Give every shard its slots, join every shard's secondaries, then wait
/// until every member says the cluster is whole, within
/// [`IN_SYNC_TIMEOUT`].
pub(super) async fn form(
    work: &CellWork,
    ctx: &CellCtx,
    topology: &Topology,
    primary: u16,
    spec: &ShardingSpec,
) -> Result<(), Stop> {
    let deadline = Instant::now() + IN_SYNC_TIMEOUT;
    let (shards, _, _) = work.topology.sharded_counts();
    let primaries = std::iter::once(("the first member".to_string(), primary, 0)).chain(
        topology
            .members
            .iter()
            .zip(&work.replicas)
            .filter(|(rr, _)| topology.leader_port(primary, rr.leader).is_none())
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
    for rr in &topology.members {
        let Some(leader) = topology.leader_port(primary, rr.leader) else {
            continue;
        };
        join_leader(work, ctx, spec, (&rr.name, rr.port), leader, deadline).await?;
    }
    let mut ports = vec![("the first member".to_string(), primary)];
    ports.extend(topology.members.iter().map(|rr| (rr.name.clone(), rr.port)));
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
                return Err(FactsError::NotYet(format!(
                    "{name} does not say `{missing}` yet"
                )));
            }
        }
        Ok(())
    };
    retry(ctx, deadline, whole)
        .await
        .map_err(|e| not_whole(ctx, e))
}

/// The cluster was not whole by the deadline (or the run was interrupted).
fn not_whole(ctx: &CellCtx, e: FactsError) -> Stop {
    let secs = IN_SYNC_TIMEOUT.as_secs();
    failed(
        ctx,
        format!("the sharded cluster was not whole within {secs}s: {e}"),
    )
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
async fn retry<F, Fut, T>(ctx: &CellCtx, deadline: Instant, mut attempt: F) -> Result<T, FactsError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, FactsError>>,
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
            _ = ctx.stop.cancelled() => return Err(FactsError::Interrupted),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ShardKeyKind, Topology};

    #[test]
    fn the_data_is_sharded_by_the_key_the_topology_names() {
        let spec = ShardingSpec {
            shard_data: vec![
                r#"{"enableSharding": "{database}"}"#.into(),
                r#"{"shardCollection": "{database}.{collection}", "key": {shard_key}}"#.into(),
            ],
            shard_keys: [
                ("hashed".to_string(), r#"{"_id": "hashed"}"#.to_string()),
                ("ranged".to_string(), r#"{"_id": 1}"#.to_string()),
            ]
            .into(),
            ..Default::default()
        };
        let sharded = |key| Topology::Sharded {
            shards: 2,
            replicas_per_shard: 1,
            config_servers: 1,
            routers: 1,
            key,
        };
        assert_eq!(
            shard_data(&spec, sharded(ShardKeyKind::Ranged)),
            [
                r#"{"enableSharding": "ycsb"}"#,
                r#"{"shardCollection": "ycsb.usertable", "key": {"_id": 1}}"#
            ]
        );
        assert_eq!(
            shard_data(&spec, sharded(ShardKeyKind::Hashed))[1],
            r#"{"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}}"#
        );
    }
}
