//! `benchcage cache ls` and `benchcage cache prune`: the snapshot cache.

use crate::cli::{CacheAction, CacheArgs};
use crate::snapshot::store::{Cache, Meta};
use crate::units::Bytes;
use std::process::ExitCode;

pub fn run(args: &CacheArgs) -> anyhow::Result<ExitCode> {
    let cache = Cache::from_env().map_err(crate::error::bad_input)?;
    match &args.action {
        CacheAction::Ls(a) => {
            let entries = cache.entries();
            if a.json {
                println!("{}", serde_json::to_string_pretty(&entries)?);
            } else {
                print!("{}", listing(&cache, &entries));
            }
        }
        CacheAction::Prune(a) => {
            let keep = match (&a.keep, a.all) {
                (_, true) => Bytes(0),
                (Some(k), false) => k.trim().parse::<Bytes>().map_err(|e| {
                    crate::error::bad_input(format!("--keep {k}: {e} (give a size such as 10GiB)"))
                })?,
                (None, false) => unreachable!("clap requires --keep or --all"),
            };
            let removed = if a.dry_run {
                would_remove(&cache.entries(), keep.0)
            } else {
                cache.prune_to(keep.0)
            };
            let verb = if a.dry_run { "would remove" } else { "removed" };
            for m in &removed {
                println!(
                    "{verb} {} ({}): {}",
                    m.id,
                    Bytes(m.stored_bytes),
                    m.key.describe()
                );
            }
            let freed: u64 = removed.iter().map(|m| m.stored_bytes).sum();
            println!(
                "{verb} {} snapshot(s), {}; {} in use",
                removed.len(),
                Bytes(freed),
                Bytes(cache.used())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `prune_to(keep)` would remove, least recently used first.
fn would_remove(entries: &[Meta], keep: u64) -> Vec<Meta> {
    let mut used: u64 = entries.iter().map(|m| m.stored_bytes).sum();
    let mut out = Vec::new();
    for m in entries.iter().rev() {
        if used <= keep {
            break;
        }
        used = used.saturating_sub(m.stored_bytes);
        out.push(m.clone());
    }
    out
}

/// The entries as a table, most recently used first.
fn listing(cache: &Cache, entries: &[Meta]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let used: u64 = entries.iter().map(|m| m.stored_bytes).sum();
    let _ = writeln!(
        o,
        "snapshot cache {}: {} snapshot(s), {} of {}",
        cache.root.display(),
        entries.len(),
        Bytes(used),
        cache.limit
    );
    for m in entries {
        let _ = writeln!(
            o,
            "{}  {:>9}  {}  loaded in {:.0}s by {}; made {}, used {} ({} restore(s))",
            m.id,
            Bytes(m.stored_bytes).to_string(),
            m.key.describe(),
            m.load_s,
            m.from_run,
            m.created,
            m.last_used,
            m.uses
        );
    }
    for (path, id, reason) in cache.quarantined() {
        let _ = writeln!(
            o,
            "{id}  quarantined ({}): {reason}; the next load of its key saves a new one, the next prune removes it",
            path.display()
        );
    }
    o
}
