//! MongoDB topologies (issue 12): the commands that make a replica set
//! and a sharded cluster, and what the servers report back about them.
//!
//! - Statements: an engine spec's init statements for MongoDB are
//!   commands written as JSON text (MongoDB extended JSON), the command's
//!   name first: `{"replSetInitiate": {...}}`. An optional `"$db"` field
//!   names the database (`admin` when absent); it is taken out of the
//!   command and sent the way the server's protocol says (inside OP_MSG,
//!   or as `<db>.$cmd` of OP_QUERY).
//! - Replica sets: `replSetInitiate` with members on `127.0.0.1`, the
//!   first one preferred as primary; `hello` / `isMaster` until it is a
//!   writable primary; `replSetGetStatus` on the primary for how each
//!   secondary follows it.
//! - Sharded clusters, on a router (mongos): `addShard` per shard replica
//!   set, `enableSharding`, `shardCollection` with a hashed or ranged key,
//!   and `listShards` until every shard is in the map. The config servers
//!   are a replica set with `configsvr: true`.
//!
//! Every function that talks to a server opens one connection of its own
//! (its handshake is `isMaster`). A server's refusal (`ok: 0`) is a
//! [`ClientError`] that names the command, the server's message and its
//! code: `replSetInitiate failed: no such command: 'replSetInitiate'
//! (code 59)`.

use super::MongoConn;
use super::session::fail;
use super::wire::Malformed;
use crate::clients::{ClientError, Endpoint};
use bson::{Bson, Document};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The database a statement runs on unless its `"$db"` names another.
pub(crate) const ADMIN_DB: &str = "admin";

/// The `priority` of a replica set's first member; the others keep
/// MongoDB's default of 1, so the first wins the elections and is the
/// primary the client connects to.
pub(crate) const FIRST_MEMBER_PRIORITY: i32 = 2;

/// How to write a statement, for error messages.
const STATEMENT_HINT: &str = "a MongoDB statement is one command as a JSON object, its name \
     first, e.g. {\"replSetInitiate\": {...}}; \"$db\" names its database (admin when absent)";

/// One command of a statement: where it runs and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The database it runs on.
    pub db: String,
    /// The command's name: the object's first key.
    pub name: String,
    command: Document,
}

/// Reads a statement: a JSON object in MongoDB extended JSON, the command
/// first (`{"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}}`),
/// with an optional `"$db"` string (default [`ADMIN_DB`]). The error says
/// what is wrong and how a statement is written.
pub fn parse_statement(text: &str) -> Result<Statement, Malformed> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON ({e}); {STATEMENT_HINT}"))?;
    let Value::Object(mut fields) = value else {
        return Err(Malformed(format!("not a JSON object; {STATEMENT_HINT}")));
    };
    let db = match fields.shift_remove("$db") {
        None => ADMIN_DB.to_string(),
        Some(Value::String(db)) if !db.is_empty() => db,
        Some(other) => {
            return Err(Malformed(format!(
                "\"$db\" is {other}, not a database name"
            )));
        }
    };
    let name = match fields.keys().next() {
        Some(k) if !k.starts_with('$') => k.clone(),
        Some(k) => {
            return Err(Malformed(format!(
                "`{k}` is not a command name; {STATEMENT_HINT}"
            )));
        }
        None => return Err(Malformed(format!("an empty object; {STATEMENT_HINT}"))),
    };
    // Extended JSON ({"$numberLong": "5"}, {"$timestamp": ...}) becomes
    // its BSON type; the object's order is kept (bson turns serde_json's
    // `preserve_order` on), so the command's name stays first.
    let command = match Bson::try_from(Value::Object(fields)) {
        Ok(Bson::Document(d)) => d,
        Ok(other) => return Err(Malformed(format!("not a command document: {other}"))),
        Err(e) => return Err(Malformed(format!("not MongoDB extended JSON ({e})"))),
    };
    Ok(Statement { db, name, command })
}

impl MongoConn {
    /// Runs a parsed statement; returns the reply as relaxed extended JSON.
    pub async fn run_statement(&mut self, st: &Statement) -> Result<Value, ClientError> {
        let reply = self.command(&st.db, &st.command).await?;
        Ok(Bson::Document(reply).into_relaxed_extjson())
    }
}

/// Runs one statement ([`parse_statement`]) on the server at `ep`;
/// returns its reply as relaxed extended JSON. A statement that does not
/// parse fails before connecting.
pub async fn run_statement(ep: &Endpoint, text: &str) -> Result<Value, ClientError> {
    let st = parse_statement(text).map_err(|e| fail(ep, format!("statement `{text}`: {e}")))?;
    MongoConn::connect(ep).await?.run_statement(&st).await
}

/// Runs `cmd` (a JSON object, its name first) on `db`.
async fn run(ep: &Endpoint, db: &str, cmd: &Value) -> Result<Value, ClientError> {
    MongoConn::connect(ep).await?.run_json(db, cmd).await
}

/// `127.0.0.1:PORT`: how a member is named in configs and seed lists.
pub fn member_host(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// What a replica set is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    /// A replica set of data (alone, or one shard of a cluster).
    Data,
    /// A sharded cluster's config servers (`configsvr: true`; their
    /// mongods run with `--configsvr`).
    ConfigServers,
}

/// The replica set config `replSetInitiate` takes: `_id` the set's name,
/// members `_id` 0..n at `127.0.0.1:PORT` in the order of `ports`, the
/// first with priority [`FIRST_MEMBER_PRIORITY`] and the others 1.
pub(crate) fn replica_set_config(set_name: &str, ports: &[u16], kind: SetKind) -> Value {
    let members: Vec<Value> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let priority = if i == 0 { FIRST_MEMBER_PRIORITY } else { 1 };
            json!({"_id": i, "host": member_host(*port), "priority": priority})
        })
        .collect();
    match kind {
        SetKind::Data => json!({"_id": set_name, "members": members}),
        SetKind::ConfigServers => {
            json!({"_id": set_name, "configsvr": true, "members": members})
        }
    }
}

/// `{"replSetInitiate": <config>}` for [`replica_set_config`].
pub fn initiate_command(set_name: &str, ports: &[u16], kind: SetKind) -> Value {
    json!({"replSetInitiate": replica_set_config(set_name, ports, kind)})
}

/// Sends `replSetInitiate` to the member at `ep` (it must be one of
/// `ports`) for a data replica set of the members on `ports`; returns the
/// reply. The set elects its primary afterwards: see [`wait_primary`].
pub async fn initiate_replica_set(
    ep: &Endpoint,
    set_name: &str,
    ports: &[u16],
) -> Result<Value, ClientError> {
    run(
        ep,
        ADMIN_DB,
        &initiate_command(set_name, ports, SetKind::Data),
    )
    .await
}

/// [`initiate_replica_set`] for a sharded cluster's config servers.
pub async fn initiate_config_servers(
    ep: &Endpoint,
    set_name: &str,
    ports: &[u16],
) -> Result<Value, ClientError> {
    let cmd = initiate_command(set_name, ports, SetKind::ConfigServers);
    run(ep, ADMIN_DB, &cmd).await
}

/// A replica set member's state, as `replSetGetStatus` numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    Startup,
    Primary,
    Secondary,
    Recovering,
    Startup2,
    Unknown,
    Arbiter,
    Down,
    Rollback,
    Removed,
    /// A number this client does not know.
    Other(i32),
}

impl MemberState {
    /// The state numbered `code` (MongoDB's "Replica Set Member States").
    pub(crate) fn from_code(code: i32) -> MemberState {
        match code {
            0 => MemberState::Startup,
            1 => MemberState::Primary,
            2 => MemberState::Secondary,
            3 => MemberState::Recovering,
            5 => MemberState::Startup2,
            6 => MemberState::Unknown,
            7 => MemberState::Arbiter,
            8 => MemberState::Down,
            9 => MemberState::Rollback,
            10 => MemberState::Removed,
            n => MemberState::Other(n),
        }
    }
}

/// The server's own name for the state (`stateStr`).
impl std::fmt::Display for MemberState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            MemberState::Startup => "STARTUP",
            MemberState::Primary => "PRIMARY",
            MemberState::Secondary => "SECONDARY",
            MemberState::Recovering => "RECOVERING",
            MemberState::Startup2 => "STARTUP2",
            MemberState::Unknown => "UNKNOWN",
            MemberState::Arbiter => "ARBITER",
            MemberState::Down => "DOWN",
            MemberState::Rollback => "ROLLBACK",
            MemberState::Removed => "REMOVED",
            MemberState::Other(n) => return write!(f, "state {n}"),
        };
        f.write_str(name)
    }
}

/// The last operation a member applied, as `replSetGetStatus` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpTime {
    /// The election term (protocol version 1); `None` under version 0,
    /// whose optime is a bare timestamp.
    pub term: Option<i64>,
    /// The oplog timestamp: seconds, and the operation's rank within them.
    pub secs: u32,
    pub inc: u32,
    /// `optimeDate` in milliseconds since the epoch (whole seconds: the
    /// server derives it from the timestamp).
    pub date_ms: Option<i64>,
}

impl OpTime {
    /// Order of operations: term, then timestamp (an unknown term is
    /// older than any, as a member that is down reports `t: -1`).
    fn order(&self) -> (i64, u32, u32) {
        (self.term.unwrap_or(-1), self.secs, self.inc)
    }

    fn millis(&self) -> i64 {
        self.date_ms.unwrap_or(self.secs as i64 * 1000)
    }
}

/// How far `member` is behind `head`, in milliseconds: the difference of
/// their `optimeDate`s (their timestamps' seconds when there is none), and
/// at least 1 while the member's optime is older than the head's within
/// the same second, so that 0 means it applied everything.
pub fn behind_ms(head: &OpTime, member: &OpTime) -> u64 {
    let by = head.millis() - member.millis();
    if by > 0 {
        by as u64
    } else if member.order() < head.order() {
        1
    } else {
        0
    }
}

/// One member of `replSetGetStatus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberStatus {
    /// `host:port` (`name`).
    pub host: String,
    pub state: MemberState,
    /// `health: 1`: the member the status was asked of hears it.
    pub healthy: bool,
    /// The member the status was asked of.
    pub is_self: bool,
    pub optime: OpTime,
}

impl MemberStatus {
    /// The port of its `host:port`.
    pub fn port(&self) -> Option<u16> {
        self.host.rsplit_once(':')?.1.parse().ok()
    }
}

/// A replica set as one member sees it (`replSetGetStatus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetStatus {
    /// The set's name.
    pub set: String,
    /// The state of the member that answered.
    pub my_state: MemberState,
    pub members: Vec<MemberStatus>,
}

/// How a secondary follows its primary, from the primary's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Follow {
    /// The member's state as the primary sees it.
    pub state: MemberState,
    /// The member is a SECONDARY and the member answering is the PRIMARY.
    pub linked: bool,
    /// Milliseconds of operations it has yet to apply ([`behind_ms`] of
    /// the primary's optime and its own).
    pub behind_ms: u64,
}

impl SetStatus {
    /// The member on `port` (every member is on 127.0.0.1).
    pub fn member(&self, port: u16) -> Option<&MemberStatus> {
        self.members.iter().find(|m| m.port() == Some(port))
    }

    /// How the member on `port` follows the member that answered, which
    /// should be the primary.
    pub fn follow(&self, port: u16) -> Result<Follow, Malformed> {
        let names = || {
            let hosts: Vec<&str> = self.members.iter().map(|m| m.host.as_str()).collect();
            hosts.join(", ")
        };
        let m = self.member(port).ok_or_else(|| {
            format!(
                "set {} has no member on port {port} (members: {})",
                self.set,
                names()
            )
        })?;
        let head = self
            .members
            .iter()
            .find(|m| m.is_self)
            .ok_or_else(|| format!("set {}: no member is marked as self", self.set))?;
        Ok(Follow {
            state: m.state,
            linked: m.state == MemberState::Secondary && self.my_state == MemberState::Primary,
            behind_ms: behind_ms(&head.optime, &m.optime),
        })
    }
}

/// A number field of any BSON number type, as an integer.
fn int(d: &Document, key: &str) -> Option<i64> {
    match d.get(key)? {
        Bson::Int32(i) => Some(*i as i64),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) => Some(*f as i64),
        _ => None,
    }
}

/// A member's `optime` (a timestamp, or `{ts, t}`) and `optimeDate`.
fn optime(m: &Document) -> OpTime {
    let (ts, term) = match m.get("optime") {
        Some(Bson::Timestamp(ts)) => (Some(*ts), None),
        Some(Bson::Document(d)) => match d.get("ts") {
            Some(Bson::Timestamp(ts)) => (Some(*ts), int(d, "t")),
            _ => (None, int(d, "t")),
        },
        _ => (None, None),
    };
    OpTime {
        term,
        secs: ts.map_or(0, |t| t.time),
        inc: ts.map_or(0, |t| t.increment),
        date_ms: m
            .get_datetime("optimeDate")
            .ok()
            .map(|d| d.timestamp_millis()),
    }
}

/// Reads a `replSetGetStatus` reply.
fn parse_status(reply: &Document) -> Result<SetStatus, Malformed> {
    let set = reply
        .get_str("set")
        .map_err(|_| "replSetGetStatus: a reply without the set's name".to_string())?;
    let my_state = int(reply, "myState")
        .ok_or("replSetGetStatus: a reply without myState")?
        .try_into()
        .map_or(MemberState::Other(-1), MemberState::from_code);
    let list = reply
        .get_array("members")
        .map_err(|_| "replSetGetStatus: a reply without members")?;
    let mut members = Vec::new();
    for m in list {
        let Bson::Document(m) = m else {
            return Err("replSetGetStatus: a member that is not a document".into());
        };
        let state = int(m, "state").ok_or("replSetGetStatus: a member without a state")?;
        members.push(MemberStatus {
            host: m.get_str("name").unwrap_or_default().to_string(),
            state: MemberState::from_code(state as i32),
            healthy: int(m, "health") == Some(1),
            is_self: m.get_bool("self").unwrap_or(false),
            optime: optime(m),
        });
    }
    Ok(SetStatus {
        set: set.to_string(),
        my_state,
        members,
    })
}

impl MongoConn {
    /// `replSetGetStatus` of the member this connection is to.
    pub async fn set_status(&mut self) -> Result<SetStatus, ClientError> {
        let reply = self
            .command(ADMIN_DB, &bson::doc! {"replSetGetStatus": 1})
            .await?;
        parse_status(&reply).map_err(|e| self.fail(e))
    }
}

/// `replSetGetStatus` of the member at `ep`.
pub async fn set_status(ep: &Endpoint) -> Result<SetStatus, ClientError> {
    MongoConn::connect(ep).await?.set_status().await
}

/// How the member on `member_port` follows the primary at `primary`, from
/// the primary's `replSetGetStatus`: linked while it is a SECONDARY of a
/// PRIMARY; behind by the milliseconds of operations it has yet to apply.
pub async fn replica_follow(primary: &Endpoint, member_port: u16) -> Result<Follow, ClientError> {
    set_status(primary)
        .await?
        .follow(member_port)
        .map_err(|e| fail(primary, e))
}

/// What `hello` (`isMaster` before MongoDB 5.0) says of a server's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// It takes writes: a replica set's primary, a standalone server or
    /// a router (`isWritablePrimary`, `ismaster` before 5.0).
    pub writable_primary: bool,
    /// A replica set's secondary.
    pub secondary: bool,
    /// The replica set it belongs to (`setName`).
    pub set_name: Option<String>,
    /// A router of a sharded cluster (mongos says `msg: "isdbgrid"`).
    pub router: bool,
}

/// `primary of set rs0`, `router`, `standalone`, for messages.
impl std::fmt::Display for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let role = match (self.router, self.writable_primary, self.secondary) {
            (true, _, _) => return f.write_str("a router (mongos)"),
            (_, true, _) => "the primary",
            (_, _, true) => "a secondary",
            _ => "neither primary nor secondary",
        };
        match &self.set_name {
            Some(set) => write!(f, "{role} of set {set}"),
            None if self.writable_primary => f.write_str("a standalone server"),
            None => write!(f, "{role}, in no replica set"),
        }
    }
}

/// First wire version whose servers all answer `hello` (MongoDB 5.0;
/// 4.4.2 has it, 4.4.0 does not). Older ones are asked `isMaster`.
const WIRE_HELLO: i32 = 13;

impl MongoConn {
    /// `hello` (or `isMaster`) on this connection.
    pub async fn hello(&mut self) -> Result<Hello, ClientError> {
        let (name, writable) = if self.wire_version() >= WIRE_HELLO {
            ("hello", "isWritablePrimary")
        } else {
            ("isMaster", "ismaster")
        };
        let mut cmd = Document::new();
        cmd.insert(name, 1);
        let r = self.command(ADMIN_DB, &cmd).await?;
        Ok(Hello {
            writable_primary: r.get_bool(writable).unwrap_or(false),
            secondary: r.get_bool("secondary").unwrap_or(false),
            set_name: r.get_str("setName").ok().map(str::to_string),
            router: r.get_str("msg") == Ok("isdbgrid"),
        })
    }
}

/// `hello` of the server at `ep`.
pub async fn hello(ep: &Endpoint) -> Result<Hello, ClientError> {
    MongoConn::connect(ep).await?.hello().await
}

/// Asks `hello` on one connection until the server at `ep` is a writable
/// primary, within `timeout`; returns how long that took. The pause
/// between questions grows from 20 ms to 500 ms. A failed question is
/// asked again (the connection reconnects) until the deadline, and the
/// error names the last answer.
pub async fn wait_primary(ep: &Endpoint, timeout: Duration) -> Result<Duration, ClientError> {
    let start = Instant::now();
    let deadline = start + timeout;
    let mut pause = Duration::from_millis(20);
    let mut conn = None;
    loop {
        let answer = match &mut conn {
            Some(c) => MongoConn::hello(c).await,
            None => match MongoConn::connect(ep).await {
                Ok(c) => conn.insert(c).hello().await,
                Err(e) => Err(e),
            },
        };
        let last = match answer {
            Ok(h) if h.writable_primary => return Ok(start.elapsed()),
            Ok(h) => format!("it is {h}"),
            Err(e) => e.to_string(),
        };
        if Instant::now() + pause > deadline {
            return Err(fail(
                ep,
                format!(
                    "not a writable primary within {:.1}s (last answer: {last})",
                    timeout.as_secs_f64()
                ),
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// `SET/127.0.0.1:P1,127.0.0.1:P2`: a shard replica set as `addShard`
/// takes it (the router finds the other members from these).
pub fn shard_seed(set_name: &str, ports: &[u16]) -> String {
    let hosts: Vec<String> = ports.iter().map(|p| member_host(*p)).collect();
    format!("{set_name}/{}", hosts.join(","))
}

/// `{"addShard": "SET/host,host"}`; the router names the shard after the
/// set.
pub fn add_shard_command(set_name: &str, ports: &[u16]) -> Value {
    json!({"addShard": shard_seed(set_name, ports)})
}

/// `{"enableSharding": db}`.
pub fn enable_sharding_command(db: &str) -> Value {
    json!({"enableSharding": db})
}

/// How a collection's documents are spread over the shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardKey {
    /// By a hash of the field: writes spread evenly (`{field: "hashed"}`).
    Hashed(String),
    /// By ranges of the field, ascending (`{field: 1}`).
    Ranged(String),
}

impl ShardKey {
    /// The key document of `shardCollection`.
    pub fn document(&self) -> Value {
        let mut key = serde_json::Map::new();
        match self {
            ShardKey::Hashed(field) => key.insert(field.clone(), json!("hashed")),
            ShardKey::Ranged(field) => key.insert(field.clone(), json!(1)),
        };
        Value::Object(key)
    }
}

/// `{"shardCollection": "db.coll", "key": {...}}`.
pub fn shard_collection_command(ns: &str, key: &ShardKey) -> Value {
    json!({"shardCollection": ns, "key": key.document()})
}

/// `addShard` of the replica set `set_name` on `ports`, sent to the
/// router at `ep`; returns the reply (`shardAdded`).
pub async fn add_shard(ep: &Endpoint, set_name: &str, ports: &[u16]) -> Result<Value, ClientError> {
    run(ep, ADMIN_DB, &add_shard_command(set_name, ports)).await
}

/// `enableSharding` of database `db` on the router at `ep`.
pub async fn enable_sharding(ep: &Endpoint, db: &str) -> Result<Value, ClientError> {
    run(ep, ADMIN_DB, &enable_sharding_command(db)).await
}

/// `shardCollection` of `ns` (`db.collection`) by `key` on the router at `ep`.
pub async fn shard_collection(
    ep: &Endpoint,
    ns: &str,
    key: &ShardKey,
) -> Result<Value, ClientError> {
    run(ep, ADMIN_DB, &shard_collection_command(ns, key)).await
}

/// One shard of `listShards`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// Its name (`_id`): the replica set's name unless `addShard` gave one.
    pub id: String,
    /// `SET/host,host` as the router knows it.
    pub host: String,
}

fn parse_shards(reply: &Document) -> Result<Vec<Shard>, Malformed> {
    let list = reply
        .get_array("shards")
        .map_err(|_| Malformed("listShards: a reply without shards".into()))?;
    list.iter()
        .map(|s| match s {
            Bson::Document(s) => Ok(Shard {
                id: s.get_str("_id").unwrap_or_default().to_string(),
                host: s.get_str("host").unwrap_or_default().to_string(),
            }),
            _ => Err(Malformed(
                "listShards: a shard that is not a document".into(),
            )),
        })
        .collect()
}

impl MongoConn {
    /// The shards the router this connection is to knows (`listShards`).
    pub async fn list_shards(&mut self) -> Result<Vec<Shard>, ClientError> {
        let reply = self
            .command(ADMIN_DB, &bson::doc! {"listShards": 1})
            .await?;
        parse_shards(&reply).map_err(|e| self.fail(e))
    }
}

/// The shards the router at `ep` knows (`listShards`).
pub async fn list_shards(ep: &Endpoint) -> Result<Vec<Shard>, ClientError> {
    MongoConn::connect(ep).await?.list_shards().await
}

/// The names of `expected` that the router at `ep` does not list yet;
/// empty when the shard map is complete.
pub async fn missing_shards(ep: &Endpoint, expected: &[&str]) -> Result<Vec<String>, ClientError> {
    let known = list_shards(ep).await?;
    Ok(expected
        .iter()
        .filter(|name| !known.iter().any(|s| s.id == **name))
        .map(|name| name.to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{DateTime, Timestamp, doc};

    #[test]
    fn a_statement_is_a_command_object_whose_first_key_is_its_name() {
        let st = parse_statement(
            r#"{"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}, "numInitialChunks": {"$numberLong": "8"}}"#,
        )
        .unwrap();
        assert_eq!(
            (st.db.as_str(), st.name.as_str()),
            ("admin", "shardCollection")
        );
        // The order is the text's, and extended JSON becomes its BSON type.
        assert_eq!(
            st.command,
            doc! {"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}, "numInitialChunks": 8i64}
        );
        let keys: Vec<&String> = st.command.keys().collect();
        assert_eq!(keys, ["shardCollection", "key", "numInitialChunks"]);
        let st = parse_statement(r#"{"$db": "ycsb", "create": "t"}"#).unwrap();
        assert_eq!((st.db.as_str(), st.name.as_str()), ("ycsb", "create"));
        assert_eq!(st.command, doc! {"create": "t"});
    }

    #[test]
    fn a_bad_statement_says_what_is_wrong_and_how_to_write_one() {
        for (text, says) in [
            ("replSetInitiate", "not JSON"),
            ("[1, 2]", "not a JSON object"),
            ("{}", "an empty object"),
            (r#"{"$db": "admin"}"#, "an empty object"),
            (r#"{"$set": 1}"#, "`$set` is not a command name"),
            (r#"{"$db": 5, "ping": 1}"#, "\"$db\" is 5"),
        ] {
            let e = parse_statement(text).unwrap_err().0;
            assert!(e.contains(says), "{text}: {e}");
        }
        let e = parse_statement("{").unwrap_err().0;
        assert!(e.contains("{\"replSetInitiate\": {...}}"), "{e}");
    }

    #[test]
    fn a_replica_sets_config_numbers_its_members_and_prefers_the_first() {
        assert_eq!(
            replica_set_config("rs0", &[27017, 27018, 27019], SetKind::Data),
            json!({"_id": "rs0", "members": [
                {"_id": 0, "host": "127.0.0.1:27017", "priority": 2},
                {"_id": 1, "host": "127.0.0.1:27018", "priority": 1},
                {"_id": 2, "host": "127.0.0.1:27019", "priority": 1},
            ]})
        );
        assert_eq!(
            initiate_command("cfg", &[40001], SetKind::ConfigServers),
            json!({"replSetInitiate": {"_id": "cfg", "configsvr": true, "members": [
                {"_id": 0, "host": "127.0.0.1:40001", "priority": 2},
            ]}})
        );
    }

    #[test]
    fn sharding_commands_name_the_set_its_seeds_and_the_key() {
        assert_eq!(
            add_shard_command("sh1", &[1, 2]),
            json!({"addShard": "sh1/127.0.0.1:1,127.0.0.1:2"})
        );
        assert_eq!(
            enable_sharding_command("ycsb"),
            json!({"enableSharding": "ycsb"})
        );
        let hashed = shard_collection_command("ycsb.u", &ShardKey::Hashed("_id".into()));
        assert_eq!(
            hashed.to_string(),
            r#"{"shardCollection":"ycsb.u","key":{"_id":"hashed"}}"#
        );
        let ranged = shard_collection_command("ycsb.u", &ShardKey::Ranged("_id".into()));
        assert_eq!(
            ranged,
            json!({"shardCollection": "ycsb.u", "key": {"_id": 1}})
        );
    }

    fn member(port: u16, state: i32, optime: Bson, date_s: i64, me: bool) -> Document {
        doc! {
            "_id": port as i32, "name": format!("127.0.0.1:{port}"), "health": 1.0,
            "state": state, "optime": optime,
            "optimeDate": DateTime::from_millis(date_s * 1000), "self": me,
        }
    }

    fn pv1(t: i64, secs: u32, inc: u32) -> Bson {
        Bson::Document(doc! {"ts": Timestamp { time: secs, increment: inc }, "t": t})
    }

    #[test]
    fn a_secondary_is_linked_to_a_primary_and_behind_by_the_milliseconds_it_has_to_apply() {
        let reply = doc! {"set": "rs0", "myState": 1, "members": [
            member(1, 1, pv1(1, 100, 7), 100, true),
            member(2, 2, pv1(1, 97, 1), 97, false),
            member(3, 2, pv1(1, 100, 3), 100, false),
            member(4, 5, pv1(1, 100, 7), 100, false),
        ], "ok": 1.0};
        let s = parse_status(&reply).unwrap();
        assert_eq!((s.set.as_str(), s.my_state), ("rs0", MemberState::Primary));
        let f = s.follow(2).unwrap();
        assert_eq!((f.linked, f.behind_ms), (true, 3000));
        // In the same second but an older operation: not yet caught up.
        assert_eq!(s.follow(3).unwrap().behind_ms, 1);
        // STARTUP2 has the data but is not yet a secondary.
        let f = s.follow(4).unwrap();
        assert_eq!(
            (f.state, f.linked, f.behind_ms),
            (MemberState::Startup2, false, 0)
        );
        let e = s.follow(9).unwrap_err().0;
        assert!(
            e.contains("no member on port 9") && e.contains("127.0.0.1:4"),
            "{e}"
        );
    }

    #[test]
    fn a_status_asked_of_a_secondary_links_nobody_and_bare_timestamps_are_read() {
        // Protocol version 0 (MongoDB 3.0 and 3.2): optime is a timestamp.
        let ts = |secs| {
            Bson::Timestamp(Timestamp {
                time: secs,
                increment: 1,
            })
        };
        let reply = doc! {"set": "rs0", "myState": 2, "members": [
            member(1, 2, ts(50), 50, true),
            member(2, 2, ts(50), 50, false),
            member(3, 8, ts(0), 0, false),
        ]};
        let s = parse_status(&reply).unwrap();
        let f = s.follow(2).unwrap();
        assert_eq!((f.linked, f.behind_ms), (false, 0));
        let down = s.follow(3).unwrap();
        assert_eq!(
            (down.state, down.linked, down.behind_ms),
            (MemberState::Down, false, 50_000)
        );
        assert_eq!(MemberState::Down.to_string(), "DOWN");
        assert_eq!(MemberState::from_code(4).to_string(), "state 4");
    }

    #[test]
    fn a_status_without_the_sets_fields_is_an_error() {
        let e = parse_status(&doc! {"ok": 1.0}).unwrap_err().0;
        assert!(e.contains("without the set's name"), "{e}");
        let e = parse_status(&doc! {"set": "x", "myState": 1})
            .unwrap_err()
            .0;
        assert!(e.contains("without members"), "{e}");
    }

    #[test]
    fn the_shard_list_is_read_by_name_and_host() {
        let reply = doc! {"shards": [
            {"_id": "sh1", "host": "sh1/127.0.0.1:1,127.0.0.1:2", "state": 1},
        ], "ok": 1.0};
        assert_eq!(
            parse_shards(&reply).unwrap(),
            vec![Shard {
                id: "sh1".into(),
                host: "sh1/127.0.0.1:1,127.0.0.1:2".into()
            }]
        );
    }

    #[test]
    fn hello_says_the_role_in_words() {
        let h = |w, s, set: Option<&str>, router| Hello {
            writable_primary: w,
            secondary: s,
            set_name: set.map(str::to_string),
            router,
        };
        assert_eq!(
            h(true, false, Some("rs0"), false).to_string(),
            "the primary of set rs0"
        );
        assert_eq!(
            h(false, true, Some("rs0"), false).to_string(),
            "a secondary of set rs0"
        );
        assert_eq!(
            h(true, false, None, false).to_string(),
            "a standalone server"
        );
        assert_eq!(h(true, false, None, true).to_string(), "a router (mongos)");
        assert_eq!(
            h(false, false, None, false).to_string(),
            "neither primary nor secondary, in no replica set"
        );
    }
}
