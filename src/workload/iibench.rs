//! iiBench (Tokutek's indexed insertion benchmark) built in: insert-only
//! into one table or collection `purchases_index` with three secondary
//! indexes, in batches, from several threads, on MongoDB, PostgreSQL and
//! MySQL/MariaDB.
//!
//! A row is iiBench's: `transactionid` (the auto-increment primary key;
//! MongoDB's server-made `_id`), `dateandtime` (the insert's time),
//! `cashregisterid` (0..1000), `customerid` (0..100000), `productid`
//! (0..10000), `price` ((random 0..500 + customerid) / 100, as
//! iibench-mongodb) and `data` (`data_length` random letters). The
//! indexes are iiBench's `marketsegment (price, customerid)`,
//! `registersegment (cashregisterid, price, customerid)` and
//! `pdc (price, dateandtime, customerid)`. Every row is an INSERT, so the
//! phase's throughput is rows/s and its per-second series shows rows/s
//! falling as the indexes outgrow the cache.

use super::config::{self, GeneratorKind, Run, WorkloadError};
use super::driver::{Timing, Worker};
use super::histo::Recorder;
use super::phases::{self, Loading, Steps};
use super::rng::Rng;
use super::stores::sql::SqlClient;
use super::stores::{StoreError, StoreKind};
use crate::clients::mongodb::{MongoConn, MongoOptions};
use crate::clients::mysql::MyConn;
use crate::clients::postgres::PgConn;
use crate::clients::{Endpoint, Param};
use crate::results::model::PhaseResult;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// The table or collection.
pub const TABLE: &str = "purchases_index";
/// Database when the URL names none (MongoDB, MySQL).
pub const DATABASE: &str = "iibench";
/// Rows per insert when the config names none (iibench-mongodb's
/// `numDocumentsPerInsert`).
pub(crate) const BATCH: u64 = 1000;
/// Longest `data` (MySQL's `VARCHAR(4000)` of iiBench's table).
pub(crate) const MAX_DATA_LENGTH: u32 = 4000;
const CASH_REGISTERS: u64 = 1000;
const CUSTOMERS: u64 = 100_000;
const PRODUCTS: u64 = 10_000;
const MAX_PRICE: f64 = 500.0;
/// Operation kind names: every row is an INSERT.
pub(crate) const NAMES: [&str; 1] = ["INSERT"];
const INSERT: usize = 0;
/// The three secondary indexes: name and columns, in order.
pub(crate) const INDEXES: [(&str, &[&str]); 3] = [
    ("marketsegment", &["price", "customerid"]),
    (
        "registersegment",
        &["cashregisterid", "price", "customerid"],
    ),
    ("pdc", &["price", "dateandtime", "customerid"]),
];
/// Columns a client binds per row (the key is the server's).
pub(crate) const SQL_NCOLS: usize = 6;
const COLUMNS: &str = "dateandtime, cashregisterid, customerid, productid, price, data";

/// The most bytes of one row with `data_length` bytes of `data`, as a
/// MongoDB document with its `_id`.
pub(crate) fn record_bytes(data_length: u32) -> u64 {
    160 + u64::from(data_length)
}

/// One iiBench row, without its server-made key.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Milliseconds since the Unix epoch.
    pub dateandtime: i64,
    pub cashregisterid: i64,
    pub customerid: i64,
    pub productid: i64,
    pub price: f64,
    pub data: String,
}

impl Row {
    /// A random row made at `now_ms`.
    pub fn random(rng: &mut Rng, now_ms: i64, data_length: u32) -> Row {
        let customerid = rng.below(CUSTOMERS);
        let data = (0..data_length)
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect();
        Row {
            dateandtime: now_ms,
            cashregisterid: rng.below(CASH_REGISTERS) as i64,
            customerid: customerid as i64,
            productid: rng.below(PRODUCTS) as i64,
            price: (rng.next_f64() * MAX_PRICE + customerid as f64) / 100.0,
            data,
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "dateandtime": self.dateandtime, "cashregisterid": self.cashregisterid,
            "customerid": self.customerid, "productid": self.productid,
            "price": self.price, "data": self.data,
        })
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A store holding iiBench rows.
pub(crate) trait IiStore: Send + Sync + 'static {
    type Conn: IiConn;
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;
    /// Drops the table and creates it with its indexes.
    fn recreate(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Creates the table with its indexes when it is missing.
    fn ensure(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// What `recreate` would delete, in words; `None` when nothing.
    fn holds_data(&self) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;
    /// The rows the table holds, read back after a load.
    fn rows(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// Inserts of one connection.
pub(crate) trait IiConn: Send + 'static {
    fn insert(&mut self, rows: &[Row]) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Rows as MongoDB documents.
pub(crate) struct MongoIi {
    pub ep: Endpoint,
    pub opts: MongoOptions,
}

impl MongoIi {
    async fn indexes(&self) -> Result<(), StoreError> {
        let mut c = MongoConn::connect_with(&self.ep, &self.opts).await?;
        for (_, cols) in INDEXES {
            let keys: Vec<(&str, i32)> = cols.iter().map(|c| (*c, 1)).collect();
            c.create_index(TABLE, &keys).await?;
        }
        Ok(())
    }
}

impl IiStore for MongoIi {
    type Conn = MongoConn;
    async fn connect(&self) -> Result<MongoConn, StoreError> {
        Ok(MongoConn::connect_with(&self.ep, &self.opts).await?)
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let mut c = MongoConn::connect_with(&self.ep, &self.opts).await?;
        Ok(c.has_documents(TABLE).await?.then(|| {
            format!(
                "mongodb at {} holds documents in collection {}.{TABLE} (a load drops it)",
                self.ep.addr(),
                self.ep.database.as_deref().unwrap_or(DATABASE)
            )
        }))
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        let mut c = MongoConn::connect_with(&self.ep, &self.opts).await?;
        c.drop_collection(TABLE).await?;
        self.indexes().await
    }
    /// `createIndexes` makes the collection and leaves existing indexes be.
    async fn ensure(&self) -> Result<(), StoreError> {
        self.indexes().await
    }
    async fn rows(&self) -> Result<u64, StoreError> {
        let mut c = MongoConn::connect_with(&self.ep, &self.opts).await?;
        let db = self.ep.database.as_deref().unwrap_or(DATABASE);
        let r = c
            .run_json(db, &serde_json::json!({ "count": TABLE }))
            .await?;
        Ok(r["n"].as_u64().unwrap_or(0))
    }
}

impl IiConn for MongoConn {
    async fn insert(&mut self, rows: &[Row]) -> Result<(), StoreError> {
        let docs: Vec<serde_json::Value> = rows.iter().map(Row::json).collect();
        Ok(self.insert_json_many(TABLE, &docs).await?)
    }
}

/// `CREATE INDEX` of the three indexes, for PostgreSQL.
fn pg_indexes() -> String {
    INDEXES
        .iter()
        .map(|(name, cols)| {
            format!(
                "CREATE INDEX IF NOT EXISTS {name} ON {TABLE} ({});",
                cols.join(", ")
            )
        })
        .collect()
}

/// PostgreSQL has no unsigned or 4-byte binding in the client, so the
/// ids are BIGINT and the price DOUBLE PRECISION.
fn pg_create() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (transactionid BIGSERIAL PRIMARY KEY,
           dateandtime TIMESTAMP NOT NULL, cashregisterid BIGINT NOT NULL,
           customerid BIGINT NOT NULL, productid BIGINT NOT NULL,
           price DOUBLE PRECISION NOT NULL, data TEXT);
         {}",
        pg_indexes()
    )
}

/// Rows in a PostgreSQL table.
pub(crate) struct PgIi {
    pub ep: Endpoint,
}

impl IiStore for PgIi {
    type Conn = SqlIiConn<PgConn>;
    async fn connect(&self) -> Result<Self::Conn, StoreError> {
        Ok(SqlIiConn::new(
            PgConn::connect(&self.ep).await?,
            "to_timestamp",
        ))
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        super::stores::postgres::pg_table_rows(&self.ep, TABLE).await
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        let c = PgConn::connect(&self.ep).await?;
        c.batch(&format!("DROP TABLE IF EXISTS {TABLE}; {}", pg_create()))
            .await?;
        Ok(())
    }
    async fn ensure(&self) -> Result<(), StoreError> {
        PgConn::connect(&self.ep).await?.batch(&pg_create()).await?;
        Ok(())
    }
    async fn rows(&self) -> Result<u64, StoreError> {
        super::stores::postgres::pg_count(&self.ep, TABLE).await
    }
}

/// Rows in a MySQL or MariaDB table, in the storage engine the URL or
/// config names.
pub(crate) struct MyIi {
    pub ep: Endpoint,
    pub engine: Option<String>,
}

impl MyIi {
    /// iiBench's own `CREATE TABLE` (iibench.py).
    fn create(&self) -> String {
        let keys: Vec<String> = INDEXES
            .iter()
            .map(|(name, cols)| format!("KEY {name} ({})", cols.join(", ")))
            .collect();
        let engine = match &self.engine {
            Some(e) => format!(" ENGINE={e}"),
            None => String::new(),
        };
        format!(
            "CREATE TABLE IF NOT EXISTS {TABLE} (transactionid BIGINT NOT NULL AUTO_INCREMENT,
               dateandtime DATETIME NOT NULL, cashregisterid INT NOT NULL,
               customerid INT NOT NULL, productid INT NOT NULL, price FLOAT NOT NULL,
               data VARCHAR({MAX_DATA_LENGTH}), PRIMARY KEY (transactionid), {}){engine}",
            keys.join(", ")
        )
    }
}

impl IiStore for MyIi {
    type Conn = SqlIiConn<MyConn>;
    async fn connect(&self) -> Result<Self::Conn, StoreError> {
        let conn = super::stores::mysql::my_connect_creating(&self.ep).await?;
        Ok(SqlIiConn::new(conn, "FROM_UNIXTIME"))
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        super::stores::mysql::my_table_rows(&self.ep, TABLE).await
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        let mut c = super::stores::mysql::my_connect_creating(&self.ep).await?;
        c.exec_text(&format!("DROP TABLE IF EXISTS {TABLE}"))
            .await?;
        c.exec_text(&self.create()).await?;
        Ok(())
    }
    async fn ensure(&self) -> Result<(), StoreError> {
        let mut c = super::stores::mysql::my_connect_creating(&self.ep).await?;
        c.exec_text(&self.create()).await?;
        Ok(())
    }
    async fn rows(&self) -> Result<u64, StoreError> {
        super::stores::mysql::my_count(&self.ep, TABLE).await
    }
}

/// A SQL connection with a multi-row INSERT prepared per batch size.
pub(crate) struct SqlIiConn<C> {
    conn: C,
    /// The SQL function from Unix seconds to a timestamp.
    from_unix: &'static str,
    inserts: BTreeMap<usize, usize>,
}

impl<C: SqlClient> SqlIiConn<C> {
    fn new(conn: C, from_unix: &'static str) -> Self {
        SqlIiConn {
            conn,
            from_unix,
            inserts: BTreeMap::new(),
        }
    }
}

/// `INSERT INTO purchases_index (...) VALUES (f(m1), m2, ...), ...` of
/// `rows` rows, `from_unix` turning Unix seconds into a timestamp.
fn insert_sql(rows: usize, mark: fn(usize) -> String, from_unix: &str) -> String {
    let values: Vec<String> = (0..rows)
        .map(|r| {
            let m: Vec<String> = (1..=SQL_NCOLS).map(|c| mark(r * SQL_NCOLS + c)).collect();
            format!("({from_unix}({}), {})", m[0], m[1..].join(", "))
        })
        .collect();
    format!(
        "INSERT INTO {TABLE} ({COLUMNS}) VALUES {}",
        values.join(", ")
    )
}

impl<C: SqlClient> IiConn for SqlIiConn<C> {
    async fn insert(&mut self, rows: &[Row]) -> Result<(), StoreError> {
        let n = rows.len();
        let st = match self.inserts.get(&n) {
            Some(s) => *s,
            None => {
                let sql = insert_sql(n, C::mark, self.from_unix);
                let s = self.conn.prepare(&sql).await?;
                self.inserts.insert(n, s);
                s
            }
        };
        let mut params = Vec::with_capacity(n * SQL_NCOLS);
        for r in rows {
            params.extend([
                Param::Float(r.dateandtime as f64 / 1000.0),
                Param::Int(r.cashregisterid),
                Param::Int(r.customerid),
                Param::Int(r.productid),
                Param::Float(r.price),
                Param::Text(&r.data),
            ]);
        }
        self.conn.execute(st, &params).await?;
        Ok(())
    }
}

/// Inserts batches of random rows; in a load, until `rows` are claimed.
struct InsertWorker<C> {
    conn: C,
    rng: Rng,
    /// Batches claimed so far over every worker, and the most rows (a
    /// load's); a measured phase's driver counts its own.
    claimed: Option<(Arc<AtomicU64>, u64)>,
    size: u64,
    data_length: u32,
    batch: Vec<Row>,
}

impl<C: IiConn> Worker for InsertWorker<C> {
    fn plan(&mut self) -> Option<usize> {
        let mut n = self.size;
        if let Some((next, rows)) = &self.claimed {
            let from = next.fetch_add(1, Ordering::Relaxed) * self.size;
            if from >= *rows {
                return None;
            }
            n = self.size.min(rows - from);
        }
        let now = now_ms();
        self.batch.clear();
        for _ in 0..n {
            self.batch
                .push(Row::random(&mut self.rng, now, self.data_length));
        }
        Some(INSERT)
    }
    async fn exec(&mut self) -> Result<(), StoreError> {
        self.conn.insert(&self.batch).await
    }
    /// Every row of the batch is an INSERT: the throughput is rows/s.
    fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
        t.record(rec, self.batch.len() as u64, &r);
    }
}

/// Runs iiBench on the configured store.
pub async fn run(
    v: &Run,
    own: &config::Iibench,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let mut ep = v.target.endpoint.clone();
    match v.target.kind {
        StoreKind::Mongodb => {
            ep.database.get_or_insert_with(|| DATABASE.into());
            let opts = v.target.mongo.clone();
            run_on(&MongoIi { ep, opts }, v, own, cancel).await
        }
        StoreKind::Postgres => run_on(&PgIi { ep }, v, own, cancel).await,
        StoreKind::Mysql => {
            ep.database.get_or_insert_with(|| DATABASE.into());
            let engine = v.common.engine.clone().or(v.target.engine.clone());
            run_on(&MyIi { ep, engine }, v, own, cancel).await
        }
        _ => Err(GeneratorKind::Iibench.not_on(&v.target)),
    }
}

async fn run_on<S: IiStore>(
    store: &S,
    v: &Run,
    own: &config::Iibench,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let g = Iibench {
        store,
        size: v.common.batch.unwrap_or(BATCH).max(1),
        data_length: own.data_length,
    };
    phases::run(&g, v, cancel).await
}

/// The iiBench generator on one store.
struct Iibench<'a, S> {
    store: &'a S,
    /// Rows per insert, in the load and in the measured phases.
    size: u64,
    data_length: u32,
}

fn setup(what: &str) -> impl FnOnce(StoreError) -> WorkloadError {
    let what = what.to_string();
    move |e| WorkloadError::Setup { what, source: e }
}

impl<S: IiStore> Iibench<'_, S> {
    /// `n` insert workers; `claimed` shares the load's rows among them.
    async fn workers(
        &self,
        n: u32,
        seed: (u64, u64),
        claimed: Option<(Arc<AtomicU64>, u64)>,
    ) -> Result<Vec<InsertWorker<S::Conn>>, WorkloadError> {
        let mut workers = Vec::new();
        for i in 0..n {
            workers.push(InsertWorker {
                conn: self.store.connect().await.map_err(setup("connecting"))?,
                rng: Rng::new(seed.0, seed.1 + i as u64),
                claimed: claimed.clone(),
                size: self.size,
                data_length: self.data_length,
                batch: Vec::with_capacity(self.size as usize),
            });
        }
        Ok(workers)
    }
}

impl<S: IiStore> Steps for Iibench<'_, S> {
    type Loader = InsertWorker<S::Conn>;
    type Measurer = InsertWorker<S::Conn>;

    fn names(&self) -> &'static [&'static str] {
        &NAMES
    }

    async fn holds_data(&self) -> Result<Option<String>, WorkloadError> {
        let found = self.store.holds_data().await;
        found.map_err(setup("checking for existing rows"))
    }

    async fn recreate(&self) -> Result<(), WorkloadError> {
        let done = self.store.recreate().await;
        done.map_err(setup("creating purchases_index"))
    }

    async fn loaders(&self, v: &Run) -> Result<Loading<Self::Loader>, WorkloadError> {
        let c = &v.common;
        let threads = c.load_threads.unwrap_or(v.threads[0]).max(1);
        let claimed = Some((Arc::new(AtomicU64::new(0)), c.records));
        let workers = self.workers(threads, (c.seed, 0x11B_0000), claimed).await?;
        let records = (c.records, self.size);
        Ok(Loading::records(workers, &NAMES, records, "iibench:load"))
    }

    /// The load is accepted only when its rows are there, read back.
    async fn accept_load(&self, load: &mut PhaseResult) -> Result<bool, WorkloadError> {
        let rows = self.store.rows().await;
        let rows = rows.map_err(setup("counting the rows loaded"))?;
        let inserted = load.ops.get("INSERT").map_or(0, |o| o.count);
        if rows < inserted {
            load.status = crate::results::model::PhaseStatus::Failed {
                reason: format!("the load inserted {inserted} rows, but {TABLE} holds {rows}"),
            };
            return Ok(false);
        }
        Ok(true)
    }

    async fn prepare(&self) -> Result<(), WorkloadError> {
        let done = self.store.ensure().await;
        done.map_err(setup("creating purchases_index"))
    }

    async fn measurers(&self, v: &Run, threads: u32) -> Result<Vec<Self::Measurer>, WorkloadError> {
        self.workers(threads, (v.common.seed, 0), None).await
    }

    fn records_per_op(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_iibenchs_ranges_and_data_length() {
        let mut rng = Rng::new(1, 2);
        for _ in 0..1000 {
            let r = Row::random(&mut rng, 5, 12);
            assert!((0..1000).contains(&r.cashregisterid), "{r:?}");
            assert!((0..100_000).contains(&r.customerid), "{r:?}");
            assert!((0..10_000).contains(&r.productid), "{r:?}");
            let base = r.customerid as f64 / 100.0;
            assert!(r.price >= base && r.price < base + 5.0, "{r:?}");
            assert_eq!(r.data.len(), 12);
            assert_eq!(r.dateandtime, 5);
            let bytes = serde_json::to_string(&r.json()).unwrap().len() as u64;
            assert!(bytes + 30 <= record_bytes(12), "{bytes} bytes");
        }
    }

    #[test]
    fn the_sql_insert_converts_the_time_and_numbers_every_placeholder() {
        let mark = <PgConn as SqlClient>::mark;
        assert_eq!(
            insert_sql(2, mark, "to_timestamp"),
            "INSERT INTO purchases_index (dateandtime, cashregisterid, customerid, productid, \
             price, data) VALUES (to_timestamp($1), $2, $3, $4, $5, $6), \
             (to_timestamp($7), $8, $9, $10, $11, $12)"
        );
    }
}
