//! The stages that bring a cell to its measured phases: provision the
//! sandbox, render the configs, start the engine and wait for it, load the
//! data, settle the memory cap.

use super::*;

/// Host settings, the sandbox with its limits read back, and the sampler.
pub(super) async fn provision(work: &CellWork, ctx: &CellCtx, r: &mut Running) -> Result<(), Stop> {
    host_settings(work, ctx, r)?;
    let provisioned = r.sandbox().provision(&work.limits).await?;
    // Extended, not replaced: the host settings read back come first.
    r.record
        .fidelity
        .limits_read_back
        .extend(provisioned.read_back);
    let before = r.stats.server()?;
    r.oom_at_start = before.oom_kills;
    r.sampler = Some(Sampler::start(
        Arc::new(r.stats.clone()),
        Duration::from_secs(1),
        r.epoch,
    ));
    Ok(())
}

/// A free port and the engine's launch, its config files kept with the
/// results and `launch.json` written.
pub(super) fn render(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    writer: &dyn CellWriter,
) -> Result<EngineLaunch, Stop> {
    r.port = crate::sandbox::free_port()?;
    let data_dir = cell_work_dir(ctx).join("data");
    // The engine reads its configs from benchcage's work dir, which its
    // unprivileged user can reach; the results (maybe a private folder)
    // keep the copy the sandbox installs from.
    let engine_config_dir = cell_work_dir(ctx).join("config");
    let kept_config_dir = ctx.cell_dir.join("config");
    let log_path = ctx.cell_dir.join("engine.log");
    std::fs::create_dir_all(&kept_config_dir).map_err(anyhow::Error::from)?;
    let (mut launch, files) = (work.launch)(r.port, &data_dir, &engine_config_dir, &log_path)?;
    for (name, content) in &files {
        writer.file(&kept_config_dir.join(name), content.as_bytes())?;
    }
    for (kept, engine_path) in &mut launch.config_files {
        if let Some(name) = engine_path.file_name() {
            *kept = kept_config_dir.join(name);
        }
    }
    writer.file(
        &ctx.cell_dir.join("launch.json"),
        &serde_json::to_vec_pretty(&launch).map_err(anyhow::Error::from)?,
    )?;
    Ok(launch)
}

/// Start the engine and wait until it answers its probe.
pub(super) async fn start(
    ctx: &CellCtx,
    r: &mut Running,
    launch: &EngineLaunch,
) -> Result<(), Stop> {
    let handle = r.sandbox().start_engine(launch).await?;
    r.record.image = handle.image.clone();
    if let EngineId::Pid(pid) = handle.id {
        r.engine_pid = Some(pid);
    }
    for (k, v) in handle.read_back {
        r.record.fidelity.limits_read_back.insert(k, v);
    }
    r.launch = Some(launch.clone());

    r.enter(ctx, "ready");
    let version = tokio::select! {
        res = crate::sandbox::ready::wait_ready(r.sandbox(), launch) => res?,
        _ = ctx.stop.cancelled() => return Err(Stop::Interrupted),
    };
    r.record.engine_reported_version = version;
    Ok(())
}

/// The load phase, the first phase file; a failed load ends the cell.
pub(super) async fn load_data(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    writer: &dyn CellWriter,
    load: &PhaseStep,
) -> Result<(), Stop> {
    let threads = load.threads.first().copied().unwrap_or(1);
    let res = run_one(work, ctx, r, load, threads, 0, false).await?;
    writer.phase(&ctx.cell_dir, 0, &stem(0, &load.name, threads), &res)?;
    let ok = res.status.is_ok();
    r.record.phases.push(res);
    if let Some(why) = r.abort.take() {
        return Err(Stop::Failed(why));
    }
    if !ok {
        return Err(Stop::Failed(
            "the load phase failed; see its phase file".into(),
        ));
    }
    Ok(())
}

/// Measure the data, then shrink the memory cap to a share of it and drop
/// the page cache, as the cell asks.
pub(super) async fn settle_memory(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
) -> Result<(), Stop> {
    let on_disk = disk::dir_size(&cell_work_dir(ctx).join("data"));
    let reported = work.facts.data_size(r.port).await;
    let data_size = reported.filter(|b| *b > 0).unwrap_or(on_disk);
    r.record.data_size_bytes = Some(data_size);
    if let Some(want) = work.settle.memory {
        let (cap, why) = match want {
            SettleCap::OfData(share) => (
                settle::settled_cap(share, Bytes(data_size)),
                format!("{share} of data {}", Bytes(data_size)),
            ),
            SettleCap::Absolute(b) => (b, "absolute".to_string()),
        };
        r.sandbox().set_memory_cap(cap, work.limits.swap)?;
        r.record
            .limits
            .insert("memory_settled".into(), format!("{cap} ({why})"));
    }
    if work.settle.drop_caches {
        r.sandbox().drop_page_cache()?;
    }
    let settled = r.stats.server()?;
    r.record.memory_limit_bytes = Some(settled.memory_limit);
    if work.settle.memory.is_some() {
        r.record.fidelity.limits_read_back.insert(
            "server/memory limit after settle".into(),
            settled.memory_limit.to_string(),
        );
    }
    Ok(())
}
