//! Hostile spec input: bombs, FIFOs, device symlinks, huge values, template
//! loops, deep nesting. Each is refused with exit 2 naming its file, within
//! a second, under a memory limit a normal `validate` fits in; and a broken
//! spec a scenario does not use does not stop `plan` of that scenario.
//! Needs neither root nor engines.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Address-space limit (KiB) for every command here; `validate` of the
/// shipped specs fits under it.
const ULIMIT_KIB: u64 = 300_000;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Run benchcage under `ulimit -v`.
fn limited(home: &Path, args: &[&str]) -> Out {
    let start = Instant::now();
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -v {ULIMIT_KIB}; exec \"$@\""))
        .arg("benchcage")
        .arg(env!("CARGO_BIN_EXE_benchcage"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("BENCHCAGE_HOME")
        .output()
        .unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        took: start.elapsed(),
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// A home with the shipped engines, templates, environments and the
/// quickstart scenario.
fn home() -> tempfile::TempDir {
    let t = tempfile::Builder::new()
        .prefix("benchcage-hostile-")
        .tempdir()
        .unwrap();
    for d in ["engines", "templates", "environments"] {
        copy_dir(&repo().join(d), &t.path().join(d));
    }
    std::fs::create_dir_all(t.path().join("scenarios")).unwrap();
    std::fs::copy(
        repo().join("scenarios/quickstart.yaml"),
        t.path().join("scenarios/quickstart.yaml"),
    )
    .unwrap();
    t
}

fn alias_bomb() -> String {
    let mut text = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
    for w in names.windows(2) {
        let refs = vec![format!("*{}", w[0]); 9].join(", ");
        text.push_str(&format!("{}: &{} [{refs}]\n", w[1], w[1]));
    }
    text
}

/// Each hostile case: the file it puts in the home and what it puts there.
fn plant(home: &Path, case: &str) -> &'static str {
    let write = |rel: &str, text: &str| std::fs::write(home.join(rel), text).unwrap();
    match case {
        "alias bomb" => {
            write("environments/bomb.yaml", &alias_bomb());
            "environments/bomb.yaml"
        }
        "FIFO" => {
            nix::unistd::mkfifo(
                &home.join("scenarios/fifo.yaml"),
                nix::sys::stat::Mode::S_IRWXU,
            )
            .unwrap();
            "scenarios/fifo.yaml"
        }
        "/dev/zero symlink" => {
            std::os::unix::fs::symlink("/dev/zero", home.join("scenarios/zero.yaml")).unwrap();
            "scenarios/zero.yaml"
        }
        "symlink loop" => {
            let (a, b) = (home.join("scenarios/a.yaml"), home.join("scenarios/b.yaml"));
            std::os::unix::fs::symlink(&b, &a).unwrap();
            std::os::unix::fs::symlink(&a, &b).unwrap();
            "scenarios/a.yaml"
        }
        "directory" => {
            std::fs::create_dir(home.join("scenarios/dir.yaml")).unwrap();
            "scenarios/dir.yaml"
        }
        "huge file" => {
            write(
                "scenarios/huge.yaml",
                &format!("description: {}\n", "x".repeat(100 << 20)),
            );
            "scenarios/huge.yaml"
        }
        "huge scalar" => {
            write(
                "scenarios/scalar.yaml",
                &format!("description: {}\n", "x".repeat(900 << 10)),
            );
            "scenarios/scalar.yaml"
        }
        "deep nesting" => {
            write(
                "scenarios/deep.yaml",
                &format!("a: {}{}\n", "[".repeat(200_000), "]".repeat(200_000)),
            );
            "scenarios/deep.yaml"
        }
        "template loop" => {
            write(
                "templates/redis/redis.conf.tera",
                "{% for i in range(end=100000000) %}save 1 1\n{% endfor %}",
            );
            "engines/redis.yaml"
        }
        other => panic!("no case {other}"),
    }
}

const CASES: &[&str] = &[
    "alias bomb",
    "FIFO",
    "/dev/zero symlink",
    "symlink loop",
    "directory",
    "huge file",
    "huge scalar",
    "deep nesting",
    "template loop",
];

#[test]
fn a_normal_validate_fits_under_the_memory_limit() {
    let h = home();
    let o = limited(h.path(), &["validate"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
}

#[test]
fn every_hostile_spec_is_refused_with_exit_2_within_a_second_under_a_memory_limit() {
    let mut failures = Vec::new();
    for case in CASES {
        let h = home();
        let file = plant(h.path(), case);
        let o = limited(h.path(), &["validate"]);
        if o.code != 2 {
            failures.push(format!("{case}: exit {} (want 2)\n{}", o.code, o.stderr));
        }
        if !o.stderr.contains(file) {
            failures.push(format!(
                "{case}: the error does not name {file}\n{}",
                o.stderr
            ));
        }
        if o.took > Duration::from_secs(1) {
            failures.push(format!("{case}: took {:?}", o.took));
        }
        if o.stderr.len() > 4000 {
            failures.push(format!("{case}: {} bytes of error output", o.stderr.len()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_broken_spec_that_the_scenario_does_not_use_is_a_warning_for_plan() {
    for case in CASES.iter().filter(|c| **c != "template loop") {
        let h = home();
        let file = plant(h.path(), case);
        let o = limited(h.path(), &["plan", "quickstart"]);
        assert_eq!(o.code, 0, "{case}: {}", o.stderr);
        assert!(
            o.stdout.contains("plan: quickstart"),
            "{case}: {}",
            o.stdout
        );
        assert!(
            o.stderr.contains(&format!("warning: {file}")),
            "{case}: {}",
            o.stderr
        );
    }
}

#[test]
fn a_broken_spec_that_the_scenario_uses_stops_plan() {
    let h = home();
    plant(h.path(), "template loop");
    let o = limited(h.path(), &["plan", "quickstart"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("at most 10000"), "{}", o.stderr);
    // A hostile file named on the command line is refused, not waited on.
    let h = home();
    plant(h.path(), "FIFO");
    let o = limited(h.path(), &["plan", "scenarios/fifo.yaml"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("FIFO"), "{}", o.stderr);
}

#[test]
fn a_scenario_name_two_files_claim_is_refused_and_a_yml_file_is_recorded_as_itself() {
    let h = home();
    let s = h.path().join("scenarios");
    std::fs::rename(s.join("quickstart.yaml"), s.join("quickstart.yml")).unwrap();
    let o = limited(h.path(), &["plan", "quickstart", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let plan: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let files = plan["cells"][0]["spec_files"].to_string();
    assert!(files.contains("scenarios/quickstart.yml\""), "{files}");

    std::fs::copy(s.join("quickstart.yml"), s.join("quickstart.yaml")).unwrap();
    for arg in ["quickstart", "scenarios/quickstart.yaml"] {
        let o = limited(h.path(), &["plan", arg]);
        assert_eq!(o.code, 2, "{arg}: {}", o.stderr);
        assert!(
            o.stderr
                .contains("quickstart.yaml and scenarios/quickstart.yml"),
            "{arg}: {}",
            o.stderr
        );
    }
}

#[test]
fn an_error_never_echoes_a_huge_argument_or_value() {
    let h = home();
    let huge = "9".repeat(120_000);
    for args in [
        vec!["plan", "quickstart", "--set"],
        vec!["drive", "--store", "redis://127.0.0.1:1", "--threads"],
        vec!["hog", "--leave"],
    ] {
        let mut args: Vec<String> = args.into_iter().map(String::from).collect();
        if args[0] == "plan" {
            args.push(format!("cache_size={huge}x"));
        } else {
            args.push(format!("{huge}x"));
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = limited(h.path(), &refs);
        assert_eq!(
            o.code,
            2,
            "{}: {}",
            refs[0],
            &o.stderr[..o.stderr.len().min(500)]
        );
        assert!(
            o.stderr.len() < 4000,
            "{}: {} bytes of error output",
            refs[0],
            o.stderr.len()
        );
    }
}
