//! What a template may do, checked on its syntax tree before it renders.
//!
//! A template is part of the spec, so it is input: `{% for i in
//! range(end=100000000) %}` would allocate gigabytes before writing a byte,
//! and `set` or `replace` in a loop can double a string per step. Engine
//! configs need none of that, so the language is cut to what they use
//! (text, `{{ }}`, `if`, `for`, comments, raw, and filters that never make
//! a value longer than a constant), and the work and the output are
//! computed from the tree and the actual context as upper bounds: a
//! template over either bound is refused without running it.

use std::collections::HashMap;
use tera::Value;
use tera::ast::{Expr, ExprVal, Forloop, Node};

/// The most bytes a config file may render to.
pub(crate) const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// The most nodes a render may visit, loops unrolled.
pub(crate) const MAX_WORK: u64 = 1_000_000;
/// The most items a `range` may give.
pub(crate) const MAX_RANGE: u64 = 10_000;
/// The deepest nesting of blocks (`if`, `for`) and of brackets in a tag.
pub(crate) const MAX_NESTING: usize = 32;
/// How much longer escaping can make a value (a control character
/// becomes `\xNN`).
const ESCAPE_FACTOR: u64 = 4;
/// What a number, a boolean or a computed value counts for.
const SCALAR: u64 = 32;

/// Filters that never make a value longer than a constant: ours (sizes and
/// durations) and Tera's that keep or shorten their input.
const FILTERS: &[&str] = &[
    "gib",
    "gib_int",
    "mib",
    "kib",
    "short_size",
    "secs",
    "ms",
    "default",
    "upper",
    "lower",
    "trim",
    "trim_start",
    "trim_end",
    "capitalize",
    "title",
    "truncate",
    "int",
    "float",
    "abs",
    "round",
    "length",
    "first",
    "last",
    "as_str",
];

/// Tests (`is defined`, ...) evaluate to a boolean.
const TESTS: &[&str] = &[
    "defined",
    "undefined",
    "odd",
    "even",
    "string",
    "number",
    "divisibleby",
    "iterable",
    "object",
    "starting_with",
    "ending_with",
    "containing",
];

/// The upper bounds of one render.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cost {
    pub work: u64,
    pub output: u64,
}

/// Why a config template is refused before it renders: a construct a
/// config template may not use, or work or output over the bounds. Callers
/// only report it (as `RenderError::Template`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub String);

impl From<String> for Refused {
    fn from(s: String) -> Refused {
        Refused(s)
    }
}

impl From<&str> for Refused {
    fn from(s: &str) -> Refused {
        Refused(s.to_string())
    }
}

/// A [`Refused`] with a formatted message.
macro_rules! refused {
    ($($t:tt)*) => {
        Refused(format!($($t)*))
    };
}

/// A loop variable: how long its values can be and how many items a
/// value of it can hold (when it is looped over in turn).
#[derive(Clone, Copy)]
struct LoopVar {
    size: u64,
    items: u64,
}

struct Checker<'a> {
    context: &'a Value,
    vars: HashMap<String, LoopVar>,
    cost: Cost,
}

/// Check a template's tree against the context it will render with: the
/// upper bounds of its work and output, or why it is refused.
pub fn check(ast: &[Node], context: &Value) -> Result<Cost, Refused> {
    let mut c = Checker {
        context,
        vars: HashMap::new(),
        cost: Cost::default(),
    };
    c.body(ast, 1)?;
    Ok(c.cost)
}

/// Refuse deep nesting by reading the text: Tera's parser recurses once
/// per level of blocks or brackets and would overflow the stack first.
pub(crate) fn check_nesting(text: &str) -> Result<(), Refused> {
    const OPEN: &[&str] = &["if", "for", "macro", "block", "filter", "raw"];
    let deep = || format!("blocks or brackets nest deeper than {MAX_NESTING} levels");
    let mut blocks = 0usize;
    let mut rest = text;
    while let Some(start) = rest.find(['{']) {
        rest = &rest[start + 1..];
        let close = match rest.as_bytes().first() {
            Some(b'{') => "}}",
            Some(b'%') => "%}",
            _ => continue,
        };
        let end = rest.find(close).unwrap_or(rest.len());
        let tag = &rest[1..end];
        let mut brackets = 0usize;
        for c in tag.chars() {
            match c {
                '(' | '[' | '{' => brackets += 1,
                ')' | ']' | '}' => brackets = brackets.saturating_sub(1),
                _ => {}
            }
            if brackets > MAX_NESTING {
                return Err(Refused(deep()));
            }
        }
        if close == "%}" {
            let word = tag.trim_start_matches(['-', ' ', '\t', '\n', '\r']);
            let word = word
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .next()
                .unwrap_or("");
            if OPEN.contains(&word) {
                blocks += 1;
            } else if word.starts_with("end") {
                blocks = blocks.saturating_sub(1);
            }
            if blocks > MAX_NESTING {
                return Err(Refused(deep()));
            }
        }
        rest = &rest[end..];
    }
    Ok(())
}

/// Bytes a value renders to, at most.
fn value_size(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.len() as u64,
        Value::Array(a) => a.iter().map(|x| value_size(x) + 2).sum(),
        Value::Object(o) => o
            .iter()
            .map(|(k, x)| k.len() as u64 + value_size(x) + 4)
            .sum(),
        _ => SCALAR,
    }
}

/// Items a loop over the value goes through.
fn value_items(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.chars().count() as u64,
        Value::Array(a) => a.len() as u64,
        Value::Object(o) => o.len() as u64,
        _ => 0,
    }
}

fn lookup<'v>(context: &'v Value, ident: &str) -> Option<&'v Value> {
    ident
        .split('.')
        .try_fold(context, |v, part| v.as_object()?.get(part))
}

impl Checker<'_> {
    fn charge(&mut self, work: u64, output: u64) -> Result<(), Refused> {
        self.cost.work = self.cost.work.saturating_add(work);
        self.cost.output = self.cost.output.saturating_add(output);
        if self.cost.work > MAX_WORK {
            return Err(refused!(
                "its loops go through more than {MAX_WORK} steps; a config template loops over a few knobs at most"
            ));
        }
        if self.cost.output > MAX_OUTPUT_BYTES {
            return Err(refused!(
                "it can render more than {MAX_OUTPUT_BYTES} bytes; a config file is far smaller"
            ));
        }
        Ok(())
    }

    fn body(&mut self, nodes: &[Node], times: u64) -> Result<(), Refused> {
        for n in nodes {
            self.node(n, times)?;
        }
        Ok(())
    }

    fn node(&mut self, node: &Node, times: u64) -> Result<(), Refused> {
        self.charge(times, 0)?;
        match node {
            Node::Text(t) | Node::Raw(_, t, _) => {
                self.charge(0, times.saturating_mul(t.len() as u64))
            }
            Node::Comment(..) | Node::Break(_) | Node::Continue(_) => Ok(()),
            Node::VariableBlock(_, e) => {
                let size = self.expr(e)?;
                self.charge(0, times.saturating_mul(size.saturating_mul(ESCAPE_FACTOR)))
            }
            Node::If(i, _) => {
                for (_, cond, body) in &i.conditions {
                    self.expr(cond)?;
                    self.body(body, times)?;
                }
                match &i.otherwise {
                    Some((_, body)) => self.body(body, times),
                    None => Ok(()),
                }
            }
            Node::Forloop(_, f, _) => self.for_loop(f, times),
            Node::Set(..) => Err(Refused::from(
                "`set` is not supported in config templates; use the knobs and the context values directly",
            )),
            Node::MacroDefinition(..) => Err(Refused::from(
                "macros are not supported in config templates",
            )),
            Node::Extends(..)
            | Node::Include(..)
            | Node::ImportMacro(..)
            | Node::Block(..)
            | Node::Super => Err(Refused::from(
                "a config template is one file: `extends`, `include`, `import` and blocks are not supported",
            )),
            Node::FilterSection(..) => Err(Refused::from(
                "filter sections are not supported in config templates; filter each value",
            )),
        }
    }

    fn for_loop(&mut self, f: &Forloop, times: u64) -> Result<(), Refused> {
        let (items, var) = self.container(&f.container)?;
        let inner = times.saturating_mul(items.max(1));
        // Every step counts, an empty one too.
        self.charge(inner, 0)?;
        let saved: Vec<(String, Option<LoopVar>)> = [Some(&f.value), f.key.as_ref()]
            .into_iter()
            .flatten()
            .map(|name| (name.clone(), self.vars.insert(name.clone(), var)))
            .collect();
        let result = self.body(&f.body, inner).and_then(|_| match &f.empty_body {
            Some(b) => self.body(b, times),
            None => Ok(()),
        });
        for (name, old) in saved {
            match old {
                Some(v) => self.vars.insert(name, v),
                None => self.vars.remove(&name),
            };
        }
        result
    }

    /// How many items a loop container gives, and what its items are like.
    fn container(&mut self, e: &Expr) -> Result<(u64, LoopVar), Refused> {
        if !e.filters.is_empty() {
            return Err(
                "filters on what a loop goes through are not supported in config templates".into(),
            );
        }
        match &e.val {
            ExprVal::FunctionCall(f) if f.name == "range" => {
                let arg = |name: &str, default: Option<i64>| match f.args.get(name).map(|a| &a.val)
                {
                    Some(ExprVal::Int(i)) if *i >= 0 => Ok(*i),
                    None => default.ok_or_else(|| Refused::from("`range` needs `end`")),
                    Some(_) => Err(refused!(
                        "`range({name}=...)` must be a whole number written in the template"
                    )),
                };
                let (start, end, step) = (
                    arg("start", Some(0))?,
                    arg("end", None)?,
                    arg("step_by", Some(1))?,
                );
                let items = (end.saturating_sub(start).max(0) as u64).div_ceil(step.max(1) as u64);
                if items > MAX_RANGE {
                    return Err(refused!("`range` of {items} items; at most {MAX_RANGE}"));
                }
                Ok((
                    items,
                    LoopVar {
                        size: SCALAR,
                        items: 0,
                    },
                ))
            }
            ExprVal::Array(items) => {
                let mut size = 0;
                for i in items {
                    size = size.max(self.expr(i)?);
                }
                Ok((items.len() as u64, LoopVar { size, items: size }))
            }
            ExprVal::Ident(name) => {
                if let Some(v) = self.vars.get(name) {
                    return Ok((
                        v.items,
                        LoopVar {
                            size: v.size,
                            items: v.size,
                        },
                    ));
                }
                let v = lookup(self.context, name).ok_or_else(|| {
                    format!("a loop over `{name}`, which the template context does not have")
                })?;
                let children: Vec<&Value> = match v {
                    Value::Array(a) => a.iter().collect(),
                    Value::Object(o) => o.values().collect(),
                    _ => Vec::new(),
                };
                let size = children
                    .iter()
                    .map(|c| value_size(c))
                    .max()
                    .unwrap_or(SCALAR)
                    .max(SCALAR);
                let inner = children.iter().map(|c| value_items(c)).max().unwrap_or(0);
                Ok((value_items(v), LoopVar { size, items: inner }))
            }
            _ => Err(
                "a loop goes through a context value, an array written in the template, or `range`"
                    .into(),
            ),
        }
    }

    /// Bytes a name's value can have, at most.
    fn ident_size(&self, name: &str) -> u64 {
        let first = name.split(['.', '[']).next().unwrap_or(name);
        if let Some(var) = self.vars.get(first) {
            return var.size;
        }
        match lookup(self.context, name) {
            Some(v) => value_size(v).max(SCALAR),
            // `knobs["x"]`: some part of the context.
            None if name.contains('[') => value_size(self.context),
            // `loop.index`, or a name an `is defined` test checks for.
            None => SCALAR,
        }
    }

    /// Bytes an expression's value can have, at most.
    fn expr(&mut self, e: &Expr) -> Result<u64, Refused> {
        let mut size = self.val(&e.val)?;
        for f in &e.filters {
            if !FILTERS.contains(&f.name.as_str()) {
                return Err(refused!(
                    "the filter `{}` is not supported in config templates; these are: {}",
                    crate::error::excerpt(&f.name),
                    FILTERS.join(", ")
                ));
            }
            for a in f.args.values() {
                size = size.max(self.expr(a)?);
            }
        }
        Ok(size)
    }

    fn val(&mut self, v: &ExprVal) -> Result<u64, Refused> {
        Ok(match v {
            ExprVal::String(s) => s.len() as u64,
            ExprVal::Int(_) | ExprVal::Float(_) | ExprVal::Bool(_) => SCALAR,
            ExprVal::Ident(name) => self.ident_size(name),
            ExprVal::Math(m) => {
                self.expr(&m.lhs)?;
                self.expr(&m.rhs)?;
                SCALAR
            }
            ExprVal::Logic(l) => {
                self.expr(&l.lhs)?;
                self.expr(&l.rhs)?;
                SCALAR
            }
            ExprVal::In(i) => {
                self.expr(&i.lhs)?;
                self.expr(&i.rhs)?;
                SCALAR
            }
            ExprVal::Test(t) => {
                if !TESTS.contains(&t.name.as_str()) {
                    return Err(refused!(
                        "the test `{}` is not supported in config templates",
                        crate::error::excerpt(&t.name)
                    ));
                }
                for a in &t.args {
                    self.expr(a)?;
                }
                SCALAR
            }
            ExprVal::Array(items) => {
                let mut size = 0u64;
                for i in items {
                    size = size.saturating_add(self.expr(i)? + 2);
                }
                size
            }
            ExprVal::StringConcat(c) => {
                let mut size = 0u64;
                for part in &c.values {
                    size = size.saturating_add(self.val(part)?);
                }
                size
            }
            // `throw` stops the render with its message (a version that
            // lacks a feature).
            ExprVal::FunctionCall(f) if f.name == "throw" => {
                for a in f.args.values() {
                    self.expr(a)?;
                }
                SCALAR
            }
            ExprVal::FunctionCall(f) => {
                return Err(refused!(
                    "the function `{}` is not supported in config templates (only `throw`, and `range` in a `for`)",
                    crate::error::excerpt(&f.name)
                ));
            }
            ExprVal::MacroCall(_) => {
                return Err(Refused::from(
                    "macros are not supported in config templates",
                ));
            }
        })
    }
}
