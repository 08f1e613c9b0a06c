//! `benchcage site [--results DIR] -o SITE`: the static results site
//! (`crate::site`).

use crate::cli::SiteArgs;
use crate::error::bad_input;
use crate::site;
use std::path::Path;
use std::process::ExitCode;

pub fn run(home: &Path, args: &SiteArgs) -> anyhow::Result<ExitCode> {
    let results = args.results.root(home);
    let built = site::build(&results, &args.output).map_err(|e| {
        if e.is_bad_input() {
            bad_input(e.to_string())
        } else {
            anyhow::Error::new(e)
        }
    })?;
    println!(
        "wrote {} page(s) to {}: {} run(s), {} series, {} change point(s)",
        built.pages,
        built.dir.display(),
        built.runs,
        built.series,
        built.changes
    );
    println!("{}", built.dir.join("index.html").display());
    Ok(ExitCode::SUCCESS)
}
