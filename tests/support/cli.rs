//! The benchcage binary under test and the fixture binaries built beside it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The benchcage binary cargo built for this test binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_benchcage");

/// The repository: the project home of the shipped specs.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `benchcage` with nothing set.
pub fn bc() -> assert_cmd::Command {
    assert_cmd::Command::new(BIN)
}

/// `benchcage --home HOME`, whatever BENCHCAGE_HOME says.
pub fn bc_home(home: &Path) -> assert_cmd::Command {
    let mut c = bc();
    c.arg("--home").arg(home).env_remove("BENCHCAGE_HOME");
    c
}

/// `benchcage --home HOME` run from `home`, its results, work and ledger
/// folders where given, with no stdin.
pub fn bc_in(home: &Path, results: &Path, work: &Path, state: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(home)
        .arg("--home")
        .arg(home)
        .env("BENCHCAGE_RESULTS", results)
        .env("BENCHCAGE_WORK", work)
        .env("BENCHCAGE_STATE_DIR", state)
        .stdin(Stdio::null());
    c
}

/// What a finished command said.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// The exit code (-1 for a signal) and both streams as text.
    pub fn of(o: &Output) -> Out {
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// `benchcage render ENGINE --env ENV -o OUT [--set K=V]...` on the
/// repository's specs.
pub fn render_to(engine: &str, env: &str, sets: &[&str], out: &Path) -> Out {
    let mut args = vec!["render", engine, "--env", env, "-o", out.to_str().unwrap()];
    for s in sets {
        args.push("--set");
        args.push(s);
    }
    Out::of(&bc_home(&repo()).args(args).output().unwrap())
}

/// `benchcage drive ARGS...`: exit code, stdout and stderr.
pub fn drive(args: &[&str]) -> (Option<i32>, String, String) {
    code_and_text(&bc().arg("drive").args(args).output().unwrap())
}

/// `[KIND], Operations, N` from a YCSB-style summary.
pub fn summary_count(text: &str, kind: &str) -> u64 {
    let prefix = format!("[{kind}], Operations, ");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {prefix} in {text}"))
        .parse()
        .unwrap()
}

/// Exit code, stdout and stderr of a finished command.
pub fn code_and_text(o: &Output) -> (Option<i32>, String, String) {
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Fail with the command's stderr unless it exited 0.
pub fn assert_success(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A test-only binary of tests/bin/ (a Cargo example, see Cargo.toml),
/// built next to the benchcage binary under test, in `examples/`.
///
/// Under cargo (which sets `CARGO`) the examples are built once per test
/// binary first, so that `cargo test --test NAME` never runs a stale or
/// missing copy; cargo does nothing when they are up to date. Test
/// binaries run without cargo (the v2 guest) use the copies built beside
/// them.
pub fn fixture(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let profile_dir = Path::new(BIN).parent().unwrap();
    BUILT.get_or_init(|| {
        let Some(cargo) = std::env::var_os("CARGO") else {
            return;
        };
        let mut c = Command::new(cargo);
        c.current_dir(repo())
            .args(["build", "--quiet", "--examples"])
            .arg("--target-dir")
            .arg(profile_dir.parent().unwrap());
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some("release") => {
                c.arg("--release");
            }
            Some(other) => {
                c.args(["--profile", other]);
            }
        }
        let out = c.output().expect("cargo runs");
        assert!(
            out.status.success(),
            "building the test fixtures failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    let exe = profile_dir.join("examples").join(name);
    assert!(
        exe.is_file(),
        "the {name} fixture is missing at {}: build it with `cargo build --example {name}`",
        exe.display()
    );
    exe
}

/// Stdout then stderr of a finished command, as one text.
pub fn combined(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The run folder `benchcage run` printed (its `results: DIR` line): the
/// run this command made, whatever else the results folder holds.
pub fn run_dir_of(stdout: &str) -> std::path::PathBuf {
    let line = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("results: "))
        .unwrap_or_else(|| panic!("no `results: DIR` line in:\n{stdout}"));
    std::path::PathBuf::from(line.trim())
}

/// The run id in the line `benchcage run` starts with (`run ID: ...`).
pub fn run_id_of(line: &str) -> String {
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string()
}
