//! Where a container's cgroup lives, and the kernel's OOM records for it.
//! Counters are read with the cgroup backend's reader; OOM kills of the
//! engine (PID 1) also come from the kernel log, because the daemon removes
//! the container's cgroup, counters and all, as soon as PID 1 dies.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The container's memory cgroup path relative to the controller's mount,
/// from `/proc/<pid>/cgroup` text (v1 `N:memory:/docker/<id>`, v2 `0::/...`).
pub fn relative_from_proc(proc_cgroup: &str) -> Option<PathBuf> {
    let mut unified = None;
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "memory") {
            return Some(PathBuf::from(path.trim_start_matches('/')));
        }
        if controllers.is_empty() {
            unified = Some(PathBuf::from(path.trim_start_matches('/')));
        }
    }
    unified
}

/// Where the daemon puts a container's cgroup when the process is gone
/// (driver and version from `docker info`; the default cgroup parent).
pub fn relative_from_driver(driver: &str, version: &str, id: &str) -> PathBuf {
    match (driver, version) {
        ("systemd", _) => PathBuf::from("system.slice").join(format!("docker-{id}.scope")),
        (_, _) => PathBuf::from("docker").join(id),
    }
}

/// Count the kernel's `oom-kill:` records whose killed task or OOM domain
/// was `memcg` (e.g. `/docker/<id>`), from the kernel log buffer.
pub fn kernel_oom_kills(kmsg: &Path, memcg: &str) -> u64 {
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(kmsg)
    else {
        return 0;
    };
    let task = format!("task_memcg={memcg},");
    let domain = format!("oom_memcg={memcg},");
    let mut count = 0;
    let mut buf = vec![0u8; 8192];
    loop {
        // /dev/kmsg returns one record per read; EAGAIN at the end, EPIPE
        // when a record was overwritten (skip it and go on).
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                if rec.contains("oom-kill:") && (rec.contains(&task) || rec.contains(&domain)) {
                    count += 1;
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_line_of_proc_cgroup_names_the_container_group() {
        let text = "12:pids:/docker/abc\n5:memory:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n";
        assert_eq!(relative_from_proc(text), Some(PathBuf::from("docker/abc")));
        let v2 = "0::/system.slice/docker-abc.scope\n";
        assert_eq!(
            relative_from_proc(v2),
            Some(PathBuf::from("system.slice/docker-abc.scope"))
        );
    }

    #[test]
    fn driver_paths_follow_cgroupfs_and_systemd_layouts() {
        assert_eq!(
            relative_from_driver("cgroupfs", "1", "abc"),
            PathBuf::from("docker/abc")
        );
        assert_eq!(
            relative_from_driver("systemd", "2", "abc"),
            PathBuf::from("system.slice/docker-abc.scope")
        );
    }

    #[test]
    fn only_oom_records_of_this_container_are_counted() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("kmsg");
        // A regular file reads as one record: one match.
        std::fs::write(
            &p,
            "6,416,946279145,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/docker/abc,task_memcg=/docker/abc,task=redis-server,pid=1,uid=0\n",
        )
        .unwrap();
        assert_eq!(kernel_oom_kills(&p, "/docker/abc"), 1);
        assert_eq!(kernel_oom_kills(&p, "/docker/ab"), 0);
    }
}
