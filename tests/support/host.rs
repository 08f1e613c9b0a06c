//! Processes and cgroups as the kernel shows them, for "nothing is left".

use benchcage::sandbox::cgroupfs::Hierarchy;
use benchcage::sandbox::cgroupfs::group::TOP;
use std::path::{Path, PathBuf};
use std::process::Child;

/// Whether `pid` runs (a zombie does not).
pub fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s[s.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_string();
            state != "Z"
        })
        .unwrap_or(false)
}

/// Send `sig` to the child.
pub fn signal(child: &Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
}

/// A child killed (and reaped) when the test ends, even by a panic.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every entry directly under benchcage's top group in every controller
/// (each v1 mount, or the v2 subtree benchcage uses): the run groups, and
/// on v1 the top group's own files.
pub fn run_groups() -> Vec<PathBuf> {
    let hier = Hierarchy::detect().unwrap();
    let mut found = Vec::new();
    for top in hier.dirs(Path::new(TOP)).into_values() {
        let Ok(runs) = std::fs::read_dir(&top) else {
            continue;
        };
        found.extend(runs.flatten().map(|r| r.path()));
    }
    found
}

/// The last part of a path, as text.
pub fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().to_string()
}

/// Hog tests compare the host's Mlocked: one at a time.
pub static MLOCK_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The host's Mlocked, in bytes.
pub fn mlocked() -> i64 {
    benchcage::sandbox::hog::mlocked_total().unwrap().0 as i64
}

/// Mlocked within 48MiB of `want` (other processes on the host lock a little too).
pub fn assert_mlocked_near(want: i64, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let got = mlocked();
        if (got - want).abs() < 48 << 20 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: Mlocked {got}, expected about {want}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// What a busy host (a build or another test beside this one) may do to a
/// valid run: void a phase because something outside the server's cgroup
/// took time from its CPUs. Tests that are not about that assert the rest.
pub const BUSY_HOST: &str = benchcage::metrics::fidelity::FOREIGN_CPU;

/// What a busy hypervisor (another guest on the machine CI's VM runs on)
/// may do to any run, even one alone on the host: void a phase for steal
/// time. No test controls it; tests not about it assert the rest.
pub const BUSY_HYPERVISOR: &str = benchcage::metrics::fidelity::STOLEN_CPU;

/// Whether a fidelity violation is contention this test cannot prevent:
/// a neighbour on the host or on the hypervisor.
pub fn host_contention(violation: &str) -> bool {
    violation.contains(BUSY_HOST) || violation.contains(BUSY_HYPERVISOR)
}

/// Whether a phase is valid, or void only because the host or the
/// hypervisor was busy.
pub fn valid_but_for_a_busy_host(status: &benchcage::results::model::PhaseStatus) -> bool {
    use benchcage::results::model::PhaseStatus;
    match status {
        PhaseStatus::Ok => true,
        PhaseStatus::Invalid { reason } => host_contention(reason),
        _ => false,
    }
}

/// Whether a phase is valid, or void only because the hypervisor gave its
/// CPUs to another guest: what a test alone on the host may still see.
pub fn valid_but_for_the_hypervisor(status: &benchcage::results::model::PhaseStatus) -> bool {
    use benchcage::results::model::PhaseStatus;
    match status {
        PhaseStatus::Ok => true,
        PhaseStatus::Invalid { reason } => reason.contains(BUSY_HYPERVISOR),
        _ => false,
    }
}
