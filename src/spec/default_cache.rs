//! What an engine chooses for its cache when nothing sets it (an
//! environment's `cache: default`, "out of the box"): each version's
//! documented rule, as data in the engine spec, so plan can say what the
//! engine will take under a cap.
//!
//! ```yaml
//! default_cache:
//!   - {from: "3.2", before: "3.4", when: {storage_engine: wiredTiger},
//!      share: 60%, less: 1GiB, at_least: 1GiB, reads_cgroup: false,
//!      source: "MongoDB 3.2 Manual, storage.wiredTiger.engineConfig.cacheSizeGB"}
//! ```
//!
//! The cache is `share` of (RAM less `of_less`), less `less`, and at least
//! `at_least`; RAM is the cgroup's memory limit when the version reads it
//! (`reads_cgroup: true`), else the host's.

use super::de::{Fields, FromNode, Text};
use super::diag::{Cx, join};
use super::yaml::Node;
use crate::display::approx;
use crate::render::version_num;
use crate::units::{Bytes, Share};
use std::collections::BTreeMap;

/// One version range's rule.
#[derive(Debug, Clone, PartialEq)]
pub struct DefaultCacheRule {
    /// The first version the rule holds for.
    pub from: Option<String>,
    /// The first version it no longer holds for.
    pub before: Option<String>,
    /// Knob values the rule needs (`storage_engine: wiredTiger`).
    pub when: BTreeMap<String, String>,
    pub share: Share,
    /// Taken from RAM before the share (3.4 on: 50% of (RAM - 1 GB)).
    pub of_less: Bytes,
    /// Taken from the share (3.2: 60% of RAM - 1 GB).
    pub less: Bytes,
    pub at_least: Bytes,
    /// Whether the engine sizes from the cgroup's memory limit rather than
    /// the host's RAM.
    pub reads_cgroup: bool,
    /// Where the rule is documented.
    pub source: String,
}

/// What the engine will choose in one cell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DefaultCache {
    pub bytes: Bytes,
    /// In words, with the rule and its source.
    pub text: String,
}

impl DefaultCacheRule {
    /// Whether the rule holds for `version` with the cell's `knobs`.
    pub fn holds(&self, version: &str, knobs: &BTreeMap<String, String>) -> bool {
        let v = version_num(version);
        self.from.as_deref().is_none_or(|f| v >= version_num(f))
            && self.before.as_deref().is_none_or(|b| v < version_num(b))
            && self.when.iter().all(|(k, want)| knobs.get(k) == Some(want))
    }

    /// The cache under a cap (`None`: no cap) on a host with `host_ram`.
    pub(crate) fn choose(&self, label: &str, cap: Option<Bytes>, host_ram: Bytes) -> DefaultCache {
        let (ram, basis) = match cap {
            Some(c) if self.reads_cgroup => (c, format!("the {c} cap (it reads the cgroup limit)")),
            Some(c) => (
                host_ram,
                format!(
                    "the host's {} of RAM (it does not read the {c} cap)",
                    approx(host_ram)
                ),
            ),
            None => (host_ram, format!("the host's {} of RAM", approx(host_ram))),
        };
        let shared = self.share.of(Bytes(ram.0.saturating_sub(self.of_less.0)));
        let bytes = Bytes(shared.0.saturating_sub(self.less.0).max(self.at_least.0));
        let mut rule = format!("{} of RAM", self.share);
        if self.of_less.0 > 0 {
            rule = format!("{} of (RAM - {})", self.share, self.of_less);
        }
        if self.less.0 > 0 {
            rule = format!("{rule} - {}", self.less);
        }
        let over = match cap {
            Some(c) if bytes > c => format!(", more than the {c} cap"),
            _ => String::new(),
        };
        let floor = if self.at_least.0 > 0 {
            format!(", at least {}", self.at_least)
        } else {
            String::new()
        };
        DefaultCache {
            bytes,
            text: format!(
                "{label}'s own default, {rule}{floor}, of {basis}: about {}{over} ({})",
                approx(bytes),
                self.source
            ),
        }
    }
}

impl FromNode for DefaultCacheRule {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let f = Fields::open(
            node,
            cx,
            path,
            &[
                "from",
                "before",
                "when",
                "share",
                "of_less",
                "less",
                "at_least",
                "reads_cgroup",
                "source",
            ],
        )?;
        let when: BTreeMap<String, Text> = f.or(cx, "when", BTreeMap::new());
        let source: String = f.req(cx, "source")?;
        if source.trim().is_empty() {
            cx.error(
                f.pos_of("source"),
                &join(path, "source"),
                "name the documentation the rule comes from",
                None,
            );
        }
        Some(DefaultCacheRule {
            from: f.opt::<Text>(cx, "from").map(|t| t.0),
            before: f.opt::<Text>(cx, "before").map(|t| t.0),
            when: when.into_iter().map(|(k, v)| (k, v.0)).collect(),
            share: f.req(cx, "share")?,
            of_less: f.or(cx, "of_less", Bytes(0)),
            less: f.or(cx, "less", Bytes(0)),
            at_least: f.or(cx, "at_least", Bytes(0)),
            reads_cgroup: f.or(cx, "reads_cgroup", false),
            source,
        })
    }
}

/// The rule that holds for a cell, if the engine documents one.
pub(crate) fn rule_for<'r>(
    rules: &'r [DefaultCacheRule],
    version: &str,
    knobs: &BTreeMap<String, String>,
) -> Option<&'r DefaultCacheRule> {
    rules.iter().find(|r| r.holds(version, knobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wt(
        from: &str,
        before: Option<&str>,
        share: f64,
        of_less: u64,
        less: u64,
        at_least: u64,
        reads: bool,
    ) -> DefaultCacheRule {
        DefaultCacheRule {
            from: Some(from.into()),
            before: before.map(str::to_string),
            when: [("storage_engine".to_string(), "wiredTiger".to_string())].into(),
            share: Share(share),
            of_less: Bytes::from_gib(of_less),
            less: Bytes::from_gib(less),
            at_least: Bytes::from_mib(at_least),
            reads_cgroup: reads,
            source: "docs".into(),
        }
    }

    #[test]
    fn wiredtigers_default_follows_each_versions_rule_and_whether_it_reads_the_cap() {
        let wired: BTreeMap<String, String> =
            [("storage_engine".to_string(), "wiredTiger".to_string())].into();
        let rules = [
            wt("3.2", Some("3.4"), 0.6, 0, 1, 1024, false),
            wt("3.4", Some("3.6"), 0.5, 1, 0, 256, false),
            wt("3.6", None, 0.5, 1, 0, 256, true),
        ];
        let host = Bytes::from_gib(64);
        let cap = Some(Bytes::from_gib(2));
        // 3.2: 60% of 64 GiB - 1 GiB, from the host's RAM: far over a 2 GiB cap.
        let c = rule_for(&rules, "3.2.6", &wired)
            .unwrap()
            .choose("mongodb@3.2.6", cap, host);
        assert_eq!(
            c.bytes,
            Bytes((Bytes::from_gib(64).0 as f64 * 0.6) as u64 - Bytes::from_gib(1).0)
        );
        assert!(c.text.contains("more than the 2GiB cap"), "{}", c.text);
        // 3.6 reads the cgroup: 50% of (2 GiB - 1 GiB) = 512 MiB.
        let c = rule_for(&rules, "4.4", &wired)
            .unwrap()
            .choose("mongodb@4.4", cap, host);
        assert_eq!(c.bytes, Bytes::from_mib(512));
        // 3.4 under a 1 GiB cap from a 1.25 GiB host: at least 256 MiB.
        let c = rule_for(&rules, "3.4", &wired).unwrap().choose(
            "mongodb@3.4",
            None,
            Bytes::from_mib(1280),
        );
        assert_eq!(c.bytes, Bytes::from_mib(256));
        let mm: BTreeMap<String, String> =
            [("storage_engine".to_string(), "mmapv1".to_string())].into();
        assert!(rule_for(&rules, "3.2", &mm).is_none());
    }
}
