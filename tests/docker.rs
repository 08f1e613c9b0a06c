//! The docker sandbox against a real dockerd (`bash scripts/dockerd.sh`) and
//! the local engine images (`make images`). Every test uses its own run id
//! and ledger folder and ends by checking, with the docker CLI and the
//! cgroup filesystem, that nothing of it is left.
//!
//! Without a reachable daemon the tests skip with a loud message, unless
//! BENCHCAGE_REQUIRE_DOCKER is set (CI sets it: there they must run).

mod support;

use benchcage::model::{CellLimits, EngineLaunch, IoLimits, Probe, Program, SwapPolicy};
use benchcage::sandbox::cgroupfs::Hierarchy;
use benchcage::sandbox::docker::client::DockerClient;
use benchcage::sandbox::docker::image::{Presence, PullPolicy, ensure_image};
use benchcage::sandbox::docker::{DockerBackendError, DockerSandbox};
use benchcage::sandbox::{
    EngineId, EngineStatus, Sandbox, SandboxError, StopOutcome, free_port, ready,
};
use benchcage::units::Bytes;
use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use support::cli::{BIN, assert_success, bc_in, code_and_text, combined, repo, run_id_of};
use support::files::{assert_saved_then_restored, cell_dirs, read_json, read_text};
use support::launch::{args, launch};
use support::scratch::Scratch;
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

/// No container or volume labelled with the scratch's run, no cgroup of it
/// in any controller, no ledger, no data dir.
fn assert_nothing_left(s: &Scratch) {
    let filter = format!("label=benchcage.run={}", s.run_id);
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
        let g = c.path().join("benchcage").join(&s.run_id);
        assert!(!g.exists(), "cgroup {} left", g.display());
    }
    let ledger = s.ledgers().join(format!("{}.ledger", s.run_id));
    assert!(!ledger.exists(), "ledger {} left", ledger.display());
    assert!(!s.path().join("data").exists(), "data dir left");
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
        disk: None,
        client_node: Default::default(),
    }
}

fn redis_launch(s: &Scratch, image: &str, extra: &[&str]) -> EngineLaunch {
    let port = free_port().unwrap();
    let data = s.path().join("data");
    let mut argv = args(&[
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
    ]);
    argv.extend(args(extra));
    let program = Program::Image(image.into());
    EngineLaunch {
        engine: "redis".into(),
        version: "7.0".into(),
        ..launch(s.path(), program, argv, port, Probe::Redis, 20)
    }
}

fn postgres_launch(s: &Scratch) -> EngineLaunch {
    let port = free_port().unwrap();
    let data = s.path().join("data");
    let d = data.display().to_string();
    let argv = args(&[
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
    ]);
    let initdb = args(&[
        &format!("{PG_BIN}/initdb"),
        "-D",
        &d,
        "-U",
        "postgres",
        "--auth=trust",
        "--no-sync",
    ]);
    let probe = Probe::Postgres {
        user: "postgres".into(),
        database: "postgres".into(),
    };
    EngineLaunch {
        engine: "postgres".into(),
        version: "15".into(),
        init: vec![initdb],
        user: Some("postgres".into()),
        ..launch(
            s.path(),
            Program::Image(POSTGRES.into()),
            argv,
            port,
            probe,
            60,
        )
    }
}

/// A scratch folder and a sandbox provisioned with `limits(memory_mib)`.
async fn provisioned(name: &str, memory_mib: u64) -> (Scratch, DockerSandbox) {
    let s = Scratch::on_disk(name);
    let mut sb = s.docker_sandbox();
    sb.provision(&limits(memory_mib)).await.unwrap();
    (s, sb)
}

fn container_id(h: &benchcage::sandbox::EngineHandle) -> String {
    match &h.id {
        EngineId::Container(id) => id.clone(),
        other => panic!("a docker engine is a container, got {other:?}"),
    }
}

async fn teardown_clean(sb: &mut DockerSandbox, s: &Scratch) {
    let report = sb.teardown(BUDGET).await.unwrap();
    assert!(report.is_clean(), "teardown leaked: {report:?}");
    assert_nothing_left(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_container_is_ready_by_protocol_pinned_limited_and_logged() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::on_disk("limits");
    let mut sb = s.docker_sandbox();
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
        read_text(&mem.join("memory.limit_in_bytes")),
        (256u64 << 20).to_string()
    );
    // No swap: memory+swap equals memory (the daemon would double it otherwise).
    assert_eq!(
        read_text(&mem.join("memory.memsw.limit_in_bytes")),
        (256u64 << 20).to_string()
    );
    assert_eq!(read_text(&dirs["cpuset"].join("cpuset.cpus")), "1");
    assert_eq!(read_text(&dirs["pids"].join("pids.max")), "256");
    let wbps = read_text(&dirs["blkio"].join("blkio.throttle.write_bps_device"));
    assert!(
        wbps.ends_with(&(256u64 << 20).to_string()),
        "write_bps: {wbps}"
    );
    let riops = read_text(&dirs["blkio"].join("blkio.throttle.read_iops_device"));
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
    assert!(read_text(Path::new(&format!("/proc/{pid}/comm"))).starts_with("redis-server"));
    let mut threads = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = read_text(&t.path().join("status"));
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
    let cg = read_text(Path::new(&format!("/proc/{}/cgroup", child.id())));
    assert!(
        cg.contains(&format!("benchcage/{}/client", s.run_id)),
        "{cg}"
    );
    let status = read_text(Path::new(&format!("/proc/{}/status", child.id())));
    assert!(
        status.lines().any(|l| l == "Cpus_allowed_list:\t0"),
        "{status}"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    // The engine's output reaches the cell's log file.
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    while !read_text(&s.log()).contains("Ready to accept connections") {
        assert!(Instant::now() < deadline, "log: {}", read_text(&s.log()));
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
    assert!(read_text(&s.log()).contains("Success. You can now start the database server"));
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
    let s = Scratch::on_disk("noimage");
    for image in [
        "benchcage/nothing:0",
        "benchcage/tokumx:0.0.0",
        "registry.invalid/benchcage-none:1",
    ] {
        let mut sb = s.docker_sandbox();
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
        let text = err.to_string();
        assert!(text.contains(image), "{text}");
        match image {
            "benchcage/nothing:0" => assert!(text.contains("make images"), "{text}"),
            "benchcage/tokumx:0.0.0" => assert!(
                text.contains("benchcage image build tokumx --tarball tokumx-0.0.0-linux-x86_64"),
                "{text}"
            ),
            _ => assert!(
                matches!(
                    &err,
                    SandboxError::Docker(DockerBackendError::PullFailed { registry, .. })
                        if registry == "registry.invalid"
                ),
                "{text}"
            ),
        }
        if image.starts_with("benchcage/") {
            assert!(
                matches!(
                    err,
                    SandboxError::Docker(DockerBackendError::ImageMissing { .. })
                ),
                "{text}"
            );
        }
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
    let s = Scratch::for_run(&dir, &run_id);
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
    let s = Scratch::on_disk("ctrlc");
    let (mut child, id) = start_child(&s);
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &id]),
        "true"
    );
    nix_kill(child.id() as i32, "INT");
    let status = child.wait().unwrap();
    assert!(status.success(), "child: {status}");
    assert_nothing_left(&s);
}

/// SIGKILL the owner of container `id`: the container outlives it; then
/// `benchcage cleanup` (with the owner's ledger folder) removes it and
/// names the dead run, and nothing of the run is left.
fn sigkill_then_cleanup(s: &Scratch, mut owner: std::process::Child, id: &str) {
    nix_kill(owner.id() as i32, "KILL");
    owner.wait().unwrap();
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", id]), "true");
    // Data dirs are under the scratch folder: it is the work root here.
    let out = Command::new(BIN)
        .arg("cleanup")
        .env("BENCHCAGE_STATE_DIR", s.ledgers())
        .env("BENCHCAGE_WORK", s.path())
        .output()
        .unwrap();
    let text = combined(&out);
    assert!(out.status.success(), "cleanup: {text}");
    assert!(
        text.contains(&s.run_id),
        "cleanup names the dead run: {text}"
    );
    assert_nothing_left(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_of_the_owner_cleanup_removes_its_containers_and_cgroups() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::on_disk("sigkill");
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
        let s = Scratch::on_disk(&format!("bench{i}"));
        let mut sb = s.docker_sandbox();
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
        assert_nothing_left(&s);

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
        assert_nothing_left(&s);
    }
    let (or, od, cr, cd) = (
        support::median(ours_ready),
        support::median(ours_down),
        support::median(cli_ready),
        support::median(cli_down),
    );
    println!(
        "BENCH {}",
        serde_json::json!({
            "image": REDIS,
            "runs": N,
            "sandbox_provision_ms": support::median(ours_provision),
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
    let mut child = in_scratch(s, &repo())
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--set",
            "backend=docker",
        ])
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
    let run = run_id_of(&line_with(&rx, "cell(s), results in"));
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
    let mut s = Scratch::on_disk("cli-int");
    let (mut child, _id) = cli_run_at_load(&mut s);
    nix_kill(child.id() as i32, "INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted run exits 130");
    assert_nothing_left(&s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_of_benchcage_run_on_docker_cleanup_removes_its_container() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let mut s = Scratch::on_disk("cli-kill");
    let (child, id) = cli_run_at_load(&mut s);
    sigkill_then_cleanup(&s, child, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_of_benchcage_run_on_docker_the_next_run_removes_its_container() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let mut s = Scratch::on_disk("cli-next");
    let (mut child, id) = cli_run_at_load(&mut s);
    nix_kill(child.id() as i32, "KILL");
    child.wait().unwrap();
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &id]),
        "true"
    );
    // The next run reaps before anything else; resuming a run that does not
    // exist then ends it with bad input, which keeps this test short.
    let out = in_scratch(&s, &repo())
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--set",
            "backend=docker",
        ])
        .args(["--resume", "20000101-000000-0000"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cleaned up what 1 dead run(s) left behind"),
        "{stderr}"
    );
    assert_nothing_left(&s);
}

/// `benchcage --home HOME` run from `home`, its results, work and ledger
/// folders in `s`.
fn in_scratch(s: &Scratch, home: &Path) -> Command {
    bc_in(
        home,
        &s.path().join("results"),
        &s.path().join("work"),
        &s.ledgers(),
    )
}

/// `benchcage` with `args` from `home`, its results, work and ledger
/// folders in `s`; returns (exit code, stdout, stderr).
fn benchcage(s: &Scratch, home: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    code_and_text(&in_scratch(s, home).args(args).output().unwrap())
}

/// Removes the named images when dropped, whatever the test did.
struct ImagesGone(Vec<String>);

impl Drop for ImagesGone {
    fn drop(&mut self) {
        for image in &self.0 {
            let _ = Command::new("docker")
                .args(["rmi", "-f", image])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn image_present(image: &str) -> bool {
    Command::new("docker")
        .args(["image", "inspect", image])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// A release tarball in TokuMX's layout (`tokumx-V-linux-x86_64/bin/mongod`,
/// `lib64/`, `README`), owned by uid 1000 as a release build's would be.
/// Its `mongod` is a stand-in that prints a version line and its setup.
fn tokumx_tarball(dir: &Path, file: &str, top: &str, with_mongod: bool) -> PathBuf {
    let root = dir.join(format!("src-{file}"));
    let bin = root.join(top).join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(root.join(top).join("lib64")).unwrap();
    let version = top.split('-').nth(1).unwrap();
    let script = format!(
        "#!/bin/sh\necho \"db version v{version} (benchcage test stand-in for TokuMX)\"\necho \"args: $*\"\necho \"LD_LIBRARY_PATH=$LD_LIBRARY_PATH\"\n"
    );
    let exe = std::fs::Permissions::from_mode(0o755);
    if with_mongod {
        std::fs::write(bin.join("mongod"), &script).unwrap();
        std::fs::set_permissions(bin.join("mongod"), exe.clone()).unwrap();
    }
    std::fs::write(bin.join("mongo"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(bin.join("mongo"), exe).unwrap();
    std::fs::write(
        root.join(top).join("lib64/libtokufractaltree.so"),
        "not elf",
    )
    .unwrap();
    std::fs::write(root.join(top).join("README"), "TokuMX stand-in\n").unwrap();
    let path = dir.join(file);
    let status = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .args(["--owner=1000", "--group=1000", "-czf"])
        .arg(&path)
        .arg(top)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

/// `docker run --rm` of `image` with `argv`, host network; its stdout.
fn run_in(image: &str, argv: &[&str]) -> String {
    let mut args = vec![
        "run",
        "--rm",
        "--network",
        "host",
        "--entrypoint",
        argv[0],
        image,
    ];
    args.extend(&argv[1..]);
    docker(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_build_makes_a_tokumx_image_from_a_release_tarball_without_a_registry() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::on_disk("tokumx-image");
    let home = &repo();
    // A version no real release has, so no user image is touched.
    let version = format!("9.9.{}", std::process::id());
    let image = format!("benchcage/tokumx:{version}");
    let _gone = ImagesGone(vec![image.clone()]);
    assert!(!image_present(&image), "{image} exists before the test");
    let top = format!("tokumx-{version}-linux-x86_64");
    let file = format!("{top}-main.tar.gz");

    // Bad input is refused with exit 2 before anything is built.
    let renamed = s.path().join("tokumx-latest.tar.gz");
    std::fs::copy(tokumx_tarball(s.path(), &file, &top, true), &renamed).unwrap();
    let no_mongod = tokumx_tarball(
        &s.path().join("bad"),
        &format!("tokumx-{version}-linux-x86_64.tar.gz"),
        &top,
        false,
    );
    // A FIFO would block a reader forever.
    let fifo = s.path().join("fifo").join(&file);
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let other_folder = tokumx_tarball(
        &s.path().join("other"),
        &file,
        "tokumx-1.0.0-linux-x86_64",
        true,
    );
    for (tarball, engine, want) in [
        (renamed.as_path(), "tokumx", "tokumx-VERSION-linux-x86_64"),
        (no_mongod.as_path(), "tokumx", "no executable bin/mongod"),
        (
            other_folder.as_path(),
            "tokumx",
            "its folder `tokumx-1.0.0-linux-x86_64` says 1.0.0",
        ),
        (renamed.as_path(), "postgres", "`make images`"),
        (fifo.as_path(), "tokumx", "not a regular file"),
    ] {
        let (code, _, err) = benchcage(
            &s,
            home,
            &[
                "image",
                "build",
                engine,
                "--tarball",
                tarball.to_str().unwrap(),
            ],
        );
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(want), "want `{want}`: {err}");
        assert!(!image_present(&image));
    }

    let tarball = s.path().join(&file);
    let started = Instant::now();
    let (code, out, err) = benchcage(
        &s,
        home,
        &[
            "image",
            "build",
            "tokumx",
            "--tarball",
            tarball.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    eprintln!(
        "image build took {:.1}s:\n{err}",
        started.elapsed().as_secs_f64()
    );
    assert!(out.contains(&format!("built {image} (sha256:")), "{out}");
    // No engine version names this test tag: the command says so.
    assert!(
        out.contains("no version in") && out.contains("benchcage/tokumx:2.0.2"),
        "{out}"
    );

    // The tag, the environment and the label of the tarball it came from.
    assert!(image_present(&image));
    let env = docker(&["image", "inspect", "-f", "{{json .Config.Env}}", &image]);
    assert!(
        env.contains("\"PATH=/opt/tokumx/bin:/usr/local/sbin:"),
        "{env}"
    );
    assert!(
        env.contains("\"LD_LIBRARY_PATH=/opt/tokumx/lib64\""),
        "{env}"
    );
    let sha = Command::new("sha256sum").arg(&tarball).output().unwrap();
    let sha = String::from_utf8_lossy(&sha.stdout);
    let labels = docker(&["image", "inspect", "-f", "{{json .Config.Labels}}", &image]);
    assert!(
        labels.contains(&format!("\"benchcage.source-sha256\":\"{}\"", &sha[..64]))
            && labels.contains(&format!("\"benchcage.source\":\"{file}\"")),
        "{labels}"
    );

    // The content: Debian's base, the tarball's folder at /opt/tokumx owned
    // by root, and `mongod` found on PATH as the engine spec runs it.
    let debian = run_in(&image, &["cat", "/etc/debian_version"]);
    assert!(debian.starts_with("12."), "{debian}");
    let mongod = run_in(&image, &["mongod", "--version"]);
    assert!(
        mongod.contains(&format!("db version v{version}"))
            && mongod.contains("args: --version")
            && mongod.contains("LD_LIBRARY_PATH=/opt/tokumx/lib64"),
        "{mongod}"
    );
    let owners = run_in(
        &image,
        &[
            "stat",
            "-c",
            "%n %u:%g %a",
            "/opt/tokumx/bin/mongod",
            "/opt/tokumx/lib64/libtokufractaltree.so",
            "/opt/tokumx/README",
        ],
    );
    assert_eq!(
        owners,
        "/opt/tokumx/bin/mongod 0:0 755\n/opt/tokumx/lib64/libtokufractaltree.so 0:0 644\n/opt/tokumx/README 0:0 644"
    );

    // Built once: a second build says how to replace it, and --replace does.
    let args = [
        "image",
        "build",
        "tokumx",
        "--tarball",
        tarball.to_str().unwrap(),
    ];
    let (code, _, err) = benchcage(&s, home, &args);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("exists already") && err.contains("--replace"),
        "{err}"
    );
    let (code, _, err) = benchcage(&s, home, &[&args[..], &["--tag", "a:b"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--tag `a:b`"), "{err}");
    let before = docker(&["image", "inspect", "-f", "{{.Id}}", &image]);
    let (code, out, err) = benchcage(&s, home, &[&args[..], &["--replace"]].concat());
    assert_eq!(code, Some(0), "{out}{err}");
    assert_ne!(
        docker(&["image", "inspect", "-f", "{{.Id}}", &image]),
        before
    );
    assert!(
        !image_present(&before),
        "the replaced image {before} is left"
    );
    assert_eq!(
        docker(&["ps", "-a", "-q", "--filter", &format!("ancestor={image}")]),
        "",
        "containers of the image left"
    );

    drop(_gone);
    assert!(!image_present(&image));
}

/// Debian's docker-registry on 127.0.0.1 at a free port, storing in a temp
/// dir; stopped and its storage removed when dropped, whatever happened.
struct Registry {
    child: Option<std::process::Child>,
    dir: tempfile::TempDir,
    port: u16,
}

impl Registry {
    /// Starts it and waits until it answers `GET /v2/`; `None` (loudly)
    /// when the package is missing, unless BENCHCAGE_REQUIRE_DOCKER is set.
    fn start() -> Option<Registry> {
        const BIN: &str = "/usr/bin/docker-registry";
        if !Path::new(BIN).exists() {
            if std::env::var_os("BENCHCAGE_REQUIRE_DOCKER").is_some() {
                panic!("BENCHCAGE_REQUIRE_DOCKER is set but {BIN} is missing; run `make deps`");
            }
            eprintln!(
                "\n!!!!!!!! SKIPPED: {BIN} is missing; run `make deps` (Debian package docker-registry).\n"
            );
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("benchcage-registry-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let port = free_port().unwrap();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
                dir.path().join("storage").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new(BIN)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let r = Registry {
            child: Some(child),
            dir,
            port,
        };
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        while !r.answers() {
            assert!(
                Instant::now() < deadline,
                "docker-registry did not answer on 127.0.0.1:{port}: {}",
                std::fs::read_to_string(r.dir.path().join("registry.log")).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Some(r)
    }

    /// `GET /v2/` answers 200.
    fn answers(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
        let req = format!("GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n", self.port);
        let mut reply = String::new();
        c.write_all(req.as_bytes()).is_ok()
            && c.read_to_string(&mut reply).is_ok()
            && reply.starts_with("HTTP/1.0 200")
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stop it (SIGTERM, SIGKILL after 5 s) and reap it.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            nix_kill(child.id() as i32, "TERM");
            let deadline = Instant::now() + std::time::Duration::from_secs(5);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A throwaway project home whose redis engine runs `image`: the repo's
/// environments and templates, engines/redis.yaml with its image
/// replaced, and the quickstart scenario.
fn home_with_redis_image(s: &Scratch, image: &str) -> PathBuf {
    let repo = repo();
    let home = s.path().join("home");
    for d in ["engines", "scenarios"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    for d in ["environments", "templates"] {
        std::os::unix::fs::symlink(repo.join(d), home.join(d)).unwrap();
    }
    let engine = std::fs::read_to_string(repo.join("engines/redis.yaml")).unwrap();
    let replaced = engine.replace(
        "image: \"benchcage/redis:7.0\"",
        &format!("image: \"{image}\""),
    );
    assert_ne!(
        engine, replaced,
        "engines/redis.yaml no longer names benchcage/redis:7.0"
    );
    std::fs::write(home.join("engines/redis.yaml"), replaced).unwrap();
    std::fs::copy(
        repo.join("scenarios/quickstart.yaml"),
        home.join("scenarios/quickstart.yaml"),
    )
    .unwrap();
    home
}

/// A short docker run of the quickstart scenario in `home`.
const SHORT_RUN: &[&str] = &[
    "run",
    "quickstart",
    "--set",
    "backend=docker",
    "--set",
    "records=2000",
    "--set",
    "duration=2s",
    "--set",
    "warmup=1s",
];

/// The run id a `benchcage run` printed (`run ID: N cell(s), ...`).
fn run_id_in(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("run ").and_then(|r| r.split(':').next()))
        .unwrap_or_else(|| panic!("no run id in: {stderr}"))
        .to_string()
}

/// An image of redis with one layer no other local image has (so that
/// pulling it downloads it all), pushed to `registry` as `reference` and
/// then removed here.
fn push_fresh_redis(s: &Scratch, reference: &str) {
    let id = docker(&[
        "create",
        "--label",
        "benchcage.test=registry",
        REDIS,
        "true",
    ]);
    let rootfs = s.path().join("rootfs.tar");
    docker(&["export", "-o", rootfs.to_str().unwrap(), &id]);
    docker(&["rm", &id]);
    let marker = s.path().join("marker");
    std::fs::create_dir_all(&marker).unwrap();
    std::fs::write(marker.join("benchcage-test-marker"), reference).unwrap();
    let status = Command::new("tar")
        .arg("-rf")
        .arg(&rootfs)
        .arg("-C")
        .arg(&marker)
        .arg("benchcage-test-marker")
        .status()
        .unwrap();
    assert!(status.success());
    docker(&["import", rootfs.to_str().unwrap(), reference]);
    std::fs::remove_file(&rootfs).unwrap();
    docker(&["push", reference]);
    docker(&["rmi", reference]);
    assert!(!image_present(reference));
}

/// No container of `run` (any cell), no ledger, no cgroup, no work folder.
fn assert_run_left_nothing(s: &Scratch, run: &str) {
    let containers = docker(&["ps", "-a", "--format", "{{.Labels}}"]);
    assert!(
        !containers.contains(&format!("benchcage.run={run}")),
        "containers of {run} left: {containers}"
    );
    let ledgers: Vec<_> = std::fs::read_dir(s.ledgers())
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(ledgers.is_empty(), "ledger files left: {ledgers:?}");
    for c in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        for e in std::fs::read_dir(c.path().join("benchcage"))
            .into_iter()
            .flatten()
            .flatten()
        {
            assert!(
                !e.file_name().to_string_lossy().starts_with(run),
                "cgroup {} left",
                e.path().display()
            );
        }
    }
    assert!(
        !s.path().join("work").join(run).exists(),
        "work folder left"
    );
    let disks = benchcage::sandbox::disk::leftovers_under(&s.path().join("work"));
    assert!(disks.is_empty(), "data disks left: {disks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_whose_load_overflows_its_64mib_data_disk_fails_naming_it_and_leaves_no_mount()
{
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::on_disk("disk");
    let out = in_scratch(&s, &repo())
        .args([
            "run",
            "tests/scenarios/run-disk.yaml",
            "--set",
            "backend=docker",
        ])
        .env("BENCHCAGE_SNAPSHOTS", "off")
        .output()
        .unwrap();
    let (code, stdout, stderr) = code_and_text(&out);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let run = run_id_in(&stderr);
    let run_dir = s.path().join("results").join(&run);
    let cells = cell_dirs(&run_dir);
    assert_eq!(cells.len(), 1);
    let cell: benchcage::results::model::CellRecord = read_json(&cells[0].join("cell.json"));
    assert!(cell.image.is_some(), "the cell ran in a container");
    let why = cell.failure.unwrap_or_default();
    assert!(
        why.starts_with("the data disk of 64MiB is full (ENOSPC"),
        "{why}"
    );
    let fid: benchcage::results::model::FidelityRecord = read_json(&cells[0].join("fidelity.json"));
    let disk = fid.disk.expect("fidelity records the disk");
    assert!(disk.read_back.mounted && disk.read_back.fs_type == "ext4");
    assert!(disk.read_back.size.0 <= 64 << 20);
    assert_run_left_nothing(&s, &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_is_pulled_from_a_loopback_registry_with_progress_then_runs() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let Some(registry) = Registry::start() else {
        return;
    };
    let s = Scratch::on_disk("pull");
    let reference = format!(
        "{}/benchcage-test/redis:{}",
        registry.address(),
        std::process::id()
    );
    let _gone = ImagesGone(vec![reference.clone()]);
    let started = Instant::now();
    push_fresh_redis(&s, &reference);
    eprintln!("pushed in {:.1}s", started.elapsed().as_secs_f64());

    let home = home_with_redis_image(&s, &reference);
    let started = Instant::now();
    let (code, out, err) = benchcage(&s, &home, SHORT_RUN);
    eprintln!("run in {:.1}s:\n{err}", started.elapsed().as_secs_f64());
    assert_eq!(code, Some(0), "{out}{err}");
    // Off a terminal the progress is plain lines: the start, each layer,
    // and the end with what was downloaded.
    let from = format!("pulling {reference} from {}", registry.address());
    assert!(err.contains(&format!("{from}...")), "{err}");
    assert!(err.contains(&format!("{from}: downloading ")), "{err}");
    assert!(
        err.contains(&format!("{from}: layer ")) && err.contains(" done (1 of 1), "),
        "{err}"
    );
    let summary = err
        .lines()
        .find(|l| {
            l.starts_with(&format!(
                "pulled {reference} from {}: 1 layer(s), ",
                registry.address()
            ))
        })
        .unwrap_or_else(|| panic!("no pulled line: {err}"));
    assert!(summary.contains("MiB in "), "{summary}");
    assert!(image_present(&reference), "the pulled image is not there");
    // The pull came before the cell, which then ran on the pulled image.
    let pulled_at = err.find("pulled ").unwrap();
    assert!(
        pulled_at < err.find("] provision").unwrap_or(usize::MAX),
        "{err}"
    );
    assert!(err.contains("finished in"), "{err}");
    let run = run_id_in(&err);
    // The cell records the registry digest the image came by, and its id.
    let cell = only_cell_record(&s.path().join("results").join(&run));
    let image = cell.image.expect("a docker cell records its image");
    assert_eq!(image.reference, reference);
    let digest = docker(&[
        "image",
        "inspect",
        "-f",
        "{{index .RepoDigests 0}}",
        &reference,
    ]);
    assert!(
        digest.starts_with(&format!(
            "{}/benchcage-test/redis@sha256:",
            registry.address()
        )),
        "{digest}"
    );
    assert_eq!(image.repo_digests, vec![digest]);
    assert_eq!(
        image.id,
        docker(&["image", "inspect", "-f", "{{.Id}}", &reference])
    );
    assert_run_left_nothing(&s, &run);

    // Present now: nothing is pulled, even with the registry gone.
    let mut registry = registry;
    registry.stop();
    let client = DockerClient::connect().await.unwrap();
    let presence = ensure_image(
        &client,
        &reference,
        PullPolicy::Missing(std::time::Duration::from_secs(5)),
    )
    .await
    .unwrap();
    assert_eq!(presence, Presence::Local);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_is_down_fails_the_cell_naming_image_and_registry_and_leaves_nothing() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let Some(mut registry) = Registry::start() else {
        return;
    };
    let storage = registry.dir.path().to_path_buf();
    registry.stop();
    assert!(!registry.answers());
    let s = Scratch::on_disk("pull-down");
    let reference = format!(
        "{}/benchcage-test/redis:{}",
        registry.address(),
        std::process::id()
    );
    let _gone = ImagesGone(vec![reference.clone()]);
    let home = home_with_redis_image(&s, &reference);
    let started = Instant::now();
    let (code, out, err) = benchcage(&s, &home, SHORT_RUN);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    // A failed cell: exit 1, as docs/running.md says for any failed cell.
    assert_eq!(code, Some(1), "{out}{err}");
    let want = format!(
        "getting its image: image {reference} is not on this machine and pulling it from registry {} failed",
        registry.address()
    );
    assert!(err.contains(&format!("FAILED: {want}")), "{err}");
    let run = run_id_in(&err);
    let cells = s.path().join("results").join(&run).join("cells");
    let cell = std::fs::read_dir(&cells)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let record = std::fs::read_to_string(cell.join("cell.json")).unwrap();
    assert!(
        record.contains(&want) && record.contains("\"failed\""),
        "{record}"
    );
    // Nothing was provisioned: only the cell's record is in its folder.
    let files: Vec<String> = std::fs::read_dir(&cell)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, vec!["cell.json".to_string()]);
    assert!(!image_present(&reference));
    assert_run_left_nothing(&s, &run);
    drop(registry);
    assert!(!storage.exists(), "registry storage left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docker_cell_records_the_image_it_ran_by_id_and_the_report_shows_it() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::on_disk("cli-image");
    let (mut child, rx) = benchcage_run_on_docker(&s);
    let run = run_id_of(&line_with(&rx, "cell(s), results in"));
    std::thread::spawn(move || for _ in rx {});
    assert!(child.wait().unwrap().success());
    let run_dir = s.path().join("results").join(&run);
    let cell = only_cell_record(&run_dir);
    let image = cell.image.expect("a docker cell records its image");
    assert_eq!(image.reference, REDIS);
    // The id the daemon gives the image (not the tag, which may move).
    assert_eq!(
        image.id,
        docker(&["image", "inspect", "-f", "{{.Id}}", REDIS])
    );
    assert!(image.id.starts_with("sha256:"), "{}", image.id);
    // Built here with `docker import`: no registry digest to record.
    assert_eq!(
        docker(&["image", "inspect", "-f", "{{len .RepoDigests}}", REDIS]),
        "0"
    );
    assert!(image.repo_digests.is_empty());
    let md_path = s.path().join("report.md");
    let out = Command::new(BIN)
        .args(["report", "--format", "md", "-o"])
        .arg(&md_path)
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_success(&out);
    let md = read_text(&md_path);
    assert!(
        md.contains(&format!(
            "| Image | {REDIS} (id {}, built here: no registry digest) |",
            image.id
        )),
        "{md}"
    );
    assert_nothing_left(&s);
}

/// The record of the one cell of a run folder.
fn only_cell_record(run_dir: &Path) -> benchcage::results::model::CellRecord {
    let cells = cell_dirs(run_dir);
    assert_eq!(cells.len(), 1, "{}", run_dir.display());
    serde_json::from_str(&read_text(&cells[0].join("cell.json"))).unwrap()
}

/// Every shipped scenario with a MongoDB or TokuMX image cell, run here with
/// `--pull never`: each of those cells fails with the image error alone
/// (nothing else went wrong before it), nothing is sent to any registry, and
/// nothing is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_mongodb_and_tokumx_scenarios_fail_here_only_for_their_images() {
    let Some(_daemon) = shared().await else {
        return;
    };
    let repo = repo();
    for (scenario, only, images) in [
        (
            "scenarios/003-mongodb-3.2.yaml",
            "c4-16g",
            &[
                "mongo:3.2.6",
                "benchcage/tokumx:1.5",
                "benchcage/tokumx:2.0.2",
            ][..],
        ),
        (
            "scenarios/004-tpcc-mongodb.yaml",
            "",
            &["mongo:4.0.28", "mongo:4.2.24", "mongo:4.4.30"][..],
        ),
    ] {
        if images.iter().any(|i| image_present(i)) {
            eprintln!("skipped {scenario}: one of {images:?} is on this machine");
            continue;
        }
        let s = Scratch::on_disk("shipped-mongo");
        // Not the write-up's disk: the host's free space is not the point.
        let mut args = vec![
            "run",
            scenario,
            "--pull",
            "never",
            "--set",
            "server.disk=none",
        ];
        if !only.is_empty() {
            args.extend(["--env", only]);
        }
        let (code, out, err) = benchcage(&s, &repo, &args);
        assert_eq!(code, Some(1), "{scenario}: {out}{err}");
        // The resume command it prints keeps `--pull never`.
        assert!(
            err.lines()
                .any(|l| l.contains("--resume") && l.contains("--pull never")),
            "{err}"
        );
        let run = run_id_in(&err);
        let mut failed = Vec::new();
        for cell in cell_dirs(&s.path().join("results").join(&run)) {
            let record: benchcage::results::model::CellRecord = read_json(&cell.join("cell.json"));
            let why = record.failure.clone().unwrap_or_default();
            let image = images
                .iter()
                .find(|i| why.contains(&format!("image {i} is not on this machine")));
            assert!(
                image.is_some(),
                "{scenario}: cell {} failed with: {why}",
                record.key
            );
            failed.push(image.unwrap().to_string());
        }
        failed.sort();
        failed.dedup();
        let mut want: Vec<String> = images.iter().map(|i| i.to_string()).collect();
        want.sort();
        assert_eq!(failed, want, "{scenario}: every image's cells ran into it");
        assert_run_left_nothing(&s, &run);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_saved_from_a_container_restores_into_the_next_with_the_same_records() {
    use benchcage::results::model::{CellRecord, RunRecord};
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::on_disk("snap");
    let out = in_scratch(&s, &repo())
        .args([
            "run",
            "tests/scenarios/run-snapshots-docker.yaml",
            "--set",
            "backend=docker",
        ])
        .env("BENCHCAGE_SNAPSHOTS", s.path().join("snapshots"))
        .env_remove("BENCHCAGE_SNAPSHOT_LIMIT")
        .output()
        .unwrap();
    let (code, stdout, stderr) = code_and_text(&out);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let run = run_id_in(&stderr);
    let run_dir = s.path().join("results").join(&run);
    let rec: RunRecord = read_json(&run_dir.join("run.json"));
    assert_eq!(rec.run_id, run);
    let cells: std::collections::BTreeMap<String, CellRecord> = cell_dirs(&run_dir)
        .iter()
        .map(|d| {
            let c: CellRecord = read_json(&d.join("cell.json"));
            (format!("{}/r{}", c.engine, c.repetition), c)
        })
        .collect();
    assert_eq!(cells.len(), 6, "{:?}", cells.keys());
    for engine in ["postgres", "mariadb", "redis"] {
        let (first, second) = (
            &cells[&format!("{engine}/r0")],
            &cells[&format!("{engine}/r1")],
        );
        for c in [first, second] {
            assert_eq!(
                c.status,
                benchcage::model::CellStatus::Finished,
                "{engine}: {:?}",
                c.failure
            );
            assert!(c.image.is_some(), "{engine}: the cell ran in a container");
        }
        assert_saved_then_restored(engine, first, second);
        assert!(!second.phases.iter().any(|p| p.name == "load"), "{engine}");
        // The same records in the second container as the first loaded.
        let digest = first.data_digest.clone().unwrap();
        let counted: u64 = digest.split(' ').next().unwrap().parse().unwrap();
        assert!((2000..=2001).contains(&counted), "{engine}: {digest}");
        assert_eq!(second.data_digest.as_ref(), Some(&digest), "{engine}");
        let reads = second.phases.iter().find(|p| p.name == "reads").unwrap();
        assert_eq!(reads.total_ops, 500, "{engine}");
        assert_eq!(reads.total_errors, 0, "{engine}");
    }
    assert_run_left_nothing(&s, &run);
}

/// A primary and 2 secondaries of postgres (pg_basebackup), redis
/// (REPLICAOF) and MariaDB (GTID) with every member in a container of
/// its own: while the load runs the secondaries' containers are up, every
/// secondary ends with the primary's records, and nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_sets_run_with_every_member_in_a_container_of_its_own() {
    use benchcage::results::model::CellRecord;
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::on_disk("rs");
    let mut child = in_scratch(&s, &repo())
        .args([
            "run",
            "tests/scenarios/run-replica-sets.yaml",
            "--set",
            "backend=docker",
        ])
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
    let run = run_id_of(&line_with(&rx, "cell(s), results in"));
    line_with(&rx, "] load");
    for m in ["m1", "m2"] {
        let filter = format!("label=benchcage.run={run}-01-{m}");
        let running = docker(&["ps", "-q", "--filter", &filter]);
        assert!(!running.is_empty(), "no running container of {m}");
    }
    std::thread::spawn(move || for _ in rx {});
    let status = child.wait().unwrap();
    assert!(status.code().is_some(), "{status}");
    let run_dir = s.path().join("results").join(&run);
    let cells: Vec<CellRecord> = cell_dirs(&run_dir)
        .iter()
        .map(|d| read_json(&d.join("cell.json")))
        .collect();
    let mut engines: Vec<&str> = cells.iter().map(|c| c.engine.as_str()).collect();
    engines.sort();
    assert_eq!(engines, ["mariadb", "postgres", "redis"]);
    for c in &cells {
        let engine = &c.engine;
        assert_eq!(
            c.status,
            benchcage::model::CellStatus::Finished,
            "{engine}: {:?}",
            c.failure
        );
        assert_eq!(
            (c.backend.as_str(), c.topology.as_str()),
            ("docker", "replica_set:3")
        );
        let primary = c.data_digest.clone().expect("the primary's digest");
        let counted: u64 = primary.split(' ').next().unwrap().parse().unwrap();
        assert!((2000..=2001).contains(&counted), "{engine}: {primary}");
        let members = &c.fidelity.members;
        assert_eq!(members.keys().collect::<Vec<_>>(), ["m1", "m2"], "{engine}");
        for (name, m) in members {
            assert_eq!(m.data_digest.as_ref(), Some(&primary), "{engine} {name}");
            // Read back from its container's cgroup: pinned and capped.
            assert!(
                m.limits_read_back.contains_key("docker/cgroup_driver"),
                "{engine} {name}: {:?}",
                m.limits_read_back
            );
            assert_eq!(
                m.limits_read_back
                    .get("Cpus_allowed_list")
                    .map(String::as_str),
                Some("1"),
                "{engine} {name}"
            );
            assert!(!m.lag.is_empty(), "{engine} {name}");
        }
        // Whatever CPU contention from elsewhere did to the phases, nothing
        // of the topology itself went wrong.
        assert!(
            !c.fidelity
                .violations
                .iter()
                .any(|v| v.contains("secondary")),
            "{engine}: {:?}",
            c.fidelity.violations
        );
    }
    assert_run_left_nothing(&s, &run);
}

/// A 3-shard Redis Cluster (a primary and a secondary per shard) with
/// every member in a container of its own: the cluster holds every
/// record once, each shard's secondary its primary's, and nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cluster_runs_with_every_member_in_a_container_of_its_own() {
    use benchcage::results::model::CellRecord;
    let Some(_daemon) = shared().await else {
        return;
    };
    let s = Scratch::on_disk("rc");
    let out = in_scratch(&s, &repo())
        .args([
            "run",
            "tests/scenarios/run-redis-cluster.yaml",
            "--set",
            "backend=docker",
            "--only",
            "redis-cluster",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "{err}");
    let run = run_id_of(
        err.lines()
            .find(|l| l.contains("cell(s), results in"))
            .unwrap(),
    );
    let run_dir = s.path().join("results").join(&run);
    let cells: Vec<CellRecord> = cell_dirs(&run_dir)
        .iter()
        .map(|d| read_json(&d.join("cell.json")))
        .collect();
    let c = &cells[0];
    assert_eq!(c.status, benchcage::model::CellStatus::Finished, "{err}");
    assert_eq!(
        (c.backend.as_str(), c.topology.as_str()),
        ("docker", "sharded:3x2+0cfg+0router")
    );
    let digest = c.data_digest.clone().expect("the cluster's digest");
    assert!(digest.starts_with("2001 keys, sha256 "), "{digest}");
    let members = &c.fidelity.members;
    assert_eq!(members.len(), 5);
    for shard in ["shard1", "shard2"] {
        let p = &members[&format!("{shard}-m0")];
        let sec = &members[&format!("{shard}-m1")];
        assert!(p.data_digest.is_some() && sec.data_digest == p.data_digest);
    }
    for (name, m) in members {
        assert!(
            m.limits_read_back.contains_key("docker/cgroup_driver"),
            "{name}: {:?}",
            m.limits_read_back
        );
    }
    let reads = c.phases.iter().find(|p| p.name == "reads").unwrap();
    assert_eq!((reads.total_ops, reads.total_errors), (2000, 0));
    // Whatever CPU contention from elsewhere did to the phases, nothing
    // of the topology itself went wrong.
    assert!(
        !c.fidelity
            .violations
            .iter()
            .any(|v| v.contains("secondary") || v.contains("member")),
        "{:?}",
        c.fidelity.violations
    );
    assert_run_left_nothing(&s, &run);
}
