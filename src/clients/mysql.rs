//! The only importer of `mysql_async`.

use super::{ClientError, Endpoint};
use ::mysql_async::prelude::Queryable;

fn err(ep: &Endpoint, e: impl std::fmt::Display) -> ClientError {
    ClientError::Mysql {
        addr: ep.addr(),
        msg: e.to_string(),
    }
}

/// `SELECT VERSION()`.
pub async fn server_version(ep: &Endpoint) -> Result<String, ClientError> {
    let mut conn = MyConn::connect(ep).await?;
    let v: Option<String> = conn
        .conn
        .query_first("SELECT VERSION()")
        .await
        .map_err(|e| err(ep, e))?;
    let _ = conn.conn.disconnect().await;
    v.ok_or_else(|| err(ep, "SELECT VERSION() returned no row"))
}

/// One connection.
pub struct MyConn {
    ep: Endpoint,
    conn: ::mysql_async::Conn,
}

impl MyConn {
    /// Connects over TCP to a loopback endpoint.
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        let opts = ::mysql_async::OptsBuilder::default()
            .ip_or_hostname(ep.host.clone())
            .tcp_port(ep.port)
            .user(Some(ep.user.clone().unwrap_or_else(|| "root".into())))
            .pass(ep.password.clone())
            .db_name(ep.database.clone())
            .prefer_socket(false);
        let conn = ::mysql_async::Conn::new(opts)
            .await
            .map_err(|e| err(ep, e))?;
        Ok(MyConn {
            ep: ep.clone(),
            conn,
        })
    }

    /// Runs one statement without parameters, discarding rows.
    pub async fn exec_text(&mut self, sql: &str) -> Result<(), ClientError> {
        self.conn
            .query_drop(sql)
            .await
            .map_err(|e| err(&self.ep, e))
    }
}
