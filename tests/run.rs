//! `benchcage run` end to end on the cgroup backend with real redis-server
//! (and MyRocks for the memory-mapped sweep): results and fidelity,
//! kill-and-resume at several stages, an engine that dies mid-phase, a full
//! results disk, an io-bound claim that is false, major faults that rise as
//! a settle sweep shrinks the cap.
//! Needs root (cgroups, tmpfs). Every test uses its own results, work and
//! ledger folders, and checks that nothing of its runs is left behind.

mod support;

use benchcage::model::{CellStatus, RunStatus};
use benchcage::results::model::{
    CellRecord, FidelityRecord, PhaseResult, PhaseStatus, ResourceSample, RunRecord,
};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::cli::{BIN, assert_success, bc_in, run_dir_of, run_id_of};
use support::files::{cell_dirs, copy_dir, read_json};
use support::host::{
    BUSY_HYPERVISOR, KillOnDrop, host_contention, name_of, run_groups, valid_but_for_a_busy_host,
    valid_but_for_the_hypervisor,
};

const HOME: &str = env!("CARGO_MANIFEST_DIR");

/// Tests of this binary run two at a time (`make test`), and the fidelity
/// check counts every CPU second on the server's CPUs that is not the
/// server's, the other test's runs included. A test that asserts a run was
/// valid (nothing foreign on its CPUs) takes the host alone; the others
/// share it.
static HOST: std::sync::RwLock<()> = std::sync::RwLock::new(());

enum HostTurn {
    Shared(#[allow(dead_code)] std::sync::RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] std::sync::RwLockWriteGuard<'static, ()>),
}

/// Folders of one test: results, engine data, ledgers.
struct Place {
    tmp: tempfile::TempDir,
    /// The project home runs use (the repository unless a test makes one).
    home: PathBuf,
    /// Dropped last: the host is shared or held until the test's folders go.
    _turn: HostTurn,
}

impl Place {
    /// A test that shares the host with the other tests of this binary.
    fn new() -> Place {
        let turn = HostTurn::Shared(HOST.read().unwrap_or_else(|e| e.into_inner()));
        Place::with(turn)
    }
    /// A test whose runs must see no foreign CPU time: the other tests of
    /// this binary wait for it.
    fn alone() -> Place {
        let turn = HostTurn::Alone(HOST.write().unwrap_or_else(|e| e.into_inner()));
        Place::with(turn)
    }
    fn with(turn: HostTurn) -> Place {
        Place {
            tmp: tempfile::Builder::new()
                .prefix("benchcage-run-test-")
                .tempdir()
                .unwrap(),
            home: PathBuf::from(HOME),
            _turn: turn,
        }
    }
    fn results(&self) -> PathBuf {
        self.tmp.path().join("results")
    }
    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }
    fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = bc_in(&self.home, &self.results(), &self.work(), &self.state());
        cmd.arg("run")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Start a run; its stderr lines are collected as they come.
    fn spawn(&self, args: &[&str]) -> Running {
        let mut child = self.command(args).spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        let err = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                l.lock().unwrap().push(line);
            }
        });
        Running {
            child,
            lines,
            reader: Some(reader),
        }
    }

    /// Run to the end.
    fn run(&self, args: &[&str]) -> (ExitStatus, String, String) {
        let out = self.command(args).output().unwrap();
        (
            out.status,
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }

    /// The one run folder under results/.
    fn run_dirs(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.results())
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

struct Running {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Wait for a stderr line containing every part; panics after `secs`.
    fn wait_line(&mut self, parts: &[&str], secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(l) = self
                .lines
                .lock()
                .unwrap()
                .iter()
                .find(|l| parts.iter().all(|p| l.contains(p)))
            {
                return l.clone();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "run ended ({status}) before a line with {parts:?}:\n{}",
                    self.stderr()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no line with {parts:?} in {secs}s:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, sig: nix::sys::signal::Signal) {
        support::host::signal(&self.child, sig);
    }

    fn wait(&mut self, secs: u64) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
                return s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("run did not end in {secs}s:\n{}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stderr(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Nothing of `run_id` is left: no cgroup in any controller, no ledger, no
/// engine process, no data dir, no temp file in the results.
fn assert_clean(place: &Place, run_id: &str) {
    for g in run_groups() {
        assert!(
            !name_of(&g).starts_with(run_id),
            "cgroup left: {}",
            g.display()
        );
    }
    let namespaces = support::clean::namespaces_left(run_id);
    assert!(namespaces.is_empty(), "namespaces left: {namespaces:?}");
    if let Ok(rd) = std::fs::read_dir(place.state()) {
        let left: Vec<_> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with(run_id))
            .collect();
        assert!(left.is_empty(), "ledgers left: {left:?}");
    }
    let work = place.work().join(run_id);
    assert!(!work.exists(), "work dir left: {}", work.display());
    let marker = place.tmp.path().to_string_lossy().to_string();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = p.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        assert!(
            !(cmd.contains(&marker) && cmd.contains(run_id)) || cmd.contains("benchcage run"),
            "process left: {name} {cmd}"
        );
    }
    let mut stack = vec![place.results()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            assert!(
                !n.contains(".tmp."),
                "temp file left: {}",
                e.path().display()
            );
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
}

/// Every phase of the cell ended well and did some operations. A test
/// alone on the host may still lose its CPUs to the hypervisor (steal
/// time on a shared CI machine): that voiding alone is tolerated, and its
/// share is printed so a failing run shows which thief it was.
fn assert_phases_ran(cell: &CellRecord) {
    for p in &cell.phases {
        assert!(
            valid_but_for_the_hypervisor(&p.status) && p.total_ops > 0,
            "{}: {:?} (CPU shares: {:?})",
            p.name,
            p.status,
            cpu_shares(cell)
        );
    }
}

/// Each phase's foreign and stolen share of the server's CPUs.
fn cpu_shares(cell: &CellRecord) -> Vec<(String, Option<f64>, Option<f64>)> {
    cell.fidelity
        .phase_io
        .iter()
        .map(|(k, io)| (k.clone(), io.cpu_foreign_share, io.cpu_steal_share))
        .collect()
}

/// The cell's fidelity holds, but for steal time the hypervisor took.
fn assert_valid_but_for_the_hypervisor(cell: &CellRecord) {
    let rest: Vec<_> = cell
        .fidelity
        .violations
        .iter()
        .filter(|v| !v.contains(BUSY_HYPERVISOR))
        .collect();
    assert!(
        rest.is_empty(),
        "{rest:?} (CPU shares: {:?})",
        cpu_shares(cell)
    );
}

#[test]
fn a_small_scenario_finishes_with_results_and_a_valid_fidelity_record() {
    let place = Place::alone();
    let (status, stdout, stderr) = place.run(&["tests/scenarios/run-small.yaml"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    let dirs = place.run_dirs();
    assert_eq!(dirs.len(), 1);
    assert!(stdout.contains(&dirs[0].display().to_string()), "{stdout}");
    let run: RunRecord = read_json(&dirs[0].join("run.json"));
    assert_eq!(run.status, RunStatus::Finished);
    assert_eq!(run.scenario, "run-small");
    assert_eq!(run.host.cores as usize, num_cpus());
    assert!(!run.benchcage_version.is_empty() && !run.git_rev.is_empty());
    assert!(
        run.spec_hashes
            .keys()
            .any(|k| k.starts_with("engines/redis")),
        "{:?}",
        run.spec_hashes
    );
    let peak = run.benchcage_peak_rss_bytes.unwrap();
    assert!(peak < 50 << 20, "benchcage used {peak} bytes");

    let cells = cell_dirs(&dirs[0]);
    assert_eq!(cells.len(), 1);
    let cell: CellRecord = read_json(&cells[0].join("cell.json"));
    assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
    assert_eq!(run.cells, vec![cell.key.clone()]);
    assert!(
        cell.engine_reported_version.starts_with("7."),
        "{}",
        cell.engine_reported_version
    );
    assert!(cell.data_size_bytes.unwrap() > 0);
    assert_eq!(
        cell.phases
            .iter()
            .map(|p| (p.name.as_str(), p.threads))
            .collect::<Vec<_>>(),
        vec![("load", 2), ("workload-a", 1), ("workload-a", 2)]
    );
    assert_phases_ran(&cell);
    for stage in [
        "provision",
        "start",
        "ready",
        "load",
        "settle",
        "collect",
        "teardown",
    ] {
        assert!(
            cell.stage_s.contains_key(stage),
            "{stage}: {:?}",
            cell.stage_s
        );
    }

    let fid: FidelityRecord = read_json(&cells[0].join("fidelity.json"));
    assert_valid_but_for_the_hypervisor(&cell);
    assert_eq!(fid, cell.fidelity);
    let mem_key = match benchcage::sandbox::cgroupfs::Hierarchy::detect().unwrap() {
        benchcage::sandbox::cgroupfs::Hierarchy::V1 { .. } => "server/memory.limit_in_bytes",
        benchcage::sandbox::cgroupfs::Hierarchy::V2 { .. } => "server/memory.max",
    };
    assert_eq!(
        fid.limits_read_back.get(mem_key),
        Some(&(256u64 << 20).to_string()),
        "{:?}",
        fid.limits_read_back
    );
    assert!(!fid.engine_thread_cpus.is_empty());
    assert!(
        fid.engine_thread_cpus.values().all(|c| c == "1"),
        "{:?}",
        fid.engine_thread_cpus
    );
    assert_eq!((fid.oom_kills, fid.engine_restarts), (0, 0));
    // quickstart: cache 50% of 256MiB, as redis itself reports its maxmemory.
    assert_eq!(fid.engine_reported_cache_bytes, Some(128 << 20));
    assert_eq!(fid.phase_io.len(), 3);

    for (i, name) in ["01-load-t2", "02-workload-a-t1", "03-workload-a-t2"]
        .iter()
        .enumerate()
    {
        let p: PhaseResult = read_json(&cells[0].join("phases").join(format!("{name}.json")));
        assert_eq!(p, cell.phases[i]);
        assert!(cells[0].join("raw").join(format!("{name}.log")).is_file());
    }
    let samples: Vec<ResourceSample> = read_json(&cells[0].join("samples.json"));
    assert!(
        samples
            .iter()
            .any(|s| s.cgroup == "server" && s.memory_bytes > 0)
    );
    assert!(
        samples
            .iter()
            .any(|s| s.cgroup == "client" && s.cpu_usec > 0)
    );
    assert!(samples.iter().any(|s| s.phase.starts_with("workload-a")));
    assert!(cells[0].join("config/redis.conf").is_file());
    assert!(cells[0].join("engine.log").is_file());
    assert_clean(&place, &run.run_id);
    assert!(
        !place.work().exists(),
        "the empty work root was left behind"
    );

    // The same scenario again: a new run whose cell has the same key.
    let (status, stdout, stderr) = place.run(&["tests/scenarios/run-small.yaml"]);
    assert!(status.success(), "{stderr}");
    let dirs = place.run_dirs();
    assert_eq!(dirs.len(), 2);
    let again: RunRecord = read_json(&run_dir_of(&stdout).join("run.json"));
    assert_ne!(again.run_id, run.run_id);
    assert!(again.run_id > run.run_id, "run ids sort by their start");
    assert_eq!(again.cells, run.cells);
}

#[test]
fn a_settle_sweep_runs_one_cell_per_cap_each_capped_at_its_share_of_the_measured_data() {
    let place = Place::alone();
    let (status, stdout, stderr) = place.run(&["tests/scenarios/run-settle-sweep.yaml"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    let dirs = place.run_dirs();
    assert_eq!(dirs.len(), 1);
    let run: RunRecord = read_json(&dirs[0].join("run.json"));
    let cells = cell_dirs(&dirs[0]);
    assert_eq!(cells.len(), 2, "{cells:?}");
    let mut seen = Vec::new();
    for dir in &cells {
        let cell: CellRecord = read_json(&dir.join("cell.json"));
        assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
        let share = match cell.environment.as_str() {
            "quickstart-mem300pct" => 3.0,
            "quickstart-mem600pct" => 6.0,
            other => panic!("unexpected environment {other}"),
        };
        let data = cell.data_size_bytes.unwrap();
        // 30000 x 1000 B of values: redis' own dataset size is at least that.
        assert!(data >= 30_000_000, "data size {data}");
        let cap = cell.memory_limit_bytes.unwrap();
        let want = share * data as f64;
        assert!(
            cap.is_multiple_of(4096) && (cap as f64) <= want && want - (cap as f64) < 4096.0,
            "{}: cap {cap} read back, want {share} x {data} = {want}",
            cell.environment
        );
        assert_eq!(
            cell.fidelity.limits_read_back["server/memory limit after settle"],
            cap.to_string()
        );
        // The record says the cap so a person can read it: a page-rounded
        // cap in MiB with its exact KiB beside it, then why.
        let settled = &cell.limits["memory_settled"];
        let readable = if cap.is_multiple_of(1 << 20) {
            format!("{}MiB (", cap >> 20)
        } else {
            format!(
                "{:.1}MiB ({}KiB) (",
                cap as f64 / (1 << 20) as f64,
                cap >> 10
            )
        };
        assert!(settled.starts_with(&readable), "{settled}: {readable}");
        assert!(settled.contains("% of data "), "{settled}");
        // The provisioned cap was the environment's, before settle shrank it.
        assert_eq!(
            cell.fidelity.limits_read_back["server/memory.limit_in_bytes"],
            (256u64 << 20).to_string()
        );
        assert_phases_ran(&cell);
        seen.push((cell.environment.clone(), cell.key.clone()));
    }
    seen.sort();
    assert_ne!(seen[0].1, seen[1].1, "the two caps share a cell key");
    assert_eq!(run.cells.len(), 2);
    // The report gives each phase the cap the kernel reported during it:
    // the load the environment's 256 MiB, the reads their settled cap.
    let rows = report_rows(&dirs[0]);
    let mut reads_caps = Vec::new();
    for r in &rows {
        let dir = dirs[0].join("cells").join(r["cell_key"].as_str().unwrap());
        let cell: CellRecord = read_json(&dir.join("cell.json"));
        match r["phase"].as_str().unwrap() {
            "load" => assert_eq!(r["memory_limit_bytes"], 256u64 << 20, "{r}"),
            "reads" => {
                assert_eq!(
                    r["memory_limit_bytes"],
                    cell.memory_limit_bytes.unwrap(),
                    "{r}"
                );
                reads_caps.push(r["memory_limit_bytes"].as_u64().unwrap());
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    // By cap, smallest first.
    assert_eq!(reads_caps.len(), 2);
    assert!(reads_caps[0] < reads_caps[1], "{reads_caps:?}");
    assert_clean(&place, &run.run_id);
}

/// The JSON rows of `benchcage report RUN_DIR`.
fn report_rows(run_dir: &Path) -> Vec<serde_json::Value> {
    let out = Command::new(BIN)
        .current_dir(HOME)
        .args(["--home", HOME, "report"])
        .arg(run_dir)
        .args(["--format", "json", "-o", "-"])
        .output()
        .unwrap();
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_myrocks_sweep_with_mmap_reads_takes_more_major_faults_and_runs_slower_at_the_smaller_cap() {
    let place = Place::alone();
    let (status, stdout, stderr) = place.run(&["tests/scenarios/run-mmap-sweep.yaml"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    let dirs = place.run_dirs();
    let run: RunRecord = read_json(&dirs[0].join("run.json"));
    let mut by_env = std::collections::BTreeMap::new();
    for dir in cell_dirs(&dirs[0]) {
        let cell: CellRecord = read_json(&dir.join("cell.json"));
        assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
        assert_valid_but_for_the_hypervisor(&cell);
        let my_cnf = std::fs::read_to_string(dir.join("config/my.cnf")).unwrap();
        assert!(my_cnf.contains("rocksdb_allow_mmap_reads = ON"), "{my_cnf}");
        let reads = cell.phases.iter().find(|p| p.name == "reads").unwrap();
        assert_eq!(reads.total_ops, 100);
        let io = &cell.fidelity.phase_io["02-reads-t4"];
        by_env.insert(
            cell.environment.clone(),
            (io.major_faults, reads.throughput),
        );
    }
    let (big_faults, big_ops) = by_env["ram-sweep-mem200pct"];
    let (small_faults, small_ops) = by_env["ram-sweep-mem50pct"];
    // The same 100 reads: at 200% the load's page cache holds all the data;
    // at 50% most reads miss it, and with the SST files memory-mapped every
    // miss is a major fault (a read(2) engine would show device reads only).
    assert!(
        small_faults > 2 * big_faults && small_faults >= 50,
        "major faults: {small_faults} at 50% of data, {big_faults} at 200%"
    );
    assert!(
        small_ops < big_ops / 2.0,
        "ops/s: {small_ops} at 50% of data, {big_ops} at 200%"
    );
    // The report's cost per operation rises as the cap falls (rows come by
    // cap, smallest first).
    let per_op: Vec<f64> = report_rows(&dirs[0])
        .iter()
        .filter(|r| r["phase"] == "reads")
        .map(|r| r["major_faults_per_op"].as_f64().unwrap())
        .collect();
    assert_eq!(per_op.len(), 2);
    assert!(
        per_op[0] > per_op[1],
        "major faults per op, 50% then 200%: {per_op:?}"
    );
    assert_clean(&place, &run.run_id);
}

#[test]
fn settle_resizes_the_myrocks_block_cache_with_the_cap_and_every_phase_records_both() {
    let place = Place::alone();
    let (status, stdout, stderr) = place.run(&["tests/scenarios/run-cache-resize.yaml"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    let dirs = place.run_dirs();
    let run: RunRecord = read_json(&dirs[0].join("run.json"));
    let cells = cell_dirs(&dirs[0]);
    assert_eq!(cells.len(), 2);
    for dir in cells {
        let cell: CellRecord = read_json(&dir.join("cell.json"));
        assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
        let f = &cell.fidelity;
        // Others' tests or the hypervisor may take the server's CPU (a
        // contention violation, of the load too); nothing else may be wrong.
        assert!(
            f.violations.iter().all(|v| host_contention(v)),
            "{:?}",
            f.violations
        );
        // The load ran under the 1 GiB cap with the 256 MiB cache.
        let load = &f.phase_io["01-load-t4"];
        assert_eq!(load.memory_limit_bytes, 1 << 30);
        assert_eq!(load.engine_cache_bytes, Some(256 << 20));
        // The reads ran under the settled cap with a quarter of it as cache,
        // as the engine reports it.
        let reads = &f.phase_io["02-reads-t2"];
        let cap = reads.memory_limit_bytes;
        assert!(cap < 1 << 30, "{}: cap {cap}", cell.environment);
        let want = (cap / 4) >> 20 << 20;
        assert_eq!(
            reads.engine_cache_bytes,
            Some(want),
            "{}: cap {cap}",
            cell.environment
        );
        assert_eq!(reads.cache_violation, None);
        let after = &f.limits_read_back["server/engine cache after settle"];
        assert!(
            after.starts_with(&benchcage::units::Bytes(want).to_string())
                && after.contains("the 256MiB cache's share of the 1GiB cap"),
            "{after}"
        );
    }
    assert_clean(&place, &run.run_id);
}

fn num_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap()
        .trim()
        .parse::<benchcage::units::CpuSet>()
        .unwrap()
        .len()
}

/// Kill a three-cell run once the first cell finished and the second is
/// at `stage`, then resume: exactly the two unfinished cells run.
fn kill_at_stage_then_resume(stage: &str, sig: nix::sys::signal::Signal) {
    let place = Place::new();
    let mut run = place.spawn(&["tests/scenarios/run-three.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "3 cell(s)"], 60));
    run.wait_line(&["[1/3", "finished in"], 120);
    run.wait_line(&["[2/3", stage], 120);
    run.signal(sig);
    let status = run.wait(90);
    assert!(!status.success(), "{stage}: {}", run.stderr());
    let dir = place.results().join(&id);
    let rec: RunRecord = read_json(&dir.join("run.json"));
    if sig == nix::sys::signal::Signal::SIGINT {
        assert_eq!(status.code(), Some(130), "{}", run.stderr());
        assert_eq!(rec.status, RunStatus::Interrupted);
        assert!(
            run.stderr().contains(&format!("--resume {id}")),
            "{}",
            run.stderr()
        );
        assert_clean(&place, &id);
    }
    let first = rec.cells[0].clone();
    let before = std::fs::read(dir.join("cells").join(&first).join("cell.json")).unwrap();

    let (status, _, stderr) = place.run(&["tests/scenarios/run-three.yaml", "--resume", &id]);
    assert!(status.success(), "{stage}: {stderr}");
    assert_eq!(
        stderr.matches("finished earlier, skipped").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches("] finished in").count(), 2, "{stderr}");
    let after = std::fs::read(dir.join("cells").join(&first).join("cell.json")).unwrap();
    assert_eq!(before, after, "the finished cell was rewritten");
    let rec: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(rec.status, RunStatus::Finished);
    for key in &rec.cells {
        let c: CellRecord = read_json(&dir.join("cells").join(key).join("cell.json"));
        assert_eq!(c.status, CellStatus::Finished, "{key}: {:?}", c.failure);
    }
    assert_clean(&place, &id);
}

#[test]
fn killing_the_run_at_each_stage_then_resuming_runs_exactly_the_unfinished_cells() {
    use nix::sys::signal::Signal;
    kill_at_stage_then_resume("load", Signal::SIGKILL);
    kill_at_stage_then_resume("workload-b t2", Signal::SIGKILL);
    kill_at_stage_then_resume("workload-b t2", Signal::SIGINT);
    kill_at_stage_then_resume("provision", Signal::SIGTERM);
}

#[test]
fn an_engine_that_dies_mid_phase_fails_its_cell_and_the_matrix_goes_on() {
    let place = Place::new();
    let mut run = place.spawn(&["tests/scenarios/run-long-phase.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "2 cell(s)"], 60));
    run.wait_line(&["[1/2", "workload-c t2"], 120);
    std::thread::sleep(Duration::from_millis(500));
    let pids = server_pids(&format!("{id}-01"));
    assert!(!pids.is_empty());
    for pid in pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let status = run.wait(120);
    assert_eq!(status.code(), Some(1), "{}", run.stderr());
    let dir = place.results().join(&id);
    let rec: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(rec.status, RunStatus::Failed);
    let first: CellRecord = read_json(&dir.join("cells").join(&rec.cells[0]).join("cell.json"));
    assert_eq!(first.status, CellStatus::Failed);
    let why = first.failure.unwrap();
    assert!(
        why.contains("engine exited during phase workload-c"),
        "{why}"
    );
    assert!(
        first.phases.iter().all(|p| p.name == "load"),
        "no measured phase recorded as a result"
    );
    let second: CellRecord = read_json(&dir.join("cells").join(&rec.cells[1]).join("cell.json"));
    assert_eq!(second.status, CellStatus::Finished, "{:?}", second.failure);
    assert_clean(&place, &id);
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs at {}", at.display());
        Tmpfs(at.to_path_buf())
    }

    /// Write until the disk is full.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.0.join("filler")).unwrap();
        let block = vec![7u8; 1 << 20];
        while f.write_all(&block).is_ok() {}
        let _ = f.flush();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_run_whose_phase_failed_exits_3_and_its_record_says_which() {
    let place = Place::new();
    let (status, stdout, stderr) = place.run(&["tests/scenarios/run-failed-phase.yaml"]);
    assert_eq!(status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("1 phase(s) failed (see cell.json of each)"),
        "{stderr}"
    );
    let dir = run_dir_of(&stdout);
    let run: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Finished);
    assert!(
        run.note
            .as_deref()
            .unwrap_or_default()
            .contains("1 phase(s) failed"),
        "{:?}",
        run.note
    );
    let cell: CellRecord = read_json(&cell_dirs(&dir)[0].join("cell.json"));
    assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
    let refused = cell.phases.iter().find(|p| p.name == "refused").unwrap();
    assert!(
        matches!(&refused.status, PhaseStatus::Failed { reason } if reason.contains("error budget (0 errors) was spent")),
        "{:?}",
        refused.status
    );
    // The phase before it stands (valid, or invalid when a busy host
    // shared its CPU; never failed).
    let reads = &cell
        .phases
        .iter()
        .find(|p| p.name == "reads")
        .unwrap()
        .status;
    assert!(
        !matches!(reads, PhaseStatus::Failed { .. } | PhaseStatus::Oom { .. }),
        "{reads:?}"
    );
    assert_clean(&place, &run.run_id);
}

#[test]
fn a_run_whose_history_is_locked_says_how_to_index_it_later_and_that_indexes_it() {
    let place = Place::new();
    std::fs::create_dir_all(place.results()).unwrap();
    let db = place.results().join("history.sqlite");
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE;").unwrap();
    let (status, stdout, stderr) = place.run(&["tests/scenarios/run-short-phase.yaml"]);
    let id = run_dir_of(&stdout)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("index it with `benchcage history --index {id}`")),
        "{stderr}"
    );
    drop(lock);
    let o = bc_in(&place.home, &place.results(), &place.work(), &place.state())
        .args(["history", "--index", &id])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bc_in(&place.home, &place.results(), &place.work(), &place.state())
        .args(["history", "--ids"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), id);
    assert_clean(&place, &id);
}

#[test]
fn a_full_results_disk_fails_the_run_and_keeps_earlier_results_intact() {
    let place = Place::new();
    let disk = Tmpfs::mount(&place.results(), "80m");
    let mut run = place.spawn(&["tests/scenarios/run-three.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "3 cell(s)"], 60));
    run.wait_line(&["[1/3", "finished in"], 120);
    let dir = place.results().join(&id);
    let rec: RunRecord = read_json(&dir.join("run.json"));
    let first = dir.join("cells").join(&rec.cells[0]).join("cell.json");
    let before = std::fs::read(&first).unwrap();
    disk.fill();
    let status = run.wait(120);
    assert!(!status.success(), "{}", run.stderr());
    assert_eq!(
        std::fs::read(&first).unwrap(),
        before,
        "an earlier result changed"
    );
    let cell: CellRecord = read_json(&first);
    assert_eq!(cell.status, CellStatus::Finished);
    assert!(
        !dir.join("cells")
            .join(&rec.cells[2])
            .join("cell.json")
            .exists()
    );
    // The run says it failed, not `running` for ever, and why.
    let rec: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(rec.status, RunStatus::Failed, "{:?}", rec.note);
    assert!(rec.finished_at.is_some() && rec.owner_pid.is_none());
    assert!(
        rec.note
            .as_deref()
            .unwrap_or_default()
            .contains("writing results failed"),
        "{:?}",
        rec.note
    );
    assert!(!dir.join(".reserve").exists(), "the reserve was left");
    assert_clean(&place, &id);

    // With the disk still full, a new run refuses before creating anything.
    let (status, _, stderr) = place.run(&["tests/scenarios/run-three.yaml"]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("needs at least"), "{stderr}");
    assert_eq!(place.run_dirs(), vec![dir]);
    drop(disk);
}

#[test]
fn a_redis_cell_is_stopped_at_teardown_by_its_quick_stop_statement_not_a_signal_it_sees_a_tick_later()
 {
    let place = Place::new();
    let (status, _, stderr) =
        place.run(&["tests/scenarios/bench-cells.yaml", "--set", "repetitions=1"]);
    assert!(status.success(), "{stderr}");
    let dir = &place.run_dirs()[0];
    let cell = &cell_dirs(dir)[0];
    let rec: CellRecord = read_json(&cell.join("cell.json"));
    assert_eq!(rec.status, CellStatus::Finished, "{:?}", rec.failure);
    // Redis logs `Received SIGTERM` when a signal starts its shutdown, and
    // only `User requested shutdown` when SHUTDOWN does.
    let log = support::files::read_text(&cell.join("engine.log"));
    assert!(log.contains("User requested shutdown"), "{log}");
    assert!(log.contains("ready to exit"), "{log}");
    assert!(!log.contains("Received SIGTERM"), "{log}");
    let run: RunRecord = read_json(&dir.join("run.json"));
    assert_clean(&place, &run.run_id);
}

#[test]
fn a_phase_that_claims_io_bound_but_read_nothing_from_disk_is_invalid() {
    let place = Place::new();
    let (status, _, stderr) = place.run(&["tests/scenarios/run-false-io.yaml"]);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("fidelity INVALID"), "{stderr}");
    let dir = &place.run_dirs()[0];
    let cell: CellRecord = read_json(&cell_dirs(dir)[0].join("cell.json"));
    let phase = cell.phases.iter().find(|p| p.name == "claims-io").unwrap();
    match &phase.status {
        benchcage::results::model::PhaseStatus::Invalid { reason } => {
            assert!(reason.contains("expect: io-bound"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(!cell.fidelity.is_valid());
    let io = &cell.fidelity.phase_io["02-claims-io-t1"];
    assert!(io.expect_io_bound && io.io_bound_violation.is_some());
}

#[test]
fn resuming_a_run_that_does_not_exist_is_bad_input_and_creates_nothing() {
    let place = Place::new();
    let (status, _, stderr) = place.run(&[
        "tests/scenarios/run-small.yaml",
        "--resume",
        "20000101-000000-0000",
    ]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--resume 20000101-000000-0000"), "{stderr}");
    let (status, _, stderr) = place.run(&["tests/scenarios/run-small.yaml", "--resume", "../etc"]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(place.run_dirs().is_empty());
}

#[test]
fn an_external_tool_runs_in_the_client_group_and_its_raw_output_is_kept() {
    let place = Place::alone();
    let (status, _, stderr) = place.run(&["tests/scenarios/run-tool.yaml"]);
    assert!(status.success(), "{stderr}");
    let dir = &place.run_dirs()[0];
    let cell_dir = &cell_dirs(dir)[0];
    let cell: CellRecord = read_json(&cell_dir.join("cell.json"));
    assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
    let phase = &cell.phases[0];
    assert_eq!(phase.workload, "sysbench:oltp_read_only");
    assert!(
        valid_but_for_the_hypervisor(&phase.status) && phase.total_ops > 0,
        "{phase:?}"
    );
    assert!(!phase.raw_outputs.is_empty());
    for raw in &phase.raw_outputs {
        assert!(cell_dir.join(raw).is_file(), "{raw}");
    }
    // sysbench's CPU time is charged to the client group, not the server's.
    let samples: Vec<ResourceSample> = read_json(&cell_dir.join("samples.json"));
    let client: Vec<&ResourceSample> = samples
        .iter()
        .filter(|s| s.cgroup == "client" && s.phase.starts_with("oltp-ro"))
        .collect();
    assert!(client.len() >= 2, "{samples:?}");
    assert!(client.last().unwrap().cpu_usec > client[0].cpu_usec);
    assert_clean(
        &place,
        &read_json::<RunRecord>(&dir.join("run.json")).run_id,
    );
}

#[test]
fn a_sysbench_thread_sweep_prepares_once_and_cleans_up_once() {
    let place = Place::new();
    let (status, _, stderr) = place.run(&["tests/scenarios/run-tool-sweep.yaml"]);
    assert!(status.success(), "{stderr}");
    let dir = &place.run_dirs()[0];
    let cell_dir = &cell_dirs(dir)[0];
    let cell: CellRecord = read_json(&cell_dir.join("cell.json"));
    assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
    // One raw folder per thread count: the tables are prepared before the
    // first and dropped after the last, and every count ran on them.
    let files = |count: u32| -> Vec<String> {
        let phase = cell
            .phases
            .iter()
            .find(|p| p.threads == count)
            .unwrap_or_else(|| panic!("no phase at {count} threads: {:?}", cell.phases));
        // Shares the host: another test may void a phase by its CPU time.
        assert!(
            valid_but_for_a_busy_host(&phase.status) && phase.total_ops > 0,
            "{phase:?}"
        );
        phase
            .raw_outputs
            .iter()
            .map(|r| r.rsplit('/').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(files(1), ["sysbench-prepare.txt", "sysbench-run-1.txt"]);
    assert_eq!(files(2), ["sysbench-run-2.txt"]);
    assert_eq!(files(4), ["sysbench-run-4.txt", "sysbench-cleanup.txt"]);
    // The data size is the tool's table as MariaDB reports it after the
    // prepare (1000 rows), not what the data dir held before it (the
    // system tablespaces, tens of MB, with an empty schema).
    let size = cell.data_size_bytes.unwrap();
    assert!(
        (1..5_000_000).contains(&size),
        "data size {size} after a 1000-row prepare"
    );
    assert_clean(
        &place,
        &read_json::<RunRecord>(&dir.join("run.json")).run_id,
    );
}

#[test]
fn a_sysbench_prepare_longer_than_the_phase_and_its_grace_is_not_cut_short() {
    let place = Place::new();
    let (status, _, stderr) = place.run(&["tests/scenarios/run-tool-long-prepare.yaml"]);
    assert!(status.success(), "{stderr}");
    let dir = &place.run_dirs()[0];
    let cell_dir = &cell_dirs(dir)[0];
    let cell: CellRecord = read_json(&cell_dir.join("cell.json"));
    assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
    assert!(cell.phases[0].total_ops > 0, "{:?}", cell.phases[0]);
    // The prepare really outlasted the phase's 1 s plus its 15 s of grace
    // (otherwise this test proves nothing): from the table's pre-cleanup
    // to the end of the prepare, by the raw outputs' times.
    let raw = std::fs::read_dir(cell_dir.join("raw"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let written = |f: &str| std::fs::metadata(raw.join(f)).unwrap().modified().unwrap();
    let prepare = written("sysbench-prepare.txt")
        .duration_since(written("sysbench-precleanup.txt"))
        .unwrap();
    assert!(
        prepare > Duration::from_secs(16),
        "the prepare took only {prepare:?}: give the scenario more rows"
    );
    assert_clean(
        &place,
        &read_json::<RunRecord>(&dir.join("run.json")).run_id,
    );
}

#[test]
fn a_second_ctrl_c_still_tears_everything_down() {
    use nix::sys::signal::Signal;
    let place = Place::new();
    let mut run = place.spawn(&["tests/scenarios/run-long-phase.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "2 cell(s)"], 60));
    run.wait_line(&["[1/2", "workload-c t2"], 120);
    run.signal(Signal::SIGINT);
    std::thread::sleep(Duration::from_millis(20));
    // The second one may land during teardown (which then skips its grace
    // periods) or after it: either way nothing may be left.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.child.id() as i32),
        Signal::SIGINT,
    );
    let status = run.wait(90);
    assert_eq!(status.code(), Some(130), "{}", run.stderr());
    let rec: RunRecord = read_json(&place.results().join(&id).join("run.json"));
    assert_eq!(rec.status, RunStatus::Interrupted);
    assert_clean(&place, &id);
}

/// A copy of the project (engines, environments, templates, the test
/// scenarios) in a folder of mode 700, as a clone in /root would be.
fn private_home(place: &Place) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let home = place.tmp.path().join("private-home");
    for d in ["engines", "environments", "templates", "tests/scenarios"] {
        copy_dir(&Path::new(HOME).join(d), &home.join(d));
    }
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    home
}

fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_project_and_results_in_private_folders_run_every_engine_that_runs_here() {
    use std::os::unix::fs::PermissionsExt;
    let place = Place::new();
    let home = private_home(&place);
    let results = place.tmp.path().join("private-results");
    std::fs::create_dir(&results).unwrap();
    std::fs::set_permissions(&results, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = Command::new(BIN)
        .current_dir(&home)
        .arg("--home")
        .arg(&home)
        .args(["run", "tests/scenarios/run-every-engine.yaml", "--results"])
        .arg(&results)
        .env("BENCHCAGE_WORK", place.work())
        .env("BENCHCAGE_STATE_DIR", place.state())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dirs: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{stderr}");
    let mut users = std::collections::BTreeMap::new();
    for cell_dir in cell_dirs(&dirs[0]) {
        let cell: CellRecord = read_json(&cell_dir.join("cell.json"));
        assert_eq!(
            cell.status,
            CellStatus::Finished,
            "{}: {}",
            cell.engine,
            cell.failure.unwrap_or_default()
        );
        let launch: benchcage::model::EngineLaunch = read_json(&cell_dir.join("launch.json"));
        for (kept, engine_path) in &launch.config_files {
            assert!(kept.starts_with(&cell_dir), "{}", kept.display());
            assert!(kept.is_file(), "the results keep {}", kept.display());
            assert!(
                engine_path.starts_with(place.work()),
                "{} reads {} from the work dir",
                cell.engine,
                engine_path.display()
            );
        }
        users.insert(cell.engine.clone(), launch.user.unwrap_or_default());
    }
    assert_eq!(
        users.keys().map(String::as_str).collect::<Vec<_>>(),
        ["mariadb", "myrocks", "postgres", "redis", "secantusdb"]
    );
    assert_eq!(users["redis"], "nobody", "an engine without `user:`");
    assert_eq!(users["postgres"], "postgres");
    assert_eq!(users["mariadb"], "mysql");
    assert!(out.status.success(), "{stderr}");
    assert_eq!(mode_of(&home), 0o700, "the home was chmodded");
    assert_eq!(mode_of(&results), 0o700, "the results folder was chmodded");
    let run: RunRecord = read_json(&dirs[0].join("run.json"));
    assert_clean(&place, &run.run_id);
}

#[test]
fn an_engine_that_fails_before_it_is_ready_shows_its_own_stderr_in_the_failure() {
    let place = Place::new();
    let (status, _, stderr) = place.run(&[
        "tests/scenarios/run-postgres.yaml",
        "--set",
        "work_mem=1KiB",
    ]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let dir = &place.run_dirs()[0];
    let cell: CellRecord = read_json(&cell_dirs(dir)[0].join("cell.json"));
    let why = cell.failure.unwrap_or_default();
    assert!(why.contains("before it was ready"), "{why}");
    // postgres writes these on its stderr, after initdb's stdout.
    assert!(
        why.contains("FATAL:")
            && why.contains("1 kB is outside the valid range for parameter \"work_mem\""),
        "{why}"
    );
    assert!(stderr.contains("work_mem"), "{stderr}");
    assert_clean(
        &place,
        &read_json::<RunRecord>(&dir.join("run.json")).run_id,
    );
}

/// Pids in the server cgroup of sandbox `<run>-<nn>` (its cpuset group on
/// v1, its group of the unified tree on v2).
fn server_pids(sandbox: &str) -> Vec<i32> {
    let hier = benchcage::sandbox::cgroupfs::Hierarchy::detect().unwrap();
    let dirs = hier.dirs(
        &Path::new(benchcage::sandbox::cgroupfs::group::TOP)
            .join(sandbox)
            .join("server"),
    );
    let dir = dirs.get("cpuset").or_else(|| dirs.get("unified")).unwrap();
    let procs = dir.join("cgroup.procs");
    std::fs::read_to_string(&procs)
        .unwrap_or_else(|e| panic!("{}: {e}", procs.display()))
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

#[test]
fn resuming_a_run_that_is_still_live_is_refused_and_touches_nothing_of_it() {
    let place = Place::new();
    let mut run = place.spawn(&["tests/scenarios/run-long-phase.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "2 cell(s)"], 60));
    run.wait_line(&["[1/2", "workload-c t2"], 120);
    let ledger = place.state().join(format!("{id}-01.ledger"));
    let ledger_before = std::fs::read(&ledger).unwrap();
    let pids = server_pids(&format!("{id}-01"));
    assert!(!pids.is_empty());
    let dir = place.results().join(&id);

    let (status, _, stderr) = place.run(&["tests/scenarios/run-long-phase.yaml", "--resume", &id]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&id) && stderr.contains("still live"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        ledger_before,
        "ledger touched"
    );
    for pid in &pids {
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "engine pid {pid} was killed"
        );
    }
    assert!(
        !dir.join("attempts").exists(),
        "a live cell folder was moved"
    );

    let status = run.wait(120);
    assert!(status.success(), "{}", run.stderr());
    let rec: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(rec.status, RunStatus::Finished);
    for key in &rec.cells {
        let c: CellRecord = read_json(&dir.join("cells").join(key).join("cell.json"));
        assert_eq!(c.status, CellStatus::Finished, "{key}: {:?}", c.failure);
    }
    assert_clean(&place, &id);
}

#[test]
fn sighup_sigquit_and_sigusr1_tear_the_run_down_like_sigterm() {
    use nix::sys::signal::Signal;
    for sig in [Signal::SIGHUP, Signal::SIGQUIT, Signal::SIGUSR1] {
        let place = Place::new();
        let mut run = place.spawn(&["tests/scenarios/run-long-phase.yaml"]);
        let id = run_id_of(&run.wait_line(&["run ", "2 cell(s)"], 60));
        run.wait_line(&["[1/2", "workload-c t2"], 120);
        run.signal(sig);
        let status = run.wait(90);
        assert_eq!(status.code(), Some(130), "{sig}: {}", run.stderr());
        let rec: RunRecord = read_json(&place.results().join(&id).join("run.json"));
        assert_eq!(rec.status, RunStatus::Interrupted, "{sig}");
        assert_clean(&place, &id);
    }
}

#[test]
fn the_printed_resume_command_keeps_home_only_set_and_results_and_resumes_the_run() {
    use nix::sys::signal::Signal;
    let place = Place::new();
    // A results folder whose name a shell would split, and a working
    // folder other than the project: the command must carry both.
    let results = place.tmp.path().join("my results");
    let cwd = place.tmp.path();
    let bc = |args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(cwd)
            .args(args)
            .env_remove("BENCHCAGE_RESULTS")
            .env_remove("BENCHCAGE_HOME")
            .env("BENCHCAGE_WORK", place.work())
            .env("BENCHCAGE_STATE_DIR", place.state())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    };
    let mut child = bc(&[
        "--home",
        HOME,
        "run",
        "tests/scenarios/run-three.yaml",
        "--only",
        "r1",
        "--set",
        "server.memory=200MiB",
        "--results",
    ])
    .arg(&results)
    .spawn()
    .unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    let err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            l.lock().unwrap().push(line);
        }
    });
    let mut run = Running {
        child,
        lines,
        reader: Some(reader),
    };
    let id = run_id_of(&run.wait_line(&["run ", "1 cell(s)"], 60));
    run.wait_line(&["[1/1", "workload-b t2"], 120);
    run.signal(Signal::SIGINT);
    assert_eq!(run.wait(90).code(), Some(130), "{}", run.stderr());
    let stderr = run.stderr();
    let printed = stderr
        .lines()
        .skip_while(|l| !l.contains("resume with:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no resume command:\n{stderr}"))
        .trim()
        .to_string();
    for part in [
        format!("--home {HOME}"),
        "--only r1".into(),
        "--set server.memory=200MiB".into(),
        format!("--results '{}'", results.display()),
        format!("--resume {id}"),
    ] {
        assert!(printed.contains(&part), "{part} missing: {printed}");
    }
    let rec: RunRecord = read_json(&results.join(&id).join("run.json"));
    assert_eq!(rec.status, RunStatus::Interrupted);
    assert!(
        rec.note.as_deref().unwrap_or("").contains(&printed),
        "{:?}",
        rec.note
    );

    // Follow it word for word through a shell.
    let rest = printed.strip_prefix("benchcage ").unwrap();
    let line = format!("{BIN} {rest}");
    let out = Command::new("sh")
        .current_dir(cwd)
        .arg("-c")
        .arg(&line)
        .env_remove("BENCHCAGE_RESULTS")
        .env_remove("BENCHCAGE_HOME")
        .env("BENCHCAGE_WORK", place.work())
        .env("BENCHCAGE_STATE_DIR", place.state())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{line}\n{stderr}");
    assert_eq!(stderr.matches("] finished in").count(), 1, "{stderr}");
    let rec: RunRecord = read_json(&results.join(&id).join("run.json"));
    assert_eq!(rec.status, RunStatus::Finished);
    assert_eq!(rec.cells.len(), 1);
    assert!(
        !place.results().exists(),
        "a second results folder appeared"
    );
    assert_clean(&place, &id);
}

#[test]
fn cleanup_marks_a_killed_run_interrupted_and_removes_its_empty_work_folders() {
    use nix::sys::signal::Signal;
    let place = Place::new();
    let cleanup = || {
        let out = Command::new(BIN)
            .current_dir(HOME)
            .args(["--home", HOME, "cleanup"])
            .env("BENCHCAGE_RESULTS", place.results())
            .env("BENCHCAGE_WORK", place.work())
            .env("BENCHCAGE_STATE_DIR", place.state())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        text
    };
    let mut run = place.spawn(&["tests/scenarios/run-three.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "3 cell(s)"], 60));
    run.wait_line(&["[1/3", "finished in"], 120);
    run.wait_line(&["[2/3", "workload-b t2"], 120);
    let run_json = place.results().join(&id).join("run.json");
    let work = place.work().join(&id);

    // While the run is alive, cleanup touches none of it.
    let live = std::fs::read(&run_json).unwrap();
    let said = cleanup();
    assert!(!said.contains(&id), "{said}");
    assert_eq!(std::fs::read(&run_json).unwrap(), live);
    assert!(work.is_dir());

    run.signal(Signal::SIGKILL);
    run.wait(30);
    let rec: RunRecord = read_json(&run_json);
    assert_eq!(
        rec.status,
        RunStatus::Running,
        "the killed run could not say otherwise"
    );
    let said = cleanup();
    assert!(
        said.contains(&format!("run {id}")) && said.contains("marked interrupted"),
        "{said}"
    );
    let rec: RunRecord = read_json(&run_json);
    assert_eq!(rec.status, RunStatus::Interrupted);
    let note = rec.note.unwrap_or_default();
    assert!(note.contains(&format!("--resume {id}")), "{note}");
    assert!(note.contains("tests/scenarios/run-three.yaml"), "{note}");
    assert_eq!((rec.owner_pid, rec.owner_start), (None, None));
    assert!(!work.exists(), "work folder left: {}", work.display());
    assert_clean(&place, &id);
    // Nothing is left to do, and a second cleanup says so.
    assert!(cleanup().contains("nothing to clean up"));
    assert_eq!(
        read_json::<RunRecord>(&run_json).status,
        RunStatus::Interrupted
    );
}

#[test]
fn an_engine_oom_killed_mid_phase_is_counted_and_its_phase_is_recorded_as_oom() {
    let place = Place::new();
    let (status, _, stderr) = place.run(&["tests/scenarios/run-oom.yaml"]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let dir = &place.run_dirs()[0];
    let cell_dir = &cell_dirs(dir)[0];
    let cell: CellRecord = read_json(&cell_dir.join("cell.json"));
    assert_eq!(cell.status, CellStatus::Failed);
    let why = cell.failure.clone().unwrap();
    assert!(
        why.contains("OOM-killed the engine during phase grow"),
        "{why}"
    );
    assert!(why.contains("killed by signal 9 (SIGKILL)"), "{why}");
    assert!(!why.contains("Some(") && !why.contains("None"), "{why}");
    let fid: FidelityRecord = read_json(&cell_dir.join("fidelity.json"));
    assert!(fid.oom_kills >= 1, "{fid:?}");
    assert!(
        fid.violations.iter().any(|v| v.contains("OOM-killed")),
        "{fid:?}"
    );
    let grow = cell.phases.iter().find(|p| p.name == "grow");
    if let Some(grow) = grow {
        assert!(
            matches!(grow.status, PhaseStatus::Oom { .. }),
            "{:?}",
            grow.status
        );
    }
    assert_clean(
        &place,
        &read_json::<RunRecord>(&dir.join("run.json")).run_id,
    );
}

#[test]
fn a_frozen_engine_fails_its_phase_at_the_deadline_and_is_still_torn_down() {
    use nix::sys::signal::{Signal, kill};
    let place = Place::new();
    let mut run = place.spawn(&["tests/scenarios/run-short-phase.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "1 cell(s)"], 60));
    run.wait_line(&["[1/1", "workload-c t2"], 120);
    for pid in server_pids(&format!("{id}-01")) {
        kill(nix::unistd::Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
    }
    let frozen = Instant::now();
    let status = run.wait(120);
    let took = frozen.elapsed();
    assert_eq!(status.code(), Some(1), "{}", run.stderr());
    // 4 s phase + 15 s grace + 8 s to hand back + teardown: never minutes.
    assert!(took < Duration::from_secs(45), "took {took:?}");
    let dir = place.results().join(&id);
    let rec: RunRecord = read_json(&dir.join("run.json"));
    let cell: CellRecord = read_json(&dir.join("cells").join(&rec.cells[0]).join("cell.json"));
    assert_eq!(cell.status, CellStatus::Failed);
    let why = cell.failure.unwrap();
    assert!(
        why.contains("did not end within its 4s plus 15s of grace"),
        "{why}"
    );
    assert_clean(&place, &id);
}

/// A process spinning on `cpu`, killed when dropped.
fn cpu_hog(cpu: u32) -> KillOnDrop {
    KillOnDrop(
        Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    )
}

/// Run the short phase, with a CPU hog on the server's CPU (1 in
/// quickstart) from the start of the phase when `hog`; returns the phase's
/// record and the cell's fidelity.
fn short_phase(hog: bool) -> (benchcage::results::model::PhaseIo, CellRecord) {
    let place = Place::alone();
    let mut run = place.spawn(&["tests/scenarios/run-short-phase.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "1 cell(s)"], 60));
    run.wait_line(&["[1/1", "workload-c t2"], 120);
    let hog = hog.then(|| cpu_hog(1));
    let status = run.wait(60);
    drop(hog);
    assert!(status.success(), "{}", run.stderr());
    let dir = place.results().join(&id);
    let rec: RunRecord = read_json(&dir.join("run.json"));
    let cell: CellRecord = read_json(&dir.join("cells").join(&rec.cells[0]).join("cell.json"));
    let io = cell.fidelity.phase_io["02-workload-c-t2"].clone();
    assert_clean(&place, &id);
    (io, cell)
}

#[test]
fn a_cpu_hog_on_the_servers_cpu_invalidates_the_phase() {
    let (io, cell) = short_phase(true);
    let share = io.cpu_foreign_share.unwrap();
    assert!(share > 0.3, "a hog on the server's CPU took only {share}");
    let why = io.contention_violation.clone().unwrap();
    assert!(why.contains("of the server's CPUs (1)"), "{why}");
    let phase = cell.phases.iter().find(|p| p.name == "workload-c").unwrap();
    assert!(
        matches!(phase.status, PhaseStatus::Invalid { .. }),
        "{:?}",
        phase.status
    );
    assert!(!cell.fidelity.is_valid());
}

#[test]
fn a_load_that_shares_its_cpu_is_void_and_the_cell_goes_on_to_a_phase_that_stays_a_result() {
    let place = Place::alone();
    let mut run = place.spawn(&["tests/scenarios/run-contended-load.yaml"]);
    let id = run_id_of(&run.wait_line(&["run ", "1 cell(s)"], 60));
    run.wait_line(&["[1/1", "load"], 120);
    let hog = cpu_hog(1);
    run.wait_line(&["[1/1", "workload-c t2"], 300);
    drop(hog);
    let status = run.wait(120);
    assert!(status.success(), "{}", run.stderr());
    let dir = place.results().join(&id);
    let rec: RunRecord = read_json(&dir.join("run.json"));
    let cell: CellRecord = read_json(&dir.join("cells").join(&rec.cells[0]).join("cell.json"));
    assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
    let load = cell.phases.iter().find(|p| p.name == "load").unwrap();
    match &load.status {
        PhaseStatus::Invalid { reason } => {
            assert!(reason.contains("of the server's CPUs (1)"), "{reason}")
        }
        other => panic!("a load sharing its CPU with a hog is {other:?}"),
    }
    assert_eq!(load.total_ops, 60000);
    // The phase after it ran on quiet CPUs: a result, whatever the load was.
    let phase = cell.phases.iter().find(|p| p.name == "workload-c").unwrap();
    assert!(
        valid_but_for_the_hypervisor(&phase.status),
        "{:?}",
        phase.status
    );
    // What reports, compare and claims read: the load void, the phase not
    // voided by the load's neighbour.
    use benchcage::results::flat::{Verdict, phase_verdict};
    let index = |name: &str| cell.phases.iter().position(|p| p.name == name).unwrap();
    assert_eq!(phase_verdict(&cell, index("load")).0, Verdict::Invalid);
    let (v, why) = phase_verdict(&cell, index("workload-c"));
    assert!(
        v == Verdict::Ok || why.contains(BUSY_HYPERVISOR),
        "{v:?}: {why}"
    );
    assert_clean(&place, &id);
}

#[test]
fn a_quiet_run_records_little_foreign_cpu_time_and_stays_valid() {
    let (io, cell) = short_phase(false);
    let share = io.cpu_foreign_share.unwrap();
    assert!(
        share < 0.10,
        "a quiet run had {share} of its CPU taken by others (is the host busy?)"
    );
    // Steal is measured apart: on bare metal 0, on a VM what its
    // neighbours took; it never counts as this host's foreign work.
    assert!(io.cpu_steal_share.is_some());
    assert!(io.engine_run_delay_share.is_some());
    assert_valid_but_for_the_hypervisor(&cell);
}

#[test]
fn a_run_whose_cpus_a_live_run_holds_waits_for_them_and_names_that_run() {
    let place = Place::new();
    let mut first = place.spawn(&["tests/scenarios/run-short-phase.yaml"]);
    let first_id = run_id_of(&first.wait_line(&["run ", "1 cell(s)"], 60));
    first.wait_line(&["[1/1", "workload-c t2"], 120);
    let mut second = place.spawn(&["tests/scenarios/run-short-phase.yaml"]);
    let waiting = second.wait_line(&["waiting: run"], 60);
    assert!(waiting.contains(&first_id), "{waiting}");
    assert!(waiting.contains("CPU(s) 0-1"), "{waiting}");
    assert!(
        !second.stderr().contains("] provision"),
        "the second run started while the first held its CPUs:\n{}",
        second.stderr()
    );
    assert!(first.wait(60).success(), "{}", first.stderr());
    assert!(second.wait(90).success(), "{}", second.stderr());
    for dir in place.run_dirs() {
        let rec: RunRecord = read_json(&dir.join("run.json"));
        assert_eq!(rec.status, RunStatus::Finished);
        assert_clean(&place, &rec.run_id);
    }
}

#[test]
fn a_mongodb_cell_writes_with_its_write_concern_and_records_it() {
    let place = Place::new();
    let (status, stdout, stderr) = place.run(&["tests/scenarios/run-secantus-store.yaml"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    let dir = &place.run_dirs()[0];
    let cell_dir = &cell_dirs(dir)[0];
    let cell: CellRecord = read_json(&cell_dir.join("cell.json"));
    assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
    for (k, v) in [
        ("write_concern", "majority"),
        ("write_journal", "true"),
        ("read_preference", "primaryPreferred"),
    ] {
        assert_eq!(
            cell.knobs.get(k).map(String::as_str),
            Some(v),
            "{:?}",
            cell.knobs
        );
    }
    // The load generator was given them in its store URL, every phase.
    let mut configs = 0;
    for e in std::fs::read_dir(cell_dir.join("raw")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.ends_with(".config.json") {
            let cfg: serde_json::Value = read_json(&e.path());
            let url = cfg["store"].as_str().unwrap_or_default();
            assert!(
                url.ends_with("/?journal=true&readPreference=primaryPreferred&w=majority"),
                "{name}: {url}"
            );
            configs += 1;
        }
    }
    assert_eq!(configs, 2, "the load and workload-a");
    // Not failed: every write was acknowledged as asked. (A phase a busy
    // host shared CPUs with is marked invalid; that is the host's doing.)
    for p in &cell.phases {
        let failed = matches!(
            p.status,
            PhaseStatus::Failed { .. } | PhaseStatus::Oom { .. }
        );
        assert!(
            !failed && p.total_ops > 0 && p.total_errors == 0,
            "{}: {:?} {} ops {} errors",
            p.name,
            p.status,
            p.total_ops,
            p.total_errors
        );
    }
    assert_clean(
        &place,
        &read_json::<RunRecord>(&dir.join("run.json")).run_id,
    );
}

/// The host's transparent huge pages mode, put back when dropped: the
/// test below flips the real setting.
struct HostThp {
    file: PathBuf,
    was: benchcage::sandbox::thp::ThpMode,
}

impl HostThp {
    fn save() -> HostThp {
        let file = benchcage::sandbox::thp::ThpFiles::current().enabled_path();
        let was = benchcage::sandbox::thp::read_mode(&file).expect("this host has THP");
        HostThp { file, was }
    }

    fn now(&self) -> benchcage::sandbox::thp::ThpMode {
        benchcage::sandbox::thp::read_mode(&self.file).unwrap()
    }

    fn set(&self, mode: benchcage::sandbox::thp::ThpMode) {
        benchcage::sandbox::thp::write_mode(&self.file, mode).unwrap();
    }
}

impl Drop for HostThp {
    fn drop(&mut self) {
        let _ = benchcage::sandbox::thp::write_mode(&self.file, self.was);
    }
}

/// A project whose `redisthp` engine, like TokuMX, refuses to start while
/// THP is `always`, and a scenario with a phase long enough to look at
/// the host in.
fn thp_home(place: &Place) -> PathBuf {
    let home = place.tmp.path().join("thp-home");
    for d in ["engines", "environments", "templates"] {
        copy_dir(&Path::new(HOME).join(d), &home.join(d));
    }
    let redis = std::fs::read_to_string(home.join("engines/redis.yaml")).unwrap();
    std::fs::write(
        home.join("engines/redisthp.yaml"),
        format!("{redis}transparent_hugepages: not_always\n"),
    )
    .unwrap();
    std::fs::create_dir_all(home.join("scenarios")).unwrap();
    std::fs::write(
        home.join("scenarios/thp.yaml"),
        "description: one redis cell whose engine refuses THP always\n\
         matrix: {engines: [redisthp], environments: [quickstart]}\n\
         dataset: {records: 500, field_count: 4, field_length: 50}\n\
         load: {threads: 1}\n\
         phases:\n  - {name: reads, builtin: {workload: c, distribution: uniform}, threads: 1, duration: 6s}\n",
    )
    .unwrap();
    home
}

#[test]
fn thp_is_never_during_a_cell_that_asks_and_comes_back_after_the_run_and_after_sigkill_and_cleanup()
{
    use benchcage::sandbox::thp::ThpMode;
    use nix::sys::signal::Signal;
    let host = HostThp::save();
    host.set(ThpMode::Always);
    let mut place = Place::new();
    place.home = thp_home(&place);

    // Not asked to: refused before anything exists.
    let (status, _, stderr) = place.run(&["scenarios/thp.yaml"]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("redisthp@7.0 refuses to start while transparent huge pages are `always`"),
        "{stderr}"
    );
    assert!(place.run_dirs().is_empty() && !place.work().exists());
    assert_eq!(host.now(), ThpMode::Always);

    // Asked to: `never` while the cell runs, `always` again after it.
    let off = [
        "scenarios/thp.yaml",
        "--set",
        "host.transparent_hugepages=off",
    ];
    let mut run = place.spawn(&off);
    let id = run_id_of(&run.wait_line(&["run ", "1 cell(s)"], 60));
    run.wait_line(&["[1/1", "reads t1"], 120);
    assert_eq!(host.now(), ThpMode::Never, "during the phase");
    let status = run.wait(120);
    assert!(status.success(), "{}", run.stderr());
    assert_eq!(host.now(), ThpMode::Always, "after the run");
    let dir = place.results().join(&id);
    let cell: CellRecord = read_json(&cell_dirs(&dir)[0].join("cell.json"));
    assert_eq!(cell.status, CellStatus::Finished, "{:?}", cell.failure);
    assert_eq!(
        cell.limits.get("transparent_hugepages").map(String::as_str),
        Some("never (the host's always is restored after the cell)")
    );
    assert_eq!(
        cell.fidelity
            .limits_read_back
            .get("host/transparent_hugepage/enabled")
            .map(String::as_str),
        Some("never")
    );
    let rec: RunRecord = read_json(&dir.join("run.json"));
    assert!(
        rec.host
            .transparent_hugepages
            .as_deref()
            .is_some_and(|t| t.starts_with("always")),
        "{:?}",
        rec.host
    );
    assert_clean(&place, &id);

    // Killed mid-phase: the ledger keeps the old mode; cleanup puts it back.
    let mut run = place.spawn(&off);
    let id = run_id_of(&run.wait_line(&["run ", "1 cell(s)"], 60));
    run.wait_line(&["[1/1", "reads t1"], 120);
    assert_eq!(host.now(), ThpMode::Never);
    run.signal(Signal::SIGKILL);
    run.wait(30);
    assert_eq!(host.now(), ThpMode::Never, "nothing restored it yet");
    let ledger = place.state().join(format!("{id}-01-thp.ledger"));
    assert!(ledger.is_file(), "{}", ledger.display());
    let out = Command::new(BIN)
        .args(["--home"])
        .arg(&place.home)
        .arg("cleanup")
        .env("BENCHCAGE_RESULTS", place.results())
        .env("BENCHCAGE_WORK", place.work())
        .env("BENCHCAGE_STATE_DIR", place.state())
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("transparent huge pages"), "{said}");
    assert_eq!(host.now(), ThpMode::Always, "after cleanup");
    assert!(!ledger.exists());
    assert_clean(&place, &id);
    drop(host);
}
