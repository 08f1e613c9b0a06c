//! The MongoDB wire client against servers of every protocol generation:
//! SecantusDB (newest, OP_MSG; forced down to OP_QUERY commands), and the
//! tests' own legacy server at wire 4 (MongoDB 3.2) and wire 0 (TokuMX).

mod support;

use benchcage::clients::Endpoint;
use benchcage::clients::mongodb::{MongoConn, MongoOptions, Protocol, Sessions};
use serde_json::json;
use support::cli::bc;
use support::legacy::LegacyMongo;
use support::server::mongo_endpoint;
use support::tap::Tap;
use support::{Kind, Server, block_on};

fn conn(port: u16, max_wire: Option<i32>) -> MongoConn {
    let opts = MongoOptions {
        max_wire,
        ..MongoOptions::default()
    };
    block_on(MongoConn::connect_with(&mongo_endpoint(port), &opts)).expect("connects")
}

/// How many messages of each opcode and command the legacy server got.
fn legacy_stats(port: u16) -> serde_json::Value {
    let mut c = conn(port, None);
    let docs = block_on(c.run_json("admin", &json!({"legacyStats": 1}))).unwrap();
    docs["stats"].clone()
}

/// `benchcage drive` on `url`: runs YCSB A to F, each after a fresh load
/// (D and E insert new keys), then the candles load and its three
/// queries; every operation must succeed.
fn drive_everything(url: &str) {
    let run = |args: &[&str]| {
        let out = bc()
            .args(["drive", "--store", url, "--threads", "2"])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{args:?} on {url}: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains("FAILED"), "{args:?} on {url}: {text}");
        text
    };
    for (w, kinds) in [
        ("a", &["READ", "UPDATE"][..]),
        ("b", &["READ"]),
        ("c", &["READ"]),
        ("d", &["READ"]),
        ("e", &["SCAN"]),
        ("f", &["READ-MODIFY-WRITE"]),
    ] {
        let t = run(&[
            "--workload",
            w,
            "--records",
            "300",
            "--load",
            "--reset",
            "--operations",
            "60",
        ]);
        assert!(t.contains("[INSERT], Operations, 300"), "{w}: {t}");
        for k in kinds {
            assert!(t.contains(&format!("[{k}], Return=OK")), "{w}: {t}");
        }
    }
    run(&[
        "--workload",
        "candles",
        "--records",
        "3000",
        "--load",
        "--reset",
        "--queries",
        "by_ticker",
        "--operations",
        "20",
    ]);
    for q in ["interval", "day"] {
        let t = run(&[
            "--workload",
            "candles",
            "--records",
            "3000",
            "--queries",
            q,
            "--operations",
            "20",
        ]);
        assert!(
            t.contains(&format!("[{}], Return=OK, 20", q.to_uppercase())),
            "{t}"
        );
    }
}

#[test]
fn drive_runs_ycsb_and_candles_on_a_wire_0_server_with_the_legacy_opcodes() {
    let s = LegacyMongo::start(0);
    assert_eq!(conn(s.port, None).wire_version(), 0);
    drive_everything(&s.url());
    let st = legacy_stats(s.port);
    // Writes as OP_INSERT / OP_UPDATE, each acknowledged by getLastError;
    // reads and scans as OP_QUERY, cursors followed and closed.
    for op in [
        "op:2002",
        "op:2001",
        "op:2005",
        "op:2007",
        "cmd:getLastError",
    ] {
        assert!(st[op].as_u64().unwrap_or(0) > 0, "{op} never sent: {st}");
    }
    for cmd in [
        "cmd:insert",
        "cmd:update",
        "cmd:find",
        "cmd:createIndexes",
        "op:2013",
    ] {
        assert!(st.get(cmd).is_none(), "{cmd} sent to a wire 0 server: {st}");
    }
    // The candles' three indexes went through system.indexes.
    let mut c = conn(s.port, None);
    let ix = block_on(c.run_json("admin", &json!({"legacyStats": 1}))).unwrap();
    assert_eq!(ix["indexes"]["candles.candles"], json!(3), "{ix}");
}

#[test]
fn drive_runs_ycsb_and_candles_on_a_wire_4_server_with_query_commands() {
    let s = LegacyMongo::start(4);
    let c = conn(s.port, None);
    assert_eq!(
        (c.wire_version(), c.protocol()),
        (4, Protocol::QueryCommands)
    );
    drive_everything(&s.url());
    let st = legacy_stats(s.port);
    for cmd in [
        "cmd:insert",
        "cmd:update",
        "cmd:find",
        "cmd:getMore",
        "cmd:createIndexes",
    ] {
        assert!(st[cmd].as_u64().unwrap_or(0) > 0, "{cmd} never sent: {st}");
    }
    for op in [
        "op:2002",
        "op:2001",
        "op:2005",
        "op:2013",
        "cmd:getLastError",
    ] {
        assert!(st.get(op).is_none(), "{op} sent to a wire 4 server: {st}");
    }
}

#[test]
fn drive_runs_ycsb_and_candles_on_secantus_over_op_msg() {
    let s = Server::start(Kind::Secantus);
    assert_eq!(conn(s.port, None).protocol(), Protocol::OpMsg);
    drive_everything(&s.url());
}

#[test]
fn drive_runs_ycsb_and_candles_on_secantus_over_op_query_commands() {
    let s = Server::start(Kind::Secantus);
    let c = conn(s.port, Some(4));
    assert_eq!(
        (c.wire_version(), c.protocol()),
        (4, Protocol::QueryCommands)
    );
    drive_everything(&format!("{}/ycsb?maxWireVersion=4", s.url()));
}

/// Writes and reads of one connection, with their results.
fn writes_and_reads(c: &mut MongoConn) {
    block_on(async {
        c.drop_collection("w").await.unwrap();
        c.insert_fields("w", "k1", [("f", "a")].into_iter())
            .await
            .unwrap();
        let recs = [("k2", "b"), ("k3", "c")];
        c.insert_fields_many("w", recs.iter().map(|(k, v)| (*k, [("f", *v)].into_iter())))
            .await
            .unwrap();
        assert_eq!(c.find_id("w", "k2").await.unwrap(), 2);
        assert_eq!(c.find_id("w", "nope").await.unwrap(), 0);
        assert_eq!(c.set_field("w", "k1", "f", "z").await.unwrap(), 1);
        assert_eq!(c.set_field("w", "nope", "f", "z").await.unwrap(), 0);
        assert_eq!(c.scan_from("w", "k2", 5).await.unwrap(), 2);
        assert_eq!(c.delete_id("w", "k3").await.unwrap(), 1);
        let all = c.find_json("w", &json!({})).await.unwrap();
        assert_eq!(
            json!(all),
            json!([{"_id": "k1", "f": "z"}, {"_id": "k2", "f": "b"}])
        );
        // A write error inside a batch fails the call and names the cause;
        // the connection stays in step.
        let dup = [("k1", "x"), ("k9", "y")];
        let e = c
            .insert_fields_many("w", dup.iter().map(|(k, v)| (*k, [("f", *v)].into_iter())))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("E11000") || e.contains("duplicate"), "{e}");
        assert_eq!(
            c.find_id("w", "k9").await.unwrap(),
            2,
            "unordered: k9 went in"
        );
    });
}

#[test]
fn every_protocol_writes_reads_and_reports_write_errors_alike() {
    let sec = Server::start(Kind::Secantus);
    let w0 = LegacyMongo::start(0);
    let w4 = LegacyMongo::start(4);
    // SecantusDB answers every OP_QUERY as a command, so wire 2 (write
    // commands, reads as OP_QUERY on the collection) is the legacy server's.
    let w2 = LegacyMongo::start(2);
    for (port, cap, proto) in [
        (sec.port, None, Protocol::OpMsg),
        (sec.port, Some(4), Protocol::QueryCommands),
        (w4.port, None, Protocol::QueryCommands),
        (w2.port, None, Protocol::QueryCommands),
        (w0.port, None, Protocol::QueryCommands),
    ] {
        let mut c = conn(port, cap);
        assert_eq!(c.protocol(), proto);
        writes_and_reads(&mut c);
    }
}

#[test]
fn an_ok_0_reply_fails_that_call_and_the_connection_goes_on() {
    let s = Server::start(Kind::Secantus);
    for cap in [None, Some(4)] {
        let mut c = conn(s.port, cap);
        let e = block_on(c.count_find("w", &json!({"$bogus": 1}))).unwrap_err();
        assert!(e.to_string().contains("find failed"), "{e}");
        assert_eq!(block_on(c.count_find("w", &json!({}))).unwrap(), 0);
    }
}

#[test]
fn a_refused_opcode_fails_every_operation_and_counts_against_the_budget() {
    // SecantusDB, like MongoDB 5.1+, closes the socket on OP_INSERT.
    let s = Server::start(Kind::Secantus);
    let out = bc()
        .args([
            "drive",
            "--store",
            &format!("{}/ycsb?maxWireVersion=0", s.url()),
        ])
        .args([
            "--records",
            "20",
            "--load",
            "--reset",
            "--operations",
            "1",
            "--error-budget",
            "5",
        ])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
    // One connection: the sixth failure spends the budget of 5 and stops
    // the load there.
    assert!(text.contains("[INSERT-FAILED], Operations, 6"), "{text}");
    assert!(
        err.contains(
            "stopped when its error budget (5 errors) was spent: 6 of 6 operations failed (20 planned)"
        ),
        "{err}"
    );
}

#[test]
fn a_dropped_connection_fails_the_call_and_the_next_call_reconnects() {
    let s = LegacyMongo::start(4);
    let mut c = conn(s.port, None);
    // The server goes away: the call fails at once with the reason.
    let port = s.port;
    drop(s);
    let e = block_on(c.find_id("w", "k")).unwrap_err().to_string();
    assert!(
        e.contains("closed the connection") || e.contains("reset") || e.contains("refused"),
        "{e}"
    );
    // The next call tries a new connection (nothing listens now).
    let _ = port;
    let e2 = block_on(c.find_id("w", "k")).unwrap_err().to_string();
    assert!(e2.contains("refused"), "{e2}");
}

#[test]
fn engine_facts_come_from_wired_tiger_and_tokumx_sections() {
    let w0 = LegacyMongo::start(0);
    let w4 = LegacyMongo::start(4);
    for (s, cache) in [(&w0, 1u64 << 30), (&w4, 1 << 29)] {
        let mut c = conn(s.port, None);
        block_on(c.insert_fields("w", "k", [("f", "v")].into_iter())).unwrap();
        let ep = Endpoint::loopback(s.port);
        assert_eq!(
            block_on(benchcage::clients::mongodb::cache_size(&ep)).unwrap(),
            Some(cache)
        );
        let data = block_on(benchcage::clients::mongodb::data_size(&ep)).unwrap();
        // One small document plus the 4096 bytes of index the server reports.
        assert!(
            matches!(data, Some(n) if n > 4096 && n < 4096 + 100),
            "{data:?}"
        );
    }
}

#[test]
fn facts_and_readiness_hold_for_2x_era_mmapv1_and_3x_servers_of_either_engine() {
    // MongoDB 2.2 / 2.4 speak wire 0, 2.6 wire 2, 3.0 and 3.2 wire 3 and 4.
    for (wire, version, engine, cache) in [
        (0, "2.2.7", "mmapv1", None),
        (0, "2.4.14", "mmapv1", None),
        (2, "2.6.12", "mmapv1", None),
        (4, "3.0.15", "mmapv1", None),
        (4, "3.0.15", "wiredTiger", Some(1u64 << 29)),
    ] {
        let s = LegacyMongo::start_with(wire, &["--version", version, "--storage-engine", engine]);
        let mut c = conn(s.port, None);
        block_on(c.insert_fields("w", "k", [("f", "v")].into_iter())).unwrap();
        // Readiness: the probe's ping is buildInfo's version.
        let ready = block_on(benchcage::clients::ping(
            &benchcage::model::Probe::Mongodb,
            s.port,
        ));
        assert_eq!(ready.unwrap(), version, "{version}");
        let ep = Endpoint::loopback(s.port);
        // MMAPv1 reports no engine cache: the page cache is its cache.
        assert_eq!(
            block_on(benchcage::clients::mongodb::cache_size(&ep)).unwrap(),
            cache,
            "{version} {engine}"
        );
        let data = block_on(benchcage::clients::mongodb::data_size(&ep)).unwrap();
        assert!(matches!(data, Some(n) if n > 4096), "{version}: {data:?}");
        // What such a server answers: no storageEngine before 3.0, MMAPv1's dur.
        let st = block_on(c.run_json("admin", &json!({"serverStatus": 1}))).unwrap();
        assert_eq!(
            st["storageEngine"].is_null(),
            version.starts_with('2'),
            "{st}"
        );
        assert_eq!(st["dur"]["commits"].is_number(), engine == "mmapv1", "{st}");
    }
}

/// `benchcage drive` of a YCSB load and workload A on `url`; its exit
/// code, stdout, and stderr followed by its JSON result (which holds the
/// failed operations' messages).
fn drive_a(url: &str) -> (Option<i32>, String, String) {
    let json = tempfile::NamedTempFile::new().unwrap();
    let out = bc()
        .args(["drive", "--store", url, "--threads", "2", "--workload", "a"])
        .args([
            "--records",
            "200",
            "--load",
            "--reset",
            "--operations",
            "100",
        ])
        .arg("--json")
        .arg(json.path())
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let result = std::fs::read_to_string(json.path()).unwrap_or_default();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        format!("{}{result}", String::from_utf8_lossy(&out.stderr)),
    )
}

#[test]
fn a_legacy_server_gets_the_write_concern_and_the_read_preference_of_the_url() {
    let asked = "w=1&journal=true&readPreference=secondaryPreferred";
    for wire in [0, 4] {
        let s = LegacyMongo::start(wire);
        let (code, out, err) = drive_a(&format!("{}/?{asked}", s.url()));
        assert_eq!(code, Some(0), "wire {wire}: {out}\n{err}");
        let mut c = conn(s.port, None);
        let st = block_on(c.run_json("admin", &json!({"legacyStats": 1}))).unwrap();
        let wc = json!([{"w": 1, "j": true}]);
        if wire == 0 {
            // Every legacy write was acknowledged by getLastError with w and j.
            assert_eq!(st["gleArgs"], wc, "{st}");
            assert_eq!(st["writeConcerns"], json!([]), "{st}");
        } else {
            // Every write command carried them, and no getLastError was sent.
            assert_eq!(st["writeConcerns"], wc, "{st}");
            assert_eq!(st["gleArgs"], json!([]), "{st}");
        }
        // Every read set SecondaryOk.
        assert!(
            st["readFlags"]["secondaryOk"].as_u64().unwrap_or(0) >= 50,
            "{st}"
        );
        assert!(st["readFlags"].get("primary").is_none(), "{st}");
    }
    // Without options: getLastError with the server's default, reads from
    // the primary only.
    let s = LegacyMongo::start(0);
    let (code, out, err) = drive_a(&s.url());
    assert_eq!(code, Some(0), "{out}\n{err}");
    let mut c = conn(s.port, None);
    let st = block_on(c.run_json("admin", &json!({"legacyStats": 1}))).unwrap();
    assert_eq!(st["gleArgs"], json!([{}]), "{st}");
    assert!(st["readFlags"].get("secondaryOk").is_none(), "{st}");
    // w: 0 is not acknowledged at all: no getLastError.
    let s = LegacyMongo::start(0);
    let (code, out, err) = drive_a(&format!("{}/?w=0", s.url()));
    assert_eq!(code, Some(0), "{out}\n{err}");
    let mut c = conn(s.port, None);
    let st = block_on(c.run_json("admin", &json!({"legacyStats": 1}))).unwrap();
    assert_eq!(st["gleArgs"], json!([]), "{st}");
    assert!(st["stats"]["op:2002"].as_u64().unwrap_or(0) >= 200, "{st}");
}

#[test]
fn secantus_takes_the_write_concern_and_read_preference_over_op_msg_and_op_query() {
    let s = Server::start(Kind::Secantus);
    for cap in ["", "&maxWireVersion=4"] {
        let url = format!(
            "{}/ycsb?w=majority&journal=true&readPreference=primaryPreferred{cap}",
            s.url()
        );
        let (code, out, err) = drive_a(&url);
        assert_eq!(code, Some(0), "{url}: {out}\n{err}");
        assert!(out.contains("[UPDATE], Return=OK"), "{out}");
        // One member cannot acknowledge w: 2, and SecantusDB says so on
        // every write: the write concern reached it.
        let url = format!("{}/ycsb?w=2{cap}", s.url());
        let (code, out, err) = drive_a(&url);
        assert_eq!(code, Some(1), "{url}: {out}\n{err}");
        // With no error budget the load stops at its first failed insert;
        // the other of the two connections had at most one on its way.
        assert!(
            out.contains("[INSERT-FAILED], Operations, 1\n")
                || out.contains("[INSERT-FAILED], Operations, 2\n"),
            "{out}"
        );
        assert!(err.contains("(200 planned)"), "{err}");
        assert!(
            err.contains("write concern failed: Not enough data-bearing nodes"),
            "{err}"
        );
    }
}

#[test]
fn sessions_end_together_with_every_id_in_batches_of_the_servers_limit() {
    let s = Server::start(Kind::Secantus);
    let tap = Tap::start(s.port);
    let sessions = Sessions::default();
    let ids: Vec<serde_json::Value> = (0..10_001).map(|_| sessions.start()).collect();
    let mut c = conn(tap.port, None);
    // The server learns a session from the first command that carries it.
    let find = json!({"find": "none", "filter": {}, "lsid": ids[0]});
    block_on(c.run_json("benchcage", &find)).unwrap();
    assert_eq!(block_on(sessions.end_all(&mut c)).unwrap(), 10_001);
    assert!(sessions.is_empty());
    assert_eq!(block_on(sessions.end_all(&mut c)).unwrap(), 0);
    let ended: Vec<Vec<String>> = tap
        .commands()
        .iter()
        .filter_map(|c| c.get("endSessions").and_then(|e| e.as_array()))
        .map(|a| a.iter().map(|id| id.to_string()).collect())
        .collect();
    let sizes: Vec<usize> = ended.iter().map(Vec::len).collect();
    assert_eq!(sizes, [10_000, 1]);
    let want: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    assert_eq!(ended.concat(), want);
}
