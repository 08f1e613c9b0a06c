//! Slurm's command-line tools, the only place benchcage runs them:
//! `sbatch` submits a cell's job, `squeue` (and `sacct` when the cluster
//! keeps accounting) tells its state, `scancel` cancels it, `scontrol`
//! reads an allocation back, `sinfo` says whether a cluster answers.
//!
//! Every call is an argv array; output is read in `--parsable` /
//! `--format` forms that the parsers below take apart (unit-tested on
//! the tools' own output).

use anyhow::{Context, anyhow};
use std::collections::BTreeMap;
use std::path::PathBuf;
use tokio::process::Command;

/// One batch job to submit: `argv` runs on the node (no shell).
#[derive(Debug, Clone)]
pub struct Submit {
    /// The job's name: the cell key.
    pub name: String,
    /// `benchcage <run id>`: finds the run's jobs in `squeue`.
    pub comment: String,
    /// The job's stdout and stderr.
    pub output: PathBuf,
    /// Working directory on the node.
    pub chdir: PathBuf,
    pub partition: Option<String>,
    pub account: Option<String>,
    /// The script sbatch runs: it `exec`s its arguments.
    pub script: PathBuf,
    pub argv: Vec<String>,
    /// Nodes the job holds: 1, or 2 for a cell whose client runs on
    /// another node.
    pub nodes: u32,
}

/// A job's state as Slurm tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// `PENDING`, `RUNNING`, `COMPLETED`, `CANCELLED`, `FAILED`, ...
    pub state: String,
    /// The node it runs or ran on (empty while pending).
    pub node: String,
    /// Why it waits, or `None`.
    pub reason: String,
}

impl JobInfo {
    /// Still queued or running: its cell is not decided yet.
    pub(crate) fn is_active(&self) -> bool {
        is_active(&self.state)
    }
}

/// Job states in which the job has not ended.
pub(crate) fn is_active(state: &str) -> bool {
    matches!(
        state,
        "PENDING"
            | "CONFIGURING"
            | "RUNNING"
            | "COMPLETING"
            | "SUSPENDED"
            | "REQUEUED"
            | "RESIZING"
            | "SIGNALING"
            | "STAGE_OUT"
            | "STOPPED"
    )
}

/// The script every job runs: its arguments, exec'd, so that the job's
/// signals (scancel's SIGTERM) reach benchcage itself.
pub(crate) const EXEC_SCRIPT: &str =
    "#!/bin/sh\n# benchcage: one cell of a run, as the arguments say.\nexec \"$@\"\n";

/// `sinfo` answers: a cluster is reachable from here. Its error says what
/// to do otherwise.
pub(crate) async fn check_cluster() -> Result<(), String> {
    let out = Command::new("sinfo")
        .args(["--noheader", "--format=%P %a %D %t"])
        .output()
        .await
        .map_err(|e| {
            format!("cannot run `sinfo` ({e}): install Slurm's client tools (Debian: slurm-client), or start the local one-node cluster with `bash scripts/slurm.sh`")
        })?;
    if !out.status.success() {
        return Err(format!(
            "`sinfo` failed: {}; is slurmctld running? (`bash scripts/slurm.sh` starts a local one-node cluster)",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// A job step on `node` of this job's allocation running `argv` (one
/// task, pinned to `cpus` there by `taskset`): how a cell whose client is
/// on another node starts its load generator. srun forwards the signals
/// it gets (SIGINT, SIGKILL of the step) to the task.
pub fn step_on(node: &str, cpus: &str, argv: &[std::ffi::OsString]) -> std::process::Command {
    let mut cmd = std::process::Command::new("srun");
    cmd.args([
        "--nodes=1",
        "--ntasks=1",
        &format!("--nodelist={node}"),
        "--kill-on-bad-exit=1",
        "--quiet",
        "taskset",
        "-c",
        cpus,
    ])
    .args(argv);
    cmd
}

/// The nodes of this job's allocation (`SLURM_JOB_NODELIST` expanded by
/// `scontrol show hostnames`), in Slurm's order.
pub async fn allocation_nodes() -> anyhow::Result<Vec<String>> {
    let list = std::env::var("SLURM_JOB_NODELIST")
        .context("SLURM_JOB_NODELIST is not set: not inside a Slurm job")?;
    let out = Command::new("scontrol")
        .args(["show", "hostnames", &list])
        .output()
        .await
        .context("running scontrol show hostnames")?;
    if !out.status.success() {
        return Err(anyhow!(
            "scontrol show hostnames {list}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// The address other nodes reach `node` on: its `NodeAddr` in
/// `scontrol show node`, resolved to an IP address when it is a name.
pub async fn node_address(node: &str) -> anyhow::Result<String> {
    let out = Command::new("scontrol")
        .args(["show", "node", "--oneliner", node])
        .output()
        .await
        .context("running scontrol show node")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let addr = parse_node_addr(&text).with_context(|| {
        format!(
            "scontrol show node {node} names no NodeAddr: {}",
            text.trim()
        )
    })?;
    if addr.parse::<std::net::IpAddr>().is_ok() {
        return Ok(addr);
    }
    use std::net::ToSocketAddrs;
    let ip = (addr.as_str(), 0)
        .to_socket_addrs()
        .with_context(|| format!("resolving node {node}'s NodeAddr {addr}"))?
        .map(|a| a.ip())
        .find(|ip| ip.is_ipv4())
        .with_context(|| format!("node {node}'s NodeAddr {addr} has no IPv4 address"))?;
    Ok(ip.to_string())
}

/// `NodeAddr=` of a `scontrol show node --oneliner` line.
pub fn parse_node_addr(text: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("NodeAddr="))
        .filter(|a| !a.is_empty())
        .map(str::to_string)
}

/// Nodes in `partition` (the default one when `None`), by `sinfo`.
pub async fn partition_nodes(partition: Option<&str>) -> anyhow::Result<u32> {
    let out = Command::new("sinfo")
        .args(["--noheader", "--format=%P %D"])
        .output()
        .await
        .context("running sinfo")?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_partition_nodes(&text, partition).with_context(|| match partition {
        Some(p) => format!("sinfo lists no partition {p}"),
        None => "sinfo lists no default partition (marked *)".to_string(),
    })
}

/// The node count of `partition` (the one marked `*` when `None`) in
/// `sinfo --format='%P %D'` lines; a partition of nodes in several states
/// has a line per state.
pub fn parse_partition_nodes(text: &str, partition: Option<&str>) -> Option<u32> {
    let mut found = None;
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(p), Some(n)) = (w.next(), w.next()) else {
            continue;
        };
        let ours = match partition {
            Some(want) => p.trim_end_matches('*') == want,
            None => p.ends_with('*'),
        };
        if ours && let Ok(n) = n.parse::<u32>() {
            found = Some(found.unwrap_or(0) + n);
        }
    }
    found
}

/// Submit `job`; its job id.
pub async fn submit(job: &Submit) -> anyhow::Result<u64> {
    let mut cmd = Command::new("sbatch");
    cmd.args(sbatch_args(job));
    let out = cmd.output().await.context("running sbatch")?;
    if !out.status.success() {
        return Err(anyhow!(
            "sbatch refused the job of {}: {}",
            job.name,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse_job_id(&String::from_utf8_lossy(&out.stdout))
}

/// sbatch's arguments for `job`: a whole node, never requeued (a
/// benchmark restarted elsewhere is a different measurement), the job's
/// environment exported as it is here.
pub(crate) fn sbatch_args(job: &Submit) -> Vec<String> {
    let mut a = vec![
        "--parsable".to_string(),
        "--exclusive".into(),
        "--no-requeue".into(),
        format!("--nodes={}", job.nodes.max(1)),
        "--mem=0".into(),
        format!("--job-name={}", job.name),
        format!("--comment={}", job.comment),
        format!("--output={}", job.output.display()),
        format!("--chdir={}", job.chdir.display()),
        "--export=ALL".into(),
    ];
    if let Some(p) = &job.partition {
        a.push(format!("--partition={p}"));
    }
    if let Some(acc) = &job.account {
        a.push(format!("--account={acc}"));
    }
    a.push(job.script.display().to_string());
    a.extend(job.argv.iter().cloned());
    a
}

/// `12345` or `12345;cluster` as `sbatch --parsable` prints it.
pub(crate) fn parse_job_id(stdout: &str) -> anyhow::Result<u64> {
    let first = stdout.trim().split(';').next().unwrap_or_default();
    first
        .parse()
        .map_err(|_| anyhow!("sbatch printed no job id: {:?}", stdout.trim()))
}

/// The state of each job in `ids` that Slurm still knows: `squeue` (which
/// keeps ended jobs for the cluster's MinJobAge), then `sacct` for the
/// others when the cluster keeps accounting. A job neither knows is
/// absent. An error when `squeue` itself cannot answer (slurmctld down or
/// unreachable): then nothing can be said of any job.
pub async fn query(ids: &[u64]) -> anyhow::Result<BTreeMap<u64, JobInfo>> {
    let mut found = BTreeMap::new();
    if ids.is_empty() {
        return Ok(found);
    }
    let list = ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let out = Command::new("squeue")
        .args([
            "--noheader",
            "--states=all",
            &format!("--jobs={list}"),
            "--format=%i|%T|%N|%r",
        ])
        .output()
        .await
        .context("running squeue")?;
    let err = String::from_utf8_lossy(&out.stderr);
    // A list of only forgotten ids is "invalid"; that is an answer.
    if !out.status.success() && !err.contains("Invalid job id") {
        return Err(anyhow!("squeue failed: {}", err.trim()));
    }
    found.extend(parse_squeue(&String::from_utf8_lossy(&out.stdout)));
    let missing: Vec<String> = ids
        .iter()
        .filter(|i| !found.contains_key(i))
        .map(u64::to_string)
        .collect();
    if !missing.is_empty()
        && let Ok(out) = Command::new("sacct")
            .args([
                "--noheader",
                "--parsable2",
                "--allocations",
                &format!("--jobs={}", missing.join(",")),
                "--format=JobID,State,NodeList",
            ])
            .output()
            .await
        && out.status.success()
    {
        found.extend(parse_sacct(&String::from_utf8_lossy(&out.stdout)));
    }
    Ok(found)
}

/// `squeue --format=%i|%T|%N|%r` lines.
pub(crate) fn parse_squeue(text: &str) -> BTreeMap<u64, JobInfo> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.trim().split('|');
            let id = f.next()?.parse().ok()?;
            let state = f.next()?.to_string();
            let node = f.next().unwrap_or_default().to_string();
            let reason = f.next().unwrap_or_default().to_string();
            Some((
                id,
                JobInfo {
                    state,
                    node,
                    reason,
                },
            ))
        })
        .collect()
}

/// `sacct --parsable2 --format=JobID,State,NodeList` lines; `CANCELLED
/// by 0` is `CANCELLED`.
pub(crate) fn parse_sacct(text: &str) -> BTreeMap<u64, JobInfo> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.trim().split('|');
            let id = f.next()?.parse().ok()?;
            let state = f.next()?.split_whitespace().next()?.to_string();
            let node = f.next().unwrap_or_default().to_string();
            Some((
                id,
                JobInfo {
                    state,
                    node,
                    reason: String::new(),
                },
            ))
        })
        .collect()
}

/// Each node's compact state as `sinfo -N` gives it (`idle`, `alloc*`,
/// `down*`, ...): a trailing `*` means slurmctld gets no answer from the
/// node's slurmd.
pub(crate) async fn node_states() -> anyhow::Result<BTreeMap<String, String>> {
    let out = Command::new("sinfo")
        .args(["-N", "--noheader", "--format=%N|%t"])
        .output()
        .await
        .context("running sinfo")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(anyhow!("sinfo failed: {}", err.trim()));
    }
    Ok(parse_node_states(&String::from_utf8_lossy(&out.stdout)))
}

/// `sinfo -N --format=%N|%t` lines (a node in two partitions is listed
/// twice, with one state).
pub(crate) fn parse_node_states(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (node, state) = l.trim().split_once('|')?;
            Some((node.to_string(), state.to_string()))
        })
        .collect()
}

/// What is wrong with a node in `state`, or `None` when it serves jobs.
pub(crate) fn node_trouble(state: &str) -> Option<&'static str> {
    let base = state.trim_end_matches(['*', '~', '#', '!', '%', '$', '@', '^', '-']);
    if base.starts_with("down") {
        Some("down")
    } else if base.starts_with("drain") || base.starts_with("drng") {
        Some("drained")
    } else if base.starts_with("fail") {
        Some("failing")
    } else if state.ends_with('*') {
        Some("not responding (its slurmd does not answer)")
    } else {
        None
    }
}

/// Whether a pending job's `reason` says it waits for nodes that cannot
/// take it (down, drained, not responding, or a partition that is down),
/// rather than for its turn.
pub(crate) fn waits_for_unavailable_nodes(reason: &str) -> bool {
    [
        "ReqNodeNotAvail",
        "NodeDown",
        "PartitionDown",
        "PartitionInactive",
        "DOWN",
    ]
    .iter()
    .any(|r| reason.contains(r))
}

/// Why a job that ended in `state` ended, in words a user can act on;
/// empty for states that say it themselves.
pub(crate) fn end_hint(state: &str) -> &'static str {
    match state {
        "CANCELLED" => " (cancelled: scancel)",
        "NODE_FAIL" => {
            " (its node failed: slurmd died or the node went down; the cell may run on there until slurmd comes back and ends it)"
        }
        "TIMEOUT" => " (the job hit its time limit)",
        "OUT_OF_MEMORY" => " (the job ran out of memory)",
        "BOOT_FAIL" => " (its node failed to boot)",
        "PREEMPTED" => " (preempted by a job of higher priority)",
        _ => "",
    }
}

/// Cancel `ids` (SIGTERM to the job, SIGKILL after the cluster's
/// KillWait). An id that already ended is no error.
pub(crate) async fn cancel(ids: &[u64]) -> anyhow::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let out = Command::new("scancel")
        .args(ids.iter().map(u64::to_string))
        .output()
        .await
        .context("running scancel")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if !err.contains("already completed") && !err.contains("Invalid job id") {
            return Err(anyhow!("scancel failed: {}", err.trim()));
        }
    }
    Ok(())
}

/// The trackable resources of job `id` (`scontrol show job -o`), as
/// `(cpus, memory bytes)`.
pub(crate) async fn job_tres(id: &str) -> Option<(Option<u32>, Option<u64>)> {
    let out = Command::new("scontrol")
        .args(["show", "job", "-o", id])
        .output()
        .await
        .ok()?;
    out.status
        .success()
        .then(|| parse_tres(&String::from_utf8_lossy(&out.stdout)))
        .flatten()
}

/// `TRES=cpu=2,mem=24105M,node=1,billing=2` from `scontrol show job -o`.
pub(crate) fn parse_tres(text: &str) -> Option<(Option<u32>, Option<u64>)> {
    let tres = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("TRES="))?;
    let mut cpus = None;
    let mut mem = None;
    for kv in tres.split(',') {
        match kv.split_once('=') {
            Some(("cpu", v)) => cpus = v.parse().ok(),
            Some(("mem", v)) => mem = parse_slurm_size(v),
            _ => {}
        }
    }
    Some((cpus, mem))
}

/// `24105M`, `2G`, `512K`, or megabytes without a suffix (Slurm's unit).
pub(crate) fn parse_slurm_size(v: &str) -> Option<u64> {
    let (num, mult) = match v.chars().last()? {
        'K' => (&v[..v.len() - 1], 1u64 << 10),
        'M' => (&v[..v.len() - 1], 1 << 20),
        'G' => (&v[..v.len() - 1], 1 << 30),
        'T' => (&v[..v.len() - 1], 1 << 40),
        _ => (v, 1 << 20),
    };
    let n: f64 = num.parse().ok()?;
    Some((n * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbatch_asks_for_a_whole_node_once_and_runs_the_argv_as_given() {
        let job = Submit {
            name: "redis-7.0-a1b2".into(),
            comment: "benchcage 20261202-030000-ab12".into(),
            output: "/r/slurm/01.out".into(),
            chdir: "/home/x".into(),
            partition: Some("bench".into()),
            account: None,
            script: "/r/slurm/exec.sh".into(),
            argv: vec!["/bin/benchcage".into(), "run".into(), "it's".into()],
            nodes: 1,
        };
        let a = sbatch_args(&job);
        for want in [
            "--nodes=1",
            "--exclusive",
            "--no-requeue",
            "--parsable",
            "--job-name=redis-7.0-a1b2",
            "--partition=bench",
        ] {
            assert!(a.contains(&want.to_string()), "{want} missing in {a:?}");
        }
        assert!(!a.iter().any(|w| w.starts_with("--account")));
        let script = a.iter().position(|w| w == "/r/slurm/exec.sh").unwrap();
        assert_eq!(&a[script + 1..], &["/bin/benchcage", "run", "it's"]);
        // A client on another node: two nodes, both whole.
        let two = sbatch_args(&Submit { nodes: 2, ..job });
        assert!(two.contains(&"--nodes=2".to_string()) && two.contains(&"--exclusive".to_string()));
        assert!(!two.contains(&"--nodes=1".to_string()));
    }

    #[test]
    fn partitions_nodes_and_addresses_are_read_from_sinfo_and_scontrol() {
        let sinfo = "bench* 1\npair 2\nbig 3\nbig 1\n";
        assert_eq!(parse_partition_nodes(sinfo, None), Some(1));
        assert_eq!(parse_partition_nodes(sinfo, Some("pair")), Some(2));
        assert_eq!(parse_partition_nodes(sinfo, Some("big")), Some(4));
        assert_eq!(parse_partition_nodes(sinfo, Some("nope")), None);
        let node = "NodeName=vm-b Arch=x86_64 CoresPerSocket=2 NodeAddr=127.0.0.1 NodeHostName=vm-b Version=22.05.8";
        assert_eq!(parse_node_addr(node).as_deref(), Some("127.0.0.1"));
        assert_eq!(parse_node_addr("Node vm not found"), None);
    }

    #[test]
    fn a_step_on_another_node_pins_its_task_there() {
        let c = step_on("vm-b", "1", &["/bin/benchcage".into(), "drive".into()]);
        let a: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(c.get_program(), "srun");
        assert!(
            a.contains(&"--nodelist=vm-b".to_string()) && a.contains(&"--ntasks=1".to_string())
        );
        let t = a.iter().position(|w| w == "taskset").unwrap();
        assert_eq!(&a[t..], &["taskset", "-c", "1", "/bin/benchcage", "drive"]);
    }

    #[test]
    fn the_tools_output_is_read() {
        assert_eq!(parse_job_id("42\n").unwrap(), 42);
        assert_eq!(parse_job_id("43;benchcage\n").unwrap(), 43);
        assert!(parse_job_id("sbatch: error").is_err());
        let q = parse_squeue("7|RUNNING|vm|None\n8|PENDING||Resources\n9|CANCELLED|vm|None\n");
        assert_eq!(q[&7].node, "vm");
        assert!(q[&8].is_active() && q[&8].reason == "Resources");
        assert!(!q[&9].is_active());
        let s = parse_sacct("10|CANCELLED by 0|vm\n11|COMPLETED|vm\n");
        let n = parse_node_states("vm|idle\nvm2|alloc*\nvm3|down*\nvm4|drain\n");
        assert_eq!(node_trouble(&n["vm"]), None);
        assert_eq!(node_trouble("mix"), None);
        assert!(node_trouble(&n["vm2"]).unwrap().contains("not responding"));
        assert_eq!(node_trouble(&n["vm3"]), Some("down"));
        assert_eq!(node_trouble(&n["vm4"]), Some("drained"));
        assert!(waits_for_unavailable_nodes(
            "ReqNodeNotAvail, UnavailableNodes:vm"
        ));
        assert!(!waits_for_unavailable_nodes("Resources"));
        assert!(end_hint("NODE_FAIL").contains("slurmd died"));
        assert_eq!(s[&10].state, "CANCELLED");
        assert_eq!(s[&11].state, "COMPLETED");
        let t = "JobId=1 JobName=x TRES=cpu=2,mem=24105M,node=1,billing=2 Socks=*";
        assert_eq!(parse_tres(t), Some((Some(2), Some(24105 << 20))));
        assert_eq!(parse_slurm_size("2G"), Some(2 << 30));
        assert_eq!(parse_slurm_size("100"), Some(100 << 20));
    }
}
