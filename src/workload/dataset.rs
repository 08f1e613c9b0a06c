//! What a cell loads: the records (a scenario's `dataset:`) and the load
//! phase that inserts them (`load:`). The spec reads straight into these
//! types, the plan carries them, the drive config and the snapshot key
//! hold them; their serialized form is part of cell and snapshot keys.

use super::GeneratorKind as LoadWorkload;
use super::InsertOrder;

/// The records a phase works on.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Dataset {
    pub records: u64,
    pub field_count: u32,
    pub field_length: u32,
    pub insert_order: InsertOrder,
}

/// The load phase.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Load {
    pub threads: u32,
    pub workload: LoadWorkload,
    /// Records per insert (write-up 002 inserts 1000 per batch). When
    /// omitted the YCSB load inserts one record at a time (YCSB's default,
    /// so results compare with YCSB's), the candles load 500. A batch is
    /// one round trip, counted as `batch` INSERT operations.
    pub batch: u32,
    /// TPC-C warehouses the load loads (`workload: tpcc` only): the
    /// load's own `warehouses`, else its TPC-C phases'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warehouses: Option<u32>,
    /// py-tpcc's document schema the TPC-C load writes on MongoDB
    /// (`workload: tpcc` only): the load's own `denormalize`, else its
    /// TPC-C phases'. `None` when none gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denormalize: Option<bool>,
    /// sysbench-mongo collections the load fills (`workload:
    /// sysbench-mongo` only): its phases'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collections: Option<u32>,
    /// `measured: true`: the load's figures are results (the write-up
    /// reports its insert throughput or load time), so every cell loads
    /// and none restores a snapshot. Kept out of serialized forms, so that
    /// cell keys and snapshot keys do not change with it.
    #[serde(skip)]
    pub measured: bool,
}
