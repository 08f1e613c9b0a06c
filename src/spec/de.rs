//! Reading typed values out of the position-keeping YAML tree, reporting
//! every problem (wrong type, unknown field, missing field) instead of
//! stopping at the first one.

use super::diag::{Cx, join, unknown_hint};
use super::yaml::{Node, NodeKind, Pos};
use crate::units::{Bytes, CpuSet, Duration, Share, SizeOrShare};
use std::collections::BTreeMap;
use std::str::FromStr;

/// A type that can be read from a node. `None` means an error was reported.
pub trait FromNode: Sized {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self>;
}

/// The fields of a mapping, checked against the known names.
pub struct Fields<'n> {
    entries: Vec<(&'n str, &'n Node, Pos)>,
    pub path: String,
    pub pos: Pos,
}

impl<'n> Fields<'n> {
    /// Open a mapping: reports a non-mapping, unknown keys (with the closest
    /// known one) and duplicate keys.
    pub fn open(node: &'n Node, cx: &mut Cx, path: &str, known: &[&str]) -> Option<Fields<'n>> {
        let NodeKind::Map(entries) = &node.kind else {
            cx.error(
                node.pos,
                path,
                format!("expected a mapping of fields, found {}", node.describe()),
                Some(format!("fields here: {}", known.join(", "))),
            );
            return None;
        };
        let mut out: Vec<(&str, &Node, Pos)> = Vec::new();
        for (k, v) in entries {
            let key = k.scalar().unwrap_or("");
            let field = join(path, key);
            if !known.contains(&key) {
                cx.error(
                    k.pos,
                    &field,
                    format!("unknown field `{key}`"),
                    Some(unknown_hint(key, known)),
                );
                continue;
            }
            if out.iter().any(|(seen, _, _)| *seen == key) {
                cx.error(
                    k.pos,
                    &field,
                    format!("`{key}` is set twice"),
                    Some("keep one".into()),
                );
                continue;
            }
            cx.positions.insert(field, v.pos);
            out.push((key, v, k.pos));
        }
        Some(Fields {
            entries: out,
            path: path.to_string(),
            pos: node.pos,
        })
    }

    /// The raw node of a field, if present (null counts as absent).
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, v, _)| *k == key && v.kind != NodeKind::Null)
            .map(|(_, v, _)| *v)
    }

    /// Position of a field's value, or of the mapping.
    pub(crate) fn pos_of(&self, key: &str) -> Pos {
        self.get(key).map(|n| n.pos).unwrap_or(self.pos)
    }

    pub fn field(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// A required field; a missing one is reported at the mapping.
    pub fn req<T: FromNode>(&self, cx: &mut Cx, key: &str) -> Option<T> {
        match self.get(key) {
            Some(n) => T::from_node(n, cx, &self.field(key)),
            None => {
                cx.error(
                    self.pos,
                    &self.field(key),
                    format!("missing required field `{key}`"),
                    None,
                );
                None
            }
        }
    }

    /// An optional field: `None` when absent or wrong (the error is reported).
    pub fn opt<T: FromNode>(&self, cx: &mut Cx, key: &str) -> Option<T> {
        self.get(key)
            .and_then(|n| T::from_node(n, cx, &self.field(key)))
    }

    /// An optional field with a default; the default is used after an error too
    /// (the error is reported, so the spec is refused anyway).
    pub fn or<T: FromNode>(&self, cx: &mut Cx, key: &str, default: T) -> T {
        self.opt(cx, key).unwrap_or(default)
    }

    /// Which one of two mutually exclusive fields is present; reports
    /// both or neither (with `hint` as an example).
    pub(crate) fn exactly_one(
        &self,
        cx: &mut Cx,
        a: &'static str,
        b: &'static str,
        hint: &str,
    ) -> Option<&'static str> {
        match (self.get(a).is_some(), self.get(b).is_some()) {
            (true, false) => Some(a),
            (false, true) => Some(b),
            (true, true) => {
                cx.error(
                    self.pos,
                    &self.path,
                    format!("give `{a}` or `{b}`, not both"),
                    None,
                );
                None
            }
            (false, false) => {
                cx.error(
                    self.pos,
                    &self.path,
                    format!("needs `{a}` or `{b}`"),
                    Some(hint.into()),
                );
                None
            }
        }
    }

    /// Names of the fields present, in file order.
    pub fn keys(&self) -> Vec<&'n str> {
        self.entries.iter().map(|(k, _, _)| *k).collect()
    }
}

fn scalar<'n>(node: &'n Node, cx: &mut Cx, path: &str, what: &str) -> Option<&'n str> {
    match node.scalar() {
        Some(s) => Some(s),
        None => {
            cx.error(
                node.pos,
                path,
                format!("expected {what}, found {}", node.describe()),
                None,
            );
            None
        }
    }
}

impl FromNode for String {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        scalar(node, cx, path, "a string").map(str::to_string)
    }
}

impl FromNode for bool {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let s = scalar(node, cx, path, "true or false")?;
        match s {
            "true" | "True" | "TRUE" => Some(true),
            "false" | "False" | "FALSE" => Some(false),
            _ => {
                cx.error(
                    node.pos,
                    path,
                    format!("`{s}` is not a boolean"),
                    Some("write true or false".into()),
                );
                None
            }
        }
    }
}

macro_rules! from_node_int {
    ($($t:ty),*) => {$(
        impl FromNode for $t {
            fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
                let s = scalar(node, cx, path, "a whole number")?;
                let clean = s.replace('_', "");
                match clean.parse::<$t>() {
                    Ok(v) => Some(v),
                    Err(_) => {
                        let hint = if clean.starts_with('-') {
                            "must not be negative".to_string()
                        } else if clean.parse::<f64>().is_ok() {
                            format!("a whole number between {} and {}", <$t>::MIN, <$t>::MAX)
                        } else {
                            "write a whole number like 4".to_string()
                        };
                        cx.error(node.pos, path, format!("`{s}` is not a valid number here"), Some(hint));
                        None
                    }
                }
            }
        }
    )*};
}
from_node_int!(u16, u32, u64, i64);

impl FromNode for f64 {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let s = scalar(node, cx, path, "a number")?;
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Some(v),
            _ => {
                cx.error(node.pos, path, format!("`{s}` is not a number"), None);
                None
            }
        }
    }
}

/// Units parse through their `FromStr`; the unit's own message is kept.
macro_rules! from_node_unit {
    ($($t:ty => $what:expr),*) => {$(
        impl FromNode for $t {
            fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
                let s = scalar(node, cx, path, $what)?;
                match <$t>::from_str(s) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        cx.error(node.pos, path, e.0, None);
                        None
                    }
                }
            }
        }
    )*};
}
from_node_unit!(
    Bytes => "a size like `512MiB`",
    Duration => "a duration like `30s`",
    CpuSet => "a CPU set like `0-3`",
    Share => "a share like `50%`",
    SizeOrShare => "a size like `12GiB` or a share like `75%`",
    crate::units::Rate => "a rate like `10gbit`"
);

impl<T: FromNode> FromNode for Vec<T> {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let NodeKind::Seq(items) = &node.kind else {
            cx.error(
                node.pos,
                path,
                format!("expected a list, found {}", node.describe()),
                Some("write `[a, b]` or one `- item` per line".into()),
            );
            return None;
        };
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            cx.positions.insert(p.clone(), item.pos);
            match T::from_node(item, cx, &p) {
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

impl<T: FromNode> FromNode for BTreeMap<String, T> {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        let NodeKind::Map(entries) = &node.kind else {
            cx.error(
                node.pos,
                path,
                format!("expected a mapping, found {}", node.describe()),
                None,
            );
            return None;
        };
        let mut out = BTreeMap::new();
        let mut ok = true;
        for (k, v) in entries {
            let key = k.scalar().unwrap_or("").to_string();
            let p = join(path, &key);
            cx.positions.insert(p.clone(), v.pos);
            if out.contains_key(&key) {
                cx.error(
                    k.pos,
                    &p,
                    format!("`{key}` is set twice"),
                    Some("keep one".into()),
                );
                ok = false;
                continue;
            }
            match T::from_node(v, cx, &p) {
                Some(val) => {
                    out.insert(key, val);
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// A scalar kept as text whatever it looks like (knob values, `--set` values).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Text(pub String);

impl FromNode for Text {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        scalar(node, cx, path, "a value").map(|s| Text(s.to_string()))
    }
}

/// Read a word from a fixed list, with a did-you-mean hint.
pub fn word<'a>(node: &Node, cx: &mut Cx, path: &str, known: &[&'a str]) -> Option<&'a str> {
    let s = scalar(node, cx, path, "a word")?;
    match known.iter().find(|k| **k == s) {
        Some(k) => Some(k),
        None => {
            cx.error(
                node.pos,
                path,
                format!("`{s}` is not one of the allowed values"),
                Some(unknown_hint(s, known)),
            );
            None
        }
    }
}

/// Read a word from a fixed list (as `word` does) and give its value.
pub(crate) fn choice<T: Copy>(
    node: &Node,
    cx: &mut Cx,
    path: &str,
    table: &[(&str, T)],
) -> Option<T> {
    let known: Vec<&str> = table.iter().map(|(k, _)| *k).collect();
    let w = word(node, cx, path, &known)?;
    table.iter().find(|(k, _)| *k == w).map(|(_, v)| *v)
}

/// Either a single value or a list of them (`threads: 4` or `threads: [1, 4]`).
pub(crate) fn one_or_many<T: FromNode>(node: &Node, cx: &mut Cx, path: &str) -> Option<Vec<T>> {
    match &node.kind {
        NodeKind::Seq(_) => Vec::<T>::from_node(node, cx, path),
        _ => T::from_node(node, cx, path).map(|v| vec![v]),
    }
}

/// `name:` inside a spec, when given, must match the file name.
pub(crate) fn check_spec_name(f: &Fields, cx: &mut Cx, name: &str) {
    if let Some(n) = f.opt::<String>(cx, "name")
        && n != name
    {
        cx.error(
            f.pos_of("name"),
            "name",
            format!("name `{n}` differs from the file name `{name}`"),
            Some(format!("rename the file to {n}.yaml or drop `name`")),
        );
    }
}

/// A name made of ASCII letters, digits and the `extra` characters.
pub(crate) fn check_ident(f: &Fields, cx: &mut Cx, key: &str, value: &str, extra: &str) {
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
    {
        let allowed: Vec<String> = extra.chars().map(String::from).collect();
        cx.error(
            f.pos_of(key),
            &f.field(key),
            format!(
                "`{value}` must be letters, digits and {}",
                allowed.join(" ")
            ),
            None,
        );
    }
}
