//! A data disk of its own (`server.disk.size`, issue 28 point 6), with a
//! real postgres on a real loop-mounted ext4: a load that overflows a
//! 64MiB disk fails its cell with the disk named; a disk large enough
//! runs, and fidelity reads its size back; a run killed with SIGKILL
//! leaves its disk mounted until `cleanup` unmounts it, detaches the loop
//! device and deletes the image. Nothing is left mounted after any, and
//! no PostgreSQL segment in the host's `/dev/shm` (the engine has its own).

mod support;

use benchcage::model::CellStatus;
use benchcage::results::model::{CellRecord, FidelityRecord, PhaseStatus, RunRecord};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::clean::assert_tmp_left_nothing;
use support::cli::bc_in;
use support::files::{cell_dirs, read_json};

const HOME: &str = env!("CARGO_MANIFEST_DIR");
const SCENARIO: &str = "tests/scenarios/run-disk.yaml";

/// A temp folder postgres can traverse (its user must reach the work dir).
struct Place {
    tmp: tempfile::TempDir,
    /// PostgreSQL's segments in the host's /dev/shm before the test.
    shm_before: Vec<String>,
}

/// PostgreSQL's dynamic shared memory files in the host's `/dev/shm`.
/// A postgres that panics or is killed leaves its own behind; the engine
/// has a `/dev/shm` of its own, so none may appear here.
fn postgres_shm() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("PostgreSQL."))
                .collect()
        })
        .unwrap_or_default()
}

impl Place {
    fn new() -> Place {
        let tmp = tempfile::Builder::new()
            .prefix("benchcage-disk-test-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        Place {
            tmp,
            shm_before: postgres_shm(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = bc_in(
            &PathBuf::from(HOME),
            &self.path("results"),
            &self.path("work"),
            &self.path("state"),
        );
        c.args(args).env("BENCHCAGE_SNAPSHOTS", "off");
        c
    }

    fn run(&self, extra: &[&str]) -> Output {
        let mut args = vec!["run", SCENARIO];
        args.extend_from_slice(extra);
        self.command(&args).output().unwrap()
    }

    /// The one run's folder.
    fn run_dir(&self) -> PathBuf {
        std::fs::read_dir(self.path("results"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("run.json").is_file())
            .expect("a run folder")
    }

    /// The one run's folder, its record, and its one cell's records.
    fn cell(&self) -> (RunRecord, CellRecord, FidelityRecord, PathBuf) {
        let run = self.run_dir();
        let cells = cell_dirs(&run);
        assert_eq!(cells.len(), 1);
        (
            read_json(&run.join("run.json")),
            read_json(&cells[0].join("cell.json")),
            read_json(&cells[0].join("fidelity.json")),
            run,
        )
    }

    fn assert_clean(&self, run_id: &str) {
        assert_tmp_left_nothing(self.tmp.path(), run_id);
        let loops = Command::new("losetup").arg("-a").output().unwrap();
        let loops = String::from_utf8_lossy(&loops.stdout);
        let here = self.tmp.path().to_string_lossy();
        assert!(!loops.contains(here.as_ref()), "losetup -a lists: {loops}");
        let new: Vec<String> = postgres_shm()
            .into_iter()
            .filter(|n| !self.shm_before.contains(n))
            .collect();
        assert!(new.is_empty(), "left in the host's /dev/shm: {new:?}");
    }
}

fn said(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

#[test]
fn a_load_that_overflows_a_64mib_disk_fails_naming_the_disk_and_leaves_nothing_mounted() {
    let place = Place::new();
    let out = place.run(&[]);
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let (run, cell, fid, _) = place.cell();
    assert_eq!(cell.status, CellStatus::Failed);
    let why = cell.failure.unwrap_or_default();
    assert!(
        why.starts_with("the data disk of 64MiB is full (ENOSPC"),
        "{why}"
    );
    assert!(why.contains("server.disk.size"), "{why}");
    assert!(text.contains("the data disk of 64MiB is full"), "{text}");
    let load = cell.phases.first().expect("the load phase's result");
    match &load.status {
        PhaseStatus::Failed { reason } => {
            assert!(
                reason.starts_with("the data disk of 64MiB is full"),
                "{reason}"
            )
        }
        other => panic!("the load should fail on the full disk: {other:?}"),
    }
    let disk = fid.disk.expect("fidelity records the disk");
    assert_eq!(disk.asked.to_string(), "64MiB");
    assert!(disk.read_back.mounted);
    assert_eq!(disk.read_back.fs_type, "ext4");
    let mib = disk.read_back.size.0 / (1 << 20);
    assert!((40..=64).contains(&mib), "{mib} MiB read back");
    place.assert_clean(&run.run_id);
}

#[test]
fn a_disk_large_enough_runs_and_fidelity_reads_its_size_back() {
    let place = Place::new();
    let out = place.run(&["--set", "records=500", "--set", "server.disk.size=256MiB"]);
    assert!(out.status.success(), "{}", said(&out));
    let (run, cell, fid, dir) = place.cell();
    assert_eq!(cell.status, CellStatus::Finished);
    let disk = fid.disk.expect("fidelity records the disk");
    assert_eq!(disk.asked.to_string(), "256MiB");
    assert!(disk.read_back.mounted && disk.read_back.fs_type == "ext4");
    let mib = disk.read_back.size.0 / (1 << 20);
    assert!((200..=256).contains(&mib), "{mib} MiB read back");
    // (A busy host may void phases for contention; the disk is never why.)
    assert!(
        !fid.violations.iter().any(|v| v.contains("disk")),
        "{:?}",
        fid.violations
    );
    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        report.contains("Data disk") && report.contains("256MiB asked; ext4 filesystem of"),
        "the report's fidelity facts show the disk"
    );
    place.assert_clean(&run.run_id);
}

/// Every mount point under `dir` (from /proc/self/mountinfo).
fn mounts_under(dir: &Path) -> Vec<String> {
    benchcage::sandbox::disk::leftovers_under(dir)
}

#[test]
fn a_run_killed_with_sigkill_keeps_its_disk_until_cleanup_removes_mount_loop_device_and_image() {
    let place = Place::new();
    let mut child = place
        .command(&[
            "run",
            SCENARIO,
            "--set",
            "records=500",
            "--set",
            "server.disk.size=128MiB",
            "--set",
            "duration=60s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let work = place.path("work");
    let deadline = Instant::now() + Duration::from_secs(120);
    // The reads phase runs once the data disk holds the loaded data.
    let phase_file = || {
        walk(&place.path("results"))
            .iter()
            .any(|f| f.to_string_lossy().contains("-reads-t1"))
    };
    while !phase_file() {
        assert!(Instant::now() < deadline, "the reads phase never started");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(200));
    }
    let before = mounts_under(&work);
    assert!(
        before.iter().any(|m| m.starts_with("mount "))
            && before.iter().any(|m| m.starts_with("loop")),
        "the disk is mounted while the run lives: {before:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !mounts_under(&work).is_empty(),
        "nothing removed the disk of a killed run yet"
    );
    let out = place.command(&["cleanup"]).output().unwrap();
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("data disk"), "{text}");
    let images: Vec<PathBuf> = walk(&work)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".disk.img"))
        .collect();
    assert!(images.is_empty(), "images left: {images:?}");
    let run: RunRecord = read_json(&place.run_dir().join("run.json"));
    place.assert_clean(&run.run_id);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
            out.push(e.path());
        }
    }
    out
}

/// `benchcage plan` of the disk scenario with `sets`, the work root said
/// to have 20GiB free: its exit code and what it said.
fn plan(sets: &[&str]) -> (Option<i32>, String) {
    let place = Place::new();
    let mut args = vec!["plan", SCENARIO];
    for s in sets {
        args.extend_from_slice(&["--set", s]);
    }
    let out = place
        .command(&args)
        .env("BENCHCAGE_WORK_FREE", "20GiB")
        .output()
        .unwrap();
    assert!(
        !place.path("work").exists() && !place.path("state").exists(),
        "plan created nothing"
    );
    (out.status.code(), said(&out))
}

#[test]
fn plan_describes_the_disk_and_refuses_one_too_small_too_large_or_under_io_limits() {
    let (code, text) = plan(&[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("data disk the data dir on an ext4 filesystem of 64MiB of its own")
            && text.contains("more than the disk: the load will fill it"),
        "{text}"
    );
    let (code, text) = plan(&["server.disk.size=8MiB"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--set: server.disk.size=8MiB: a data disk")
            && text.contains("a data disk of 8MiB is too small")
            && text.contains("use at least 16MiB"),
        "{text}"
    );
    let (code, text) = plan(&["server.disk.size=64GiB"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("a data disk of 64GiB is more than the 20.0GiB free in")
            && text.contains("(where its image file goes)"),
        "{text}"
    );
    let (code, text) = plan(&["server.io.write_bps=10MiB"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("a data disk with `server.io` limits")
            && text.contains("outside the server's cgroup"),
        "{text}"
    );
    let (code, text) = plan(&["server.disk.size=lots"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("`lots` is not a size"), "{text}");
}
