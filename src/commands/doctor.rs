//! `benchcage doctor`: what this host can do (cgroup v1/v2, controllers,
//! swap accounting, mlock, CPUs, RAM, transparent huge pages, docker) and,
//! for each thing it cannot, why not and what to do.

use crate::display::approx;
use crate::host::{CgroupLayout, HostFacts};
use crate::sandbox::cgroupfs::delegation::V2Place;
use crate::sandbox::cgroupfs::group::{TOP, V2_CONTROLLERS_WANTED};
use crate::sandbox::cgroupfs::hierarchy::V2_MOUNT;
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
    ];
    if host.cgroup == CgroupLayout::V2 {
        let place = V2Place::probe(Path::new(V2_MOUNT));
        out.extend(delegation_checks(&place));
    }
    out.extend([swap_check(host), mlock_check(), thp_check(host)]);
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

/// On v2: whose tree it is, where benchcage's groups go (a subtree systemd
/// delegated, or the mount itself), and the controllers available there.
pub(crate) fn delegation_checks(place: &V2Place) -> Vec<Check> {
    let base = match place.base() {
        Ok(b) => b,
        Err(_) => {
            return vec![Check::new(
                "delegation",
                Status::No,
                format!(
                    "systemd manages the cgroup tree; benchcage runs in /{}, which is not delegated to it, and writes nowhere else",
                    place.own.display()
                ),
                "run it in its own delegated scope: systemd-run --scope -p Delegate=yes --quiet -- benchcage run ... \
                 (`benchcage run` does this itself when systemd-run is installed)",
            )];
        }
    };
    let detail = match &place.delegated {
        Some(d) => format!(
            "systemd delegated /{} (Delegate=yes); benchcage's groups go in {}",
            d.display(),
            base.join(TOP).display()
        ),
        None => format!(
            "no init system manages the tree; benchcage's groups go in {}",
            base.join(TOP).display()
        ),
    };
    let available: Vec<String> = std::fs::read_to_string(base.join("cgroup.controllers"))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    vec![
        Check::new("delegation", Status::Ok, detail, ""),
        subtree_check(&available, place.delegated.is_some()),
    ]
}

/// The controllers benchcage's subtree has, and what is missing.
pub(crate) fn subtree_check(available: &[String], delegated: bool) -> Check {
    let missing: Vec<&str> = V2_CONTROLLERS_WANTED
        .iter()
        .copied()
        .filter(|c| !available.iter().any(|a| a == c))
        .collect();
    let detail = format!("controllers available there: {}", available.join(" "));
    if missing.is_empty() {
        return Check::new("subtree", Status::Ok, detail, "");
    }
    // cpuset, memory and pids carry the limits; cpu and io only stats and IO throttles.
    let hard = missing
        .iter()
        .any(|m| matches!(*m, "cpuset" | "memory" | "pids"));
    let fix = if delegated {
        format!(
            "missing {}: systemd delegates only the controllers it enables; add them with Delegate={} on the unit",
            missing.join(" "),
            V2_CONTROLLERS_WANTED.join(" ")
        )
    } else {
        format!(
            "missing {}: the kernel does not offer them here (a parent's cgroup.subtree_control lacks them, or the kernel was built without them)",
            missing.join(" ")
        )
    };
    Check::new(
        "subtree",
        if hard { Status::No } else { Status::Warn },
        detail,
        fix,
    )
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

/// Transparent huge pages: TokuMX refuses to start under `always`.
pub(crate) fn thp_check(host: &HostFacts) -> Check {
    use crate::sandbox::thp::{ThpFiles, ThpMode};
    let file = ThpFiles::current().enabled_path();
    match &host.thp {
        Err(e) => Check::new(
            "hugepages",
            Status::Warn,
            e.clone(),
            "plan cannot tell whether TokuMX (which refuses THP `always`) will start",
        ),
        Ok(None) => Check::new(
            "hugepages",
            Status::Ok,
            "no transparent huge pages in this kernel",
            "",
        ),
        Ok(Some(t)) => {
            let detail = format!(
                "transparent huge pages: enabled {}, defrag {}",
                t.enabled,
                t.defrag.as_deref().unwrap_or("(no defrag file)")
            );
            if t.enabled == ThpMode::Always {
                Check::new(
                    "hugepages",
                    Status::Warn,
                    detail,
                    format!(
                        "TokuMX refuses to start under `always`, so plan refuses its cells unless the environment has \
                         `host: {{transparent_hugepages: off}}` (benchcage writes `never` and restores `always` after \
                         each cell); or turn them off on the host: echo never > {} (madvise works too)",
                        file.display()
                    ),
                )
            } else {
                Check::new("hugepages", Status::Ok, detail, "")
            }
        }
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
pub(crate) async fn docker_daemon_check() -> Check {
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
pub(crate) fn docker_socket_check() -> Check {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_subtree_without_cpuset_is_refused_and_names_the_delegate_setting() {
        let c = subtree_check(&words("cpu io memory pids"), true);
        assert_eq!(c.status, Status::No);
        assert!(c.fix.contains("missing cpuset"), "{}", c.fix);
        assert!(
            c.fix.contains("Delegate=cpuset cpu io memory pids"),
            "{}",
            c.fix
        );
        let io = subtree_check(&words("cpuset cpu memory pids"), false);
        assert_eq!(io.status, Status::Warn);
        let all = subtree_check(&words("cpuset cpu io memory pids hugetlb"), true);
        assert_eq!((all.status, all.fix.as_str()), (Status::Ok, ""));
    }

    #[test]
    fn thp_always_is_a_warning_that_says_how_to_turn_it_off() {
        use crate::sandbox::thp::{ThpMode, ThpState};
        let mut host = HostFacts::probe();
        host.thp = Ok(Some(ThpState {
            enabled: ThpMode::Always,
            defrag: Some("madvise".into()),
        }));
        let c = thp_check(&host);
        assert_eq!(c.status, Status::Warn);
        assert_eq!(
            c.detail,
            "transparent huge pages: enabled always, defrag madvise"
        );
        assert!(
            c.fix.contains("host: {transparent_hugepages: off}") && c.fix.contains("echo never >"),
            "{}",
            c.fix
        );
        host.thp = Ok(Some(ThpState {
            enabled: ThpMode::Madvise,
            defrag: None,
        }));
        assert_eq!(thp_check(&host).status, Status::Ok);
        host.thp = Ok(None);
        assert_eq!(thp_check(&host).status, Status::Ok);
    }

    #[test]
    fn an_undelegated_systemd_host_is_told_to_run_in_its_own_scope() {
        let place = V2Place {
            mount: PathBuf::from("/sys/fs/cgroup"),
            own: PathBuf::from("user.slice/user-0.slice/session-1.scope"),
            systemd: true,
            delegated: None,
        };
        let c = delegation_checks(&place);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, Status::No);
        assert!(
            c[0].detail
                .contains("/user.slice/user-0.slice/session-1.scope")
        );
        assert!(c[0].fix.contains("systemd-run --scope -p Delegate=yes"));
    }
}
