//! `benchcage run` (not built yet).

use crate::cli::RunArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage run` is not built yet")
}
