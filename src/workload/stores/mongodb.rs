//! MongoDB (and wire-compatible servers such as SecantusDB): a document per
//! record, `_id` the key, fields as strings, like YCSB's mongodb binding.
//! A load batch is one unordered `insertMany`, as that binding does with
//! `batchsize`: the server need not stop at a failed document, and the
//! batch then counts as failed as a whole.

use super::{Batch, Schema, Store, StoreConn, StoreError, TABLE, Values};
use crate::clients::Endpoint;
use crate::clients::mongodb::{MongoConn, MongoOptions};

/// Database used when the URL names none.
pub(crate) const DEFAULT_DB: &str = "ycsb";

/// Records in a MongoDB collection.
pub struct MongoStore {
    pub ep: Endpoint,
    /// The seed list's other hosts (a sharded cluster's other routers):
    /// the load generator's connections go to `ep` and these in turn, as
    /// a driver spreads its connections over the routers it is given.
    pub more: Vec<Endpoint>,
    /// Which host the next connection goes to.
    pub next: std::sync::atomic::AtomicUsize,
    pub schema: Schema,
    /// Write concern, read preference and timeout from the store URL.
    pub opts: MongoOptions,
}

/// One client (one connection).
pub struct MongoStoreConn {
    conn: MongoConn,
    schema: Schema,
}

impl MongoStore {
    fn endpoint(&self) -> Endpoint {
        let mut ep = self.ep.clone();
        ep.database.get_or_insert_with(|| DEFAULT_DB.into());
        ep
    }

    /// The host of the next connection, in turn over the seed list.
    fn next_endpoint(&self) -> Endpoint {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match i % (self.more.len() + 1) {
            0 => self.endpoint(),
            k => Endpoint {
                host: self.more[k - 1].host.clone(),
                port: self.more[k - 1].port,
                ..self.endpoint()
            },
        }
    }
}

impl Store for MongoStore {
    type Conn = MongoStoreConn;
    async fn connect(&self) -> Result<MongoStoreConn, StoreError> {
        Ok(MongoStoreConn {
            conn: MongoConn::connect_with(&self.next_endpoint(), &self.opts).await?,
            schema: self.schema.clone(),
        })
    }
    async fn recreate(&self) -> Result<(), StoreError> {
        let mut c = MongoConn::connect_with(&self.endpoint(), &self.opts).await?;
        c.drop_collection(TABLE).await?;
        Ok(())
    }
    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let ep = self.endpoint();
        let mut c = MongoConn::connect_with(&ep, &self.opts).await?;
        Ok(c.has_documents(TABLE).await?.then(|| {
            format!(
                "mongodb at {} holds documents in collection {}.{TABLE} (a load drops it)",
                ep.addr(),
                ep.database.as_deref().unwrap_or(DEFAULT_DB)
            )
        }))
    }
}

impl StoreConn for MongoStoreConn {
    async fn read(&mut self, key: &str) -> Result<(), StoreError> {
        match self.conn.find_id(TABLE, key).await? {
            0 => Err(StoreError::NotFound(key.to_string())),
            _ => Ok(()),
        }
    }
    async fn update(&mut self, key: &str, field: usize, value: &str) -> Result<(), StoreError> {
        let f = &self.schema.fields[field];
        match self.conn.set_field(TABLE, key, f, value).await? {
            // Under `w: 0` nothing says what matched.
            0 if self.conn.writes_acknowledged() => Err(StoreError::NotFound(key.to_string())),
            _ => Ok(()),
        }
    }
    async fn insert(&mut self, key: &str, values: &Values<'_>) -> Result<(), StoreError> {
        let fields = self.schema.fields.clone();
        self.conn
            .insert_fields(TABLE, key, values.pairs(&fields))
            .await?;
        Ok(())
    }
    async fn insert_batch(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let fields = self.schema.fields.clone();
        let docs = batch
            .records()
            .map(|(key, values)| (key, values.pairs(&fields)));
        self.conn.insert_fields_many(TABLE, docs).await?;
        Ok(())
    }
    async fn scan(&mut self, start: &str, count: usize) -> Result<u64, StoreError> {
        Ok(self.conn.scan_from(TABLE, start, count as i64).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_go_to_every_host_of_the_seed_list_in_turn() {
        let at = |port| Endpoint {
            port,
            ..Endpoint::loopback(port)
        };
        let store = MongoStore {
            ep: at(1),
            more: vec![at(2), at(3)],
            next: Default::default(),
            schema: Schema {
                fields: Vec::<String>::new().into(),
                field_length: 0,
                engine: None,
            },
            opts: MongoOptions::default(),
        };
        let ports: Vec<u16> = (0..7).map(|_| store.next_endpoint().port).collect();
        assert_eq!(ports, [1, 2, 3, 1, 2, 3, 1]);
        // Every one on the store's database.
        assert_eq!(store.next_endpoint().database.as_deref(), Some(DEFAULT_DB));
    }
}
