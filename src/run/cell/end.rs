//! The end of a cell: what the engine and the kernel say once the phases
//! are over, then the sandbox torn down and the host's settings restored,
//! each under its own budget.

use super::*;

pub(super) async fn collect(work: &CellWork, ctx: &CellCtx, r: &mut Running) -> Result<(), Stop> {
    let _ = ctx;
    let cache = work.facts.cache_size(r.port).await;
    let pids = r
        .sandbox()
        .server_pids()
        .into_iter()
        .chain(r.engine_pid)
        .collect::<std::collections::BTreeSet<u32>>()
        .into_iter()
        .collect::<Vec<_>>();
    let stats = r.stats.server()?;
    let status = r.sandbox().engine_status().await?;
    let f = &mut r.record.fidelity;
    f.engine_reported_cache_bytes = cache;
    f.engine_thread_cpus = procfs::thread_cpus(Path::new(procfs::PROC), &pids);
    f.violations.extend(fidelity::thread_cpu_violations(
        &f.engine_thread_cpus,
        &work.limits.server_cpus,
    ));
    if let Some(planned) = r.record.memory_limit_bytes
        && let Some(v) = fidelity::memory_limit_violation(planned, stats.memory_limit)
    {
        f.violations.push(v);
    }
    f.oom_kills = stats.oom_kills.saturating_sub(r.oom_at_start);
    f.engine_restarts = u64::from(!matches!(status, EngineStatus::Running));
    if let Some((hog, _)) = &r.hog {
        let now = crate::sandbox::hog::vm_lck(hog.pid()).map(|b| b.as_u64());
        f.hog_locked_bytes = now;
        if let Some(v) = fidelity::hog_violation(hog.locked().as_u64(), now) {
            f.violations.push(v);
        }
    }
    let reported = r.record.engine_reported_version.clone();
    if let Some(v) = work
        .expect_version
        .as_deref()
        .and_then(|want| fidelity::version_violation(want, &reported))
    {
        f.violations.push(v);
    }
    f.engine_reported_version = Some(reported).filter(|v| !v.is_empty());
    f.engine_package = work.package.clone();
    let sup = fidelity::supervision_violations(f.oom_kills, f.engine_restarts);
    f.violations.extend(sup);
    r.topology.collect(&mut r.record);
    let f = &mut r.record.fidelity;
    for (stem, io) in &f.phase_io {
        for v in io.violations() {
            f.violations.push(format!("{stem}: {v}"));
        }
    }
    Ok(())
}

/// The engine's `quick_stop:` statement and where to send it.
pub(super) struct QuickStop {
    pub facts: Arc<dyn EngineFacts>,
    pub port: u16,
    pub statement: String,
}

/// How long teardown waits for the engine to take its `quick_stop:`
/// statement before it goes on to the signals.
const QUICK_STOP_WAIT: Duration = Duration::from_secs(2);

/// Stop the engine and remove the sandbox within the budget; a second
/// Ctrl-C skips the grace period but not the teardown. The engine's
/// `quick_stop:` statement, when it has one, goes first: the data is
/// thrown away, and the engine need not wait for its next tick to see a
/// signal; the signals and the cgroup sweep follow as always, so the
/// server is gone whatever the statement did. Returns a leak report when
/// something could not be removed.
pub(super) async fn teardown(
    mut sb: Box<dyn Sandbox + Sync>,
    quick: Option<QuickStop>,
    hurry: &CancellationToken,
) -> Option<String> {
    let hurry = hurry.clone();
    // A task of its own: dropping the run's future (a panic, a cancelled
    // caller) must not cancel the teardown half way.
    let task = tokio::spawn(async move {
        let grace = if hurry.is_cancelled() {
            Duration::ZERO
        } else {
            STOP_GRACE
        };
        if let Some(q) = quick.filter(|_| !hurry.is_cancelled())
            && matches!(sb.engine_status().await, Ok(EngineStatus::Running))
        {
            // An engine that exits on it closes the connection without a
            // reply: an error here says nothing, and the signals follow.
            let _ =
                tokio::time::timeout(QUICK_STOP_WAIT, q.facts.execute(q.port, &q.statement)).await;
        }
        let stopped = match sb.stop_engine(grace).await {
            Ok(_) | Err(SandboxError::NoEngine) => None,
            Err(e) => Some(format!("stopping the engine: {e}")),
        };
        match sb.teardown(TEARDOWN_BUDGET).await {
            Ok(rep) if rep.is_clean() => stopped,
            Ok(rep) => Some(format!(
                "teardown left {}; run `benchcage cleanup`",
                rep.leaked.join(", ")
            )),
            Err(e) => Some(format!("teardown: {e}; run `benchcage cleanup`")),
        }
    });
    match task.await {
        Ok(r) => r,
        Err(e) => Some(format!("teardown task: {e}; run `benchcage cleanup`")),
    }
}

/// Undo what the cell's THP ledger records; the leak in words, if any.
pub(super) async fn restore_host(ledger: Ledger) -> Option<String> {
    let entries = match ledger.entries() {
        Ok(e) => e,
        Err(e) => return Some(format!("the host's THP setting: {e}")),
    };
    let report = ledger::reap_entries(&entries, TEARDOWN_BUDGET).await;
    if report.is_done() {
        let _ = ledger.finish();
        None
    } else {
        Some(format!(
            "the host's THP setting was not restored: {}",
            report.leaked.join("; ")
        ))
    }
}
