//! `benchcage compare` (not built yet).

use crate::cli::CompareArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &CompareArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage compare` is not built yet")
}
