//! Hostile spec input: bombs, FIFOs, device symlinks, huge values, template
//! loops, deep nesting. Each is refused with exit 2 naming its file, within
//! a second, under a memory limit a normal `validate` fits in; and a broken
//! spec a scenario does not use does not stop `plan` of that scenario.
//! Needs neither root nor engines.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::cli::{BIN, Out, repo};

/// Address-space limit (KiB) for every command here; `validate` of the
/// shipped specs fits under it.
const ULIMIT_KIB: u64 = 300_000;
/// The free space plans here count on in the work dir, whatever the
/// shared disk of this host holds now.
const WORK_FREE: &str = "20GiB";

/// A command's output and how long it took.
struct Timed {
    out: Out,
    took: Duration,
}

impl std::ops::Deref for Timed {
    type Target = Out;
    fn deref(&self) -> &Out {
        &self.out
    }
}

/// Run benchcage under `ulimit -v`.
fn limited(home: &Path, args: &[&str]) -> Timed {
    let start = Instant::now();
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -v {ULIMIT_KIB}; exec \"$@\""))
        .arg("benchcage")
        .arg(BIN)
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("BENCHCAGE_HOME")
        .env("BENCHCAGE_WORK_FREE", WORK_FREE)
        .output()
        .unwrap();
    Timed {
        out: Out::of(&o),
        took: start.elapsed(),
    }
}

/// A home with the shipped engines, templates, environments and the
/// quickstart scenario.
fn home() -> tempfile::TempDir {
    let t = support::files::temp_home("benchcage-hostile-");
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
        "huge counts" => {
            write(
                "scenarios/counts.yaml",
                "matrix: {engines: [redis@7.0], environments: [quickstart]}\n\
                 dataset: {records: 100000000000000}\n\
                 load: {threads: 1000000000}\n\
                 phases:\n\
                 - {name: a, builtin: {workload: a}, threads: 1000000000, operations: 100000000000000000, target: 100000000000000}\n",
            );
            "scenarios/counts.yaml"
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
    "huge counts",
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

/// `drive` flags that would size something beyond any host, each with the
/// flag its refusal must name.
const HUGE_DRIVE_FLAGS: &[(&[&str], &str)] = &[
    (
        &["--threads", "1000000000"],
        "--threads: 1000000000 threads is out of range (1 to 4096)",
    ),
    (
        &["--threads", "1,4,1000000000"],
        "--threads: 1000000000 threads is out of range",
    ),
    (
        &["--records", "100000000000"],
        "--records: 100000000000 records is more than",
    ),
    (
        &["--operations", "100000000000000000"],
        "--operations: 100000000000000000 operations is out of range",
    ),
    (&["--target", "1e-300"], "--target: a target of"),
    (&["--target", "1e300"], "--target: a target of"),
    (
        &["--field-length", "4000000000"],
        "--field-length: records of 10 x 4000000000 B",
    ),
    (
        &["--field-count", "1000000000"],
        "--field-count: 1000000000 fields is more than a table can hold",
    ),
    (
        &["--key-padding", "100000000"],
        "--key-padding: 100000000 digits is out of range",
    ),
    (
        &["--batch", "100000000", "--load"],
        "--batch: batch 100000000 is out of range",
    ),
    (
        &["--duration", "200h"],
        "--duration: a duration of 720000s is longer than a week",
    ),
];

#[test]
fn drive_refuses_counts_beyond_the_host_with_exit_2_within_a_second_under_a_memory_limit() {
    let h = home();
    let mut failures = Vec::new();
    for (flags, want) in HUGE_DRIVE_FLAGS {
        // Nothing listens on port 1: a refusal must come before connecting.
        let mut args = vec!["drive", "--store", "redis://127.0.0.1:1", "--workload", "c"];
        if !flags.contains(&"--duration") && !flags.contains(&"--operations") {
            args.extend(["--operations", "10"]);
        }
        args.extend(flags.iter().copied());
        let o = limited(h.path(), &args);
        let case = flags.join(" ");
        if o.code != 2 {
            failures.push(format!("{case}: exit {} (want 2)\n{}", o.code, o.stderr));
        }
        if !o.stderr.contains(want) {
            failures.push(format!("{case}: `{want}` missing in\n{}", o.stderr));
        }
        if o.took > Duration::from_secs(1) {
            failures.push(format!("{case}: took {:?}", o.took));
        }
        if o.stderr.len() > 1000 {
            failures.push(format!("{case}: {} bytes of error output", o.stderr.len()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn plan_refuses_a_dataset_larger_than_the_free_disk_naming_estimate_free_space_path_and_a_fitting_count()
 {
    let h = home();
    // 9 * 10^9 records of about 1 KB, three times over for redis: 26 TB.
    let o = limited(
        h.path(),
        &["plan", "quickstart", "--set", "records=9000000000"],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.took < Duration::from_secs(1), "{:?}", o.took);
    let e = &o.stderr;
    assert!(
        e.contains("--set: records=9000000000: redis@7.0: the data would take about "),
        "{e}"
    );
    assert!(
        e.contains("(9000000000 records x 1083 B x 3 for the engine)"),
        "{e}"
    );
    assert!(
        e.contains("benchcage-work (where the engine's data dir goes) has 20.0GiB free (BENCHCAGE_WORK_FREE)"),
        "{e}"
    );
    // 20 GiB / 3 / 1083 B.
    assert!(e.contains("(hint: --set records=6609675 fits;"), "{e}");
    // The count it suggests plans, and the plan shows its estimate.
    let o = limited(
        h.path(),
        &["plan", "quickstart", "--set", "records=6609675"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("  disk      about 20.0GiB (6609675 records x 1083 B x 3 for the engine); "),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("has 20.0GiB free (BENCHCAGE_WORK_FREE)"),
        "{}",
        o.stdout
    );
    let o = limited(
        h.path(),
        &["plan", "quickstart", "--set", "records=6609676"],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
}

#[test]
fn a_work_free_space_that_is_not_a_size_is_refused() {
    let h = home();
    let o = Command::new(env!("CARGO_BIN_EXE_benchcage"))
        .arg("--home")
        .arg(h.path())
        .args(["plan", "quickstart"])
        .env("BENCHCAGE_WORK_FREE", "lots")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("BENCHCAGE_WORK_FREE: lots: `lots` is not a size"),
        "{stderr}"
    );
}

#[test]
fn plan_refuses_a_huge_thread_count_from_set_with_exit_2_under_a_memory_limit() {
    let h = home();
    let o = limited(
        h.path(),
        &["plan", "quickstart", "--set", "threads=1000000000"],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.took < Duration::from_secs(1), "{:?}", o.took);
    assert!(
        o.stderr.contains(
            "--set: threads=1000000000: 1000000000 is out of range (hint: a count from 1 to 4096"
        ),
        "{}",
        o.stderr
    );
}
