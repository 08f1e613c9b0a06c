//! The trade-candles document workload of write-up 000: one day of about
//! 270-byte candles with one simple and two composite secondary indexes,
//! read by ticker (a sample of 200 tickers), by time interval (10 random
//! intervals, repeated) and as all candles of a day. MongoDB documents and
//! PostgreSQL rows.

use super::config::{self, GeneratorKind, Run, WorkloadError};
use super::driver::{Timing, Worker};
use super::histo::Recorder;
use super::keys::fnv64;
use super::phases::{self, Loading, Steps};
use super::rng::Rng;
use super::stores::sql::{SqlClient, values_rows};
use super::stores::{StoreError, StoreKind};
use crate::clients::Endpoint;
use crate::clients::Param;
use crate::clients::mongodb::{MongoConn, MongoOptions};
use crate::clients::postgres::PgConn;
use crate::results::model::PhaseResult;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// Collection or table name.
pub const COLLECTION: &str = "candles";
/// Candles per insert batch in the load phase.
pub(crate) const BATCH: u64 = 500;
/// The most bytes of one candle as a JSON document (about 270).
pub(crate) const RECORD_BYTES: u64 = 300;
/// Tickers sampled for by-ticker queries.
pub(crate) const TICKER_SAMPLE: usize = 200;
/// Random intervals for interval queries.
pub(crate) const INTERVALS: usize = 10;
/// Length of one query interval.
pub(crate) const INTERVAL_SECS: i64 = 600;
/// One candle per ticker per minute.
const STEP_SECS: i64 = 60;
/// 2026-11-02 00:00:00 UTC, the first candle.
const BASE_TS: i64 = 1_793_577_600;

pub use super::config::CandleQuery;

impl CandleQuery {
    /// The most candles one query of this kind reads back from `records`.
    pub(crate) fn reply_records(self, records: u64) -> u64 {
        let l = Layout::new(records);
        match self {
            CandleQuery::ByTicker => records.div_ceil(l.tickers),
            CandleQuery::Interval => l.tickers * (INTERVAL_SECS / STEP_SECS) as u64,
            CandleQuery::Day => records.min(l.tickers * (86_400 / STEP_SECS) as u64),
        }
    }
}

/// Operation kind names.
pub(crate) const NAMES: [&str; 4] = ["BY_TICKER", "INTERVAL", "DAY", "INSERT"];

/// One trade candle.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candle {
    pub ticker: String,
    pub exchange: &'static str,
    pub period: &'static str,
    pub ts: i64,
    pub day: i64,
    pub open: f64,
    pub high: f64,
    pub low: f64,
    pub close: f64,
    pub volume: i64,
    pub trades: i64,
    pub vwap: f64,
    /// Free text (the source's trade-condition codes) bringing the record to ~270 bytes.
    pub note: String,
}

/// How candles are laid out: `tickers` interleaved, one per minute each.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub records: u64,
    pub tickers: u64,
}

impl Layout {
    pub fn new(records: u64) -> Layout {
        Layout {
            records,
            tickers: records.clamp(1, 1000),
        }
    }

    /// Ticker symbol `t`.
    pub fn ticker(t: u64) -> String {
        format!("TK{t:04}")
    }

    /// Candle number `i` (deterministic from `i`).
    pub fn candle(&self, i: u64) -> Candle {
        let t = i % self.tickers;
        let minute = (i / self.tickers) as i64;
        let ts = BASE_TS + minute * STEP_SECS;
        let h = fnv64(i);
        let base = 10.0 + (fnv64(t) % 50_000) as f64 / 100.0;
        let drift = (h % 200) as f64 / 100.0 - 1.0;
        let open = base + drift;
        let close = open + ((h >> 8) % 100) as f64 / 100.0 - 0.5;
        let high = open.max(close) + ((h >> 16) % 50) as f64 / 100.0;
        let low = open.min(close) - ((h >> 24) % 50) as f64 / 100.0;
        Candle {
            ticker: Self::ticker(t),
            exchange: "XNYS",
            period: "1m",
            ts,
            day: ts.div_euclid(86_400),
            open,
            high,
            low,
            close,
            volume: ((h >> 32) % 1_000_000) as i64,
            trades: ((h >> 40) % 5_000) as i64,
            vwap: (open + close + high + low) / 4.0,
            note: format!("{:0>24}", h % 1_000_000_007),
        }
    }

    /// Last candle's time.
    pub(crate) fn last_ts(&self) -> i64 {
        BASE_TS + ((self.records.max(1) - 1) / self.tickers) as i64 * STEP_SECS
    }

    /// Days the data spans.
    pub(crate) fn days(&self) -> Vec<i64> {
        (BASE_TS.div_euclid(86_400)..=self.last_ts().div_euclid(86_400)).collect()
    }

    /// Candles of ticker `t` the load wrote: one per minute, the last
    /// minute holding only the first `records % tickers` tickers.
    pub(crate) fn per_ticker(&self, t: u64) -> u64 {
        self.records / self.tickers + u64::from(t < self.records % self.tickers)
    }

    /// Candles the load wrote with `from <= ts < to`: every candle of the
    /// minutes in that range, candle `i` being minute `i / tickers`.
    pub(crate) fn in_range(&self, from: i64, to: i64) -> u64 {
        let minute = |ts: i64| ((ts - BASE_TS).max(0) as u64).div_ceil(STEP_SECS as u64);
        let first = minute(from).saturating_mul(self.tickers).min(self.records);
        let end = minute(to).saturating_mul(self.tickers).min(self.records);
        end.saturating_sub(first)
    }

    /// Candles the load wrote on `day` (days since the epoch).
    pub(crate) fn on_day(&self, day: i64) -> u64 {
        self.in_range(day * 86_400, (day + 1) * 86_400)
    }
}

impl Candle {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "ticker": self.ticker, "exchange": self.exchange, "period": self.period,
            "ts": self.ts, "day": self.day, "open": self.open, "high": self.high,
            "low": self.low, "close": self.close, "volume": self.volume,
            "trades": self.trades, "vwap": self.vwap, "note": self.note,
        })
    }
}

/// A store holding candles.
pub(crate) trait CandleStore: Send + Sync + 'static {
    type Conn: CandleConn;
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;
    /// Drops and recreates the collection or table with its three indexes.
    fn recreate(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// What `recreate` would delete, in words; `None` when nothing.
    fn holds_data(&self) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;
}

/// Candle operations of one connection; queries return the records read.
pub(crate) trait CandleConn: Send + 'static {
    fn insert(&mut self, batch: &[Candle]) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn by_ticker(&mut self, ticker: &str) -> impl Future<Output = Result<u64, StoreError>> + Send;
    fn interval(
        &mut self,
        from: i64,
        to: i64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
    fn day(&mut self, day: i64) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// Candles as MongoDB documents.
pub(crate) struct MongoCandles {
    pub ep: Endpoint,
    pub opts: MongoOptions,
}

impl CandleStore for MongoCandles {
    type Conn = MongoConn;
    async fn connect(&self) -> Result<MongoConn, StoreError> {
        Ok(MongoConn::connect_with(&self.ep, &self.opts).await?)
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let mut c = MongoConn::connect_with(&self.ep, &self.opts).await?;
        Ok(c.has_documents(COLLECTION).await?.then(|| {
            format!(
                "mongodb at {} holds documents in collection {}.{COLLECTION} (a load drops it)",
                self.ep.addr(),
                self.ep.database.as_deref().unwrap_or("candles")
            )
        }))
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        let mut c = MongoConn::connect_with(&self.ep, &self.opts).await?;
        c.drop_collection(COLLECTION).await?;
        c.create_index(COLLECTION, &[("ts", 1)]).await?;
        c.create_index(COLLECTION, &[("ticker", 1), ("ts", 1)])
            .await?;
        c.create_index(COLLECTION, &[("day", 1), ("ticker", 1)])
            .await?;
        Ok(())
    }
}

impl CandleConn for MongoConn {
    async fn insert(&mut self, batch: &[Candle]) -> Result<(), StoreError> {
        let docs: Vec<serde_json::Value> = batch.iter().map(Candle::json).collect();
        Ok(self.insert_json_many(COLLECTION, &docs).await?)
    }
    async fn by_ticker(&mut self, ticker: &str) -> Result<u64, StoreError> {
        Ok(self
            .count_find(COLLECTION, &serde_json::json!({"ticker": ticker}))
            .await?)
    }
    async fn interval(&mut self, from: i64, to: i64) -> Result<u64, StoreError> {
        let f = serde_json::json!({"ts": {"$gte": from, "$lt": to}});
        Ok(self.count_find(COLLECTION, &f).await?)
    }
    async fn day(&mut self, day: i64) -> Result<u64, StoreError> {
        Ok(self
            .count_find(COLLECTION, &serde_json::json!({"day": day}))
            .await?)
    }
}

/// Candles as PostgreSQL rows.
pub(crate) struct PgCandles {
    pub ep: Endpoint,
}

/// A PostgreSQL connection with the candle statements prepared.
pub(crate) struct PgCandleConn {
    conn: PgConn,
    by_ticker: usize,
    interval: usize,
    day: usize,
    /// Multi-row INSERT per batch size.
    inserts: BTreeMap<usize, usize>,
}

const PG_COLUMNS: &str =
    "ticker, exchange, period, ts, day, open, high, low, close, volume, trades, vwap, note";
/// Columns of one candle row.
pub(crate) const PG_NCOLS: usize = 13;

impl CandleStore for PgCandles {
    type Conn = PgCandleConn;
    async fn connect(&self) -> Result<PgCandleConn, StoreError> {
        let mut conn = PgConn::connect(&self.ep).await?;
        let by_ticker = conn
            .prepare(&format!("SELECT * FROM {COLLECTION} WHERE ticker = $1"))
            .await?;
        let interval = conn
            .prepare(&format!(
                "SELECT * FROM {COLLECTION} WHERE ts >= $1 AND ts < $2"
            ))
            .await?;
        let day = conn
            .prepare(&format!("SELECT * FROM {COLLECTION} WHERE day = $1"))
            .await?;
        Ok(PgCandleConn {
            conn,
            by_ticker,
            interval,
            day,
            inserts: BTreeMap::new(),
        })
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        super::stores::postgres::pg_table_rows(&self.ep, COLLECTION).await
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        let c = PgConn::connect(&self.ep).await?;
        c.batch(&format!(
            "DROP TABLE IF EXISTS {COLLECTION};
             CREATE TABLE {COLLECTION} (id BIGSERIAL PRIMARY KEY, ticker TEXT NOT NULL,
               exchange TEXT, period TEXT, ts BIGINT NOT NULL, day BIGINT NOT NULL,
               open DOUBLE PRECISION, high DOUBLE PRECISION, low DOUBLE PRECISION,
               close DOUBLE PRECISION, volume BIGINT, trades BIGINT, vwap DOUBLE PRECISION,
               note TEXT);
             CREATE INDEX {COLLECTION}_ts ON {COLLECTION} (ts);
             CREATE INDEX {COLLECTION}_ticker_ts ON {COLLECTION} (ticker, ts);
             CREATE INDEX {COLLECTION}_day_ticker ON {COLLECTION} (day, ticker);"
        ))
        .await?;
        Ok(())
    }
}

impl CandleConn for PgCandleConn {
    async fn insert(&mut self, batch: &[Candle]) -> Result<(), StoreError> {
        let n = batch.len();
        let st = match self.inserts.get(&n) {
            Some(s) => *s,
            None => {
                let rows = values_rows(n, PG_NCOLS, <PgConn as SqlClient>::mark);
                let sql = format!("INSERT INTO {COLLECTION} ({PG_COLUMNS}) VALUES {rows}");
                let s = self.conn.prepare(&sql).await?;
                self.inserts.insert(n, s);
                s
            }
        };
        let mut params = Vec::with_capacity(n * PG_NCOLS);
        for c in batch {
            params.extend([
                Param::Text(&c.ticker),
                Param::Text(c.exchange),
                Param::Text(c.period),
                Param::Int(c.ts),
                Param::Int(c.day),
                Param::Float(c.open),
                Param::Float(c.high),
                Param::Float(c.low),
                Param::Float(c.close),
                Param::Int(c.volume),
                Param::Int(c.trades),
                Param::Float(c.vwap),
                Param::Text(&c.note),
            ]);
        }
        self.conn.execute(st, &params).await?;
        Ok(())
    }
    async fn by_ticker(&mut self, ticker: &str) -> Result<u64, StoreError> {
        Ok(self
            .conn
            .query(self.by_ticker, &[Param::Text(ticker)])
            .await?)
    }
    async fn interval(&mut self, from: i64, to: i64) -> Result<u64, StoreError> {
        Ok(self
            .conn
            .query(self.interval, &[Param::Int(from), Param::Int(to)])
            .await?)
    }
    async fn day(&mut self, day: i64) -> Result<u64, StoreError> {
        Ok(self.conn.query(self.day, &[Param::Int(day)]).await?)
    }
}

/// Inserts batches of candles in order.
struct LoadWorker<C> {
    conn: C,
    layout: Layout,
    next: Arc<AtomicU64>,
    /// Candles per insert.
    size: u64,
    batch: Vec<Candle>,
}

impl<C: CandleConn> Worker for LoadWorker<C> {
    fn plan(&mut self) -> Option<usize> {
        let b = self.next.fetch_add(1, Ordering::Relaxed);
        let from = b * self.size;
        if from >= self.layout.records {
            return None;
        }
        let to = (from + self.size).min(self.layout.records);
        self.batch.clear();
        self.batch.extend((from..to).map(|i| self.layout.candle(i)));
        Some(3)
    }
    async fn exec(&mut self) -> Result<(), StoreError> {
        self.conn.insert(&self.batch).await
    }
    /// Every candle of the batch is an INSERT (so the load's throughput is
    /// in candles, like the YCSB load's in records); the latency is the
    /// batch's round trip.
    fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
        t.record(rec, self.batch.len() as u64, &r);
    }
}

/// The query sample, drawn once from the seed so every engine gets the
/// same queries in the same order. Each query carries the number of
/// candles the load wrote for it, known from the layout alone (never
/// asked of the server): an answer with fewer is truncated.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    /// Ticker symbol and its candles.
    pub tickers: Vec<(String, u64)>,
    /// `from..to` and its candles.
    pub intervals: Vec<((i64, i64), u64)>,
    /// Day and its candles.
    pub days: Vec<(i64, u64)>,
}

impl Sample {
    pub fn new(layout: &Layout, seed: u64) -> Sample {
        let mut r = Rng::new(seed, 0xCA4D1E);
        let tickers = (0..TICKER_SAMPLE)
            .map(|_| {
                let t = r.below(layout.tickers);
                (Layout::ticker(t), layout.per_ticker(t))
            })
            .collect();
        let span = (layout.last_ts() - BASE_TS).max(1) as u64;
        let intervals = (0..INTERVALS)
            .map(|_| {
                let from = BASE_TS + r.below(span) as i64;
                let to = from + INTERVAL_SECS;
                ((from, to), layout.in_range(from, to))
            })
            .collect();
        Sample {
            tickers,
            intervals,
            days: layout
                .days()
                .into_iter()
                .map(|d| (d, layout.on_day(d)))
                .collect(),
        }
    }
}

/// Runs one query kind over the sample.
struct QueryWorker<C> {
    conn: C,
    rng: Rng,
    query: CandleQuery,
    sample: Arc<Sample>,
    pick: usize,
}

impl<C> QueryWorker<C> {
    /// What the picked query asks for, in the words of a short answer's
    /// message: `candles of ticker TK0042`.
    fn describe(&self) -> String {
        let s = &*self.sample;
        match self.query {
            CandleQuery::ByTicker => format!("candles of ticker {}", s.tickers[self.pick].0),
            CandleQuery::Interval => {
                let ((a, b), _) = s.intervals[self.pick];
                format!("candles with ts in {a}..{b}")
            }
            CandleQuery::Day => format!("candles of day {}", s.days[self.pick].0),
        }
    }
}

impl<C: CandleConn> Worker for QueryWorker<C> {
    fn plan(&mut self) -> Option<usize> {
        let n = match self.query {
            CandleQuery::ByTicker => self.sample.tickers.len(),
            CandleQuery::Interval => self.sample.intervals.len(),
            CandleQuery::Day => self.sample.days.len(),
        };
        self.pick = self.rng.below(n as u64) as usize;
        Some(self.query as usize)
    }
    async fn exec(&mut self) -> Result<(), StoreError> {
        let s = &*self.sample;
        let (got, want) = match self.query {
            CandleQuery::ByTicker => {
                let (t, want) = &s.tickers[self.pick];
                (self.conn.by_ticker(t).await?, *want)
            }
            CandleQuery::Interval => {
                let ((a, b), want) = s.intervals[self.pick];
                (self.conn.interval(a, b).await?, want)
            }
            CandleQuery::Day => {
                let (d, want) = s.days[self.pick];
                (self.conn.day(d).await?, want)
            }
        };
        // More than the load wrote is not a truncation (a store may hold
        // candles of another load); fewer is, and nothing at all too.
        if got < want || got == 0 {
            Err(StoreError::Short {
                got,
                want,
                what: self.describe(),
            })
        } else {
            Ok(())
        }
    }
}

/// Runs the candles workload on the configured store.
pub async fn run(
    v: &Run,
    own: &config::Candles,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let mut ep = v.target.endpoint.clone();
    match v.target.kind {
        StoreKind::Mongodb => {
            ep.database.get_or_insert_with(|| "candles".into());
            let opts = v.target.mongo.clone();
            run_on(&MongoCandles { ep, opts }, v, own, cancel).await
        }
        StoreKind::Postgres => run_on(&PgCandles { ep }, v, own, cancel).await,
        _ => Err(GeneratorKind::Candles.not_on(&v.target)),
    }
}

async fn run_on<S: CandleStore>(
    store: &S,
    v: &Run,
    own: &config::Candles,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let layout = Layout::new(v.common.records);
    let g = Candles {
        store,
        layout,
        sample: Arc::new(Sample::new(&layout, v.common.seed)),
        query: own.queries,
    };
    phases::run(&g, v, cancel).await
}

/// The candles generator on one store.
struct Candles<'a, S> {
    store: &'a S,
    layout: Layout,
    sample: Arc<Sample>,
    /// What the measured phases query.
    query: CandleQuery,
}

fn setup(what: &str) -> impl FnOnce(StoreError) -> WorkloadError {
    let what = what.to_string();
    move |e| WorkloadError::Setup { what, source: e }
}

impl<S: CandleStore> Steps for Candles<'_, S> {
    type Loader = LoadWorker<S::Conn>;
    type Measurer = QueryWorker<S::Conn>;

    fn names(&self) -> &'static [&'static str] {
        &NAMES
    }

    async fn holds_data(&self) -> Result<Option<String>, WorkloadError> {
        let found = self.store.holds_data().await;
        found.map_err(setup("checking for existing candles"))
    }

    async fn recreate(&self) -> Result<(), WorkloadError> {
        self.store
            .recreate()
            .await
            .map_err(setup("creating candles"))
    }

    async fn loaders(&self, v: &Run) -> Result<Loading<Self::Loader>, WorkloadError> {
        let c = &v.common;
        let threads = c.load_threads.unwrap_or(v.threads[0]).max(1);
        let next = Arc::new(AtomicU64::new(0));
        let size = c.batch.unwrap_or(BATCH).max(1);
        let mut workers = Vec::new();
        for _ in 0..threads {
            workers.push(LoadWorker {
                conn: self.store.connect().await.map_err(setup("connecting"))?,
                layout: self.layout,
                next: next.clone(),
                size,
                batch: Vec::with_capacity(size as usize),
            });
        }
        let records = (c.records, size);
        Ok(Loading::records(workers, &NAMES, records, "candles:load"))
    }

    async fn measurers(&self, v: &Run, threads: u32) -> Result<Vec<Self::Measurer>, WorkloadError> {
        let c = &v.common;
        let mut workers = Vec::new();
        for i in 0..threads {
            workers.push(QueryWorker {
                conn: self.store.connect().await.map_err(setup("connecting"))?,
                rng: Rng::new(c.seed, i as u64),
                query: self.query,
                sample: self.sample.clone(),
                pick: 0,
            });
        }
        Ok(workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candles_are_about_270_bytes_and_deterministic() {
        let l = Layout::new(100_000);
        let c = l.candle(12_345);
        assert_eq!(c, l.candle(12_345));
        let size = serde_json::to_string(&c.json()).unwrap().len();
        assert!(
            (240..=RECORD_BYTES as usize).contains(&size),
            "{size} bytes"
        );
        assert!(c.low <= c.open.min(c.close) && c.high >= c.open.max(c.close));
        assert_eq!(l.candle(0).ticker, "TK0000");
        assert_eq!(l.candle(1000).ts, l.candle(0).ts + 60);
    }

    #[test]
    fn the_query_sample_has_200_tickers_and_10_intervals_inside_the_data() {
        let l = Layout::new(50_000);
        let s = Sample::new(&l, 1);
        assert_eq!(s.tickers.len(), 200);
        assert_eq!(s.intervals.len(), 10);
        assert!(
            s.intervals
                .iter()
                .all(|((a, _), _)| *a >= BASE_TS && *a <= l.last_ts())
        );
        assert!(!s.days.is_empty());
        assert_eq!(s.tickers, Sample::new(&l, 1).tickers);
    }

    #[test]
    fn the_candles_each_query_should_return_are_known_from_the_layout_alone() {
        for records in [1, 999, 2_345, 61_000] {
            let l = Layout::new(records);
            let all: Vec<Candle> = (0..records).map(|i| l.candle(i)).collect();
            let count = |f: &dyn Fn(&Candle) -> bool| all.iter().filter(|c| f(c)).count() as u64;
            for t in [0, l.tickers / 2, l.tickers - 1] {
                let name = Layout::ticker(t);
                assert_eq!(
                    l.per_ticker(t),
                    count(&|c| c.ticker == name),
                    "{records} {t}"
                );
            }
            let s = Sample::new(&l, 7);
            for ((a, b), want) in &s.intervals {
                assert_eq!(
                    *want,
                    count(&|c| c.ts >= *a && c.ts < *b),
                    "{records} {a}..{b}"
                );
            }
            for (d, want) in &s.days {
                assert_eq!(*want, count(&|c| c.day == *d), "{records} day {d}");
            }
            assert_eq!(s.days.iter().map(|d| d.1).sum::<u64>(), records);
        }
    }
}
