//! How the members of a replica set or a sharded cluster form it, as
//! data: the engine spec's `replication:` and `sharding:` (read by
//! `spec::engine`), carried by the plan, followed by `run::cell::topology`.

use std::collections::BTreeMap;

/// `sharding:`: how the members of a sharded cluster form it, as data.
///
/// Redis Cluster (no router, no config server): statements sent once each
/// member answers (`CLUSTER MEET`), then to each shard's primary
/// (`CLUSTER ADDSLOTS`), then to each shard's secondaries (`CLUSTER
/// REPLICATE`), and the reply every member gives once the cluster is whole
/// (`CLUSTER INFO` until `cluster_state:ok`).
///
/// MongoDB (routers and config servers): the config servers and each
/// shard are replica sets, initiated on their first member once their
/// members answer; the routers start after, given the config servers'
/// seed; then the first router is sent each shard (`addShard`) and the
/// data's sharding (`enableSharding`, `shardCollection`), and the cluster
/// is whole when every router lists every shard.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct ShardingSpec {
    /// Whether the cluster has routers the client connects to (mongos);
    /// without, the client finds each key's shard itself.
    pub routers: bool,
    /// Whether the cluster keeps its shard map on config servers.
    pub config_servers: bool,
    /// Sent to every member but the first once it answers;
    /// `{primary_port}` is the first member's port.
    pub member_join: Vec<String>,
    /// Sent to each shard's primary once every member has joined;
    /// `{shard_slots}` is the shard's share of the 16384 hash slots.
    pub shard_init: Vec<String>,
    /// Asked of a shard's primary for `{shard_primary_id}`, its node id.
    pub node_id: Option<String>,
    /// Sent to each shard's secondaries once every shard has its slots.
    pub replica_join: Vec<String>,
    /// Asked of every member until its reply holds each line of `expect`
    /// (`{members}` is the member count): the cluster is whole.
    pub ready: Option<ClusterReady>,
    /// Sent to the first config server once every config server answers,
    /// with `{set_name}` and `{set_members}` (MongoDB `replSetInitiate`
    /// with `configsvr: true`).
    pub config_initiate: Vec<String>,
    /// Sent to each shard's first member once the shard's members answer,
    /// with `{set_name}` and `{set_members}`: a shard is a replica set.
    pub shard_initiate: Vec<String>,
    /// A router's argv (mongos), with the launch placeholders and
    /// `{config_set}`, the config servers' seed (`SET/host:port,...`).
    pub router_command: Vec<String>,
    /// Sent to the first router for each shard once the routers answer,
    /// with `{shard_set}` (`SET/host:port,...`) and `{set_name}`.
    pub add_shard: Vec<String>,
    /// Sent to the first router once every shard is added, with
    /// `{database}` and `{collection}` (the built-in load generator's) and
    /// `{shard_key}` (from `shard_keys`).
    pub shard_data: Vec<String>,
    /// What `{shard_key}` is for each `key:` a sharded topology may give
    /// (`hashed`, `ranged`); a key not listed is refused by `plan`.
    pub shard_keys: BTreeMap<String, String>,
}

/// `ready: {statement: "CLUSTER INFO", expect: ["cluster_state:ok"]}`.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct ClusterReady {
    pub statement: String,
    pub expect: Vec<String>,
}

/// The placeholders of `sharding:`.
pub const SHARD_SLOTS: &str = "{shard_slots}";
pub const SHARD_PRIMARY_ID: &str = "{shard_primary_id}";
pub const MEMBER_COUNT: &str = "{members}";
pub const SET_NAME: &str = "{set_name}";
pub const CONFIG_SET: &str = "{config_set}";
pub const SHARD_SET: &str = "{shard_set}";
pub const SHARD_KEY: &str = "{shard_key}";
pub const DATABASE: &str = "{database}";
pub const COLLECTION: &str = "{collection}";

/// `replication: {replica_init: [ARGV...], replica_join: [STATEMENT...],
/// initiate: [STATEMENT...]}`: how a secondary of a replica set comes to
/// follow the primary, as data.
/// Both may use `{primary_port}` beside the launch placeholders.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct ReplicationSpec {
    /// Run on a secondary instead of `init`, before its first start
    /// (PostgreSQL: `pg_basebackup` from the primary); empty = `init`.
    pub replica_init: Vec<Vec<String>>,
    /// Sent to a secondary once it answers (redis `REPLICAOF`, MariaDB
    /// `CHANGE MASTER TO` and `START SLAVE`).
    pub replica_join: Vec<String>,
    /// Sent to the primary once every secondary answers, with
    /// `{set_members}` (MongoDB `replSetInitiate`).
    pub initiate: Vec<String>,
}

/// The placeholder of a replica set's members in `replication.initiate`:
/// a JSON array of `{"_id": N, "host": "127.0.0.1:PORT", "priority": P}`,
/// the primary first and with the highest priority.
pub const SET_MEMBERS: &str = "{set_members}";

/// The placeholder of the primary's port in `replication:`.
pub const PRIMARY_PORT: &str = "{primary_port}";
