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
    pub fn describe(&self) -> String {
        match &self.kind {
            NodeKind::Null => "nothing (null)".into(),
            NodeKind::Scalar { text, .. } => format!("`{text}`"),
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

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: BTreeMap<usize, Node>,
    docs: Vec<Node>,
    errors: Vec<SyntaxError>,
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
    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
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
        let pos = pos_of(&span);
        match ev {
            Event::Scalar(text, style, anchor, _tag) => {
                let quoted = !matches!(style, ScalarStyle::Plain);
                let kind = if !quoted && matches!(&*text, "" | "~" | "null" | "Null" | "NULL") {
                    NodeKind::Null
                } else {
                    NodeKind::Scalar {
                        text: text.into_owned(),
                        quoted,
                    }
                };
                self.push_node(Node { pos, kind }, anchor);
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq(pos, anchor, vec![])),
            Event::MappingStart(anchor, _) => {
                self.stack.push(Frame::Map(pos, anchor, vec![], None))
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq(p, anchor, items)) = self.stack.pop() {
                    self.push_node(
                        Node {
                            pos: p,
                            kind: NodeKind::Seq(items),
                        },
                        anchor,
                    );
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map(p, anchor, entries, _)) = self.stack.pop() {
                    self.push_node(
                        Node {
                            pos: p,
                            kind: NodeKind::Map(entries),
                        },
                        anchor,
                    );
                }
            }
            Event::Alias(id) => {
                let node = self.anchors.get(&id).cloned().unwrap_or(Node {
                    pos,
                    kind: NodeKind::Null,
                });
                let node = Node { pos, ..node };
                self.push_node(node, 0);
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
}
