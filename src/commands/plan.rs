//! `benchcage plan SCENARIO`: the cells, pinned CPUs, memory (hog included),
//! rendered configs and estimated duration ([`crate::plan::describe`]).
//! Creates nothing.

use crate::cli::PlanArgs;
use crate::host::HostFacts;
use crate::plan::describe;
use std::path::Path;
use std::process::ExitCode;

pub(crate) async fn run(home: &Path, args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let host = HostFacts::probe();
    let plan = crate::run::session::command_plan(home, &args.target, &host)?.plan;
    let pending = describe::pending(home, &plan);
    if args.json {
        println!("{}", describe::json(&plan, &pending)?);
    } else {
        print!("{}", describe::text(&plan, &host, &pending));
    }
    // A tool's missing Python environment would fail its phase mid-run.
    describe::missing_tool_envs(&plan)?;
    Ok(ExitCode::SUCCESS)
}
