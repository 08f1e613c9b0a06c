//! PostgreSQL records (see `sql`).

use super::sql::{SqlStoreConn, create_table};
use super::{Schema, Store, StoreError, TABLE};
use crate::clients::postgres::PgConn;
use crate::clients::{Endpoint, setup_step};

/// Records in a PostgreSQL table.
pub struct PgStore {
    pub ep: Endpoint,
    pub schema: Schema,
}

impl Store for PgStore {
    type Conn = SqlStoreConn<PgConn>;
    async fn connect(&self) -> Result<Self::Conn, StoreError> {
        let prepared = async {
            let conn = PgConn::connect(&self.ep).await?;
            SqlStoreConn::prepare(conn, &self.schema).await
        };
        setup_step("postgres", "connect", &self.ep.addr(), prepared).await
    }

    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let check = pg_table_rows(&self.ep, TABLE);
        setup_step("postgres", "the existence check", &self.ep.addr(), check).await
    }

    async fn recreate(&self) -> Result<(), StoreError> {
        let conn = PgConn::connect(&self.ep).await?;
        let create = create_table(&self.schema, "");
        conn.batch(&format!("DROP TABLE IF EXISTS {TABLE}; {create}"))
            .await?;
        Ok(())
    }
}

/// `Some(what)` when `table` exists in `ep`'s database and has a row.
/// Rows in `table` (which must exist), read back: what a load left.
pub(crate) async fn pg_count(ep: &Endpoint, table: &str) -> Result<u64, StoreError> {
    let n =
        crate::clients::postgres::query_text(ep, &format!("SELECT count(*)::text FROM {table}"))
            .await?;
    Ok(n.trim().parse().unwrap_or(0))
}

pub(crate) async fn pg_table_rows(
    ep: &Endpoint,
    table: &str,
) -> Result<Option<String>, StoreError> {
    use crate::clients::postgres::query_text;
    if query_text(ep, &format!("SELECT to_regclass('{table}')::text"))
        .await?
        .is_empty()
    {
        return Ok(None);
    }
    let any = query_text(
        ep,
        &format!("SELECT count(*)::text FROM (SELECT 1 FROM {table} LIMIT 1) AS one"),
    )
    .await?;
    Ok((any.trim() != "0").then(|| {
        format!(
            "postgres at {} holds rows in table {table} of database {} (a load drops it)",
            ep.addr(),
            ep.database.as_deref().unwrap_or("postgres")
        )
    }))
}
