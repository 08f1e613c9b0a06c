//! YCSB core workloads: the load phase and the measured phases, on any store.

use super::dist::KeyChooser;
use super::driver::{Stop, Worker};
use super::keys::{KeyFormat, ValuePool, field_names};
use super::mix::{Mix, OpKind};
use super::rng::Rng;
use super::stores::{Schema, Store, StoreConn, StoreError, Values};
use super::{Validated, WorkloadConfig, WorkloadError};
use crate::results::model::PhaseResult;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Operation kind names, indexed by `OpKind as usize`.
pub const NAMES: [&str; 5] = ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"];

/// The schema a config describes.
pub fn schema(cfg: &WorkloadConfig) -> Schema {
    Schema {
        fields: field_names(cfg.field_count).into(),
        field_length: cfg.field_length,
        engine: cfg.engine.clone(),
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
}

#[derive(Debug, Clone, Copy)]
enum Planned {
    Read,
    Update { field: usize, off: usize },
    Insert { n: u64 },
    Scan { len: usize },
    Rmw { field: usize, off: usize },
}

/// One connection running the measured mix.
pub struct YcsbWorker<C> {
    conn: C,
    rng: Rng,
    chooser: KeyChooser,
    shared: Arc<Shared>,
    key: String,
    offsets: Vec<usize>,
    op: Planned,
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
            OpKind::Scan => Planned::Scan {
                len: 1 + self.rng.below(sh.max_scan) as usize,
            },
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
            Planned::Scan { len } => self.conn.scan(&self.key, len).await,
            Planned::Rmw { field, off } => {
                self.conn.read(&self.key).await?;
                self.conn.update(&self.key, field, sh.pool.at(off)).await
            }
        }
    }
}

/// One connection inserting records `next..end` in the load phase.
pub struct LoadWorker<C> {
    conn: C,
    rng: Rng,
    shared: Arc<Shared>,
    next: Arc<AtomicU64>,
    end: u64,
    key: String,
    offsets: Vec<usize>,
}

impl<C: StoreConn> Worker for LoadWorker<C> {
    fn plan(&mut self) -> Option<usize> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        if n >= self.end {
            return None;
        }
        self.shared.keys.write(n, &mut self.key);
        for o in self.offsets.iter_mut() {
            *o = self.shared.pool.offset(&mut self.rng);
        }
        Some(OpKind::Insert as usize)
    }

    async fn exec(&mut self) -> Result<(), StoreError> {
        let values = Values {
            pool: &self.shared.pool,
            offsets: &self.offsets,
        };
        self.conn.insert(&self.key, &values).await
    }
}

fn shared(v: &Validated) -> Arc<Shared> {
    let c = &v.cfg;
    Arc::new(Shared {
        keys: KeyFormat {
            order: c.insert_order,
            padding: c.key_padding,
        },
        pool: ValuePool::new(c.field_length as usize, c.seed),
        mix: v.mix.clone(),
        field_count: c.field_count as usize,
        max_scan: c.max_scan_length,
        acked: AckCounter::new(c.records),
        next_insert: AtomicU64::new(c.records),
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
fn expected_inserts(v: &Validated) -> u64 {
    match v.stop {
        Some(Stop::Ops(n)) => (v.mix.share(OpKind::Insert) * n as f64 * 2.0) as u64,
        _ => 0,
    }
}

/// Load phase then one measured phase per thread count.
pub async fn run<S: Store>(
    store: &S,
    v: &Validated,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let c = &v.cfg;
    let mut results = Vec::new();
    if c.load {
        store.recreate().await.map_err(|e| WorkloadError::Setup {
            what: "recreating the table".into(),
            source: e,
        })?;
        let threads = c.load_threads.unwrap_or(v.threads[0]).max(1);
        let sh = shared(v);
        let next = Arc::new(AtomicU64::new(0));
        let workers = connect_all(store, threads)
            .await?
            .into_iter()
            .enumerate()
            .map(|(i, conn)| LoadWorker {
                conn,
                rng: Rng::new(c.seed, 1000 + i as u64),
                shared: sh.clone(),
                next: next.clone(),
                end: c.records,
                key: String::new(),
                offsets: vec![0; c.field_count as usize],
            })
            .collect();
        let r = super::load_phase(v, workers, &NAMES, c.records, "ycsb:load", cancel).await;
        let failed = !r.status.is_ok();
        results.push(r);
        if failed {
            return Ok(results);
        }
    }
    let Some(stop) = v.stop else {
        return Ok(results);
    };
    let items = c.records + expected_inserts(v);
    let hot = c.hotspot.unwrap_or_default();
    for &threads in &v.threads {
        let sh = shared(v);
        let workers = connect_all(store, threads)
            .await?
            .into_iter()
            .enumerate()
            .map(|(i, conn)| {
                let start = c.records / threads as u64 * i as u64;
                let chooser = KeyChooser::new(v.distribution, items, (hot.data, hot.ops), start);
                YcsbWorker::new(conn, Rng::new(c.seed, i as u64), chooser, sh.clone())
            })
            .collect();
        results.push(super::measured_phase(v, workers, &NAMES, stop, cancel).await);
        if cancel.is_cancelled() {
            break;
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledged_counter_waits_for_the_gap_to_close() {
        let a = AckCounter::new(10);
        a.ack(11);
        assert_eq!(a.count(), 10);
        a.ack(10);
        assert_eq!(a.count(), 12);
    }
}
