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

impl RedisConn {
    /// `HSET key f1 v1 f2 v2 ...`, and with `index` also
    /// `ZADD index score key` in the same round trip (a pipeline).
    pub async fn hset<'a>(
        &mut self,
        key: &str,
        pairs: impl Iterator<Item = (&'a str, &'a str)>,
        index: Option<(&str, f64)>,
    ) -> Result<(), ClientError> {
        let mut hset = ::redis::cmd("HSET");
        hset.arg(key);
        for (f, v) in pairs {
            hset.arg(f).arg(v);
        }
        match index {
            None => hset
                .query_async::<()>(&mut self.conn)
                .await
                .map_err(|e| err(&self.ep, e)),
            Some((zkey, score)) => {
                let mut p = ::redis::pipe();
                p.add_command(hset).ignore();
                p.cmd("ZADD").arg(zkey).arg(score).arg(key).ignore();
                p.query_async::<()>(&mut self.conn)
                    .await
                    .map_err(|e| err(&self.ep, e))
            }
        }
    }

    /// `HGETALL key`: number of fields returned (0 when the key is missing).
    pub async fn hgetall_len(&mut self, key: &str) -> Result<usize, ClientError> {
        let v: ::redis::Value = ::redis::cmd("HGETALL")
            .arg(key)
            .query_async(&mut self.conn)
            .await
            .map_err(|e| err(&self.ep, e))?;
        Ok(match v {
            ::redis::Value::Array(a) => a.len() / 2,
            ::redis::Value::Map(m) => m.len(),
            _ => 0,
        })
    }

    /// `EXISTS key` then `HSET key field value` in one pipeline; reports
    /// whether the key existed (an update of a missing record is an error).
    pub async fn hset_existing(
        &mut self,
        key: &str,
        field: &str,
        value: &str,
    ) -> Result<bool, ClientError> {
        let mut p = ::redis::pipe();
        p.cmd("EXISTS").arg(key);
        p.cmd("HSET").arg(key).arg(field).arg(value).ignore();
        let (existed,): (i64,) = p
            .query_async(&mut self.conn)
            .await
            .map_err(|e| err(&self.ep, e))?;
        Ok(existed == 1)
    }

    /// `ZRANGEBYSCORE zkey min +inf LIMIT 0 count`.
    pub async fn zrange_from(
        &mut self,
        zkey: &str,
        min: f64,
        count: usize,
    ) -> Result<Vec<String>, ClientError> {
        ::redis::cmd("ZRANGEBYSCORE")
            .arg(zkey)
            .arg(min)
            .arg("+inf")
            .arg("LIMIT")
            .arg(0)
            .arg(count)
            .query_async(&mut self.conn)
            .await
            .map_err(|e| err(&self.ep, e))
    }
}

impl RedisConn {
    /// For each record `HSET key f1 v1 ...` and, with an index,
    /// `ZADD index score key`: every command in one pipeline (one round
    /// trip). Not atomic: an error fails the call, but commands before it
    /// may have been applied.
    pub async fn hset_many<'a, P>(
        &mut self,
        records: impl Iterator<Item = (&'a str, P, Option<(&'a str, f64)>)>,
    ) -> Result<(), ClientError>
    where
        P: Iterator<Item = (&'a str, &'a str)>,
    {
        let mut p = ::redis::pipe();
        for (key, pairs, index) in records {
            p.cmd("HSET").arg(key);
            for (f, v) in pairs {
                p.arg(f).arg(v);
            }
            p.ignore();
            if let Some((zkey, score)) = index {
                p.cmd("ZADD").arg(zkey).arg(score).arg(key).ignore();
            }
        }
        p.query_async::<()>(&mut self.conn)
            .await
            .map_err(|e| err(&self.ep, e))
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
