//! TPC-C on MongoDB in py-tpcc's document schema: one collection per
//! table, named and with fields as py-tpcc names them (`WAREHOUSE`,
//! `D_NEXT_O_ID`), the indexes of the MongoDB-maintained py-tpcc, and with
//! `denormalize` (py-tpcc's default; `denormalize: false` in a scenario,
//! `--denormalize false` for `drive`, turns it off) every order holding
//! its lines in an `ORDER_LINE` array instead of a collection of their own.
//!
//! A transaction runs as one multi-document transaction where the server
//! has them (a 4.0+ replica set: `setName` in `isMaster` and wire version
//! 7 or later), else as py-tpcc's non-transactional sequence of
//! single-document writes. Either way the district's next order id is
//! taken by `findAndModify` (py-tpcc's `findandmodify` default) and the
//! oldest new order by a `delete` that must remove it, so concurrent
//! terminals never take the same one. A write conflict aborts the
//! transaction and the terminal runs it again.

use super::check::Facts;
use super::loader::{Dates, Rows};
use super::schema::TABLES;
use super::txn::{
    CustomerBy, Delivery, NewOrder, NewOrderEnd, OrderStatus, Payment, StockLevel, TpccConn,
};
use super::{DISTRICTS, TpccLoader, TpccStore};
use crate::clients::mongodb::{self, MongoConn, MongoOptions};
use crate::clients::{Cell, ClientError, Endpoint};
use crate::model::{DocumentSchema, TxnMode};
use crate::workload::stores::StoreError;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Database used when the URL names none (py-tpcc's `name` default).
pub(crate) const DB: &str = "tpcc";
/// Documents per cursor batch and per load insert.
const BATCH: usize = 1000;
/// The first wire version with multi-document transactions (4.0).
const WIRE_TRANSACTIONS: i64 = 7;

/// py-tpcc's indexes, per collection (each a list of ascending fields).
const INDEXES: [(&str, &[&str]); 9] = [
    ("ITEM", &["I_ID"]),
    ("WAREHOUSE", &["W_ID"]),
    ("DISTRICT", &["D_W_ID", "D_ID"]),
    ("CUSTOMER", &["C_W_ID", "C_D_ID", "C_ID"]),
    ("CUSTOMER", &["C_W_ID", "C_D_ID", "C_LAST", "C_FIRST"]),
    ("STOCK", &["S_W_ID", "S_I_ID"]),
    ("ORDERS", &["O_W_ID", "O_D_ID", "O_ID"]),
    ("ORDERS", &["O_W_ID", "O_D_ID", "O_C_ID", "O_ID"]),
    ("NEW_ORDER", &["NO_W_ID", "NO_D_ID", "NO_O_ID"]),
];
/// Order lines' index, when they have a collection.
const LINE_INDEX: &[&str] = &["OL_W_ID", "OL_D_ID", "OL_O_ID", "OL_NUMBER"];

/// TPC-C collections in a MongoDB database.
pub struct MongoTpcc {
    pub ep: Endpoint,
    pub opts: MongoOptions,
    /// Whether orders embed their lines (py-tpcc's `denormalize`).
    pub schema: DocumentSchema,
    /// The logical sessions of the terminals' transactions, ended when
    /// their phase ends.
    sessions: mongodb::Sessions,
}

impl MongoTpcc {
    /// The store at `ep`, in `schema`.
    pub fn new(ep: Endpoint, opts: MongoOptions, schema: DocumentSchema) -> MongoTpcc {
        MongoTpcc {
            ep,
            opts,
            schema,
            sessions: mongodb::Sessions::default(),
        }
    }

    fn db_endpoint(&self) -> Endpoint {
        let mut ep = self.ep.clone();
        ep.database.get_or_insert_with(|| DB.into());
        ep
    }

    /// A connection outside any transaction.
    pub async fn raw(&self) -> Result<Db, StoreError> {
        let ep = self.db_endpoint();
        Ok(Db {
            conn: MongoConn::connect_with(&ep, &self.opts).await?,
            addr: ep.addr(),
            db: ep.database.unwrap_or_else(|| DB.into()),
            txn: None,
        })
    }
}

/// Whether the server runs multi-document transactions: a replica set
/// member (or a mongos) of wire version 7 or later.
pub async fn has_transactions(db: &mut Db) -> Result<bool, StoreError> {
    let r = db.conn.run_json("admin", &json!({"isMaster": 1})).await?;
    let wire = r["maxWireVersion"].as_i64().unwrap_or(0);
    let replicated = r.get("setName").is_some() || r["msg"] == "isdbgrid";
    Ok(replicated && wire >= WIRE_TRANSACTIONS)
}

/// The transaction a connection is in.
struct Txn {
    lsid: Value,
    number: i64,
    open: bool,
    /// A statement was sent (the server knows the transaction).
    started: bool,
}

/// One connection, and the transaction its commands belong to.
pub struct Db {
    conn: MongoConn,
    addr: String,
    db: String,
    /// `None` on servers without transactions.
    txn: Option<Txn>,
}

fn fail(addr: &str, msg: String) -> StoreError {
    StoreError::Client(ClientError::Mongodb {
        addr: addr.to_string(),
        msg,
    })
}

fn txn_number(n: i64) -> Value {
    json!({ "$numberLong": n.to_string() })
}

impl Db {
    /// Runs a command on the database, inside the open transaction if
    /// there is one; write errors fail it.
    pub async fn cmd(&mut self, mut c: Value) -> Result<Value, StoreError> {
        if let Some(t) = self.txn.as_mut().filter(|t| t.open)
            && let Some(m) = c.as_object_mut()
        {
            m.insert("lsid".into(), t.lsid.clone());
            m.insert("txnNumber".into(), txn_number(t.number));
            m.insert("autocommit".into(), false.into());
            if !t.started {
                m.insert("startTransaction".into(), true.into());
                t.started = true;
            }
        }
        let r = self.conn.run_json(&self.db, &c).await?;
        if let Some(errs) = r.get("writeErrors").and_then(Value::as_array)
            && !errs.is_empty()
        {
            return Err(fail(&self.addr, format!("write failed: {}", errs[0])));
        }
        Ok(r)
    }

    /// Starts a transaction, when the server has them.
    fn begin(&mut self) {
        if let Some(t) = self.txn.as_mut() {
            t.number += 1;
            t.open = true;
            t.started = false;
        }
    }

    /// Commits (or aborts) the open transaction.
    async fn end(&mut self, commit: bool) -> Result<(), StoreError> {
        let Some(t) = self.txn.as_mut().filter(|t| t.open) else {
            return Ok(());
        };
        t.open = false;
        if !t.started {
            return Ok(());
        }
        let name = if commit {
            "commitTransaction"
        } else {
            "abortTransaction"
        };
        let c = json!({name: 1, "lsid": t.lsid, "txnNumber": txn_number(t.number), "autocommit": false});
        self.conn.run_json("admin", &c).await?;
        Ok(())
    }

    /// Every document a cursor command returns (`find`, `aggregate`).
    async fn cursor(&mut self, coll: &str, c: Value) -> Result<Vec<Value>, StoreError> {
        let mut r = self.cmd(c).await?;
        let mut out = Vec::new();
        let mut batch = "firstBatch";
        loop {
            let Some(cur) = r.get_mut("cursor") else {
                return Err(fail(&self.addr, format!("a reply without a cursor: {r}")));
            };
            if let Some(Value::Array(docs)) = cur.get_mut(batch).map(Value::take) {
                out.extend(docs);
            }
            let id = cur["id"].as_i64().unwrap_or(0);
            if id == 0 {
                return Ok(out);
            }
            r = self
                .cmd(json!({"getMore": txn_number(id), "collection": coll, "batchSize": BATCH}))
                .await?;
            batch = "nextBatch";
        }
    }

    /// Documents of `coll` matching `filter`, with `projection`, sorted
    /// by `sort` when given; at most `limit` when positive.
    async fn find(
        &mut self,
        coll: &str,
        filter: Value,
        projection: Value,
        sort: Option<Value>,
        limit: i64,
    ) -> Result<Vec<Value>, StoreError> {
        let mut c =
            json!({"find": coll, "filter": filter, "projection": projection, "batchSize": BATCH});
        if let Some(s) = sort {
            c["sort"] = s;
        }
        if limit > 0 {
            c["limit"] = limit.into();
            c["singleBatch"] = true.into();
        }
        self.cursor(coll, c).await
    }

    /// The one document of `coll` matching `filter`, or `NotFound(what)`.
    async fn one(
        &mut self,
        coll: &str,
        filter: Value,
        projection: Value,
        what: impl FnOnce() -> String,
    ) -> Result<Value, StoreError> {
        let mut v = self.find(coll, filter, projection, None, 1).await?;
        v.pop().ok_or_else(|| StoreError::NotFound(what()))
    }

    /// `findAndModify`: the document after `update` (`new: true`), or
    /// `None` when none matched. After, not before: the post-image comes
    /// from the write itself, while a server may read the pre-image
    /// before the write and let a concurrent one land in between
    /// (SecantusDB then handed two NEW ORDERs the same `D_NEXT_O_ID`).
    async fn modify(
        &mut self,
        coll: &str,
        query: Value,
        update: Value,
        fields: Value,
    ) -> Result<Option<Value>, StoreError> {
        let c = json!({"findAndModify": coll, "query": query, "update": update, "fields": fields, "new": true});
        let mut r = self.cmd(c).await?;
        Ok(Some(r["value"].take()).filter(|v| !v.is_null()))
    }

    /// `update` of each `{q, u}`; fails unless every one matched.
    async fn update(&mut self, coll: &str, updates: Vec<Value>) -> Result<(), StoreError> {
        let want = updates.len() as u64;
        let r = self
            .cmd(json!({"update": coll, "updates": updates}))
            .await?;
        let n = r["n"].as_u64().unwrap_or(0);
        if n < want {
            return Err(StoreError::NotFound(format!(
                "{} of {want} updated documents of {coll}",
                want - n
            )));
        }
        Ok(())
    }

    async fn insert(&mut self, coll: &str, docs: Vec<Value>) -> Result<(), StoreError> {
        self.cmd(json!({"insert": coll, "documents": docs}))
            .await
            .map(|_| ())
    }

    async fn aggregate(&mut self, coll: &str, pipeline: Value) -> Result<Vec<Value>, StoreError> {
        let c = json!({"aggregate": coll, "pipeline": pipeline, "cursor": {"batchSize": BATCH}});
        self.cursor(coll, c).await
    }
}

/// The current time as an extended JSON date.
fn now() -> Value {
    let ms = chrono::Utc::now().timestamp_millis();
    json!({ "$date": { "$numberLong": ms.to_string() } })
}

fn cell(c: &Cell) -> Value {
    match c {
        Cell::Int(i) => json!(i),
        Cell::Float(f) => json!(f),
        Cell::Text(t) => json!(t),
        Cell::Null => Value::Null,
    }
}

/// The documents of a batch of rows: upper-case field names, its date
/// columns filled.
fn documents(r: &Rows, date: &Value) -> Vec<Map<String, Value>> {
    let cols: Vec<String> = r.columns().map(str::to_uppercase).collect();
    let dates: Vec<String> = r.date_columns().map(str::to_uppercase).collect();
    let fill = match r.dates {
        Dates::Now => date.clone(),
        Dates::Null => Value::Null,
    };
    r.rows
        .iter()
        .map(|row| {
            let mut d: Map<String, Value> =
                cols.iter().cloned().zip(row.iter().map(cell)).collect();
            for c in &dates {
                d.insert(c.clone(), fill.clone());
            }
            d
        })
        .collect()
}

/// The fields an embedded order line keeps (py-tpcc drops the order's keys).
const EMBEDDED_DROP: [&str; 3] = ["OL_O_ID", "OL_D_ID", "OL_W_ID"];

/// A loader's connection.
pub struct MongoLoader {
    db: Db,
    schema: DocumentSchema,
}

impl MongoLoader {
    async fn insert_all(
        &mut self,
        coll: &str,
        docs: Vec<Map<String, Value>>,
    ) -> Result<(), StoreError> {
        let mut docs: Vec<Value> = docs.into_iter().map(Value::Object).collect();
        while !docs.is_empty() {
            let rest = docs.split_off(docs.len().min(BATCH));
            let batch = std::mem::replace(&mut docs, rest);
            self.db
                .cmd(json!({"insert": coll, "documents": batch, "ordered": false}))
                .await?;
        }
        Ok(())
    }
}

impl TpccLoader for MongoLoader {
    async fn insert(&mut self, batches: &[Rows]) -> Result<(), StoreError> {
        let date = now();
        // Each order's lines, by order id, when orders embed them (a
        // job holds one district's orders and all their lines).
        let mut lines: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
        if self.schema.embeds_lines() {
            for r in batches.iter().filter(|r| r.table.name == "order_line") {
                for mut d in documents(r, &date) {
                    let o = d["OL_O_ID"].as_i64().unwrap_or(0);
                    for k in EMBEDDED_DROP {
                        d.remove(k);
                    }
                    lines.entry(o).or_default().push(Value::Object(d));
                }
            }
        }
        for r in batches {
            let coll = r.table.name.to_uppercase();
            if self.schema.embeds_lines() && coll == "ORDER_LINE" {
                continue;
            }
            let mut docs = documents(r, &date);
            if self.schema.embeds_lines() && coll == "ORDERS" {
                for d in &mut docs {
                    let o = d["O_ID"].as_i64().unwrap_or(0);
                    let l = lines.remove(&o).unwrap_or_default();
                    d.insert("ORDER_LINE".into(), Value::Array(l));
                }
            }
            self.insert_all(&coll, docs).await?;
        }
        Ok(())
    }
}

impl TpccStore for MongoTpcc {
    type Conn = MongoTerminal;
    type Loader = MongoLoader;

    async fn connect(&self) -> Result<MongoTerminal, StoreError> {
        let mut db = self.raw().await?;
        if has_transactions(&mut db).await? {
            db.txn = Some(Txn {
                lsid: self.sessions.start(),
                number: 0,
                open: false,
                started: false,
            });
        }
        Ok(MongoTerminal {
            db,
            schema: self.schema,
        })
    }

    async fn loader(&self) -> Result<MongoLoader, StoreError> {
        Ok(MongoLoader {
            db: self.raw().await?,
            schema: self.schema,
        })
    }

    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let mut c = self.raw().await?;
        let mut held = Vec::new();
        for coll in TABLES.iter().map(|t| t.name.to_uppercase()) {
            if c.conn.has_documents(&coll).await? {
                held.push(coll);
            }
        }
        Ok((!held.is_empty()).then(|| {
            format!(
                "mongodb at {} holds documents in {}.{} (a load drops them)",
                c.addr,
                c.db,
                held.join(", ")
            )
        }))
    }

    async fn recreate(&self) -> Result<(), StoreError> {
        let mut c = self.raw().await?;
        for t in TABLES {
            c.conn.drop_collection(&t.name.to_uppercase()).await?;
        }
        let lines = (!self.schema.embeds_lines()).then_some(("ORDER_LINE", LINE_INDEX));
        for (coll, fields) in INDEXES.into_iter().chain(lines) {
            let keys: Vec<(&str, i32)> = fields.iter().map(|f| (*f, 1)).collect();
            c.conn.create_index(coll, &keys).await?;
        }
        Ok(())
    }

    async fn check(&self) -> Result<Vec<String>, StoreError> {
        let mut c = self.raw().await?;
        Ok(facts(&mut c, self.schema).await?.violations())
    }

    fn schema(&self) -> Option<DocumentSchema> {
        Some(self.schema)
    }

    async fn end_sessions(&self) -> Result<(), StoreError> {
        // Terminals of a server without transactions started none.
        if self.sessions.is_empty() {
            return Ok(());
        }
        let mut c = self.raw().await?;
        self.sessions.end_all(&mut c.conn).await?;
        Ok(())
    }

    async fn data_rows(&self) -> Result<BTreeMap<&'static str, u64>, StoreError> {
        let mut c = self.raw().await?;
        let mut out = BTreeMap::new();
        for t in TABLES {
            let coll = t.name.to_uppercase();
            if self.schema.embeds_lines() && coll == "ORDER_LINE" {
                continue;
            }
            let r = c.cmd(json!({"count": coll})).await?;
            out.insert(t.name, r["n"].as_u64().unwrap_or(0));
        }
        if self.schema.embeds_lines() {
            let g = c
                .aggregate(
                    "ORDERS",
                    json!([{"$group": {"_id": null, "n": {"$sum": {"$size": "$ORDER_LINE"}}}}]),
                )
                .await?;
            let n = g.first().and_then(|d| d["n"].as_u64()).unwrap_or(0);
            out.insert("order_line", n);
        }
        Ok(out)
    }
}

fn num(d: &Value, k: &str) -> i64 {
    d[k].as_i64()
        .or_else(|| d[k].as_f64().map(|f| f as i64))
        .unwrap_or(0)
}

fn money(d: &Value, k: &str) -> f64 {
    d[k].as_f64().unwrap_or(0.0)
}

/// A `$group` result's `{w, d}` key.
fn group_key(d: &Value) -> (u64, u64) {
    (num(&d["_id"], "w") as u64, num(&d["_id"], "d") as u64)
}

/// What the collections hold for the consistency conditions.
async fn facts(c: &mut Db, schema: DocumentSchema) -> Result<Facts, StoreError> {
    let mut f = Facts::default();
    for w in c
        .find(
            "WAREHOUSE",
            json!({}),
            json!({"_id": 0, "W_ID": 1, "W_YTD": 1}),
            None,
            0,
        )
        .await?
    {
        f.w_ytd.insert(num(&w, "W_ID") as u64, money(&w, "W_YTD"));
    }
    let proj = json!({"_id": 0, "D_W_ID": 1, "D_ID": 1, "D_YTD": 1, "D_NEXT_O_ID": 1});
    for d in c.find("DISTRICT", json!({}), proj, None, 0).await? {
        let w = num(&d, "D_W_ID") as u64;
        *f.d_ytd_sum.entry(w).or_default() += money(&d, "D_YTD");
        f.next_o_id
            .insert((w, num(&d, "D_ID") as u64), num(&d, "D_NEXT_O_ID"));
    }
    let lines = if schema.embeds_lines() {
        json!({"$sum": {"$size": "$ORDER_LINE"}})
    } else {
        json!({"$sum": 0})
    };
    let by = json!({"w": "$O_W_ID", "d": "$O_D_ID"});
    let g = json!([{"$group": {"_id": by, "max": {"$max": "$O_ID"}, "cnt": {"$sum": "$O_OL_CNT"}, "lines": lines}}]);
    for o in c.aggregate("ORDERS", g).await? {
        let k = group_key(&o);
        f.max_o_id.insert(k, num(&o, "max"));
        f.ol_cnt_sum.insert(k, num(&o, "cnt"));
        if schema.embeds_lines() {
            f.order_lines.insert(k, num(&o, "lines"));
        }
    }
    if !schema.embeds_lines() {
        let g = json!([{"$group": {"_id": {"w": "$OL_W_ID", "d": "$OL_D_ID"}, "n": {"$sum": 1}}}]);
        for l in c.aggregate("ORDER_LINE", g).await? {
            f.order_lines.insert(group_key(&l), num(&l, "n"));
        }
    }
    let by = json!({"w": "$NO_W_ID", "d": "$NO_D_ID"});
    let g = json!([{"$group": {"_id": by, "max": {"$max": "$NO_O_ID"}, "min": {"$min": "$NO_O_ID"}, "n": {"$sum": 1}}}]);
    for n in c.aggregate("NEW_ORDER", g).await? {
        let v = (num(&n, "max"), num(&n, "min"), num(&n, "n"));
        f.new_orders.insert(group_key(&n), v);
    }
    Ok(f)
}

/// One terminal's connection.
pub struct MongoTerminal {
    db: Db,
    schema: DocumentSchema,
}

impl MongoTerminal {
    /// Runs `r` to its end: commit when it asks, else abort.
    async fn finish<T>(&mut self, r: Result<(T, bool), StoreError>) -> Result<T, StoreError> {
        match r {
            Ok((v, commit)) => {
                self.db.end(commit).await?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.db.end(false).await;
                Err(e)
            }
        }
    }

    /// The customer: by id, or the middle one by first name of those with
    /// the last name.
    async fn customer(
        &mut self,
        w: u64,
        d: u64,
        by: &CustomerBy,
        projection: Value,
    ) -> Result<Value, StoreError> {
        match by {
            CustomerBy::Id(c) => {
                let filter = json!({"C_W_ID": w, "C_D_ID": d, "C_ID": c});
                self.db
                    .one("CUSTOMER", filter, projection, || {
                        format!("customer {w}/{d}/{c}")
                    })
                    .await
            }
            CustomerBy::Last(name) => {
                let filter = json!({"C_W_ID": w, "C_D_ID": d, "C_LAST": name});
                let sort = Some(json!({"C_FIRST": 1}));
                let mut all = self
                    .db
                    .find("CUSTOMER", filter, projection, sort, 0)
                    .await?;
                if all.is_empty() {
                    return Err(StoreError::NotFound(format!(
                        "customer {w}/{d} named {name}"
                    )));
                }
                let mid = all.len().div_ceil(2) - 1;
                Ok(all.swap_remove(mid))
            }
        }
    }

    /// Adds `by` to district `w`/`d`'s `field`; returns `fields` of the
    /// district after.
    async fn district_inc(
        &mut self,
        w: u64,
        d: u64,
        field: &str,
        by: Value,
        fields: Value,
    ) -> Result<Value, StoreError> {
        let q = json!({"D_W_ID": w, "D_ID": d});
        self.db
            .modify("DISTRICT", q, json!({"$inc": {field: by}}), fields)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("district {w}/{d}")))
    }

    /// Item prices of the lines, or `None` when an item is missing.
    async fn prices(&mut self, t: &NewOrder) -> Result<Option<Vec<f64>>, StoreError> {
        let ids: BTreeSet<u64> = t.lines.iter().map(|l| l.i_id).collect();
        let proj = json!({"_id": 0, "I_ID": 1, "I_PRICE": 1, "I_NAME": 1, "I_DATA": 1});
        let items = self
            .db
            .find("ITEM", json!({"I_ID": {"$in": ids}}), proj, None, 0)
            .await?;
        let price: BTreeMap<u64, f64> = items
            .iter()
            .map(|d| (num(d, "I_ID") as u64, money(d, "I_PRICE")))
            .collect();
        Ok(t.lines
            .iter()
            .map(|l| price.get(&l.i_id).copied())
            .collect())
    }

    /// Each line's stock: quantity and `S_DIST_NN` of the district, read
    /// with one query per supply warehouse.
    async fn stock(
        &mut self,
        t: &NewOrder,
    ) -> Result<BTreeMap<(u64, u64), (i64, String)>, StoreError> {
        let dist = format!("S_DIST_{:02}", t.d_id);
        let mut out = BTreeMap::new();
        let supply: BTreeSet<u64> = t.lines.iter().map(|l| l.supply_w_id).collect();
        for sw in supply {
            let ids: BTreeSet<u64> = t
                .lines
                .iter()
                .filter(|l| l.supply_w_id == sw)
                .map(|l| l.i_id)
                .collect();
            let proj =
                json!({"_id": 0, "S_I_ID": 1, "S_QUANTITY": 1, "S_DATA": 1, dist.clone(): 1});
            let filter = json!({"S_W_ID": sw, "S_I_ID": {"$in": ids}});
            for s in self.db.find("STOCK", filter, proj, None, 0).await? {
                let info = s[&dist].as_str().unwrap_or_default().to_string();
                out.insert(
                    (sw, num(&s, "S_I_ID") as u64),
                    (num(&s, "S_QUANTITY"), info),
                );
            }
        }
        Ok(out)
    }

    async fn new_order_body(&mut self, t: &NewOrder) -> Result<(NewOrderEnd, bool), StoreError> {
        let Some(prices) = self.prices(t).await? else {
            return Ok((NewOrderEnd::RolledBack, false));
        };
        let (w, d, c) = (t.w_id, t.d_id, t.c_id);
        self.db
            .one(
                "WAREHOUSE",
                json!({"W_ID": w}),
                json!({"_id": 0, "W_TAX": 1}),
                || format!("warehouse {w}"),
            )
            .await?;
        let fields = json!({"_id": 0, "D_TAX": 1, "D_NEXT_O_ID": 1});
        let dist = self
            .district_inc(w, d, "D_NEXT_O_ID", 1.into(), fields)
            .await?;
        // The order takes the number before the increment.
        let o_id = num(&dist, "D_NEXT_O_ID") - 1;
        let proj = json!({"_id": 0, "C_DISCOUNT": 1, "C_LAST": 1, "C_CREDIT": 1});
        self.db
            .one(
                "CUSTOMER",
                json!({"C_W_ID": w, "C_D_ID": d, "C_ID": c}),
                proj,
                || format!("customer {w}/{d}/{c}"),
            )
            .await?;
        let mut stock = self.stock(t).await?;
        let date = now();
        let (mut updates, mut lines) = (Vec::new(), Vec::new());
        for (k, (l, price)) in t.lines.iter().zip(&prices).enumerate() {
            let (i, sw, qty) = (l.i_id, l.supply_w_id, l.quantity as i64);
            let s = stock
                .get_mut(&(sw, i))
                .ok_or_else(|| StoreError::NotFound(format!("stock {sw}/{i}")))?;
            // A line of an item the order already holds reads its new quantity.
            s.0 = if s.0 >= qty + 10 {
                s.0 - qty
            } else {
                s.0 + 91 - qty
            };
            let remote = (sw != w) as i64;
            updates.push(json!({"q": {"S_W_ID": sw, "S_I_ID": i},
                "u": {"$set": {"S_QUANTITY": s.0}, "$inc": {"S_YTD": qty, "S_ORDER_CNT": 1, "S_REMOTE_CNT": remote}}}));
            let amount = (qty as f64 * price * 100.0).round() / 100.0;
            let mut line = json!({"OL_NUMBER": k + 1, "OL_I_ID": i, "OL_SUPPLY_W_ID": sw,
                "OL_DELIVERY_D": null, "OL_QUANTITY": qty, "OL_AMOUNT": amount, "OL_DIST_INFO": s.1});
            if !self.schema.embeds_lines() {
                line["OL_O_ID"] = o_id.into();
                line["OL_D_ID"] = d.into();
                line["OL_W_ID"] = w.into();
            }
            lines.push(line);
        }
        self.db.update("STOCK", updates).await?;
        let mut order = json!({"O_ID": o_id, "O_C_ID": c, "O_D_ID": d, "O_W_ID": w, "O_ENTRY_D": date,
            "O_CARRIER_ID": null, "O_OL_CNT": t.lines.len(), "O_ALL_LOCAL": t.all_local as i64});
        if self.schema.embeds_lines() {
            order["ORDER_LINE"] = Value::Array(std::mem::take(&mut lines));
        }
        self.db.insert("ORDERS", vec![order]).await?;
        self.db
            .insert(
                "NEW_ORDER",
                vec![json!({"NO_O_ID": o_id, "NO_D_ID": d, "NO_W_ID": w})],
            )
            .await?;
        if !lines.is_empty() {
            self.db.insert("ORDER_LINE", lines).await?;
        }
        Ok((NewOrderEnd::Committed, true))
    }

    async fn payment_body(&mut self, t: &Payment) -> Result<((), bool), StoreError> {
        let (w, d, a) = (t.w_id, t.d_id, t.amount);
        let addr = |p: &str| {
            let mut m = Map::new();
            m.insert("_id".into(), 0.into());
            for f in ["NAME", "STREET_1", "STREET_2", "CITY", "STATE", "ZIP"] {
                m.insert(format!("{p}_{f}"), 1.into());
            }
            Value::Object(m)
        };
        let (cw, cd) = (t.c_w_id, t.c_d_id);
        let cust = self
            .customer(cw, cd, &t.customer, json!({"_id": 0}))
            .await?;
        let c = num(&cust, "C_ID");
        let mut u = json!({"$inc": {"C_BALANCE": -a, "C_YTD_PAYMENT": a, "C_PAYMENT_CNT": 1}});
        if cust["C_CREDIT"] == "BC" {
            let old = cust["C_DATA"].as_str().unwrap_or_default();
            let mut data = format!("{c} {cd} {cw} {d} {w} {a:.2} | {old}");
            data.truncate(500);
            u["$set"] = json!({ "C_DATA": data });
        }
        let q = json!({"C_W_ID": cw, "C_D_ID": cd, "C_ID": c});
        self.db
            .update("CUSTOMER", vec![json!({"q": q, "u": u})])
            .await?;
        // The district and the warehouse, which every PAYMENT of the
        // warehouse writes, last: a transaction holds them (and makes the
        // others' writes conflict) only until its commit.
        let dist = self
            .district_inc(w, d, "D_YTD", a.into(), addr("D"))
            .await?;
        let wh = self
            .db
            .modify(
                "WAREHOUSE",
                json!({"W_ID": w}),
                json!({"$inc": {"W_YTD": a}}),
                addr("W"),
            )
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("warehouse {w}")))?;
        let h_data = format!(
            "{}    {}",
            wh["W_NAME"].as_str().unwrap_or_default(),
            dist["D_NAME"].as_str().unwrap_or_default()
        );
        let h = json!({"H_C_ID": c, "H_C_D_ID": cd, "H_C_W_ID": cw, "H_D_ID": d, "H_W_ID": w,
            "H_DATE": now(), "H_AMOUNT": a, "H_DATA": h_data});
        self.db.insert("HISTORY", vec![h]).await?;
        Ok(((), true))
    }

    async fn order_status_body(&mut self, t: &OrderStatus) -> Result<((), bool), StoreError> {
        let (w, d) = (t.w_id, t.d_id);
        let proj =
            json!({"_id": 0, "C_ID": 1, "C_FIRST": 1, "C_MIDDLE": 1, "C_LAST": 1, "C_BALANCE": 1});
        let cust = self.customer(w, d, &t.customer, proj).await?;
        let c = num(&cust, "C_ID");
        let filter = json!({"O_W_ID": w, "O_D_ID": d, "O_C_ID": c});
        let sort = Some(json!({"O_ID": -1}));
        let o = self
            .db
            .find("ORDERS", filter, json!({"_id": 0}), sort, 1)
            .await?;
        let o = o
            .first()
            .ok_or_else(|| StoreError::NotFound(format!("an order of customer {w}/{d}/{c}")))?;
        // An order has O_OL_CNT lines (clause 1.3.1): fewer is a truncated
        // answer. Without transactions NEW ORDER writes the order before
        // its lines, so only a transaction's read is sure to see both.
        let want = num(o, "O_OL_CNT").max(0) as u64;
        let got = if self.schema.embeds_lines() {
            Some(o["ORDER_LINE"].as_array().map_or(0, Vec::len) as u64)
        } else {
            let filter = json!({"OL_W_ID": w, "OL_D_ID": d, "OL_O_ID": num(o, "O_ID")});
            let lines = self
                .db
                .find("ORDER_LINE", filter, json!({"_id": 0}), None, 0)
                .await?;
            self.db.txn.is_some().then_some(lines.len() as u64)
        };
        if let Some(got) = got
            && got < want
        {
            return Err(StoreError::Short {
                got,
                want,
                what: format!("order lines of order {w}/{d}/{}", num(o, "O_ID")),
            });
        }
        Ok(((), true))
    }

    /// Takes district `d`'s oldest new order: finds it and deletes it,
    /// again when another DELIVERY deleted it first (at most 3 times, then
    /// the district is skipped, clause 2.7.4.2). A `find` and a `delete`
    /// rather than one `findAndModify`, which SecantusDB runs as a scan.
    async fn take_new_order(&mut self, w: u64, d: u64) -> Result<Option<i64>, StoreError> {
        for _ in 0..3 {
            let q = json!({"NO_W_ID": w, "NO_D_ID": d});
            let sort = Some(json!({"NO_O_ID": 1}));
            let proj = json!({"_id": 0, "NO_O_ID": 1});
            let Some(no) = self.db.find("NEW_ORDER", q, proj, sort, 1).await?.pop() else {
                return Ok(None);
            };
            let o = num(&no, "NO_O_ID");
            let q = json!({"NO_W_ID": w, "NO_D_ID": d, "NO_O_ID": o});
            let r = self
                .db
                .cmd(json!({"delete": "NEW_ORDER", "deletes": [{"q": q, "limit": 1}]}))
                .await?;
            if r["n"].as_u64() == Some(1) {
                return Ok(Some(o));
            }
        }
        Ok(None)
    }

    /// Delivers district `d`'s oldest new order; false when it has none.
    async fn deliver(
        &mut self,
        w: u64,
        d: u64,
        carrier: u64,
        date: &Value,
    ) -> Result<bool, StoreError> {
        let Some(o) = self.take_new_order(w, d).await? else {
            return Ok(false);
        };
        let key = json!({"O_W_ID": w, "O_D_ID": d, "O_ID": o});
        let mut set = json!({ "O_CARRIER_ID": carrier });
        let mut fields = json!({"_id": 0, "O_C_ID": 1});
        if self.schema.embeds_lines() {
            set["ORDER_LINE.$[].OL_DELIVERY_D"] = date.clone();
            fields["ORDER_LINE.OL_AMOUNT"] = 1.into();
        }
        let order = self
            .db
            .one("ORDERS", key.clone(), fields, || {
                format!("order {w}/{d}/{o}")
            })
            .await?;
        self.db
            .update("ORDERS", vec![json!({"q": key, "u": {"$set": set}})])
            .await?;
        let lines = if self.schema.embeds_lines() {
            order["ORDER_LINE"].as_array().cloned().unwrap_or_default()
        } else {
            let q = json!({"OL_W_ID": w, "OL_D_ID": d, "OL_O_ID": o});
            let l = self
                .db
                .find(
                    "ORDER_LINE",
                    q.clone(),
                    json!({"_id": 0, "OL_AMOUNT": 1}),
                    None,
                    0,
                )
                .await?;
            let u = json!({"q": q, "u": {"$set": {"OL_DELIVERY_D": date}}, "multi": true});
            self.db.update("ORDER_LINE", vec![u]).await?;
            l
        };
        let total: f64 = lines.iter().map(|l| money(l, "OL_AMOUNT")).sum();
        let q = json!({"C_W_ID": w, "C_D_ID": d, "C_ID": num(&order, "O_C_ID")});
        let u = json!({"$inc": {"C_BALANCE": total, "C_DELIVERY_CNT": 1}});
        self.db
            .update("CUSTOMER", vec![json!({"q": q, "u": u})])
            .await?;
        Ok(true)
    }

    async fn stock_level_body(&mut self, t: &StockLevel) -> Result<((), bool), StoreError> {
        let (w, d) = (t.w_id, t.d_id);
        let dist = self
            .db
            .one(
                "DISTRICT",
                json!({"D_W_ID": w, "D_ID": d}),
                json!({"_id": 0, "D_NEXT_O_ID": 1}),
                || format!("district {w}/{d}"),
            )
            .await?;
        let next = num(&dist, "D_NEXT_O_ID");
        let range = json!({"$lt": next, "$gte": next - 20});
        let mut ids = BTreeSet::new();
        let mut lines = 0u64;
        if self.schema.embeds_lines() {
            let q = json!({"O_W_ID": w, "O_D_ID": d, "O_ID": range});
            for o in self
                .db
                .find(
                    "ORDERS",
                    q,
                    json!({"_id": 0, "ORDER_LINE.OL_I_ID": 1}),
                    None,
                    0,
                )
                .await?
            {
                for l in o["ORDER_LINE"].as_array().into_iter().flatten() {
                    ids.insert(num(l, "OL_I_ID"));
                    lines += 1;
                }
            }
        } else {
            let q = json!({"OL_W_ID": w, "OL_D_ID": d, "OL_O_ID": range});
            for l in self
                .db
                .find("ORDER_LINE", q, json!({"_id": 0, "OL_I_ID": 1}), None, 0)
                .await?
            {
                ids.insert(num(&l, "OL_I_ID"));
                lines += 1;
            }
        }
        // The last 20 orders hold at least 5 lines each (clause 1.3.1),
        // every district having 3,000 orders from the load; only a
        // transaction's read is sure to see a new order with its lines.
        let want = 20 * 5;
        if self.db.txn.is_some() && next > 20 && lines < want {
            return Err(StoreError::Short {
                got: lines,
                want,
                what: format!("order lines of district {w}/{d}'s last 20 orders"),
            });
        }
        // The quantity is compared here, not in the query: SecantusDB
        // plans `S_QUANTITY: {$lt}` beside the `$in` as a collection scan.
        let q = json!({"S_W_ID": w, "S_I_ID": {"$in": ids}});
        let proj = json!({"_id": 0, "S_QUANTITY": 1});
        let stock = self.db.find("STOCK", q, proj, None, 0).await?;
        // Every item has one STOCK row per warehouse, and none is deleted.
        if (stock.len() as u64) < ids.len() as u64 {
            return Err(StoreError::Short {
                got: stock.len() as u64,
                want: ids.len() as u64,
                what: format!("stock rows of warehouse {w}'s items"),
            });
        }
        let _low = stock
            .iter()
            .filter(|s| num(s, "S_QUANTITY") < t.threshold as i64)
            .count();
        Ok(((), true))
    }
}

impl TpccConn for MongoTerminal {
    fn transactions(&self) -> Option<TxnMode> {
        Some(match self.db.txn {
            Some(_) => TxnMode::MultiDocument,
            None => TxnMode::None,
        })
    }
    async fn new_order(&mut self, t: &NewOrder) -> Result<NewOrderEnd, StoreError> {
        self.db.begin();
        let r = self.new_order_body(t).await;
        self.finish(r).await
    }
    async fn payment(&mut self, t: &Payment) -> Result<(), StoreError> {
        self.db.begin();
        let r = self.payment_body(t).await;
        self.finish(r).await
    }
    async fn order_status(&mut self, t: &OrderStatus) -> Result<(), StoreError> {
        self.db.begin();
        let r = self.order_status_body(t).await;
        self.finish(r).await
    }
    /// Every district in one transaction, as py-tpcc's default.
    async fn delivery(&mut self, t: &Delivery) -> Result<(), StoreError> {
        self.db.begin();
        let date = now();
        let mut r = Ok(((), true));
        for d in 1..=DISTRICTS {
            if let Err(e) = self.deliver(t.w_id, d, t.carrier_id, &date).await {
                r = Err(e);
                break;
            }
        }
        self.finish(r).await
    }
    async fn stock_level(&mut self, t: &StockLevel) -> Result<(), StoreError> {
        self.db.begin();
        let r = self.stock_level_body(t).await;
        self.finish(r).await
    }
}
