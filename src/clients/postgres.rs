//! The only importer of `tokio-postgres`.

use super::{ClientError, Endpoint};

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

/// One connection; its driver task ends when this is dropped.
pub struct PgConn {
    ep: Endpoint,
    client: ::tokio_postgres::Client,
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
