//! Rows made up for the sections' unit tests.

use super::configs::{Config, configs, observations};
use super::series::SeriesMap;
use crate::results::flat::{FlatRow, Verdict};

/// An ok row of run `run1`, environment `small`, operation `READ`:
/// `engine@1.0` in cell `cell` (its group is the engine and thread count,
/// so that cells differing only in name are repetitions), phase `phase`
/// at `threads` threads and `tput` ops/s, 1 ms at p50.
pub(super) fn row(engine: &str, cell: &str, phase: &str, threads: u32, tput: f64) -> FlatRow {
    FlatRow {
        run_id: "run1".into(),
        run_started_at: "2026-11-29T02:00:00Z".into(),
        scenario: "s".into(),
        cell_key: cell.into(),
        cell_group: format!("{engine}-t{threads}"),
        group_label: format!("{engine}@1.0 / {threads} threads"),
        engine: engine.into(),
        version: "1.0".into(),
        environment: "small".into(),
        sweep_environment: "small".into(),
        backend: "cgroup".into(),
        threads,
        repetition: 1,
        phase: phase.into(),
        workload: "ycsb:a".into(),
        status: Verdict::Ok,
        op: "READ".into(),
        count: 1000,
        throughput: tput,
        lat_p50_us: Some(1000.0),
        phase_throughput: tput,
        duration_s: 10.0,
        phase_ops: (tput * 10.0) as u64,
        fidelity_valid: true,
        ..FlatRow::default()
    }
}

/// The same row in run `run_id`, started at `started`.
pub(super) fn in_run(r: FlatRow, run_id: &str, started: &str) -> FlatRow {
    FlatRow {
        run_id: run_id.into(),
        run_started_at: started.into(),
        ..r
    }
}

/// The configurations of `rows`, with their series from `rows` alone.
pub(super) fn configs_of(rows: &[FlatRow]) -> Vec<Config> {
    configs(&observations(rows), &SeriesMap::new(rows, &[]))
}

/// The one phase family the tests' rows run: `run`.
pub(super) fn run_phase() -> Vec<String> {
    vec!["run".to_string()]
}
