//! `benchcage list` (not built yet).

use crate::cli::ListArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &ListArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage list` is not built yet")
}
