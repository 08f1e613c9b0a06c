//! Cell keys: the identity of a cell across runs. Two cells with the same
//! engine, version, rendered config, limits, workload, threads and
//! repetition get the same key, so `--resume` and `compare` match them.
//!
//! A key is a readable slug followed by a hash: `redis-7.0-quickstart-r1-3fa9c2d1e07b`.
//! Only the hash decides identity; the slug is for people reading folders.

use serde::Serialize;
use sha2::{Digest, Sha256};

/// The key of a cell: `slug-hash12`, the hash of its identity's JSON
/// ([`crate::plan::CellIdentity`] decides what goes in).
pub fn cell_key(slug: &str, identity: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(identity).expect("a cell identity always serializes");
    let hash = hex::encode(&Sha256::digest(&bytes)[..6]);
    let slug = sanitize(slug);
    if slug.is_empty() {
        hash
    } else {
        format!("{slug}-{hash}")
    }
}

/// Replace run-specific values (the port, data dir, cell folder) by stable
/// placeholders so that the same config in another run hashes the same.
pub fn normalize(content: &str, replacements: &[(String, &str)]) -> String {
    let mut out = content.to_string();
    let mut reps: Vec<&(String, &str)> =
        replacements.iter().filter(|(a, _)| !a.is_empty()).collect();
    // Longest first, so that a path is replaced before a prefix of it.
    reps.sort_by_key(|(a, _)| std::cmp::Reverse(a.len()));
    for (actual, placeholder) in reps {
        out = out.replace(actual.as_str(), placeholder);
    }
    out
}

/// Lower-case ASCII letters, digits, `.`, `-`; anything else becomes `-`.
fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A stand-in for a cell's identity, shaped like one.
    #[derive(Debug, Clone, Serialize)]
    struct KeyInput {
        engine: String,
        version: String,
        backend: String,
        rendered_config: BTreeMap<String, String>,
        limits: serde_json::Value,
        workload: serde_json::Value,
        threads: Vec<u32>,
        repetition: u32,
    }

    fn input() -> KeyInput {
        let mut cfg = BTreeMap::new();
        cfg.insert("redis.conf".into(), "port 6379\nmaxmemory 64mb\n".into());
        KeyInput {
            engine: "redis".into(),
            version: "7.0".into(),
            backend: "cgroup".into(),
            rendered_config: cfg,
            limits: serde_json::json!({"memory": "256MiB", "server_cpus": "0"}),
            workload: serde_json::json!({"phases": [{"name": "a", "threads": [1, 4]}]}),
            threads: vec![1, 4],
            repetition: 1,
        }
    }

    #[test]
    fn the_same_cell_gets_the_same_key() {
        assert_eq!(
            cell_key("redis@7.0 quickstart r1", &input()),
            cell_key("redis@7.0 quickstart r1", &input())
        );
        let k = cell_key("Redis@7.0 / quickstart r1", &input());
        assert!(k.starts_with("redis-7.0-quickstart-r1-"), "{k}");
        assert_eq!(k.len(), "redis-7.0-quickstart-r1-".len() + 12);
    }

    #[test]
    fn every_part_of_a_cell_changes_its_key() {
        let base = cell_key("c", &input());
        let mut changes: Vec<KeyInput> = Vec::new();
        let mut i = input();
        i.version = "7.2".into();
        changes.push(i);
        let mut i = input();
        i.rendered_config
            .insert("redis.conf".into(), "maxmemory 32mb\n".into());
        changes.push(i);
        let mut i = input();
        i.limits = serde_json::json!({"memory": "128MiB", "server_cpus": "0"});
        changes.push(i);
        let mut i = input();
        i.workload = serde_json::json!({"phases": [{"name": "b", "threads": [1, 4]}]});
        changes.push(i);
        let mut i = input();
        i.threads = vec![1];
        changes.push(i);
        let mut i = input();
        i.repetition = 2;
        changes.push(i);
        let mut i = input();
        i.backend = "docker".into();
        changes.push(i);
        for c in changes {
            assert_ne!(cell_key("c", &c), base, "{c:?}");
        }
    }

    #[test]
    fn run_specific_paths_and_ports_do_not_change_the_key() {
        let a = normalize(
            "port 41234\ndir /tmp/benchcage-1/cell/data\n",
            &[
                ("41234".into(), "{port}"),
                ("/tmp/benchcage-1/cell/data".into(), "{data_dir}"),
            ],
        );
        let b = normalize(
            "port 50000\ndir /tmp/benchcage-2/cell/data\n",
            &[
                ("50000".into(), "{port}"),
                ("/tmp/benchcage-2/cell/data".into(), "{data_dir}"),
            ],
        );
        assert_eq!(a, b);
        assert_eq!(a, "port {port}\ndir {data_dir}\n");
    }
}
