//! The skeleton every built-in generator runs: a load (refuse to delete
//! what the target holds, recreate, the load phase), then one measured
//! phase per thread count. A generator ([`Steps`]) gives only what is
//! its own: what the target holds, how to recreate it, its workers. The
//! skeleton reads the shared part of the config ([`Run`]); a generator
//! holds its own fields (its `config::Generator` variant).

use super::config::{Run, WorkloadError};
use super::driver;
use crate::results::model::PhaseResult;
use tokio_util::sync::CancellationToken;

/// Refuses a load that would delete `found` unless `reset` allows it.
pub(crate) fn refuse_to_delete(found: Option<String>, reset: bool) -> Result<(), WorkloadError> {
    match found {
        Some(what) if !reset => Err(WorkloadError::Occupied(what)),
        _ => Ok(()),
    }
}

/// What one built-in generator does on one store; [`run`] calls it in
/// the skeleton's order. Errors are the generator's to name
/// ([`WorkloadError::Setup`] with what it was doing).
pub(crate) trait Steps {
    /// The workers of the load phase.
    type Loader: driver::Worker;
    /// The workers of a measured phase.
    type Measurer: driver::Worker;

    /// Operation kind names, in the order its workers record them.
    fn names(&self) -> &'static [&'static str];

    /// What a load would delete on the target (`None`: nothing).
    async fn holds_data(&self) -> Result<Option<String>, WorkloadError>;

    /// Drops and creates what the load fills.
    async fn recreate(&self) -> Result<(), WorkloadError>;

    /// The load phase's workers and what they do.
    async fn loaders(&self, v: &Run) -> Result<Loading<Self::Loader>, WorkloadError>;

    /// The load phase: by default the loaders through [`load_phase`].
    async fn load(
        &self,
        v: &Run,
        cancel: &CancellationToken,
    ) -> Result<PhaseResult, WorkloadError> {
        Ok(load_phase(v, self.loaders(v).await?, cancel).await)
    }

    /// After a load that succeeded: false (with the load's result marked)
    /// when what it left must not be measured.
    async fn accept_load(&self, _load: &mut PhaseResult) -> Result<bool, WorkloadError> {
        Ok(true)
    }

    /// Before the first measured phase, whether or not this run loaded.
    async fn prepare(&self) -> Result<(), WorkloadError> {
        Ok(())
    }

    /// A measured phase's workers for `threads` connections.
    async fn measurers(&self, v: &Run, threads: u32) -> Result<Vec<Self::Measurer>, WorkloadError>;

    /// Records each measured operation carries (a batch of inserts): a
    /// count of `operations` is in records, run as whole operations.
    fn records_per_op(&self) -> u64 {
        1
    }

    /// One measured phase at `threads`: by default the measurers through
    /// [`measured_phase`].
    async fn measure(
        &self,
        v: &Run,
        threads: u32,
        stop: driver::Stop,
        cancel: &CancellationToken,
    ) -> Result<PhaseResult, WorkloadError> {
        let workers = self.measurers(v, threads).await?;
        let per_op = self.records_per_op();
        Ok(measured_phase(v, workers, self.names(), (stop, per_op), cancel).await)
    }
}

/// Runs `g` as `v` asks: when it loads, refuse to delete what the target
/// holds (unless `reset`), recreate, the load phase (nothing measured on
/// a load that failed); then one measured phase per thread count, in
/// order, until the sweep ends or `cancel` fires. Results come in order.
pub(crate) async fn run<G: Steps>(
    g: &G,
    v: &Run,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let c = &v.common;
    let mut results = Vec::new();
    if c.load {
        refuse_to_delete(g.holds_data().await?, c.reset)?;
        g.recreate().await?;
        let mut load = g.load(v, cancel).await?;
        let ok = load.status.is_ok() && g.accept_load(&mut load).await?;
        results.push(load);
        if !ok {
            return Ok(results);
        }
    }
    let Some(stop) = v.stop else {
        return Ok(results);
    };
    g.prepare().await?;
    for &threads in &v.threads {
        results.push(g.measure(v, threads, stop, cancel).await?);
        if cancel.is_cancelled() {
            break;
        }
    }
    Ok(results)
}

/// Runs one measured phase of `v` with `workers` and makes its result.
pub(crate) async fn measured_phase<W: driver::Worker>(
    v: &Run,
    workers: Vec<W>,
    names: &[&'static str],
    (stop, per_op): (driver::Stop, u64),
    cancel: &CancellationToken,
) -> PhaseResult {
    let c = &v.common;
    let threads = workers.len() as u32;
    let per_op = per_op.max(1);
    let (stop, progress_total) = match stop {
        driver::Stop::Ops(n) if per_op > 1 => {
            let ops = n.div_ceil(per_op);
            (driver::Stop::Ops(ops), Some(ops * per_op))
        }
        other => (other, None),
    };
    let plan = driver::PhasePlan {
        stop,
        warmup: c.warmup.map(|d| d.std()).unwrap_or_default(),
        target: c.target,
        progress: c.progress.then(|| c.name.clone()),
        progress_total,
        budget: v.budget,
    };
    let out = driver::run_phase(workers, names, &plan, cancel).await;
    driver::phase_result(&c.name, &v.label, threads, &out, v.budget)
}

/// A load phase's workers and what they do.
pub(crate) struct Loading<W> {
    pub workers: Vec<W>,
    /// Operation kind names, in the order the workers record them.
    pub names: &'static [&'static str],
    /// Operations the phase runs over all workers (a batch is one).
    pub ops: u64,
    /// What the progress bar counts: records (or rows) inserted.
    pub records: u64,
    /// `ycsb:load`.
    pub label: &'static str,
}

impl<W> Loading<W> {
    /// `records` inserted `batch` at a time.
    pub fn records(
        workers: Vec<W>,
        names: &'static [&'static str],
        (records, batch): (u64, u64),
        label: &'static str,
    ) -> Loading<W> {
        Loading {
            workers,
            names,
            ops: records.div_ceil(batch.max(1)),
            records,
            label,
        }
    }
}

/// Runs the load phase (no warm-up, no target rate, a progress bar on a
/// terminal that counts records) and makes its result.
pub(crate) async fn load_phase<W: driver::Worker>(
    v: &Run,
    l: Loading<W>,
    cancel: &CancellationToken,
) -> PhaseResult {
    let threads = l.workers.len() as u32;
    let plan = driver::PhasePlan {
        stop: driver::Stop::Ops(l.ops),
        warmup: std::time::Duration::ZERO,
        target: None,
        progress: (v.common.progress || crate::progress::stderr_is_terminal())
            .then(|| l.label.to_string()),
        progress_total: Some(l.records),
        budget: v.budget,
    };
    let out = driver::run_phase(l.workers, l.names, &plan, cancel).await;
    driver::phase_result("load", l.label, threads, &out, v.budget)
}
