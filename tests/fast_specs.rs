//! Specs, validation, rendering and the first commands, through the CLI and
//! the library, against the engines installed on this machine.
//!
//! - tests/bad_specs/<case>/ holds spec files laid out like a project
//!   (environments/, engines/, scenarios/) and `expected`: lines that must
//!   each appear in `benchcage validate`'s error output (`!text`: must not).
//! - tests/golden/<case>/ holds rendered configs; `BLESS=1 cargo test --test
//!   fast_specs` rewrites them after a deliberate template change.
//!
//! Needs neither root nor a running engine (the fast tier); tests/engine_configs.rs
//! starts the engines on their rendered configs.

mod support;

use assert_cmd::Command;
use benchcage::host::HostFacts;
use benchcage::plan::{plan, plan_on};
use benchcage::spec::Project;
use benchcage::spec::engine::{ConfigFormat, KnobValue};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::cli::{Out, bc_home, render_to, repo};
use support::files::copy_dir;

/// Room on the work disk that every plan here counts on: the shipped
/// scenarios fit in it whatever the shared disk of this host holds now.
const WORK_FREE: &str = "64TiB";

fn bc(home: &Path) -> Command {
    let mut c = bc_home(home);
    c.env("BENCHCAGE_WORK_FREE", WORK_FREE);
    c
}

fn run(home: &Path, args: &[&str]) -> Out {
    Out::of(&bc(home).args(args).output().unwrap())
}

/// A temp project home with the shipped engines, templates and
/// environments (and scenarios when asked).
fn temp_home(with_scenarios: bool) -> tempfile::TempDir {
    let t = support::files::temp_home("benchcage-specs-");
    if with_scenarios {
        copy_dir(&repo().join("scenarios"), &t.path().join("scenarios"));
    }
    t
}

/// Every file under a folder with its content, for "nothing was created".
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(d: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.insert(p.clone(), Vec::new());
                walk(&p, out);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    walk(dir, &mut out);
    out
}

// ---------------------------------------------------------------- shipped specs

#[test]
fn every_shipped_spec_validates_on_this_host() {
    let o = run(&repo(), &["validate"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let count = |d: &str| std::fs::read_dir(repo().join(d)).unwrap().count();
    let want = format!(
        "{} environments, {} engines, {} scenarios",
        count("environments"),
        count("engines"),
        count("scenarios")
    );
    assert!(o.stdout.contains(&want), "{}", o.stdout);
}

#[test]
fn every_shipped_scenario_plans_on_this_host_and_creates_nothing() {
    let home = temp_home(true);
    let before = snapshot(home.path());
    let mut scenarios: Vec<String> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .flatten()
        .map(|e| e.path().file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    scenarios.sort();
    for want in [
        "quickstart",
        "000-tokumx-reality",
        "001-mongodb-to-tokumx",
        "002-sysbench-fractal-tree",
        "003-mongodb-3.2",
        "004-tpcc-mongodb",
        "004-tpcc-mongodb-replica-set",
        "replica-sets-here",
    ] {
        assert!(scenarios.iter().any(|s| s == want), "{want} is not shipped");
    }
    for s in &scenarios {
        let o = run(home.path(), &["plan", &format!("scenarios/{s}.yaml")]);
        assert_eq!(o.code, 0, "{s}: {}{}", o.stdout, o.stderr);
        assert!(o.stdout.contains("nothing was created."), "{s}");
    }
    assert_eq!(
        before,
        snapshot(home.path()),
        "plan created or changed files"
    );
}

#[test]
fn write_concern_and_read_preference_are_knobs_shown_in_the_plan() {
    let home = temp_home(true);
    let o = run(
        home.path(),
        &[
            "plan",
            "003-mongodb-3.2-here",
            "--only",
            "secantusdb",
            "--set",
            "write_concern=1",
            "--set",
            "read_preference=secondaryPreferred",
        ],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("read_preference=secondaryPreferred")
            && o.stdout.contains("write_concern=1"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains(
            "  store     mongodb://127.0.0.1:{port}/?readPreference=secondaryPreferred&w=1: \
             writes acknowledged with w: 1; reads from secondaryPreferred"
        ),
        "{}",
        o.stdout
    );
    // Unset, the server's defaults apply and the URL says nothing.
    let o = run(
        home.path(),
        &["plan", "003-mongodb-3.2-here", "--only", "secantusdb"],
    );
    assert!(
        o.stdout.contains(
            "  store     mongodb://127.0.0.1:{port}: writes with the server's default write concern; reads from primary"
        ),
        "{}",
        o.stdout
    );
    // A value the knob does not take is refused before anything runs.
    let o = run(
        home.path(),
        &["plan", "003-mongodb-3.2-here", "--set", "write_concern=2"],
    );
    assert_eq!(o.code, 2, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr
            .contains("--set: write_concern=2: `2` is not allowed; known: `0`, `1`, `majority`"),
        "{}",
        o.stderr
    );
    // Write-up 004 runs with write concern 1; its phases are py-tpcc's,
    // whose config file benchcage writes with the knob in it.
    let o = run(home.path(), &["plan", "004-tpcc-mongodb"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    // Three versions in the 25 GiB cache and in no limit at all.
    assert_eq!(
        o.stdout.matches(", write_concern=1\n").count(),
        6,
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("write_concern=1 goes into py-tpcc's config file for tpcc-load, new-order"),
        "{}",
        o.stdout
    );
    assert!(
        !o.stdout.contains("reach only the built-in load generator"),
        "{}",
        o.stdout
    );
    assert!(
        !o.stdout.contains("write_concern is not set"),
        "{}",
        o.stdout
    );
}

/// A THP folder as the kernel shows it, in a temp dir.
fn fake_thp(enabled: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("enabled"), format!("{enabled}\n")).unwrap();
    std::fs::write(t.path().join("defrag"), "always defer [madvise] never\n").unwrap();
    t
}

#[test]
fn a_mongodb_sharded_cluster_plans_its_members_and_run_refuses_an_engine_that_cannot_form_it() {
    let home = temp_home(true);
    let plan = bc(home.path())
        .args(["plan", "003-mongodb-3.2-sharded"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&plan.stdout);
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    assert!(
        out.contains("topology  sharded:3x1+1cfg+3router: cfg0 (config_server, cpus 1)")
            && out.contains("router2 (router, cpus 1)"),
        "{out}"
    );
    // Each member's mongod.conf names its replica set and cluster role.
    let json = bc(home.path())
        .args(["plan", "003-mongodb-3.2-sharded", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let cell = &v["cells"][0];
    let conf = |m: &serde_json::Value| {
        let own = m["configs"][0]["content"].as_str();
        own.or(cell["configs"][0]["content"].as_str())
            .unwrap()
            .to_string()
    };
    for m in cell["members"].as_array().unwrap() {
        let (name, text) = (m["name"].as_str().unwrap(), conf(m));
        let want: &[&str] = match m["role"].as_str().unwrap() {
            "config_server" => &["replSetName: cfg\n", "clusterRole: configsvr\n"],
            "shard_primary" => &["clusterRole: shardsvr\n"],
            _ => &[],
        };
        for w in want {
            assert!(text.contains(w), "{name}: {text}");
        }
        if name.starts_with("shard") {
            let set = name.split('-').next().unwrap();
            assert!(text.contains(&format!("replSetName: {set}\n")), "{text}");
        }
        if name.starts_with("router") {
            assert!(!text.contains("replSetName"), "{text}");
        }
    }
    // An engine that lists `sharded` but says nothing of how its members
    // form the cluster plans, and `run` refuses it before anything is made.
    let spec = home.path().join("engines/mongodb.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let at = text.find("\nsharding:").unwrap();
    let end = text.find("\nknobs:").unwrap();
    std::fs::write(&spec, format!("{}{}", &text[..at], &text[end..])).unwrap();
    let before = snapshot(home.path());
    let run = bc(home.path())
        .args(["run", "003-mongodb-3.2-sharded"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "engine mongodb declares no `sharding:` (how its members form a sharded cluster)"
        ),
        "{err}"
    );
    assert_eq!(before, snapshot(home.path()), "nothing was created");
}

#[test]
fn tokumx_on_a_host_with_thp_always_is_refused_by_plan_and_run_with_the_way_out() {
    let home = temp_home(true);
    let thp = fake_thp("[always] madvise never");
    let before = snapshot(home.path());
    for cmd in ["plan", "run"] {
        let o = bc(home.path())
            .env("BENCHCAGE_THP_ROOT", thp.path())
            .args([
                cmd,
                "003-mongodb-3.2",
                "--env",
                "c4-16g",
                "--only",
                "tokumx@2.0.2",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("tokumx@2.0.2 refuses to start while transparent huge pages are `always`")
                && err.contains("--set host.transparent_hugepages=off"),
            "{cmd}: {err}"
        );
    }
    assert_eq!(before, snapshot(home.path()), "nothing was created");
    // Asked to, benchcage turns them off for the cell; plan says so.
    let o = bc(home.path())
        .env("BENCHCAGE_THP_ROOT", thp.path())
        .args([
            "plan",
            "003-mongodb-3.2",
            "--env",
            "c4-16g",
            "--only",
            "tokumx@2.0.2",
        ])
        .args(["--set", "host.transparent_hugepages=off"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains(
            "  host      transparent huge pages: never during the cell, the host's always restored after"
        ),
        "{out}"
    );
    // The fake file was not touched by plan.
    assert_eq!(
        std::fs::read_to_string(thp.path().join("enabled")).unwrap(),
        "[always] madvise never\n"
    );
    // madvise: TokuMX starts as the host is.
    let madvise = fake_thp("always [madvise] never");
    let o = bc(home.path())
        .env("BENCHCAGE_THP_ROOT", madvise.path())
        .args([
            "plan",
            "003-mongodb-3.2",
            "--env",
            "c4-16g",
            "--only",
            "tokumx@2.0.2",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains(
            "transparent huge pages: madvise as the host has them (tokumx refuses only always)"
        ),
        "{out}"
    );
}

#[test]
fn doctor_reports_transparent_huge_pages_and_how_to_turn_them_off() {
    let thp = fake_thp("[always] madvise never");
    let o = bc(&repo())
        .env("BENCHCAGE_THP_ROOT", thp.path())
        .arg("doctor")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("warn  hugepages   transparent huge pages: enabled always, defrag madvise"),
        "{out}"
    );
    assert!(out.contains("host: {transparent_hugepages: off}"), "{out}");
    let never = fake_thp("always madvise [never]");
    let o = bc(&repo())
        .env("BENCHCAGE_THP_ROOT", never.path())
        .arg("doctor")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("ok    hugepages   transparent huge pages: enabled never, defrag madvise"),
        "{out}"
    );
}

#[test]
fn the_quickstart_scenario_is_redis_workload_a_in_under_a_minute() {
    let project = Project::load(&repo()).unwrap();
    let p = plan(&project, "quickstart", &[], None, None).unwrap();
    assert_eq!(p.cells.len(), 1);
    let c = &p.cells[0];
    assert_eq!((c.engine.as_str(), c.version.as_str()), ("redis", "7.0"));
    assert_eq!(c.limits.server_cpus.to_list(), "1");
    assert_eq!(c.limits.client_cpus.to_list(), "0");
    assert_eq!(c.limits.memory.to_string(), "256MiB");
    assert!(
        p.estimated_duration.std() < Duration::from_secs(60),
        "{}",
        p.estimated_duration
    );
    assert_eq!(c.phases.len(), 1);
    assert_eq!(c.phases[0].id, "workload-a/t4");
    assert_eq!(
        c.spec_files,
        vec![
            "scenarios/quickstart.yaml",
            "environments/quickstart.yaml",
            "engines/redis.yaml",
            "templates/redis/redis.conf.tera"
        ]
    );
}

#[test]
fn the_doesnt_fit_in_ram_scenario_sweeps_four_settle_caps_one_cell_each() {
    let project = Project::load(&repo()).unwrap();
    let p = plan(&project, "doesnt-fit-in-ram", &[], None, None).unwrap();
    let got: Vec<(String, String)> = p
        .cells
        .iter()
        .map(|c| {
            let s = c.settle.as_ref().unwrap();
            assert!(s.drop_caches);
            (c.id.clone(), s.memory.unwrap().text())
        })
        .collect();
    let want: Vec<(String, String)> = [200, 100, 50, 25]
        .iter()
        .map(|p| {
            (
                format!("myrocks@10.11/ram-sweep-mem{p}pct/r0"),
                format!("{p}% of data"),
            )
        })
        .collect();
    assert_eq!(got, want);
    // Every cell loads under the environment's cap; settle shrinks it.
    assert!(
        p.cells
            .iter()
            .all(|c| c.limits.memory.to_string() == "1GiB")
    );
    // Misses must be major faults: RocksDB maps its files, with little
    // memory of its own beside the page cache.
    assert!(p.cells.iter().all(|c| {
        c.knobs["mmap_reads"] == "true"
            && c.knobs["direct_io"] == "false"
            && c.knobs["memtable_size"] == "8MiB"
    }));
}

#[test]
fn scaled_write_up_environments_show_their_deviations_in_the_plan() {
    let o = run(&repo(), &["plan", "scenarios/003-mongodb-3.2.yaml"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("c4-16g: scale 0.125, memory 16GiB -> 2GiB, cache 12GiB -> 1536MiB, records 10000000 -> 1250000"), "{}", o.stdout);
    assert!(o.stdout.contains("c8-32g: server.cpus = 1 (scenario)"));
    // mongod 3.2 takes whole GiB only: 1.5 GiB scaled cache becomes 1.
    assert!(o.stdout.contains("cacheSizeGB: 1\n"));
    let o = run(
        &repo(),
        &["plan", "scenarios/002-sysbench-fractal-tree.yaml"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("hog leaves 16GiB -> 8GiB"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("hog       leaves 8GiB: locks about"),
        "{}",
        o.stdout
    );
}

/// Rust `Debug` shapes that must never reach a user: `Some(..)`,
/// `Count(0)`, `Sysbench { test: .. }`.
fn debug_shapes(text: &str) -> Vec<String> {
    let call = regex::Regex::new(
        r"\b(Some|None|Ok|Err|Count|Fraction|Limit|Absolute|OfData|Builtin|Tool|Custom|Image|Binary|Duration|Operations)\(",
    )
    .unwrap();
    let structure = regex::Regex::new(r"\b[A-Z][A-Za-z]+ \{ [a-z_]+: ").unwrap();
    call.find_iter(text)
        .chain(structure.find_iter(text))
        .map(|m| m.as_str().to_string())
        .collect()
}

#[test]
fn no_plan_of_a_shipped_scenario_shows_rust_debug_formatting() {
    let mut scenarios: Vec<String> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .flatten()
        .map(|e| e.path().file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 10, "{scenarios:?}");
    // The shapes are caught when they appear.
    assert_eq!(debug_shapes("Some(9) Sysbench { test: x }").len(), 2);
    for s in &scenarios {
        for json in [false, true] {
            let mut args = vec!["plan".to_string(), format!("scenarios/{s}.yaml")];
            if json {
                args.push("--json".into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = run(&repo(), &args);
            assert_eq!(o.code, 0, "{s}: {}", o.stderr);
            let found = debug_shapes(&o.stdout);
            assert!(found.is_empty(), "{s} (json {json}): {found:?}");
        }
    }
}

fn writeup_deviations(scenario: &str, extra: &[&str]) -> (String, Vec<(String, String)>) {
    let mut args = vec!["plan", scenario];
    args.extend(extra);
    let text = run(&repo(), &args);
    assert_eq!(text.code, 0, "{}", text.stderr);
    args.push("--json");
    let o = run(&repo(), &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let devs = v["reproduces"]["deviations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap().to_string(),
                d["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (text.stdout, devs)
}

fn has(devs: &[(String, String)], kind: &str, text: &str) -> bool {
    devs.iter().any(|(k, t)| k == kind && t.contains(text))
}

#[test]
fn write_up_002_on_mongodb_runs_the_built_in_sysbench_mongo_and_plan_says_so() {
    let (text, devs) = writeup_deviations("scenarios/002-sysbench-mongo-here.yaml", &[]);
    let all = format!("{devs:#?}");
    assert!(
        has(
            &devs,
            "tool",
            "load, sysbench-mongo: benchcage's built-in sysbench-mongo (sysbench-mongodb's transaction) instead of sysbench-mongodb"
        ),
        "{all}"
    );
    assert!(
        text.contains("sysbench-mongodb transactions, 8 collections"),
        "{text}"
    );
    assert!(text.contains("loads"), "{text}");
}

#[test]
fn a_scenario_run_above_the_write_ups_size_says_grown_not_shrunk() {
    let (_, devs) = writeup_deviations("001-mongodb-to-tokumx-here", &[]);
    assert!(
        has(
            &devs,
            "scaled",
            "memory cap 256MiB instead of the write-up's 128MiB (grown with scale 2)"
        ),
        "{devs:?}"
    );
    assert!(
        has(&devs, "missing", "MongoDB 3.0 with WiredTiger"),
        "{devs:?}"
    );
}

#[test]
fn plan_names_engine_and_tool_stand_ins_chosen_scaled_and_missing_values_of_the_write_up() {
    let (text, devs) = writeup_deviations("scenarios/003-mongodb-3.2-here.yaml", &[]);
    let all = format!("{devs:#?}");
    assert!(
        text.contains("deviations from write-up 003 (MongoDB 3.2 performance test), as published:"),
        "{text}"
    );
    for (kind, want) in [
        (
            "engine",
            "secantusdb@0.7 instead of MongoDB 3.2.6 WiredTiger (mongodb@3.2.6)",
        ),
        (
            "engine",
            "myrocks@10.11 instead of TokuMX 2.0.2 (fractal tree) (tokumx@2.0.2)",
        ),
        ("missing", "TokuMX 1.5 (tokumx@1.5) is not in the matrix"),
        ("added", "mariadb@10.11 is not in the write-up"),
        (
            "tool",
            "load, read-update-50-50, read-90-update-5-insert-5, read-only: benchcage's built-in YCSB workloads instead of YCSB",
        ),
        (
            "knob",
            "secantusdb@0.7: has no knob sync_period; the write-up's sync_period = 1s is not reproduced",
        ),
        ("knob", "myrocks@10.11: has no knob cleaner_iterations"),
        (
            "differs",
            "c4-16g: 1 server CPUs instead of the write-up's 4",
        ),
        (
            "scaled",
            "c4-16g: memory cap 512MiB instead of the write-up's 16GiB (shrunk with scale 0.03125)",
        ),
        (
            "scaled",
            "c4-16g: records 312500 instead of the write-up's 10000000 (shrunk with scale 0.03125)",
        ),
        (
            "differs",
            "c4-16g secantusdb@0.7, c4-16g mariadb@10.11, c4-16g myrocks@10.11: cache 128MiB instead of the write-up's 12GiB",
        ),
        ("chosen", "read-only: threads 16 chosen by the scenario"),
        ("chosen", "read-only: runs for 20s, chosen by the scenario"),
        ("chosen", "read-only: warmup 5s chosen by the scenario"),
        ("chosen", "load: threads 4 chosen by the scenario"),
        (
            "chosen",
            "myrocks@10.11: memtable_size = 16MiB chosen by the scenario",
        ),
        (
            "omitted",
            "not run here: the sharded cluster loading 50M records",
        ),
    ] {
        assert!(has(&devs, kind, want), "no {kind} `{want}` in {all}");
        assert!(text.contains(want), "text plan lacks `{want}`:\n{text}");
    }
}

#[test]
fn a_cache_mongodb_3_2_rounds_to_whole_gib_is_named_or_refused() {
    let (text, devs) = writeup_deviations("scenarios/003-mongodb-3.2.yaml", &["--env", "c4-16g"]);
    let all = format!("{devs:#?}");
    assert!(
        has(
            &devs,
            "rounded",
            "c4-16g mongodb@3.2.6, c4-16g mongodb@3.2.6-sync60: cache 1GiB instead of the write-up's 12GiB: 1536MiB at scale 0.125, which mongodb@3.2.6 takes in whole 1GiB"
        ),
        "{all}"
    );
    assert!(
        has(
            &devs,
            "scaled",
            "c4-16g tokumx@1.5, c4-16g tokumx@2.0.2: cache 1536MiB instead of the write-up's 12GiB"
        ),
        "{all}"
    );
    // The write-up's exact release runs: no version deviation.
    assert!(!devs.iter().any(|(kind, _)| kind == "version"), "{all}");
    assert!(
        text.contains("backend   docker: image mongo:3.2.6\n"),
        "{text}"
    );
    assert!(text.contains("c4-16g: mongodb@3.2.6: cache 1536MiB becomes 1GiB (mongodb@3.2.6 takes cache_size in whole 1GiB)"), "{text}");
    // The cell gets what the engine takes, and its config says the same.
    assert!(
        text.contains("cache 1GiB\n") && text.contains("cacheSizeGB: 1\n"),
        "{text}"
    );
    // Below one step the engine would get more than planned: refused.
    let o = run(
        &repo(),
        &[
            "plan",
            "scenarios/003-mongodb-3.2.yaml",
            "--only",
            "mongodb@3.2.6/",
            "--set",
            "cache_size=512MiB",
        ],
    );
    assert_eq!(o.code, 2, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr
            .contains("mongodb@3.2.6 takes cache_size in whole 1GiB: 512MiB would become 1GiB"),
        "{}",
        o.stderr
    );
}

#[test]
fn every_shipped_write_up_scenario_declares_what_the_write_up_published() {
    let project = Project::load(&repo()).unwrap();
    for (name, id) in [
        ("000-tokumx-reality", "000"),
        ("001-mongodb-to-tokumx", "001"),
        ("002-sysbench-fractal-tree", "002"),
        ("003-mongodb-3.2", "003"),
        ("003-mongodb-3.2-here", "003"),
        ("004-tpcc-mongodb", "004"),
        ("004-tpcc-mongodb-replica-set", "004"),
        ("002-sysbench-mongo", "002"),
        ("000-tokumx-reality-here", "000"),
        ("001-mongodb-to-tokumx-here", "001"),
        ("002-sysbench-mongo-here", "002"),
    ] {
        let r = project.scenarios[name]
            .reproduces
            .as_ref()
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(r.writeup, id, "{name}");
        assert!(!r.engines.is_empty(), "{name}");
    }
    let (_, devs) = writeup_deviations("scenarios/002-sysbench-fractal-tree.yaml", &[]);
    let all = format!("{devs:#?}");
    assert!(
        has(
            &devs,
            "tool",
            "sysbench-oltp: sysbench oltp_read_write instead of sysbench-mongodb"
        ),
        "{all}"
    );
    assert!(
        has(
            &devs,
            "differs",
            "load: sysbench's own prepare (1 loader, multi-row INSERTs) instead of the write-up's 8 loaders inserting batches of 1000"
        ),
        "{all}"
    );
    assert!(
        has(
            &devs,
            "chosen",
            "hog-16g sysbench-oltp: table_size 8000000 chosen by the scenario (the write-up does not give it; 16000000 before scale 0.5)"
        ),
        "{all}"
    );
    assert!(
        has(
            &devs,
            "scaled",
            "hog-16g: the hog leaves 8GiB instead of the write-up's 16GiB"
        ),
        "{all}"
    );
    let (text, devs) = writeup_deviations("scenarios/004-tpcc-mongodb.yaml", &[]);
    let all = format!("{devs:#?}");
    assert!(
        has(
            &devs,
            "scaled",
            "bare-metal-187g new-order: warehouses 125 instead of the write-up's 1000"
        ),
        "{all}"
    );
    assert!(
        !devs.iter().any(|(k, _)| k == "tool"),
        "py-tpcc is the write-up's own tool: {all}"
    );
    assert!(text.contains("--warehouses 125"), "{text}");
    // Its client ran on another host over 10 Gb: the loopback is named.
    assert!(
        has(
            &devs,
            "differs",
            "wt-25g-in-50g, bare-metal-187g: the client reaches the server over the loopback instead of the write-up's client on an identical bare-metal host over a 10 Gb network"
        ),
        "{all}"
    );
    let (_, devs) = writeup_deviations(
        "scenarios/004-tpcc-mongodb.yaml",
        &[
            "--set",
            "network.delay=100us",
            "--set",
            "network.rate=1gbit",
        ],
    );
    let all = format!("{devs:#?}");
    assert!(
        has(
            &devs,
            "differs",
            "wt-25g-in-50g, bare-metal-187g: an emulated link (delay 100us, rate 1gbit (proxy)) instead of the write-up's"
        ),
        "{all}"
    );
    assert!(
        has(
            &devs,
            "differs",
            "wt-25g-in-50g, bare-metal-187g: network rate 1gbit instead of the write-up's 10gbit"
        ),
        "{all}"
    );
}

/// The write-up a scenario names: its file name's `NNN-` prefix, else
/// "write-up NNN" in its description.
fn named_writeup(name: &str, description: &str) -> Option<String> {
    let digits = |t: &str| -> Option<String> {
        let id: String = t.chars().take_while(char::is_ascii_digit).collect();
        (id.len() == 3).then_some(id)
    };
    if let Some(id) = name.split_once('-').and_then(|(head, _)| digits(head)) {
        return Some(id);
    }
    let text = description.replace('\n', " ");
    text.split("write-up ").skip(1).find_map(digits)
}

#[test]
fn every_scenario_that_names_a_write_up_reproduces_it_and_plan_compares_against_it() {
    let project = Project::load(&repo()).unwrap();
    let mut named = Vec::new();
    for (name, s) in &project.scenarios {
        let Some(id) = named_writeup(name, &s.description) else {
            continue;
        };
        let r = s.reproduces.as_ref().unwrap_or_else(|| {
            panic!("scenarios/{name}.yaml names write-up {id} but has no `reproduces:`")
        });
        assert_eq!(r.writeup, id, "scenarios/{name}.yaml");
        assert!(!r.engines.is_empty(), "scenarios/{name}.yaml");
        named.push(name.clone());
    }
    // Every write-up scenario is found, the sharded one among them.
    assert!(named.len() >= 9, "{named:?}");
    assert!(
        named.contains(&"003-mongodb-3.2-sharded".to_string()),
        "{named:?}"
    );
    let (_, devs) = writeup_deviations("scenarios/003-mongodb-3.2-sharded.yaml", &[]);
    let all = format!("{devs:#?}");
    assert!(
        has(
            &devs,
            "scaled",
            "c8-32g: memory cap 2GiB instead of the write-up's 32GiB"
        ),
        "{all}"
    );
    // Its cells have the write-up's 300 GB disk.
    assert!(!devs.iter().any(|(_, t)| t.contains("disk")), "{all}");
}

#[test]
fn plan_shows_the_pytpcc_load_limit_from_its_warehouses_at_a_floor_rate_the_scenario_may_set() {
    // 125 warehouses (1000 at scale 1/8) at half a warehouse a minute:
    // 250 minutes, beyond 4x the phase's 60 minutes (240, the old limit).
    let o = run(&repo(), &["plan", "scenarios/004-tpcc-mongodb.yaml"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains(
            "--no-execute mongodb (timed; killed after 250m: 125 warehouses at the floor rate of 0.5 a minute, `min_load_rate`)"
        ),
        "{}",
        o.stdout
    );
    let home = temp_home(true);
    let path = home.path().join("scenarios/004-tpcc-mongodb.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let slow = text.replace("load: true,", "load: true, min_load_rate: 0.1,");
    assert_ne!(slow, text, "the scenario's load phase moved");
    std::fs::write(&path, &slow).unwrap();
    let o = run(home.path(), &["plan", "004-tpcc-mongodb"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("killed after 1250m: 125 warehouses at the floor rate of 0.1 a minute"),
        "{}",
        o.stdout
    );
    std::fs::write(
        &path,
        text.replace("load: true,", "load: true, min_load_rate: 0,"),
    )
    .unwrap();
    let o = run(home.path(), &["plan", "004-tpcc-mongodb"]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr.contains("min_load_rate") && o.stderr.contains("above 0 warehouses a minute"),
        "{}",
        o.stderr
    );
}

/// This PATH without the folders that hold `binary`: a host without it.
fn path_without(binary: &str) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !d.join(binary).exists())
        .collect();
    std::env::join_paths(kept)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_host_without_one_engine_validates_with_a_warning_and_only_its_scenarios_are_refused() {
    let path = path_without("secantusd-py");
    let with =
        |args: &[&str]| Out::of(&bc(&repo()).env("PATH", &path).args(args).output().unwrap());
    let o = with(&["validate"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let missing = "secantusdb@0.7: binary `secantusd-py` is not installed on this host";
    assert!(
        o.stderr.contains(&format!(
            "warning: engines/secantusdb.yaml:4:19: versions.0.7.binary: {missing}"
        )),
        "{}",
        o.stderr
    );
    assert_eq!(o.stderr.matches(missing).count(), 1, "once: {}", o.stderr);
    assert!(
        o.stdout.contains("scenarios valid on this host"),
        "{}",
        o.stdout
    );
    // Naming the engine's spec or a scenario that does not use it.
    let o = with(&[
        "validate",
        "engines/secantusdb.yaml",
        "scenarios/quickstart.yaml",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains(missing), "{}", o.stderr);
    // A command that does not use the engine says nothing of it.
    let o = with(&["plan", "quickstart"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!o.stderr.contains("secantusd-py"), "{}", o.stderr);
    // One that uses it refuses it.
    let o = with(&["plan", "003-mongodb-3.2-here"]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr.contains(&format!(
            "error: engines/secantusdb.yaml:4:19: versions.0.7.binary: {missing}"
        )),
        "{}",
        o.stderr
    );
}

#[test]
fn a_cache_fixed_at_start_that_would_not_fit_the_settled_cap_is_refused_and_a_resizable_one_is_planned()
 {
    // PostgreSQL's shared_buffers in the RAM-fit sweep: 8MiB fits the
    // smallest cap settle will set (25% of ~580MiB), 140MiB does not.
    let home = temp_home(true);
    let path = home.path().join("scenarios/doesnt-fit-in-ram.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let pg = text.replace("engines: [myrocks@10.11]", "engines: [postgres@15]");
    let pg = pg
        .lines()
        .filter(|l| !l.starts_with("knobs:"))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&path, pg).unwrap();
    let o = run(home.path(), &["plan", "doesnt-fit-in-ram"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("the engine cache stays 8MiB (the engine cannot resize it while it runs)"),
        "{}",
        o.stdout
    );
    let o = run(
        home.path(),
        &["plan", "doesnt-fit-in-ram", "--set", "cache=140MiB"],
    );
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr.contains("settle sets the memory cap to 25% of data (about 576.4MiB loaded), about 144.1MiB, but postgres cannot resize its cache while it runs")
            && o.stderr.contains("the cache 140MiB + engine overhead 11MiB (measured here by scripts/bench/overhead.sh postgres@15")
            && o.stderr.contains(") it starts with would not fit")
            && o.stderr.contains("--set cache=133MiB"),
        "{}",
        o.stderr
    );
    // MyRocks resizes its block cache: the same cache plans, and plan says how.
    let o = run(
        &repo(),
        &["plan", "doesnt-fit-in-ram", "--set", "cache=128MiB"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("the engine cache keeps its share of the cap (128MiB of 1GiB): `SET GLOBAL rocksdb_block_cache_size = {cache_bytes}`"),
        "{}",
        o.stdout
    );
}

#[test]
fn set_reaches_dataset_phase_and_repetition_fields_and_refuses_unknown_keys() {
    let o = run(
        &repo(),
        &[
            "plan",
            "version-matrix",
            "--json",
            "--set",
            "records=1000",
            "--set",
            "phases.workload-b.threads=2",
            "--set",
            "duration=3s",
            "--set",
            "repetitions=2",
            "--set",
            "load.batch=10",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 18, "9 versions x 2 repetitions");
    assert_eq!(cells[0]["dataset"]["records"], 1000);
    assert_eq!(cells[0]["load"]["batch"], 10);
    let phases = cells[0]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1);
    assert_eq!(phases[0]["id"], "workload-b/t2");
    assert_eq!(phases[0]["phase"]["length"]["duration"], "3s");
    assert!(
        v["deviations"]
            .to_string()
            .contains("records = 1000 (--set)")
    );
    // Records set on the command line are final: scale does not shrink them.
    let o = run(
        &repo(),
        &[
            "plan",
            "003-mongodb-3.2-here",
            "--json",
            "--set",
            "records=5000",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["cells"][0]["dataset"]["records"], 5000);
    let o = run(
        &repo(),
        &["plan", "quickstart", "--set", "phases.workload-a.treads=4"],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("unknown scenario field `phases.workload-a.treads`"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("`phases.workload-a.threads`"),
        "{}",
        o.stderr
    );
    let o = run(&repo(), &["plan", "quickstart", "--set", "record=4"]);
    assert_eq!(o.code, 2);
    for key in [
        "`dataset.records`",
        "`repetitions`",
        "`phases.workload-a.duration`",
        "`server.memory`",
        "`appendfsync`",
    ] {
        assert!(o.stderr.contains(key), "{key} not listed: {}", o.stderr);
    }
}

// ------------------------------------------------------------------ bad specs

#[test]
fn every_bad_spec_in_the_corpus_fails_with_its_expected_errors_and_creates_nothing() {
    let corpus = repo().join("tests/bad_specs");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "the corpus shrank to {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let home = temp_home(false);
        for kind in ["environments", "engines", "scenarios"] {
            if case.join(kind).is_dir() {
                copy_dir(&case.join(kind), &home.path().join(kind));
            }
        }
        let before = snapshot(home.path());
        let o = run(home.path(), &["validate"]);
        let expected = std::fs::read_to_string(case.join("expected")).unwrap();
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        if o.code != 2 {
            failures.push(format!(
                "{name}: exit code {} (want 2)\n{}",
                o.code, o.stderr
            ));
        }
        for line in expected.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if let Some(absent) = line.strip_prefix('!') {
                if o.stderr.contains(absent) {
                    failures.push(format!(
                        "{name}: `{absent}` must not appear in\n{}",
                        o.stderr
                    ));
                }
            } else if !o.stderr.contains(line) {
                failures.push(format!("{name}: missing `{line}` in\n{}", o.stderr));
            }
        }
        if before != snapshot(home.path()) {
            failures.push(format!("{name}: validate created or changed files"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn all_errors_of_a_file_are_reported_in_one_pass_in_file_order() {
    let home = temp_home(false);
    copy_dir(
        &repo().join("tests/bad_specs/several-errors-in-one-file/scenarios"),
        &home.path().join("scenarios"),
    );
    let o = run(home.path(), &["validate"]);
    assert_eq!(o.code, 2);
    let lines: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.contains("scenarios/many.yaml:"))
        .collect();
    assert_eq!(lines.len(), 6, "{}", o.stderr);
    let positions: Vec<(usize, usize)> = lines
        .iter()
        .map(|l| {
            let rest = l.split("many.yaml:").nth(1).unwrap();
            let mut it = rest.split(':');
            (
                it.next().unwrap().parse().unwrap(),
                it.next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    let mut sorted = positions.clone();
    sorted.sort();
    assert_eq!(positions, sorted);
    assert!(o.stderr.contains("6 errors"));
}

#[test]
fn validating_one_file_outside_the_project_checks_it_against_the_project() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("mine.yaml");
    std::fs::write(
        &f,
        "matrix: {engines: [redis], environments: [quickstart]}\nknobs: {appendfsync: never}\ndataset: {records: 10}\nphases:\n  - {name: a, builtin: {workload: b}, operations: 10}\n",
    )
    .unwrap();
    let o = run(&repo(), &["validate", f.to_str().unwrap()]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr
            .contains("mine.yaml:2:22: knobs.appendfsync: `never` is not allowed"),
        "{}",
        o.stderr
    );
    std::fs::write(&f, "matrix: {engines: [redis], environments: [quickstart]}\ndataset: {records: 10}\nphases:\n  - {name: a, builtin: {workload: b}, operations: 10}\n").unwrap();
    let o = run(&repo(), &["validate", f.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

// ------------------------------------------------------ plan refuses what won't fit

#[test]
fn plan_refuses_more_cpus_than_the_host_has_naming_the_flag() {
    let o = run(
        &repo(),
        &[
            "plan",
            "quickstart",
            "--set",
            "server.cpus=0-511",
            "--set",
            "client.cpus=512",
        ],
    );
    assert_eq!(o.code, 2);
    let n = HostFacts::probe().online_cpus.len();
    assert!(
        o.stderr.contains(&format!(
            "--set: server.cpus=0-511: this host has {n} CPUs online"
        )),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("asks for 512"));
}

#[test]
fn two_matrix_entries_that_plan_one_cell_key_are_refused_by_plan_and_run_naming_both() {
    let home = temp_home(false);
    std::fs::create_dir_all(home.path().join("scenarios")).unwrap();
    std::fs::write(
        home.path().join("scenarios/twins.yaml"),
        "matrix:\n  engines: [redis@7.0, {engine: redis, label: redis-7.0}]\n  environments: [quickstart]\n\
         dataset: {records: 1000}\nphases:\n  - {name: a, builtin: {workload: a}, duration: 1s}\n",
    )
    .unwrap();
    let before = snapshot(home.path());
    let results = home.path().join("results");
    for cmd in ["plan", "run"] {
        let o = Out::of(
            &bc(home.path())
                .env("BENCHCAGE_RESULTS", &results)
                .args([cmd, "twins"])
                .output()
                .unwrap(),
        );
        assert_eq!(o.code, 2, "{cmd}: {}{}", o.stdout, o.stderr);
        assert!(
            o.stderr
                .contains("`redis@7.0` and `redis-7.0` plan the same cell"),
            "{cmd}: {}",
            o.stderr
        );
        assert!(o.stderr.contains("scenarios/twins.yaml"), "{}", o.stderr);
    }
    assert_eq!(snapshot(home.path()), before, "something was created");

    // Other knobs make another cell: both plan.
    std::fs::write(
        home.path().join("scenarios/twins.yaml"),
        "matrix:\n  engines: [redis@7.0, {engine: redis, label: redis-7.0, knobs: {appendfsync: always}}]\n  environments: [quickstart]\n\
         dataset: {records: 1000}\nphases:\n  - {name: a, builtin: {workload: a}, duration: 1s}\n",
    )
    .unwrap();
    let o = run(home.path(), &["plan", "twins"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn plan_refuses_overlapping_server_and_client_cpus() {
    let o = run(&repo(), &["plan", "quickstart", "--set", "client.cpus=1"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("client CPUs 1 overlap the server's 1"),
        "{}",
        o.stderr
    );
}

#[test]
fn plan_refuses_a_memory_cap_beyond_the_host_ram() {
    let o = run(
        &repo(),
        &["plan", "quickstart", "--set", "server.memory=100TiB"],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("the memory cap 100TiB is more than this host's RAM"),
        "{}",
        o.stderr
    );
}

#[test]
fn plan_refuses_a_hog_that_would_leave_more_than_is_available() {
    let o = run(
        &repo(),
        &[
            "plan",
            "002-sysbench-fractal-tree",
            "--set",
            "hog.leave=900GiB",
        ],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("--set: hog.leave=900GiB: the hog should leave 900GiB but only"),
        "{}",
        o.stderr
    );
}

#[test]
fn plan_refuses_a_cache_that_does_not_fit_under_the_cap_unless_overcommit_is_allowed() {
    let o = run(
        &repo(),
        &["plan", "quickstart", "--set", "cache_size=250MiB"],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains(
            "cache 250MiB + engine overhead 8MiB (measured here by scripts/bench/overhead.sh redis@7.0"
        ),
        "{}",
        o.stderr
    );
    let o = run(
        &repo(),
        &[
            "plan",
            "quickstart",
            "--set",
            "cache_size=250MiB",
            "--set",
            "allow_cache_overcommit=true",
            "--json",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("\"cache\": \"250MiB\""));
}

#[test]
fn an_unknown_set_key_is_refused_with_the_known_keys() {
    let o = run(&repo(), &["plan", "quickstart", "--set", "cache_sise=1GiB"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("unknown key `cache_sise`"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("did you mean `cache_size`?"));
    assert!(o.stderr.contains("`server.memory`") && o.stderr.contains("`appendfsync`"));
    let o = run(
        &repo(),
        &["plan", "quickstart", "--set", "server.memroy=1GiB"],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("did you mean `server.memory`?"),
        "{}",
        o.stderr
    );
    let o = run(&repo(), &["plan", "quickstart", "--set", "novalue"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("`novalue` is not KEY=VALUE"));
}

#[test]
fn a_steal_allowance_is_planned_and_shown_and_over_90_percent_is_refused() {
    let plan = |set: &[&str]| {
        let mut args = vec!["plan", "quickstart", "--json"];
        for s in set {
            args.extend(["--set", s]);
        }
        run(&repo(), &args)
    };
    let base = plan(&[]);
    let allowed = plan(&["server.steal_allowance=30%"]);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    let cell = |o: &str| serde_json::from_str::<serde_json::Value>(o).unwrap()["cells"][0].clone();
    let (b, a) = (cell(&base.stdout), cell(&allowed.stdout));
    assert_eq!(a["steal_allowance"], "30%");
    assert!(b.get("steal_allowance").is_none());
    let text = run(
        &repo(),
        &["plan", "quickstart", "--set", "server.steal_allowance=30%"],
    );
    assert!(
        text.stdout.contains("up to 30% steal time allowed"),
        "{}",
        text.stdout
    );
    let over = plan(&["server.steal_allowance=95%"]);
    assert_eq!(over.code, 2, "{}", over.stderr);
    assert!(
        over.stderr.contains("steal allowance of 95% is over 90%"),
        "{}",
        over.stderr
    );
}

#[test]
fn set_overrides_knobs_and_environment_fields_alike() {
    // A swap limit needs swap on the host (plan refuses it otherwise).
    let has_swap = benchcage::host::HostFacts::probe().swap_total.0 > 0;
    let swap = if has_swap {
        "server.swap=64MiB"
    } else {
        "server.swap=off"
    };
    let o = run(
        &repo(),
        &[
            "plan",
            "quickstart",
            "--json",
            "--set",
            "cache_size=64MiB",
            "--set",
            "server.memory=512MiB",
            "--set",
            "appendfsync=always",
            "--set",
            "scale=0.5",
            "--set",
            swap,
            "--set",
            "server.io.read_bps=100MiB",
            "--set",
            "server.io.write_iops=500",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let c = &v["cells"][0];
    assert_eq!(c["cache"], "64MiB");
    assert_eq!(c["limits"]["memory"], "512MiB");
    assert_eq!(c["knobs"]["appendfsync"], "always");
    assert_eq!(c["dataset"]["records"], 25000);
    assert_eq!(c["limits"]["io"]["read_bps"], 100 * 1024 * 1024);
    assert_eq!(c["limits"]["io"]["write_iops"], 500);
    if has_swap {
        assert_eq!(c["limits"]["swap"]["Limit"], "64MiB");
    } else {
        assert_eq!(c["limits"]["swap"], "Off");
    }
    assert!(
        c["configs"][0]["content"]
            .as_str()
            .unwrap()
            .contains("appendfsync always\n")
    );
    assert!(
        c["configs"][0]["content"]
            .as_str()
            .unwrap()
            .contains("maxmemory 67108864\n")
    );
    let devs = v["deviations"].to_string();
    assert!(devs.contains("server.memory = 512MiB (--set)"), "{devs}");
}

#[test]
fn env_and_only_filters_select_cells() {
    let o = run(
        &repo(),
        &[
            "plan",
            "003-mongodb-3.2",
            "--env",
            "c8-32g",
            "--only",
            "tokumx@1.5",
            "--json",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let ids: Vec<&str> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["tokumx@1.5/c8-32g/r0"]);
    let o = run(&repo(), &["plan", "003-mongodb-3.2", "--env", "c9-99g"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("environment `c9-99g` is not in the matrix")
    );
}

#[test]
fn swap_limits_are_refused_on_a_host_without_swap_accounting() {
    let project = Project::load(&repo()).unwrap();
    let s = project.scenarios["quickstart"].clone();
    let mut host = HostFacts::probe();
    host.swap_accounting = false;
    host.swap_total = benchcage::units::Bytes::from_gib(4);
    let sets = vec![("server.swap".to_string(), "64MiB".to_string())];
    let err = plan_on(&project, &s, &sets, None, None, &host).unwrap_err();
    assert!(err.to_string().contains("no swap accounting"), "{err}");
    host.swap_accounting = true;
    assert!(plan_on(&project, &s, &sets, None, None, &host).is_ok());
}

#[test]
fn a_binary_missing_from_the_host_is_refused_with_a_docker_hint() {
    let home = temp_home(true);
    let redis = home.path().join("engines/redis.yaml");
    let text = std::fs::read_to_string(&redis)
        .unwrap()
        .replace("/usr/bin/redis-server", "/nonexistent/redis-server");
    std::fs::write(&redis, text).unwrap();
    let o = run(home.path(), &["plan", "quickstart"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("binary `/nonexistent/redis-server` is not installed"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("--set backend=docker"));
    let o = run(
        home.path(),
        &["plan", "quickstart", "--set", "backend=docker", "--json"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("benchcage/redis:7.0"));
}

// ------------------------------------------------------------- launch material

#[test]
fn launch_fills_every_placeholder_of_argv_and_init() {
    let project = Project::load(&repo()).unwrap();
    let p = plan(
        &project,
        "quickstart",
        &[("cache_size".into(), "64MiB".into())],
        None,
        None,
    )
    .unwrap();
    let l = p.cells[0].launch(
        40123,
        Path::new("/tmp/d"),
        Path::new("/tmp/c"),
        Path::new("/tmp/l.log"),
    );
    assert_eq!(
        l.argv,
        vec![
            "/usr/bin/redis-server",
            "/tmp/c/redis.conf",
            "--port",
            "40123",
            "--dir",
            "/tmp/d"
        ]
    );
    assert_eq!(l.port, 40123);
    assert_eq!(
        l.config_files,
        vec![(
            PathBuf::from("/tmp/c/redis.conf"),
            PathBuf::from("/tmp/c/redis.conf")
        )]
    );
    assert_eq!(l.readiness.probe, benchcage::model::Probe::Redis);

    let home = temp_home(false);
    std::fs::write(
        home.path().join("scenarios/pg.yaml"),
        "matrix: {engines: [postgres, mariadb], environments: [quickstart]}\nphases:\n  - {name: a, tool: {pgbench: {scale: 1}}, duration: 5s}\n",
    )
    .unwrap();
    let project = Project::load(home.path()).unwrap();
    let p = plan(&project, "pg", &[], None, None).unwrap();
    for c in &p.cells {
        let l = c.launch(5999, Path::new("/d"), Path::new("/c"), Path::new("/l"));
        for a in l.argv.iter().chain(l.init.iter().flatten()) {
            assert!(!a.contains('{'), "{}: unfilled placeholder in {a}", c.id);
        }
    }
    let pg = p.cells.iter().find(|c| c.engine == "postgres").unwrap();
    let l = pg.launch(5999, Path::new("/d"), Path::new("/c"), Path::new("/l"));
    assert_eq!(l.user.as_deref(), Some("postgres"));
    assert_eq!(l.init[0][0], "/usr/lib/postgresql/15/bin/initdb");
    assert!(
        l.argv
            .contains(&"config_file=/c/postgresql.conf".to_string())
    );
}

// ---------------------------------------------------------------- golden configs

/// (golden folder, engine, environment, --set flags)
const GOLDEN: &[(&str, &str, &str, &[&str])] = &[
    (
        "mongodb-3.2-c4-16g",
        "mongodb@3.2",
        "c4-16g",
        &[
            "sync_period=1s",
            "compression=snappy",
            "prefix_compression=true",
        ],
    ),
    (
        "mongodb-3.2-c8-32g",
        "mongodb@3.2",
        "c8-32g",
        &[
            "sync_period=1s",
            "compression=snappy",
            "prefix_compression=true",
        ],
    ),
    (
        "tokumx-1.5-c4-16g",
        "tokumx@1.5",
        "c4-16g",
        &["sync_period=5s"],
    ),
    (
        "tokumx-1.5-c8-32g",
        "tokumx@1.5",
        "c8-32g",
        &["sync_period=5s"],
    ),
    (
        "tokumx-2.0.2-c4-16g",
        "tokumx@2.0.2",
        "c4-16g",
        &[
            "sync_period=5s",
            "checkpoint_period=10s",
            "cleaner_iterations=10",
            "direct_io=false",
            "cleaner_period=2s",
        ],
    ),
    (
        "tokumx-2.0.2-c8-32g",
        "tokumx@2.0.2",
        "c8-32g",
        &[
            "sync_period=5s",
            "checkpoint_period=10s",
            "cleaner_iterations=10",
            "direct_io=false",
            "cleaner_period=2s",
        ],
    ),
    (
        "mongodb-4.4-wt-25g-in-50g",
        "mongodb@4.4",
        "wt-25g-in-50g",
        &[],
    ),
    (
        "mongodb-7.0-c4-16g-direct-io",
        "mongodb@7.0",
        "c4-16g",
        &["direct_io=true", "compression=zstd"],
    ),
    (
        "psmdb-3.0-c4-16g-perconaft",
        "psmdb@3.0",
        "c4-16g",
        &["compression=zlib", "direct_io=true"],
    ),
    ("redis-7.0-quickstart", "redis@7.0", "quickstart", &[]),
    ("postgres-15-quickstart", "postgres@15", "quickstart", &[]),
    // MariaDB 10.11's measured 89MiB beside its pool leaves 39MiB of 128.
    (
        "mariadb-10.11-tiny-128m",
        "mariadb@10.11",
        "tiny-128m",
        &["cache=32MiB"],
    ),
    (
        "mariadb-10.11-vm-1g-zlib",
        "mariadb@10.11",
        "vm-1g",
        &[
            "compression=zlib",
            "sync_on_commit=false",
            "direct_io=false",
        ],
    ),
    ("myrocks-10.11-tiny-128m", "myrocks@10.11", "tiny-128m", &[]),
    (
        "myrocks-10.11-ram-sweep-mmap",
        "myrocks@10.11",
        "ram-sweep",
        &["mmap_reads=true", "memtable_size=8MiB", "compression=none"],
    ),
    (
        "secantusdb-0.7-vm-1g",
        "secantusdb",
        "vm-1g",
        &["sync_on_commit=true"],
    ),
];

#[test]
fn every_template_renders_exactly_its_golden_config() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut failures = Vec::new();
    for (dir, engine, env, sets) in GOLDEN {
        let t = tempfile::tempdir().unwrap();
        let o = render_to(engine, env, sets, t.path());
        assert_eq!(o.code, 0, "{dir}: {}", o.stderr);
        let golden = repo().join("tests/golden").join(dir);
        for line in o.stdout.lines() {
            let rendered = PathBuf::from(line);
            let name = rendered.file_name().unwrap();
            let got = std::fs::read_to_string(&rendered).unwrap();
            if bless {
                std::fs::create_dir_all(&golden).unwrap();
                std::fs::write(golden.join(name), &got).unwrap();
                continue;
            }
            let want = std::fs::read_to_string(golden.join(name)).unwrap_or_default();
            if got != want {
                failures.push(format!(
                    "{dir}/{}:\n--- want\n{want}\n--- got\n{got}",
                    name.to_string_lossy()
                ));
            }
        }
    }
    let templates = std::fs::read_dir(repo().join("templates")).unwrap().count();
    let covered: std::collections::BTreeSet<&str> = GOLDEN
        .iter()
        .map(|g| g.1.split('@').next().unwrap())
        .collect();
    assert_eq!(
        covered.len(),
        templates,
        "a template folder has no golden test"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn golden(dir: &str, file: &str) -> String {
    std::fs::read_to_string(repo().join("tests/golden").join(dir).join(file)).unwrap()
}

#[test]
fn write_up_003_configs_come_out_as_the_write_up_set_them() {
    for (env, gb, g) in [("c4-16g", 12, "12g"), ("c8-32g", 24, "24g")] {
        let m = golden(&format!("mongodb-3.2-{env}"), "mongod.conf");
        for want in [
            format!("      cacheSizeGB: {gb}\n"),
            "  syncPeriodSecs: 1\n".into(),
            "      blockCompressor: snappy\n".into(),
            "      prefixCompression: true\n".into(),
        ] {
            assert!(m.contains(&want), "{env}: {want:?} not in\n{m}");
        }
        let t15 = golden(&format!("tokumx-1.5-{env}"), "tokumx.conf");
        assert!(t15.contains(&format!("cacheSize = {g}\n")), "{t15}");
        assert!(t15.contains("syncdelay = 5\n"));
        for absent in [
            "checkpointPeriod",
            "cleanerIterations",
            "directio",
            "cleanerPeriod",
        ] {
            assert!(!t15.contains(absent), "tokumx 1.5 must not get {absent}");
        }
        let t20 = golden(&format!("tokumx-2.0.2-{env}"), "tokumx.conf");
        for want in [
            format!("cacheSize = {g}\n"),
            "syncdelay = 5\n".into(),
            "checkpointPeriod = 10\n".into(),
            "cleanerIterations = 10\n".into(),
            "directio = false\n".into(),
            "cleanerPeriod = 2\n".into(),
        ] {
            assert!(t20.contains(&want), "{env}: {want:?} not in\n{t20}");
        }
    }
    // From 3.4 mongod takes fractions; from 6.1 the journal option is gone.
    let m44 = golden("mongodb-4.4-wt-25g-in-50g", "mongod.conf");
    assert!(m44.contains("cacheSizeGB: 25\n") && m44.contains("journal:"));
    let m70 = golden("mongodb-7.0-c4-16g-direct-io", "mongod.conf");
    assert!(!m70.contains("journal:") && m70.contains("configString: \"direct_io=[data]\""));
}

#[test]
fn a_version_without_a_feature_is_refused_at_render() {
    let t = tempfile::tempdir().unwrap();
    let o = render_to("mongodb@3.2", "c4-16g", &["compression=zstd"], t.path());
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr
            .contains("compression zstd needs mongodb 4.2 or later"),
        "{}",
        o.stderr
    );
}

// ------------------------------------------------------------------ injection

#[test]
fn a_knob_value_with_a_newline_or_a_quote_cannot_add_a_config_line() {
    // Through the CLI: control characters are refused before rendering.
    let t = tempfile::tempdir().unwrap();
    let o = render_to(
        "postgres",
        "quickstart",
        &["application_name=x\nfsync = off"],
        t.path(),
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("control characters"), "{}", o.stderr);
    assert!(
        std::fs::read_dir(t.path()).unwrap().next().is_none(),
        "render wrote files"
    );

    // In the renderer itself, for every format: the value stays on its line.
    let project = Project::load(&repo()).unwrap();
    let engine = &project.engines["postgres"];
    let evil = "a\"b'c\\d\nfsync = off\r\n[mysqld]\n";
    let mut knobs = BTreeMap::new();
    knobs.insert("s".to_string(), KnobValue::String(evil.to_string()));
    let input = benchcage::render::RenderInput {
        engine,
        version: "15",
        environment: "x",
        cache: benchcage::units::Bytes(0),
        memory: None,
        cpus: 1,
        knobs: &knobs,
        member: benchcage::render::MemberContext::standalone(),
    };
    for (format, tpl) in [
        (
            ConfigFormat::Yaml,
            "before: 1\nkey: \"{{ knobs.s }}\"\nafter: 2\n",
        ),
        (
            ConfigFormat::Ini,
            "[a]\nkey = \"{{ knobs.s }}\"\nafter = 2\n",
        ),
        (ConfigFormat::Redis, "key \"{{ knobs.s }}\"\nafter 2\n"),
        (ConfigFormat::Toml, "key = \"{{ knobs.s }}\"\nafter = 2\n"),
        (ConfigFormat::Pg, "key = '{{ knobs.s }}'\nafter = 2\n"),
    ] {
        let out = benchcage::render::render_text("t", tpl, format, &input).unwrap();
        assert_eq!(
            out.lines().count(),
            tpl.lines().count(),
            "{format:?} gained a line:\n{out}"
        );
        assert!(
            !out.lines()
                .any(|l| l.starts_with("fsync") || l.starts_with("[mysqld]")),
            "{format:?}:\n{out}"
        );
        if format == ConfigFormat::Yaml {
            let v: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
            assert_eq!(
                v["key"].as_str(),
                Some(evil),
                "YAML must read back the exact value"
            );
        }
    }
}

// ------------------------------------------------------------- the other commands

#[test]
fn render_writes_the_files_and_prints_their_paths() {
    let t = tempfile::tempdir().unwrap();
    let o = render_to("mongodb@3.2", "c4-16g", &["sync_period=1s"], t.path());
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout.trim(),
        t.path().join("mongod.conf").display().to_string()
    );
    assert!(o.stderr.contains("cache 12GiB"));
    let o = run(&repo(), &["render", "mongodb@9.9", "--env", "c4-16g"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("mongodb has no version `9.9`"));
    let o = run(
        &repo(),
        &["render", "redis", "--env", "c4-16g", "--set", "maxmem=1"],
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("unknown key `maxmem`"), "{}", o.stderr);
}

#[test]
fn render_check_refuses_an_engine_without_a_check_and_a_version_not_fetched_writing_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dest = t.path().join("cfg");
    let dest_s = dest.to_str().unwrap();
    let o = run(
        &repo(),
        &[
            "render",
            "tokumx@2.0.2",
            "--env",
            "c4-16g",
            "--check",
            "-o",
            dest_s,
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("tokumx has no config check"),
        "{}",
        o.stderr
    );
    let o = Out::of(
        &bc(&repo())
            .env("BENCHCAGE_CACHE", t.path().join("empty-cache"))
            .args([
                "render",
                "redis@6.2",
                "--env",
                "c4-16g",
                "--check",
                "-o",
                dest_s,
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("redis@6.2 is not fetched yet; run `benchcage fetch redis@6.2` first"),
        "{}",
        o.stderr
    );
    assert!(!dest.exists() && !t.path().join("empty-cache").exists());
    let o = run(&repo(), &["render", "--help"]);
    assert!(
        o.stdout
            .contains("benchcage render postgres@12 --env quickstart --check"),
        "{}",
        o.stdout
    );
}

#[test]
fn list_shows_every_shipped_spec() {
    let o = run(&repo(), &["list"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for name in [
        "vm-1g",
        "tiny-128m",
        "hog-16g",
        "c4-16g",
        "c8-32g",
        "wt-25g-in-50g",
        "quickstart",
        "mongodb",
        "tokumx",
        "postgres",
        "mariadb",
        "myrocks",
        "redis",
        "secantusdb",
        "000-tokumx-reality",
        "004-tpcc-mongodb",
    ] {
        assert!(o.stdout.contains(name), "{name} missing from list");
    }
    assert!(
        o.stdout
            .contains("3.2, 3.2.6, 3.4, 3.6, 4.0, 4.2, 4.4, 5.0, 6.0, 7.0")
    );
    let o = run(&repo(), &["list", "engnes"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("did you mean `engines`?"));
}

#[test]
fn doctor_reports_cgroups_mlock_cpus_ram_and_docker() {
    let o = run(&repo(), &["doctor"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let h = HostFacts::probe();
    assert!(o.stdout.contains(&format!(
        "{} online ({})",
        h.online_cpus.len(),
        h.online_cpus
    )));
    for word in [
        "cgroup",
        "swap limit",
        "mlock",
        "memory",
        "docker",
        "RLIMIT_MEMLOCK",
    ] {
        assert!(o.stdout.contains(word), "{word} missing:\n{}", o.stdout);
    }
    // Docker is `ok` only when reachable; otherwise the next line says what to do.
    let lines: Vec<&str> = o.stdout.lines().collect();
    let i = lines.iter().position(|l| l.contains(" docker ")).unwrap();
    let reachable = std::path::Path::new("/var/run/docker.sock").exists()
        || std::env::var("DOCKER_HOST").is_ok_and(|h| !h.is_empty());
    if !reachable {
        assert!(lines[i].starts_with("no"), "{}", lines[i]);
    }
    if !lines[i].starts_with("ok") {
        assert!(
            lines.get(i + 1).is_some_and(|l| l.contains("->")),
            "no fix given:\n{}",
            o.stdout
        );
    }
}

#[test]
fn every_command_help_has_an_example() {
    for cmd in [
        "doctor", "list", "validate", "render", "plan", "run", "drive", "report", "history",
        "compare", "cleanup", "hog",
    ] {
        let o = run(&repo(), &[cmd, "--help"]);
        assert_eq!(o.code, 0, "{cmd}");
        assert!(
            o.stdout.contains("Example"),
            "`{cmd} --help` has no example"
        );
        assert!(
            o.stdout.contains("benchcage "),
            "`{cmd} --help` example does not show a command"
        );
    }
}

#[test]
fn a_missing_project_home_says_where_to_run_from() {
    let t = tempfile::tempdir().unwrap();
    let o = run(t.path(), &["validate"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no specs here"));
    assert!(o.stderr.contains("--home"));
}

#[test]
fn every_engine_listens_on_loopback_only() {
    let project = Project::load(&repo()).unwrap();
    for (name, engine) in &project.engines {
        let version = engine.default_version.clone();
        let cell =
            benchcage::plan::render_engine(&project, &format!("{name}@{version}"), "c4-16g", &[])
                .unwrap();
        let l = cell.launch(1, Path::new("/d"), Path::new("/c"), Path::new("/l"));
        let everything = format!(
            "{}\n{}",
            l.argv.join(" "),
            cell.configs
                .iter()
                .map(|c| c.content.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(
            everything.contains("127.0.0.1"),
            "{name} does not bind loopback:\n{everything}"
        );
        assert!(
            !everything.contains("0.0.0.0") && !everything.contains("::"),
            "{name} binds beyond loopback"
        );
    }
}

#[test]
fn the_iibench_scenario_loads_and_runs_the_built_in_iibench_and_a_mix_on_it_is_refused() {
    use benchcage::plan::PhaseConfig;
    use benchcage::workload::WorkloadKind;
    let project = Project::load(&repo()).unwrap();
    let p = plan(&project, "iibench", &[], None, None).unwrap();
    assert_eq!(p.cells.len(), 2);
    for c in &p.cells {
        let load = c.load_config.as_ref().unwrap();
        assert_eq!(
            (load.workload, load.batch, load.records),
            (WorkloadKind::Iibench, Some(1000), 20_000)
        );
        assert_eq!(c.phases.len(), 2, "one phase per thread count");
        for ph in &c.phases {
            let PhaseConfig::Builtin(cfg) = &ph.config else {
                panic!("a built-in phase");
            };
            assert_eq!(
                (cfg.workload, cfg.label()),
                (WorkloadKind::Iibench, "iibench".into())
            );
        }
    }
    let home = temp_home(false);
    let bad = std::fs::read_to_string(repo().join("scenarios/iibench.yaml"))
        .unwrap()
        .replace("{workload: iibench}", "{workload: iibench, mix: {read: 1}}");
    std::fs::create_dir_all(home.path().join("scenarios")).unwrap();
    std::fs::write(home.path().join("scenarios/iibench.yaml"), bad).unwrap();
    let o = run(home.path(), &["plan", "scenarios/iibench.yaml"]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr.contains("scenarios/iibench.yaml:9:39:")
            && o.stderr.contains("`mix` does not apply to iibench"),
        "{}",
        o.stderr
    );
}

/// py-tpcc pinned to the pymongo it was written for runs in benchcage's
/// virtualenv: plan names it, and refuses (exit 2, creating nothing) while
/// it is not made, saying how to make it; once made, plan shows it.
#[test]
fn plan_shows_a_pinned_pytpccs_virtualenv_and_refuses_a_missing_one_with_the_fix() {
    let t = tempfile::tempdir().unwrap();
    let text = "description: py-tpcc pinned to pymongo 3.13.0\n\
                matrix: {engines: [secantusdb], environments: [quickstart]}\n\
                phases:\n\
                \x20 - name: tpcc-load\n\
                \x20   tool: {pytpcc: {warehouses: 1, load: true, transactions: false, pymongo: 3.13.0}}\n\
                \x20   threads: 2\n\
                \x20   duration: 1m\n";
    let scenario = t.path().join("pinned.yaml");
    std::fs::write(&scenario, text).unwrap();
    let cache = t.path().join("cache");
    let plan = || {
        Out::of(
            &bc_home(&repo())
                .env("BENCHCAGE_CACHE", &cache)
                .args(["plan", scenario.to_str().unwrap()])
                .output()
                .unwrap(),
        )
    };
    let venv = cache.join("tools/python-pymongo-3.13.0");
    let o = plan();
    assert_eq!(o.code, 2, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains(&format!(
            "py-tpcc python: {}/bin/python (pymongo==3.13.0), not made: `run --fetch` makes it",
            venv.display()
        )),
        "{}",
        o.stdout
    );
    assert!(
        o.stderr
            .contains("py-tpcc's Python environment with pymongo 3.13.0 is not made yet")
            && o.stderr.contains("run with --fetch"),
        "{}",
        o.stderr
    );
    assert!(!venv.exists(), "plan made nothing");
    // What a made environment leaves: its record, written last.
    std::fs::create_dir_all(&venv).unwrap();
    std::fs::write(
        venv.join("benchcage-env.json"),
        r#"{"python": "3.11.7", "packages": {"pymongo": "3.13.0"}}"#,
    )
    .unwrap();
    let o = plan();
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("(pymongo==3.13.0), made (python 3.11.7)"),
        "{}",
        o.stdout
    );
    // A pin pip cannot install is bad input at its line.
    std::fs::write(
        &scenario,
        std::fs::read_to_string(&scenario).unwrap().replacen(
            "pymongo: 3.13.0",
            "pymongo: latest",
            1,
        ),
    )
    .unwrap();
    let o = plan();
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("`latest` is not a pymongo release to pin"),
        "{}",
        o.stderr
    );
}

// ------------------------------------------------------------ listed cells

/// The ids of the cells `benchcage plan --json` lists for `scenario`.
fn planned_ids(scenario: &str) -> Vec<String> {
    let o = run(&repo(), &["plan", scenario, "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_matrix_of_listed_cells_plans_exactly_those_pairs() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("pairs.yaml");
    std::fs::write(
        &path,
        "matrix:\n  cells:\n    - {engine: redis@7.0, environment: quickstart}\n    - {engine: postgres@15, environment: tiny-128m}\n\
         dataset: {records: 1000}\nphases:\n  - {name: a, builtin: {workload: a}, duration: 5s}\n",
    )
    .unwrap();
    assert_eq!(
        planned_ids(path.to_str().unwrap()),
        ["redis@7.0/quickstart/r0", "postgres@15/tiny-128m/r0"],
        "neither redis in tiny-128m nor postgres in quickstart"
    );
}

#[test]
fn listed_cells_beside_the_cross_product_add_only_their_pairs_with_the_keys_a_cross_product_gives_them()
 {
    let t = tempfile::tempdir().unwrap();
    let (crossed, listed) = (t.path().join("crossed.yaml"), t.path().join("listed.yaml"));
    let rest =
        "dataset: {records: 1000}\nphases:\n  - {name: a, builtin: {workload: a}, duration: 5s}\n";
    std::fs::write(
        &crossed,
        format!("matrix:\n  engines: [redis@7.0, postgres@15]\n  environments: [quickstart, tiny-128m]\n{rest}"),
    )
    .unwrap();
    std::fs::write(
        &listed,
        format!(
            "matrix:\n  engines: [redis@7.0]\n  environments: [quickstart]\n  cells:\n    - {{engine: postgres@15, environment: tiny-128m}}\n{rest}"
        ),
    )
    .unwrap();
    assert_eq!(
        planned_ids(listed.to_str().unwrap()),
        ["redis@7.0/quickstart/r0", "postgres@15/tiny-128m/r0"]
    );
    // A listed cell is the cell the cross product would have: same key.
    let project = Project::load(&repo()).unwrap();
    let keys = |p: &Path| -> BTreeMap<String, (String, String)> {
        let s = project.find_scenario(p.to_str().unwrap()).unwrap();
        let plan = plan_on(&project, &s, &[], None, None, &HostFacts::probe()).unwrap();
        plan.cells
            .iter()
            .map(|c| (c.id.clone(), benchcage::run::adapt::keys_of(c)))
            .collect()
    };
    let (all, some) = (keys(&crossed), keys(&listed));
    for (id, k) in &some {
        assert_eq!(Some(k), all.get(id), "{id}");
    }
    assert_eq!(some.len(), 2);
}

#[test]
fn an_environment_network_of_a_rate_alone_plans_without_a_delay() {
    let home = temp_home(false);
    let env = home.path().join("environments/quickstart.yaml");
    let mut text = std::fs::read_to_string(&env).unwrap();
    text.push_str("network: {rate: 10mbit, emulation: proxy}\n");
    std::fs::write(&env, text).unwrap();
    std::fs::write(
        home.path().join("scenarios/rate.yaml"),
        std::fs::read_to_string(repo().join("tests/scenarios/run-network-scans.yaml")).unwrap(),
    )
    .unwrap();
    let o = bc(home.path()).args(["plan", "rate"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("network   rate 10mbit (proxy)") && !out.contains("delay 0"),
        "{out}"
    );
}

#[test]
fn a_client_on_another_node_is_refused_where_it_cannot_run_naming_why() {
    let home = temp_home(true);
    std::fs::copy(
        repo().join("tests/scenarios/run-tool.yaml"),
        home.path().join("scenarios/tool.yaml"),
    )
    .unwrap();
    for (args, want) in [
        // An external tool is not started on the other node.
        (vec!["plan", "tool"], "runs an external tool"),
        // SecantusDB's command binds 127.0.0.1 only.
        (
            vec!["plan", "003-mongodb-3.2-here", "--only", "secantusdb"],
            "no way to listen on its node's address",
        ),
        // A replica set's members listen on 127.0.0.1 only.
        (
            vec!["plan", "replica-sets-here", "--only", "redis"],
            "built for one server",
        ),
    ] {
        let o = run(
            home.path(),
            &[args.as_slice(), &["--set", "client.node=other"]].concat(),
        );
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.contains("client.node") && o.stderr.contains(want),
            "{args:?}: {}",
            o.stderr
        );
    }
    // A built-in workload on one redis server plans, as another cell.
    let o = run(
        home.path(),
        &["plan", "quickstart", "--set", "client.node=other"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("client    on another node"),
        "{}",
        o.stdout
    );
    let o = run(
        home.path(),
        &["plan", "quickstart", "--set", "client.node=elsewhere"],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("neither `same` nor `other`"),
        "{}",
        o.stderr
    );
}
