//! How a planned scenario differs from the write-up it reproduces: the
//! scenario's `reproduces:` block (`writeup.rs`) against the planned cells.
//! Engines and tools that stand in for the published ones, values that
//! shrink with scale, values the write-up does not give and the scenario
//! chose, and parts of the write-up not run.

use super::PlannedCell;
use crate::spec::Project;
use crate::spec::scenario::{Builtin, Length, LoadWorkload, Phase, Scenario, Tool, Work};
use crate::spec::writeup::{
    PublishedEngine, PublishedPhase, PublishedTool, Reproduces, entry_matches,
};
use crate::units::Bytes;
use std::fmt;

/// What kind of difference a deviation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviationKind {
    /// Another engine plays the published one ("X instead of Y").
    Engine,
    /// The published engine at another version.
    Version,
    /// The published engine with another storage engine ("WiredTiger
    /// instead of MMAPv1"), named apart from the version that brought it.
    StorageEngine,
    /// A published engine nothing in the matrix plays.
    Missing,
    /// A matrix entry or phase the write-up does not have.
    Added,
    /// Another program stands in for the published tool.
    Tool,
    /// A published setting the cell does not have.
    Knob,
    /// A published value, shrunk by the environment's scale.
    Scaled,
    /// A size the engine rounds (mongod before 3.4 takes whole GiB).
    Rounded,
    /// A published value the scenario changed.
    Differs,
    /// A value the write-up does not give; the scenario chose it.
    Chosen,
    /// A part of the write-up the scenario does not run.
    Omitted,
}

impl fmt::Display for DeviationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviationKind::Engine => "engine",
            DeviationKind::Version => "version",
            DeviationKind::StorageEngine => "storage-engine",
            DeviationKind::Missing => "missing",
            DeviationKind::Added => "added",
            DeviationKind::Tool => "tool",
            DeviationKind::Knob => "knob",
            DeviationKind::Scaled => "scaled",
            DeviationKind::Rounded => "rounded",
            DeviationKind::Differs => "differs",
            DeviationKind::Chosen => "chosen",
            DeviationKind::Omitted => "omitted",
        })
    }
}

/// One difference, as a sentence.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Deviation {
    pub kind: DeviationKind,
    pub text: String,
}

impl fmt::Display for Deviation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The write-up and every way the plan differs from it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteupComparison {
    pub writeup: String,
    pub title: String,
    pub deviations: Vec<Deviation>,
}

/// Collects deviations; the same sentence for several subjects (cells,
/// environments, phases) is one line naming them all.
#[derive(Default)]
struct Found {
    lines: Vec<(DeviationKind, String, Vec<String>)>,
}

impl Found {
    fn add(&mut self, kind: DeviationKind, subject: &str, body: String) {
        match self
            .lines
            .iter_mut()
            .find(|(k, b, _)| *k == kind && *b == body)
        {
            Some((_, _, subjects)) => {
                if !subject.is_empty() && !subjects.iter().any(|s| s == subject) {
                    subjects.push(subject.to_string());
                }
            }
            None => {
                let subjects = if subject.is_empty() {
                    Vec::new()
                } else {
                    vec![subject.to_string()]
                };
                self.lines.push((kind, body, subjects));
            }
        }
    }

    fn into_deviations(self) -> Vec<Deviation> {
        let mut out: Vec<Deviation> = self
            .lines
            .into_iter()
            .map(|(kind, body, subjects)| Deviation {
                kind,
                text: if subjects.is_empty() {
                    body
                } else {
                    format!("{}: {body}", subjects.join(", "))
                },
            })
            .collect();
        out.sort_by_key(|d| d.kind);
        out
    }
}

/// Compare a plan's cells with the write-up `r` that scenario `s` reproduces.
pub fn compare(
    project: &Project,
    r: &Reproduces,
    s: &Scenario,
    cells: &[PlannedCell],
) -> WriteupComparison {
    let mut found = Found::default();
    engines(project, r, s, cells, &mut found);
    tools(r, s, &mut found);
    environments(project, r, cells, &mut found);
    dataset_and_load(r, s, cells, &mut found);
    phases(r, s, cells, &mut found);
    for o in &r.omitted {
        found.add(DeviationKind::Omitted, "", format!("not run here: {o}"));
    }
    WriteupComparison {
        writeup: r.writeup.clone(),
        title: r.title.clone(),
        deviations: found.into_deviations(),
    }
}

/// The version a matrix entry runs (the engine's default when omitted).
fn entry_version(project: &Project, e: &crate::spec::scenario::EngineRef) -> String {
    project
        .engines
        .get(&e.engine)
        .and_then(|en| en.version(e.version.as_deref()))
        .map(|(v, _)| v.to_string())
        .unwrap_or_else(|| e.version.clone().unwrap_or_default())
}

/// The label of a matrix entry's cells (`mongodb@3.2-sync60`, `secantusdb@0.7`).
fn entry_label(project: &Project, e: &crate::spec::scenario::EngineRef) -> String {
    match &e.label {
        Some(l) => l.clone(),
        None => format!("{}@{}", e.engine, entry_version(project, e)),
    }
}

/// The first planned cell of a label.
fn cell_of<'c>(cells: &'c [PlannedCell], label: &str) -> Option<&'c PlannedCell> {
    cells.iter().find(|c| c.id.split('/').next() == Some(label))
}

fn published_name(p: &PublishedEngine) -> String {
    match &p.engine {
        Some(e) if *e != p.name => format!("{} ({e})", p.name),
        _ => p.name.clone(),
    }
}

/// Which matrix entries play a published engine: those `here` names, or
/// else the entries of the same engine (at the published version when
/// one of them has it).
fn players<'s>(
    project: &Project,
    p: &PublishedEngine,
    s: &'s Scenario,
) -> Vec<&'s crate::spec::scenario::EngineRef> {
    let all = s.matrix.engines.iter();
    if let Some(here) = &p.here {
        return all
            .filter(|m| here.iter().any(|h| entry_matches(m, h)))
            .collect();
    }
    let same: Vec<_> = all
        .filter(|m| Some(m.engine.as_str()) == p.engine_name())
        .collect();
    let exact: Vec<_> = same
        .iter()
        .copied()
        .filter(|m| p.version() == Some(entry_version(project, m).as_str()))
        .collect();
    if exact.is_empty() { same } else { exact }
}

fn engines(
    project: &Project,
    r: &Reproduces,
    s: &Scenario,
    cells: &[PlannedCell],
    found: &mut Found,
) {
    let mut playing = vec![false; s.matrix.engines.len()];
    for p in &r.engines {
        let who = players(project, p, s);
        if who.is_empty() {
            found.add(
                DeviationKind::Missing,
                "",
                format!("{} is not in the matrix", published_name(p)),
            );
        }
        for m in who {
            if let Some(i) = s.matrix.engines.iter().position(|x| std::ptr::eq(x, m)) {
                playing[i] = true;
            }
            let label = entry_label(project, m);
            let version = entry_version(project, m);
            if Some(m.engine.as_str()) != p.engine_name() {
                found.add(
                    DeviationKind::Engine,
                    "",
                    format!("{label} instead of {}", published_name(p)),
                );
            } else if let Some(pv) = p.version()
                && pv != version
            {
                found.add(
                    DeviationKind::Version,
                    "",
                    format!("{label} instead of {}", published_name(p)),
                );
            }
            if let Some(c) = cell_of(cells, &label) {
                storage_engine(project, p, m, &label, c, found);
                knobs(project, p, s, m, &label, c, found);
            }
        }
    }
    for (m, played) in s.matrix.engines.iter().zip(playing) {
        if !played && !r.engines.is_empty() {
            found.add(
                DeviationKind::Added,
                "",
                format!(
                    "{} is not in the write-up (added for comparison)",
                    entry_label(project, m)
                ),
            );
        }
    }
}

/// The knob that chooses a server's storage engine (MongoDB's).
const STORAGE_ENGINE: &str = "storage_engine";

/// A storage engine as people name it.
fn storage_engine_name(v: &str) -> &str {
    match v {
        "mmapv1" => "MMAPv1",
        "wiredTiger" => "WiredTiger",
        other => other,
    }
}

/// The published engine's storage engine (its `storage_engine` knob, else
/// the default of its version) against the cell's, when the same engine
/// plays it: MongoDB 3.2 for 2.2.3 runs WiredTiger instead of MMAPv1.
fn storage_engine(
    project: &Project,
    p: &PublishedEngine,
    m: &crate::spec::scenario::EngineRef,
    label: &str,
    c: &PlannedCell,
    found: &mut Found,
) {
    if Some(m.engine.as_str()) != p.engine_name() {
        return;
    }
    let Some(knob) = project
        .engines
        .get(&m.engine)
        .and_then(|e| e.knobs.get(STORAGE_ENGINE))
    else {
        return;
    };
    let published = p.knobs.get(STORAGE_ENGINE).cloned().or_else(|| {
        p.version()
            .and_then(|v| knob.versions.default_of(v))
            .map(str::to_string)
            .or_else(|| knob.default.clone())
    });
    if let (Some(want), Some(here)) = (published, c.knobs.get(STORAGE_ENGINE))
        && *here != want
    {
        found.add(
            DeviationKind::StorageEngine,
            label,
            format!(
                "{} instead of {}",
                storage_engine_name(here),
                storage_engine_name(&want)
            ),
        );
    }
}

/// Published settings against the cell's knobs, and knobs the scenario
/// set that the write-up does not.
fn knobs(
    project: &Project,
    p: &PublishedEngine,
    s: &Scenario,
    m: &crate::spec::scenario::EngineRef,
    label: &str,
    c: &PlannedCell,
    found: &mut Found,
) {
    let engine = project.engines.get(&m.engine);
    for (k, want) in &p.knobs {
        if k == STORAGE_ENGINE && Some(m.engine.as_str()) == p.engine_name() {
            // Named as its own deviation by `storage_engine`.
            continue;
        }
        let knob = engine.and_then(|e| e.knobs.get(k));
        let want_text = knob
            .and_then(|kn| kn.parse(want).ok())
            .map(|v| v.canonical())
            .unwrap_or_else(|| want.clone());
        match c.knobs.get(k) {
            None if knob.is_none() => found.add(
                DeviationKind::Knob,
                label,
                format!("has no knob {k}; the write-up's {k} = {want_text} is not reproduced"),
            ),
            None => found.add(
                DeviationKind::Knob,
                label,
                format!("{k} is not set; the write-up sets {want_text}"),
            ),
            Some(here) if *here != want_text => found.add(
                DeviationKind::Differs,
                label,
                format!("{k} = {here} instead of the write-up's {want_text}"),
            ),
            Some(_) => {}
        }
    }
    let mut set: Vec<(&String, &String)> = s.knobs.iter().chain(m.knobs.iter()).collect();
    set.sort();
    set.dedup_by(|a, b| a.0 == b.0);
    for (k, _) in set {
        if k == "cache_size" || p.knobs.contains_key(k) {
            continue;
        }
        if let Some(v) = c.knobs.get(k) {
            found.add(
                DeviationKind::Chosen,
                label,
                format!("{k} = {v} chosen by the scenario (the write-up does not set it)"),
            );
        }
    }
}

/// The engine's own short name for a phase's or the load's program.
fn program_of(work: &Work) -> Option<String> {
    let base = |a: &[String]| {
        a.first()
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
    };
    match work {
        Work::Builtin(_) => None,
        Work::Tool(Tool::Sysbench { .. }) => Some("sysbench".into()),
        Work::Tool(Tool::Pgbench { .. }) => Some("pgbench".into()),
        Work::Tool(Tool::Ycsb { argv }) | Work::Tool(Tool::Command { argv, .. }) => base(argv),
        Work::Tool(Tool::Pytpcc(_)) => Some(crate::workload::tools::pytpcc::PROGRAM.into()),
    }
}

/// A phase's program in words, for "X instead of Y".
fn program_words(work: &Work) -> String {
    match work {
        Work::Builtin(Builtin::Ycsb { .. }) => "benchcage's built-in YCSB workloads".into(),
        Work::Builtin(Builtin::Candles { .. }) => "benchcage's built-in candles workload".into(),
        Work::Builtin(Builtin::SysbenchMongo { .. }) => {
            "benchcage's built-in sysbench-mongo (sysbench-mongodb's transaction)".into()
        }
        Work::Builtin(Builtin::Iibench) => "benchcage's built-in iibench".into(),
        Work::Builtin(Builtin::Tpcc { .. }) => "benchcage's built-in TPC-C workload".into(),
        Work::Tool(Tool::Sysbench { test, .. }) => format!("sysbench {test}"),
        _ => program_of(work).unwrap_or_default(),
    }
}

fn tools(r: &Reproduces, s: &Scenario, found: &mut Found) {
    let load_work = s.load.as_ref().map(|l| match l.workload {
        LoadWorkload::Ycsb => Work::Builtin(Builtin::Ycsb {
            workload: crate::spec::scenario::YcsbWorkload::A,
            distribution: crate::workload::Distribution::Uniform,
        }),
        LoadWorkload::Candles => Work::Builtin(Builtin::Candles {
            queries: crate::spec::scenario::CandleQuery::ByTicker,
        }),
        LoadWorkload::SysbenchMongo => Work::Builtin(Builtin::SysbenchMongo {
            collections: l
                .collections
                .unwrap_or(crate::workload::sysbench_mongo::COLLECTIONS),
        }),
        LoadWorkload::Iibench => Work::Builtin(Builtin::Iibench),
        LoadWorkload::Tpcc => Work::Builtin(Builtin::Tpcc {
            warehouses: l.warehouses.unwrap_or(1),
            denormalize: l.denormalize,
        }),
    });
    let steps = load_work
        .iter()
        .map(|w| ("load", w, r.tool.as_ref()))
        .chain(s.phases.iter().map(|p| {
            let t = r
                .phase(p)
                .and_then(|pp| pp.tool.as_ref())
                .or(r.tool.as_ref());
            (p.name.as_str(), &p.work, t)
        }));
    for (name, work, published) in steps {
        let here = program_words(work);
        match published {
            None => found.add(
                DeviationKind::Chosen,
                name,
                format!("{here} chosen by the scenario (the write-up does not name its tool)"),
            ),
            Some(PublishedTool { program, .. })
                if program.is_some() && *program == program_of(work) => {}
            Some(t) => found.add(
                DeviationKind::Tool,
                name,
                format!("{here} instead of {}", t.name),
            ),
        }
    }
}

/// Cells of each environment of the plan (without a settle sweep's tag), in order.
fn by_environment(cells: &[PlannedCell]) -> Vec<(String, Vec<&PlannedCell>)> {
    let mut out: Vec<(String, Vec<&PlannedCell>)> = Vec::new();
    for c in cells {
        let env = crate::model::settle::without_settle_tag(&c.environment).to_string();
        match out.iter_mut().find(|(e, _)| *e == env) {
            Some((_, v)) => v.push(c),
            None => out.push((env, vec![c])),
        }
    }
    out
}

fn scale_note(scale: f64) -> String {
    let how = if scale > 1.0 { "grown" } else { "shrunk" };
    format!("{how} with scale {scale}")
}

fn environments(project: &Project, r: &Reproduces, cells: &[PlannedCell], found: &mut Found) {
    if r.environments.is_empty() {
        return;
    }
    for (env, group) in by_environment(cells) {
        let Some(pe) = r.environments.get(&env) else {
            continue;
        };
        let c = group[0];
        let cpus = c.limits.server_cpus.len() as u32;
        match pe.cpus {
            Some(p) if p != cpus => found.add(
                DeviationKind::Differs,
                &env,
                format!("{cpus} server CPUs instead of the write-up's {p}"),
            ),
            Some(_) => {}
            None => found.add(
                DeviationKind::Chosen,
                &env,
                format!("{cpus} server CPUs chosen (the write-up does not say)"),
            ),
        }
        let capped = project
            .environments
            .get(&env)
            .is_some_and(|e| e.server.memory.is_some());
        size(
            found,
            &env,
            "memory cap",
            capped.then_some(c.limits.memory),
            pe.memory,
            c.scale,
        );
        size(
            found,
            &env,
            "the hog leaves",
            c.hog_leave,
            pe.hog_leave,
            c.scale,
        );
        disk(found, &env, c.limits.disk, pe.disk, c.scale);
        network(found, &env, c.network.as_ref(), pe.network.as_ref());
        for c in group {
            let label = c.id.split('/').next().unwrap_or_default();
            let subject = format!("{env} {label}");
            cache(project, found, &subject, c, pe.cache);
        }
    }
}

/// The cell's data disk (`server.disk.size`) against the disk of the
/// write-up's machine: none, a size of its own, or the write-up's scaled.
fn disk(found: &mut Found, env: &str, here: Option<Bytes>, published: Option<Bytes>, scale: f64) {
    match (here, published) {
        (None, Some(p)) => found.add(
            DeviationKind::Differs,
            env,
            format!(
                "disk: the write-up's machine had {p}, this cell's data dir has no size limit (`server.disk.size: {p}` gives it one)"
            ),
        ),
        _ => size(found, env, "data disk", here, published, scale),
    }
}

/// The cell's network against the write-up's: the loopback where it had
/// a network between two hosts, an emulated link, a delay or a rate of
/// its own.
fn network(
    found: &mut Found,
    env: &str,
    here: Option<&crate::network::Network>,
    published: Option<&crate::spec::writeup::PublishedNetwork>,
) {
    match (here, published) {
        (None, Some(p)) => found.add(
            DeviationKind::Differs,
            env,
            format!(
                "the client reaches the server over the loopback instead of the write-up's {}; give the environment a `network:` (e.g. `--set network.delay=100us`) to emulate a link",
                p.what
            ),
        ),
        (Some(n), None) => found.add(
            DeviationKind::Chosen,
            env,
            format!("network {} chosen (the write-up does not say)", n.describe()),
        ),
        (Some(n), Some(p)) => {
            found.add(
                DeviationKind::Differs,
                env,
                format!(
                    "an emulated link ({}) instead of the write-up's {}",
                    n.describe(),
                    p.what
                ),
            );
            if let Some(d) = p.delay.filter(|d| *d != n.delay) {
                found.add(
                    DeviationKind::Differs,
                    env,
                    format!("network delay {} instead of the write-up's {d}", n.delay),
                );
            }
            if let Some(r) = p.rate.filter(|r| Some(*r) != n.rate) {
                let here = n.rate.map_or("unlimited".to_string(), |h| h.to_string());
                found.add(
                    DeviationKind::Differs,
                    env,
                    format!("network rate {here} instead of the write-up's {r}"),
                );
            }
        }
        (None, None) => {}
    }
}

/// A size of the environment against the published one.
fn size(
    found: &mut Found,
    subject: &str,
    what: &str,
    here: Option<Bytes>,
    published: Option<Bytes>,
    scale: f64,
) {
    match (here, published) {
        (Some(h), Some(p)) if h != p => {
            let why = if h == p.scaled(scale) {
                (DeviationKind::Scaled, format!(" ({})", scale_note(scale)))
            } else {
                (DeviationKind::Differs, String::new())
            };
            found.add(
                why.0,
                subject,
                format!("{what} {h} instead of the write-up's {p}{}", why.1),
            );
        }
        (Some(h), None) => found.add(
            DeviationKind::Chosen,
            subject,
            format!("{what} {h} chosen (the write-up does not say)"),
        ),
        (None, Some(p)) => found.add(
            DeviationKind::Differs,
            subject,
            format!("no {what} here; the write-up's is {p}"),
        ),
        _ => {}
    }
}

/// The engine cache against the published one, with the engine's rounding.
fn cache(project: &Project, found: &mut Found, subject: &str, c: &PlannedCell, p: Option<Bytes>) {
    let Some(p) = p else {
        found.add(
            DeviationKind::Chosen,
            subject,
            format!("cache {} chosen (the write-up does not say)", c.cache),
        );
        return;
    };
    if c.cache == p {
        return;
    }
    let scaled = p.scaled(c.scale);
    let step = project
        .engines
        .get(&c.engine)
        .and_then(|e| e.knobs.get("cache_size"))
        .and_then(|k| k.step.as_ref());
    let rounded = step.and_then(|st| st.round(&c.version, scaled));
    if c.cache == scaled {
        found.add(
            DeviationKind::Scaled,
            subject,
            format!(
                "cache {} instead of the write-up's {p} ({})",
                c.cache,
                scale_note(c.scale)
            ),
        );
    } else if rounded == Some(c.cache) {
        found.add(
            DeviationKind::Rounded,
            subject,
            format!(
                "cache {} instead of the write-up's {p}: {} at scale {}, which {}@{} takes in whole {}",
                c.cache,
                scaled,
                c.scale,
                c.engine,
                c.version,
                step.map(|s| s.size.to_string()).unwrap_or_default()
            ),
        );
    } else {
        found.add(
            DeviationKind::Differs,
            subject,
            format!("cache {} instead of the write-up's {p}", c.cache),
        );
    }
}

/// A count against the published one: `here` is the planned value, `written`
/// the scenario's before scale.
fn count(
    found: &mut Found,
    subject: &str,
    what: &str,
    here: u64,
    written: u64,
    published: Option<u64>,
    scale: f64,
) {
    match published {
        Some(p) if p == here => {}
        Some(p) if p == written => found.add(
            DeviationKind::Scaled,
            subject,
            format!(
                "{what} {here} instead of the write-up's {p} ({})",
                scale_note(scale)
            ),
        ),
        Some(p) => found.add(
            DeviationKind::Differs,
            subject,
            format!("{what} {here} instead of the write-up's {p}"),
        ),
        None if here != written => found.add(
            DeviationKind::Chosen,
            subject,
            format!(
                "{what} {here} chosen by the scenario (the write-up does not give it; {written} before scale {scale})"
            ),
        ),
        None => found.add(
            DeviationKind::Chosen,
            subject,
            format!("{what} {here} chosen by the scenario (the write-up does not give it)"),
        ),
    }
}

fn dataset_and_load(r: &Reproduces, s: &Scenario, cells: &[PlannedCell], found: &mut Found) {
    if let Some(d) = &s.dataset {
        for (env, group) in by_environment(cells) {
            let c = group[0];
            if let Some(here) = &c.dataset {
                count(
                    found,
                    &env,
                    "records",
                    here.records,
                    d.records,
                    r.dataset.records,
                    c.scale,
                );
            }
        }
        let fc = d.field_count as u64;
        count(
            found,
            "",
            "fields per record:",
            fc,
            fc,
            r.dataset.field_count.map(u64::from),
            1.0,
        );
        let fl = d.field_length as u64;
        count(
            found,
            "",
            "bytes per field:",
            fl,
            fl,
            r.dataset.field_length.map(u64::from),
            1.0,
        );
    }
    load(r, s, found);
}

/// The load's threads and batch against the write-up's, or what stands
/// in for its load when the scenario has none.
fn load(r: &Reproduces, s: &Scenario, found: &mut Found) {
    match &s.load {
        Some(l) => {
            let (t, b) = (l.threads as u64, l.batch as u64);
            count(
                found,
                "load",
                "threads",
                t,
                t,
                r.load.threads.map(u64::from),
                1.0,
            );
            count(
                found,
                "load",
                "batch",
                b,
                b,
                r.load.batch.map(u64::from),
                1.0,
            );
        }
        None if r.load.threads.is_some() || r.load.batch.is_some() => {
            let prepare = s
                .phases
                .iter()
                .find_map(|p| match &p.work {
                    Work::Tool(Tool::Sysbench { loaders, .. }) => Some(format!(
                        "sysbench's own prepare ({loaders} loader{}, multi-row INSERTs)",
                        if *loaders == 1 { "" } else { "s" }
                    )),
                    Work::Tool(Tool::Pgbench { .. }) => Some("pgbench -i".into()),
                    _ => None,
                })
                .unwrap_or_else(|| "the tool's own load".into());
            let mut published = Vec::new();
            if let Some(t) = r.load.threads {
                published.push(format!("{t} loaders"));
            }
            if let Some(b) = r.load.batch {
                published.push(format!("batches of {b}"));
            }
            found.add(
                DeviationKind::Differs,
                "load",
                format!(
                    "{prepare} instead of the write-up's {}",
                    published.join(" inserting ")
                ),
            );
        }
        None => {}
    }
}

fn phases(r: &Reproduces, s: &Scenario, cells: &[PlannedCell], found: &mut Found) {
    for p in &s.phases {
        let Some(pp) = r.phase(p) else {
            found.add(
                DeviationKind::Added,
                &p.name,
                "not in the write-up".to_string(),
            );
            continue;
        };
        phase_shape(p, pp, found);
        for (env, group) in by_environment(cells) {
            let c = group[0];
            let Some(planned) = c.phases.iter().find(|q| q.phase.name == p.name) else {
                continue;
            };
            let subject = format!("{env} {}", p.name);
            for (what, here, written) in sizes(&planned.phase, p) {
                let published = pp.sizes.get(&what).copied();
                count(found, &subject, &what, here, written, published, c.scale);
            }
        }
    }
}

/// A phase's threads, length and warmup against the published ones.
fn phase_shape(p: &Phase, pp: &PublishedPhase, found: &mut Found) {
    let list = |t: &[u32]| t.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let name = p.name.as_str();
    match &pp.threads {
        Some(t) if *t == p.threads => {}
        Some(t) => found.add(
            DeviationKind::Differs,
            name,
            format!(
                "threads {} instead of the write-up's {}",
                list(&p.threads),
                list(t)
            ),
        ),
        None => found.add(
            DeviationKind::Chosen,
            name,
            format!(
                "threads {} chosen by the scenario (the write-up does not give them)",
                list(&p.threads)
            ),
        ),
    }
    let here = match p.length {
        Length::Duration(d) => format!("runs for {d}"),
        Length::Operations(n) => format!("runs {n} operations"),
    };
    let published = match (pp.duration, pp.operations) {
        (Some(d), _) => Some((Length::Duration(d), format!("runs for {d}"))),
        (None, Some(n)) => Some((Length::Operations(n), format!("runs {n} operations"))),
        (None, None) => None,
    };
    match published {
        Some((l, _)) if l == p.length => {}
        Some((_, words)) => found.add(
            DeviationKind::Differs,
            name,
            format!("{here}; the write-up {words}"),
        ),
        None => found.add(
            DeviationKind::Chosen,
            name,
            format!("{here}, chosen by the scenario (the write-up does not say)"),
        ),
    }
    let warm = p.warmup;
    match pp.warmup {
        Some(w) if w == warm => {}
        Some(w) => found.add(
            DeviationKind::Differs,
            name,
            format!("warmup {warm} instead of the write-up's {w}"),
        ),
        None if !warm.std().is_zero() => found.add(
            DeviationKind::Chosen,
            name,
            format!("warmup {warm} chosen by the scenario (the write-up does not say)"),
        ),
        None => {}
    }
    if let Some(t) = p.target {
        found.add(
            DeviationKind::Chosen,
            name,
            format!("target {t} ops/s chosen by the scenario"),
        );
    }
}

/// A tool's sizes: (name, planned value, value as the scenario wrote it).
fn sizes(planned: &Phase, written: &Phase) -> Vec<(String, u64, u64)> {
    match (&planned.work, &written.work) {
        (
            Work::Tool(Tool::Sysbench {
                tables, table_size, ..
            }),
            Work::Tool(Tool::Sysbench {
                table_size: w_size, ..
            }),
        ) => vec![
            ("tables".into(), *tables as u64, *tables as u64),
            ("table_size".into(), *table_size, *w_size),
        ],
        (Work::Tool(Tool::Pgbench { scale, .. }), Work::Tool(Tool::Pgbench { scale: w, .. })) => {
            vec![("scale".into(), *scale as u64, *w as u64)]
        }
        (Work::Tool(Tool::Pytpcc(p)), Work::Tool(Tool::Pytpcc(w))) => {
            vec![("warehouses".into(), p.warehouses, w.warehouses)]
        }
        (Work::Tool(Tool::Command { scaled, .. }), Work::Tool(Tool::Command { scaled: w, .. })) => {
            scaled
                .iter()
                .filter_map(|(k, v)| w.get(k).map(|wv| (k.clone(), *v, *wv)))
                .collect()
        }
        _ => Vec::new(),
    }
}
