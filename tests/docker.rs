//! The docker sandbox against a real dockerd (`bash scripts/dockerd.sh`) and
//! the local engine images (`make images`). Every test uses its own run id
//! and ledger folder and ends by checking, with the docker CLI and the
//! cgroup filesystem, that nothing of it is left.
//!
//! Without a reachable daemon the tests skip with a loud message, unless
//! BENCHCAGE_REQUIRE_DOCKER is set (CI sets it: there they must run).

use benchcage::sandbox::cgroup::Hierarchy;
use benchcage::sandbox::docker::client::DockerClient;
use benchcage::sandbox::docker::{DockerBackendError, DockerSandbox};
use benchcage::sandbox::{
    CellLimits, EngineId, EngineLaunch, EngineStatus, IoLimits, Probe, Program, Readiness, Sandbox,
    SandboxError, StopOutcome, SwapPolicy, free_port, ready,
};
use benchcage::units::{Bytes, Duration};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

const BUDGET: std::time::Duration = std::time::Duration::from_secs(30);
const REDIS: &str = "benchcage/redis:7.0";
const POSTGRES: &str = "benchcage/postgres:15";
const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// Restarting dockerd must not pull the daemon out from under the other
/// tests of this file: they share it, the restart test takes it alone.
static DAEMON: RwLock<()> = RwLock::const_new(());

/// Whether the daemon answers; skips loudly (or fails in CI) when not.
async fn daemon_up() -> bool {
    match DockerClient::connect().await {
        Ok(c) => {
            for image in [REDIS, POSTGRES] {
                assert!(
                    c.image_exists(image).await.unwrap(),
                    "image {image} is missing: run `make images` first"
                );
            }
            true
        }
        Err(e) if std::env::var_os("BENCHCAGE_REQUIRE_DOCKER").is_some() => {
            panic!("BENCHCAGE_REQUIRE_DOCKER is set but dockerd is unreachable: {e}")
        }
        Err(e) => {
            eprintln!(
                "\n!!!!!!!! SKIPPED: dockerd is unreachable ({e}).\n!!!!!!!! Start it with `bash scripts/dockerd.sh` and build images with `make images`.\n"
            );
            false
        }
    }
}

async fn shared() -> Option<RwLockReadGuard<'static, ()>> {
    let g = DAEMON.read().await;
    daemon_up().await.then_some(g)
}

async fn exclusive() -> Option<RwLockWriteGuard<'static, ()>> {
    let g = DAEMON.write().await;
    daemon_up().await.then_some(g)
}

/// A per-test folder (on a real disk, so IO limits have a device).
struct Scratch {
    dir: tempfile::TempDir,
    run_id: String,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("benchcage-dtest-")
            .tempdir_in("/var/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch {
            dir,
            run_id: format!("d-{name}-{}", std::process::id()),
        }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn ledgers(&self) -> PathBuf {
        self.path().join("ledger")
    }
    fn sandbox(&self) -> DockerSandbox {
        DockerSandbox::new(
            &self.run_id,
            "cell",
            Hierarchy::detect().unwrap(),
            &self.ledgers(),
        )
        .unwrap()
    }
    fn log(&self) -> PathBuf {
        self.path().join("engine.log")
    }

    /// No container or volume labelled with this run, no cgroup of it in
    /// any controller, no ledger, no data dir.
    fn assert_nothing_left(&self) {
        let filter = format!("label=benchcage.run={}", self.run_id);
        assert_eq!(
            docker(&["ps", "-a", "-q", "--filter", &filter]),
            "",
            "containers left"
        );
        assert_eq!(
            docker(&["volume", "ls", "-q", "--filter", &filter]),
            "",
            "volumes left"
        );
        for c in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
            let g = c.path().join("benchcage").join(&self.run_id);
            assert!(!g.exists(), "cgroup {} left", g.display());
        }
        let ledger = self.ledgers().join(format!("{}.ledger", self.run_id));
        assert!(!ledger.exists(), "ledger {} left", ledger.display());
        assert!(!self.path().join("data").exists(), "data dir left");
    }
}

/// Run the docker CLI (an independent view of the daemon) and return stdout.
fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn limits(memory_mib: u64) -> CellLimits {
    CellLimits {
        server_cpus: "1".parse().unwrap(),
        client_cpus: "0".parse().unwrap(),
        memory: Bytes::from_mib(memory_mib),
        swap: SwapPolicy::Off,
        pids: 256,
        io: IoLimits {
            write_bps: Some(256 * 1024 * 1024),
            read_iops: Some(100_000),
            ..IoLimits::default()
        },
    }
}

fn redis_launch(s: &Scratch, image: &str, extra: &[&str]) -> EngineLaunch {
    let port = free_port().unwrap();
    let data = s.path().join("data");
    let mut argv: Vec<String> = [
        "redis-server",
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        &data.display().to_string(),
        "--enable-debug-command",
        "local",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    argv.extend(extra.iter().map(|a| a.to_string()));
    EngineLaunch {
        engine: "redis".into(),
        version: "7.0".into(),
        program: Program::Image(image.into()),
        argv,
        env: BTreeMap::new(),
        port,
        data_dir: data,
        config_files: vec![],
        init: vec![],
        user: None,
        readiness: Readiness {
            probe: Probe::Redis,
            timeout: Duration::from_secs(20),
        },
        log_path: s.log(),
    }
}

fn postgres_launch(s: &Scratch) -> EngineLaunch {
    let port = free_port().unwrap();
    let data = s.path().join("data");
    let d = data.display().to_string();
    let argv = [
        &format!("{PG_BIN}/postgres"),
        "-D",
        &d,
        "-p",
        &port.to_string(),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        "-c",
        "shared_buffers=16MB",
        "-c",
        "restart_after_crash=on",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let initdb = [
        &format!("{PG_BIN}/initdb"),
        "-D",
        &d,
        "-U",
        "postgres",
        "--auth=trust",
        "--no-sync",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    EngineLaunch {
        engine: "postgres".into(),
        version: "15".into(),
        program: Program::Image(POSTGRES.into()),
        argv,
        env: BTreeMap::new(),
        port,
        data_dir: data,
        config_files: vec![],
        init: vec![initdb],
        user: Some("postgres".into()),
        readiness: Readiness {
            probe: Probe::Postgres {
                user: "postgres".into(),
                database: "postgres".into(),
            },
            timeout: Duration::from_secs(60),
        },
        log_path: s.log(),
    }
}

/// A scratch folder and a sandbox provisioned with `limits(memory_mib)`.
async fn provisioned(name: &str, memory_mib: u64) -> (Scratch, DockerSandbox) {
    let s = Scratch::new(name);
    let mut sb = s.sandbox();
    sb.provision(&limits(memory_mib)).await.unwrap();
    (s, sb)
}

fn container_id(h: &benchcage::sandbox::EngineHandle) -> String {
    match &h.id {
        EngineId::Container(id) => id.clone(),
        other => panic!("a docker engine is a container, got {other:?}"),
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .to_string()
}

async fn teardown_clean(sb: &mut DockerSandbox, s: &Scratch) {
    let report = sb.teardown(BUDGET).await.unwrap();
    assert!(report.is_clean(), "teardown leaked: {report:?}");
    s.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_container_is_ready_by_protocol_pinned_limited_and_logged() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::new("limits");
    let mut sb = s.sandbox();
    let l = limits(256);
    let provisioned = sb.provision(&l).await.unwrap();
    assert_eq!(provisioned.read_back["client/cpuset.cpus"], "0");
    let launch = redis_launch(&s, REDIS, &[]);
    let handle = sb.start_engine(&launch).await.unwrap();
    let id = container_id(&handle);

    let version = ready::wait_ready(&mut sb, &launch).await.unwrap();
    assert!(version.starts_with("7.0"), "redis reported {version}");

    // Limits as the kernel holds them, in the container's own cgroup.
    let dirs = sb.container_cgroup_dirs().unwrap().clone();
    let mem = &dirs["memory"];
    assert!(
        mem.ends_with(&id),
        "memory cgroup {} is not the container's",
        mem.display()
    );
    assert_eq!(
        read(&mem.join("memory.limit_in_bytes")),
        (256u64 << 20).to_string()
    );
    // No swap: memory+swap equals memory (the daemon would double it otherwise).
    assert_eq!(
        read(&mem.join("memory.memsw.limit_in_bytes")),
        (256u64 << 20).to_string()
    );
    assert_eq!(read(&dirs["cpuset"].join("cpuset.cpus")), "1");
    assert_eq!(read(&dirs["pids"].join("pids.max")), "256");
    let wbps = read(&dirs["blkio"].join("blkio.throttle.write_bps_device"));
    assert!(
        wbps.ends_with(&(256u64 << 20).to_string()),
        "write_bps: {wbps}"
    );
    let riops = read(&dirs["blkio"].join("blkio.throttle.read_iops_device"));
    assert!(riops.ends_with("100000"), "read_iops: {riops}");
    assert_eq!(
        handle.read_back["server/memory.limit_in_bytes"],
        (256u64 << 20).to_string()
    );
    assert_eq!(handle.read_back["server/cpuset.cpus"], "1");
    assert_eq!(handle.read_back["Cpus_allowed_list"], "1");

    // The engine is PID 1 of the container and every thread of it is pinned.
    let inspect = docker(&[
        "inspect",
        "-f",
        "{{.State.Pid}} {{.HostConfig.NetworkMode}} {{.HostConfig.RestartPolicy.Name}} {{.HostConfig.AutoRemove}}",
        &id,
    ]);
    let fields: Vec<&str> = inspect.split_whitespace().collect();
    assert_eq!(fields[1..], ["host", "no", "false"]);
    let pid = fields[0];
    assert!(read(Path::new(&format!("/proc/{pid}/comm"))).starts_with("redis-server"));
    let mut threads = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = read(&t.path().join("status"));
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap();
        assert_eq!(cpus.trim(), "1", "thread {:?}", t.file_name());
        threads += 1;
    }
    assert!(threads > 1, "redis runs background threads");
    let labels = docker(&["inspect", "-f", "{{json .Config.Labels}}", &id]);
    assert!(
        labels.contains(&format!("\"benchcage.run\":\"{}\"", s.run_id)),
        "{labels}"
    );
    assert!(labels.contains(&format!(
        "\"benchcage.owner-pid\":\"{}\"",
        std::process::id()
    )));

    // Stats come from the container's cgroup files.
    let stats = sb.stats().await.unwrap();
    assert_eq!(stats.memory_limit, 256 << 20);
    assert!(stats.memory_usage > 0 && stats.rss > 0, "{stats:?}");

    // The load generator's side: a host process in the client group, on the client CPUs.
    let mut cmd = Command::new("sleep");
    cmd.arg("30");
    sb.prepare_client(&mut cmd).unwrap();
    let mut child = cmd.spawn().unwrap();
    let cg = read(Path::new(&format!("/proc/{}/cgroup", child.id())));
    assert!(
        cg.contains(&format!("benchcage/{}/client", s.run_id)),
        "{cg}"
    );
    let status = read(Path::new(&format!("/proc/{}/status", child.id())));
    assert!(
        status.lines().any(|l| l == "Cpus_allowed_list:\t0"),
        "{status}"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    // The engine's output reaches the cell's log file.
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    while !read(&s.log()).contains("Ready to accept connections") {
        assert!(Instant::now() < deadline, "log: {}", read(&s.log()));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let stop = sb
        .stop_engine(std::time::Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(stop.outcome, StopOutcome::Terminated);
    assert_eq!(
        stop.status,
        EngineStatus::Exited {
            code: Some(0),
            signal: None
        }
    );
    teardown_clean(&mut sb, &s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_over_the_memory_cap_is_oom_killed_and_counted_from_the_container_cgroup() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let (s, mut sb) = provisioned("pgoom", 128).await;
    let launch = postgres_launch(&s);
    sb.start_engine(&launch).await.unwrap();
    ready::wait_ready(&mut sb, &launch).await.unwrap();
    let before = sb.stats().await.unwrap();
    assert_eq!(before.oom_kills, 0);
    // One backend builds a ~400 MiB string inside a 128 MiB container.
    let out = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &launch.port.to_string(),
            "-U",
            "postgres",
            "-c",
        ])
        .arg("SELECT length(string_agg(repeat('x', 1024), '')) FROM generate_series(1, 400000)")
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "the query should have lost its backend"
    );
    // The postmaster (PID 1) survives, so the kernel counters are still there.
    let after = sb.stats().await.unwrap();
    assert!(after.oom_kills >= 1, "oom_kill counter: {after:?}");
    // The cap was reached and held.
    assert_eq!(after.memory_max_usage, 128 << 20, "{after:?}");
    assert_eq!(sb.engine_status().await.unwrap(), EngineStatus::Running);
    // The chown and initdb containers ran and went; their output is in the log.
    assert!(read(&s.log()).contains("Success. You can now start the database server"));
    teardown_clean(&mut sb, &s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_killed_by_the_oom_killer_is_counted_from_the_kernel_after_its_cgroup_is_gone() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let (s, mut sb) = provisioned("redisoom", 48).await;
    let launch = redis_launch(&s, REDIS, &[]);
    sb.start_engine(&launch).await.unwrap();
    ready::wait_ready(&mut sb, &launch).await.unwrap();
    let dirs = sb.container_cgroup_dirs().unwrap().clone();
    assert_eq!(sb.stats().await.unwrap().oom_kills, 0);
    let _ = Command::new("redis-cli")
        .args([
            "-p",
            &launch.port.to_string(),
            "DEBUG",
            "POPULATE",
            "3000000",
            "k",
            "100",
        ])
        .output()
        .unwrap();
    let deadline = Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        let st = sb.engine_status().await.unwrap();
        if st != EngineStatus::Running {
            break st;
        }
        assert!(Instant::now() < deadline, "redis outlived its memory cap");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        status,
        EngineStatus::Exited {
            code: None,
            signal: Some(9)
        }
    );
    assert!(
        !dirs["memory"].exists(),
        "the daemon removes the cgroup with PID 1"
    );
    let stats = sb.stats().await.unwrap();
    assert_eq!(
        stats.oom_kills, 1,
        "from the kernel's oom-kill record: {stats:?}"
    );
    teardown_clean(&mut sb, &s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_exits_is_reported_with_its_log_tail_and_leaves_nothing() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let (s, mut sb) = provisioned("exit", 128).await;
    let launch = redis_launch(&s, REDIS, &["--no-such-directive", "yes"]);
    let err = match sb.start_engine(&launch).await {
        Ok(_) => ready::wait_ready(&mut sb, &launch).await.unwrap_err(),
        Err(e) => e,
    };
    match &err {
        SandboxError::EngineExited {
            status, log_tail, ..
        } => {
            assert!(status.contains('1'), "{status}");
            assert!(log_tail.contains("no-such-directive"), "{log_tail}");
        }
        other => panic!("want an engine exit, got {other}"),
    }
    teardown_clean(&mut sb, &s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let (s, mut sb) = provisioned("noterm", 128).await;
    let mut launch = redis_launch(&s, REDIS, &[]);
    // PID 1 of a container without a SIGTERM handler never sees SIGTERM.
    launch.argv = vec!["sleep".into(), "600".into()];
    sb.start_engine(&launch).await.unwrap();
    assert_eq!(sb.engine_status().await.unwrap(), EngineStatus::Running);
    let started = Instant::now();
    let stop = sb
        .stop_engine(std::time::Duration::from_secs(1))
        .await
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(stop.outcome, StopOutcome::Killed);
    assert_eq!(
        stop.status,
        EngineStatus::Exited {
            code: None,
            signal: Some(9)
        }
    );
    teardown_clean(&mut sb, &s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_init_command_is_an_init_error_not_a_docker_failure() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let (s, mut sb) = provisioned("init", 128).await;
    let mut launch = redis_launch(&s, REDIS, &[]);
    launch.init = vec![vec![
        "sh".into(),
        "-c".into(),
        "echo init says no; exit 3".into(),
    ]];
    let err = sb.start_engine(&launch).await.unwrap_err();
    match &err {
        SandboxError::Init {
            status, log_tail, ..
        } => {
            assert_eq!(status, "exit code 3");
            assert!(log_tail.contains("init says no"), "{log_tail}");
        }
        other => panic!("want an init error, got {other}"),
    }
    teardown_clean(&mut sb, &s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_local_image_fails_fast_naming_make_images() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::new("noimage");
    for image in ["benchcage/nothing:0", "registry.invalid/benchcage-none:1"] {
        let mut sb = s.sandbox();
        sb.provision(&limits(128)).await.unwrap();
        let started = Instant::now();
        let err = sb
            .start_engine(&redis_launch(&s, image, &[]))
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(25),
            "{:?}",
            started.elapsed()
        );
        assert!(
            matches!(
                err,
                SandboxError::Docker(DockerBackendError::ImageMissing { .. })
            ),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("make images") && text.contains(image),
            "{text}"
        );
        teardown_clean(&mut sb, &s).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_removed_under_us_is_a_bounded_error_and_teardown_is_clean() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let (s, mut sb) = provisioned("removed", 128).await;
    let launch = redis_launch(&s, REDIS, &[]);
    let id = container_id(&sb.start_engine(&launch).await.unwrap());
    ready::wait_ready(&mut sb, &launch).await.unwrap();
    docker(&["rm", "-f", &id]);
    let started = Instant::now();
    let err = sb.engine_status().await.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        matches!(
            err,
            SandboxError::Docker(DockerBackendError::ContainerGone { .. })
        ),
        "{err}"
    );
    assert!(
        sb.stop_engine(std::time::Duration::from_secs(1))
            .await
            .is_err()
    );
    teardown_clean(&mut sb, &s).await;
}

fn dockerd_pid() -> Option<i32> {
    let out = Command::new("pgrep")
        .args(["-x", "dockerd"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dockerd_restart_during_a_run_is_a_bounded_error_and_teardown_is_clean() {
    let Some(_daemon) = exclusive().await else {
        return;
    };
    let (s, mut sb) = provisioned("restart", 128).await;
    let launch = redis_launch(&s, REDIS, &[]);
    sb.start_engine(&launch).await.unwrap();
    ready::wait_ready(&mut sb, &launch).await.unwrap();

    let pid = dockerd_pid().expect("dockerd runs");
    nix_kill(pid, "TERM");
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "dockerd did not stop");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // While the daemon is down every call fails quickly, naming the daemon.
    let started = Instant::now();
    let err = sb.engine_status().await.unwrap_err();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(err.to_string().contains("docker"), "{err}");

    let up = Command::new("bash")
        .arg("scripts/dockerd.sh")
        .status()
        .unwrap();
    assert!(up.success());
    // The daemon stopped the container on its way down (restart policy no).
    let status = sb.engine_status().await.unwrap();
    assert!(matches!(status, EngineStatus::Exited { .. }), "{status:?}");
    teardown_clean(&mut sb, &s).await;
}

fn nix_kill(pid: i32, sig: &str) {
    assert!(
        Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

/// The process the Ctrl-C and SIGKILL tests start: provisions a cell,
/// starts redis, prints `READY`, and tears down on SIGINT. Run by those
/// tests only (it waits for a signal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "started by the Ctrl-C and SIGKILL tests"]
async fn child_holding_a_redis_container() {
    let run_id = std::env::var("BENCHCAGE_CHILD_RUN").expect("run id from the parent");
    let root = PathBuf::from(std::env::var("BENCHCAGE_STATE_DIR").unwrap());
    let dir = PathBuf::from(std::env::var("BENCHCAGE_CHILD_DIR").unwrap());
    let mut sb = DockerSandbox::new(&run_id, "cell", Hierarchy::detect().unwrap(), &root).unwrap();
    sb.provision(&limits(128)).await.unwrap();
    let s = Scratch {
        dir: tempfile::Builder::new().tempdir_in(&dir).unwrap(),
        run_id: run_id.clone(),
    };
    let launch = redis_launch(&s, REDIS, &[]);
    let id = container_id(&sb.start_engine(&launch).await.unwrap());
    ready::wait_ready(&mut sb, &launch).await.unwrap();
    println!("READY {id}");
    tokio::signal::ctrl_c().await.unwrap();
    let report = sb.teardown(BUDGET).await.unwrap();
    println!(
        "TEARDOWN {}",
        if report.is_clean() { "clean" } else { "leaked" }
    );
}

/// Start the child holding a container; returns it and the container id.
fn start_child(s: &Scratch) -> (std::process::Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_holding_a_redis_container",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BENCHCAGE_CHILD_RUN", &s.run_id)
        .env("BENCHCAGE_STATE_DIR", s.ledgers())
        .env("BENCHCAGE_CHILD_DIR", s.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let id = loop {
        let line = lines.next().expect("child exited before READY").unwrap();
        // The harness writes `test <name> ... ` before the child's own output.
        if let Some((_, id)) = line.split_once("READY ") {
            break id.trim().to_string();
        }
    };
    child.stdout = None;
    std::thread::spawn(move || for _ in lines {});
    (child, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_of_the_owner_tears_its_containers_down() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::new("ctrlc");
    let (mut child, id) = start_child(&s);
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &id]),
        "true"
    );
    nix_kill(child.id() as i32, "INT");
    let status = child.wait().unwrap();
    assert!(status.success(), "child: {status}");
    s.assert_nothing_left();
}

/// SIGKILL the owner of container `id`: the container outlives it; then
/// `benchcage cleanup` (with the owner's ledger folder) removes it and
/// names the dead run, and nothing of the run is left.
fn sigkill_then_cleanup(s: &Scratch, mut owner: std::process::Child, id: &str) {
    nix_kill(owner.id() as i32, "KILL");
    owner.wait().unwrap();
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", id]), "true");
    // Data dirs are under the scratch folder: it is the work root here.
    let out = Command::new(env!("CARGO_BIN_EXE_benchcage"))
        .arg("cleanup")
        .env("BENCHCAGE_STATE_DIR", s.ledgers())
        .env("BENCHCAGE_WORK", s.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "cleanup: {text}");
    assert!(
        text.contains(&s.run_id),
        "cleanup names the dead run: {text}"
    );
    s.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_of_the_owner_cleanup_removes_its_containers_and_cgroups() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::new("sigkill");
    let (child, id) = start_child(&s);
    sigkill_then_cleanup(&s, child, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_leaves_containers_of_a_live_owner_alone() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let (s, mut sb) = provisioned("alive", 128).await;
    let launch = redis_launch(&s, REDIS, &[]);
    let id = container_id(&sb.start_engine(&launch).await.unwrap());
    let outcome = benchcage::sandbox::docker::reap_dead_runs(false).await;
    assert!(outcome.unreachable.is_none(), "{outcome:?}");
    assert!(
        !outcome.removed.iter().any(|r| r.contains(&s.run_id)),
        "{outcome:?}"
    );
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &id]),
        "true"
    );
    teardown_clean(&mut sb, &s).await;
}

/// Ping redis every 5 ms until it answers (the same probe for both sides).
async fn poll_ready(port: u16) {
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    while benchcage::clients::ping(&Probe::Redis, port).await.is_err() {
        assert!(Instant::now() < deadline, "redis on {port} never answered");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `make bench` (scripts/bench/docker.sh): create-to-ready and teardown of
/// the redis image through the docker sandbox vs `docker run --rm` of the
/// same image and argv, median of 7 each, one `BENCH {json}` line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by scripts/bench/docker.sh"]
async fn bench_redis_create_to_ready_and_teardown_vs_docker_run_rm() {
    let Some(_daemon) = shared().await else {
        return;
    };
    const N: usize = 7;
    let (mut ours_ready, mut ours_down, mut ours_provision) = (vec![], vec![], vec![]);
    let (mut cli_ready, mut cli_down) = (vec![], vec![]);
    for i in 0..N {
        let s = Scratch::new(&format!("bench{i}"));
        let mut sb = s.sandbox();
        let t = Instant::now();
        sb.provision(&limits(256)).await.unwrap();
        ours_provision.push(t.elapsed().as_secs_f64() * 1e3);
        let launch = redis_launch(&s, REDIS, &[]);
        let t = Instant::now();
        sb.start_engine(&launch).await.unwrap();
        poll_ready(launch.port).await;
        ours_ready.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        sb.stop_engine(std::time::Duration::from_secs(10))
            .await
            .unwrap();
        assert!(sb.teardown(BUDGET).await.unwrap().is_clean());
        ours_down.push(t.elapsed().as_secs_f64() * 1e3);
        s.assert_nothing_left();

        let name = format!("benchcage-bench-rm-{}-{i}", std::process::id());
        let t = Instant::now();
        // The same argv as the sandbox's engine, minus its data dir mount.
        let mut argv: Vec<String> = [
            "run",
            "--rm",
            "-d",
            "--name",
            &name,
            "--network",
            "host",
            "--label",
            &format!("benchcage.run={}", s.run_id),
            REDIS,
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        let cli_launch = redis_launch(&s, REDIS, &[]);
        let dir_flag = cli_launch.argv.iter().position(|a| a == "--dir").unwrap();
        argv.extend(cli_launch.argv[..dir_flag].iter().cloned());
        let port = cli_launch.port;
        docker(&argv.iter().map(String::as_str).collect::<Vec<_>>());
        poll_ready(port).await;
        cli_ready.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        docker(&["stop", "-t", "10", &name]);
        // --rm removes after the stop returns: done when the daemon forgets it.
        while Command::new("docker")
            .args(["inspect", &name])
            .output()
            .unwrap()
            .status
            .success()
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        cli_down.push(t.elapsed().as_secs_f64() * 1e3);
        s.assert_nothing_left();
    }
    let (or, od, cr, cd) = (
        median(ours_ready),
        median(ours_down),
        median(cli_ready),
        median(cli_down),
    );
    println!(
        "BENCH {}",
        serde_json::json!({
            "image": REDIS,
            "runs": N,
            "sandbox_provision_ms": median(ours_provision),
            "sandbox_create_to_ready_ms": or,
            "docker_run_rm_create_to_ready_ms": cr,
            "create_to_ready_ratio": or / cr,
            "sandbox_teardown_ms": od,
            "docker_run_rm_teardown_ms": cd,
            "teardown_ratio": od / cd,
        })
    );
}

/// `benchcage run scenarios/quickstart.yaml --set backend=docker` with its
/// results, work and ledger folders in `s`; returns the child and a
/// receiver of its stderr lines.
fn benchcage_run_on_docker(
    s: &Scratch,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let home = env!("CARGO_MANIFEST_DIR");
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchcage"))
        .current_dir(home)
        .arg("--home")
        .arg(home)
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--set",
            "backend=docker",
        ])
        .env("BENCHCAGE_RESULTS", s.path().join("results"))
        .env("BENCHCAGE_WORK", s.path().join("work"))
        .env("BENCHCAGE_STATE_DIR", s.ledgers())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// The first stderr line containing `want`, within 120 s.
fn line_with(rx: &std::sync::mpsc::Receiver<String>, want: &str) -> String {
    let deadline = Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no `{want}` line"));
        if line.contains(want) {
            return line;
        }
    }
}

/// Start the CLI run and wait until its engine container serves the load;
/// returns the child, the sandbox's scratch view (run id `<run>-01`) and
/// the container id.
fn cli_run_at_load(s: &mut Scratch) -> (std::process::Child, String) {
    let (child, rx) = benchcage_run_on_docker(s);
    let first = line_with(&rx, "cell(s), results in");
    let run = first
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':');
    s.run_id = format!("{run}-01");
    line_with(&rx, "] load");
    std::thread::spawn(move || for _ in rx {});
    let filter = format!("label=benchcage.run={}", s.run_id);
    let id = docker(&["ps", "-q", "--no-trunc", "--filter", &filter]);
    assert!(!id.is_empty(), "no running container for {}", s.run_id);
    (child, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_of_benchcage_run_on_docker_removes_its_container() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let mut s = Scratch::new("cli-int");
    let (mut child, _id) = cli_run_at_load(&mut s);
    nix_kill(child.id() as i32, "INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted run exits 130");
    s.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_of_benchcage_run_on_docker_cleanup_removes_its_container() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let mut s = Scratch::new("cli-kill");
    let (child, id) = cli_run_at_load(&mut s);
    sigkill_then_cleanup(&s, child, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_of_benchcage_run_on_docker_the_next_run_removes_its_container() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let mut s = Scratch::new("cli-next");
    let (mut child, id) = cli_run_at_load(&mut s);
    nix_kill(child.id() as i32, "KILL");
    child.wait().unwrap();
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &id]),
        "true"
    );
    // The next run reaps before anything else; resuming a run that does not
    // exist then ends it with bad input, which keeps this test short.
    let home = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_benchcage"))
        .current_dir(home)
        .arg("--home")
        .arg(home)
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--set",
            "backend=docker",
        ])
        .args(["--resume", "20000101-000000-0000"])
        .env("BENCHCAGE_RESULTS", s.path().join("results"))
        .env("BENCHCAGE_WORK", s.path().join("work"))
        .env("BENCHCAGE_STATE_DIR", s.ledgers())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cleaned up what 1 dead run(s) left behind"),
        "{stderr}"
    );
    s.assert_nothing_left();
}
