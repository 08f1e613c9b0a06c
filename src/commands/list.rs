//! `benchcage list [environments|engines|scenarios]`.

use crate::cli::ListArgs;
use crate::error::bad_input;
use crate::spec::Project;
use crate::spec::environment::Hog;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(home: &Path, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let what = args.what.as_deref().unwrap_or("all");
    let known = ["all", "environments", "engines", "scenarios"];
    if !known.contains(&what) {
        return Err(bad_input(format!(
            "cannot list `{what}` ({})",
            crate::spec::diag::unknown_hint(what, &known)
        )));
    }
    let p = Project::load(home)?;
    if matches!(what, "all" | "environments") {
        println!("environments:");
        for e in p.environments.values() {
            let mem = e
                .server
                .memory
                .map(|m| m.to_string())
                .unwrap_or_else(|| "no cap".into());
            let hog = match e.hog {
                Hog::Leave(b) => format!(", hog leaves {b}"),
                Hog::None => String::new(),
            };
            println!(
                "  {:<16} {}, server cpus {}, memory {mem}{hog} - {}",
                e.name, e.backend, e.server.cpus, e.description
            );
        }
    }
    if matches!(what, "all" | "engines") {
        println!("engines:");
        let root = crate::fetch::cache::root();
        for e in p.engines.values() {
            let versions: Vec<String> = e
                .versions
                .iter()
                .map(|(v, ev)| match ev.source.as_ref().filter(|s| s.cached()) {
                    Some(s)
                        if crate::fetch::cache::usable(
                            &root,
                            &e.name,
                            v,
                            s,
                            ev.binary.as_deref(),
                        )
                        .is_some() =>
                    {
                        let how = if s.fetchable() { "fetched" } else { "imported" };
                        format!("{v} ({how})")
                    }
                    Some(s) if s.fetchable() => format!("{v} (to fetch)"),
                    // Runs in docker until its tarball is imported.
                    _ => v.clone(),
                })
                .collect();
            println!(
                "  {:<16} versions {} (default {}); knobs {} - {}",
                e.name,
                versions.join(", "),
                e.default_version,
                e.knob_names().join(", "),
                e.description
            );
        }
    }
    if matches!(what, "all" | "scenarios") {
        println!("scenarios:");
        for s in p.scenarios.values() {
            let engines: Vec<String> = s.matrix.engines.iter().map(|e| e.label()).collect();
            let envs: Vec<&str> = s
                .matrix
                .environments
                .iter()
                .map(|e| e.name.as_str())
                .collect();
            let first = s.description.split(". ").next().unwrap_or("");
            println!(
                "  {:<28} {} x {} - {first}",
                s.name,
                engines.join(", "),
                envs.join(", ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
