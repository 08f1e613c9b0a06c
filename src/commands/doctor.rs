//! `benchcage doctor`: what this host can do (cgroup v1/v2, controllers,
//! swap accounting, mlock, CPUs, RAM, docker) and, for each thing it
//! cannot, why not and what to do.

use crate::host::{CgroupLayout, HostFacts};
use crate::spec::plan::approx;
use std::path::Path;
use std::process::ExitCode;

/// Whether a capability is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    No,
}

/// One line of the doctor's report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// Why not, and what to do (empty when ok).
    pub fix: String,
}

impl Check {
    fn new(name: &str, status: Status, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            status,
            detail: detail.into(),
            fix: fix.into(),
        }
    }
}

pub async fn run(_home: &Path) -> anyhow::Result<ExitCode> {
    let host = HostFacts::probe();
    let mut all = checks(&host);
    if let Some(c) = all.iter_mut().find(|c| c.name == "docker") {
        *c = docker_daemon_check().await;
    }
    for c in all {
        let tag = match c.status {
            Status::Ok => "ok  ",
            Status::Warn => "warn",
            Status::No => "no  ",
        };
        println!("{tag}  {:<11} {}", c.name, c.detail);
        if !c.fix.is_empty() {
            println!("      {:<11} -> {}", "", c.fix);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Every check, in report order.
pub fn checks(host: &HostFacts) -> Vec<Check> {
    let mut out = vec![
        Check::new(
            "cpus",
            Status::Ok,
            format!(
                "{} online ({}), {}",
                host.online_cpus.len(),
                host.online_cpus,
                host.cpu_model
            ),
            "",
        ),
        Check::new(
            "memory",
            Status::Ok,
            format!(
                "{} total, {} available, swap {}",
                approx(host.mem_total),
                approx(host.mem_available),
                approx(host.swap_total)
            ),
            "",
        ),
        Check::new("kernel", Status::Ok, host.kernel.clone(), ""),
        cgroup_check(host),
        swap_check(host),
        mlock_check(),
    ];
    if host.online_cpus.len() < 2 {
        out[0].status = Status::Warn;
        out[0].fix =
            "the server and the load generator need a CPU each; with one CPU they share it".into();
    }
    out.push(docker_socket_check());
    out
}

fn cgroup_check(host: &HostFacts) -> Check {
    let ctrls = host.controllers.join(", ");
    match host.cgroup {
        CgroupLayout::V1 => Check::new("cgroup", Status::Ok, format!("v1: {ctrls}"), ""),
        CgroupLayout::Hybrid => Check::new(
            "cgroup",
            Status::Ok,
            format!("hybrid: v1 controllers {ctrls}; cgroup2 at /sys/fs/cgroup/unified (no controllers)"),
            "",
        ),
        CgroupLayout::V2 => Check::new("cgroup", Status::Ok, format!("v2: {ctrls}"), ""),
        CgroupLayout::None => Check::new(
            "cgroup",
            Status::No,
            "no cgroup hierarchy under /sys/fs/cgroup",
            "mount cgroup2 (mount -t cgroup2 none /sys/fs/cgroup) or v1 controllers; the cgroup backend cannot run",
        ),
    }
    .with_missing(host)
}

impl Check {
    fn with_missing(mut self, host: &HostFacts) -> Check {
        if self.status == Status::No {
            return self;
        }
        let need = ["cpuset", "memory", "pids"];
        let missing: Vec<&str> = need
            .iter()
            .copied()
            .filter(|c| !host.controllers.iter().any(|h| h == c))
            .collect();
        if !missing.is_empty() {
            self.status = Status::No;
            self.fix = format!(
                "controllers {} are not available; enable them (v2: echo +cpuset +memory > cgroup.subtree_control)",
                missing.join(", ")
            );
        }
        self
    }
}

fn swap_check(host: &HostFacts) -> Check {
    if host.swap_accounting {
        let what = if host.cgroup == CgroupLayout::V2 {
            "memory.swap.max"
        } else {
            "memory.memsw.*"
        };
        Check::new(
            "swap limit",
            Status::Ok,
            format!("swap accounting present ({what})"),
            "",
        )
    } else {
        Check::new(
            "swap limit",
            Status::Warn,
            "no swap accounting: environments with a swap limit are refused",
            "boot with swapaccount=1 (cgroup v1), or keep `swap: off`",
        )
    }
}

fn mlock_check() -> Check {
    let root = nix::unistd::geteuid().is_root();
    let cap_ipc_lock = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:").map(|v| v.trim().to_string()))
        })
        .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
        .is_some_and(|caps| caps & (1 << 14) != 0);
    let limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_MEMLOCK);
    let lim = match limit {
        Ok((soft, hard)) => format!("RLIMIT_MEMLOCK soft {}, hard {}", rlim(soft), rlim(hard)),
        Err(e) => format!("RLIMIT_MEMLOCK unreadable: {e}"),
    };
    if cap_ipc_lock || root {
        Check::new(
            "mlock",
            Status::Ok,
            format!(
                "{}{}; {lim} (the hog raises it)",
                if root { "root" } else { "not root" },
                if cap_ipc_lock {
                    " with CAP_IPC_LOCK"
                } else {
                    ""
                }
            ),
            "",
        )
    } else {
        Check::new(
            "mlock",
            Status::No,
            format!("not root, no CAP_IPC_LOCK; {lim}"),
            "the memory hog cannot lock RAM: run as root or grant CAP_IPC_LOCK (setcap cap_ipc_lock+ep)",
        )
    }
}

fn rlim(v: u64) -> String {
    if v == nix::sys::resource::RLIM_INFINITY {
        "unlimited".into()
    } else {
        crate::units::Bytes(v).to_string()
    }
}

/// The daemon's version, cgroup driver and cgroup version, or why it
/// cannot be reached.
pub async fn docker_daemon_check() -> Check {
    match crate::sandbox::docker::daemon_report().await {
        Ok(d) => Check::new(
            "docker",
            Status::Ok,
            format!(
                "dockerd {} (API {}) at {}, cgroup driver {}, cgroup v{}",
                d.server_version, d.api_version, d.host, d.cgroup_driver, d.cgroup_version
            ),
            "",
        ),
        Err(why) => Check::new(
            "docker",
            Status::No,
            why,
            "start the daemon: bash scripts/dockerd.sh (dockerd --bridge=none --iptables=false)",
        ),
    }
}

/// Docker reachability from the socket alone (no daemon call).
pub fn docker_socket_check() -> Check {
    if let Ok(h) = std::env::var("DOCKER_HOST")
        && !h.is_empty()
    {
        return Check::new("docker", Status::Ok, format!("DOCKER_HOST={h}"), "");
    }
    let sock = Path::new("/var/run/docker.sock");
    if sock.exists() {
        Check::new(
            "docker",
            Status::Ok,
            "socket /var/run/docker.sock present",
            "",
        )
    } else {
        Check::new(
            "docker",
            Status::No,
            "no /var/run/docker.sock and DOCKER_HOST is unset: the docker backend cannot run",
            "start the daemon: dockerd --bridge=none --iptables=false (see make deps)",
        )
    }
}
