//! Where a container's cgroup lives. Counters are read with the shared
//! stats reader ([`crate::sandbox::stats`]), which also counts
//! the engine's OOM kills from the kernel log once the daemon has removed
//! the container's cgroup, counters and all, with its PID 1.

use std::path::PathBuf;

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
}
