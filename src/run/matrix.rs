//! The matrix: every cell of a plan in order, each recorded as it ends;
//! a failed cell is recorded with its reason and the matrix goes on; an
//! interrupt stops after tearing the current cell down and prints how to
//! resume; `--resume` runs only the cells that did not finish.

use crate::error::bad_input;
use crate::metrics::procfs;
use crate::model::{CellStatus, RunStatus};
use crate::results::atomic::{json_bytes, write_all_atomic, write_atomic, write_json_atomic};
use crate::results::layout::{CellPaths, RunPaths};
use crate::results::model::{
    CellRecord, HostInfo, PhaseResult, PhaseStatus, ResourceSample, RunRecord,
};
use crate::run::cell::{CellCtx, CellWork, CellWriter, run_cell};
use crate::run::claim;
use crate::run::disk;
use crate::run::id::RunId;
use crate::run::live::Live;
use crate::run::lock::{LockError, RunLock};
use crate::run::resume::{self, CellState};
use crate::run::signals::Interrupts;
use crate::sandbox::Sandbox;
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the run records about itself, known before the first cell.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunInfo {
    pub scenario: String,
    pub scenario_hash: String,
    pub spec_hashes: BTreeMap<String, String>,
    pub overrides: BTreeMap<String, String>,
    pub host: HostInfo,
    pub benchcage_version: String,
    pub git_rev: String,
    /// The command line that started the run, without `--resume`: the
    /// resume hint repeats it (see `resume::resume_command`).
    pub command_line: Vec<String>,
}

/// Creates the sandbox of a cell (cgroup or docker backend).
pub(crate) type SandboxFactory =
    Box<dyn Fn(&CellWork, &str) -> anyhow::Result<Box<dyn Sandbox + Sync>> + Send + Sync>;

/// Gets what a cell needs before its sandbox exists (on the docker
/// backend: its image, pulled when missing). An error fails the cell with
/// nothing created for it.
pub(crate) type PrepareFn = Box<
    dyn for<'a> Fn(&'a CellWork) -> futures::future::BoxFuture<'a, anyhow::Result<()>>
        + Send
        + Sync,
>;

/// How the matrix ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct MatrixOutcome {
    pub run_id: String,
    pub dir: PathBuf,
    pub finished: usize,
    pub failed: usize,
    /// Cells skipped because an earlier attempt of this run finished them.
    pub skipped: usize,
    /// Cells that ran in this invocation.
    pub ran: Vec<String>,
    pub interrupted: bool,
    pub status: RunStatus,
    /// Phases that failed (did not finish, spent their error budget, or
    /// were OOM-killed) in cells that otherwise finished.
    pub phases_failed: usize,
}

/// Phases of a finished cell that failed or were OOM-killed (an invalid
/// phase ran to its end: its fidelity flag says what is wrong with it).
pub(crate) fn failed_phases(rec: &CellRecord) -> usize {
    rec.phases
        .iter()
        .filter(|p| {
            matches!(
                p.status,
                PhaseStatus::Failed { .. } | PhaseStatus::Oom { .. }
            )
        })
        .count()
}

/// Writes cell files atomically (temp, fsync, rename, fsync folder).
pub(crate) struct AtomicWriter;

impl CellWriter for AtomicWriter {
    fn phase(
        &self,
        cell_dir: &Path,
        index: usize,
        stem: &str,
        result: &PhaseResult,
    ) -> anyhow::Result<()> {
        let _ = index;
        let cp = cell_paths(cell_dir);
        let path = cp.phases_dir().join(format!("{stem}.json"));
        Ok(write_json_atomic(&cp.writable(&path), result)?)
    }
    fn end(
        &self,
        cell_dir: &Path,
        samples: &[ResourceSample],
        rec: &CellRecord,
    ) -> anyhow::Result<()> {
        let cp = cell_paths(cell_dir);
        let samples_json = cp.writable(&cp.samples_json());
        let fidelity_json = cp.writable(&cp.fidelity_json());
        let cell_json = cp.writable(&cp.cell_json());
        let files = vec![
            (samples_json.clone(), json_bytes(&samples_json, &samples)?),
            (
                fidelity_json.clone(),
                json_bytes(&fidelity_json, &rec.fidelity)?,
            ),
            (cell_json.clone(), json_bytes(&cell_json, rec)?),
        ];
        Ok(write_all_atomic(&files)?)
    }
    fn cell(&self, cell_dir: &Path, rec: &CellRecord) -> anyhow::Result<()> {
        let cp = cell_paths(cell_dir);
        Ok(write_json_atomic(&cp.writable(&cp.cell_json()), rec)?)
    }
    fn file(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        Ok(write_atomic(path, bytes)?)
    }
    fn files(&self, files: &[(PathBuf, Vec<u8>)]) -> anyhow::Result<()> {
        Ok(write_all_atomic(files)?)
    }
}

fn cell_paths(cell_dir: &Path) -> CellPaths {
    CellPaths {
        dir: cell_dir.to_path_buf(),
    }
}

pub use crate::sandbox::roots::work_root;

/// Run (or resume) the matrix of `cells` and write the run's records.
pub(crate) async fn run_matrix(
    info: RunInfo,
    cells: Vec<CellWork>,
    results_root: &Path,
    resume_id: Option<&str>,
    make_sandbox: SandboxFactory,
    prepare: PrepareFn,
    interrupts: Interrupts,
) -> anyhow::Result<MatrixOutcome> {
    let keys: Vec<String> = cells.iter().map(|c| c.key.clone()).collect();
    let (run_id, mut record, states) = match resume_id {
        Some(id) => open_resumed(results_root, id, &info, &keys)?,
        None => {
            // Before the run's folder exists: a full disk creates nothing.
            disk::check_free(results_root, disk::MIN_FREE)?;
            new_run_folder(results_root, &info, keys)?
        }
    };
    if resume_id.is_some() {
        disk::check_free(results_root, disk::MIN_FREE)?;
    }
    let paths = RunPaths::new(results_root, run_id.as_str());
    // Held to the end of the run: a `--resume` of this run while it is
    // live is refused here, before it touches anything of this run.
    let _lock = RunLock::acquire(&paths.dir, run_id.as_str()).map_err(|e| match e {
        LockError::Held { .. } => bad_input(format!("--resume {run_id}: {e}")),
        other => anyhow::Error::new(other),
    })?;
    restart(&mut record, &info);
    write_json_atomic(&paths.run_json(), &record)
        .with_context(|| format!("writing the run record of {run_id}"))?;
    // Room for the final run record when a cell fills the results disk.
    let reserve = disk::Reserve::hold(&paths.dir);
    let body = matrix_body(
        (&info, &cells, &states),
        &run_id,
        &paths,
        &mut record,
        &interrupts,
        (&make_sandbox, &prepare),
    )
    .await;
    drop(reserve);
    match body {
        Ok(out) => {
            write_json_atomic(&paths.run_json(), &record)
                .with_context(|| format!("writing the run record of {run_id}"))?;
            if let Some(note) = &record.note {
                eprintln!("{note}");
            }
            Ok(out)
        }
        Err(e) => Err(end_unfinished(&paths, &mut record, &interrupts, e)),
    }
}

/// The run record of a run that stopped on an error: `interrupted` when
/// an interrupt came first, else `failed`, with the error as its note;
/// the error is returned with a failure to write the record added to it.
pub(crate) fn end_unfinished(
    paths: &RunPaths,
    record: &mut RunRecord,
    interrupts: &Interrupts,
    err: anyhow::Error,
) -> anyhow::Error {
    record.status = if interrupts.stop.is_cancelled() {
        RunStatus::Interrupted
    } else {
        RunStatus::Failed
    };
    record.note = Some(format!("the run stopped: {err:#}"));
    record.finished_at = Some(chrono::Utc::now().to_rfc3339());
    (record.owner_pid, record.owner_start) = (None, None);
    match write_json_atomic(&paths.run_json(), record) {
        Ok(()) => err,
        Err(w) => err.context(format!(
            "and its run record {} could not be marked {} ({w})",
            paths.run_json().display(),
            record.status
        )),
    }
}

/// The cells of a run whose record says `running`; the record as the
/// matrix ended, not yet written.
async fn matrix_body(
    (info, cells, states): (&RunInfo, &[CellWork], &BTreeMap<String, CellState>),
    run_id: &RunId,
    paths: &RunPaths,
    record: &mut RunRecord,
    interrupts: &Interrupts,
    (make_sandbox, prepare): (&SandboxFactory, &PrepareFn),
) -> anyhow::Result<MatrixOutcome> {
    let m = Matrix::new(
        run_id,
        paths,
        interrupts,
        (make_sandbox, prepare),
        cells.len(),
    );
    m.say(&format!(
        "run {run_id}: {} cell(s), results in {}",
        cells.len(),
        paths.dir.display()
    ));
    let mut out = MatrixOutcome {
        run_id: run_id.to_string(),
        dir: paths.dir.clone(),
        ..Default::default()
    };
    let ended = m.cells(cells, states, &mut out).await;
    let _ = std::fs::remove_dir(&m.work_dir);
    // The shared work root goes too once no other run uses it (a live run's
    // folder keeps it: remove_dir refuses a non-empty directory).
    let _ = std::fs::remove_dir(work_root());
    if let Some(note) = ended? {
        record.status = RunStatus::Failed;
        record.note = Some(note);
    }
    out.interrupted = interrupts.stop.is_cancelled();
    conclude(record, &out, info, run_id);
    out.status = record.status;
    Ok(out)
}

/// Run cell `index` of `cells` alone into the existing run `run_id`, as
/// one job of a cluster run (`run --on slurm`) does on its node. The run's
/// submitter holds the run and writes its record; this writes only the
/// cell's folder.
pub(crate) async fn run_one_cell(
    cells: &[CellWork],
    index: usize,
    results_root: &Path,
    run_id: &str,
    make_sandbox: SandboxFactory,
    prepare: PrepareFn,
    interrupts: Interrupts,
) -> anyhow::Result<MatrixOutcome> {
    let run_id = RunId::parse(run_id).map_err(|e| bad_input(e.0))?;
    let paths = RunPaths::new(results_root, run_id.as_str());
    if !paths.run_json().is_file() {
        return Err(bad_input(format!(
            "run {run_id} has no record at {}: a cell job runs into a run its submitter started",
            paths.run_json().display()
        )));
    }
    let m = Matrix::new(
        &run_id,
        &paths,
        &interrupts,
        (&make_sandbox, &prepare),
        cells.len(),
    );
    let mut out = MatrixOutcome {
        run_id: run_id.to_string(),
        dir: paths.dir.clone(),
        ..Default::default()
    };
    if let CellEnd::WriteFailed(note) = m.cell(index, &cells[index], &mut out).await? {
        m.say(&note);
    }
    let _ = std::fs::remove_dir(&m.work_dir);
    let _ = std::fs::remove_dir(work_root());
    out.interrupted = interrupts.stop.is_cancelled();
    Ok(out)
}

/// A new run's id and record, its folder under `results_root` created
/// for it alone: an id whose folder exists (another run started in the
/// same millisecond with the same random bits) is drawn again.
pub(crate) fn new_run_folder(
    results_root: &Path,
    info: &RunInfo,
    keys: Vec<String>,
) -> anyhow::Result<(RunId, RunRecord, BTreeMap<String, CellState>)> {
    std::fs::create_dir_all(results_root)
        .with_context(|| format!("creating the results folder {}", results_root.display()))?;
    loop {
        let fresh = new_run(info, keys.clone());
        let dir = RunPaths::new(results_root, fresh.0.as_str()).dir;
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(fresh),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("creating the run folder {}", dir.display())));
            }
        }
    }
}

/// A new run's id and record, with no cell done yet.
pub(crate) fn new_run(
    info: &RunInfo,
    keys: Vec<String>,
) -> (RunId, RunRecord, BTreeMap<String, CellState>) {
    let id = RunId::new(chrono::Utc::now());
    let rec = RunRecord {
        run_id: id.to_string(),
        scenario: info.scenario.clone(),
        scenario_hash: info.scenario_hash.clone(),
        spec_hashes: info.spec_hashes.clone(),
        started_at: chrono::Utc::now().to_rfc3339(),
        host: info.host.clone(),
        benchcage_version: info.benchcage_version.clone(),
        git_rev: info.git_rev.clone(),
        overrides: info.overrides.clone(),
        cells: keys,
        status: RunStatus::Running,
        ..Default::default()
    };
    (id, rec, BTreeMap::new())
}

/// The run record as this process starts (or resumes) the run: running,
/// owned by this process.
pub(crate) fn restart(record: &mut RunRecord, info: &RunInfo) {
    record.status = RunStatus::Running;
    record.finished_at = None;
    record.note = None;
    // A resume keeps the command line of the run's first start.
    if record.command_line.is_empty() {
        record.command_line = info.command_line.clone();
    }
    (record.owner_pid, record.owner_start) = match crate::run::orphans::this_process() {
        (pid, Some(start)) => (Some(pid), Some(start)),
        _ => (None, None),
    };
}

/// The run record once the matrix ended: its status, how to resume, the
/// peak memory of benchcage itself.
pub(crate) fn conclude(
    record: &mut RunRecord,
    out: &MatrixOutcome,
    info: &RunInfo,
    run_id: &RunId,
) {
    let resume_hint = resume::resume_command(&info.command_line, run_id.as_str());
    if out.interrupted {
        record.status = RunStatus::Interrupted;
        record.note = Some(format!(
            "interrupted; to finish the remaining cells: {resume_hint}"
        ));
    } else if record.status != RunStatus::Failed {
        record.status = if out.failed > 0 {
            RunStatus::Failed
        } else {
            RunStatus::Finished
        };
        if out.failed > 0 {
            record.note = Some(format!(
                "{} cell(s) failed; to run them again: {resume_hint}",
                out.failed
            ));
        } else if out.phases_failed > 0 {
            record.note = Some(format!(
                "{} phase(s) failed (see cell.json of each); they are not results",
                out.phases_failed
            ));
        }
    }
    record.finished_at = Some(chrono::Utc::now().to_rfc3339());
    (record.owner_pid, record.owner_start) = (None, None);
    let peak = procfs::self_peak_rss(Path::new(procfs::PROC));
    record.benchcage_peak_rss_bytes = peak.max(record.benchcage_peak_rss_bytes);
}

/// How one cell of the matrix ended, for the matrix.
enum CellEnd {
    /// Go on with the next cell.
    Next,
    /// Interrupted before the cell started.
    Stopped,
    /// The results disk refused a write: later cells would fail the same
    /// way. The run's note.
    WriteFailed(String),
}

/// What every cell of one run shares.
struct Matrix<'a> {
    run_id: &'a RunId,
    paths: &'a RunPaths,
    /// The run's folder under the work root (engine data dirs).
    work_dir: PathBuf,
    live: Arc<Mutex<Live>>,
    interrupts: &'a Interrupts,
    make_sandbox: &'a SandboxFactory,
    prepare: &'a PrepareFn,
    total: usize,
}

impl<'a> Matrix<'a> {
    /// The matrix of run `run_id` over `total` cells, its live view on
    /// stderr.
    fn new(
        run_id: &'a RunId,
        paths: &'a RunPaths,
        interrupts: &'a Interrupts,
        (make_sandbox, prepare): (&'a SandboxFactory, &'a PrepareFn),
        total: usize,
    ) -> Self {
        Matrix {
            work_dir: work_root().join(run_id.as_str()),
            run_id,
            paths,
            live: Arc::new(Mutex::new(Live::stderr())),
            interrupts,
            make_sandbox,
            prepare,
            total,
        }
    }

    fn say(&self, msg: &str) {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).say(msg);
    }

    /// Every cell in order, but those an earlier attempt finished; stops
    /// at an interrupt, or at a failed write (the run's note).
    async fn cells(
        &self,
        cells: &[CellWork],
        states: &BTreeMap<String, CellState>,
        out: &mut MatrixOutcome,
    ) -> anyhow::Result<Option<String>> {
        for (i, cell) in cells.iter().enumerate() {
            if self.interrupts.stop.is_cancelled() {
                break;
            }
            if states.get(&cell.key).is_some_and(CellState::is_done) {
                out.skipped += 1;
                out.finished += 1;
                self.say(&format!(
                    "[{}/{} {}] finished earlier, skipped",
                    i + 1,
                    self.total,
                    cell.label
                ));
                continue;
            }
            match self.cell(i, cell, out).await? {
                CellEnd::Next => {}
                CellEnd::Stopped => break,
                CellEnd::WriteFailed(note) => return Ok(Some(note)),
            }
        }
        Ok(None)
    }

    /// Run cell `i` (its image first, then its CPUs, its sandbox and its
    /// lifecycle), counted in `out` and told on the terminal.
    async fn cell(
        &self,
        i: usize,
        cell: &CellWork,
        out: &mut MatrixOutcome,
    ) -> anyhow::Result<CellEnd> {
        let position = format!("{}/{}", i + 1, self.total);
        let cell_paths = self.paths.cell(&cell.key);
        set_aside_attempt(&self.paths.dir, &cell_paths.dir)?;
        let sandbox_id = format!("{}-{:02}", self.run_id, i + 1);
        // Before the CPUs are claimed: a pull needs none of them.
        let prepared = tokio::select! {
            r = (self.prepare)(cell) => r,
            _ = self.interrupts.stop.cancelled() => return Ok(CellEnd::Stopped),
        };
        let ctx = CellCtx {
            run_id: self.run_id.to_string(),
            sandbox_id: sandbox_id.clone(),
            cell_dir: cell_paths.dir.clone(),
            work_dir: self.work_dir.clone(),
            stop: self.interrupts.stop.clone(),
            hurry: self.interrupts.hurry.clone(),
            live: self.live.clone(),
            position: position.clone(),
        };
        if let Err(e) = prepared {
            out.ran.push(cell.key.clone());
            let why = format!("getting its image: {e:#}");
            return Ok(self.tell(
                failed_before_start(cell, &ctx.cell_dir, &why).map(|_| Err(why)),
                cell,
                &position,
                out,
            ));
        }
        let Some(_claim) = self.claim(cell, &sandbox_id, &position).await else {
            return Ok(CellEnd::Stopped);
        };
        out.ran.push(cell.key.clone());
        let sandboxes = (self.make_sandbox)(cell, &sandbox_id).and_then(|sb| {
            let replicas = cell
                .replicas
                .iter()
                .map(|m| (self.make_sandbox)(cell, &format!("{sandbox_id}-{}", m.name)))
                .collect::<anyhow::Result<Vec<_>>>()?;
            Ok((sb, replicas))
        });
        let rec = match sandboxes {
            Ok((sb, replicas)) => run_cell(cell, sb, replicas, &ctx, &AtomicWriter).await,
            Err(e) => {
                failed_before_start(cell, &ctx.cell_dir, &format!("creating the sandbox: {e:#}"))
            }
        };
        Ok(self.tell(rec.map(Ok), cell, &position, out))
    }

    /// Wait while a live run holds any of the cell's CPUs (issue 15, D2);
    /// `None` when interrupted meanwhile. A claim that cannot be made is a
    /// warning: the cell runs without it.
    async fn claim(
        &self,
        cell: &CellWork,
        sandbox_id: &str,
        position: &str,
    ) -> Option<Option<claim::Held>> {
        let cpus = cell.all_cpus();
        let claimed = claim::acquire(
            &claim::default_dir(),
            sandbox_id,
            self.run_id.as_str(),
            &cpus,
            &self.interrupts.stop,
            |busy| {
                self.say(&format!(
                    "[{position} {}] waiting: {busy}; the cell starts when they are free",
                    cell.label
                ))
            },
        )
        .await;
        match claimed {
            Ok(held) => Some(Some(held)),
            Err(claim::ClaimError::Interrupted) => None,
            Err(e) => {
                self.say(&format!(
                    "warning: {e}; running without a CPU claim (a run at the same time may share these CPUs)"
                ));
                Some(None)
            }
        }
    }

    /// Count and tell how a cell ended: its record as written, or why it
    /// failed before it started (`Err` inside), or the write that failed.
    fn tell(
        &self,
        rec: anyhow::Result<Result<CellRecord, String>>,
        cell: &CellWork,
        position: &str,
        out: &mut MatrixOutcome,
    ) -> CellEnd {
        let label = &cell.label;
        match rec {
            Ok(Err(why)) => {
                out.failed += 1;
                self.say(&format!("[{position} {label}] FAILED: {why}"));
            }
            Ok(Ok(rec)) if rec.status == CellStatus::Finished => {
                out.finished += 1;
                out.phases_failed += failed_phases(&rec);
                let valid = if rec.fidelity.is_valid() {
                    "valid"
                } else {
                    "INVALID"
                };
                self.say(&format!(
                    "[{position} {label}] finished in {:.1}s (load {:.1}s, benchcage {:.1}s), fidelity {valid}",
                    rec.stage_s.values().sum::<f64>(),
                    rec.stage_s.get("load").copied().unwrap_or(0.0),
                    crate::run::cell::own_overhead_s(&rec),
                ));
            }
            Ok(Ok(rec)) if rec.status == CellStatus::Interrupted => {
                self.say(&format!("[{position} {label}] interrupted, torn down"));
            }
            Ok(Ok(rec)) => {
                out.failed += 1;
                self.say(&format!(
                    "[{position} {label}] FAILED: {}",
                    rec.failure.unwrap_or_default()
                ));
            }
            Err(e) => {
                out.failed += 1;
                self.say(&format!(
                    "[{position} {label}] could not write its results: {e:#}"
                ));
                return CellEnd::WriteFailed(format!("writing results failed: {e:#}"));
            }
        }
        CellEnd::Next
    }
}

/// A cell that failed before its sandbox existed (its image could not be
/// had, its sandbox could not be created): recorded as failed.
pub(crate) fn failed_before_start(
    cell: &CellWork,
    cell_dir: &Path,
    why: &str,
) -> anyhow::Result<CellRecord> {
    let rec = CellRecord {
        failure: Some(why.to_string()),
        ..failed_record(cell)
    };
    AtomicWriter.cell(cell_dir, &rec)?;
    Ok(rec)
}

/// The record of a cell that failed with nothing of it measured.
pub(crate) fn failed_record(cell: &CellWork) -> CellRecord {
    CellRecord {
        key: cell.key.clone(),
        label: cell.label.clone(),
        engine: cell.engine.clone(),
        version: cell.version.clone(),
        environment: cell.environment.clone(),
        repetition: cell.repetition,
        limits: cell.limits_record.clone(),
        knobs: cell.knobs.clone(),
        status: CellStatus::Failed,
        settle: Some(cell.settle),
        node: cell.node.clone(),
        ..Default::default()
    }
}

/// Move an earlier, unfinished attempt of a cell out of `cells/` so the
/// new attempt starts clean and the old one stays for inspection.
pub(crate) fn set_aside_attempt(run_dir: &Path, cell_dir: &Path) -> anyhow::Result<()> {
    if !cell_dir.exists() {
        return Ok(());
    }
    let name = cell_dir
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string();
    let attempts = run_dir.join("attempts");
    std::fs::create_dir_all(&attempts)?;
    let mut n = 1;
    while attempts.join(format!("{name}.{n}")).exists() {
        n += 1;
    }
    std::fs::rename(cell_dir, attempts.join(format!("{name}.{n}")))
        .with_context(|| format!("moving the unfinished attempt {} aside", cell_dir.display()))
}

pub(crate) fn open_resumed(
    results_root: &Path,
    id: &str,
    info: &RunInfo,
    keys: &[String],
) -> anyhow::Result<(RunId, RunRecord, BTreeMap<String, CellState>)> {
    let id = RunId::parse(id).map_err(|e| bad_input(e.0))?;
    let paths = RunPaths::new(results_root, id.as_str());
    let text = std::fs::read(paths.run_json()).map_err(|e| {
        bad_input(format!(
            "--resume {id}: cannot read {}: {e}; `ls {}` lists the runs",
            paths.run_json().display(),
            results_root.display()
        ))
    })?;
    let rec: RunRecord = serde_json::from_slice(&text).map_err(|e| {
        bad_input(format!(
            "--resume {id}: {} is not a run record: {e}",
            paths.run_json().display()
        ))
    })?;
    if rec.scenario != info.scenario {
        return Err(bad_input(format!(
            "--resume {id}: that run is of scenario `{}`, not `{}`",
            rec.scenario, info.scenario
        )));
    }
    let new = resume::unknown_keys(keys, &rec.cells);
    if !new.is_empty() {
        return Err(bad_input(format!(
            "--resume {id}: {} planned cell(s) are not in that run ({}); the scenario, a spec or an override changed since. Run it again with the same flags, or start a new run",
            new.len(),
            new.join(", ")
        )));
    }
    let states = resume::cell_states(&paths.cells_dir(), keys);
    Ok((id, rec, states))
}
