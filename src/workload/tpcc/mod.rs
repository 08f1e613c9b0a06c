//! TPC-C, built in: the nine tables at the specification's cardinalities
//! per warehouse, the five transactions in the standard mix (45/43/4/4/4)
//! with no keying or think time (as py-tpcc runs them), one terminal per
//! thread, and consistency conditions 1 to 4 checked after every measured
//! phase. The phase's headline is tpmC: NEW ORDER transactions per minute
//! (the 1% that roll back by design included, as the specification counts
//! them; `NEW_ORDER_ROLLBACK` shows how many).
//!
//! - `random`: NURand, last names, TPC-C's strings;
//! - `schema`: the tables and their SQL DDL;
//! - `loader`: the initial database, as jobs for loader tasks;
//! - `txn`: the transactions' inputs, the mix, the store trait;
//! - `sql`: PostgreSQL and MySQL/MariaDB: tables and load;
//! - `sql_terminal`: their transactions;
//! - `mongo`: MongoDB, in py-tpcc's document schema;
//! - `check`: the consistency conditions.

pub mod check;
pub mod loader;
pub mod mongo;
pub mod random;
pub mod schema;
pub mod sql;
pub mod sql_terminal;
pub mod txn;

use super::config::{self, GeneratorKind, Run, WorkloadError};
use super::driver::{self, Timing, Worker};
use super::histo::Recorder;
use super::phases::{self, Loading, Steps};
use super::stores::{StoreError, StoreKind};
use crate::clients::ClientError;
use crate::model::{DocumentSchema, MongoTpccMode};
use crate::results::model::{Headline, PhaseResult, PhaseStatus};
use loader::{Job, Rows};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;
use txn::{Kind, NewOrderEnd, Terminal, TpccConn};

/// Items (and stock rows per warehouse).
pub(crate) const ITEMS: u64 = 100_000;
/// Districts per warehouse.
pub(crate) const DISTRICTS: u64 = 10;
/// Customers (and initial orders) per district.
pub(crate) const CUSTOMERS: u64 = 3000;
/// Initial orders per district.
pub const ORDERS: u64 = 3000;
/// The first initial order still undelivered (a new order): 2101..3000.
pub(crate) const NEW_ORDERS_FROM: u64 = 2101;
pub use super::config::MAX_WAREHOUSES;

/// Operation kinds: the five transactions, then the rolled-back NEW
/// ORDERs and the transactions run again after a deadlock (both counted
/// inside the transactions, not again in the totals).
pub(crate) const NAMES: [&str; 7] = [
    "NEW_ORDER",
    "PAYMENT",
    "ORDER_STATUS",
    "DELIVERY",
    "STOCK_LEVEL",
    "NEW_ORDER_ROLLBACK",
    "RETRIED",
];
const ROLLBACK: usize = 5;
const RETRIED: usize = 6;
/// Operation kind of the load: rows inserted.
const LOAD_NAMES: [&str; 1] = ["INSERT"];
/// How long a terminal tries again a transaction the server broke off
/// (deadlock, serialization, write conflict) before it counts as failed.
/// MongoDB fails a write to a document another open transaction wrote,
/// where SQL engines wait for its lock: terminals of one warehouse collide
/// often there (two DELIVERYs always do, and the later one loses until the
/// earlier one commits, which takes seconds on a slow server), so the
/// tries are bounded by time, not by count, and spaced out.
const RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(30);
/// The longest pause before the first retry, doubled at each one...
const BACKOFF_MS: u64 = 2;
/// ...up to this.
const BACKOFF_MAX_MS: u64 = 500;
/// The most bytes a load job holds per row, on average (for the bound on
/// loader threads).
pub(crate) const LOAD_ROW_BYTES: u64 = 400;
/// The most rows one load job holds (a district's orders and lines).
pub(crate) const LOAD_JOB_ROWS: u64 = 36_000;

/// A store holding TPC-C's tables or collections.
pub trait TpccStore: Send + Sync + 'static {
    type Conn: TpccConn;
    type Loader: TpccLoader;
    /// A terminal's connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;
    /// A loader's connection.
    fn loader(&self) -> impl Future<Output = Result<Self::Loader, StoreError>> + Send;
    /// What `recreate` would delete, in words; `None` when nothing.
    fn holds_data(&self) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;
    /// Drops and creates the tables (or collections) and their indexes.
    fn recreate(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// The consistency conditions that do not hold, in words.
    fn check(&self) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;
    /// Rows (documents) per table.
    fn data_rows(
        &self,
    ) -> impl Future<Output = Result<BTreeMap<&'static str, u64>, StoreError>> + Send;
    /// py-tpcc's document schema, for a MongoDB store; `None` for the SQL
    /// stores, whose schema is TPC-C's relational one.
    fn schema(&self) -> Option<DocumentSchema> {
        None
    }
    /// Ends what the terminals of a phase that ended left on the server:
    /// MongoDB's logical sessions (`endSessions`), which it would
    /// otherwise keep until they time out. Nothing on the SQL stores.
    fn end_sessions(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        async { Ok(()) }
    }
}

/// A loader's connection.
pub trait TpccLoader: Send + 'static {
    /// Inserts the rows of one load job (several tables).
    fn insert(&mut self, rows: &[Rows]) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Takes load jobs in turn and inserts their rows.
struct LoadWorker<L> {
    conn: L,
    jobs: Arc<[Job]>,
    next: Arc<AtomicUsize>,
    seed: u64,
    rows: Vec<Rows>,
}

impl<L: TpccLoader> Worker for LoadWorker<L> {
    fn plan(&mut self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let job = *self.jobs.get(i)?;
        self.rows = loader::generate(job, self.seed);
        Some(0)
    }
    async fn exec(&mut self) -> Result<(), StoreError> {
        self.conn.insert(&self.rows).await
    }
    /// Every row is an INSERT; the latency is the job's.
    fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
        let n = self.rows.iter().map(|r| r.rows.len() as u64).sum();
        t.record(rec, n, &r);
    }
}

/// One terminal: draws a transaction, runs it (again after a deadlock).
struct TerminalWorker<C> {
    conn: C,
    term: Terminal,
    kind: Kind,
    rolled_back: bool,
    retries: u32,
}

impl<C: TpccConn> TerminalWorker<C> {
    async fn once(&mut self) -> Result<(), StoreError> {
        let t = &self.term;
        match self.kind {
            Kind::NewOrder => {
                let end = self.conn.new_order(&t.new_order).await?;
                self.rolled_back = end == NewOrderEnd::RolledBack;
                Ok(())
            }
            Kind::Payment => self.conn.payment(&t.payment).await,
            Kind::OrderStatus => self.conn.order_status(&t.order_status).await,
            Kind::Delivery => self.conn.delivery(&t.delivery).await,
            Kind::StockLevel => self.conn.stock_level(&t.stock_level).await,
        }
    }
}

impl<C: TpccConn> Worker for TerminalWorker<C> {
    fn plan(&mut self) -> Option<usize> {
        self.kind = self.term.draw();
        Some(self.kind as usize)
    }
    async fn exec(&mut self) -> Result<(), StoreError> {
        self.rolled_back = false;
        self.retries = 0;
        let t0 = std::time::Instant::now();
        loop {
            match self.once().await {
                Err(StoreError::Client(e)) if e.is_conflict() && t0.elapsed() < RETRY_FOR => {
                    self.retries += 1;
                    // A random pause, longer after each try, so that
                    // terminals colliding on one row (MongoDB's write
                    // conflicts on W_YTD) do not collide again at once.
                    let cap = (BACKOFF_MS << self.retries.min(16)).min(BACKOFF_MAX_MS);
                    let ms = self.term.rng.uniform(0, cap);
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                }
                Err(StoreError::Client(ClientError::Conflict { engine, addr, msg })) => {
                    let msg = format!(
                        "{msg} (still, after {} tries in {:.0}s)",
                        self.retries + 1,
                        t0.elapsed().as_secs_f64()
                    );
                    return Err(StoreError::Client(ClientError::Conflict {
                        engine,
                        addr,
                        msg,
                    }));
                }
                r => return r,
            }
        }
    }
    fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
        let ok = r.is_ok();
        t.record(rec, 1, &r);
        if ok && self.rolled_back {
            t.record_inner(rec, ROLLBACK, t.sent, t.done, Ok(()));
        }
        for _ in 0..self.retries {
            t.record_inner(rec, RETRIED, t.sent, t.done, Ok(()));
        }
    }
}

/// NEW ORDER transactions per minute of a phase.
pub(crate) fn tpmc(r: &PhaseResult) -> f64 {
    let n = r.ops.get(NAMES[0]).map_or(0, |o| o.count);
    if r.duration_s > 0.0 {
        n as f64 * 60.0 / r.duration_s
    } else {
        0.0
    }
}

/// Runs TPC-C on the configured store.
pub async fn run(
    v: &Run,
    own: &config::Tpcc,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let ep = v.target.endpoint.clone();
    match v.target.kind {
        StoreKind::Postgres => {
            let s = sql::SqlTpcc {
                ep,
                dialect: schema::Dialect::Postgres,
                engine: None,
            };
            run_on(&s, v, own, cancel).await
        }
        StoreKind::Mysql => {
            let s = sql::SqlTpcc {
                ep,
                dialect: schema::Dialect::Mysql,
                engine: v.common.engine.clone().or(v.target.engine.clone()),
            };
            run_on(&s, v, own, cancel).await
        }
        StoreKind::Mongodb => {
            let s = mongo::MongoTpcc::new(
                ep,
                v.target.mongo.clone(),
                DocumentSchema::from_denormalize(own.denormalize),
            );
            run_on(&s, v, own, cancel).await
        }
        _ => Err(GeneratorKind::Tpcc.not_on(&v.target)),
    }
}

async fn run_on<S: TpccStore>(
    store: &S,
    v: &Run,
    own: &config::Tpcc,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let g = Tpcc {
        store,
        ws: u64::from(own.warehouses),
    };
    phases::run(&g, v, cancel).await
}

/// The TPC-C generator on one store.
struct Tpcc<'a, S> {
    store: &'a S,
    /// Warehouses loaded and spread over the terminals.
    ws: u64,
}

fn setup(what: &str) -> impl FnOnce(StoreError) -> WorkloadError {
    let what = what.to_string();
    move |e| WorkloadError::Setup { what, source: e }
}

impl<S: TpccStore> Steps for Tpcc<'_, S> {
    type Loader = LoadWorker<S::Loader>;
    type Measurer = TerminalWorker<S::Conn>;

    fn names(&self) -> &'static [&'static str] {
        &NAMES
    }

    async fn holds_data(&self) -> Result<Option<String>, WorkloadError> {
        let found = self.store.holds_data().await;
        found.map_err(setup("checking for existing TPC-C tables"))
    }

    async fn recreate(&self) -> Result<(), WorkloadError> {
        let done = self.store.recreate().await;
        done.map_err(setup("creating the TPC-C tables"))
    }

    /// One job per table part of each warehouse, claimed in turn; the
    /// progress bar counts rows.
    async fn loaders(&self, v: &Run) -> Result<Loading<Self::Loader>, WorkloadError> {
        let c = &v.common;
        let threads = c.load_threads.unwrap_or(v.threads[0]).max(1);
        let jobs: Arc<[Job]> = loader::jobs(self.ws).into();
        let next = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::new();
        for _ in 0..threads {
            workers.push(LoadWorker {
                conn: self.store.loader().await.map_err(setup("connecting"))?,
                jobs: jobs.clone(),
                next: next.clone(),
                seed: c.seed,
                rows: Vec::new(),
            });
        }
        Ok(Loading {
            workers,
            names: &LOAD_NAMES,
            ops: jobs.len() as u64,
            records: loader::planned_rows(self.ws),
            label: "tpcc:load",
        })
    }

    /// The load, with the document schema it wrote on MongoDB.
    async fn load(
        &self,
        v: &Run,
        cancel: &CancellationToken,
    ) -> Result<PhaseResult, WorkloadError> {
        let mut r = phases::load_phase(v, self.loaders(v).await?, cancel).await;
        r.mongo_tpcc = self.store.schema().map(|schema| MongoTpccMode {
            schema,
            transactions: None,
        });
        Ok(r)
    }

    async fn measurers(&self, v: &Run, threads: u32) -> Result<Vec<Self::Measurer>, WorkloadError> {
        let mut workers = Vec::new();
        for i in 0..threads {
            workers.push(TerminalWorker {
                conn: self.store.connect().await.map_err(setup("connecting"))?,
                term: Terminal::new(v.common.seed, i as u64, self.ws),
                kind: Kind::NewOrder,
                rolled_back: false,
                retries: 0,
            });
        }
        Ok(workers)
    }

    /// A measured phase with tpmC as its headline, checked against
    /// TPC-C's consistency conditions afterwards.
    async fn measure(
        &self,
        v: &Run,
        threads: u32,
        stop: driver::Stop,
        cancel: &CancellationToken,
    ) -> Result<PhaseResult, WorkloadError> {
        let workers = self.measurers(v, threads).await?;
        // Every terminal of a server runs them the same way.
        let mode = self.store.schema().map(|schema| MongoTpccMode {
            schema,
            transactions: workers.first().and_then(|w| w.conn.transactions()),
        });
        let mut r = phases::measured_phase(v, workers, &NAMES, (stop, 1), cancel).await;
        r.headline = Some(Headline::tpmc(tpmc(&r)));
        r.mongo_tpcc = mode;
        // The phase's result stands either way: a server that missed
        // this drops the sessions after its session timeout.
        if let Err(e) = self.store.end_sessions().await {
            eprintln!("warning: ending the terminals' sessions: {e}");
        }
        let checked = self.store.check().await;
        invalidate(&mut r, checked);
        Ok(r)
    }
}

/// Marks `r` invalid when the consistency conditions failed or could not
/// be checked.
fn invalidate(r: &mut PhaseResult, checked: Result<Vec<String>, StoreError>) {
    let reason = match checked {
        Ok(v) if v.is_empty() => return,
        Ok(v) => format!("TPC-C consistency check failed: {}", v.join("; ")),
        Err(e) => format!("TPC-C consistency could not be checked: {e}"),
    };
    r.status = match std::mem::replace(&mut r.status, PhaseStatus::Ok) {
        PhaseStatus::Ok | PhaseStatus::Invalid { .. } => PhaseStatus::Invalid { reason },
        PhaseStatus::Failed { reason: first } => PhaseStatus::Failed {
            reason: format!("{first}; {reason}"),
        },
        PhaseStatus::Oom { reason: first } => PhaseStatus::Oom {
            reason: format!("{first}; {reason}"),
        },
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::OpStats;

    /// A phase of `secs` seconds with `new_orders` NEW ORDERs.
    fn phase(secs: f64, new_orders: u64) -> PhaseResult {
        let mut ops = BTreeMap::new();
        ops.insert(
            "NEW_ORDER".to_string(),
            OpStats {
                count: new_orders,
                ..Default::default()
            },
        );
        PhaseResult {
            name: "run".into(),
            workload: "tpcc".into(),
            threads: 1,
            duration_s: secs,
            total_ops: new_orders,
            total_errors: 0,
            throughput: new_orders as f64 / secs,
            tool_ops_per_sec: None,
            headline: None,
            mongo_tpcc: None,
            ops,
            series: Vec::new(),
            status: PhaseStatus::Ok,
            raw_outputs: Vec::new(),
            tool_env: None,
        }
    }

    #[test]
    fn tpmc_is_new_orders_per_minute() {
        assert_eq!(tpmc(&phase(30.0, 450)), 900.0);
    }

    #[test]
    fn failed_checks_invalidate_an_ok_phase_and_add_to_a_failed_ones_reason() {
        let mut r = phase(1.0, 1);
        invalidate(&mut r, Ok(vec![]));
        assert_eq!(r.status, PhaseStatus::Ok);
        invalidate(&mut r, Ok(vec!["condition 1: x".into()]));
        assert!(
            matches!(&r.status, PhaseStatus::Invalid { reason } if reason.contains("condition 1: x"))
        );
        r.status = PhaseStatus::Failed {
            reason: "interrupted".into(),
        };
        invalidate(&mut r, Ok(vec!["condition 4: y".into()]));
        assert!(
            matches!(&r.status, PhaseStatus::Failed { reason } if reason.starts_with("interrupted; ") && reason.contains("condition 4"))
        );
    }
}
