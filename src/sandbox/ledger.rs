//! The ledger: the truth about what a run created, written before it is
//! created, so that a run killed with SIGKILL can be cleaned up later.
//!
//! Where: one file per run, `<root>/<run-id>.ledger`, where `root` is
//! `$BENCHCAGE_STATE_DIR` or [`DEFAULT_ROOT`] (`/var/lib/benchcage/ledger`).
//! It is machine-wide, not per results folder, because what it tracks
//! (cgroups, processes, locked memory) is machine-wide: `benchcage cleanup`
//! must find leftovers of every run whatever `--home` it used.
//!
//! Format: one JSON object per line, fsynced before the resource exists:
//! `{"run":"..","owner_pid":1,"owner_start":2,"kind":"cgroup","dirs":{..}}`.
//! The owner is identified by pid and start time (from /proc/<pid>/stat) so
//! that a reused pid is not mistaken for a live owner. Teardown and reaping
//! walk the entries in reverse; a fully reaped ledger is deleted.

use crate::sandbox::SandboxError;
use crate::sandbox::cgroup::remove;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Environment variable that moves the ledger folder (tests use a temp dir).
pub const ROOT_ENV: &str = "BENCHCAGE_STATE_DIR";
/// Ledger folder when `$BENCHCAGE_STATE_DIR` is not set.
pub const DEFAULT_ROOT: &str = "/var/lib/benchcage/ledger";
const SUFFIX: &str = "ledger";

/// The ledger folder in effect.
pub fn default_root() -> PathBuf {
    std::env::var_os(ROOT_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_ROOT))
}

/// One thing a run creates.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Resource {
    /// A cgroup, one directory per controller (`unified` on v2).
    Cgroup { dirs: BTreeMap<String, PathBuf> },
    /// An engine process, leader of its own process group.
    Process { pid: i32, start_time: u64 },
    /// A memory hog process (outside every sandbox cgroup).
    Hog { pid: i32, start_time: u64 },
    /// A data directory created for the run.
    DataDir { path: PathBuf },
    /// A docker container (removed by the docker backend's cleanup).
    Container { id: String },
}

impl Resource {
    /// A one-line description for reports.
    pub fn describe(&self) -> String {
        match self {
            Resource::Cgroup { dirs } => format!(
                "cgroup {}",
                dirs.values()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Resource::Process { pid, .. } => format!("process {pid}"),
            Resource::Hog { pid, .. } => format!("hog process {pid}"),
            Resource::DataDir { path } => format!("data dir {}", path.display()),
            Resource::Container { id } => format!("container {id}"),
        }
    }

    /// Whether the resource still exists.
    pub fn exists(&self) -> bool {
        match self {
            Resource::Cgroup { dirs } => dirs.values().any(|d| d.exists()),
            Resource::Process { pid, start_time } | Resource::Hog { pid, start_time } => {
                is_alive(*pid, *start_time)
            }
            Resource::DataDir { path } => path.exists(),
            Resource::Container { .. } => true,
        }
    }
}

/// One ledger line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub run: String,
    pub owner_pid: i32,
    pub owner_start: u64,
    #[serde(flatten)]
    pub resource: Resource,
}

/// A run's open ledger.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    file: File,
    run: String,
    owner_pid: i32,
    owner_start: u64,
}

/// Start time of a process in clock ticks since boot (field 22 of
/// /proc/<pid>/stat); `None` when it does not exist.
pub fn process_start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `pid` is the same live process that started at `start_time`
/// (a zombie counts as gone: it holds no memory and no cgroup).
pub fn is_alive(pid: i32, start_time: u64) -> bool {
    if process_start_time(pid) != Some(start_time) {
        return false;
    }
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = state
        .rfind(')')
        .and_then(|i| state[i + 1..].split_whitespace().next().map(str::to_string));
    !matches!(state.as_deref(), Some("Z") | Some("X") | None)
}

fn ledger_err(path: &Path, source: std::io::Error) -> SandboxError {
    SandboxError::Ledger {
        path: path.to_path_buf(),
        source,
    }
}

/// The ledger file of a run under `root`.
pub fn path_for(root: &Path, run_id: &str) -> PathBuf {
    root.join(format!("{run_id}.{SUFFIX}"))
}

impl Ledger {
    /// Open (create) the ledger of `run_id` under `root`, owned by this
    /// process. Refuses a run id whose ledger belongs to a live process.
    pub fn open(root: &Path, run_id: &str) -> Result<Ledger, SandboxError> {
        std::fs::create_dir_all(root).map_err(|e| ledger_err(root, e))?;
        let path = path_for(root, run_id);
        let me = std::process::id() as i32;
        let my_start = process_start_time(me).unwrap_or(0);
        if let Some(e) = read_entries(&path)?.first()
            && (e.owner_pid, e.owner_start) != (me, my_start)
            && is_alive(e.owner_pid, e.owner_start)
        {
            return Err(ledger_err(
                &path,
                std::io::Error::other(format!(
                    "run id `{run_id}` is in use by live pid {}; pick another run id",
                    e.owner_pid
                )),
            ));
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| ledger_err(&path, e))?;
        File::open(root)
            .and_then(|d| d.sync_all())
            .map_err(|e| ledger_err(root, e))?;
        Ok(Ledger {
            path,
            file,
            run: run_id.to_string(),
            owner_pid: me,
            owner_start: my_start,
        })
    }

    /// Append one resource and fsync; call BEFORE creating it.
    pub fn record(&mut self, resource: Resource) -> Result<(), SandboxError> {
        let entry = Entry {
            run: self.run.clone(),
            owner_pid: self.owner_pid,
            owner_start: self.owner_start,
            resource,
        };
        let mut line = serde_json::to_string(&entry)
            .map_err(|e| ledger_err(&self.path, std::io::Error::other(e)))?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| ledger_err(&self.path, e))
    }

    /// Every entry so far, in creation order.
    pub fn entries(&self) -> Result<Vec<Entry>, SandboxError> {
        read_entries(&self.path)
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Delete the ledger once everything in it is gone.
    pub fn finish(self) -> Result<(), SandboxError> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ledger_err(&self.path, e)),
            _ => Ok(()),
        }
    }
}

/// Entries of a ledger file; a torn last line (crash mid-write) is skipped.
pub fn read_entries(path: &Path) -> Result<Vec<Entry>, SandboxError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ledger_err(path, e)),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// What reaping one ledger did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ReapReport {
    pub run: String,
    pub ledger: PathBuf,
    pub owner_pid: i32,
    pub removed: Vec<String>,
    pub leaked: Vec<String>,
    /// Resources another backend must remove (docker containers).
    pub deferred: Vec<Resource>,
}

/// Remove one resource, within `deadline`.
pub async fn reap_resource(r: &Resource, deadline: Instant) -> Result<(), String> {
    match r {
        Resource::Cgroup { dirs } => remove::remove_group(dirs, deadline)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Resource::Process { pid, start_time } | Resource::Hog { pid, start_time } => {
            if is_alive(*pid, *start_time) {
                // The engine leads its own process group: take the whole group.
                let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
                let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            }
            while is_alive(*pid, *start_time) {
                if Instant::now() >= deadline {
                    return Err(format!("pid {pid} survived SIGKILL"));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(())
        }
        Resource::DataDir { path } => match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("{}: {e}", path.display()))
            }
            _ => Ok(()),
        },
        Resource::Container { .. } => Ok(()),
    }
}

/// Remove everything in `entries`, newest first, within `budget`.
pub async fn reap_entries(entries: &[Entry], budget: Duration) -> ReapReport {
    let deadline = Instant::now() + budget;
    let mut report = ReapReport::default();
    for e in entries.iter().rev() {
        if let Resource::Container { .. } = e.resource {
            report.deferred.push(e.resource.clone());
            continue;
        }
        let exists = e.resource.exists();
        match reap_resource(&e.resource, deadline).await {
            Ok(()) if exists => report.removed.push(e.resource.describe()),
            Ok(()) => {}
            Err(why) => report
                .leaked
                .push(format!("{}: {why}", e.resource.describe())),
        }
    }
    report
}

/// Reap one run's ledger whoever owns it (a panicked run's backstop);
/// deletes the ledger when nothing leaked.
pub async fn reap_run(
    root: &Path,
    run_id: &str,
    budget: Duration,
) -> Result<ReapReport, SandboxError> {
    let path = path_for(root, run_id);
    reap_file(&path, budget).await
}

async fn reap_file(path: &Path, budget: Duration) -> Result<ReapReport, SandboxError> {
    let entries = read_entries(path)?;
    let mut report = reap_entries(&entries, budget).await;
    if let Some(first) = entries.first() {
        report.run = first.run.clone();
        report.owner_pid = first.owner_pid;
    }
    report.ledger = path.to_path_buf();
    if report.leaked.is_empty() && report.deferred.is_empty() {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(ledger_err(path, e)),
            _ => {}
        }
    }
    Ok(report)
}

/// Ledgers under `root` whose owner is dead (pid gone or reused).
pub fn dead_ledgers(root: &Path) -> Result<Vec<(PathBuf, Vec<Entry>)>, SandboxError> {
    let dir = match std::fs::read_dir(root) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ledger_err(root, e)),
    };
    let mut out = Vec::new();
    for f in dir.flatten() {
        let path = f.path();
        if path.extension().and_then(|e| e.to_str()) != Some(SUFFIX) {
            continue;
        }
        let entries = read_entries(&path)?;
        let alive = entries
            .first()
            .is_some_and(|e| is_alive(e.owner_pid, e.owner_start));
        if !alive {
            out.push((path, entries));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Reap every ledger under `root` whose owner is dead. With `dry_run`,
/// only report what exists and would be removed. Every run start calls this.
pub async fn reap_dead(root: &Path, dry_run: bool) -> Result<Vec<ReapReport>, SandboxError> {
    let mut reports = Vec::new();
    for (path, entries) in dead_ledgers(root)? {
        if dry_run {
            let mut r = ReapReport {
                ledger: path.clone(),
                ..ReapReport::default()
            };
            if let Some(first) = entries.first() {
                r.run = first.run.clone();
                r.owner_pid = first.owner_pid;
            }
            r.removed = entries
                .iter()
                .rev()
                .filter(|e| e.resource.exists())
                .map(|e| e.resource.describe())
                .collect();
            reports.push(r);
        } else {
            reports.push(reap_file(&path, Duration::from_secs(30)).await?);
        }
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_skipped_and_earlier_lines_survive() {
        let t = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(t.path(), "r1").unwrap();
        l.record(Resource::DataDir {
            path: t.path().join("d"),
        })
        .unwrap();
        let mut f = OpenOptions::new().append(true).open(l.path()).unwrap();
        f.write_all(b"{\"run\":\"r1\",\"own").unwrap();
        let e = read_entries(l.path()).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].owner_pid, std::process::id() as i32);
    }

    #[test]
    fn a_run_id_held_by_a_live_process_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let init = Entry {
            run: "busy".into(),
            owner_pid: 1,
            owner_start: process_start_time(1).unwrap(),
            resource: Resource::DataDir {
                path: t.path().join("x"),
            },
        };
        let line = serde_json::to_string(&init).unwrap() + "\n";
        std::fs::write(path_for(t.path(), "busy"), line).unwrap();
        let err = Ledger::open(t.path(), "busy").unwrap_err();
        assert!(err.to_string().contains("in use by live pid 1"), "{err}");
        assert!(dead_ledgers(t.path()).unwrap().is_empty());
    }

    #[test]
    fn a_live_owner_is_not_dead_and_a_reused_pid_is() {
        let me = std::process::id() as i32;
        let start = process_start_time(me).unwrap();
        assert!(is_alive(me, start));
        assert!(!is_alive(me, start + 1));
    }

    #[tokio::test]
    async fn reaping_a_dead_runs_ledger_removes_its_data_dir_and_the_ledger() {
        let t = tempfile::tempdir().unwrap();
        let data = t.path().join("data");
        let path = path_for(t.path(), "dead");
        let entry = Entry {
            run: "dead".into(),
            owner_pid: i32::MAX - 1,
            owner_start: 1,
            resource: Resource::DataDir { path: data.clone() },
        };
        std::fs::write(&path, serde_json::to_string(&entry).unwrap() + "\n").unwrap();
        std::fs::create_dir(&data).unwrap();
        let dry = reap_dead(t.path(), true).await.unwrap();
        assert_eq!(dry.len(), 1);
        assert!(data.exists() && path.exists());
        let done = reap_dead(t.path(), false).await.unwrap();
        assert_eq!(done[0].removed.len(), 1);
        assert!(!data.exists() && !path.exists());
    }
}
