//! `benchcage hog --leave SIZE`: lock host RAM so that only SIZE remains,
//! hold until interrupted. Refusals (cannot lock what it must) exit 2.

use crate::cli::HogArgs;
use crate::error::bad_input;
use crate::sandbox::hog;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(_home: &Path, args: &HogArgs) -> anyhow::Result<ExitCode> {
    let leave = hog::parse_leave(&args.leave).map_err(|e| bad_input(format!("--leave: {e}")))?;
    hog::hold(leave)
        .await
        .map_err(|e| bad_input(format!("{e} (nothing is locked)")))?;
    Ok(ExitCode::SUCCESS)
}
