//! [`StatsReader`]: a sandbox's kernel counters read from the directories
//! of its server and client groups and nothing else, so that the sampler
//! reads every second while the lifecycle holds the sandbox (a readiness
//! wait, a phase). Clones share what the sandbox learns later: the Docker
//! backend's server group is known only once the engine's container runs.

use crate::sandbox::cgroupfs::oom::{KMSG, kernel_oom_kills};
use crate::sandbox::cgroupfs::stats::read_cgroup_stats;
use crate::sandbox::{CgroupStats, SandboxError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The server group as the reader knows it.
#[derive(Debug, Clone, Default)]
struct Server {
    /// Its directories (controller -> dir); empty until the group exists,
    /// when the server has used nothing yet.
    dirs: BTreeMap<String, PathBuf>,
    /// Its memory cgroup as the kernel log names it (`/docker/<id>`), for
    /// a group that goes with its engine: once it is gone the last reading
    /// stands, with the OOM kills the kernel logged for it.
    memcg: Option<String>,
}

#[derive(Debug, Default)]
struct Groups {
    server: Server,
    client: BTreeMap<String, PathBuf>,
    /// The last server reading, for a server group that is gone.
    last: Option<CgroupStats>,
}

/// Reads the kernel counters of a sandbox's server and client groups
/// without the sandbox. Cheap to clone; clones see the same groups.
#[derive(Debug, Clone, Default)]
pub struct StatsReader(Arc<Mutex<Groups>>);

impl StatsReader {
    /// A reader of the groups at these directories (controller -> dir,
    /// `unified` on v2); an empty server means it does not exist yet.
    pub fn new(server: BTreeMap<String, PathBuf>, client: BTreeMap<String, PathBuf>) -> Self {
        StatsReader(Arc::new(Mutex::new(Groups {
            server: Server {
                dirs: server,
                memcg: None,
            },
            client,
            last: None,
        })))
    }

    /// Read the server from a group known only now (a container's), which
    /// the kernel log names `memcg`.
    pub(crate) fn set_server(&self, dirs: BTreeMap<String, PathBuf>, memcg: String) {
        self.groups().server = Server {
            dirs,
            memcg: Some(memcg),
        };
    }

    /// The lock is only held to copy paths or a reading: a poisoned one
    /// still holds valid data.
    fn groups(&self) -> MutexGuard<'_, Groups> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counters of the server group: zero before it exists; after a group
    /// that goes with its engine is gone, the last reading with the OOM
    /// kills from the kernel's records.
    pub fn server(&self) -> Result<CgroupStats, SandboxError> {
        let server = self.groups().server.clone();
        if server.dirs.is_empty() {
            return Ok(CgroupStats::default());
        }
        match (read_cgroup_stats(&server.dirs), server.memcg) {
            (Ok(s), _) => {
                self.groups().last = Some(s.clone());
                Ok(s)
            }
            (Err(e), None) => Err(e),
            (Err(_), Some(memcg)) => {
                let mut s = self.groups().last.clone().unwrap_or_default();
                s.oom_kills = s.oom_kills.max(kernel_oom_kills(Path::new(KMSG), &memcg));
                Ok(s)
            }
        }
    }

    /// Counters of the client group.
    pub fn client(&self) -> Result<CgroupStats, SandboxError> {
        let dirs = self.groups().client.clone();
        read_cgroup_stats(&dirs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::cgroupfs::files::*;

    /// A v2 group's counter files with `usage` bytes in use.
    fn v2_group(dir: &Path, usage: u64) {
        std::fs::create_dir_all(dir).unwrap();
        for (name, text) in [
            (MEMORY_STAT, "anon 1\nfile 2\n".to_string()),
            (V2_MEMORY_EVENTS, "oom_kill 0\n".into()),
            (V2_CPU_STAT, "usage_usec 5\n".into()),
            (V2_MEMORY_MAX, "max\n".into()),
            (V2_MEMORY_CURRENT, format!("{usage}\n")),
        ] {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    #[test]
    fn a_clone_reads_the_server_group_set_after_it_was_made() {
        let t = tempfile::tempdir().unwrap();
        let reader = StatsReader::default();
        let clone = reader.clone();
        assert_eq!(clone.server().unwrap(), CgroupStats::default());
        let dir = t.path().join("container");
        v2_group(&dir, 300);
        reader.set_server(
            BTreeMap::from([("unified".into(), dir.clone())]),
            "/docker/none".into(),
        );
        assert_eq!(clone.server().unwrap().memory_usage, 300);
        // Gone with its engine: the last reading stands.
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(clone.server().unwrap().memory_usage, 300);
    }

    #[test]
    fn a_missing_group_without_a_kernel_name_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        let gone = BTreeMap::from([("unified".to_string(), t.path().join("gone"))]);
        let reader = StatsReader::new(gone.clone(), gone);
        assert!(reader.server().is_err());
        assert!(reader.client().is_err());
    }
}
