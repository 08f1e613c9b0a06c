//! What a run killed outright (SIGKILL, power cut) leaves outside the
//! ledger: a `run.json` that says `running` forever, and empty work
//! folders. `benchcage cleanup` marks such runs `interrupted` and removes
//! the folders; runs whose benchcage is alive are never touched.

use crate::model::RunStatus;
use crate::results::atomic::write_json_atomic;
use crate::results::layout::{self, RunPaths};
use crate::results::model::RunRecord;
use crate::run::id::RunId;
use crate::run::resume;
use crate::sandbox::ledger;
use std::path::{Path, PathBuf};

/// The benchcage process that writes a run's record: this one.
pub(crate) fn this_process() -> (i32, Option<u64>) {
    let pid = std::process::id() as i32;
    (pid, ledger::process_start_time(pid))
}

/// Whether the process recorded as the run's owner is still that process.
/// A record without an owner (written before owners were recorded) counts
/// as live: nothing says it is dead.
pub(crate) fn owner_alive(rec: &RunRecord) -> bool {
    match (rec.owner_pid, rec.owner_start) {
        (Some(pid), Some(start)) => ledger::is_alive(pid, start),
        _ => true,
    }
}

/// A run that said `running` although its benchcage is gone.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DeadRun {
    pub run_id: String,
    pub run_json: PathBuf,
    pub owner_pid: i32,
}

/// Every run under `results_root` whose record says `running` and whose
/// owner is dead. With `dry_run` false, each record is rewritten
/// atomically as `interrupted`, with a note saying how to resume.
pub(crate) fn mark_dead_runs(results_root: &Path, dry_run: bool) -> Vec<Result<DeadRun, String>> {
    let mut out = Vec::new();
    for id in layout::list_run_ids(results_root) {
        let path = RunPaths::new(results_root, &id).run_json();
        let Some(rec) = read_record(&path) else {
            continue;
        };
        if rec.status != RunStatus::Running || owner_alive(&rec) {
            continue;
        }
        let dead = DeadRun {
            run_id: rec.run_id.clone(),
            run_json: path.clone(),
            owner_pid: rec.owner_pid.unwrap_or_default(),
        };
        if dry_run {
            out.push(Ok(dead));
            continue;
        }
        out.push(mark_interrupted(&path, rec).map(|()| dead));
    }
    out
}

/// Runs under `results_root` that say `running` and whose owner is alive
/// (or unknown): their work folders are in use.
pub(crate) fn live_runs(results_root: &Path) -> Vec<String> {
    layout::list_run_ids(results_root)
        .into_iter()
        .filter(|id| {
            read_record(&RunPaths::new(results_root, id).run_json())
                .is_some_and(|r| r.status == RunStatus::Running && owner_alive(&r))
        })
        .collect()
}

fn read_record(path: &Path) -> Option<RunRecord> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn mark_interrupted(path: &Path, mut rec: RunRecord) -> Result<(), String> {
    // A `--resume` may have taken the run over since it was read: only a
    // record that still names the dead owner is rewritten.
    match read_record(path) {
        Some(now) if now.owner_pid == rec.owner_pid && now.owner_start == rec.owner_start => {}
        _ => return Ok(()),
    }
    let pid = rec.owner_pid.unwrap_or_default();
    rec.status = RunStatus::Interrupted;
    rec.note = Some(format!(
        "benchcage (pid {pid}) died before the run ended; `benchcage cleanup` marked it \
         interrupted; to finish the remaining cells: {}",
        resume::resume_command(&rec.command_line, &rec.run_id)
    ));
    rec.owner_pid = None;
    rec.owner_start = None;
    write_json_atomic(path, &rec).map_err(|e| format!("marking {}: {e}", path.display()))
}

/// Empty folders under `work_root` of runs that are over: each run's
/// folder (named by its run id) and the empty cell folders in it, deepest
/// first. Skipped: a run with a ledger in `ledger_root` (a live run is
/// provisioning, or a dead one's leftovers were not all removed) and any
/// run in `live`. Only empty folders are removed, never their contents.
pub(crate) fn remove_empty_work_dirs(
    work_root: &Path,
    ledger_root: &Path,
    live: &[String],
    dry_run: bool,
) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(work_root) else {
        return removed;
    };
    let ledgers: Vec<String> = std::fs::read_dir(ledger_root)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || RunId::parse(&name).is_err() || live.contains(&name) {
            continue;
        }
        if ledgers.iter().any(|l| l.starts_with(&format!("{name}-"))) {
            continue;
        }
        remove_empty_tree(&e.path(), dry_run, &mut removed);
    }
    removed
}

/// Removes `dir` bottom-up when it holds nothing but empty folders;
/// returns whether it is (or, with `dry_run`, would be) gone.
fn remove_empty_tree(dir: &Path, dry_run: bool, removed: &mut Vec<PathBuf>) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut empty = true;
    for e in entries.flatten() {
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !(is_dir && remove_empty_tree(&e.path(), dry_run, removed)) {
            empty = false;
        }
    }
    if empty && (dry_run || std::fs::remove_dir(dir).is_ok()) {
        removed.push(dir.to_path_buf());
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(dir: &Path, id: &str, status: RunStatus, owner: Option<(i32, u64)>) -> PathBuf {
        let rec = RunRecord {
            run_id: id.into(),
            status,
            owner_pid: owner.map(|o| o.0),
            owner_start: owner.map(|o| o.1),
            ..Default::default()
        };
        let path = RunPaths::new(dir, id).run_json();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_vec(&rec).unwrap()).unwrap();
        path
    }

    #[test]
    fn only_running_runs_with_a_dead_owner_are_marked_interrupted() {
        let t = tempfile::tempdir().unwrap();
        let (pid, start) = this_process();
        let me = Some((pid, start.unwrap()));
        // A pid's start time can never be in the future: that owner is gone.
        let gone = Some((pid, u64::MAX));
        let dead = record(t.path(), "20261130-101500-aaaa", RunStatus::Running, gone);
        let live = record(t.path(), "20261130-101500-bbbb", RunStatus::Running, me);
        let done = record(t.path(), "20261130-101500-cccc", RunStatus::Finished, gone);
        let before: Vec<Vec<u8>> = [&live, &done]
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        let dry = mark_dead_runs(t.path(), true);
        assert_eq!(dry.len(), 1);
        assert_eq!(read_record(&dead).unwrap().status, RunStatus::Running);
        let marked = mark_dead_runs(t.path(), false);
        assert_eq!(marked[0].as_ref().unwrap().run_id, "20261130-101500-aaaa");
        let rec = read_record(&dead).unwrap();
        assert_eq!(rec.status, RunStatus::Interrupted);
        assert!(rec.note.unwrap().contains("--resume 20261130-101500-aaaa"));
        assert_eq!(rec.owner_pid, None);
        for (p, b) in [&live, &done].iter().zip(before) {
            assert_eq!(std::fs::read(p).unwrap(), b);
        }
        assert!(mark_dead_runs(t.path(), false).is_empty());
    }

    #[test]
    fn only_empty_work_folders_of_runs_without_a_ledger_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let (work, ledgers) = (t.path().join("work"), t.path().join("state"));
        std::fs::create_dir_all(&ledgers).unwrap();
        let empty = work.join("20261130-101500-aaaa");
        std::fs::create_dir_all(empty.join("01")).unwrap();
        std::fs::create_dir_all(empty.join("02")).unwrap();
        let kept = work.join("20261130-101500-bbbb");
        std::fs::create_dir_all(kept.join("01/data")).unwrap();
        std::fs::write(kept.join("01/data/x"), b"x").unwrap();
        std::fs::create_dir_all(kept.join("02")).unwrap();
        let ledgered = work.join("20261130-101500-cccc");
        std::fs::create_dir_all(ledgered.join("01")).unwrap();
        std::fs::write(ledgers.join("20261130-101500-cccc-01.ledger"), b"").unwrap();
        let live = work.join("20261130-101500-dddd");
        std::fs::create_dir_all(&live).unwrap();
        let other = work.join("not-a-run");
        std::fs::create_dir_all(&other).unwrap();

        let would = remove_empty_work_dirs(&work, &ledgers, &[], true);
        assert!(would.contains(&empty) && empty.exists());
        let gone = remove_empty_work_dirs(&work, &ledgers, &["20261130-101500-dddd".into()], false);
        assert!(!empty.exists(), "{gone:?}");
        assert!(gone.contains(&kept.join("02")) && !kept.join("02").exists());
        assert!(kept.join("01/data/x").exists());
        assert!(ledgered.join("01").exists() && live.exists() && other.exists());
    }
}
