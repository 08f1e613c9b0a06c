//! Stores: each engine with its natural data model for YCSB records, built
//! on `crate::clients`. The driver is generic over [`Store`], so calls are
//! static (no boxing per operation).

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
    #[error(transparent)]
    Client(#[from] ClientError),
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
    /// Drops and recreates the records' table, collection or keys.
    fn recreate(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
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
    /// Reads up to `count` records from `start` in key order.
    fn scan(
        &mut self,
        start: &str,
        count: usize,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
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
/// `mongodb://127.0.0.1:27017/db`, `null://`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreTarget {
    pub kind: StoreKind,
    pub endpoint: Endpoint,
    /// `engine=` from the query string (MySQL storage engine).
    pub engine: Option<String>,
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

impl StoreTarget {
    /// Parses and checks a store URL (loopback only).
    pub fn parse(url: &str) -> Result<StoreTarget, UrlError> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| UrlError::Scheme(url.to_string()))?;
        let (kind, default_port) = match scheme {
            "null" => (StoreKind::Null, 0),
            "redis" => (StoreKind::Redis, 6379),
            "postgres" | "postgresql" => (StoreKind::Postgres, 5432),
            "mysql" | "mariadb" => (StoreKind::Mysql, 3306),
            "mongodb" => (StoreKind::Mongodb, 27017),
            _ => return Err(UrlError::Scheme(url.to_string())),
        };
        let mut endpoint = Endpoint::loopback(default_port);
        if kind == StoreKind::Null {
            return Ok(StoreTarget {
                kind,
                endpoint,
                engine: None,
            });
        }
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if let Some(u) = userinfo {
            let (user, pass) = u.split_once(':').map_or((u, None), |(a, b)| (a, Some(b)));
            endpoint.user = Some(user.to_string());
            endpoint.password = pass.map(str::to_string);
        }
        let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
            let (h, p) = h.split_once(']').ok_or_else(|| UrlError::Malformed {
                url: url.into(),
                msg: "unclosed `[` in host".into(),
            })?;
            (h.to_string(), p.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            }
        };
        if let Some(p) = port {
            endpoint.port = p.parse().map_err(|_| UrlError::Malformed {
                url: url.into(),
                msg: format!("port `{p}` is not a number from 1 to 65535"),
            })?;
        }
        let host = if host.is_empty() {
            "127.0.0.1".to_string()
        } else {
            host
        };
        if !crate::clients::is_loopback_host(&host) {
            return Err(UrlError::NotLoopback {
                url: url.into(),
                host,
            });
        }
        endpoint.host = host;
        if !path.is_empty() {
            endpoint.database = Some(path.to_string());
        }
        let engine = query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "engine")
            .map(|(_, v)| v.to_string());
        Ok(StoreTarget {
            kind,
            endpoint,
            engine,
        })
    }
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
            StoreKind::Redis => AnyStore::Redis(redis::RedisStore { ep, schema }),
            StoreKind::Postgres => AnyStore::Postgres(postgres::PgStore { ep, schema }),
            StoreKind::Mysql => AnyStore::Mysql(mysql::MyStore { ep, schema }),
            StoreKind::Mongodb => AnyStore::Mongodb(mongodb::MongoStore { ep, schema }),
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
