//! `benchcage render ENGINE[@VER] --env ENV [--set k=v]... [-o DIR]`: write
//! an engine's config files for an environment and print their paths.

use crate::cli::RenderArgs;
use crate::plan::render_engine;
use crate::spec::Project;
use crate::spec::overrides::parse_set_flags;
use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(home: &Path, args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let sets = parse_set_flags(&args.set)?;
    let project = Project::load(home)?;
    let cell = render_engine(&project, &args.engine, &args.env, &sets)?;
    let out = match &args.out {
        Some(o) => o.clone(),
        None => home.join("results/rendered").join(format!(
            "{}@{}-{}",
            cell.engine, cell.version, cell.environment
        )),
    };
    let paths = cell
        .write_configs(&out)
        .with_context(|| format!("writing configs into {}", out.display()))?;
    eprintln!(
        "{}@{} in {}: cache {}, knobs {}",
        cell.engine,
        cell.version,
        cell.environment,
        cell.cache,
        cell.knobs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for p in paths {
        println!("{}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
