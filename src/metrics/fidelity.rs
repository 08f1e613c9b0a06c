//! The checks behind a cell's fidelity record, as pure functions over what
//! was recorded: limits read back, CPUs of every engine thread, the hog's
//! locked memory, OOM kills and restarts, and the io-bound claim of a phase.
//! Each returns the violations it found, in words; none means it held.

use crate::results::model::PhaseIo;
use crate::sandbox::CgroupStats;
use crate::units::{Bytes, CpuSet};
use std::collections::BTreeMap;

/// The kernel rounds memory limits down to a page.
const PAGE: u64 = 4096;

/// What a phase must have read from disk to count as io-bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoBoundThresholds {
    /// Bytes the server's cgroup read from block devices during the phase.
    pub min_read_bytes: u64,
    /// Major page faults of the server's cgroup during the phase.
    pub min_major_faults: u64,
}

impl Default for IoBoundThresholds {
    /// 8 MiB read from the device. Major faults are recorded but not
    /// required by default: engines that read with read(2) (PostgreSQL,
    /// InnoDB, WiredTiger) miss the page cache without faulting, so only
    /// mmap-based engines raise them.
    fn default() -> Self {
        IoBoundThresholds {
            min_read_bytes: 8 << 20,
            min_major_faults: 0,
        }
    }
}

/// The server's counters over one phase, and whether an io-bound claim held.
pub fn phase_io(
    before: &CgroupStats,
    after: &CgroupStats,
    expect_io_bound: bool,
    th: IoBoundThresholds,
) -> PhaseIo {
    let mut io = PhaseIo {
        major_faults: after.major_faults.saturating_sub(before.major_faults),
        io_read_bytes: after.io_read_bytes.saturating_sub(before.io_read_bytes),
        io_write_bytes: after.io_write_bytes.saturating_sub(before.io_write_bytes),
        cpu_usec: after.cpu_usec.saturating_sub(before.cpu_usec),
        memory_limit_bytes: after.memory_limit,
        expect_io_bound,
        io_bound_violation: None,
        ..PhaseIo::default()
    };
    if expect_io_bound {
        let mut missing = Vec::new();
        if io.io_read_bytes < th.min_read_bytes {
            missing.push(format!(
                "read {} from disk (needs at least {})",
                Bytes(io.io_read_bytes),
                Bytes(th.min_read_bytes)
            ));
        }
        if io.major_faults < th.min_major_faults {
            missing.push(format!(
                "had {} major faults (needs at least {})",
                io.major_faults, th.min_major_faults
            ));
        }
        if !missing.is_empty() {
            io.io_bound_violation = Some(format!(
                "declared `expect: io-bound` but the server {}: the data fit in memory",
                missing.join(" and ")
            ));
        }
    }
    io
}

/// Every engine thread must be allowed exactly the planned server CPUs.
pub(crate) fn thread_cpu_violations(
    threads: &BTreeMap<String, String>,
    expected: &CpuSet,
) -> Vec<String> {
    if threads.is_empty() {
        return vec!["no engine thread could be read from /proc".to_string()];
    }
    let mut bad: Vec<String> = threads
        .iter()
        .filter(|(_, list)| list.parse::<CpuSet>().ok().as_ref() != Some(expected))
        .map(|(tid, list)| format!("{tid} on CPUs {list}"))
        .collect();
    if bad.is_empty() {
        return Vec::new();
    }
    let n = bad.len();
    bad.truncate(5);
    vec![format!(
        "{n} engine thread(s) not pinned to CPUs {expected}: {}",
        bad.join(", ")
    )]
}

/// The memory cap read back from the kernel must be the planned one
/// (rounded down to a page).
pub(crate) fn memory_limit_violation(planned: u64, read_back: u64) -> Option<String> {
    let rounded = planned / PAGE * PAGE;
    (read_back != rounded && read_back != planned).then(|| {
        format!(
            "memory cap read back as {} but {} was planned",
            Bytes(read_back),
            Bytes(planned)
        )
    })
}

/// An engine cache larger than the memory cap it runs under: the engine
/// would be OOM-killed or swap before it filled it, so the phase did not
/// measure the cache the cell claims.
pub fn cache_violation(cache: Option<u64>, cap: u64) -> Option<String> {
    let cache = cache?;
    (cap > 0 && cache > cap).then(|| {
        format!(
            "the engine's cache is {} but its memory cap is {}: the cache does not fit the cap it runs under",
            Bytes(cache),
            Bytes(cap)
        )
    })
}

/// A hog must still hold what it locked at the start (5% slack for the
/// kernel's accounting).
pub(crate) fn hog_violation(expected: u64, locked_now: Option<u64>) -> Option<String> {
    match locked_now {
        None => Some("the memory hog is gone: the data could sit in the page cache".into()),
        Some(now) if now.saturating_mul(100) < expected.saturating_mul(95) => Some(format!(
            "the memory hog holds {} locked but {} was planned",
            Bytes(now),
            Bytes(expected)
        )),
        Some(_) => None,
    }
}

/// How every OOM-kill violation starts (to replace it with a larger count).
pub(crate) const OOM_VIOLATION_PREFIX: &str = "the kernel OOM-killed";

/// OOM kills and restarts of the engine during the cell.
pub(crate) fn supervision_violations(oom_kills: u64, restarts: u64) -> Vec<String> {
    let mut out = Vec::new();
    if oom_kills > 0 {
        out.push(format!(
            "{OOM_VIOLATION_PREFIX} {oom_kills} process(es) in the server's cgroup"
        ));
    }
    if restarts > 0 {
        out.push(format!("the engine restarted {restarts} time(s)"));
    }
    out
}

/// The share of the server CPUs' time that something outside the server's
/// cgroup may use during a phase before the phase is invalid.
///
/// Why 10%: on a quiet host the only others on the server's CPUs are
/// kernel threads and benchcage's own sampler and watcher, a few percent
/// at most. One CPU hog or a second engine pinned to the same CPU takes
/// 30-50% or more (two runs sharing CPUs each lost 48% of their
/// throughput, issue 15, D2). 10% sits clear of both, and a neighbour that
/// takes a tenth of the server's CPU time is already a deviation from the
/// environment. Interrupt time is not counted, and steal time is
/// counted apart (see `procfs::CpuTimes`).
pub(crate) const CONTENTION_LIMIT: f64 = 0.10;

/// CPU-seconds per server CPU that foreign work must also exceed before a
/// phase counts as shared. `/proc/stat` counts in ticks of 10 ms, so each
/// CPU's busy time is off by up to a tick at either end of the phase, and
/// benchcage's own sampler wakes at both ends: in a phase of a few hundred
/// milliseconds that noise alone is over 10%. A quarter second per CPU is
/// more than ten times that error, and any neighbour that matters (a CPU
/// hog takes 30-50% of a 4 s phase, 1.2 s or more) clears it.
pub(crate) const CONTENTION_FLOOR_S_PER_CPU: f64 = 0.25;

/// A share rounded to three decimals, for stable records.
pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The share of the server CPUs' capacity (`wall_s` x `cpus`) that went to
/// anything but the server's cgroup: the CPUs' busy time minus the
/// server's own CPU time. `None` when nothing was measured.
pub(crate) fn foreign_share(busy_s: f64, server_s: f64, wall_s: f64, cpus: usize) -> Option<f64> {
    let capacity = wall_s * cpus as f64;
    (capacity > 0.0).then(|| round3(((busy_s - server_s) / capacity).clamp(0.0, 1.0)))
}

/// The share of the server CPUs' capacity that the hypervisor gave to
/// other guests (steal time). `None` when nothing was measured.
pub(crate) fn steal_share(steal_s: f64, wall_s: f64, cpus: usize) -> Option<f64> {
    let capacity = wall_s * cpus as f64;
    (capacity > 0.0).then(|| round3((steal_s / capacity).clamp(0.0, 1.0)))
}

/// Contention beyond [`CONTENTION_LIMIT`] on the server's `cpus` over a
/// phase of `wall_s` seconds, once the lost CPU time also clears the
/// counters' resolution ([`CONTENTION_FLOOR_S_PER_CPU`]). Two thieves
/// count together and are named apart: `foreign`, work of this machine
/// outside the server's cgroup, and `steal`, the hypervisor running other
/// guests on the virtual CPUs (a noisy cloud neighbour). Either way the
/// server did not have the CPUs the environment promised it, except for
/// the steal the environment allows (`steal_allowed`, its
/// `server.steal_allowance`; 0 unless it says so): only steal beyond it
/// counts.
pub fn contention_violation(
    foreign: f64,
    steal: f64,
    steal_allowed: f64,
    wall_s: f64,
    cpus: &CpuSet,
) -> Option<String> {
    let n = cpus.len().max(1) as f64;
    let excess = (steal - steal_allowed).max(0.0);
    let lost = foreign + excess;
    let lost_s = lost * wall_s * n;
    if lost <= CONTENTION_LIMIT || lost_s <= CONTENTION_FLOOR_S_PER_CPU * n {
        return None;
    }
    let limit = CONTENTION_LIMIT * 100.0;
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    let allowed = if steal_allowed > 0.0 {
        format!("; the environment allows {}", pct(steal_allowed))
    } else {
        String::new()
    };
    Some(if foreign >= excess {
        let also = if excess >= 0.01 {
            format!(
                ", and the hypervisor took {} more (steal time{allowed})",
                pct(steal)
            )
        } else {
            String::new()
        };
        format!(
            "{FOREIGN_CPU} {} of the server's CPUs ({cpus}) during the phase{also} (limit {limit:.0}%): another run, a build or a CPU hog shared them, so the result is not the environment's",
            pct(foreign)
        )
    } else {
        let also = if foreign >= 0.01 {
            format!(
                ", and something outside the server's cgroup used {} more",
                pct(foreign)
            )
        } else {
            String::new()
        };
        let hint = if steal_allowed > 0.0 {
            "run on a quieter host or on dedicated CPUs"
        } else {
            "run on a quieter host or on dedicated CPUs, or give the environment a `server.steal_allowance` the write-up's own VM had (it is recorded and shown with every result)"
        };
        format!(
            "{STOLEN_CPU} {} of the server's CPUs ({cpus}) for other guests during the phase (steal time{allowed}){also} (limit {limit:.0}%): the virtual CPUs were not the environment's own, so the result is not either; {hint}",
            pct(steal)
        )
    })
}

/// How a contention violation begins when this machine's own work took
/// the server's CPUs.
pub const FOREIGN_CPU: &str = "something outside the server's cgroup used";

/// How a contention violation begins when the hypervisor took them.
pub const STOLEN_CPU: &str = "the hypervisor took";

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(faults: u64, read: u64) -> CgroupStats {
        CgroupStats {
            major_faults: faults,
            io_read_bytes: read,
            memory_limit: 1 << 30,
            ..Default::default()
        }
    }

    #[test]
    fn an_io_bound_phase_that_read_from_disk_is_valid() {
        let io = phase_io(
            &stats(10, 0),
            &stats(5_000, 64 << 20),
            true,
            IoBoundThresholds::default(),
        );
        assert_eq!(io.major_faults, 4_990);
        assert_eq!(io.io_read_bytes, 64 << 20);
        assert_eq!(io.io_bound_violation, None);
    }

    #[test]
    fn an_io_bound_phase_that_read_nothing_is_flagged() {
        let io = phase_io(
            &stats(10, 0),
            &stats(12, 4096),
            true,
            IoBoundThresholds::default(),
        );
        let why = io.io_bound_violation.unwrap();
        assert!(why.contains("expect: io-bound"), "{why}");
        assert!(why.contains("read 4KiB from disk"), "{why}");
        let strict = IoBoundThresholds {
            min_read_bytes: 0,
            min_major_faults: 100,
        };
        let why = phase_io(&stats(10, 0), &stats(12, 64 << 20), true, strict)
            .io_bound_violation
            .unwrap();
        assert!(why.contains("2 major faults"), "{why}");
    }

    #[test]
    fn a_phase_that_claims_nothing_is_never_flagged() {
        let io = phase_io(
            &stats(0, 0),
            &stats(0, 0),
            false,
            IoBoundThresholds::default(),
        );
        assert_eq!(io.io_bound_violation, None);
        assert!(!io.expect_io_bound);
    }

    #[test]
    fn a_thread_outside_the_server_cpus_is_a_violation() {
        let cpus: CpuSet = "1".parse().unwrap();
        let mut threads = BTreeMap::new();
        threads.insert("10/10".to_string(), "1".to_string());
        assert!(thread_cpu_violations(&threads, &cpus).is_empty());
        threads.insert("10/11".to_string(), "0-1".to_string());
        let v = thread_cpu_violations(&threads, &cpus);
        assert_eq!(v.len(), 1);
        assert!(v[0].contains("10/11 on CPUs 0-1"), "{v:?}");
        assert!(!thread_cpu_violations(&BTreeMap::new(), &cpus).is_empty());
    }

    #[test]
    fn a_memory_cap_read_back_rounded_to_a_page_holds() {
        assert_eq!(memory_limit_violation(1_000_000, 999_424), None);
        assert_eq!(memory_limit_violation(1 << 30, 1 << 30), None);
        assert!(memory_limit_violation(1 << 30, 2 << 30).is_some());
    }

    #[test]
    fn a_cache_over_the_cap_is_a_violation_and_one_under_it_or_unknown_is_not() {
        assert_eq!(cache_violation(Some(100 << 20), 200 << 20), None);
        assert_eq!(cache_violation(None, 200 << 20), None);
        let v = cache_violation(Some(1 << 30), 150 << 20).unwrap();
        assert!(
            v.contains("cache is 1GiB but its memory cap is 150MiB"),
            "{v}"
        );
    }

    #[test]
    fn a_hog_that_lost_its_lock_invalidates_the_cell() {
        assert_eq!(hog_violation(100 << 20, Some(100 << 20)), None);
        assert!(hog_violation(100 << 20, Some(10 << 20)).is_some());
        assert!(hog_violation(100 << 20, None).is_some());
    }

    #[test]
    fn only_foreign_cpu_time_beyond_the_limit_is_contention() {
        let cpus: CpuSet = "1".parse().unwrap();
        // The engine used 3 of 10 s and the CPU was busy 3.1 s: quiet.
        let quiet = foreign_share(3.1, 3.0, 10.0, 1).unwrap();
        assert_eq!(quiet, 0.01);
        assert_eq!(contention_violation(quiet, 0.0, 0.0, 10.0, &cpus), None);
        // A burner took the other 6 s.
        let busy = foreign_share(9.0, 3.0, 10.0, 1).unwrap();
        assert_eq!(busy, 0.6);
        let why = contention_violation(busy, 0.0, 0.0, 10.0, &cpus).unwrap();
        assert!(why.starts_with(FOREIGN_CPU), "{why}");
        assert!(why.contains("60% of the server's CPUs (1)"), "{why}");
        assert!(!why.contains("steal"), "{why}");
        // 11% of a 0.2 s phase is two ticks of the counters: noise.
        assert_eq!(contention_violation(0.11, 0.0, 0.0, 0.2, &cpus), None);
        // 11% of 1 s on each of two CPUs is 0.22 s, under 0.5: noise too;
        // 11% of 10 s on each is 2.2 s: contention.
        let two: CpuSet = "1-2".parse().unwrap();
        assert_eq!(contention_violation(0.11, 0.0, 0.0, 1.0, &two), None);
        assert!(contention_violation(0.11, 0.0, 0.0, 10.0, &two).is_some());
        // Tick rounding can put busy below the engine's time: never negative.
        assert_eq!(foreign_share(2.9, 3.0, 10.0, 2), Some(0.0));
        assert_eq!(foreign_share(1.0, 0.0, 0.0, 1), None);
    }

    #[test]
    fn stolen_cpu_time_counts_with_foreign_time_and_is_named_apart() {
        let cpus: CpuSet = "1".parse().unwrap();
        assert_eq!(steal_share(2.0, 10.0, 1), Some(0.2));
        assert_eq!(steal_share(2.0, 0.0, 1), None);
        // A noisy cloud neighbour alone: named as steal, not as a build.
        let why = contention_violation(0.02, 0.2, 0.0, 10.0, &cpus).unwrap();
        assert!(why.starts_with(STOLEN_CPU), "{why}");
        assert!(why.contains("20% of the server's CPUs (1)"), "{why}");
        assert!(why.contains("used 2% more"), "{why}");
        // Six and six percent: neither alone, both together, is over 10%.
        let why = contention_violation(0.06, 0.06, 0.0, 10.0, &cpus).unwrap();
        assert!(why.starts_with(FOREIGN_CPU), "{why}");
        assert!(why.contains("took 6% more (steal time)"), "{why}");
        assert_eq!(contention_violation(0.04, 0.05, 0.0, 10.0, &cpus), None);
    }

    #[test]
    fn steal_within_the_environments_allowance_does_not_void_a_phase_and_beyond_it_does() {
        let cpus: CpuSet = "1".parse().unwrap();
        // 25% steal, 30% allowed: valid; without the allowance: void.
        assert_eq!(contention_violation(0.02, 0.25, 0.30, 10.0, &cpus), None);
        let why = contention_violation(0.02, 0.25, 0.0, 10.0, &cpus).unwrap();
        assert!(why.contains("server.steal_allowance"), "{why}");
        // 45% steal, 30% allowed: 15% beyond it, void, and said so.
        let why = contention_violation(0.02, 0.45, 0.30, 10.0, &cpus).unwrap();
        assert!(why.starts_with(STOLEN_CPU), "{why}");
        assert!(
            why.contains("45% of the server's CPUs (1) for other guests during the phase (steal time; the environment allows 30%)"),
            "{why}"
        );
        // The allowance never covers this machine's own work.
        let why = contention_violation(0.15, 0.25, 0.30, 10.0, &cpus).unwrap();
        assert!(why.starts_with(FOREIGN_CPU), "{why}");
    }

    #[test]
    fn oom_kills_and_restarts_are_violations() {
        assert!(supervision_violations(0, 0).is_empty());
        assert_eq!(supervision_violations(1, 2).len(), 2);
    }
}

/// The server reported another version than the one listed: `12` matches
/// `12`, `12.22` and `12.22-beta`; not `13.1` or `120`.
pub(crate) fn version_violation(listed: &str, reported: &str) -> Option<String> {
    let rest = reported.strip_prefix(listed);
    let ok = rest.is_some_and(|r| r.is_empty() || r.starts_with(['.', '-', ' ', '+']));
    (!ok).then(|| {
        format!(
            "the server reports version `{}`, not the listed {listed}: the binary or image is another version than the spec names",
            crate::error::excerpt(reported)
        )
    })
}

#[cfg(test)]
mod version_tests {
    use super::version_violation;

    #[test]
    fn a_reported_version_must_start_with_the_listed_one() {
        for (listed, reported) in [
            ("12", "12.22"),
            ("7.0", "7.0.15"),
            ("10.11", "10.11.6-MariaDB-0+deb12u1"),
            ("6.2", "6.2"),
        ] {
            assert_eq!(
                version_violation(listed, reported),
                None,
                "{listed} {reported}"
            );
        }
        for (listed, reported) in [
            ("12", "13.1"),
            ("12", "120.1"),
            ("8.2", "8.0.1"),
            ("7.0", ""),
        ] {
            let v = version_violation(listed, reported).unwrap();
            assert!(v.contains(&format!("not the listed {listed}")), "{v}");
        }
    }
}
