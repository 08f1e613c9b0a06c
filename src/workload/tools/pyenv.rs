//! The Python environment an external Python tool needs: a virtualenv
//! under benchcage's cache, one per pinned client library, with that
//! client installed by pip from the host's own pip configuration. py-tpcc
//! was written against pymongo 3.x (`Collection.insert`, which pymongo 4
//! removed), so a host whose Python has pymongo 4 cannot run it as it is.
//!
//! An environment is made in `.partial-<name>-<pid>` beside its folder and
//! renamed into place once pip has installed the pin and the record is
//! written: a folder named after a pin is always whole. The venv's
//! `bin/python` finds its packages from its own location, so the rename
//! keeps it working.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The record written last into a made environment.
pub(crate) const RECORD: &str = "benchcage-env.json";

/// What a made environment holds, as its interpreter reported it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EnvRecord {
    /// The interpreter's `sys.version`, first word (`3.11.7`).
    pub python: String,
    /// Each pinned package and the version the interpreter imports.
    pub packages: BTreeMap<String, String>,
}

/// Why an environment is missing or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PyEnvError {
    #[error(
        "py-tpcc's Python environment with pymongo {version} is not made yet ({dir}): run with --fetch, which makes it with `python3 -m venv` and pip"
    )]
    Missing { version: String, dir: PathBuf },
    #[error("making {dir}: `{command}` failed: {detail}")]
    Tool {
        dir: PathBuf,
        command: String,
        detail: String,
    },
    #[error("making {dir}: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A virtualenv with pinned packages, made or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyEnv {
    pub dir: PathBuf,
    /// `(package, version)`, installed as `package==version`.
    pub pins: Vec<(String, String)>,
}

/// Whether `v` reads as a release number pip can pin: `3.13.0`.
pub(crate) fn is_version(v: &str) -> bool {
    !v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

impl PyEnv {
    /// py-tpcc's environment with pymongo `version`, under the cache `root`.
    pub fn pymongo(root: &Path, version: &str) -> PyEnv {
        PyEnv {
            dir: root.join("tools").join(format!("python-pymongo-{version}")),
            pins: vec![("pymongo".into(), version.into())],
        }
    }

    /// The environment's interpreter.
    pub fn python(&self) -> PathBuf {
        self.dir.join("bin").join("python")
    }

    /// The record of a whole environment; `None` while it is not made.
    pub fn record(&self) -> Option<EnvRecord> {
        let text = std::fs::read_to_string(self.dir.join(RECORD)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The record, or the error that says how to make it.
    pub fn ready(&self) -> Result<EnvRecord, PyEnvError> {
        self.record().ok_or_else(|| PyEnvError::Missing {
            version: self
                .pins
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            dir: self.dir.clone(),
        })
    }

    /// Makes the environment unless it is whole already: `python3 -m venv
    /// --without-pip`, then the host's pip installs the pins into it
    /// (`pip --python`), then the record of what its interpreter imports.
    pub fn make(&self) -> Result<EnvRecord, PyEnvError> {
        if let Some(r) = self.record() {
            return Ok(r);
        }
        let io = |source| PyEnvError::Io {
            dir: self.dir.clone(),
            source,
        };
        let parent = self.dir.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(parent).map_err(io)?;
        remove_dead_partials(parent);
        let name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let partial = parent.join(format!(".partial-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        let made = self.make_in(&partial);
        if made.is_err() {
            let _ = std::fs::remove_dir_all(&partial);
            return made;
        }
        match std::fs::rename(&partial, &self.dir) {
            Ok(()) => made,
            // Another benchcage made it meanwhile: theirs is as good.
            Err(_) if self.record().is_some() => {
                let _ = std::fs::remove_dir_all(&partial);
                made
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&partial);
                Err(io(e))
            }
        }
    }

    fn make_in(&self, at: &Path) -> Result<EnvRecord, PyEnvError> {
        let at_s = at.display().to_string();
        self.run("python3", &["-m", "venv", "--without-pip", &at_s])?;
        let python = at.join("bin").join("python").display().to_string();
        let mut args: Vec<String> = [
            "-m",
            "pip",
            "--python",
            &python,
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(self.pins.iter().map(|(p, v)| format!("{p}=={v}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run("python3", &args)?;
        // What the interpreter really imports, each pin checked.
        let names: Vec<&str> = self.pins.iter().map(|(p, _)| p.as_str()).collect();
        let script = format!(
            "import importlib.metadata as m, json, sys\nprint(json.dumps({{'python': sys.version.split()[0], 'packages': {{n: m.version(n) for n in {names:?}}}}}))"
        );
        let out = self.run(&python, &["-c", &script])?;
        let record: EnvRecord = serde_json::from_str(out.trim()).map_err(|e| PyEnvError::Tool {
            dir: self.dir.clone(),
            command: format!("{python} -c ..."),
            detail: format!("{e}: {out}"),
        })?;
        for (p, v) in &self.pins {
            if record.packages.get(p) != Some(v) {
                return Err(PyEnvError::Tool {
                    dir: self.dir.clone(),
                    command: format!("pip install {p}=={v}"),
                    detail: format!("the environment imports {p} {:?}", record.packages.get(p)),
                });
            }
        }
        let text = serde_json::to_string_pretty(&record).unwrap_or_default();
        std::fs::write(at.join(RECORD), text).map_err(|source| PyEnvError::Io {
            dir: self.dir.clone(),
            source,
        })?;
        Ok(record)
    }

    /// Runs a command to its end; its stdout, or its failure with stderr.
    fn run(&self, program: &str, args: &[&str]) -> Result<String, PyEnvError> {
        let command = format!("{program} {}", args.join(" "));
        let out = Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| PyEnvError::Tool {
                dir: self.dir.clone(),
                command: command.clone(),
                detail: format!("{e} (install python3-venv and python3-pip)"),
            })?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(8).collect();
            return Err(PyEnvError::Tool {
                dir: self.dir.clone(),
                command,
                detail: format!(
                    "{}: {}",
                    out.status,
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Removes `.partial-*-<pid>` folders whose process is gone (a make that
/// was killed mid-way).
fn remove_dead_partials(parent: &Path) {
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(".partial-")
            .and_then(|r| r.rsplit('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pymongo_environment_is_one_folder_per_pin_under_the_cache() {
        let e = PyEnv::pymongo(Path::new("/c"), "3.13.0");
        assert_eq!(e.dir, Path::new("/c/tools/python-pymongo-3.13.0"));
        assert_eq!(
            e.python(),
            Path::new("/c/tools/python-pymongo-3.13.0/bin/python")
        );
        let m = e.ready().unwrap_err().to_string();
        assert!(m.contains("pymongo 3.13.0") && m.contains("--fetch"), "{m}");
    }

    #[test]
    fn only_release_numbers_are_pins() {
        assert!(is_version("3.13.0") && is_version("4"));
        for bad in ["", "3.", "3.13.0; rm", ">=3", "3..1", "latest"] {
            assert!(!is_version(bad), "{bad}");
        }
    }

    #[test]
    fn a_dead_makers_partial_folder_is_removed_and_a_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let dead = d.path().join(".partial-python-pymongo-3.13.0-4000000");
        let live = d.path().join(format!(
            ".partial-python-pymongo-3.13.0-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::create_dir_all(&live).unwrap();
        remove_dead_partials(d.path());
        assert!(!dead.exists() && live.exists());
    }
}
