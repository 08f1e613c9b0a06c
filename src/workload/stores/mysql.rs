//! MySQL and MariaDB records (see `sql`), in the storage engine the URL or
//! config names (`engine=rocksdb`), the server's default otherwise.

use super::sql::{SqlStoreConn, create_table};
use super::{Schema, Store, StoreError, TABLE};
use crate::clients::mysql::MyConn;
use crate::clients::{Endpoint, setup_step};

/// Database used when the URL names none.
pub(crate) const DEFAULT_DB: &str = "ycsb";

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
        let prepared = async {
            let conn = MyConn::connect(&ep).await?;
            SqlStoreConn::prepare(conn, &self.schema).await
        };
        setup_step("mysql", "connect", &self.ep.addr(), prepared).await
    }

    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let check = my_table_rows(&self.ep, TABLE);
        setup_step("mysql", "the existence check", &self.ep.addr(), check).await
    }

    async fn recreate(&self) -> Result<(), StoreError> {
        let mut conn = my_connect_creating(&self.ep).await?;
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

/// A connection to `ep`'s database (`DEFAULT_DB` when it names none),
/// which is created first when missing.
pub(crate) async fn my_connect_creating(ep: &Endpoint) -> Result<MyConn, StoreError> {
    let mut bare = ep.clone();
    let db = bare.database.take().unwrap_or_else(|| DEFAULT_DB.into());
    let mut conn = MyConn::connect(&bare).await?;
    conn.exec_text(&format!("CREATE DATABASE IF NOT EXISTS `{db}`"))
        .await?;
    conn.exec_text(&format!("USE `{db}`")).await?;
    Ok(conn)
}

/// `Some(what)` when `table` exists in `ep`'s database (`DEFAULT_DB` when
/// it names none) and has a row.
/// Rows in `table` of the endpoint's database (which must exist), read
/// back: what a load left.
pub(crate) async fn my_count(ep: &Endpoint, table: &str) -> Result<u64, StoreError> {
    let n = crate::clients::mysql::query_text(
        ep,
        &format!("SELECT CAST(COUNT(*) AS CHAR) FROM {table}"),
    )
    .await?;
    Ok(n.trim().parse().unwrap_or(0))
}

pub(crate) async fn my_table_rows(
    ep: &Endpoint,
    table: &str,
) -> Result<Option<String>, StoreError> {
    use crate::clients::mysql::query_text;
    let mut bare = ep.clone();
    let db = bare.database.take().unwrap_or_else(|| DEFAULT_DB.into());
    let literal = db.replace('\\', "\\\\").replace('\'', "''");
    let tables = query_text(
        &bare,
        &format!(
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = '{literal}' AND table_name = '{table}'"
        ),
    )
    .await?;
    if tables.trim() == "0" {
        return Ok(None);
    }
    let ident = db.replace('`', "``");
    let any = query_text(
        &bare,
        &format!("SELECT EXISTS (SELECT 1 FROM `{ident}`.{table} LIMIT 1)"),
    )
    .await?;
    Ok((any.trim() != "0").then(|| {
        format!(
            "mysql at {} holds rows in table {db}.{table} (a load drops it)",
            ep.addr()
        )
    }))
}
