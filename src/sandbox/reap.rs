//! Reaping what dead runs left behind at the start of every run, as
//! `cleanup` does (so the next run removes what `cleanup` would):
//! by ledger (cgroups, processes, the hog, data dirs, and the containers a
//! ledger names), then by label (every container of a run whose owner
//! process is dead, ledger or not).

use crate::sandbox::SandboxError;
use crate::sandbox::docker::{self, ReapOutcome};
use crate::sandbox::ledger::{self, ReapReport, Resource};
use std::path::Path;

/// What reaping the dead runs did (or, dry, would do).
#[derive(Debug, Clone, Default)]
pub struct DeadRuns {
    /// One report per dead run's ledger; its containers are in `removed`
    /// or `leaked` too.
    pub runs: Vec<ReapReport>,
    /// Containers of dead runs found by label.
    pub containers: ReapOutcome,
}

impl DeadRuns {
    /// Resources that could not be removed.
    pub fn leaked(&self) -> usize {
        self.runs.iter().map(|r| r.leaked.len()).sum::<usize>() + self.containers.leaked.len()
    }
}

/// Reap every dead run: containers by label first, then each dead ledger
/// under `root` with the containers it names; a ledger whose every entry
/// is gone is deleted. With `dry_run`, only report.
pub async fn reap_dead_runs(root: &Path, dry_run: bool) -> Result<DeadRuns, SandboxError> {
    let containers = docker::reap_dead_runs(dry_run).await;
    let mut runs = ledger::reap_dead(root, dry_run).await?;
    for r in &mut runs {
        if r.unreadable.is_some() {
            continue;
        }
        let names: Vec<String> = std::mem::take(&mut r.deferred)
            .into_iter()
            .filter_map(|res| match res {
                Resource::Container { id } => Some(id),
                _ => None,
            })
            .collect();
        if dry_run {
            let guess = names
                .iter()
                .map(|n| format!("container {n} (if it still exists)"));
            r.removed.extend(guess);
            continue;
        }
        let out = docker::remove_containers(&names).await;
        r.removed.extend(out.removed);
        r.leaked.extend(out.leaked);
        // The ledger waited for its containers; with them gone it is done.
        if r.is_done() {
            match std::fs::remove_file(&r.ledger) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(SandboxError::Ledger {
                        path: r.ledger.clone(),
                        source: e,
                    });
                }
                _ => {}
            }
        }
    }
    Ok(DeadRuns { runs, containers })
}
