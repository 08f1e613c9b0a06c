//! YCSB core workloads: the load phase and the measured phases, on any store.

use super::clock::Instant;
use super::config::{self, Run, WorkloadError};
use super::dist::KeyChooser;
use super::driver::{Stop, Timing, Worker};
use super::histo::Recorder;
use super::keys::{InsertOrder, KeyFormat, ValuePool, field_names};
use super::mix::{Mix, OpKind};
use super::phases::{self, Loading, Steps};
use super::rng::Rng;
use super::stores::{Batch, Schema, Store, StoreConn, StoreError, Values};
use crate::results::model::PhaseResult;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Operation kind names, indexed by `OpKind as usize`.
pub(crate) const NAMES: [&str; 5] = ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"];

/// The schema of YCSB's records, in MySQL storage engine `engine`.
pub fn schema(y: &config::Ycsb, engine: Option<&str>) -> Schema {
    Schema {
        fields: field_names(y.field_count).into(),
        field_length: y.field_length,
        engine: engine.map(str::to_string),
    }
}

/// Highest record number below which every insert has been acknowledged,
/// so reads never ask for a record still being inserted (YCSB's
/// `AcknowledgedCounterGenerator`).
#[derive(Debug)]
pub struct AckCounter {
    limit: AtomicU64,
    pending: Mutex<BTreeSet<u64>>,
}

impl AckCounter {
    pub fn new(start: u64) -> AckCounter {
        AckCounter {
            limit: AtomicU64::new(start),
            pending: Mutex::new(BTreeSet::new()),
        }
    }

    /// Records that can be read now.
    #[inline]
    pub fn count(&self) -> u64 {
        self.limit.load(Ordering::Acquire)
    }

    /// Record `n` was inserted (or its insert failed: either way it is done).
    pub fn ack(&self, n: u64) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.insert(n);
        let mut l = self.limit.load(Ordering::Acquire);
        while p.remove(&l) {
            l += 1;
        }
        self.limit.store(l, Ordering::Release);
    }
}

/// What every worker of a phase shares (read-only but for two counters).
pub struct Shared {
    pub keys: KeyFormat,
    pub pool: ValuePool,
    pub mix: Mix,
    pub field_count: usize,
    pub max_scan: u64,
    pub acked: AckCounter,
    pub next_insert: AtomicU64,
    /// Scans whose answer size is known, when it is: see [`ScanCheck`].
    pub scan_check: Option<ScanCheck>,
}

/// When a scan's answer size is known from what the load wrote, so that
/// a shorter answer is a truncated one. Only with ordered keys (`user` +
/// the record number) on a store that scans in key order (SQL tables,
/// MongoDB's `_id`): a scan of `len` from record `n` then reads records
/// `n..n+len` when all of them were loaded and their keys have as many
/// digits as `n`'s (so that each sorts after `n`'s). With hashed keys the
/// count after a start key depends on every loaded key's hash, which the
/// generator does not keep sorted; redis scans a sorted set scored by
/// the keys' Java hash, not in key order: neither is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanCheck {
    /// Records `0..loaded` were loaded.
    pub loaded: u64,
    /// Keys are zero-padded to this many digits.
    pub padding: usize,
}

impl ScanCheck {
    /// The records a scan of `len` from record `n` must return, if known.
    pub fn want(&self, n: u64, len: u64) -> Option<u64> {
        let digits = |x: u64| (x.checked_ilog10().unwrap_or(0) as usize + 1).max(self.padding);
        let last = n.checked_add(len)?.checked_sub(1)?;
        (last < self.loaded && digits(n) == digits(last)).then_some(len)
    }
}

#[derive(Debug, Clone, Copy)]
enum Planned {
    Read,
    Update { field: usize, off: usize },
    Insert { n: u64 },
    Scan { len: usize, want: Option<u64> },
    Rmw { field: usize, off: usize },
}

/// One connection running the measured mix.
pub(crate) struct YcsbWorker<C> {
    conn: C,
    rng: Rng,
    chooser: KeyChooser,
    shared: Arc<Shared>,
    key: String,
    offsets: Vec<usize>,
    op: Planned,
    /// The last read-modify-write: when its read finished, and whether it
    /// succeeded (the update runs only after a successful read).
    rmw_read: (Instant, bool),
}

impl<C: StoreConn> YcsbWorker<C> {
    pub fn new(conn: C, rng: Rng, chooser: KeyChooser, shared: Arc<Shared>) -> Self {
        let fc = shared.field_count;
        YcsbWorker {
            conn,
            rng,
            chooser,
            shared,
            key: String::with_capacity(32),
            offsets: vec![0; fc],
            op: Planned::Read,
            rmw_read: (Instant::now(), false),
        }
    }
}

impl<C: StoreConn> Worker for YcsbWorker<C> {
    #[inline]
    fn plan(&mut self) -> Option<usize> {
        let sh = &*self.shared;
        let kind = sh.mix.next(&mut self.rng);
        if kind == OpKind::Insert {
            let n = sh.next_insert.fetch_add(1, Ordering::Relaxed);
            sh.keys.write(n, &mut self.key);
            for o in self.offsets.iter_mut() {
                *o = sh.pool.offset(&mut self.rng);
            }
            self.op = Planned::Insert { n };
            return Some(kind as usize);
        }
        let n = self.chooser.next(&mut self.rng, sh.acked.count());
        sh.keys.write(n, &mut self.key);
        self.op = match kind {
            OpKind::Read => Planned::Read,
            OpKind::Update => Planned::Update {
                field: self.rng.below(sh.field_count as u64) as usize,
                off: sh.pool.offset(&mut self.rng),
            },
            OpKind::Scan => {
                let len = 1 + self.rng.below(sh.max_scan);
                Planned::Scan {
                    len: len as usize,
                    want: sh.scan_check.and_then(|c| c.want(n, len)),
                }
            }
            _ => Planned::Rmw {
                field: self.rng.below(sh.field_count as u64) as usize,
                off: sh.pool.offset(&mut self.rng),
            },
        };
        Some(kind as usize)
    }

    async fn exec(&mut self) -> Result<(), StoreError> {
        let sh = &*self.shared;
        match self.op {
            Planned::Read => self.conn.read(&self.key).await,
            Planned::Update { field, off } => {
                self.conn.update(&self.key, field, sh.pool.at(off)).await
            }
            Planned::Insert { n } => {
                let values = Values {
                    pool: &sh.pool,
                    offsets: &self.offsets,
                };
                let r = self.conn.insert(&self.key, &values).await;
                sh.acked.ack(n);
                r
            }
            Planned::Scan { len, want } => {
                let got = self.conn.scan(&self.key, len).await?;
                match want {
                    Some(want) if got < want => Err(StoreError::Short {
                        got,
                        want,
                        what: format!("records scanning from {}", self.key),
                    }),
                    _ => Ok(()),
                }
            }
            Planned::Rmw { field, off } => {
                let read = self.conn.read(&self.key).await;
                self.rmw_read = (Instant::now(), read.is_ok());
                read?;
                self.conn.update(&self.key, field, sh.pool.at(off)).await
            }
        }
    }

    /// A read-modify-write is recorded under its kind, and its read and
    /// update under READ and UPDATE too, as YCSB's `DBWrapper` measures
    /// every call: workload F's READ count is plain reads plus RMWs.
    #[inline]
    fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
        if let Planned::Rmw { .. } = self.op {
            let (mid, read_ok) = self.rmw_read;
            let read = OpKind::Read as usize;
            if read_ok {
                t.record_inner(rec, read, t.sent, mid, Ok(()));
                t.record_inner(
                    rec,
                    OpKind::Update as usize,
                    mid,
                    t.done,
                    r.as_ref().map(|_| ()),
                );
            } else if let Err(e) = &r {
                t.record_inner(rec, read, t.sent, mid, Err(e));
            }
        }
        t.record(rec, 1, &r);
    }
}

/// One connection inserting records in the load phase: `size` records
/// at a time from a shared counter, one insert each when `size` is 1, one
/// batch otherwise. Record `n`'s values depend on the seed and `n` only,
/// so every batch size and thread count writes the same data.
pub(crate) struct LoadWorker<C> {
    conn: C,
    shared: Arc<Shared>,
    next: Arc<AtomicU64>,
    end: u64,
    size: u64,
    /// Keys of the current batch (`len` of them in use).
    keys: Vec<String>,
    len: usize,
    /// Value offsets of the current batch, record after record.
    offsets: Vec<usize>,
}

impl<C: StoreConn> LoadWorker<C> {
    fn new(conn: C, shared: Arc<Shared>, next: Arc<AtomicU64>, end: u64, size: u64) -> Self {
        let fc = shared.field_count;
        LoadWorker {
            conn,
            shared,
            next,
            end,
            size,
            keys: vec![String::new(); size as usize],
            len: 0,
            offsets: vec![0; size as usize * fc],
        }
    }
}

impl<C: StoreConn> Worker for LoadWorker<C> {
    fn plan(&mut self) -> Option<usize> {
        let from = self.next.fetch_add(self.size, Ordering::Relaxed);
        if from >= self.end {
            return None;
        }
        let to = (from + self.size).min(self.end);
        let sh = &*self.shared;
        let fc = sh.field_count;
        self.len = (to - from) as usize;
        for (i, n) in (from..to).enumerate() {
            sh.keys.write(n, &mut self.keys[i]);
            sh.pool.record(n, &mut self.offsets[i * fc..(i + 1) * fc]);
        }
        Some(OpKind::Insert as usize)
    }

    async fn exec(&mut self) -> Result<(), StoreError> {
        let sh = &*self.shared;
        let fc = sh.field_count;
        if self.size == 1 {
            let values = Values {
                pool: &sh.pool,
                offsets: &self.offsets[..fc],
            };
            return self.conn.insert(&self.keys[0], &values).await;
        }
        let batch = Batch {
            keys: &self.keys[..self.len],
            pool: &sh.pool,
            offsets: &self.offsets[..self.len * fc],
        };
        self.conn.insert_batch(&batch).await
    }

    /// A batch is `len` INSERT operations (or errors) and one latency
    /// measurement, the round trip that carried them.
    #[inline]
    fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
        t.record(rec, self.len as u64, &r);
    }
}

fn shared(v: &Run, y: &config::Ycsb) -> Arc<Shared> {
    let records = v.common.records;
    Arc::new(Shared {
        keys: KeyFormat {
            order: y.insert_order,
            padding: y.key_padding,
        },
        pool: ValuePool::new(y.field_length as usize, v.common.seed),
        mix: y.mix.clone(),
        field_count: y.field_count as usize,
        max_scan: y.max_scan_length,
        acked: AckCounter::new(records),
        next_insert: AtomicU64::new(records),
        scan_check: (y.insert_order == InsertOrder::Ordered
            && v.target.kind != super::stores::StoreKind::Redis)
            .then_some(ScanCheck {
                loaded: records,
                padding: y.key_padding,
            }),
    })
}

async fn connect_all<S: Store>(store: &S, n: u32) -> Result<Vec<S::Conn>, WorkloadError> {
    let mut conns = Vec::with_capacity(n as usize);
    for i in 0..n {
        conns.push(store.connect().await.map_err(|e| WorkloadError::Setup {
            what: format!("connection {} of {n}", i + 1),
            source: e,
        })?);
    }
    Ok(conns)
}

/// Expected inserts during a measured phase (YCSB sizes the zipfian key
/// space with twice this).
fn expected_inserts(v: &Run, mix: &Mix) -> u64 {
    match v.stop {
        Some(Stop::Ops(n)) => (mix.share(OpKind::Insert) * n as f64 * 2.0) as u64,
        _ => 0,
    }
}

/// Load phase then one measured phase per thread count.
pub async fn run<S: Store>(
    store: &S,
    v: &Run,
    own: &config::Ycsb,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    phases::run(&Ycsb { store, own }, v, cancel).await
}

/// The YCSB core generator on one store.
struct Ycsb<'a, S> {
    store: &'a S,
    own: &'a config::Ycsb,
}

impl<S: Store> Steps for Ycsb<'_, S> {
    type Loader = LoadWorker<S::Conn>;
    type Measurer = YcsbWorker<S::Conn>;

    fn names(&self) -> &'static [&'static str] {
        &NAMES
    }

    async fn holds_data(&self) -> Result<Option<String>, WorkloadError> {
        let found = self.store.holds_data().await;
        found.map_err(|e| WorkloadError::Setup {
            what: "checking for existing records".into(),
            source: e,
        })
    }

    async fn recreate(&self) -> Result<(), WorkloadError> {
        let done = self.store.recreate().await;
        done.map_err(|e| WorkloadError::Setup {
            what: "recreating the table".into(),
            source: e,
        })
    }

    async fn loaders(&self, v: &Run) -> Result<Loading<Self::Loader>, WorkloadError> {
        let c = &v.common;
        let threads = c.load_threads.unwrap_or(v.threads[0]).max(1);
        let size = c.batch.unwrap_or(1).max(1);
        let sh = shared(v, self.own);
        let next = Arc::new(AtomicU64::new(0));
        let workers = connect_all(self.store, threads)
            .await?
            .into_iter()
            .map(|conn| LoadWorker::new(conn, sh.clone(), next.clone(), c.records, size))
            .collect();
        Ok(Loading::records(
            workers,
            &NAMES,
            (c.records, size),
            "ycsb:load",
        ))
    }

    async fn measurers(&self, v: &Run, threads: u32) -> Result<Vec<Self::Measurer>, WorkloadError> {
        let c = &v.common;
        let y = self.own;
        let items = c.records + expected_inserts(v, &y.mix);
        let hot = y.hotspot;
        let sh = shared(v, y);
        Ok(connect_all(self.store, threads)
            .await?
            .into_iter()
            .enumerate()
            .map(|(i, conn)| {
                let start = c.records / threads as u64 * i as u64;
                let chooser = KeyChooser::new(y.distribution, items, (hot.data, hot.ops), start);
                YcsbWorker::new(conn, Rng::new(c.seed, i as u64), chooser, sh.clone())
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Validated;
    use crate::workload::stores::null::NullStore;
    use std::collections::BTreeMap;

    #[test]
    fn acknowledged_counter_waits_for_the_gap_to_close() {
        let a = AckCounter::new(10);
        a.ack(11);
        assert_eq!(a.count(), 10);
        a.ack(10);
        assert_eq!(a.count(), 12);
    }

    type Rows = Arc<Mutex<BTreeMap<String, Vec<String>>>>;

    /// Records in memory; counts round trips; refuses any batch holding
    /// `poison`. Reads of absent records fail.
    #[derive(Clone, Default)]
    struct Fake {
        rows: Rows,
        calls: Arc<AtomicU64>,
        poison: Option<String>,
        /// Every write fails, as redis at `maxmemory` with `noeviction`.
        full: bool,
    }

    impl Fake {
        fn put(&self, key: &str, v: Values<'_>) -> Result<(), StoreError> {
            if self.full {
                return Err(StoreError::NotFound(format!("full: {key}")));
            }
            if self.poison.as_deref() == Some(key) {
                return Err(StoreError::NotFound(format!("poisoned {key}")));
            }
            let vals = (0..v.len()).map(|i| v.get(i).to_string()).collect();
            self.rows.lock().unwrap().insert(key.to_string(), vals);
            Ok(())
        }
    }

    impl Store for Fake {
        type Conn = Fake;
        async fn connect(&self) -> Result<Fake, StoreError> {
            Ok(self.clone())
        }
        async fn recreate(&self) -> Result<(), StoreError> {
            self.rows.lock().unwrap().clear();
            Ok(())
        }
        async fn holds_data(&self) -> Result<Option<String>, StoreError> {
            let n = self.rows.lock().unwrap().len();
            Ok((n > 0).then(|| format!("{n} record(s)")))
        }
    }

    impl StoreConn for Fake {
        async fn read(&mut self, key: &str) -> Result<(), StoreError> {
            match self.rows.lock().unwrap().contains_key(key) {
                true => Ok(()),
                false => Err(StoreError::NotFound(key.to_string())),
            }
        }
        async fn update(&mut self, _: &str, _: usize, _: &str) -> Result<(), StoreError> {
            Ok(())
        }
        async fn insert(&mut self, key: &str, values: &Values<'_>) -> Result<(), StoreError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.put(key, *values)
        }
        async fn insert_batch(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if let Some(p) = &self.poison
                && batch.keys.contains(p)
            {
                return Err(StoreError::NotFound(format!("batch with {p}")));
            }
            batch.records().try_for_each(|(k, v)| self.put(k, v))
        }
        async fn scan(&mut self, _: &str, n: usize) -> Result<u64, StoreError> {
            Ok(n as u64)
        }
    }

    fn config(json: serde_json::Value) -> Validated {
        let mut base = serde_json::json!({"store": "null://", "field_count": 3, "seed": 5});
        base.as_object_mut()
            .unwrap()
            .extend(json.as_object().unwrap().clone());
        serde_json::from_value::<crate::workload::DriveConfig>(base)
            .unwrap()
            .validate()
            .unwrap()
    }

    fn run_on<S: Store>(store: &S, v: &Validated) -> Vec<PhaseResult> {
        let config::Generator::Ycsb(own) = &v.generator else {
            panic!("a YCSB config");
        };
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(run(store, &v.run, own, &CancellationToken::new()))
            .unwrap()
    }

    fn load(batch: u64, threads: u32, fake: &Fake) -> PhaseResult {
        load_within(batch, threads, fake, serde_json::json!(0))
    }

    fn load_within(
        batch: u64,
        threads: u32,
        fake: &Fake,
        budget: serde_json::Value,
    ) -> PhaseResult {
        let v = config(serde_json::json!({
            "records": 103, "load": true, "batch": batch, "threads": threads,
            "error_budget": budget
        }));
        run_on(fake, &v).remove(0)
    }

    #[test]
    fn batched_and_unbatched_loads_insert_the_same_records() {
        let one = Fake::default();
        let r1 = load(1, 1, &one);
        let batched = Fake::default();
        let r10 = load(10, 3, &batched);
        assert_eq!(one.rows.lock().unwrap().len(), 103);
        assert_eq!(*one.rows.lock().unwrap(), *batched.rows.lock().unwrap());
        assert_eq!(one.calls.load(Ordering::Relaxed), 103);
        assert_eq!(
            batched.calls.load(Ordering::Relaxed),
            11,
            "10 full batches and 3 left"
        );
        for r in [&r1, &r10] {
            assert!(r.status.is_ok(), "{:?}", r.status);
            assert_eq!((r.total_ops, r.ops["INSERT"].count), (103, 103));
        }
    }

    #[test]
    fn a_failed_batch_counts_its_records_as_errors() {
        let keys = KeyFormat {
            order: Default::default(),
            padding: 1,
        };
        let fake = Fake {
            poison: Some(keys.key(42)),
            ..Default::default()
        };
        // Allowed to fail, so the load goes on past the failed batch.
        let r = load_within(10, 2, &fake, serde_json::json!("100%"));
        assert_eq!(r.ops["INSERT"].errors, 10, "records 40..49 failed together");
        assert_eq!(r.ops["INSERT"].count, 93);
        assert_eq!((r.total_ops, r.total_errors), (93, 10));
        assert!(r.status.is_ok());
        assert_eq!(fake.rows.lock().unwrap().len(), 93);
    }

    #[test]
    fn a_load_without_an_error_budget_stops_at_its_first_failure() {
        let fake = Fake {
            full: true,
            ..Default::default()
        };
        let v = config(serde_json::json!({"records": 100_000, "load": true, "threads": 4}));
        let r = run_on(&fake, &v).remove(0);
        let attempts = r.total_ops + r.total_errors;
        // One failure stops every worker; each may have had one insert
        // on its way.
        assert!((1..=4).contains(&attempts), "{attempts} attempts");
        assert_eq!(fake.calls.load(Ordering::Relaxed), attempts);
        let reason = match &r.status {
            crate::results::model::PhaseStatus::Failed { reason } => reason.clone(),
            s => panic!("{s:?}"),
        };
        assert!(
            reason.starts_with("stopped when its error budget (0 errors) was spent: "),
            "{reason}"
        );
        assert!(
            reason.ends_with(&format!(
                "{attempts} of {attempts} operations failed (100000 planned)"
            )),
            "{reason}"
        );
    }

    #[test]
    fn a_load_stops_once_its_error_count_budget_is_spent() {
        let fake = Fake {
            full: true,
            ..Default::default()
        };
        let v = config(serde_json::json!({
            "records": 100_000, "load": true, "threads": 3, "batch": 10, "error_budget": 25
        }));
        let r = run_on(&fake, &v).remove(0);
        // Batches of 10 fail together: the third spends the budget of 25.
        assert!((30..=50).contains(&r.total_errors), "{}", r.total_errors);
        assert_eq!(r.total_ops, 0);
        assert!(!r.status.is_ok());
    }

    #[test]
    fn read_modify_write_is_also_recorded_as_a_read_and_an_update() {
        let v = config(serde_json::json!({
            "workload": "f", "records": 1000, "operations": 20000, "threads": 2
        }));
        let r = &run_on(&NullStore, &v)[0];
        let rmw = r.ops["READ-MODIFY-WRITE"].count;
        assert!((8000..12000).contains(&rmw), "{rmw}");
        assert_eq!(r.total_ops, 20000, "each operation once");
        assert_eq!(r.ops["READ"].count, 20000, "plain reads plus one per RMW");
        assert_eq!(r.ops["UPDATE"].count, rmw);
        let per_second: u64 = r.series.iter().map(|s| s.ops).sum();
        assert_eq!(per_second, 20000);
        assert!(r.ops["UPDATE"].latency_us.max <= r.ops["READ-MODIFY-WRITE"].latency_us.max);
    }

    #[test]
    fn a_failed_read_fails_the_read_modify_write_and_skips_its_update() {
        let fake = Fake::default();
        let loaded = config(serde_json::json!({"records": 100, "load": true}));
        run_on(&fake, &loaded);
        // Twice the records that exist: about half the reads miss.
        let v = config(serde_json::json!({
            "workload": "f", "records": 200, "operations": 4000,
            "distribution": "uniform", "error_budget": "100%"
        }));
        let r = &run_on(&fake, &v)[0];
        let (read, update, rmw) = (
            &r.ops["READ"],
            &r.ops["UPDATE"],
            &r.ops["READ-MODIFY-WRITE"],
        );
        assert!(rmw.errors > 500 && rmw.count > 500, "{rmw:?}");
        assert_eq!(update.count, rmw.count);
        assert_eq!(update.errors, 0, "no update after a failed read");
        assert_eq!(read.count + read.errors, 4000, "one read per operation");
        assert_eq!(r.total_ops + r.total_errors, 4000);
        assert_eq!(r.total_errors, read.errors, "every failure is a read's");
    }

    #[test]
    fn a_scans_answer_size_is_known_only_inside_the_loaded_keys_of_one_width() {
        let c = ScanCheck {
            loaded: 300,
            padding: 1,
        };
        assert_eq!(c.want(100, 10), Some(10));
        assert_eq!(c.want(290, 10), Some(10), "records 290..299");
        assert_eq!(c.want(291, 10), None, "record 300 was not loaded");
        // user5..user14: user10 sorts before user5.
        assert_eq!(c.want(5, 10), None);
        assert_eq!(c.want(0, 10), Some(10));
        let padded = ScanCheck {
            loaded: 300,
            padding: 4,
        };
        assert_eq!(padded.want(5, 10), Some(10), "user0005..user0014");
        assert_eq!(padded.want(0, 0), None);
    }
}
