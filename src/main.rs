use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = benchcage::cli::Cli::parse();
    match benchcage::commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(benchcage::error::exit_code_for(&err))
        }
    }
}
