//! `run --on slurm`: every cell of the matrix as one exclusive Slurm job
//! that runs benchcage on its node into this run's folder; this process
//! submits them, shows their states live, gathers each cell as its job
//! ends, and writes one run record. Its state (`slurm.json` in the run
//! folder: each cell's job id and times) lets `--resume` re-attach to jobs
//! that still run instead of submitting them again. Ctrl-C cancels the
//! run's jobs (`scancel`); each node tears its cell down itself.

use crate::model::CellStatus;
use crate::results::atomic::{write_atomic, write_json_atomic};
use crate::results::layout::RunPaths;
use crate::results::model::CellRecord;
use crate::run::cell::CellWork;
use crate::run::live::{Live, Status};
use crate::run::lock::{LockError, RunLock};
use crate::run::matrix::{self, MatrixOutcome, RunInfo};
use crate::run::resume::CellState;
use crate::run::signals::Interrupts;
use crate::slurm::{self, JobInfo};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the jobs' states are read.
const POLL: Duration = Duration::from_millis(500);
/// How long cancelled jobs get to end (Slurm's KillWait is 30 s by
/// default, then SIGKILL) before the submitter stops waiting.
const CANCEL_WAIT: Duration = Duration::from_secs(60);

/// Where and how the jobs are submitted (`run --on slurm` flags).
#[derive(Debug, Clone, Default)]
pub(crate) struct SlurmOptions {
    pub partition: Option<String>,
    pub account: Option<String>,
    /// At most this many jobs queued or running at once (0: no limit).
    pub max_parallel: usize,
    /// The command a job runs for a cell, before `--slurm-cell RUN/KEY`.
    pub worker_argv: Vec<String>,
    /// The jobs' working directory (the project home).
    pub chdir: PathBuf,
}

/// `results/<run>/slurm.json`: the run's jobs, one per cell key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterState {
    pub scheduler: String,
    pub jobs: BTreeMap<String, JobRecord>,
}

/// One cell's job, as the submitter saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub job_id: u64,
    /// RFC 3339 times: submitted, first seen running, first seen ended,
    /// and gathered (its cell record read back).
    pub submitted_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gathered_at: Option<String>,
    /// The last state Slurm gave, and the node.
    pub state: String,
    #[serde(default)]
    pub node: String,
    /// Jobs of earlier attempts of this cell (ended unfinished).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<u64>,
}

impl ClusterState {
    fn path(run_dir: &Path) -> PathBuf {
        run_dir.join("slurm.json")
    }

    pub fn load(run_dir: &Path) -> anyhow::Result<ClusterState> {
        match std::fs::read(Self::path(run_dir)) {
            Ok(b) => serde_json::from_slice(&b)
                .with_context(|| format!("reading {}", Self::path(run_dir).display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ClusterState {
                scheduler: "slurm".into(),
                ..Default::default()
            }),
            Err(e) => Err(e).with_context(|| format!("reading {}", Self::path(run_dir).display())),
        }
    }

    fn save(&self, run_dir: &Path) -> anyhow::Result<()> {
        Ok(write_json_atomic(&Self::path(run_dir), self)?)
    }
}

/// Where one cell stands in this invocation.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Not submitted yet.
    Waiting,
    /// Its job is queued or running.
    Active,
    /// Decided: finished (or finished earlier), failed, or interrupted.
    Done(CellStatus),
}

/// Submit, follow and gather every cell of `cells` as Slurm jobs.
pub(crate) async fn run_on_slurm(
    info: RunInfo,
    cells: Vec<CellWork>,
    results_root: &Path,
    resume_id: Option<&str>,
    opts: SlurmOptions,
    interrupts: Interrupts,
) -> anyhow::Result<MatrixOutcome> {
    let keys: Vec<String> = cells.iter().map(|c| c.key.clone()).collect();
    let (run_id, mut record, states) = match resume_id {
        Some(id) => matrix::open_resumed(results_root, id, &info, &keys)?,
        None => matrix::new_run_folder(results_root, &info, keys)?,
    };
    let paths = RunPaths::new(results_root, run_id.as_str());
    let _lock = RunLock::acquire(&paths.dir, run_id.as_str()).map_err(|e| match e {
        LockError::Held { .. } => crate::error::bad_input(format!("--resume {run_id}: {e}")),
        other => anyhow::Error::new(other),
    })?;
    matrix::restart(&mut record, &info);
    write_json_atomic(&paths.run_json(), &record)
        .with_context(|| format!("writing the run record of {run_id}"))?;
    let slurm_dir = paths.dir.join("slurm");
    std::fs::create_dir_all(&slurm_dir)?;
    let script = slurm_dir.join("exec.sh");
    write_atomic(&script, slurm::EXEC_SCRIPT.as_bytes())?;
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;

    let mut sub = Submitter {
        run_id: run_id.to_string(),
        paths: &paths,
        opts: &opts,
        script,
        state: ClusterState::load(&paths.dir)?,
        live: Live::stderr(),
        cells: &cells,
        phases_failed: 0,
        warned: BTreeMap::new(),
    };
    sub.say(&format!(
        "run {run_id}: {} cell(s) as Slurm jobs, results in {}",
        cells.len(),
        paths.dir.display()
    ));
    let mut out = MatrixOutcome {
        run_id: run_id.to_string(),
        dir: paths.dir.clone(),
        ..Default::default()
    };
    // Slurm refusing a job (a bad partition) or going away (a dead
    // slurmctld) ends the run `failed`, never `running`.
    let followed = match sub.attach(&states).await {
        Ok(mut steps) => sub.follow(&mut steps, &interrupts, &mut out).await,
        Err(e) => Err(e),
    };
    if let Err(e) = followed {
        return Err(matrix::end_unfinished(&paths, &mut record, &interrupts, e));
    }
    out.phases_failed = sub.phases_failed;
    out.interrupted = interrupts.stop.is_cancelled();
    matrix::conclude(&mut record, &out, &info, &run_id);
    out.status = record.status;
    write_json_atomic(&paths.run_json(), &record)
        .with_context(|| format!("writing the run record of {run_id}"))?;
    if let Some(note) = &record.note {
        sub.say(note);
    }
    sub.say(&overhead_summary(&sub.state, &paths));
    Ok(out)
}

struct Submitter<'a> {
    run_id: String,
    paths: &'a RunPaths,
    opts: &'a SlurmOptions,
    script: PathBuf,
    state: ClusterState,
    live: Live,
    cells: &'a [CellWork],
    /// Failed phases of the cells gathered finished.
    phases_failed: usize,
    /// The last warning said of each job (a stuck node), said once.
    warned: BTreeMap<u64, String>,
}

impl Submitter<'_> {
    fn say(&mut self, msg: &str) {
        self.live.say(msg);
    }

    fn tag(&self, i: usize) -> String {
        format!("[{}/{} {}]", i + 1, self.cells.len(), self.cells[i].label)
    }

    /// Each cell's step as this invocation starts: finished earlier, its
    /// job still queued or running (re-attached), or to submit.
    async fn attach(&mut self, states: &BTreeMap<String, CellState>) -> anyhow::Result<Vec<Step>> {
        let ids: Vec<u64> = self.state.jobs.values().map(|j| j.job_id).collect();
        // Without an answer no job can be judged ended: submitting its
        // cell again could run it twice.
        let known = slurm::query(&ids).await.map_err(|e| {
            anyhow::anyhow!("{e}; cannot tell which of run {}'s jobs still run; run the same command again once Slurm answers", self.run_id)
        })?;
        let mut steps = Vec::new();
        for (i, cell) in self.cells.iter().enumerate() {
            let job = self.state.jobs.get(&cell.key);
            let step = if states.get(&cell.key).is_some_and(CellState::is_done) {
                Step::Done(CellStatus::Finished)
            } else if let Some(j) =
                job.filter(|j| known.get(&j.job_id).is_some_and(JobInfo::is_active))
            {
                let msg = format!("{} re-attached to job {}", self.tag(i), j.job_id);
                self.say(&msg);
                Step::Active
            } else {
                Step::Waiting
            };
            if step == Step::Done(CellStatus::Finished) {
                let msg = format!("{} finished earlier, skipped", self.tag(i));
                self.say(&msg);
            }
            steps.push(step);
        }
        Ok(steps)
    }

    /// Submit within `--max-parallel`, read the jobs' states, gather the
    /// ended ones, until every cell is decided or an interrupt cancels
    /// the rest.
    async fn follow(
        &mut self,
        steps: &mut [Step],
        interrupts: &Interrupts,
        out: &mut MatrixOutcome,
    ) -> anyhow::Result<()> {
        loop {
            if interrupts.stop.is_cancelled() {
                return self.cancel_all(steps, out).await;
            }
            self.submit_waiting(steps, out).await?;
            let ids: Vec<u64> = self.active_ids(steps);
            let known = match slurm::query(&ids).await {
                Ok(k) => k,
                Err(e) => {
                    // Slurm did not answer: judge nothing, ask again.
                    self.say(&format!("warning: {e}; asking again"));
                    tokio::select! {
                        _ = tokio::time::sleep(POLL * 4) => {}
                        _ = interrupts.stop.cancelled() => {}
                    }
                    continue;
                }
            };
            // The nodes' states, to say why a job is stuck, read only
            // while a job is queued or running; no answer judges nothing.
            let nodes = if ids.is_empty() {
                BTreeMap::new()
            } else {
                slurm::node_states().await.unwrap_or_default()
            };
            for (i, step) in steps.iter_mut().enumerate() {
                if *step == Step::Active {
                    let info = known.get(&self.job(i).job_id).cloned();
                    self.observe(i, info.as_ref(), step)?;
                    if *step == Step::Active {
                        self.warn_if_stuck(i, info.as_ref(), &nodes);
                    }
                }
            }
            self.state.save(&self.paths.dir)?;
            if steps.iter().all(|s| matches!(s, Step::Done(_))) {
                tally(steps, out);
                return Ok(());
            }
            self.show(steps);
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = interrupts.stop.cancelled() => {}
            }
        }
    }

    fn job(&self, i: usize) -> &JobRecord {
        &self.state.jobs[&self.cells[i].key]
    }

    fn active_ids(&self, steps: &[Step]) -> Vec<u64> {
        (0..steps.len())
            .filter(|i| steps[*i] == Step::Active)
            .map(|i| self.job(i).job_id)
            .collect()
    }

    /// Submit waiting cells in plan order while fewer than
    /// `--max-parallel` jobs are active.
    async fn submit_waiting(
        &mut self,
        steps: &mut [Step],
        out: &mut MatrixOutcome,
    ) -> anyhow::Result<()> {
        for i in 0..steps.len() {
            let active = steps.iter().filter(|s| **s == Step::Active).count();
            if self.opts.max_parallel > 0 && active >= self.opts.max_parallel {
                return Ok(());
            }
            if steps[i] != Step::Waiting {
                continue;
            }
            let cell = &self.cells[i];
            let job = slurm::Submit {
                name: cell.key.clone(),
                comment: format!("benchcage {}", self.run_id),
                output: self
                    .paths
                    .dir
                    .join("slurm")
                    .join(format!("{:02}-%j.out", i + 1)),
                chdir: self.opts.chdir.clone(),
                partition: self.opts.partition.clone(),
                account: self.opts.account.clone(),
                script: self.script.clone(),
                argv: self.worker_argv(&cell.key),
                nodes: if cell.limits.client_node.is_same() {
                    1
                } else {
                    2
                },
            };
            // Stamped before sbatch returns: the job can start on its node
            // before the controller's answer reaches us.
            let submitted_at = now();
            let id = slurm::submit(&job).await?;
            let earlier: Vec<u64> = self
                .state
                .jobs
                .get(&cell.key)
                .map(|j| j.earlier.iter().copied().chain([j.job_id]).collect())
                .unwrap_or_default();
            self.state.jobs.insert(
                cell.key.clone(),
                JobRecord {
                    job_id: id,
                    submitted_at,
                    state: "PENDING".into(),
                    earlier,
                    ..Default::default()
                },
            );
            // On disk before anything else: a submitter killed now
            // re-attaches to this job instead of submitting another.
            self.state.save(&self.paths.dir)?;
            out.ran.push(cell.key.clone());
            steps[i] = Step::Active;
            let msg = format!("{} submitted as job {id}", self.tag(i));
            self.say(&msg);
        }
        Ok(())
    }

    /// What Slurm says of cell `i`'s job: running (recorded once), or
    /// ended (gathered: its cell record read back, or written as failed
    /// when the job ended without one). A job Slurm no longer knows has
    /// ended.
    fn observe(&mut self, i: usize, info: Option<&JobInfo>, step: &mut Step) -> anyhow::Result<()> {
        let key = self.cells[i].key.clone();
        let tag = self.tag(i);
        let job = self
            .state
            .jobs
            .get_mut(&key)
            .expect("an active cell has a job");
        if let Some(info) = info {
            if !info.node.is_empty() {
                job.node = info.node.clone();
            }
            job.state = info.state.clone();
            if info.state == "RUNNING" && job.running_at.is_none() {
                job.running_at = Some(now());
                let msg = format!("{tag} job {} running on {}", job.job_id, job.node);
                self.say(&msg);
            }
            if info.is_active() {
                return Ok(());
            }
        }
        let job = self
            .state
            .jobs
            .get_mut(&key)
            .expect("an active cell has a job");
        job.ended_at.get_or_insert_with(now);
        let (id, state) = (job.job_id, job.state.clone());
        let status = self.gather(i, id, &state)?;
        self.state.jobs.get_mut(&key).expect("gathered").gathered_at = Some(now());
        *step = Step::Done(status);
        Ok(())
    }

    /// Say once (per cause) when cell `i`'s job cannot make progress: its
    /// node stopped answering or went down while it runs (Slurm ends it
    /// as NODE_FAIL after the cluster's SlurmdTimeout), or it waits for
    /// nodes that are down or drained (it starts when they return).
    fn warn_if_stuck(
        &mut self,
        i: usize,
        info: Option<&JobInfo>,
        nodes: &BTreeMap<String, String>,
    ) {
        let job = self.job(i);
        let (id, node) = (job.job_id, job.node.clone());
        let running = job.running_at.is_some();
        let why = match info {
            Some(_) if running => nodes
                .get(&node)
                .and_then(|st| slurm::node_trouble(st))
                .map(|t| {
                    format!(
                        "job {id}'s node {node} is {t}; Slurm ends the job as NODE_FAIL after the cluster's SlurmdTimeout and the cell then fails"
                    )
                }),
            Some(info) if slurm::waits_for_unavailable_nodes(&info.reason) => Some(format!(
                "job {id} waits for nodes that cannot take it ({}); it starts when they return, or Ctrl-C cancels the run (resumable)",
                info.reason
            )),
            _ => None,
        };
        let Some(why) = why else {
            self.warned.remove(&id);
            return;
        };
        if self.warned.get(&id) != Some(&why) {
            let msg = format!("warning: {} {why}", self.tag(i));
            self.say(&msg);
            self.warned.insert(id, why);
        }
    }

    /// Cell `i`'s record once its job `id` ended in `state`; a cell whose
    /// job ended before the cell did is failed, with the job's state.
    fn gather(&mut self, i: usize, id: u64, state: &str) -> anyhow::Result<CellStatus> {
        let cell = &self.cells[i];
        let paths = self.paths.cell(&cell.key);
        if let Some(status) = self.accept_final(i, id, &paths.cell_json()) {
            return Ok(status);
        }
        let why = format!(
            "its Slurm job {id} ended {} before the cell finished{}; the job's output is in {}",
            if state.is_empty() {
                "(no longer known to Slurm)"
            } else {
                state
            },
            slurm::end_hint(state),
            self.paths.dir.join("slurm").display()
        );
        // Sealed first: a cell that still runs on a node Slurm lost (a
        // dead slurmd) writes what it does next under `late/`, never over
        // this verdict. Then read once more: it may have finished between.
        std::fs::create_dir_all(&paths.dir)?;
        write_atomic(&paths.sealed(), why.as_bytes())?;
        if let Some(status) = self.accept_final(i, id, &paths.cell_json()) {
            let _ = std::fs::remove_file(paths.sealed());
            return Ok(status);
        }
        let mut rec = read_record(&paths.cell_json()).unwrap_or_else(|| {
            let mut r = matrix::failed_record(cell);
            r.status = CellStatus::Running;
            r
        });
        rec.status = CellStatus::Failed;
        rec.failure = Some(why.clone());
        write_json_atomic(&paths.cell_json(), &rec)?;
        let tag = self.tag(i);
        self.say(&format!("{tag} FAILED: {why}"));
        Ok(CellStatus::Failed)
    }

    /// The status of cell `i` when its record at `path` is final
    /// (finished or failed on its node), said as the cell's outcome.
    fn accept_final(&mut self, i: usize, id: u64, path: &Path) -> Option<CellStatus> {
        let r = read_record(path)?;
        let tag = self.tag(i);
        match r.status {
            CellStatus::Finished => {
                self.phases_failed += matrix::failed_phases(&r);
                let valid = if r.fidelity.is_valid() {
                    "valid"
                } else {
                    "INVALID"
                };
                let node = r.node.as_ref().map(|n| n.name.clone()).unwrap_or_default();
                self.say(&format!(
                    "{tag} finished on {node} (job {id}) in {:.1}s, fidelity {valid}",
                    r.stage_s.values().sum::<f64>()
                ));
                Some(CellStatus::Finished)
            }
            CellStatus::Failed => {
                self.say(&format!(
                    "{tag} FAILED (job {id}): {}",
                    r.failure.unwrap_or_default()
                ));
                Some(CellStatus::Failed)
            }
            _ => None,
        }
    }

    /// Ctrl-C: cancel every active job, wait for them to end (each node
    /// tears its cell down), and leave their cells interrupted.
    async fn cancel_all(
        &mut self,
        steps: &mut [Step],
        out: &mut MatrixOutcome,
    ) -> anyhow::Result<()> {
        let ids = self.active_ids(steps);
        if !ids.is_empty() {
            self.say(&format!(
                "interrupted: cancelling {} job(s) ({}); each node tears its cell down",
                ids.len(),
                ids.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            slurm::cancel(&ids).await?;
            let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
            while tokio::time::Instant::now() < deadline {
                if let Ok(known) = slurm::query(&ids).await
                    && !known.values().any(JobInfo::is_active)
                {
                    break;
                }
                tokio::time::sleep(POLL).await;
            }
        }
        for (i, s) in steps.iter_mut().enumerate() {
            if *s == Step::Active {
                let key = &self.cells[i].key;
                if let Some(j) = self.state.jobs.get_mut(key) {
                    j.state = "CANCELLED".into();
                    j.ended_at.get_or_insert_with(now);
                }
                *s = Step::Done(CellStatus::Interrupted);
            }
        }
        self.state.save(&self.paths.dir)?;
        tally(steps, out);
        Ok(())
    }

    /// The live line: how many cells are waiting, queued, running, done.
    fn show(&mut self, steps: &[Step]) {
        let mut n: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, s) in steps.iter().enumerate() {
            let k = match s {
                Step::Waiting => "waiting",
                Step::Active if self.job(i).running_at.is_some() => "running",
                Step::Active => "pending",
                Step::Done(CellStatus::Finished) => "done",
                Step::Done(_) => "failed",
            };
            *n.entry(k).or_default() += 1;
        }
        let stage = ["pending", "running", "done", "failed", "waiting"]
            .iter()
            .filter_map(|k| n.get(k).map(|c| format!("{c} {k}")))
            .collect::<Vec<_>>()
            .join(", ");
        self.live.show(&Status {
            cell: format!("slurm {}", self.run_id),
            stage,
            ..Default::default()
        });
    }

    /// The job's command: this binary, `run` with the same flags, and the
    /// cell it runs.
    fn worker_argv(&self, key: &str) -> Vec<String> {
        let mut a = self.opts.worker_argv.clone();
        a.extend(["--slurm-cell".into(), format!("{}/{key}", self.run_id)]);
        a
    }
}

/// The outcome's counts from the cells' final steps.
fn tally(steps: &[Step], out: &mut MatrixOutcome) {
    out.finished = steps
        .iter()
        .filter(|s| **s == Step::Done(CellStatus::Finished))
        .count();
    out.failed = steps
        .iter()
        .filter(|s| **s == Step::Done(CellStatus::Failed))
        .count();
}

/// A cell record, if one can be read at `path`.
fn read_record(path: &Path) -> Option<CellRecord> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Seconds from `a` to `b` (RFC 3339).
fn secs(a: &str, b: &str) -> Option<f64> {
    let a = chrono::DateTime::parse_from_rfc3339(a).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(b).ok()?;
    Some((b - a).num_milliseconds() as f64 / 1000.0)
}

/// Per cell, what going through Slurm cost: from the moment it could
/// start (submitted, and its node free of the cell before it) to
/// benchcage starting on the node, and from the cell's end (its record's
/// last write) to gathered here. `(key, to start, to gathered)`.
pub(crate) fn overheads(state: &ClusterState, paths: &RunPaths) -> Vec<(String, f64, f64)> {
    type Seen = (String, String, String, chrono::DateTime<chrono::Utc>);
    let mut seen: Vec<Seen> = state
        .jobs
        .keys()
        .filter_map(|key| {
            let path = paths.cell(key).cell_json();
            let rec: CellRecord = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
            let node = rec.node?;
            let ended = std::fs::metadata(&path).ok()?.modified().ok()?.into();
            Some((key.clone(), node.name, node.started_at, ended))
        })
        .collect();
    seen.sort_by(|a, b| a.2.cmp(&b.2));
    let mut free: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for (key, node, started, ended) in seen {
        let j = &state.jobs[&key];
        let ready = match free.get(&node) {
            Some(f) if f > &j.submitted_at => f.clone(),
            _ => j.submitted_at.clone(),
        };
        let ended = ended.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        if let (Some(a), Some(b)) = (
            secs(&ready, &started),
            j.gathered_at.as_deref().and_then(|g| secs(&ended, g)),
        ) {
            out.push((key, a, b));
        }
        free.insert(node, ended);
    }
    out
}

fn overhead_summary(state: &ClusterState, paths: &RunPaths) -> String {
    let o = overheads(state, paths);
    if o.is_empty() {
        return "slurm: no cell was gathered in this run".into();
    }
    let mean = |f: fn(&(String, f64, f64)) -> f64| o.iter().map(f).sum::<f64>() / o.len() as f64;
    format!(
        "slurm overhead per cell (mean of {}): submit to start {:.2}s, end to gathered {:.2}s",
        o.len(),
        mean(|x| x.1),
        mean(|x| x.2)
    )
}
