//! `benchcage cleanup [--dry-run]`: reap what dead runs left behind, by
//! ledger (see `sandbox::ledger`): cgroups in every controller, engine
//! processes, the hog, data dirs; and by label: every container of a run
//! whose owner process is dead. Every run start does the same. Then runs
//! whose record says `running` although their benchcage is gone are marked
//! `interrupted`, and empty work folders of finished runs are removed.
//!
//! A ledger is not trusted: what lies outside benchcage's roots, and a
//! pid that is not the process recorded, is kept and listed as KEPT; a
//! ledger that cannot be read is kept as it is and listed. Either makes
//! the exit code 1. A state dir that others may write is refused (exit 2).

use crate::cli::CleanupArgs;
use crate::run::orphans;
use crate::sandbox::docker;
use crate::sandbox::ledger::{self, Resource};
use crate::sandbox::roots;
use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(home: &Path, args: &CleanupArgs) -> anyhow::Result<ExitCode> {
    let root = ledger::default_root();
    roots::check_state_dir(&root).map_err(|e| crate::error::bad_input(e.to_string()))?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    // Containers by label first (every run whose owner is dead, ledger or
    // not), then everything the dead runs' ledgers hold.
    let containers = docker::reap_dead_runs(args.dry_run).await;
    let reports = ledger::reap_dead(&root, args.dry_run)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut tally = Tally::default();
    for r in &reports {
        tally.add(say_ledger(r, verb, args.dry_run).await?);
    }
    tally.leaked += say_containers(&containers, verb);
    let results_root = args
        .results
        .clone()
        .unwrap_or_else(|| crate::results::layout::results_root(home));
    let (runs, folders) = dead_runs_and_work_folders(&results_root, &root, args.dry_run);
    tally.leaked += runs.iter().filter(|r| r.is_err()).count();
    if reports.is_empty()
        && containers.removed.is_empty()
        && containers.leaked.is_empty()
        && runs.is_empty()
        && folders.is_empty()
    {
        println!("nothing to clean up (ledgers in {})", root.display());
    }
    tally.exit_code()
}

/// What could not be removed (`LEAKED`) and what was not acted on
/// (`KEPT`).
#[derive(Debug, Default)]
struct Tally {
    leaked: usize,
    kept: usize,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.leaked += other.leaked;
        self.kept += other.kept;
    }

    /// An error when something leaked, 1 when something was kept, else
    /// success; each with what to do.
    fn exit_code(&self) -> anyhow::Result<ExitCode> {
        let (kept, leaked) = (self.kept, self.leaked);
        if kept > 0 {
            eprintln!(
                "{kept} ledger(s) or entries were not acted on (see KEPT above): they name something outside benchcage's roots, a process that is not the one recorded, or cannot be read; a forged or damaged ledger looks like this"
            );
        }
        if leaked > 0 {
            anyhow::bail!(
                "{leaked} resource(s) could not be removed; see LEAKED above, fix the cause (e.g. a process in D state) and run `benchcage cleanup` again"
            );
        }
        if kept > 0 {
            return Ok(ExitCode::from(1));
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// What reaping one dead run's ledger did, printed; its containers
/// removed after it, and the ledger too once nothing of it is left.
async fn say_ledger(r: &ledger::ReapReport, verb: &str, dry_run: bool) -> anyhow::Result<Tally> {
    if let Some(why) = &r.unreadable {
        println!(
            "KEPT ledger {}: {why}; nothing in it was touched. Inspect it, remove what it lists by hand if it is yours, then delete it",
            r.ledger.display()
        );
        return Ok(Tally { leaked: 0, kept: 1 });
    }
    println!(
        "run {} (owner pid {} is gone; ledger {}):",
        r.run,
        r.owner_pid,
        r.ledger.display()
    );
    say_removed(verb, &r.removed, &r.leaked);
    for what in &r.refused {
        println!("  KEPT {what}");
    }
    let mut tally = Tally {
        leaked: r.leaked.len(),
        kept: r.refused.len(),
    };
    let names: Vec<String> = r
        .deferred
        .iter()
        .filter_map(|res| match res {
            Resource::Container { id } => Some(id.clone()),
            _ => None,
        })
        .collect();
    if dry_run {
        for n in &names {
            println!("  {verb} container {n} (if it still exists)");
        }
        return Ok(tally);
    }
    let out = docker::remove_containers(&names).await;
    say_removed(verb, &out.removed, &out.leaked);
    tally.leaked += out.leaked.len();
    // The ledger waited for its containers; with them gone it is done.
    if r.leaked.is_empty() && r.refused.is_empty() && out.leaked.is_empty() {
        std::fs::remove_file(&r.ledger)
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(e),
            })
            .with_context(|| format!("removing ledger {}", r.ledger.display()))?;
    }
    Ok(tally)
}

/// The containers of dead runs found by label, printed; how many leaked.
fn say_containers(containers: &docker::ReapOutcome, verb: &str) -> usize {
    if !containers.removed.is_empty() || !containers.leaked.is_empty() {
        println!("containers of dead runs (by label):");
    }
    say_removed(verb, &containers.removed, &containers.leaked);
    if let Some(why) = &containers.unreachable {
        println!("docker: containers not checked ({why})");
    }
    containers.leaked.len()
}

/// `  removed X` for each of `removed`, `  LEAKED Y` for each of `leaked`.
fn say_removed(verb: &str, removed: &[String], leaked: &[String]) {
    for what in removed {
        println!("  {verb} {what}");
    }
    for what in leaked {
        println!("  LEAKED {what}");
    }
}

/// Runs under `results_root` whose benchcage died while they said
/// `running` are marked `interrupted`; then the empty work folders of runs
/// that are over go. Prints what it did (or would do).
fn dead_runs_and_work_folders(
    results_root: &Path,
    ledger_root: &Path,
    dry_run: bool,
) -> (
    Vec<Result<orphans::DeadRun, String>>,
    Vec<std::path::PathBuf>,
) {
    let runs = orphans::mark_dead_runs(results_root, dry_run);
    let verb = if dry_run { "would mark" } else { "marked" };
    for r in &runs {
        match r {
            Ok(d) => println!(
                "run {} (owner pid {} is gone): {verb} interrupted in {}",
                d.run_id,
                d.owner_pid,
                d.run_json.display()
            ),
            Err(e) => println!("  LEAKED run record: {e}"),
        }
    }
    let live = orphans::live_runs(results_root);
    let work_root = crate::run::matrix::work_root();
    let folders = orphans::remove_empty_work_dirs(&work_root, ledger_root, &live, dry_run);
    let verb = if dry_run { "would remove" } else { "removed" };
    for f in &folders {
        println!("  {verb} empty work folder {}", f.display());
    }
    (runs, folders)
}
