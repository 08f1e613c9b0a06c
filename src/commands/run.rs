//! `benchcage run`: the flags checked, one session run
//! ([`crate::run::session`]), its outcome printed and turned into the exit
//! code.

use crate::cli::{On, RunArgs};
use crate::run::matrix::MatrixOutcome;
use crate::run::session::{self, CellEnd, Outcome};
use std::path::Path;
use std::process::ExitCode;

pub(crate) async fn run(home: &Path, args: &RunArgs) -> anyhow::Result<ExitCode> {
    check_cluster_flags(args)?;
    Ok(match session::run(home, args).await? {
        Outcome::Matrix {
            out,
            planned,
            command_line,
            report,
        } => {
            println!("results: {}", out.dir.display());
            if let Some(path) = report {
                println!("report: {}", path.display());
            }
            exit_code(&out, planned, &command_line)
        }
        // A Slurm job of `run --on slurm`: 0 when its cell finished, 1
        // when it failed, 130 when interrupted (scancel).
        Outcome::Cell(CellEnd::Finished) => ExitCode::SUCCESS,
        Outcome::Cell(CellEnd::Failed) => ExitCode::from(1),
        Outcome::Cell(CellEnd::Interrupted) => ExitCode::from(130),
    })
}

/// Exit code of a run whose cells all finished but a phase of them
/// failed (did not finish, spent its error budget, OOM-killed): its
/// figures are not results.
pub(crate) const EXIT_PHASE_FAILED: u8 = 3;

/// 130 for an interrupted run, 1 when a cell failed, each with the
/// command that resumes it; 3 ([`EXIT_PHASE_FAILED`]) when a phase
/// failed; else success.
fn exit_code(out: &MatrixOutcome, planned: usize, command_line: &[String]) -> ExitCode {
    let resume_hint = |id: &str| crate::run::resume::resume_command(command_line, id);
    if out.interrupted {
        eprintln!(
            "interrupted: {} of {} cell(s) finished; resume with:\n  {}",
            out.finished,
            out.finished + out.failed + (planned - out.finished - out.failed),
            resume_hint(&out.run_id)
        );
        return ExitCode::from(130);
    }
    if out.failed > 0 {
        eprintln!(
            "{} cell(s) failed (see cell.json of each); run them again with:\n  {}",
            out.failed,
            resume_hint(&out.run_id)
        );
        return ExitCode::from(1);
    }
    if out.phases_failed > 0 {
        eprintln!(
            "{} phase(s) failed (see cell.json of each); their figures are not results",
            out.phases_failed
        );
        return ExitCode::from(EXIT_PHASE_FAILED);
    }
    ExitCode::SUCCESS
}

/// `--partition`, `--account`, `--max-parallel` only with `--on slurm`;
/// `--slurm-cell` only without it.
fn check_cluster_flags(args: &RunArgs) -> anyhow::Result<()> {
    let slurm_only = [
        ("--partition", args.partition.is_some()),
        ("--account", args.account.is_some()),
        ("--max-parallel", args.max_parallel.is_some()),
    ];
    if args.on != On::Slurm
        && let Some((flag, _)) = slurm_only.iter().find(|(_, set)| *set)
    {
        return Err(crate::error::bad_input(format!(
            "{flag} applies to `--on slurm` only; add `--on slurm`, or drop {flag}"
        )));
    }
    if args.max_parallel == Some(0) {
        return Err(crate::error::bad_input(
            "--max-parallel 0 would submit nothing; give at least 1, or leave it out to submit every cell at once",
        ));
    }
    if args.slurm_cell.is_some() && (args.on == On::Slurm || args.resume.is_some()) {
        return Err(crate::error::bad_input(
            "--slurm-cell is what a Slurm job of `run --on slurm` runs; it takes neither --on slurm nor --resume",
        ));
    }
    Ok(())
}
