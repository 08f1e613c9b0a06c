//! `benchcage run --on slurm` against a real one-node Slurm cluster
//! (slurmctld + slurmd + munged, started by `scripts/slurm.sh`, which
//! `.ci/run` calls): a 4-cell matrix submitted, run and gathered into one
//! run and report; a job cancelled with scancel fails its cell while the
//! others finish; a submitter killed with SIGKILL and resumed re-attaches
//! to its jobs instead of submitting them again; the node leaves nothing.
//!
//! Needs root and redis-server. Without a cluster the tests say so and
//! pass, unless BENCHCAGE_REQUIRE_SLURM=1 (CI), where they fail.

mod support;

use benchcage::model::{CellStatus, RunStatus};
use benchcage::results::model::{CellRecord, RunRecord};
use benchcage::run::cluster::ClusterState;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::clean::assert_tmp_left_nothing;
use support::cli::bc_in;
use support::files::{cell_dirs, read_json};

/// One node, whole-node jobs: the tests take it one at a time.
static NODE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A test's folders, and the node held.
struct Place {
    tmp: tempfile::TempDir,
    _node: std::sync::MutexGuard<'static, ()>,
}

impl Place {
    /// `None` (the test passes, saying why) when no cluster answers and
    /// CI did not ask for one.
    fn new() -> Option<Place> {
        let node = NODE.lock().unwrap_or_else(|e| e.into_inner());
        let up = Command::new("sinfo")
            .args(["--noheader", "--format=%t"])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
        if !up {
            assert!(
                std::env::var("BENCHCAGE_REQUIRE_SLURM").as_deref() != Ok("1"),
                "no Slurm cluster answers `sinfo`; `bash scripts/slurm.sh` starts one"
            );
            eprintln!("skipped: no Slurm cluster (`bash scripts/slurm.sh` starts one)");
            return None;
        }
        let tmp = tempfile::Builder::new()
            .prefix("benchcage-slurm-test-")
            .tempdir()
            .unwrap();
        Some(Place { tmp, _node: node })
    }
    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
    fn command(&self, args: &[&str]) -> Command {
        let home = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut c = bc_in(
            &home,
            &self.path("results"),
            &self.path("work"),
            &self.path("state"),
        );
        c.arg("run").args(args);
        c
    }
    /// The one run folder.
    fn run_dir(&self) -> PathBuf {
        let dirs: Vec<PathBuf> = std::fs::read_dir(self.path("results"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("run.json").exists())
            .collect();
        assert_eq!(dirs.len(), 1, "one run folder: {dirs:?}");
        dirs[0].clone()
    }
    fn cells(&self) -> Vec<CellRecord> {
        cell_dirs(&self.run_dir())
            .iter()
            .map(|d| read_json(&d.join("cell.json")))
            .collect()
    }
    fn assert_clean(&self, run_id: &str) {
        assert_tmp_left_nothing(self.tmp.path(), run_id);
    }
}

/// A submitter that is SIGKILLed if a test fails while it runs; its jobs
/// are cancelled then too.
struct Submitter {
    child: Child,
    run_dir: Option<PathBuf>,
}

impl Drop for Submitter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(d) = &self.run_dir
            && let Ok(state) = ClusterState::load(d)
        {
            let ids: Vec<String> = state.jobs.values().map(|j| j.job_id.to_string()).collect();
            if !ids.is_empty() {
                let _ = Command::new("scancel").args(&ids).status();
            }
        }
    }
}

fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Slurm's state of job `id` (`RUNNING`, `COMPLETED`, ...).
fn job_state(id: u64) -> String {
    let out = Command::new("squeue")
        .args([
            "--noheader",
            "--states=all",
            &format!("--jobs={id}"),
            "--format=%T",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Every job Slurm knows of run `run_id` (by the comment benchcage gives).
fn jobs_of_run(run_id: &str) -> Vec<u64> {
    let out = Command::new("squeue")
        .args(["--noheader", "--states=all", "--format=%i|%k"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, c)| c.trim() == format!("benchcage {run_id}"))
        .filter_map(|(i, _)| i.trim().parse().ok())
        .collect()
}

/// The run folder once the submitter made it, and its Slurm state once
/// `n` jobs are in it.
fn jobs_submitted(place: &Place, n: usize) -> (PathBuf, ClusterState) {
    wait_for("the jobs to be submitted", Duration::from_secs(60), || {
        let dir = std::fs::read_dir(place.path("results"))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("slurm.json").exists())?;
        let state = ClusterState::load(&dir).ok()?;
        (state.jobs.len() >= n).then_some((dir, state))
    })
}

fn spawn(place: &Place, args: &[&str]) -> Submitter {
    let child = place
        .command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Submitter {
        child,
        run_dir: None,
    }
}

/// A submitter of tests/scenarios/slurm-long.yaml (3 cells, an 8 s
/// phase), once its 3 jobs are submitted: it, the run folder, the jobs.
fn submit_long(place: &Place) -> (Submitter, PathBuf, ClusterState) {
    let mut sub = spawn(place, &["tests/scenarios/slurm-long.yaml", "--on", "slurm"]);
    let (dir, state) = jobs_submitted(place, 3);
    sub.run_dir = Some(dir.clone());
    (sub, dir, state)
}

/// The cell key and job id of the first job submitted.
fn first_job(state: &ClusterState) -> (String, u64) {
    state
        .jobs
        .iter()
        .map(|(k, j)| (k.clone(), j.job_id))
        .min_by_key(|(_, id)| *id)
        .unwrap()
}

#[test]
fn a_four_cell_matrix_runs_as_slurm_jobs_gathered_into_one_run_and_report() {
    let Some(place) = Place::new() else { return };
    let out = place
        .command(&[
            "tests/scenarios/slurm-four.yaml",
            "--on",
            "slurm",
            "--max-parallel",
            "2",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let dir = place.run_dir();
    let run: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Finished, "{stderr}");
    let cells = place.cells();
    assert_eq!(cells.len(), 4);
    let state = ClusterState::load(&dir).unwrap();
    assert_eq!(state.jobs.len(), 4);
    for c in &cells {
        assert_eq!(c.status, CellStatus::Finished, "{}: {:?}", c.key, c.failure);
        let node = c
            .node
            .as_ref()
            .expect("a cell of a Slurm run records its node");
        assert_eq!(node.scheduler, "slurm");
        let job = &state.jobs[&c.key];
        assert_eq!(
            node.job_id,
            job.job_id.to_string(),
            "the cell ran in its own job"
        );
        assert_eq!(job.state, "COMPLETED");
        assert!(!node.allocation_cpus.is_empty() && node.allocation_memory_bytes.is_some());
        assert!(!node.host.class.is_empty() && node.host.cores > 0);
        assert!(c.phases.iter().all(|p| p.total_ops > 0));
    }
    // --max-parallel 2: the third job was submitted only once one of the
    // first two had ended.
    let mut jobs: Vec<_> = state.jobs.values().collect();
    jobs.sort_by_key(|j| j.job_id);
    let first_end = jobs[..2]
        .iter()
        .filter_map(|j| j.ended_at.clone())
        .min()
        .unwrap();
    assert!(jobs[2].submitted_at >= first_end, "{jobs:?}");
    // One report and one history transaction for the whole matrix.
    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(report.contains("Hardware"), "the report shows the class");
    assert!(report.contains(&cells[0].node.as_ref().unwrap().host.class));
    let db = place.path("results").join("history.sqlite");
    let rows =
        benchcage::results::history::rows_of_runs(&db, std::slice::from_ref(&run.run_id)).unwrap();
    let keys: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.cell_key.as_str()).collect();
    assert_eq!(keys.len(), 4, "every cell in the history");
    assert!(
        rows.iter()
            .all(|r| r.hardware_class == cells[0].node.as_ref().unwrap().host.class)
    );
    assert!(stderr.contains("slurm overhead per cell"), "{stderr}");
    // Stamped before sbatch returns: a job never starts before it was
    // submitted.
    assert!(!stderr.contains("submit to start -"), "{stderr}");
    place.assert_clean(&run.run_id);
}

#[test]
fn a_job_slurm_refuses_fails_the_run_and_its_record_says_failed_not_running() {
    let Some(place) = Place::new() else { return };
    let out = place
        .command(&[
            "tests/scenarios/slurm-four.yaml",
            "--on",
            "slurm",
            "--partition",
            "nosuchpartition",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nosuchpartition") || stderr.contains("partition"),
        "{stderr}"
    );
    let run: RunRecord = read_json(&place.run_dir().join("run.json"));
    assert_eq!(run.status, RunStatus::Failed, "{stderr}");
    assert!(
        run.note
            .as_deref()
            .unwrap_or_default()
            .contains("the run stopped: "),
        "{:?}",
        run.note
    );
    assert!(run.finished_at.is_some() && run.owner_pid.is_none());
    place.assert_clean(&run.run_id);
}

#[test]
fn a_job_cancelled_with_scancel_fails_its_cell_and_the_others_finish() {
    let Some(place) = Place::new() else { return };
    let (mut sub, dir, state) = submit_long(&place);
    let (victim_key, victim) = first_job(&state);
    // Cancelled once it runs its phase (the job's output tells the stages).
    let log = dir.join("slurm").join(format!("01-{victim}.out"));
    wait_for("the first job's phase", Duration::from_secs(600), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.contains("workload-c").then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        Command::new("scancel")
            .arg(victim.to_string())
            .status()
            .unwrap()
            .success()
    );
    let status = wait_for("the submitter to end", Duration::from_secs(900), || {
        sub.child.try_wait().unwrap()
    });
    assert_eq!(status.code(), Some(1), "a failed cell fails the run");
    let cells = place.cells();
    assert_eq!(cells.len(), 3);
    for c in &cells {
        if c.key == victim_key {
            assert_eq!(c.status, CellStatus::Failed);
            let why = c.failure.clone().unwrap_or_default();
            assert!(
                why.contains("CANCELLED") && why.contains(&victim.to_string()),
                "{why}"
            );
        } else {
            assert_eq!(c.status, CellStatus::Finished, "{}: {:?}", c.key, c.failure);
        }
    }
    let run: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Failed);
    place.assert_clean(&run.run_id);
}

#[test]
fn a_submitter_killed_and_resumed_reattaches_to_its_jobs_without_resubmitting() {
    let Some(place) = Place::new() else { return };
    let (mut sub, dir, state) = submit_long(&place);
    let (_, first) = first_job(&state);
    wait_for("the first job to run", Duration::from_secs(600), || {
        (job_state(first) == "RUNNING").then_some(())
    });
    sub.child.kill().unwrap();
    sub.child.wait().unwrap();
    let run_id = dir.file_name().unwrap().to_string_lossy().to_string();
    let before = ClusterState::load(&dir).unwrap();
    let out = place
        .command(&[
            "tests/scenarios/slurm-long.yaml",
            "--on",
            "slurm",
            "--resume",
            &run_id,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("re-attached to job {first}")),
        "{stderr}"
    );
    let after = ClusterState::load(&dir).unwrap();
    for (key, j) in &before.jobs {
        assert_eq!(
            after.jobs[key].job_id, j.job_id,
            "{key} was submitted again"
        );
        assert!(after.jobs[key].earlier.is_empty());
    }
    let mut all = jobs_of_run(&run_id);
    all.sort();
    let mut recorded: Vec<u64> = after.jobs.values().map(|j| j.job_id).collect();
    recorded.sort();
    assert_eq!(
        all, recorded,
        "Slurm has no job of this run but the first three"
    );
    assert!(
        place
            .cells()
            .iter()
            .all(|c| c.status == CellStatus::Finished)
    );
    let run: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Finished);
    drop(sub);
    place.assert_clean(&run_id);
}

#[test]
fn slurm_flags_without_a_cluster_run_are_refused_before_anything_is_made() {
    let Some(place) = Place::new() else { return };
    for (args, want) in [
        (
            vec!["tests/scenarios/slurm-four.yaml", "--partition", "bench"],
            "applies to `--on slurm` only",
        ),
        (
            vec![
                "tests/scenarios/slurm-four.yaml",
                "--on",
                "slurm",
                "--max-parallel",
                "0",
            ],
            "--max-parallel 0",
        ),
    ] {
        let out = place.command(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
    }
    // No Slurm tools on PATH: exit 2 naming what to do, no run folder.
    let out = place
        .command(&["tests/scenarios/slurm-four.yaml", "--on", "slurm"])
        .env("PATH", place.path("empty"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sinfo") && stderr.contains("scripts/slurm.sh"),
        "{stderr}"
    );
    assert!(
        !place.path("results").exists()
            || std::fs::read_dir(place.path("results"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[test]
fn a_cell_outside_its_jobs_allocation_is_refused_naming_what_is_outside() {
    use benchcage::run::facts::ProbeFacts;
    use benchcage::run::node::outside_allocation;
    let home = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let host = benchcage::host::HostFacts::probe();
    let target = benchcage::cli::ScenarioArgs {
        scenario: "tests/scenarios/slurm-four.yaml".into(),
        env: None,
        only: Some("r0".into()),
        set: vec![],
    };
    let cp = benchcage::run::session::command_plan(&home, &target, &host).unwrap();
    let c = &cp.plan.cells[0];
    let facts = ProbeFacts {
        probe: c.readiness.probe.clone(),
        facts: c.facts.clone(),
        digest_sql: None,
    };
    let work =
        benchcage::run::adapt::cell_work(c, "/bin/true".into(), std::sync::Arc::new(facts), None);
    // quickstart: server on CPU 1, client on CPU 0, 256 MiB.
    let mut node = benchcage::results::model::NodeRecord {
        job_id: "7".into(),
        name: "n1".into(),
        allocation_cpus: "0".into(),
        allocation_memory_bytes: Some(1 << 30),
        ..Default::default()
    };
    let why = outside_allocation(&work, &node).expect("CPU 1 is not allocated");
    assert!(
        why.contains("CPU(s) 1 are outside") && why.contains("job 7"),
        "{why}"
    );
    node.allocation_cpus = "0-1".into();
    node.allocation_memory_bytes = Some(64 << 20);
    let why = outside_allocation(&work, &node).expect("256 MiB is over 64 MiB");
    assert!(why.contains("memory caps add up to 256"), "{why}");
    node.allocation_memory_bytes = Some(1 << 30);
    assert_eq!(outside_allocation(&work, &node), None);
}

#[test]
fn ctrl_c_cancels_the_runs_jobs_and_leaves_the_run_resumable() {
    let Some(place) = Place::new() else { return };
    let (mut sub, dir, state) = submit_long(&place);
    let (_, first) = first_job(&state);
    wait_for("the first job to run", Duration::from_secs(600), || {
        (job_state(first) == "RUNNING").then_some(())
    });
    support::host::signal(&sub.child, nix::sys::signal::Signal::SIGINT);
    let status = wait_for("the submitter to end", Duration::from_secs(180), || {
        sub.child.try_wait().unwrap()
    });
    assert_eq!(status.code(), Some(130));
    let run_id = dir.file_name().unwrap().to_string_lossy().to_string();
    for id in jobs_of_run(&run_id) {
        assert_eq!(job_state(id), "CANCELLED", "job {id}");
    }
    let run: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Interrupted);
    assert!(run.note.unwrap_or_default().contains("--resume"));
    // A cell the cancelled job got to is not finished (it may not have
    // made its folder yet).
    if dir.join("cells").is_dir() {
        for d in cell_dirs(&dir) {
            if let Ok(b) = std::fs::read(d.join("cell.json")) {
                let c: CellRecord = serde_json::from_slice(&b).unwrap();
                assert_ne!(c.status, CellStatus::Finished, "{}", c.key);
            }
        }
    }
    place.assert_clean(&run_id);
}

/// Starts slurmd again when dropped, even if the test failed: the node is
/// every other test's too.
struct SlurmdBack;

impl Drop for SlurmdBack {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg("scripts/slurm.sh")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .status();
    }
}

#[test]
fn a_dead_slurmd_fails_the_job_it_ran_says_why_and_the_run_ends_failed_when_it_returns() {
    let Some(place) = Place::new() else { return };
    let err = place.path("submitter.err");
    let child = place
        .command(&["tests/scenarios/slurm-dead-node.yaml", "--on", "slurm"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut sub = Submitter {
        child,
        run_dir: None,
    };
    let (dir, state) = jobs_submitted(&place, 2);
    sub.run_dir = Some(dir.clone());
    let (victim_key, victim) = first_job(&state);
    let log = dir.join("slurm").join(format!("01-{victim}.out"));
    wait_for("the first job's phase", Duration::from_secs(600), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.contains("workload-c").then_some(())
    });
    // slurmd dies under the running job (its step lives on, as on a real
    // node whose slurmd crashed).
    let back = SlurmdBack;
    // The default partition's node is this machine, by its short name.
    let host = nix::unistd::gethostname().unwrap();
    let host = host.to_string_lossy();
    let host = host.split('.').next().unwrap();
    let pid: i32 = std::fs::read_to_string(format!("/run/benchcage-slurm/slurmd-{host}.pid"))
        .expect("slurmd's pid file (scripts/slurm.sh)")
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // The submitter says what it sees: the node stops answering, the
    // job fails as NODE_FAIL, the other jobs wait for the node.
    let said = |what: &str| {
        std::fs::read_to_string(&err)
            .unwrap_or_default()
            .contains(what)
    };
    let slurm_view = || {
        let out = |cmd: &str, args: &[&str]| {
            Command::new(cmd)
                .args(args)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        };
        format!(
            "submitter's stderr:\n{}\nsqueue:\n{}\nsinfo:\n{}",
            std::fs::read_to_string(&err).unwrap_or_default(),
            out("squeue", &["--states=all", "--format=%i %T %r"]),
            out("sinfo", &["--Node", "--format=%N %T %E"])
        )
    };
    let t0 = Instant::now();
    while !(said("FAILED: its Slurm job") && said("waits for nodes that cannot take it")) {
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "timed out waiting for the job's node to fail and the other job to wait for it\n{}",
            slurm_view()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let text = std::fs::read_to_string(&err).unwrap();
    assert!(
        text.contains(&format!("job {victim}'s node")) && text.contains("is not responding"),
        "{text}"
    );
    let failed: CellRecord = read_json(&dir.join("cells").join(&victim_key).join("cell.json"));
    assert_eq!(failed.status, CellStatus::Failed);
    let why = failed.failure.clone().unwrap_or_default();
    assert!(
        why.contains("NODE_FAIL")
            && why.contains("slurmd died")
            && why.contains(&victim.to_string()),
        "{why}"
    );
    // slurmd returns: the node serves again, the waiting jobs run, and the
    // run ends failed with the one cell failed.
    drop(back);
    let status = wait_for("the submitter to end", Duration::from_secs(900), || {
        sub.child.try_wait().unwrap()
    });
    assert_eq!(
        status.code(),
        Some(1),
        "{}",
        std::fs::read_to_string(&err).unwrap()
    );
    let cells = place.cells();
    assert_eq!(cells.len(), 2);
    for c in &cells {
        if c.key == victim_key {
            assert_eq!(c.status, CellStatus::Failed, "{:?}", c.failure);
            assert!(
                c.failure
                    .as_deref()
                    .unwrap_or_default()
                    .contains("NODE_FAIL")
            );
        } else {
            assert_eq!(c.status, CellStatus::Finished, "{}: {:?}", c.key, c.failure);
        }
    }
    let run: RunRecord = read_json(&dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Failed);
    // The returned slurmd ends the orphaned step of the failed job.
    wait_for(
        "the orphaned cell to be torn down",
        Duration::from_secs(120),
        || {
            (job_state(victim) != "RUNNING"
                && !std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
                    std::fs::read(p.path().join("cmdline"))
                        .map(|c| String::from_utf8_lossy(&c).contains(&victim_key))
                        .unwrap_or(false)
                }))
            .then_some(())
        },
    );
    place.assert_clean(&run.run_id);
}

/// No run folder under the test's results: nothing was made.
fn no_run_made(place: &Place) -> bool {
    std::fs::read_dir(place.path("results"))
        .map(|d| d.flatten().all(|e| !e.path().join("run.json").exists()))
        .unwrap_or(true)
}

#[test]
fn a_client_on_another_node_runs_there_in_a_two_node_job_and_one_node_refuses_it() {
    let Some(place) = Place::new() else { return };
    let remote = ["--set", "client.node=other"];
    let scenario = "tests/scenarios/slurm-remote.yaml";
    // Refused before anything exists: on this machine alone, in a
    // partition of one node, and with an emulated network besides.
    for (args, want) in [
        (vec![scenario], "this run has one machine"),
        (vec![scenario, "--on", "slurm"], "has 1"),
        (
            vec![
                scenario,
                "--on",
                "slurm",
                "--partition",
                "pair",
                "--set",
                "network.rate=10mbit",
            ],
            "a cell has one or the other",
        ),
    ] {
        let out = place
            .command(&[args.as_slice(), &remote].concat())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(want) && stderr.contains("client.node"),
            "{args:?}: {stderr}"
        );
        assert!(no_run_made(&place), "{args:?} made a run");
    }
    // In the two-node partition: the server on its node, the client on
    // the other, by Slurm's own placement.
    let args = [scenario, "--on", "slurm", "--partition", "pair"];
    let out = place
        .command(&[args.as_slice(), &remote].concat())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let cells = place.cells();
    assert_eq!(cells.len(), 1);
    let c = &cells[0];
    assert_eq!(c.status, CellStatus::Finished, "{:?}", c.failure);
    let node = c.node.as_ref().expect("the cell's node");
    let client = node.client.as_ref().expect("the client's placement");
    assert_ne!(client.node, node.name, "the client ran on the other node");
    assert_eq!(client.address, "127.0.0.1", "this cluster's NodeAddr");
    assert!(c.phases.iter().all(|p| p.total_ops > 0), "{:?}", c.phases);
    let dir = cell_dirs(&place.run_dir())[0].clone();
    // The server is sampled; the client is not (its cgroup here holds
    // only srun).
    let samples: Vec<benchcage::results::model::ResourceSample> =
        read_json(&dir.join("samples.json"));
    assert!(samples.iter().any(|s| s.cgroup == "server"));
    assert!(
        !samples.iter().any(|s| s.cgroup == "client"),
        "client sampled here"
    );
    // Each phase's log says where Slurm ran its generator.
    let logs: Vec<String> = std::fs::read_dir(dir.join("raw"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(!logs.is_empty());
    for log in &logs {
        assert!(
            log.contains(&format!("drive: on node {} ", client.node)),
            "{log}"
        );
    }
    let run: RunRecord = read_json(&place.run_dir().join("run.json"));
    place.assert_clean(&run.run_id);
}
