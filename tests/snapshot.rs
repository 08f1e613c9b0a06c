//! Dataset snapshots end to end with real engines on the cgroup backend:
//! the first cell of a key loads and saves its data dir, a later one
//! restores it instead of loading, and the records' digest and the
//! engine-reported data size equal the fresh load's, on every engine
//! here. `cache ls` and `cache prune` manage what was kept, and
//! `--no-snapshots` loads every cell. Needs root and the engines.

mod support;

use benchcage::model::CellStatus;
use benchcage::results::model::LoadSource;
use benchcage::results::model::{CellRecord, RunRecord};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::cli::{bc_in, run_dir_of};
use support::files::{assert_saved_then_restored, cell_dirs, read_json};
use support::host::{name_of, run_groups, valid_but_for_a_busy_host};

const HOME: &str = env!("CARGO_MANIFEST_DIR");

/// The tests of this binary run two at a time (`make test`), and a phase
/// is invalid when something else used the server's CPUs: these tests
/// assert valid phases, so each takes the host alone.
static HOST: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A test's folders: results, work, ledgers and its own snapshot cache.
struct Place {
    tmp: tempfile::TempDir,
    /// Dropped last: the host is held until the test's folders go.
    _alone: std::sync::MutexGuard<'static, ()>,
}

impl Place {
    fn new() -> Place {
        let alone = HOST.lock().unwrap_or_else(|e| e.into_inner());
        Place {
            tmp: tempfile::Builder::new()
                .prefix("benchcage-snapshot-test-")
                .tempdir()
                .unwrap(),
            _alone: alone,
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
    fn command(&self, args: &[&str]) -> Command {
        let mut c = bc_in(
            Path::new(HOME),
            &self.path("results"),
            &self.path("work"),
            &self.path("state"),
        );
        c.env("BENCHCAGE_SNAPSHOTS", self.path("snapshots"))
            .env_remove("BENCHCAGE_SNAPSHOT_LIMIT")
            .args(args);
        c
    }
    /// Run `benchcage ARGS` to its end: exit code, stdout, stderr.
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let o = self.command(args).output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }
    /// The cells of the run whose stdout is `out`, by `engine/rN`.
    fn cells(&self, out: &str) -> std::collections::BTreeMap<String, CellRecord> {
        let run = &run_dir_of(out);
        let rec: RunRecord = read_json(&run.join("run.json"));
        assert_clean(self, &rec.run_id);
        cell_dirs(run)
            .iter()
            .map(|d| {
                let c: CellRecord = read_json(&d.join("cell.json"));
                (format!("{}/r{}", c.engine, c.repetition), c)
            })
            .collect()
    }
}

/// No cgroup, ledger or work dir of the run is left.
fn assert_clean(place: &Place, run_id: &str) {
    for g in run_groups() {
        assert!(
            !name_of(&g).starts_with(run_id),
            "cgroup left: {}",
            g.display()
        );
    }
    let work = place.path("work").join(run_id);
    assert!(!work.exists(), "work dir left: {}", work.display());
    if let Ok(rd) = std::fs::read_dir(place.path("state")) {
        let left: Vec<String> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(run_id))
            .collect();
        assert!(left.is_empty(), "ledgers left: {left:?}");
    }
}

const ENGINES: [&str; 5] = ["postgres", "mariadb", "myrocks", "redis", "secantusdb"];

#[test]
fn a_restored_snapshot_holds_the_same_records_as_the_load_on_every_engine() {
    let place = Place::new();
    let (code, out, err) = place.run(&["run", "tests/scenarios/run-snapshots.yaml"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let cells = place.cells(&out);
    assert_eq!(cells.len(), 10, "{:?}", cells.keys());
    let mut keys = Vec::new();
    for engine in ENGINES {
        let (first, second) = (
            &cells[&format!("{engine}/r0")],
            &cells[&format!("{engine}/r1")],
        );
        for c in [first, second] {
            assert_eq!(c.status, CellStatus::Finished, "{engine}: {:?}", c.failure);
            assert!(
                !c.fidelity.violations.iter().any(|v| v.contains("snapshot")),
                "{engine}: {:?}",
                c.fidelity.violations
            );
        }
        // The first loads and saves ...
        let key = match &first.load_source {
            Some(LoadSource::Fresh {
                key: Some(k),
                saved: true,
                note: None,
                ..
            }) => k.clone(),
            other => panic!("{engine} r0: {other:?}"),
        };
        assert!(first.phases.iter().any(|p| p.name == "load"), "{engine}");
        // ... the second restores instead of loading.
        match &second.load_source {
            Some(LoadSource::Snapshot {
                key: k,
                restore_s,
                load_s,
                ..
            }) => {
                assert_eq!(*k, key, "{engine}");
                assert!(*restore_s > 0.0 && *load_s > 0.0, "{engine}");
            }
            other => panic!("{engine} r1: {other:?}"),
        }
        assert!(!second.phases.iter().any(|p| p.name == "load"), "{engine}");
        assert!(second.stage_s.contains_key("restore"), "{engine}");
        assert!(!second.stage_s.contains_key("load"), "{engine}");
        // The same records, and the same size as the engine reports it.
        let digest = first.data_digest.clone().unwrap();
        // The count it digested: the 2000 records (redis also keeps the
        // load generator's key index, one key more).
        let counted: u64 = digest.split(' ').next().unwrap().parse().unwrap();
        assert!((2000..=2001).contains(&counted), "{engine}: {digest}");
        assert_eq!(second.data_digest.as_ref(), Some(&digest), "{engine}");
        let (a, b) = (
            first.data_size_bytes.unwrap(),
            second.data_size_bytes.unwrap(),
        );
        assert!(a > 0, "{engine}");
        if engine == "redis" {
            // Redis reports memory (used_memory_dataset), not files: a
            // dataset read back from dump.rdb packs tighter than one built
            // by inserts (907,536 against 956,384 bytes here).
            let off = (a as f64 - b as f64).abs() / a as f64;
            assert!(off < 0.10, "{engine}: {a} fresh, {b} restored");
        } else {
            assert_eq!(b, a, "{engine}");
        }
        // The restored data answers the phase: every read found its record.
        let reads = second.phases.iter().find(|p| p.name == "reads").unwrap();
        // Two tests share the host: the other may void the phase by its
        // CPU time on the server's CPU, never by anything else.
        assert!(
            valid_but_for_a_busy_host(&reads.status),
            "{engine}: {:?}",
            reads.status
        );
        assert_eq!(reads.total_ops, 500, "{engine}");
        assert_eq!(reads.total_errors, 0, "{engine}");
        keys.push(key);
    }
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 5, "one key per engine");

    // `cache ls` lists them; a second run restores in every cell.
    let (code, ls, err) = place.run(&["cache", "ls"]);
    assert_eq!(code, 0, "{err}");
    for k in &keys {
        assert!(ls.contains(k.as_str()), "{ls}");
    }
    assert!(ls.contains("5 snapshot(s)"), "{ls}");
    let (code, out, err) = place.run(&[
        "run",
        "tests/scenarios/run-snapshots.yaml",
        "--only",
        "redis",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    for (name, c) in place.cells(&out) {
        assert!(
            c.load_source.as_ref().is_some_and(LoadSource::restored),
            "{name}: {:?}",
            c.load_source
        );
    }

    // --no-snapshots loads every cell and keeps no key.
    let (code, out, err) = place.run(&[
        "run",
        "tests/scenarios/run-snapshots.yaml",
        "--only",
        "redis",
        "--no-snapshots",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    for (name, c) in place.cells(&out) {
        assert_eq!(c.load_source, None, "{name}");
        assert!(c.phases.iter().any(|p| p.name == "load"), "{name}");
    }

    // prune keeps nothing with --all.
    let (code, _, err) = place.run(&["cache", "prune", "--keep", "1B", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_dir(place.path("snapshots")).unwrap().count(),
        5
    );
    let (code, out, err) = place.run(&["cache", "prune", "--all"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed 5 snapshot(s)"), "{out}");
    assert_eq!(
        std::fs::read_dir(place.path("snapshots")).unwrap().count(),
        0
    );
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256m", "tmpfs"])
            .arg(at)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs at {}", at.display());
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_cache_on_another_disk_keeps_a_compressed_archive_and_restores_from_it() {
    let place = Place::new();
    // The cache on its own filesystem: not the work dir's.
    let _disk = Tmpfs::mount(&place.path("snapshots"));
    let (code, out, err) = place.run(&[
        "run",
        "tests/scenarios/run-snapshots.yaml",
        "--only",
        "redis",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let cells = place.cells(&out);
    let (first, second) = (&cells["redis/r0"], &cells["redis/r1"]);
    assert_saved_then_restored("redis", first, second);
    assert_eq!(second.data_digest, first.data_digest);
    let (code, ls, err) = place.run(&["cache", "ls", "--json"]);
    assert_eq!(code, 0, "{err}");
    let entries: Vec<serde_json::Value> = serde_json::from_str(&ls).unwrap();
    assert_eq!(entries.len(), 1, "{ls}");
    assert_eq!(entries[0]["form"], "archive", "{ls}");
    let id = entries[0]["id"].as_str().unwrap();
    let names: Vec<String> = std::fs::read_dir(place.path("snapshots").join(id))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("data.tar.")),
        "{names:?}"
    );
    let (code, _, err) = place.run(&["cache", "prune", "--all"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_snapshot_over_the_cache_limit_is_not_saved_and_every_cell_loads() {
    let place = Place::new();
    let mut c = place.command(&[
        "run",
        "tests/scenarios/run-snapshots.yaml",
        "--only",
        "postgres",
    ]);
    let o = c.env("BENCHCAGE_SNAPSHOT_LIMIT", "1KiB").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cells = place.cells(&String::from_utf8_lossy(&o.stdout));
    for (name, c) in &cells {
        match &c.load_source {
            Some(LoadSource::Fresh {
                saved: false,
                note: Some(n),
                ..
            }) => {
                assert!(n.contains("over the snapshot cache's limit"), "{name}: {n}")
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(c.phases.iter().any(|p| p.name == "load"), "{name}");
        assert_eq!(c.status, CellStatus::Finished, "{name}: {:?}", c.failure);
    }
    assert_eq!(cells.len(), 2);
}

#[test]
fn a_save_leaves_the_next_cell_the_room_its_data_disk_needs_and_the_last_cell_saves() {
    let place = Place::new();
    // The work dir and the cache share a 256 MiB filesystem; each cell
    // asks for a 240 MiB data disk there. Once the first cell's data takes
    // more than 16 MiB of it, a snapshot would leave the second too little.
    let shared = place.path("shared");
    let _disk = Tmpfs::mount(&shared);
    let (work, cache) = (shared.join("work"), shared.join("snapshots"));
    let o = bc_in(
        Path::new(HOME),
        &place.path("results"),
        &work,
        &place.path("state"),
    )
    .env("BENCHCAGE_SNAPSHOTS", &cache)
    .env_remove("BENCHCAGE_SNAPSHOT_LIMIT")
    .args([
        "run",
        "tests/scenarios/run-snapshots.yaml",
        "--only",
        "postgres",
        "--set",
        "server.disk.size=240MiB",
    ])
    .output()
    .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}\n{err}");
    let run = run_dir_of(&out);
    let cells: Vec<CellRecord> = cell_dirs(&run)
        .iter()
        .map(|d| read_json(&d.join("cell.json")))
        .collect();
    assert_eq!(cells.len(), 2);
    let (first, second) = (&cells[0], &cells[1]);
    assert_eq!((first.repetition, second.repetition), (0, 1));
    match &first.load_source {
        Some(LoadSource::Fresh {
            saved: false,
            note: Some(n),
            ..
        }) => assert!(
            n.contains("a later cell of this run needs 240MiB there"),
            "{n}"
        ),
        other => panic!("r0: {other:?}"),
    }
    // Nothing to restore, so the second loads; no cell comes after it.
    assert!(
        matches!(
            second.load_source,
            Some(LoadSource::Fresh { saved: true, .. })
        ),
        "r1: {:?}",
        second.load_source
    );
    for c in &cells {
        assert_eq!(c.status, CellStatus::Finished, "{:?}", c.failure);
    }
    let rec: RunRecord = read_json(&run.join("run.json"));
    assert!(!work.join(&rec.run_id).exists(), "work dir left");
    // One entry, the last cell's; the tmpfs goes with it.
    let entries: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
}

/// The run id `benchcage run` printed (`results: RESULTS/ID`), never
/// the newest folder (issue 34, point 17).
fn printed_run_id(out: &str) -> String {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .unwrap_or_else(|| panic!("no results line in:\n{out}"));
    Path::new(line.trim())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

impl Place {
    /// Run `benchcage run ARGS` to a 0 exit; its cells by `label/rN`.
    fn run_cells(&self, args: &[&str]) -> (String, std::collections::BTreeMap<String, CellRecord>) {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        let (code, out, err) = self.run(&all);
        assert_eq!(code, 0, "{out}\n{err}");
        let run_id = printed_run_id(&out);
        assert_clean(self, &run_id);
        let cells = cell_dirs(&self.path("results").join(&run_id))
            .iter()
            .map(|d| {
                let c: CellRecord = read_json(&d.join("cell.json"));
                (
                    format!("{}/r{}", c.label.split('/').next().unwrap(), c.repetition),
                    c,
                )
            })
            .collect();
        (run_id, cells)
    }

    /// The folder of the cache's only entry.
    fn only_entry(&self) -> PathBuf {
        let entries: Vec<PathBuf> = std::fs::read_dir(self.path("snapshots"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        entries[0].clone()
    }
}

/// The largest file under `dir`.
fn largest_file(dir: &Path) -> PathBuf {
    support::files::walk(dir)
        .into_iter()
        .filter(|p| p.is_file())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
}

/// r0 loaded after discarding the restored snapshot for a reason that
/// contains `why`, and saved a new one; r1 restored that one; both hold
/// the 2000 records.
fn assert_discarded_reloaded_and_replaced(
    cells: &std::collections::BTreeMap<String, CellRecord>,
    engine: &str,
    why: &str,
) {
    let (first, second) = (
        &cells[&format!("{engine}@15/r0")],
        &cells[&format!("{engine}@15/r1")],
    );
    for c in [first, second] {
        assert_eq!(c.status, CellStatus::Finished, "{:?}", c.failure);
        let digest = c.data_digest.clone().unwrap();
        assert!(digest.starts_with("2000 "), "{digest}");
    }
    match &first.load_source {
        Some(LoadSource::Fresh {
            saved: true,
            discarded: Some(d),
            ..
        }) => assert!(d.contains(why), "{d}"),
        other => panic!("r0: {other:?}"),
    }
    assert!(first.phases.iter().any(|p| p.name == "load"));
    assert!(
        second
            .load_source
            .as_ref()
            .is_some_and(LoadSource::restored),
        "r1: {:?}",
        second.load_source
    );
    assert_eq!(second.data_digest, first.data_digest);
}

#[test]
fn a_truncated_entry_is_not_restored_but_quarantined_reloaded_and_replaced() {
    let place = Place::new();
    let only = ["tests/scenarios/run-snapshots.yaml", "--only", "postgres"];
    let (first_run, _) = place.run_cells(&only);
    // Half of the biggest table file is lost in the cache.
    let entry = place.only_entry();
    let table = largest_file(&entry.join("data/base"));
    let len = std::fs::metadata(&table).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&table)
        .unwrap();
    f.set_len(len / 2).unwrap();
    let (second_run, cells) = place.run_cells(&only);
    assert_discarded_reloaded_and_replaced(&cells, "postgres", "differ from its manifest");
    // The entry under the key is the new load's; `cache ls` lists the old
    // one as quarantined, and a prune removes it.
    let meta: serde_json::Value = read_json(&place.only_entry().join("meta.json"));
    assert_eq!(meta["from_run"], second_run.as_str(), "{meta}");
    assert_ne!(first_run, second_run);
    let (code, ls, err) = place.run(&["cache", "ls"]);
    assert_eq!(code, 0, "{err}");
    assert!(ls.contains("quarantined"), "{ls}");
    let (code, _, err) = place.run(&["cache", "prune", "--all"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_dir(place.path("snapshots")).unwrap().count(),
        0
    );
}

#[test]
fn a_snapshot_the_engine_cannot_start_on_is_discarded_and_the_cell_loads() {
    let place = Place::new();
    let only = ["tests/scenarios/run-snapshots.yaml", "--only", "postgres"];
    place.run_cells(&only);
    // A whole entry (its manifest says so) of data this server refuses.
    let entry = place.only_entry();
    std::fs::write(entry.join("data/PG_VERSION"), "9\n").unwrap();
    benchcage::snapshot::manifest::Manifest::of(&entry.join("data"))
        .unwrap()
        .write(&entry)
        .unwrap();
    let (_, cells) = place.run_cells(&only);
    assert_discarded_reloaded_and_replaced(&cells, "postgres", "the engine did not start on it");
    let (code, _, err) = place.run(&["cache", "prune", "--all"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn with_verify_an_entry_without_a_digest_must_hold_the_datasets_record_count() {
    let place = Place::new();
    let only = ["tests/scenarios/run-snapshots.yaml", "--only", "postgres"];
    // An entry of 1000 records ...
    place.run_cells(&[only[0], only[1], only[2], "--set", "records=1000"]);
    let small = place.only_entry();
    let moved = place.path("small-entry");
    std::fs::rename(&small, &moved).unwrap();
    // ... stands in the entry of 2000 records, whole, with no digest.
    place.run_cells(&only);
    let entry = place.only_entry();
    std::fs::remove_dir_all(entry.join("data")).unwrap();
    std::fs::rename(moved.join("data"), entry.join("data")).unwrap();
    benchcage::snapshot::manifest::Manifest::of(&entry.join("data"))
        .unwrap()
        .write(&entry)
        .unwrap();
    let mut meta: serde_json::Value = read_json(&entry.join("meta.json"));
    meta.as_object_mut().unwrap().remove("digest");
    support::files::write_json(&entry.join("meta.json"), &meta);
    let (_, cells) = place.run_cells(&only);
    assert_discarded_reloaded_and_replaced(&cells, "postgres", "holds 1000 records");
    // The new entry keeps its digest; a later restore is compared with it.
    let meta: serde_json::Value = read_json(&place.only_entry().join("meta.json"));
    assert!(
        meta["digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("2000 ")),
        "{meta}"
    );
    let (code, _, err) = place.run(&["cache", "prune", "--all"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_scenario_whose_loads_are_measured_loads_every_cell() {
    let place = Place::new();
    let (_, cells) = place.run_cells(&["tests/scenarios/run-measured-loads.yaml"]);
    assert_eq!(cells.len(), 2, "{:?}", cells.keys());
    for (name, c) in &cells {
        assert_eq!(c.status, CellStatus::Finished, "{name}: {:?}", c.failure);
        let load = c.phases.iter().find(|p| p.name == "load");
        assert!(
            load.is_some_and(|l| valid_but_for_a_busy_host(&l.status) && l.total_ops == 2000),
            "{name}: {:?}",
            c.phases.iter().map(|p| &p.name).collect::<Vec<_>>()
        );
        assert!(
            !c.load_source.as_ref().is_some_and(LoadSource::restored),
            "{name}: {:?}",
            c.load_source
        );
    }
    // Nothing was kept for a restore.
    assert_eq!(
        std::fs::read_dir(place.path("snapshots")).map_or(0, |d| d.count()),
        0
    );
}
