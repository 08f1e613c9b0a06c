//! The kernel emulation of a network: a named network namespace of the
//! cell's own (`ip netns`, a file under /run/netns) whose loopback carries
//! the qdiscs (`tc`): netem for a delay, jitter or loss (and its rate
//! beside them), a token bucket (tbf) for a rate alone. Every address
//! stays 127.0.0.1; a process or a thread enters the namespace with
//! `setns(CLONE_NEWNET)` on the namespace's file ([`enter`]).
//!
//! The only caller of `ip` and `tc`, through `crate::systool` (by argv,
//! never through a shell).

use super::Network;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where `ip netns` keeps a namespace's file.
pub const NETNS_DIR: &str = "/run/netns";

/// The prefix of every namespace benchcage names: cleanup touches no other.
pub const PREFIX: &str = "benchcage-";

/// What went wrong making, shaping, reading or removing a namespace.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NamespaceError(pub String);

/// The namespace of sandbox `id` (a cell's run id): a file name under
/// /run/netns, so the id's characters (A-Z a-z 0-9 - _ .) are enough.
pub fn name_for(id: &str) -> String {
    format!("{PREFIX}{id}")
}

/// The file of namespace `name`.
pub fn path_of(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

/// Whether namespace `name` exists.
pub fn exists(name: &str) -> bool {
    path_of(name).exists()
}

/// Makes namespace `name` with its loopback up.
pub fn create(name: &str) -> Result<(), NamespaceError> {
    run("ip", &["netns", "add", name])?;
    run("ip", &["-n", name, "link", "set", "lo", "up"])
}

/// Names the network namespace of process `pid` (a container's PID 1)
/// `name`: its file under /run/netns, which [`remove`] takes away again
/// (the namespace itself lives as long as a process is in it).
pub fn attach(name: &str, pid: u32) -> Result<(), NamespaceError> {
    run("ip", &["netns", "attach", name, &pid.to_string()])
}

/// Puts `network`'s qdisc on the loopback of namespace `name`.
pub fn shape(name: &str, network: &Network) -> Result<(), NamespaceError> {
    let mut argv: Vec<String> = ["-n", name, "qdisc", "replace", "dev", "lo", "root"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.extend(qdisc(network));
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    run("tc", &args).map_err(|e| {
        if e.0.contains("qdisc kind is unknown") {
            NamespaceError(format!(
                "{e}: this kernel lacks the qdisc (sch_netem for a delay, jitter or loss); use `emulation: proxy`"
            ))
        } else {
            e
        }
    })
}

/// The qdiscs on the loopback of namespace `name`, one line each, as
/// `tc qdisc show` prints them.
pub fn qdiscs(name: &str) -> Result<Vec<String>, NamespaceError> {
    let out = output("tc", &["-n", name, "qdisc", "show", "dev", "lo"])?;
    Ok(out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect())
}

/// The bytes the root qdisc on the loopback of namespace `name` has sent
/// since it was set (`Sent N bytes` of `tc -s qdisc show dev lo`): every
/// packet of either direction leaves through it.
pub fn sent_bytes(name: &str) -> Result<u64, NamespaceError> {
    let out = output("tc", &["-n", name, "-s", "qdisc", "show", "dev", "lo"])?;
    parse_sent(&out).ok_or_else(|| {
        NamespaceError(format!(
            "`tc -s qdisc show` in namespace {name} printed no `Sent N bytes`: {}",
            crate::error::excerpt(out.trim())
        ))
    })
}

/// The first `Sent N bytes` of `tc -s qdisc show` (the root qdisc's).
fn parse_sent(out: &str) -> Option<u64> {
    let mut words = out.split_whitespace();
    while let Some(w) = words.next() {
        if w == "Sent" {
            return words.next()?.parse().ok();
        }
    }
    None
}

/// Removes namespace `name` (nothing to do when it is gone). Its
/// processes, if any are left, keep the namespace alive until they end;
/// the name is free at once.
pub fn remove(name: &str) -> Result<(), NamespaceError> {
    if !exists(name) {
        return Ok(());
    }
    run("ip", &["netns", "delete", name])
}

/// The names of every namespace benchcage made that exists now.
pub fn ours() -> Vec<String> {
    std::fs::read_dir(NETNS_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(PREFIX))
        .collect()
}

/// Opens a namespace's file, for [`enter`] (here or in a child before it
/// runs its program).
pub fn open(path: &Path) -> std::io::Result<OwnedFd> {
    std::fs::File::open(path).map(OwnedFd::from)
}

/// Moves the calling thread into the namespace `fd` is the file of: the
/// sockets it makes from now on are the namespace's. Only this thread
/// moves; threads it spawns after start there too.
pub fn enter(fd: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: setns on a valid descriptor; it changes the calling thread's
    // network namespace and nothing of Rust's memory.
    if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The inode of the network namespace at `path` (a namespace's file, or
/// /proc/PID/ns/net): two paths with one inode are one namespace.
pub fn inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// Whether `network` needs netem: a delay, a jitter or a loss (a rate
/// alone is a token bucket, which every kernel with tc has).
pub fn needs_netem(network: &Network) -> bool {
    !network.delay.std().is_zero()
        || network.jitter.is_some_and(|j| !j.std().is_zero())
        || network.loss > 0.0
}

/// The qdisc and its options after `tc qdisc replace dev lo root`.
pub fn qdisc(network: &Network) -> Vec<String> {
    let mut q: Vec<String> = Vec::new();
    if needs_netem(network) {
        q.push("netem".into());
        q.push("delay".into());
        q.push(format!("{}us", network.delay.std().as_micros()));
        if let Some(j) = network.jitter.filter(|j| !j.std().is_zero()) {
            q.push(format!("{}us", j.std().as_micros()));
        }
        if network.loss > 0.0 {
            q.push("loss".into());
            q.push(format!("{}%", network.loss * 100.0));
        }
        if let Some(r) = network.rate {
            q.push("rate".into());
            q.push(format!("{}bit", r.bits_per_sec()));
        }
        // netem's default of 1,000 packets in flight is a few ms of a
        // busy loopback: a longer queue, so the delay drops nothing.
        q.extend(["limit".into(), "100000".into()]);
    } else if let Some(r) = network.rate {
        // The bucket holds at least two of the loopback's 64 KiB packets
        // (a larger packet than the bucket would be dropped), or 10 ms at
        // the rate.
        let burst = (r.bits_per_sec() / 8 / 100).max(256 * 1024);
        q.extend([
            "tbf".into(),
            "rate".into(),
            format!("{}bit", r.bits_per_sec()),
            "burst".into(),
            burst.to_string(),
            "latency".into(),
            "100ms".into(),
        ]);
    } else {
        q.push("pfifo_fast".into());
    }
    q
}

/// Whether this kernel has netem, from the files alone (nothing is
/// made): loaded (`proc/modules`), built in or loadable (the release's
/// `modules.builtin` or `modules.dep` under `lib/modules`), all under
/// `root`.
pub fn netem_available(root: &Path) -> bool {
    let has = |file: PathBuf, what: &str| {
        std::fs::read_to_string(file).is_ok_and(|t| t.lines().any(|l| l.contains(what)))
    };
    if has(root.join("proc/modules"), "sch_netem ") {
        return true;
    }
    let Ok(release) = std::fs::read_to_string(root.join("proc/sys/kernel/osrelease")) else {
        return false;
    };
    let mods = root.join("lib/modules").join(release.trim());
    has(mods.join("modules.builtin"), "sch_netem.ko")
        || has(mods.join("modules.dep"), "sch_netem.ko")
}

fn run(program: &str, args: &[&str]) -> Result<(), NamespaceError> {
    output(program, args).map(|_| ())
}

fn output(program: &str, args: &[&str]) -> Result<String, NamespaceError> {
    let argv: Vec<&str> = std::iter::once(program)
        .chain(args.iter().copied())
        .collect();
    crate::systool::output(&argv, "iproute2").map_err(|e| NamespaceError(e.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Emulation;

    fn net(delay: &str, rate: Option<&str>, loss: f64) -> Network {
        Network {
            delay: delay.parse().unwrap(),
            jitter: None,
            rate: rate.map(|r| r.parse().unwrap()),
            loss,
            emulation: Emulation::Kernel,
        }
    }

    #[test]
    fn a_delay_is_netem_and_a_rate_alone_a_token_bucket() {
        assert_eq!(
            qdisc(&net("1ms", None, 0.0)).join(" "),
            "netem delay 1000us limit 100000"
        );
        assert_eq!(
            qdisc(&net("100us", Some("10mbit"), 0.01)).join(" "),
            "netem delay 100us loss 1% rate 10000000bit limit 100000"
        );
        let tbf = qdisc(&net("0us", Some("10mbit"), 0.0)).join(" ");
        assert_eq!(
            tbf, "tbf rate 10000000bit burst 262144 latency 100ms",
            "a rate alone needs no netem"
        );
        assert!(!needs_netem(&net("0us", Some("10mbit"), 0.0)));
        assert!(needs_netem(&net("0us", None, 0.5)));
    }

    #[test]
    fn the_root_qdiscs_sent_bytes_are_read_from_tc_s() {
        let out = "qdisc tbf 8001: root refcnt 2 rate 10Mbit burst 256Kb lat 100ms \n Sent 7499016 bytes 1517 pkt (dropped 0, overlimits 3104 requeues 0) \n backlog 0b 0p requeues 0\n";
        assert_eq!(parse_sent(out), Some(7_499_016));
        assert_eq!(parse_sent("qdisc noqueue 0: root refcnt 2\n"), None);
    }

    #[test]
    fn netem_is_found_loaded_built_in_or_loadable_and_not_otherwise() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        assert!(!netem_available(root), "no files: no netem");
        std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
        std::fs::write(root.join("proc/sys/kernel/osrelease"), "6.1.0-x\n").unwrap();
        std::fs::write(root.join("proc/modules"), "sch_tbf 16384 0 - Live 0x0\n").unwrap();
        assert!(!netem_available(root));
        let mods = root.join("lib/modules/6.1.0-x");
        std::fs::create_dir_all(&mods).unwrap();
        std::fs::write(
            mods.join("modules.dep"),
            "kernel/net/sched/sch_netem.ko: \n",
        )
        .unwrap();
        assert!(netem_available(root), "loadable");
        std::fs::remove_file(mods.join("modules.dep")).unwrap();
        std::fs::write(root.join("proc/modules"), "sch_netem 20480 0 - Live 0x0\n").unwrap();
        assert!(netem_available(root), "loaded");
    }
}
