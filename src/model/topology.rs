//! A cell's topology: one server (`standalone`), a replica set, or a
//! sharded cluster; its members, each to get a sandbox of its own, and how
//! the plan splits the server's CPUs between them (`plan::members`).

/// How many servers a cell runs, and in which roles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// One server: every cell before topologies.
    #[default]
    Standalone,
    /// A primary and `members - 1` secondaries.
    ReplicaSet { members: u32 },
    /// `shards` replica sets of `replicas_per_shard` members, config
    /// servers and routers (mongos); the data spread by `key`.
    Sharded {
        shards: u32,
        replicas_per_shard: u32,
        config_servers: u32,
        routers: u32,
        #[serde(default)]
        key: ShardKeyKind,
    },
}

/// How a sharded cluster spreads the records over its shards: by a hash
/// of their key (even writes), or by ranges of it. Engines say what each
/// means for them (`sharding.shard_keys`); Redis Cluster always hashes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardKeyKind {
    #[default]
    Hashed,
    Ranged,
}

impl ShardKeyKind {
    pub fn name(self) -> &'static str {
        match self {
            ShardKeyKind::Hashed => "hashed",
            ShardKeyKind::Ranged => "ranged",
        }
    }
}

/// What a member does in its topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The standalone server, or a replica set's primary.
    Primary,
    Secondary,
    ConfigServer,
    /// A shard's first member (its primary).
    ShardPrimary,
    ShardSecondary,
    Router,
}

impl Role {
    /// Every role's name, as `name` gives it.
    pub(crate) const NAMES: &'static [&'static str] = &[
        "primary",
        "secondary",
        "config_server",
        "shard_primary",
        "shard_secondary",
        "router",
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Secondary => "secondary",
            Role::ConfigServer => "config_server",
            Role::ShardPrimary => "shard_primary",
            Role::ShardSecondary => "shard_secondary",
            Role::Router => "router",
        }
    }
}

/// One server of a topology.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Member {
    /// `m0`, `shard1-m0`, `cfg0`, `router0`: unique in the cell.
    pub name: String,
    pub role: Role,
    /// The shard a shard member belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
}

/// The most members one cell may have.
pub(crate) const MAX_MEMBERS: u32 = 64;

impl Topology {
    /// Its members in start order: config servers, shards, routers; a
    /// replica set's primary first.
    pub fn members(&self) -> Vec<Member> {
        let m = |name: String, role: Role, shard: Option<u32>| Member { name, role, shard };
        match *self {
            Topology::Standalone => vec![m("m0".into(), Role::Primary, None)],
            Topology::ReplicaSet { members } => (0..members)
                .map(|i| {
                    let role = if i == 0 {
                        Role::Primary
                    } else {
                        Role::Secondary
                    };
                    m(format!("m{i}"), role, None)
                })
                .collect(),
            Topology::Sharded {
                shards,
                replicas_per_shard,
                config_servers,
                routers,
                ..
            } => {
                let mut out: Vec<Member> = (0..config_servers)
                    .map(|i| m(format!("cfg{i}"), Role::ConfigServer, None))
                    .collect();
                for s in 0..shards {
                    for r in 0..replicas_per_shard {
                        let role = if r == 0 {
                            Role::ShardPrimary
                        } else {
                            Role::ShardSecondary
                        };
                        out.push(m(format!("shard{s}-m{r}"), role, Some(s)));
                    }
                }
                out.extend((0..routers).map(|i| m(format!("router{i}"), Role::Router, None)));
                out
            }
        }
    }

    /// `standalone`, `replica_set:3`, `sharded:2x1+1cfg+1router` (with
    /// `+ranged` when the key is ranged): in snapshot keys and cell ids.
    pub fn key(&self) -> String {
        match *self {
            Topology::Standalone => "standalone".into(),
            Topology::ReplicaSet { members } => format!("replica_set:{members}"),
            Topology::Sharded {
                shards,
                replicas_per_shard,
                config_servers,
                routers,
                key,
            } => {
                let ranged = match key {
                    ShardKeyKind::Hashed => "",
                    ShardKeyKind::Ranged => "+ranged",
                };
                format!(
                    "sharded:{shards}x{replicas_per_shard}+{config_servers}cfg+{routers}router{ranged}"
                )
            }
        }
    }

    /// How many shards, routers and config servers it has (0 for a
    /// replica set or one server).
    pub(crate) fn sharded_counts(&self) -> (u32, u32, u32) {
        match *self {
            Topology::Sharded {
                shards,
                routers,
                config_servers,
                ..
            } => (shards, routers, config_servers),
            _ => (0, 0, 0),
        }
    }

    /// The kind's name as engines declare it (`replica_set`).
    pub fn kind(&self) -> &'static str {
        match self {
            Topology::Standalone => "standalone",
            Topology::ReplicaSet { .. } => "replica_set",
            Topology::Sharded { .. } => "sharded",
        }
    }

    /// A shape that cannot run, in words.
    pub(crate) fn problem(&self) -> Option<String> {
        let n = self.members().len() as u32;
        match *self {
            Topology::ReplicaSet { members } if members < 2 => Some(format!(
                "a replica set of {members} member(s): give at least 2, or `standalone`"
            )),
            Topology::Sharded {
                shards,
                replicas_per_shard,
                ..
            } if shards == 0 || replicas_per_shard == 0 => {
                Some("a sharded cluster needs at least 1 shard and 1 member per shard".into())
            }
            _ if n > MAX_MEMBERS => Some(format!("{n} members in one cell: at most {MAX_MEMBERS}")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: Topology) -> Vec<String> {
        t.members().into_iter().map(|m| m.name).collect()
    }

    #[test]
    fn members_come_in_start_order_with_their_roles() {
        assert_eq!(names(Topology::Standalone), ["m0"]);
        let rs = Topology::ReplicaSet { members: 3 };
        assert_eq!(names(rs), ["m0", "m1", "m2"]);
        assert_eq!(rs.members()[0].role, Role::Primary);
        assert_eq!(rs.members()[2].role, Role::Secondary);
        let sh = Topology::Sharded {
            shards: 2,
            replicas_per_shard: 2,
            config_servers: 1,
            routers: 1,
            key: ShardKeyKind::Hashed,
        };
        assert_eq!(
            names(sh),
            [
                "cfg0",
                "shard0-m0",
                "shard0-m1",
                "shard1-m0",
                "shard1-m1",
                "router0"
            ]
        );
        assert_eq!(sh.members()[3].shard, Some(1));
        assert_eq!(sh.key(), "sharded:2x2+1cfg+1router");
        assert_eq!(rs.key(), "replica_set:3");
    }

    #[test]
    fn impossible_shapes_are_named() {
        assert!(
            Topology::ReplicaSet { members: 1 }
                .problem()
                .unwrap()
                .contains("at least 2")
        );
        let no_shard = Topology::Sharded {
            shards: 0,
            replicas_per_shard: 1,
            config_servers: 1,
            routers: 1,
            key: ShardKeyKind::Hashed,
        };
        assert!(no_shard.problem().unwrap().contains("1 shard"));
        // Whether routers are needed is the engine's to say (plan).
        let no_router = Topology::Sharded {
            shards: 3,
            replicas_per_shard: 1,
            config_servers: 0,
            routers: 0,
            key: ShardKeyKind::Ranged,
        };
        assert_eq!(no_router.key(), "sharded:3x1+0cfg+0router+ranged");
        assert_eq!(no_router.problem(), None);
        assert!(
            Topology::ReplicaSet { members: 65 }
                .problem()
                .unwrap()
                .contains("at most 64")
        );
        assert_eq!(Topology::ReplicaSet { members: 3 }.problem(), None);
    }
}
