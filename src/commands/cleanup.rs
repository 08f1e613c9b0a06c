//! `benchcage cleanup` (not built yet).

use crate::cli::CleanupArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &CleanupArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage cleanup` is not built yet")
}
