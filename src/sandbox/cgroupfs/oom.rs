//! OOM kills from the kernel's own records (`/dev/kmsg`), for a group
//! that is gone: the Docker daemon removes a container's cgroup, counters
//! and all, as soon as its PID 1 dies, OOM-killed or not.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The kernel log buffer, one record per read.
pub(crate) const KMSG: &str = "/dev/kmsg";

/// Count the kernel's `oom-kill:` records whose killed task or OOM domain
/// was `memcg` (e.g. `/docker/<id>`), from the kernel log buffer.
pub(crate) fn kernel_oom_kills(kmsg: &Path, memcg: &str) -> u64 {
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
