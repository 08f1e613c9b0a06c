//! Cell keys are the identity of a cell across runs: `--resume`,
//! `compare`, the history index and the snapshot cache find a cell by its
//! key. A refactoring of the plan must not change one byte of them.
//!
//! tests/fixtures/cell-keys.json holds the key and the group key of every
//! cell of every shipped scenario and of every scenario under
//! tests/scenarios/, planned through the library on one fixed host (so
//! that the keys do not depend on the machine), plus a few `--set`
//! variations that reach the parts of a key only some cells have
//! (transparent huge pages off, store options, a topology).
//! `BLESS=1 cargo test --test fast_cell_keys` rewrites it; do that only
//! for a change that means to give cells new keys, and say so.

mod support;

use benchcage::host::HostFacts;
use benchcage::plan::plan_on;
use benchcage::spec::Project;
use std::collections::BTreeMap;
use support::cli::repo;

const FIXTURE: &str = "tests/fixtures/cell-keys.json";

/// A host big enough for every shipped scenario, the same everywhere.
fn fixed_host() -> HostFacts {
    support::plans::big_host()
}

/// One scenario the keys are computed for: (label, scenario path, the
/// `--set` flags of the variation).
type Case = (String, String, Vec<(String, String)>);

/// Every scenario the keys are computed for, and the variations.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for dir in ["scenarios", "tests/scenarios"] {
        let mut files: Vec<_> = std::fs::read_dir(repo().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for f in files {
            let rel = f.strip_prefix(repo()).unwrap().display().to_string();
            out.push((rel.clone(), f.display().to_string(), Vec::new()));
        }
    }
    let set = |k: &str, v: &str| (k.to_string(), v.to_string());
    out.push((
        "scenarios/quickstart.yaml --set host.transparent_hugepages=off".into(),
        repo()
            .join("scenarios/quickstart.yaml")
            .display()
            .to_string(),
        vec![set("host.transparent_hugepages", "off")],
    ));
    out.push((
        "scenarios/003-mongodb-3.2.yaml --set host.transparent_hugepages=off".into(),
        repo()
            .join("scenarios/003-mongodb-3.2.yaml")
            .display()
            .to_string(),
        vec![set("host.transparent_hugepages", "off")],
    ));
    out
}

/// label -> cell id -> [key, group].
fn keys_now() -> BTreeMap<String, BTreeMap<String, [String; 2]>> {
    let project = Project::load(&repo()).unwrap();
    let host = fixed_host();
    let mut all = BTreeMap::new();
    for (label, path, sets) in cases() {
        let s = project
            .find_scenario(&path)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let plan = plan_on(&project, &s, &sets, None, None, &host)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let cells: BTreeMap<String, [String; 2]> = plan
            .cells
            .iter()
            .map(|c| {
                let (key, group) = benchcage::run::adapt::keys_of(c);
                (c.id.clone(), [key, group])
            })
            .collect();
        assert!(!cells.is_empty(), "{label} plans no cell");
        all.insert(label, cells);
    }
    all
}

#[test]
fn every_cell_of_every_shipped_and_test_scenario_keeps_its_key_byte_for_byte() {
    let now = keys_now();
    let path = repo().join(FIXTURE);
    let text = serde_json::to_string_pretty(&now).unwrap() + "\n";
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let want: BTreeMap<String, BTreeMap<String, [String; 2]>> = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run with BLESS=1", path.display())),
    )
    .unwrap();
    let mut differ = Vec::new();
    for (label, cells) in &want {
        for (id, k) in cells {
            let got = now.get(label).and_then(|c| c.get(id));
            if got != Some(k) {
                differ.push(format!("{label} {id}: was {k:?}, now {got:?}"));
            }
        }
    }
    for (label, cells) in &now {
        for id in cells.keys() {
            if !want.get(label).is_some_and(|c| c.contains_key(id)) {
                differ.push(format!("{label} {id}: a cell the fixture does not hold"));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "cell keys changed (history and snapshots find cells by them):\n{}",
        differ.join("\n")
    );
}

#[test]
fn the_key_fixture_reaches_every_optional_part_of_a_key() {
    // Each part a key holds only for some cells is held by a cell here,
    // so that the fixture would notice if it moved.
    let project = Project::load(&repo()).unwrap();
    let host = fixed_host();
    let (mut thp_off, mut store, mut topology) = (false, false, false);
    for (label, path, sets) in cases() {
        let s = project.find_scenario(&path).unwrap();
        let plan = plan_on(&project, &s, &sets, None, None, &host)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        for c in &plan.cells {
            thp_off |= c.transparent_hugepages == benchcage::model::ThpPolicy::Off;
            store |= !c.store_options.is_empty();
            topology |= c.members.len() > 1;
        }
    }
    assert!(thp_off && store && topology, "{thp_off} {store} {topology}");
}
