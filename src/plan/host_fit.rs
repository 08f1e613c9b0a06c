//! Whether a planned cell fits this host beyond its environment: the load
//! generator's threads (memory, open files), the records its phases
//! insert, and the cell's data on the disk where its data dir goes (issue
//! 15). Each refusal points at the scenario line, or at the `--set` that
//! set the value.

use super::{PlannedPhase, suggest_scale};
use crate::display::approx;
use crate::host::HostFacts;
use crate::spec::diag::{Diagnostic, Diagnostics};
use crate::spec::scenario::{Builtin, Dataset, Length, Scenario, Work, YcsbWorkload};
use crate::units::Bytes;
use crate::workload::bounds::{self, Capacity, WorkerShape};

/// Where a scenario value came from: the last `--set` of one of its keys,
/// else the scenario file.
pub(super) struct SetOrSpec<'a> {
    pub sets: &'a [(String, String)],
    pub s: &'a Scenario,
}

impl SetOrSpec<'_> {
    /// A diagnostic at the last `--set` of one of `keys`, else at `field`
    /// of the scenario.
    fn diag(&self, keys: &[String], field: &str, msg: String, hint: Option<String>) -> Diagnostic {
        match self.sets.iter().rev().find(|(k, _)| keys.contains(k)) {
            Some((k, v)) => Diagnostic::flag("--set", format!("{k}={}", v.trim()), msg, hint),
            None => self.s.origin.diag(field, msg, hint),
        }
    }

    /// `phases[i]` of the phase named `name`, and the `--set` keys of its `field`.
    fn phase_field(&self, name: &str, field: &str) -> (String, Vec<String>) {
        let i = self
            .s
            .phases
            .iter()
            .position(|p| p.name == name)
            .unwrap_or(0);
        let mut keys = vec![format!("phases.{field}"), format!("phases.{name}.{field}")];
        if matches!(field, "threads" | "operations" | "duration" | "warmup") {
            keys.push(field.to_string());
        }
        (format!("phases[{i}].{field}"), keys)
    }
}

fn records_keys() -> Vec<String> {
    vec!["records".into(), "dataset.records".into()]
}

/// The memory the load generator may take beside servers whose memory
/// caps add up to `cap` (every member of a topology has one) on `host`:
/// what the host (or the hog) leaves less the caps, or half of it when
/// there is no cap.
pub(super) fn client_capacity(
    host: &HostFacts,
    cap: Option<Bytes>,
    hog_leave: Option<Bytes>,
) -> Capacity {
    let (room, what) = match hog_leave {
        Some(l) => (l, format!("the {} the hog leaves", approx(l))),
        None => (
            host.mem_total,
            format!("this host's {} of RAM", approx(host.mem_total)),
        ),
    };
    let (memory, memory_from) = match cap {
        Some(c) if c < room => (
            Bytes(room.0 - c.0),
            format!("{what} less the server's {} cap", approx(c)),
        ),
        _ => (Bytes(room.0 / 2), format!("half of {what}")),
    };
    Capacity {
        memory,
        memory_from,
        open_files: host.open_files,
    }
}

/// What one worker of a measured phase holds; `None` for a tool.
fn phase_shape(pp: &PlannedPhase, dataset: Option<&Dataset>) -> Option<WorkerShape> {
    let ph = &pp.phase;
    let (field_count, field_length, records) = dataset
        .map(|d| (d.field_count, d.field_length, d.records))
        .unwrap_or((1, 1, 1));
    let seconds = match ph.length {
        Length::Duration(d) => d.as_secs_f64().ceil() as u64 + 1,
        Length::Operations(_) => 0,
    };
    let (kinds, record_bytes, reply_records) = match &ph.work {
        Work::Tool(_) => return None,
        Work::Builtin(Builtin::Candles { queries }) => (
            crate::workload::candles::NAMES.len(),
            crate::workload::candles::RECORD_BYTES,
            queries.reply_records(records),
        ),
        Work::Builtin(Builtin::Iibench) => (
            crate::workload::iibench::NAMES.len(),
            crate::workload::iibench::record_bytes(0),
            0,
        ),
        Work::Builtin(Builtin::SysbenchMongo { .. }) => (
            crate::workload::sysbench_mongo::NAMES.len(),
            crate::workload::sysbench_mongo::RECORD_BYTES,
            crate::workload::sysbench_mongo::RANGE_SIZE,
        ),
        // ORDER STATUS reads one order's lines, at most 15.
        Work::Builtin(Builtin::Tpcc { .. }) => (
            crate::workload::tpcc::NAMES.len(),
            crate::workload::tpcc::LOAD_ROW_BYTES,
            15,
        ),
        Work::Builtin(Builtin::Ycsb { workload, .. }) => {
            let scans = match workload {
                YcsbWorkload::E => true,
                YcsbWorkload::Custom(m) => m.scan > 0.0,
                _ => false,
            };
            (
                crate::workload::ycsb::NAMES.len(),
                bounds::ycsb_record_bytes(field_count, field_length),
                // `run` leaves `max_scan_length` at its default.
                if scans { 100 } else { 0 },
            )
        }
    };
    Some(WorkerShape {
        kinds,
        paced: ph.target.is_some(),
        record_bytes,
        field_count,
        batch: 0,
        reply_records,
        seconds,
    })
}

/// Refuse what the load generator cannot hold on this host: the load's
/// and each built-in phase's threads (memory, open files), and a dataset
/// whose phases insert past the records the distributions reach.
pub(super) fn check_generator(
    at: &SetOrSpec,
    dataset: Option<&Dataset>,
    phases: &[PlannedPhase],
    footprint: Option<&super::footprint::Footprint>,
    client: &Capacity,
    diags: &mut Diagnostics,
) {
    if let (Some(l), Some(d)) = (&at.s.load, dataset) {
        // sysbench-mongo's documents are smaller than YCSB's default
        // records; its load is checked with the YCSB shape, which holds more.
        let candles = l.workload == crate::spec::scenario::LoadWorkload::Candles;
        let shape = WorkerShape {
            kinds: if candles {
                crate::workload::candles::NAMES.len()
            } else {
                crate::workload::ycsb::NAMES.len()
            },
            paced: false,
            record_bytes: if candles {
                crate::workload::candles::RECORD_BYTES
            } else {
                bounds::ycsb_record_bytes(d.field_count, d.field_length)
            },
            field_count: d.field_count,
            batch: l.batch as u64,
            reply_records: 0,
            seconds: 0,
        };
        if let Err(r) = bounds::check_threads(l.threads, &shape, client) {
            diags.push(at.diag(
                &["load.threads".into(), "load.batch".into()],
                "load.threads",
                format!("the load: {}", r.message),
                r.hint,
            ));
        }
    }
    for pp in phases {
        let Some(shape) = phase_shape(pp, dataset) else {
            continue;
        };
        if let Err(r) = bounds::check_threads(pp.threads, &shape, client) {
            let (field, keys) = at.phase_field(&pp.phase.name, "threads");
            diags.push(at.diag(
                &keys,
                &field,
                format!("phase {}: {}", pp.phase.name, r.message),
                r.hint,
            ));
        }
    }
    let inserted = footprint.map_or(0, |fp| fp.inserted);
    if let Some(d) = dataset
        && let Err(r) = bounds::check_records(d.records, inserted)
    {
        diags.push(at.diag(&records_keys(), "dataset.records", r.message, r.hint));
    }
}

/// Refuse a cell whose data, as estimated, does not fit the free space of
/// the work dir, where the engine's data dir will be.
pub(super) fn check_disk(
    at: &SetOrSpec,
    label: &str,
    scale: f64,
    fp: &super::footprint::Footprint,
    host: &HostFacts,
    diags: &mut Diagnostics,
) {
    let Some(free) = host.work_free else {
        return;
    };
    if fp.estimate <= free {
        return;
    }
    let set = match host.work_free_set {
        Some(_) => format!(" ({})", crate::sandbox::roots::WORK_FREE_ENV),
        None => String::new(),
    };
    let msg = format!(
        "{label}: the data would take {fp}, but {} (where the engine's data dir goes) has {} free{set}",
        host.work_dir.display(),
        approx(free)
    );
    let elsewhere = format!(
        "free space there, or point {} at a bigger disk",
        crate::sandbox::roots::WORK_ENV
    );
    match fp.records_that_fit(free) {
        Some(n) => diags.push(at.diag(
            &records_keys(),
            "dataset.records",
            msg,
            Some(format!("--set records={n} fits; or {elsewhere}")),
        )),
        None => {
            let field =
                at.s.phases
                    .iter()
                    .position(|p| matches!(p.work, Work::Tool(_)))
                    .map_or("dataset.records".to_string(), |i| {
                        format!("phases[{i}].tool")
                    });
            diags.push(at.diag(
                &["scale".into()],
                &field,
                msg,
                Some(format!(
                    "a smaller scale (--set scale={}) shrinks the dataset and the tools' tables; or {elsewhere}",
                    scale * suggest_scale(fp.estimate, free)
                )),
            ));
        }
    }
}
