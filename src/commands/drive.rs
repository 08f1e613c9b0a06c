//! `benchcage drive` (not built yet).

use crate::cli::DriveArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &DriveArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage drive` is not built yet")
}
