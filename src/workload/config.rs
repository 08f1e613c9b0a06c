//! The built-in load generator's configuration: what `benchcage drive
//! --config FILE.json` reads and what a plan writes for each phase, the
//! problems found checking it, and the checked form the generators run.
//! Generators import their inputs from here, never from `workload/mod.rs`,
//! which dispatches to them.

use super::dist::Distribution;
use super::keys::InsertOrder;
use super::{bounds, driver, mix, stores};
use std::collections::BTreeMap;

/// The built-in generators: the one list of them in the crate. A
/// scenario's `load: {workload: ...}` names one; every [`WorkloadKind`]
/// runs one ([`WorkloadKind::generator`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GeneratorKind {
    /// YCSB core records and workloads a..f or a custom mix.
    Ycsb,
    /// Write-up 000's trade candles (~270 B) with 3 secondary indexes.
    Candles,
    /// sysbench-mongodb's collections (write-up 002): 8 of `records`
    /// documents each, loaded 1000 at a time.
    #[serde(rename = "sysbench-mongo")]
    SysbenchMongo,
    /// iiBench's `purchases_index` rows with its 3 secondary indexes,
    /// loaded 1000 at a time.
    Iibench,
    /// TPC-C's nine tables for `warehouses` warehouses.
    Tpcc,
}

impl GeneratorKind {
    /// Every generator, in the order specs and help list them.
    pub const ALL: [GeneratorKind; 5] = [
        GeneratorKind::Ycsb,
        GeneratorKind::Candles,
        GeneratorKind::SysbenchMongo,
        GeneratorKind::Iibench,
        GeneratorKind::Tpcc,
    ];

    /// As a scenario names it: `ycsb`, `sysbench-mongo`.
    pub fn name(self) -> &'static str {
        match self {
            GeneratorKind::Ycsb => "ycsb",
            GeneratorKind::Candles => "candles",
            GeneratorKind::SysbenchMongo => "sysbench-mongo",
            GeneratorKind::Iibench => "iibench",
            GeneratorKind::Tpcc => "tpcc",
        }
    }
}

/// Which workload a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    #[default]
    A,
    B,
    C,
    D,
    E,
    F,
    /// Proportions from `mix`.
    Custom,
    /// The trade-candles document workload of write-up 000.
    Candles,
    /// Tokutek's sysbench-mongodb transaction over N collections (write-up 002).
    #[serde(rename = "sysbench-mongo")]
    SysbenchMongo,
    /// iiBench: insert-only into `purchases_index` with 3 secondary indexes.
    Iibench,
    /// TPC-C: `warehouses` loaded, the five transactions in the standard
    /// mix, tpmC as the headline.
    Tpcc,
}

impl WorkloadKind {
    /// The generator that runs it.
    pub fn generator(self) -> GeneratorKind {
        match self {
            WorkloadKind::A
            | WorkloadKind::B
            | WorkloadKind::C
            | WorkloadKind::D
            | WorkloadKind::E
            | WorkloadKind::F
            | WorkloadKind::Custom => GeneratorKind::Ycsb,
            WorkloadKind::Candles => GeneratorKind::Candles,
            WorkloadKind::SysbenchMongo => GeneratorKind::SysbenchMongo,
            WorkloadKind::Iibench => GeneratorKind::Iibench,
            WorkloadKind::Tpcc => GeneratorKind::Tpcc,
        }
    }
}

/// Threads (connections): one count or a list to sweep.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Threads {
    One(u32),
    Sweep(Vec<u32>),
}

impl Default for Threads {
    fn default() -> Self {
        Threads::One(1)
    }
}

impl Threads {
    /// The counts to run, in order.
    pub fn list(&self) -> Vec<u32> {
        match self {
            Threads::One(n) => vec![*n],
            Threads::Sweep(v) => v.clone(),
        }
    }
}

/// Errors a phase may have: a count (`0`, `10`) or a share (`"1%"`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum ErrorBudget {
    Count(u64),
    Share(String),
}

impl Default for ErrorBudget {
    fn default() -> Self {
        ErrorBudget::Count(0)
    }
}

impl std::fmt::Display for ErrorBudget {
    /// As a person writes it: `0 errors`, `1 error`, `1%`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.budget(), self) {
            (Ok(b), _) => write!(f, "{b}"),
            (Err(_), ErrorBudget::Share(s)) => f.write_str(&crate::error::excerpt(s.trim())),
            (Err(_), ErrorBudget::Count(n)) => write!(f, "{n} errors"),
        }
    }
}

impl ErrorBudget {
    /// The driver's budget; a bad share is refused.
    pub fn budget(&self) -> Result<driver::Budget, String> {
        match self {
            ErrorBudget::Count(n) => Ok(driver::Budget::Count(*n)),
            ErrorBudget::Share(s) => {
                let num = s.trim().strip_suffix('%').ok_or_else(|| {
                    format!("error_budget `{s}`: write a count (`10`) or a share (`0.5%`)")
                })?;
                let v: f64 = num
                    .trim()
                    .parse()
                    .map_err(|_| format!("error_budget `{s}`: `{num}` is not a number"))?;
                if !(0.0..=100.0).contains(&v) {
                    return Err(format!("error_budget `{s}` must be between 0% and 100%"));
                }
                Ok(driver::Budget::Fraction(v / 100.0))
            }
        }
    }
}

/// The hot set of the `hotspot` distribution.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hotspot {
    /// Share of the records that are hot (YCSB `hotspotdatafraction`).
    pub data: f64,
    /// Share of the operations that go to them (`hotspotopnfraction`).
    pub ops: f64,
}

impl Default for Hotspot {
    fn default() -> Self {
        Hotspot {
            data: 0.2,
            ops: 0.8,
        }
    }
}

fn default_name() -> String {
    "run".into()
}
fn default_records() -> u64 {
    1000
}
fn default_field_count() -> u32 {
    10
}
fn default_field_length() -> u32 {
    100
}
fn default_padding() -> usize {
    1
}
fn default_seed() -> u64 {
    1
}
fn default_scan() -> u64 {
    100
}

/// One built-in workload run, as `benchcage drive --config FILE.json`
/// takes it. Fields mirror the scenario's `builtin` block, dataset and
/// phase fields.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    /// Phase name in the results.
    #[serde(default = "default_name")]
    pub name: String,
    /// Store URL (`redis://127.0.0.1:6379`); `--store` overrides it.
    #[serde(default)]
    pub store: Option<String>,
    #[serde(default)]
    pub workload: WorkloadKind,
    /// Proportions for `custom`: `{read: 0.9, update: 0.05, insert: 0.05}`.
    #[serde(default)]
    pub mix: Option<BTreeMap<String, f64>>,
    /// Candle query for `candles`: by_ticker, interval or day.
    #[serde(default)]
    pub queries: Option<CandleQuery>,
    /// Collections of `sysbench-mongo` (`sbtest1..N`, `records` each); 8
    /// when omitted.
    #[serde(default)]
    pub collections: Option<u32>,
    /// Bytes of iibench's `data` column (random letters, at most 4000);
    /// 0 when omitted, as iibench-mongodb's default of no char fields.
    #[serde(default)]
    pub data_length: Option<u32>,
    /// TPC-C warehouses (`tpcc` only): loaded by the load, spread over
    /// the terminals by the run. 1 when omitted.
    #[serde(default)]
    pub warehouses: Option<u32>,
    /// py-tpcc's document schema on MongoDB (`tpcc` only): `false` keeps
    /// ORDER_LINE a collection of its own, `true` (the default) embeds
    /// each order's lines in it. Refused for a SQL store, whose schema
    /// is TPC-C's relational one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denormalize: Option<bool>,
    /// Request distribution; the workload's own when omitted.
    #[serde(default)]
    pub distribution: Option<Distribution>,
    #[serde(default)]
    pub hotspot: Option<Hotspot>,
    #[serde(default = "default_records")]
    pub records: u64,
    #[serde(default = "default_field_count")]
    pub field_count: u32,
    #[serde(default = "default_field_length")]
    pub field_length: u32,
    #[serde(default)]
    pub insert_order: InsertOrder,
    /// Zero-pad key numbers to this many digits (YCSB `zeropadding`).
    #[serde(default = "default_padding")]
    pub key_padding: usize,
    #[serde(default)]
    pub threads: Threads,
    /// Measured operations over all threads...
    #[serde(default)]
    pub operations: Option<u64>,
    /// ...or measured time.
    #[serde(default)]
    pub duration: Option<crate::units::Duration>,
    #[serde(default)]
    pub warmup: Option<crate::units::Duration>,
    /// Target operations per second over all threads.
    #[serde(default)]
    pub target: Option<f64>,
    #[serde(default)]
    pub error_budget: ErrorBudget,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Load the records (recreating the table) before measuring.
    #[serde(default)]
    pub load: bool,
    /// Let the load delete what the target holds (redis: FLUSHDB of its
    /// database; SQL: drop `usertable`; mongodb: drop the collection).
    /// Without it, a load into a target that holds data is refused:
    /// `drive` runs against servers with other people's data. `benchcage
    /// run` sets it, since it owns its engines.
    #[serde(default)]
    pub reset: bool,
    /// Connections for the load phase; the first thread count when omitted.
    #[serde(default)]
    pub load_threads: Option<u32>,
    /// Records per insert in the load phase (and in iibench's measured
    /// phases): YCSB records 1 when omitted (one INSERT per record, as
    /// YCSB), candles 500, sysbench-mongo and iibench 1000. A batch is one round
    /// trip (a Redis pipeline, a multi-row INSERT, an unordered
    /// `insertMany`); it counts as that many INSERT operations (or errors,
    /// when it fails) and as one latency measurement.
    #[serde(default)]
    pub batch: Option<u64>,
    /// Longest scan (uniform from 1).
    #[serde(default = "default_scan")]
    pub max_scan_length: u64,
    /// MySQL storage engine (`InnoDB`, `RocksDB`).
    #[serde(default)]
    pub engine: Option<String>,
    /// Draw the progress bar even when stderr is not a terminal.
    #[serde(default)]
    pub progress: bool,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("every field has a default")
    }
}

/// One problem of a configuration: the field it is in and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The config field (`threads`, `field_count`); `drive` names the flag.
    pub field: &'static str,
    pub message: String,
}

/// Every problem of a configuration, and how to name their fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Problems {
    pub list: Vec<Problem>,
    /// Name fields as `drive` flags (`--field-count`) rather than as
    /// config fields (`field_count`).
    pub as_flags: bool,
}

impl Problems {
    /// One problem.
    pub fn one(field: &'static str, message: impl Into<String>) -> Problems {
        let mut p = Problems::default();
        p.push(field, message);
        p
    }

    pub(super) fn push(&mut self, field: &'static str, message: impl Into<String>) {
        self.list.push(Problem {
            field,
            message: message.into(),
        });
    }

    pub(super) fn refused(&mut self, field: &'static str, r: Result<(), bounds::Refusal>) {
        if let Err(r) = r {
            self.push(field, r.to_string());
        }
    }
}

impl std::fmt::Display for Problems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, p) in self.list.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            if self.as_flags {
                write!(f, "--{}: {}", p.field.replace('_', "-"), p.message)?;
            } else {
                write!(f, "{}: {}", p.field, p.message)?;
            }
        }
        Ok(())
    }
}

/// Why a workload could not run.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The configuration is wrong (exit code 2).
    #[error("{0}")]
    Config(Problems),
    #[error(transparent)]
    Url(#[from] stores::UrlError),
    /// A load would delete data benchcage did not create (exit code 2).
    #[error(
        "refusing to load: {0}. benchcage deletes nothing it did not create: point --store at \
         an empty database, or add --reset to delete it first"
    )]
    Occupied(String),
    /// Setting up (connect, create, prepare) failed. The cause is the
    /// error's source, so `{:#}` shows it once.
    #[error("{what}")]
    Setup {
        what: String,
        #[source]
        source: stores::StoreError,
    },
}

/// A checked configuration, ready to run.
#[derive(Debug, Clone)]
pub struct Validated {
    pub cfg: WorkloadConfig,
    pub target: stores::StoreTarget,
    pub mix: mix::Mix,
    pub distribution: Distribution,
    pub stop: Option<driver::Stop>,
    pub budget: driver::Budget,
    pub threads: Vec<u32>,
    /// `ycsb:a`, `ycsb:custom`, `candles:by_ticker`.
    pub label: String,
}

/// Which candle query a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandleQuery {
    /// Every candle of one ticker out of a sample of 200.
    #[default]
    ByTicker,
    /// Every candle in one of 10 random 10-minute intervals.
    Interval,
    /// Every candle of one day.
    Day,
}

impl CandleQuery {
    pub fn name(self) -> &'static str {
        match self {
            CandleQuery::ByTicker => "by_ticker",
            CandleQuery::Interval => "interval",
            CandleQuery::Day => "day",
        }
    }
}
