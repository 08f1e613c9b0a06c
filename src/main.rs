use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match benchcage::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // clap quotes the offending argument whole; a 100 MB one is cut.
            eprintln!("{}", benchcage::error::clip_lines(&e.render().to_string()));
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
        Err(e) => e.exit(),
    };
    match benchcage::commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!(
                "error: {}",
                benchcage::error::clip_lines(&format!("{err:#}"))
            );
            ExitCode::from(benchcage::error::exit_code_for(&err))
        }
    }
}
