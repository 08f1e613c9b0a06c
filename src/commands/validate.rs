//! `benchcage validate [PATH...]`: check specs; every error at once, exit 2.

use crate::cli::ValidateArgs;
use crate::host::HostFacts;
use crate::spec::{Diagnostic, Diagnostics, Kind, Parsed, Project};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub async fn run(home: &Path, args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    if args.paths.is_empty() {
        return validate_home(home);
    }
    let files = expand(&args.paths);
    let loaded = Project::load(home);
    let host = HostFacts::probe();
    let checked = match &loaded {
        Ok(p) => crate::plan::validate_on_host(p, &host),
        Err(d) => crate::plan::Validation {
            errors: d.clone(),
            ..Default::default()
        },
    };
    let project_diags = checked.errors;
    let mut warnings = Diagnostics::default();
    let canon_home = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    let mut diags = Diagnostics::default();
    for f in &files {
        let canon = f.canonicalize().unwrap_or_else(|_| f.clone());
        if f.symlink_metadata().is_err() {
            diags.push(Diagnostic::flag(
                f.display().to_string(),
                String::new(),
                "no such file",
                None,
            ));
            continue;
        }
        let Some(kind) = Kind::of_path(&canon) else {
            diags.push(Diagnostic::flag(
                f.display().to_string(),
                String::new(),
                "cannot tell what kind of spec this is",
                Some("put it in an environments/, engines/ or scenarios/ folder".into()),
            ));
            continue;
        };
        if let Ok(rel) = canon.strip_prefix(&canon_home) {
            // Part of the project: its problems are among the project's.
            let shown = rel.display().to_string();
            for d in project_diags.iter().filter(|d| d.file == shown) {
                diags.push(d.clone());
            }
            for w in checked.warnings.iter().filter(|d| d.file == shown) {
                warnings.push(w.clone());
            }
            continue;
        }
        let v = outside_spec(f, kind, &loaded, &host);
        diags.extend(v.errors);
        warnings.extend(v.warnings);
    }
    print_warnings(&warnings);
    if !diags.is_empty() {
        return Err(diags.into());
    }
    println!("ok: {} files valid", files.len());
    Ok(ExitCode::SUCCESS)
}

/// Every spec of the home, planned on this host.
fn validate_home(home: &Path) -> anyhow::Result<ExitCode> {
    // Specs first: a refusal needs no host probe and comes at once.
    let p = Project::load(home)?;
    let host = HostFacts::probe();
    let checked = crate::plan::validate_on_host(&p, &host);
    print_warnings(&checked.warnings);
    checked.errors.into_result(())?;
    for note in host_notes(&p, &host) {
        println!("note: {note}");
    }
    println!(
        "ok: {} environments, {} engines, {} scenarios valid on this host ({} CPUs, {} RAM)",
        p.environments.len(),
        p.engines.len(),
        p.scenarios.len(),
        host.online_cpus.len(),
        crate::display::approx(host.mem_total)
    );
    Ok(ExitCode::SUCCESS)
}

/// Each binary not installed on this host, as a warning on stderr: the
/// specs are sound, a run of an engine that needs one is refused.
fn print_warnings(warnings: &Diagnostics) {
    for w in warnings.iter() {
        eprintln!("warning: {w} (a run of it is refused until then; other engines run)");
    }
}

/// The problems of a spec outside the home: read and parsed on its own;
/// a scenario is checked against the home's specs and planned on `host`.
fn outside_spec(
    f: &Path,
    kind: Kind,
    loaded: &Result<Project, Diagnostics>,
    host: &HostFacts,
) -> crate::plan::Validation {
    let mut own = Diagnostics::default();
    let mut warnings = Diagnostics::default();
    let Some(text) = crate::spec::read_spec(&f.display().to_string(), f, &mut own) else {
        return crate::plan::Validation {
            errors: own,
            warnings,
        };
    };
    let parsed = crate::spec::parse_text(
        &f.display().to_string(),
        &crate::spec::spec_name(f),
        &text,
        kind,
        &mut own,
    );
    if let (Some(Parsed::Scenario(s)), Ok(project)) = (&parsed, loaded) {
        let refs = project.check_scenario(s);
        if refs.is_empty() {
            let v = crate::plan::validate_scenario(project, s, host);
            own.extend(v.errors);
            warnings = v.warnings;
        } else {
            own.extend(refs);
        }
    }
    crate::plan::Validation {
        errors: own,
        warnings,
    }
}

/// Environments bigger than this host: fine as specs (scenarios scale or
/// override them), worth knowing before running one as written.
fn host_notes(p: &Project, host: &HostFacts) -> Vec<String> {
    let mut out = Vec::new();
    for e in p.environments.values() {
        let mut why = Vec::new();
        for (what, cpus) in [("server", &e.server.cpus), ("client", &e.client.cpus)] {
            if !cpus.is_subset(&host.online_cpus) {
                why.push(format!("{what} CPUs {cpus}"));
            }
        }
        if let Some(m) = e.resolved().memory
            && m > host.mem_total
        {
            why.push(format!("memory {m}"));
        }
        if !why.is_empty() {
            out.push(format!(
                "environments/{}.yaml needs {} (this host: CPUs {}, {}); scenarios fit it with `scale` and `set`",
                e.name,
                why.join(", "),
                host.online_cpus,
                crate::display::approx(host.mem_total)
            ));
        }
    }
    out
}

fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(p)
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            inner.sort();
            if inner.iter().any(|i| i.is_dir()) {
                out.extend(expand(&inner));
            } else {
                out.extend(inner.into_iter().filter(|i| {
                    matches!(i.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
                }));
            }
        } else {
            out.push(p.clone());
        }
    }
    out
}
