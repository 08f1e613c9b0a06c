//! `benchcage claims RUN`: the write-up's claims the run decided, as a
//! table (`claims::text`); exit 1 when one came out reversed.

use crate::claims::text::table;
use crate::cli::ClaimsArgs;
use crate::commands::report::load_runs;
use crate::results::layout;
use anyhow::Context as _;
use std::path::Path;
use std::process::ExitCode;

/// Exit code of `benchcage claims` when a claim came out reversed.
pub(crate) const EXIT_REVERSED: u8 = 1;

pub async fn run(home: &Path, args: &ClaimsArgs) -> anyhow::Result<ExitCode> {
    let root = args.results.root(home);
    let run = load_runs(&root, std::slice::from_ref(&args.run))?
        .pop()
        .context("no run loaded")?;
    let Some(record) = &run.claims else {
        return Err(crate::error::bad_input(format!(
            "run {} decided no claims: its scenario's `reproduces:` has no `claims`, or the run \
             ended before deciding them (there is no {} in {})",
            run.run.run_id,
            layout::CLAIMS_FILE,
            run.dir.display()
        )));
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(record)?);
    } else {
        print!("{}", table(record));
    }
    Ok(if record.any_reversed() {
        ExitCode::from(EXIT_REVERSED)
    } else {
        ExitCode::SUCCESS
    })
}
