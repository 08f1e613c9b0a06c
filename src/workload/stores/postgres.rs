//! PostgreSQL records (see `sql`).

use super::sql::{SqlStoreConn, create_table};
use super::{Schema, Store, StoreError, TABLE};
use crate::clients::Endpoint;
use crate::clients::postgres::PgConn;

/// Records in a PostgreSQL table.
pub struct PgStore {
    pub ep: Endpoint,
    pub schema: Schema,
}

impl Store for PgStore {
    type Conn = SqlStoreConn<PgConn>;
    async fn connect(&self) -> Result<Self::Conn, StoreError> {
        let conn = PgConn::connect(&self.ep).await?;
        SqlStoreConn::prepare(conn, &self.schema).await
    }

    async fn recreate(&self) -> Result<(), StoreError> {
        let conn = PgConn::connect(&self.ep).await?;
        let create = create_table(&self.schema, "");
        conn.batch(&format!("DROP TABLE IF EXISTS {TABLE}; {create}"))
            .await?;
        Ok(())
    }
}
