//! An engine's memory beyond its cache (`cache_overhead:`), per version,
//! each figure with where it comes from:
//!
//! ```yaml
//! cache_overhead: 32MiB                      # one figure, no source
//! cache_overhead:                            # or per version
//!   default: {size: 256MiB, source: "measured here: scripts/bench/overhead.sh mongodb@7.0"}
//!   versions:
//!     "2.6": {size: 64MiB, source: "MongoDB 2.6 Manual, ..."}
//! ```
//!
//! Plan checks cache + overhead against the cap with the cell's version's
//! figure and names its source when it refuses. `scripts/bench/overhead.sh
//! ENGINE@VERSION` measures one and prints it in this form.

use super::de::{Fields, FromNode};
use super::diag::Cx;
use super::yaml::{Node, NodeKind};
use crate::units::Bytes;
use std::collections::BTreeMap;

/// One figure: the engine's resident memory beyond its cache.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Figure {
    pub size: Bytes,
    /// Where the figure comes from (a measurement, a documentation page);
    /// `None` for a bare size.
    pub source: Option<String>,
}

/// The engine's default figure and each version's own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheOverhead {
    pub default: Figure,
    pub versions: BTreeMap<String, Figure>,
}

impl CacheOverhead {
    /// The figure of `version`: its own, else the engine's default.
    pub fn of(&self, version: &str) -> &Figure {
        self.versions.get(version).unwrap_or(&self.default)
    }
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Some(s) => write!(f, "{} ({s})", self.size),
            None => write!(f, "{}", self.size),
        }
    }
}

impl FromNode for Figure {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        if !matches!(node.kind, NodeKind::Map(_)) {
            return Bytes::from_node(node, cx, path).map(|size| Figure { size, source: None });
        }
        let f = Fields::open(node, cx, path, &["size", "source"])?;
        let size = f.req(cx, "size");
        let source: Option<String> = f.req(cx, "source");
        Some(Figure {
            size: size?,
            source: Some(source?),
        })
    }
}

impl FromNode for CacheOverhead {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        if !matches!(node.kind, NodeKind::Map(_)) {
            return Figure::from_node(node, cx, path).map(|default| CacheOverhead {
                default,
                versions: BTreeMap::new(),
            });
        }
        let f = Fields::open(node, cx, path, &["default", "versions"])?;
        Some(CacheOverhead {
            default: f.req(cx, "default")?,
            versions: f.or(cx, "versions", BTreeMap::new()),
        })
    }
}
