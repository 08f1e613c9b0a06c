//! A Redis Cluster as one store: the slot map read from any node
//! (`CLUSTER NODES`), each key sent to the primary that holds its hash
//! slot (CRC16 of the key, or of its `{hash tag}`, modulo 16384), one
//! connection per primary, and the map read again when a node answers
//! `MOVED` (the one retry a cluster client owes a command).

use super::redis::{RedisConn, cluster_enabled, digest_of};
use super::{ClientError, Endpoint};

/// How many hash slots a Redis Cluster has.
pub(crate) const SLOTS: u16 = 16384;

/// CRC16/XMODEM (polynomial 0x1021, initial 0), as Redis Cluster hashes
/// keys.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The hash slot of `key`: of its hash tag when it has a non-empty one
/// (`{user}42` hashes `user`), of the whole key otherwise.
pub fn slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(key)) % SLOTS
}

/// The slots `shard` of `shards` serves when a cluster is formed: an
/// even share, in order (5461 + 5461 + 5462 for three).
pub(crate) fn shard_slots(shard: u32, shards: u32) -> std::ops::Range<u16> {
    let at = |s: u32| (s as u64 * SLOTS as u64 / shards.max(1) as u64) as u16;
    at(shard)..at(shard + 1)
}

/// Whether the server at `ep` runs in cluster mode.
pub(crate) async fn is_cluster(ep: &Endpoint) -> Result<bool, ClientError> {
    let mut c = RedisConn::connect(ep).await?;
    Ok(cluster_enabled(&c.cmd(&["INFO", "cluster"]).await?))
}

/// A primary and the slot ranges it serves, from one `CLUSTER NODES` line.
#[derive(Debug, Clone, PartialEq)]
struct Primary {
    port: u16,
    host: String,
    slots: Vec<std::ops::RangeInclusive<u16>>,
}

/// The primaries of a `CLUSTER NODES` reply that serve slots. A line is
/// `id host:port@cport[,hostname] flags master ping pong epoch link slot...`;
/// a slot is `N` or `N-M` (`[N->-id]` marks a migration, which keeps its
/// slot where it is).
fn primaries(nodes: &str) -> Vec<Primary> {
    let mut out = Vec::new();
    for line in nodes.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || !f[2].split(',').any(|x| x == "master") || f[2].contains("fail") {
            continue;
        }
        let addr = f[1].split(['@', ',']).next().unwrap_or_default();
        let Some((host, port)) = addr.rsplit_once(':') else {
            continue;
        };
        let Ok(port) = port.parse() else { continue };
        let slots: Vec<_> = f[8..]
            .iter()
            .filter(|s| !s.starts_with('['))
            .filter_map(|s| match s.split_once('-') {
                Some((a, b)) => Some(a.parse().ok()?..=b.parse().ok()?),
                None => s.parse().ok().map(|n| n..=n),
            })
            .collect();
        if !slots.is_empty() {
            out.push(Primary {
                port,
                host: host.to_string(),
                slots,
            });
        }
    }
    out
}

/// Run `$call` on the connection of the node serving `$key`; after a
/// `MOVED` or `ASK`, read the map again and run it once more.
macro_rules! loop_moved {
    ($self:ident, $key:expr, |$c:ident| $call:expr) => {{
        let mut attempt = 0;
        loop {
            let i = $self.node_of($key.as_bytes());
            let $c = $self.conn(i).await?;
            match $call.await {
                Err(e) if attempt == 0 && moved(&e) => {
                    attempt += 1;
                    $self.refresh().await?;
                }
                r => break r,
            }
        }
    }};
}

/// A connection to every primary of a cluster, and which serves each slot.
pub(crate) struct RedisCluster {
    seed: Endpoint,
    /// The primaries' endpoints (the seed's credentials).
    nodes: Vec<Endpoint>,
    /// One lazily opened connection per node.
    conns: Vec<Option<RedisConn>>,
    /// Slot -> index into `nodes`.
    owner: Vec<u16>,
}

/// Whether a server's reply redirects the command to another node.
fn moved(e: &ClientError) -> bool {
    matches!(e, ClientError::Redis { msg, .. } if msg.contains("MOVED") || msg.contains("ASK "))
}

impl RedisCluster {
    /// Reads the slot map from the node at `seed`; every slot must be
    /// served.
    pub async fn connect(seed: &Endpoint) -> Result<RedisCluster, ClientError> {
        let mut c = RedisCluster {
            seed: seed.clone(),
            nodes: Vec::new(),
            conns: Vec::new(),
            owner: Vec::new(),
        };
        c.refresh().await?;
        Ok(c)
    }

    /// Reads the slot map again (after `MOVED`), keeping the connections
    /// to primaries that still are.
    pub(crate) async fn refresh(&mut self) -> Result<(), ClientError> {
        let mut seed = RedisConn::connect(&self.seed).await?;
        let text = seed.cmd(&["CLUSTER", "NODES"]).await?;
        let found = primaries(&text);
        let mut owner = vec![u16::MAX; SLOTS as usize];
        let mut nodes = Vec::new();
        let mut conns = Vec::new();
        for (i, p) in found.iter().enumerate() {
            let ep = Endpoint {
                host: if p.host.is_empty() {
                    self.seed.host.clone()
                } else {
                    p.host.clone()
                },
                port: p.port,
                ..self.seed.clone()
            };
            let kept = self
                .nodes
                .iter()
                .position(|n| n.port == ep.port && n.host == ep.host)
                .and_then(|j| self.conns.get_mut(j)?.take());
            nodes.push(ep);
            conns.push(kept);
            for r in &p.slots {
                for s in r.clone() {
                    if let Some(o) = owner.get_mut(s as usize) {
                        *o = i as u16;
                    }
                }
            }
        }
        if let Some(free) = owner.iter().position(|o| *o == u16::MAX) {
            return Err(ClientError::Redis {
                addr: self.seed.addr(),
                msg: format!(
                    "the cluster serves no node for hash slot {free} (CLUSTER NODES): is it formed?"
                ),
            });
        }
        (self.nodes, self.conns, self.owner) = (nodes, conns, owner);
        Ok(())
    }

    /// The primaries, as endpoints.
    pub(crate) fn primaries(&self) -> &[Endpoint] {
        &self.nodes
    }

    /// The index of the node serving `key`.
    pub(crate) fn node_of(&self, key: &[u8]) -> usize {
        self.owner[slot(key) as usize] as usize
    }

    /// The connection to node `i`, opened on first use.
    pub async fn conn(&mut self, i: usize) -> Result<&mut RedisConn, ClientError> {
        if self.conns[i].is_none() {
            self.conns[i] = Some(RedisConn::connect(&self.nodes[i]).await?);
        }
        Ok(self.conns[i].as_mut().expect("opened above"))
    }

    /// `HGETALL key`: number of fields returned.
    pub(crate) async fn hgetall_len(&mut self, key: &str) -> Result<usize, ClientError> {
        loop_moved!(self, key, |c| c.hgetall_len(key))
    }

    /// `EXISTS key` and `HSET key field value` on the key's node.
    pub(crate) async fn hset_existing(
        &mut self,
        key: &str,
        field: &str,
        value: &str,
    ) -> Result<bool, ClientError> {
        loop_moved!(self, key, |c| c.hset_existing(key, field, value))
    }

    /// `HSET key f1 v1 ...` on the key's node.
    pub async fn hset(&mut self, key: &str, pairs: &[(&str, &str)]) -> Result<(), ClientError> {
        loop_moved!(self, key, |c| c.hset(key, pairs.iter().copied(), None))
    }

    /// `ZADD zkey score1 member1 score2 member2 ...` on the set's node.
    pub(crate) async fn zadd(
        &mut self,
        zkey: &str,
        members: &[(f64, &str)],
    ) -> Result<(), ClientError> {
        let mut argv = vec!["ZADD".to_string(), zkey.to_string()];
        for (score, m) in members {
            argv.push(score.to_string());
            argv.push(m.to_string());
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        loop_moved!(self, zkey, |c| c.cmd(&argv)).map(drop)
    }

    /// `ZRANGEBYSCORE zkey min +inf LIMIT 0 count` on the set's node.
    pub(crate) async fn zrange_from(
        &mut self,
        zkey: &str,
        min: f64,
        count: usize,
    ) -> Result<Vec<String>, ClientError> {
        loop_moved!(self, zkey, |c| c.zrange_from(zkey, min, count))
    }

    /// `HSET` of every record, one pipeline per node holding some of
    /// them; the whole batch again once after a redirect (HSET sets the
    /// same values twice).
    pub(crate) async fn hset_many<'a>(
        &mut self,
        records: &[(&'a str, Vec<(&'a str, &'a str)>)],
    ) -> Result<(), ClientError> {
        for attempt in 0..2 {
            match self.hset_each_node(records).await {
                Err(e) if attempt == 0 && moved(&e) => self.refresh().await?,
                r => return r,
            }
        }
        unreachable!("the second attempt returns")
    }

    async fn hset_each_node<'a>(
        &mut self,
        records: &[(&'a str, Vec<(&'a str, &'a str)>)],
    ) -> Result<(), ClientError> {
        // Each key hashed once, not once per node.
        let owners: Vec<usize> = records
            .iter()
            .map(|(k, _)| self.node_of(k.as_bytes()))
            .collect();
        for i in 0..self.nodes.len() {
            let mine: Vec<_> = records
                .iter()
                .zip(&owners)
                .filter(|(_, owner)| **owner == i)
                .map(|((k, pairs), _)| (*k, pairs.iter().copied(), None))
                .collect();
            if !mine.is_empty() {
                self.conn(i).await?.hset_many(mine.into_iter()).await?;
            }
        }
        Ok(())
    }

    /// `FLUSHDB` on every primary.
    pub async fn flush(&mut self) -> Result<(), ClientError> {
        for i in 0..self.nodes.len() {
            self.conn(i).await?.cmd(&["FLUSHDB"]).await?;
        }
        Ok(())
    }

    /// The keys on every primary (`DBSIZE`), summed.
    pub(crate) async fn dbsize(&mut self) -> Result<u64, ClientError> {
        let mut n = 0;
        for i in 0..self.nodes.len() {
            n += self
                .conn(i)
                .await?
                .cmd(&["DBSIZE"])
                .await?
                .trim()
                .parse()
                .unwrap_or(0);
        }
        Ok(n)
    }

    /// The digest of every key of every primary, as one server holding
    /// them all would give ([`RedisConn::digest`]).
    pub async fn digest(&mut self) -> Result<(u64, String), ClientError> {
        let mut all = Vec::new();
        for i in 0..self.nodes.len() {
            all.extend(self.conn(i).await?.entries().await?);
        }
        Ok(digest_of(all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_hash_to_the_slots_redis_gives_them() {
        // The check value of CRC16/XMODEM.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        // `CLUSTER KEYSLOT foo` / `bar` / `user1` on Redis 7.0.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        // A hash tag hashes alone; an empty one does not count.
        assert_eq!(slot(b"{foo}.x"), slot(b"foo"));
        assert_eq!(slot(b"{}foo"), crc16(b"{}foo") % SLOTS);
    }

    #[test]
    fn three_shards_share_every_slot_once() {
        let r: Vec<_> = (0..3).map(|s| shard_slots(s, 3)).collect();
        assert_eq!(r, [0..5461, 5461..10922, 10922..16384]);
    }

    #[test]
    fn the_slot_map_comes_from_the_serving_primaries() {
        let nodes = "\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7001@17001 master - 0 1 2 connected 5461-10921 [5000->-a1]
c3 127.0.0.1:7002@17002,host master - 0 1 3 connected 10922 10923-16383
d4 127.0.0.1:7003@17003 slave a1 0 1 1 connected
e5 127.0.0.1:7004@17004 master,fail - 0 1 4 disconnected
f6 127.0.0.1:7005@17005 master - 0 1 5 connected
";
        let p = primaries(nodes);
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].port, 7000);
        assert_eq!(p[1].slots, [5461..=10921]);
        assert_eq!(p[2].slots, [10922..=10922, 10923..=16383]);
        assert_eq!(p[2].host, "127.0.0.1");
    }
}
