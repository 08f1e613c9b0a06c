//! Running a system tool (`ip`, `tc`, `mkfs.ext4`, `losetup`, `mount`):
//! by argv, never through a shell, in the C locale (its messages are the
//! English ones callers may match); its stdout when it exits 0, else an
//! error that names the call, its exit status and its stderr. The one
//! place `network::netns` and `sandbox::disk` run their tools through.

use std::process::Command;

/// A system tool that could not start or exited non-zero: which call,
/// and its stderr (clipped) or what to install.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ToolFailed(pub String);

/// Runs `argv[0]` with the rest of `argv`; its stdout (untrimmed) when it
/// exits 0. `package` names what provides the tool, for the error when
/// it cannot start (`iproute2`).
pub fn output(argv: &[&str], package: &str) -> Result<String, ToolFailed> {
    let Some((program, args)) = argv.split_first() else {
        return Err(ToolFailed("no tool to run (an empty argv)".into()));
    };
    let out = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| {
            ToolFailed(format!(
                "running `{program}`: {e}; install {package} (it gives `{program}`)"
            ))
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(ToolFailed(format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            out.status,
            crate::error::excerpt(String::from_utf8_lossy(&out.stderr).trim())
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_gives_its_stdout_or_its_stderr_and_status_in_the_error() {
        assert_eq!(output(&["echo", "hi"], "coreutils").unwrap(), "hi\n");
        let e = output(&["sh", "-c", "echo nope >&2; exit 3"], "dash").unwrap_err();
        assert!(e.0.contains("`sh -c echo nope >&2; exit 3` failed"), "{e}");
        assert!(
            e.0.contains("exit status: 3") && e.0.ends_with("nope"),
            "{e}"
        );
        let e = output(&["benchcage-no-such-tool"], "nothing").unwrap_err();
        assert!(e.0.contains("install nothing"), "{e}");
        assert!(output(&[], "x").is_err());
    }
}
