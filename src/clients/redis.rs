//! The only importer of the `redis` crate.

use super::{ClientError, Endpoint};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::Decoder;

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

/// One connection, owned by one task. Commands are packed by the crate's
/// `Cmd` into a reused buffer and written straight to the socket; replies
/// are decoded by the crate's RESP codec from a reused buffer. The crate's
/// own async connection is multiplexed: every request travels through a
/// driver task and back over channels, which cost about a fifth of the
/// client's CPU per operation in `make bench` (scripts/bench/workload.sh).
pub struct RedisConn {
    ep: Endpoint,
    stream: TcpStream,
    out: Vec<u8>,
    inbuf: BytesMut,
    codec: ::redis::ValueCodec,
}

impl RedisConn {
    /// Connects to a loopback endpoint.
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        let stream = TcpStream::connect(ep.addr())
            .await
            .map_err(|e| err(ep, e))?;
        stream.set_nodelay(true).map_err(|e| err(ep, e))?;
        Ok(RedisConn {
            ep: ep.clone(),
            stream,
            out: Vec::with_capacity(256),
            inbuf: BytesMut::with_capacity(16 * 1024),
            codec: ::redis::ValueCodec::default(),
        })
    }

    /// Sends `cmds` in one write (a pipeline) and returns their replies in
    /// order; a server error reply becomes an error.
    async fn round_trip(
        &mut self,
        cmds: &[&::redis::Cmd],
    ) -> Result<Vec<::redis::Value>, ClientError> {
        self.out.clear();
        for c in cmds {
            c.write_packed_command(&mut self.out);
        }
        self.stream
            .write_all(&self.out)
            .await
            .map_err(|e| err(&self.ep, e))?;
        // Every reply is read before an error is reported, so the next
        // command does not receive this pipeline's leftovers.
        let mut replies = Vec::with_capacity(cmds.len());
        while replies.len() < cmds.len() {
            replies.push(self.reply().await?);
        }
        replies
            .into_iter()
            .map(|v| v.extract_error().map_err(|e| err(&self.ep, e)))
            .collect()
    }

    /// One command, one reply.
    async fn call(&mut self, cmd: &::redis::Cmd) -> Result<::redis::Value, ClientError> {
        self.out.clear();
        cmd.write_packed_command(&mut self.out);
        self.stream
            .write_all(&self.out)
            .await
            .map_err(|e| err(&self.ep, e))?;
        let v = self.reply().await?;
        v.extract_error().map_err(|e| err(&self.ep, e))
    }

    /// The next reply on the socket (a server error is a value here).
    async fn reply(&mut self) -> Result<::redis::Value, ClientError> {
        loop {
            if let Some(v) = self
                .codec
                .decode(&mut self.inbuf)
                .map_err(|e| err(&self.ep, e))?
            {
                return Ok(v);
            }
            let n = self
                .stream
                .read_buf(&mut self.inbuf)
                .await
                .map_err(|e| err(&self.ep, e))?;
            if n == 0 {
                return Err(err(&self.ep, "the server closed the connection"));
            }
        }
    }

    /// Any command, reply as a string.
    pub async fn cmd(&mut self, argv: &[&str]) -> Result<String, ClientError> {
        let mut c = ::redis::cmd(argv[0]);
        for a in &argv[1..] {
            c.arg(*a);
        }
        let v = self.call(&c).await?;
        Ok(value_text(&v))
    }

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
            None => self.call(&hset).await.map(drop),
            Some((zkey, score)) => {
                let mut zadd = ::redis::cmd("ZADD");
                zadd.arg(zkey).arg(score).arg(key);
                self.round_trip(&[&hset, &zadd]).await.map(drop)
            }
        }
    }

    /// `HGETALL key`: number of fields returned (0 when the key is missing).
    pub async fn hgetall_len(&mut self, key: &str) -> Result<usize, ClientError> {
        let mut c = ::redis::cmd("HGETALL");
        c.arg(key);
        Ok(match self.call(&c).await? {
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
        let mut exists = ::redis::cmd("EXISTS");
        exists.arg(key);
        let mut hset = ::redis::cmd("HSET");
        hset.arg(key).arg(field).arg(value);
        let replies = self.round_trip(&[&exists, &hset]).await?;
        let existed: i64 =
            ::redis::from_redis_value_ref(&replies[0]).map_err(|e| err(&self.ep, e))?;
        Ok(existed == 1)
    }

    /// `ZRANGEBYSCORE zkey min +inf LIMIT 0 count`.
    pub async fn zrange_from(
        &mut self,
        zkey: &str,
        min: f64,
        count: usize,
    ) -> Result<Vec<String>, ClientError> {
        let mut c = ::redis::cmd("ZRANGEBYSCORE");
        c.arg(zkey)
            .arg(min)
            .arg("+inf")
            .arg("LIMIT")
            .arg(0)
            .arg(count);
        let v = self.call(&c).await?;
        ::redis::from_redis_value(v).map_err(|e| err(&self.ep, e))
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
        let mut cmds = Vec::new();
        for (key, pairs, index) in records {
            let mut hset = ::redis::cmd("HSET");
            hset.arg(key);
            for (f, v) in pairs {
                hset.arg(f).arg(v);
            }
            cmds.push(hset);
            if let Some((zkey, score)) = index {
                let mut zadd = ::redis::cmd("ZADD");
                zadd.arg(zkey).arg(score).arg(key);
                cmds.push(zadd);
            }
        }
        let refs: Vec<&::redis::Cmd> = cmds.iter().collect();
        self.round_trip(&refs).await.map(drop)
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
