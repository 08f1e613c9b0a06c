//! A version that only its vendor's release tarball holds (MongoDB 2.6,
//! TokuMX) on the cgroup backend: `benchcage fetch ENGINE@VERSION
//! --tarball FILE` imports the file the user has into the cache, checked
//! (name, top folder, `bin/mongod --version`), and a cell runs it. The
//! tarballs here are made by the test: their `bin/mongod` answers
//! `--version` as MongoDB 2.6.12's does and otherwise runs the legacy
//! MongoDB 2.6 test server (tests/support/legacy_mongo.py, in the
//! tarball) on the port and config the mongodb engine's command gives
//! it. Needs root (the cgroup backend) and python3 with bson.

mod support;

use benchcage::model::CellStatus;
use benchcage::results::model::CellRecord;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::cli::{bc_in, combined, repo, run_id_of};
use support::files::{cell_dirs, read_json};
use support::host::{host_contention, valid_but_for_a_busy_host};

/// This test's project (the shipped engines, templates and environments),
/// cache, results, work and ledger folders.
struct Place {
    tmp: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        let tmp = tempfile::Builder::new()
            .prefix("benchcage-tarball-test-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let home = tmp.path().join("home");
        for d in ["engines", "templates", "environments"] {
            support::files::copy_dir(&repo().join(d), &home.join(d));
        }
        // The shipped mongodb engine as it is, but run as root: the
        // stand-in's python lives where the default user cannot read it.
        let spec = home.join("engines/mongodb.yaml");
        let text = support::files::read_text(&spec);
        assert!(
            !text.contains("\nuser:"),
            "the shipped spec names a user now"
        );
        std::fs::write(&spec, format!("user: root\n{text}")).unwrap();
        std::fs::create_dir_all(home.join("scenarios")).unwrap();
        std::fs::write(
            home.join("scenarios/mongo26.yaml"),
            "matrix: {engines: [mongodb@2.6], environments: [quickstart]}\n\
             dataset: {records: 500, field_count: 2, field_length: 20}\n\
             load: {threads: 1}\n\
             phases:\n  - {name: reads, builtin: {workload: c}, threads: 1, duration: 2s}\n",
        )
        .unwrap();
        Place { tmp }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn home(&self) -> PathBuf {
        self.path("home")
    }

    fn cache(&self) -> PathBuf {
        self.path("cache")
    }

    /// `benchcage ARGS` in the project, with this test's cache.
    fn benchcage(&self, args: &[&str]) -> Output {
        bc_in(
            &self.home(),
            &self.path("results"),
            &self.path("work"),
            &self.path("state"),
        )
        .env("BENCHCAGE_CACHE", self.cache())
        .env("BENCHCAGE_SNAPSHOTS", "off")
        .args(args)
        .output()
        .unwrap()
    }

    /// What the cache's engines folder holds (partial folders included).
    fn cached(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.cache().join("engines"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

/// The python that runs the legacy server (the one with bson).
fn python() -> String {
    let o = Command::new("python3")
        .args(["-c", "import bson, sys; print(sys.executable)"])
        .output()
        .unwrap();
    assert!(o.status.success(), "python3 with bson: {}", combined(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A release tarball `name` in `dir` whose one folder `top` holds
/// `bin/mongod` (when `mongod`): a script that prints `--version` as
/// MongoDB's mongod does, saying `says`, and otherwise runs the legacy
/// 2.6 server on the port and config it is given.
fn release(dir: &Path, name: &str, top: &str, says: &str, mongod: bool) -> PathBuf {
    let src = dir.join(format!("src-{name}"));
    let bin = src.join(top).join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(
        repo().join("tests/support/legacy_mongo.py"),
        bin.join("legacy_mongo.py"),
    )
    .unwrap();
    std::fs::write(src.join(top).join("README"), "a stand-in release\n").unwrap();
    if mongod {
        let script = format!(
            "#!/bin/sh\n\
             # A stand-in for mongod {says} (benchcage's tests).\n\
             here=$(dirname \"$0\")\n\
             if [ \"$1\" = --version ]; then\n  \
               echo \"db version v{says}\"\n  \
               echo \"2016-09-22T00:00:00.000+0000 git version: stand-in\"\n  \
               exit 0\n\
             fi\n\
             port= config=\n\
             while [ $# -gt 0 ]; do\n  \
               case \"$1\" in\n    \
                 --port) port=$2; shift 2;;\n    \
                 --config) config=$2; shift 2;;\n    \
                 *) shift;;\n  \
               esac\n\
             done\n\
             exec {} \"$here/legacy_mongo.py\" --port \"$port\" --wire 2 --version {says} --storage-engine mmapv1 --config \"$config\"\n",
            python()
        );
        std::fs::write(bin.join("mongod"), script).unwrap();
        std::fs::set_permissions(bin.join("mongod"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let out = dir.join(name);
    let o = Command::new("tar")
        .arg("-C")
        .arg(&src)
        .arg("-czf")
        .arg(&out)
        .arg(top)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", combined(&o));
    std::fs::remove_dir_all(&src).unwrap();
    out
}

fn sha256_of(file: &Path) -> String {
    let o = Command::new("sha256sum").arg(file).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

const FILE: &str = "mongodb-linux-x86_64-2.6.12.tgz";
const TOP: &str = "mongodb-linux-x86_64-2.6.12";

#[test]
fn an_imported_release_tarball_runs_a_cgroup_cell_of_mongodb_2_6_and_records_its_release() {
    let place = Place::new();
    let file = release(place.tmp.path(), FILE, TOP, "2.6.12", true);
    let sha = sha256_of(&file);
    let file_arg = file.to_string_lossy().into_owned();
    let o = place.benchcage(&["fetch", "mongodb@2.6", "--tarball", &file_arg]);
    assert!(o.status.success(), "{}", combined(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!(
            "mongodb@2.6: imported {file_arg} (sha256-{sha}, bin/mongod --version says 2.6.12)"
        )),
        "{out}"
    );
    let dir = place.cache().join("engines/mongodb@2.6");
    let record: serde_json::Value = read_json(&dir.join("install.json"));
    assert_eq!(record["checksum"], format!("sha256-{sha}"));
    assert_eq!(record["reported_version"], "2.6.12");
    assert_eq!(record["source"]["tarball"]["release"], "2.6.12");
    // The top folder is left out: bin/mongod is where the spec says.
    assert!(dir.join("bin/mongod").is_file() && dir.join("README").is_file());
    assert_eq!(place.cached(), ["mongodb@2.6"]);
    // The same file again: nothing to do.
    let o = place.benchcage(&["fetch", "mongodb@2.6", "--tarball", &file_arg]);
    assert!(o.status.success(), "{}", combined(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("already imported"),
        "{}",
        combined(&o)
    );
    let o = place.benchcage(&["list", "engines"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2.6 (imported)"),
        "{}",
        combined(&o)
    );

    // A cell on the cgroup backend runs the imported mongod.
    let o = place.benchcage(&["run", "mongo26"]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{}", combined(&o));
    let run = run_id_of(
        err.lines()
            .find(|l| l.contains("cell(s), results in"))
            .unwrap(),
    );
    let cell = cell_dirs(&place.path("results").join(&run)).remove(0);
    let c: CellRecord = read_json(&cell.join("cell.json"));
    assert_eq!(c.status, CellStatus::Finished, "{err}");
    assert_eq!((c.backend.as_str(), c.version.as_str()), ("cgroup", "2.6"));
    // The records were loaded, and the reads read them.
    let phase = |name: &str| c.phases.iter().find(|p| p.name == name).unwrap();
    let (load, reads) = (phase("load"), phase("reads"));
    assert_eq!((load.total_ops, load.total_errors), (500, 0), "{load:?}");
    assert!(reads.total_ops > 0 && reads.total_errors == 0, "{reads:?}");
    assert!(valid_but_for_a_busy_host(&reads.status), "{reads:?}");
    // The release the server reported, and the tarball it came from.
    assert_eq!(c.engine_reported_version, "2.6.12");
    assert_eq!(
        c.fidelity.engine_package.as_deref(),
        Some(format!("the release tarball {FILE} sha256-{sha} (reports 2.6.12)").as_str())
    );
    // No violation but a busy host's (other runs share this machine).
    assert!(
        c.fidelity.violations.iter().all(|v| host_contention(v)),
        "{:?}",
        c.fidelity.violations
    );
    // The launch ran the cache's binary with the rendered 2.6 YAML config.
    let launch = support::files::read_text(&cell.join("launch.json"));
    assert!(
        launch.contains(&dir.join("bin/mongod").display().to_string()),
        "{launch}"
    );
    support::clean::assert_tmp_left_nothing(place.tmp.path(), &run);
}

/// `fetch LABEL --tarball FILE` is bad input saying each of `wants`, and
/// the cache holds nothing after it.
fn refused(place: &Place, label: &str, file: &Path, wants: &[&str]) {
    let arg = file.to_string_lossy().into_owned();
    let o = place.benchcage(&["fetch", label, "--tarball", &arg]);
    let text = combined(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    for want in wants.iter().copied().chain([arg.as_str()]) {
        assert!(text.contains(want), "{want}: {text}");
    }
    assert!(place.cached().is_empty(), "{:?}", place.cached());
}

#[test]
fn a_tarball_that_is_not_the_release_is_refused_and_nothing_is_left_in_the_cache() {
    let place = Place::new();
    let dir = |name: &str| {
        let d = place.path(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    // Its name says 2.6.12, its mongod says 2.6.11.
    let file = release(&dir("other"), FILE, TOP, "2.6.11", true);
    let says = "its bin/mongod --version says it is 2.6.11, not 2.6.12; nothing was imported";
    refused(&place, "mongodb@2.6", &file, &[says]);
    // No bin/mongod at all.
    let file = release(&dir("empty"), FILE, TOP, "2.6.12", false);
    let none = "no executable bin/mongod or FOLDER/bin/mongod in it";
    refused(&place, "mongodb@2.6", &file, &[none]);
    // Another release's file, by its name, is not even opened.
    let toku = "tokumx-2.0.2-linux-x86_64";
    let file = release(
        &dir("toku"),
        &format!("{toku}-main.tar.gz"),
        toku,
        "2.0.2",
        true,
    );
    let hint = format!("give the server tarball of release 2.6.12 ({FILE})");
    let name = "its name says tokumx 2.0.2, and mongodb@2.6 is mongodb 2.6.12";
    refused(&place, "mongodb@2.6", &file, &[name, &hint]);
    // A version with no tarball source refuses --tarball.
    refused(
        &place,
        "redis@7.0",
        &file,
        &["does not come from a release tarball"],
    );
}

#[test]
fn a_cgroup_cell_of_a_version_whose_tarball_is_not_imported_is_refused_naming_the_command() {
    let place = Place::new();
    let want = format!("`benchcage fetch mongodb@2.6 --tarball {FILE}`");
    for args in [
        &["plan", "mongo26"][..],
        &["run", "mongo26"],
        &["fetch", "mongodb@2.6"],
    ] {
        let o = place.benchcage(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", combined(&o));
        assert!(combined(&o).contains(&want), "{args:?}: {}", combined(&o));
    }
    // Refused before anything exists: no results, no cache, no work dir.
    for d in ["results", "cache", "work", "state"] {
        assert!(!place.path(d).exists(), "{d} was made");
    }
}
