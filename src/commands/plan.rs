//! `benchcage plan` (not built yet).

use crate::cli::PlanArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &PlanArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage plan` is not built yet")
}
