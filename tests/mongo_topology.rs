//! MongoDB replica-set and sharding sequences (issue 12), at the protocol
//! level: no mongod runs here. The tests' legacy server (wire 4 and 0)
//! plays the members, config servers and router and records every
//! command it got, in order, so the tests check what benchcage sent;
//! SecantusDB shows what a real server of today answers: it is a
//! one-member replica set that refuses to initiate or shard.

mod support;

use benchcage::clients::Endpoint;
use benchcage::clients::mongodb::topology::{self, Follow, MemberState, SetKind, Shard, ShardKey};
use benchcage::clients::mongodb::{MongoConn, MongoOptions};
use benchcage::model::Probe;
use benchcage::run::cell::EngineFacts;
use benchcage::run::facts::ProbeFacts;
use benchcage::spec::facts::Facts;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::legacy::LegacyMongo;
use support::{Kind, Server, block_on};

fn ep(port: u16) -> Endpoint {
    Endpoint::loopback(port)
}

/// The engine facts a MongoDB cell uses: statements and replica states.
fn mongo_facts() -> ProbeFacts {
    ProbeFacts {
        probe: Probe::Mongodb,
        facts: Facts::defaults(&Probe::Mongodb),
        digest_sql: None,
    }
}

/// The commands the legacy server on `port` got, in order, as `{db,
/// command}`, without each connection's handshake (its first `isMaster`)
/// and with repeats in a row (polls) counted once.
fn sent(port: u16) -> Vec<Value> {
    let mut c = block_on(MongoConn::connect(&ep(port))).unwrap();
    let st = block_on(c.run_json("admin", &json!({"legacyStats": 1, "commandLog": 1}))).unwrap();
    let mut out: Vec<Value> = st["commandLog"]
        .as_array()
        .expect("a command log")
        .iter()
        .filter(|e| !(e["n"] == json!(1) && e["command"].get("isMaster").is_some()))
        .map(|e| json!({"db": e["db"], "command": e["command"]}))
        .collect();
    out.dedup();
    out
}

/// Runs `fut`, which must fail with an error that contains `says`;
/// returns the whole message.
fn fails_saying<T: std::fmt::Debug, E: std::fmt::Display>(
    fut: impl std::future::Future<Output = Result<T, E>>,
    says: &str,
) -> String {
    let e = block_on(fut).unwrap_err().to_string();
    assert!(e.contains(says), "{e}");
    e
}

fn on_admin(command: Value) -> Value {
    json!({"db": "admin", "command": command})
}

/// `127.0.0.1:PORT` of each port.
fn hosts(ports: &[u16]) -> Vec<String> {
    ports.iter().map(|p| topology::member_host(*p)).collect()
}

fn states(s: &topology::SetStatus) -> Vec<(String, MemberState)> {
    s.members
        .iter()
        .map(|m| (m.host.clone(), m.state))
        .collect()
}

#[test]
fn a_replica_set_is_initiated_elects_the_first_member_and_follows_its_secondaries() {
    let mut m: Vec<LegacyMongo> = (0..3)
        .map(|_| LegacyMongo::start_with(4, &["--replset", "rs0"]))
        .collect();
    let ports: Vec<u16> = m.iter().map(|s| s.port).collect();
    let first = ep(ports[0]);
    // Before replSetInitiate: no primary, and no status to read.
    let h = block_on(topology::hello(&first)).unwrap();
    assert!(!h.writable_primary && !h.secondary, "{h}");
    fails_saying(
        topology::set_status(&first),
        "replSetGetStatus failed: no replset config has been received (code 94)",
    );

    block_on(topology::initiate_replica_set(&first, "rs0", &ports)).unwrap();
    block_on(topology::wait_primary(&first, Duration::from_secs(20))).unwrap();
    let h = block_on(topology::hello(&first)).unwrap();
    assert_eq!(h.to_string(), "the primary of set rs0");
    let s = block_on(topology::set_status(&first)).unwrap();
    assert_eq!((s.set.as_str(), s.my_state), ("rs0", MemberState::Primary));
    let h = hosts(&ports);
    assert_eq!(
        states(&s),
        vec![
            (h[0].clone(), MemberState::Primary),
            (h[1].clone(), MemberState::Secondary),
            (h[2].clone(), MemberState::Secondary),
        ]
    );
    for p in &ports[1..] {
        let f = block_on(topology::replica_follow(&first, *p)).unwrap();
        let want = Follow {
            state: MemberState::Secondary,
            linked: true,
            behind_ms: 0,
        };
        assert_eq!(f, want);
    }

    // What was sent, in order, with the config as benchcage built it.
    let config = json!({"_id": "rs0", "members": [
        {"_id": 0, "host": h[0], "priority": 2},
        {"_id": 1, "host": h[1], "priority": 1},
        {"_id": 2, "host": h[2], "priority": 1},
    ]});
    assert_eq!(
        sent(ports[0]),
        vec![
            on_admin(json!({"isMaster": 1})),
            on_admin(json!({"replSetGetStatus": 1})),
            on_admin(json!({"replSetInitiate": config})),
            on_admin(json!({"isMaster": 1})),
            on_admin(json!({"replSetGetStatus": 1})),
        ]
    );
    // The members themselves were only connected to, never commanded.
    assert_eq!(sent(ports[1]), Vec::<Value>::new());
    fails_saying(
        topology::initiate_replica_set(&first, "rs0", &ports),
        "replSetInitiate failed: already initialized (code 23)",
    );

    // A member that goes away is DOWN and no longer linked; the primary
    // keeps its majority.
    drop(m.pop());
    let f = block_on(topology::replica_follow(&first, ports[2])).unwrap();
    assert_eq!((f.state, f.linked), (MemberState::Down, false));
    assert!(f.behind_ms > 0, "{f:?}");
    assert!(block_on(topology::hello(&first)).unwrap().writable_primary);
    // Without a majority it steps down, and waiting for a primary fails
    // saying what the server is.
    drop(m.pop());
    let e = fails_saying(
        topology::wait_primary(&first, Duration::from_secs(1)),
        "not a writable primary within 1.0s",
    );
    assert!(e.contains("it is a secondary of set rs0"), "{e}");
}

#[test]
fn a_secondary_is_behind_by_the_writes_it_has_yet_to_apply_as_the_cell_reads_it() {
    // Wire 0 (protocol version 0): optimes are bare timestamps. The
    // primary's secondaries apply each write 2 seconds after it.
    let primary = LegacyMongo::start_with(0, &["--replset", "rs0", "--repl-delay", "2"]);
    let other = LegacyMongo::start_with(0, &["--replset", "rs0"]);
    let ports = [primary.port, other.port];
    let facts = mongo_facts();
    // The cell's init statement, as an engine spec would write it.
    let statement = topology::initiate_command("rs0", &ports, SetKind::Data).to_string();
    block_on(facts.execute(primary.port, &statement)).unwrap();
    block_on(topology::wait_primary(
        &ep(primary.port),
        Duration::from_secs(20),
    ))
    .unwrap();
    let s = block_on(facts.replica_state(primary.port, other.port)).unwrap();
    assert!(s.linked && s.behind == 0, "{s:?}");

    let mut c = block_on(MongoConn::connect(&ep(primary.port))).unwrap();
    block_on(c.insert_fields("w", "k1", [("f", "v")].into_iter())).unwrap();
    let wrote = Instant::now();
    let s = block_on(facts.replica_state(primary.port, other.port)).unwrap();
    assert!(s.linked && s.behind > 0, "right after a write: {s:?}");
    let deadline = wrote + Duration::from_secs(20);
    let caught_up = loop {
        let s = block_on(facts.replica_state(primary.port, other.port)).unwrap();
        if s.behind == 0 {
            break wrote.elapsed();
        }
        assert!(Instant::now() < deadline, "never caught up: {s:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(caught_up >= Duration::from_millis(1500), "{caught_up:?}");

    let statuses = sent(primary.port)
        .into_iter()
        .filter(|c| c["command"].get("replSetGetStatus").is_some())
        .count();
    // The polls in a row count once: before the write, after it.
    assert_eq!(statuses, 2);
    fails_saying(
        facts.replica_state(primary.port, 1),
        "set rs0 has no member on port 1",
    );
}

#[test]
fn config_servers_are_initiated_with_configsvr_and_a_wrong_config_is_refused_by_name() {
    let cfg = LegacyMongo::start_with(4, &["--replset", "cfg", "--configsvr"]);
    let at = ep(cfg.port);
    fails_saying(
        topology::initiate_replica_set(&at, "cfg", &[cfg.port]),
        "replSetInitiate failed: Nodes started with the --configsvr flag must have \
         configsvr:true in their config (code 93)",
    );
    fails_saying(
        topology::initiate_config_servers(&at, "other", &[cfg.port]),
        "with name other, but command line reports cfg",
    );
    // A config that leaves this server out.
    fails_saying(
        topology::initiate_config_servers(&at, "cfg", &[1]),
        "maps to this node",
    );
    block_on(topology::initiate_config_servers(&at, "cfg", &[cfg.port])).unwrap();
    block_on(topology::wait_primary(&at, Duration::from_secs(20))).unwrap();
    let me = topology::member_host(cfg.port);
    let member = json!([{"_id": 0, "host": me, "priority": 2}]);
    let elsewhere = json!([{"_id": 0, "host": "127.0.0.1:1", "priority": 2}]);
    assert_eq!(
        sent(cfg.port),
        vec![
            on_admin(json!({"replSetInitiate": {"_id": "cfg", "members": member}})),
            on_admin(json!({"replSetInitiate":
                {"_id": "other", "configsvr": true, "members": member}})),
            on_admin(json!({"replSetInitiate":
                {"_id": "cfg", "configsvr": true, "members": elsewhere}})),
            on_admin(json!({"replSetInitiate":
                {"_id": "cfg", "configsvr": true, "members": member}})),
            on_admin(json!({"isMaster": 1})),
        ]
    );
}

#[test]
fn a_router_gets_add_shard_enable_sharding_and_shard_collection_in_order() {
    let router = LegacyMongo::start_with(4, &["--mongos"]);
    let sh1: Vec<LegacyMongo> = (0..2)
        .map(|_| LegacyMongo::start_with(4, &["--replset", "sh1"]))
        .collect();
    let sh2 = LegacyMongo::start_with(4, &["--replset", "sh2"]);
    let at = ep(router.port);
    let sh1_ports: Vec<u16> = sh1.iter().map(|s| s.port).collect();
    assert!(block_on(topology::hello(&at)).unwrap().router);
    let expected = ["sh1", "sh2"];
    let missing = block_on(topology::missing_shards(&at, &expected)).unwrap();
    assert_eq!(missing, ["sh1", "sh2"]);

    let added = block_on(topology::add_shard(&at, "sh1", &sh1_ports)).unwrap();
    assert_eq!(added["shardAdded"], "sh1");
    block_on(topology::add_shard(&at, "sh2", &[sh2.port])).unwrap();
    let missing = block_on(topology::missing_shards(&at, &expected)).unwrap();
    assert!(missing.is_empty(), "{missing:?}");
    block_on(topology::enable_sharding(&at, "ycsb")).unwrap();
    let hashed = ShardKey::Hashed("_id".into());
    let ranged = ShardKey::Ranged("_id".into());
    block_on(topology::shard_collection(&at, "ycsb.usertable", &hashed)).unwrap();
    block_on(topology::shard_collection(&at, "ycsb.ranged", &ranged)).unwrap();
    let seed1 = topology::shard_seed("sh1", &sh1_ports);
    let seed2 = format!("sh2/{}", topology::member_host(sh2.port));
    let shard = |id: &str, host: &str| Shard {
        id: id.into(),
        host: host.into(),
    };
    assert_eq!(
        block_on(topology::list_shards(&at)).unwrap(),
        vec![shard("sh1", &seed1), shard("sh2", &seed2)]
    );
    assert_eq!(
        sent(router.port),
        vec![
            on_admin(json!({"isMaster": 1})),
            on_admin(json!({"listShards": 1})),
            on_admin(json!({"addShard": seed1})),
            on_admin(json!({"addShard": seed2})),
            on_admin(json!({"listShards": 1})),
            on_admin(json!({"enableSharding": "ycsb"})),
            on_admin(json!({"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}})),
            on_admin(json!({"shardCollection": "ycsb.ranged", "key": {"_id": 1}})),
            on_admin(json!({"listShards": 1})),
        ]
    );

    // The router's refusals name the command, its message and code.
    fails_saying(
        topology::enable_sharding(&at, "ycsb"),
        "enableSharding failed: sharding already enabled for database ycsb (code 23)",
    );
    fails_saying(
        topology::shard_collection(&at, "other.c", &hashed),
        "shardCollection failed: sharding not enabled for db other (code 20)",
    );
    let nobody = support::free_port();
    let e = fails_saying(
        topology::add_shard(&at, "sh3", &[nobody]),
        "addShard failed: couldn't connect to new shard sh3/",
    );
    assert!(e.contains("(code 6)"), "{e}");
    // A router knows no replica set commands.
    fails_saying(
        topology::set_status(&at),
        "replSetGetStatus failed: no such cmd",
    );
}

#[test]
fn a_statement_runs_on_the_database_its_db_names_and_admin_otherwise() {
    let s = LegacyMongo::start_with(4, &["--mongos"]);
    let facts = mongo_facts();
    block_on(facts.execute(s.port, r#"{"$db": "ycsb", "dbStats": 1}"#)).unwrap();
    block_on(facts.execute(s.port, r#"{"listShards": 1}"#)).unwrap();
    assert_eq!(
        sent(s.port),
        vec![
            json!({"db": "ycsb", "command": {"dbStats": 1}}),
            on_admin(json!({"listShards": 1})),
        ]
    );
    // A statement that is not a command fails before anything is sent.
    let e = fails_saying(
        facts.execute(s.port, "addShard sh1/127.0.0.1:1"),
        "statement `addShard sh1/127.0.0.1:1`: not JSON",
    );
    assert!(e.contains(r#"{"replSetInitiate": {...}}"#), "{e}");
    assert_eq!(sent(s.port).len(), 2);
}

/// SecantusDB over OP_MSG and, capped at wire 4, over OP_QUERY commands.
fn secantus_conns(port: u16) -> Vec<MongoConn> {
    [None, Some(4)]
        .into_iter()
        .map(|max_wire| {
            let opts = MongoOptions {
                max_wire,
                ..MongoOptions::default()
            };
            block_on(MongoConn::connect_with(&ep(port), &opts)).unwrap()
        })
        .collect()
}

#[test]
fn secantus_is_a_one_member_set_that_refuses_to_initiate_or_shard() {
    let mut s = Server::start(Kind::Secantus);
    let me = topology::member_host(s.port);
    for mut c in secantus_conns(s.port) {
        let h = block_on(c.hello()).unwrap();
        assert_eq!(h.to_string(), "the primary of set secantus");
        let st = block_on(c.set_status()).unwrap();
        assert_eq!(
            (st.set.as_str(), st.my_state),
            ("secantus", MemberState::Primary)
        );
        assert_eq!(states(&st), vec![(me.clone(), MemberState::Primary)]);
        assert!(st.members[0].is_self && st.members[0].healthy);
        assert!(st.members[0].optime.secs > 0, "{st:?}");
        // Its only member is the primary itself: no secondary to follow.
        let f = st.follow(s.port).unwrap();
        assert_eq!((f.linked, f.behind_ms), (false, 0));

        let hashed = ShardKey::Hashed("_id".into());
        for (statement, name) in [
            (
                topology::initiate_command("rs0", &[s.port], SetKind::Data),
                "replSetInitiate",
            ),
            (topology::add_shard_command("sh1", &[s.port]), "addShard"),
            (topology::enable_sharding_command("ycsb"), "enableSharding"),
            (
                topology::shard_collection_command("ycsb.u", &hashed),
                "shardCollection",
            ),
        ] {
            let st = topology::parse_statement(&statement.to_string()).unwrap();
            fails_saying(
                c.run_statement(&st),
                &format!("{name} failed: no such command: '{name}' (code 59)"),
            );
        }
        fails_saying(
            c.list_shards(),
            "listShards failed: no such command: 'listShards' (code 59)",
        );
    }
    block_on(topology::wait_primary(&ep(s.port), Duration::from_secs(20))).unwrap();
    fails_saying(
        topology::initiate_replica_set(&ep(s.port), "rs0", &[s.port]),
        &format!("mongodb at {me}: replSetInitiate failed: no such command"),
    );
    // The cell's view: the primary follows nobody, another port is not a
    // member.
    let facts = mongo_facts();
    fails_saying(
        facts.replica_state(s.port, 1),
        &format!("set secantus has no member on port 1 (members: {me})"),
    );
    // A statement on another database: `create` there, then list it.
    block_on(facts.execute(s.port, r#"{"$db": "topo", "create": "made"}"#)).unwrap();
    let list = r#"{"$db": "topo", "listCollections": 1}"#;
    let listed = block_on(topology::run_statement(&ep(s.port), list)).unwrap();
    assert_eq!(
        listed["cursor"]["firstBatch"][0]["name"], "made",
        "{listed}"
    );

    // Started --standalone it is no replica set at all.
    s.restart_secantus_with(&["--standalone"]);
    let h = block_on(topology::hello(&ep(s.port))).unwrap();
    assert_eq!(h.to_string(), "a standalone server");
    fails_saying(
        topology::set_status(&ep(s.port)),
        "replSetGetStatus failed: not running with --replSet (code 76)",
    );
}
