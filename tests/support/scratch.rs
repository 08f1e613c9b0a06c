//! A sandbox test's own folder (that unprivileged engines can traverse),
//! run id and ledger folder.

use benchcage::sandbox::cgroup::{CgroupConfig, CgroupSandbox};
use benchcage::sandbox::cgroupfs::Hierarchy;
use benchcage::sandbox::docker::DockerSandbox;
use benchcage::sandbox::ledger;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How long the drop backstop may take to reap a run.
const REAP_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// A per-test folder, run id and ledger folder.
pub struct Scratch {
    dir: tempfile::TempDir,
    pub run_id: String,
}

impl Scratch {
    /// In the temp dir, run id `t-NAME-PID` (the cgroup tests).
    pub fn new(name: &str) -> Scratch {
        Scratch::make(&std::env::temp_dir(), "benchcage-test-", "t", name)
    }

    /// Under /var/tmp, on a real disk so that IO limits have a device; run
    /// id `d-NAME-PID` (the docker tests).
    pub fn on_disk(name: &str) -> Scratch {
        Scratch::make(Path::new("/var/tmp"), "benchcage-dtest-", "d", name)
    }

    /// A folder in `parent` for a run whose id is given (a child process
    /// holding a parent test's run).
    pub fn for_run(parent: &Path, run_id: &str) -> Scratch {
        Scratch {
            dir: tempfile::Builder::new().tempdir_in(parent).unwrap(),
            run_id: run_id.to_string(),
        }
    }

    fn make(parent: &Path, prefix: &str, kind: &str, name: &str) -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(parent)
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch {
            dir,
            run_id: format!("{kind}-{name}-{}", std::process::id()),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn ledgers(&self) -> PathBuf {
        self.path().join("ledger")
    }

    /// The engine log of a launch here.
    pub fn log(&self) -> PathBuf {
        self.path().join("engine.log")
    }

    /// The cgroup backend with its ledgers and data here.
    pub fn cgroup_config(&self) -> CgroupConfig {
        CgroupConfig {
            hierarchy: Hierarchy::detect().unwrap(),
            ledger_root: self.ledgers(),
            data_root: self.path().to_path_buf(),
        }
    }

    /// A cgroup sandbox for this run.
    pub fn cgroup_sandbox(&self) -> CgroupSandbox {
        CgroupSandbox::new(&self.run_id, self.cgroup_config()).unwrap()
    }

    /// `benchcage ARGS` with its ledgers here and this folder as its work
    /// root (`cleanup` removes data dirs such as `w/data` only under it).
    pub fn benchcage(&self, args: &[&str]) -> Command {
        let mut c = Command::new(super::cli::BIN);
        c.args(args)
            .env(ledger::ROOT_ENV, self.ledgers())
            .env("BENCHCAGE_WORK", self.path())
            .stdin(Stdio::null());
        c
    }

    /// A docker sandbox for this run (one cell), its ledger here.
    pub fn docker_sandbox(&self) -> DockerSandbox {
        DockerSandbox::new(
            &self.run_id,
            "cell",
            Hierarchy::detect().unwrap(),
            &self.ledgers(),
        )
        .unwrap()
    }
}

/// Backstop for a failed test: reap whatever its ledgers still list, so a
/// failure does not leak cgroups or containers into the next test run.
impl Drop for Scratch {
    fn drop(&mut self) {
        let root = self.ledgers();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let Ok(dir) = std::fs::read_dir(&root) else {
                return;
            };
            for f in dir.flatten() {
                let run = f.path().file_stem().unwrap().to_string_lossy().to_string();
                let _ = rt.block_on(ledger::reap_run(&root, &run, REAP_BUDGET));
            }
        })
        .join();
    }
}
