//! The phase driver, oha-style: one task per connection shares a deadline
//! or an operation counter, records into its own `Recorder` (no sharing,
//! no allocation per operation), and hands it to one collector at the end.
//! Errors are counted, never fatal; cancellation stops every worker.

use super::clock::Instant;
use super::histo::Recorder;
use super::stores::StoreError;
use crate::results::model::{PhaseResult, PhaseStatus};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One connection's stream of operations.
pub(crate) trait Worker: Send + 'static {
    /// Chooses the next operation and returns its kind index; `None` when
    /// this worker has nothing more to do.
    fn plan(&mut self) -> Option<usize>;
    /// Runs the planned operation (only this part is timed).
    fn exec(&mut self) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Records the outcome of the operation `exec` just ran. The default
    /// is one operation of the planned kind; a batch records every record
    /// it carried, a compound operation its inner calls as well.
    #[inline]
    fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
        t.record(rec, 1, &r);
    }
}

/// When the operation just run was sent, finished and meant to start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    /// Its kind, as `plan` returned it.
    pub kind: usize,
    pub sent: Instant,
    pub done: Instant,
    /// The intended start (with a target rate only).
    pub intended: Option<Instant>,
    /// The measured second it finished in.
    pub second: usize,
}

impl Timing {
    /// Records `ops` operations of this kind done in this one call: one
    /// latency measurement, `ops` successes or `ops` failures.
    #[inline]
    pub fn record(&self, rec: &mut Recorder, ops: u64, r: &Result<(), StoreError>) {
        match r {
            Ok(()) => rec.ok(
                self.kind,
                ops,
                self.done.nanos_since(self.sent),
                self.since_intended(self.done),
                self.second,
            ),
            Err(e) => rec.error(self.kind, ops, e, self.second),
        }
    }

    /// Records a call made inside this operation, from `sent` to `done`,
    /// under `kind` (see [`Recorder::inner_ok`]); a failed inner call
    /// failed the operation with `r`'s error.
    pub(crate) fn record_inner(
        &self,
        rec: &mut Recorder,
        kind: usize,
        sent: Instant,
        done: Instant,
        r: Result<(), &StoreError>,
    ) {
        match r {
            Ok(()) => rec.inner_ok(
                kind,
                done.nanos_since(sent),
                self.since_intended(done),
                self.second,
            ),
            Err(e) => rec.inner_error(kind, e),
        }
    }

    /// From the intended start to `t`, like YCSB's `Intended-` latencies.
    #[inline]
    fn since_intended(&self, t: Instant) -> Option<u64> {
        self.intended.map(|i| t.nanos_since(i))
    }
}

/// When the measured window ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After this many operations over all workers.
    Ops(u64),
    /// After this long.
    Time(Duration),
}

/// How to run one phase.
#[derive(Debug, Clone)]
pub(crate) struct PhasePlan {
    pub stop: Stop,
    /// Run, unrecorded, this long first.
    pub warmup: Duration,
    /// Target operations per second over all workers.
    pub target: Option<f64>,
    /// Show a progress bar with this label.
    pub progress: Option<String>,
    /// What the bar and the status lines count to, in recorded operations,
    /// when it differs from `stop`: a batched load stops after so many
    /// batches but counts records.
    pub progress_total: Option<u64>,
    /// Failed operations allowed: the phase stops as soon as they are
    /// spent, not at its end.
    pub budget: Budget,
}

impl PhasePlan {
    /// The most failed operations the phase may have, when that is known
    /// up front: a count, or a share of a number of operations. A share
    /// of a timed phase is checked against a projection instead
    /// ([`watch_share`]).
    fn error_limit(&self) -> Option<u64> {
        match (self.budget, self.stop) {
            (Budget::Count(n), _) => Some(n),
            (Budget::Fraction(f), Stop::Ops(n)) => {
                Some((f * self.progress_total.unwrap_or(n) as f64).floor() as u64)
            }
            (Budget::Fraction(_), Stop::Time(_)) => None,
        }
    }
}

/// What the workers recorded.
#[derive(Debug)]
pub(crate) struct PhaseOutcome {
    pub rec: Recorder,
    /// Measured window (warm-up excluded).
    pub elapsed: Duration,
    pub interrupted: bool,
    /// The error budget was spent and the phase stopped there.
    pub budget_spent: bool,
    /// Operations the phase was to run (records, for a batched load), when
    /// it counts them.
    pub planned: Option<u64>,
}

/// State the workers share: read often, written rarely.
struct Control {
    stop: AtomicBool,
    remaining: AtomicU64,
    done: AtomicU64,
    /// Failed measured operations so far, over all workers.
    errors: AtomicU64,
    /// Failed operations allowed, when known up front.
    error_limit: Option<u64>,
    budget_spent: AtomicBool,
}

impl Control {
    fn new(remaining: u64, error_limit: Option<u64>) -> Control {
        Control {
            stop: AtomicBool::new(false),
            remaining: AtomicU64::new(remaining),
            done: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            error_limit,
            budget_spent: AtomicBool::new(false),
        }
    }

    /// Adds `n` failures; past the limit, every worker stops.
    fn failed(&self, n: u64) {
        let total = self.errors.fetch_add(n, Ordering::Relaxed) + n;
        if self.error_limit.is_some_and(|l| total > l) {
            self.spend();
        }
    }

    fn spend(&self) {
        self.budget_spent.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Operations claimed from the shared counter at a time.
const CLAIM: u64 = 64;
/// Operations between cooperative yields (and progress updates).
const BATCH: u64 = 256;
/// The longest a worker keeps its progress to itself: slow operations
/// (a batch of 500 inserts into a slow engine) still move the status
/// lines and the bar every tenth of a second.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

fn claim(remaining: &AtomicU64) -> u64 {
    let mut cur = remaining.load(Ordering::Relaxed);
    loop {
        if cur == 0 {
            return 0;
        }
        let take = cur.min(CLAIM);
        match remaining.compare_exchange_weak(cur, cur - take, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => return take,
            Err(now) => cur = now,
        }
    }
}

/// How long one operation may take before it counts as failed and its
/// worker stops: a frozen server (SIGSTOP) must not hang a phase (issue 15,
/// D4). Thirty seconds is far beyond any healthy operation's latency, even
/// under tight IO limits; it bounds the load and phases that run a number
/// of operations. A timed phase hits its own, clearer deadline first
/// (`run::cell::PHASE_GRACE`).
pub(crate) const OP_TIMEOUT: Duration = Duration::from_secs(30);

/// When a phase measures and how it ends, the same for every worker.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    /// End of the warmup: operations from then on are measured.
    warm_end: Instant,
    stop: Stop,
    /// Between two operations of one worker, when the phase has a target
    /// rate.
    interval: Option<Duration>,
}

/// Whether a worker measures yet, and whether it may run one more
/// operation: before the deadline of a timed phase, or with an operation
/// claimed from the shared counter of a counted one.
struct Quota {
    warm_end: Instant,
    end: Option<Instant>,
    measuring: bool,
    /// Operations claimed from `Control::remaining` and not yet run.
    claimed: u64,
}

impl Quota {
    fn new(w: &Window) -> Quota {
        Quota {
            warm_end: w.warm_end,
            end: match w.stop {
                Stop::Time(d) => Some(w.warm_end + d),
                Stop::Ops(_) => None,
            },
            measuring: w.warm_end <= w.start,
            claimed: 0,
        }
    }

    /// False once the measured window is over for this worker.
    #[inline]
    fn allows(&mut self, now: Instant, remaining: &AtomicU64) -> bool {
        if !self.measuring && now >= self.warm_end {
            self.measuring = true;
        }
        if !self.measuring {
            return true;
        }
        match self.end {
            Some(e) => now < e,
            None => {
                if self.claimed == 0 {
                    self.claimed = claim(remaining);
                    if self.claimed == 0 {
                        return false;
                    }
                }
                self.claimed -= 1;
                true
            }
        }
    }
}

/// What a worker has told the shared counters so far.
struct Told {
    /// Operations (records, for a batch) already added to `ctl.done`.
    flushed: u64,
    /// Failures already added to `ctl.errors`.
    errors: u64,
    next_flush: Instant,
}

impl Told {
    /// Failures are counted at once, not at the next flush: a budget of 0
    /// stops the phase at its first failure.
    #[inline]
    fn failures(&mut self, ctl: &Control, rec: &Recorder) {
        let errors = rec.total_errors();
        ctl.failed(errors - self.errors);
        self.errors = errors;
    }
}

/// Open-loop pacing: each operation's intended start is `interval` after
/// the one before; the worker waits for it when it is early.
#[inline]
async fn pace(
    interval: Option<Duration>,
    next_at: &mut Instant,
    now: &mut Instant,
) -> Option<Instant> {
    let iv = interval?;
    let t = *next_at;
    *next_at += iv;
    if *now < t {
        tokio::time::sleep_until(t.to_std().into()).await;
        *now = Instant::now();
    }
    Some(t)
}

/// One worker's loop: pace, claim, run, time and record each operation
/// until the window ends, the phase stops or an operation times out.
async fn work<W: Worker>(mut w: W, ctl: Arc<Control>, mut rec: Recorder, win: Window) -> Recorder {
    let mut quota = Quota::new(&win);
    let mut n = 0u64;
    let mut now = Instant::now();
    let mut next_at = now;
    let mut told = Told {
        flushed: 0,
        errors: 0,
        next_flush: now + FLUSH_EVERY,
    };
    loop {
        n += 1;
        if n.is_multiple_of(BATCH) || now >= told.next_flush {
            told.flushed = flush_progress(&ctl, &rec, told.flushed);
            told.next_flush = now + FLUSH_EVERY;
            if n.is_multiple_of(BATCH) {
                tokio::task::yield_now().await;
            }
        }
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
        let intended = pace(win.interval, &mut next_at, &mut now).await;
        if !quota.allows(now, &ctl.remaining) {
            break;
        }
        let Some(kind) = w.plan() else { break };
        let t0 = Instant::now();
        let (r, timed_out) = match tokio::time::timeout(OP_TIMEOUT, w.exec()).await {
            Ok(r) => (r, false),
            Err(_) => (Err(StoreError::TimedOut(OP_TIMEOUT.as_secs())), true),
        };
        now = Instant::now();
        if quota.measuring {
            let second = (now.saturating_duration_since(win.warm_end)).as_secs() as usize;
            let t = Timing {
                kind,
                sent: t0,
                done: now,
                intended,
                second,
            };
            let failed = r.is_err();
            w.record(&mut rec, &t, r);
            if failed {
                told.failures(&ctl, &rec);
            }
        }
        if timed_out {
            // The connection is mid-request: a late reply would answer the
            // next operation. This worker ends; the phase sees the error.
            break;
        }
    }
    flush_progress(&ctl, &rec, told.flushed);
    rec
}

/// Adds what `rec` counted since the last flush to the shared progress
/// count; returns the new flushed total.
fn flush_progress(ctl: &Control, rec: &Recorder, flushed: u64) -> u64 {
    let total = rec.total_ok() + rec.total_errors();
    if total > flushed {
        ctl.done.fetch_add(total - flushed, Ordering::Relaxed);
    }
    total
}

/// Runs `workers` (already connected) through one phase.
pub(crate) async fn run_phase<W: Worker>(
    workers: Vec<W>,
    names: &[&'static str],
    plan: &PhasePlan,
    cancel: &CancellationToken,
) -> PhaseOutcome {
    let threads = workers.len().max(1);
    let ctl = Arc::new(Control::new(
        match plan.stop {
            Stop::Ops(n) => n,
            Stop::Time(_) => 0,
        },
        plan.error_limit(),
    ));
    let interval = plan
        .target
        .filter(|t| *t > 0.0)
        .map(|t| Duration::from_secs_f64(threads as f64 / t));
    let start = Instant::now();
    let warm_end = start + plan.warmup;
    let watcher = {
        let (ctl, cancel) = (ctl.clone(), cancel.clone());
        tokio::spawn(async move {
            cancel.cancelled().await;
            ctl.stop.store(true, Ordering::Relaxed);
        })
    };
    let bar = progress_bar(plan, &ctl, warm_end);
    // Without a bar, YCSB-style status lines on stderr (`-s`), which log
    // readers and the live view of `benchcage run` understand.
    let status = bar
        .is_none()
        .then(|| tokio::spawn(status_lines(ctl.clone(), warm_end)));
    let share_watch = match (plan.budget, plan.stop) {
        (Budget::Fraction(f), Stop::Time(d)) => {
            Some(tokio::spawn(watch_share(ctl.clone(), f, d, warm_end)))
        }
        _ => None,
    };
    let window = Window {
        start,
        warm_end,
        stop: plan.stop,
        interval,
    };
    let total = run_workers(workers, names, &ctl, window).await;
    let finished = Instant::now();
    watcher.abort();
    if let Some(w) = share_watch {
        w.abort();
    }
    if let Some(s) = status {
        s.abort();
    }
    if let Some(b) = bar {
        b.finish();
    }
    PhaseOutcome {
        rec: total,
        elapsed: finished.saturating_duration_since(warm_end),
        interrupted: cancel.is_cancelled(),
        budget_spent: ctl.budget_spent.load(Ordering::Relaxed),
        planned: match plan.stop {
            Stop::Ops(n) => Some(plan.progress_total.unwrap_or(n)),
            Stop::Time(_) => None,
        },
    }
}

/// The progress bar of a phase that asks for one.
fn progress_bar(
    plan: &PhasePlan,
    ctl: &Arc<Control>,
    warm_end: Instant,
) -> Option<crate::progress::Bar> {
    let label = plan.progress.as_ref()?;
    let total = match plan.stop {
        Stop::Ops(n) => crate::progress::Total::Ops(plan.progress_total.unwrap_or(n)),
        Stop::Time(d) => crate::progress::Total::Time(d),
    };
    let ctl = ctl.clone();
    Some(crate::progress::spawn(
        label.clone(),
        total,
        warm_end.to_std(),
        move || ctl.done.load(Ordering::Relaxed),
    ))
}

/// Every second of the measured window, a YCSB-style status line on
/// stderr: `10 sec: 5000 operations; 500 current ops/sec;`.
async fn status_lines(ctl: Arc<Control>, warm_end: Instant) {
    let warm_end = warm_end.to_std();
    let first = tokio::time::Instant::from_std(warm_end.max(std::time::Instant::now()));
    let mut tick = tokio::time::interval_at(first + Duration::from_secs(1), Duration::from_secs(1));
    let mut last = 0;
    loop {
        let at = tick.tick().await;
        let done = ctl.done.load(Ordering::Relaxed);
        let secs = at.into_std().saturating_duration_since(warm_end).as_secs();
        eprintln!(
            "{secs} sec: {done} operations; {} current ops/sec;",
            done - last
        );
        last = done;
    }
}

/// Each worker on its own task until the phase ends; their recorders
/// merged as they finish.
async fn run_workers<W: Worker>(
    workers: Vec<W>,
    names: &[&'static str],
    ctl: &Arc<Control>,
    window: Window,
) -> Recorder {
    let paced = window.interval.is_some();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for w in workers {
        let tx = tx.clone();
        let fut = work(w, ctl.clone(), Recorder::new(names, paced), window);
        tokio::spawn(async move {
            let _ = tx.send(fut.await);
        });
    }
    drop(tx);
    let mut total = Recorder::new(names, paced);
    while let Some(r) = rx.recv().await {
        total.merge(&r);
    }
    total
}

/// Spends a share budget of a timed phase once its failures exceed the
/// share of the operations the whole phase would run at the rate so far:
/// past that, even if every later operation succeeded, the phase would end
/// over its budget. Checked every tenth of a second from one second into
/// the measured window (a first burst of errors says little of the rate).
async fn watch_share(ctl: Arc<Control>, share: f64, length: Duration, warm_end: Instant) {
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    loop {
        tick.tick().await;
        let elapsed = Instant::now().saturating_duration_since(warm_end);
        if elapsed < Duration::from_secs(1) {
            continue;
        }
        let done = ctl.done.load(Ordering::Relaxed);
        let errors = ctl.errors.load(Ordering::Relaxed);
        let projected = done as f64 * (length.as_secs_f64() / elapsed.as_secs_f64()).max(1.0);
        if errors as f64 > share * projected {
            ctl.spend();
            return;
        }
    }
}

/// How many failed operations a phase may have and still pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// At most this many.
    Count(u64),
    /// At most this fraction of all operations.
    Fraction(f64),
}

impl Budget {
    /// True when `errors` out of `total` attempts fit.
    pub fn allows(self, errors: u64, total: u64) -> bool {
        match self {
            Budget::Count(n) => errors <= n,
            Budget::Fraction(f) => (errors as f64) <= f * total as f64,
        }
    }
}

/// The phase's result: successes counted apart from failures, and a
/// failed status when the errors exceed the budget or it was interrupted.
pub(crate) fn phase_result(
    name: &str,
    workload: &str,
    threads: u32,
    out: &PhaseOutcome,
    budget: Budget,
) -> PhaseResult {
    let secs = out.elapsed.as_secs_f64();
    let ok = out.rec.total_ok();
    let errors = out.rec.total_errors();
    let planned = match out.planned {
        Some(n) => format!(" ({n} planned)"),
        None => String::new(),
    };
    let status = if out.interrupted {
        PhaseStatus::Failed {
            reason: "interrupted before the phase finished".into(),
        }
    } else if out.budget_spent {
        PhaseStatus::Failed {
            reason: format!(
                "stopped when its error budget ({budget}) was spent: {errors} of {} operations failed{planned}",
                ok + errors
            ),
        }
    } else if !budget.allows(errors, ok + errors) {
        PhaseStatus::Failed {
            reason: format!(
                "{errors} of {} operations failed, over the error budget ({budget})",
                ok + errors
            ),
        }
    } else {
        PhaseStatus::Ok
    };
    PhaseResult {
        name: name.to_string(),
        workload: workload.to_string(),
        threads,
        duration_s: secs,
        total_ops: ok,
        total_errors: errors,
        throughput: if secs > 0.0 { ok as f64 / secs } else { 0.0 },
        tool_ops_per_sec: None,
        headline: None,
        mongo_tpcc: None,
        ops: out.rec.op_stats(secs),
        series: out.rec.series(),
        status,
        raw_outputs: Vec::new(),
        tool_env: None,
    }
}

/// An error budget as a person writes it: `0 errors`, `1 error`, `1%`.
impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Budget::Count(1) => f.write_str("1 error"),
            Budget::Count(n) => write!(f, "{n} errors"),
            Budget::Fraction(x) => write!(f, "{}", crate::units::Share(*x)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails every third operation; kind alternates 0/1.
    struct Flaky {
        n: u64,
        limit: u64,
    }

    impl Worker for Flaky {
        fn plan(&mut self) -> Option<usize> {
            self.n += 1;
            (self.n <= self.limit).then_some((self.n % 2) as usize)
        }
        async fn exec(&mut self) -> Result<(), StoreError> {
            if self.n.is_multiple_of(3) {
                Err(StoreError::NotFound(format!("k{}", self.n)))
            } else {
                Ok(())
            }
        }
    }

    /// Takes 20 ms a call and carries two records (a batch of two).
    struct SlowPairs;

    impl Worker for SlowPairs {
        fn plan(&mut self) -> Option<usize> {
            Some(0)
        }
        async fn exec(&mut self) -> Result<(), StoreError> {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(())
        }
        fn record(&mut self, rec: &mut Recorder, t: &Timing, r: Result<(), StoreError>) {
            t.record(rec, 2, &r);
        }
    }

    #[test]
    fn slow_operations_show_progress_within_a_fraction_of_a_second_counted_in_records() {
        rt().block_on(async {
            let ctl = Arc::new(Control::new(20, None));
            let start = Instant::now();
            let rec = Recorder::new(&["INSERT"], false);
            let window = Window {
                start,
                warm_end: start,
                stop: Stop::Ops(20),
                interval: None,
            };
            let task = tokio::spawn(work(SlowPairs, ctl.clone(), rec, window));
            tokio::time::sleep(Duration::from_millis(300)).await;
            // About 14 calls (28 records) are done; at most 100 ms of them
            // may still be unflushed.
            let mid = ctl.done.load(Ordering::Relaxed);
            assert!((10..40).contains(&mid), "{mid} records shown after 300 ms");
            let rec = task.await.unwrap();
            assert_eq!(rec.total_ok(), 40);
            assert_eq!(ctl.done.load(Ordering::Relaxed), 40);
        });
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn operation_count_is_exact_and_failures_fail_the_phase() {
        let out = rt().block_on(async {
            let workers = (0..3)
                .map(|_| Flaky {
                    n: 0,
                    limit: u64::MAX,
                })
                .collect();
            let plan = PhasePlan {
                stop: Stop::Ops(3000),
                warmup: Duration::ZERO,
                target: None,
                progress: None,
                progress_total: None,
                budget: Budget::Count(u64::MAX),
            };
            run_phase(workers, &["A", "B"], &plan, &CancellationToken::new()).await
        });
        let r = phase_result("p", "test", 3, &out, Budget::Count(0));
        assert_eq!(r.total_ops + r.total_errors, 3000);
        assert!(
            r.total_errors > 900 && r.total_errors < 1100,
            "{}",
            r.total_errors
        );
        assert!(!r.status.is_ok());
        let generous = phase_result("p", "test", 3, &out, Budget::Fraction(0.5));
        assert!(generous.status.is_ok());
        assert_eq!(r.ops["A"].count + r.ops["B"].count, r.total_ops);
    }

    fn flaky_phase(threads: usize, stop: Stop, budget: Budget) -> PhaseOutcome {
        rt().block_on(async {
            let workers = (0..threads)
                .map(|_| Flaky {
                    n: 0,
                    limit: u64::MAX,
                })
                .collect();
            let plan = PhasePlan {
                stop,
                warmup: Duration::ZERO,
                target: None,
                progress: None,
                progress_total: None,
                budget,
            };
            run_phase(workers, &["A", "B"], &plan, &CancellationToken::new()).await
        })
    }

    #[test]
    fn a_phase_stops_as_soon_as_its_error_count_is_spent() {
        // Every third operation fails: the 11th failure comes at about the
        // 33rd operation of a worker, not after the 100000 planned.
        let out = flaky_phase(3, Stop::Ops(100_000), Budget::Count(10));
        assert!(out.budget_spent);
        let r = phase_result("p", "test", 3, &out, Budget::Count(10));
        assert!(
            (11..=13).contains(&r.total_errors),
            "{} errors: at most one more per other worker",
            r.total_errors
        );
        assert!(r.total_ops + r.total_errors < 150, "{}", r.total_ops);
        match &r.status {
            PhaseStatus::Failed { reason } => assert_eq!(
                *reason,
                format!(
                    "stopped when its error budget (10 errors) was spent: {} of {} operations failed (100000 planned)",
                    r.total_errors,
                    r.total_ops + r.total_errors
                )
            ),
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn a_share_budget_of_a_counted_phase_is_a_share_of_the_planned_operations() {
        // 1% of 100000 is 1000 failures: spent after about 3000 operations.
        let out = flaky_phase(2, Stop::Ops(100_000), Budget::Fraction(0.01));
        assert!(out.budget_spent);
        let errors = out.rec.total_errors();
        assert!((1001..=1002).contains(&errors), "{errors}");
        // Half may fail: a third do, and the phase runs to its end.
        let out = flaky_phase(2, Stop::Ops(3000), Budget::Fraction(0.5));
        assert!(!out.budget_spent);
        assert_eq!(out.rec.total_ok() + out.rec.total_errors(), 3000);
        assert!(
            phase_result("p", "t", 2, &out, Budget::Fraction(0.5))
                .status
                .is_ok()
        );
    }

    #[test]
    fn a_share_budget_of_a_timed_phase_is_spent_once_no_success_can_bring_it_back() {
        // A third fail. Of a 3 s phase, 10% is spent once the failures are
        // over 10% of what the whole phase runs at this rate: after 0.9 s,
        // checked from 1 s on.
        let out = flaky_phase(2, Stop::Time(Duration::from_secs(3)), Budget::Fraction(0.1));
        assert!(out.budget_spent);
        assert!(
            out.elapsed < Duration::from_millis(2000),
            "{:?}",
            out.elapsed
        );
        let r = phase_result("p", "t", 2, &out, Budget::Fraction(0.1));
        assert!(!r.status.is_ok());
        let out = flaky_phase(
            2,
            Stop::Time(Duration::from_millis(1500)),
            Budget::Fraction(0.5),
        );
        assert!(!out.budget_spent);
        assert!(out.elapsed >= Duration::from_millis(1500));
    }

    #[test]
    fn target_rate_paces_operations_and_records_intended_latency() {
        let out = rt().block_on(async {
            let workers = (0..2)
                .map(|_| Flaky {
                    n: 1,
                    limit: u64::MAX,
                })
                .collect();
            let plan = PhasePlan {
                stop: Stop::Time(Duration::from_millis(500)),
                warmup: Duration::from_millis(100),
                target: Some(400.0),
                progress: None,
                progress_total: None,
                budget: Budget::Count(u64::MAX),
            };
            run_phase(workers, &["A", "B"], &plan, &CancellationToken::new()).await
        });
        let r = phase_result("p", "test", 2, &out, Budget::Count(u64::MAX));
        let attempts = r.total_ops + r.total_errors;
        // 400/s for 0.5 s is 200 operations.
        assert!((170..=230).contains(&attempts), "{attempts}");
        assert!(r.ops["A"].intended_latency_us.is_some());
    }

    #[test]
    fn cancellation_stops_a_timed_phase_and_marks_it_failed() {
        let out = rt().block_on(async {
            let cancel = CancellationToken::new();
            let c2 = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                c2.cancel();
            });
            let workers = vec![Flaky {
                n: 0,
                limit: u64::MAX,
            }];
            let plan = PhasePlan {
                stop: Stop::Time(Duration::from_secs(30)),
                warmup: Duration::ZERO,
                target: None,
                progress: None,
                progress_total: None,
                budget: Budget::Count(u64::MAX),
            };
            run_phase(workers, &["A", "B"], &plan, &cancel).await
        });
        assert!(out.elapsed < Duration::from_secs(5));
        let r = phase_result("p", "test", 1, &out, Budget::Count(u64::MAX));
        assert!(!r.status.is_ok());
    }

    #[test]
    fn budgets_read_as_a_person_writes_them() {
        assert_eq!(Budget::Count(0).to_string(), "0 errors");
        assert_eq!(Budget::Count(1).to_string(), "1 error");
        assert_eq!(Budget::Fraction(0.01).to_string(), "1%");
        assert_eq!(Budget::Fraction(0.005).to_string(), "0.5%");
        use crate::workload::ErrorBudget;
        assert_eq!(ErrorBudget::Count(0).to_string(), "0 errors");
        assert_eq!(ErrorBudget::Share(" 1% ".into()).to_string(), "1%");
    }
}
