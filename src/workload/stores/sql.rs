//! What PostgreSQL and MySQL share: table `usertable(ycsb_key primary key,
//! field0..N)` and prepared statements per connection, like YCSB's JDBC
//! binding. Only the placeholder style and the DDL differ. A load batch is
//! one multi-row `INSERT`, prepared once per batch size.

use super::{Batch, Schema, StoreConn, StoreError, TABLE, Values};
use crate::clients::mysql::MyConn;
use crate::clients::postgres::PgConn;
use crate::clients::{ClientError, Param};
use std::collections::BTreeMap;
use std::future::Future;

/// Most parameters one statement may have (PostgreSQL's and MySQL's
/// protocols count them in 16 bits).
pub(crate) const MAX_PARAMS: usize = 65_535;

/// `(m1, m2), (m3, m4)`: the `VALUES` list of `rows` rows of `cols`
/// placeholders, numbered on from 1.
pub(crate) fn values_rows(rows: usize, cols: usize, mark: fn(usize) -> String) -> String {
    let row = |r: usize| {
        let marks: Vec<String> = (1..=cols).map(|c| mark(r * cols + c)).collect();
        format!("({})", marks.join(", "))
    };
    (0..rows).map(row).collect::<Vec<_>>().join(", ")
}

/// A connection that prepares and runs statements.
pub trait SqlClient: Send + 'static {
    /// `$1` (PostgreSQL) or `?` (MySQL) for parameter `i` (from 1).
    fn mark(i: usize) -> String;
    fn prepare(&mut self, sql: &str) -> impl Future<Output = Result<usize, ClientError>> + Send;
    /// Rows returned.
    fn query(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<u64, ClientError>> + Send;
    /// Rows matched or changed.
    fn execute(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<u64, ClientError>> + Send;
}

impl SqlClient for PgConn {
    fn mark(i: usize) -> String {
        format!("${i}")
    }
    async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        PgConn::prepare(self, sql).await
    }
    async fn query(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        PgConn::query(self, id, params).await
    }
    async fn execute(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        PgConn::execute(self, id, params).await
    }
}

impl SqlClient for MyConn {
    fn mark(_: usize) -> String {
        "?".into()
    }
    async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        MyConn::prepare(self, sql).await
    }
    async fn query(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        MyConn::query(self, id, params).await
    }
    async fn execute(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        MyConn::execute(self, id, params).await
    }
}

/// One SQL connection with the YCSB statements prepared.
pub struct SqlStoreConn<C> {
    conn: C,
    read: usize,
    insert: usize,
    scan: usize,
    /// One `UPDATE ... SET fieldN` per field.
    update: Vec<usize>,
    /// `INSERT INTO usertable (ycsb_key, field0, ...) VALUES `.
    insert_head: String,
    /// Multi-row inserts by batch size, prepared when first needed.
    inserts: BTreeMap<usize, usize>,
}

impl<C: SqlClient> SqlStoreConn<C> {
    /// Prepares read, insert, scan and one update per field.
    pub async fn prepare(mut conn: C, schema: &Schema) -> Result<Self, StoreError> {
        let f = &schema.fields;
        let m = C::mark;
        let read = conn
            .prepare(&format!("SELECT * FROM {TABLE} WHERE ycsb_key = {}", m(1)))
            .await?;
        let insert_head = format!("INSERT INTO {TABLE} (ycsb_key, {}) VALUES ", f.join(", "));
        let insert = conn
            .prepare(&format!(
                "{insert_head}{}",
                values_rows(1, f.len() + 1, C::mark)
            ))
            .await?;
        let scan = conn
            .prepare(&format!(
                "SELECT * FROM {TABLE} WHERE ycsb_key >= {} ORDER BY ycsb_key LIMIT {}",
                m(1),
                m(2)
            ))
            .await?;
        let mut update = Vec::with_capacity(f.len());
        for name in f.iter() {
            let sql = format!(
                "UPDATE {TABLE} SET {name} = {} WHERE ycsb_key = {}",
                m(1),
                m(2)
            );
            update.push(conn.prepare(&sql).await?);
        }
        Ok(SqlStoreConn {
            conn,
            read,
            insert,
            scan,
            update,
            insert_head,
            inserts: BTreeMap::new(),
        })
    }
}

/// `CREATE TABLE` of the YCSB records with a suffix (`ENGINE=...`).
pub(crate) fn create_table(schema: &Schema, suffix: &str) -> String {
    let cols: Vec<String> = schema.fields.iter().map(|f| format!("{f} TEXT")).collect();
    format!(
        "CREATE TABLE {TABLE} (ycsb_key VARCHAR(255) PRIMARY KEY, {}){suffix}",
        cols.join(", ")
    )
}

impl<C: SqlClient> StoreConn for SqlStoreConn<C> {
    async fn read(&mut self, key: &str) -> Result<(), StoreError> {
        match self.conn.query(self.read, &[Param::Text(key)]).await? {
            0 => Err(StoreError::NotFound(key.to_string())),
            _ => Ok(()),
        }
    }
    async fn update(&mut self, key: &str, field: usize, value: &str) -> Result<(), StoreError> {
        let st = self.update[field];
        match self
            .conn
            .execute(st, &[Param::Text(value), Param::Text(key)])
            .await?
        {
            0 => Err(StoreError::NotFound(key.to_string())),
            _ => Ok(()),
        }
    }
    async fn insert(&mut self, key: &str, values: &Values<'_>) -> Result<(), StoreError> {
        let mut params = Vec::with_capacity(values.len() + 1);
        params.push(Param::Text(key));
        params.extend((0..values.len()).map(|i| Param::Text(values.get(i))));
        self.conn.execute(self.insert, &params).await?;
        Ok(())
    }
    async fn insert_batch(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let rows = batch.len();
        let st = match self.inserts.get(&rows) {
            Some(st) => *st,
            None => {
                let cols = batch.offsets.len() / rows.max(1) + 1;
                let sql = format!("{}{}", self.insert_head, values_rows(rows, cols, C::mark));
                let st = self.conn.prepare(&sql).await?;
                self.inserts.insert(rows, st);
                st
            }
        };
        let mut params = Vec::with_capacity(rows + batch.offsets.len());
        for (key, values) in batch.records() {
            params.push(Param::Text(key));
            params.extend((0..values.len()).map(|i| Param::Text(values.get(i))));
        }
        self.conn.execute(st, &params).await?;
        Ok(())
    }
    async fn scan(&mut self, start: &str, count: usize) -> Result<u64, StoreError> {
        Ok(self
            .conn
            .query(self.scan, &[Param::Text(start), Param::Int(count as i64)])
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_rows_number_the_placeholders_row_after_row() {
        assert_eq!(
            values_rows(2, 3, <PgConn as SqlClient>::mark),
            "($1, $2, $3), ($4, $5, $6)"
        );
        assert_eq!(values_rows(2, 1, <MyConn as SqlClient>::mark), "(?), (?)");
    }
}
