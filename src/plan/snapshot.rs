//! A cell's snapshot: the key of its load, when the scenario and the
//! engine allow one (a built-in `load:`, `snapshots` not off, and a
//! `snapshot:` block in the engine spec), and what the cache holds for it.

use super::cells::Parts;
use super::knobs::Knobs;
use super::{Entry, PlannedCell};
use crate::model::Program;
use crate::render::{MemberContext, RenderInput, RenderedConfig};
use crate::snapshot::{KEY_FORMAT, SnapshotKey};
use crate::spec::Scenario;
use crate::spec::engine::{ConfigFormat, Knob, KnobType, KnobValue};
use crate::units::{Bytes, Duration};
use std::collections::BTreeMap;
use std::path::Path;

/// The snapshot a cell restores or saves.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SnapshotPlan {
    /// The key's id: the cache entry's name.
    pub id: String,
    pub key: SnapshotKey,
    /// Digest the records after the load or restore, and compare.
    pub verify: bool,
    /// The engine's digest SQL, when it gives one.
    #[serde(skip)]
    pub digest_sql: Option<String>,
    /// Sent before the clean stop (redis: `SAVE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

/// The snapshot plan of the entry's cells, or `None` when they always
/// load afresh.
pub(super) fn of(e: &Entry, s: &Scenario, parts: &Parts) -> Option<SnapshotPlan> {
    let spec = e.engine.snapshot.as_ref()?;
    // A replica set's data is in every member: one data dir is not it.
    // A measured load is a result: every cell loads (issue 33, point 1).
    if !s.snapshots.enabled
        || parts.members.len() > 1
        || s.load.as_ref().is_some_and(|l| l.measured)
    {
        return None;
    }
    let (load, dataset, config) = (
        s.load.clone()?,
        parts.work.dataset.clone()?,
        parts.work.load.as_ref()?,
    );
    let all = parts.knobs.canonical();
    let knobs = spec
        .knobs
        .iter()
        .filter_map(|k| all.get(k).map(|v| (k.clone(), v.clone())))
        .collect();
    let program = match &parts.program {
        Program::Binary(p) => p.display().to_string(),
        Program::Image(i) => i.clone(),
    };
    let key = SnapshotKey {
        format: KEY_FORMAT,
        engine: e.engine.name.clone(),
        version: e.version.to_string(),
        program,
        backend: e.ep.env.backend.name().to_string(),
        knobs,
        storage_engine: e.engine.storage_engine.clone(),
        dataset,
        load,
        seed: config.seed,
        topology: super::members::topology_of(e).key(),
        command: e.engine.command.clone(),
        init: e.engine.init.clone(),
        replica_init: e
            .engine
            .replication
            .as_ref()
            .map(|r| r.replica_init.clone())
            .unwrap_or_default(),
        env: e.engine.env.clone(),
        configs: parts.shaping.clone(),
    };
    Some(SnapshotPlan {
        id: key.id(),
        key,
        verify: s.snapshots.verify,
        digest_sql: spec.digest.clone(),
        checkpoint: spec.checkpoint.clone(),
    })
}

/// Where each cell's data will come from, in words for `plan`: loaded
/// because the load is measured, restored from the cache, restored from
/// the load of an earlier cell of this run, or loaded (and saved for the
/// cells after it), with why no entry of the cache or earlier cell of the
/// same engine serves it. Cells that load and have no snapshot get `None`.
pub(crate) fn sources(
    cells: &[PlannedCell],
    cache: &crate::snapshot::store::Cache,
) -> Vec<Option<String>> {
    let entries = cache.entries();
    let mut loaded_by: BTreeMap<&str, (&str, &SnapshotKey)> = BTreeMap::new();
    cells
        .iter()
        .map(|c| {
            if c.load.as_ref().is_some_and(|l| l.measured) {
                return Some(
                    "loads (measured): the load is a result (`load: {measured: true}`), so no cell restores a snapshot"
                        .to_string(),
                );
            }
            let sp = c.snapshot.as_ref()?;
            if let Some(m) = entries.iter().find(|m| m.id == sp.id) {
                return Some(format!(
                    "snapshot {}: restores from the cache ({}, loaded by run {} in {:.0}s)",
                    sp.id,
                    crate::units::Bytes(m.stored_bytes),
                    m.from_run,
                    m.load_s
                ));
            }
            if let Some((cell, _)) = loaded_by.get(sp.id.as_str()) {
                return Some(format!(
                    "snapshot {}: restores from the load of {cell}",
                    sp.id
                ));
            }
            let mut text = format!(
                "snapshot {}: loads, then saves the data for the cells after it",
                sp.id
            );
            let cached = entries.iter().map(|m| (m.id.as_str(), &m.key, "the cache's"));
            let earlier = loaded_by
                .iter()
                .map(|(id, (cell, key))| (*id, *key, *cell));
            if let Some(why) = nearest(&sp.key, cached.chain(earlier)) {
                text.push_str(&format!("; {why}"));
            }
            loaded_by.insert(sp.id.as_str(), (c.id.as_str(), &sp.key));
            Some(text)
        })
        .collect()
}

/// Of other keys of the same engine and version (`(id, key, whose)`), the
/// one with the fewest differences from `key`, in words: `not the
/// cache's 0123...: init argv, my.cnf: + innodb_page_size = 8k`.
fn nearest<'a>(
    key: &SnapshotKey,
    others: impl Iterator<Item = (&'a str, &'a SnapshotKey, &'a str)>,
) -> Option<String> {
    others
        .filter(|(_, k, _)| k.engine == key.engine && k.version == key.version)
        .map(|(id, k, whose)| (key.differences(k), id, whose))
        .filter(|(d, _, _)| !d.is_empty())
        .min_by_key(|(d, _, _)| d.len())
        .map(|(d, id, whose)| {
            let whose = if whose == "the cache's" {
                format!("the cache's {id}")
            } else {
                format!("{whose}'s {id}")
            };
            format!("not {whose}, whose key differs in: {}", d.join("; "))
        })
}

/// The engine's config files as they shape its data files, for the
/// snapshot key: rendered again with every input that does not shape them
/// held fixed (the environment, its cache, memory and CPUs, and each knob
/// the engine does not list in `snapshot.knobs` at its default, or a fixed
/// value of its type), so that cells which differ only in those share one
/// key, while a line a template adds (`innodb_page_size = 8k`) or a
/// format knob changes it. Only setting lines are kept. When that render
/// fails (a template that refuses the fixed values), the cell's own files
/// stand in: a key that misses more often, never one that matches wrongly.
pub(super) fn shaping_configs(
    home: &Path,
    e: &Entry,
    knobs: &Knobs,
    actual: &[RenderedConfig],
) -> BTreeMap<String, Vec<String>> {
    let Some(spec) = e.engine.snapshot.as_ref() else {
        return BTreeMap::new();
    };
    let fixed: BTreeMap<String, KnobValue> = e
        .engine
        .knobs
        .iter()
        .filter_map(|(name, knob)| {
            if spec.knobs.contains(name) {
                knobs.typed.get(name).map(|v| (name.clone(), v.clone()))
            } else {
                Some((name.clone(), fixed_value(knob)))
            }
        })
        .collect();
    let input = RenderInput {
        engine: e.engine,
        version: e.version,
        environment: "",
        cache: Bytes(1 << 30),
        memory: None,
        cpus: 1,
        knobs: &fixed,
        member: MemberContext::standalone(),
    };
    let rendered = crate::render::render_all(home, &input);
    let files = rendered.as_deref().unwrap_or(actual);
    files
        .iter()
        .map(|f| {
            let format = e
                .engine
                .config_files
                .iter()
                .find(|c| c.name() == f.name)
                .map(|c| c.format);
            (f.name.clone(), setting_lines(&f.content, format))
        })
        .collect()
}

/// The value a knob that does not shape the files takes in the key's
/// render: its default, else a fixed value of its type.
fn fixed_value(knob: &Knob) -> KnobValue {
    if let Some(v) = knob.default.as_deref().and_then(|d| knob.parse(d).ok()) {
        return v;
    }
    match knob.kind {
        KnobType::Size => KnobValue::Size(Bytes(1 << 30)),
        KnobType::Duration => KnobValue::Duration(Duration::from_secs(1)),
        KnobType::Bool => KnobValue::Bool(false),
        KnobType::Int => KnobValue::Int(1),
        KnobType::Enum => KnobValue::Enum(knob.values.first().cloned().unwrap_or_default()),
        KnobType::String => KnobValue::String(String::new()),
    }
}

/// The lines of a config file that set something, without blank lines
/// and whole-line comments (`#`, and `;` in INI files); indentation kept
/// (YAML nests by it).
fn setting_lines(content: &str, format: Option<ConfigFormat>) -> Vec<String> {
    content
        .lines()
        .map(str::trim_end)
        .filter(|l| {
            let t = l.trim_start();
            let comment =
                t.starts_with('#') || (format == Some(ConfigFormat::Ini) && t.starts_with(';'));
            !(t.is_empty() || comment)
        })
        .map(String::from)
        .collect()
}
