//! Facts from `/proc`. Every function takes the proc root (`/proc` in real
//! use) so that tests can point it at a fixture folder.

use std::collections::BTreeMap;
use std::path::Path;

/// The real proc root.
pub(crate) const PROC: &str = "/proc";

/// One `Key:   value` field of a `/proc/<pid>/status`-like file.
fn status_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// A `kB` field of a status file, in bytes (`VmLck:  1024 kB` -> 1048576).
fn status_kib(text: &str, key: &str) -> Option<u64> {
    let v = status_field(text, key)?;
    let n: u64 = v.split_whitespace().next()?.parse().ok()?;
    Some(n * 1024)
}

/// `Cpus_allowed_list` of every thread of every pid, keyed `pid/tid`.
/// Processes or threads that exit while being read are skipped.
pub(crate) fn thread_cpus(proc_root: &Path, pids: &[u32]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(proc_root.join(pid.to_string()).join("task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let tid = task.file_name().to_string_lossy().to_string();
            let Ok(text) = std::fs::read_to_string(task.path().join("status")) else {
                continue;
            };
            if let Some(list) = status_field(&text, "Cpus_allowed_list") {
                out.insert(format!("{pid}/{tid}"), list);
            }
        }
    }
    out
}

/// Clock ticks per second of `/proc/stat` (USER_HZ).
fn user_hz() -> f64 {
    // SAFETY: sysconf only reads a constant of the C library.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// What `cpus` did with their time, in seconds, from `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CpuTimes {
    /// Running anything of this machine's: user, nice and system time.
    /// Interrupt and softirq time are left out: on the server's CPUs much
    /// of it is the engine's own network traffic, not someone else's work.
    pub busy_s: f64,
    /// Steal: time the hypervisor ran another guest while this machine's
    /// virtual CPU wanted to run (0 on bare metal).
    pub steal_s: f64,
}

/// Busy and stolen seconds of `cpus` so far; `None` when `/proc/stat` is
/// unreadable or lacks one of them.
pub(crate) fn cpu_times(proc_root: &Path, cpus: &crate::units::CpuSet) -> Option<CpuTimes> {
    let text = std::fs::read_to_string(proc_root.join("stat")).ok()?;
    let (busy, steal) = busy_ticks(&text, cpus)?;
    Some(CpuTimes {
        busy_s: busy as f64 / user_hz(),
        steal_s: steal as f64 / user_hz(),
    })
}

/// Busy and stolen ticks of `cpus` in the text of `/proc/stat`; `None`
/// when a CPU is missing from it.
fn busy_ticks(stat: &str, cpus: &crate::units::CpuSet) -> Option<(u64, u64)> {
    let (mut busy, mut steal) = (0, 0);
    for cpu in cpus.iter() {
        let name = format!("cpu{cpu}");
        let line = stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        // user nice system idle iowait irq softirq steal ...
        busy += f.first()? + f.get(1)? + f.get(2)?;
        steal += f.get(7).copied().unwrap_or(0);
    }
    Some((busy, steal))
}

/// Nanoseconds each thread of `pids` waited on a run queue, runnable but
/// not running (`/proc/<pid>/task/<tid>/schedstat`, second field), keyed
/// by tid. Threads that exit while being read are skipped.
pub(crate) fn run_delay_ns(proc_root: &Path, pids: &[u32]) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(proc_root.join(pid.to_string()).join("task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            let text = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            if let Some(Ok(wait)) = text.split_whitespace().nth(1).map(str::parse) {
                out.insert(tid, wait);
            }
        }
    }
    out
}

/// Bytes a process holds locked (`VmLck`), `None` when it is gone.
pub fn locked_bytes(proc_root: &Path, pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("status")).ok()?;
    status_kib(&text, "VmLck")
}

/// Peak resident memory (`VmHWM`) of this process, in bytes.
pub(crate) fn self_peak_rss(proc_root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(proc_root.join("self").join("status")).ok()?;
    status_kib(&text, "VmHWM")
}

/// Current resident memory (`VmRSS`) of this process, in bytes.
pub fn self_rss(proc_root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(proc_root.join("self").join("status")).ok()?;
    status_kib(&text, "VmRSS")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_status(root: &Path, rel: &str, body: &str) {
        let dir = root.join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("status"), body).unwrap();
    }

    #[test]
    fn thread_cpus_lists_every_thread_of_every_pid() {
        let root = tempfile::tempdir().unwrap();
        write_status(
            root.path(),
            "10/task/10",
            "Name:\tx\nCpus_allowed_list:\t0\n",
        );
        write_status(
            root.path(),
            "10/task/11",
            "Name:\tx\nCpus_allowed_list:\t0-1\n",
        );
        write_status(root.path(), "20/task/20", "Cpus_allowed_list:\t1\n");
        let got = thread_cpus(root.path(), &[10, 20, 30]);
        assert_eq!(got.len(), 3);
        assert_eq!(got["10/11"], "0-1");
        assert_eq!(got["20/20"], "1");
    }

    #[test]
    fn locked_bytes_reads_vmlck_in_bytes() {
        let root = tempfile::tempdir().unwrap();
        write_status(root.path(), "42", "VmPeak:\t 9 kB\nVmLck:\t    2048 kB\n");
        assert_eq!(locked_bytes(root.path(), 42), Some(2048 * 1024));
        assert_eq!(locked_bytes(root.path(), 43), None);
    }

    #[test]
    fn this_process_has_a_peak_rss() {
        let rss = self_rss(Path::new(PROC)).unwrap();
        let peak = self_peak_rss(Path::new(PROC)).unwrap();
        assert!(peak > 1024 * 1024, "{peak}");
        assert!(rss <= peak, "{rss} > {peak}");
    }

    #[test]
    fn busy_time_of_the_listed_cpus_leaves_idle_iowait_and_interrupts_out_and_steal_apart() {
        let stat = "cpu  9 9 9 9 9 9 9 9 0 0\n\
                    cpu0 100 1 10 5000 7 3 4 0 0 0\n\
                    cpu1 200 2 20 6000 8 5 6 9 0 0\n";
        let one: crate::units::CpuSet = "1".parse().unwrap();
        assert_eq!(busy_ticks(stat, &one), Some((222, 9)));
        let both: crate::units::CpuSet = "0-1".parse().unwrap();
        assert_eq!(busy_ticks(stat, &both), Some((333, 9)));
        let gone: crate::units::CpuSet = "2".parse().unwrap();
        assert_eq!(busy_ticks(stat, &gone), None);
    }
}
