//! The write-up a scenario reproduces, with the values it published
//! (`reproduces:` in a scenario). `plan` compares the cells against them
//! (`deviations.rs`) and names every difference.
//!
//! ```yaml
//! reproduces:
//!   writeup: "003"
//!   title: MongoDB 3.2 performance test
//!   environments:                       # by the matrix's environment names
//!     c4-16g: {cpus: 4, memory: 16GiB, cache: 12GiB, disk: 300GiB}
//!   engines:
//!     - {name: MongoDB 3.2.6 WiredTiger, engine: mongodb@3.2.6, here: [secantusdb],
//!        knobs: {sync_period: 1s, compression: snappy}}
//!   tool: {name: YCSB (Java), program: ycsb}
//!   dataset: {records: 10000000}
//!   load: {threads: 8, batch: 1000}
//!   phases:                             # by the scenario's phase names
//!     read-only: {}                     # run, but the write-up gives no numbers
//!     by-ticker: {operations: 10000}
//!   omitted: [the sharded cluster load of 50M records]
//! ```
//!
//! A value the write-up gives is written here; a value it does not give is
//! left out, and `plan` reports the scenario's own as chosen.

use super::de::{Fields, FromNode, Text, one_or_many};
use super::diag::Cx;
use super::scenario::Phase;
use super::yaml::Node;
use crate::units::{Bytes, Duration};
use std::collections::BTreeMap;

/// What the write-up published; `None` = it does not say.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reproduces {
    /// Write-up id (`003`).
    pub writeup: String,
    pub title: String,
    /// By the name of the environment in the scenario's matrix.
    pub environments: BTreeMap<String, PublishedEnv>,
    pub engines: Vec<PublishedEngine>,
    /// The tool of every phase (and of the load) unless a phase names its own.
    pub tool: Option<PublishedTool>,
    pub dataset: PublishedDataset,
    pub load: PublishedLoad,
    /// By the scenario's phase name.
    pub phases: BTreeMap<String, PublishedPhase>,
    /// Parts of the write-up the scenario does not run, in words.
    pub omitted: Vec<String>,
    /// The write-up's findings, checked after a run (`spec/claims.rs`).
    pub claims: Vec<super::claims::ClaimSpec>,
}

/// The write-up's machine.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PublishedEnv {
    pub cpus: Option<u32>,
    pub memory: Option<Bytes>,
    pub cache: Option<Bytes>,
    pub hog_leave: Option<Bytes>,
    /// The disk its server's data lived on (000's VM had 20 GB).
    pub disk: Option<Bytes>,
    /// Between its client and its server.
    pub network: Option<PublishedNetwork>,
}

/// The write-up's network between client and server: `{what: "a client
/// host over 10 Gb Ethernet", rate: 10gbit}`; a delay when it gives one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PublishedNetwork {
    /// In the write-up's words.
    pub what: String,
    pub delay: Option<Duration>,
    pub rate: Option<crate::units::Rate>,
}

impl FromNode for PublishedNetwork {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(node, cx, path, &["what", "delay", "rate"])?;
        Some(PublishedNetwork {
            what: f.req(cx, "what")?,
            delay: f.opt(cx, "delay"),
            rate: f.opt(cx, "rate"),
        })
    }
}

/// One engine of the write-up and the matrix entries that play it here.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PublishedEngine {
    /// As the write-up names it: `TokuMX 2.0.2`.
    pub name: String,
    /// `engine@version` in benchcage's terms, when there is one.
    pub engine: Option<String>,
    /// Matrix entries (label, `engine@version` or engine name) that play
    /// it; `None` = the entries of the same engine, `[]` = none.
    pub here: Option<Vec<String>>,
    /// Its published settings, by benchcage knob name.
    pub knobs: BTreeMap<String, String>,
}

impl PublishedEngine {
    /// The engine's name without the version (`tokumx`).
    pub fn engine_name(&self) -> Option<&str> {
        self.engine
            .as_deref()
            .map(|e| e.split_once('@').map_or(e, |(n, _)| n))
    }
    /// The version, when `engine` names one.
    pub fn version(&self) -> Option<&str> {
        self.engine
            .as_deref()
            .and_then(|e| e.split_once('@'))
            .map(|(_, v)| v)
    }
}

/// The benchmark program the write-up ran.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PublishedTool {
    /// In words: `YCSB (Java)`.
    pub name: String,
    /// The program a scenario must run for it to be the same tool
    /// (`ycsb`, `sysbench`, `tpcc.py`); `None` = nothing published runs it.
    pub program: Option<String>,
}

/// The write-up's data set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PublishedDataset {
    pub records: Option<u64>,
    pub field_count: Option<u32>,
    pub field_length: Option<u32>,
}

/// How the write-up loaded its data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PublishedLoad {
    pub threads: Option<u32>,
    pub batch: Option<u32>,
}

/// One measured step of the write-up.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PublishedPhase {
    pub threads: Option<Vec<u32>>,
    pub operations: Option<u64>,
    pub duration: Option<Duration>,
    pub warmup: Option<Duration>,
    pub tool: Option<PublishedTool>,
    /// sysbench `tables` / `table_size`, pgbench `scale`, and a command's
    /// `scaled` numbers (`warehouses`), by those names.
    pub sizes: BTreeMap<String, u64>,
}

impl FromNode for PublishedTool {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(node, cx, path, &["name", "program"])?;
        Some(PublishedTool {
            name: f.req(cx, "name")?,
            program: f.opt(cx, "program"),
        })
    }
}

impl FromNode for PublishedEnv {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(
            node,
            cx,
            path,
            &["cpus", "memory", "cache", "hog_leave", "disk", "network"],
        )?;
        Some(PublishedEnv {
            cpus: f.opt(cx, "cpus"),
            memory: f.opt(cx, "memory"),
            cache: f.opt(cx, "cache"),
            hog_leave: f.opt(cx, "hog_leave"),
            disk: f.opt(cx, "disk"),
            network: f.opt(cx, "network"),
        })
    }
}

impl FromNode for PublishedEngine {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(node, cx, path, &["name", "engine", "here", "knobs"])?;
        let here: Option<Vec<String>> = match f.get("here") {
            Some(n) => Some(one_or_many(n, cx, &f.field("here"))?),
            None => None,
        };
        let knobs: BTreeMap<String, Text> = f.or(cx, "knobs", BTreeMap::new());
        let engine: Option<String> = f.opt(cx, "engine");
        if f.get("engine").is_none() && here.is_none() {
            cx.error(
                f.pos,
                path,
                "say which engine of benchcage this is (`engine`) or which matrix entries play it (`here`)",
                Some("here: [] says that nothing in the matrix plays it".into()),
            );
        }
        Some(PublishedEngine {
            name: f.req(cx, "name")?,
            engine,
            here,
            knobs: knobs.into_iter().map(|(k, v)| (k, v.0)).collect(),
        })
    }
}

impl FromNode for PublishedPhase {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(
            node,
            cx,
            path,
            &[
                "threads",
                "operations",
                "duration",
                "warmup",
                "tool",
                "tables",
                "table_size",
                "scale",
                "scaled",
            ],
        )?;
        let mut sizes: BTreeMap<String, u64> = f.or(cx, "scaled", BTreeMap::new());
        for k in ["tables", "table_size", "scale"] {
            if let Some(v) = f.opt::<u64>(cx, k) {
                sizes.insert(k.to_string(), v);
            }
        }
        Some(PublishedPhase {
            threads: match f.get("threads") {
                Some(n) => Some(one_or_many(n, cx, &f.field("threads"))?),
                None => None,
            },
            operations: f.opt(cx, "operations"),
            duration: f.opt(cx, "duration"),
            warmup: f.opt(cx, "warmup"),
            tool: f.opt(cx, "tool"),
            sizes,
        })
    }
}

fn dataset_from(f: &Fields, cx: &mut Cx) -> PublishedDataset {
    let Some(d) = f
        .get("dataset")
        .and_then(|n| Fields::open(n, cx, "reproduces.dataset", &DATASET_KEYS))
    else {
        return PublishedDataset::default();
    };
    PublishedDataset {
        records: d.opt(cx, "records"),
        field_count: d.opt(cx, "field_count"),
        field_length: d.opt(cx, "field_length"),
    }
}

const DATASET_KEYS: [&str; 3] = ["records", "field_count", "field_length"];

fn load_from(f: &Fields, cx: &mut Cx) -> PublishedLoad {
    let Some(l) = f
        .get("load")
        .and_then(|n| Fields::open(n, cx, "reproduces.load", &["threads", "batch"]))
    else {
        return PublishedLoad::default();
    };
    PublishedLoad {
        threads: l.opt(cx, "threads"),
        batch: l.opt(cx, "batch"),
    }
}

impl Reproduces {
    /// Read `reproduces:`; `phases` and `environments` name the scenario's
    /// own, which `check` verifies once the scenario is read.
    pub fn from_node(node: &Node, cx: &mut Cx) -> Option<Reproduces> {
        let path = "reproduces";
        let f = Fields::open(
            node,
            cx,
            path,
            &[
                "writeup",
                "title",
                "environments",
                "engines",
                "tool",
                "dataset",
                "load",
                "phases",
                "omitted",
                "claims",
            ],
        )?;
        Some(Reproduces {
            writeup: f.req::<Text>(cx, "writeup")?.0,
            title: f.or(cx, "title", String::new()),
            environments: f.or(cx, "environments", BTreeMap::new()),
            engines: f.or(cx, "engines", Vec::new()),
            tool: f.opt(cx, "tool"),
            dataset: dataset_from(&f, cx),
            load: load_from(&f, cx),
            phases: f.or(cx, "phases", BTreeMap::new()),
            omitted: f.or(cx, "omitted", Vec::new()),
            claims: f.or(cx, "claims", Vec::new()),
        })
    }

    /// Names it uses must be the scenario's: environments of the matrix,
    /// phases, and matrix entries in `here`.
    pub fn check(&self, scenario: &super::Scenario, cx: &mut Cx) {
        let at = |cx: &Cx, field: &str| cx.positions.get(field).copied().unwrap_or_default();
        for name in self.environments.keys() {
            if !scenario.matrix.environments.iter().any(|e| &e.name == name) {
                let field = format!("reproduces.environments.{name}");
                let known: Vec<&str> = scenario
                    .matrix
                    .environments
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect();
                cx.error(
                    at(cx, &field),
                    &field,
                    format!("`{name}` is not an environment of the matrix"),
                    Some(super::diag::unknown_hint(name, &known)),
                );
            }
        }
        for name in self.phases.keys() {
            if !scenario.phases.iter().any(|p| &p.name == name) {
                let field = format!("reproduces.phases.{name}");
                let known: Vec<&str> = scenario.phases.iter().map(|p| p.name.as_str()).collect();
                cx.error(
                    at(cx, &field),
                    &field,
                    format!("`{name}` is not a phase of the scenario"),
                    Some(format!(
                        "{}; parts of the write-up the scenario does not run go in `omitted`",
                        super::diag::unknown_hint(name, &known)
                    )),
                );
            }
        }
        for (i, e) in self.engines.iter().enumerate() {
            for (j, h) in e.here.iter().flatten().enumerate() {
                if !scenario.matrix.engines.iter().any(|m| entry_matches(m, h)) {
                    let field = format!("reproduces.engines[{i}].here[{j}]");
                    cx.error(
                        at(cx, &field),
                        &field,
                        format!("`{h}` is not an entry of the matrix"),
                        Some("name a matrix entry by its label, engine@version or engine".into()),
                    );
                }
            }
        }
        super::claims::check(self, scenario, cx);
    }

    /// The published phase of a scenario phase, if the write-up has it.
    pub fn phase(&self, p: &Phase) -> Option<&PublishedPhase> {
        self.phases.get(&p.name)
    }
}

/// Does a matrix entry answer to `name`: its label when it has one, else
/// `engine@version` as written or its engine?
pub fn entry_matches(m: &super::scenario::EngineRef, name: &str) -> bool {
    match &m.label {
        Some(l) => l == name,
        None => m.label() == name || m.engine == name,
    }
}
