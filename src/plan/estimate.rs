//! How long a planned cell takes, step by step: start and teardown (with
//! the engine's `init` commands), the load, a tool's own prepare (sysbench
//! prepare, pgbench -i), settle, and the measured phases. The rates are
//! deliberately simple; docs/specs.md ("How long a run takes") compares
//! the estimate with measured runs of the shipped scenarios (it must stay
//! within 2x).

use super::{PhaseConfig, PlannedCell};
use crate::spec::engine::Pace;
use crate::spec::scenario::{Length, LoadWorkload, Tool, Work};
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

/// The longest estimate: 1000 years, beyond which a step is only "too long".
const MAX_S: f64 = 1000.0 * 365.0 * 86_400.0;

fn secs(s: f64) -> Duration {
    // A count a spec refuses anyway (a huge sysbench table) must not
    // overflow a `Duration` before the refusal is shown.
    let s = if s.is_finite() {
        s.clamp(0.0, MAX_S)
    } else {
        MAX_S
    };
    Duration(std::time::Duration::from_secs_f64(s.round()))
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

/// Bytes per second a snapshot is copied at (saved once, restored by each
/// later cell of its key), a plain copy on one local disk.
const SNAPSHOT_BYTES_PER_S: f64 = 200e6;
/// Stopping the engine cleanly and starting it again around a save.
const SNAPSHOT_RESTART_S: f64 = 5.0;

/// The estimate of a plan's cells, summed, each at its engine's pace. A
/// cell whose snapshot key an earlier cell of the plan loads restores
/// it instead of loading; the first saves it (the cache as it is now is
/// not read: the estimate is the plan's alone).
pub(crate) fn of_cells(project: &crate::spec::Project, cells: &[PlannedCell]) -> Estimate {
    let mut seen = std::collections::BTreeSet::new();
    let per_cell: Vec<Estimate> = cells
        .iter()
        .map(|c| {
            let pace = project.engines.get(&c.engine).and_then(|e| e.pace);
            let mut e = cell(c, pace.as_ref());
            if let Some(s) = &c.snapshot {
                let copy = c
                    .footprint
                    .as_ref()
                    .map_or(0.0, |f| f.estimate.0 as f64 / SNAPSHOT_BYTES_PER_S);
                e.load = if seen.insert(s.id.clone()) {
                    secs(e.load.as_secs_f64() + SNAPSHOT_RESTART_S + copy)
                } else {
                    secs(copy)
                };
            }
            e
        })
        .collect();
    Estimate::sum(&per_cell)
}

/// The estimate of one cell, with the engine's measured pace if it has one.
pub fn cell(c: &PlannedCell, pace: Option<&Pace>) -> Estimate {
    Estimate {
        start_and_teardown: secs(START_AND_TEARDOWN_S + INIT_S * c.init.len() as f64),
        load: secs(load(c, pace)),
        tool_prepare: secs(prepare(c)),
        settle: secs(if c.settle.is_some() { SETTLE_S } else { 0.0 }),
        phases: secs(phases(c, pace)),
    }
}

/// The engine's rate for one server CPU, times the CPUs a phase can use.
fn paced(rate: Option<f64>, threads: u32, c: &PlannedCell) -> Option<f64> {
    rate.map(|r| {
        r * (threads as f64)
            .min(c.limits.server_cpus.len() as f64)
            .max(1.0)
    })
}

/// Loaders that run at once: beyond the server's CPUs (plus one waiting
/// on IO) threads only queue.
fn parallel(threads: u32, c: &PlannedCell) -> f64 {
    (threads as f64)
        .min(c.limits.server_cpus.len() as f64 + 1.0)
        .max(1.0)
}

fn load(c: &PlannedCell, pace: Option<&Pace>) -> f64 {
    if let Some(l) = &c.load
        && l.workload == LoadWorkload::Tpcc
    {
        return tpcc_load(l, c);
    }
    let (Some(l), Some(d)) = (&c.load, &c.dataset) else {
        return 0.0;
    };
    // sysbench-mongo loads `records` documents into each collection.
    let per_record = match l.workload {
        LoadWorkload::SysbenchMongo => {
            l.collections
                .unwrap_or(crate::workload::sysbench_mongo::COLLECTIONS) as f64
        }
        _ => 1.0,
    };
    let records = d.records as f64 * per_record;
    let record_bytes = match l.workload {
        LoadWorkload::Candles => 270.0,
        LoadWorkload::SysbenchMongo => crate::workload::sysbench_mongo::RECORD_BYTES as f64,
        LoadWorkload::Iibench => crate::workload::iibench::record_bytes(0) as f64,
        LoadWorkload::Ycsb | LoadWorkload::Tpcc => {
            (d.field_count as f64 * d.field_length as f64) + 24.0
        }
    };
    let batch = l.batch.max(1) as f64;
    let per_batch = ROUND_TRIP_S + batch * (PER_RECORD_S + record_bytes / LOAD_BYTES_PER_S);
    let batches = records / batch;
    let generic = batches * per_batch / parallel(l.threads, c);
    let measured = pace.and_then(|p| match l.workload {
        LoadWorkload::Candles => p.candles_per_s,
        LoadWorkload::SysbenchMongo | LoadWorkload::Iibench => None,
        LoadWorkload::Ycsb | LoadWorkload::Tpcc => p.load_records_per_s,
    });
    match paced(measured, l.threads, c) {
        Some(rate) => generic.max(records / rate),
        None => generic,
    }
}

/// A TPC-C load: its rows (about 600,000 a warehouse, ~110 B each on
/// average) in multi-row INSERTs of up to 1000 rows.
fn tpcc_load(l: &crate::spec::scenario::Load, c: &PlannedCell) -> f64 {
    let w = u64::from(l.warehouses.unwrap_or(1));
    let rows = crate::workload::tpcc::loader::planned_rows(w) as f64;
    let row_bytes = 110.0;
    let per_batch = ROUND_TRIP_S + 1000.0 * (PER_RECORD_S + row_bytes / LOAD_BYTES_PER_S);
    rows / 1000.0 * per_batch / parallel(l.threads, c)
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

fn phases(c: &PlannedCell, pace: Option<&Pace>) -> f64 {
    let mut t = 0.0;
    for p in &c.phases {
        if let PhaseConfig::Tool(tc) = &p.config {
            t += TOOL_RUN_OVERHEAD_S;
            if tc.runs_warmup() && !p.phase.warmup.std().is_zero() {
                // An unmeasured run of its own.
                t += TOOL_RUN_OVERHEAD_S + p.phase.warmup.as_secs_f64();
            }
        } else {
            t += p.phase.warmup.as_secs_f64();
        }
        t += match p.phase.length {
            Length::Duration(d) => d.as_secs_f64(),
            Length::Operations(n) => {
                let engine = paced(pace.and_then(|p| p.ops_per_s), p.threads, c);
                let generic = ASSUMED_OPS_PER_THREAD * parallel(p.threads, c);
                let rate = engine.map_or(generic, |e| e.min(generic));
                let rate = p.phase.target.map_or(rate, |t| (t as f64).min(rate));
                n as f64 / rate.max(1.0)
            }
        };
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostFacts;
    use crate::plan::plan_on;
    use crate::spec::Project;
    use std::path::Path;

    fn quickstart_cell() -> PlannedCell {
        let p = Project::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let mut host = HostFacts::probe();
        host.online_cpus = "0-1".parse().unwrap();
        let plan = plan_on(&p, &p.scenarios["quickstart"], &[], None, None, &host).unwrap();
        plan.cells[0].clone()
    }

    #[test]
    fn a_slow_engines_pace_stretches_its_load_and_counted_phases_only() {
        let mut c = quickstart_cell();
        let generic = cell(&c, None);
        // 50,000 records at 500 a second on the one server CPU.
        let slow = Pace {
            load_records_per_s: Some(500.0),
            candles_per_s: None,
            ops_per_s: Some(100.0),
        };
        let e = cell(&c, Some(&slow));
        assert_eq!(e.load.std().as_secs(), 100);
        assert!(generic.load.std().as_secs() < 100);
        // A timed phase lasts its duration, whatever the pace.
        assert_eq!(e.phases, generic.phases);
        // An operation-count phase runs at the engine's pace.
        c.phases[0].phase.length = Length::Operations(1000);
        c.phases[0].phase.warmup = Duration(std::time::Duration::ZERO);
        assert_eq!(phases(&c, Some(&slow)).round(), 10.0);
        // A fast engine is never estimated faster than the generic model.
        let fast = Pace {
            load_records_per_s: Some(1e9),
            candles_per_s: Some(1.0), // a YCSB load: the candles rate is not used
            ops_per_s: Some(1e9),
        };
        assert_eq!(cell(&c, Some(&fast)).load, generic.load);
        // A target above what the engine does is not reached.
        c.phases[0].phase.target = Some(1_000_000);
        assert_eq!(phases(&c, Some(&slow)).round(), 10.0);
    }

    #[test]
    fn cells_of_one_snapshot_key_load_once_and_restore_after_it() {
        let p = Project::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let mut host = HostFacts::probe();
        host.online_cpus = "0-1".parse().unwrap();
        host.work_free = None;
        let s = &p.scenarios["doesnt-fit-in-ram"];
        let plan = plan_on(&p, s, &[], None, None, &host).unwrap();
        assert_eq!(plan.cells.len(), 4);
        let ids: std::collections::BTreeSet<&str> = plan
            .cells
            .iter()
            .map(|c| c.snapshot.as_ref().unwrap().id.as_str())
            .collect();
        assert_eq!(ids.len(), 1, "the four caps share one load");
        let pace = p.engines["myrocks"].pace;
        let one = cell(&plan.cells[0], pace.as_ref()).load.as_secs_f64();
        let all = of_cells(&p, &plan.cells).load.as_secs_f64();
        // One load plus its save and three restores: far under four loads.
        assert!(
            all > one && all < 2.0 * one,
            "one load {one}s, the plan's {all}s"
        );
        // Without snapshots every cell loads.
        let mut off = s.clone();
        off.snapshots.enabled = false;
        let plan = plan_on(&p, &off, &[], None, None, &host).unwrap();
        assert!(plan.cells.iter().all(|c| c.snapshot.is_none()));
        let all = of_cells(&p, &plan.cells).load.as_secs_f64();
        assert!(
            (all - 4.0 * one).abs() <= 2.0,
            "four loads {all}s, one {one}s"
        );
    }
}
