//! The built-in load generator's configuration in its two forms: the
//! flat wire form ([`DriveConfig`]: what `benchcage drive --config
//! FILE.json` reads and what a plan writes for each phase) and the typed
//! form ([`WorkloadConfig`]: the fields every generator shares, and a
//! [`Generator`] whose variant carries that generator's own fields). The
//! conversion between them ([`DriveConfig::typed`]) is where a field given
//! to a generator it does not apply to is refused. Also the problems found
//! checking a config, and the checked form the generators run
//! ([`Validated`]). Generators import their inputs from here, never from
//! `workload/mod.rs`, which validates and dispatches to them.

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

    /// The stores it runs on, and how a refusal lists them; `None`: any.
    fn runs_on(self) -> Option<(&'static [stores::StoreKind], &'static str)> {
        use stores::StoreKind::{Mongodb, Mysql, Postgres};
        match self {
            GeneratorKind::Ycsb => None,
            GeneratorKind::Candles => Some((&[Mongodb, Postgres], "mongodb and postgres")),
            GeneratorKind::SysbenchMongo => Some((&[Mongodb], "mongodb")),
            GeneratorKind::Iibench => {
                Some((&[Mongodb, Postgres, Mysql], "mongodb, postgres and mysql"))
            }
            GeneratorKind::Tpcc => Some((
                &[Mysql, Postgres, Mongodb],
                "postgres, mysql/mariadb and mongodb",
            )),
        }
    }

    /// Refuses `target` when this generator does not run on it.
    fn check_store(self, target: &stores::StoreTarget, errs: &mut Problems) {
        if let Some((kinds, _)) = self.runs_on()
            && !kinds.contains(&target.kind)
        {
            errs.push("store", self.not_on_message(target));
        }
    }

    /// The refusal of a store this generator does not run on, for a
    /// generator's run that validation did not stop.
    pub(crate) fn not_on(self, target: &stores::StoreTarget) -> WorkloadError {
        WorkloadError::Config(Problems::one("store", self.not_on_message(target)))
    }

    fn not_on_message(self, target: &stores::StoreTarget) -> String {
        let listed = self.runs_on().map_or("any store", |(_, l)| l);
        format!(
            "the {} workload runs on {listed}, not {}",
            self.name(),
            target.kind
        )
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

/// One built-in workload run in its wire form, flat, as `benchcage drive
/// --config FILE.json` takes it and a plan writes it. Fields mirror the
/// scenario's `builtin` block, dataset and phase fields; which of them a
/// generator reads is said by [`DriveConfig::typed`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriveConfig {
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

impl Default for DriveConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("every field has a default")
    }
}

/// One built-in workload run in its typed form: what every generator
/// shares, and the generator with its own fields.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadConfig {
    pub common: Common,
    pub generator: Generator,
}

/// The fields every generator reads (and the skeleton, `workload::phases`).
#[derive(Debug, Clone, PartialEq)]
pub struct Common {
    /// Phase name in the results.
    pub name: String,
    /// Store URL (`redis://127.0.0.1:6379`).
    pub store: Option<String>,
    /// Records the load inserts: YCSB records, candles, rows of iiBench,
    /// documents of each sysbench-mongo collection.
    pub records: u64,
    pub threads: Threads,
    pub operations: Option<u64>,
    pub duration: Option<crate::units::Duration>,
    pub warmup: Option<crate::units::Duration>,
    /// Target operations per second over all threads.
    pub target: Option<f64>,
    pub error_budget: ErrorBudget,
    pub seed: u64,
    /// Load (recreating what the load fills) before measuring.
    pub load: bool,
    /// Let the load delete what the target holds.
    pub reset: bool,
    /// Connections for the load phase; the first thread count when omitted.
    pub load_threads: Option<u32>,
    /// Records per insert; each generator has its own default.
    pub batch: Option<u64>,
    /// MySQL storage engine (`InnoDB`, `RocksDB`).
    pub engine: Option<String>,
    /// Draw the progress bar even when stderr is not a terminal.
    pub progress: bool,
}

/// A built-in generator with the fields that are its own. Its kind (the
/// one list of them) is [`Generator::kind`].
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    Ycsb(Ycsb),
    Candles(Candles),
    SysbenchMongo(SysbenchMongo),
    Iibench(Iibench),
    Tpcc(Tpcc),
}

/// YCSB core: workload `a`..`f` or a custom mix, over records of
/// `field_count` fields of `field_length` bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Ycsb {
    /// The workload's letter; `None` for a custom mix.
    pub letter: Option<char>,
    /// The operation mix: the letter's, or the custom one.
    pub mix: mix::Mix,
    /// The request distribution: as given, or the workload's own.
    pub distribution: Distribution,
    /// The hot set of the `hotspot` distribution.
    pub hotspot: Hotspot,
    pub field_count: u32,
    pub field_length: u32,
    pub insert_order: InsertOrder,
    /// Zero-pad key numbers to this many digits (YCSB `zeropadding`).
    pub key_padding: usize,
    /// Longest scan (uniform from 1).
    pub max_scan_length: u64,
}

/// Write-up 000's trade candles: which query a measured phase runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candles {
    pub queries: CandleQuery,
}

/// sysbench-mongodb: `collections` of `records` documents each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SysbenchMongo {
    pub collections: u32,
}

/// iiBench: bytes of each row's `data` column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Iibench {
    pub data_length: u32,
}

/// TPC-C: the warehouses loaded, and py-tpcc's document schema on MongoDB
/// (`None`: the default, embedded order lines).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tpcc {
    pub warehouses: u32,
    pub denormalize: Option<bool>,
}

/// sysbench-mongo's collections when the config names none: write-up
/// 002's 8 loaders each filled their own.
pub const COLLECTIONS: u32 = 8;
/// Most TPC-C warehouses a load may ask for.
pub const MAX_WAREHOUSES: u32 = 100_000;

impl Generator {
    /// Which generator this is.
    pub fn kind(&self) -> GeneratorKind {
        match self {
            Generator::Ycsb(_) => GeneratorKind::Ycsb,
            Generator::Candles(_) => GeneratorKind::Candles,
            Generator::SysbenchMongo(_) => GeneratorKind::SysbenchMongo,
            Generator::Iibench(_) => GeneratorKind::Iibench,
            Generator::Tpcc(_) => GeneratorKind::Tpcc,
        }
    }

    /// `ycsb:a`, `ycsb:custom`, `candles:by_ticker`, `tpcc`.
    pub fn label(&self) -> String {
        match self {
            Generator::Ycsb(y) => match y.letter {
                Some(l) => format!("ycsb:{l}"),
                None => "ycsb:custom".into(),
            },
            Generator::Candles(c) => format!("candles:{}", c.queries.name()),
            other => other.kind().name().into(),
        }
    }

    /// The YCSB operation mix; `None` for the other generators, which
    /// neither scan nor insert into the loaded records' key space.
    pub fn mix(&self) -> Option<&mix::Mix> {
        match self {
            Generator::Ycsb(y) => Some(&y.mix),
            _ => None,
        }
    }

    /// Refuses a store this generator does not run on (and tpcc's
    /// `denormalize` on a store without documents).
    pub(crate) fn check_store(&self, target: &stores::StoreTarget, errs: &mut Problems) {
        if let Generator::Tpcc(t) = self
            && t.denormalize.is_some()
            && target.kind != stores::StoreKind::Mongodb
        {
            errs.push(
                "denormalize",
                format!(
                    "py-tpcc's MongoDB document schema does not apply to {}, which has \
                     TPC-C's relational schema: leave it out, or run on a mongodb store",
                    target.kind
                ),
            );
        }
        self.kind().check_store(target, errs);
    }
}

impl DriveConfig {
    /// The typed form: the shared fields, and the generator `workload`
    /// names with the fields that are its own. A field given to a
    /// generator it does not apply to (`warehouses` outside tpcc, `mix`
    /// outside `custom`) or a custom workload without its mix goes to
    /// `errs`; the typed form is made anyway, so every problem is found.
    /// Fields that only some generators read and that a plan writes for
    /// every one (the dataset's record shape, `queries`, `collections`,
    /// `data_length`) are left out of the others without a word.
    pub(crate) fn typed(&self, errs: &mut Problems) -> WorkloadConfig {
        self.only_tpcc(errs);
        let generator = match self.workload.generator() {
            GeneratorKind::Ycsb => Generator::Ycsb(self.ycsb(errs)),
            GeneratorKind::Candles => Generator::Candles(Candles {
                queries: self.queries.unwrap_or_default(),
            }),
            GeneratorKind::SysbenchMongo => Generator::SysbenchMongo(SysbenchMongo {
                collections: self.collections.unwrap_or(COLLECTIONS).max(1),
            }),
            GeneratorKind::Iibench => Generator::Iibench(Iibench {
                data_length: self.data_length.unwrap_or(0),
            }),
            GeneratorKind::Tpcc => Generator::Tpcc(Tpcc {
                warehouses: self.warehouses.unwrap_or(1).max(1),
                denormalize: self.denormalize,
            }),
        };
        WorkloadConfig {
            common: self.common(),
            generator,
        }
    }

    fn common(&self) -> Common {
        Common {
            name: self.name.clone(),
            store: self.store.clone(),
            records: self.records,
            threads: self.threads.clone(),
            operations: self.operations,
            duration: self.duration,
            warmup: self.warmup,
            target: self.target,
            error_budget: self.error_budget.clone(),
            seed: self.seed,
            load: self.load,
            reset: self.reset,
            load_threads: self.load_threads,
            batch: self.batch,
            engine: self.engine.clone(),
            progress: self.progress,
        }
    }

    /// `warehouses` belongs to tpcc, from 1 to [`MAX_WAREHOUSES`]; so does
    /// `denormalize`.
    fn only_tpcc(&self, errs: &mut Problems) {
        match (self.workload, self.warehouses) {
            (WorkloadKind::Tpcc, Some(w)) if w == 0 || w > MAX_WAREHOUSES => errs.push(
                "warehouses",
                format!("{w} is out of range (1 to {MAX_WAREHOUSES} warehouses)"),
            ),
            (WorkloadKind::Tpcc, _) | (_, None) => {}
            (_, Some(_)) => errs.push(
                "warehouses",
                "`warehouses` only applies to `workload: tpcc`",
            ),
        }
        if self.workload != WorkloadKind::Tpcc && self.denormalize.is_some() {
            errs.push(
                "denormalize",
                "`denormalize` only applies to `workload: tpcc` (on mongodb)",
            );
        }
    }

    /// YCSB's fields, with the mix of its letter or the custom one.
    fn ycsb(&self, errs: &mut Problems) -> Ycsb {
        let letter = self.letter();
        let (mix, dist) = self.mix_of(letter, errs);
        Ycsb {
            letter,
            mix,
            distribution: self.distribution.unwrap_or(dist),
            hotspot: self.hotspot.unwrap_or_default(),
            field_count: self.field_count,
            field_length: self.field_length,
            insert_order: self.insert_order,
            key_padding: self.key_padding,
            max_scan_length: self.max_scan_length,
        }
    }

    /// The YCSB letter of workloads `a`..`f`.
    fn letter(&self) -> Option<char> {
        match self.workload {
            WorkloadKind::A => Some('a'),
            WorkloadKind::B => Some('b'),
            WorkloadKind::C => Some('c'),
            WorkloadKind::D => Some('d'),
            WorkloadKind::E => Some('e'),
            WorkloadKind::F => Some('f'),
            _ => None,
        }
    }

    /// The operation mix and its default distribution: the workload
    /// letter's, or `mix` for `custom`.
    fn mix_of(&self, letter: Option<char>, errs: &mut Problems) -> (mix::Mix, Distribution) {
        let fallback = || mix::Mix::ycsb('c').expect("c exists");
        match (letter, &self.mix) {
            (Some(l), None) => mix::Mix::ycsb(l).expect("a..f are YCSB workloads"),
            (Some(l), Some(_)) => {
                errs.push(
                    "workload",
                    format!(
                        "`mix` is only for workload `custom`, not `{l}`; drop it or set workload: custom"
                    ),
                );
                mix::Mix::ycsb(l).expect("a..f are YCSB workloads")
            }
            (None, Some(m)) => match mix::Mix::from_map(m) {
                Ok(m) => (m, Distribution::Zipfian),
                Err(e) => {
                    errs.push("workload", e.to_string());
                    fallback()
                }
            },
            (None, None) => {
                errs.push(
                    "workload",
                    "workload `custom` needs `mix`, e.g. {read: 0.9, update: 0.1}",
                );
                fallback()
            }
        }
    }

    /// `ycsb:a`, `ycsb:custom`, `candles:by_ticker`.
    pub fn label(&self) -> String {
        self.typed(&mut Problems::default()).generator.label()
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

/// A checked configuration, ready to run: what the skeleton and every
/// generator read, and the generator with its own fields.
#[derive(Debug, Clone)]
pub struct Validated {
    pub run: Run,
    pub generator: Generator,
}

/// What the skeleton (`workload::phases`) and every generator read of a
/// checked configuration.
#[derive(Debug, Clone)]
pub struct Run {
    pub common: Common,
    pub target: stores::StoreTarget,
    /// When a measured phase stops; `None`: the load only.
    pub stop: Option<driver::Stop>,
    pub budget: driver::Budget,
    /// The measured phases' thread counts, in order.
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
