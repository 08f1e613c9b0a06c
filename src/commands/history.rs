//! `benchcage history` (not built yet).

use crate::cli::HistoryArgs;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, _args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`benchcage history` is not built yet")
}
