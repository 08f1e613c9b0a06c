//! One file per subcommand. `dispatch` builds the runtime and routes.

use crate::cli::{Cli, Command};
use std::process::ExitCode;

pub mod cache;
pub mod changes;
pub mod claims;
pub mod cleanup;
pub mod compare;
pub mod doctor;
pub mod drive;
pub mod fetch;
pub mod history;
pub mod hog;
pub mod image;
pub mod list;
pub mod plan;
pub mod render;
pub mod report;
pub mod run;
pub mod site;
pub mod validate;

/// Route a parsed command line to its command.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    if matches!(cli.command, Command::Run(_)) {
        enter_own_scope();
    }
    let home = cli.home.clone();
    let rt = runtime(&cli.command)?;
    rt.block_on(async move {
        match cli.command {
            Command::Doctor => doctor::run(&home).await,
            Command::List(a) => list::run(&home, &a).await,
            Command::Validate(a) => validate::run(&home, &a).await,
            Command::Render(a) => render::run(&home, &a).await,
            Command::Plan(a) => plan::run(&home, &a).await,
            Command::Run(a) => run::run(&home, &a).await,
            Command::Drive(a) => drive::run(&home, &a).await,
            Command::Report(a) => report::run(&home, &a).await,
            Command::History(a) => history::run(&home, &a).await,
            Command::Compare(a) => compare::run(&home, &a).await,
            Command::Changes(a) => changes::run(&home, &a).await,
            Command::Claims(a) => claims::run(&home, &a).await,
            Command::Site(a) => site::run(&home, &a),
            Command::Cleanup(a) => cleanup::run(&home, &a).await,
            Command::Hog(a) => hog::run(&home, &a).await,
            Command::Cache(a) => cache::run(&a),
            Command::Fetch(a) => fetch::run(&home, &a).await,
            Command::Image(a) => image::run(&home, &a).await,
        }
    })
}

/// The runtime a command runs on: one thread for `drive` on one CPU (a
/// run's client group, a benchmark's pinned client), where more threads
/// only pass every reply from the thread that read it to the one that
/// waits for it; every CPU otherwise.
fn runtime(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    let one_cpu = std::thread::available_parallelism().is_ok_and(|n| n.get() == 1);
    if matches!(command, Command::Drive(_)) && one_cpu {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    }
}

/// Commands that create cgroups need a subtree of their own: on a systemd
/// host that did not delegate one, restart in a delegated scope. When that
/// cannot be done, the sandbox says what to do instead.
fn enter_own_scope() {
    use std::os::unix::process::CommandExt;
    if let Some(mut cmd) = crate::sandbox::cgroupfs::delegation::scope_command() {
        let err = cmd.exec();
        eprintln!("warning: could not restart in a delegated scope with systemd-run: {err}");
    }
}
