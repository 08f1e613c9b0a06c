//! Every write-up's faithful scenario and its `-here` twin plan at scale 1
//! on a host of the write-up's size (`support::plans::big_host`), and the
//! deviations plan lists are exactly the expected ones: those the
//! write-up's own missing pieces force, the one CPU each server gets on
//! this repository's 2-CPU test host (gone without those sets, see
//! `faithful_plan`), and for `-here` the stand-ins.

mod support;

use benchcage::plan::plan_on;
use benchcage::spec::Project;
use support::cli::repo;

/// (kind, text) of every deviation of `scenario` from its write-up.
/// The deviations as `(kind, text)` slices to compare with a literal
/// list; without the values the scenario chose unless `chosen`.
fn as_strs(got: &[(String, String)], chosen: bool) -> Vec<(&str, &str)> {
    got.iter()
        .filter(|(k, _)| chosen || k != "chosen")
        .map(|(k, t)| (k.as_str(), t.as_str()))
        .collect()
}

fn deviations(scenario: &str, sets: &[(&str, &str)]) -> Vec<(String, String)> {
    let project = Project::load(&repo()).unwrap();
    let s = project
        .find_scenario(&format!("scenarios/{scenario}.yaml"))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let plan = plan_on(&project, &s, &sets, None, None, &support::plans::big_host())
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let r = plan.reproduces.expect("a write-up scenario");
    let mut out: Vec<(String, String)> = r
        .deviations
        .iter()
        .map(|d| (d.kind.to_string(), d.text.clone()))
        .collect();
    out.sort();
    out
}

#[test]
fn write_up_000_tokumx_reality_plans_with_exactly_the_expected_deviations() {
    let got = deviations("000-tokumx-reality", &[]);
    let got = as_strs(&got, true);
    // every deviation, sorted.
    assert_eq!(
        got,
        [
            (
                "chosen",
                "by-ticker, interval, day: threads 1 chosen by the scenario (the write-up does not give them)"
            ),
            (
                "chosen",
                "day: runs 10 operations, chosen by the scenario (the write-up does not say)"
            ),
            (
                "chosen",
                "fields per record: 1 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "interval: runs 100 operations, chosen by the scenario (the write-up does not say)"
            ),
            (
                "chosen",
                "load: batch 1000 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "load: threads 1 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "vm-1g mongodb@2.6: cache 1GiB chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "vm-1g tokumx@1.5, vm-256m tokumx@1.5, vm-4cpu tokumx@1.5: cache 256GiB chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "vm-1g tokumx@1.5-directio: cache 768MiB chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "vm-256m mongodb@2.6: cache 256MiB chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "vm-256m: memory cap 256MiB chosen (the write-up does not say)"
            ),
            (
                "differs",
                "vm-1g, vm-256m: 1 server CPUs instead of the write-up's 2"
            ),
            (
                "differs",
                "vm-4cpu: 1 server CPUs instead of the write-up's 4"
            ),
            (
                "omitted",
                "not run here: the CPU load during the inserts is in each cell's samples, not compared"
            ),
            (
                "tool",
                "load, by-ticker, interval, day: benchcage's built-in candles workload instead of the author's own test scripts (unpublished)"
            ),
        ],
        "{got:#?}"
    );
}

#[test]
fn write_up_000_tokumx_reality_here_plans_with_exactly_the_expected_deviations() {
    let got = deviations("000-tokumx-reality-here", &[]);
    let got = as_strs(&got, false);
    // every deviation but the values the scenario chose, sorted.
    assert_eq!(
        got,
        [
            (
                "differs",
                "vm-1g: 1 server CPUs instead of the write-up's 2"
            ),
            (
                "engine",
                "secantusdb@0.7 instead of MongoDB out of the box (mongodb)"
            ),
            (
                "missing",
                "TokuMX with direct IO and the cache size its manual recommends (tokumx) is not in the matrix"
            ),
            (
                "omitted",
                "not run here: TokuMX on 4 vCPUs against MongoDB on 2"
            ),
            (
                "omitted",
                "not run here: the CPU load during the inserts is in each cell's samples, not compared"
            ),
            (
                "omitted",
                "not run here: the second round with the RAM cut below the data size (--set server.memory=256MiB runs it)"
            ),
            (
                "tool",
                "load, by-ticker, interval, day: benchcage's built-in candles workload instead of the author's own test scripts (unpublished)"
            ),
        ],
        "{got:#?}"
    );
}

#[test]
fn write_up_001_mongodb_to_tokumx_plans_with_exactly_the_expected_deviations() {
    let got = deviations("001-mongodb-to-tokumx", &[]);
    let got = as_strs(&got, true);
    // every deviation, sorted.
    assert_eq!(
        got,
        [
            (
                "chosen",
                "bytes per field: 100 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "fields per record: 1 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "load, select-and-update: benchcage's built-in YCSB workloads chosen by the scenario (the write-up does not name its tool)"
            ),
            (
                "chosen",
                "load: batch 100 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "load: threads 4 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "select-and-update: threads 8 chosen by the scenario (the write-up does not give them)"
            ),
            (
                "chosen",
                "tiny-128m mongodb@2.6, tiny-128m mongodb@3.0: cache 128MiB chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "tiny-128m tokumx@1.5, tiny-128m psmdb@3.0: cache 48MiB chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "tiny-128m, tiny-128m-overcommit: 1 server CPUs chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "tiny-128m-overcommit mongodb@3.0-wiredtiger: cache 1GiB chosen (the write-up does not say)"
            ),
            ("engine", "psmdb@3.0 instead of TokuMXse"),
            (
                "omitted",
                "not run here: the production latencies after the migration (psvc-write), which are not a benchmark"
            ),
        ],
        "{got:#?}"
    );
}

#[test]
fn write_up_001_mongodb_to_tokumx_here_plans_with_exactly_the_expected_deviations() {
    let got = deviations("001-mongodb-to-tokumx-here", &[]);
    let got = as_strs(&got, false);
    // every deviation but the values the scenario chose, sorted.
    assert_eq!(
        got,
        [
            (
                "engine",
                "mariadb@10.11 instead of MongoDB 2.6 (mongodb@2.6)"
            ),
            (
                "engine",
                "myrocks@10.11 instead of TokuMX with compression off (tokumx)"
            ),
            ("missing", "MongoDB 3.0 (mongodb@3.0) is not in the matrix"),
            (
                "missing",
                "MongoDB 3.0 with WiredTiger (mongodb@3.0) is not in the matrix"
            ),
            ("missing", "TokuMXse is not in the matrix"),
            (
                "omitted",
                "not run here: the production latencies after the migration (psvc-write), which are not a benchmark"
            ),
            (
                "scaled",
                "tiny-128m: memory cap 256MiB instead of the write-up's 128MiB (grown with scale 2)"
            ),
            (
                "scaled",
                "tiny-128m: records 4000000 instead of the write-up's 2000000 (grown with scale 2)"
            ),
        ],
        "{got:#?}"
    );
}

#[test]
fn write_up_002_sysbench_mongo_plans_with_exactly_the_expected_deviations() {
    let got = deviations("002-sysbench-mongo", &[]);
    let got = as_strs(&got, true);
    // every deviation, sorted.
    assert_eq!(
        got,
        [
            (
                "chosen",
                "bytes per field: 100 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "fields per record: 10 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "hog-16g mongodb@2.2.3: cache 16GiB chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "hog-16g tokumx@1.4: cache 8GiB chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "hog-16g: 1 server CPUs chosen (the write-up does not say)"
            ),
            (
                "chosen",
                "hog-16g: records 16000000 chosen by the scenario (the write-up does not give it)"
            ),
            (
                "chosen",
                "sysbench-mongo: runs for 1m, chosen by the scenario (the write-up does not say)"
            ),
            (
                "chosen",
                "sysbench-mongo: warmup 10s chosen by the scenario (the write-up does not say)"
            ),
            (
                "missing",
                "MongoDB with Fractal Tree Indexes v0.0.2 (tokumx@0.0.2) is not in the matrix"
            ),
            (
                "tool",
                "load, sysbench-mongo: benchcage's built-in sysbench-mongo (sysbench-mongodb's transaction) instead of sysbench-mongodb (the author's Java port of sysbench for MongoDB)"
            ),
            (
                "version",
                "tokumx@1.4 instead of MongoDB with Fractal Tree Indexes v0.1.0 (tokumx@0.1.0)"
            ),
        ],
        "{got:#?}"
    );
}

#[test]
fn write_up_002_sysbench_mongo_here_plans_with_exactly_the_expected_deviations() {
    let got = deviations("002-sysbench-mongo-here", &[]);
    let got = as_strs(&got, false);
    // every deviation but the values the scenario chose, sorted.
    assert_eq!(
        got,
        [
            (
                "missing",
                "MongoDB with Fractal Tree Indexes v0.0.2 (tokumx@0.0.2) is not in the matrix"
            ),
            (
                "scaled",
                "hog-16g: the hog leaves 8GiB instead of the write-up's 16GiB (shrunk with scale 0.5)"
            ),
            (
                "storage-engine",
                "mongodb@3.2: WiredTiger instead of MMAPv1"
            ),
            (
                "tool",
                "load, sysbench-mongo: benchcage's built-in sysbench-mongo (sysbench-mongodb's transaction) instead of sysbench-mongodb (the author's Java port of sysbench for MongoDB)"
            ),
            (
                "version",
                "mongodb@3.2 instead of MongoDB 2.2.3 (mongodb@2.2.3)"
            ),
            (
                "version",
                "tokumx@1.5 instead of MongoDB with Fractal Tree Indexes v0.1.0 (tokumx@0.1.0)"
            ),
        ],
        "{got:#?}"
    );
}

/// `benchcage plan` of write-up 001's faithful scenario on a host of its
/// size, `--only` some cells.
fn plan_001(sets: &[(&str, &str)], only: &str) -> Result<benchcage::plan::Plan, String> {
    let project = Project::load(&repo()).unwrap();
    let s = project
        .find_scenario("scenarios/001-mongodb-to-tokumx.yaml")
        .unwrap();
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    plan_on(
        &project,
        &s,
        &sets,
        None,
        Some(only),
        &support::plans::big_host(),
    )
    .map_err(|e| e.to_string())
}

#[test]
fn write_up_001s_128_mb_server_plans_tokumx_and_perconaft_with_their_own_versions_overhead() {
    for only in ["tokumx@1.5", "psmdb@3.0"] {
        let plan = plan_001(&[], only).unwrap_or_else(|e| panic!("{only}: {e}"));
        assert_eq!(plan.cells.len(), 1, "{only}");
        let c = &plan.cells[0];
        assert_eq!(c.limits.memory.0, 128 << 20, "{only}");
        assert_eq!(c.cache.0, 48 << 20, "{only}");
    }
}

#[test]
fn a_cache_the_versions_overhead_does_not_leave_room_for_is_refused_with_the_figure_and_its_source()
{
    // A 100MiB server: TokuMX 1.5's 48MiB cache and its 64MiB overhead
    // do not fit.
    let e = plan_001(&[("server.memory", "100MiB")], "tokumx@1.5").unwrap_err();
    assert!(
        e.contains("tokumx@1.5: cache 48MiB + engine overhead 64MiB (estimate from the TokuMX 1.5 Users Guide")
            && e.contains("does not fit under the memory cap 100MiB"),
        "{e}"
    );
}

#[test]
fn every_cell_of_a_faithful_tokumx_scenario_turns_transparent_huge_pages_off() {
    use benchcage::model::ThpPolicy;
    let project = Project::load(&repo()).unwrap();
    for name in [
        "000-tokumx-reality",
        "001-mongodb-to-tokumx",
        "002-sysbench-mongo",
    ] {
        let s = project
            .find_scenario(&format!("scenarios/{name}.yaml"))
            .unwrap();
        let plan = plan_on(&project, &s, &[], None, None, &support::plans::big_host()).unwrap();
        assert!(plan.cells.iter().any(|c| c.engine == "tokumx"), "{name}");
        for c in &plan.cells {
            assert_eq!(c.transparent_hugepages, ThpPolicy::Off, "{name} {}", c.id);
        }
    }
}

/// The plan of a faithful scenario as a host of the write-up's size runs
/// it: without the `server.cpus` and `client.cpus` sets that fit it to
/// this repository's 2-CPU test host.
fn faithful_plan(name: &str) -> benchcage::plan::Plan {
    let text = std::fs::read_to_string(repo().join(format!("scenarios/{name}.yaml"))).unwrap();
    let without = text.replace("server.cpus: \"1\", client.cpus: \"0\", ", "");
    assert_ne!(text, without, "{name} fits this host with cpus sets");
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join(format!("{name}.yaml"));
    std::fs::write(&path, without).unwrap();
    let project = Project::load(&repo()).unwrap();
    let s = project.find_scenario(path.to_str().unwrap()).unwrap();
    plan_on(&project, &s, &[], None, None, &support::plans::big_host())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn on_a_host_of_the_write_ups_size_the_faithful_scenarios_keep_its_cpus() {
    for name in [
        "000-tokumx-reality",
        "001-mongodb-to-tokumx",
        "002-sysbench-mongo",
    ] {
        let plan = faithful_plan(name);
        let r = plan.reproduces.unwrap();
        let differs: Vec<&str> = r
            .deviations
            .iter()
            .filter(|d| d.kind.to_string() == "differs")
            .map(|d| d.text.as_str())
            .collect();
        assert!(differs.is_empty(), "{name}: {differs:?}");
    }
}

#[test]
fn write_up_000_puts_tokumx_on_4_vcpus_against_mongodb_on_2_and_nothing_else_there() {
    let plan = faithful_plan("000-tokumx-reality");
    let ids: Vec<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "mongodb@2.6/vm-1g/r0",
            "tokumx@1.5/vm-1g/r0",
            "tokumx@1.5-directio/vm-1g/r0",
            "mongodb@2.6/vm-256m/r0",
            "tokumx@1.5/vm-256m/r0",
            "tokumx@1.5/vm-4cpu/r0",
        ]
    );
    let cpus = |id: &str| {
        let c = plan.cells.iter().find(|c| c.id == id).unwrap();
        c.limits.server_cpus.len()
    };
    assert_eq!(
        (cpus("tokumx@1.5/vm-4cpu/r0"), cpus("mongodb@2.6/vm-1g/r0")),
        (4, 2)
    );
}

/// The disk lines of a write-up scenario's deviations, with `sets`.
fn disk_lines(scenario: &str, sets: &[(&str, &str)]) -> Vec<(String, String)> {
    deviations(scenario, sets)
        .into_iter()
        .filter(|(_, t)| t.contains("disk"))
        .collect()
}

#[test]
fn a_write_ups_disk_is_compared_with_the_cells_data_disk() {
    let differs = |text: &str| vec![("differs".to_string(), text.to_string())];
    // 000's VMs had 20 GB disks, which every cell has: no disk line.
    assert_eq!(disk_lines("000-tokumx-reality", &[]), []);
    // Another size is named, with both figures.
    assert_eq!(
        disk_lines("000-tokumx-reality", &[("server.disk.size", "10GiB")]),
        differs("vm-1g, vm-256m, vm-4cpu: data disk 10GiB instead of the write-up's 20GiB")
    );
    // 003's machines had 300 GB SSDs, which every cell has: no disk line;
    // a cell without one is named.
    assert_eq!(disk_lines("003-mongodb-3.2", &[]), []);
    assert_eq!(
        disk_lines("003-mongodb-3.2", &[("server.disk", "none")]),
        differs(
            "c4-16g, c8-32g: disk: the write-up's machine had 300GiB, this cell's data dir has no size limit (`server.disk.size: 300GiB` gives it one)"
        )
    );
}
