//! `render --check`: an engine's own check of the config files benchcage
//! rendered for it (`config_check:` in its spec), run with one version's
//! host binary as the engine's user.
//!
//! The check runs in a throwaway folder in the system temp dir: a copy of
//! the rendered files (`{config_dir}`, readable by the engine's user
//! wherever the rendered folder lives), an empty `{data_dir}` owned by the
//! user, and the command's output. The process runs in a process group of
//! its own and dies with benchcage (parent-death signal); the group is
//! killed and the process reaped before the folder is removed, on every
//! path.

use crate::plan::PlannedCell;
use crate::sandbox::process::{Detach, Identity, join_in_pre_exec, lookup_user};
use crate::spec::engine::{CheckPass, ConfigCheck};
use std::fs::{File, Permissions};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The longest a check that must exit may run.
pub(crate) const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Lines of the engine's output a failure shows from its start and its
/// end (mariadbd prints the error first and then its whole help text).
const HEAD_LINES: usize = 25;
const TAIL_LINES: usize = 5;
const LINE_CHARS: usize = 300;

/// What a check ran and how it ended.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// The argv as run, placeholders filled (the folder is gone afterwards).
    pub argv: Vec<String>,
    /// The user it ran as.
    pub user: String,
    pub outcome: Outcome,
    pub seconds: f64,
}

/// Whether the engine accepted its config.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    /// Why it failed, and the engine's output, clipped.
    Failed {
        why: String,
        output: String,
    },
}

/// Why a check could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("preparing the check folder {path}: {source}")]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("starting the config check `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("config check: {0}")]
    User(#[from] crate::sandbox::SandboxError),
    #[error("interrupted: the check's processes were killed and its folder removed")]
    Interrupted,
}

/// Run `check` on `cell`'s rendered configs with `binary`, as `user` when
/// benchcage is root (as itself otherwise). Cancelling `stop` ends the
/// check at once, cleaning up as a finished one does.
pub fn run(
    cell: &PlannedCell,
    check: &ConfigCheck,
    binary: &Path,
    user: &str,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<CheckReport, CheckError> {
    let identity = identity(user, binary)?;
    let folder = Folder::make(cell, identity)?;
    let argv: Vec<String> = check
        .command
        .iter()
        .map(|a| cell.fill_with_binary(a, binary, &folder.data, &folder.config))
        .collect();
    let log = folder.log()?;
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .envs(&cell.env)
        .current_dir(&folder.data)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone().map_err(|e| folder.err(e))?))
        .stderr(Stdio::from(log));
    crate::sandbox::process::private_ipc_in_pre_exec(&mut cmd);
    join_in_pre_exec(&mut cmd, &[], Detach::Group, identity, None)?;
    // SAFETY: prctl is async-signal-safe. Set after the user switch above
    // (pre_exec closures run in order), which would clear it.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let child = cmd.spawn().map_err(|source| CheckError::Spawn {
        program: argv[0].clone(),
        source,
    })?;
    let mut group = Group(child, false);
    let ended = match check.pass {
        CheckPass::ExitsZero => group.wait_up_to(CHECK_TIMEOUT, stop),
        CheckPass::StaysUp(d) => group.wait_up_to(d.std(), stop),
    };
    group.kill();
    if stop.is_cancelled() {
        return Err(CheckError::Interrupted);
    }
    let seconds = started.elapsed().as_secs_f64();
    let outcome = match (check.pass, ended) {
        (CheckPass::ExitsZero, Some(s)) if s.success() => Outcome::Passed,
        (CheckPass::ExitsZero, Some(s)) => folder.failed(format!("the check exited with {s}")),
        (CheckPass::ExitsZero, None) => folder.failed(format!(
            "the check did not finish within {}s and was killed",
            CHECK_TIMEOUT.as_secs()
        )),
        (CheckPass::StaysUp(_), None) => Outcome::Passed,
        (CheckPass::StaysUp(d), Some(s)) => folder.failed(format!(
            "the server exited with {s} after {seconds:.1}s; one that accepts its config keeps running ({d} expected)"
        )),
    };
    Ok(CheckReport {
        argv,
        user: match identity {
            Some(_) => user.to_string(),
            None => current_user(),
        },
        outcome,
        seconds,
    })
}

/// The user to switch to: the engine's, when benchcage is root and the
/// engine is not meant to run as root.
fn identity(user: &str, binary: &Path) -> Result<Option<Identity>, CheckError> {
    if !nix::unistd::geteuid().is_root() || user == "root" {
        return Ok(None);
    }
    let id = lookup_user(user)?;
    crate::sandbox::process::check_program_reachable(binary, user, id)?;
    Ok(Some(id))
}

fn current_user() -> String {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| nix::unistd::geteuid().to_string())
}

/// The child and its process group; killed and reaped when dropped.
struct Group(Child, bool);

impl Group {
    /// Its exit status if it ends within `limit`; `None` if still running
    /// then, or when `stop` is cancelled first.
    fn wait_up_to(
        &mut self,
        limit: Duration,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.0.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) if Instant::now() < deadline && !stop.is_cancelled() => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// SIGKILL to the whole group (anything the check forked too), then
    /// reap the child; once (the group id is free for reuse after).
    fn kill(&mut self) {
        if std::mem::replace(&mut self.1, true) {
            return;
        }
        let pgid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        // ESRCH: the group is already gone.
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The throwaway folder: `config/` (copies of the rendered files),
/// `data/` (empty, the user's), `output.log`; removed when dropped.
struct Folder {
    dir: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
}

impl Folder {
    fn make(cell: &PlannedCell, user: Option<Identity>) -> Result<Folder, CheckError> {
        let dir = tempfile::Builder::new()
            .prefix("benchcage-check-")
            .tempdir()
            .map_err(|source| CheckError::Folder {
                path: std::env::temp_dir(),
                source,
            })?;
        let config = dir.path().join("config");
        let data = dir.path().join("data");
        let folder = Folder { dir, config, data };
        let prepare = || -> std::io::Result<()> {
            std::fs::set_permissions(folder.dir.path(), Permissions::from_mode(0o755))?;
            std::fs::create_dir(&folder.config)?;
            std::fs::set_permissions(&folder.config, Permissions::from_mode(0o755))?;
            for c in &cell.configs {
                let p = folder.config.join(&c.name);
                std::fs::write(&p, &c.content)?;
                std::fs::set_permissions(&p, Permissions::from_mode(0o644))?;
            }
            std::fs::create_dir(&folder.data)?;
            std::fs::set_permissions(&folder.data, Permissions::from_mode(0o700))?;
            if let Some(id) = user {
                let (uid, gid) = (Some(id.uid.into()), Some(id.gid.into()));
                nix::unistd::chown(&folder.data, uid, gid)?;
            }
            Ok(())
        };
        prepare().map_err(|e| folder.err(e))?;
        Ok(folder)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("output.log")
    }

    fn log(&self) -> Result<File, CheckError> {
        File::create(self.log_path()).map_err(|e| self.err(e))
    }

    fn err(&self, source: std::io::Error) -> CheckError {
        CheckError::Folder {
            path: self.dir.path().to_path_buf(),
            source,
        }
    }

    fn failed(&self, why: String) -> Outcome {
        let text = std::fs::read(self.log_path()).unwrap_or_default();
        Outcome::Failed {
            why,
            output: clip(&String::from_utf8_lossy(&text)),
        }
    }
}

/// The engine's output as a failure shows it: its first and last lines,
/// each cut to a sane width.
pub fn clip(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let cut = |l: &str| match l.char_indices().nth(LINE_CHARS) {
        None => l.to_string(),
        Some((i, _)) => format!("{}...", &l[..i]),
    };
    if lines.len() <= HEAD_LINES + TAIL_LINES {
        return lines.iter().map(|l| cut(l)).collect::<Vec<_>>().join("\n");
    }
    let mut out: Vec<String> = lines[..HEAD_LINES].iter().map(|l| cut(l)).collect();
    out.push(format!(
        "... ({} lines cut)",
        lines.len() - HEAD_LINES - TAIL_LINES
    ));
    out.extend(lines[lines.len() - TAIL_LINES..].iter().map(|l| cut(l)));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_output_keeps_its_first_and_last_lines() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let c = clip(&text);
        assert!(c.starts_with("line 0\n"));
        assert!(c.contains("line 24\n... (70 lines cut)\nline 95"));
        assert!(c.ends_with("line 99"));
        assert_eq!(clip("a\n\nb\n"), "a\nb");
        let wide = "x".repeat(1000);
        assert_eq!(clip(&wide).len(), LINE_CHARS + 3);
    }
}
