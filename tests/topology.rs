//! Replica sets end to end on the cgroup backend (issue 12): a primary
//! and two secondaries of PostgreSQL (streaming standbys made by
//! pg_basebackup), of redis (REPLICAOF) and of MariaDB (GTID replicas),
//! each member in its own
//! sandbox; every secondary holds the primary's records after the load; a
//! secondary killed during a phase invalidates that phase and the matrix
//! goes on; nothing is left after a SIGKILL of benchcage while the
//! secondaries join. Needs root and the engines.

mod support;

use benchcage::model::CellStatus;
use benchcage::results::model::{CellRecord, PhaseStatus, RunRecord};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::cli::{bc_in, run_id_of};
use support::files::{cell_dirs, read_json};
use support::host::{host_contention, name_of, pid_alive, run_groups, valid_but_for_a_busy_host};

const HOME: &str = env!("CARGO_MANIFEST_DIR");

/// These tests assert valid phases and count processes: one at a time.
static HOST: Mutex<()> = Mutex::new(());

/// A test's results, work and ledger folders.
struct Place {
    tmp: tempfile::TempDir,
    _alone: std::sync::MutexGuard<'static, ()>,
}

impl Place {
    fn new() -> Place {
        let alone = HOST.lock().unwrap_or_else(|e| e.into_inner());
        Place {
            tmp: tempfile::Builder::new()
                .prefix("benchcage-topology-test-")
                .tempdir()
                .unwrap(),
            _alone: alone,
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
    fn command(&self, args: &[&str]) -> Command {
        let mut c = bc_in(
            Path::new(HOME),
            &self.path("results"),
            &self.path("work"),
            &self.path("state"),
        );
        c.args(args);
        c
    }
    /// Start `benchcage ARGS`; its stderr lines are collected as they come.
    fn spawn(&self, args: &[&str]) -> (Run, Arc<Mutex<Vec<String>>>) {
        let mut child = self
            .command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                l.lock().unwrap().push(line);
            }
        });
        (Run(child), lines)
    }
    /// The run's cells by engine.
    fn cells(&self, run: &str) -> std::collections::BTreeMap<String, CellRecord> {
        let dir = self.path("results").join(run);
        let _: RunRecord = read_json(&dir.join("run.json"));
        cell_dirs(&dir)
            .iter()
            .map(|d| {
                let c: CellRecord = read_json(&d.join("cell.json"));
                (c.engine.clone(), c)
            })
            .collect()
    }
    /// No cgroup (the members' included), work dir or ledger of `run` is left.
    fn assert_clean(&self, run: &str) {
        for g in run_groups() {
            assert!(
                !name_of(&g).starts_with(run),
                "cgroup left: {}",
                g.display()
            );
        }
        let work = self.path("work").join(run);
        assert!(!work.exists(), "work dir left: {}", work.display());
        let left: Vec<String> = std::fs::read_dir(self.path("state"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(run))
            .collect();
        assert!(left.is_empty(), "ledgers left: {left:?}");
        let namespaces = support::clean::namespaces_left(run);
        assert!(namespaces.is_empty(), "namespaces left: {namespaces:?}");
        let containers = support::clean::containers_left(run);
        assert!(containers.is_empty(), "containers left: {containers:?}");
    }
}

/// A started run; a test that fails while it runs interrupts it (Ctrl-C:
/// it tears its sandboxes down) and waits, before the test's folders go.
struct Run(Child);

impl std::ops::Deref for Run {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Run {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0.id() as i32),
                nix::sys::signal::Signal::SIGINT,
            );
            let _ = self.0.wait();
        }
    }
}

/// The first collected line with every part, within `secs`.
fn wait_line(child: &mut Child, lines: &Mutex<Vec<String>>, parts: &[&str], secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(l) = lines
            .lock()
            .unwrap()
            .iter()
            .find(|l| parts.iter().all(|p| l.contains(p)))
        {
            return l.clone();
        }
        let all = || lines.lock().unwrap().join("\n");
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "run ended ({status}) before a line with {parts:?}:\n{}",
                all()
            );
        }
        assert!(
            Instant::now() < deadline,
            "no line with {parts:?}:\n{}",
            all()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pids in the server group of sandbox `id` (its cpuset group on v1,
/// its unified group on v2).
fn server_pids(id: &str) -> Vec<u32> {
    let hier = benchcage::sandbox::cgroupfs::Hierarchy::detect().unwrap();
    let dirs = hier.dirs(
        &Path::new(benchcage::sandbox::cgroupfs::group::TOP)
            .join(id)
            .join("server"),
    );
    let dir = dirs.get("cpuset").or_else(|| dirs.get("unified")).unwrap();
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// The violations but those of a busy host or hypervisor.
fn violations(c: &CellRecord) -> Vec<&String> {
    c.fidelity
        .violations
        .iter()
        .filter(|v| !host_contention(v))
        .collect()
}

#[test]
fn every_secondary_of_a_postgres_a_redis_and_a_mariadb_replica_set_holds_the_primarys_records() {
    let place = Place::new();
    let (mut child, lines) = place.spawn(&["run", "tests/scenarios/run-replica-sets.yaml"]);
    let run = run_id_of(&wait_line(&mut child, &lines, &["run ", "3 cell(s)"], 60));
    // While the postgres secondaries run, each is in a sandbox of its own.
    wait_line(&mut child, &lines, &["[1/3", "] load"], 120);
    for m in ["m1", "m2"] {
        assert!(
            !server_pids(&format!("{run}-01-{m}")).is_empty(),
            "no process in {m}'s server group"
        );
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{}", lines.lock().unwrap().join("\n"));
    let cells = place.cells(&run);
    assert_eq!(
        cells.keys().collect::<Vec<_>>(),
        ["mariadb", "postgres", "redis"]
    );
    for (engine, c) in &cells {
        assert_eq!(c.status, CellStatus::Finished, "{engine}: {:?}", c.failure);
        let primary = c.data_digest.clone().expect("the primary's digest");
        let counted: u64 = primary.split(' ').next().unwrap().parse().unwrap();
        assert!((2000..=2001).contains(&counted), "{engine}: {primary}");
        let members = &c.fidelity.members;
        assert_eq!(members.keys().collect::<Vec<_>>(), ["m1", "m2"], "{engine}");
        for (name, m) in members {
            assert_eq!(m.role, "secondary");
            assert_eq!(m.data_digest.as_ref(), Some(&primary), "{engine} {name}");
            assert!(m.in_sync_s.is_some(), "{engine} {name}");
            assert_eq!(m.oom_kills, 0);
            // Its own cgroup, pinned and capped as planned.
            assert_eq!(
                m.limits_read_back
                    .get("Cpus_allowed_list")
                    .map(String::as_str),
                Some("1"),
                "{engine} {name}: {:?}",
                m.limits_read_back
            );
            assert!(
                m.limits_read_back
                    .iter()
                    .any(|(k, v)| k.contains("memory") && v == "268435456"),
                "{engine} {name}: {:?}",
                m.limits_read_back
            );
            assert!(!m.engine_thread_cpus.is_empty(), "{engine} {name}");
            assert!(m.engine_thread_cpus.values().all(|c| c == "1"));
            // Its lag, read every second from when it followed the primary.
            assert!(!m.lag.is_empty(), "{engine} {name}");
            for w in m.lag.windows(2) {
                let gap = w[1].t_ms - w[0].t_ms;
                assert!((500..=3000).contains(&gap), "{engine} {name}: {gap} ms");
            }
            assert!(m.lag.iter().all(|l| l.linked && l.behind.is_some()));
            let most = m.lag.iter().filter_map(|l| l.behind).max().unwrap();
            assert!(m.max_behind >= most, "{engine} {name}");
            // Ready for the load once every secondary followed.
            let ready = c.topology_ready_s.expect("the topology's readiness");
            assert!(ready >= m.in_sync_s.unwrap(), "{engine} {name}");
        }
        assert!(violations(c).is_empty(), "{engine}: {:?}", violations(c));
        let reads = c.phases.iter().find(|p| p.name == "reads").unwrap();
        assert_eq!((reads.total_ops, reads.total_errors), (2000, 0), "{engine}");
        assert!(
            valid_but_for_a_busy_host(&reads.status),
            "{engine}: {:?}",
            reads.status
        );
        assert!(c.stage_s.contains_key("replicas"), "{engine}");
    }
    let dir = place.path("results").join(&run);
    // Every member's cgroup was sampled beside the primary's.
    for d in cell_dirs(&dir) {
        let samples: Vec<benchcage::results::model::ResourceSample> =
            read_json(&d.join("samples.json"));
        for m in ["server", "m1", "m2"] {
            let of: Vec<_> = samples.iter().filter(|s| s.cgroup == m).collect();
            // Sampled once a second: a short redis cell has few samples.
            assert!(!of.is_empty(), "{}: {m}", d.display());
            assert!(
                of.iter().any(|s| s.memory_bytes > 0 && s.cpu_usec > 0),
                "{}: {m}: {of:?}",
                d.display()
            );
        }
    }
    // Each MariaDB member ran with a server_id of its own and a binary log.
    let mariadb = cell_dirs(&dir)
        .into_iter()
        .find(|d| name_of(d).starts_with("mariadb"))
        .unwrap();
    for (i, kept) in ["config", "members/m1/config", "members/m2/config"]
        .iter()
        .enumerate()
    {
        let cnf = support::files::read_text(&mariadb.join(kept).join("my.cnf"));
        assert!(
            cnf.contains(&format!("\nserver_id = {}\nlog_bin", i + 1)),
            "{kept}: {cnf}"
        );
    }
    place.assert_clean(&run);
}

#[test]
fn a_three_shard_redis_cluster_holds_every_record_once_and_serves_every_key() {
    let place = Place::new();
    let (mut child, lines) = place.spawn(&["run", "tests/scenarios/run-redis-cluster.yaml"]);
    let run = run_id_of(&wait_line(&mut child, &lines, &["run ", "2 cell(s)"], 60));
    let status = child.wait().unwrap();
    let text = lines.lock().unwrap().join("\n");
    assert!(status.success(), "{text}");
    let dir = place.path("results").join(&run);
    let cells: Vec<CellRecord> = cell_dirs(&dir)
        .iter()
        .map(|d| read_json(&d.join("cell.json")))
        .collect();
    let cluster = cells
        .iter()
        .find(|c| c.label.starts_with("redis-cluster/"))
        .unwrap();
    assert_eq!(
        cluster.status,
        CellStatus::Finished,
        "{:?}",
        cluster.failure
    );
    assert_eq!(cluster.topology, "sharded:3x2+0cfg+0router");
    assert!(violations(cluster).is_empty(), "{:?}", violations(cluster));
    // The whole cluster holds the 2000 records and the scan index once.
    let digest = cluster.data_digest.clone().expect("the cluster's digest");
    assert!(digest.starts_with("2001 keys, sha256 "), "{digest}");
    let members = &cluster.fidelity.members;
    assert_eq!(
        members.keys().collect::<Vec<_>>(),
        [
            "shard0-m1",
            "shard1-m0",
            "shard1-m1",
            "shard2-m0",
            "shard2-m1"
        ]
    );
    let keys = |name: &str| -> u64 {
        let d = members[name].data_digest.as_ref().unwrap();
        d.split(' ').next().unwrap().parse().unwrap()
    };
    // Shard 0's primary is the cell's server: its secondary holds as much.
    let (s0, s1, s2) = (keys("shard0-m1"), keys("shard1-m0"), keys("shard2-m0"));
    assert_eq!(s0 + s1 + s2, 2001, "{s0} + {s1} + {s2}");
    for s in [s0, s1, s2] {
        assert!(s > 400, "a shard holds {s} of 2001 keys");
    }
    for shard in ["shard1", "shard2"] {
        let (p, sec) = (
            &members[&format!("{shard}-m0")],
            &members[&format!("{shard}-m1")],
        );
        assert_eq!(p.role, "shard_primary");
        assert_eq!(sec.role, "shard_secondary");
        assert_eq!(sec.data_digest, p.data_digest, "{shard}");
        // A secondary's lag is followed; a shard's primary follows nobody.
        assert!(!sec.lag.is_empty() && sec.lag.iter().all(|l| l.linked));
        assert!(p.lag.is_empty() && p.in_sync_s.is_none());
    }
    // The settle step shrank every member's cap, each by its own data
    // (to the least a cap is settled to).
    assert!(
        cluster.limits["memory_settled"].starts_with("32MiB ("),
        "{:?}",
        cluster.limits
    );
    for (name, m) in members {
        let after = &m.limits_read_back["memory limit after settle"];
        assert!(
            after.starts_with("33554432 (settled to 32MiB"),
            "{name}: {after}"
        );
    }
    // Every key read where its slot lives, every scan through the index.
    for (name, ops) in [("reads", 2000), ("scans", 200)] {
        let p = cluster.phases.iter().find(|p| p.name == name).unwrap();
        assert_eq!((p.total_ops, p.total_errors), (ops, 0), "{name}");
    }
    let one = cells
        .iter()
        .find(|c| c.label.starts_with("redis-one/"))
        .unwrap();
    assert_eq!(one.topology, "standalone");
    // Each member ran in cluster mode, in a sandbox of its own.
    let cell = cell_dirs(&dir)
        .into_iter()
        .find(|d| d.join("members").exists())
        .unwrap();
    let conf = support::files::read_text(&cell.join("members/shard2-m1/config/redis.conf"));
    assert!(conf.contains("cluster-enabled yes"), "{conf}");
    place.assert_clean(&run);
}

/// The legacy MongoDB test server (tests/support/legacy_mongo.py, wire 4)
/// as an engine whose members form a replica set the way the mongodb
/// engine's spec says: a project of its own in `home`.
fn legacy_mongo_project(home: &Path) {
    let python = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let python = String::from_utf8_lossy(&python.stdout).trim().to_string();
    for d in ["engines", "environments", "scenarios"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    let script = home.join("legacy_mongo.py");
    std::fs::copy(
        Path::new(HOME).join("tests/support/legacy_mongo.py"),
        &script,
    )
    .unwrap();
    std::fs::copy(
        Path::new(HOME).join("environments/rs3-here.yaml"),
        home.join("environments/rs3-here.yaml"),
    )
    .unwrap();
    // The mongodb engine's own `replication:`, word for word.
    let mongodb = support::files::read_text(&Path::new(HOME).join("engines/mongodb.yaml"));
    let initiate = mongodb
        .lines()
        .skip_while(|l| !l.starts_with("replication:"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(initiate.contains("replSetInitiate"), "{initiate}");
    let engine = format!(
        "description: test only; the legacy MongoDB 3.2 test server as a replica set member\n\
         versions:\n  \"3.2\": {{binary: {python}}}\n\
         command: [\"{{binary}}\", \"{}\", --port, \"{{port}}\", --wire, \"4\", --replset, benchcage, --cache-bytes, \"67108864\", --echo]\n\
         user: root\n\
         readiness: {{probe: mongodb, timeout: 30s}}\n\
         topologies: [replica_set]\n{initiate}\n\
         knobs:\n  cache_size: {{type: size}}\n\
         reports_own_version: false\n",
        script.display()
    );
    std::fs::write(home.join("engines/legacymongo.yaml"), engine).unwrap();
    std::fs::write(
        home.join("scenarios/mongo-rs.yaml"),
        "matrix: {engines: [legacymongo], environments: [rs3-here]}\n\
         dataset: {records: 300, field_count: 2, field_length: 20}\n\
         load: {threads: 1}\n\
         phases:\n  - {name: reads, builtin: {workload: c}, threads: 1, duration: 3s}\n",
    )
    .unwrap();
}

#[test]
fn a_mongodb_replica_set_is_initiated_on_its_primary_naming_every_member_then_followed() {
    let place = Place::new();
    let home = place.path("home");
    legacy_mongo_project(&home);
    let out = bc_in(
        &home,
        &place.path("results"),
        &place.path("work"),
        &place.path("state"),
    )
    .args(["run", "mongo-rs"])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let run = run_id_of(
        err.lines()
            .find(|l| l.contains("cell(s), results in"))
            .unwrap(),
    );
    let dir = place.path("results").join(&run);
    let cell = cell_dirs(&dir).remove(0);
    let c: CellRecord = read_json(&cell.join("cell.json"));
    assert_eq!(c.status, CellStatus::Finished, "{err}");
    assert_eq!(c.topology, "replica_set:3");
    // What the primary was sent, in order: the set named with every
    // member's port, itself first and preferred, then its status until
    // every secondary followed it.
    let log = support::files::read_text(&cell.join("engine.log"));
    let commands: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("command admin "))
        .collect();
    let at = commands
        .iter()
        .position(|c| c.starts_with("{\"replSetInitiate\""))
        .unwrap();
    let ports = [
        launch_port(&cell.join("launch.json")),
        c.fidelity.members["m1"].port,
        c.fidelity.members["m2"].port,
    ];
    let want = format!(
        "{{\"replSetInitiate\": {{\"_id\": \"benchcage\", \"members\": [\
         {{\"_id\": 0, \"host\": \"127.0.0.1:{}\", \"priority\": 2}}, \
         {{\"_id\": 1, \"host\": \"127.0.0.1:{}\", \"priority\": 1}}, \
         {{\"_id\": 2, \"host\": \"127.0.0.1:{}\", \"priority\": 1}}]}}}}",
        ports[0], ports[1], ports[2]
    );
    assert_eq!(commands[at], want);
    assert_eq!(
        commands
            .iter()
            .filter(|c| c.contains("replSetInitiate"))
            .count(),
        1
    );
    assert!(
        commands[at + 1].starts_with("{\"replSetGetStatus\""),
        "{commands:?}"
    );
    for (name, m) in &c.fidelity.members {
        // Followed from replSetGetStatus, in milliseconds of oplog time.
        assert!(m.in_sync_s.is_some(), "{name}");
        assert_eq!(m.lag_unit.as_deref(), Some("ms"), "{name}");
        assert!(
            !m.lag.is_empty() && m.lag.iter().all(|l| l.linked),
            "{name}"
        );
    }
    // The test server replicates nothing: the digests after the load say so.
    let primary = c.data_digest.clone().unwrap();
    assert!(primary.starts_with("300 documents"), "{primary}");
    for m in ["m1", "m2"] {
        assert!(
            c.fidelity.violations.iter().any(|v| v.starts_with(&format!(
                "secondary {m} holds other records than its primary after the load (0 documents"
            ))),
            "{:?}",
            c.fidelity.violations
        );
    }
    place.assert_clean(&run);
}

/// The mongodb engine's spec as it ships (its topologies, replication,
/// sharding and knobs, and its mongod.conf template), with the legacy
/// test server for mongod (reading the rendered mongod.conf) and for
/// mongos: a project of its own in `home`, whose scenario runs a sharded
/// cluster of 2 one-member shards, 1 config server and 2 routers.
fn legacy_sharded_project(home: &Path) {
    legacy_mongo_project(home);
    let script = home.join("legacy_mongo.py");
    let python = support::files::read_text(&home.join("engines/legacymongo.yaml"))
        .lines()
        .find_map(|l| {
            l.strip_prefix("  \"3.2\": {binary: ")
                .map(|b| b.trim_end_matches('}').to_string())
        })
        .unwrap();
    let templates = home.join("templates/mongodb");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::copy(
        Path::new(HOME).join("templates/mongodb/mongod.conf.tera"),
        templates.join("mongod.conf.tera"),
    )
    .unwrap();
    let shipped = support::files::read_text(&Path::new(HOME).join("engines/mongodb.yaml"));
    let from = shipped.find("\ntopologies:").unwrap();
    let router = shipped[from..]
        .lines()
        .find(|l| l.trim_start().starts_with("router_command:"))
        .unwrap();
    let legacy_router = format!(
        "  router_command: [\"{python}\", \"{}\", --mongos, --configdb, \"{{config_set}}\", --port, \"{{port}}\", --wire, \"4\", --echo]",
        script.display()
    );
    let rest = shipped[from..].replace(router, &legacy_router);
    let engine = format!(
        "description: test only; the legacy MongoDB test server as mongod and mongos\n\
         versions:\n  \"3.6\": {{binary: {python}}}\n\
         command: [\"{{binary}}\", \"{}\", --port, \"{{port}}\", --wire, \"4\", --config, \"{{config:mongod.conf}}\", --cache-bytes, \"67108864\", --echo]\n\
         user: root\n\
         readiness: {{probe: mongodb, timeout: 30s}}\n\
         config_files:\n  - {{template: mongodb/mongod.conf.tera, path: \"{{config_dir}}/mongod.conf\", format: yaml}}\n\
         reports_own_version: false\n{rest}",
        script.display()
    );
    std::fs::write(home.join("engines/legacymongod.yaml"), engine).unwrap();
    std::fs::write(
        home.join("scenarios/mongo-sharded.yaml"),
        "matrix:\n  engines:\n    - {engine: legacymongod, topology: {sharded: {shards: 2, replicas_per_shard: 1, config_servers: 1, routers: 2}}}\n  environments: [rs3-here]\n\
         dataset: {records: 300, field_count: 2, field_length: 20}\n\
         load: {threads: 1}\n\
         phases:\n  - {name: reads, builtin: {workload: c}, threads: 4, duration: 3s}\n",
    )
    .unwrap();
}

/// The lines of a member's engine log that start with `prefix`, the
/// prefix cut.
fn log_lines(log: &Path, prefix: &str) -> Vec<String> {
    support::files::read_text(log)
        .lines()
        .filter_map(|l| l.strip_prefix(prefix).map(str::to_string))
        .collect()
}

#[test]
fn a_mongodb_sharded_cluster_is_formed_in_order_and_loaded_through_every_router() {
    let place = Place::new();
    let home = place.path("home");
    legacy_sharded_project(&home);
    let out = bc_in(
        &home,
        &place.path("results"),
        &place.path("work"),
        &place.path("state"),
    )
    .args(["run", "mongo-sharded"])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let run = run_id_of(
        err.lines()
            .find(|l| l.contains("cell(s), results in"))
            .unwrap_or_else(|| panic!("{err}")),
    );
    let dir = place.path("results").join(&run);
    let cell = cell_dirs(&dir).remove(0);
    let c: CellRecord = read_json(&cell.join("cell.json"));
    assert_eq!(c.status, CellStatus::Finished, "{err} {:?}", c.failure);
    assert_eq!(c.topology, "sharded:2x1+1cfg+2router");
    let ready = c.topology_ready_s.unwrap();
    eprintln!("the sharded cluster was ready {ready:.2}s after provision");
    let port = |name: &str| c.fidelity.members[name].port;
    let cfg0 = launch_port(&cell.join("launch.json"));
    let member_log = |name: &str| cell.join("members").join(name).join("engine.log");
    // Each member ran as its role in its replica set, from the rendered
    // mongod.conf; the routers were given the config servers' seed.
    assert_eq!(
        log_lines(&cell.join("engine.log"), "started "),
        ["replSetName=cfg clusterRole=configsvr configdb=-"]
    );
    for s in ["shard0", "shard1"] {
        assert_eq!(
            log_lines(&member_log(&format!("{s}-m0")), "started "),
            [format!("replSetName={s} clusterRole=shardsvr configdb=-")]
        );
        assert_eq!(c.fidelity.members[&format!("{s}-m0")].role, "shard_primary");
    }
    for r in ["router0", "router1"] {
        assert_eq!(
            log_lines(&member_log(r), "started "),
            [format!(
                "replSetName=- clusterRole=router configdb=cfg/127.0.0.1:{cfg0}"
            )]
        );
        assert_eq!(c.fidelity.members[r].role, "router");
    }
    // The config servers' set, and each shard's, initiated on its first
    // member as the shipped spec says.
    let initiated = |log: &Path| {
        log_lines(log, "command admin ")
            .into_iter()
            .filter(|l| l.contains("replSetInitiate"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        initiated(&cell.join("engine.log")),
        [format!(
            "{{\"replSetInitiate\": {{\"_id\": \"cfg\", \"configsvr\": true, \"members\": [\
             {{\"_id\": 0, \"host\": \"127.0.0.1:{cfg0}\", \"priority\": 2}}]}}}}"
        )]
    );
    for s in ["shard0", "shard1"] {
        let p = port(&format!("{s}-m0"));
        assert_eq!(
            initiated(&member_log(&format!("{s}-m0"))),
            [format!(
                "{{\"replSetInitiate\": {{\"_id\": \"{s}\", \"members\": [\
                 {{\"_id\": 0, \"host\": \"127.0.0.1:{p}\", \"priority\": 2}}]}}}}"
            )]
        );
    }
    // The first router was sent every shard, then the data's sharding;
    // every router was asked for its shards.
    let routed: Vec<String> = log_lines(&member_log("router0"), "command admin ")
        .into_iter()
        .filter(|l| {
            l.starts_with("{\"addShard\"")
                || l.contains("Sharding\"")
                || l.starts_with("{\"shardCollection\"")
        })
        .collect();
    assert_eq!(
        routed,
        [
            format!(
                "{{\"addShard\": \"shard0/127.0.0.1:{}\"}}",
                port("shard0-m0")
            ),
            format!(
                "{{\"addShard\": \"shard1/127.0.0.1:{}\"}}",
                port("shard1-m0")
            ),
            "{\"enableSharding\": \"ycsb\"}".to_string(),
            "{\"shardCollection\": \"ycsb.usertable\", \"key\": {\"_id\": \"hashed\"}}".to_string(),
        ]
    );
    for r in ["router0", "router1"] {
        assert!(
            log_lines(&member_log(r), "command admin ")
                .iter()
                .any(|l| l.starts_with("{\"listShards\"")),
            "{r}"
        );
    }
    // The client's connections went through both routers to the data's
    // shard, and the records digested through the first router are all
    // there.
    for r in ["router0", "router1"] {
        assert_eq!(
            log_lines(&member_log(r), "forwarding to ")
                .into_iter()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>(),
            [format!("127.0.0.1:{}", port("shard0-m0"))],
            "{r}"
        );
    }
    let digest = c.data_digest.clone().unwrap();
    assert!(digest.starts_with("300 documents"), "{digest}");
    let reads = c.phases.iter().find(|p| p.name == "reads").unwrap();
    assert!(reads.total_ops > 0 && reads.total_errors == 0, "{reads:?}");
    assert!(
        !c.fidelity
            .violations
            .iter()
            .any(|v| v.contains("router") || v.contains("shard")),
        "{:?}",
        c.fidelity.violations
    );
    place.assert_clean(&run);
}

#[test]
fn a_config_server_set_that_refuses_its_initiation_fails_the_cell_before_any_router_starts() {
    let place = Place::new();
    let home = place.path("home");
    legacy_sharded_project(&home);
    // The config servers' set initiated without `configsvr: true`: a
    // config server refuses it, as mongod does.
    let spec = home.join("engines/legacymongod.yaml");
    let text = support::files::read_text(&spec);
    let wrong = text.replace(r#""configsvr": true, "#, "");
    assert_ne!(text, wrong);
    std::fs::write(&spec, wrong).unwrap();
    let out = bc_in(
        &home,
        &place.path("results"),
        &place.path("work"),
        &place.path("state"),
    )
    .args(["run", "mongo-sharded"])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let run = run_id_of(
        err.lines()
            .find(|l| l.contains("cell(s), results in"))
            .unwrap_or_else(|| panic!("{err}")),
    );
    let cell = cell_dirs(&place.path("results").join(&run)).remove(0);
    let c: CellRecord = read_json(&cell.join("cell.json"));
    assert_eq!(c.status, CellStatus::Failed);
    let why = c.failure.unwrap_or_default();
    assert!(
        why.starts_with("initiating the replica set cfg: ")
            && why.contains("must have configsvr:true"),
        "{why}"
    );
    // The shards were started, the routers never were.
    assert!(cell.join("members/shard1-m0/engine.log").exists());
    assert!(!cell.join("members/router0").exists());
    place.assert_clean(&run);
}

/// The port a launch.json gave the engine.
fn launch_port(file: &Path) -> u16 {
    let v: serde_json::Value = read_json(file);
    v["port"].as_u64().unwrap() as u16
}

#[test]
fn a_secondary_killed_during_a_phase_invalidates_it_and_the_matrix_goes_on() {
    let place = Place::new();
    let (mut child, lines) = place.spawn(&["run", "tests/scenarios/run-replica-kill.yaml"]);
    let run = run_id_of(&wait_line(&mut child, &lines, &["run ", "2 cell(s)"], 60));
    wait_line(&mut child, &lines, &["[1/2", "reads t1"], 120);
    std::thread::sleep(Duration::from_secs(1));
    let pids = server_pids(&format!("{run}-01-m1"));
    assert!(!pids.is_empty());
    for pid in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let status = child.wait().unwrap();
    let text = lines.lock().unwrap().join("\n");
    assert!(status.code().is_some(), "{text}");
    let cells = place.cells(&run);
    let redis = &cells["redis"];
    let reads = redis.phases.iter().find(|p| p.name == "reads").unwrap();
    match &reads.status {
        PhaseStatus::Invalid { reason } => {
            assert!(reason.contains("secondary m1 died"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(redis.fidelity.members["m1"].engine_restarts, 1);
    assert!(
        redis
            .fidelity
            .violations
            .iter()
            .any(|v| v.starts_with("secondary m1:")),
        "{:?}",
        redis.fidelity.violations
    );
    // The matrix went on: the postgres replica set ran whole.
    let pg = &cells["postgres"];
    assert_eq!(pg.status, CellStatus::Finished, "{:?}", pg.failure);
    // Its reads ran whole, valid unless the host was busy.
    let pg_reads = pg.phases.iter().find(|p| p.name == "reads").unwrap();
    assert!(pg_reads.total_ops > 0, "{pg_reads:?}");
    assert!(
        valid_but_for_a_busy_host(&pg_reads.status),
        "{:?}",
        pg_reads.status
    );
    assert!(pg.fidelity.members.values().all(|m| m.engine_restarts == 0));
    for pid in pids {
        assert!(!pid_alive(pid), "{pid} still alive");
    }
    place.assert_clean(&run);
}

#[test]
fn after_sigkill_while_the_secondaries_join_cleanup_leaves_nothing() {
    let place = Place::new();
    let (mut child, lines) = place.spawn(&[
        "run",
        "tests/scenarios/run-replica-sets.yaml",
        "--only",
        "postgres",
    ]);
    let run = run_id_of(&wait_line(&mut child, &lines, &["run ", "1 cell(s)"], 60));
    wait_line(&mut child, &lines, &["[1/1", "] replicas"], 120);
    // Killed while a standby copies the primary or starts.
    std::thread::sleep(Duration::from_millis(300));
    let mut pids = server_pids(&format!("{run}-01"));
    for m in ["m1", "m2"] {
        pids.extend(server_pids(&format!("{run}-01-{m}")));
    }
    assert!(!pids.is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    let out = place.command(&["cleanup"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for pid in pids {
        assert!(!pid_alive(pid), "{pid} still alive after cleanup");
    }
    place.assert_clean(&run);
}

/// Runs run-replica-sets.yaml for `engine` with `sets` (`--set` values):
/// the run finished, its cell too, and every secondary holds the
/// primary's records and caught up. The run id and the cell's record.
fn replica_set_with(place: &Place, engine: &str, sets: &[&str]) -> (String, CellRecord) {
    let mut args = vec![
        "run",
        "tests/scenarios/run-replica-sets.yaml",
        "--only",
        engine,
    ];
    args.extend(sets.iter().flat_map(|s| ["--set", s]));
    let (mut child, lines) = place.spawn(&args);
    let run = run_id_of(&wait_line(&mut child, &lines, &["run ", "1 cell(s)"], 60));
    let status = child.wait().unwrap();
    assert!(status.success(), "{}", lines.lock().unwrap().join("\n"));
    let c = place.cells(&run).remove(engine).unwrap();
    assert_eq!(c.status, CellStatus::Finished, "{engine}: {:?}", c.failure);
    let primary = c.data_digest.clone().expect("the primary's digest");
    assert_eq!(c.fidelity.members.len(), 2, "{engine}");
    for (name, m) in &c.fidelity.members {
        assert_eq!(m.data_digest.as_ref(), Some(&primary), "{engine} {name}");
        assert!(m.in_sync_s.is_some(), "{engine} {name}");
    }
    (run, c)
}

#[test]
fn postgres_and_redis_replica_sets_behind_a_network_form_and_sync_through_its_links() {
    let place = Place::new();
    for engine in ["postgres", "redis"] {
        // The relay per link by name: `auto` is the kernel's shared
        // namespace where netem is.
        let sets = ["network.delay=500us", "network.emulation=proxy"];
        let (run, c) = replica_set_with(&place, engine, &sets);
        let net = c.fidelity.network.as_ref().expect("the network's record");
        let links = net.links.as_ref().expect("the replication links' relays");
        // Each secondary copied the records through its link.
        assert!(links.connections >= 2, "{engine}: {links:?}");
        assert!(links.bytes > 2000 * 200, "{engine}: {links:?}");
        assert!(net.relay.as_ref().is_some_and(|r| r.bytes > 0), "{engine}");
        place.assert_clean(&run);
    }
}

#[test]
fn postgres_and_redis_replica_sets_under_a_kernel_rate_share_the_cells_namespace_and_sync() {
    let place = Place::new();
    // A docker replica set too: its members' containers join the holder
    // of the cell's namespace.
    for (engine, backend) in [
        ("postgres", "backend=cgroup"),
        ("redis", "backend=cgroup"),
        ("redis", "backend=docker"),
    ] {
        let sets = [
            backend,
            "network.delay=0us",
            "network.rate=100mbit",
            "network.emulation=kernel",
        ];
        let (run, c) = replica_set_with(&place, engine, &sets);
        assert_eq!(c.image.is_some(), backend.ends_with("docker"), "{engine}");
        let net = c.fidelity.network.as_ref().expect("the network's record");
        assert_eq!(net.asked.emulation.name(), "kernel");
        assert!(net.links.is_none(), "no relay per link: {net:?}");
        assert!(net.relay.is_none(), "no relay for the client: {net:?}");
        let ns = net.namespace.as_ref().expect("the namespace's record");
        assert!(
            ns.qdiscs.iter().any(|q| q.starts_with("qdisc tbf ")),
            "{engine}: {:?}",
            ns.qdiscs
        );
        assert_eq!(ns.engine_inode, ns.inode, "{engine}: the primary inside");
        // Each member was reached over a bridge of its own (readiness,
        // joining, lag), and every member's process was inside the
        // namespace, or a violation would say so.
        let bridge = ns.bridge.as_ref().expect("the bridges' traffic");
        assert!(bridge.connections >= 3, "{engine}: {bridge:?}");
        assert!(
            !c.fidelity.violations.iter().any(|v| v.contains("network")),
            "{engine}: {:?}",
            c.fidelity.violations
        );
        place.assert_clean(&run);
    }
}
