//! The MongoDB wire client, over the `bson` crate (its only importer), for
//! every server from wire version 0 (MongoDB 2.4, TokuMX 1.5 and 2.0) to
//! the newest. The handshake reads `maxWireVersion` and picks, per server:
//!
//! - OP_MSG for wire 6 and later (MongoDB 3.6+);
//! - before that, commands as OP_QUERY on `<db>.$cmd`, with the write
//!   commands (`insert`, `update`, `delete`, `createIndexes`) from wire 2
//!   and `find` / `getMore` from wire 4;
//! - below wire 2, writes as OP_INSERT / OP_UPDATE / OP_DELETE, each
//!   followed by `getLastError` with the write concern, and indexes as
//!   documents in `system.indexes`; below wire 4, reads and scans as
//!   OP_QUERY on the collection, then OP_GET_MORE and OP_KILL_CURSORS.
//!
//! [`topology`] holds what makes and watches replica sets and sharded
//! clusters (`replSetInitiate`, `replSetGetStatus`, `addShard`, ...) and
//! runs the engine specs' statements, commands written as JSON.
//!
//! Each benchcage worker owns one [`MongoConn`], one socket. A server error
//! (`ok: 0`, a write error inside a batch) fails that call and leaves the
//! socket in step; a timeout or a cut reply fails the call and the next
//! call reconnects.

mod options;
mod scram;
mod session;
#[cfg(test)]
mod tests;
pub mod topology;
pub mod wire;

pub use options::{MongoOptions, ReadPreference, STORE_OPTIONS, W, WriteConcern};
pub use session::Protocol;

use super::{ClientError, Endpoint};
use bson::{Bson, Document, RawDocument};
use session::{Session, WIRE_FIND_COMMAND, WIRE_WRITE_COMMANDS, fail, number, server_error};
use wire::{Doc, Malformed};

/// `version` from `buildInfo`.
pub async fn server_version(ep: &Endpoint) -> Result<String, ClientError> {
    let mut c = MongoConn::connect(ep).await?;
    let doc = c.admin_command("buildInfo").await?;
    let doc = RawDocument::from_bytes(&doc).map_err(|e| c.fail(e))?;
    doc.get_str("version")
        .map(str::to_string)
        .map_err(|e| c.fail(format!("buildInfo without a version: {e}")))
}

/// The storage engine's cache in bytes, from `serverStatus`: WiredTiger's
/// `cache."maximum bytes configured"`, or TokuMX's `ft.cachetable.size.limit`.
pub async fn cache_size(ep: &Endpoint) -> Result<Option<u64>, ClientError> {
    let mut c = MongoConn::connect(ep).await?;
    let doc = c.admin_command("serverStatus").await?;
    let doc = RawDocument::from_bytes(&doc).map_err(|e| c.fail(e))?;
    Ok(
        path_number(doc, &["wiredTiger", "cache", "maximum bytes configured"])
            .or_else(|| path_number(doc, &["ft", "cachetable", "size", "limit"])),
    )
}

/// Bytes on disk of every user database, from `dbStats`: storage plus
/// indexes (TokuMX reports `indexStorageSize`, WiredTiger `indexSize`).
pub async fn data_size(ep: &Endpoint) -> Result<Option<u64>, ClientError> {
    let mut c = MongoConn::connect(ep).await?;
    let list = c.admin_command("listDatabases").await?;
    let list = RawDocument::from_bytes(&list).map_err(|e| c.fail(e))?;
    let mut names = Vec::new();
    if let Ok(dbs) = list.get_array("databases") {
        for d in dbs.into_iter().flatten() {
            if let Some(name) = d.as_document().and_then(|d| d.get_str("name").ok())
                && !["admin", "local", "config"].contains(&name)
            {
                names.push(name.to_string());
            }
        }
    }
    let mut total = None;
    for name in names {
        let s = c.command_on(&name, "dbStats").await?;
        let s = RawDocument::from_bytes(&s).map_err(|e| c.fail(e))?;
        let storage = path_number(s, &["storageSize"]).unwrap_or(0);
        let index = path_number(s, &["indexStorageSize"])
            .or_else(|| path_number(s, &["indexSize"]))
            .unwrap_or(0);
        *total.get_or_insert(0) += storage + index;
    }
    Ok(total)
}

/// A new logical session id, `{id: <UUID>}`, as extended JSON: the
/// `lsid` of a transaction's commands.
fn session_id() -> serde_json::Value {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    // A version 4 (random) UUID.
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let id = Bson::Binary(bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid,
        bytes: b.to_vec(),
    });
    serde_json::json!({ "id": id.into_canonical_extjson() })
}

/// Most session ids one `endSessions` takes (the server's limit).
const END_SESSIONS_MAX: usize = 10_000;

/// The logical sessions a group of connections started (one phase's
/// terminals), to end together: the server keeps a session until it has
/// been idle for `logicalSessionTimeoutMinutes` (30 by default) unless the
/// client sends `endSessions` with its id.
#[derive(Debug, Default)]
pub struct Sessions {
    ids: std::sync::Mutex<Vec<serde_json::Value>>,
}

impl Sessions {
    fn ids(&self) -> std::sync::MutexGuard<'_, Vec<serde_json::Value>> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new session id (the `lsid` of the commands that use it), kept to
    /// be ended by [`Sessions::end_all`].
    pub fn start(&self) -> serde_json::Value {
        let id = session_id();
        self.ids().push(id.clone());
        id
    }

    /// Whether no session is left to end.
    pub fn is_empty(&self) -> bool {
        self.ids().is_empty()
    }

    /// Sends `endSessions` on `conn` with every session started since the
    /// last call; returns how many it ended.
    pub async fn end_all(&self, conn: &mut MongoConn) -> Result<usize, ClientError> {
        let ids = std::mem::take(&mut *self.ids());
        for chunk in ids.chunks(END_SESSIONS_MAX) {
            conn.run_json("admin", &serde_json::json!({ "endSessions": chunk }))
                .await?;
        }
        Ok(ids.len())
    }
}

/// A BSON document's bytes as relaxed extended JSON, as
/// [`MongoConn::run_json`] returns replies: for readers of raw messages,
/// such as a test's wire tap.
pub fn document_json(bytes: &[u8]) -> Result<serde_json::Value, Malformed> {
    let doc = Document::from_reader(bytes).map_err(|e| e.to_string())?;
    Ok(Bson::Document(doc).into_relaxed_extjson())
}

fn path_number(doc: &RawDocument, path: &[&str]) -> Option<u64> {
    let (last, inner) = path.split_last()?;
    let mut d = doc;
    for k in inner {
        d = d.get_document(k).ok()?;
    }
    number(d.get(last).ok()??).map(|n| n as u64)
}

/// One connection to one server, in the protocol that server speaks.
pub struct MongoConn {
    s: Session,
    db: String,
    /// Filters and sorts are written here before the request that holds them.
    scratch: Vec<u8>,
}

/// What a query asks for.
struct Query<'a> {
    coll: &'a str,
    /// Encoded filter document.
    filter: &'a [u8],
    /// Encoded sort document.
    sort: Option<&'a [u8]>,
    /// At most this many documents (0: all).
    limit: i64,
}

type Visit<'v> = dyn FnMut(&RawDocument) -> Result<(), Malformed> + Send + 'v;

impl MongoConn {
    /// Connects to a loopback endpoint with default options.
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        Self::connect_with(ep, &MongoOptions::default()).await
    }

    /// Connects to a loopback endpoint; the database is the endpoint's
    /// (`benchcage` when it names none).
    pub async fn connect_with(ep: &Endpoint, opts: &MongoOptions) -> Result<Self, ClientError> {
        Ok(MongoConn {
            s: Session::connect(ep, opts).await?,
            db: ep.database.clone().unwrap_or_else(|| "benchcage".into()),
            scratch: Vec::with_capacity(256),
        })
    }

    /// The protocol chosen for this server.
    pub fn protocol(&self) -> Protocol {
        self.s.protocol()
    }

    /// False under `w: 0`: writes are not acknowledged, so the count of
    /// documents a write matched is unknown (reported as 0).
    pub(crate) fn writes_acknowledged(&self) -> bool {
        !self.s.opts.write_concern.unacknowledged()
    }

    /// The wire version in use.
    pub fn wire_version(&self) -> i32 {
        self.s.wire
    }

    fn fail(&self, e: impl std::fmt::Display) -> ClientError {
        fail(&self.s.ep, e)
    }

    fn ns(&self, coll: &str) -> String {
        format!("{}.{coll}", self.db)
    }

    /// Runs `{name: 1}` on admin; returns the reply's bytes.
    async fn admin_command(&mut self, name: &str) -> Result<Vec<u8>, ClientError> {
        self.command_on("admin", name).await
    }

    /// Runs `{name: 1}` on `db`; returns the reply's bytes.
    async fn command_on(&mut self, db: &str, name: &str) -> Result<Vec<u8>, ClientError> {
        self.s.ready().await?;
        let (m, mut d) = self.s.begin_command(db, false);
        d.i32(&mut self.s.out, name, 1);
        self.s.end_command(m, d, db, false);
        let r = self.s.round_trip(name).await?;
        Ok(self.s.command_reply(&r, name)?.as_bytes().to_vec())
    }

    /// Runs a command given as JSON on `db`; returns the reply as relaxed
    /// extended JSON (`ok: 0` is an error).
    pub async fn run_json(
        &mut self,
        db: &str,
        cmd: &serde_json::Value,
    ) -> Result<serde_json::Value, ClientError> {
        let cmd = json_doc(cmd).map_err(|e| self.fail(e))?;
        let doc = self.command(db, &cmd).await?;
        Ok(Bson::Document(doc).into_relaxed_extjson())
    }

    /// Runs `cmd` on `db`, named after its first key in errors; returns
    /// the checked reply.
    async fn command(&mut self, db: &str, cmd: &Document) -> Result<Document, ClientError> {
        let what = cmd.keys().next().cloned().unwrap_or_default();
        self.s.ready().await?;
        self.s.command_doc(db, cmd, &what).await
    }

    /// Drops collection `name` (missing is fine).
    pub async fn drop_collection(&mut self, name: &str) -> Result<(), ClientError> {
        self.s.ready().await?;
        let (m, mut d) = self.s.begin_command(&self.db, false);
        d.str(&mut self.s.out, "drop", name);
        self.s.end_command(m, d, &self.db, false);
        let r = self.s.round_trip("drop").await?;
        let doc = self.s.first_doc(&r, "drop")?;
        let ok = doc.get("ok").ok().flatten().and_then(number) == Some(1.0);
        let err = server_error(doc);
        if ok || err.contains("ns not found") {
            Ok(())
        } else {
            Err(self.fail(format!("drop failed: {err}")))
        }
    }

    /// Inserts `{_id: id, f1: v1, ...}`.
    pub async fn insert_fields<'a>(
        &mut self,
        coll: &str,
        id: &str,
        fields: impl Iterator<Item = (&'a str, &'a str)> + Send,
    ) -> Result<(), ClientError> {
        let mut fields = Some(fields);
        self.insert_docs(coll, true, std::iter::once(id), |buf, id| {
            fields_doc(buf, id, fields.take().into_iter().flatten())
        })
        .await
    }

    /// Inserts `{_id: id, f1: v1, ...}` for each record in one unordered
    /// insert (the server may apply them in any order and goes on past a
    /// failed one; the call then fails).
    pub async fn insert_fields_many<'a, P>(
        &mut self,
        coll: &str,
        records: impl Iterator<Item = (&'a str, P)> + Send,
    ) -> Result<(), ClientError>
    where
        P: Iterator<Item = (&'a str, &'a str)>,
    {
        self.insert_docs(coll, false, records, |buf, (id, fields)| {
            fields_doc(buf, id, fields)
        })
        .await
    }

    /// Inserts JSON documents in one ordered insert.
    pub(crate) async fn insert_json_many(
        &mut self,
        coll: &str,
        docs: &[serde_json::Value],
    ) -> Result<(), ClientError> {
        let docs: Vec<Document> = docs
            .iter()
            .map(json_doc)
            .collect::<Result<_, _>>()
            .map_err(|e| self.fail(e))?;
        self.insert_docs(coll, true, docs.iter(), |buf, d| {
            d.to_writer(buf).expect("writing BSON to memory")
        })
        .await
    }

    /// Writes the documents of `items` (each with `write`) as one insert.
    async fn insert_docs<I, F>(
        &mut self,
        coll: &str,
        ordered: bool,
        items: I,
        mut write: F,
    ) -> Result<(), ClientError>
    where
        I: Iterator + Send,
        F: FnMut(&mut Vec<u8>, I::Item) + Send,
    {
        self.s.ready().await?;
        if self.s.wire >= WIRE_WRITE_COMMANDS {
            let (m, mut d) = self.s.begin_command(&self.db, false);
            let out = &mut self.s.out;
            d.str(out, "insert", coll);
            let mut arr = d.array(out, "documents");
            let mut n = 0;
            for it in items {
                arr.push_key(out);
                write(out, it);
                n += 1;
            }
            arr.end(out);
            d.bool(out, "ordered", ordered);
            self.write_concern(&mut d);
            self.s.end_command(m, d, &self.db, false);
            self.write_result("insert", n).await.map(|_| ())
        } else {
            let ns = self.ns(coll);
            let flags = if ordered {
                0
            } else {
                wire::INSERT_CONTINUE_ON_ERROR
            };
            let id = self.s.next_request();
            let m = wire::op_insert(&mut self.s.out, id, flags, &ns);
            for it in items {
                write(&mut self.s.out, it);
            }
            m.end(&mut self.s.out);
            self.legacy_write("insert").await.map(|_| ())
        }
    }

    /// `writeConcern: {w, j}` inside a write command, when one was asked.
    fn write_concern(&mut self, d: &mut Doc) {
        let wc = self.s.opts.write_concern;
        if wc.is_default() {
            return;
        }
        let out = &mut self.s.out;
        let mut w = d.open(out, "writeConcern");
        put_write_concern(out, &mut w, wc);
        w.end(out);
    }

    /// Sends a write command and reads its reply: `n`, or an error naming
    /// how many of the `count` documents failed and the first reason.
    async fn write_result(&mut self, what: &str, count: usize) -> Result<u64, ClientError> {
        let r = self.s.round_trip(what).await?;
        let doc = self.s.command_reply(&r, what)?;
        if let Ok(errs) = doc.get_array("writeErrors") {
            let mut it = errs.into_iter().flatten();
            let first = it.next();
            let failed = 1 + it.count();
            let reason = first
                .and_then(|e| e.as_document().map(server_error))
                .unwrap_or_default();
            return Err(self.fail(format!(
                "{what}: {failed} of {count} documents failed; first: {reason}"
            )));
        }
        if let Ok(wce) = doc.get_document("writeConcernError") {
            return Err(self.fail(format!(
                "{what}: write concern failed: {}",
                server_error(wce)
            )));
        }
        Ok(doc.get("n").ok().flatten().and_then(number).unwrap_or(0.0) as u64)
    }

    /// Sends a legacy write (no reply) and, unless it is unacknowledged,
    /// asks `getLastError` with the write concern; returns its `n`.
    async fn legacy_write(&mut self, what: &str) -> Result<u64, ClientError> {
        self.s.send_only(what).await?;
        let wc = self.s.opts.write_concern;
        if wc.unacknowledged() {
            return Ok(0);
        }
        let (m, mut d) = self.s.begin_command(&self.db, false);
        let out = &mut self.s.out;
        d.i32(out, "getLastError", 1);
        put_write_concern(out, &mut d, wc);
        self.s.end_command(m, d, &self.db, false);
        let r = self.s.round_trip("getLastError").await?;
        let doc = self.s.command_reply(&r, "getLastError")?;
        match doc.get("err") {
            Ok(None) | Ok(Some(bson::RawBsonRef::Null)) => {}
            _ => return Err(self.fail(format!("{what} failed: {}", server_error(doc)))),
        }
        Ok(doc.get("n").ok().flatten().and_then(number).unwrap_or(0.0) as u64)
    }

    /// `$set` one field of `{_id: id}`; returns the documents matched.
    pub async fn set_field(
        &mut self,
        coll: &str,
        id: &str,
        field: &str,
        value: &str,
    ) -> Result<u64, ClientError> {
        self.s.ready().await?;
        let update = |out: &mut Vec<u8>, d: &mut Doc| {
            let mut q = d.open(out, "q");
            q.str(out, "_id", id);
            q.end(out);
            let mut u = d.open(out, "u");
            let mut set = u.open(out, "$set");
            set.str(out, field, value);
            set.end(out);
            u.end(out);
        };
        if self.s.wire >= WIRE_WRITE_COMMANDS {
            let (m, mut d) = self.s.begin_command(&self.db, false);
            let out = &mut self.s.out;
            d.str(out, "update", coll);
            let mut arr = d.array(out, "updates");
            let mut one = arr.push_doc(out);
            update(out, &mut one);
            one.end(out);
            arr.end(out);
            self.write_concern(&mut d);
            self.s.end_command(m, d, &self.db, false);
            self.write_result("update", 1).await
        } else {
            let ns = self.ns(coll);
            let rid = self.s.next_request();
            let m = wire::op_update(&mut self.s.out, rid, &ns, 0);
            // The selector and the update, as two top-level documents.
            let out = &mut self.s.out;
            let mut sel = Doc::begin(out);
            sel.str(out, "_id", id);
            sel.end(out);
            let mut u = Doc::begin(out);
            let mut set = u.open(out, "$set");
            set.str(out, field, value);
            set.end(out);
            u.end(out);
            m.end(out);
            self.legacy_write("update").await
        }
    }

    /// Deletes `{_id: id}`; returns the documents removed.
    pub async fn delete_id(&mut self, coll: &str, id: &str) -> Result<u64, ClientError> {
        self.s.ready().await?;
        if self.s.wire >= WIRE_WRITE_COMMANDS {
            let (m, mut d) = self.s.begin_command(&self.db, false);
            let out = &mut self.s.out;
            d.str(out, "delete", coll);
            let mut arr = d.array(out, "deletes");
            let mut one = arr.push_doc(out);
            let mut q = one.open(out, "q");
            q.str(out, "_id", id);
            q.end(out);
            one.i32(out, "limit", 1);
            one.end(out);
            arr.end(out);
            self.write_concern(&mut d);
            self.s.end_command(m, d, &self.db, false);
            self.write_result("delete", 1).await
        } else {
            let ns = self.ns(coll);
            let rid = self.s.next_request();
            let m = wire::op_delete(&mut self.s.out, rid, &ns, wire::DELETE_SINGLE_REMOVE);
            let out = &mut self.s.out;
            let mut sel = Doc::begin(out);
            sel.str(out, "_id", id);
            sel.end(out);
            m.end(out);
            self.legacy_write("delete").await
        }
    }

    /// Whether collection `name` holds at least one document (a missing
    /// collection holds none).
    pub async fn has_documents(&mut self, name: &str) -> Result<bool, ClientError> {
        let empty = encode(&Document::new());
        let q = Query {
            coll: name,
            filter: &empty,
            sort: None,
            limit: 1,
        };
        Ok(self.find(&q, &mut |_| Ok(())).await? > 0)
    }

    /// Finds `{_id: id}`; returns its number of fields (0 when missing).
    pub async fn find_id(&mut self, coll: &str, id: &str) -> Result<usize, ClientError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let mut f = Doc::begin(&mut scratch);
        f.str(&mut scratch, "_id", id);
        f.end(&mut scratch);
        let mut fields = 0;
        let q = Query {
            coll,
            filter: &scratch,
            sort: None,
            limit: 1,
        };
        let r = self
            .find(&q, &mut |d| {
                fields = d.iter().count();
                Ok(())
            })
            .await;
        self.scratch = scratch;
        r.map(|_| fields)
    }

    /// A digest of every document of `coll` in `_id` order (their BSON
    /// bytes), with their count: equal for equal data.
    pub async fn digest(&mut self, coll: &str) -> Result<(u64, String), ClientError> {
        use sha2::Digest;
        let filter = encode(&bson::doc! {});
        let sort = encode(&bson::doc! {"_id": 1});
        let q = Query {
            coll,
            filter: &filter,
            sort: Some(&sort),
            limit: 0,
        };
        let mut h = sha2::Sha256::new();
        let n = self
            .find(&q, &mut |d| {
                let bytes = d.as_bytes();
                h.update((bytes.len() as u64).to_le_bytes());
                h.update(bytes);
                Ok(())
            })
            .await?;
        Ok((n, hex::encode(h.finalize())))
    }

    /// Up to `limit` documents with `_id >= from` in `_id` order; returns how many.
    pub async fn scan_from(
        &mut self,
        coll: &str,
        from: &str,
        limit: i64,
    ) -> Result<u64, ClientError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let mut f = Doc::begin(&mut scratch);
        let mut gte = f.open(&mut scratch, "_id");
        gte.str(&mut scratch, "$gte", from);
        gte.end(&mut scratch);
        f.end(&mut scratch);
        let split = scratch.len();
        let mut s = Doc::begin(&mut scratch);
        s.i32(&mut scratch, "_id", 1);
        s.end(&mut scratch);
        let q = Query {
            coll,
            filter: &scratch[..split],
            sort: Some(&scratch[split..]),
            limit,
        };
        let r = self.find(&q, &mut |_| Ok(())).await;
        self.scratch = scratch;
        r
    }

    /// Runs a find with a JSON filter; returns the documents it returned.
    pub async fn count_find(
        &mut self,
        coll: &str,
        filter: &serde_json::Value,
    ) -> Result<u64, ClientError> {
        let filter = encode(&json_doc(filter).map_err(|e| self.fail(e))?);
        let q = Query {
            coll,
            filter: &filter,
            sort: None,
            limit: 0,
        };
        self.find(&q, &mut |_| Ok(())).await
    }

    /// Every document matching a JSON filter, sorted by `_id`, as relaxed
    /// extended JSON (for checking what a load wrote).
    pub async fn find_json(
        &mut self,
        coll: &str,
        filter: &serde_json::Value,
    ) -> Result<Vec<serde_json::Value>, ClientError> {
        let filter = encode(&json_doc(filter).map_err(|e| self.fail(e))?);
        let sort = encode(&bson::doc! {"_id": 1});
        let mut out = Vec::new();
        let q = Query {
            coll,
            filter: &filter,
            sort: Some(&sort),
            limit: 0,
        };
        self.find(&q, &mut |d| {
            let d = Document::try_from(d).map_err(|e| e.to_string())?;
            out.push(Bson::Document(d).into_relaxed_extjson());
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Runs `q`, calling `visit` on every document; returns how many.
    async fn find(&mut self, q: &Query<'_>, visit: &mut Visit<'_>) -> Result<u64, ClientError> {
        self.s.ready().await?;
        if self.s.wire >= WIRE_FIND_COMMAND {
            self.find_command(q, visit).await
        } else {
            self.find_legacy(q, visit).await
        }
    }

    /// `find`, then `getMore` until the cursor is exhausted, the limit is
    /// reached (a single batch for a limit of 1) or the cursor's bounds
    /// are spent ([`CursorBound`]).
    async fn find_command(
        &mut self,
        q: &Query<'_>,
        visit: &mut Visit<'_>,
    ) -> Result<u64, ClientError> {
        let (m, mut d) = self.s.begin_command(&self.db, true);
        let out = &mut self.s.out;
        d.str(out, "find", q.coll).raw(out, "filter", q.filter);
        if let Some(sort) = q.sort {
            d.raw(out, "sort", sort);
        }
        if q.limit > 0 {
            d.i64(out, "limit", q.limit);
        }
        let single = q.limit == 1;
        if single {
            d.bool(out, "singleBatch", true);
        }
        self.s.end_command(m, d, &self.db, true);
        let mut bound = CursorBound::new(&self.s.opts);
        let mut n = 0;
        let mut batch = "firstBatch";
        loop {
            let what = if batch == "firstBatch" {
                "find"
            } else {
                "getMore"
            };
            let r = self.s.round_trip(what).await?;
            let doc = self.s.command_reply(&r, what)?;
            let cursor = doc
                .get_document("cursor")
                .map_err(|e| fail(&self.s.ep, format!("{what}: a reply without a cursor: {e}")))?;
            let docs = cursor
                .get_array(batch)
                .map_err(|e| fail(&self.s.ep, format!("{what}: {e}")))?;
            for d in docs {
                let d = d.ok().and_then(|d| d.as_document());
                let d = d.ok_or_else(|| fail(&self.s.ep, format!("{what}: a bad document")))?;
                visit(d).map_err(|e| fail(&self.s.ep, e))?;
                n += 1;
            }
            let id = cursor_id(cursor);
            let limited = q.limit > 0 && n >= q.limit as u64;
            if id == 0 || single || limited {
                return Ok(n);
            }
            bound.next(&self.s.ep, q.coll)?;
            let (m, mut d) = self.s.begin_command(&self.db, true);
            let out = &mut self.s.out;
            d.i64(out, "getMore", id).str(out, "collection", q.coll);
            self.s.end_command(m, d, &self.db, true);
            batch = "nextBatch";
        }
    }

    /// OP_QUERY on the collection, OP_GET_MORE while the cursor lives and
    /// the limit is not reached, OP_KILL_CURSORS if it is left open.
    async fn find_legacy(
        &mut self,
        q: &Query<'_>,
        visit: &mut Visit<'_>,
    ) -> Result<u64, ClientError> {
        let ns = self.ns(q.coll);
        let flags = if self.s.opts.read_preference != ReadPreference::Primary {
            wire::QUERY_SECONDARY_OK
        } else {
            0
        };
        // -1: one document and no cursor; n > 0: the first batch's size.
        let ret = match q.limit {
            1 => -1,
            n => n.clamp(0, i32::MAX as i64) as i32,
        };
        let id = self.s.next_request();
        let m = wire::op_query(&mut self.s.out, id, flags, &ns, 0, ret);
        let out = &mut self.s.out;
        match q.sort {
            Some(sort) => {
                let mut d = Doc::begin(out);
                d.raw(out, "$query", q.filter).raw(out, "$orderby", sort);
                d.end(out);
            }
            None => out.extend_from_slice(q.filter),
        }
        m.end(out);
        let mut bound = CursorBound::new(&self.s.opts);
        let mut n = 0u64;
        let mut what = "query";
        loop {
            let r = self.s.round_trip(what).await?;
            // A failed query is one `{$err: ...}` document (with the
            // QueryFailure flag on the servers that set it).
            let failed = r.number == 1
                && self
                    .s
                    .first_doc(&r, what)
                    .is_ok_and(|d| d.get("$err").ok().flatten().is_some());
            if r.flags & wire::REPLY_QUERY_FAILURE != 0 || failed {
                let doc = self.s.first_doc(&r, what)?;
                return Err(self.fail(format!("{what} failed: {}", server_error(doc))));
            }
            if r.flags & wire::REPLY_CURSOR_NOT_FOUND != 0 {
                return Err(self.fail(format!("{what}: the server lost the cursor")));
            }
            for d in wire::documents(&self.s.inbuf, r.docs) {
                let d = d
                    .and_then(|d| RawDocument::from_bytes(d).map_err(|e| Malformed(e.to_string())));
                visit(d.map_err(|e| fail(&self.s.ep, format!("{what}: {e}")))?)
                    .map_err(|e| fail(&self.s.ep, e))?;
                n += 1;
            }
            let done = q.limit > 0 && n >= q.limit as u64;
            if r.cursor_id == 0 {
                return Ok(n);
            }
            let id = self.s.next_request();
            if done {
                wire::op_kill_cursors(&mut self.s.out, id, &[r.cursor_id]);
                self.s.send_only("killCursors").await?;
                return Ok(n);
            }
            bound.next(&self.s.ep, q.coll)?;
            let left = if q.limit > 0 { q.limit as u64 - n } else { 0 };
            wire::op_get_more(&mut self.s.out, id, &ns, left as i32, r.cursor_id);
            what = "getMore";
        }
    }

    /// Creates an index on `keys` (field, 1 or -1) in order.
    pub(crate) async fn create_index(
        &mut self,
        coll: &str,
        keys: &[(&str, i32)],
    ) -> Result<(), ClientError> {
        self.s.ready().await?;
        let mut key = Document::new();
        let mut name = Vec::new();
        for (f, dir) in keys {
            key.insert(*f, *dir);
            name.push(format!("{f}_{dir}"));
        }
        let name = name.join("_");
        let key = encode(&key);
        if self.s.wire >= WIRE_WRITE_COMMANDS {
            let (m, mut d) = self.s.begin_command(&self.db, false);
            let out = &mut self.s.out;
            d.str(out, "createIndexes", coll);
            let mut arr = d.array(out, "indexes");
            let mut ix = arr.push_doc(out);
            ix.raw(out, "key", &key).str(out, "name", &name);
            ix.end(out);
            arr.end(out);
            self.s.end_command(m, d, &self.db, false);
            let r = self.s.round_trip("createIndexes").await?;
            self.s.command_reply(&r, "createIndexes")?;
            Ok(())
        } else {
            let ns = self.ns("system.indexes");
            let target = self.ns(coll);
            let id = self.s.next_request();
            let m = wire::op_insert(&mut self.s.out, id, 0, &ns);
            let out = &mut self.s.out;
            let mut ix = Doc::begin(out);
            ix.str(out, "ns", &target)
                .raw(out, "key", &key)
                .str(out, "name", &name);
            ix.end(out);
            m.end(out);
            self.legacy_write("createIndex").await.map(|_| ())
        }
    }

    /// Data plus index bytes of a collection (`collStats`), when reported.
    pub async fn collection_bytes(&mut self, coll: &str) -> Result<Option<u64>, ClientError> {
        self.s.ready().await?;
        let (m, mut d) = self.s.begin_command(&self.db, false);
        d.str(&mut self.s.out, "collStats", coll);
        self.s.end_command(m, d, &self.db, false);
        let r = self.s.round_trip("collStats").await?;
        let doc = self.s.command_reply(&r, "collStats")?;
        let num = |k: &str| path_number(doc, &[k]);
        let index = num("totalIndexStorageSize").or_else(|| num("totalIndexSize"));
        Ok(match (num("storageSize"), index) {
            (Some(a), Some(b)) => Some(a + b),
            (Some(a), None) => Some(a),
            _ => num("size"),
        })
    }
}

/// `w` and `j` as fields of `d` (a `writeConcern` or a `getLastError`).
/// Most `getMore` batches one query may ask for: far beyond any
/// collection a benchmark reads (a batch holds up to 16 MB), far below
/// what a server whose cursor never ends would take (issue 34).
pub(crate) const MAX_CURSOR_BATCHES: u64 = 100_000;

/// How far one query follows its cursor: at most [`MAX_CURSOR_BATCHES`]
/// batches and the options' `cursor_time`.
struct CursorBound {
    start: std::time::Instant,
    time: std::time::Duration,
    batches: u64,
}

impl CursorBound {
    fn new(opts: &MongoOptions) -> CursorBound {
        CursorBound {
            start: std::time::Instant::now(),
            time: opts.cursor_time,
            batches: 0,
        }
    }

    /// Counts one more `getMore`; an error naming the server at `ep`
    /// once either bound is spent.
    fn next(&mut self, ep: &Endpoint, coll: &str) -> Result<(), ClientError> {
        self.batches += 1;
        let took = self.start.elapsed();
        if self.batches > MAX_CURSOR_BATCHES || took > self.time {
            return Err(fail(
                ep,
                format!(
                    "the cursor of a query on `{coll}` was still open after {} batches in {:.1} s \
                 (at most {MAX_CURSOR_BATCHES} batches and {} s): a server whose cursor never \
                 ends is not followed further",
                    self.batches - 1,
                    took.as_secs_f64(),
                    self.time.as_secs()
                ),
            ));
        }
        Ok(())
    }
}

/// The `id` of a reply's cursor, Int64 as servers send it or Int32 (a
/// non-zero Int32 is a live cursor, not 0).
fn cursor_id(cursor: &RawDocument) -> i64 {
    match cursor.get("id").ok().flatten() {
        Some(bson::RawBsonRef::Int64(i)) => i,
        Some(bson::RawBsonRef::Int32(i)) => i as i64,
        _ => 0,
    }
}

fn put_write_concern(out: &mut Vec<u8>, d: &mut Doc, wc: WriteConcern) {
    match wc.w {
        Some(W::Nodes(n)) => {
            d.i32(out, "w", n);
        }
        Some(W::Majority) => {
            d.str(out, "w", "majority");
        }
        None => {}
    }
    if let Some(j) = wc.j {
        d.bool(out, "j", j);
    }
}

/// `{_id: id, f1: v1, ...}` at the end of `buf`.
fn fields_doc<'a>(buf: &mut Vec<u8>, id: &str, fields: impl Iterator<Item = (&'a str, &'a str)>) {
    let mut d = Doc::begin(buf);
    d.str(buf, "_id", id);
    for (f, v) in fields {
        d.str(buf, f, v);
    }
    d.end(buf);
}

fn encode(d: &Document) -> Vec<u8> {
    let mut v = Vec::new();
    d.to_writer(&mut v).expect("writing BSON to memory");
    v
}

fn json_doc(v: &serde_json::Value) -> Result<Document, Malformed> {
    match Bson::try_from(v.clone()) {
        Ok(Bson::Document(d)) => Ok(d),
        Ok(other) => Err(Malformed(format!("expected a JSON object, got {other}"))),
        Err(e) => Err(Malformed(e.to_string())),
    }
}
