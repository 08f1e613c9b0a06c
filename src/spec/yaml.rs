//! YAML text to a tree of nodes that remember where they came from.
//!
//! The only importer of `saphyr-parser`. serde_yaml forgets positions once a
//! document is parsed and stops at the first error; specs need every error
//! with its line and column, so they are read from this tree instead.
//! Scalars stay strings: the type a field expects decides how to read them
//! (so `version: 3.10` stays "3.10" and never becomes the float 3.1).

use saphyr_parser::{Event, Parser, ScalarStyle, Span, SpannedEventReceiver};
use std::collections::BTreeMap;

/// A position in a file: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

/// One YAML node with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub pos: Pos,
    pub kind: NodeKind,
}

/// The shape of a node.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// `~`, `null` or nothing at all.
    Null,
    /// Any scalar; `quoted` tells `"true"` (a string) from `true`.
    Scalar {
        text: String,
        quoted: bool,
    },
    Seq(Vec<Node>),
    /// Entries in file order, keys are scalars (checked when parsed).
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The scalar text, if this is a scalar.
    pub fn scalar(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }
    /// What kind of node this is, in words, for error messages.
    pub(crate) fn describe(&self) -> String {
        match &self.kind {
            NodeKind::Null => "nothing (null)".into(),
            NodeKind::Scalar { text, .. } => format!("`{}`", crate::error::excerpt(text)),
            NodeKind::Seq(_) => "a list".into(),
            NodeKind::Map(_) => "a mapping".into(),
        }
    }
}

/// A YAML syntax error with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub pos: Pos,
    pub message: String,
}

/// The deepest nesting of lists and mappings a spec may have.
pub(crate) const MAX_DEPTH: usize = 64;
/// The most values a spec may hold, aliases counted as what they expand to.
pub(crate) const MAX_NODES: u64 = 100_000;
/// The most scalar bytes a spec may hold, aliases counted as expanded.
pub(crate) const MAX_EXPANDED_BYTES: u64 = 4 * 1024 * 1024;
/// The longest single scalar.
pub(crate) const MAX_SCALAR_BYTES: usize = 64 * 1024;

/// What a node (with everything under it) costs: values and scalar bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Weight {
    nodes: u64,
    bytes: u64,
}

/// Builds the tree from parser events, within the bounds above: an alias
/// is charged what it expands to before it is copied, so a "billion laughs"
/// stops at the first alias over budget instead of filling the memory.
#[derive(Default)]
struct Builder {
    stack: Vec<(Frame, Weight)>,
    anchors: BTreeMap<usize, (Node, Weight)>,
    docs: Vec<Node>,
    errors: Vec<SyntaxError>,
    total: Weight,
    /// Set at the first bound exceeded: the rest of the file is only scanned.
    stopped: bool,
}

enum Frame {
    Seq(Pos, usize, Vec<Node>),
    Map(Pos, usize, Vec<(Node, Node)>, Option<Node>),
}

fn pos_of(span: &Span) -> Pos {
    Pos {
        line: span.start.line(),
        column: span.start.col() + 1,
    }
}

impl Builder {
    /// Refuse the file from here on.
    fn stop(&mut self, pos: Pos, message: String) {
        self.errors.push(SyntaxError { pos, message });
        self.stopped = true;
        self.stack.clear();
        self.anchors.clear();
    }

    /// Charge `w` to the file; false (and the file refused) when over a bound.
    fn charge(&mut self, pos: Pos, w: Weight) -> bool {
        self.total.nodes += w.nodes;
        self.total.bytes += w.bytes;
        if self.total.nodes > MAX_NODES {
            self.stop(
                pos,
                format!("the file holds more than {MAX_NODES} values (aliases counted as expanded); a spec is far smaller"),
            );
        } else if self.total.bytes > MAX_EXPANDED_BYTES {
            self.stop(
                pos,
                format!("the file holds more than {MAX_EXPANDED_BYTES} bytes of values (aliases counted as expanded); a spec is far smaller"),
            );
        }
        !self.stopped
    }

    fn open(&mut self, pos: Pos, frame: Frame) {
        if self.stack.len() >= MAX_DEPTH {
            self.stop(
                pos,
                format!("lists and mappings nest deeper than {MAX_DEPTH} levels"),
            );
            return;
        }
        if self.charge(pos, Weight { nodes: 1, bytes: 0 }) {
            self.stack.push((frame, self.total));
        }
    }

    /// What was charged since `start` (the frame's own node included).
    fn since(&self, start: Weight) -> Weight {
        Weight {
            nodes: self.total.nodes - start.nodes + 1,
            bytes: self.total.bytes - start.bytes,
        }
    }

    fn push_node(&mut self, node: Node, anchor: usize, weight: Weight) {
        if anchor > 0 {
            self.anchors.insert(anchor, (node.clone(), weight));
        }
        match self.stack.last_mut().map(|(f, _)| f) {
            None => self.docs.push(node),
            Some(Frame::Seq(_, _, items)) => items.push(node),
            Some(Frame::Map(_, _, entries, pending)) => match pending.take() {
                None => {
                    if node.scalar().is_none() && node.kind != NodeKind::Null {
                        self.errors.push(SyntaxError {
                            pos: node.pos,
                            message: "mapping keys must be plain words, not lists or mappings"
                                .into(),
                        });
                    }
                    *pending = Some(node);
                }
                Some(key) => entries.push((key, node)),
            },
        }
    }
}

impl<'i> SpannedEventReceiver<'i> for Builder {
    fn on_event(&mut self, ev: Event<'i>, span: Span) {
        if self.stopped {
            return;
        }
        let pos = pos_of(&span);
        match ev {
            Event::Scalar(text, style, anchor, _tag) => {
                if text.len() > MAX_SCALAR_BYTES {
                    self.stop(
                        pos,
                        format!(
                            "a value of {} bytes; values in a spec are at most {MAX_SCALAR_BYTES} bytes",
                            text.len()
                        ),
                    );
                    return;
                }
                let weight = Weight {
                    nodes: 1,
                    bytes: text.len() as u64,
                };
                if !self.charge(pos, weight) {
                    return;
                }
                let quoted = !matches!(style, ScalarStyle::Plain);
                let kind = if !quoted && matches!(&*text, "" | "~" | "null" | "Null" | "NULL") {
                    NodeKind::Null
                } else {
                    NodeKind::Scalar {
                        text: text.into_owned(),
                        quoted,
                    }
                };
                self.push_node(Node { pos, kind }, anchor, weight);
            }
            Event::SequenceStart(anchor, _) => self.open(pos, Frame::Seq(pos, anchor, vec![])),
            Event::MappingStart(anchor, _) => self.open(pos, Frame::Map(pos, anchor, vec![], None)),
            Event::SequenceEnd => {
                if let Some((Frame::Seq(p, anchor, items), start)) = self.stack.pop() {
                    let weight = self.since(start);
                    let kind = NodeKind::Seq(items);
                    self.push_node(Node { pos: p, kind }, anchor, weight);
                }
            }
            Event::MappingEnd => {
                if let Some((Frame::Map(p, anchor, entries, _), start)) = self.stack.pop() {
                    let weight = self.since(start);
                    let kind = NodeKind::Map(entries);
                    self.push_node(Node { pos: p, kind }, anchor, weight);
                }
            }
            Event::Alias(id) => {
                let weight = self.anchors.get(&id).map(|(_, w)| *w).unwrap_or_default();
                // Charged before the copy: an alias bomb stops here.
                if !self.charge(pos, weight) {
                    return;
                }
                let node = match self.anchors.get(&id) {
                    Some((n, _)) => Node { pos, ..n.clone() },
                    None => Node {
                        pos,
                        kind: NodeKind::Null,
                    },
                };
                self.push_node(node, 0, weight);
            }
            _ => {}
        }
    }
}

/// Parse one YAML document. An empty file, several documents, or a syntax
/// error are refused with a position.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    if text.trim().is_empty()
        || text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Err(SyntaxError {
            pos: Pos { line: 1, column: 1 },
            message: "the file is empty; a spec is a YAML mapping (see the shipped examples)"
                .into(),
        });
    }
    // A long line is refused before the parser walks it character by character.
    if let Some((i, line)) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.len() > MAX_SCALAR_BYTES)
    {
        return Err(SyntaxError {
            pos: Pos {
                line: i + 1,
                column: 1,
            },
            message: format!(
                "a line of {} bytes; lines and values in a spec are at most {MAX_SCALAR_BYTES} bytes",
                line.len()
            ),
        });
    }
    let mut b = Builder::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut b, true) {
        return Err(SyntaxError {
            pos: Pos {
                line: e.marker().line(),
                column: e.marker().col() + 1,
            },
            message: format!("malformed YAML: {}", e.info()),
        });
    }
    if let Some(e) = b.errors.into_iter().next() {
        return Err(e);
    }
    match b.docs.len() {
        0 => Err(SyntaxError {
            pos: Pos { line: 1, column: 1 },
            message: "the file is empty; a spec is a YAML mapping".into(),
        }),
        1 => Ok(b.docs.pop().unwrap()),
        _ => Err(SyntaxError {
            pos: b.docs[1].pos,
            message: "the file holds several YAML documents; put one spec per file".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_lines_and_columns() {
        let n = parse("a: 1\nb:\n  c: [x, \"y\"]\n").unwrap();
        let NodeKind::Map(entries) = &n.kind else {
            panic!()
        };
        assert_eq!(entries[1].0.pos, Pos { line: 2, column: 1 });
        let NodeKind::Map(inner) = &entries[1].1.kind else {
            panic!()
        };
        assert_eq!(inner[0].1.pos, Pos { line: 3, column: 6 });
        let NodeKind::Seq(items) = &inner[0].1.kind else {
            panic!()
        };
        assert_eq!(
            items[1].kind,
            NodeKind::Scalar {
                text: "y".into(),
                quoted: true
            }
        );
    }

    #[test]
    fn versions_written_as_numbers_keep_their_digits() {
        let n = parse("v: 3.10\n").unwrap();
        let NodeKind::Map(e) = &n.kind else { panic!() };
        assert_eq!(e[0].1.scalar(), Some("3.10"));
    }

    #[test]
    fn malformed_and_empty_yaml_are_refused_with_a_position() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.message.contains("malformed YAML"), "{e:?}");
        assert!(e.pos.line >= 1);
        assert!(
            parse("  \n# only a comment\n")
                .unwrap_err()
                .message
                .contains("empty")
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_before_it_expands() {
        let mut text = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for (name, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            let refs = vec![format!("*{prev}"); 9].join(", ");
            text.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let start = std::time::Instant::now();
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("aliases counted as expanded"), "{e:?}");
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn aliases_within_the_bounds_still_expand() {
        let n = parse("a: &x {k: v}\nb: *x\n").unwrap();
        let NodeKind::Map(e) = &n.kind else { panic!() };
        assert_eq!(e[1].1.kind, e[0].1.kind);
        assert_eq!(e[1].1.pos.line, 2);
    }

    #[test]
    fn deep_nesting_and_huge_scalars_are_refused() {
        let deep = format!(
            "a: {}{}\n",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let e = parse(&deep).unwrap_err();
        assert!(e.message.contains("nest deeper"), "{e:?}");
        let ok = format!(
            "a: {}{}\n",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        parse(&ok).unwrap();
        let huge = format!("a: {}\n", "x".repeat(MAX_SCALAR_BYTES + 1));
        let e = parse(&huge).unwrap_err();
        assert!(e.message.contains("at most 65536 bytes"), "{e:?}");
        let folded = format!(
            "a: >\n{}",
            "  xxxxxxxxxxxxxxx\n".repeat(MAX_SCALAR_BYTES / 15)
        );
        let e = parse(&folded).unwrap_err();
        assert!(e.message.contains("at most 65536 bytes"), "{e:?}");
        assert!(e.message.len() < 200);
    }

    #[test]
    fn too_many_values_are_refused() {
        let many = format!("a:\n{}", "  - 1\n".repeat(MAX_NODES as usize + 1));
        let e = parse(&many).unwrap_err();
        assert!(e.message.contains("more than 100000 values"), "{e:?}");
    }
}
