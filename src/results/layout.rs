//! Where a run's files live, and loading a run folder into memory.
//!
//! ```text
//! results/
//!   history.sqlite
//!   <run-id>/run.json                          RunRecord
//!   <run-id>/cells/<cell-key>/cell.json        CellRecord (embeds phases + fidelity)
//!   <run-id>/cells/<cell-key>/phases/<nn>-<name>.json   PhaseResult, nn from 01
//!   <run-id>/cells/<cell-key>/samples.json     Vec<ResourceSample>
//!   <run-id>/cells/<cell-key>/fidelity.json    FidelityRecord
//!   <run-id>/claims.json                       ClaimsRecord (the write-up's claims decided)
//! ```

use crate::results::model::{CellRecord, ResourceSample, RunRecord};
use serde::de::DeserializeOwned;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The run's own record.
pub(crate) const RUN_FILE: &str = "run.json";
/// Folder of cells inside a run folder.
pub(crate) const CELLS_DIR: &str = "cells";
/// The cell's record.
pub(crate) const CELL_FILE: &str = "cell.json";
/// See [`CellPaths::sealed`].
pub(crate) const SEALED_FILE: &str = "sealed";
/// See [`CellPaths::late_dir`].
pub(crate) const LATE_DIR: &str = "late";
/// Folder of phase results inside a cell folder.
pub(crate) const PHASES_DIR: &str = "phases";
/// Per-second resource samples of the server.
pub(crate) const SAMPLES_FILE: &str = "samples.json";
/// The cell's fidelity record.
pub(crate) const FIDELITY_FILE: &str = "fidelity.json";
/// The write-up's claims decided by the run, when its scenario has claims.
pub(crate) const CLAIMS_FILE: &str = "claims.json";
/// The history database, directly under `results/`.
pub(crate) const HISTORY_FILE: &str = "history.sqlite";

/// `results/` under the project home.
pub fn results_root(home: &Path) -> PathBuf {
    home.join("results")
}

/// `results/history.sqlite` under the project home.
pub fn history_db(home: &Path) -> PathBuf {
    results_root(home).join(HISTORY_FILE)
}

/// Paths of one run folder.
#[derive(Debug, Clone)]
pub struct RunPaths {
    pub dir: PathBuf,
}

impl RunPaths {
    /// The folder of `run_id` under `results_root`.
    pub fn new(results_root: &Path, run_id: &str) -> Self {
        RunPaths {
            dir: results_root.join(run_id),
        }
    }
    pub fn run_json(&self) -> PathBuf {
        self.dir.join(RUN_FILE)
    }
    pub(crate) fn claims_json(&self) -> PathBuf {
        self.dir.join(CLAIMS_FILE)
    }
    pub(crate) fn cells_dir(&self) -> PathBuf {
        self.dir.join(CELLS_DIR)
    }
    /// Paths of one cell of this run.
    pub fn cell(&self, key: &str) -> CellPaths {
        CellPaths {
            dir: self.cells_dir().join(key),
        }
    }
}

/// Paths of one cell folder.
#[derive(Debug, Clone)]
pub struct CellPaths {
    pub dir: PathBuf,
}

impl CellPaths {
    pub fn cell_json(&self) -> PathBuf {
        self.dir.join(CELL_FILE)
    }
    /// Present when the run's submitter decided the cell without it (its
    /// Slurm job ended first, e.g. NODE_FAIL); holds the reason.
    pub(crate) fn sealed(&self) -> PathBuf {
        self.dir.join(SEALED_FILE)
    }
    /// Where a sealed cell's own process writes what it does after the
    /// seal, so that nothing it measured is lost and nothing overwrites
    /// the verdict: `late/cell.json`, `late/phases/...`.
    pub(crate) fn late_dir(&self) -> PathBuf {
        self.dir.join(LATE_DIR)
    }
    /// `path` (inside this cell's folder) as the cell's own process must
    /// write it now: under `late/` once the folder is sealed.
    pub fn writable(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.dir) {
            Ok(rel) if self.sealed().exists() => self.late_dir().join(rel),
            _ => path.to_path_buf(),
        }
    }
    pub(crate) fn phases_dir(&self) -> PathBuf {
        self.dir.join(PHASES_DIR)
    }
    /// `phases/<nn>-<name>-t<threads>.json` for the phase at `index`
    /// (0-based; files are numbered from 01 so a listing sorts in phase order).
    pub fn phase_json(&self, index: usize, name: &str, threads: u32) -> PathBuf {
        self.phases_dir()
            .join(format!("{}.json", phase_stem(index, name, threads)))
    }
    pub fn samples_json(&self) -> PathBuf {
        self.dir.join(SAMPLES_FILE)
    }
    pub fn fidelity_json(&self) -> PathBuf {
        self.dir.join(FIDELITY_FILE)
    }
}

/// `<nn>-<name>-t<threads>` of the phase at 0-based `index`: its file name
/// without `.json`, the key of `FidelityRecord::phase_io`, the stem of its
/// raw outputs. (A thread sweep runs one phase name at several thread counts.)
pub(crate) fn phase_stem(index: usize, name: &str, threads: u32) -> String {
    format!("{:02}-{}-t{threads}", index + 1, file_safe(name))
}

/// Whether a resource sample's `phase` label names this phase: the run
/// labels measured phases `<name> t<threads>`, the load phase by its name.
pub(crate) fn sample_in_phase(label: &str, name: &str, threads: u32) -> bool {
    label == name
        || label
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(" t").or_else(|| rest.strip_prefix("/t")))
            .is_some_and(|t| t == threads.to_string())
}

/// A phase name made safe for a file name: anything but letters, digits,
/// `.`, `_` and `-` becomes `-`.
pub(crate) fn file_safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("p{s}")
    } else {
        s
    }
}

/// One cell loaded from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct CellData {
    pub record: CellRecord,
    /// The server's resource samples; empty when the cell has none.
    pub samples: Vec<ResourceSample>,
}

/// A run folder loaded into memory.
#[derive(Debug, Clone, PartialEq)]
pub struct RunData {
    /// The folder it was loaded from.
    pub dir: PathBuf,
    pub run: RunRecord,
    /// Cells that have a `cell.json`, in plan order.
    pub cells: Vec<CellData>,
    /// Planned cells without a `cell.json` (not run, or interrupted).
    pub unfinished: Vec<String>,
    /// `claims.json`, when the run decided claims.
    pub claims: Option<crate::model::claim::ClaimsRecord>,
}

/// Why a run folder could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error(
        "no run `{arg}`: neither a folder with a run.json nor a run id under {root}{known}; \
         list runs with `benchcage history` or `ls {root}`"
    )]
    UnknownRun {
        arg: String,
        root: PathBuf,
        known: String,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not valid: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{path} holds {size}, over the {limit} benchcage reads of such a file (no run writes one \
         this large); it was not read. Move it out of the run folder"
    )]
    TooLarge {
        path: PathBuf,
        size: crate::units::Bytes,
        limit: crate::units::Bytes,
    },
}

/// The largest `run.json` or `cell.json` read. Parsed, a record takes
/// many times its size in memory (a 304 MB cell.json took 4.7 GB).
pub(crate) const MAX_RECORD: crate::units::Bytes = crate::units::Bytes(64 << 20);
/// The largest `samples.json` read (one sample per group and second).
pub(crate) const MAX_SAMPLES: crate::units::Bytes = crate::units::Bytes(256 << 20);

/// Run ids under `results_root` (folders with a `run.json`), oldest
/// first by the start their record gives (ids of runs started in the same
/// second before ids carried milliseconds do not sort by time), then by
/// id; a record without a readable start sorts first.
pub(crate) fn list_run_ids(results_root: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(results_root) else {
        return Vec::new();
    };
    let mut ids: Vec<(Option<chrono::DateTime<chrono::FixedOffset>>, String)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join(RUN_FILE).is_file())
        .map(|e| {
            let started = started_at(&e.path().join(RUN_FILE));
            (started, e.file_name().to_string_lossy().into_owned())
        })
        .collect();
    ids.sort();
    ids.into_iter().map(|(_, id)| id).collect()
}

/// The `started_at` of a run record, without reading the rest of it.
fn started_at(run_json: &Path) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    #[derive(serde::Deserialize)]
    struct Start {
        started_at: String,
    }
    let bytes = fs::read(run_json).ok()?;
    let s: Start = serde_json::from_slice(&bytes).ok()?;
    chrono::DateTime::parse_from_rfc3339(&s.started_at).ok()
}

/// The folder of a run given as a run id (under `results_root`) or a path.
pub(crate) fn resolve_run(results_root: &Path, arg: &str) -> Result<PathBuf, LayoutError> {
    let as_path = PathBuf::from(arg);
    if as_path.join(RUN_FILE).is_file() {
        return Ok(as_path);
    }
    let under = results_root.join(arg);
    if !arg.is_empty() && !arg.contains('/') && under.join(RUN_FILE).is_file() {
        return Ok(under);
    }
    let ids = list_run_ids(results_root);
    let known = if ids.is_empty() {
        " (there are no runs there yet)".to_string()
    } else {
        let last: Vec<&str> = ids.iter().rev().take(5).map(String::as_str).collect();
        format!(" (latest: {})", last.join(", "))
    };
    Err(LayoutError::UnknownRun {
        arg: arg.to_string(),
        root: results_root.to_path_buf(),
        known,
    })
}

/// A JSON file of at most `limit` bytes, parsed; a larger one is not read.
fn read_json<T: DeserializeOwned>(
    path: &Path,
    limit: crate::units::Bytes,
) -> Result<T, LayoutError> {
    let read_err = |source| LayoutError::Read {
        path: path.to_path_buf(),
        source,
    };
    let size = fs::metadata(path).map_err(read_err)?.len();
    if size > limit.0 {
        return Err(LayoutError::TooLarge {
            path: path.to_path_buf(),
            size: crate::units::Bytes(size),
            limit,
        });
    }
    let bytes = fs::read(path).map_err(read_err)?;
    serde_json::from_slice(&bytes).map_err(|source| LayoutError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// Load a run folder: `run.json`, then every cell with a `cell.json` (plan
/// order first, then any other cell folder by name) and its samples.
pub fn load_run(dir: &Path) -> Result<RunData, LayoutError> {
    let paths = RunPaths {
        dir: dir.to_path_buf(),
    };
    let run: RunRecord = read_json(&paths.run_json(), MAX_RECORD)?;
    let mut keys: Vec<String> = run.cells.clone();
    if let Ok(entries) = fs::read_dir(paths.cells_dir()) {
        let mut extra: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|k| !keys.contains(k))
            .collect();
        extra.sort();
        keys.extend(extra);
    }
    let mut cells = Vec::new();
    let mut unfinished = Vec::new();
    for key in keys {
        let cp = paths.cell(&key);
        if !cp.cell_json().is_file() {
            unfinished.push(key);
            continue;
        }
        let record: CellRecord = read_json(&cp.cell_json(), MAX_RECORD)?;
        let samples = if cp.samples_json().is_file() {
            read_json(&cp.samples_json(), MAX_SAMPLES)?
        } else {
            Vec::new()
        };
        cells.push(CellData { record, samples });
    }
    let claims = if paths.claims_json().is_file() {
        Some(read_json(&paths.claims_json(), MAX_RECORD)?)
    } else {
        None
    };
    Ok(RunData {
        dir: dir.to_path_buf(),
        run,
        cells,
        unfinished,
        claims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_files_are_numbered_from_one_and_file_safe() {
        let c = RunPaths::new(Path::new("/r"), "run1").cell("k");
        assert_eq!(
            c.phase_json(0, "load", 4),
            PathBuf::from("/r/run1/cells/k/phases/01-load-t4.json")
        );
        assert_eq!(
            c.phase_json(11, "sysbench oltp/rw", 16),
            PathBuf::from("/r/run1/cells/k/phases/12-sysbench-oltp-rw-t16.json")
        );
        assert_eq!(file_safe(".."), "p..");
    }

    #[test]
    fn samples_are_matched_to_phases_by_their_label() {
        assert!(sample_in_phase("point-reads t4", "point-reads", 4));
        assert!(sample_in_phase("workload-a/t16", "workload-a", 16));
        assert!(sample_in_phase("load", "load", 2));
        assert!(!sample_in_phase("point-reads t8", "point-reads", 4));
        assert!(!sample_in_phase("point-reads-2 t4", "point-reads", 4));
    }

    #[test]
    fn a_cell_record_over_the_limit_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("20261130-010000-aaaa");
        let cell = run.join("cells").join("k1");
        fs::create_dir_all(&cell).unwrap();
        let rec = RunRecord {
            run_id: "20261130-010000-aaaa".into(),
            cells: vec!["k1".into()],
            ..Default::default()
        };
        fs::write(run.join(RUN_FILE), serde_json::to_vec(&rec).unwrap()).unwrap();
        // Sparse: 304 MB of nothing, never read.
        let f = fs::File::create(cell.join("cell.json")).unwrap();
        f.set_len(304_000_000).unwrap();
        let err = load_run(&run).unwrap_err();
        assert!(matches!(err, LayoutError::TooLarge { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("cell.json holds ") && text.contains("over the 64MiB"),
            "{text}"
        );
    }

    #[test]
    fn runs_are_listed_by_their_start_not_their_name() {
        let dir = tempfile::tempdir().unwrap();
        // Two runs of one second: the later one has the smaller name.
        for (id, started) in [
            ("20261130-010000-ffff", "2026-11-30T01:00:00.100+00:00"),
            ("20261130-010000-0000", "2026-11-30T01:00:00.900+00:00"),
            ("20261130-005959-aaaa", "2026-11-30T00:59:59.500+00:00"),
        ] {
            fs::create_dir_all(dir.path().join(id)).unwrap();
            fs::write(
                dir.path().join(id).join(RUN_FILE),
                format!(r#"{{"started_at": "{started}"}}"#),
            )
            .unwrap();
        }
        assert_eq!(
            list_run_ids(dir.path()),
            [
                "20261130-005959-aaaa",
                "20261130-010000-ffff",
                "20261130-010000-0000"
            ]
        );
        let err = resolve_run(dir.path(), "nope").unwrap_err().to_string();
        assert!(
            err.contains("latest: 20261130-010000-0000, 20261130-010000-ffff"),
            "{err}"
        );
    }

    #[test]
    fn unknown_run_names_the_folder_and_the_latest_runs() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("20261130-010000-aaaa")).unwrap();
        fs::write(dir.path().join("20261130-010000-aaaa/run.json"), "{}").unwrap();
        let err = resolve_run(dir.path(), "nope").unwrap_err().to_string();
        assert!(err.contains("no run `nope`"), "{err}");
        assert!(err.contains("20261130-010000-aaaa"), "{err}");
    }
}
