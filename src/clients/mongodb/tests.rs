//! The write concern and the read preference on the wire, byte for byte,
//! for each protocol generation. The expected messages are written out by
//! hand from MongoDB's wire protocol documentation ("Legacy Opcodes",
//! "OP_MSG") and bsonspec.org, not with this module's encoder; a fake
//! server records what the client really sent.

use super::{MongoConn, MongoOptions};
use crate::clients::Endpoint;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

const OP_REPLY: i32 = 1;
const OP_INSERT: i32 = 2002;
const OP_QUERY: i32 = 2004;
const OP_MSG: i32 = 2013;

/// A BSON document around its encoded elements.
fn doc(elements: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = elements.concat();
    let mut d = ((body.len() + 5) as i32).to_le_bytes().to_vec();
    d.extend(body);
    d.push(0);
    d
}

fn element(kind: u8, name: &str, value: &[u8]) -> Vec<u8> {
    let mut e = vec![kind];
    e.extend(name.as_bytes());
    e.push(0);
    e.extend(value);
    e
}

/// 0x02 string: int32 length (with its NUL), bytes, NUL.
fn string(name: &str, v: &str) -> Vec<u8> {
    let mut value = ((v.len() + 1) as i32).to_le_bytes().to_vec();
    value.extend(v.as_bytes());
    value.push(0);
    element(0x02, name, &value)
}

/// 0x10 int32.
fn int32(name: &str, v: i32) -> Vec<u8> {
    element(0x10, name, &v.to_le_bytes())
}

/// 0x12 int64.
fn int64(name: &str, v: i64) -> Vec<u8> {
    element(0x12, name, &v.to_le_bytes())
}

/// 0x08 boolean.
fn boolean(name: &str, v: bool) -> Vec<u8> {
    element(0x08, name, &[v as u8])
}

/// 0x03 embedded document.
fn embedded(name: &str, elements: &[Vec<u8>]) -> Vec<u8> {
    element(0x03, name, &doc(elements))
}

/// 0x04 array: a document keyed "0", "1", ...
fn array(name: &str, docs: &[Vec<u8>]) -> Vec<u8> {
    let items: Vec<Vec<u8>> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| element(0x03, &i.to_string(), d))
        .collect();
    element(0x04, name, &doc(&items))
}

/// A whole message: header (messageLength, requestID, responseTo 0,
/// opCode), then the body.
fn message(id: i32, op: i32, body: &[u8]) -> Vec<u8> {
    let mut m = ((16 + body.len()) as i32).to_le_bytes().to_vec();
    m.extend(id.to_le_bytes());
    m.extend(0i32.to_le_bytes());
    m.extend(op.to_le_bytes());
    m.extend(body);
    m
}

/// OP_QUERY: int32 flags, cstring fullCollectionName, int32 numberToSkip,
/// int32 numberToReturn, document query.
fn op_query(id: i32, flags: i32, ns: &str, ret: i32, query: &[u8]) -> Vec<u8> {
    let mut b = flags.to_le_bytes().to_vec();
    b.extend(ns.as_bytes());
    b.push(0);
    b.extend(0i32.to_le_bytes());
    b.extend(ret.to_le_bytes());
    b.extend(query);
    message(id, OP_QUERY, &b)
}

/// OP_MSG: uint32 flagBits 0, one section of kind 0 (the body document).
fn op_msg(id: i32, body: &[u8]) -> Vec<u8> {
    let mut b = 0u32.to_le_bytes().to_vec();
    b.push(0);
    b.extend(body);
    message(id, OP_MSG, &b)
}

/// A server that announces `wire`, records every message it gets and
/// answers each one that expects a reply with one document that fits
/// every request these tests make (isMaster, write, getLastError, find).
fn fake_server(wire: i32) -> (u16, mpsc::Receiver<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let reply = bson::doc! {
            "ismaster": true, "maxWireVersion": wire, "ok": 1.0, "n": 1,
            "err": bson::Bson::Null,
            "cursor": {"firstBatch": [], "nextBatch": [], "id": 0i64},
        };
        let mut reply_doc = Vec::new();
        reply.to_writer(&mut reply_doc).unwrap();
        let mut n = 0i32;
        loop {
            let mut head = [0u8; 16];
            if s.read_exact(&mut head).is_err() {
                return;
            }
            let len = i32::from_le_bytes(head[0..4].try_into().unwrap()) as usize;
            let id = i32::from_le_bytes(head[4..8].try_into().unwrap());
            let op = i32::from_le_bytes(head[12..16].try_into().unwrap());
            let mut msg = head.to_vec();
            msg.resize(len, 0);
            if s.read_exact(&mut msg[16..]).is_err() {
                return;
            }
            let _ = tx.send(msg);
            n += 1;
            let body = match op {
                OP_MSG => {
                    let mut b = 0u32.to_le_bytes().to_vec();
                    b.push(0);
                    b.extend(&reply_doc);
                    (OP_MSG, b)
                }
                OP_QUERY => {
                    let mut b = 0i32.to_le_bytes().to_vec(); // responseFlags
                    b.extend(0i64.to_le_bytes()); // cursorID
                    b.extend(0i32.to_le_bytes()); // startingFrom
                    b.extend(1i32.to_le_bytes()); // numberReturned
                    b.extend(&reply_doc);
                    (OP_REPLY, b)
                }
                // The legacy writes get no reply.
                _ => continue,
            };
            let mut out = ((16 + body.1.len()) as i32).to_le_bytes().to_vec();
            out.extend((1000 + n).to_le_bytes());
            out.extend(id.to_le_bytes());
            out.extend(body.0.to_le_bytes());
            out.extend(body.1);
            if s.write_all(&out).is_err() {
                return;
            }
        }
    });
    (port, rx)
}

/// Connects with the URL options `query` to a fake server at `wire`; the
/// handshake (request 1) is consumed.
async fn connect(wire: i32, query: &str) -> (MongoConn, mpsc::Receiver<Vec<u8>>) {
    let (port, rx) = fake_server(wire);
    let mut ep = Endpoint::loopback(port);
    ep.database = Some("t".into());
    let opts = MongoOptions::from_query(query).unwrap();
    let c = MongoConn::connect_with(&ep, &opts).await.unwrap();
    let hello = rx.recv().unwrap();
    let is_master = doc(&[int32("isMaster", 1)]);
    assert_eq!(hello, op_query(1, 0, "admin.$cmd", -1, &is_master));
    (c, rx)
}

fn next(rx: &mpsc::Receiver<Vec<u8>>) -> Vec<u8> {
    rx.recv_timeout(std::time::Duration::from_secs(5))
        .expect("the client sent a message")
}

/// `{_id: "k1", f: "v"}`.
fn record() -> Vec<u8> {
    doc(&[string("_id", "k1"), string("f", "v")])
}

#[tokio::test]
async fn op_msg_writes_carry_the_write_concern_document() {
    let (mut c, rx) = connect(17, "w=majority&journal=true").await;
    c.insert_fields("c", "k1", [("f", "v")].into_iter())
        .await
        .unwrap();
    let want = doc(&[
        string("insert", "c"),
        array("documents", &[record()]),
        boolean("ordered", true),
        embedded(
            "writeConcern",
            &[string("w", "majority"), boolean("j", true)],
        ),
        string("$db", "t"),
    ]);
    assert_eq!(next(&rx), op_msg(2, &want));
    c.set_field("c", "k1", "f", "z").await.unwrap();
    let update = doc(&[
        embedded("q", &[string("_id", "k1")]),
        embedded("u", &[embedded("$set", &[string("f", "z")])]),
    ]);
    let want = doc(&[
        string("update", "c"),
        array("updates", &[update]),
        embedded(
            "writeConcern",
            &[string("w", "majority"), boolean("j", true)],
        ),
        string("$db", "t"),
    ]);
    assert_eq!(next(&rx), op_msg(3, &want));
}

#[tokio::test]
async fn without_a_write_concern_op_msg_writes_leave_the_servers_default() {
    let (mut c, rx) = connect(17, "").await;
    c.delete_id("c", "k1").await.unwrap();
    let delete = doc(&[embedded("q", &[string("_id", "k1")]), int32("limit", 1)]);
    let want = doc(&[
        string("delete", "c"),
        array("deletes", &[delete]),
        string("$db", "t"),
    ]);
    assert_eq!(next(&rx), op_msg(2, &want));
}

#[tokio::test]
async fn write_commands_over_op_query_carry_the_write_concern() {
    let (mut c, rx) = connect(4, "w=1").await;
    c.insert_fields("c", "k1", [("f", "v")].into_iter())
        .await
        .unwrap();
    let want = doc(&[
        string("insert", "c"),
        array("documents", &[record()]),
        boolean("ordered", true),
        embedded("writeConcern", &[int32("w", 1)]),
    ]);
    assert_eq!(next(&rx), op_query(2, 0, "t.$cmd", -1, &want));
}

#[tokio::test]
async fn a_legacy_write_is_followed_by_get_last_error_with_w_and_j() {
    let (mut c, rx) = connect(0, "w=1&journal=true").await;
    c.insert_fields("c", "k1", [("f", "v")].into_iter())
        .await
        .unwrap();
    // OP_INSERT: int32 flags, cstring fullCollectionName, documents.
    let mut insert = 0i32.to_le_bytes().to_vec();
    insert.extend(b"t.c\0");
    insert.extend(record());
    assert_eq!(next(&rx), message(2, OP_INSERT, &insert));
    let gle = doc(&[int32("getLastError", 1), int32("w", 1), boolean("j", true)]);
    assert_eq!(next(&rx), op_query(3, 0, "t.$cmd", -1, &gle));

    let (mut c, rx) = connect(0, "w=majority").await;
    c.delete_id("c", "k1").await.unwrap();
    let _delete = next(&rx);
    let gle = doc(&[int32("getLastError", 1), string("w", "majority")]);
    assert_eq!(next(&rx), op_query(3, 0, "t.$cmd", -1, &gle));

    // Without a write concern getLastError still acknowledges the write,
    // with the server's default.
    let (mut c, rx) = connect(0, "").await;
    c.set_field("c", "k1", "f", "z").await.unwrap();
    let _update = next(&rx);
    let gle = doc(&[int32("getLastError", 1)]);
    assert_eq!(next(&rx), op_query(3, 0, "t.$cmd", -1, &gle));
}

#[tokio::test]
async fn an_unacknowledged_legacy_write_sends_no_get_last_error() {
    let (mut c, rx) = connect(0, "w=0").await;
    c.insert_fields("c", "k1", [("f", "v")].into_iter())
        .await
        .unwrap();
    assert_eq!(next(&rx)[12..16], OP_INSERT.to_le_bytes());
    c.find_id("c", "k1").await.unwrap();
    // The next message is the read (request 3) on the collection itself.
    let read = doc(&[string("_id", "k1")]);
    assert_eq!(next(&rx), op_query(3, 0, "t.c", -1, &read));
}

#[tokio::test]
async fn op_msg_reads_name_a_read_preference_other_than_primary() {
    let find = |extra: Vec<Vec<u8>>| {
        let mut e = vec![
            string("find", "c"),
            embedded("filter", &[string("_id", "k1")]),
            int64("limit", 1),
            boolean("singleBatch", true),
            string("$db", "t"),
        ];
        e.extend(extra);
        doc(&e)
    };
    let (mut c, rx) = connect(17, "readPreference=secondaryPreferred").await;
    c.find_id("c", "k1").await.unwrap();
    let pref = embedded("$readPreference", &[string("mode", "secondaryPreferred")]);
    assert_eq!(next(&rx), op_msg(2, &find(vec![pref])));
    // Writes never carry it.
    c.delete_id("c", "k1").await.unwrap();
    assert!(!contains(&next(&rx), b"$readPreference"));

    let (mut c, rx) = connect(17, "readPreference=primary").await;
    c.find_id("c", "k1").await.unwrap();
    assert_eq!(next(&rx), op_msg(2, &find(vec![])));
}

#[tokio::test]
async fn reads_before_op_msg_set_the_secondary_ok_bit() {
    // Bit 2 of OP_QUERY's flags is SecondaryOk.
    const SECONDARY_OK: i32 = 1 << 2;
    let filter = doc(&[string("_id", "k1")]);
    // Wire 4: the find command on <db>.$cmd.
    let (mut c, rx) = connect(4, "readPreference=nearest").await;
    c.find_id("c", "k1").await.unwrap();
    let cmd = doc(&[
        string("find", "c"),
        embedded("filter", &[string("_id", "k1")]),
        int64("limit", 1),
        boolean("singleBatch", true),
    ]);
    assert_eq!(next(&rx), op_query(2, SECONDARY_OK, "t.$cmd", -1, &cmd));
    // A write command does not set it.
    c.delete_id("c", "k1").await.unwrap();
    assert_eq!(next(&rx)[16..20], 0i32.to_le_bytes());

    // Wire 0: OP_QUERY on the collection.
    let (mut c, rx) = connect(0, "readPreference=secondary").await;
    c.find_id("c", "k1").await.unwrap();
    assert_eq!(next(&rx), op_query(2, SECONDARY_OK, "t.c", -1, &filter));
    let (mut c, rx) = connect(0, "").await;
    c.find_id("c", "k1").await.unwrap();
    assert_eq!(next(&rx), op_query(2, 0, "t.c", -1, &filter));
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
