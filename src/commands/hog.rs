//! `benchcage hog` (not built yet).

use crate::cli::HogArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &HogArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage hog` is not built yet")
}
