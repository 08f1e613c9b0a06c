//! `benchcage report` (not built yet).

use crate::cli::ReportArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage report` is not built yet")
}
