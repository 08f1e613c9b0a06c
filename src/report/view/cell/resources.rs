//! What each phase of a cell cost the server, from the run's own
//! per-phase counters, else from the server's 1 s samples within the
//! phase's window on the cell's clock. Pure statistics over the records.

use crate::report::ReportInput;
use crate::results::flat::phase_cost;
use crate::results::layout::{CellData, sample_in_phase};
use crate::results::model::ResourceSample;
use std::collections::BTreeMap;

/// Per cell phase: major faults and bytes read, peak memory, the cap.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct PhaseRes {
    pub(super) major_faults: u64,
    pub(super) read_bytes: u64,
    pub(super) peak_memory: u64,
    pub(super) memory_limit: Option<u64>,
}

/// Run id, cell key, phase index.
pub(super) type ResKey = (String, String, u32);

/// A sample's time on the cell's clock, in seconds.
pub(super) fn secs(s: &ResourceSample) -> f64 {
    s.t_ms as f64 / 1000.0
}

/// The server's samples of a cell (older records have no cgroup label).
pub(super) fn server_samples(cell: &CellData) -> Vec<&ResourceSample> {
    cell.samples
        .iter()
        .filter(|s| s.cgroup.is_empty() || s.cgroup == "server")
        .collect()
}

/// Where each phase sits on the cell's clock, in seconds: from the first
/// sample labelled with the phase for its measured duration, else right
/// after the previous phase.
pub(super) fn phase_windows(cell: &CellData) -> Vec<(f64, f64)> {
    let samples = server_samples(cell);
    let mut t = 0.0;
    cell.record
        .phases
        .iter()
        .map(|p| {
            let start = samples
                .iter()
                .find(|s| sample_in_phase(&s.phase, &p.name, p.threads))
                .map(|s| secs(s))
                .unwrap_or(t);
            t = start + p.duration_s;
            (start, t)
        })
        .collect()
}

/// The samples within half a second of `from..=to`: the growth of their
/// counters and the peak of their memory.
fn window_stats(samples: &[&ResourceSample], from: f64, to: f64) -> PhaseRes {
    let inside: Vec<&ResourceSample> = samples
        .iter()
        .copied()
        .filter(|s| {
            let t = secs(s);
            t >= from - 0.5 && t <= to + 0.5
        })
        .collect();
    let (Some(first), Some(last)) = (inside.first(), inside.last()) else {
        return PhaseRes::default();
    };
    PhaseRes {
        major_faults: last.major_faults.saturating_sub(first.major_faults),
        read_bytes: last.io_read_bytes.saturating_sub(first.io_read_bytes),
        peak_memory: inside.iter().map(|s| s.memory_bytes).max().unwrap_or(0),
        memory_limit: None,
    }
}

/// What every phase of every cell of the report cost.
pub(super) fn phase_resources(input: &ReportInput) -> BTreeMap<ResKey, PhaseRes> {
    let mut out = BTreeMap::new();
    for run in &input.runs {
        for cell in &run.cells {
            let samples = server_samples(cell);
            for (i, (from, to)) in phase_windows(cell).into_iter().enumerate() {
                let mut r = window_stats(&samples, from, to);
                // The run's own per-phase counters (the same the flat rows
                // carry) beat the 1 s samples.
                let cost = phase_cost(cell, i);
                r.major_faults = cost.major_faults.unwrap_or(r.major_faults);
                r.read_bytes = cost.read_bytes.unwrap_or(r.read_bytes);
                r.memory_limit = cost.memory_limit_bytes;
                out.insert(
                    (run.run.run_id.clone(), cell.record.key.clone(), i as u32),
                    r,
                );
            }
        }
    }
    out
}

/// Bytes read from the device per second between consecutive samples, at
/// the later sample's time.
pub(super) fn read_rates(samples: &[&ResourceSample]) -> Vec<(f64, f64)> {
    samples
        .windows(2)
        .map(|w| {
            let dt = (w[1].t_ms.saturating_sub(w[0].t_ms) as f64 / 1000.0).max(1e-3);
            let rate = w[1].io_read_bytes.saturating_sub(w[0].io_read_bytes) as f64 / dt;
            (secs(w[1]), rate)
        })
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::results::model::{CellRecord, PhaseResult, PhaseStatus};

    pub(in super::super) fn sample(
        t_ms: u64,
        phase: &str,
        faults: u64,
        read: u64,
        mem: u64,
    ) -> ResourceSample {
        ResourceSample {
            t_ms,
            phase: phase.into(),
            major_faults: faults,
            io_read_bytes: read,
            memory_bytes: mem,
            memory_limit_bytes: 1 << 30,
            cgroup: "server".into(),
            ..ResourceSample::default()
        }
    }

    pub(in super::super) fn phase(name: &str, duration_s: f64) -> PhaseResult {
        PhaseResult {
            name: name.into(),
            workload: "ycsb:a".into(),
            threads: 4,
            duration_s,
            total_ops: 1000,
            total_errors: 0,
            throughput: 100.0,
            tool_ops_per_sec: None,
            headline: None,
            mongo_tpcc: None,
            ops: Default::default(),
            series: vec![],
            status: PhaseStatus::Ok,
            raw_outputs: vec![],
            tool_env: None,
        }
    }

    /// A cell with a load of 2 s from the start, then `run` labelled from
    /// 5 s for 3 s; samples every second from 0 to 9 s.
    pub(in super::super) fn cell() -> CellData {
        let samples = (0..10)
            .map(|i| {
                let label = if i >= 5 { "run" } else { "load" };
                sample(i * 1000, label, i * 10, i * 4096, (i + 1) << 20)
            })
            .collect();
        CellData {
            record: CellRecord {
                key: "k".into(),
                phases: vec![phase("load", 2.0), phase("run", 3.0)],
                ..CellRecord::default()
            },
            samples,
        }
    }

    #[test]
    fn phases_sit_where_their_first_sample_is_and_last_their_duration() {
        assert_eq!(phase_windows(&cell()), [(0.0, 2.0), (5.0, 8.0)]);
    }

    #[test]
    fn a_window_counts_the_growth_of_the_counters_and_the_peak_memory() {
        let c = cell();
        let r = window_stats(&server_samples(&c), 5.0, 8.0);
        // Samples at 5..=8 s: within half a second of the window.
        assert_eq!(r.major_faults, 30);
        assert_eq!(r.read_bytes, 3 * 4096);
        assert_eq!(r.peak_memory, 9 << 20);
    }

    #[test]
    fn read_rates_are_per_second_between_samples() {
        let c = cell();
        let rates = read_rates(&server_samples(&c));
        assert_eq!(rates.len(), 9);
        assert_eq!(rates[0], (1.0, 4096.0));
    }
}
