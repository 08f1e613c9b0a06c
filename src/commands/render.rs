//! `benchcage render ENGINE[@VER] --env ENV [--set k=v]... [-o DIR]
//! [--check] [--all-versions]`: write an engine's config files for an
//! environment and print their paths; with `--check`, have the engine
//! check them with the version's own binary ([`crate::config_check`]).

use crate::cli::RenderArgs;
use crate::config_check::{self, Outcome};
use crate::error::bad_input;
use crate::plan::{PlannedCell, host_binary, render_engine};
use crate::run::resume::shell_quote;
use crate::spec::Project;
use crate::spec::diag::unknown_hint;
use crate::spec::engine::{ConfigCheck, Engine};
use crate::spec::overrides::parse_set_flags;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub async fn run(home: &Path, args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let sets = parse_set_flags(&args.set)?;
    let project = Project::load(home)?;
    let labels = match args.all_versions {
        false => vec![args.engine.clone()],
        true => every_version(&project, &args.engine)?,
    };
    // Everything is rendered and checked for bad input before a file is
    // written.
    let cells = labels
        .iter()
        .map(|l| render_engine(&project, l, &args.env, &sets))
        .collect::<Result<Vec<_>, _>>()?;
    let check = match args.check {
        true => Some(config_check_of(&project, &cells[0].engine)?),
        false => None,
    };
    // Ctrl-C (or SIGTERM, SIGHUP) during a check kills its process group
    // and removes its folder before benchcage exits.
    let stop = match check {
        Some(_) => crate::run::signals::Interrupts::install()?.stop,
        None => tokio_util::sync::CancellationToken::new(),
    };
    if !args.all_versions {
        let cell = &cells[0];
        let binary = match check {
            Some(_) => Some(binary_of(&project, cell).map_err(|e| bad_input(e.to_string()))?),
            None => None,
        };
        write(home, args, cell)?;
        let (Some(check), Some(binary)) = (check, binary) else {
            return Ok(ExitCode::SUCCESS);
        };
        let passed = check_one(&project, cell, check, &binary, &stop)?;
        return Ok(ExitCode::from(if passed { 0 } else { 1 }));
    }
    let (mut passed, mut failed, mut unchecked) = (0, Vec::new(), Vec::new());
    for cell in &cells {
        write(home, args, cell)?;
        let Some(check) = check else { continue };
        match binary_of(&project, cell) {
            Err(e) => {
                eprintln!("{}@{}: not checked: {e}", cell.engine, cell.version);
                unchecked.push(format!("{}@{}", cell.engine, cell.version));
            }
            Ok(binary) if check_one(&project, cell, check, &binary, &stop)? => passed += 1,
            Ok(_) => failed.push(format!("{}@{}", cell.engine, cell.version)),
        }
    }
    if check.is_none() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "{}: {passed} of {} versions passed the config check{}{}",
        cells[0].engine,
        cells.len(),
        list("; failed: ", &failed),
        list("; not checked: ", &unchecked)
    );
    Ok(ExitCode::from(
        match (failed.is_empty(), unchecked.is_empty()) {
            (false, _) => 1,
            (true, false) => 2,
            (true, true) => 0,
        },
    ))
}

fn list(prefix: &str, items: &[String]) -> String {
    match items.is_empty() {
        true => String::new(),
        false => format!("{prefix}{}", items.join(", ")),
    }
}

/// `ENGINE@VERSION` of every version `engine` lists, in file order.
fn every_version(project: &Project, engine: &str) -> anyhow::Result<Vec<String>> {
    if let Some((name, _)) = engine.split_once('@') {
        return Err(bad_input(format!(
            "render --all-versions takes an engine without a version: `{name}`, not `{engine}`"
        )));
    }
    let Some(spec) = project.engines.get(engine) else {
        let known: Vec<&str> = project.engines.keys().map(String::as_str).collect();
        return Err(bad_input(format!(
            "render {engine}: unknown engine `{engine}` ({})",
            unknown_hint(engine, &known)
        )));
    };
    Ok(spec
        .version_names()
        .iter()
        .map(|v| format!("{engine}@{v}"))
        .collect())
}

fn engine_of<'p>(project: &'p Project, name: &str) -> &'p Engine {
    project
        .engines
        .get(name)
        .expect("render_engine resolved the engine")
}

/// The engine's `config_check:`, or bad input saying it has none.
fn config_check_of<'p>(project: &'p Project, name: &str) -> anyhow::Result<&'p ConfigCheck> {
    let engine = engine_of(project, name);
    engine.config_check.as_ref().ok_or_else(|| {
        let with: Vec<&str> = project
            .engines
            .values()
            .filter(|e| e.config_check.is_some())
            .map(|e| e.name.as_str())
            .collect();
        bad_input(format!(
            "render --check: {name} has no config check (engines/{name}.yaml has no `config_check:`, \
             since the engine has no way to check a config without running for real); \
             engines with one: {}. Render without --check.",
            with.join(", ")
        ))
    })
}

fn binary_of(
    project: &Project,
    cell: &PlannedCell,
) -> Result<PathBuf, crate::plan::HostBinaryError> {
    let engine = engine_of(project, &cell.engine);
    let (_, ev) = engine
        .version(Some(&cell.version))
        .expect("render_engine resolved the version");
    host_binary(engine, &cell.version, ev)
}

/// Write the cell's configs where `-o` (or the default) says; print them.
fn write(home: &Path, args: &RenderArgs, cell: &PlannedCell) -> anyhow::Result<()> {
    let out = match &args.out {
        Some(o) if args.all_versions => o.join(format!("{}@{}", cell.engine, cell.version)),
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
        cell.cache_from
            .clone()
            .unwrap_or_else(|| cell.cache.to_string()),
        cell.knobs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for p in paths {
        println!("{}", p.display());
    }
    Ok(())
}

/// Run the check and say what ran and how it ended; whether it passed.
fn check_one(
    project: &Project,
    cell: &PlannedCell,
    check: &ConfigCheck,
    binary: &Path,
    stop: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<bool> {
    let label = format!("{}@{}", cell.engine, cell.version);
    let user = engine_of(project, &cell.engine)
        .user
        .clone()
        .unwrap_or_else(|| crate::spec::engine::DEFAULT_USER.into());
    let report = config_check::run(cell, check, binary, &user, stop)
        .with_context(|| format!("{label}: config check"))?;
    let argv: Vec<String> = report.argv.iter().map(|a| shell_quote(a)).collect();
    eprintln!(
        "{label}: ran as {}: {} ({:.1}s)",
        report.user,
        argv.join(" "),
        report.seconds
    );
    match report.outcome {
        Outcome::Passed => {
            eprintln!("{label}: config check passed");
            Ok(true)
        }
        Outcome::Failed { why, output } => {
            eprintln!("{label}: config check FAILED: {why}; the engine said:");
            for line in output.lines() {
                eprintln!("  {line}");
            }
            Ok(false)
        }
    }
}
