//! How much disk a cell's data takes, estimated before anything runs, so
//! that `plan` (and `run`, which plans first) refuses a dataset that
//! cannot fit the free space where the engine's data lives (issue 15).
//!
//! - Records (the dataset's load, and the records a measured phase counting
//!   operations inserts: operations x insert share) are counted raw, key +
//!   field names + values (candles at
//!   [`candles::RECORD_BYTES`](crate::workload::candles::RECORD_BYTES)),
//!   times the engine's `disk_factor` (its spec; [`DEFAULT_DISK_FACTOR`](crate::spec::engine::DEFAULT_DISK_FACTOR)
//!   when it has none).
//! - A tool's own prepare is counted on disk, at a size per unit measured
//!   here: [`SYSBENCH_ROW_BYTES`] per sysbench row,
//!   [`PGBENCH_SCALE_BYTES`] per pgbench scale unit,
//!   [`TPCC_WAREHOUSE_BYTES`] per TPC-C warehouse (a `command` tool's
//!   `scaled: {warehouses: N}`).
//!
//! A tool's tables live for its phase, so the largest tool counts, beside
//! the loaded records and the most records one measured phase inserts.
//! Cells run one after the other and each one's data dir is removed at its
//! teardown, so a plan needs the largest cell's estimate free, not the sum.

use super::PlannedPhase;
use crate::spec::scenario::{
    Builtin, Dataset, Length, Load, LoadWorkload, Tool, Work, YcsbWorkload,
};
use crate::units::Bytes;
use crate::workload::bounds::ycsb_record_bytes;
use crate::workload::candles;
use crate::workload::mix::{Mix, OpKind};

/// A YCSB key as stored: `user` and up to 19 digits of a hashed number.
pub(crate) const KEY_BYTES: u64 = 23;
/// A sysbench row on disk: measured 247 B on InnoDB and 382 B on MyRocks
/// (its WAL and uncompacted files included) for 1000000 rows of 188 bytes
/// (`id`, `k`, `c` CHAR(120), `pad` CHAR(60)) and the `k` index.
pub(crate) const SYSBENCH_ROW_BYTES: u64 = 400;
/// A pgbench scale unit on disk: measured 15.7 MB of tables and indexes and
/// 13.5 MB of WAL per unit (`pgbench -i -s 10` on PostgreSQL 15).
pub(crate) const PGBENCH_SCALE_BYTES: u64 = 30_000_000;
/// TPC-C's initial rows per warehouse (clause 4.3.3.1): stock 100000 x
/// 306 B, customer 30000 x 655 B, history 30000 x 46 B, orders 30000 x
/// 24 B, order lines 300000 x 54 B, new orders 9000 x 8 B; the items
/// (100000 x 82 B, once) are left out.
pub(crate) const TPCC_WAREHOUSE_ROW_BYTES: u64 =
    100_000 * 306 + 30_000 * 655 + 30_000 * 46 + 30_000 * 24 + 300_000 * 54 + 9_000 * 8;
/// A TPC-C warehouse on disk: its rows and their indexes, at 1.5 times the
/// rows as sysbench's rows take on InnoDB (247 B for 188) and YCSB's on
/// most engines.
pub(crate) const TPCC_WAREHOUSE_BYTES: u64 = TPCC_WAREHOUSE_ROW_BYTES * 3 / 2;

/// A cell's data on disk, estimated.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Footprint {
    /// Bytes on disk, all parts together.
    pub estimate: Bytes,
    /// What it is made of, in words (`50000 records x 1083 B x 3 for the
    /// engine`).
    pub parts: Vec<String>,
    /// The engine's bytes on disk per raw byte of a record.
    pub factor: f64,
    /// Bytes of one record, raw (0 without a dataset).
    pub record_bytes: u64,
    /// Records loaded.
    pub loaded: u64,
    /// The most records one measured phase inserts. Each phase inserts
    /// from the end of the dataset, so later phases overwrite the records
    /// earlier ones inserted: the largest counts, not the sum.
    pub inserted: u64,
    /// The largest tool prepare, on disk.
    pub tools: Bytes,
}

impl std::fmt::Display for Footprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "about {} ({})",
            crate::display::approx(self.estimate),
            self.parts.join(" + ")
        )
    }
}

impl Footprint {
    /// Records on disk.
    fn records_on_disk(&self, n: u64) -> f64 {
        n as f64 * self.record_bytes as f64 * self.factor
    }

    /// The most records a dataset may have for the estimate to fit `free`,
    /// the rest of the cell's data kept; `None` without a loaded dataset or
    /// when even the rest does not fit.
    pub(crate) fn records_that_fit(&self, free: Bytes) -> Option<u64> {
        if self.loaded == 0 || self.record_bytes == 0 {
            return None;
        }
        let room = free.0 as f64 - self.tools.0 as f64 - self.records_on_disk(self.inserted);
        let n = (room / self.records_on_disk(1)).floor();
        (n >= 1.0).then_some(n as u64)
    }
}

/// The estimate for a cell of an engine with `factor`: its load of
/// `dataset`, and its `phases`. `None` when the cell writes nothing
/// countable.
pub fn estimate(
    load: Option<&Load>,
    dataset: Option<&Dataset>,
    phases: &[PlannedPhase],
    factor: f64,
) -> Option<Footprint> {
    let record_bytes = match (load, dataset) {
        (Some(l), _) if l.workload == LoadWorkload::Candles => candles::RECORD_BYTES,
        // One record is one `_id` in each of the collections.
        (Some(l), _) if l.workload == LoadWorkload::SysbenchMongo => {
            crate::workload::sysbench_mongo::RECORD_BYTES
                * l.collections
                    .unwrap_or(crate::workload::sysbench_mongo::COLLECTIONS)
                    as u64
        }
        (Some(l), _) if l.workload == LoadWorkload::Iibench => {
            crate::workload::iibench::record_bytes(0)
        }
        (_, Some(d)) => KEY_BYTES + ycsb_record_bytes(d.field_count, d.field_length),
        _ => 0,
    };
    let mut fp = Footprint {
        estimate: Bytes(0),
        parts: Vec::new(),
        factor,
        record_bytes,
        loaded: 0,
        inserted: 0,
        tools: Bytes(0),
    };
    if let (Some(l), Some(d)) = (load, dataset)
        && l.workload != LoadWorkload::Tpcc
    {
        fp.loaded = d.records;
        fp.parts.push(format!(
            "{} records x {record_bytes} B x {factor} for the engine",
            d.records
        ));
    }
    fp.inserted = phases
        .iter()
        .filter_map(|p| match (&p.phase.work, p.phase.length) {
            (Work::Builtin(Builtin::Ycsb { workload, .. }), Length::Operations(n)) => {
                Some((n as f64 * insert_share(workload)).ceil() as u64)
            }
            // Every iiBench operation is a row inserted.
            (Work::Builtin(Builtin::Iibench), Length::Operations(n)) => Some(n),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    if fp.inserted > 0 {
        fp.parts.push(format!(
            "{} inserted x {record_bytes} B x {factor}",
            fp.inserted
        ));
    }
    // A tool's tables live for its phase (sysbench cleans up, `pgbench
    // -i` and a TPC-C load recreate theirs, and a TPC-C run phase uses the
    // load phase's warehouses): the largest one counts.
    let tpcc_load = load.filter(|l| l.workload == LoadWorkload::Tpcc).map(|l| {
        let w = u64::from(l.warehouses.unwrap_or(1));
        (
            w.saturating_mul(TPCC_WAREHOUSE_BYTES),
            format!(
                "{w} TPC-C warehouses x {} (the load)",
                crate::display::approx(Bytes(TPCC_WAREHOUSE_BYTES))
            ),
        )
    });
    let biggest = phases
        .iter()
        .filter_map(|p| match &p.phase.work {
            Work::Tool(t) => {
                tool_bytes(t).map(|(b, what)| (b, format!("{what} ({})", p.phase.name)))
            }
            _ => None,
        })
        .chain(tpcc_load)
        .reduce(|a, b| if b.0 > a.0 { b } else { a });
    if let Some((bytes, what)) = biggest {
        fp.tools = Bytes(bytes);
        fp.parts.push(what);
    }
    if fp.parts.is_empty() {
        return None;
    }
    let total = fp.records_on_disk(fp.loaded.saturating_add(fp.inserted)) + fp.tools.0 as f64;
    fp.estimate = Bytes(total.min(u64::MAX as f64) as u64);
    Some(fp)
}

/// The share of a YCSB workload's operations that insert a record.
fn insert_share(w: &YcsbWorkload) -> f64 {
    let letter = match w {
        YcsbWorkload::Custom(m) => return m.insert,
        YcsbWorkload::A => 'a',
        YcsbWorkload::B => 'b',
        YcsbWorkload::C => 'c',
        YcsbWorkload::D => 'd',
        YcsbWorkload::E => 'e',
        YcsbWorkload::F => 'f',
    };
    Mix::ycsb(letter).map_or(0.0, |(m, _)| m.share(OpKind::Insert))
}

/// What a tool's prepare puts on disk, and how it is counted.
fn tool_bytes(t: &Tool) -> Option<(u64, String)> {
    let mb = |b: u64| crate::display::approx(Bytes(b));
    match t {
        Tool::Sysbench {
            tables, table_size, ..
        } => {
            let rows = (*tables as u64).saturating_mul(*table_size);
            Some((
                rows.saturating_mul(SYSBENCH_ROW_BYTES),
                format!("{tables} x {table_size} sysbench rows x {SYSBENCH_ROW_BYTES} B"),
            ))
        }
        Tool::Pgbench { scale, .. } => Some((
            (*scale as u64).saturating_mul(PGBENCH_SCALE_BYTES),
            format!("pgbench scale {scale} x {}", mb(PGBENCH_SCALE_BYTES)),
        )),
        Tool::Command { scaled, .. } => scaled.get("warehouses").map(|w| {
            (
                w.saturating_mul(TPCC_WAREHOUSE_BYTES),
                format!("{w} TPC-C warehouses x {}", mb(TPCC_WAREHOUSE_BYTES)),
            )
        }),
        Tool::Pytpcc(p) => Some((
            p.warehouses.saturating_mul(TPCC_WAREHOUSE_BYTES),
            format!(
                "{} TPC-C warehouses x {}",
                p.warehouses,
                mb(TPCC_WAREHOUSE_BYTES)
            ),
        )),
        Tool::Ycsb { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpcc_per_warehouse_is_about_69_mb_of_rows_and_103_mb_on_disk() {
        assert_eq!(TPCC_WAREHOUSE_ROW_BYTES, 68_622_000);
        assert_eq!(TPCC_WAREHOUSE_BYTES, 102_933_000);
    }
}
