//! The only importer of the `redis` and `redis-protocol` crates.

use super::resp::Framer;
use super::{ClientError, Endpoint};
use redis_protocol::resp2::decode::decode_range;
use redis_protocol::resp2::types::RangeFrame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::bytes::{Buf, BytesMut};

fn err(ep: &Endpoint, e: impl std::fmt::Display) -> ClientError {
    let mut msg = e.to_string();
    if msg.contains("NOAUTH") {
        msg.push_str(&format!(
            "; the server wants a password: put it in the store URL, \
             redis://:PASSWORD@{0} (or redis://USER:PASSWORD@{0} for an ACL user)",
            ep.addr()
        ));
    }
    ClientError::Redis {
        addr: ep.addr(),
        msg,
    }
}

/// `redis_version` from `INFO server`.
pub async fn server_version(ep: &Endpoint) -> Result<String, ClientError> {
    let mut conn = RedisConn::connect(ep).await?;
    // INFO answers while a restart loads the dataset from disk; every data
    // command answers LOADING until it is in memory, so a server still
    // loading is not ready.
    let persistence: String = conn.cmd(&["INFO", "persistence"]).await?;
    if persistence.lines().any(|l| l.trim() == "loading:1") {
        return Err(err(ep, "still loading its dataset from disk"));
    }
    let info: String = conn.cmd(&["INFO", "server"]).await?;
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_string())
        .ok_or_else(|| err(ep, "INFO server has no redis_version line"))
}

/// One connection, owned by one task. Commands are packed by the `redis`
/// crate's `Cmd` into a reused buffer and written straight to the socket.
/// Replies are framed in place by `redis-protocol`'s range decoder, which
/// copies nothing: the hot commands need only a reply's top level (an
/// array's length, an integer, an error), and the rest are parsed into a
/// `redis::Value` from the frame's bytes.
///
/// Why not the `redis` crate's own async connection: it is multiplexed, so
/// every request travels through a driver task and back over channels, and
/// its parser builds a value per field. With the client pinned to one CPU
/// those two cost about a third of the client's CPU per operation in
/// `make bench` (scripts/bench/workload.sh, HGETALL of 10 fields).
pub struct RedisConn {
    ep: Endpoint,
    stream: TcpStream,
    out: Vec<u8>,
    inbuf: BytesMut,
    /// Walks the reply at the front of `inbuf` as it arrives.
    framer: Framer,
    /// Why the connection is out of step (a reply was refused unread);
    /// every later call fails with it.
    broken: Option<String>,
}

/// The top level of a reply, which is all the hot commands look at.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Top {
    Int(i64),
    /// An array of this many elements.
    Array(usize),
    Nil,
    /// A simple or bulk string.
    Text,
}

impl Top {
    /// The reply in words, for error messages.
    fn words(&self) -> String {
        match self {
            Top::Int(n) => format!("the integer {n}"),
            Top::Array(n) => format!("an array of {n} elements"),
            Top::Nil => "nil".into(),
            Top::Text => "a string".into(),
        }
    }
}

impl RedisConn {
    /// Connects to a loopback endpoint; authenticates with the endpoint's
    /// password (`AUTH [user] password`) and selects its database.
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        super::setup_step("redis", "connect", &ep.addr(), Self::open(ep)).await
    }

    /// Connects, authenticates and selects the database, unbounded.
    async fn open(ep: &Endpoint) -> Result<Self, ClientError> {
        let stream = TcpStream::connect(ep.addr())
            .await
            .map_err(|e| err(ep, e))?;
        stream.set_nodelay(true).map_err(|e| err(ep, e))?;
        let mut conn = RedisConn {
            ep: ep.clone(),
            stream,
            out: Vec::with_capacity(256),
            inbuf: BytesMut::with_capacity(16 * 1024),
            framer: Framer::default(),
            broken: None,
        };
        if let Some(password) = &ep.password {
            let user = ep.user.as_deref().filter(|u| !u.is_empty());
            let auth = match user {
                Some(u) => conn.cmd(&["AUTH", u, password]).await,
                None => conn.cmd(&["AUTH", password]).await,
            };
            auth.map_err(|e| {
                err(
                    ep,
                    format!(
                        "AUTH as {} failed ({e}); check the user and password in the store URL",
                        user.unwrap_or("default")
                    ),
                )
            })?;
        }
        if let Some(db) = ep.database.as_deref().filter(|d| !d.is_empty()) {
            conn.cmd(&["SELECT", db]).await?;
        }
        Ok(conn)
    }

    /// Writes `cmds` in one write (a pipeline when there are several).
    async fn send(&mut self, cmds: &[&::redis::Cmd]) -> Result<(), ClientError> {
        if let Some(why) = &self.broken {
            return Err(err(&self.ep, why));
        }
        self.out.clear();
        for c in cmds {
            c.write_packed_command(&mut self.out);
        }
        self.stream
            .write_all(&self.out)
            .await
            .map_err(|e| err(&self.ep, e))
    }

    /// Waits for the next complete reply in the buffer; returns its frame
    /// (ranges into `inbuf`) and its length. The caller consumes it. A
    /// reply over Redis's own limits, or nested too deep, is refused as
    /// soon as its header says so ([`super::resp`]), and the connection
    /// is out of step from then on.
    async fn frame(&mut self) -> Result<(RangeFrame, usize), ClientError> {
        loop {
            match self.framer.advance(&self.inbuf) {
                Ok(Some(_)) => {
                    self.framer.reset();
                    return match decode_range(&self.inbuf) {
                        Ok(Some(f)) => Ok(f),
                        Ok(None) => Err(err(&self.ep, "a reply the decoder found cut short")),
                        Err(e) => Err(err(&self.ep, e)),
                    };
                }
                Ok(None) => {}
                Err(e) => {
                    self.framer.reset();
                    self.inbuf.clear();
                    let why = format!("refused a reply: {e}");
                    self.broken = Some(format!("the connection is out of step ({why})"));
                    return Err(err(&self.ep, why));
                }
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

    /// The next reply's top level. The outer error is the connection's
    /// (it is out of step or gone); the inner one is the server's reply.
    async fn top(&mut self) -> Result<Result<Top, ClientError>, ClientError> {
        let (frame, len) = self.frame().await?;
        let top = match frame {
            RangeFrame::Integer(i) => Ok(Top::Int(i)),
            RangeFrame::Array(a) => Ok(Top::Array(a.len())),
            RangeFrame::Null => Ok(Top::Nil),
            RangeFrame::SimpleString(_) | RangeFrame::BulkString(_) => Ok(Top::Text),
            RangeFrame::Error((from, to)) => Err(err(
                &self.ep,
                String::from_utf8_lossy(&self.inbuf[from..to]),
            )),
        };
        self.inbuf.advance(len);
        Ok(top)
    }

    /// Sends `cmds` in one write and reads every reply before reporting
    /// the first error, so the next command does not receive leftovers.
    async fn round_trip(&mut self, cmds: &[&::redis::Cmd]) -> Result<Vec<Top>, ClientError> {
        self.send(cmds).await?;
        let mut replies = Vec::with_capacity(cmds.len());
        for _ in cmds {
            replies.push(self.top().await?);
        }
        replies.into_iter().collect()
    }

    /// One command, its whole reply as a value.
    async fn call(&mut self, cmd: &::redis::Cmd) -> Result<::redis::Value, ClientError> {
        self.send(&[cmd]).await?;
        let (_, len) = self.frame().await?;
        let v = ::redis::parse_redis_value(&self.inbuf[..len]);
        self.inbuf.advance(len);
        v.and_then(|v| v.extract_error())
            .map_err(|e| err(&self.ep, e))
    }

    /// A digest of every key and its value, keys in order, with the number
    /// of keys: equal for equal data (see [`RedisConn::values_bytes`]).
    pub async fn digest(&mut self) -> Result<(u64, String), ClientError> {
        Ok(digest_of(self.entries().await?))
    }

    /// Every key of this server with its value as bytes that are equal
    /// for equal values, keys in order. On a Redis Cluster replica the
    /// reads are allowed first (`READONLY`): they would be redirected to
    /// the shard's primary otherwise.
    pub async fn entries(&mut self) -> Result<Vec<(Vec<u8>, Vec<u8>)>, ClientError> {
        if cluster_enabled(&self.cmd(&["INFO", "cluster"]).await?) {
            self.cmd(&["READONLY"]).await?;
        }
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut cursor = 0u64;
        loop {
            let mut c = ::redis::cmd("SCAN");
            c.arg(cursor).arg("COUNT").arg(1000);
            let v = self.call(&c).await?;
            let (next, batch): (u64, Vec<Vec<u8>>) =
                ::redis::from_redis_value(v).map_err(|e| err(&self.ep, e))?;
            keys.extend(batch);
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        keys.sort();
        keys.dedup();
        let mut out = Vec::with_capacity(keys.len());
        for batch in keys.chunks(DIGEST_BATCH) {
            out.extend(batch.iter().cloned().zip(self.values_bytes(batch).await?));
        }
        Ok(out)
    }

    /// The values of `keys` as bytes that are equal for equal values, in
    /// one round trip (and one more per key that is not a hash): a hash's
    /// fields sorted (`DUMP` of a hash in a hashtable writes the fields in
    /// the table's order, which differs between a primary that grew it
    /// and a replica that loaded it), the serialized value (`DUMP`) of
    /// the other types, whose order is their content's.
    async fn values_bytes(&mut self, keys: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, ClientError> {
        let cmds: Vec<::redis::Cmd> = keys
            .iter()
            .map(|k| {
                let mut c = ::redis::cmd("HGETALL");
                c.arg(k.as_slice());
                c
            })
            .collect();
        self.send(&cmds.iter().collect::<Vec<_>>()).await?;
        let mut replies = Vec::with_capacity(keys.len());
        for _ in keys {
            let (_, len) = self.frame().await?;
            let v = ::redis::parse_redis_value(&self.inbuf[..len]);
            self.inbuf.advance(len);
            // WRONGTYPE: not a hash, dumped below.
            replies.push(v.and_then(|v| v.extract_error()).ok());
        }
        let mut out = Vec::with_capacity(keys.len());
        for (k, reply) in keys.iter().zip(replies) {
            out.push(match reply {
                Some(v) => {
                    let flat: Vec<Vec<u8>> =
                        ::redis::from_redis_value(v).map_err(|e| err(&self.ep, e))?;
                    sorted_hash(&flat)
                }
                None => {
                    let mut c = ::redis::cmd("DUMP");
                    c.arg(k.as_slice());
                    let v = self.call(&c).await?;
                    let dump: Option<Vec<u8>> =
                        ::redis::from_redis_value(v).map_err(|e| err(&self.ep, e))?;
                    dump.unwrap_or_default()
                }
            });
        }
        Ok(out)
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
            None => self.round_trip(&[&hset]).await.map(drop),
            Some((zkey, score)) => {
                let mut zadd = ::redis::cmd("ZADD");
                zadd.arg(zkey).arg(score).arg(key);
                self.round_trip(&[&hset, &zadd]).await.map(drop)
            }
        }
    }

    /// `HGETALL key`: number of fields returned (0 when the key is missing).
    pub(crate) async fn hgetall_len(&mut self, key: &str) -> Result<usize, ClientError> {
        let mut c = ::redis::cmd("HGETALL");
        c.arg(key);
        self.send(&[&c]).await?;
        Ok(match self.top().await?? {
            Top::Array(n) => n / 2,
            Top::Int(_) | Top::Nil | Top::Text => 0,
        })
    }

    /// `EXISTS key` then `HSET key field value` in one pipeline; reports
    /// whether the key existed (an update of a missing record is an error).
    pub(crate) async fn hset_existing(
        &mut self,
        key: &str,
        field: &str,
        value: &str,
    ) -> Result<bool, ClientError> {
        let mut exists = ::redis::cmd("EXISTS");
        exists.arg(key);
        let mut hset = ::redis::cmd("HSET");
        hset.arg(key).arg(field).arg(value);
        match self.round_trip(&[&exists, &hset]).await?[0] {
            Top::Int(n) => Ok(n == 1),
            other => Err(err(&self.ep, format!("EXISTS replied {}", other.words()))),
        }
    }

    /// `ZRANGEBYSCORE zkey min +inf LIMIT 0 count`.
    pub(crate) async fn zrange_from(
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
    pub(crate) async fn hset_many<'a, P>(
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

/// Whether `INFO cluster` says the server runs in cluster mode.
pub(crate) fn cluster_enabled(info: &str) -> bool {
    info.lines().any(|l| l.trim() == "cluster_enabled:1")
}

/// The number of keys and a sha256 of every key and value, in key order:
/// equal for equal data, whichever servers held it.
pub(crate) fn digest_of(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> (u64, String) {
    use sha2::Digest;
    entries.sort();
    let mut h = sha2::Sha256::new();
    for (k, value) in &entries {
        h.update((k.len() as u64).to_le_bytes());
        h.update(k);
        h.update((value.len() as u64).to_le_bytes());
        h.update(value);
    }
    (entries.len() as u64, hex::encode(h.finalize()))
}

/// Keys whose values one round trip of the digest asks for.
const DIGEST_BATCH: usize = 500;

/// A hash's `HGETALL` reply as bytes, its fields in order.
fn sorted_hash(flat: &[Vec<u8>]) -> Vec<u8> {
    let mut pairs: Vec<&[Vec<u8>]> = flat.chunks(2).collect();
    pairs.sort();
    let mut out = b"hash".to_vec();
    for part in pairs.into_iter().flatten() {
        out.extend((part.len() as u64).to_le_bytes());
        out.extend(part);
    }
    out
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
        Value::Array(items) | Value::Set(items) => {
            items.iter().map(value_text).collect::<Vec<_>>().join(" ")
        }
        Value::Double(d) => d.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::ServerError(e) => format!("error: {}", e.details().unwrap_or("")),
        _ => "a reply of another type".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_digests_the_same_whatever_the_order_of_its_fields() {
        let f = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let a = sorted_hash(&f(&["f1", "x", "f0", "y"]));
        assert_eq!(a, sorted_hash(&f(&["f0", "y", "f1", "x"])));
        assert_ne!(a, sorted_hash(&f(&["f0", "x", "f1", "y"])));
    }
}
