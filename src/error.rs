//! Errors that decide the exit code.

/// Bad input: a spec, flag or argument the user must fix. Anything wrapped
/// in this exits with code 2, and is raised before anything is created.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// A regression found by `compare`: exit code 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Regression(pub String);

/// Exit code for an error chain: 2 for bad input (including spec
/// diagnostics), 1 otherwise.
pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    if err.chain().any(|e| {
        e.downcast_ref::<BadInput>().is_some()
            || e.downcast_ref::<crate::spec::Diagnostics>().is_some()
    }) {
        2
    } else {
        1
    }
}

/// Shorthand for returning bad input from a command.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}
