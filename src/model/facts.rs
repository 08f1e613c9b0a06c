//! How an engine is asked about its data and its cache: the engine spec's
//! `facts:` over the probe's defaults (read by `spec::facts`), asked by
//! `run::facts`.

use super::Probe;

/// How one fact is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FactQuery {
    /// SQL whose reply's first number is the answer (postgres, mysql).
    Sql(String),
    /// A field of redis `INFO memory`.
    Info(String),
    /// What the MongoDB client asks (`dbStats`, `serverStatus`).
    Mongodb,
}

/// How an engine is asked about its data and its cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Bytes of data and indexes.
    pub data_size: FactQuery,
    /// Bytes of the engine's cache.
    pub cache_size: FactQuery,
}

impl Facts {
    /// The questions for an engine the probe reaches, unless its spec
    /// says otherwise: the database's size and `shared_buffers` on
    /// postgres; the tables of the `benchcage` schema and
    /// `innodb_buffer_pool_size` on mysql; `used_memory_dataset` and
    /// `maxmemory` on redis.
    pub fn defaults(probe: &Probe) -> Facts {
        let sql = |q: &str| FactQuery::Sql(q.to_string());
        let info = |f: &str| FactQuery::Info(f.to_string());
        match probe {
            Probe::Postgres { .. } => Facts {
                data_size: sql("SELECT pg_database_size(current_database())::text"),
                cache_size: sql(
                    "SELECT (setting::bigint * 8192)::text FROM pg_settings WHERE name = 'shared_buffers'",
                ),
            },
            Probe::Mysql { .. } => Facts {
                data_size: sql("SELECT CAST(SUM(data_length + index_length) AS CHAR) \
                     FROM information_schema.tables WHERE table_schema = 'benchcage'"),
                cache_size: sql("SELECT CAST(@@innodb_buffer_pool_size AS CHAR)"),
            },
            Probe::Redis => Facts {
                data_size: info("used_memory_dataset"),
                cache_size: info("maxmemory"),
            },
            Probe::Mongodb => Facts {
                data_size: FactQuery::Mongodb,
                cache_size: FactQuery::Mongodb,
            },
        }
    }
}
