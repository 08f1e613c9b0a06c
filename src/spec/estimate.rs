//! How long a planned cell takes, step by step: start and teardown (with
//! the engine's `init` commands), the load, a tool's own prepare (sysbench
//! prepare, pgbench -i), settle, and the measured phases. The rates are
//! deliberately simple; README.md compares the estimate with measured
//! runs of the shipped scenarios (it must stay within 2x).

use super::plan::PlannedCell;
use super::scenario::{Length, LoadWorkload, Tool, Work};
use crate::units::Duration;

/// Provision, start, readiness, collect and teardown of one cell.
const START_AND_TEARDOWN_S: f64 = 8.0;
/// Each `init` command (initdb, mariadb-install-db).
const INIT_S: f64 = 5.0;
/// One round trip of the load generator to a server on one CPU.
const ROUND_TRIP_S: f64 = 250e-6;
/// Bytes per second a server on one CPU writes while loading.
const LOAD_BYTES_PER_S: f64 = 8.0 * 1024.0 * 1024.0;
/// Per record inside a batch (parse, index, log).
const PER_RECORD_S: f64 = 20e-6;
/// Rows per second of sysbench prepare (about 190 B a row).
const SYSBENCH_PREPARE_ROWS_PER_S: f64 = 60_000.0;
/// Rows per second of `pgbench -i` (100000 rows per scale unit).
const PGBENCH_INIT_ROWS_PER_S: f64 = 150_000.0;
/// Measuring data size, setting the cap, dropping caches.
const SETTLE_S: f64 = 5.0;
/// A tool's start and connections per thread count.
const TOOL_RUN_OVERHEAD_S: f64 = 3.0;
/// Operations per second and thread when a phase counts operations.
const ASSUMED_OPS_PER_THREAD: f64 = 2_000.0;

/// Seconds per step, for one cell or summed over a plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub start_and_teardown: Duration,
    pub load: Duration,
    pub tool_prepare: Duration,
    pub settle: Duration,
    pub phases: Duration,
}

fn secs(s: f64) -> Duration {
    Duration(std::time::Duration::from_secs_f64(s.max(0.0).round()))
}

impl Estimate {
    pub fn total(&self) -> Duration {
        Duration(
            self.start_and_teardown.std()
                + self.load.std()
                + self.tool_prepare.std()
                + self.settle.std()
                + self.phases.std(),
        )
    }

    /// Step by step sums.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a Estimate>) -> Estimate {
        let mut out = Estimate::default();
        for e in all {
            out.start_and_teardown =
                Duration(out.start_and_teardown.std() + e.start_and_teardown.std());
            out.load = Duration(out.load.std() + e.load.std());
            out.tool_prepare = Duration(out.tool_prepare.std() + e.tool_prepare.std());
            out.settle = Duration(out.settle.std() + e.settle.std());
            out.phases = Duration(out.phases.std() + e.phases.std());
        }
        out
    }
}

/// The estimate of one cell.
pub fn cell(c: &PlannedCell) -> Estimate {
    Estimate {
        start_and_teardown: secs(START_AND_TEARDOWN_S + INIT_S * c.init.len() as f64),
        load: secs(load(c)),
        tool_prepare: secs(prepare(c)),
        settle: secs(if c.settle.is_some() { SETTLE_S } else { 0.0 }),
        phases: secs(phases(c)),
    }
}

/// Loaders that run at once: beyond the server's CPUs (plus one waiting
/// on IO) threads only queue.
fn parallel(threads: u32, c: &PlannedCell) -> f64 {
    (threads as f64)
        .min(c.limits.server_cpus.len() as f64 + 1.0)
        .max(1.0)
}

fn load(c: &PlannedCell) -> f64 {
    let (Some(l), Some(d)) = (&c.load, &c.dataset) else {
        return 0.0;
    };
    let record_bytes = match l.workload {
        LoadWorkload::Candles => 270.0,
        LoadWorkload::Ycsb => (d.field_count as f64 * d.field_length as f64) + 24.0,
    };
    let batch = l.batch.max(1) as f64;
    let per_batch = ROUND_TRIP_S + batch * (PER_RECORD_S + record_bytes / LOAD_BYTES_PER_S);
    let batches = d.records as f64 / batch;
    batches * per_batch / parallel(l.threads, c)
}

fn prepare(c: &PlannedCell) -> f64 {
    // A tool prepares once per cell, before its first thread count.
    let mut seen = Vec::new();
    let mut t = 0.0;
    for p in &c.phases {
        if seen.contains(&&p.phase.name) {
            continue;
        }
        seen.push(&p.phase.name);
        t += match &p.phase.work {
            Work::Tool(Tool::Sysbench {
                tables, table_size, ..
            }) => (*tables as f64 * *table_size as f64) / SYSBENCH_PREPARE_ROWS_PER_S,
            Work::Tool(Tool::Pgbench { scale, .. }) => {
                *scale as f64 * 100_000.0 / PGBENCH_INIT_ROWS_PER_S
            }
            _ => 0.0,
        };
    }
    t
}

fn phases(c: &PlannedCell) -> f64 {
    let mut t = 0.0;
    for p in &c.phases {
        let tool = matches!(p.phase.work, Work::Tool(_));
        if tool {
            // Tools run without the phase's warmup.
            t += TOOL_RUN_OVERHEAD_S;
        } else {
            t += p.phase.warmup.as_secs_f64();
        }
        t += match p.phase.length {
            Length::Duration(d) => d.as_secs_f64(),
            Length::Operations(n) => {
                let rate = p
                    .phase
                    .target
                    .map(|r| r as f64)
                    .unwrap_or(ASSUMED_OPS_PER_THREAD * parallel(p.threads, c));
                n as f64 / rate.max(1.0)
            }
        };
    }
    t
}
