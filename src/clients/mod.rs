//! Database clients: the only files that import a database client crate
//! (`redis`, `tokio-postgres`, `mysql_async`, `bson` for MongoDB). Each file wraps its
//! crate behind small connection types used by the workload stores and by
//! readiness probes; no client crate type leaves its file.

use crate::model::Probe;
use std::time::Duration;

pub mod mongodb;
pub mod mysql;
pub mod postgres;
pub mod redis;
pub mod redis_cluster;
mod resp;

/// How long one protocol round trip may take before the probe gives up.
pub(crate) const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// A failed client call, per protocol, so callers can tell a refused
/// connection from a server error.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("redis at {addr}: {msg}")]
    Redis { addr: String, msg: String },
    #[error("postgres at {addr}: {msg}")]
    Postgres { addr: String, msg: String },
    #[error("mysql at {addr}: {msg}")]
    Mysql { addr: String, msg: String },
    #[error("mongodb at {addr}: {msg}")]
    Mongodb { addr: String, msg: String },
    /// The server chose this transaction as a deadlock victim or could not
    /// serialize it: running it again may succeed.
    #[error("{engine} at {addr}: {msg}")]
    Conflict {
        engine: &'static str,
        addr: String,
        msg: String,
    },
    #[error("{what} at {addr} did not answer within {secs}s")]
    Timeout {
        what: &'static str,
        addr: String,
        secs: u64,
    },
    #[error(
        "refusing to connect to {0}: benchcage only talks to 127.0.0.1 (use a loopback address)"
    )]
    NotLoopback(String),
    /// A setup step (connect, handshake, login, the existence check) got
    /// no reply within [`setup_timeout`]: a paused or stopped server.
    #[error(
        "{engine}: {step}: no reply within {} s from {addr} (is the server paused or stopped?)",
        after.as_secs_f64()
    )]
    NoReply {
        engine: &'static str,
        step: &'static str,
        addr: String,
        after: Duration,
    },
}

impl ClientError {
    /// True when the transaction lost a deadlock or serialization conflict
    /// and may be run again.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ClientError::Conflict { .. })
    }
}

/// One value of a result row, as the workloads read it: a number, a text
/// or SQL `NULL`. Types the workloads never read back (timestamps) come
/// as `Null`.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

impl Cell {
    /// The value as an integer; a decimal text (MySQL `DECIMAL`) parses.
    pub fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(i) => Some(*i),
            Cell::Float(f) => Some(*f as i64),
            Cell::Text(t) => t.trim().parse().ok(),
            Cell::Null => None,
        }
    }

    /// The value as a float; a decimal text (MySQL `DECIMAL`) parses.
    pub(crate) fn float(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Float(f) => Some(*f),
            Cell::Text(t) => t.trim().parse().ok(),
            Cell::Null => None,
        }
    }

    /// The value as text; empty for anything that is not text.
    pub fn text(&self) -> &str {
        match self {
            Cell::Text(t) => t,
            _ => "",
        }
    }
}

/// A parameter of a prepared SQL statement.
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Text(&'a str),
    Int(i64),
    Float(f64),
    /// SQL `NULL`.
    Null,
}

/// One statement of a [pipeline](postgres::PgConn::pipeline): sent
/// together with the others of its pipeline where the protocol allows
/// (PostgreSQL), one after the other otherwise (MySQL).
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// Opens a transaction: PostgreSQL's `BEGIN`; nothing on a MySQL
    /// connection with autocommit off, whose next statement opens one.
    Begin,
    /// A statement without parameters (`COMMIT`).
    Text(&'a str),
    /// Prepared statement `id` whose rows are wanted.
    Rows(usize, &'a [Param<'a>]),
    /// Prepared statement `id` whose changed-row count is wanted.
    Exec(usize, &'a [Param<'a>]),
}

/// What one [`Step`] returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    Rows(Vec<Vec<Cell>>),
    Changed(u64),
}

impl Outcome {
    /// The rows of a [`Step::Rows`]; none for any other step.
    pub(crate) fn into_rows(self) -> Vec<Vec<Cell>> {
        match self {
            Outcome::Rows(r) => r,
            _ => Vec::new(),
        }
    }

    /// The changed-row count of a [`Step::Exec`]; 0 for any other step.
    pub fn changed(&self) -> u64 {
        match self {
            Outcome::Changed(n) => *n,
            _ => 0,
        }
    }
}

/// Where a client connects: always loopback.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    pub database: Option<String>,
    /// Database that holds the user's credentials (MongoDB's
    /// `authSource`); `None` for the protocol's default.
    pub auth_source: Option<String>,
}

/// Never shows the password.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("database", &self.database)
            .field("auth_source", &self.auth_source)
            .finish()
    }
}

impl Endpoint {
    /// A loopback endpoint on `port`.
    pub fn loopback(port: u16) -> Self {
        Endpoint {
            host: "127.0.0.1".into(),
            port,
            user: None,
            password: None,
            database: None,
            auth_source: None,
        }
    }

    /// The loopback endpoint a probe logs in to: its user and database.
    pub(crate) fn for_probe(probe: &Probe, port: u16) -> Self {
        Endpoint {
            user: probe.user().map(str::to_string),
            database: probe.database().map(str::to_string),
            ..Endpoint::loopback(port)
        }
    }

    /// `host:port`, for messages.
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Refuse anything but a loopback address (the network rule).
    pub(crate) fn check_loopback(&self) -> Result<(), ClientError> {
        if is_loopback_host(&self.host) {
            Ok(())
        } else {
            Err(ClientError::NotLoopback(self.host.clone()))
        }
    }
}

/// True for `127.x.y.z`, `::1` and `localhost`.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if h.eq_ignore_ascii_case("localhost") {
        return true;
    }
    h.parse::<std::net::IpAddr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false)
}

/// How long one setup step may wait for a server (connect with its
/// handshake and login, the schema's statements, the existence check):
/// the MongoDB store's round-trip bound. Inside a phase, operations have
/// their own bound (`workload::driver::OP_TIMEOUT`).
pub(crate) const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Environment variable, in seconds, that replaces [`SETUP_TIMEOUT`]
/// (tests shorten it); a value that is not a positive number is ignored.
pub(crate) const SETUP_TIMEOUT_ENV: &str = "BENCHCAGE_SETUP_TIMEOUT";

/// [`SETUP_TIMEOUT`], or what [`SETUP_TIMEOUT_ENV`] says.
pub(crate) fn setup_timeout() -> Duration {
    std::env::var(SETUP_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map_or(SETUP_TIMEOUT, Duration::from_secs_f64)
}

/// Runs `fut`, setup step `step` of `engine` at `addr`, under
/// [`setup_timeout`]; a server that never answers is a
/// [`ClientError::NoReply`].
pub(crate) async fn setup_step<T, E: From<ClientError>>(
    engine: &'static str,
    step: &'static str,
    addr: &str,
    fut: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let after = setup_timeout();
    match tokio::time::timeout(after, fut).await {
        Ok(r) => r,
        Err(_) => Err(E::from(ClientError::NoReply {
            engine,
            step,
            addr: addr.to_string(),
            after,
        })),
    }
}

/// Runs `fut` under [`PING_TIMEOUT`].
pub(crate) async fn timed<T>(
    what: &'static str,
    addr: &str,
    fut: impl std::future::Future<Output = Result<T, ClientError>>,
) -> Result<T, ClientError> {
    match tokio::time::timeout(PING_TIMEOUT, fut).await {
        Ok(r) => r,
        Err(_) => Err(ClientError::Timeout {
            what,
            addr: addr.to_string(),
            secs: PING_TIMEOUT.as_secs(),
        }),
    }
}

/// One real protocol round trip to the engine on `127.0.0.1:port`; returns
/// the version string the server reports (redis `INFO server`, postgres
/// `SHOW server_version`, mysql `SELECT VERSION()`, mongodb `buildInfo`).
pub async fn ping(probe: &Probe, port: u16) -> Result<String, ClientError> {
    let ep = Endpoint::for_probe(probe, port);
    match probe {
        Probe::Redis => timed("redis", &ep.addr(), redis::server_version(&ep)).await,
        Probe::Postgres { .. } => {
            timed("postgres", &ep.addr(), postgres::server_version(&ep)).await
        }
        Probe::Mysql { .. } => timed("mysql", &ep.addr(), mysql::server_version(&ep)).await,
        Probe::Mongodb => timed("mongodb", &ep.addr(), mongodb::server_version(&ep)).await,
    }
}
