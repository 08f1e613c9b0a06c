//! The stages that bring a cell to its measured phases: provision the
//! sandbox, render the configs, start the engine and wait for it, load the
//! data, settle the memory cap.

use super::*;
use crate::results::model::{LoadSource, PhaseStatus};
use crate::sandbox::StopOutcome;
use crate::snapshot::store::{LoadFacts, Meta};

/// Host settings, the sandbox with its limits read back, and the sampler.
pub(super) async fn provision(work: &CellWork, ctx: &CellCtx, r: &mut Running) -> Result<(), Stop> {
    host_settings(work, ctx, r)?;
    let provisioned = r.sandbox().provision(&work.limits).await?;
    // Extended, not replaced: the host settings read back come first.
    r.record
        .fidelity
        .limits_read_back
        .extend(provisioned.read_back);
    if let Some(net) = &work.network {
        super::network::isolate(net, r).await?;
    }
    let before = r.stats.server()?;
    r.oom_at_start = before.oom_kills;
    let stats = r.topology.stats(r.stats.clone());
    // A client on another node is not sampled: its cgroup here holds only
    // the `srun` that started it.
    let targets = if work.limits.client_node.is_same() {
        Target::BOTH
    } else {
        Target::SERVER
    };
    r.sampler = Some(Sampler::start(
        stats,
        targets,
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
    super::network::bridge(work, r)?;
    let data_dir = cell_work_dir(ctx).join("data");
    // The engine reads its configs from benchcage's work dir, which its
    // unprivileged user can reach; the results (maybe a private folder)
    // keep the copy the sandbox installs from.
    let engine_config_dir = cell_work_dir(ctx).join("config");
    let kept_config_dir = ctx.cell_dir.join("config");
    let log_path = ctx.cell_dir.join("engine.log");
    std::fs::create_dir_all(&kept_config_dir).map_err(anyhow::Error::from)?;
    let (mut launch, files) = (work.launch)(r.port, &data_dir, &engine_config_dir, &log_path)?;
    let launch_json = ctx.cell_dir.join("launch.json");
    writer.keep_configs(&kept_config_dir, &files, &mut launch, &launch_json)?;
    Ok(launch)
}

/// Start the engine and wait until it answers its probe (in the stage
/// "ready", unless `again`: a restart after a snapshot counts to it).
pub(super) async fn start(
    ctx: &CellCtx,
    r: &mut Running,
    launch: &EngineLaunch,
    again: bool,
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

    if !again {
        r.enter(ctx, "ready");
    }
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
    // A load voided by a shared CPU (or a cache over the cap) loaded its
    // data all the same: its figures are not results, the cell goes on.
    let loaded = matches!(res.status, PhaseStatus::Ok | PhaseStatus::Invalid { .. });
    r.record.phases.push(res);
    if let Some(why) = r.abort.take() {
        return Err(Stop::Failed(why));
    }
    if !loaded {
        return Err(Stop::Failed(
            "the load phase failed; see its phase file".into(),
        ));
    }
    Ok(())
}

/// The data's size as the engine reports it, else its files on disk.
pub(super) async fn data_size(work: &CellWork, ctx: &CellCtx, r: &Running) -> u64 {
    let on_disk = disk::dir_size(&cell_work_dir(ctx).join("data"));
    // A router reports the whole cluster's.
    let entry = r.topology.client_ports(r.port)[0];
    let reported = if entry != r.port {
        work.facts.data_size(entry).await
    } else if work.sharding.is_some() {
        work.facts.cluster_data_size(r.port).await
    } else {
        work.facts.data_size(r.port).await
    };
    reported.filter(|b| *b > 0).unwrap_or(on_disk)
}

/// Measure the data, then shrink the memory cap to a share of it and drop
/// the page cache, as the cell asks.
pub(super) async fn settle_memory(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
) -> Result<(), Stop> {
    let data_size = data_size(work, ctx, r).await;
    r.record.data_size_bytes = Some(data_size);
    // The cell's server holds all the data, unless it is one member of a
    // sharded cluster (its own share) or a config server (no records).
    let holds = topology::server_holds_records(work);
    if let Some(want) = work.settle.memory.filter(|_| holds) {
        let own = if work.sharding.is_some() {
            work.facts.data_size(r.port).await.unwrap_or(data_size)
        } else {
            data_size
        };
        let (cap, why) = settle::cap_for(want, own);
        // The cache first: a cap under what the cache holds cannot be set
        // (the kernel answers EBUSY when it cannot reclaim down to it).
        if let Some(resize) = &work.cache_resize {
            let (read_back, violation) = resize.apply(work.facts.as_ref(), r.port, cap).await;
            let f = &mut r.record.fidelity;
            f.limits_read_back
                .insert("server/engine cache after settle".into(), read_back);
            f.violations.extend(violation);
        }
        r.sandbox().set_memory_cap(cap, work.limits.swap)?;
        r.record.limits.insert(
            "memory_settled".into(),
            format!("{} ({why})", crate::display::exact(cap)),
        );
    }
    if work.settle.drop_caches {
        r.sandbox().drop_page_cache()?;
    }
    r.topology.settle(work, ctx, &mut r.record).await?;
    let settled = r.stats.server()?;
    r.record.memory_limit_bytes = Some(settled.memory_limit);
    if work.settle.memory.is_some() && holds {
        r.record.fidelity.limits_read_back.insert(
            "server/memory limit after settle".into(),
            settled.memory_limit.to_string(),
        );
    }
    Ok(())
}

/// Before the engine starts: when the cache holds the cell's snapshot,
/// its data dir is filled from it (in the sandbox's ledger), the launch
/// loses its `init`, and the restored files are written back and evicted
/// from the page cache: the copy went through benchcage's memory cgroup,
/// and the engine must not find its data cached outside its cap. `None`
/// when the cell loads; a restore that fails leaves the data dir empty
/// and the cell loads afresh, the entry quarantined when it is broken.
pub(super) fn restore_snapshot(
    sw: &SnapshotWork,
    ctx: &CellCtx,
    r: &mut Running,
    launch: &mut EngineLaunch,
    writer: &dyn CellWriter,
) -> Result<Option<Meta>, Stop> {
    let Some(meta) = sw.cache.find(&sw.id) else {
        return Ok(None);
    };
    let started = Instant::now();
    r.sandbox().claim_data_dir(&launch.data_dir)?;
    if let Err(e) = sw.cache.restore(&meta, &launch.data_dir) {
        empty_dir(&launch.data_dir)?;
        match e {
            crate::snapshot::SnapshotError::Gone { .. } => {
                r.record.load_source = Some(LoadSource::Fresh {
                    key: Some(sw.id.clone()),
                    saved: false,
                    save_s: None,
                    note: Some(format!("{e}, so the cell loaded")),
                    discarded: None,
                });
            }
            e => discarded(sw, r, e.to_string()),
        }
        return Ok(None);
    }
    if let Err(e) = crate::snapshot::copy::evict(&launch.data_dir) {
        // Evicting file by file failed: the whole host's cache goes.
        eprintln!("warning: evicting the restored files from the page cache: {e}");
        drop_host_page_cache();
    }
    launch.init.clear();
    writer.file(
        &ctx.cell_dir.join("launch.json"),
        &serde_json::to_vec_pretty(&*launch).map_err(anyhow::Error::from)?,
    )?;
    r.record.load_source = Some(LoadSource::Snapshot {
        key: sw.id.clone(),
        restore_s: started.elapsed().as_secs_f64(),
        load_s: meta.load_s,
        from_run: meta.from_run.clone(),
    });
    Ok(Some(meta))
}

/// The restored snapshot is not the load's data: quarantine its entry
/// (the load after saves a new one) and record why in the cell.
fn discarded(sw: &SnapshotWork, r: &mut Running, why: String) {
    if let Err(e) = sw.cache.quarantine(&sw.id, &why) {
        eprintln!("warning: quarantining snapshot {}: {e}", sw.id);
    }
    r.record.load_source = Some(LoadSource::Fresh {
        key: Some(sw.id.clone()),
        saved: false,
        save_s: None,
        note: None,
        discarded: Some(why),
    });
}

/// Start the engine on restored data. When it does not come up, or its
/// records are not the load's (with `verify`), the restored data is
/// discarded: the engine stopped, the data dir emptied, the entry
/// quarantined with the reason in the cell record, and the engine started
/// afresh with its `init` (`pristine`), to load. The snapshot's record
/// when the restore stands, else `None`.
pub(super) async fn start_restored(
    work: &CellWork,
    ctx: &CellCtx,
    r: &mut Running,
    launch: &mut EngineLaunch,
    pristine: &EngineLaunch,
    meta: Meta,
    writer: &dyn CellWriter,
) -> Result<Option<Meta>, Stop> {
    let Some(sw) = work.snapshot.as_ref() else {
        start(ctx, r, launch, false).await?;
        return Ok(None);
    };
    let why = match start(ctx, r, launch, false).await {
        Err(Stop::Interrupted) => return Err(Stop::Interrupted),
        Err(Stop::Failed(e)) => format!("the engine did not start on it: {}", clip(&e)),
        Ok(()) => match check_restored(work, sw, r, &meta).await? {
            None => return Ok(Some(meta)),
            Some(why) => why,
        },
    };
    r.sandbox().stop_engine(SNAPSHOT_STOP_GRACE).await?;
    empty_dir(&launch.data_dir)?;
    discarded(sw, r, why);
    r.record.data_digest = None;
    *launch = pristine.clone();
    writer.file(
        &ctx.cell_dir.join("launch.json"),
        &serde_json::to_vec_pretty(&*launch).map_err(anyhow::Error::from)?,
    )?;
    start(ctx, r, launch, true).await?;
    Ok(None)
}

/// The first lines of an error, for a cell record.
fn clip(e: &str) -> String {
    let lines: Vec<&str> = e.lines().take(6).collect();
    lines.join(" | ")
}

/// With `verify`, the restored records against the entry's: its digest
/// when it has one; without one, at least the record count the dataset
/// asks for, and then its digest is kept in the entry from now on. Why
/// the data is not the load's, or `None`.
async fn check_restored(
    work: &CellWork,
    sw: &SnapshotWork,
    r: &mut Running,
    meta: &Meta,
) -> Result<Option<String>, Stop> {
    if !sw.verify {
        return Ok(None);
    }
    let digest =
        work.facts.digest(r.port).await.map_err(|e| {
            Stop::Failed(format!("digesting the records for snapshot {}: {e}", sw.id))
        })?;
    let why = match &meta.digest {
        Some(want) if *want != digest => Some(format!(
            "its records digest {digest}, not its load's {want}"
        )),
        Some(_) => None,
        None => {
            let count: Option<u64> = digest.split(' ').next().and_then(|n| n.parse().ok());
            let want = expected_count(&sw.key);
            match (count, want) {
                (Some(n), Some((lo, hi))) if n < lo || n > hi => Some(format!(
                    "it holds {n} records, not the dataset's {lo}, and it has no digest to compare"
                )),
                _ => {
                    if let Err(e) = sw.cache.set_digest(&sw.id, &digest) {
                        eprintln!("warning: keeping the digest of snapshot {}: {e}", sw.id);
                    }
                    None
                }
            }
        }
    };
    r.record.data_digest = Some(digest);
    Ok(why)
}

/// How many records a digest of a key's load counts: a YCSB load's
/// `dataset.records` (redis counts one key more, the load generator's
/// index); `None` for loads whose count is another thing.
fn expected_count(key: &crate::snapshot::SnapshotKey) -> Option<(u64, u64)> {
    use crate::workload::GeneratorKind as LoadWorkload;
    let n = key.dataset.records;
    (key.load.workload == LoadWorkload::Ycsb).then_some((n, n + 1))
}

/// After a fresh load: stop the engine cleanly, copy its data dir into
/// the cache under the cell's key, and start it again (no `init`). A
/// snapshot that cannot be saved is a note in `load_source`, never a
/// failed cell; an engine that does not come back is.
pub(super) async fn save_snapshot(
    work: &CellWork,
    sw: &SnapshotWork,
    ctx: &CellCtx,
    r: &mut Running,
    launch: &EngineLaunch,
) -> Result<(), Stop> {
    let load_s = r.record.stage_s.get("load").copied().unwrap_or(0.0);
    // A snapshot discarded before this load stays in the record.
    let discarded = match &r.record.load_source {
        Some(LoadSource::Fresh { discarded, .. }) => discarded.clone(),
        _ => None,
    };
    let mut source = LoadSource::Fresh {
        key: Some(sw.id.clone()),
        saved: false,
        save_s: None,
        note: None,
        discarded,
    };
    // Asked before the engine stops for it.
    let room = crate::snapshot::store::Room {
        results: &ctx.cell_dir,
        work: &ctx.work_dir,
        later: sw.later,
    };
    if let Some(skip) = sw.cache.would_skip(&sw.id, &launch.data_dir, room) {
        set_note(&mut source, skip.to_string());
        r.record.load_source = Some(source);
        return Ok(());
    }
    let facts = LoadFacts {
        from_run: ctx.run_id.clone(),
        load_s,
        data_size_bytes: work.facts.data_size(r.port).await,
        digest: r.record.data_digest.clone(),
    };
    if let Some(stmt) = &sw.checkpoint {
        work.facts
            .execute(r.port, stmt)
            .await
            .map_err(|e| Stop::Failed(format!("`{stmt}` before the snapshot: {e}")))?;
    }
    let stopped = r.sandbox().stop_engine(SNAPSHOT_STOP_GRACE).await?;
    if stopped.outcome == StopOutcome::Killed {
        set_note(
            &mut source,
            format!(
                "not saved: the engine did not stop within {}s of SIGTERM, so its files may not be whole",
                SNAPSHOT_STOP_GRACE.as_secs()
            ),
        );
    } else {
        let started = Instant::now();
        match sw.cache.save(&sw.key, &launch.data_dir, room, facts) {
            Ok(Ok(_)) => {
                if let LoadSource::Fresh { saved, save_s, .. } = &mut source {
                    *saved = true;
                    *save_s = Some(started.elapsed().as_secs_f64());
                }
            }
            Ok(Err(skipped)) => set_note(&mut source, skipped.to_string()),
            Err(e) => set_note(&mut source, format!("not saved: {e}")),
        }
    }
    r.record.load_source = Some(source);
    let mut again = launch.clone();
    again.init.clear();
    start(ctx, r, &again, true).await
}

/// How long a clean stop before a snapshot may take: engines flush their
/// caches and logs on SIGTERM.
const SNAPSHOT_STOP_GRACE: Duration = Duration::from_secs(120);

fn set_note(source: &mut LoadSource, text: String) {
    if let LoadSource::Fresh { note, .. } = source {
        *note = Some(text);
    }
}

/// Remove what is in `dir`, keeping `dir`.
fn empty_dir(dir: &Path) -> Result<(), Stop> {
    for e in std::fs::read_dir(dir)
        .map_err(anyhow::Error::from)?
        .flatten()
    {
        let p = e.path();
        let gone = if e.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        gone.map_err(anyhow::Error::from)?;
    }
    Ok(())
}

/// Flush and drop the host's clean page cache, when evicting the restored
/// files one by one failed. Best effort (a container
/// without /proc/sys write access keeps its cache, and says nothing).
fn drop_host_page_cache() {
    nix::unistd::sync();
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "1");
}

/// With `verify`: the records' digest after a fresh load, in the record
/// (and in the snapshot saved from it). A restored cell's is checked by
/// [`start_restored`].
pub(super) async fn verify_records(work: &CellWork, r: &mut Running) -> Result<(), Stop> {
    let Some(sw) = work.snapshot.as_ref().filter(|s| s.verify) else {
        return Ok(());
    };
    let digest =
        work.facts.digest(r.port).await.map_err(|e| {
            Stop::Failed(format!("digesting the records for snapshot {}: {e}", sw.id))
        })?;
    r.record.data_digest = Some(digest);
    Ok(())
}
