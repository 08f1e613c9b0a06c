//! Dataset snapshots: the engine's data dir after a load, kept in a cache
//! so that a later cell with the same key restores it instead of loading
//! again (issue 18). A matrix then costs cells x phase time, not cells x
//! load time.
//!
//! - [`SnapshotKey`]: everything that makes two loads write the same
//!   files: engine@version and its program, the backend, the knobs that
//!   change the on-disk format (the engine spec's `snapshot.knobs`), the
//!   dataset, the load spec and its seed, the topology.
//! - [`store`]: the cache folder, one entry per key, with its size limit.
//! - [`copy`]: reflink or plain copies, and compressed archives when the
//!   cache is on another disk than the work dir.
//!
//! The engine is stopped cleanly before its data dir is copied, and a
//! restored data dir gets no `init`; after a restore the host's page cache
//! is dropped, so the data is no warmer than after a load.

pub mod copy;
pub mod store;

use crate::spec::scenario::{Dataset, Load};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Changes when what a snapshot holds, or how, changes: older entries then
/// no longer match any key. 2: redis digests a hash by its sorted fields
/// (an entry of format 1 holds a digest of its load that a restore of it
/// would no longer reproduce).
pub const KEY_FORMAT: u32 = 2;

/// What makes two loads give the same data dir. Two cells whose keys are
/// equal may share one load.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SnapshotKey {
    pub format: u32,
    pub engine: String,
    pub version: String,
    /// The binary or image that wrote the files.
    pub program: String,
    pub backend: String,
    /// The knobs that change the files on disk (compression, page size),
    /// canonical text, as the engine spec lists them.
    pub knobs: BTreeMap<String, String>,
    /// The storage engine the load generator creates its table with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_engine: Option<String>,
    pub dataset: Dataset,
    pub load: Load,
    /// The load generator's seed: the field values it writes.
    pub seed: u64,
    /// `standalone` (one server per cell).
    pub topology: String,
}

impl SnapshotKey {
    /// A short hex id of the key: the entry's folder name.
    pub fn id(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        hex::encode(&Sha256::digest(&json)[..8])
    }

    /// `postgres@16 / 100000 records` for listings.
    pub fn describe(&self) -> String {
        format!(
            "{}@{} ({}) / {} records x {} fields x {} B, {} loaders",
            self.engine,
            self.version,
            self.backend,
            self.dataset.records,
            self.dataset.field_count,
            self.dataset.field_length,
            self.load.threads
        )
    }
}

/// Where a cell's data came from, as cell.json records it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum LoadSource {
    /// Loaded by this cell. `key` when the cell could snapshot it, and
    /// `saved` whether it did (`note` says why not).
    Fresh {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        #[serde(default)]
        saved: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        save_s: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// Restored from the snapshot `key`, taken by run `from_run` after a
    /// load of `load_s` seconds; the restore took `restore_s`.
    Snapshot {
        key: String,
        restore_s: f64,
        load_s: f64,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        from_run: String,
    },
}

impl LoadSource {
    /// Whether the cell's phases ran on restored data.
    pub fn restored(&self) -> bool {
        matches!(self, LoadSource::Snapshot { .. })
    }
}

/// Why a snapshot could not be taken or restored.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot cache {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{argv}` failed ({status}): {stderr}")]
    Command {
        argv: String,
        status: String,
        stderr: String,
    },
    #[error("snapshot {id}: {msg}")]
    Entry { id: String, msg: String },
}

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::scenario::LoadWorkload;
    use crate::workload::InsertOrder;

    pub(crate) fn key() -> SnapshotKey {
        SnapshotKey {
            format: KEY_FORMAT,
            engine: "postgres".into(),
            version: "16".into(),
            program: "/usr/lib/postgresql/16/bin/postgres".into(),
            backend: "cgroup".into(),
            knobs: BTreeMap::new(),
            storage_engine: None,
            dataset: Dataset {
                records: 1000,
                field_count: 10,
                field_length: 100,
                insert_order: InsertOrder::Hashed,
            },
            load: Load {
                threads: 4,
                workload: LoadWorkload::Ycsb,
                batch: 1,
                warehouses: None,
                denormalize: None,
                collections: None,
            },
            seed: 1,
            topology: "standalone".into(),
        }
    }

    #[test]
    fn the_id_changes_with_every_part_of_the_key_and_only_with_it() {
        let a = key();
        assert_eq!(a.id(), key().id());
        assert_eq!(a.id().len(), 16);
        let mut b = key();
        b.knobs.insert("compression".into(), "lz4".into());
        let mut c = key();
        c.dataset.records = 1001;
        let mut d = key();
        d.seed = 2;
        let mut e = key();
        e.version = "17".into();
        let mut f = key();
        f.topology = "replica_set:3".into();
        // A TPC-C load in py-tpcc's normalized schema writes other files.
        let mut g = key();
        g.load.denormalize = Some(false);
        let ids: std::collections::BTreeSet<String> = [&a, &b, &c, &d, &e, &f, &g]
            .iter()
            .map(|k| k.id())
            .collect();
        assert_eq!(ids.len(), 7);
    }

    #[test]
    fn a_load_source_reads_back_as_written() {
        let s = LoadSource::Snapshot {
            key: "abc".into(),
            restore_s: 1.5,
            load_s: 20.0,
            from_run: "20261201-120000-abcd".into(),
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"kind\":\"snapshot\""), "{json}");
        assert_eq!(serde_json::from_str::<LoadSource>(&json).unwrap(), s);
        assert!(s.restored());
    }
}
