//! What the engine itself reports about its data and its cache, over its
//! own protocol, after the load: the cache it really uses (an engine may
//! size it from host RAM rather than its limit) and the size of its data.
//! What to ask comes from the engine's spec (`facts:`).

use crate::clients::{self, Endpoint};
use crate::model::Probe;
use crate::model::facts::{FactQuery, Facts};
use crate::run::cell::{EngineFacts, FactsError, ReplicaState};

/// Facts asked with the engine's own client, as its spec says
/// ([`Facts`]; the probe's defaults when it says nothing).
pub struct ProbeFacts {
    pub probe: Probe,
    pub facts: Facts,
    /// SQL that digests the records, from the engine's `snapshot.digest`;
    /// `None` = the probe's own way (see [`ProbeFacts::records_digest`]).
    pub digest_sql: Option<String>,
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

/// Which fact a MongoDB-protocol engine is asked for.
enum Fact {
    Data,
    Cache,
}

impl ProbeFacts {
    fn endpoint(&self, port: u16) -> Endpoint {
        Endpoint::for_probe(&self.probe, port)
    }

    /// One number from the engine, asked as `query` says.
    async fn ask(&self, port: u16, query: &FactQuery, fact: Fact) -> Option<u64> {
        let ep = self.endpoint(port);
        match (query, &self.probe) {
            (FactQuery::Info(field), _) => {
                let mut c = clients::redis::RedisConn::connect(&ep).await.ok()?;
                let info = c.cmd(&["INFO", "memory"]).await.ok()?;
                info_field(&info, field)
            }
            (FactQuery::Sql(sql), Probe::Postgres { .. }) => {
                first_number(&clients::postgres::query_text(&ep, sql).await.ok()?)
            }
            (FactQuery::Sql(sql), Probe::Mysql { .. }) => {
                if let (Fact::Data, Some(db)) = (&fact, self.probe.data_database()) {
                    // Sizes from fresh statistics, not the load's stale ones.
                    let _ = clients::mysql::analyze_database(&ep, db).await;
                }
                first_number(&clients::mysql::query_text(&ep, sql).await.ok()?)
            }
            (FactQuery::Sql(_), _) => None,
            (FactQuery::Mongodb, _) => match fact {
                Fact::Data => clients::mongodb::data_size(&ep).await.ok().flatten(),
                Fact::Cache => clients::mongodb::cache_size(&ep).await.ok().flatten(),
            },
        }
    }
}

impl ProbeFacts {
    /// A digest of the load generator's records, equal for equal data:
    /// md5 of the rows in key order on postgres, `CHECKSUM TABLE` on
    /// mysql, the `DUMP` of every key on redis, the documents' BSON in
    /// `_id` order on MongoDB; the engine's `snapshot.digest` SQL instead
    /// when it gives one.
    async fn records_digest(&self, port: u16) -> Result<String, FactsError> {
        let ep = self.endpoint(port);
        let table = crate::workload::stores::TABLE;
        let e = FactsError::Client;
        match (&self.probe, &self.digest_sql) {
            (Probe::Postgres { .. }, Some(sql)) => {
                clients::postgres::query_text(&ep, sql).await.map_err(e)
            }
            (Probe::Mysql { .. }, Some(sql)) => {
                clients::mysql::query_text(&ep, sql).await.map_err(e)
            }
            (Probe::Postgres { .. }, None) => {
                let sql = format!(
                    "SELECT count(*)::text || ' rows, md5 ' || \
                     coalesce(md5(string_agg(md5(t::text), '' ORDER BY t.ycsb_key)), '') \
                     FROM {table} t"
                );
                clients::postgres::query_text(&ep, &sql).await.map_err(e)
            }
            (Probe::Mysql { .. }, None) => {
                let db = self.probe.data_database().unwrap_or("benchcage");
                let at = format!("{db}.{table}");
                let count = format!("SELECT CAST(COUNT(*) AS CHAR) FROM {at}");
                let rows = clients::mysql::query_text(&ep, &count).await.map_err(e)?;
                let sum = clients::mysql::table_checksum(&ep, &at).await.map_err(e)?;
                Ok(format!("{rows} rows, checksum {sum}"))
            }
            (Probe::Redis, _) => {
                let mut c = clients::redis::RedisConn::connect(&ep).await.map_err(e)?;
                let (n, d) = c.digest().await.map_err(e)?;
                Ok(format!("{n} keys, sha256 {d}"))
            }
            (Probe::Mongodb, _) => {
                // The load's store URL names no database: the store's own.
                let db = crate::workload::stores::mongodb::DEFAULT_DB;
                let ep = crate::clients::Endpoint {
                    database: Some(db.to_string()),
                    ..ep
                };
                // A replica set's secondary answers reads that allow it.
                let opts = clients::mongodb::MongoOptions {
                    read_preference: clients::mongodb::ReadPreference::PrimaryPreferred,
                    ..Default::default()
                };
                let mut c = clients::mongodb::MongoConn::connect_with(&ep, &opts)
                    .await
                    .map_err(e)?;
                let (n, d) = c.digest(table).await.map_err(e)?;
                Ok(format!("{n} documents, sha256 {d}"))
            }
        }
    }
}

/// A PostgreSQL LSN (`16/B374D848`) as a byte position.
fn lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.trim().split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

type Row = std::collections::BTreeMap<String, String>;

/// A MySQL-protocol replica's state from the primary's `SHOW BINARY LOGS`
/// and its own `SHOW SLAVE STATUS` (`None`: not a replica): linked while
/// both its threads run; behind by the bytes of the primary's binary logs
/// after the last event it applied (`Exec_Master_Log_Pos` in
/// `Relay_Master_Log_File`), which counts what it has yet to fetch too.
fn mysql_follow(logs: &[Row], status: Option<&Row>) -> ReplicaState {
    let field = |row: &Row, k: &str| row.get(k).cloned().unwrap_or_default();
    let size = |row: &Row| field(row, "File_size").parse::<u64>().unwrap_or(0);
    let total: u64 = logs.iter().map(size).sum();
    let Some(s) = status else {
        return ReplicaState {
            linked: false,
            behind: total,
        };
    };
    let running = |k: &str| field(s, k) == "Yes";
    let file = field(s, "Relay_Master_Log_File");
    let done: u64 = field(s, "Exec_Master_Log_Pos").parse().unwrap_or(0);
    let behind = match logs.iter().position(|l| field(l, "Log_name") == file) {
        Some(i) => logs[i..].iter().map(size).sum::<u64>().saturating_sub(done),
        None => total,
    };
    ReplicaState {
        linked: running("Slave_IO_Running") && running("Slave_SQL_Running"),
        behind,
    }
}

impl ProbeFacts {
    /// How the secondary on `replica` follows the primary on `primary`:
    /// redis `INFO replication` (link status, offsets), PostgreSQL's WAL
    /// receiver and replay position against the primary's WAL position,
    /// MySQL's replica threads and binary log positions; MongoDB's
    /// `replSetGetStatus` on the primary (linked while the member is a
    /// SECONDARY of a PRIMARY), where `behind` is in milliseconds of
    /// operations, not bytes: the oplog says when, not how much.
    async fn follow(&self, primary: u16, replica: u16) -> Result<ReplicaState, FactsError> {
        let e = FactsError::Client;
        let (p, r) = (self.endpoint(primary), self.endpoint(replica));
        match &self.probe {
            Probe::Redis => {
                let mut rc = clients::redis::RedisConn::connect(&r).await.map_err(e)?;
                let ri = rc.cmd(&["INFO", "replication"]).await.map_err(e)?;
                let mut pc = clients::redis::RedisConn::connect(&p).await.map_err(e)?;
                let pi = pc.cmd(&["INFO", "replication"]).await.map_err(e)?;
                let linked = ri.lines().any(|l| l.trim() == "master_link_status:up");
                let done = info_field(&ri, "slave_repl_offset").unwrap_or(0);
                let head = info_field(&pi, "master_repl_offset").unwrap_or(0);
                Ok(ReplicaState {
                    linked,
                    behind: head.saturating_sub(done),
                })
            }
            Probe::Postgres { .. } => {
                let head = clients::postgres::query_text(&p, "SELECT pg_current_wal_lsn()::text")
                    .await
                    .map_err(e)?;
                let state = clients::postgres::query_text(
                    &r,
                    "SELECT coalesce((SELECT status FROM pg_stat_wal_receiver), 'none') \
                     || ' ' || coalesce(pg_last_wal_replay_lsn()::text, '0/0')",
                )
                .await
                .map_err(e)?;
                let (status, replayed) = state.split_once(' ').unwrap_or((&state, "0/0"));
                let (head, replayed) = (lsn(&head).unwrap_or(0), lsn(replayed).unwrap_or(0));
                Ok(ReplicaState {
                    linked: status == "streaming",
                    behind: head.saturating_sub(replayed),
                })
            }
            Probe::Mysql { .. } => {
                let logs = clients::mysql::query_named(&p, "SHOW BINARY LOGS")
                    .await
                    .map_err(e)?;
                let status = clients::mysql::query_named(&r, "SHOW SLAVE STATUS")
                    .await
                    .map_err(e)?;
                Ok(mysql_follow(&logs, status.first()))
            }
            Probe::Mongodb => {
                let f = clients::mongodb::topology::replica_follow(&p, replica)
                    .await
                    .map_err(e)?;
                Ok(ReplicaState {
                    linked: f.linked,
                    behind: f.behind_ms,
                })
            }
        }
    }
}

#[async_trait::async_trait]
impl EngineFacts for ProbeFacts {
    async fn replica_state(&self, primary: u16, replica: u16) -> Result<ReplicaState, FactsError> {
        self.follow(primary, replica).await
    }

    fn lag_unit(&self) -> Option<&'static str> {
        // replSetGetStatus gives optimes, not bytes.
        matches!(self.probe, Probe::Mongodb).then_some("ms")
    }

    async fn digest(&self, port: u16) -> Result<String, FactsError> {
        self.records_digest(port).await
    }

    async fn execute(&self, port: u16, statement: &str) -> Result<(), FactsError> {
        if let Probe::Postgres { .. } = &self.probe {
            // Several statements, and ones that return no row.
            let ep = self.endpoint(port);
            let c = clients::postgres::PgConn::connect(&ep).await?;
            return Ok(c.batch(statement).await?);
        }
        self.reply(port, statement).await.map(drop)
    }

    async fn reply(&self, port: u16, statement: &str) -> Result<String, FactsError> {
        let ep = self.endpoint(port);
        let e = FactsError::Client;
        match &self.probe {
            Probe::Redis => {
                let argv: Vec<&str> = statement.split_whitespace().collect();
                if argv.is_empty() {
                    return Ok(String::new());
                }
                let mut c = clients::redis::RedisConn::connect(&ep).await.map_err(e)?;
                c.cmd(&argv).await.map_err(e)
            }
            Probe::Postgres { .. } => clients::postgres::query_text(&ep, statement)
                .await
                .map_err(e),
            Probe::Mysql { .. } => clients::mysql::query_text(&ep, statement).await.map_err(e),
            // A command as JSON (`{"replSetInitiate": {...}}`), on admin
            // unless its "$db" says otherwise; its reply as JSON.
            Probe::Mongodb => clients::mongodb::topology::run_statement(&ep, statement)
                .await
                .map(|v| v.to_string())
                .map_err(e),
        }
    }

    async fn cluster_digest(&self, port: u16) -> Result<String, FactsError> {
        let e = FactsError::Client;
        match &self.probe {
            Probe::Redis => {
                let mut c = clients::redis_cluster::RedisCluster::connect(&self.endpoint(port))
                    .await
                    .map_err(e)?;
                let (n, d) = c.digest().await.map_err(e)?;
                Ok(format!("{n} keys, sha256 {d}"))
            }
            _ => Err(FactsError::Unsupported {
                what: "digests the sharded clusters of redis only",
            }),
        }
    }

    async fn cluster_data_size(&self, port: u16) -> Option<u64> {
        let Probe::Redis = &self.probe else {
            return None;
        };
        let c = clients::redis_cluster::RedisCluster::connect(&self.endpoint(port))
            .await
            .ok()?;
        let mut total = 0;
        for ep in c.primaries() {
            total += self.data_size(ep.port).await?;
        }
        Some(total)
    }

    async fn data_size(&self, port: u16) -> Option<u64> {
        self.ask(port, &self.facts.data_size, Fact::Data).await
    }

    async fn writable_primary(&self, port: u16) -> Result<(), FactsError> {
        let Probe::Mongodb = &self.probe else {
            return Err(FactsError::Unsupported {
                what: "asks only MongoDB members whether they are primary",
            });
        };
        let hello = clients::mongodb::topology::hello(&self.endpoint(port)).await?;
        if hello.writable_primary {
            Ok(())
        } else {
            Err(FactsError::NotPrimary(hello.to_string()))
        }
    }

    async fn missing_shards(&self, port: u16, names: &[String]) -> Result<Vec<String>, FactsError> {
        let Probe::Mongodb = &self.probe else {
            return Err(FactsError::Unsupported {
                what: "asks only MongoDB routers for their shards",
            });
        };
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(clients::mongodb::topology::missing_shards(&self.endpoint(port), &names).await?)
    }

    async fn cache_size(&self, port: u16) -> Option<u64> {
        self.ask(port, &self.facts.cache_size, Fact::Cache).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pairs: &[(&str, &str)]) -> Row {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_mysql_replica_is_behind_by_the_binary_log_bytes_after_what_it_applied() {
        let logs = [
            row(&[("Log_name", "b.000001"), ("File_size", "1000")]),
            row(&[("Log_name", "b.000002"), ("File_size", "500")]),
        ];
        let mut status = row(&[
            ("Slave_IO_Running", "Yes"),
            ("Slave_SQL_Running", "Yes"),
            ("Relay_Master_Log_File", "b.000001"),
            ("Exec_Master_Log_Pos", "900"),
        ]);
        let s = mysql_follow(&logs, Some(&status));
        assert_eq!((s.linked, s.behind), (true, 600));
        status.insert("Relay_Master_Log_File".into(), "b.000002".into());
        status.insert("Exec_Master_Log_Pos".into(), "500".into());
        let s = mysql_follow(&logs, Some(&status));
        assert_eq!((s.linked, s.behind), (true, 0));
        status.insert("Slave_SQL_Running".into(), "No".into());
        assert!(!mysql_follow(&logs, Some(&status)).linked);
        let s = mysql_follow(&logs, None);
        assert_eq!((s.linked, s.behind), (false, 1500));
    }

    #[test]
    fn postgres_lsns_are_byte_positions() {
        assert_eq!(lsn("0/3000148"), Some(0x3000148));
        assert_eq!(lsn("16/B374D848"), Some((0x16 << 32) | 0xB374D848));
        assert_eq!(lsn("nonsense"), None);
    }

    #[test]
    fn numbers_are_read_from_engine_replies() {
        assert_eq!(first_number("maxmemory\n268435456"), Some(268435456));
        assert_eq!(first_number("none"), None);
        let info = "# Memory\r\nused_memory:100\r\nused_memory_dataset:64\r\n";
        assert_eq!(info_field(info, "used_memory_dataset"), Some(64));
        assert_eq!(info_field(info, "used_memory_peak"), None);
    }
}
