//! What `plan` says of snapshots, without running anything: the key of a
//! cell's load follows how its data dir is made (init argv, config lines
//! that shape the files), plan says why a key differs from the cache's,
//! and a scenario whose load is measured loads every cell.

mod support;

use benchcage::snapshot::SnapshotKey;
use benchcage::snapshot::store::Meta;
use std::collections::BTreeMap;
use std::path::Path;
use support::cli::{Out, bc_home, repo};
use support::files::{temp_home, write_json};

/// `benchcage plan ARGS` in `home` with the snapshot cache `cache`.
fn plan(home: &Path, cache: &Path, args: &[&str]) -> Out {
    let o = bc_home(home)
        .env("BENCHCAGE_SNAPSHOTS", cache)
        .env("BENCHCAGE_WORK_FREE", "64TiB")
        .arg("plan")
        .args(args)
        .output()
        .unwrap();
    let o = Out::of(&o);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    o
}

/// The snapshot key of every cell, by cell id.
fn keys(home: &Path, cache: &Path, scenario: &str) -> BTreeMap<String, SnapshotKey> {
    let o = plan(home, cache, &[scenario, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let key = serde_json::from_value(c["snapshot"]["key"].clone())
                .unwrap_or_else(|e| panic!("{}: {e}", c["id"]));
            (c["id"].as_str().unwrap().to_string(), key)
        })
        .collect()
}

/// An entry of the cache holding `key` (no data: plan only reads meta.json).
fn cached(cache: &Path, key: &SnapshotKey) {
    let id = key.id();
    let meta = Meta {
        id: id.clone(),
        key: key.clone(),
        form: benchcage::snapshot::copy::Form::Dir,
        stored_bytes: 1 << 20,
        data_bytes: 1 << 20,
        created: "2026-12-01T12:00:00Z".into(),
        last_used: "2026-12-01T12:00:00Z".into(),
        uses: 0,
        from_run: "20261201-120000-abcd".into(),
        load_s: 3.0,
        save_s: 0.5,
        data_size_bytes: None,
        digest: None,
    };
    std::fs::create_dir_all(cache.join(&id).join("data")).unwrap();
    write_json(&cache.join(&id).join("meta.json"), &meta);
}

const SCENARIO: &str = "matrix:\n  engines: [postgres@15, mariadb@10.11]\n  environments: [quickstart, small]\ndataset: {records: 2000, field_count: 4, field_length: 50}\nload: {threads: 2}\nphases:\n  - {name: reads, builtin: {workload: c}, threads: 1, operations: 500}\n";

#[test]
fn the_snapshot_key_changes_with_the_init_argv_and_a_template_line_and_plan_says_why() {
    let home = temp_home("benchcage-snapkey-");
    let cache = home.path().join("snapshots");
    std::fs::write(home.path().join("scenarios/keys.yaml"), SCENARIO).unwrap();
    std::fs::write(
        home.path().join("environments/small.yaml"),
        "description: quickstart with another cap and cache\nbackend: cgroup\nserver: {cpus: 1, memory: 384MiB}\nclient: {cpus: 0}\ncache: 25%\n",
    )
    .unwrap();
    let before = keys(home.path(), &cache, "keys");
    assert_eq!(before.len(), 4, "{:?}", before.keys());
    // Cells that differ only in the cache size and memory cap share a key.
    for engine in ["postgres@15", "mariadb@10.11"] {
        let (a, b) = (
            &before[&format!("{engine}/quickstart/r0")],
            &before[&format!("{engine}/small/r0")],
        );
        assert_eq!(a.id(), b.id(), "{engine}: {:?}", a.differences(b));
    }
    for k in before.values() {
        cached(&cache, k);
    }
    // initdb makes other files; so does a page size added to my.cnf.
    let pg = home.path().join("engines/postgres.yaml");
    let text = std::fs::read_to_string(&pg).unwrap();
    let changed = text.replace(
        "--no-sync, -E, UTF8]",
        "--no-sync, -E, SQL_ASCII, --data-checksums]",
    );
    assert_ne!(changed, text, "the postgres init line moved");
    std::fs::write(&pg, changed).unwrap();
    let cnf = home.path().join("templates/mariadb/my.cnf.tera");
    let text = std::fs::read_to_string(&cnf).unwrap();
    std::fs::write(
        &cnf,
        text.replace(
            "default_storage_engine = InnoDB\n",
            "default_storage_engine = InnoDB\ninnodb_page_size = 8k\n",
        ),
    )
    .unwrap();
    let after = keys(home.path(), &cache, "keys");
    for (cell, k) in &after {
        assert_ne!(k.id(), before[cell].id(), "{cell} kept its key");
    }
    let pg_why =
        after["postgres@15/quickstart/r0"].differences(&before["postgres@15/quickstart/r0"]);
    assert_eq!(pg_why, vec!["init argv".to_string()]);
    let my_why =
        after["mariadb@10.11/quickstart/r0"].differences(&before["mariadb@10.11/quickstart/r0"]);
    assert_eq!(my_why, vec!["my.cnf: + innodb_page_size = 8k".to_string()]);
    // plan loads them afresh, and says why the cache's entry does not serve.
    let text = plan(home.path(), &cache, &["keys"]).stdout;
    let line = |cell: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{cell}:")))
            .unwrap_or_else(|| panic!("no line for {cell} in:\n{text}"))
            .to_string()
    };
    let pg_line = line("postgres@15/quickstart/r0");
    assert!(pg_line.contains("loads, then saves"), "{pg_line}");
    assert!(
        pg_line.contains(&format!(
            "not the cache's {}, whose key differs in: init argv",
            before["postgres@15/quickstart/r0"].id()
        )),
        "{pg_line}"
    );
    let my_line = line("mariadb@10.11/quickstart/r0");
    assert!(
        my_line.contains("differs in: my.cnf: + innodb_page_size = 8k"),
        "{my_line}"
    );
    let small = line("mariadb@10.11/small/r0");
    assert!(
        small.contains("restores from the load of mariadb@10.11/quickstart/r0"),
        "{small}"
    );
}

#[test]
fn the_write_up_003_plan_loads_every_cell_because_its_loads_are_measured() {
    let cache = tempfile::tempdir().unwrap();
    let text = plan(&repo(), cache.path(), &["scenarios/003-mongodb-3.2.yaml"]).stdout;
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("/c4-16g/r") || l.contains("/c8-32g/r"))
        .filter(|l| l.contains(": loads") || l.contains("restores"))
        .collect();
    assert_eq!(lines.len(), 8, "{text}");
    for l in lines {
        assert!(l.contains(": loads (measured)"), "{l}");
    }
    // Without the mark the sweep and repetitions still share one load.
    let fit = plan(&repo(), cache.path(), &["scenarios/doesnt-fit-in-ram.yaml"]).stdout;
    assert_eq!(fit.matches(": loads, then saves").count(), 1, "{fit}");
    assert_eq!(fit.matches("restores from the load of").count(), 3, "{fit}");
}

#[test]
fn every_write_up_scenario_with_a_built_in_load_marks_it_measured() {
    for f in std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .flatten()
    {
        let name = f.file_name().to_string_lossy().into_owned();
        if !name.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let text = std::fs::read_to_string(f.path()).unwrap();
        if let Some(load) = text.lines().find(|l| l.starts_with("load:")) {
            assert!(load.contains("measured: true"), "{name}: {load}");
        }
    }
}
