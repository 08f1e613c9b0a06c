//! Tokutek's sysbench-mongodb (write-up 002) built in: N collections
//! `sbtest1..N` of documents `{_id, k, c, pad}` with an index on `k`,
//! loaded by several loaders (at any moment each on its own collection)
//! in batches of 1000, then the sysbench OLTP transaction, on MongoDB.
//!
//! One transaction, as sysbench's `oltp.lua` and its MongoDB port run it
//! by default: 10 point selects; one simple, one sum, one order and one
//! distinct range of 100 documents; one index update (`$inc` of `k`), one
//! non-index update (a new `c`); one delete and the insert of the same
//! `_id`. It is timed and counted as one TRANSACTION; the metric is
//! transactions per second. The load counts every document as an INSERT,
//! so its throughput is inserts per second.

use super::config::{self, GeneratorKind, Run, WorkloadError};
use super::driver::{Timing, Worker};
use super::histo::Recorder;
use super::phases::{self, Loading, Steps};
use super::rng::Rng;
use super::stores::{StoreError, StoreKind};
use crate::clients::Endpoint;
use crate::clients::mongodb::{MongoConn, MongoOptions};
use crate::results::model::PhaseResult;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

pub use super::config::COLLECTIONS;
/// Most collections a scenario may ask for.
pub(crate) const MAX_COLLECTIONS: u32 = 1024;
/// Loaders when the config names none (write-up 002).
pub(crate) const LOADERS: u32 = 8;
/// Documents per insert in the load (write-up 002).
pub(crate) const BATCH: u64 = 1000;
/// Documents of one range query (sysbench's `oltp-range-size`).
pub(crate) const RANGE_SIZE: u64 = 100;
/// Point selects per transaction (sysbench's `oltp-point-selects`).
pub(crate) const POINT_SELECTS: usize = 10;
/// The most bytes of one document: `_id`, `k`, 119 bytes of `c`, 59 of `pad`.
pub(crate) const RECORD_BYTES: u64 = 230;
/// Operation kind names: the transaction and the load's inserts.
pub(crate) const NAMES: [&str; 2] = ["TRANSACTION", "INSERT"];
const TRANSACTION: usize = 0;
const INSERT: usize = 1;

/// `sbtest1`..`sbtestN`.
pub fn collection(i: u32) -> String {
    format!("sbtest{}", i + 1)
}

/// `groups` groups of 11 random digits joined by `-`, as sysbench's `c`
/// (11 groups) and `pad` (5).
fn digits(rng: &mut Rng, groups: usize) -> String {
    let mut s = String::with_capacity(groups * 12);
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..11 {
            s.push(char::from(b'0' + rng.below(10) as u8));
        }
    }
    s
}

/// Document `id` (1-based) of a collection of `docs`.
fn document(rng: &mut Rng, id: u64, docs: u64) -> Value {
    json!({
        "_id": id,
        "k": 1 + rng.below(docs.max(1)),
        "c": digits(rng, 11),
        "pad": digits(rng, 5),
    })
}

/// Documents `_id` in `from..=to`.
fn range(from: u64, to: u64) -> Value {
    json!({"_id": {"$gte": from, "$lte": to}})
}

/// One sysbench transaction's statements on `coll`, in order.
pub fn transaction(rng: &mut Rng, coll: &str, docs: u64) -> Vec<Value> {
    let id = |rng: &mut Rng| 1 + rng.below(docs.max(1));
    let start = |rng: &mut Rng| 1 + rng.below(docs.saturating_sub(RANGE_SIZE).max(1));
    let mut v = Vec::with_capacity(POINT_SELECTS + 8);
    for _ in 0..POINT_SELECTS {
        let i = id(rng);
        v.push(json!({"find": coll, "filter": {"_id": i}, "projection": {"c": 1}, "limit": 1, "singleBatch": true}));
    }
    let s = start(rng);
    v.push(json!({"find": coll, "filter": range(s, s + RANGE_SIZE - 1), "projection": {"c": 1}}));
    let s = start(rng);
    v.push(json!({"aggregate": coll, "pipeline": [
        {"$match": range(s, s + RANGE_SIZE - 1)},
        {"$group": {"_id": null, "total": {"$sum": "$k"}}}], "cursor": {}}));
    let s = start(rng);
    v.push(json!({"find": coll, "filter": range(s, s + RANGE_SIZE - 1), "projection": {"c": 1}, "sort": {"c": 1}}));
    let s = start(rng);
    v.push(json!({"distinct": coll, "key": "c", "query": range(s, s + RANGE_SIZE - 1)}));
    let i = id(rng);
    v.push(json!({"update": coll, "updates": [{"q": {"_id": i}, "u": {"$inc": {"k": 1}}}]}));
    let i = id(rng);
    let c = digits(rng, 11);
    v.push(json!({"update": coll, "updates": [{"q": {"_id": i}, "u": {"$set": {"c": c}}}]}));
    let i = id(rng);
    v.push(json!({"delete": coll, "deletes": [{"q": {"_id": i}, "limit": 1}]}));
    v.push(json!({"insert": coll, "documents": [document(rng, i, docs)]}));
    v
}

/// Whether a write reply failed for a reason other than a duplicate key
/// on the transaction's re-insert: two transactions that delete the same
/// `_id` both insert it back, and the second finds it there, as intended.
fn write_failed(reply: &Value) -> Option<String> {
    let errs = reply.get("writeErrors")?.as_array()?;
    let bad: Vec<&Value> = errs
        .iter()
        .filter(|e| e.get("code").and_then(Value::as_i64) != Some(11000))
        .collect();
    (!bad.is_empty()).then(|| format!("write failed: {}", Value::Array(errs.clone())))
}

/// Runs a JSON command on the connection's database.
async fn command(conn: &mut MongoConn, db: &str, cmd: &Value) -> Result<Value, StoreError> {
    let reply = conn.run_json(db, cmd).await?;
    if let Some(msg) = write_failed(&reply) {
        return Err(StoreError::Client(crate::clients::ClientError::Mongodb {
            addr: String::new(),
            msg,
        }));
    }
    Ok(reply)
}

/// Runs transactions on random collections.
struct TxnWorker {
    conn: MongoConn,
    db: String,
    rng: Rng,
    collections: u32,
    docs: u64,
    statements: Vec<Value>,
}

impl Worker for TxnWorker {
    fn plan(&mut self) -> Option<usize> {
        let coll = collection(self.rng.below(self.collections as u64) as u32);
        self.statements = transaction(&mut self.rng, &coll, self.docs);
        Some(TRANSACTION)
    }
    async fn exec(&mut self) -> Result<(), StoreError> {
        for s in &self.statements {
            command(&mut self.conn, &self.db, s).await?;
        }
        Ok(())
    }
}

/// Inserts batches claimed from a shared counter: batch `j` is batch
/// `j / N` of collection `j mod N`, so loaders running at once write
/// different collections, as write-up 002's loaders did.
struct LoadWorker {
    conn: MongoConn,
    rng: Rng,
    next: Arc<AtomicU64>,
    collections: u32,
    docs: u64,
    size: u64,
    batch: Vec<Value>,
    coll: String,
}

impl Worker for LoadWorker {
    fn plan(&mut self) -> Option<usize> {
        let j = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.collections as u64;
        let from = (j / n) * self.size + 1;
        if from > self.docs {
            return None;
        }
        let to = (from + self.size - 1).min(self.docs);
        self.batch.clear();
        for id in from..=to {
            self.batch.push(document(&mut self.rng, id, self.docs));
        }
        self.coll = collection((j % n) as u32);
        Some(INSERT)
    }
    async fn exec(&mut self) -> Result<(), StoreError> {
        Ok(self.conn.insert_json_many(&self.coll, &self.batch).await?)
    }
    /// Every document is an INSERT: the load's throughput is inserts/s.
    fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
        t.record(rec, self.batch.len() as u64, &r);
    }
}

/// Runs sysbench-mongo: the load when asked, then one measured phase per
/// thread count.
pub async fn run(
    v: &Run,
    own: &config::SysbenchMongo,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    if v.target.kind != StoreKind::Mongodb {
        return Err(GeneratorKind::SysbenchMongo.not_on(&v.target));
    }
    let mut ep: Endpoint = v.target.endpoint.clone();
    let db = ep.database.get_or_insert_with(|| "sbtest".into()).clone();
    let g = SysbenchMongo {
        opts: &v.target.mongo,
        ep,
        db,
        collections: own.collections,
        docs: v.common.records,
    };
    phases::run(&g, v, cancel).await
}

/// The sysbench-mongo generator on one server.
struct SysbenchMongo<'a> {
    ep: Endpoint,
    opts: &'a MongoOptions,
    db: String,
    collections: u32,
    docs: u64,
}

fn setup(what: &str) -> impl FnOnce(crate::clients::ClientError) -> WorkloadError {
    let what = what.to_string();
    move |e| WorkloadError::Setup {
        what,
        source: e.into(),
    }
}

impl SysbenchMongo<'_> {
    async fn connect(&self) -> Result<MongoConn, WorkloadError> {
        let conn = MongoConn::connect_with(&self.ep, self.opts).await;
        conn.map_err(setup("connecting"))
    }
}

impl Steps for SysbenchMongo<'_> {
    type Loader = LoadWorker;
    type Measurer = TxnWorker;

    fn names(&self) -> &'static [&'static str] {
        &NAMES
    }

    async fn holds_data(&self) -> Result<Option<String>, WorkloadError> {
        let mut conn = self.connect().await?;
        for i in 0..self.collections {
            let name = collection(i);
            if conn.has_documents(&name).await.map_err(setup("checking"))? {
                return Ok(Some(format!(
                    "mongodb at {} holds documents in {}.{name} (a load drops it)",
                    self.ep.addr(),
                    self.db
                )));
            }
        }
        Ok(None)
    }

    async fn recreate(&self) -> Result<(), WorkloadError> {
        let mut conn = self.connect().await?;
        for i in 0..self.collections {
            let name = collection(i);
            conn.drop_collection(&name)
                .await
                .map_err(setup("dropping"))?;
            conn.create_index(&name, &[("k", 1)])
                .await
                .map_err(setup("creating the k index"))?;
        }
        Ok(())
    }

    async fn loaders(&self, v: &Run) -> Result<Loading<LoadWorker>, WorkloadError> {
        let c = &v.common;
        let loaders = c.load_threads.unwrap_or(LOADERS).max(1);
        let size = c.batch.unwrap_or(BATCH).max(1);
        let next = Arc::new(AtomicU64::new(0));
        let mut workers = Vec::new();
        for l in 0..loaders {
            workers.push(LoadWorker {
                conn: self.connect().await?,
                rng: Rng::new(c.seed, 0x5B_0000 + l as u64),
                next: next.clone(),
                collections: self.collections,
                docs: self.docs,
                size,
                batch: Vec::with_capacity(size as usize),
                coll: String::new(),
            });
        }
        let batches = self.docs.div_ceil(size) * self.collections as u64;
        let records = (batches * size, size);
        Ok(Loading::records(
            workers,
            &NAMES,
            records,
            "sysbench-mongo:load",
        ))
    }

    async fn measurers(&self, v: &Run, threads: u32) -> Result<Vec<TxnWorker>, WorkloadError> {
        let mut workers = Vec::new();
        for i in 0..threads {
            workers.push(TxnWorker {
                conn: self.connect().await?,
                db: self.db.clone(),
                rng: Rng::new(v.common.seed, i as u64),
                collections: self.collections,
                docs: self.docs,
                statements: Vec::new(),
            });
        }
        Ok(workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_runs_sysbenchs_statements_in_its_counts() {
        let mut rng = Rng::new(1, 2);
        let t = transaction(&mut rng, "sbtest3", 10_000);
        assert_eq!(t.len(), POINT_SELECTS + 8);
        let kind = |s: &Value| s.as_object().unwrap().keys().next().unwrap().clone();
        let finds = t.iter().filter(|s| kind(s) == "find").count();
        assert_eq!(
            finds,
            POINT_SELECTS + 2,
            "points, the simple and the order range"
        );
        for k in ["aggregate", "distinct", "delete", "insert"] {
            assert_eq!(t.iter().filter(|s| kind(s) == k).count(), 1, "{k}");
        }
        assert_eq!(t.iter().filter(|s| kind(s) == "update").count(), 2);
        let r = &t[POINT_SELECTS]["filter"]["_id"];
        let (a, b) = (r["$gte"].as_u64().unwrap(), r["$lte"].as_u64().unwrap());
        assert_eq!(b - a + 1, RANGE_SIZE);
        assert!(a >= 1 && b <= 10_000);
        // The insert puts back the `_id` the delete removed.
        let del = &t[POINT_SELECTS + 6]["deletes"][0]["q"]["_id"];
        assert_eq!(del, &t[POINT_SELECTS + 7]["documents"][0]["_id"]);
    }

    #[test]
    fn documents_have_sysbenchs_c_and_pad() {
        let d = document(&mut Rng::new(3, 4), 7, 1000);
        assert_eq!(d["c"].as_str().unwrap().len(), 11 * 12 - 1);
        assert_eq!(d["pad"].as_str().unwrap().len(), 5 * 12 - 1);
        assert!((1..=1000).contains(&d["k"].as_u64().unwrap()));
        assert!(serde_json::to_string(&d).unwrap().len() as u64 <= RECORD_BYTES);
    }

    #[test]
    fn a_duplicate_key_on_the_reinsert_is_not_a_failure_but_other_write_errors_are() {
        let dup = json!({"ok": 1, "n": 0, "writeErrors": [{"index": 0, "code": 11000}]});
        assert_eq!(write_failed(&dup), None);
        let other = json!({"ok": 1, "writeErrors": [{"index": 0, "code": 2}]});
        assert!(write_failed(&other).is_some());
        assert_eq!(write_failed(&json!({"ok": 1, "n": 1})), None);
    }
}
