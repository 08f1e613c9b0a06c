//! `reproduces.claims`: the write-up's findings as data (see
//! `model::claim`), read and checked beside the rest of `reproduces:`.
//!
//! ```yaml
//! reproduces:
//!   claims:
//!     - id: wt-loads-faster
//!       says: "WiredTiger loads about 5x faster than TokuMX"
//!       metric: throughput        # throughput | latency_p99 | data_size | tpmc | load_time
//!       phase: load
//!       op: INSERT                # optional
//!       a: mongodb@3.2.6          # matrix entries, or engines of `reproduces.engines`
//!       b: tokumx@2.0.2           # (played by their `here:` entries)
//!       published: 5.0            # a / b as the write-up reports it
//!       expect: a > b             # a > b | a < b | a ~ b (within `tolerance`, 10%)
//!       stands_for: B-tree vs LSM # what a stand-in pair stands for
//! ```
//!
//! Optional beyond those: `tolerance` (of `a ~ b`), `threads` (one thread
//! count of the phase) and `environment` (one of the matrix's).

use super::de::{Fields, FromNode, Text, word};
use super::diag::{Cx, unknown_hint};
use super::scenario::{EngineRef, Scenario};
use super::writeup::{Reproduces, entry_matches};
use crate::model::claim::{Expect, Metric};

/// The name of the load phase in claims and results.
pub(crate) const LOAD_PHASE: &str = "load";

/// A claim as written; `check` verifies its names against the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimSpec {
    pub id: String,
    pub says: String,
    pub metric: Metric,
    pub phase: Option<String>,
    pub op: Option<String>,
    pub threads: Option<u32>,
    pub environment: Option<String>,
    /// As written: a matrix entry or an engine of `reproduces.engines`.
    pub a: String,
    pub b: String,
    pub published: Option<f64>,
    pub expect: Expect,
    pub stands_for: Option<String>,
    /// `reproduces.claims[i]`, for messages.
    pub field: String,
}

const FIELDS: [&str; 13] = [
    "id",
    "says",
    "metric",
    "phase",
    "op",
    "threads",
    "environment",
    "a",
    "b",
    "published",
    "expect",
    "tolerance",
    "stands_for",
];

const EXPECTS: [&str; 3] = ["a > b", "a < b", "a ~ b"];

impl FromNode for ClaimSpec {
    fn from_node(node: &super::yaml::Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(node, cx, path, &FIELDS)?;
        let words: Vec<&str> = Metric::ALL.iter().map(|(w, _)| *w).collect();
        let metric = match f.get("metric") {
            Some(n) => word(n, cx, &f.field("metric"), &words).and_then(Metric::parse),
            None => f.req::<String>(cx, "metric").and(None),
        };
        let tolerance: Option<f64> = f.opt(cx, "tolerance");
        if let Some(t) = tolerance.filter(|t| !(0.0..1.0).contains(t) || *t == 0.0) {
            cx.error(
                f.pos_of("tolerance"),
                &f.field("tolerance"),
                format!("`{t}` is not a share between 0 and 1"),
                Some("tolerance: 0.1 means within 10% either way".into()),
            );
        }
        let expect_text: Option<Text> = f.req(cx, "expect");
        let expect = expect_text.and_then(|t| {
            let e = Expect::parse(&t.0, tolerance);
            if e.is_none() {
                cx.error(
                    f.pos_of("expect"),
                    &f.field("expect"),
                    format!("`{}` is not an expectation", t.0),
                    Some(format!("write one of {}", EXPECTS.join(", "))),
                );
            }
            e
        });
        let published: Option<f64> = f.opt(cx, "published");
        if let Some(p) = published.filter(|p| *p <= 0.0) {
            cx.error(
                f.pos_of("published"),
                &f.field("published"),
                format!("`{p}` is not a ratio"),
                Some("published is a / b as the write-up reports it, above 0".into()),
            );
        }
        let id: Option<Text> = f.req(cx, "id");
        let says: Option<String> = f.req(cx, "says");
        let a: Option<Text> = f.req(cx, "a");
        let b: Option<Text> = f.req(cx, "b");
        Some(ClaimSpec {
            id: id?.0,
            says: says?,
            metric: metric?,
            phase: f.opt(cx, "phase"),
            op: f.opt(cx, "op"),
            threads: f.opt(cx, "threads"),
            environment: f.opt(cx, "environment"),
            a: a?.0,
            b: b?.0,
            published,
            expect: expect?,
            stands_for: f.opt(cx, "stands_for"),
            field: path.to_string(),
        })
    }
}

/// Every operation kind a phase records: the built-in workloads' and the
/// tools'.
fn known_ops() -> Vec<&'static str> {
    use crate::workload::{candles, iibench, sysbench_mongo, tpcc, ycsb};
    let mut ops: Vec<&str> = ycsb::NAMES
        .iter()
        .chain(&candles::NAMES)
        .chain(&sysbench_mongo::NAMES)
        .chain(&iibench::NAMES)
        .chain(&tpcc::NAMES)
        .copied()
        .chain(["TRANSACTION"])
        .collect();
    ops.sort_unstable();
    ops.dedup();
    ops
}

/// The matrix entries that play `name`: a matrix entry it names, else the
/// `here:` entries of the write-up's engine it names (by `engine` or
/// `name`), else the entries of that engine; none when nothing here plays
/// that engine (a run says the claim was not measured). `Err` when `name`
/// is neither.
pub(crate) fn side_entries<'s>(
    r: &Reproduces,
    s: &'s Scenario,
    name: &str,
) -> Result<Vec<&'s EngineRef>, String> {
    let direct: Vec<&EngineRef> = s
        .matrix
        .engines
        .iter()
        .filter(|m| entry_matches(m, name))
        .collect();
    if !direct.is_empty() {
        return Ok(direct);
    }
    let Some(p) = r
        .engines
        .iter()
        .find(|e| e.engine.as_deref() == Some(name) || e.name == name)
    else {
        return Err(format!(
            "`{name}` is neither an entry of the matrix nor an engine of `reproduces.engines`"
        ));
    };
    let entries: Vec<&EngineRef> = match &p.here {
        Some(here) => s
            .matrix
            .engines
            .iter()
            .filter(|m| here.iter().any(|h| entry_matches(m, h)))
            .collect(),
        None => s
            .matrix
            .engines
            .iter()
            .filter(|m| Some(m.engine.as_str()) == p.engine_name())
            .collect(),
    };
    Ok(entries)
}

/// Whether `name` is played by stand-ins: it names a write-up's engine
/// (not a matrix entry) and entries of another engine play it.
fn played_by_stand_ins(r: &Reproduces, s: &Scenario, entries: &[&EngineRef], name: &str) -> bool {
    if s.matrix.engines.iter().any(|m| entry_matches(m, name)) {
        return false;
    }
    let published = r
        .engines
        .iter()
        .find(|e| e.engine.as_deref() == Some(name) || e.name == name)
        .and_then(|e| e.engine_name().map(str::to_string))
        .unwrap_or_else(|| name.split_once('@').map_or(name, |(n, _)| n).to_string());
    entries.iter().any(|e| e.engine != published)
}

/// Check every claim's names against the scenario: sides, phase, op,
/// threads, environment; ids unique; a stand-in pair says what it stands
/// for.
pub fn check(r: &Reproduces, s: &Scenario, cx: &mut Cx) {
    let at = |cx: &Cx, field: &str, or: &str| {
        cx.positions
            .get(field)
            .or_else(|| cx.positions.get(or))
            .copied()
            .unwrap_or_default()
    };
    let ops = known_ops();
    for (i, c) in r.claims.iter().enumerate() {
        let field = |k: &str| format!("{}.{k}", c.field);
        if r.claims[..i].iter().any(|o| o.id == c.id) {
            cx.error(
                at(cx, &field("id"), &c.field),
                &field("id"),
                format!("claim `{}` is written twice", c.id),
                Some("give each claim its own id".into()),
            );
        }
        let mut stand_ins = false;
        for (k, name) in [("a", &c.a), ("b", &c.b)] {
            match side_entries(r, s, name) {
                Ok(entries) => stand_ins |= played_by_stand_ins(r, s, &entries, name),
                Err(why) => {
                    let mut known: Vec<String> = s
                        .matrix
                        .engines
                        .iter()
                        .map(|m| m.label.clone().unwrap_or_else(|| m.label()))
                        .collect();
                    known.extend(r.engines.iter().filter_map(|e| e.engine.clone()));
                    let known: Vec<&str> = known.iter().map(String::as_str).collect();
                    cx.error(
                        at(cx, &field(k), &c.field),
                        &field(k),
                        why,
                        Some(unknown_hint(name, &known)),
                    );
                }
            }
        }
        if c.a == c.b {
            cx.error(
                at(cx, &field("b"), &c.field),
                &field("b"),
                format!("a claim compares two sides; `a` and `b` are both `{}`", c.a),
                None,
            );
        }
        if stand_ins && c.stands_for.is_none() {
            cx.error(
                at(cx, &field("a"), &c.field),
                &field("stands_for"),
                format!(
                    "claim `{}` is checked on stand-ins; say what the pair here stands for",
                    c.id
                ),
                Some("stands_for: LSM tree vs B-tree".into()),
            );
        }
        check_phase(c, s, cx, &at(cx, &field("phase"), &c.field));
        if let Some(op) = &c.op
            && !ops.contains(&op.as_str())
        {
            cx.error(
                at(cx, &field("op"), &c.field),
                &field("op"),
                format!("`{op}` is not an operation kind any phase records"),
                Some(unknown_hint(op, &ops)),
            );
        }
        if let Some(e) = &c.environment
            && !s.matrix.environments.iter().any(|m| &m.name == e)
        {
            let known: Vec<&str> = s
                .matrix
                .environments
                .iter()
                .map(|m| m.name.as_str())
                .collect();
            cx.error(
                at(cx, &field("environment"), &c.field),
                &field("environment"),
                format!("`{e}` is not an environment of the matrix"),
                Some(unknown_hint(e, &known)),
            );
        }
    }
}

/// The phase a claim names must be the scenario's (or its measured load);
/// `threads` one of the phase's.
fn check_phase(c: &ClaimSpec, s: &Scenario, cx: &mut Cx, pos: &super::yaml::Pos) {
    let field = format!("{}.phase", c.field);
    let phase = match (&c.phase, c.metric) {
        (None, Metric::DataSize) => return,
        (None, Metric::LoadTime) => LOAD_PHASE,
        (None, m) => {
            cx.error(
                *pos,
                &field,
                format!("a `{m}` claim names the phase it compares"),
                Some("phase: <a phase of the scenario, or load>".into()),
            );
            return;
        }
        (Some(p), _) => p.as_str(),
    };
    if phase == LOAD_PHASE {
        match &s.load {
            Some(l) if l.measured => {}
            Some(_) => cx.error(
                *pos,
                &field,
                "the load is not measured: a cell may restore a snapshot instead of loading",
                Some(
                    "set `load: {measured: true}` so every cell loads and its figures count".into(),
                ),
            ),
            None => cx.error(
                *pos,
                &field,
                "the scenario has no load",
                Some("name one of its phases".into()),
            ),
        }
        return;
    }
    if c.metric == Metric::LoadTime {
        cx.error(
            *pos,
            &field,
            format!("`load_time` is the load's; `{phase}` is not the load"),
            Some("phase: load, or metric: throughput".into()),
        );
        return;
    }
    let Some(p) = s.phases.iter().find(|p| p.name == phase) else {
        let mut known: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
        if s.load.is_some() {
            known.push(LOAD_PHASE);
        }
        cx.error(
            *pos,
            &field,
            format!("`{phase}` is not a phase of the scenario"),
            Some(unknown_hint(phase, &known)),
        );
        return;
    };
    if let Some(t) = c.threads
        && !p.threads.contains(&t)
    {
        let tf = format!("{}.threads", c.field);
        let pos = cx.positions.get(&tf).copied().unwrap_or(*pos);
        cx.error(
            pos,
            &tf,
            format!("phase `{phase}` does not run at {t} threads"),
            Some(format!(
                "its thread counts: {}",
                p.threads
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
}
