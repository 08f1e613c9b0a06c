//! Stores: each engine with its natural data model for YCSB records, built
//! on `crate::clients`. The driver is generic over [`Store`], so calls are
//! static (no boxing per operation).

use crate::clients::mongodb::MongoOptions;
use crate::clients::{ClientError, Endpoint};
use std::future::Future;
use std::sync::Arc;

pub mod mongodb;
pub mod mysql;
pub mod null;
pub mod postgres;
pub mod redis;
pub mod sql;

/// Table, collection or sorted-set name for YCSB records.
pub const TABLE: &str = "usertable";

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The record the operation needed is not there.
    #[error("record `{0}` not found")]
    NotFound(String),
    /// A query returned fewer records than the workload knows it loaded
    /// for it: a truncated answer (write-up 000's TokuMX, whose cache
    /// outgrew RAM, answered short without an error).
    #[error("returned {got} of {want} {what}")]
    Short { got: u64, want: u64, what: String },
    #[error(transparent)]
    Client(#[from] ClientError),
    /// No answer within the operation timeout (a frozen or hung server).
    #[error("no answer within {0}s (operation timeout)")]
    TimedOut(u64),
}

/// What the records look like.
#[derive(Debug, Clone)]
pub struct Schema {
    /// `field0..field{n-1}`.
    pub fields: Arc<[String]>,
    pub field_length: u32,
    /// MySQL storage engine (`InnoDB`, `RocksDB`); `None` for the default.
    pub engine: Option<String>,
}

/// The values of one record: slices of the value pool, no allocation.
#[derive(Clone, Copy)]
pub struct Values<'a> {
    pub pool: &'a super::keys::ValuePool,
    pub offsets: &'a [usize],
}

impl<'a> Values<'a> {
    /// Value of field `i`.
    pub fn get(&self, i: usize) -> &'a str {
        self.pool.at(self.offsets[i])
    }

    /// `(field name, value)` pairs in field order.
    pub fn pairs<'b>(self, fields: &'b [String]) -> impl Iterator<Item = (&'b str, &'b str)> + 'b
    where
        'a: 'b,
    {
        fields
            .iter()
            .zip(self.offsets)
            .map(move |(f, &o)| (f.as_str(), self.pool.at(o)))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }
}

/// The records of one insert batch, in record order; the buffers are
/// reused from batch to batch.
#[derive(Clone, Copy)]
pub struct Batch<'a> {
    pub keys: &'a [String],
    pub pool: &'a super::keys::ValuePool,
    /// The value offsets of every record, one record after the other.
    pub offsets: &'a [usize],
}

impl<'a> Batch<'a> {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Each record's key and values.
    pub fn records(self) -> impl Iterator<Item = (&'a str, Values<'a>)> {
        let fields = self.offsets.len() / self.keys.len().max(1);
        self.keys
            .iter()
            .zip(self.offsets.chunks_exact(fields.max(1)))
            .map(move |(k, offsets)| {
                (
                    k.as_str(),
                    Values {
                        pool: self.pool,
                        offsets,
                    },
                )
            })
    }
}

/// A store: makes connections and (re)creates the schema.
pub trait Store: Send + Sync + 'static {
    type Conn: StoreConn;
    /// A new connection (one per worker).
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;
    /// Drops and recreates the records' table, collection or keys. Only
    /// after [`Store::holds_data`] found nothing, or with `--reset`.
    fn recreate(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// What `recreate` would delete, in words (`None` when there is
    /// nothing): the records' table or collection, or the redis keyspace.
    fn holds_data(&self) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;
}

/// One connection's YCSB operations. Each fails with `NotFound` when the
/// record it needs is missing.
pub trait StoreConn: Send + 'static {
    /// Reads every field of `key`.
    fn read(&mut self, key: &str) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Sets field `field` of `key` to `value`.
    fn update(
        &mut self,
        key: &str,
        field: usize,
        value: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Inserts a record.
    fn insert(
        &mut self,
        key: &str,
        values: &Values<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Inserts every record of `batch` in one round trip (one statement,
    /// pipeline or `insertMany`); an error fails the whole batch.
    fn insert_batch(
        &mut self,
        batch: &Batch<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Reads up to `count` records from `start` in key order; returns how
    /// many it read.
    fn scan(
        &mut self,
        start: &str,
        count: usize,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// Which engine a store URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    Null,
    Redis,
    Postgres,
    Mysql,
    Mongodb,
}

/// A parsed store URL: `redis://127.0.0.1:6379`,
/// `postgres://user@127.0.0.1:5432/db`, `mysql://root@127.0.0.1:3306/db?engine=rocksdb`,
/// `mongodb://127.0.0.1:27017/db?w=1&journal=true&readPreference=primary`, `null://`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreTarget {
    pub kind: StoreKind,
    pub endpoint: Endpoint,
    /// `engine=` from the query string (MySQL storage engine).
    pub engine: Option<String>,
    /// MongoDB: `w`, `journal`, `readPreference`, `socketTimeoutMS` (and,
    /// for tests, `maxWireVersion`) from the query string.
    pub mongo: MongoOptions,
    /// MongoDB: the seed list's hosts after the first
    /// (`mongodb://127.0.0.1:P1,127.0.0.1:P2`), as `(host, port)`: a
    /// sharded cluster's routers, over which connections are spread.
    pub more_hosts: Vec<(String, u16)>,
}

/// Why a store URL was refused.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error(
        "store `{0}`: unknown scheme; use redis://, postgres://, mysql://, mongodb:// or null://"
    )]
    Scheme(String),
    #[error("store `{url}`: {msg}")]
    Malformed { url: String, msg: String },
    #[error(
        "store `{url}`: host `{host}` is not loopback; benchcage only drives servers on 127.0.0.1"
    )]
    NotLoopback { url: String, host: String },
}

/// `url` with its password replaced by `***`: what every message, log
/// and record shows of a store URL. Everything between `://` and the last
/// `@` is the user info; after its first `:` is the password.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.rsplit_once('@') {
        Some((userinfo, after)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{after}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// `%XX` escapes decoded (user and password in a URL); a bad escape is
/// kept as written.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl StoreTarget {
    /// Parses and checks a store URL (loopback only). User and password
    /// may be percent-encoded; no error shows the password.
    pub fn parse(url: &str) -> Result<StoreTarget, UrlError> {
        let shown = redact_url(url);
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| UrlError::Scheme(shown.clone()))?;
        let Some((kind, default_port)) = scheme_kind(scheme) else {
            return Err(UrlError::Scheme(shown));
        };
        let mut endpoint = Endpoint::loopback(default_port);
        if kind == StoreKind::Null {
            return Ok(StoreTarget {
                kind,
                endpoint,
                engine: None,
                mongo: MongoOptions::default(),
                more_hosts: Vec::new(),
            });
        }
        // The user info ends at the last `@`, so a password may hold `/`,
        // `?` or `@` unescaped.
        let (userinfo, rest) = match rest.rsplit_once('@') {
            Some((u, r)) => (Some(u), r),
            None => (None, rest),
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
        if let Some(u) = userinfo {
            let (user, pass) = u.split_once(':').map_or((u, None), |(a, b)| (a, Some(b)));
            endpoint.user = Some(percent_decode(user));
            endpoint.password = pass.map(percent_decode);
        }
        let mut hosts = hostport.split(',');
        let (host, port) = loopback_host(hosts.next().unwrap_or(""), default_port, &shown)?;
        (endpoint.host, endpoint.port) = (host, port);
        let more_hosts = hosts
            .map(|h| loopback_host(h, default_port, &shown))
            .collect::<Result<Vec<_>, _>>()?;
        if !more_hosts.is_empty() && kind != StoreKind::Mongodb {
            return Err(UrlError::Malformed {
                url: shown,
                msg: "several hosts: only a mongodb:// URL takes a seed list".into(),
            });
        }
        if !path.is_empty() {
            endpoint.database = Some(path.to_string());
        }
        let param = |name: &str| query_param(query, name);
        let engine = param("engine");
        if kind == StoreKind::Mongodb {
            // As in mongod's URLs: authSource, else the URL's database.
            endpoint.auth_source = param("authSource").or_else(|| endpoint.database.clone());
        }
        if kind == StoreKind::Redis
            && let Some(db) = &endpoint.database
            && db.parse::<u32>().is_err()
        {
            return Err(UrlError::Malformed {
                url: shown,
                msg: format!("redis database `{db}` is not a number (redis://127.0.0.1:6379/0)"),
            });
        }
        let mongo = if kind == StoreKind::Mongodb {
            MongoOptions::from_query(query).map_err(|e| UrlError::Malformed {
                url: shown.clone(),
                msg: e.0,
            })?
        } else {
            MongoOptions::default()
        };
        Ok(StoreTarget {
            kind,
            endpoint,
            engine,
            mongo,
            more_hosts,
        })
    }
}

/// One `host:port` of a URL (the port `default_port` when it names none,
/// the host 127.0.0.1 when it is empty): loopback only.
fn loopback_host(
    hostport: &str,
    default_port: u16,
    shown: &str,
) -> Result<(String, u16), UrlError> {
    let (host, port) = split_host_port(hostport, shown)?;
    let port = match port {
        Some(p) => p.parse().map_err(|_| UrlError::Malformed {
            url: shown.to_string(),
            msg: format!("port `{p}` is not a number from 1 to 65535"),
        })?,
        None => default_port,
    };
    let host = if host.is_empty() {
        "127.0.0.1".to_string()
    } else {
        host
    };
    if !crate::clients::is_loopback_host(&host) {
        return Err(UrlError::NotLoopback {
            url: shown.to_string(),
            host,
        });
    }
    Ok((host, port))
}

/// The store a URL scheme names, and its default port.
fn scheme_kind(scheme: &str) -> Option<(StoreKind, u16)> {
    Some(match scheme {
        "null" => (StoreKind::Null, 0),
        "redis" => (StoreKind::Redis, 6379),
        "postgres" | "postgresql" => (StoreKind::Postgres, 5432),
        "mysql" | "mariadb" => (StoreKind::Mysql, 3306),
        "mongodb" => (StoreKind::Mongodb, 27017),
        _ => return None,
    })
}

/// `host:port`, `host` or `[v6]:port` split into host and port text.
fn split_host_port<'a>(
    hostport: &'a str,
    shown: &str,
) -> Result<(String, Option<&'a str>), UrlError> {
    if let Some(h) = hostport.strip_prefix('[') {
        let (h, p) = h.split_once(']').ok_or_else(|| UrlError::Malformed {
            url: shown.to_string(),
            msg: "unclosed `[` in host".into(),
        })?;
        return Ok((h.to_string(), p.strip_prefix(':')));
    }
    Ok(match hostport.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), Some(p)),
        None => (hostport.to_string(), None),
    })
}

/// The value of `name` in a URL's query, percent-decoded.
fn query_param(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| percent_decode(v))
}

/// Any store, for dispatch to the generic driver.
pub enum AnyStore {
    Null(null::NullStore),
    Redis(redis::RedisStore),
    Postgres(postgres::PgStore),
    Mysql(mysql::MyStore),
    Mongodb(mongodb::MongoStore),
}

impl AnyStore {
    /// The store for `target` with `schema`.
    pub fn new(target: &StoreTarget, schema: Schema) -> AnyStore {
        let ep = target.endpoint.clone();
        let mut schema = schema;
        if schema.engine.is_none() {
            schema.engine = target.engine.clone();
        }
        match target.kind {
            StoreKind::Null => AnyStore::Null(null::NullStore),
            StoreKind::Redis => AnyStore::Redis(redis::RedisStore::new(ep, schema)),
            StoreKind::Postgres => AnyStore::Postgres(postgres::PgStore { ep, schema }),
            StoreKind::Mysql => AnyStore::Mysql(mysql::MyStore { ep, schema }),
            StoreKind::Mongodb => AnyStore::Mongodb(mongodb::MongoStore {
                more: target
                    .more_hosts
                    .iter()
                    .map(|(host, port)| crate::clients::Endpoint {
                        host: host.clone(),
                        port: *port,
                        ..ep.clone()
                    })
                    .collect(),
                next: Default::default(),
                ep,
                schema,
                opts: target.mongo.clone(),
            }),
        }
    }
}

/// Runs `$body` with `$s` bound to the concrete store inside `$any`.
#[macro_export]
macro_rules! with_store {
    ($any:expr, $s:ident => $body:expr) => {
        match $any {
            $crate::workload::stores::AnyStore::Null($s) => $body,
            $crate::workload::stores::AnyStore::Redis($s) => $body,
            $crate::workload::stores::AnyStore::Postgres($s) => $body,
            $crate::workload::stores::AnyStore::Mysql($s) => $body,
            $crate::workload::stores::AnyStore::Mongodb($s) => $body,
        }
    };
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreKind::Null => "null",
            StoreKind::Redis => "redis",
            StoreKind::Postgres => "postgres",
            StoreKind::Mysql => "mysql",
            StoreKind::Mongodb => "mongodb",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_parse_with_user_database_and_engine() {
        let t = StoreTarget::parse("mysql://root:pw@127.0.0.1:3307/ycsb?engine=rocksdb").unwrap();
        assert_eq!(t.kind, StoreKind::Mysql);
        assert_eq!(t.endpoint.port, 3307);
        assert_eq!(t.endpoint.user.as_deref(), Some("root"));
        assert_eq!(t.endpoint.password.as_deref(), Some("pw"));
        assert_eq!(t.endpoint.database.as_deref(), Some("ycsb"));
        assert_eq!(t.engine.as_deref(), Some("rocksdb"));
        let r = StoreTarget::parse("redis://localhost").unwrap();
        assert_eq!(r.endpoint.port, 6379);
        assert_eq!(StoreTarget::parse("null://").unwrap().kind, StoreKind::Null);
    }

    #[test]
    fn passwords_are_decoded_for_use_and_never_shown() {
        let t = StoreTarget::parse("redis://bench:p%40ss/w?rd@127.0.0.1:6380/2").unwrap();
        assert_eq!(t.endpoint.user.as_deref(), Some("bench"));
        assert_eq!(t.endpoint.password.as_deref(), Some("p@ss/w?rd"));
        assert_eq!(
            (t.endpoint.port, t.endpoint.database.as_deref()),
            (6380, Some("2"))
        );
        assert!(!format!("{:?}", t).contains("p@ss"));
        // A seed list: the routers of a sharded cluster, loopback only.
        let seeds = StoreTarget::parse("mongodb://127.0.0.1:1,127.0.0.1:2,localhost/?w=1").unwrap();
        assert_eq!(seeds.endpoint.port, 1);
        assert_eq!(
            seeds.more_hosts,
            [
                ("127.0.0.1".to_string(), 2),
                ("localhost".to_string(), 27017)
            ]
        );
        let e = StoreTarget::parse("mongodb://127.0.0.1:1,10.0.0.1:2").unwrap_err();
        assert!(matches!(e, UrlError::NotLoopback { .. }), "{e}");
        let e = StoreTarget::parse("redis://127.0.0.1:1,127.0.0.1:2").unwrap_err();
        assert!(
            e.to_string()
                .contains("only a mongodb:// URL takes a seed list"),
            "{e}"
        );
        let m = StoreTarget::parse("mongodb://u:pw@127.0.0.1/ycsb").unwrap();
        assert_eq!(m.endpoint.auth_source.as_deref(), Some("ycsb"));
        let m = StoreTarget::parse("mongodb://u:pw@127.0.0.1/ycsb?authSource=admin").unwrap();
        assert_eq!(m.endpoint.auth_source.as_deref(), Some("admin"));
        assert_eq!(
            redact_url("redis://:s3cret@127.0.0.1:6379"),
            "redis://:***@127.0.0.1:6379"
        );
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        for bad in [
            "redis://:s3cret@10.0.0.5:6379",
            "redis://:s3cret@127.0.0.1:port",
            "redis://:s3cret@127.0.0.1:6379/db",
        ] {
            let e = StoreTarget::parse(bad).unwrap_err().to_string();
            assert!(!e.contains("s3cret") && e.contains("***"), "{e}");
        }
    }

    #[test]
    fn non_loopback_and_unknown_stores_are_refused() {
        assert!(matches!(
            StoreTarget::parse("redis://10.0.0.5:6379"),
            Err(UrlError::NotLoopback { .. })
        ));
        assert!(matches!(
            StoreTarget::parse("cassandra://127.0.0.1"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            StoreTarget::parse("redis://127.0.0.1:notaport"),
            Err(UrlError::Malformed { .. })
        ));
    }
}
