//! Hostile servers: the clients must not trust what a server says (issue
//! 34). Each server here is a small TCP listener on 127.0.0.1 that speaks
//! just enough of its protocol to lie: a MongoDB reply of 2 GiB, a cursor
//! that never ends, a Redis bulk string of 10 GB or arrays nested two
//! million deep, a server that accepts and never answers. `drive` runs
//! under an address-space limit well below what the lie asks for, so a
//! client that believed it would abort. Needs neither root nor engines.

mod support;

use benchcage::clients::Endpoint;
use benchcage::clients::mongodb::{MongoConn, MongoOptions};
use bson::{Bson, Document, doc};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::block_on;
use support::cli::{BIN, Out};

/// Address-space limit (KiB) of `drive` here: 1 GiB, which `drive` fits
/// in many times over and a 2 GiB reservation does not.
const ULIMIT_KIB: u64 = 1024 * 1024;
/// The longest any `drive` here may take before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(20);

/// A listener on a free loopback port; each connection is served by
/// `serve` on a thread of its own until the client goes.
struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    fn start(serve: impl Fn(TcpStream) + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let serve = Arc::new(serve);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let serve = serve.clone();
                std::thread::spawn(move || serve(conn));
            }
        });
        Hostile { port, stop }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread, which then sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads until the client closes: a server that never answers.
fn hold(mut c: TcpStream) {
    let mut buf = [0u8; 4096];
    while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
}

/// `benchcage drive ARGS` under the address-space limit and `env`; killed
/// (and the test failed) after [`DEADLINE`]. Returns its output and how
/// long it took.
fn drive(args: &[&str], env: &[(&str, &str)]) -> (Out, Duration) {
    let start = Instant::now();
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -v {ULIMIT_KIB}; exec \"$@\""))
        .arg("benchcage")
        .arg(BIN)
        .arg("drive")
        .args(args)
        .envs(env.iter().copied())
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "drive {args:?} still ran after {DEADLINE:?}: {}\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    (Out::of(&o), start.elapsed())
}

// ---- MongoDB ----

const OP_REPLY: i32 = 1;
const OP_QUERY: i32 = 2004;
const OP_MSG: i32 = 2013;

/// The next message of a client: its request id, opcode and first
/// document; `None` once the client closed.
fn read_message(c: &mut TcpStream) -> Option<(i32, i32, Document)> {
    let mut header = [0u8; 16];
    c.read_exact(&mut header).ok()?;
    let word = |i: usize| i32::from_le_bytes(header[i * 4..i * 4 + 4].try_into().unwrap());
    let mut body = vec![0u8; word(0) as usize - 16];
    c.read_exact(&mut body).ok()?;
    let at = match word(3) {
        // flags, fullCollectionName, numberToSkip, numberToReturn
        OP_QUERY => 4 + body[4..].iter().position(|b| *b == 0)? + 1 + 8,
        // flagBits, section kind 0
        OP_MSG => 5,
        _ => return None,
    };
    let doc = Document::from_reader(&body[at..]).ok()?;
    Some((word(1), word(3), doc))
}

/// A reply to request `to`: OP_REPLY to an OP_QUERY, OP_MSG to an OP_MSG.
fn reply(c: &mut TcpStream, to: i32, op: i32, d: &Document) {
    let mut doc = Vec::new();
    d.to_writer(&mut doc).unwrap();
    let mut body = Vec::new();
    let code = if op == OP_QUERY {
        body.extend(0i32.to_le_bytes()); // responseFlags
        body.extend(0i64.to_le_bytes()); // cursorID
        body.extend(0i32.to_le_bytes()); // startingFrom
        body.extend(1i32.to_le_bytes()); // numberReturned
        OP_REPLY
    } else {
        body.extend(0i32.to_le_bytes()); // flagBits
        body.push(0); // section kind 0
        OP_MSG
    };
    body.extend(doc);
    let mut msg = Vec::new();
    for v in [16 + body.len() as i32, 1, to, code] {
        msg.extend(v.to_le_bytes());
    }
    msg.extend(body);
    let _ = c.write_all(&msg);
}

/// A MongoDB server (wire 6, OP_MSG) whose `find` and every `getMore`
/// return one document and the cursor id `id(n)` for the `n`th batch
/// (0 the first); counts the `getMore`s it got.
fn mongo_cursor(id: fn(u64) -> Bson, get_mores: Arc<AtomicU64>) -> Hostile {
    Hostile::start(move |mut c| {
        let mut batch = 0u64;
        while let Some((rid, op, cmd)) = read_message(&mut c) {
            let answer = if cmd.contains_key("isMaster") || cmd.contains_key("ismaster") {
                doc! {"ismaster": true, "maxWireVersion": 6, "minWireVersion": 0, "ok": 1}
            } else if cmd.contains_key("find") || cmd.contains_key("getMore") {
                let key = if cmd.contains_key("find") {
                    batch = 0;
                    "firstBatch"
                } else {
                    get_mores.fetch_add(1, Ordering::Relaxed);
                    "nextBatch"
                };
                let cursor = doc! {"id": id(batch), "ns": "benchcage.usertable", key: [{"_id": format!("k{batch}")}]};
                batch += 1;
                doc! {"cursor": cursor, "ok": 1}
            } else {
                doc! {"ok": 1}
            };
            reply(&mut c, rid, op, &answer);
        }
    })
}

fn mongo(port: u16, opts: &MongoOptions) -> MongoConn {
    block_on(MongoConn::connect_with(&Endpoint::loopback(port), opts)).expect("connects")
}

/// Runs `fut` on the tests' runtime, failed after 10 s (a loop that never
/// ends fails the test instead of hanging it).
fn within_10s<T>(fut: impl std::future::Future<Output = T>) -> T {
    block_on(async { tokio::time::timeout(Duration::from_secs(10), fut).await })
        .expect("finished within 10 s")
}

#[test]
fn a_mongodb_reply_longer_than_max_message_size_is_refused_before_anything_is_allocated() {
    // The header says 2 GiB; a few bytes follow, then nothing.
    let server = Hostile::start(|mut c| {
        if let Some((rid, _, _)) = read_message(&mut c) {
            let mut msg = Vec::new();
            for v in [0x7fff_ffff, 1, rid, OP_REPLY] {
                msg.extend(v.to_le_bytes());
            }
            msg.extend([0u8; 64]);
            let _ = c.write_all(&msg);
        }
        hold(c);
    });
    let url = format!("mongodb://127.0.0.1:{}", server.port);
    let args = [
        "--store",
        &url,
        "--workload",
        "c",
        "--records",
        "10",
        "--operations",
        "10",
    ];
    let (out, took) = drive(&args, &[]);
    assert_eq!(
        out.code, 1,
        "a clear error, not an abort: {}\n{}",
        out.stdout, out.stderr
    );
    assert!(
        out.stderr.contains("a reply of 2147483647 bytes")
            && out.stderr.contains("maxMessageSizeBytes (48000000)")
            && out.stderr.contains(&format!("127.0.0.1:{}", server.port)),
        "{}",
        out.stderr
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_server_that_announces_a_huge_max_message_size_is_believed_only_up_to_the_ceiling() {
    // isMaster says 2 GiB may come; the next reply's header asks for it.
    let server = Hostile::start(|mut c| {
        if let Some((rid, op, _)) = read_message(&mut c) {
            let hello = doc! {"ismaster": true, "maxWireVersion": 6,
            "maxMessageSizeBytes": i32::MAX, "ok": 1};
            reply(&mut c, rid, op, &hello);
        }
        if let Some((rid, _, _)) = read_message(&mut c) {
            let mut msg = Vec::new();
            for v in [0x7fff_ffff, 1, rid, OP_MSG] {
                msg.extend(v.to_le_bytes());
            }
            let _ = c.write_all(&msg);
        }
        hold(c);
    });
    let mut c = mongo(server.port, &MongoOptions::default());
    let e = within_10s(c.has_documents("usertable"))
        .expect_err("a 2 GiB reply is refused")
        .to_string();
    assert!(
        e.contains(
            "a reply of 2147483647 bytes, over the server's maxMessageSizeBytes (134217728)"
        ),
        "{e}"
    );
}

#[test]
fn the_existence_check_reads_one_batch_of_a_cursor_that_never_ends() {
    let get_mores = Arc::new(AtomicU64::new(0));
    let server = mongo_cursor(|_| Bson::Int64(42), get_mores.clone());
    let mut c = mongo(server.port, &MongoOptions::default());
    let found = within_10s(c.has_documents("usertable")).expect("an answer");
    assert!(found);
    assert_eq!(
        get_mores.load(Ordering::Relaxed),
        0,
        "limit 1 and singleBatch: no getMore"
    );
}

#[test]
fn a_live_int32_cursor_id_is_followed_to_its_end() {
    let get_mores = Arc::new(AtomicU64::new(0));
    // Three batches, the cursor id an Int32 until the last.
    let server = mongo_cursor(
        |n| Bson::Int32(if n < 2 { 7 } else { 0 }),
        get_mores.clone(),
    );
    let mut c = mongo(server.port, &MongoOptions::default());
    let n = within_10s(c.count_find("usertable", &serde_json::json!({}))).expect("an answer");
    assert_eq!(n, 3, "every batch of the cursor read");
    assert_eq!(get_mores.load(Ordering::Relaxed), 2);
}

#[test]
fn a_cursor_that_never_ends_is_an_error_naming_the_server_within_its_time_bound() {
    let get_mores = Arc::new(AtomicU64::new(0));
    let server = mongo_cursor(|_| Bson::Int64(42), get_mores.clone());
    let opts = MongoOptions {
        cursor_time: Duration::from_secs(1),
        ..MongoOptions::default()
    };
    let mut c = mongo(server.port, &opts);
    let start = Instant::now();
    let e = within_10s(c.count_find("usertable", &serde_json::json!({})))
        .expect_err("a cursor that never ends fails")
        .to_string();
    assert!(
        e.contains(&format!("mongodb at 127.0.0.1:{}", server.port))
            && e.contains("was still open after"),
        "{e}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(get_mores.load(Ordering::Relaxed) > 0);
}

// ---- Redis ----

/// A Redis server that answers the first command with `first` and then
/// writes `then()` until the client goes.
fn redis_replying(first: Vec<u8>, then: fn() -> Option<Vec<u8>>) -> Hostile {
    Hostile::start(move |mut c| {
        let mut buf = [0u8; 4096];
        if !matches!(c.read(&mut buf), Ok(n) if n > 0) {
            return;
        }
        if c.write_all(&first).is_err() {
            return;
        }
        loop {
            match then() {
                Some(more) => {
                    if c.write_all(&more).is_err() {
                        return;
                    }
                }
                None => return hold(c),
            }
        }
    })
}

#[test]
fn a_redis_bulk_string_over_proto_max_bulk_len_is_refused_before_its_bytes_are_read() {
    // `$9999999999` and then bytes for as long as the client reads.
    let server = redis_replying(b"$9999999999\r\n".to_vec(), || Some(vec![b'x'; 1 << 20]));
    let url = format!("redis://127.0.0.1:{}", server.port);
    let (out, took) = drive(
        &[
            "--store",
            &url,
            "--workload",
            "c",
            "--records",
            "10",
            "--operations",
            "10",
        ],
        &[],
    );
    assert_eq!(
        out.code, 1,
        "a clear error, not an abort: {}\n{}",
        out.stdout, out.stderr
    );
    assert!(
        out.stderr.contains("a bulk string of 9999999999 bytes")
            && out.stderr.contains("proto-max-bulk-len")
            && out.stderr.contains(&format!("127.0.0.1:{}", server.port)),
        "{}",
        out.stderr
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn redis_arrays_nested_two_million_deep_are_a_decode_error_not_a_stack_overflow() {
    let server = redis_replying(b"*1\r\n".repeat(2_000_000), || None);
    let url = format!("redis://127.0.0.1:{}", server.port);
    let (out, _) = drive(
        &[
            "--store",
            &url,
            "--workload",
            "c",
            "--records",
            "10",
            "--operations",
            "10",
        ],
        &[],
    );
    assert_eq!(
        out.code, 1,
        "a clear error, not an abort: {}\n{}",
        out.stdout, out.stderr
    );
    assert!(
        out.stderr.contains("nested more than 64 arrays deep"),
        "{}",
        out.stderr
    );
}

// ---- No reply at all ----

/// `drive` against a server that accepts and never answers, with the
/// setup bound shortened to 1 s: an error naming the step and the server.
fn silent_server_is_an_error_within_the_setup_bound(scheme: &str, extra: &[&str], step: &str) {
    let server = Hostile::start(hold);
    let url = format!("{scheme}127.0.0.1:{}", server.port);
    let mut args = vec![
        "--store",
        url.as_str(),
        "--workload",
        "c",
        "--records",
        "10",
        "--operations",
        "10",
    ];
    args.extend(extra);
    let (out, took) = drive(&args, &[("BENCHCAGE_SETUP_TIMEOUT", "1")]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let want = format!("{step}: no reply within 1 s from 127.0.0.1:{}", server.port);
    assert!(out.stderr.contains(&want), "want `{want}`: {}", out.stderr);
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[test]
fn a_redis_that_never_answers_fails_the_connect_within_the_setup_bound() {
    silent_server_is_an_error_within_the_setup_bound("redis://", &[], "redis: connect");
}

#[test]
fn a_postgres_that_never_answers_fails_the_connect_within_the_setup_bound() {
    silent_server_is_an_error_within_the_setup_bound(
        "postgres://postgres@",
        &[],
        "postgres: connect",
    );
}

#[test]
fn a_mysql_that_never_answers_fails_the_connect_within_the_setup_bound() {
    silent_server_is_an_error_within_the_setup_bound("mysql://root@", &[], "mysql: connect");
}

#[test]
fn a_redis_that_stops_answering_after_auth_fails_the_existence_check_within_the_setup_bound() {
    // AUTH is answered, then nothing: a paused server.
    let server = redis_replying(b"+OK\r\n".to_vec(), || None);
    let url = format!("redis://:secret@127.0.0.1:{}", server.port);
    let args = [
        "--store",
        &url,
        "--workload",
        "c",
        "--records",
        "10",
        "--operations",
        "10",
        "--load",
    ];
    let (out, took) = drive(&args, &[("BENCHCAGE_SETUP_TIMEOUT", "1")]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let want = format!(
        "redis: the existence check: no reply within 1 s from 127.0.0.1:{}",
        server.port
    );
    assert!(out.stderr.contains(&want), "want `{want}`: {}", out.stderr);
    assert!(took < Duration::from_secs(8), "{took:?}");
}

// ---- The server's errors reach the user ----

#[test]
fn failed_operations_show_the_servers_first_errors_in_the_printed_phase_and_its_json() {
    // INFO (cluster check) is answered; every HGETALL fails with a long
    // message of the server's own.
    let long = format!("WRONGTYPE foreign keyspace {}", "z".repeat(5000));
    let server = Hostile::start(move |mut c| {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match c.read(&mut buf) {
                Ok(n) if n > 0 => n,
                _ => return,
            };
            let req = String::from_utf8_lossy(&buf[..n]).to_uppercase();
            let mut out = Vec::new();
            // One reply per command in the read (a pipeline).
            for cmd in req.split("*").filter(|s| !s.is_empty()) {
                if cmd.contains("INFO") {
                    out.extend(b"$17\r\ncluster_enabled:0\r\n");
                } else {
                    out.extend(format!("-{long}\r\n").as_bytes());
                }
            }
            if c.write_all(&out).is_err() {
                return;
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("phases.json");
    let url = format!("redis://127.0.0.1:{}", server.port);
    let args = [
        "--store",
        &url,
        "--workload",
        "c",
        "--records",
        "10",
        "--operations",
        "20",
        "--error-budget",
        "100%",
        "--json",
        json.to_str().unwrap(),
    ];
    let (out, _) = drive(&args, &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("[READ-FAILED], Error, redis at 127.0.0.1:"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("WRONGTYPE foreign keyspace"));
    let phases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let samples = phases[0]["ops"]["READ"]["error_samples"]
        .as_array()
        .unwrap();
    assert_eq!(samples.len(), 1, "one distinct message: {samples:?}");
    let first = samples[0].as_str().unwrap();
    assert!(first.contains("WRONGTYPE foreign keyspace"), "{first}");
    assert!(
        first.chars().count() <= 301,
        "cut short: {} chars",
        first.chars().count()
    );
}
