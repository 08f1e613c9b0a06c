//! Phase executors. [`DriveExec`] runs the built-in load generator as a
//! child process (`benchcage drive --config FILE --json OUT`) placed in the
//! client group, so the generator is pinned to the client CPUs and never
//! charged to the server. Its raw output is kept next to the result.

use crate::results::model::PhaseResult;
use crate::run::phase::{PhaseEnv, PhaseExec, Unrunnable};
use crate::workload::{DriveConfig, Threads};
use anyhow::Context;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// How long a child gets after SIGINT before SIGKILL.
const CHILD_GRACE: Duration = Duration::from_secs(5);

/// The store URL of the cell's engine on its ports (several: a sharded
/// cluster's routers).
pub(crate) type StoreUrlFn = Arc<dyn Fn(&[u16]) -> String + Send + Sync>;

/// The built-in load generator as a child process.
pub struct DriveExec {
    pub label: String,
    /// The generator's config as planned; [`DriveExec::config_for`] fills
    /// in the store and the thread count of one run.
    pub config: DriveConfig,
    pub store: StoreUrlFn,
    /// The benchcage binary to run (`std::env::current_exe()` in real use).
    pub program: PathBuf,
    /// A client on another node: a Slurm job step there, on these CPUs.
    pub remote: Option<(crate::model::RemoteClient, crate::units::CpuSet)>,
}

impl DriveExec {
    /// The config of one run: the engine's store on `ports`, `threads`
    /// connections (for the load too).
    pub(crate) fn config_for(&self, ports: &[u16], threads: u32) -> DriveConfig {
        let mut c = self.config.clone();
        c.store = Some((self.store)(ports));
        c.threads = Threads::One(threads);
        if c.load {
            c.load_threads = Some(threads);
        }
        c
    }
}

#[async_trait::async_trait]
impl PhaseExec for DriveExec {
    fn describe(&self) -> String {
        self.label.clone()
    }

    fn check(&self, threads: u32) -> Result<(), Unrunnable> {
        self.config_for(&[1], threads)
            .check_planned()
            .map_err(|e| Unrunnable(e.to_string()))
    }

    async fn run(&self, env: PhaseEnv) -> anyhow::Result<PhaseResult> {
        let raw = env.cell_dir.join("raw");
        std::fs::create_dir_all(&raw)?;
        let cfg_path = raw.join(format!("{}.config.json", env.stem));
        let out_path = raw.join(format!("{}.result.json", env.stem));
        let log_path = raw.join(format!("{}.log", env.stem));
        let cfg = self.config_for(&env.ports, env.threads);
        std::fs::write(&cfg_path, serde_json::to_vec_pretty(&cfg)?)?;
        let argv: Vec<std::ffi::OsString> = vec![
            self.program.clone().into(),
            "drive".into(),
            "--config".into(),
            cfg_path.clone().into(),
            "--json".into(),
            out_path.clone().into(),
        ];
        let cmd = match &self.remote {
            // Its srun stays in the client group here; the generator runs
            // on the other node, pinned to the client CPUs there.
            Some((r, cpus)) => crate::slurm::step_on(&r.node, &cpus.to_string(), &argv),
            None => {
                let mut c = std::process::Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            }
        };
        let status = run_child(cmd, &env, &log_path).await?;
        let text = std::fs::read(&out_path).with_context(|| {
            format!(
                "the load generator ({status}) wrote no result to {}; its output is in {}:\n{}",
                out_path.display(),
                log_path.display(),
                tail(&log_path, 10)
            )
        })?;
        // `drive --json` writes every phase it ran (load, then one per
        // thread count); the run asks it for exactly one.
        let results: Vec<PhaseResult> = serde_json::from_slice(&text).with_context(|| {
            format!("reading the load generator's result {}", out_path.display())
        })?;
        let mut res = results.into_iter().next_back().with_context(|| {
            format!(
                "the load generator's result {} is empty",
                out_path.display()
            )
        })?;
        res.raw_outputs.push(format!("raw/{}.log", env.stem));
        res.raw_outputs
            .push(format!("raw/{}.result.json", env.stem));
        Ok(res)
    }
}

/// Spawn `cmd` in the client group, output to `log_path`, progress lines
/// parsed for the live view; on cancel SIGINT, then SIGKILL after a grace.
pub(crate) async fn run_child(
    mut cmd: std::process::Command,
    env: &PhaseEnv,
    log_path: &std::path::Path,
) -> anyhow::Result<std::process::ExitStatus> {
    (env.place)(&mut cmd).context("placing the client process in the client group")?;
    let program = cmd.get_program().to_string_lossy().to_string();
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().with_context(|| format!("starting {program}"))?;
    let log = Arc::new(std::sync::Mutex::new(std::fs::File::create(log_path)?));
    let mut pumps = Vec::new();
    for reader in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let log = log.clone();
        let progress = env.progress.clone();
        pumps.push(tokio::spawn(async move {
            let mut lines = BufReader::new(reader).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rate) = parse_rate(&line) {
                    progress.send_replace(Some(rate));
                }
                use std::io::Write;
                let mut f = log.lock().unwrap_or_else(|e| e.into_inner());
                let _ = writeln!(f, "{line}");
            }
        }));
    }
    let status = tokio::select! {
        s = child.wait() => s?,
        _ = env.cancel.cancelled() => {
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGINT,
                );
            }
            match tokio::time::timeout(CHILD_GRACE, child.wait()).await {
                Ok(s) => s?,
                Err(_) => {
                    let _ = child.kill().await;
                    child.wait().await?
                }
            }
        }
    };
    for p in pumps {
        let _ = p.await;
    }
    Ok(status)
}

/// The rate in a progress line: `... 12345.6 ops/s ...`, YCSB's
/// `... 1234.5 current ops/sec ...` or sysbench's `tps: 123.4`.
pub(crate) fn parse_rate(line: &str) -> Option<f64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_end_matches([',', ';']);
        if (w == "ops/s" || w == "ops/sec") && i > 0 {
            let j = if words[i - 1] == "current" && i > 1 {
                i - 2
            } else {
                i - 1
            };
            if let Ok(v) = words[j].trim_end_matches([',', ';']).parse() {
                return Some(v);
            }
        }
        if w == "tps:"
            && let Some(Ok(v)) = words.get(i + 1).map(|n| n.parse())
        {
            return Some(v);
        }
    }
    None
}

/// The last `n` lines of a file, for error messages.
pub fn tail(path: &std::path::Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_rates_are_read_from_the_usual_formats() {
        assert_eq!(
            parse_rate("workload-a t4: 12345.5 ops/s, p99 1.2 ms"),
            Some(12345.5)
        );
        assert_eq!(
            parse_rate("2026-11-30 10 sec: 12000 operations; 1200.5 current ops/sec; [READ: ...]"),
            Some(1200.5)
        );
        assert_eq!(
            parse_rate("[ 10s ] thds: 4 tps: 523.10 qps: 10462.03"),
            Some(523.10)
        );
        assert_eq!(parse_rate("loading 10000 records"), None);
    }
}
