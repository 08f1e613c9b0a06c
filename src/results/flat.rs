//! A run flattened to one row per cell x phase x operation kind: the shape
//! of the CSV and JSON exports, of the history table, and what `compare`
//! matches on.

use crate::model::CellStatus;
use crate::results::layout::{CellData, RunData, phase_stem, sample_in_phase};
use crate::results::model::{CellRecord, Headline, Percentiles, PhaseResult, PhaseStatus};
use crate::results::order::natural_cmp;
use serde::{Deserialize, Serialize};

/// Operation kind of the row of a phase that recorded no operation kinds
/// (it failed before any operation finished).
pub(crate) const NO_OP: &str = "-";

/// How a phase counts in reports: only `Ok` phases are results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    #[default]
    Ok,
    Failed,
    Invalid,
    Oom,
}

impl Verdict {
    /// The lower-case word used in every export.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Failed => "failed",
            Verdict::Invalid => "invalid",
            Verdict::Oom => "oom",
        }
    }
    /// Parse the word written by `as_str`.
    pub fn parse(s: &str) -> Option<Verdict> {
        match s {
            "ok" => Some(Verdict::Ok),
            "failed" => Some(Verdict::Failed),
            "invalid" => Some(Verdict::Invalid),
            "oom" => Some(Verdict::Oom),
            _ => None,
        }
    }
}

/// The verdict and reason of the cell's phase at `index`, with the cell's
/// fidelity taken into account: a phase that passed its own checks is
/// invalid when its io-bound claim did not hold, or when the cell's
/// fidelity record has violations of its own.
pub fn phase_verdict(cell: &CellRecord, index: usize) -> (Verdict, String) {
    let phase = &cell.phases[index];
    let io_violation = cell
        .fidelity
        .phase_io
        .get(&phase_stem(index, &phase.name, phase.threads))
        .and_then(|io| io.io_bound_violation.clone());
    match &phase.status {
        PhaseStatus::Failed { reason } => (Verdict::Failed, reason.clone()),
        PhaseStatus::Invalid { reason } => (Verdict::Invalid, reason.clone()),
        PhaseStatus::Oom { reason } => (Verdict::Oom, reason.clone()),
        PhaseStatus::Ok => {
            if let Some(v) = io_violation {
                return (Verdict::Invalid, v);
            }
            let cell_wide = cell_violations(cell);
            if cell_wide.is_empty() {
                (Verdict::Ok, String::new())
            } else {
                (
                    Verdict::Invalid,
                    format!("fidelity: {}", cell_wide.join("; ")),
                )
            }
        }
    }
}

/// The fidelity violations that concern the whole cell: all but those of
/// one phase (its io-bound claim, a shared CPU, a cache over the cap, a
/// link over its rate),
/// which void only that phase (its own status says so): a phase measured
/// on quiet CPUs stays a result when another phase of the cell was not.
pub(crate) fn cell_violations(cell: &CellRecord) -> Vec<String> {
    let per_phase: Vec<&String> = cell
        .fidelity
        .phase_io
        .values()
        .flat_map(|io| io.violations())
        .collect();
    cell.fidelity
        .violations
        .iter()
        .filter(|v| !per_phase.iter().any(|p| v.contains(p.as_str())))
        .cloned()
        .collect()
}

/// One row: a cell, one of its phases, one operation kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlatRow {
    pub run_id: String,
    /// RFC 3339 start of the run.
    pub run_started_at: String,
    pub scenario: String,
    pub cell_key: String,
    /// Shared by the repetitions of one configuration.
    pub cell_group: String,
    /// The cell's label without its repetition.
    pub group_label: String,
    pub engine: String,
    pub version: String,
    pub environment: String,
    pub backend: String,
    /// The phase's client threads.
    pub threads: u32,
    pub repetition: u32,
    /// 0-based position of the phase in the cell.
    pub phase_index: u32,
    pub phase: String,
    pub workload: String,
    pub status: Verdict,
    /// Why the phase is not a result; empty when `status` is ok.
    pub reason: String,
    pub op: String,
    pub count: u64,
    pub errors: u64,
    /// This operation kind's operations per second.
    pub throughput: f64,
    /// Latency in microseconds; `None` where the tool did not report it.
    pub lat_min_us: Option<f64>,
    pub lat_mean_us: Option<f64>,
    pub lat_p50_us: Option<f64>,
    pub lat_p95_us: Option<f64>,
    pub lat_p99_us: Option<f64>,
    pub lat_p999_us: Option<f64>,
    pub lat_max_us: Option<f64>,
    /// The whole phase's operations per second (every kind).
    pub phase_throughput: f64,
    pub duration_s: f64,
    pub data_size_bytes: Option<u64>,
    /// The memory cap the kernel reported during this phase (the load's
    /// own cap for the load, the settled cap for the phases after settle).
    pub memory_limit_bytes: Option<u64>,
    pub fidelity_valid: bool,
    /// The whole phase's rate as the external tool printed it (YCSB
    /// counts failed operations in it); `None` for the built-in generator.
    pub tool_phase_throughput: Option<f64>,
    /// Operations of the whole phase (every kind): the basis of the
    /// per-operation costs.
    #[serde(default)]
    pub phase_ops: u64,
    /// Major page faults of the server over the phase.
    #[serde(default)]
    pub major_faults: Option<u64>,
    /// Bytes the server read from the device over the phase.
    #[serde(default)]
    pub read_bytes: Option<u64>,
    /// `major_faults / phase_ops`.
    #[serde(default)]
    pub major_faults_per_op: Option<f64>,
    /// `read_bytes / phase_ops`.
    #[serde(default)]
    pub read_bytes_per_op: Option<f64>,
    /// `major_faults / duration_s`.
    #[serde(default)]
    pub major_faults_per_s: Option<f64>,
    /// `read_bytes / duration_s`.
    #[serde(default)]
    pub read_bytes_per_s: Option<f64>,
    /// The hardware class of the machine the cell ran on (its node's, or
    /// the run's host's): rows compare only within one class.
    #[serde(default)]
    pub hardware_class: String,
    /// The phase's headline figure (TPC-C's `tpmC`) when its workload has
    /// one. Not in the CSV nor the history: `None` in rows read back from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<Headline>,
    /// The environment without a settle sweep's cap tag
    /// ([`CellRecord::sweep_environment`]). Not exported, not in the
    /// history: empty in rows read back from it.
    #[serde(skip)]
    pub sweep_environment: String,
}

/// Column names of `FlatRow`'s first fields, in field order: the history's
/// columns, and the start of the CSV header.
pub(crate) const COLUMNS: [&str; 35] = [
    "run_id",
    "run_started_at",
    "scenario",
    "cell_key",
    "cell_group",
    "group_label",
    "engine",
    "version",
    "environment",
    "backend",
    "threads",
    "repetition",
    "phase_index",
    "phase",
    "workload",
    "status",
    "reason",
    "op",
    "count",
    "errors",
    "throughput",
    "lat_min_us",
    "lat_mean_us",
    "lat_p50_us",
    "lat_p95_us",
    "lat_p99_us",
    "lat_p999_us",
    "lat_max_us",
    "phase_throughput",
    "duration_s",
    "data_size_bytes",
    "memory_limit_bytes",
    "fidelity_valid",
    "tool_phase_throughput",
    "hardware_class",
];

/// Column names of `FlatRow`'s cost fields, in field order: the CSV
/// header after `COLUMNS`.
pub(crate) const COST_COLUMNS: [&str; 7] = [
    "phase_ops",
    "major_faults",
    "read_bytes",
    "major_faults_per_op",
    "read_bytes_per_op",
    "major_faults_per_s",
    "read_bytes_per_s",
];

impl FlatRow {
    /// The cost fields as text, in `COST_COLUMNS` order; `None` is empty.
    pub(crate) fn cost_values(&self) -> [String; 7] {
        let int = |v: Option<u64>| v.map(|b| b.to_string()).unwrap_or_default();
        let float = |v: Option<f64>| v.map(|b| b.to_string()).unwrap_or_default();
        [
            self.phase_ops.to_string(),
            int(self.major_faults),
            int(self.read_bytes),
            float(self.major_faults_per_op),
            float(self.read_bytes_per_op),
            float(self.major_faults_per_s),
            float(self.read_bytes_per_s),
        ]
    }

    /// The row's values as text, in `COLUMNS` order; `None` is empty.
    pub fn values(&self) -> [String; 35] {
        let opt = |v: Option<u64>| v.map(|b| b.to_string()).unwrap_or_default();
        let optf = |v: Option<f64>| v.map(|b| b.to_string()).unwrap_or_default();
        [
            self.run_id.clone(),
            self.run_started_at.clone(),
            self.scenario.clone(),
            self.cell_key.clone(),
            self.cell_group.clone(),
            self.group_label.clone(),
            self.engine.clone(),
            self.version.clone(),
            self.environment.clone(),
            self.backend.clone(),
            self.threads.to_string(),
            self.repetition.to_string(),
            self.phase_index.to_string(),
            self.phase.clone(),
            self.workload.clone(),
            self.status.as_str().to_string(),
            self.reason.clone(),
            self.op.clone(),
            self.count.to_string(),
            self.errors.to_string(),
            self.throughput.to_string(),
            optf(self.lat_min_us),
            optf(self.lat_mean_us),
            optf(self.lat_p50_us),
            optf(self.lat_p95_us),
            optf(self.lat_p99_us),
            optf(self.lat_p999_us),
            optf(self.lat_max_us),
            self.phase_throughput.to_string(),
            self.duration_s.to_string(),
            opt(self.data_size_bytes),
            opt(self.memory_limit_bytes),
            self.fidelity_valid.to_string(),
            optf(self.tool_phase_throughput),
            self.hardware_class.clone(),
        ]
    }
}

/// Every row of a run, in cell, phase and operation-kind order. A cell
/// that failed without a failed phase to show for it (it never got to
/// its phases, or failed after them) gets one row of its own, phase `-`.
pub fn flatten(run: &RunData) -> Vec<FlatRow> {
    cells_in_order(run)
        .into_iter()
        .flat_map(|cell| cell_rows(run, cell))
        .collect()
}

/// The rows of one cell: its own failure, then each phase's.
fn cell_rows(run: &RunData, cell: &CellData) -> Vec<FlatRow> {
    let rec = &cell.record;
    let head = cell_head(run, cell);
    let verdicts: Vec<(Verdict, String)> = (0..rec.phases.len())
        .map(|i| phase_verdict(rec, i))
        .collect();
    let mut rows = Vec::new();
    if rec.status == CellStatus::Failed && verdicts.iter().all(|(v, _)| *v == Verdict::Ok) {
        rows.push(FlatRow {
            status: Verdict::Failed,
            reason: rec
                .failure
                .clone()
                .unwrap_or_else(|| "the cell failed; no reason recorded".into()),
            ..head.clone()
        });
    }
    for (i, (status, reason)) in verdicts.into_iter().enumerate() {
        let phase = phase_head(&head, cell, i, status, reason);
        rows.extend(op_rows(&phase, &rec.phases[i]));
    }
    rows
}

/// What every row of a cell shares; its phase and operation are `-`.
fn cell_head(run: &RunData, cell: &CellData) -> FlatRow {
    let rec = &cell.record;
    FlatRow {
        run_id: run.run.run_id.clone(),
        run_started_at: run.run.started_at.clone(),
        scenario: run.run.scenario.clone(),
        cell_key: rec.key.clone(),
        cell_group: cell_group(rec),
        group_label: group_label(rec),
        engine: rec.engine.clone(),
        version: rec.version.clone(),
        environment: rec.environment.clone(),
        sweep_environment: rec.sweep_environment().to_string(),
        backend: rec.backend.clone(),
        threads: rec.threads,
        repetition: rec.repetition,
        phase: NO_OP.to_string(),
        op: NO_OP.to_string(),
        data_size_bytes: rec.data_size_bytes,
        memory_limit_bytes: memory_cap(cell),
        fidelity_valid: cell_violations(rec).is_empty(),
        hardware_class: match &rec.node {
            Some(n) => n.host.class(),
            None => run.run.host.class(),
        },
        ..FlatRow::default()
    }
}

/// What every row of the cell's phase at `i` shares: its verdict, totals
/// and what it cost the server.
fn phase_head(
    head: &FlatRow,
    cell: &CellData,
    i: usize,
    status: Verdict,
    reason: String,
) -> FlatRow {
    let phase = &cell.record.phases[i];
    let cost = phase_cost(cell, i);
    FlatRow {
        memory_limit_bytes: cost.memory_limit_bytes.or(head.memory_limit_bytes),
        phase_ops: phase.total_ops,
        major_faults: cost.major_faults,
        read_bytes: cost.read_bytes,
        major_faults_per_op: per(cost.major_faults, phase.total_ops as f64),
        read_bytes_per_op: per(cost.read_bytes, phase.total_ops as f64),
        major_faults_per_s: per(cost.major_faults, phase.duration_s),
        read_bytes_per_s: per(cost.read_bytes, phase.duration_s),
        threads: phase.threads,
        phase_index: i as u32,
        phase: phase.name.clone(),
        workload: phase.workload.clone(),
        status,
        reason,
        errors: phase.total_errors,
        phase_throughput: phase.throughput,
        tool_phase_throughput: phase.tool_ops_per_sec,
        // A failed phase's figure is not a result (a 7 ms TPC-C phase
        // has a tpmC of sorts).
        headline: phase.headline.clone().filter(|_| phase.status.is_ok()),
        duration_s: phase.duration_s,
        ..head.clone()
    }
}

/// One row per operation kind of the phase; the phase's own row when it
/// recorded none.
fn op_rows(phase_row: &FlatRow, phase: &PhaseResult) -> Vec<FlatRow> {
    if phase.ops.is_empty() {
        return vec![phase_row.clone()];
    }
    phase
        .ops
        .iter()
        .map(|(op, stats)| {
            let Percentiles {
                min,
                mean,
                p50,
                p95,
                p99,
                p999,
                max,
            } = stats.latency_us.clone();
            FlatRow {
                op: op.clone(),
                count: stats.count,
                errors: stats.errors,
                throughput: stats.throughput,
                lat_min_us: min,
                lat_mean_us: mean,
                lat_p50_us: p50,
                lat_p95_us: p95,
                lat_p99_us: p99,
                lat_p999_us: p999,
                lat_max_us: max,
                ..phase_row.clone()
            }
        })
        .collect()
}

/// `amount / basis`, when both are known and the basis is not zero.
fn per(amount: Option<u64>, basis: f64) -> Option<f64> {
    amount.filter(|_| basis > 0.0).map(|a| a as f64 / basis)
}

/// The cells of a run in the order people read them: engine, version by
/// version, environment by its numbers, settle cap by size, threads,
/// repetition (not plan order, not text order).
pub(crate) fn cells_in_order(run: &RunData) -> Vec<&CellData> {
    let mut cells: Vec<&CellData> = run.cells.iter().collect();
    cells.sort_by(|a, b| {
        let (a, b) = (&a.record, &b.record);
        natural_cmp(&a.engine, &b.engine)
            .then_with(|| natural_cmp(&a.version, &b.version))
            .then_with(|| natural_cmp(a.sweep_environment(), b.sweep_environment()))
            .then_with(|| a.memory_limit_bytes.cmp(&b.memory_limit_bytes))
            .then_with(|| natural_cmp(&a.environment, &b.environment))
            .then_with(|| natural_cmp(&a.backend, &b.backend))
            .then_with(|| a.threads.cmp(&b.threads))
            .then_with(|| a.repetition.cmp(&b.repetition))
    });
    cells
}

/// What one phase cost the server, as the kernel counted it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PhaseCost {
    /// The memory cap during the phase.
    pub memory_limit_bytes: Option<u64>,
    pub major_faults: Option<u64>,
    pub read_bytes: Option<u64>,
}

/// The cost of the cell's phase at `index`: the run's own counters around
/// the phase (`fidelity.phase_io`), else the server's samples labelled
/// with the phase (older runs), else nothing.
pub(crate) fn phase_cost(cell: &CellData, index: usize) -> PhaseCost {
    let usable = |b: &u64| *b > 0 && *b < UNLIMITED_CAP;
    let phase = &cell.record.phases[index];
    let stem = phase_stem(index, &phase.name, phase.threads);
    if let Some(io) = cell.record.fidelity.phase_io.get(&stem) {
        return PhaseCost {
            memory_limit_bytes: Some(io.memory_limit_bytes).filter(usable),
            major_faults: Some(io.major_faults),
            read_bytes: Some(io.io_read_bytes),
        };
    }
    let inside: Vec<_> = cell
        .samples
        .iter()
        .filter(|s| s.cgroup.is_empty() || s.cgroup == "server")
        .filter(|s| sample_in_phase(&s.phase, &phase.name, phase.threads))
        .collect();
    let (Some(first), Some(last)) = (inside.first(), inside.last()) else {
        return PhaseCost::default();
    };
    PhaseCost {
        memory_limit_bytes: inside
            .iter()
            .map(|s| s.memory_limit_bytes)
            .filter(usable)
            .min(),
        major_faults: Some(last.major_faults.saturating_sub(first.major_faults)),
        read_bytes: Some(last.io_read_bytes.saturating_sub(first.io_read_bytes)),
    }
}

/// What a cell ran on apart from its engine's version (engine,
/// environment, backend, threads, limits, knobs): cells of two versions
/// with the same setup are what `compare --by-version` pairs.
pub(crate) fn setup_group(rec: &CellRecord) -> String {
    let canonical = serde_json::json!({
        "engine": rec.engine,
        "environment": rec.environment,
        "backend": rec.backend,
        "threads": rec.threads,
        "limits": rec.limits,
        "knobs": rec.knobs,
    });
    format!("s{:016x}", fnv1a64(canonical.to_string().as_bytes()))
}

/// The cell's group: `CellRecord::group` when the run recorded one, else
/// a stable hash of what distinguishes one configuration from another
/// (everything but the repetition index).
pub(crate) fn cell_group(rec: &CellRecord) -> String {
    if !rec.group.is_empty() {
        return rec.group.clone();
    }
    let canonical = serde_json::json!({
        "engine": rec.engine,
        "version": rec.version,
        "environment": rec.environment,
        "backend": rec.backend,
        "threads": rec.threads,
        "limits": rec.limits,
        "knobs": rec.knobs,
    });
    format!("g{:016x}", fnv1a64(canonical.to_string().as_bytes()))
}

/// The cell's label without its repetition part (`rep 2`, `r0`), with
/// either ` / ` or `/` between the parts.
pub(crate) fn group_label(rec: &CellRecord) -> String {
    let sep = if rec.label.contains(" / ") {
        " / "
    } else {
        "/"
    };
    let is_rep = |p: &str| {
        let p = p.trim();
        p.strip_prefix("rep ")
            .or_else(|| p.strip_prefix('r'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let parts: Vec<&str> = rec.label.split(sep).filter(|p| !is_rep(p)).collect();
    if parts.is_empty() || rec.label.is_empty() {
        format!(
            "{}@{} / {} / {} threads",
            rec.engine, rec.version, rec.environment, rec.threads
        )
    } else {
        parts.join(sep)
    }
}

/// Caps at or above this are "unlimited" (v1 reads back a page-rounded
/// i64::MAX).
pub(crate) const UNLIMITED_CAP: u64 = 1 << 60;

/// The memory cap the measured phases ran under (the cell's settled cap;
/// a phase's own cap is `phase_cost`): the one the run recorded,
/// else the smallest cap the kernel reported in the server's samples (a
/// settle step only ever shrinks it), else the planned `memory` limit.
pub(crate) fn memory_cap(cell: &CellData) -> Option<u64> {
    let usable = |b: &u64| *b > 0 && *b < UNLIMITED_CAP;
    cell.record
        .memory_limit_bytes
        .filter(usable)
        .or_else(|| {
            cell.samples
                .iter()
                .filter(|s| s.cgroup.is_empty() || s.cgroup == "server")
                .map(|s| s.memory_limit_bytes)
                .filter(usable)
                .min()
        })
        .or_else(|| {
            cell.record
                .limits
                .get("memory")
                .and_then(|m| m.parse::<crate::units::Bytes>().ok())
                .map(|b| b.as_u64())
        })
}

/// FNV-1a, 64 bits: stable across Rust releases (unlike `DefaultHasher`),
/// which matters because group keys are stored in the history.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::{FidelityRecord, PhaseResult};

    fn cell(rep: u32) -> CellRecord {
        CellRecord {
            key: format!("k{rep}"),
            label: format!("redis@7.0 / small / a / 4 threads / rep {rep}"),
            engine: "redis".into(),
            version: "7.0".into(),
            environment: "small".into(),
            threads: 4,
            repetition: rep,
            ..Default::default()
        }
    }

    #[test]
    fn a_settle_sweep_cell_names_its_environment_from_its_recorded_cap() {
        use crate::model::settle::{Settle, SettleMemory};
        let swept = |environment: &str, memory: Option<SettleMemory>| CellRecord {
            environment: environment.into(),
            settle: Some(Settle {
                memory,
                drop_caches: true,
            }),
            ..cell(1)
        };
        let quarter = Some(SettleMemory::OfData(0.25));
        assert_eq!(
            swept("ram-sweep-mem25pct", quarter).sweep_environment(),
            "ram-sweep"
        );
        // The recorded cap decides, not what the name looks like.
        assert_eq!(
            swept("small-mem64MiB", quarter).sweep_environment(),
            "small-mem64MiB"
        );
        assert_eq!(
            swept("small-mem64MiB", None).sweep_environment(),
            "small-mem64MiB"
        );
        // A record from before the settle step was recorded: the tag is
        // read out of the name.
        let old = CellRecord {
            environment: "ram-sweep-mem25pct".into(),
            ..cell(1)
        };
        assert_eq!(old.sweep_environment(), "ram-sweep");
    }

    #[test]
    fn repetitions_share_a_group_and_a_label() {
        assert_eq!(cell_group(&cell(1)), cell_group(&cell(2)));
        assert_eq!(group_label(&cell(2)), "redis@7.0 / small / a / 4 threads");
        let mut short = cell(1);
        short.label = "postgres@15/ram-50/r0".into();
        assert_eq!(group_label(&short), "postgres@15/ram-50");
        let mut other = cell(1);
        other.threads = 8;
        assert_ne!(cell_group(&cell(1)), cell_group(&other));
    }

    #[test]
    fn a_cell_that_failed_before_its_phases_gets_a_row_with_its_reason() {
        let mut c = cell(1);
        c.status = CellStatus::Failed;
        c.failure = Some("engine never became ready".into());
        let run = RunData {
            dir: std::path::PathBuf::from("/r"),
            run: Default::default(),
            cells: vec![CellData {
                record: c,
                samples: vec![],
            }],
            unfinished: vec![],
            claims: None,
        };
        let rows = flatten(&run);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].status, Verdict::Failed);
        assert_eq!(rows[0].phase, NO_OP);
        assert_eq!(rows[0].reason, "engine never became ready");
    }

    #[test]
    fn a_failed_phase_has_no_headline_figure_in_its_row_and_an_ok_one_keeps_it() {
        let phase = |status: PhaseStatus| PhaseResult {
            name: "tpcc".into(),
            workload: "tpcc".into(),
            threads: 1,
            duration_s: 0.007,
            total_ops: 1,
            total_errors: 1,
            throughput: 1.0,
            tool_ops_per_sec: None,
            headline: Some(Headline::tpmc(8571.4)),
            mongo_tpcc: None,
            tool_env: None,
            ops: Default::default(),
            series: vec![],
            status,
            raw_outputs: vec![],
        };
        let mut c = cell(1);
        c.status = CellStatus::Finished;
        c.phases = vec![
            phase(PhaseStatus::Failed {
                reason: "connection refused".into(),
            }),
            phase(PhaseStatus::Ok),
        ];
        let run = RunData {
            dir: std::path::PathBuf::from("/r"),
            run: Default::default(),
            cells: vec![CellData {
                record: c,
                samples: vec![],
            }],
            unfinished: vec![],
            claims: None,
        };
        let rows = flatten(&run);
        let by_index = |i: u32| rows.iter().find(|r| r.phase_index == i).unwrap();
        assert_eq!(by_index(0).headline, None);
        assert_eq!(by_index(1).headline, Some(Headline::tpmc(8571.4)));
    }

    #[test]
    fn an_ok_phase_in_a_cell_with_fidelity_violations_is_invalid() {
        let mut c = cell(1);
        c.fidelity = FidelityRecord {
            violations: vec!["hog lost its lock".into()],
            ..Default::default()
        };
        c.phases = vec![PhaseResult {
            name: "run".into(),
            workload: "ycsb:a".into(),
            threads: 4,
            duration_s: 1.0,
            total_ops: 1,
            total_errors: 0,
            throughput: 1.0,
            tool_ops_per_sec: None,
            headline: None,
            mongo_tpcc: None,
            ops: Default::default(),
            series: vec![],
            status: PhaseStatus::Ok,
            raw_outputs: vec![],
            tool_env: None,
        }];
        let (v, reason) = phase_verdict(&c, 0);
        assert_eq!(v, Verdict::Invalid);
        assert!(reason.contains("hog lost its lock"));
    }

    #[test]
    fn a_shared_cpu_in_one_phase_voids_that_phase_and_not_the_others() {
        use crate::results::model::PhaseIo;
        let mut c = cell(1);
        let shared = "something outside the server's cgroup used 44% of the server's CPUs (1)";
        let phase = |name: &str, status: PhaseStatus| PhaseResult {
            name: name.into(),
            workload: "ycsb:a".into(),
            threads: 4,
            duration_s: 1.0,
            total_ops: 1,
            total_errors: 0,
            throughput: 1.0,
            tool_ops_per_sec: None,
            headline: None,
            mongo_tpcc: None,
            ops: Default::default(),
            series: vec![],
            status,
            raw_outputs: vec![],
            tool_env: None,
        };
        c.phases = vec![
            phase("load", PhaseStatus::Ok),
            phase(
                "reads",
                PhaseStatus::Invalid {
                    reason: shared.into(),
                },
            ),
        ];
        let stem = phase_stem(1, "reads", 4);
        c.fidelity.phase_io.insert(
            stem.clone(),
            PhaseIo {
                contention_violation: Some(shared.into()),
                ..Default::default()
            },
        );
        c.fidelity.violations = vec![format!("{stem}: {shared}")];
        assert_eq!(phase_verdict(&c, 0), (Verdict::Ok, String::new()));
        let (v, reason) = phase_verdict(&c, 1);
        assert_eq!(v, Verdict::Invalid);
        assert!(reason.contains("44%"), "{reason}");
    }
}
