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
//!
//! Trust: a run's own teardown acts on what it recorded itself. Reaping
//! another run's ledger (`cleanup`, the start of every run) trusts nothing
//! in it: it acts only on cgroups of that run under `<mount>/benchcage`,
//! on folders under the work root, and on processes whose start time and
//! cgroup are the ones recorded (see [`roots`]); anything else is kept and
//! reported. A ledger it cannot read is kept and reported, never deleted.
//! The state dir must be owned by root and private (`roots::check_state_dir`).

use crate::sandbox::SandboxError;
use crate::sandbox::backoff::Backoff;
use crate::sandbox::cgroupfs::group::TOP;
use crate::sandbox::cgroupfs::remove;
use crate::sandbox::roots::{self, NotOurs, Roots};
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
pub(crate) const DEFAULT_ROOT: &str = "/var/lib/benchcage/ledger";
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
    /// An engine process, leader of its own process group; `cgroup` is
    /// its /proc/<pid>/cgroup when it was recorded.
    Process {
        pid: i32,
        start_time: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cgroup: Option<String>,
    },
    /// A memory hog process (outside every sandbox cgroup).
    Hog {
        pid: i32,
        start_time: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cgroup: Option<String>,
    },
    /// A data directory created for the run.
    DataDir { path: PathBuf },
    /// A data disk: the image file `image`, loop-mounted on the data dir
    /// `mount` (see [`crate::sandbox::disk`]).
    Disk { image: PathBuf, mount: PathBuf },
    /// A docker container (removed by the docker backend's cleanup).
    Container { id: String },
    /// The host's transparent huge pages `enabled` file, set to `never`
    /// from `old` (restored, unless someone changed it since).
    Thp {
        file: PathBuf,
        old: crate::sandbox::thp::ThpMode,
    },
    /// A network namespace of a cell's own (the kernel emulation of its
    /// network), by its name under /run/netns.
    Netns { name: String },
}

impl Resource {
    /// A one-line description for reports.
    pub(crate) fn describe(&self) -> String {
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
            Resource::Disk { image, mount } => format!(
                "data disk {} mounted on {}",
                image.display(),
                mount.display()
            ),
            Resource::Container { id } => format!("container {id}"),
            Resource::Thp { file, old } => format!(
                "transparent huge pages `never` in {} (was `{old}`)",
                file.display()
            ),
            Resource::Netns { name } => format!("network namespace {name}"),
        }
    }

    /// Whether the resource still exists.
    pub fn exists(&self) -> bool {
        match self {
            Resource::Cgroup { dirs } => dirs.values().any(|d| d.exists()),
            Resource::Process {
                pid, start_time, ..
            }
            | Resource::Hog {
                pid, start_time, ..
            } => is_alive(*pid, *start_time),
            Resource::DataDir { path } => path.exists(),
            Resource::Disk { image, mount } => crate::sandbox::disk::exists(mount, image),
            Resource::Container { .. } => true,
            Resource::Thp { file, old } => crate::sandbox::thp::change_in_place(file, *old),
            Resource::Netns { name } => crate::network::netns::exists(name),
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

/// /proc/<pid>/cgroup, the cgroups a process is in; `None` when it is gone.
pub fn process_cgroup(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Whether `pid` is the same live process that started at `start_time`
/// (a zombie counts as gone: it holds no memory and no cgroup).
pub(crate) fn is_alive(pid: i32, start_time: u64) -> bool {
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
        roots::ensure_state_dir(root)?;
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
        self.record_all(vec![resource])
    }

    /// Append several resources with one write and one fsync; call BEFORE
    /// creating any of them. Teardown walks them in reverse, as if each
    /// had been recorded alone; one that is never made is skipped there.
    pub(crate) fn record_all(&mut self, resources: Vec<Resource>) -> Result<(), SandboxError> {
        let mut lines = String::new();
        for resource in resources {
            let entry = Entry {
                run: self.run.clone(),
                owner_pid: self.owner_pid,
                owner_start: self.owner_start,
                resource,
            };
            lines.push_str(
                &serde_json::to_string(&entry)
                    .map_err(|e| ledger_err(&self.path, std::io::Error::other(e)))?,
            );
            lines.push('\n');
        }
        if lines.is_empty() {
            return Ok(());
        }
        self.file
            .write_all(lines.as_bytes())
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
pub(crate) fn read_entries(path: &Path) -> Result<Vec<Entry>, SandboxError> {
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

/// Largest ledger file `cleanup` reads (a run records a handful of lines).
const MAX_LEDGER_BYTES: u64 = 1 << 20;

/// Another run's ledger file as read by reaping: its entries, or why it
/// cannot be trusted as a whole (then nothing in it is acted on).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LedgerRead {
    pub entries: Vec<Entry>,
    pub problem: Option<String>,
}

/// Read a ledger written by another process, strictly: every complete line
/// must be an entry of run `run` with one owner. Only a torn last line (no
/// newline: a crash mid-write) may fail to parse; it is skipped.
pub(crate) fn read_ledger(path: &Path, run: &str) -> LedgerRead {
    let problem = |p: String| LedgerRead {
        entries: Vec::new(),
        problem: Some(p),
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() => return problem("not a regular file".into()),
        Ok(m) if m.len() > MAX_LEDGER_BYTES => {
            return problem(format!(
                "{} bytes, more than a ledger holds ({MAX_LEDGER_BYTES})",
                m.len()
            ));
        }
        Ok(_) => {}
        Err(e) => return problem(format!("cannot read it: {e}")),
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return problem(format!("cannot read it: {e}")),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return problem("not UTF-8 text".into());
    };
    let mut entries: Vec<Entry> = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let complete = line.ends_with('\n');
        match serde_json::from_str::<Entry>(line.trim_end_matches('\n')) {
            Ok(e) => entries.push(e),
            Err(_) if !complete => {}
            Err(e) => return problem(format!("line {} is not a ledger entry: {e}", i + 1)),
        }
    }
    if let Some(e) = entries.iter().find(|e| e.run != run) {
        return problem(format!(
            "it names run `{}`, but its file name says `{run}`",
            e.run
        ));
    }
    if let Some(first) = entries.first()
        && entries
            .iter()
            .any(|e| (e.owner_pid, e.owner_start) != (first.owner_pid, first.owner_start))
    {
        return problem("its entries name more than one owner process".into());
    }
    LedgerRead {
        entries,
        problem: None,
    }
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
    /// Entries not acted on, with the reason: outside benchcage's roots,
    /// or a live pid that is not the process the ledger recorded.
    pub refused: Vec<String>,
    /// Why the ledger file was not read at all; it is kept as it is.
    pub unreadable: Option<String>,
}

impl ReapReport {
    /// Everything in the ledger is gone: the file may be deleted.
    pub(crate) fn is_done(&self) -> bool {
        self.leaked.is_empty()
            && self.deferred.is_empty()
            && self.refused.is_empty()
            && self.unreadable.is_none()
    }
}

/// How far reaping trusts the entries it is given.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Trust<'a> {
    /// Entries this process recorded itself (a sandbox's own teardown).
    Own,
    /// Another process's ledger of run `run`: act only inside `roots`, and
    /// only on processes whose start time and cgroup match the record.
    Verify { run: &'a str, roots: &'a Roots },
}

/// Why a dead run's entry must not be acted on; `Ok` when it may be.
pub fn verify(r: &Resource, run: &str, roots: &Roots) -> Result<(), NotOurs> {
    match r {
        // A group that is gone asks for nothing: under systemd, killing a
        // dead run's engine can empty the scope it restarted itself in,
        // and systemd then removes that scope with our groups in it while
        // we look (issue 20). Only what exists is checked.
        Resource::Cgroup { dirs } => {
            dirs.values()
                .try_for_each(|d| match roots.check_cgroup_dir(d, run) {
                    Err(_) if !d.exists() => Ok(()),
                    other => other,
                })
        }
        Resource::DataDir { path } if path.exists() => roots.check_work_path(path),
        Resource::Disk { image, mount } if crate::sandbox::disk::exists(mount, image) => roots
            .check_work_path(image)
            .and_then(|()| roots.check_work_path(mount))
            .and_then(|()| {
                if *image == crate::sandbox::disk::image_for(mount) {
                    Ok(())
                } else {
                    Err(NotOurs(format!(
                        "its image {} is not the one benchcage puts beside {}",
                        image.display(),
                        mount.display()
                    )))
                }
            }),
        // Only this host's THP file, whatever path the ledger names.
        Resource::Thp { file, .. } => {
            let ours = crate::sandbox::thp::ThpFiles::current().enabled_path();
            if *file == ours {
                Ok(())
            } else {
                Err(NotOurs(format!(
                    "it names {}, not this host's THP setting {}",
                    file.display(),
                    ours.display()
                )))
            }
        }
        Resource::Netns { name } if *name != crate::network::netns::name_for(run) => Err(NotOurs(
            format!("it is not the namespace benchcage names for run {run}"),
        )),
        Resource::Process {
            pid,
            start_time,
            cgroup,
        } if is_alive(*pid, *start_time) => {
            check_cgroup(*pid, cgroup.as_deref())?;
            let ours = format!("/{TOP}/{run}/");
            if cgroup.as_deref().is_some_and(|c| c.contains(&ours)) {
                Ok(())
            } else {
                Err(NotOurs(format!("it is not in a cgroup of run {run}")))
            }
        }
        Resource::Hog {
            pid,
            start_time,
            cgroup,
        } if is_alive(*pid, *start_time) => {
            check_cgroup(*pid, cgroup.as_deref())?;
            let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            match argv.split(|b| *b == 0).nth(1) {
                Some(b"hog") => Ok(()),
                _ => Err("it is not a `benchcage hog` process".into()),
            }
        }
        _ => Ok(()),
    }
}

/// Error unless `pid` is in exactly the cgroups the ledger recorded.
fn check_cgroup(pid: i32, recorded: Option<&str>) -> Result<(), NotOurs> {
    let Some(recorded) = recorded else {
        return Err("the ledger does not record its cgroup".into());
    };
    if process_cgroup(pid).as_deref() == Some(recorded) {
        Ok(())
    } else {
        Err("its cgroup is not the one the ledger recorded".into())
    }
}

/// Why a resource benchcage created could not be removed (a process
/// that survived SIGKILL, a folder that would not go): reported as leaked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NotRemoved(pub String);

/// Remove one resource, within `deadline`.
pub(crate) async fn reap_resource(r: &Resource, deadline: Instant) -> Result<(), NotRemoved> {
    match r {
        Resource::Cgroup { dirs } => remove::remove_group(dirs, deadline)
            .await
            .map(|_| ())
            .map_err(|e| NotRemoved(e.to_string())),
        Resource::Process {
            pid, start_time, ..
        }
        | Resource::Hog {
            pid, start_time, ..
        } => {
            if is_alive(*pid, *start_time) {
                // The engine leads its own process group: take the whole group.
                let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
                let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            }
            let mut pause = Backoff::up_to(Duration::from_millis(20));
            while is_alive(*pid, *start_time) {
                if Instant::now() >= deadline {
                    return Err(NotRemoved(format!("pid {pid} survived SIGKILL")));
                }
                pause.sleep(deadline).await;
            }
            Ok(())
        }
        Resource::DataDir { path } => match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(NotRemoved(format!("{}: {e}", path.display())))
            }
            _ => Ok(()),
        },
        Resource::Disk { image, mount } => crate::sandbox::disk::remove(mount, image, deadline)
            .await
            .map_err(NotRemoved),
        Resource::Container { .. } => Ok(()),
        Resource::Thp { file, old } => crate::sandbox::thp::restore(file, *old),
        Resource::Netns { name } => {
            crate::network::netns::remove(name).map_err(|e| NotRemoved(e.to_string()))
        }
    }
}

/// Remove everything in `entries` (recorded by this process), newest
/// first, within `budget`.
pub(crate) async fn reap_entries(entries: &[Entry], budget: Duration) -> ReapReport {
    reap_with(entries, Trust::Own, budget).await
}

/// Remove what `entries` name, newest first, within `budget`, as far as
/// `trust` allows; what it does not allow is reported as refused. Data
/// dirs go last: a process that writes into one (a replica's
/// `pg_basebackup`, killed with its cgroup) would refill it while it is
/// removed.
pub(crate) async fn reap_with(entries: &[Entry], trust: Trust<'_>, budget: Duration) -> ReapReport {
    let deadline = Instant::now() + budget;
    let mut report = ReapReport::default();
    let is_dir = |e: &&Entry| matches!(e.resource, Resource::DataDir { .. });
    let ordered = entries
        .iter()
        .rev()
        .filter(|e| !is_dir(e))
        .chain(entries.iter().rev().filter(is_dir));
    for e in ordered {
        if let Resource::Container { .. } = e.resource {
            report.deferred.push(e.resource.clone());
            continue;
        }
        if let Err(why) = allowed(&e.resource, trust) {
            report
                .refused
                .push(format!("{}: {why}", e.resource.describe()));
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

fn allowed(r: &Resource, trust: Trust<'_>) -> Result<(), NotOurs> {
    match trust {
        Trust::Own => Ok(()),
        Trust::Verify { run, roots } => verify(r, run, roots),
    }
}

/// What reaping `entries` would do, without doing it (`cleanup --dry-run`).
fn preview(entries: &[Entry], trust: Trust<'_>) -> ReapReport {
    let mut report = ReapReport::default();
    for e in entries.iter().rev() {
        match (&e.resource, allowed(&e.resource, trust)) {
            (Resource::Container { .. }, _) => report.deferred.push(e.resource.clone()),
            (r, Err(why)) => report.refused.push(format!("{}: {why}", r.describe())),
            (r, Ok(())) if r.exists() => report.removed.push(r.describe()),
            _ => {}
        }
    }
    report
}

/// Reap one run's ledger whoever owns it (a panicked run's backstop),
/// trusting it no more than a dead run's; deletes it when all is gone.
pub async fn reap_run(
    root: &Path,
    run_id: &str,
    budget: Duration,
) -> Result<ReapReport, SandboxError> {
    roots::check_state_dir(root)?;
    let path = path_for(root, run_id);
    let read = read_ledger(&path, run_id);
    reap_read(&path, run_id, read, &Roots::current(), Some(budget)).await
}

/// Reap (or with `budget` `None`, preview) one ledger as read.
async fn reap_read(
    path: &Path,
    run: &str,
    read: LedgerRead,
    roots: &Roots,
    budget: Option<Duration>,
) -> Result<ReapReport, SandboxError> {
    let base = ReapReport {
        run: run.to_string(),
        ledger: path.to_path_buf(),
        owner_pid: read.entries.first().map_or(0, |e| e.owner_pid),
        ..ReapReport::default()
    };
    if let Some(why) = read.problem {
        return Ok(ReapReport {
            unreadable: Some(why),
            ..base
        });
    }
    let trust = Trust::Verify { run, roots };
    let Some(budget) = budget else {
        return Ok(preview(&read.entries, trust).with_base(base));
    };
    let report = reap_with(&read.entries, trust, budget)
        .await
        .with_base(base);
    if report.is_done() {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(ledger_err(path, e)),
            _ => {}
        }
    }
    Ok(report)
}

impl ReapReport {
    fn with_base(self, base: ReapReport) -> ReapReport {
        ReapReport {
            run: base.run,
            ledger: base.ledger,
            owner_pid: base.owner_pid,
            ..self
        }
    }
}

/// The ledgers under `root` to reap: those whose owner is dead (pid gone
/// or reused), and every one that cannot be read (kept and reported).
/// Errors when `root` is not a private folder of root's.
pub(crate) fn dead_ledgers(
    root: &Path,
) -> Result<Vec<(PathBuf, String, LedgerRead)>, SandboxError> {
    roots::check_state_dir(root)?;
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
        let run = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let read = read_ledger(&path, &run);
        let alive = read
            .entries
            .first()
            .is_some_and(|e| is_alive(e.owner_pid, e.owner_start));
        if !alive {
            out.push((path, run, read));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Reap every ledger under `root` whose owner is dead. With `dry_run`,
/// only report what exists and would be removed. Every run start calls this.
pub async fn reap_dead(root: &Path, dry_run: bool) -> Result<Vec<ReapReport>, SandboxError> {
    let roots = Roots::current();
    let budget = (!dry_run).then_some(Duration::from_secs(30));
    let mut reports = Vec::new();
    for (path, run, read) in dead_ledgers(root)? {
        reports.push(reap_read(&path, &run, read, &roots, budget).await?);
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A private state dir inside a temp dir.
    fn state(t: &tempfile::TempDir) -> PathBuf {
        let root = t.path().join("state");
        roots::ensure_state_dir(&root).unwrap();
        root
    }

    fn write_ledger(root: &Path, run: &str, entries: &[Entry]) -> PathBuf {
        let path = path_for(root, run);
        let text: String = entries
            .iter()
            .map(|e| serde_json::to_string(e).unwrap() + "\n")
            .collect();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn dead(run: &str, resource: Resource) -> Entry {
        Entry {
            run: run.into(),
            owner_pid: i32::MAX - 1,
            owner_start: 1,
            resource,
        }
    }

    #[test]
    fn a_dead_runs_disk_is_acted_on_only_under_the_work_root_with_its_own_image() {
        let t = tempfile::tempdir().unwrap();
        let work = t.path().join("work");
        std::fs::create_dir_all(work.join("run/01")).unwrap();
        let roots = Roots {
            work: work.clone(),
            cgroups: Vec::new(),
        };
        let disk = |image: PathBuf, mount: PathBuf| Resource::Disk { image, mount };
        let mount = work.join("run/01/data");
        let image = work.join("run/01/data.disk.img");
        std::fs::write(&image, b"").unwrap();
        assert!(verify(&disk(image, mount.clone()), "run", &roots).is_ok());
        let other = work.join("run/01/other.img");
        std::fs::write(&other, b"").unwrap();
        let why = verify(&disk(other, mount), "run", &roots).unwrap_err();
        assert!(
            why.0.contains("is not the one benchcage puts beside"),
            "{why}"
        );
        let outside = t.path().join("x.disk.img");
        std::fs::write(&outside, b"").unwrap();
        let why = verify(&disk(outside, t.path().join("x")), "run", &roots).unwrap_err();
        assert!(why.0.contains("outside benchcage's work root"), "{why}");
        // Gone already: nothing to act on, nothing to refuse.
        let gone = disk(t.path().join("gone.disk.img"), t.path().join("gone"));
        assert!(verify(&gone, "run", &roots).is_ok());
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_earlier_lines_survive() {
        let t = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(&state(&t), "r1").unwrap();
        l.record(Resource::DataDir {
            path: t.path().join("d"),
        })
        .unwrap();
        let mut f = OpenOptions::new().append(true).open(l.path()).unwrap();
        f.write_all(b"{\"run\":\"r1\",\"own").unwrap();
        let e = read_entries(l.path()).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].owner_pid, std::process::id() as i32);
        let strict = read_ledger(l.path(), "r1");
        assert_eq!((strict.entries.len(), strict.problem), (1, None));
    }

    #[test]
    fn resources_recorded_together_are_one_line_each_in_their_order() {
        let t = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(&state(&t), "r1").unwrap();
        let dirs: Vec<Resource> = ["a", "b", "c"]
            .iter()
            .map(|n| Resource::DataDir {
                path: t.path().join(n),
            })
            .collect();
        l.record_all(dirs.clone()).unwrap();
        l.record_all(Vec::new()).unwrap();
        let strict = read_ledger(l.path(), "r1");
        assert_eq!(strict.problem, None);
        let got: Vec<Resource> = strict.entries.into_iter().map(|e| e.resource).collect();
        assert_eq!(got, dirs);
        assert_eq!(
            std::fs::read_to_string(l.path()).unwrap().lines().count(),
            3
        );
    }

    #[test]
    fn a_run_id_held_by_a_live_process_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = state(&t);
        let init = Entry {
            run: "busy".into(),
            owner_pid: 1,
            owner_start: process_start_time(1).unwrap(),
            resource: Resource::DataDir {
                path: t.path().join("x"),
            },
        };
        write_ledger(&root, "busy", &[init]);
        let err = Ledger::open(&root, "busy").unwrap_err();
        assert!(err.to_string().contains("in use by live pid 1"), "{err}");
        assert!(dead_ledgers(&root).unwrap().is_empty());
    }

    #[test]
    fn a_dead_runs_group_that_is_gone_asks_for_nothing_and_one_outside_the_roots_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let roots = Roots {
            work: t.path().join("work"),
            cgroups: vec![t.path().join("cg/benchcage")],
        };
        let outside = t.path().join("elsewhere/benchcage/r1/server");
        let group = Resource::Cgroup {
            dirs: BTreeMap::from([("unified".to_string(), outside.clone())]),
        };
        assert_eq!(verify(&group, "r1", &roots), Ok(()));
        std::fs::create_dir_all(&outside).unwrap();
        let why = verify(&group, "r1", &roots).unwrap_err().0;
        assert!(why.contains("not a cgroup of run r1"), "{why}");
    }

    #[test]
    fn a_live_owner_is_not_dead_and_a_reused_pid_is() {
        let me = std::process::id() as i32;
        let start = process_start_time(me).unwrap();
        assert!(is_alive(me, start));
        assert!(!is_alive(me, start + 1));
    }

    #[test]
    fn a_ledger_is_opened_only_in_a_private_state_dir() {
        let t = tempfile::tempdir().unwrap();
        let open_dir = t.path().join("open");
        std::fs::create_dir(&open_dir).unwrap();
        std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = Ledger::open(&open_dir, "r1").unwrap_err().to_string();
        assert!(err.contains("mode 777"), "{err}");
        assert!(!path_for(&open_dir, "r1").exists());
        assert!(dead_ledgers(&open_dir).is_err());
    }

    #[test]
    fn a_ledger_with_a_bad_line_names_it_and_one_of_another_run_is_not_read() {
        let t = tempfile::tempdir().unwrap();
        let root = state(&t);
        let d = dead(
            "r1",
            Resource::DataDir {
                path: t.path().join("d"),
            },
        );
        let path = write_ledger(&root, "r1", std::slice::from_ref(&d));
        std::fs::write(
            &path,
            "garbage\n".to_string() + &std::fs::read_to_string(&path).unwrap(),
        )
        .unwrap();
        let p = read_ledger(&path, "r1").problem.unwrap();
        assert!(p.contains("line 1 is not a ledger entry"), "{p}");
        let other = write_ledger(&root, "r2", &[d]);
        let p = read_ledger(&other, "r2").problem.unwrap();
        assert!(p.contains("names run `r1`"), "{p}");
    }

    #[tokio::test]
    async fn reaping_a_dead_runs_ledger_removes_its_data_dir_and_the_ledger() {
        let t = tempfile::tempdir().unwrap();
        let root = state(&t);
        let work = roots::work_root();
        let data = work.join("ledger-unit-test-dead").join("data");
        roots::create_dirs(&data, roots::SEARCHABLE).unwrap();
        let path = write_ledger(
            &root,
            "dead",
            &[dead("dead", Resource::DataDir { path: data.clone() })],
        );
        let dry = reap_dead(&root, true).await.unwrap();
        assert_eq!(dry.len(), 1);
        assert_eq!(dry[0].removed.len(), 1, "{dry:?}");
        assert!(data.exists() && path.exists());
        let done = reap_dead(&root, false).await.unwrap();
        assert_eq!(done[0].removed.len(), 1, "{done:?}");
        assert!(!data.exists() && !path.exists());
        let _ = std::fs::remove_dir(data.parent().unwrap());
        let _ = std::fs::remove_dir(&work);
    }

    #[tokio::test]
    async fn a_dead_runs_thp_change_outside_this_hosts_thp_folder_is_refused_and_kept() {
        use crate::sandbox::thp::{ThpMode, read_mode};
        let t = tempfile::tempdir().unwrap();
        let root = state(&t);
        let file = t.path().join("enabled");
        std::fs::write(&file, "always madvise [never]\n").unwrap();
        let path = write_ledger(
            &root,
            "thp",
            &[dead(
                "thp",
                Resource::Thp {
                    file: file.clone(),
                    old: ThpMode::Always,
                },
            )],
        );
        let r = reap_dead(&root, false).await.unwrap();
        assert_eq!(r[0].refused.len(), 1, "{r:?}");
        assert!(
            r[0].refused[0].contains("not this host's THP setting"),
            "{r:?}"
        );
        assert_eq!(read_mode(&file).unwrap(), ThpMode::Never);
        assert!(path.exists(), "the ledger is kept");
        // Its own teardown restores it.
        let own = read_entries(&path).unwrap();
        let rep = reap_entries(&own, Duration::from_secs(5)).await;
        assert!(rep.is_done(), "{rep:?}");
        assert_eq!(rep.removed.len(), 1, "{rep:?}");
        assert_eq!(read_mode(&file).unwrap(), ThpMode::Always);
    }

    #[test]
    fn a_process_is_trusted_only_in_its_recorded_cgroup_inside_the_runs_own() {
        let me = std::process::id() as i32;
        let start = process_start_time(me).unwrap();
        let roots = Roots {
            work: PathBuf::from("/nonexistent-work"),
            cgroups: vec![],
        };
        let engine = |cgroup: Option<String>| Resource::Process {
            pid: me,
            start_time: start,
            cgroup,
        };
        let e = verify(&engine(None), "r1", &roots).unwrap_err().0;
        assert!(e.contains("does not record its cgroup"), "{e}");
        let e = verify(&engine(Some("0::/elsewhere".into())), "r1", &roots)
            .unwrap_err()
            .0;
        assert!(e.contains("not the one the ledger recorded"), "{e}");
        let e = verify(&engine(process_cgroup(me)), "r1", &roots)
            .unwrap_err()
            .0;
        assert!(e.contains("not in a cgroup of run r1"), "{e}");
        let hog = Resource::Hog {
            pid: me,
            start_time: start,
            cgroup: process_cgroup(me),
        };
        let e = verify(&hog, "r1", &roots).unwrap_err().0;
        assert!(e.contains("not a `benchcage hog`"), "{e}");
        let gone = Resource::Process {
            pid: me,
            start_time: start + 1,
            cgroup: None,
        };
        assert!(
            verify(&gone, "r1", &roots).is_ok(),
            "a gone pid is left as gone"
        );
    }

    #[test]
    fn a_dead_runs_namespace_is_acted_on_only_under_the_name_benchcage_gives_that_run() {
        let roots = Roots::current();
        let ns = |name: &str| Resource::Netns { name: name.into() };
        assert!(verify(&ns("benchcage-r1"), "r1", &roots).is_ok());
        for other in ["benchcage-r2", "r1", "docker-r1", "benchcage-r1-x"] {
            let why = verify(&ns(other), "r1", &roots).unwrap_err();
            assert!(why.0.contains("not the namespace"), "{other}: {why}");
        }
        assert_eq!(
            ns("benchcage-r1").describe(),
            "network namespace benchcage-r1"
        );
    }
}
