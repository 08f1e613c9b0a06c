//! MySQL and MariaDB records (see `sql`), in the storage engine the URL or
//! config names (`engine=rocksdb`), the server's default otherwise.

use super::sql::{SqlStoreConn, create_table};
use super::{Schema, Store, StoreError, TABLE};
use crate::clients::Endpoint;
use crate::clients::mysql::MyConn;

/// Database used when the URL names none.
pub const DEFAULT_DB: &str = "ycsb";

/// Records in a MySQL or MariaDB table.
pub struct MyStore {
    pub ep: Endpoint,
    pub schema: Schema,
}

impl Store for MyStore {
    type Conn = SqlStoreConn<MyConn>;
    async fn connect(&self) -> Result<Self::Conn, StoreError> {
        let mut ep = self.ep.clone();
        ep.database.get_or_insert_with(|| DEFAULT_DB.into());
        let conn = MyConn::connect(&ep).await?;
        SqlStoreConn::prepare(conn, &self.schema).await
    }

    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        use crate::clients::mysql::query_text;
        let mut bare = self.ep.clone();
        let db = bare.database.take().unwrap_or_else(|| DEFAULT_DB.into());
        let literal = db.replace('\\', "\\\\").replace('\'', "''");
        let tables = query_text(
            &bare,
            &format!(
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = '{literal}' AND table_name = '{TABLE}'"
            ),
        )
        .await?;
        if tables.trim() == "0" {
            return Ok(None);
        }
        let ident = db.replace('`', "``");
        let any = query_text(
            &bare,
            &format!("SELECT EXISTS (SELECT 1 FROM `{ident}`.{TABLE} LIMIT 1)"),
        )
        .await?;
        Ok((any.trim() != "0").then(|| {
            format!(
                "mysql at {} holds rows in table {db}.{TABLE} (a load drops it)",
                self.ep.addr()
            )
        }))
    }

    async fn recreate(&self) -> Result<(), StoreError> {
        let mut bare = self.ep.clone();
        let db = bare.database.take().unwrap_or_else(|| DEFAULT_DB.into());
        let mut conn = MyConn::connect(&bare).await?;
        conn.exec_text(&format!("CREATE DATABASE IF NOT EXISTS `{db}`"))
            .await?;
        conn.exec_text(&format!("USE `{db}`")).await?;
        conn.exec_text(&format!("DROP TABLE IF EXISTS {TABLE}"))
            .await?;
        let engine = match &self.schema.engine {
            Some(e) => format!(" ENGINE={e}"),
            None => String::new(),
        };
        conn.exec_text(&create_table(&self.schema, &engine)).await?;
        Ok(())
    }
}
