//! The measured part of a cell: each phase at each thread count, the
//! engine watched while it runs (exit, OOM kill, deadline), the CPU time
//! others took from its CPUs, and the verdict on its result.

use super::*;

/// Every measured phase at every thread count, each written as it ends;
/// `index` is the first phase file's.
pub(super) async fn measure(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    writer: &dyn CellWriter,
    mut index: usize,
) -> Result<(), Stop> {
    for step in &work.phases {
        for &threads in &step.threads {
            check(ctx)?;
            r.enter(ctx, &format!("{} t{threads}", step.name));
            let mut res = run_one(work, ctx, r, step, threads, index, true).await?;
            if let Some(why) = r.topology.check_phase(work, r.port, &mut r.record).await {
                res.status = match res.status {
                    PhaseStatus::Invalid { reason } => PhaseStatus::Invalid {
                        reason: format!("{why}; {reason}"),
                    },
                    s if s.is_ok() => PhaseStatus::Invalid { reason: why },
                    s => s,
                };
            }
            writer.phase(
                &ctx.cell_dir,
                index,
                &stem(index, &step.name, threads),
                &res,
            )?;
            index += 1;
            if let Some(errors) = res.first_errors() {
                ctx.live
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .say(&format!(
                        "[{} {}] phase {} t{threads}: {} operations failed; first errors: {errors}",
                        ctx.position, r.record.label, step.name, res.total_errors
                    ));
            }
            // An invalid phase (a shared CPU, say) still filled the
            // database: its data is measured as a valid one's is.
            let ok = matches!(
                res.status,
                crate::results::model::PhaseStatus::Ok
                    | crate::results::model::PhaseStatus::Invalid { .. }
            );
            r.record.phases.push(res);
            if let Some(why) = r.abort.take() {
                return Err(Stop::Failed(why));
            }
            if step.loads && ok && work.load.is_none() {
                // The tool filled the database: its size now, not the
                // empty one settle saw.
                r.record.data_size_bytes = Some(super::stages::data_size(work, ctx, r).await);
            }
        }
    }
    Ok(())
}

/// One run of one phase at one thread count: stats before and after, the
/// engine watched while it runs, the io-bound claim checked.
pub(super) async fn run_one(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    step: &PhaseStep,
    threads: u32,
    index: usize,
    measured: bool,
) -> Result<PhaseResult, Stop> {
    let stem = stem(index, &step.name, threads);
    let before = r.stats.server()?;
    let cpu_before = CpuSnapshot::take(&work.limits.server_cpus, &topology_pids(r));
    let members_before = r.topology.cpu_usec();
    let link_before = r.links.as_ref().map(|l| l.stats());
    let qdisc_before = network::qdisc_sent(r);
    let started = Instant::now();
    let Watched {
        result,
        mut died,
        overran,
    } = watch_phase(work, ctx, r, step, threads, &stem, started).await;
    if measured {
        r.phase_time += started.elapsed();
    }
    if died.is_none() {
        died = exited_meanwhile(r, result.is_err() && !ctx.stop.is_cancelled()).await;
    }
    if let Some(status) = died {
        return engine_died(r, step, &before, status, result).await;
    }
    if ctx.stop.is_cancelled() {
        return Err(Stop::Interrupted);
    }
    if let Some(why) = overran {
        let status = PhaseStatus::Failed {
            reason: why.clone(),
        };
        return end_cell(r, result, status, why);
    }
    let mut res = result.map_err(|e| Stop::Failed(format!("phase {}: {e:#}", step.name)))?;
    let after = r.stats.server()?;
    let mut io = fidelity::phase_io(&before, &after, step.expect_io_bound, work.io_bound);
    io.engine_cache_bytes = work.facts.cache_size(r.port).await;
    if !work.cache_overcommit {
        io.cache_violation = fidelity::cache_violation(io.engine_cache_bytes, after.memory_limit);
    }
    if let (Some(before), Some(links), Some(net)) = (
        link_before,
        r.links.as_ref(),
        r.record.fidelity.network.as_ref(),
    ) {
        let traffic = network::traffic(&links.stats().since(&before), started.elapsed());
        io.network_violation = network::rate_violation(&net.asked, &traffic);
        io.network = Some(traffic);
    }
    if let (Some(before), Some(after)) = (qdisc_before, network::qdisc_sent(r)) {
        io.network = Some(network::qdisc_traffic(before, after, started.elapsed()));
    }
    let members_usec = r.topology.cpu_usec().saturating_sub(members_before);
    cpu_before.finish(
        &mut io,
        &work.limits.server_cpus,
        &topology_pids(r),
        members_usec,
        work.steal_allowance,
    );
    judge(
        &mut res,
        after.oom_kills.saturating_sub(before.oom_kills),
        &io,
    );
    r.record.fidelity.phase_io.insert(stem, io);
    Ok(res)
}

/// The server's processes, and a replica set's secondaries': members that
/// share the server's CPUs (`share_cpus`) are the topology's own work,
/// not contention.
fn topology_pids(r: &mut Running) -> Vec<u32> {
    let mut pids = r.sandbox().server_pids();
    pids.extend(r.topology.server_pids());
    pids
}

/// A phase that ends the cell for `why`: its result is recorded with
/// `status`; without a result, the cell fails.
fn end_cell(
    r: &mut Running,
    result: anyhow::Result<PhaseResult>,
    status: PhaseStatus,
    why: String,
) -> Result<PhaseResult, Stop> {
    match result {
        Ok(mut res) => {
            res.status = status;
            r.abort = Some(why);
            Ok(res)
        }
        Err(_) => Err(Stop::Failed(why)),
    }
}

/// A finished phase's status from what the kernel saw: OOM kills in the
/// server's cgroup, else a broken io-bound or contention claim.
fn judge(res: &mut PhaseResult, ooms: u64, io: &crate::results::model::PhaseIo) {
    if ooms > 0 {
        res.status = PhaseStatus::Oom {
            reason: format!(
                "the kernel OOM-killed {ooms} process(es) in the server's cgroup during the phase"
            ),
        };
    } else if let Some(why) = io.violations().next()
        && res.status.is_ok()
    {
        res.status = PhaseStatus::Invalid {
            reason: why.clone(),
        };
    }
}

/// How watching a phase ended.
struct Watched {
    result: anyhow::Result<PhaseResult>,
    /// The engine's exit, seen while the phase ran.
    died: Option<EngineStatus>,
    /// Why the phase was stopped: it ran past its length plus grace.
    overran: Option<String>,
}

/// Run the phase with its client processes placed in the client group,
/// and watch it every half second: the engine's status, the live view,
/// and its deadline (its length plus [`PHASE_GRACE`] from `started`).
async fn watch_phase(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    step: &PhaseStep,
    threads: u32,
    stem: &str,
    started: Instant,
) -> Watched {
    let cancel = ctx.stop.child_token();
    let (progress, mut progress_rx) = watch::channel(None);
    let placer = r.sandbox().client_placer();
    let place: PlaceHook = Arc::new(move |cmd: &mut std::process::Command| {
        placer.place(cmd).map_err(std::io::Error::other)
    });
    let ports = r.client_ports();
    let env = PhaseEnv {
        port: ports[0],
        ports,
        set_ports: r.topology.set_ports(r.port),
        threads,
        cell_dir: ctx.cell_dir.clone(),
        stem: stem.to_string(),
        cancel: cancel.clone(),
        place,
        progress,
    };
    let latest = r.sampler.as_ref().map(|s| s.latest());
    let fut = step.exec.run(env);
    tokio::pin!(fut);
    let mut died: Option<EngineStatus> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let label = format!("{} t{threads}", step.name);
    // Past its length plus a grace the phase is stopped; if it then does
    // not hand back its result either, it is abandoned.
    let mut deadline = step.length.map(|l| started + l + PHASE_GRACE);
    let mut overran: Option<String> = None;
    let result = loop {
        tokio::select! {
            res = &mut fut => break res,
            _ = until(deadline) => {
                if overran.is_some() {
                    break Err(anyhow::anyhow!("abandoned after it did not stop"));
                }
                let length = step.length.unwrap_or_default();
                overran = Some(format!(
                    "phase {} did not end within its {} plus {}s of grace: the engine stopped answering (frozen?) or the tool hung; it was stopped",
                    step.name,
                    crate::units::Duration(length),
                    PHASE_GRACE.as_secs()
                ));
                cancel.cancel();
                deadline = Some(Instant::now() + CANCEL_GRACE);
            }
            _ = tick.tick() => {
                if died.is_none() {
                    let status = r.sandbox().engine_status().await;
                    if let Ok(s @ EngineStatus::Exited { .. }) = status {
                        died = Some(s);
                        cancel.cancel();
                    }
                }
                let ops = *progress_rx.borrow_and_update();
                let mem = latest
                    .as_ref()
                    .and_then(|l| l.borrow().as_ref().map(|s| (s.memory_bytes, s.memory_limit_bytes)));
                show(ctx, &work.label, &label, ops, mem);
            }
        }
    };
    Watched {
        result,
        died,
        overran,
    }
}

/// Whether the engine exited since the last tick of the phase. Its clients
/// may see the connection refused, and the phase fail, before the tick
/// notices the exit (a slow or busy host, issue 20): a failed phase waits
/// up to a second for the exit to show before it is blamed on the client.
async fn exited_meanwhile(r: &mut Running, phase_failed: bool) -> Option<EngineStatus> {
    let tries = if phase_failed { 10 } else { 1 };
    for i in 0..tries {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if let Ok(s @ EngineStatus::Exited { .. }) = r.sandbox().engine_status().await {
            return Some(s);
        }
    }
    None
}

/// Sleep until `deadline`, or forever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// The engine exited during a phase: an OOM kill (from the kernel's
/// counter, read while the cgroup still exists) records the phase as OOM
/// and ends the cell; any other exit fails the cell without a result.
async fn engine_died(
    r: &mut Running,
    step: &PhaseStep,
    before: &CgroupStats,
    status: EngineStatus,
    result: anyhow::Result<PhaseResult>,
) -> Result<PhaseResult, Stop> {
    let how = crate::sandbox::process::describe(status);
    let ooms = match r.stats.server() {
        Ok(after) => after.oom_kills.saturating_sub(before.oom_kills),
        Err(_) => 0,
    };
    if ooms == 0 {
        return Err(Stop::Failed(format!(
            "the engine exited during phase {} ({how}); see engine.log",
            step.name
        )));
    }
    let why = format!(
        "the kernel OOM-killed the engine during phase {} ({ooms} OOM kill(s) in the server's cgroup; engine {how}): raise server.memory or lower the cache; see engine.log",
        step.name
    );
    let status = PhaseStatus::Oom {
        reason: why.clone(),
    };
    end_cell(r, result, status, why)
}

/// What the server's CPUs did at the start of a phase: their busy time
/// (everyone's), the time the hypervisor stole from them, and the
/// run-queue wait of the engine's threads.
struct CpuSnapshot {
    at: Instant,
    times: Option<procfs::CpuTimes>,
    delay_ns: BTreeMap<u32, u64>,
}

impl CpuSnapshot {
    /// `pids`: the server's, whose threads' run-queue wait is summed.
    fn take(cpus: &crate::units::CpuSet, pids: &[u32]) -> CpuSnapshot {
        let proc_root = Path::new(procfs::PROC);
        CpuSnapshot {
            at: Instant::now(),
            times: procfs::cpu_times(proc_root, cpus),
            delay_ns: procfs::run_delay_ns(proc_root, pids),
        }
    }

    /// Fill the phase's contention figures from a snapshot taken now
    /// (`io.cpu_usec` is the server cgroup's CPU time over the phase;
    /// `members_usec` the other members' of a replica set, which may
    /// share its CPUs and are not contention).
    fn finish(
        self,
        io: &mut crate::results::model::PhaseIo,
        cpus: &crate::units::CpuSet,
        pids: &[u32],
        members_usec: u64,
        steal_allowed: f64,
    ) {
        let now = CpuSnapshot::take(cpus, pids);
        let wall_s = now.at.duration_since(self.at).as_secs_f64();
        let n = cpus.len().max(1) as f64;
        if let (Some(a), Some(b)) = (self.times, now.times) {
            io.cpu_foreign_share = fidelity::foreign_share(
                b.busy_s - a.busy_s,
                (io.cpu_usec + members_usec) as f64 / 1e6,
                wall_s,
                cpus.len(),
            );
            io.cpu_steal_share = fidelity::steal_share(b.steal_s - a.steal_s, wall_s, cpus.len());
        }
        let waited: u64 = now
            .delay_ns
            .iter()
            .map(|(tid, ns)| ns.saturating_sub(self.delay_ns.get(tid).copied().unwrap_or(0)))
            .sum();
        if wall_s > 0.0 {
            io.engine_run_delay_share = Some(fidelity::round3(waited as f64 / 1e9 / wall_s / n));
        }
        io.cpu_steal_allowed = (steal_allowed > 0.0).then_some(steal_allowed);
        io.contention_violation = io.cpu_foreign_share.and_then(|foreign| {
            let steal = io.cpu_steal_share.unwrap_or(0.0);
            fidelity::contention_violation(foreign, steal, steal_allowed, wall_s, cpus)
        });
    }
}
