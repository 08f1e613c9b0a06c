//! `topology:` in an environment or a matrix entry: `standalone` (the
//! default), `{replica_set: {members: 3}}`, or `{sharded: {shards: 2,
//! replicas_per_shard: 1, config_servers: 1, routers: 1, key: hashed}}`
//! (`key: ranged` spreads the records by ranges of their key).

use super::de::{Fields, FromNode, word};
use super::diag::{Cx, join};
use super::yaml::{Node, NodeKind};
use crate::model::{ShardKeyKind, Topology};

impl FromNode for Topology {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        if !matches!(node.kind, NodeKind::Map(_)) {
            word(node, cx, path, &["standalone"])?;
            return Some(Topology::Standalone);
        }
        let f = Fields::open(node, cx, path, &["replica_set", "sharded"])?;
        let t = match (f.get("replica_set"), f.get("sharded")) {
            (Some(n), None) => {
                let p = join(path, "replica_set");
                let r = Fields::open(n, cx, &p, &["members"])?;
                Topology::ReplicaSet {
                    members: r.req(cx, "members")?,
                }
            }
            (None, Some(n)) => {
                let p = join(path, "sharded");
                let s = Fields::open(
                    n,
                    cx,
                    &p,
                    &[
                        "shards",
                        "replicas_per_shard",
                        "config_servers",
                        "routers",
                        "key",
                    ],
                )?;
                Topology::Sharded {
                    shards: s.req(cx, "shards")?,
                    replicas_per_shard: s.or(cx, "replicas_per_shard", 1),
                    config_servers: s.or(cx, "config_servers", 1),
                    routers: s.or(cx, "routers", 1),
                    key: match s.get("key") {
                        None => ShardKeyKind::Hashed,
                        Some(k) => match word(k, cx, &join(&p, "key"), &["hashed", "ranged"])? {
                            "ranged" => ShardKeyKind::Ranged,
                            _ => ShardKeyKind::Hashed,
                        },
                    },
                }
            }
            // An unknown field was reported already, with the known ones.
            (None, None) if matches!(&node.kind, NodeKind::Map(m) if !m.is_empty()) => return None,
            _ => {
                cx.error(
                    f.pos,
                    path,
                    "give one of `replica_set` or `sharded` (or the word `standalone`)",
                    Some("e.g. `topology: {replica_set: {members: 3}}`".into()),
                );
                return None;
            }
        };
        if let Some(problem) = t.problem() {
            cx.error(f.pos, path, problem, None);
            return None;
        }
        Some(t)
    }
}
