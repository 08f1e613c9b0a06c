//! Redis: a hash per record (`HSET`/`HGETALL`), and like YCSB's redis
//! binding a sorted set `_indices` scored by the key's hash for scans.
//! A load batch is one pipeline of `HSET` + `ZADD` per record.
//!
//! A server in cluster mode is a Redis Cluster: each record goes to the
//! primary that holds its hash slot, `_indices` to the one that holds
//! its own, as YCSB's binding does through a cluster client.

use super::{Batch, Schema, Store, StoreConn, StoreError, Values};
use crate::clients::redis::RedisConn;
use crate::clients::redis_cluster::{self, RedisCluster};
use crate::clients::{Endpoint, setup_step};

/// Sorted set that orders keys for scans.
const INDEX: &str = "_indices";

/// Records in Redis hashes.
pub struct RedisStore {
    pub ep: Endpoint,
    pub schema: Schema,
    /// Whether the server runs in cluster mode, asked on first connect.
    pub cluster: tokio::sync::OnceCell<bool>,
}

impl RedisStore {
    pub fn new(ep: Endpoint, schema: Schema) -> RedisStore {
        RedisStore {
            ep,
            schema,
            cluster: tokio::sync::OnceCell::new(),
        }
    }

    /// A connection (one per primary of a cluster), unbounded.
    async fn open(&self) -> Result<RedisStoreConn, StoreError> {
        let conn = if self.is_cluster().await? {
            Conn::Cluster(RedisCluster::connect(&self.ep).await?)
        } else {
            Conn::One(RedisConn::connect(&self.ep).await?)
        };
        Ok(RedisStoreConn {
            conn,
            schema: self.schema.clone(),
        })
    }

    async fn is_cluster(&self) -> Result<bool, StoreError> {
        let yes = self
            .cluster
            .get_or_try_init(|| redis_cluster::is_cluster(&self.ep))
            .await?;
        Ok(*yes)
    }
}

/// One Redis connection, or one per primary of a cluster.
enum Conn {
    One(RedisConn),
    Cluster(RedisCluster),
}

/// One connection of a load or phase thread.
pub struct RedisStoreConn {
    conn: Conn,
    schema: Schema,
}

/// Java's `String.hashCode`, the score YCSB's binding uses.
fn java_hash(s: &str) -> f64 {
    let mut h: i32 = 0;
    for c in s.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(c as i32);
    }
    h as f64
}

impl Store for RedisStore {
    type Conn = RedisStoreConn;
    async fn connect(&self) -> Result<RedisStoreConn, StoreError> {
        setup_step("redis", "connect", &self.ep.addr(), self.open()).await
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        match self.connect().await?.conn {
            Conn::One(mut c) => drop(c.cmd(&["FLUSHDB"]).await?),
            Conn::Cluster(mut c) => c.flush().await?,
        }
        Ok(())
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let count = async {
            Ok::<u64, StoreError>(match self.open().await?.conn {
                Conn::One(mut c) => c.cmd(&["DBSIZE"]).await?.trim().parse().unwrap_or(1),
                Conn::Cluster(mut c) => c.dbsize().await?,
            })
        };
        let keys = setup_step("redis", "the existence check", &self.ep.addr(), count).await?;
        Ok((keys > 0).then(|| {
            format!(
                "redis at {} holds {keys} key(s) in database {} (a load empties it with FLUSHDB)",
                self.ep.addr(),
                self.ep.database.as_deref().unwrap_or("0")
            )
        }))
    }
}

impl StoreConn for RedisStoreConn {
    async fn read(&mut self, key: &str) -> Result<(), StoreError> {
        let fields = match &mut self.conn {
            Conn::One(c) => c.hgetall_len(key).await?,
            Conn::Cluster(c) => c.hgetall_len(key).await?,
        };
        match fields {
            0 => Err(StoreError::NotFound(key.to_string())),
            _ => Ok(()),
        }
    }
    async fn update(&mut self, key: &str, field: usize, value: &str) -> Result<(), StoreError> {
        let f = &self.schema.fields[field];
        let existed = match &mut self.conn {
            Conn::One(c) => c.hset_existing(key, f, value).await?,
            Conn::Cluster(c) => c.hset_existing(key, f, value).await?,
        };
        if existed {
            Ok(())
        } else {
            Err(StoreError::NotFound(key.to_string()))
        }
    }
    async fn insert(&mut self, key: &str, values: &Values<'_>) -> Result<(), StoreError> {
        let fields = self.schema.fields.clone();
        match &mut self.conn {
            Conn::One(c) => {
                c.hset(key, values.pairs(&fields), Some((INDEX, java_hash(key))))
                    .await?
            }
            Conn::Cluster(c) => {
                let pairs: Vec<_> = values.pairs(&fields).collect();
                c.hset(key, &pairs).await?;
                c.zadd(INDEX, &[(java_hash(key), key)]).await?;
            }
        }
        Ok(())
    }
    async fn insert_batch(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let fields = self.schema.fields.clone();
        match &mut self.conn {
            Conn::One(c) => {
                let records = batch.records().map(|(key, values)| {
                    (key, values.pairs(&fields), Some((INDEX, java_hash(key))))
                });
                c.hset_many(records).await?;
            }
            Conn::Cluster(c) => {
                let records: Vec<_> = batch
                    .records()
                    .map(|(key, values)| (key, values.pairs(&fields).collect()))
                    .collect();
                c.hset_many(&records).await?;
                let scores: Vec<_> = records.iter().map(|(k, _)| (java_hash(k), *k)).collect();
                c.zadd(INDEX, &scores).await?;
            }
        }
        Ok(())
    }
    async fn scan(&mut self, start: &str, count: usize) -> Result<u64, StoreError> {
        let keys = match &mut self.conn {
            Conn::One(c) => {
                let keys = c.zrange_from(INDEX, java_hash(start), count).await?;
                for k in &keys {
                    c.hgetall_len(k).await?;
                }
                keys
            }
            Conn::Cluster(c) => {
                let keys = c.zrange_from(INDEX, java_hash(start), count).await?;
                for k in &keys {
                    c.hgetall_len(k).await?;
                }
                keys
            }
        };
        Ok(keys.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn java_hash_matches_java() {
        // "user1".hashCode() in Java.
        assert_eq!(super::java_hash("user1"), 111_578_566.0);
        assert_eq!(super::java_hash(""), 0.0);
    }
}
