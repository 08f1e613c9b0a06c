//! `render --check`: every listed version of the engines this host can run
//! accepts the configs benchcage renders for it, checked by the engine's
//! own binary of that version; a setting one version removed or does not
//! know yet is caught; bad input (an engine without a check, a version not
//! fetched) exits 2 leaving nothing behind. Needs root (postgres runs as
//! its own user), the Debian engines (`make deps`) and the package
//! registries (the fetched versions are fetched into the host's cache
//! when missing).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::cli::{BIN, Out, repo};
use support::files::temp_home;

const FETCHED: &[&str] = &[
    "postgres@12",
    "postgres@13",
    "postgres@14",
    "postgres@16",
    "postgres@17",
    "redis@6.2",
    "redis@8.2",
];

/// Fetch the versions the tests check into the host's cache, once per
/// test binary (a version in the cache is not fetched again).
fn fetched() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let o = Command::new(BIN)
            .arg("--home")
            .arg(repo())
            .arg("fetch")
            .args(FETCHED)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&Out::of(&o)));
    });
}

fn text(o: &Out) -> String {
    format!("{}{}", o.stdout, o.stderr)
}

/// A private temp dir for the checks' throwaway folders, which the
/// engines' users can traverse; it must be empty after every command.
fn private_tmp() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::Builder::new()
        .prefix("benchcage-cctest-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    t
}

/// `benchcage --home HOME ARGS...` with its temp dir in `tmp`.
fn bc(home: &Path, tmp: &Path, args: &[&str], env: &[(&str, &Path)]) -> Out {
    let mut c = Command::new(BIN);
    c.arg("--home")
        .arg(home)
        .args(args)
        .env("TMPDIR", tmp)
        .env_remove("BENCHCAGE_HOME")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let o = Out::of(&c.output().unwrap());
    assert_nothing_left(tmp, &o);
    o
}

/// `benchcage render TARGET --env ENV --check -o OUT`, TARGET being
/// `engine@version` or `engine --all-versions`.
fn check(
    home: &Path,
    tmp: &Path,
    target: &[&str],
    env_name: &str,
    out: &str,
    env: &[(&str, &Path)],
) -> Out {
    let mut args = vec!["render"];
    args.extend_from_slice(target);
    args.extend(["--env", env_name, "--check", "-o", out]);
    bc(home, tmp, &args, env)
}

/// Neither a folder in `tmp` nor a process whose command line names it.
fn assert_nothing_left(tmp: &Path, o: &Out) {
    let left: Vec<PathBuf> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{}", text(o));
    let needle = tmp.display().to_string();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(!cmdline.contains(&needle), "still running: {cmdline}");
    }
}

#[test]
fn every_listed_postgres_and_redis_version_passes_its_config_check() {
    fetched();
    let tmp = private_tmp();
    let out = tempfile::tempdir().unwrap();
    let out_s = out.path().to_str().unwrap();
    for (engine, n) in [("postgres", 6), ("redis", 3)] {
        let started = std::time::Instant::now();
        let o = check(
            &repo(),
            tmp.path(),
            &[engine, "--all-versions"],
            "quickstart",
            out_s,
            &[],
        );
        eprintln!("{engine}: {n} versions checked in {:?}", started.elapsed());
        assert_eq!(o.code, 0, "{}", text(&o));
        assert!(
            o.stderr.contains(&format!(
                "{engine}: {n} of {n} versions passed the config check"
            )),
            "{}",
            o.stderr
        );
    }
    for v in ["12", "13", "14", "15", "16", "17"] {
        assert!(
            out.path()
                .join(format!("postgres@{v}/postgresql.conf"))
                .is_file(),
            "postgres@{v}"
        );
    }
    let o = check(
        &repo(),
        tmp.path(),
        &["postgres@12"],
        "quickstart",
        out_s,
        &[],
    );
    assert_eq!(o.code, 0, "{}", text(&o));
    assert!(
        o.stderr.contains("postgres@12: ran as postgres: /")
            && o.stderr.contains("native/bin/postgres -D ")
            && o.stderr.contains(" -C shared_buffers")
            && o.stderr.contains("postgres@12: config check passed"),
        "{}",
        o.stderr
    );
    // A redis that stays up passes; it ran on port 0 as nobody.
    let o = check(
        &repo(),
        tmp.path(),
        &["redis@6.2"],
        "quickstart",
        out_s,
        &[],
    );
    assert_eq!(o.code, 0, "{}", text(&o));
    assert!(
        o.stderr.contains("redis@6.2: ran as nobody: "),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains(" --port 0 --unixsocket "), "{}", o.stderr);
}

#[test]
fn mariadb_and_myrocks_pass_their_config_check() {
    let tmp = private_tmp();
    let out = tempfile::tempdir().unwrap();
    for engine in ["mariadb", "myrocks"] {
        // MariaDB's measured 89MiB beside its pool leaves 39MiB of 128.
        let o = check(
            &repo(),
            tmp.path(),
            &[engine, "--set", "cache=32MiB"],
            "tiny-128m",
            out.path().to_str().unwrap(),
            &[],
        );
        assert_eq!(o.code, 0, "{}", text(&o));
        assert!(
            o.stderr.contains(&format!(
                "{engine}@10.11: ran as mysql: /usr/sbin/mariadbd --defaults-file="
            )) && o.stderr.contains("config check passed"),
            "{}",
            o.stderr
        );
    }
}

/// A project home whose template `template` has `line` appended.
fn home_with_line(template: &str, line: &str) -> tempfile::TempDir {
    let home = temp_home("benchcage-cchome-");
    let p = home.path().join("templates").join(template);
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str(line);
    text.push('\n');
    std::fs::write(&p, text).unwrap();
    home
}

#[test]
fn a_postgres_setting_removed_in_13_passes_on_12_and_fails_on_13_naming_it() {
    fetched();
    let tmp = private_tmp();
    let home = home_with_line("postgres/postgresql.conf.tera", "wal_keep_segments = 8");
    let out = tempfile::tempdir().unwrap();
    let out_s = out.path().to_str().unwrap();
    let render = |label: &str| check(home.path(), tmp.path(), &[label], "quickstart", out_s, &[]);
    let o = render("postgres@12");
    assert_eq!(o.code, 0, "{}", text(&o));
    let o = render("postgres@13");
    assert_eq!(o.code, 1, "{}", text(&o));
    assert!(
        o.stderr
            .contains("postgres@13: config check FAILED: the check exited with exit status: 1")
            && o.stderr
                .contains("unrecognized configuration parameter \"wal_keep_segments\""),
        "{}",
        o.stderr
    );
    // Every version at once: 12 passes, the five after it fail.
    let o = check(
        home.path(),
        tmp.path(),
        &["postgres", "--all-versions"],
        "quickstart",
        out_s,
        &[],
    );
    assert_eq!(o.code, 1, "{}", text(&o));
    assert!(
        o.stderr.contains(
            "postgres: 1 of 6 versions passed the config check; failed: postgres@13, postgres@14, postgres@15, postgres@16, postgres@17"
        ),
        "{}",
        o.stderr
    );
}

#[test]
fn a_redis_directive_new_in_7_0_fails_on_6_2_and_passes_on_7_0() {
    fetched();
    let tmp = private_tmp();
    let home = home_with_line("redis/redis.conf.tera", "enable-debug-command no");
    let out = tempfile::tempdir().unwrap();
    let out_s = out.path().to_str().unwrap();
    let render = |label: &str| check(home.path(), tmp.path(), &[label], "quickstart", out_s, &[]);
    let started = std::time::Instant::now();
    let o = render("redis@6.2");
    assert_eq!(o.code, 1, "{}", text(&o));
    assert!(
        o.stderr
            .contains("redis@6.2: config check FAILED: the server exited with")
            && o.stderr.contains("FATAL CONFIG FILE ERROR")
            && o.stderr.contains("enable-debug-command"),
        "{}",
        o.stderr
    );
    // It exits at once: no waiting out stays_up.
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    for v in ["7.0", "8.2"] {
        let o = render(&format!("redis@{v}"));
        assert_eq!(o.code, 0, "{}", text(&o));
    }
}

#[test]
fn check_on_an_engine_without_one_or_a_version_not_fetched_exits_2_leaving_nothing() {
    let tmp = private_tmp();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("cfg");
    let dest_s = dest.to_str().unwrap();
    let o = check(&repo(), tmp.path(), &["mongodb@7.0"], "c4-16g", dest_s, &[]);
    assert_eq!(o.code, 2, "{}", text(&o));
    assert!(
        o.stderr.contains("mongodb has no config check")
            && o.stderr
                .contains("engines with one: mariadb, myrocks, postgres, redis")
            && o.stderr.contains("Render without --check"),
        "{}",
        o.stderr
    );
    assert!(!dest.exists());

    // An empty cache: the fetched versions are not there.
    let cache = tempfile::tempdir().unwrap();
    let env = [("BENCHCAGE_CACHE", cache.path())];
    let o = check(
        &repo(),
        tmp.path(),
        &["postgres@12"],
        "quickstart",
        dest_s,
        &env,
    );
    assert_eq!(o.code, 2, "{}", text(&o));
    assert!(
        o.stderr
            .contains("postgres@12 is not fetched yet; run `benchcage fetch postgres@12` first"),
        "{}",
        o.stderr
    );
    assert!(!dest.exists());

    // Every version: the Debian one is checked, the others are named.
    let o = check(
        &repo(),
        tmp.path(),
        &["postgres", "--all-versions"],
        "quickstart",
        dest_s,
        &env,
    );
    assert_eq!(o.code, 2, "{}", text(&o));
    assert!(
        o.stderr.contains("postgres@15: config check passed")
            && o.stderr.contains(
                "postgres: 1 of 6 versions passed the config check; not checked: postgres@12, postgres@13, postgres@14, postgres@16, postgres@17"
            ),
        "{}",
        o.stderr
    );
    assert!(std::fs::read_dir(cache.path()).unwrap().next().is_none());

    let o = bc(
        &repo(),
        tmp.path(),
        &[
            "render",
            "postgres@12",
            "--all-versions",
            "--env",
            "quickstart",
            "--check",
        ],
        &[],
    );
    assert_eq!(o.code, 2, "{}", text(&o));
    assert!(
        o.stderr.contains("`postgres`, not `postgres@12`"),
        "{}",
        o.stderr
    );
}

#[test]
fn ctrl_c_during_a_check_kills_the_engine_and_removes_its_folder() {
    let tmp = private_tmp();
    let out = tempfile::tempdir().unwrap();
    // redis must stay up 2 s to pass: interrupt it half way.
    let child = Command::new(BIN)
        .arg("--home")
        .arg(repo())
        .args([
            "render",
            "redis@7.0",
            "--env",
            "quickstart",
            "--check",
            "-o",
        ])
        .arg(out.path())
        .env("TMPDIR", tmp.path())
        .env_remove("BENCHCAGE_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    // Wait for the check's folder to appear, then interrupt.
    while std::fs::read_dir(tmp.path()).unwrap().next().is_none() {
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let o = Out::of(&child.wait_with_output().unwrap());
    assert_ne!(o.code, 0, "{}", text(&o));
    assert!(o.stderr.contains("interrupted"), "{}", o.stderr);
    assert!(!o.stderr.contains("config check passed"), "{}", o.stderr);
    assert_nothing_left(tmp.path(), &o);
}
