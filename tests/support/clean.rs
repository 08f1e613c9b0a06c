//! What a run may not leave behind, checked after it ends.

use super::host::{name_of, run_groups};
use std::path::Path;

/// The network namespaces of run `run_id` (named `benchcage-<run id>-...`,
/// the kernel emulation of a cell's network) that exist now.
pub fn namespaces_left(run_id: &str) -> Vec<String> {
    let ours = format!("{}{run_id}", benchcage::network::netns::PREFIX);
    benchcage::network::netns::ours()
        .into_iter()
        .filter(|n| n.starts_with(&ours))
        .collect()
}

/// The docker containers of run `run_id` (labelled `benchcage.run=<run
/// id>-...`, its cells' and members' sandboxes) that exist now, running
/// or not; none where no daemon answers.
pub fn containers_left(run_id: &str) -> Vec<String> {
    let out = std::process::Command::new("docker")
        .args(["ps", "-a", "--filter", "label=benchcage.run"])
        .args(["--format", "{{.Names}} {{.Label \"benchcage.run\"}}"])
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.split(' ')
                .nth(1)
                .is_some_and(|run| run.starts_with(run_id))
        })
        .map(String::from)
        .collect()
}

/// [`assert_run_left_nothing`] for a test whose temp folder `tmp` holds
/// `results`, `work` and `state`.
pub fn assert_tmp_left_nothing(tmp: &Path, run_id: &str) {
    assert_run_left_nothing(
        tmp,
        &tmp.join("results"),
        &tmp.join("work"),
        &tmp.join("state"),
        run_id,
    );
}

/// Nothing of run `run_id` is left: no cgroup in any controller (members'
/// included), no network namespace, no docker container, no ledger in `state`, no data dir under `work`, no process
/// whose command line names both `marker` (a test's temp folder) and the
/// run but a benchcage submitter, no temp file under `results`, no mount
/// point or loop device (a data disk's) under `work`.
pub fn assert_run_left_nothing(
    marker: &Path,
    results: &Path,
    work: &Path,
    state: &Path,
    run_id: &str,
) {
    for g in run_groups() {
        assert!(
            !name_of(&g).starts_with(run_id),
            "cgroup left: {}",
            g.display()
        );
    }
    let namespaces = namespaces_left(run_id);
    assert!(namespaces.is_empty(), "namespaces left: {namespaces:?}");
    let containers = containers_left(run_id);
    assert!(containers.is_empty(), "containers left: {containers:?}");
    let ledgers: Vec<String> = std::fs::read_dir(state)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(run_id))
        .collect();
    assert!(ledgers.is_empty(), "ledgers left: {ledgers:?}");
    let data = work.join(run_id);
    assert!(!data.exists(), "work dir left: {}", data.display());
    let disks = benchcage::sandbox::disk::leftovers_under(work);
    assert!(disks.is_empty(), "data disks left: {disks:?}");
    let marker = marker.to_string_lossy();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = p.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        assert!(
            !(cmd.contains(marker.as_ref()) && cmd.contains(run_id)),
            "process left: {name} {cmd}"
        );
    }
    let mut stack = vec![results.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            assert!(
                !n.contains(".tmp."),
                "temp file left: {}",
                e.path().display()
            );
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
}
