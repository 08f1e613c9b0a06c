//! The cgroup sandbox against the real kernel and real engines (root,
//! cgroup v1 or v2). Every test uses its own run id and ledger folder and
//! ends by checking that nothing of it is left.

use benchcage::sandbox::cgroup::{CgroupConfig, CgroupSandbox, Hierarchy};
use benchcage::sandbox::{
    CellLimits, EngineId, EngineLaunch, IoLimits, Probe, Program, Readiness, Sandbox, StopOutcome,
    SwapPolicy, free_port, ledger, ready,
};
use benchcage::units::{Bytes, CpuSet, Duration};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

const BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// A per-test folder that unprivileged engines can traverse.
struct Scratch {
    dir: tempfile::TempDir,
    run_id: String,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("benchcage-test-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch {
            dir,
            run_id: format!("t-{name}-{}", std::process::id()),
        }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn ledgers(&self) -> PathBuf {
        self.path().join("ledger")
    }
    fn config(&self) -> CgroupConfig {
        CgroupConfig {
            hierarchy: Hierarchy::detect().unwrap(),
            ledger_root: self.ledgers(),
            data_root: self.path().to_path_buf(),
        }
    }
    fn sandbox(&self) -> CgroupSandbox {
        CgroupSandbox::new(&self.run_id, self.config()).unwrap()
    }
}

fn cpus(s: &str) -> CpuSet {
    s.parse().unwrap()
}

fn limits(memory_mib: u64) -> CellLimits {
    CellLimits {
        server_cpus: cpus("0"),
        client_cpus: cpus("1"),
        memory: Bytes::from_mib(memory_mib),
        swap: SwapPolicy::Off,
        pids: 512,
        io: IoLimits {
            write_bps: Some(512 * 1024 * 1024),
            ..IoLimits::default()
        },
    }
}

fn launch(s: &Scratch, argv: Vec<String>, port: u16, probe: Probe, timeout_s: u64) -> EngineLaunch {
    EngineLaunch {
        engine: "test".into(),
        version: "local".into(),
        program: Program::Binary(PathBuf::from(&argv[0])),
        argv,
        env: BTreeMap::new(),
        port,
        data_dir: s.path().join("data"),
        config_files: vec![],
        init: vec![],
        user: None,
        readiness: Readiness {
            probe,
            timeout: Duration::from_secs(timeout_s),
        },
        log_path: s.path().join("engine.log"),
    }
}

fn redis(s: &Scratch, port: u16) -> EngineLaunch {
    let data = s.path().join("data");
    let argv = [
        "/usr/bin/redis-server",
        "--bind",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--dir",
        data.to_str().unwrap(),
        "--save",
        "",
        "--appendonly",
        "no",
        "--io-threads",
        "2",
    ]
    .map(String::from)
    .to_vec();
    launch(s, argv, port, Probe::Redis, 15)
}

/// Every cgroup directory of any controller whose path mentions `run_id`.
fn cgroups_of(run_id: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for c in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        let top = c.path().join("benchcage");
        let Ok(runs) = std::fs::read_dir(&top) else {
            continue;
        };
        for r in runs.flatten() {
            if r.file_name().to_string_lossy().contains(run_id) {
                found.push(r.path());
            }
        }
    }
    found
}

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s[s.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_string();
            state != "Z"
        })
        .unwrap_or(false)
}

fn assert_clean(s: &Scratch, pids: &[u32]) {
    assert_eq!(cgroups_of(&s.run_id), Vec::<PathBuf>::new(), "cgroups left");
    for p in pids {
        assert!(!pid_alive(*p), "process {p} left");
    }
    assert!(
        !ledger::path_for(&s.ledgers(), &s.run_id).exists(),
        "ledger left"
    );
}

fn engine_pid(h: &benchcage::sandbox::EngineHandle) -> u32 {
    match h.id {
        EngineId::Pid(p) => p,
        _ => panic!("cgroup backend returns pids"),
    }
}

#[tokio::test]
async fn redis_runs_pinned_capped_and_ready_and_teardown_leaves_nothing() {
    let s = Scratch::new("redis");
    let mut sb = s.sandbox();
    let p = sb.provision(&limits(256)).await.unwrap();
    let mem_key = if p.read_back["hierarchy"] == "v1" {
        "server/memory.limit_in_bytes"
    } else {
        "server/memory.max"
    };
    assert_eq!(p.read_back[mem_key], (256u64 << 20).to_string());
    assert_eq!(p.read_back["server/pids.max"], "512");
    assert_eq!(p.read_back["server/cpuset.cpus"], "0");
    assert_eq!(p.read_back["client/cpuset.cpus"], "1");
    let port = free_port().unwrap();
    let l = redis(&s, port);
    let started = Instant::now();
    let h = sb.start_engine(&l).await.unwrap();
    let version = ready::wait_ready(&mut sb, &l).await.unwrap();
    eprintln!("redis start-to-ready: {:?}", started.elapsed());
    assert!(
        version.starts_with(|c: char| c.is_ascii_digit()),
        "{version}"
    );
    let pid = engine_pid(&h);
    let threads = benchcage::sandbox::process::cpus_allowed(pid);
    assert!(
        threads.len() > 1,
        "redis with io-threads has several threads"
    );
    for (tid, list) in &threads {
        assert_eq!(list, "0", "thread {tid} may run on {list}");
    }
    let st = sb.stats().await.unwrap();
    assert!(
        st.memory_usage > 0 && st.memory_limit == 256 << 20,
        "{st:?}"
    );
    assert_eq!(st.oom_kills, 0);
    let stop = sb
        .stop_engine(std::time::Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(stop.outcome, StopOutcome::Terminated);
    let t = sb.teardown(BUDGET).await.unwrap();
    assert!(t.is_clean(), "{t:?}");
    assert_clean(&s, &[pid]);
}
