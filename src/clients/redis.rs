//! The only importer of the `redis` crate.

use super::{ClientError, Endpoint};

fn err(ep: &Endpoint, e: impl std::fmt::Display) -> ClientError {
    ClientError::Redis {
        addr: ep.addr(),
        msg: e.to_string(),
    }
}

/// `redis_version` from `INFO server`.
pub async fn server_version(ep: &Endpoint) -> Result<String, ClientError> {
    let mut conn = RedisConn::connect(ep).await?;
    let info: String = conn.cmd(&["INFO", "server"]).await?;
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_string())
        .ok_or_else(|| err(ep, "INFO server has no redis_version line"))
}

/// One connection (not shared between tasks).
pub struct RedisConn {
    ep: Endpoint,
    conn: ::redis::aio::MultiplexedConnection,
}

impl RedisConn {
    /// Connects to a loopback endpoint.
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        let url = format!("redis://{}/", ep.addr());
        let client = ::redis::Client::open(url).map_err(|e| err(ep, e))?;
        let conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| err(ep, e))?;
        Ok(RedisConn {
            ep: ep.clone(),
            conn,
        })
    }

    /// Any command, reply as a string.
    pub async fn cmd(&mut self, argv: &[&str]) -> Result<String, ClientError> {
        let mut c = ::redis::cmd(argv[0]);
        for a in &argv[1..] {
            c.arg(*a);
        }
        let v: ::redis::Value = c
            .query_async(&mut self.conn)
            .await
            .map_err(|e| err(&self.ep, e))?;
        Ok(value_text(&v))
    }
}

fn value_text(v: &::redis::Value) -> String {
    use ::redis::Value;
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Okay => "OK".into(),
        Value::Int(i) => i.to_string(),
        Value::Nil => String::new(),
        other => format!("{other:?}"),
    }
}
