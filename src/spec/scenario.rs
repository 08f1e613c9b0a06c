//! Scenarios: the matrix, the dataset, the load and the measured phases.
//! The full schema, with an example of every field, is in docs/specs.md.

use super::de::{Fields, FromNode, Text, check_ident, check_spec_name, choice, one_or_many, word};
use super::diag::{Cx, Origin, join};
use super::yaml::{Node, NodeKind};
use crate::model::DocumentSchema;
use crate::model::settle::{Settle, SettleMemory};
use crate::units::{Bytes, Duration, Share};
use crate::workload::bounds;
use crate::workload::mix::MixProblem;
/// The spec names the generator's own types, so what is parsed is what runs.
pub use crate::workload::{Distribution, InsertOrder, candles::CandleQuery};
use std::collections::BTreeMap;

/// A scenario spec (`scenarios/<name>.yaml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub matrix: Matrix,
    /// Knob overrides for every cell (raw text; typed per engine at plan time).
    pub knobs: BTreeMap<String, String>,
    pub dataset: Option<Dataset>,
    pub repetitions: u32,
    pub load: Option<Load>,
    /// Settle as written: a list of memory caps sweeps them, one cell each.
    pub settle: Option<SettleSweep>,
    pub phases: Vec<Phase>,
    /// The write-up this scenario reproduces and what it published.
    pub reproduces: Option<Box<super::writeup::Reproduces>>,
    /// Whether a load may be snapshot and restored (`snapshots: false`
    /// loads every cell afresh; `{verify: true}` digests the records).
    pub snapshots: SnapshotUse,
    pub origin: Origin,
}

/// `snapshots: true | false | {verify: true}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotUse {
    /// Cells restore a snapshot of an equal load instead of loading.
    pub enabled: bool,
    /// Digest the records after every load and restore, and compare: a
    /// restore that differs from its load is a fidelity violation.
    pub verify: bool,
}

impl Default for SnapshotUse {
    fn default() -> Self {
        SnapshotUse {
            enabled: true,
            verify: false,
        }
    }
}

impl FromNode for SnapshotUse {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        if let NodeKind::Map(_) = node.kind {
            let f = Fields::open(node, cx, path, &["enabled", "verify"])?;
            return Some(SnapshotUse {
                enabled: f.or(cx, "enabled", true),
                verify: f.or(cx, "verify", false),
            });
        }
        bool::from_node(node, cx, path).map(|enabled| SnapshotUse {
            enabled,
            verify: false,
        })
    }
}

/// Engines x environments, and the engine x environment pairs listed
/// beside (or instead of) that cross product (`matrix.cells`).
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Every engine entry a cell uses: those of `matrix.engines`, then
    /// those only a listed cell names.
    pub engines: Vec<EngineRef>,
    /// Every environment a cell uses, in the same order.
    pub environments: Vec<EnvRef>,
    /// The cells, as indexes into `engines` and `environments`: the cross
    /// product of `matrix.engines` and `matrix.environments`, then each
    /// listed cell.
    pub pairs: Vec<(usize, usize)>,
}

impl Matrix {
    /// The full cross product of `engines` and `environments`.
    pub fn cross(engines: Vec<EngineRef>, environments: Vec<EnvRef>) -> Matrix {
        let pairs = (0..environments.len())
            .flat_map(|v| (0..engines.len()).map(move |e| (e, v)))
            .collect();
        Matrix {
            engines,
            environments,
            pairs,
        }
    }

    /// The engine entries that have a cell in environment `env` (an index
    /// into `environments`), in the order of `engines`.
    pub(crate) fn engines_in(&self, env: usize) -> impl Iterator<Item = &EngineRef> {
        self.engines
            .iter()
            .enumerate()
            .filter(move |(e, _)| self.pairs.contains(&(*e, env)))
            .map(|(_, r)| r)
    }
}

/// One listed cell: `{engine: tokumx@1.5, environment: vm-4cpu}`.
struct CellRef {
    engine: EngineRef,
    environment: EnvRef,
}

impl FromNode for CellRef {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(node, cx, path, &["engine", "environment"])?;
        let engine = f.req(cx, "engine");
        let environment = f.req(cx, "environment");
        Some(CellRef {
            engine: engine?,
            environment: environment?,
        })
    }
}

impl EngineRef {
    /// The same entry, wherever it is written.
    fn same_entry(&self, o: &EngineRef) -> bool {
        (
            &self.engine,
            &self.version,
            &self.knobs,
            &self.label,
            &self.topology,
        ) == (&o.engine, &o.version, &o.knobs, &o.label, &o.topology)
    }
}

impl EnvRef {
    /// The same environment with the same scale and settings.
    fn same_entry(&self, o: &EnvRef) -> bool {
        (&self.name, &self.scale, &self.set) == (&o.name, &o.scale, &o.set)
    }
}

/// `redis@7.0`, or `{engine: tokumx@2.0.2, knobs: {...}}` for knobs that only
/// this engine takes.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineRef {
    pub engine: String,
    /// `None` = the engine's default version.
    pub version: Option<String>,
    pub knobs: BTreeMap<String, String>,
    /// Name of the cell in ids and reports when one engine@version appears
    /// twice with different knobs (`mongodb-sync60`).
    pub label: Option<String>,
    /// Field path of this entry (`matrix.engines[1]`), for messages.
    pub field: String,
    /// The entry's own topology, over the environment's.
    pub topology: Option<crate::model::Topology>,
}

impl EngineRef {
    /// `engine@version` as written (without the version when omitted).
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) => format!("{}@{v}", self.engine),
            None => self.engine.clone(),
        }
    }
}

/// An environment name, or `{name, scale, set}` to fit a smaller host.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvRef {
    pub name: String,
    pub scale: Option<f64>,
    /// Environment overrides (`server.cpus: "1"`), printed by plan as deviations.
    pub set: Vec<(String, String)>,
    pub field: String,
}

/// The dataset and the load are the generator's: what is read is what
/// loads, and what the snapshot key holds.
pub use crate::workload::{Dataset, Load};

/// What the load phase inserts: one of the built-in generators.
pub use crate::workload::GeneratorKind as LoadWorkload;

/// The scenario's `settle:`; `memory` may list several caps
/// (`["200% of data", "25% of data"]`), and each becomes its own cell.
#[derive(Debug, Clone, PartialEq)]
pub struct SettleSweep {
    /// Empty = keep the environment's cap.
    pub memory: Vec<SettleMemory>,
    pub drop_caches: bool,
}

impl SettleSweep {
    /// One settle per cell: one per listed cap, or one without a cap.
    pub fn cells(&self) -> Vec<Settle> {
        if self.memory.is_empty() {
            return vec![Settle {
                memory: None,
                drop_caches: self.drop_caches,
            }];
        }
        self.memory
            .iter()
            .map(|m| Settle {
                memory: Some(*m),
                drop_caches: self.drop_caches,
            })
            .collect()
    }
}

/// A measured phase.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Phase {
    pub name: String,
    pub work: Work,
    /// One measured run per value.
    pub threads: Vec<u32>,
    pub length: Length,
    pub warmup: Duration,
    /// Target operations per second over all threads.
    pub target: Option<u64>,
    pub expect: Option<Expect>,
    /// Failed operations allowed before the phase fails.
    pub error_budget: u64,
}

/// A phase's length and fidelity assertion are the model's: a cell's
/// phases carry them to `run` as read.
pub use crate::model::phase::{Expect, Length};

/// What a phase runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    Builtin(Builtin),
    Tool(Tool),
}

/// The built-in load generator.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Builtin {
    /// YCSB core workload a..f or a custom mix.
    Ycsb {
        workload: YcsbWorkload,
        distribution: Distribution,
    },
    /// Write-up 000's candle queries.
    Candles { queries: CandleQuery },
    /// sysbench-mongodb's OLTP transaction (write-up 002) over
    /// `collections` collections.
    SysbenchMongo { collections: u32 },
    /// iiBench: insert-only batches into `purchases_index`, rows/s over time.
    Iibench,
    /// TPC-C's five transactions over `warehouses` warehouses; on
    /// MongoDB in py-tpcc's document schema, which `denormalize` names
    /// (py-tpcc's option; `None` when not given: embedded order lines).
    Tpcc {
        warehouses: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        denormalize: Option<bool>,
    },
}

/// YCSB workload letter or a custom mix.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum YcsbWorkload {
    A,
    B,
    C,
    D,
    E,
    F,
    Custom(Mix),
}

impl YcsbWorkload {
    /// The default request distribution of the workload (docs/DESIGN.md, "Workloads").
    pub(crate) fn default_distribution(&self) -> Distribution {
        match self {
            YcsbWorkload::D => Distribution::Latest,
            _ => Distribution::Zipfian,
        }
    }
}

/// Proportions of operations; they sum to 1
/// ([`check_proportions`](crate::workload::mix::check_proportions)).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Mix {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
}

/// An external tool.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    Sysbench {
        test: String,
        tables: u32,
        table_size: u64,
        /// Threads of `prepare`.
        loaders: u32,
    },
    Pgbench {
        scale: u32,
        script: PgbenchScript,
    },
    Ycsb {
        argv: Vec<String>,
    },
    Command {
        argv: Vec<String>,
        throughput: String,
        latency: Option<String>,
        /// Numbers that shrink with the environment's scale, filled into
        /// argv as `{name}` at plan time (`warehouses: 1000`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        scaled: BTreeMap<String, u64>,
    },
    /// py-tpcc's `tpcc.py` (the user's install) against MongoDB.
    Pytpcc(Pytpcc),
}

/// `tool: {pytpcc: {...}}`: py-tpcc as its users run it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pytpcc {
    /// `--warehouses`; shrinks with the environment's scale.
    pub warehouses: u64,
    /// A timed load alone (`--no-execute`); otherwise the transactions.
    pub load: bool,
    /// `tpcc.py` or its directory (relative to the project home);
    /// `None` finds `tpcc.py` on PATH.
    pub path: Option<String>,
    /// The interpreter (`pypy`, `python2`); `None` runs `tpcc.py` itself.
    pub python: Option<String>,
    pub denormalize: bool,
    /// False writes `notransactions = True` (standalone servers).
    pub transactions: bool,
    /// The load's floor rate in warehouses a minute: a load slower than
    /// this is taken as stuck and killed. `None`: py-tpcc's default
    /// ([`crate::workload::tools::pytpcc::LOAD_FLOOR_PER_MIN`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_load_rate: Option<f64>,
    /// The pymongo this py-tpcc was written for (`3.13.0`): it runs in
    /// benchcage's virtualenv with that pymongo (`run --fetch` makes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pymongo: Option<String>,
}

/// Which pgbench transaction script runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PgbenchScript {
    /// `-b NAME`: tpcb-like, simple-update or select-only.
    Builtin(String),
    /// `-f PATH`, relative to the project home.
    Script(String),
}

const SYSBENCH_TESTS: &[&str] = &[
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
    "bulk_insert",
];

impl FromNode for EngineRef {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let (label, knobs, cell_label, topology) = match &node.kind {
            NodeKind::Map(_) => {
                let f = Fields::open(node, cx, path, &["engine", "knobs", "label", "topology"])?;
                let knobs: BTreeMap<String, Text> = f.or(cx, "knobs", BTreeMap::new());
                let cell_label: Option<String> = f.opt(cx, "label");
                if let Some(l) = &cell_label {
                    check_ident(&f, cx, "label", l, "-_.@");
                }
                (
                    f.req::<String>(cx, "engine")?,
                    knobs.into_iter().map(|(k, v)| (k, v.0)).collect(),
                    cell_label,
                    f.opt(cx, "topology"),
                )
            }
            _ => (
                String::from_node(node, cx, path)?,
                BTreeMap::new(),
                None,
                None,
            ),
        };
        let (engine, version) = match label.split_once('@') {
            Some((e, v)) => (e.to_string(), Some(v.to_string())),
            None => (label.clone(), None),
        };
        if engine.is_empty() || version.as_deref() == Some("") {
            cx.error(
                node.pos,
                path,
                format!("`{label}` is not ENGINE or ENGINE@VERSION"),
                None,
            );
            return None;
        }
        Some(EngineRef {
            engine,
            version,
            knobs,
            label: cell_label,
            field: path.to_string(),
            topology,
        })
    }
}

impl FromNode for EnvRef {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        match &node.kind {
            NodeKind::Map(_) => {
                let f = Fields::open(node, cx, path, &["name", "scale", "set"])?;
                let scale: Option<f64> = f.opt(cx, "scale");
                if let Some(s) = scale
                    && !(s > 0.0 && s <= 64.0)
                {
                    cx.error(
                        f.pos_of("scale"),
                        &f.field("scale"),
                        format!("scale {s} is out of range"),
                        Some("a factor above 0 and at most 64".into()),
                    );
                }
                let set: Vec<(String, String)> = match f.get("set") {
                    Some(n) => {
                        let m: BTreeMap<String, Text> =
                            BTreeMap::from_node(n, cx, &f.field("set"))?;
                        m.into_iter().map(|(k, v)| (k, v.0)).collect()
                    }
                    None => Vec::new(),
                };
                Some(EnvRef {
                    name: f.req(cx, "name")?,
                    scale,
                    set,
                    field: path.to_string(),
                })
            }
            _ => Some(EnvRef {
                name: String::from_node(node, cx, path)?,
                scale: None,
                set: Vec::new(),
                field: path.to_string(),
            }),
        }
    }
}

impl FromNode for Dataset {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(
            node,
            cx,
            path,
            &["records", "field_count", "field_length", "insert_order"],
        )?;
        let records: Option<u64> = f.req(cx, "records");
        let field_count = f.or(cx, "field_count", 10u32);
        let field_length = f.or(cx, "field_length", 100u32);
        let orders = [
            ("hashed", InsertOrder::Hashed),
            ("ordered", InsertOrder::Ordered),
        ];
        let insert_order = f
            .get("insert_order")
            .and_then(|n| choice(n, cx, &f.field("insert_order"), &orders))
            .unwrap_or(InsertOrder::Hashed);
        if records == Some(0) {
            cx.error(
                f.pos_of("records"),
                &f.field("records"),
                "a dataset needs at least one record",
                None,
            );
        } else if let Some(Err(r)) = records.map(|n| bounds::check_records(n, 0)) {
            refuse(cx, &f, "records", r);
        }
        if let Err(r) = bounds::check_record_shape(field_count, field_length) {
            let key = if field_count == 0 || field_count > bounds::MAX_FIELDS {
                "field_count"
            } else {
                "field_length"
            };
            refuse(cx, &f, key, r);
        }
        Some(Dataset {
            records: records?,
            field_count,
            field_length,
            insert_order,
        })
    }
}

impl FromNode for Load {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(
            node,
            cx,
            path,
            &[
                "threads",
                "workload",
                "batch",
                "warehouses",
                "denormalize",
                "measured",
            ],
        )?;
        let threads = f.or(cx, "threads", 1u32);
        let measured = f.or(cx, "measured", false);
        let workloads = LoadWorkload::ALL.map(|w| (w.name(), w));
        let workload = match f.get("workload") {
            Some(n) => choice(n, cx, &f.field("workload"), &workloads)?,
            None => LoadWorkload::Ycsb,
        };
        let default_batch = match workload {
            LoadWorkload::Candles => 500u32,
            LoadWorkload::SysbenchMongo => crate::workload::sysbench_mongo::BATCH as u32,
            LoadWorkload::Iibench => crate::workload::iibench::BATCH as u32,
            LoadWorkload::Ycsb | LoadWorkload::Tpcc => 1,
        };
        let warehouses: Option<u32> = f.opt(cx, "warehouses");
        if let Some(w) = warehouses {
            check_warehouses(cx, &f, w);
            if workload != LoadWorkload::Tpcc {
                only_for_tpcc(cx, &f, "warehouses");
            }
        }
        let denormalize: Option<bool> = f.opt(cx, "denormalize");
        if denormalize.is_some() && workload != LoadWorkload::Tpcc {
            only_for_tpcc(cx, &f, "denormalize");
        }
        let batch = f.or(cx, "batch", default_batch);
        if let Err(r) = bounds::check_thread_count(threads) {
            refuse(cx, &f, "threads", r);
        }
        if let Err(r) = bounds::check_batch(batch as u64) {
            refuse(cx, &f, "batch", r);
        }
        Some(Load {
            threads,
            workload,
            batch,
            warehouses,
            denormalize,
            collections: None,
            measured,
        })
    }
}

impl FromNode for SettleMemory {
    fn from_node(n: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let s = String::from_node(n, cx, path)?;
        if let Some(share) = s.strip_suffix("of data") {
            match share.trim().parse::<Share>() {
                Ok(sh) => Some(SettleMemory::OfData(sh.fraction())),
                Err(e) => {
                    cx.error(
                        n.pos,
                        path,
                        e.0,
                        Some("a share of the data like `25% of data`".into()),
                    );
                    None
                }
            }
        } else {
            match s.parse::<Bytes>() {
                Ok(b) if b.0 > 0 => Some(SettleMemory::Absolute(b)),
                Ok(_) => {
                    cx.error(
                        n.pos,
                        path,
                        format!("settle memory `{s}` is 0 bytes"),
                        Some("a size, or a share of the data like `25% of data`".into()),
                    );
                    None
                }
                Err(e) => {
                    cx.error(
                        n.pos,
                        path,
                        e.0,
                        Some("a size, or a share of the data like `25% of data`".into()),
                    );
                    None
                }
            }
        }
    }
}

impl FromNode for SettleSweep {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(node, cx, path, &["memory", "drop_caches"])?;
        let field = f.field("memory");
        let memory: Vec<SettleMemory> = match f.get("memory") {
            Some(n) => {
                let list = one_or_many::<SettleMemory>(n, cx, &field)?;
                if list.is_empty() {
                    cx.error(
                        n.pos,
                        &field,
                        "an empty list of memory caps",
                        Some("list at least one cap, like `[\"100% of data\", \"25% of data\"]`, or drop `memory`".into()),
                    );
                    return None;
                }
                let mut tags = std::collections::BTreeSet::new();
                for m in &list {
                    if !tags.insert(m.tag()) {
                        cx.error(
                            n.pos,
                            &field,
                            format!("the memory cap `{}` is listed twice", m.text()),
                            Some("list each cap once".into()),
                        );
                        return None;
                    }
                }
                list
            }
            None => Vec::new(),
        };
        Some(SettleSweep {
            memory,
            drop_caches: f.or(cx, "drop_caches", false),
        })
    }
}

fn mix_from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Mix> {
    let f = Fields::open(
        node,
        cx,
        path,
        &["read", "update", "insert", "scan", "read_modify_write"],
    )?;
    let m = Mix {
        read: f.or(cx, "read", 0.0),
        update: f.or(cx, "update", 0.0),
        insert: f.or(cx, "insert", 0.0),
        scan: f.or(cx, "scan", 0.0),
        read_modify_write: f.or(cx, "read_modify_write", 0.0),
    };
    let parts = [m.read, m.update, m.insert, m.scan, m.read_modify_write];
    for problem in crate::workload::mix::check_proportions(&parts) {
        let hint = (problem != MixProblem::Negative)
            .then(|| "e.g. {read: 0.9, update: 0.05, insert: 0.05}".to_string());
        cx.error(f.pos, path, problem.to_string(), hint);
    }
    Some(m)
}

fn builtin_from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Builtin> {
    let f = Fields::open(
        node,
        cx,
        path,
        &[
            "workload",
            "distribution",
            "mix",
            "queries",
            "warehouses",
            "collections",
            "denormalize",
        ],
    )?;
    let wl_node = match f.get("workload") {
        Some(n) => n,
        None => {
            f.req::<String>(cx, "workload");
            return None;
        }
    };
    // YCSB's workloads by letter or `custom`, then the other generators.
    let known: Vec<&str> = ["a", "b", "c", "d", "e", "f", "custom"]
        .into_iter()
        .chain(
            LoadWorkload::ALL
                .iter()
                .filter(|g| **g != LoadWorkload::Ycsb)
                .map(|g| g.name()),
        )
        .collect();
    let wl = word(wl_node, cx, &f.field("workload"), &known)?;
    if wl == "candles" {
        return candles_from_fields(&f, cx);
    }
    if wl == "tpcc" {
        return tpcc_from_fields(&f, cx);
    }
    for k in ["warehouses", "denormalize"] {
        if f.get(k).is_some() {
            only_for_tpcc(cx, &f, k);
        }
    }
    let collections = sysbench_collections(&f, cx, wl);
    if wl == "sysbench-mongo" || wl == "iibench" {
        for k in ["mix", "distribution", "queries"] {
            if f.get(k).is_some() {
                cx.error(
                    f.pos_of(k),
                    &f.field(k),
                    format!("`{k}` does not apply to {wl}"),
                    None,
                );
            }
        }
        return Some(match collections {
            Some(collections) => Builtin::SysbenchMongo { collections },
            None => Builtin::Iibench,
        });
    }
    if f.get("queries").is_some() {
        cx.error(
            f.pos_of("queries"),
            &f.field("queries"),
            "`queries` only applies to `workload: candles`",
            None,
        );
    }
    let workload = match wl {
        "a" => YcsbWorkload::A,
        "b" => YcsbWorkload::B,
        "c" => YcsbWorkload::C,
        "d" => YcsbWorkload::D,
        "e" => YcsbWorkload::E,
        "f" => YcsbWorkload::F,
        _ => match f.get("mix") {
            Some(n) => YcsbWorkload::Custom(mix_from_node(n, cx, &f.field("mix"))?),
            None => {
                cx.error(
                    f.pos,
                    &f.field("mix"),
                    "a custom workload needs `mix`",
                    Some("mix: {read: 0.9, update: 0.05, insert: 0.05}".into()),
                );
                return None;
            }
        },
    };
    if wl != "custom" && f.get("mix").is_some() {
        cx.error(
            f.pos_of("mix"),
            &f.field("mix"),
            format!("`mix` only applies to `workload: custom`, not `{wl}`"),
            None,
        );
    }
    let distributions = [
        ("uniform", Distribution::Uniform),
        ("zipfian", Distribution::Zipfian),
        ("latest", Distribution::Latest),
        ("hotspot", Distribution::Hotspot),
        ("sequential", Distribution::Sequential),
    ];
    let distribution = match f.get("distribution") {
        Some(n) => choice(n, cx, &f.field("distribution"), &distributions)?,
        None => workload.default_distribution(),
    };
    Some(Builtin::Ycsb {
        workload,
        distribution,
    })
}

/// `builtin: {workload: candles, queries}`; `mix` and `distribution` do
/// not apply.
fn candles_from_fields(f: &Fields, cx: &mut Cx) -> Option<Builtin> {
    for k in ["mix", "distribution"] {
        if f.get(k).is_some() {
            cx.error(
                f.pos_of(k),
                &f.field(k),
                format!("`{k}` does not apply to candles"),
                None,
            );
        }
    }
    let queries = [
        ("by_ticker", CandleQuery::ByTicker),
        ("interval", CandleQuery::Interval),
        ("day", CandleQuery::Day),
    ];
    let queries = match f.get("queries") {
        Some(n) => choice(n, cx, &f.field("queries"), &queries)?,
        None => {
            f.req::<String>(cx, "queries");
            return None;
        }
    };
    Some(Builtin::Candles { queries })
}

/// `collections` of `builtin: {workload: sysbench-mongo, collections: N}`
/// (8 when omitted, from 1 to
/// [`crate::workload::sysbench_mongo::MAX_COLLECTIONS`]); `None` for
/// another workload, which must not have it.
fn sysbench_collections(f: &Fields, cx: &mut Cx, wl: &str) -> Option<u32> {
    if wl != "sysbench-mongo" {
        if f.get("collections").is_some() {
            cx.error(
                f.pos_of("collections"),
                &f.field("collections"),
                "`collections` only applies to `workload: sysbench-mongo`",
                None,
            );
        }
        return None;
    }
    use crate::workload::sysbench_mongo::{COLLECTIONS, MAX_COLLECTIONS};
    let n = f.or(cx, "collections", COLLECTIONS);
    if n == 0 || n > MAX_COLLECTIONS {
        cx.error(
            f.pos_of("collections"),
            &f.field("collections"),
            format!("{n} collections is out of range"),
            Some(format!("1 to {MAX_COLLECTIONS}; write-up 002 has 8")),
        );
    }
    Some(n)
}

/// `key` given to a workload other than TPC-C.
fn only_for_tpcc(cx: &mut Cx, f: &Fields, key: &str) {
    cx.error(
        f.pos_of(key),
        &f.field(key),
        format!("`{key}` only applies to `workload: tpcc`"),
        None,
    );
}

/// `builtin: {workload: tpcc, warehouses: N, denormalize: B}` (1
/// warehouse when omitted; `denormalize` is py-tpcc's MongoDB schema
/// option); `mix`, `distribution` and `queries` do not apply.
fn tpcc_from_fields(f: &Fields, cx: &mut Cx) -> Option<Builtin> {
    for k in ["mix", "distribution", "queries"] {
        if f.get(k).is_some() {
            cx.error(
                f.pos_of(k),
                &f.field(k),
                format!("`{k}` does not apply to tpcc"),
                None,
            );
        }
    }
    let warehouses = f.or(cx, "warehouses", 1u32);
    check_warehouses(cx, f, warehouses);
    let denormalize = f.opt(cx, "denormalize");
    Some(Builtin::Tpcc {
        warehouses,
        denormalize,
    })
}

/// 1 to [`crate::workload::tpcc::MAX_WAREHOUSES`] warehouses.
fn check_warehouses(cx: &mut Cx, f: &Fields, w: u32) {
    let most = crate::workload::tpcc::MAX_WAREHOUSES;
    if w == 0 || w > most {
        cx.error(
            f.pos_of("warehouses"),
            &f.field("warehouses"),
            format!("{w} warehouses is out of range"),
            Some(format!("1 to {most}")),
        );
    }
}

/// An error at phase `i`'s `builtin`.
fn builtin_error(cx: &mut Cx, i: usize, message: String, hint: &str) {
    let field = format!("phases[{i}].builtin");
    let pos = cx.positions.get(&field).copied().unwrap_or_default();
    cx.error(pos, &field, message, Some(hint.into()));
}

/// A sysbench-mongo load fills its phases' collections; phases with other
/// collections than the first's are refused.
fn load_collections(load: &mut Option<Load>, phases: &[Phase], cx: &mut Cx) {
    let Some(l) = load
        .as_mut()
        .filter(|l| l.workload == LoadWorkload::SysbenchMongo)
    else {
        return;
    };
    for (i, p) in phases.iter().enumerate() {
        let Work::Builtin(Builtin::SysbenchMongo { collections }) = p.work else {
            continue;
        };
        match l.collections {
            None => l.collections = Some(collections),
            Some(c) if c != collections => {
                builtin_error(
                    cx,
                    i,
                    format!("{collections} collections, but the load fills {c}"),
                    "give every sysbench-mongo phase the same collections",
                );
            }
            Some(_) => {}
        }
    }
}

/// The TPC-C load takes its phases' warehouses; a phase with other
/// warehouses than the load's is refused, and so is a TPC-C phase after
/// another load.
fn tpcc_warehouses(load: &mut Option<Load>, phases: &[Phase], cx: &mut Cx) {
    for (i, p) in phases.iter().enumerate() {
        let Work::Builtin(Builtin::Tpcc { warehouses, .. }) = p.work else {
            continue;
        };
        let field = format!("phases[{i}].builtin");
        let pos = cx.positions.get(&field).copied().unwrap_or_default();
        match load {
            Some(l) if l.workload == LoadWorkload::Tpcc => match l.warehouses {
                None => l.warehouses = Some(warehouses),
                Some(w) if w != warehouses => cx.error(
                    pos,
                    &field,
                    format!("{warehouses} warehouses, but the load loads {w}"),
                    Some("give every TPC-C phase the load's warehouses".into()),
                ),
                Some(_) => {}
            },
            Some(l) => cx.error(
                pos,
                &field,
                format!(
                    "a TPC-C phase needs TPC-C's tables, but the load inserts {}",
                    l.workload
                ),
                Some("load: {workload: tpcc}".into()),
            ),
            None => {}
        }
    }
    if let Some(l) = load
        && l.workload == LoadWorkload::Tpcc
    {
        l.warehouses.get_or_insert(1);
    }
}

/// One document schema for a cell's TPC-C: the load's `denormalize`, else
/// the first TPC-C phase's, given to the load and every TPC-C phase that
/// does not say; one that says otherwise is refused (its terminals would
/// look for order lines where the load did not put them).
fn tpcc_schema(load: &mut Option<Load>, phases: &mut [Phase], cx: &mut Cx) {
    let tpcc_load = load.as_mut().filter(|l| l.workload == LoadWorkload::Tpcc);
    let from_phases = phases.iter().find_map(|p| match p.work {
        Work::Builtin(Builtin::Tpcc { denormalize, .. }) => denormalize,
        _ => None,
    });
    let (agreed, source) = match tpcc_load.as_ref().and_then(|l| l.denormalize) {
        Some(d) => (d, "the load"),
        None => match from_phases {
            Some(d) => (d, "the first TPC-C phase"),
            None => return,
        },
    };
    for (i, p) in phases.iter_mut().enumerate() {
        let Work::Builtin(Builtin::Tpcc { denormalize, .. }) = &mut p.work else {
            continue;
        };
        match *denormalize {
            None => *denormalize = Some(agreed),
            Some(d) if d != agreed => {
                builtin_error(
                    cx,
                    i,
                    format!(
                        "`denormalize: {d}`, but {source} has `denormalize: {agreed}` ({})",
                        DocumentSchema::from_denormalize(Some(agreed))
                    ),
                    "give the load and every TPC-C phase one `denormalize`",
                );
            }
            Some(_) => {}
        }
    }
    if let Some(l) = tpcc_load {
        l.denormalize = Some(agreed);
    }
}

fn tool_from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Tool> {
    let f = Fields::open(
        node,
        cx,
        path,
        &["sysbench", "pgbench", "ycsb", "command", "pytpcc"],
    )?;
    let keys = f.keys();
    if keys.len() != 1 {
        cx.error(
            f.pos,
            path,
            "name exactly one tool: sysbench, pgbench, ycsb, pytpcc or command",
            None,
        );
        return None;
    }
    let p = f.field(keys[0]);
    let n = f.get(keys[0])?;
    match keys[0] {
        "sysbench" => sysbench_from_node(n, cx, &p),
        "pgbench" => pgbench_from_node(n, cx, &p),
        "ycsb" => ycsb_from_node(n, cx, &p),
        "pytpcc" => pytpcc_from_node(n, cx, &p),
        _ => command_from_node(n, cx, &p),
    }
}

/// The most threads sysbench prepare may run.
const MAX_LOADERS: u32 = 256;

/// `tool: {sysbench: {test, tables, table_size, loaders}}`.
fn sysbench_from_node(n: &Node, cx: &mut Cx, p: &str) -> Option<Tool> {
    let t = Fields::open(n, cx, p, &["test", "tables", "table_size", "loaders"])?;
    let test = t
        .get("test")
        .and_then(|tn| word(tn, cx, &t.field("test"), SYSBENCH_TESTS));
    if t.get("test").is_none() {
        t.req::<String>(cx, "test");
    }
    let tables = t.or(cx, "tables", 1u32);
    let table_size = t.or(cx, "table_size", 10_000u64);
    if tables == 0 || table_size == 0 {
        cx.error(t.pos, p, "tables and table_size must be at least 1", None);
    }
    let loaders = t.or(cx, "loaders", 1u32);
    if !(1..=MAX_LOADERS).contains(&loaders) {
        cx.error(
            t.pos_of("loaders"),
            &t.field("loaders"),
            format!("loaders must be 1 to {MAX_LOADERS}, not {loaders}"),
            Some("the threads of sysbench prepare; write-up 002 loads with 8".into()),
        );
    }
    Some(Tool::Sysbench {
        test: test?.to_string(),
        tables,
        table_size,
        loaders,
    })
}

/// `tool: {pgbench: {scale, builtin | script}}`.
fn pgbench_from_node(n: &Node, cx: &mut Cx, p: &str) -> Option<Tool> {
    let t = Fields::open(n, cx, p, &["scale", "builtin", "script"])?;
    let scale = t.or(cx, "scale", 1u32);
    if scale == 0 {
        cx.error(
            t.pos_of("scale"),
            &t.field("scale"),
            "pgbench scale must be at least 1",
            None,
        );
    }
    let script = match (t.get("builtin"), t.get("script")) {
        (Some(b), None) => PgbenchScript::Builtin(
            word(
                b,
                cx,
                &t.field("builtin"),
                &["tpcb-like", "simple-update", "select-only"],
            )?
            .to_string(),
        ),
        (None, Some(s)) => PgbenchScript::Script(String::from_node(s, cx, &t.field("script"))?),
        (None, None) => PgbenchScript::Builtin("tpcb-like".into()),
        (Some(_), Some(_)) => {
            cx.error(t.pos, p, "give `builtin` or `script`, not both", None);
            return None;
        }
    };
    Some(Tool::Pgbench { scale, script })
}

/// `tool: {ycsb: {argv}}`.
fn ycsb_from_node(n: &Node, cx: &mut Cx, p: &str) -> Option<Tool> {
    let t = Fields::open(n, cx, p, &["argv"])?;
    let argv: Vec<String> = t.req(cx, "argv")?;
    if argv.is_empty() {
        cx.error(t.pos, &t.field("argv"), "argv is empty", None);
    }
    Some(Tool::Ycsb { argv })
}

/// `tool: {pytpcc: {warehouses, load, path, python, denormalize, transactions, min_load_rate, pymongo}}`.
fn pytpcc_from_node(n: &Node, cx: &mut Cx, p: &str) -> Option<Tool> {
    let t = Fields::open(
        n,
        cx,
        p,
        &[
            "warehouses",
            "load",
            "path",
            "python",
            "denormalize",
            "transactions",
            "min_load_rate",
            "pymongo",
        ],
    )?;
    let warehouses: Option<u64> = t.req(cx, "warehouses");
    let min_load_rate: Option<f64> = t.opt(cx, "min_load_rate");
    if min_load_rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
        cx.error(
            t.pos_of("min_load_rate"),
            &t.field("min_load_rate"),
            "the load's floor rate must be above 0 warehouses a minute",
            Some("`min_load_rate: 0.5` kills a load of 1000 warehouses after 2000 minutes".into()),
        );
    }
    let pymongo: Option<String> = t.opt(cx, "pymongo");
    if let Some(v) = &pymongo
        && !crate::workload::tools::pyenv::is_version(v)
    {
        cx.error(
            t.pos_of("pymongo"),
            &t.field("pymongo"),
            format!("`{v}` is not a pymongo release to pin"),
            Some("write the version pip installs, as `pymongo: 3.13.0`".into()),
        );
    }
    let python: Option<String> = t.opt(cx, "python");
    if pymongo.is_some() && python.is_some() {
        cx.error(
            t.pos_of("python"),
            &t.field("python"),
            "`python` and `pymongo` both name the interpreter",
            Some("with `pymongo`, py-tpcc runs in benchcage's virtualenv; drop `python`".into()),
        );
    }
    if warehouses == Some(0) {
        cx.error(
            t.pos_of("warehouses"),
            &t.field("warehouses"),
            "py-tpcc needs at least 1 warehouse",
            Some("write-up 004 loads `warehouses: 1000`".into()),
        );
    }
    Some(Tool::Pytpcc(Pytpcc {
        warehouses: warehouses?,
        load: t.or(cx, "load", false),
        path: t.opt(cx, "path"),
        python,
        denormalize: t.or(cx, "denormalize", true),
        transactions: t.or(cx, "transactions", true),
        min_load_rate,
        pymongo,
    }))
}

/// `tool: {command: {argv, throughput, latency, scaled}}`.
fn command_from_node(n: &Node, cx: &mut Cx, p: &str) -> Option<Tool> {
    let t = Fields::open(n, cx, p, &["argv", "throughput", "latency", "scaled"])?;
    let argv: Option<Vec<String>> = t.req(cx, "argv");
    let scaled: BTreeMap<String, u64> = t.or(cx, "scaled", BTreeMap::new());
    for (k, v) in &scaled {
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || *v == 0 {
            cx.error(
                t.pos_of("scaled"),
                &t.field("scaled"),
                format!(
                    "`{k}: {v}` must be a name of letters, digits and _ with a number of at least 1"
                ),
                Some("scaled: {warehouses: 1000}, used in argv as {warehouses}".into()),
            );
        }
    }
    let throughput: Option<String> = t.req(cx, "throughput");
    let latency: Option<String> = t.opt(cx, "latency");
    for (k, re) in [("throughput", &throughput), ("latency", &latency)] {
        if let Some(re) = re {
            match regex::Regex::new(re) {
                Ok(r) if r.captures_len() < 2 => cx.error(
                    t.pos_of(k),
                    &t.field(k),
                    "the pattern needs a capture group around the number",
                    Some(r"e.g. `tps = ([0-9.]+)`".into()),
                ),
                Ok(_) => {}
                Err(e) => cx.error(t.pos_of(k), &t.field(k), format!("bad pattern: {e}"), None),
            }
        }
    }
    let argv = argv?;
    if argv.is_empty() {
        cx.error(t.pos, &t.field("argv"), "argv is empty", None);
    }
    Some(Tool::Command {
        argv,
        throughput: throughput?,
        latency,
        scaled,
    })
}

/// A bound's refusal as an error at field `key` of `f`.
fn refuse(cx: &mut Cx, f: &Fields, key: &str, r: bounds::Refusal) {
    cx.error(f.pos_of(key), &f.field(key), r.message, r.hint);
}

fn phase_from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Phase> {
    let f = Fields::open(
        node,
        cx,
        path,
        &[
            "name",
            "builtin",
            "tool",
            "threads",
            "duration",
            "operations",
            "warmup",
            "target",
            "expect",
            "error_budget",
        ],
    )?;
    let name: Option<String> = f.req(cx, "name");
    if let Some(n) = &name {
        check_ident(&f, cx, "name", n, "-_.");
    }
    let work = match f.exactly_one(cx, "builtin", "tool", "builtin: {workload: a}") {
        Some("builtin") => f
            .get("builtin")
            .and_then(|b| builtin_from_node(b, cx, &f.field("builtin")))
            .map(Work::Builtin),
        Some(_) => f
            .get("tool")
            .and_then(|t| tool_from_node(t, cx, &f.field("tool")))
            .map(Work::Tool),
        None => None,
    };
    let threads = phase_threads(&f, cx);
    let length = phase_length(&f, cx);
    let target: Option<u64> = f.opt(cx, "target");
    if target == Some(0) {
        cx.error(
            f.pos_of("target"),
            &f.field("target"),
            "a target of 0 ops/s runs nothing",
            Some("omit `target` for no rate limit".into()),
        );
    } else if let Some(Err(r)) = target.map(|t| bounds::check_target(t as f64)) {
        refuse(cx, &f, "target", r);
    }
    let warmup = f.or(cx, "warmup", Duration::default());
    if let Err(r) = bounds::check_seconds("warmup", warmup.as_secs_f64()) {
        refuse(cx, &f, "warmup", r);
    }
    let expects = [
        ("io-bound", Expect::IoBound),
        ("in-memory", Expect::InMemory),
    ];
    let expect = f
        .get("expect")
        .and_then(|n| choice(n, cx, &f.field("expect"), &expects));
    Some(Phase {
        name: name?,
        work: work?,
        threads: threads?,
        length: length?,
        warmup,
        target,
        expect,
        error_budget: f.or(cx, "error_budget", 0u64),
    })
}

/// A phase's `threads`: one count or a sweep, each within bounds.
fn phase_threads(f: &Fields, cx: &mut Cx) -> Option<Vec<u32>> {
    let threads: Option<Vec<u32>> = match f.get("threads") {
        Some(n) => one_or_many(n, cx, &f.field("threads")),
        None => Some(vec![1]),
    };
    if let Some(t) = &threads {
        if t.is_empty() {
            cx.error(
                f.pos_of("threads"),
                &f.field("threads"),
                "the thread list is empty",
                None,
            );
        }
        if let Some(Err(r)) = t
            .iter()
            .map(|n| bounds::check_thread_count(*n))
            .find(Result::is_err)
        {
            refuse(cx, f, "threads", r);
        }
    }
    threads
}

/// A phase's `duration` or `operations`, above 0 and within bounds.
fn phase_length(f: &Fields, cx: &mut Cx) -> Option<Length> {
    let length = match f.exactly_one(cx, "duration", "operations", "duration: 30s") {
        Some("duration") => f.opt::<Duration>(cx, "duration").map(Length::Duration),
        Some(_) => f.opt::<u64>(cx, "operations").map(Length::Operations),
        None => None,
    };
    match length {
        Some(Length::Duration(d)) if d.std().is_zero() => cx.error(
            f.pos_of("duration"),
            &f.field("duration"),
            "duration must be above 0",
            None,
        ),
        Some(Length::Duration(d)) => {
            if let Err(r) = bounds::check_seconds("duration", d.as_secs_f64()) {
                refuse(cx, f, "duration", r);
            }
        }
        Some(Length::Operations(0)) => cx.error(
            f.pos_of("operations"),
            &f.field("operations"),
            "operations must be at least 1",
            None,
        ),
        Some(Length::Operations(n)) => {
            if let Err(r) = bounds::check_operations(n) {
                refuse(cx, f, "operations", r);
            }
        }
        None => {}
    }
    length
}

impl Scenario {
    /// Read a scenario from its YAML tree, reporting every problem.
    pub(crate) fn from_node(name: &str, node: &Node, cx: &mut Cx) -> Option<Scenario> {
        let f = Fields::open(
            node,
            cx,
            "",
            &[
                "name",
                "description",
                "matrix",
                "knobs",
                "dataset",
                "repetitions",
                "load",
                "settle",
                "phases",
                "reproduces",
                "snapshots",
            ],
        )?;
        check_spec_name(&f, cx, name);
        let matrix = matrix_from_node(&f, cx);
        let knobs: BTreeMap<String, Text> = f.or(cx, "knobs", BTreeMap::new());
        let repetitions = f.or(cx, "repetitions", 1u32);
        if repetitions == 0 || repetitions > 100 {
            cx.error(
                f.pos_of("repetitions"),
                "repetitions",
                format!("{repetitions} repetitions is out of range"),
                Some("1 to 100".into()),
            );
        }
        let mut phases = phases_from_node(&f, cx);
        let dataset: Option<Dataset> = f.opt(cx, "dataset");
        let mut load: Option<Load> = f.opt(cx, "load");
        if let Some(ph) = &mut phases {
            tpcc_warehouses(&mut load, ph, cx);
            tpcc_schema(&mut load, ph, cx);
            load_collections(&mut load, ph, cx);
        }
        let tpcc_load = load.as_ref().map(|l| l.workload) == Some(LoadWorkload::Tpcc);
        if load.is_some() && !tpcc_load && dataset.is_none() && f.get("dataset").is_none() {
            cx.error(
                f.pos_of("load"),
                "load",
                "a load phase needs a `dataset`",
                Some("dataset: {records: 100000}".into()),
            );
        }
        if let Some(ph) = &phases {
            for (i, p) in ph.iter().enumerate() {
                if matches!(p.work, Work::Builtin(_))
                    && !matches!(p.work, Work::Builtin(Builtin::Tpcc { .. }))
                    && dataset.is_none()
                    && f.get("dataset").is_none()
                {
                    builtin_error(
                        cx,
                        i,
                        "a built-in workload needs a `dataset`".into(),
                        "dataset: {records: 100000}",
                    );
                }
            }
        }
        let reproduces = f
            .get("reproduces")
            .and_then(|n| super::writeup::Reproduces::from_node(n, cx))
            .map(Box::new);
        let s = Scenario {
            name: name.to_string(),
            description: f.or(cx, "description", String::new()),
            matrix: matrix?,
            knobs: knobs.into_iter().map(|(k, v)| (k, v.0)).collect(),
            dataset,
            repetitions,
            load,
            settle: f.opt(cx, "settle"),
            phases: phases?,
            reproduces,
            snapshots: f.or(cx, "snapshots", SnapshotUse::default()),
            origin: Origin::default(),
        };
        if let Some(r) = &s.reproduces {
            r.check(&s, cx);
        }
        Some(s)
    }
}

/// `matrix: {engines, environments, cells}`: the cross product of
/// `engines` and `environments` (both or neither, neither empty), and the
/// listed `cells` beside it; at least one of the two.
fn matrix_from_node(f: &Fields, cx: &mut Cx) -> Option<Matrix> {
    let Some(n) = f.get("matrix") else {
        f.req::<String>(cx, "matrix");
        return None;
    };
    let m = Fields::open(n, cx, "matrix", &["engines", "environments", "cells"])?;
    let listed: Option<Vec<CellRef>> = m.opt(cx, "cells");
    let crossed = m.get("engines").is_some() || m.get("environments").is_some();
    let (engines, environments) = if crossed || m.get("cells").is_none() {
        (
            m.req::<Vec<EngineRef>>(cx, "engines"),
            m.req::<Vec<EnvRef>>(cx, "environments"),
        )
    } else {
        (Some(Vec::new()), Some(Vec::new()))
    };
    let hint = "list cells as `cells: [{engine: tokumx@1.5, environment: vm-4cpu}]`";
    for (key, empty, what) in [
        (
            "engines",
            crossed && engines.as_ref().is_some_and(Vec::is_empty),
            "engine",
        ),
        (
            "environments",
            crossed && environments.as_ref().is_some_and(Vec::is_empty),
            "environment",
        ),
        ("cells", listed.as_ref().is_some_and(Vec::is_empty), "cell"),
    ] {
        if empty {
            cx.error(
                m.pos_of(key),
                &m.field(key),
                format!("the matrix needs at least one {what}"),
                (key == "cells").then(|| hint.to_string()),
            );
        }
    }
    let mut matrix = Matrix::cross(engines?, environments?);
    // A `cells:` that did not read was reported: the spec is refused anyway.
    for (i, c) in listed.unwrap_or_default().into_iter().enumerate() {
        add_cell(&mut matrix, c, i, cx);
    }
    Some(matrix)
}

/// A listed cell joins the matrix: its engine entry and its environment
/// are those already there when written the same, else new ones. An
/// environment named twice with other settings, and a cell already in the
/// matrix, are refused at the cell.
fn add_cell(matrix: &mut Matrix, c: CellRef, i: usize, cx: &mut Cx) {
    let path = format!("matrix.cells[{i}]");
    let pos = |cx: &Cx, field: &str| cx.positions.get(field).copied().unwrap_or_default();
    if let Some(other) = matrix
        .environments
        .iter()
        .find(|v| v.name == c.environment.name && !v.same_entry(&c.environment))
    {
        let field = join(&path, "environment");
        cx.error(
            pos(cx, &field),
            &field,
            format!(
                "environment `{}` is given other settings (scale, set) here than at {}",
                c.environment.name, other.field
            ),
            Some(
                "a cell's id names its environment: write it the same way in both places, or give the variant an environment file of its own".into(),
            ),
        );
        return;
    }
    let e = match matrix.engines.iter().position(|r| r.same_entry(&c.engine)) {
        Some(e) => e,
        None => {
            matrix.engines.push(c.engine);
            matrix.engines.len() - 1
        }
    };
    let v = match matrix
        .environments
        .iter()
        .position(|r| r.same_entry(&c.environment))
    {
        Some(v) => v,
        None => {
            matrix.environments.push(c.environment);
            matrix.environments.len() - 1
        }
    };
    if matrix.pairs.contains(&(e, v)) {
        let field = join(&path, "engine");
        cx.error(
            pos(cx, &path),
            &path,
            format!(
                "the cell {} in {} is already in the matrix",
                matrix.engines[e].label(),
                matrix.environments[v].name
            ),
            Some(format!(
                "remove {path}, or give its engine a `label:` and other knobs (at {field})"
            )),
        );
        return;
    }
    matrix.pairs.push((e, v));
}

/// `phases:`, a non-empty list with each name once.
fn phases_from_node(f: &Fields, cx: &mut Cx) -> Option<Vec<Phase>> {
    let phases = match f.get("phases") {
        Some(n) => match &n.kind {
            NodeKind::Seq(items) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let p = format!("phases[{i}]");
                    cx.positions.insert(p.clone(), item.pos);
                    if let Some(ph) = phase_from_node(item, cx, &p) {
                        out.push(ph);
                    }
                }
                if items.is_empty() {
                    cx.error(n.pos, "phases", "a scenario needs at least one phase", None);
                }
                Some(out)
            }
            _ => {
                cx.error(
                    n.pos,
                    "phases",
                    format!("expected a list of phases, found {}", n.describe()),
                    None,
                );
                None
            }
        },
        None => {
            f.req::<String>(cx, "phases");
            None
        }
    };
    if let Some(ph) = &phases {
        for (i, p) in ph.iter().enumerate() {
            if ph[..i].iter().any(|q| q.name == p.name) {
                let field = join(&format!("phases[{i}]"), "name");
                let pos = cx.positions.get(&field).copied().unwrap_or_default();
                cx.error(
                    pos,
                    &field,
                    format!("phase name `{}` is used twice", p.name),
                    None,
                );
            }
        }
    }
    phases
}

impl std::fmt::Display for LoadWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LoadWorkload::Ycsb => "YCSB records",
            LoadWorkload::Candles => "trade candles",
            LoadWorkload::SysbenchMongo => "sysbench-mongodb documents",
            LoadWorkload::Iibench => "iiBench rows",
            LoadWorkload::Tpcc => "TPC-C warehouses",
        })
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            ("read", self.read),
            ("update", self.update),
            ("insert", self.insert),
            ("scan", self.scan),
            ("read-modify-write", self.read_modify_write),
        ]
        .iter()
        .filter(|(_, share)| *share > 0.0)
        .map(|(name, share)| format!("{name} {share}"))
        .collect();
        f.write_str(&parts.join(", "))
    }
}

impl std::fmt::Display for YcsbWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            YcsbWorkload::A => f.write_str("A"),
            YcsbWorkload::B => f.write_str("B"),
            YcsbWorkload::C => f.write_str("C"),
            YcsbWorkload::D => f.write_str("D"),
            YcsbWorkload::E => f.write_str("E"),
            YcsbWorkload::F => f.write_str("F"),
            YcsbWorkload::Custom(m) => write!(f, "custom ({m})"),
        }
    }
}

impl std::fmt::Display for Builtin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Builtin::Ycsb {
                workload,
                distribution,
            } => write!(f, "YCSB workload {workload}, {distribution}"),
            Builtin::Candles { queries } => write!(f, "candles, {} queries", queries.name()),
            Builtin::SysbenchMongo { collections } => {
                write!(
                    f,
                    "sysbench-mongodb transactions, {collections} collections"
                )
            }
            Builtin::Iibench => f.write_str("iiBench inserts"),
            Builtin::Tpcc {
                warehouses,
                denormalize,
            } => {
                write!(f, "TPC-C, {warehouses} warehouses")?;
                match denormalize {
                    Some(d) => write!(f, ", {}", DocumentSchema::from_denormalize(Some(*d))),
                    None => Ok(()),
                }
            }
        }
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tool::Sysbench {
                test,
                tables,
                table_size,
                ..
            } => write!(f, "sysbench {test}, {tables} tables x {table_size} rows"),
            Tool::Pgbench { scale, script } => match script {
                PgbenchScript::Builtin(b) => write!(f, "pgbench -b {b}, scale {scale}"),
                PgbenchScript::Script(p) => write!(f, "pgbench -f {p}, scale {scale}"),
            },
            Tool::Ycsb { argv } => write!(f, "YCSB: {}", argv.join(" ")),
            Tool::Command { argv, .. } => write!(f, "command: {}", argv.join(" ")),
            Tool::Pytpcc(t) if t.load => write!(f, "py-tpcc load, {} warehouses", t.warehouses),
            Tool::Pytpcc(t) => write!(f, "py-tpcc NEW ORDER, {} warehouses", t.warehouses),
        }
    }
}

impl std::fmt::Display for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Work::Builtin(b) => write!(f, "{b}"),
            Work::Tool(t) => write!(f, "{t}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_reads_as_words_not_as_rust() {
        let t = Tool::Sysbench {
            test: "oltp_read_write".into(),
            tables: 8,
            table_size: 1000,
            loaders: 8,
        };
        assert_eq!(
            t.to_string(),
            "sysbench oltp_read_write, 8 tables x 1000 rows"
        );
        let w = Builtin::Ycsb {
            workload: YcsbWorkload::Custom(Mix {
                read: 0.9,
                update: 0.05,
                insert: 0.05,
                ..Default::default()
            }),
            distribution: crate::workload::Distribution::Zipfian,
        };
        assert_eq!(
            w.to_string(),
            "YCSB workload custom (read 0.9, update 0.05, insert 0.05), zipfian"
        );
    }

    fn scenario(text: &str) -> Scenario {
        let mut diags = crate::spec::Diagnostics::default();
        match crate::spec::parse_text("s.yaml", "s", text, crate::spec::Kind::Scenario, &mut diags)
        {
            Some(crate::spec::Parsed::Scenario(s)) => s,
            _ => panic!("{diags:?}"),
        }
    }

    #[test]
    fn one_tpcc_phase_names_the_document_schema_of_the_load_and_of_the_phases_that_do_not() {
        let s = scenario(
            "matrix: {engines: [secantusdb], environments: [quickstart]}\n\
             load: {workload: tpcc}\n\
             phases:\n\
             - {name: a, builtin: {workload: tpcc, denormalize: false}, duration: 5s}\n\
             - {name: b, builtin: {workload: tpcc}, duration: 5s}\n",
        );
        assert_eq!(s.load.as_ref().unwrap().denormalize, Some(false));
        for p in &s.phases {
            assert_eq!(
                p.work.to_string(),
                "TPC-C, 1 warehouses, normalized documents (ORDER_LINE a collection of its own)"
            );
        }
        let s = scenario(
            "matrix: {engines: [postgres], environments: [quickstart]}\n\
             load: {workload: tpcc}\n\
             phases: [{name: a, builtin: {workload: tpcc}, duration: 5s}]\n",
        );
        assert_eq!(s.load.as_ref().unwrap().denormalize, None);
        assert_eq!(s.phases[0].work.to_string(), "TPC-C, 1 warehouses");
        // Cells keyed before the option keep their keys.
        let json = serde_json::to_string(&s.phases[0].work).unwrap();
        assert!(!json.contains("denormalize"), "{json}");
    }
}
