//! A cell's members: the topology's servers, each with its CPUs (a share
//! of the server's, or all of them when the environment lets them share).

use super::Entry;
use crate::model::{Role, Topology};
use crate::spec::Scenario;
use crate::spec::diag::Diagnostics;
use crate::units::CpuSet;

/// One member of a cell's topology, with its CPUs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PlannedMember {
    pub name: String,
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
    pub cpus: CpuSet,
    /// Its own config files when they differ from the cell's (which are
    /// the first member's): a template that uses `member`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<crate::render::RenderedConfig>,
}

impl PlannedMember {
    /// What its templates see as `member`, as member `index` of `count`,
    /// in a cluster whose engine does (`sets`) or does not make its config
    /// servers and shards replica sets.
    pub(crate) fn context(
        &self,
        index: usize,
        count: usize,
        sets: bool,
    ) -> crate::render::MemberContext {
        crate::render::MemberContext {
            name: self.name.clone(),
            role: self.role.name().to_string(),
            index,
            count,
            shard: self.shard,
            set: self.set_name(count, sets).unwrap_or_default(),
        }
    }

    /// The replica set it belongs to: every member of a replica set to
    /// `benchcage`; in a cluster whose engine makes sets of them (MongoDB),
    /// the config servers to `cfg` and each shard's members to `shard<N>`.
    pub(crate) fn set_name(&self, count: usize, sets: bool) -> Option<String> {
        match self.role {
            Role::Primary | Role::Secondary => (count > 1).then(|| "benchcage".to_string()),
            Role::ConfigServer if sets => Some("cfg".into()),
            Role::ShardPrimary | Role::ShardSecondary if sets => {
                Some(format!("shard{}", self.shard.unwrap_or(0)))
            }
            _ => None,
        }
    }
}

/// The entry's topology: its own, else its environment's.
pub(super) fn topology_of(e: &Entry) -> Topology {
    e.er.topology.unwrap_or(e.ep.spec.topology)
}

/// The members of the entry's cells with their CPUs; a topology the
/// engine does not declare, or more members than CPUs without
/// `share_cpus`, is refused. Shared CPUs are a deviation.
pub(super) fn plan(
    e: &Entry,
    s: &Scenario,
    deviations: &mut Vec<String>,
    diags: &mut Diagnostics,
) -> Option<Vec<PlannedMember>> {
    let topology = topology_of(e);
    let members = topology.members();
    let field =
        e.er.topology
            .map(|_| format!("{}.topology", e.er.field))
            .unwrap_or_else(|| "topology".into());
    if topology != Topology::Standalone
        && !e.engine.topologies.contains(&topology.kind().to_string())
    {
        let known = if e.engine.topologies.is_empty() {
            "standalone only".to_string()
        } else {
            format!("standalone, {}", e.engine.topologies.join(", "))
        };
        let msg = format!(
            "{} cannot run as {}: it declares {known}",
            e.label,
            topology.key()
        );
        diags.push(diag(e, s, &field, msg, None));
        return None;
    }
    if let Some(msg) = sharding_problem(e, topology) {
        diags.push(diag(e, s, &field, msg, None));
        return None;
    }
    let server = &e.ep.env.server_cpus;
    let share = e.ep.env.share_cpus;
    let cpus = match assign_cpus(server, &members, share, &e.ep.spec.member_cpus) {
        Ok(c) => c,
        Err(CpuProblem::Short(short)) => {
            let hint = "give the server at least one CPU per member, or set `share_cpus: true` in the environment (plan then lists it as a deviation)";
            diags.push(diag(
                e,
                s,
                &field,
                format!("{}: {short}", topology.key()),
                Some(hint.into()),
            ));
            return None;
        }
        Err(CpuProblem::List { field, msg, hint }) => {
            let msg = format!("{} {}: {msg}", e.label, topology.key());
            diags.push(e.ep.spec.origin.diag(&field, msg, Some(hint)));
            return None;
        }
    };
    let shared = cpus
        .iter()
        .enumerate()
        .any(|(i, a)| cpus[i + 1..].iter().any(|b| !a.intersection(b).is_empty()));
    if shared {
        deviations.push(format!(
            "{} {}: the {} members share the server's CPUs {server} (share_cpus)",
            e.ep.name,
            topology.key(),
            members.len()
        ));
    }
    Some(
        members
            .into_iter()
            .zip(cpus)
            .map(|(m, cpus)| PlannedMember {
                name: m.name,
                role: m.role,
                shard: m.shard,
                cpus,
                configs: Vec::new(),
            })
            .collect(),
    )
}

/// A sharded cluster whose routers or config servers the engine does not
/// have (Redis Cluster has neither), or needs and is not given.
fn sharding_problem(e: &Entry, topology: Topology) -> Option<String> {
    let (_, routers, config_servers) = topology.sharded_counts();
    let spec = e.engine.sharding.as_ref()?;
    if !matches!(topology, Topology::Sharded { .. }) {
        return None;
    }
    let part = |has: bool, n: u32, what: &str, field: &str| match (has, n) {
        (false, 1..) => Some(format!(
            "{}'s sharded cluster has no {what}: give `{field}: 0`",
            e.label
        )),
        (true, 0) => Some(format!(
            "{}'s sharded cluster needs at least one {what}: give `{field}: 1` or more",
            e.label
        )),
        _ => None,
    };
    let key = match topology {
        Topology::Sharded { key, .. } => key,
        _ => crate::model::ShardKeyKind::Hashed,
    };
    let key_problem = || {
        let listed = spec.shard_keys.contains_key(key.name());
        let fine =
            listed || (key == crate::model::ShardKeyKind::Hashed && spec.shard_keys.is_empty());
        (!fine).then(|| {
            let known: Vec<&str> = spec.shard_keys.keys().map(String::as_str).collect();
            let known = if known.is_empty() {
                "hashed only".to_string()
            } else {
                known.join(", ")
            };
            format!(
                "{}'s sharded cluster cannot spread records by a {} key: it knows {known}",
                e.label,
                key.name()
            )
        })
    };
    part(spec.routers, routers, "router", "routers")
        .or_else(|| {
            part(
                spec.config_servers,
                config_servers,
                "config server",
                "config_servers",
            )
        })
        .or_else(key_problem)
}

/// A diagnostic at the matrix entry's topology, else the environment's.
fn diag(
    e: &Entry,
    s: &Scenario,
    field: &str,
    msg: String,
    hint: Option<String>,
) -> crate::spec::diag::Diagnostic {
    if e.er.topology.is_some() {
        s.origin.diag(field, msg, hint)
    } else {
        e.ep.spec.origin.diag(field, msg, hint)
    }
}

/// Why the members' CPUs could not be assigned: too few to split, or a
/// `member_cpus` list that does not fit (its field, why, what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CpuProblem {
    Short(CpuShortfall),
    List {
        field: String,
        msg: String,
        hint: String,
    },
}

/// The members' CPUs: those `lists` gives by role (one set per member of
/// the role, in start order, each among the server's), and the server's
/// CPUs left split evenly between the other members ([`split_cpus`]; all
/// of the server's when none are left and they may share). Listed sets
/// may overlap only when `share`.
pub(crate) fn assign_cpus(
    server: &CpuSet,
    members: &[crate::model::Member],
    share: bool,
    lists: &std::collections::BTreeMap<String, Vec<CpuSet>>,
) -> Result<Vec<CpuSet>, CpuProblem> {
    let list = |field: String, msg: String, hint: &str| CpuProblem::List {
        field,
        msg,
        hint: hint.to_string(),
    };
    let mut out: Vec<Option<CpuSet>> = vec![None; members.len()];
    for (role, sets) in lists {
        let field = format!("member_cpus.{role}");
        let of_role: Vec<usize> = (0..members.len())
            .filter(|&i| members[i].role.name() == role)
            .collect();
        if of_role.len() != sets.len() {
            let msg = format!(
                "{} CPU set(s) listed for its {} {role} member(s)",
                sets.len(),
                of_role.len()
            );
            return Err(list(
                field,
                msg,
                "list one CPU set per member of the role, in start order",
            ));
        }
        for (i, cpus) in of_role.into_iter().zip(sets) {
            if !cpus.is_subset(server) {
                let msg = format!(
                    "{}'s CPUs {cpus} are not all among the server's {server}",
                    members[i].name
                );
                return Err(list(
                    field,
                    msg,
                    "a member runs on the server's CPUs: list some of `server.cpus`",
                ));
            }
            if !share
                && let Some(j) = (0..members.len()).find(|&j| {
                    out[j]
                        .as_ref()
                        .is_some_and(|o| !o.intersection(cpus).is_empty())
                })
            {
                let msg = format!(
                    "{} and {} would share CPUs {}",
                    members[j].name,
                    members[i].name,
                    cpus.intersection(out[j].as_ref().unwrap_or(cpus))
                );
                return Err(list(
                    field,
                    msg,
                    "give each member CPUs of its own, or set `share_cpus: true` (plan then lists it as a deviation)",
                ));
            }
            out[i] = Some(cpus.clone());
        }
    }
    let taken: Vec<u32> = out.iter().flatten().flat_map(|c| c.iter()).collect();
    let free = CpuSet::new(server.iter().filter(|c| !taken.contains(c)));
    let rest = out.iter().filter(|c| c.is_none()).count();
    let mut split = if free.is_empty() && share {
        vec![server.clone(); rest]
    } else {
        split_cpus(&free, rest, share).map_err(CpuProblem::Short)?
    }
    .into_iter();
    Ok(out
        .into_iter()
        .map(|c| c.or_else(|| split.next()).unwrap_or_default())
        .collect())
}

/// Why the members' CPUs could not be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuShortfall {
    pub members: usize,
    pub cpus: usize,
}

impl std::fmt::Display for CpuShortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} members cannot each have CPUs of their own among the server's {} CPU(s)",
            self.members, self.cpus
        )
    }
}

/// The server's CPUs split evenly between `members`, in order (the first
/// members get one more when they do not divide). With `share` every
/// member gets all of them when there are too few; without, too few is
/// an error.
pub(crate) fn split_cpus(
    server: &CpuSet,
    members: usize,
    share: bool,
) -> Result<Vec<CpuSet>, CpuShortfall> {
    let cpus: Vec<u32> = server.iter().collect();
    if members == 0 {
        return Ok(Vec::new());
    }
    if cpus.len() < members {
        return if share {
            Ok(vec![server.clone(); members])
        } else {
            Err(CpuShortfall {
                members,
                cpus: cpus.len(),
            })
        };
    }
    let (each, extra) = (cpus.len() / members, cpus.len() % members);
    let mut out = Vec::with_capacity(members);
    let mut at = 0;
    for i in 0..members {
        let n = each + usize::from(i < extra);
        out.push(CpuSet::new(cpus[at..at + n].iter().copied()));
        at += n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_roles_get_their_cpus_and_the_other_members_split_the_rest() {
        let t = Topology::Sharded {
            shards: 2,
            replicas_per_shard: 1,
            config_servers: 1,
            routers: 2,
            key: crate::model::ShardKeyKind::Hashed,
        };
        let members = t.members();
        let server: CpuSet = "0-5".parse().unwrap();
        let set = |s: &str| -> CpuSet { s.parse().unwrap() };
        let mut lists = std::collections::BTreeMap::new();
        lists.insert("router".to_string(), vec![set("4"), set("5")]);
        lists.insert("config_server".to_string(), vec![set("3")]);
        let got: Vec<String> = assign_cpus(&server, &members, false, &lists)
            .unwrap()
            .iter()
            .map(|c| c.to_string())
            .collect();
        // cfg0, shard0-m0, shard1-m0, router0, router1.
        assert_eq!(got, ["3", "0-1", "2", "4", "5"]);
        // One set per member of the role.
        lists.insert("router".to_string(), vec![set("4")]);
        let e = assign_cpus(&server, &members, false, &lists).unwrap_err();
        assert!(
            matches!(&e, CpuProblem::List { field, msg, .. } if field == "member_cpus.router" && msg == "1 CPU set(s) listed for its 2 router member(s)"),
            "{e:?}"
        );
        // Among the server's, and apart unless they may share.
        lists.insert("router".to_string(), vec![set("4"), set("6")]);
        let e = assign_cpus(&server, &members, false, &lists).unwrap_err();
        assert!(
            matches!(&e, CpuProblem::List { msg, .. } if msg == "router1's CPUs 6 are not all among the server's 0-5"),
            "{e:?}"
        );
        lists.insert("router".to_string(), vec![set("3"), set("5")]);
        let e = assign_cpus(&server, &members, false, &lists).unwrap_err();
        assert!(
            matches!(&e, CpuProblem::List { msg, .. } if msg == "cfg0 and router0 would share CPUs 3"),
            "{e:?}"
        );
        let shared = assign_cpus(&server, &members, true, &lists).unwrap();
        assert_eq!(shared[0], shared[3]);
        // Every CPU listed: the others may only share the server's.
        lists.insert("router".to_string(), vec![set("0-2"), set("3-5")]);
        lists.remove("config_server");
        assert!(matches!(
            assign_cpus(&server, &members, false, &lists),
            Err(CpuProblem::Short(_))
        ));
        let all = assign_cpus(&server, &members, true, &lists).unwrap();
        assert_eq!(all[0], server);
    }

    #[test]
    fn members_belong_to_the_replica_sets_their_roles_make() {
        let member = |role, shard| PlannedMember {
            name: "x".into(),
            role,
            shard,
            cpus: "1".parse().unwrap(),
            configs: Vec::new(),
        };
        let primary = member(Role::Primary, None);
        assert_eq!(primary.set_name(1, false), None, "one server");
        assert_eq!(primary.set_name(3, false).as_deref(), Some("benchcage"));
        let cfg = member(Role::ConfigServer, None);
        assert_eq!(cfg.set_name(5, true).as_deref(), Some("cfg"));
        let shard = member(Role::ShardSecondary, Some(2));
        assert_eq!(shard.set_name(5, true).as_deref(), Some("shard2"));
        // A Redis Cluster's shards are no replica sets; routers never are.
        assert_eq!(shard.set_name(6, false), None);
        assert_eq!(member(Role::Router, None).set_name(5, true), None);
        let ctx = shard.context(3, 5, true);
        assert_eq!((ctx.shard, ctx.set.as_str()), (Some(2), "shard2"));
    }

    #[test]
    fn cpus_split_evenly_or_are_shared_only_when_allowed() {
        let six: CpuSet = "0-5".parse().unwrap();
        let split = split_cpus(&six, 3, false).unwrap();
        let text: Vec<String> = split.iter().map(|c| c.to_string()).collect();
        assert_eq!(text, ["0-1", "2-3", "4-5"]);
        let five: CpuSet = "0-4".parse().unwrap();
        let text: Vec<String> = split_cpus(&five, 3, false)
            .unwrap()
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(text, ["0-1", "2-3", "4"]);
        let one: CpuSet = "1".parse().unwrap();
        let e = split_cpus(&one, 3, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "3 members cannot each have CPUs of their own among the server's 1 CPU(s)"
        );
        let shared = split_cpus(&one, 3, true).unwrap();
        assert!(shared.iter().all(|c| c.to_string() == "1"));
    }
}
