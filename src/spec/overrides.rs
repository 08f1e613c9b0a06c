//! `--set k=v` and a scenario's per-environment `set:`: environment fields
//! (`server.memory=1GiB`, `backend=docker`, `scale=0.125`) and knobs
//! (`cache_size=2GiB`). Values given here are final: `scale` does not
//! shrink them again.

use super::environment::{CacheChoice, Hog};
use crate::model::{Backend, IoLimits, SwapPolicy, ThpPolicy};
use crate::units::{Bytes, CpuSet, Share, SizeOrShare};

/// Environment fields `--set` and `set:` accept.
pub(crate) const ENV_KEYS: &[&str] = &[
    "backend",
    "server.cpus",
    "server.memory",
    "server.swap",
    "server.pids",
    "server.steal_allowance",
    "server.io.read_bps",
    "server.io.write_bps",
    "server.io.read_iops",
    "server.io.write_iops",
    "server.disk",
    "server.disk.size",
    "client.cpus",
    "client.node",
    "cache",
    "hog",
    "hog.leave",
    "scale",
    "allow_cache_overcommit",
    "share_cpus",
    "host.transparent_hugepages",
    "network",
    "network.delay",
    "network.jitter",
    "network.rate",
    "network.loss",
    "network.emulation",
];

/// An environment as a cell sees it: scaled, then overridden.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellEnv {
    pub backend: Backend,
    pub server_cpus: CpuSet,
    pub client_cpus: CpuSet,
    /// Where the client runs (`client.node`).
    pub client_node: crate::model::ClientNode,
    pub memory: Option<Bytes>,
    pub swap: SwapPolicy,
    pub io: IoLimits,
    pub pids: u64,
    /// Steal time a phase may lose and stay valid.
    pub steal_allowance: Option<Share>,
    /// The network between the client and the server.
    pub network: Option<crate::network::Network>,
    /// The size of the data dir's own filesystem (`server.disk.size`).
    pub disk: Option<Bytes>,
    pub cache: Option<SizeOrShare>,
    /// `cache: default`: the engine sizes its own cache.
    pub cache_choice: CacheChoice,
    pub hog: Hog,
    pub scale: f64,
    pub allow_cache_overcommit: bool,
    /// A topology's members may share the server's CPUs.
    pub share_cpus: bool,
    pub thp: ThpPolicy,
}

impl CellEnv {
    /// The environment at a scale (absolute sizes multiplied).
    pub fn scaled(env: &super::Environment, scale: f64) -> CellEnv {
        CellEnv {
            backend: env.backend,
            server_cpus: env.server.cpus.clone(),
            client_cpus: env.client.cpus.clone(),
            client_node: env.client.node,
            memory: env.server.memory.map(|m| m.scaled(scale)),
            swap: match env.server.swap {
                SwapPolicy::Limit(b) => SwapPolicy::Limit(b.scaled(scale)),
                SwapPolicy::Off => SwapPolicy::Off,
            },
            io: env.server.io.clone(),
            pids: env.server.pids,
            steal_allowance: env.server.steal_allowance,
            network: env.network.clone(),
            disk: env.server.disk.map(|d| d.scaled(scale)),
            cache: env.cache.map(|c| match c {
                SizeOrShare::Absolute(b) => SizeOrShare::Absolute(b.scaled(scale)),
                s => s,
            }),
            cache_choice: env.cache_choice,
            hog: match env.hog {
                Hog::Leave(b) => Hog::Leave(b.scaled(scale)),
                Hog::None => Hog::None,
            },
            scale,
            allow_cache_overcommit: env.allow_cache_overcommit,
            share_cpus: env.share_cpus,
            thp: env.host.transparent_hugepages,
        }
    }

    /// `network.delay=1ms` and its siblings; a network is made (delay 0,
    /// emulation auto) when the environment had none.
    fn set_network(&mut self, part: &str, v: &str) -> Result<(), (String, Option<String>)> {
        use crate::network::{Emulation, Network};
        let e = |err: crate::units::UnitError| (err.0, None);
        let n = self.network.get_or_insert(Network {
            delay: crate::units::Duration::default(),
            jitter: None,
            rate: None,
            loss: 0.0,
            emulation: Emulation::Auto,
        });
        match part {
            "delay" => n.delay = v.parse().map_err(e)?,
            "jitter" => n.jitter = Some(v.parse().map_err(e)?),
            "rate" => n.rate = Some(v.parse().map_err(e)?),
            "loss" => n.loss = crate::network::parse_loss(v).map_err(e)?,
            "emulation" => {
                n.emulation = Emulation::ALL
                    .iter()
                    .find(|(name, _)| *name == v)
                    .map(|(_, e)| *e)
                    .ok_or((
                        format!("unknown network emulation `{v}`"),
                        Some("use auto or proxy".into()),
                    ))?
            }
            _ => {
                return Err((
                    format!("unknown network field `network.{part}`"),
                    Some("use network.delay, .jitter, .rate, .loss or .emulation".into()),
                ));
            }
        }
        match n.problems().into_iter().next() {
            Some(p) => Err((p.message, Some(p.hint))),
            None => Ok(()),
        }
    }

    /// Apply one environment override (`scale` is handled before scaling).
    pub fn apply(&mut self, key: &str, value: &str) -> Result<(), (String, Option<String>)> {
        let v = value.trim();
        let e = |m: crate::units::UnitError| (m.0, None);
        match key {
            "backend" => self.backend = backend_of(v)?,
            "server.cpus" => self.server_cpus = v.parse().map_err(e)?,
            "client.cpus" => self.client_cpus = v.parse().map_err(e)?,
            "client.node" => {
                self.client_node = match v {
                    "same" => crate::model::ClientNode::Same,
                    "other" => crate::model::ClientNode::Other,
                    _ => {
                        return Err((
                            format!("client.node `{v}` is neither `same` nor `other`"),
                            Some("`other` runs the client on another node of a two-node Slurm allocation (run --on slurm)".into()),
                        ));
                    }
                }
            }
            "server.memory" => {
                self.memory = match v {
                    "none" => None,
                    _ => Some(v.parse().map_err(e)?),
                }
            }
            "server.swap" => {
                self.swap = match v {
                    "off" | "none" | "0" => SwapPolicy::Off,
                    _ => SwapPolicy::Limit(v.parse().map_err(e)?),
                }
            }
            "server.pids" => {
                self.pids = v
                    .parse()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or((format!("pids `{v}` is not a positive number"), None))?
            }
            "network" => match v {
                "none" | "off" => self.network = None,
                _ => {
                    return Err((
                        format!("`network={v}`: only `none` is accepted here"),
                        Some("give the parts: `network.delay=1ms`, `network.rate=10mbit`".into()),
                    ));
                }
            },
            k if k.starts_with("network.") => self.set_network(&k["network.".len()..], v)?,
            "server.disk" => match v {
                "none" | "off" => self.disk = None,
                _ => {
                    return Err((
                        format!("`server.disk={v}`: only `none` is accepted here"),
                        Some("give the size: `server.disk.size=20GiB`".into()),
                    ));
                }
            },
            "server.disk.size" => {
                let size: Bytes = v.parse().map_err(e)?;
                if let Some((message, hint)) = super::environment::disk_floor_problem(size) {
                    return Err((message, Some(hint)));
                }
                self.disk = Some(size);
            }
            "server.steal_allowance" => {
                self.steal_allowance = match v {
                    "none" | "0" | "0%" => None,
                    _ => {
                        let a: Share = v.parse().map_err(e)?;
                        if a.fraction() > super::environment::MAX_STEAL_ALLOWANCE {
                            return Err((
                                format!("a steal allowance of {a} is over 90%"),
                                Some("use at most 90%".into()),
                            ));
                        }
                        Some(a)
                    }
                }
            }
            "server.io.read_bps" => {
                self.io.read_bps = Some(io_limit(v.parse::<Bytes>().map_err(e)?.0)?)
            }
            "server.io.write_bps" => {
                self.io.write_bps = Some(io_limit(v.parse::<Bytes>().map_err(e)?.0)?)
            }
            "server.io.read_iops" => self.io.read_iops = Some(io_limit(parse_u64(v)?)?),
            "server.io.write_iops" => self.io.write_iops = Some(io_limit(parse_u64(v)?)?),
            "cache" if v == "default" => {
                self.cache = None;
                self.cache_choice = CacheChoice::EngineDefault;
            }
            "cache" => {
                self.cache = Some(v.parse().map_err(e)?);
                self.cache_choice = CacheChoice::Planned;
            }
            "hog" => self.hog = hog_of(v)?,
            "hog.leave" => {
                self.hog = Hog::Leave(
                    crate::sandbox::hog::parse_leave(v).map_err(|m| (m.to_string(), None))?,
                )
            }
            "scale" => {
                parse_scale(v)?;
            }
            "allow_cache_overcommit" => self.allow_cache_overcommit = bool_of(v)?,
            "share_cpus" => self.share_cpus = bool_of(v)?,
            "host.transparent_hugepages" => self.thp = thp_of(v)?,
            _ => {
                return Err((
                    format!("unknown environment field `{key}`"),
                    Some(super::diag::unknown_hint(key, ENV_KEYS)),
                ));
            }
        }
        Ok(())
    }
}

/// `backend=`: cgroup or docker.
fn backend_of(v: &str) -> Result<Backend, (String, Option<String>)> {
    match v {
        "cgroup" => Ok(Backend::Cgroup),
        "docker" => Ok(Backend::Docker),
        _ => Err((format!("backend `{v}` is not cgroup or docker"), None)),
    }
}

/// `hog=`: only `none` (a hog is sized with `hog.leave`).
fn hog_of(v: &str) -> Result<Hog, (String, Option<String>)> {
    match v {
        "none" | "off" => Ok(Hog::None),
        _ => Err((
            format!("hog `{v}` must be `none`; size it with hog.leave=SIZE"),
            None,
        )),
    }
}

/// `true` or `false`.
fn bool_of(v: &str) -> Result<bool, (String, Option<String>)> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err((format!("`{v}` is not true or false"), None)),
    }
}

/// `host.transparent_hugepages=`: off or leave.
fn thp_of(v: &str) -> Result<ThpPolicy, (String, Option<String>)> {
    match v {
        "off" => Ok(ThpPolicy::Off),
        "leave" => Ok(ThpPolicy::Leave),
        _ => Err((
            format!("`{v}` is not off or leave"),
            Some("off: `never` for each cell, restored after; leave: as the host has it".into()),
        )),
    }
}

/// An IO limit of 0 would stop the engine's IO altogether.
fn io_limit(v: u64) -> Result<u64, (String, Option<String>)> {
    if v == 0 {
        return Err((
            "0 would stop every read or write of the engine".into(),
            Some("give a positive limit; without --set the environment's limit holds".into()),
        ));
    }
    Ok(v)
}

fn parse_u64(v: &str) -> Result<u64, (String, Option<String>)> {
    v.parse::<u64>()
        .map_err(|_| (format!("`{v}` is not a whole number"), None))
}

/// Parse a scale factor.
pub(crate) fn parse_scale(v: &str) -> Result<f64, (String, Option<String>)> {
    match v.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 64.0 => Ok(s),
        _ => Err((
            format!("scale `{v}` is not a factor above 0 and at most 64"),
            Some("e.g. 0.125 to run at 1/8".into()),
        )),
    }
}

/// Is this key an environment field (rather than a knob)?
pub(crate) fn is_env_key(key: &str) -> bool {
    ENV_KEYS.contains(&key) || key.contains('.') || super::engine::ENV_OVERRIDE_ROOTS.contains(&key)
}

/// Check an environment override without applying it.
pub(crate) fn check_env_key(key: &str, value: &str) -> Result<(), (String, Option<String>)> {
    let mut scratch = CellEnv {
        backend: Backend::Cgroup,
        server_cpus: CpuSet::default(),
        client_cpus: CpuSet::default(),
        client_node: crate::model::ClientNode::Same,
        memory: None,
        swap: SwapPolicy::Off,
        io: IoLimits::default(),
        pids: 1,
        steal_allowance: None,
        network: None,
        disk: None,
        cache: None,
        cache_choice: CacheChoice::Planned,
        hog: Hog::None,
        scale: 1.0,
        allow_cache_overcommit: false,
        share_cpus: false,
        thp: ThpPolicy::Leave,
    };
    scratch.apply(key, value)
}

/// Split `k=v` flags; a flag without `=` is an error.
pub(crate) fn parse_set_flags(
    flags: &[String],
) -> Result<Vec<(String, String)>, super::Diagnostics> {
    let mut out = Vec::new();
    let mut diags = super::Diagnostics::default();
    for f in flags {
        match f.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => out.push((k.trim().to_string(), v.to_string())),
            _ => diags.push(super::Diagnostic::flag(
                "--set",
                f.clone(),
                format!("`{f}` is not KEY=VALUE"),
                Some("e.g. --set cache_size=2GiB or --set server.memory=1GiB".into()),
            )),
        }
    }
    diags.into_result(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_keys_are_told_apart_from_knobs() {
        assert!(is_env_key("server.memory"));
        assert!(is_env_key("server.typo"));
        assert!(is_env_key("backend"));
        assert!(!is_env_key("cache_size"));
        assert!(!is_env_key("appendfsync"));
    }

    #[test]
    fn overrides_are_typed_and_unknown_fields_name_the_closest() {
        assert!(check_env_key("server.cpus", "0-3").is_ok());
        assert!(check_env_key("hog.leave", "2GiB").is_ok());
        assert!(check_env_key("hog", "none").is_ok());
        let (m, _) = check_env_key("server.memory", "lots").unwrap_err();
        assert!(m.contains("not a size"), "{m}");
        let (m, h) = check_env_key("server.cpu", "1").unwrap_err();
        assert!(m.contains("unknown environment field"));
        assert!(h.unwrap().contains("did you mean `server.cpus`?"));
        assert!(check_env_key("scale", "0").is_err());
        assert!(check_env_key("backend", "podman").is_err());
    }

    #[test]
    fn set_flags_need_an_equals_sign() {
        let ok = parse_set_flags(&["a=b=c".into(), " k = v".into()]).unwrap();
        assert_eq!(
            ok,
            vec![("a".into(), "b=c".into()), ("k".into(), " v".into())]
        );
        assert!(parse_set_flags(&["novalue".into()]).is_err());
        assert!(parse_set_flags(&["=v".into()]).is_err());
    }
}
