//! Which backend a cell runs on.

use std::fmt;

/// Which backend a cell runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Cgroup,
    Docker,
}

impl Backend {
    /// Its name in specs, keys and records (`cgroup`, `docker`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cgroup => "cgroup",
            Backend::Docker => "docker",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
