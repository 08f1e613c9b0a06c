//! Errors that decide the exit code.

/// Bad input: a spec, flag or argument the user must fix. Anything wrapped
/// in this exits with code 2, and is raised before anything is created.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadInput(pub String);

/// A regression found by `compare`: exit code 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Regression(pub String);

/// Exit code for an error chain: 2 for bad input (spec diagnostics
/// become bad input as they become an `anyhow::Error`), 1 otherwise.
pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    if err.chain().any(|e| e.downcast_ref::<BadInput>().is_some()) {
        2
    } else {
        1
    }
}

/// Shorthand for returning bad input from a command.
pub(crate) fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// The longest input value quoted in a message, in characters.
pub(crate) const EXCERPT_CHARS: usize = 80;

/// A value as a message quotes it: whole when short, else its start and
/// its length, so that an error never echoes a whole file or a 100 MB
/// argument.
pub(crate) fn excerpt(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(EXCERPT_CHARS) {
        None => s.into(),
        Some((cut, _)) => format!("{}... ({} bytes)", &s[..cut], s.len()).into(),
    }
}

/// The longest line of an error printed to the terminal, in characters.
pub(crate) const MAX_LINE_CHARS: usize = 2000;

/// An error text with every overlong line cut (a backstop for values
/// quoted by code that does not use `excerpt`, clap's included).
pub fn clip_lines(text: &str) -> String {
    text.lines()
        .map(|l| match l.char_indices().nth(MAX_LINE_CHARS) {
            None => l.to_string(),
            Some((cut, _)) => format!("{}... ({} bytes cut)", &l[..cut], l.len() - cut),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_quoted_by_their_start_and_length() {
        assert_eq!(excerpt("short"), "short");
        let long = "x".repeat(1_000_000);
        let e = excerpt(&long);
        assert!(e.len() < 120, "{e}");
        assert!(e.ends_with("(1000000 bytes)"), "{e}");
        let clipped = clip_lines(&format!("a\n{long}\nb"));
        assert!(clipped.len() < MAX_LINE_CHARS + 100);
        assert!(clipped.starts_with("a\n") && clipped.ends_with("\nb"));
    }
}
