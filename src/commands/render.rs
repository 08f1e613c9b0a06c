//! `benchcage render` (not built yet).

use crate::cli::RenderArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &RenderArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage render` is not built yet")
}
