//! `benchcage doctor` (not built yet).

use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage doctor` is not built yet")
}
