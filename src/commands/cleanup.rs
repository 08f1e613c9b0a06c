//! `benchcage cleanup [--dry-run]`: reap what dead runs left behind, by
//! ledger (see `sandbox::ledger`): cgroups in every controller, engine
//! processes, the hog, data dirs. Every run start does the same.

use crate::cli::CleanupArgs;
use crate::sandbox::ledger;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, args: &CleanupArgs) -> anyhow::Result<ExitCode> {
    let root = ledger::default_root();
    let reports = ledger::reap_dead(&root, args.dry_run)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut leaked = 0;
    for r in &reports {
        println!(
            "run {} (owner pid {} is gone; ledger {}):",
            r.run,
            r.owner_pid,
            r.ledger.display()
        );
        for what in &r.removed {
            println!("  {verb} {what}");
        }
        for what in &r.leaked {
            println!("  LEAKED {what}");
        }
        for what in &r.deferred {
            println!("  left for the docker backend: {}", what.describe());
        }
        leaked += r.leaked.len();
    }
    if reports.is_empty() {
        println!("nothing to clean up (ledgers in {})", root.display());
    }
    if leaked > 0 {
        anyhow::bail!(
            "{leaked} resource(s) could not be removed; see LEAKED above, fix the cause (e.g. a process in D state) and run `benchcage cleanup` again"
        );
    }
    Ok(ExitCode::SUCCESS)
}
