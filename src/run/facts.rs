//! What the engine itself reports about its data and its cache, over its
//! own protocol, after the load: the cache it really uses (an engine may
//! size it from host RAM rather than its limit) and the size of its data.

use crate::clients::{self, Endpoint};
use crate::run::cell::EngineFacts;
use crate::sandbox::Probe;

/// Facts queried with the engine's own client, chosen by its probe.
pub struct ProbeFacts {
    pub probe: Probe,
    /// `myrocks` reports its block cache rather than InnoDB's buffer pool.
    pub engine: String,
}

/// The first integer in a reply (`maxmemory\n268435456` -> 268435456).
fn first_number(text: &str) -> Option<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
}

/// `key:value` from redis `INFO`.
fn info_field(info: &str, key: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

impl ProbeFacts {
    fn endpoint(&self, port: u16) -> Endpoint {
        let mut ep = Endpoint::loopback(port);
        match &self.probe {
            Probe::Postgres { user, database } => {
                ep.user = Some(user.clone());
                ep.database = Some(database.clone());
            }
            Probe::Mysql { user } => ep.user = Some(user.clone()),
            _ => {}
        }
        ep
    }

    async fn redis(&self, port: u16, argv: &[&str]) -> Option<String> {
        let mut c = clients::redis::RedisConn::connect(&self.endpoint(port))
            .await
            .ok()?;
        c.cmd(argv).await.ok()
    }

    /// One number from the engine: a field of redis `INFO memory`, else the
    /// first number in the reply to the engine's SQL; mongodb answers in
    /// `data_size` / `cache_size` directly.
    async fn number(&self, port: u16, info_key: &str, pg: &str, mysql: &str) -> Option<u64> {
        let ep = self.endpoint(port);
        match &self.probe {
            Probe::Redis => {
                let info = self.redis(port, &["INFO", "memory"]).await?;
                info_field(&info, info_key)
            }
            Probe::Postgres { .. } => {
                first_number(&clients::postgres::query_text(&ep, pg).await.ok()?)
            }
            Probe::Mysql { .. } => {
                first_number(&clients::mysql::query_text(&ep, mysql).await.ok()?)
            }
            Probe::Mongodb => None,
        }
    }
}

#[async_trait::async_trait]
impl EngineFacts for ProbeFacts {
    async fn data_size(&self, port: u16) -> Option<u64> {
        if self.probe == Probe::Mongodb {
            return clients::mongodb::data_size(&self.endpoint(port))
                .await
                .ok()
                .flatten();
        }
        let pg = "SELECT pg_database_size(current_database())::text";
        let mysql = "SELECT CAST(SUM(data_length + index_length) AS CHAR) \
                     FROM information_schema.tables WHERE table_schema = 'benchcage'";
        self.number(port, "used_memory_dataset", pg, mysql).await
    }

    async fn cache_size(&self, port: u16) -> Option<u64> {
        if self.probe == Probe::Mongodb {
            return clients::mongodb::cache_size(&self.endpoint(port))
                .await
                .ok()
                .flatten();
        }
        let pg =
            "SELECT (setting::bigint * 8192)::text FROM pg_settings WHERE name = 'shared_buffers'";
        let var = if self.engine == "myrocks" {
            "rocksdb_block_cache_size"
        } else {
            "innodb_buffer_pool_size"
        };
        let mysql = format!("SELECT CAST(@@{var} AS CHAR)");
        self.number(port, "maxmemory", pg, &mysql).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_from_engine_replies() {
        assert_eq!(first_number("maxmemory\n268435456"), Some(268435456));
        assert_eq!(first_number("none"), None);
        let info = "# Memory\r\nused_memory:100\r\nused_memory_dataset:64\r\n";
        assert_eq!(info_field(info, "used_memory_dataset"), Some(64));
        assert_eq!(info_field(info, "used_memory_peak"), None);
    }
}
