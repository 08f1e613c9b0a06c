//! The write-ups' own engines, era-correct: every MongoDB version from 2.2
//! to 8.0 with each storage engine it has, TokuMX 1.4 to 2.0 and Percona
//! Server for MongoDB's PerconaFT render a config in their version's own
//! format (`key = value` before 2.6, YAML after) with only the options
//! that version documents, and a knob or value a version lacks is refused
//! by plan, naming the version.
//!
//! No mongod runs on this machine and no registry is reachable: these
//! golden configs, checked against each version's documented option list,
//! and the legacy test server (tests/mongo_wire.rs) are how these versions
//! are tested. `BLESS=1 cargo test --test fast_engine_eras` rewrites the
//! golden files under tests/golden/eras/ after a deliberate template change.

mod support;

use std::collections::BTreeSet;
use support::cli::{Out, bc_home, render_to, repo};

/// How a version's mongod.conf is written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    /// `name = value`, the only format before 2.6 (and TokuMX's).
    Ini,
    /// The YAML file of 2.6 and later.
    Yaml,
}

/// The options benchcage may write, as each version's documentation lists
/// them (INI names, or YAML paths), with the page that lists them.
struct Documented {
    page: &'static str,
    options: &'static [&'static str],
}

const V22: Documented = Documented {
    page: "MongoDB 2.2 Manual, Configuration File Options (docs/v2.2/reference/configuration-options)",
    options: &[
        "bind_ip",
        "syncdelay",
        "nojournal",
        "journalCommitInterval",
        "smallfiles",
        "directoryperdb",
        "replSet",
    ],
};
const V24: Documented = Documented {
    page: "MongoDB 2.4 Manual, Configuration File Options (docs/v2.4/reference/configuration-options)",
    options: V22.options,
};
const V26: Documented = Documented {
    page: "MongoDB 2.6 Manual, Configuration File Options (docs/v2.6/reference/configuration-options)",
    options: &[
        "net.bindIp",
        "storage.syncPeriodSecs",
        "storage.directoryPerDB",
        "storage.smallFiles",
        "storage.journal.enabled",
        "storage.journal.commitIntervalMs",
        "replication.replSetName",
    ],
};
/// 3.0: the storage engines arrive; MMAPv1's options move under
/// `storage.mmapv1`, its journal interval too (there is none for
/// WiredTiger in 3.0).
const V30: Documented = Documented {
    page: "MongoDB 3.0 Manual, Configuration File Options (docs/v3.0/reference/configuration-options)",
    options: &[
        "net.bindIp",
        "storage.engine",
        "storage.syncPeriodSecs",
        "storage.directoryPerDB",
        "storage.journal.enabled",
        "storage.mmapv1.smallFiles",
        "storage.mmapv1.journal.commitIntervalMs",
        "storage.wiredTiger.engineConfig.cacheSizeGB",
        "storage.wiredTiger.engineConfig.configString",
        "storage.wiredTiger.collectionConfig.blockCompressor",
        "storage.wiredTiger.indexConfig.prefixCompression",
        "replication.replSetName",
        "sharding.clusterRole",
    ],
};
/// 3.2 to 4.0: `storage.journal.commitIntervalMs` for both engines.
const V32_40: Documented = Documented {
    page: "MongoDB 3.2 to 4.0 Manuals, Configuration File Options (docs/v3.2 ... docs/v4.0/reference/configuration-options)",
    options: &[
        "net.bindIp",
        "storage.engine",
        "storage.syncPeriodSecs",
        "storage.directoryPerDB",
        "storage.journal.enabled",
        "storage.journal.commitIntervalMs",
        "storage.mmapv1.smallFiles",
        "storage.wiredTiger.engineConfig.cacheSizeGB",
        "storage.wiredTiger.engineConfig.configString",
        "storage.wiredTiger.collectionConfig.blockCompressor",
        "storage.wiredTiger.indexConfig.prefixCompression",
        "replication.replSetName",
        "sharding.clusterRole",
    ],
};
/// 4.2 to 6.0: MMAPv1 is gone.
const V42_60: Documented = Documented {
    page: "MongoDB 4.2 to 6.0 Manuals, Configuration File Options (docs/v4.2 ... docs/v6.0/reference/configuration-options)",
    options: &[
        "net.bindIp",
        "storage.engine",
        "storage.syncPeriodSecs",
        "storage.directoryPerDB",
        "storage.journal.enabled",
        "storage.journal.commitIntervalMs",
        "storage.wiredTiger.engineConfig.cacheSizeGB",
        "storage.wiredTiger.engineConfig.configString",
        "storage.wiredTiger.collectionConfig.blockCompressor",
        "storage.wiredTiger.indexConfig.prefixCompression",
        "replication.replSetName",
        "sharding.clusterRole",
    ],
};
/// 6.1 on (7.0, 8.0): the journal is always on, `storage.journal.enabled`
/// is gone.
const V70_80: Documented = Documented {
    page: "MongoDB 7.0 and 8.0 Manuals, Configuration File Options (docs/v7.0, docs/v8.0/reference/configuration-options)",
    options: &[
        "net.bindIp",
        "storage.engine",
        "storage.syncPeriodSecs",
        "storage.directoryPerDB",
        "storage.journal.commitIntervalMs",
        "storage.wiredTiger.engineConfig.cacheSizeGB",
        "storage.wiredTiger.engineConfig.configString",
        "storage.wiredTiger.collectionConfig.blockCompressor",
        "storage.wiredTiger.indexConfig.prefixCompression",
        "replication.replSetName",
        "sharding.clusterRole",
    ],
};
const TOKUMX: Documented = Documented {
    page: "TokuMX 1.4 to 2.0 Users Guide, server parameters (cacheSize, checkpointPeriod, cleanerIterations, cleanerPeriod, directio) and the MongoDB 2.4 options it keeps",
    options: &[
        "bind_ip",
        "cacheSize",
        "syncdelay",
        "checkpointPeriod",
        "cleanerIterations",
        "cleanerPeriod",
        "directio",
        "setParameter",
    ],
};
const PERCONAFT: Documented = Documented {
    page: "Percona Server for MongoDB 3.0/3.2 Documentation, PerconaFT storage engine options (storage.PerconaFT.*)",
    options: &[
        "net.bindIp",
        "storage.engine",
        "storage.syncPeriodSecs",
        "storage.journal.enabled",
        "storage.PerconaFT.engineOptions.cacheSize",
        "storage.PerconaFT.engineOptions.directio",
        "storage.PerconaFT.collectionOptions.compression",
        "storage.PerconaFT.indexOptions.compression",
    ],
};

/// MMAPv1's own knobs where the version has them.
const MMAP: &[&str] = &[
    "sync_period=1s",
    "small_files=true",
    "directory_per_db=true",
    "journal_commit_interval=50ms",
];
const MMAP_NOJOURNAL: &[&str] = &[
    "sync_period=1s",
    "small_files=true",
    "directory_per_db=true",
    "journal=false",
];
const WT: &[&str] = &[
    "sync_period=1s",
    "storage_engine=wiredTiger",
    "directory_per_db=true",
    "journal_commit_interval=50ms",
];
/// 3.0 has no journal interval for WiredTiger.
const WT30: &[&str] = &[
    "sync_period=1s",
    "storage_engine=wiredTiger",
    "directory_per_db=true",
];
const MMAP_SET: &[&str] = &[
    "sync_period=1s",
    "storage_engine=mmapv1",
    "small_files=true",
    "directory_per_db=true",
    "journal_commit_interval=50ms",
];

/// Golden folder, engine@version, storage engine, knobs, format, options.
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    Format,
    &'static Documented,
);

const ERAS: &[Row] = &[
    (
        "mongodb-2.2-mmapv1",
        "mongodb@2.2",
        "mmapv1",
        MMAP,
        Format::Ini,
        &V22,
    ),
    (
        "mongodb-2.2.3-mmapv1",
        "mongodb@2.2.3",
        "mmapv1",
        MMAP,
        Format::Ini,
        &V22,
    ),
    (
        "mongodb-2.4-mmapv1",
        "mongodb@2.4",
        "mmapv1",
        MMAP_NOJOURNAL,
        Format::Ini,
        &V24,
    ),
    (
        "mongodb-2.6-mmapv1",
        "mongodb@2.6",
        "mmapv1",
        MMAP,
        Format::Yaml,
        &V26,
    ),
    (
        "mongodb-3.0-mmapv1",
        "mongodb@3.0",
        "mmapv1",
        MMAP,
        Format::Yaml,
        &V30,
    ),
    (
        "mongodb-3.0-wiredtiger",
        "mongodb@3.0",
        "wiredTiger",
        WT30,
        Format::Yaml,
        &V30,
    ),
    (
        "mongodb-3.2-mmapv1",
        "mongodb@3.2",
        "mmapv1",
        MMAP_SET,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-3.2-wiredtiger",
        "mongodb@3.2",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-3.2.6-mmapv1",
        "mongodb@3.2.6",
        "mmapv1",
        MMAP_SET,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-3.2.6-wiredtiger",
        "mongodb@3.2.6",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-3.4-mmapv1",
        "mongodb@3.4",
        "mmapv1",
        MMAP_SET,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-3.4-wiredtiger",
        "mongodb@3.4",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-3.6-mmapv1",
        "mongodb@3.6",
        "mmapv1",
        MMAP_SET,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-3.6-wiredtiger",
        "mongodb@3.6",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-4.0-mmapv1",
        "mongodb@4.0",
        "mmapv1",
        MMAP_SET,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-4.0-wiredtiger",
        "mongodb@4.0",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V32_40,
    ),
    (
        "mongodb-4.2-wiredtiger",
        "mongodb@4.2",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V42_60,
    ),
    (
        "mongodb-4.4-wiredtiger",
        "mongodb@4.4",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V42_60,
    ),
    (
        "mongodb-5.0-wiredtiger",
        "mongodb@5.0",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V42_60,
    ),
    (
        "mongodb-6.0-wiredtiger",
        "mongodb@6.0",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V42_60,
    ),
    (
        "mongodb-7.0-wiredtiger",
        "mongodb@7.0",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V70_80,
    ),
    (
        "mongodb-8.0-wiredtiger",
        "mongodb@8.0",
        "wiredTiger",
        WT,
        Format::Yaml,
        &V70_80,
    ),
    (
        "tokumx-1.4",
        "tokumx@1.4",
        "fractal tree",
        &["sync_period=5s"],
        Format::Ini,
        &TOKUMX,
    ),
    (
        "tokumx-1.5",
        "tokumx@1.5",
        "fractal tree",
        &["sync_period=5s"],
        Format::Ini,
        &TOKUMX,
    ),
    (
        "tokumx-2.0.2",
        "tokumx@2.0.2",
        "fractal tree",
        &[
            "sync_period=5s",
            "checkpoint_period=10s",
            "cleaner_iterations=10",
            "cleaner_period=2s",
            "direct_io=false",
            "compression=zlib",
        ],
        Format::Ini,
        &TOKUMX,
    ),
    (
        "psmdb-3.0-perconaft",
        "psmdb@3.0",
        "PerconaFT",
        &["compression=zlib", "direct_io=true"],
        Format::Yaml,
        &PERCONAFT,
    ),
    (
        "psmdb-3.2-perconaft",
        "psmdb@3.2",
        "PerconaFT",
        &["compression=zlib", "direct_io=true"],
        Format::Yaml,
        &PERCONAFT,
    ),
];

/// The options a rendered file sets: INI names, or YAML leaf paths
/// (`storage.wiredTiger.engineConfig.cacheSizeGB`); comments skipped.
fn options_of(text: &str, format: Format) -> Vec<String> {
    let mut out = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match format {
            Format::Ini => {
                let (name, _) = line
                    .split_once(" = ")
                    .unwrap_or_else(|| panic!("not a `name = value` line: {line:?}"));
                out.push(name.to_string());
            }
            Format::Yaml => {
                assert!(!line.contains(" = "), "not a YAML line: {line:?}");
                let indent = line.len() - line.trim_start().len();
                let (key, value) = trimmed
                    .split_once(':')
                    .unwrap_or_else(|| panic!("not a YAML mapping line: {line:?}"));
                path.retain(|(i, _)| *i < indent);
                path.push((indent, key.to_string()));
                if !value.trim().is_empty() {
                    let full: Vec<&str> = path.iter().map(|(_, k)| k.as_str()).collect();
                    out.push(full.join("."));
                }
            }
        }
    }
    out
}

fn render(engine: &str, sets: &[&str]) -> (String, tempfile::TempDir) {
    let t = tempfile::tempdir().unwrap();
    let o = render_to(engine, "c4-16g", sets, t.path());
    assert_eq!(o.code, 0, "{engine} {sets:?}: {}", o.stderr);
    let file = o
        .stdout
        .lines()
        .next()
        .expect("render prints the file it wrote");
    (std::fs::read_to_string(file).unwrap(), t)
}

#[test]
fn every_mongodb_tokumx_and_perconaft_version_renders_its_golden_config_with_only_documented_options()
 {
    let bless = std::env::var_os("BLESS").is_some();
    let mut failures = Vec::new();
    for (dir, engine, storage, sets, format, doc) in ERAS {
        let (got, _t) = render(engine, sets);
        let golden = repo().join("tests/golden/eras").join(dir);
        let name = if engine.starts_with("tokumx") {
            "tokumx.conf"
        } else {
            "mongod.conf"
        };
        if bless {
            std::fs::create_dir_all(&golden).unwrap();
            std::fs::write(golden.join(name), &got).unwrap();
        }
        let want = std::fs::read_to_string(golden.join(name)).unwrap_or_default();
        if got != want {
            failures.push(format!("{dir}:\n--- want\n{want}\n--- got\n{got}"));
        }
        let documented: BTreeSet<&str> = doc.options.iter().copied().collect();
        let options = options_of(&got, *format);
        for o in &options {
            if !documented.contains(o.as_str()) {
                failures.push(format!(
                    "{dir}: `{o}` is not among the options of {}",
                    doc.page
                ));
            }
        }
        // The storage engine the row names is the one the file runs.
        let names_engine = match (*format, *storage) {
            (Format::Ini, _) => true,
            (Format::Yaml, "mmapv1") if engine.ends_with("@2.6") => !got.contains("engine:"),
            (Format::Yaml, s) => got.contains(&format!("  engine: {s}\n")),
        };
        if !names_engine {
            failures.push(format!("{dir}: the file does not run {storage}:\n{got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn each_version_writes_the_option_names_and_values_of_its_own_documentation() {
    let g = |dir: &str, name: &str| {
        std::fs::read_to_string(repo().join("tests/golden/eras").join(dir).join(name)).unwrap()
    };
    // Before 2.6: key = value, syncdelay, nojournal (a `journal = false`
    // line would be skipped by the 2.4 parser), smallfiles, directoryperdb.
    let m24 = g("mongodb-2.4-mmapv1", "mongod.conf");
    for want in [
        "syncdelay = 1\n",
        "nojournal = true\n",
        "smallfiles = true\n",
        "directoryperdb = true\n",
    ] {
        assert!(m24.contains(want), "{want:?} not in\n{m24}");
    }
    let m22 = g("mongodb-2.2-mmapv1", "mongod.conf");
    assert!(
        m22.contains("journalCommitInterval = 50\n") && !m22.contains("nojournal ="),
        "{m22}"
    );
    // 2.6: YAML, but no storage engines yet, smallFiles at storage's top.
    let m26 = g("mongodb-2.6-mmapv1", "mongod.conf");
    assert!(
        m26.contains("  smallFiles: true\n") && m26.contains("  syncPeriodSecs: 1\n"),
        "{m26}"
    );
    assert!(
        !m26.contains("engine:") && !m26.contains("wiredTiger"),
        "{m26}"
    );
    // 3.0: MMAPv1 the default, its options under storage.mmapv1, the
    // journal interval there too; WiredTiger's cache in whole GiB.
    let m30 = g("mongodb-3.0-mmapv1", "mongod.conf");
    assert!(
        m30.contains("  engine: mmapv1\n  syncPeriodSecs: 1\n"),
        "{m30}"
    );
    assert!(
        m30.contains("  mmapv1:\n    smallFiles: true\n    journal:\n      commitIntervalMs: 50\n"),
        "{m30}"
    );
    assert!(
        !m30.contains("cacheSizeGB"),
        "MMAPv1 has no cache of its own:\n{m30}"
    );
    let w30 = g("mongodb-3.0-wiredtiger", "mongod.conf");
    assert!(
        w30.contains("      cacheSizeGB: 12\n") && !w30.contains("commitIntervalMs"),
        "{w30}"
    );
    // 3.2 to 4.0: the journal interval at storage.journal for both.
    let m40 = g("mongodb-4.0-mmapv1", "mongod.conf");
    assert!(
        m40.contains("    commitIntervalMs: 50\n  mmapv1:\n    smallFiles: true\n"),
        "{m40}"
    );
    // 7.0 on: no storage.journal.enabled, the interval stays.
    let w70 = g("mongodb-7.0-wiredtiger", "mongod.conf");
    assert!(
        w70.contains("  journal:\n    commitIntervalMs: 50\n") && !w70.contains("enabled"),
        "{w70}"
    );
    // PerconaFT: its cache in bytes, compression for collections and indexes.
    let p30 = g("psmdb-3.0-perconaft", "mongod.conf");
    assert!(
        p30.contains("  engine: PerconaFT\n") && p30.contains("      cacheSize: 12884901888\n"),
        "{p30}"
    );
}

fn plan(args: &[&str]) -> Out {
    let mut c = bc_home(&repo());
    c.env("BENCHCAGE_WORK_FREE", "64TiB");
    Out::of(&c.arg("plan").args(args).output().unwrap())
}

#[test]
fn a_knob_or_value_a_version_lacks_is_refused_by_plan_naming_the_version() {
    for (engine, set, want) in [
        (
            "mongodb@2.6",
            "storage_engine=wiredTiger",
            "mongodb@2.6 does not take storage_engine `wiredTiger` (from 3.0 on)",
        ),
        (
            "mongodb@4.2",
            "storage_engine=mmapv1",
            "mongodb@4.2 does not take storage_engine `mmapv1` (before 4.2 only)",
        ),
        (
            "mongodb@2.4",
            "compression=zlib",
            "mongodb@2.4 has no knob `compression` unless storage_engine is wiredTiger",
        ),
        (
            "mongodb@3.2",
            "small_files=true",
            "mongodb@3.2 has no knob `small_files` unless storage_engine is mmapv1",
        ),
        (
            "mongodb@7.0",
            "journal=false",
            "mongodb@7.0 has no knob `journal` (it is before 6.1 only)",
        ),
        (
            "mongodb@3.0",
            "cache_size=2GiB",
            "mongodb@3.0 has no knob `cache_size` unless storage_engine is wiredTiger",
        ),
    ] {
        let t = tempfile::tempdir().unwrap();
        let o = render_to(engine, "c4-16g", &[set], t.path());
        assert_eq!(o.code, 2, "{engine} {set}: {}", o.stdout);
        assert!(o.stderr.contains(want), "{engine} {set}: {}", o.stderr);
        assert!(
            std::fs::read_dir(t.path()).unwrap().next().is_none(),
            "render wrote files"
        );
    }
    // Through plan of a shipped scenario: 4.0 takes MMAPv1, 4.2 and 4.4 not.
    let o = plan(&[
        "scenarios/004-tpcc-mongodb.yaml",
        "--set",
        "storage_engine=mmapv1",
    ]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr
            .contains("mongodb@4.2 does not take storage_engine `mmapv1`"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr
            .contains("mongodb@4.4 does not take storage_engine `mmapv1`"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("mongodb@4.0 does not"), "{}", o.stderr);
}

/// A scenario in a temp folder over the shipped engines and environments.
fn scenario(text: &str) -> (tempfile::TempDir, String) {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("era.yaml");
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap().to_string();
    (t, p)
}

const MONGODB_40: &str = "description: era\nmatrix:\n  engines: [mongodb@4.0]\n  environments: [{name: c4-16g, scale: 0.125, set: {backend: docker, server.cpus: \"1\", client.cpus: \"0\"}}]\ndataset: {records: 1000}\nload: {threads: 1}\nphases:\n  - {name: a, builtin: {workload: a}, threads: 1, duration: 5s}\n";

#[test]
fn an_mmapv1_cell_plans_the_page_cache_under_its_cap_as_its_cache() {
    let (_t, s) = scenario(MONGODB_40);
    let o = plan(&[&s, "--set", "storage_engine=mmapv1", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let cell = &v["cells"][0];
    let from = cell["cache_from"].as_str().unwrap_or_default();
    assert_eq!(
        from, "the page cache under the 2GiB cap: mongodb@4.0 (mmapv1) has no cache of its own",
        "{cell}"
    );
    assert!(
        cell["knobs"].get("cache_size").is_none(),
        "{}",
        cell["knobs"]
    );
    assert!(
        cell.get("cache_resize").is_none(),
        "MMAPv1 has no cache to resize: {cell}"
    );
    let text = plan(&[&s, "--set", "storage_engine=mmapv1"]);
    assert!(
        text.stdout
            .contains("memory    cap 2GiB, swap off, cache the page cache under the 2GiB cap"),
        "{}",
        text.stdout
    );
    // The same version on WiredTiger keeps its cache and its resize.
    let o = plan(&[&s, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert!(v["cells"][0].get("cache_from").is_none());
    assert_eq!(v["cells"][0]["knobs"]["cache_size"], "1536MiB");
    assert!(v["cells"][0].get("cache_resize").is_some());
}

/// The deviations of `plan --json`, as (kind, text).
fn deviations(args: &[&str]) -> Vec<(String, String)> {
    let o = plan(&[args, &["--json"]].concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    v["reproduces"]["deviations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap().to_string(),
                d["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_storage_engine_change_is_its_own_deviation_apart_from_the_version() {
    // Write-up 002 ran MongoDB 2.2.3 (MMAPv1); 3.2 plays it with WiredTiger.
    let d = deviations(&["scenarios/002-sysbench-mongo-here.yaml"]);
    let of = |kind: &str| -> Vec<&str> {
        d.iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, t)| t.as_str())
            .collect()
    };
    assert_eq!(
        of("storage-engine"),
        ["mongodb@3.2: WiredTiger instead of MMAPv1"],
        "{d:?}"
    );
    assert!(
        of("version").contains(&"mongodb@3.2 instead of MongoDB 2.2.3 (mongodb@2.2.3)"),
        "{d:?}"
    );
    // The same version with the engine the write-up did not run: no
    // version deviation, only the storage engine.
    let (_t, s) = scenario(&format!(
        "{}reproduces:\n  writeup: \"001\"\n  title: t\n  engines:\n    - {{name: MongoDB 3.0 with WiredTiger, engine: mongodb@3.0, knobs: {{storage_engine: wiredTiger}}}}\n    - {{name: TokuMXse, here: [psmdb@3.0]}}\n",
        MONGODB_40
            .replace("[mongodb@4.0]", "[mongodb@3.0, psmdb@3.0]")
            .replace("scale: 0.125", "scale: 0.25")
    ));
    let d = deviations(&[&s, "--set", "host.transparent_hugepages=off"]);
    let kinds: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
    assert!(!kinds.contains(&"version"), "{d:?}");
    assert!(
        d.contains(&(
            "storage-engine".into(),
            "mongodb@3.0: MMAPv1 instead of WiredTiger".into()
        )),
        "{d:?}"
    );
    assert!(
        !d.iter()
            .any(|(k, t)| k == "differs" && t.contains("storage_engine")),
        "named twice: {d:?}"
    );
    // PerconaFT plays TokuMXse: a deviation of its own too.
    assert!(
        d.contains(&("engine".into(), "psmdb@3.0 instead of TokuMXse".into())),
        "{d:?}"
    );
    let (_t2, s) = scenario(&s_with_published_wt());
    let d = deviations(&[&s]);
    assert!(!d.iter().any(|(k, _)| k == "storage-engine"), "{d:?}");
}

/// MongoDB 3.0 set to WiredTiger, as the write-up ran it: no deviation.
fn s_with_published_wt() -> String {
    format!(
        "{}knobs: {{storage_engine: wiredTiger}}\nreproduces:\n  writeup: \"001\"\n  title: t\n  engines:\n    - {{name: MongoDB 3.0 with WiredTiger, engine: mongodb@3.0, knobs: {{storage_engine: wiredTiger}}}}\n",
        MONGODB_40
            .replace("[mongodb@4.0]", "[mongodb@3.0]")
            .replace("scale: 0.125", "scale: 0.25")
    )
}

const DEFAULT_CACHE: &str = "description: out of the box\nmatrix:\n  engines: [mongodb@3.2.6, mongodb@4.4, mongodb@2.6]\n  environments: [{name: c4-16g, scale: 0.125, set: {backend: docker, server.cpus: \"1\", client.cpus: \"0\", cache: default}}]\ndataset: {records: 1000}\nload: {threads: 1}\nphases:\n  - {name: a, builtin: {workload: a}, threads: 1, duration: 5s}\n";

#[test]
fn cache_default_leaves_the_cache_to_the_engine_and_plan_shows_what_each_version_takes() {
    let (_t, s) = scenario(DEFAULT_CACHE);
    let o = plan(&[&s, "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let cells = v["cells"].as_array().unwrap();
    let cell = |label: &str| {
        cells
            .iter()
            .find(|c| c["id"].as_str().unwrap().starts_with(label))
            .unwrap()
    };
    // 3.2 sizes from the host's RAM (60% of it less 1 GiB), not the cap:
    // far more than the 2 GiB cap, as "out of the box" in a container was.
    let c32 = cell("mongodb@3.2.6/");
    let from = c32["cache_from"].as_str().unwrap();
    assert!(from.contains("60% of RAM - 1GiB, at least 1GiB"), "{from}");
    assert!(
        from.contains("it does not read the 2GiB cap") && from.contains("more than the 2GiB cap"),
        "{from}"
    );
    assert!(
        from.contains("MongoDB 3.2 Manual"),
        "the rule names its source: {from}"
    );
    assert!(c32["knobs"].get("cache_size").is_none());
    let conf = c32["configs"][0]["content"].as_str().unwrap();
    assert!(
        !conf.contains("cacheSizeGB") && !conf.contains("engineConfig"),
        "{conf}"
    );
    // 4.4 reads the cgroup limit: 50% of (2 GiB - 1 GiB).
    let c44 = cell("mongodb@4.4/");
    assert_eq!(c44["cache"], "512MiB", "{c44}");
    assert!(
        c44["cache_from"]
            .as_str()
            .unwrap()
            .contains("of the 2GiB cap (it reads the cgroup limit)")
    );
    // MMAPv1 has none: the page cache.
    let c26 = cell("mongodb@2.6/");
    assert!(
        c26["cache_from"]
            .as_str()
            .unwrap()
            .starts_with("the page cache under the 2GiB cap")
    );
    // An engine whose spec documents no default is refused, naming where.
    let (_t2, pg) = scenario(
        &DEFAULT_CACHE
            .replace("[mongodb@3.2.6, mongodb@4.4, mongodb@2.6]", "[postgres]")
            .replace("backend: docker, ", ""),
    );
    let o = plan(&[&pg]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(o.stderr.contains("`cache: default` leaves the cache to the engine, but engines/postgres.yaml documents no default cache"), "{}", o.stderr);
}
