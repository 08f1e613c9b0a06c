//! Facts from `/proc`. Every function takes the proc root (`/proc` in real
//! use) so that tests can point it at a fixture folder.

use std::collections::BTreeMap;
use std::path::Path;

/// The real proc root.
pub const PROC: &str = "/proc";

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
pub fn thread_cpus(proc_root: &Path, pids: &[u32]) -> BTreeMap<String, String> {
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

/// Bytes a process holds locked (`VmLck`), `None` when it is gone.
pub fn locked_bytes(proc_root: &Path, pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("status")).ok()?;
    status_kib(&text, "VmLck")
}

/// Peak resident memory (`VmHWM`) of this process, in bytes.
pub fn self_peak_rss(proc_root: &Path) -> Option<u64> {
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
}
