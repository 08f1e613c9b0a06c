//! The only importer of `tokio-postgres`.

use super::{ClientError, Endpoint, Param};

fn err(ep: &Endpoint, e: impl std::fmt::Display) -> ClientError {
    ClientError::Postgres {
        addr: ep.addr(),
        msg: e.to_string(),
    }
}

/// `SHOW server_version`.
pub async fn server_version(ep: &Endpoint) -> Result<String, ClientError> {
    let conn = PgConn::connect(ep).await?;
    let row = conn
        .client
        .query_one("SHOW server_version", &[])
        .await
        .map_err(|e| err(ep, e))?;
    row.try_get::<_, String>(0).map_err(|e| err(ep, e))
}

/// The first column of the first row of `sql`, as text (`NULL` is empty):
/// engine facts such as `SHOW shared_buffers` or `pg_database_size`.
pub async fn query_text(ep: &Endpoint, sql: &str) -> Result<String, ClientError> {
    let conn = PgConn::connect(ep).await?;
    let row = conn
        .client
        .query_one(sql, &[])
        .await
        .map_err(|e| err(ep, e))?;
    let v: Option<String> = row.try_get(0).map_err(|e| err(ep, e))?;
    Ok(v.unwrap_or_default())
}

/// One connection; its driver task ends when this is dropped.
pub struct PgConn {
    ep: Endpoint,
    client: ::tokio_postgres::Client,
    statements: Vec<::tokio_postgres::Statement>,
}

impl PgConn {
    /// Connects over TCP to a loopback endpoint (no TLS).
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        let mut cfg = ::tokio_postgres::Config::new();
        cfg.host(&ep.host)
            .port(ep.port)
            .user(ep.user.as_deref().unwrap_or("postgres"))
            .dbname(ep.database.as_deref().unwrap_or("postgres"));
        if let Some(p) = &ep.password {
            cfg.password(p);
        }
        let (client, connection) = cfg
            .connect(::tokio_postgres::NoTls)
            .await
            .map_err(|e| err(ep, e))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(PgConn {
            ep: ep.clone(),
            client,
            statements: Vec::new(),
        })
    }

    /// Runs statements separated by `;` with no parameters.
    pub async fn batch(&self, sql: &str) -> Result<(), ClientError> {
        self.client
            .batch_execute(sql)
            .await
            .map_err(|e| err(&self.ep, e))
    }
}

impl PgConn {
    /// Prepares `sql` on this connection; returns its handle.
    pub async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        let st = self
            .client
            .prepare(sql)
            .await
            .map_err(|e| err(&self.ep, format!("{e} (preparing `{sql}`)")))?;
        self.statements.push(st);
        Ok(self.statements.len() - 1)
    }

    /// Runs prepared statement `id`; returns the rows it returned.
    pub async fn query(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        let refs = to_refs(params);
        let rows = self
            .client
            .query(&self.statements[id], &refs)
            .await
            .map_err(|e| err(&self.ep, e))?;
        Ok(rows.len() as u64)
    }

    /// Runs prepared statement `id`; returns the rows it changed.
    pub async fn execute(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        let refs = to_refs(params);
        self.client
            .execute(&self.statements[id], &refs)
            .await
            .map_err(|e| err(&self.ep, e))
    }
}

fn to_refs<'a>(params: &'a [Param<'_>]) -> Vec<&'a (dyn ::tokio_postgres::types::ToSql + Sync)> {
    params
        .iter()
        .map(|p| match p {
            Param::Text(s) => s as &(dyn ::tokio_postgres::types::ToSql + Sync),
            Param::Int(i) => i as _,
            Param::Float(f) => f as _,
        })
        .collect()
}
