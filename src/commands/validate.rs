//! `benchcage validate` (not built yet).

use crate::cli::ValidateArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage validate` is not built yet")
}
