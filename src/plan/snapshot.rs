//! A cell's snapshot: the key of its load, when the scenario and the
//! engine allow one (a built-in `load:`, `snapshots` not off, and a
//! `snapshot:` block in the engine spec), and what the cache holds for it.

use super::cells::Parts;
use super::{Entry, PlannedCell};
use crate::model::Program;
use crate::snapshot::{KEY_FORMAT, SnapshotKey};
use crate::spec::Scenario;

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
    if !s.snapshots.enabled || parts.members.len() > 1 {
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
    };
    Some(SnapshotPlan {
        id: key.id(),
        key,
        verify: s.snapshots.verify,
        digest_sql: spec.digest.clone(),
        checkpoint: spec.checkpoint.clone(),
    })
}

/// Where each cell's data will come from, in words for `plan`: restored
/// from the cache, restored from an earlier cell of this run, or loaded
/// (and saved for the cells after it). Cells without a snapshot get
/// `None`.
pub fn sources(
    cells: &[PlannedCell],
    cache: &crate::snapshot::store::Cache,
) -> Vec<Option<String>> {
    let mut seen = std::collections::BTreeSet::new();
    cells
        .iter()
        .map(|c| {
            let sp = c.snapshot.as_ref()?;
            let first = seen.insert(sp.id.clone());
            Some(match cache.find(&sp.id) {
                Some(m) => format!(
                    "snapshot {}: restored from the cache ({}, loaded by run {} in {:.0}s)",
                    sp.id,
                    crate::units::Bytes(m.stored_bytes),
                    m.from_run,
                    m.load_s
                ),
                None if first => format!(
                    "snapshot {}: loads, then saves the data for the cells after it",
                    sp.id
                ),
                None => format!(
                    "snapshot {}: restored from the load of an earlier cell of this run",
                    sp.id
                ),
            })
        })
        .collect()
}
