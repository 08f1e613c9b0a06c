//! How much the load generator may be asked to do, from what this host
//! can hold (issue 15: `drive --threads 1000000000` aborted on an 8 GB
//! allocation). Every count that sizes something the generator allocates,
//! or that the host must hold, is checked here before anything is
//! connected, created or allocated:
//!
//! - threads: one connection, one task and one recorder each. At most
//!   [`MAX_THREADS`], at most the open files the process may have, and at
//!   most what fits the memory the generator may take, at
//!   [`worker_bytes`] each (latency histograms at their full range, the
//!   per-second series, buffers, a load batch, a scan's reply);
//! - records: the request distributions reach at most [`MAX_RECORDS`]
//!   distinct records, and a phase that inserts must stay inside them;
//! - operations and the target rate: finite maxima ([`MAX_OPERATIONS`],
//!   [`MIN_TARGET`]..[`MAX_TARGET`]) far beyond any benchmark, so a typo
//!   cannot overflow a duration or a counter;
//! - the record shape, the key padding, the batch and the scan length.
//!
//! The spec checks (`src/spec/scenario.rs`, `scenario_set.rs`) and
//! `plan` use the same functions and constants, so a scenario, `--set` and
//! `drive` flags are refused alike.

use super::dist::SCRAMBLED_ITEM_COUNT;
use super::driver::OP_TIMEOUT;
use crate::units::Bytes;

/// The most threads (connections) a phase may have. Beyond the open files
/// and memory checks, a fixed ceiling: servers refuse far fewer
/// connections by default (PostgreSQL `max_connections` 100, MariaDB 151,
/// redis `maxclients` 10000), and the shipped write-ups go to 1024.
pub(crate) const MAX_THREADS: u32 = 4096;
/// The most records a dataset may have, inserts included: YCSB's
/// scrambled zipfian draws from this many items, so records beyond it are
/// never read or updated.
pub(crate) const MAX_RECORDS: u64 = SCRAMBLED_ITEM_COUNT;
/// The most operations a phase may count: 10^12 is 11 days at a million
/// operations a second.
pub(crate) const MAX_OPERATIONS: u64 = 1_000_000_000_000;
/// The highest target rate: the pacing clock counts nanoseconds, so one
/// thread cannot be paced faster than 10^9 operations a second.
pub(crate) const MAX_TARGET: f64 = 1e9;
/// The lowest target rate: one operation every 1000 s.
pub(crate) const MIN_TARGET: f64 = 1e-3;
/// The most fields a record may have: InnoDB tables hold at most 1017
/// columns, one of them the key.
pub(crate) const MAX_FIELDS: u32 = 1016;
/// The largest record (fields x field length): MongoDB's 16 MiB document
/// limit, the smallest of the stores'.
pub(crate) const MAX_RECORD_BYTES: u64 = 16 << 20;
/// The most digits a key number is padded to: MongoDB before 4.2 refuses
/// index keys over 1024 bytes, and a key is `user` and the digits.
pub(crate) const MAX_KEY_PADDING: usize = 1000;
/// The most records one insert may carry.
pub(crate) const MAX_BATCH: u64 = 100_000;
/// The longest scan, in records.
pub(crate) const MAX_SCAN: u64 = 100_000;
/// The longest timed phase (or warm-up): a week. A worker keeps one count
/// per operation kind and second, so the series grows with it.
pub(crate) const MAX_PHASE_SECS: u64 = 7 * 24 * 3600;

/// Open files kept for everything but connections: stdio, logs, the
/// runtime, the results.
pub(crate) const FD_RESERVE: u64 = 64;
/// A connection's own memory: socket and client buffers, the task, and
/// its recorder at short latencies (measured: about 85 KiB a worker
/// against `null://`, with 4096 workers in 370 MB).
pub(crate) const CONN_BYTES: u64 = 128 << 10;
/// A key and its `String`, as the generator holds it.
pub(crate) const KEY_BYTES: u64 = 64;

/// What the generator may use on this host.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Capacity {
    /// Memory the generator's workers may take together.
    pub memory: Bytes,
    /// Where `memory` comes from, in words for messages ("half of the
    /// 21.9GiB available").
    pub memory_from: String,
    /// Open files the process may have (the hard `RLIMIT_NOFILE`; the
    /// generator raises its soft limit to it).
    pub open_files: u64,
}

impl Capacity {
    /// For `benchcage drive` on this host now: half of the memory
    /// available (the server it drives runs here too, and grows), and the
    /// open files limit.
    pub fn probe() -> Capacity {
        let avail = mem_available().unwrap_or(Bytes(0));
        Capacity {
            memory: Bytes(avail.0 / 2),
            memory_from: format!(
                "half of the {} available on this host",
                crate::display::approx(avail)
            ),
            open_files: open_files_limit(),
        }
    }
}

/// `MemAvailable` from /proc/meminfo.
fn mem_available() -> Option<Bytes> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| {
        let kb: u64 = l
            .strip_prefix("MemAvailable:")?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(Bytes(kb * 1024))
    })
}

/// The hard limit on open files of this process.
pub(crate) fn open_files_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((_, hard)) if hard != nix::sys::resource::RLIM_INFINITY => hard,
        Ok(_) => u64::MAX,
        Err(_) => 1024,
    }
}

/// Raise the soft open files limit to the hard one, so that as many
/// connections as [`Capacity::open_files`] allows can be opened.
pub(crate) fn raise_open_files() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// A refusal: what is wrong and what to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub message: String,
    pub hint: Option<String>,
}

impl Refusal {
    fn new(message: String, hint: impl Into<String>) -> Refusal {
        Refusal {
            message,
            hint: Some(hint.into()),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.hint {
            Some(h) => write!(f, "{} ({h})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What one worker of a phase holds, to size it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WorkerShape {
    /// Operation kinds it records (5 for YCSB, 4 for candles).
    pub kinds: usize,
    /// A target rate: latencies from the intended start are kept too.
    pub paced: bool,
    /// Bytes of one record's values and field names.
    pub record_bytes: u64,
    pub field_count: u32,
    /// Records per insert (the load); 0 in a measured phase.
    pub batch: u64,
    /// Records one operation may read back (a scan); 0 when none.
    pub reply_records: u64,
    /// Seconds the phase records per second (0 when it counts operations).
    pub seconds: u64,
}

/// The most memory one worker of this shape can hold: its recorder with
/// every histogram grown to [`OP_TIMEOUT`] and a count per kind and
/// second, its connection, the keys, value offsets and request of a load
/// batch, and a scan's reply.
pub(crate) fn worker_bytes(s: &WorkerShape) -> u64 {
    let max_ns = OP_TIMEOUT.as_nanos() as u64;
    let recorder = super::histo::recorder_bytes(s.kinds, s.paced, max_ns, s.seconds);
    let per_record = s
        .record_bytes
        .saturating_add(KEY_BYTES)
        .saturating_add(s.field_count as u64 * 8);
    recorder
        .saturating_add(CONN_BYTES)
        .saturating_add(s.batch.saturating_mul(per_record))
        .saturating_add(s.reply_records.saturating_mul(per_record))
}

/// The most threads of this shape the capacity allows.
pub(crate) fn most_threads(s: &WorkerShape, cap: &Capacity) -> u32 {
    let by_files = cap.open_files.saturating_sub(FD_RESERVE);
    let by_memory = cap.memory.0 / worker_bytes(s).max(1);
    (MAX_THREADS as u64).min(by_files).min(by_memory) as u32
}

/// Ok when `threads` is between 1 and [`MAX_THREADS`].
pub(crate) fn check_thread_count(threads: u32) -> Result<(), Refusal> {
    if threads == 0 || threads > MAX_THREADS {
        return Err(Refusal::new(
            format!("{threads} threads is out of range"),
            format!("1 to {MAX_THREADS}"),
        ));
    }
    Ok(())
}

/// Ok when `threads` workers of shape `s` fit the capacity: the fixed
/// ceiling, the open files, the memory.
pub(crate) fn check_threads(threads: u32, s: &WorkerShape, cap: &Capacity) -> Result<(), Refusal> {
    check_thread_count(threads)?;
    let most = most_threads(s, cap);
    let need_files = threads as u64 + FD_RESERVE;
    if need_files > cap.open_files {
        return Err(Refusal::new(
            format!(
                "{threads} threads need {need_files} open files (a connection each, and {FD_RESERVE} more); this process may open {}",
                cap.open_files
            ),
            format!("use at most {most} threads, or raise the limit (`ulimit -Hn`)"),
        ));
    }
    let per = worker_bytes(s);
    let need = per.saturating_mul(threads as u64);
    if need > cap.memory.0 {
        return Err(Refusal::new(
            format!(
                "{threads} threads may need {} of memory ({} each: latency histograms up to {}s, per-second counts, buffers{}), more than the load generator may take: {}, {}",
                crate::display::approx(Bytes(need)),
                crate::display::approx(Bytes(per)),
                OP_TIMEOUT.as_secs(),
                if s.batch > 1 {
                    ", a batch of records"
                } else {
                    ""
                },
                crate::display::approx(cap.memory),
                cap.memory_from
            ),
            format!("use at most {most} threads on this host"),
        ));
    }
    Ok(())
}

/// Ok when a dataset of `records`, plus `inserts` records a phase adds,
/// stays within [`MAX_RECORDS`].
pub(crate) fn check_records(records: u64, inserts: u64) -> Result<(), Refusal> {
    if records > MAX_RECORDS {
        return Err(Refusal::new(
            format!(
                "{records} records is more than the {MAX_RECORDS} the request distributions reach: YCSB's scrambled zipfian draws from that many"
            ),
            format!("at most {MAX_RECORDS} records"),
        ));
    }
    if records.saturating_add(inserts) > MAX_RECORDS {
        return Err(Refusal::new(
            format!(
                "{records} records and up to {inserts} inserted ones are more than the {MAX_RECORDS} records the request distributions reach"
            ),
            format!(
                "at most {} operations with this insert share, or fewer records",
                MAX_RECORDS - records
            ),
        ));
    }
    Ok(())
}

/// Ok when `operations` is between 1 and [`MAX_OPERATIONS`].
pub(crate) fn check_operations(operations: u64) -> Result<(), Refusal> {
    if operations == 0 || operations > MAX_OPERATIONS {
        return Err(Refusal::new(
            format!("{operations} operations is out of range"),
            format!(
                "1 to {MAX_OPERATIONS}, 11 days at a million a second; use `duration` for a timed phase"
            ),
        ));
    }
    Ok(())
}

/// Ok when a target rate is a finite number in [`MIN_TARGET`]..=[`MAX_TARGET`].
pub(crate) fn check_target(target: f64) -> Result<(), Refusal> {
    if !(target.is_finite() && (MIN_TARGET..=MAX_TARGET).contains(&target)) {
        // 1e-300 in full is 300 zeros: far from 1, the exponent form.
        let shown = if target.is_finite() && (1e-3..1e15).contains(&target.abs()) {
            target.to_string()
        } else {
            format!("{target:e}")
        };
        return Err(Refusal::new(
            format!("a target of {shown} operations per second is out of range"),
            format!(
                "{MIN_TARGET} to {MAX_TARGET:e} operations per second over all threads; omit it for no rate limit"
            ),
        ));
    }
    Ok(())
}

/// Ok when a phase length in seconds is at most [`MAX_PHASE_SECS`].
pub(crate) fn check_seconds(what: &str, secs: f64) -> Result<(), Refusal> {
    if secs > MAX_PHASE_SECS as f64 {
        return Err(Refusal::new(
            format!("a {what} of {secs}s is longer than a week"),
            format!(
                "at most {MAX_PHASE_SECS}s; the generator keeps a count per second of the phase"
            ),
        ));
    }
    Ok(())
}

/// Ok when the record shape is within [`MAX_FIELDS`] and [`MAX_RECORD_BYTES`].
pub(crate) fn check_record_shape(field_count: u32, field_length: u32) -> Result<(), Refusal> {
    if field_count == 0 || field_length == 0 {
        return Err(Refusal {
            message: "field_count and field_length must be at least 1".into(),
            hint: None,
        });
    }
    if field_count > MAX_FIELDS {
        return Err(Refusal::new(
            format!("{field_count} fields is more than a table can hold"),
            format!("at most {MAX_FIELDS}: InnoDB takes 1017 columns, one of them the key"),
        ));
    }
    let bytes = field_count as u64 * field_length as u64;
    if bytes > MAX_RECORD_BYTES {
        return Err(Refusal::new(
            format!(
                "records of {field_count} x {field_length} B ({}) are over 16 MiB, more than a MongoDB document holds",
                crate::display::approx(Bytes(bytes))
            ),
            "YCSB's default is 10 fields of 100 bytes",
        ));
    }
    Ok(())
}

/// Ok when `batch` is between 1 and [`MAX_BATCH`].
pub(crate) fn check_batch(batch: u64) -> Result<(), Refusal> {
    if batch == 0 || batch > MAX_BATCH {
        return Err(Refusal::new(
            format!("batch {batch} is out of range"),
            format!("1 to {MAX_BATCH} records per insert"),
        ));
    }
    Ok(())
}

/// Bytes of one YCSB record's values and field names (`field0`...), as a
/// document or hash store keeps them.
/// Counted per power of ten, so that a count no check refused yet (a
/// billion fields) costs nothing to size.
pub(crate) fn ycsb_record_bytes(field_count: u32, field_length: u32) -> u64 {
    let n = field_count as u64;
    let mut names = 0u64;
    let mut low = 0u64;
    let mut digits = 1u64;
    while low < n {
        let high = (low.max(1) * 10).min(n);
        names += (high - low) * (5 + digits);
        low = high;
        digits += 1;
    }
    n * field_length as u64 + names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_counts_its_field_names_digit_by_digit() {
        let by_one = |n: u64| -> u64 {
            (0..n)
                .map(|i| 5 + i.checked_ilog10().unwrap_or(0) as u64 + 1)
                .sum()
        };
        for n in [0u32, 1, 9, 10, 11, 99, 100, 101, 1016, 12345] {
            assert_eq!(
                ycsb_record_bytes(n, 7),
                n as u64 * 7 + by_one(n as u64),
                "{n}"
            );
        }
        // A billion fields is sized at once, not field by field.
        assert!(ycsb_record_bytes(1_000_000_000, 100) > 100_000_000_000);
    }

    fn cap(gib: u64, files: u64) -> Capacity {
        Capacity {
            memory: Bytes::from_gib(gib),
            memory_from: format!("{gib}GiB in this test"),
            open_files: files,
        }
    }

    fn ycsb(paced: bool) -> WorkerShape {
        WorkerShape {
            kinds: 5,
            paced,
            record_bytes: ycsb_record_bytes(10, 100),
            field_count: 10,
            batch: 0,
            reply_records: 0,
            seconds: 60,
        }
    }

    #[test]
    fn a_billion_threads_is_refused_before_anything_is_sized() {
        let e = check_threads(1_000_000_000, &ycsb(false), &cap(64, 1 << 20)).unwrap_err();
        assert_eq!(e.message, "1000000000 threads is out of range");
        assert_eq!(e.hint.as_deref(), Some("1 to 4096"));
        assert!(check_threads(0, &ycsb(false), &cap(64, 1 << 20)).is_err());
    }

    #[test]
    fn threads_are_bounded_by_the_memory_each_worker_may_take() {
        let per = worker_bytes(&ycsb(false));
        // Five histograms to 30 s at 3 digits are about 1 MiB; a worker is
        // between that and a few MiB.
        assert!((1 << 20..4 << 20).contains(&per), "{per}");
        assert!(
            worker_bytes(&ycsb(true)) > per + (512 << 10),
            "pacing keeps a second histogram per kind"
        );
        let small = cap(1, 1 << 20);
        let most = most_threads(&ycsb(false), &small);
        assert_eq!(most as u64, (1u64 << 30) / per);
        assert!(check_threads(most, &ycsb(false), &small).is_ok());
        let e = check_threads(most + 1, &ycsb(false), &small).unwrap_err();
        assert!(
            e.message
                .contains("more than the load generator may take: 1.0GiB, 1GiB in this test"),
            "{}",
            e.message
        );
        assert_eq!(
            e.hint,
            Some(format!("use at most {most} threads on this host"))
        );
        // A big host: the fixed ceiling binds.
        assert_eq!(most_threads(&ycsb(false), &cap(1024, 1 << 20)), MAX_THREADS);
    }

    #[test]
    fn threads_are_bounded_by_the_open_files_limit() {
        let e = check_threads(2000, &ycsb(false), &cap(64, 1024)).unwrap_err();
        assert!(e.message.contains("need 2064 open files"), "{}", e.message);
        assert!(e.hint.unwrap().contains("at most 960 threads"));
        assert!(check_threads(960, &ycsb(false), &cap(64, 1024)).is_ok());
    }

    #[test]
    fn a_load_batch_and_a_scan_reply_count_toward_a_worker() {
        let plain = ycsb(false);
        let batched = WorkerShape {
            batch: 100_000,
            ..plain
        };
        let rec = ycsb_record_bytes(10, 100) + KEY_BYTES + 80;
        assert_eq!(worker_bytes(&batched) - worker_bytes(&plain), 100_000 * rec);
        let scanning = WorkerShape {
            reply_records: 1000,
            ..plain
        };
        assert_eq!(worker_bytes(&scanning) - worker_bytes(&plain), 1000 * rec);
    }

    #[test]
    fn records_operations_targets_and_shapes_have_finite_bounds() {
        assert!(check_records(MAX_RECORDS, 0).is_ok());
        assert!(check_records(MAX_RECORDS + 1, 0).is_err());
        let e = check_records(MAX_RECORDS - 10, 11).unwrap_err();
        assert!(e.hint.unwrap().contains("at most 10 operations"));
        assert!(check_operations(MAX_OPERATIONS).is_ok());
        assert!(check_operations(MAX_OPERATIONS + 1).is_err());
        assert!(check_operations(0).is_err());
        for bad in [0.0, -1.0, 1e-300, f64::NAN, f64::INFINITY, 2e9] {
            assert!(check_target(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_target(1e-300).unwrap_err().message,
            "a target of 1e-300 operations per second is out of range"
        );
        assert!(check_target(0.5).is_ok());
        assert!(check_target(MAX_TARGET).is_ok());
        assert!(check_record_shape(MAX_FIELDS, 100).is_ok());
        assert!(check_record_shape(MAX_FIELDS + 1, 1).is_err());
        assert!(check_record_shape(1, 16 << 20).is_ok());
        assert!(check_record_shape(2, 16 << 20).is_err());
        assert!(check_batch(MAX_BATCH).is_ok());
        assert!(check_batch(MAX_BATCH + 1).is_err());
        assert!(check_seconds("duration", MAX_PHASE_SECS as f64).is_ok());
        assert!(check_seconds("duration", 1e12).is_err());
    }

    #[test]
    fn a_ycsb_record_counts_its_field_names_too() {
        // field0..field9: 10 names of 6 bytes.
        assert_eq!(ycsb_record_bytes(10, 100), 1000 + 60);
        // field10 and field11 have 7 bytes.
        assert_eq!(ycsb_record_bytes(12, 1), 12 + 60 + 14);
    }
}
