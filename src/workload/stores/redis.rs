//! Redis: a hash per record (`HSET`/`HGETALL`), and like YCSB's redis
//! binding a sorted set `_indices` scored by the key's hash for scans.
//! A load batch is one pipeline of `HSET` + `ZADD` per record.

use super::{Batch, Schema, Store, StoreConn, StoreError, Values};
use crate::clients::Endpoint;
use crate::clients::redis::RedisConn;

/// Sorted set that orders keys for scans.
const INDEX: &str = "_indices";

/// Records in Redis hashes.
pub struct RedisStore {
    pub ep: Endpoint,
    pub schema: Schema,
}

/// One Redis connection.
pub struct RedisStoreConn {
    conn: RedisConn,
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
        Ok(RedisStoreConn {
            conn: RedisConn::connect(&self.ep).await?,
            schema: self.schema.clone(),
        })
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        let mut c = RedisConn::connect(&self.ep).await?;
        c.cmd(&["FLUSHDB"]).await?;
        Ok(())
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let mut c = RedisConn::connect(&self.ep).await?;
        let keys: u64 = c.cmd(&["DBSIZE"]).await?.trim().parse().unwrap_or(1);
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
        match self.conn.hgetall_len(key).await? {
            0 => Err(StoreError::NotFound(key.to_string())),
            _ => Ok(()),
        }
    }
    async fn update(&mut self, key: &str, field: usize, value: &str) -> Result<(), StoreError> {
        let f = &self.schema.fields[field];
        if self.conn.hset_existing(key, f, value).await? {
            Ok(())
        } else {
            Err(StoreError::NotFound(key.to_string()))
        }
    }
    async fn insert(&mut self, key: &str, values: &Values<'_>) -> Result<(), StoreError> {
        let fields = self.schema.fields.clone();
        self.conn
            .hset(key, values.pairs(&fields), Some((INDEX, java_hash(key))))
            .await?;
        Ok(())
    }
    async fn insert_batch(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let fields = self.schema.fields.clone();
        let records = batch
            .records()
            .map(|(key, values)| (key, values.pairs(&fields), Some((INDEX, java_hash(key)))));
        self.conn.hset_many(records).await?;
        Ok(())
    }
    async fn scan(&mut self, start: &str, count: usize) -> Result<(), StoreError> {
        let keys = self
            .conn
            .zrange_from(INDEX, java_hash(start), count)
            .await?;
        for k in &keys {
            self.conn.hgetall_len(k).await?;
        }
        Ok(())
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
