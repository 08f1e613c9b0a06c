//! Kernel counters of one cgroup, from its files. Takes the group's
//! directories (controller name -> dir, `unified` for v2) so the docker
//! backend reads a container's cgroup with the same code:
//! `read_cgroup_stats(&Hierarchy::detect()?.mount_dirs(Path::new("docker").join(id)))`.

use super::files::{self, *};
use crate::sandbox::{CgroupStats, SandboxError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Read memory, CPU and IO counters of a group given its directories.
pub(crate) fn read_cgroup_stats(
    dirs: &BTreeMap<String, PathBuf>,
) -> Result<CgroupStats, SandboxError> {
    match dirs.get("unified") {
        Some(dir) => read_v2(dir),
        None => read_v1(dirs),
    }
}

fn dir<'a>(dirs: &'a BTreeMap<String, PathBuf>, c: &str) -> Result<&'a Path, SandboxError> {
    dirs.get(c).map(PathBuf::as_path).ok_or_else(|| {
        SandboxError::Unsupported(format!("no `{c}` directory given for the stats reader"))
    })
}

/// Prefer the hierarchical `total_*` key of a v1 memory.stat.
fn v1_stat(stat: &BTreeMap<String, u64>, key: &str) -> u64 {
    stat.get(&format!("total_{key}"))
        .or_else(|| stat.get(key))
        .copied()
        .unwrap_or(0)
}

fn read_v1(dirs: &BTreeMap<String, PathBuf>) -> Result<CgroupStats, SandboxError> {
    let mem = dir(dirs, "memory")?;
    let stat = flat_keyed(&files::read(&mem.join(MEMORY_STAT))?);
    let oom = flat_keyed(&files::read(&mem.join(V1_MEMORY_OOM_CONTROL))?);
    let cpu_ns = files::read_u64(&dir(dirs, "cpuacct")?.join(V1_CPUACCT_USAGE))?;
    let (io_read_bytes, io_write_bytes) = v1_io_bytes(&files::read(
        &dir(dirs, "blkio")?.join(V1_BLKIO_SERVICE_BYTES),
    )?);
    Ok(CgroupStats {
        memory_usage: files::read_u64(&mem.join(V1_MEMORY_USAGE))?,
        memory_max_usage: files::read_u64(&mem.join(V1_MEMORY_MAX_USAGE))?,
        memory_limit: files::read_u64(&mem.join(V1_MEMORY_LIMIT))?,
        page_cache: v1_stat(&stat, "cache"),
        rss: v1_stat(&stat, "rss"),
        inactive_file: v1_stat(&stat, "inactive_file"),
        major_faults: v1_stat(&stat, "pgmajfault"),
        // With memsw accounting the memsw counter is charged first, so a
        // cap without swap is hit there and only memsw.failcnt moves.
        failcnt: files::read_u64(&mem.join(V1_MEMORY_FAILCNT))?
            .max(files::read_u64(&mem.join(V1_MEMSW_FAILCNT)).unwrap_or(0)),
        // `oom_kill` exists from Linux 4.13; before, `under_oom` at least
        // tells that the group is in an OOM state right now.
        oom_kills: oom
            .get("oom_kill")
            .or_else(|| oom.get("under_oom"))
            .copied()
            .unwrap_or(0),
        cpu_usec: cpu_ns / 1000,
        io_read_bytes,
        io_write_bytes,
    })
}

/// Sum `Read` and `Write` over devices of `blkio.throttle.io_service_bytes*`.
fn v1_io_bytes(text: &str) -> (u64, u64) {
    let (mut r, mut w) = (0, 0);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [_dev, op, n] = f[..] {
            let n: u64 = n.parse().unwrap_or(0);
            match op {
                "Read" => r += n,
                "Write" => w += n,
                _ => {}
            }
        }
    }
    (r, w)
}

/// Sum `rbytes=` and `wbytes=` over devices of `io.stat`.
fn v2_io_bytes(text: &str) -> (u64, u64) {
    let (mut r, mut w) = (0, 0);
    for field in text.split_whitespace() {
        if let Some((k, v)) = field.split_once('=') {
            let v: u64 = v.parse().unwrap_or(0);
            match k {
                "rbytes" => r += v,
                "wbytes" => w += v,
                _ => {}
            }
        }
    }
    (r, w)
}

fn read_v2(dir: &Path) -> Result<CgroupStats, SandboxError> {
    let stat = flat_keyed(&files::read(&dir.join(MEMORY_STAT))?);
    let events = flat_keyed(&files::read(&dir.join(V2_MEMORY_EVENTS))?);
    let cpu = flat_keyed(&files::read(&dir.join(V2_CPU_STAT))?);
    // io.stat is absent when the io controller is not enabled for the group.
    let io = std::fs::read_to_string(dir.join(V2_IO_STAT)).unwrap_or_default();
    let (io_read_bytes, io_write_bytes) = v2_io_bytes(&io);
    let limit = files::read_trim(&dir.join(V2_MEMORY_MAX))?;
    let usage = files::read_u64(&dir.join(V2_MEMORY_CURRENT))?;
    // memory.peak exists from Linux 5.19.
    let peak = files::read_u64(&dir.join(V2_MEMORY_PEAK)).unwrap_or(usage);
    let get = |m: &BTreeMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    Ok(CgroupStats {
        memory_usage: usage,
        memory_max_usage: peak,
        memory_limit: limit.parse().unwrap_or(u64::MAX),
        page_cache: get(&stat, "file"),
        rss: get(&stat, "anon"),
        inactive_file: get(&stat, "inactive_file"),
        major_faults: get(&stat, "pgmajfault"),
        failcnt: get(&events, "max"),
        oom_kills: get(&events, "oom_kill"),
        cpu_usec: get(&cpu, "usage_usec"),
        io_read_bytes,
        io_write_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn v2_stats_come_from_memory_events_cpu_stat_and_io_stat() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("g");
        put(
            &d,
            MEMORY_STAT,
            "anon 100\nfile 200\ninactive_file 50\npgmajfault 7\n",
        );
        put(
            &d,
            V2_MEMORY_EVENTS,
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        );
        put(&d, V2_CPU_STAT, "usage_usec 1234\nuser_usec 1000\n");
        put(
            &d,
            V2_IO_STAT,
            "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2\n8:0 rbytes=1 wbytes=1\n",
        );
        put(&d, V2_MEMORY_MAX, "max\n");
        put(&d, V2_MEMORY_CURRENT, "300\n");
        put(&d, V2_MEMORY_PEAK, "400\n");
        let s = read_cgroup_stats(&BTreeMap::from([("unified".into(), d)])).unwrap();
        assert_eq!((s.rss, s.page_cache, s.inactive_file), (100, 200, 50));
        assert_eq!((s.major_faults, s.failcnt, s.oom_kills), (7, 3, 1));
        assert_eq!(
            (s.cpu_usec, s.io_read_bytes, s.io_write_bytes),
            (1234, 4097, 8193)
        );
        assert_eq!(
            (s.memory_usage, s.memory_max_usage, s.memory_limit),
            (300, 400, u64::MAX)
        );
    }

    #[test]
    fn v1_stats_prefer_hierarchical_totals_and_read_oom_kill_from_oom_control() {
        let t = tempfile::tempdir().unwrap();
        let m = t.path().join("memory/g");
        put(
            &m,
            MEMORY_STAT,
            "cache 1\nrss 2\ntotal_cache 10\ntotal_rss 20\ntotal_inactive_file 5\ntotal_pgmajfault 9\n",
        );
        put(
            &m,
            V1_MEMORY_OOM_CONTROL,
            "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        );
        put(&m, V1_MEMORY_USAGE, "30\n");
        put(&m, V1_MEMORY_MAX_USAGE, "40\n");
        put(&m, V1_MEMORY_LIMIT, "1048576\n");
        put(&m, V1_MEMORY_FAILCNT, "0\n");
        put(&m, V1_MEMSW_FAILCNT, "6\n");
        let c = t.path().join("cpuacct/g");
        put(&c, V1_CPUACCT_USAGE, "5000000\n");
        let b = t.path().join("blkio/g");
        put(
            &b,
            V1_BLKIO_SERVICE_BYTES,
            "254:0 Read 100\n254:0 Write 200\n254:0 Sync 300\n254:0 Total 300\nTotal 300\n",
        );
        let dirs = BTreeMap::from([
            ("memory".into(), m),
            ("cpuacct".into(), c),
            ("blkio".into(), b),
        ]);
        let s = read_cgroup_stats(&dirs).unwrap();
        assert_eq!(
            (s.page_cache, s.rss, s.inactive_file, s.major_faults),
            (10, 20, 5, 9)
        );
        assert_eq!((s.oom_kills, s.failcnt, s.memory_limit), (2, 6, 1048576));
        assert_eq!(
            (s.cpu_usec, s.io_read_bytes, s.io_write_bytes),
            (5000, 100, 200)
        );
    }
}
