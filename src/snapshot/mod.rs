//! Dataset snapshots: the engine's data dir after a load, kept in a cache
//! so that a later cell with the same key restores it instead of loading
//! again (issue 18). A matrix then costs cells x phase time, not cells x
//! load time.
//!
//! - [`SnapshotKey`]: everything that makes two loads write the same
//!   files: engine@version and its program, the backend, how the data dir
//!   is made (the `init` and replica `init` argv, the command line, the
//!   engine's environment, the config files as they shape the files), the
//!   knobs that change the on-disk format (the engine spec's
//!   `snapshot.knobs`), the dataset, the load spec and its seed, the
//!   topology. [`SnapshotKey::differences`] says why two keys differ.
//! - [`store`]: the cache folder, one entry per key, with its size limit.
//! - [`copy`]: reflink or plain copies, and compressed archives when the
//!   cache is on another disk than the work dir.
//!
//! The engine is stopped cleanly before its data dir is copied, and a
//! restored data dir gets no `init`; after a restore the host's page cache
//! is dropped, so the data is no warmer than after a load.

pub mod copy;
pub mod manifest;
pub mod store;

use crate::workload::{Dataset, Load};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Changes when what a snapshot holds, or how, changes: older entries then
/// no longer match any key. 2: redis digests a hash by its sorted fields
/// (an entry of format 1 holds a digest of its load that a restore of it
/// would no longer reproduce). 3: the key holds how the data dir was made
/// (init argv, command, config files); an entry of format 2 may hold data
/// made another way (issue 34, point 7), so none of them matches.
pub(crate) const KEY_FORMAT: u32 = 3;

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
    /// The engine's command line, placeholders unfilled.
    pub command: Vec<String>,
    /// The argv run on an empty data dir before the first start (initdb,
    /// mariadb-install-db), placeholders unfilled.
    pub init: Vec<Vec<String>>,
    /// What makes a replica's data dir instead (pg_basebackup).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replica_init: Vec<Vec<String>>,
    /// The engine's environment variables (a locale shapes initdb's files).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Each config file, by name, as its setting lines: rendered with
    /// every input that does not shape the files held fixed (see
    /// `plan::snapshot::shaping_configs`), comments and blank lines left
    /// out. A line added to a template (`innodb_page_size = 8k`) is here.
    pub configs: BTreeMap<String, Vec<String>>,
}

impl SnapshotKey {
    /// A short hex id of the key: the entry's folder name.
    pub fn id(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        hex::encode(&Sha256::digest(&json)[..8])
    }

    /// Why `self` is another key than `other`, in words, one part each
    /// (`init argv`, `my.cnf: + innodb_page_size = 8k`, `knob compression:
    /// lz4 -> zstd`); empty when they are the same key.
    pub fn differences(&self, other: &SnapshotKey) -> Vec<String> {
        let mut out = Vec::new();
        let mut part = |differs: bool, name: &str| {
            if differs {
                out.push(name.to_string());
            }
        };
        part(self.format != other.format, "key format");
        part(self.engine != other.engine, "engine");
        part(self.version != other.version, "version");
        part(self.program != other.program, "program");
        part(self.backend != other.backend, "backend");
        part(
            self.storage_engine != other.storage_engine,
            "storage engine",
        );
        part(self.dataset != other.dataset, "dataset");
        part(self.load != other.load, "load");
        part(self.seed != other.seed, "seed");
        part(self.topology != other.topology, "topology");
        part(self.command != other.command, "command line");
        part(self.init != other.init, "init argv");
        part(self.replica_init != other.replica_init, "replica init argv");
        part(self.env != other.env, "environment variables");
        for name in union(self.knobs.keys(), other.knobs.keys()) {
            let (a, b) = (self.knobs.get(name), other.knobs.get(name));
            if a != b {
                out.push(format!(
                    "knob {name}: {} -> {}",
                    b.map_or("unset", |v| v.as_str()),
                    a.map_or("unset", |v| v.as_str())
                ));
            }
        }
        for name in union(self.configs.keys(), other.configs.keys()) {
            let empty = Vec::new();
            let mine = self.configs.get(name).unwrap_or(&empty);
            let theirs = other.configs.get(name).unwrap_or(&empty);
            let added = mine
                .iter()
                .filter(|l| !theirs.contains(l))
                .map(|l| format!("+ {l}"));
            let removed = theirs
                .iter()
                .filter(|l| !mine.contains(l))
                .map(|l| format!("- {l}"));
            let lines: Vec<String> = added.chain(removed).collect();
            if !lines.is_empty() {
                out.push(format!("{name}: {}", lines.join(", ")));
            } else if mine != theirs {
                out.push(format!("{name}: the order of its lines"));
            }
        }
        out
    }

    /// `postgres@16 / 100000 records` for listings.
    pub(crate) fn describe(&self) -> String {
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

/// The names of both maps, once each, in order.
fn union<'a>(
    a: impl Iterator<Item = &'a String>,
    b: impl Iterator<Item = &'a String>,
) -> std::collections::BTreeSet<&'a String> {
    a.chain(b).collect()
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
    /// The entry is not whole: a file differs from its manifest, or it
    /// cannot be read back. It is quarantined, and the cell loads.
    #[error("snapshot {id} is broken: {why}")]
    Broken { id: String, why: String },
    /// The entry was removed (`cache prune`) before it could be restored.
    #[error("snapshot {id} was removed from the cache before it could be restored")]
    Gone { id: String },
    /// A restore holds the entry: it is not removed now.
    #[error("snapshot {id} is being restored by another run; it is kept")]
    Busy { id: String },
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
    use crate::workload::GeneratorKind as LoadWorkload;
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
                measured: false,
            },
            seed: 1,
            topology: "standalone".into(),
            command: vec!["{binary}".into(), "-D".into(), "{data_dir}".into()],
            init: vec![vec![
                "{bin_dir}/initdb".into(),
                "-D".into(),
                "{data_dir}".into(),
                "-E".into(),
                "UTF8".into(),
            ]],
            replica_init: Vec::new(),
            env: BTreeMap::new(),
            configs: BTreeMap::from([(
                "postgresql.conf".to_string(),
                vec!["huge_pages = off".to_string()],
            )]),
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
        // How the data dir is made: initdb's encoding and checksums, the
        // command line, a line of a config file (issue 34, point 7).
        let mut h = key();
        h.init[0].splice(
            3..,
            ["-E", "SQL_ASCII", "--data-checksums"].map(String::from),
        );
        let mut i = key();
        i.command.push("--foo".into());
        let mut j = key();
        j.configs
            .get_mut("postgresql.conf")
            .unwrap()
            .push("data_sync_retry = on".into());
        let mut k = key();
        k.env.insert("LANG".into(), "C".into());
        let ids: std::collections::BTreeSet<String> = [&a, &b, &c, &d, &e, &f, &g, &h, &i, &j, &k]
            .iter()
            .map(|k| k.id())
            .collect();
        assert_eq!(ids.len(), 11);
    }

    #[test]
    fn two_keys_say_which_of_their_parts_differ() {
        let a = key();
        assert!(a.differences(&key()).is_empty());
        let mut b = key();
        b.init[0].push("--data-checksums".into());
        b.knobs.insert("compression".into(), "zstd".into());
        b.configs
            .get_mut("postgresql.conf")
            .unwrap()
            .push("innodb_page_size = 8k".into());
        assert_eq!(
            b.differences(&a),
            vec![
                "init argv".to_string(),
                "knob compression: unset -> zstd".to_string(),
                "postgresql.conf: + innodb_page_size = 8k".to_string(),
            ]
        );
    }
}
