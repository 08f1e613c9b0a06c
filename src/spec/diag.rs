//! Diagnostics: every spec error with its file, line, column, field and hint.

use super::yaml::Pos;
use std::fmt;

/// One problem in a spec (or a `--set` flag), shown as
/// `scenarios/x.yaml:12:5: phases[0].threads: ... (hint: ...)`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// Path relative to the project home, or `--set` for command-line overrides.
    pub file: String,
    /// 1-based; 0 when the problem has no single place (a missing file).
    pub line: usize,
    pub column: usize,
    /// Dotted field path: `phases[0].threads`, `server.cpus`.
    pub field: String,
    pub message: String,
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A problem with a command-line value (`--set`, `--env`, `--only`):
    /// no line or column.
    pub fn flag(
        source: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Self {
        Diagnostic {
            file: source.into(),
            line: 0,
            column: 0,
            field: field.into(),
            message: message.into(),
            hint,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        write!(f, ": ")?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

/// Every error found in one pass, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }
    /// `Ok(v)` when nothing was reported, else every diagnostic.
    pub(crate) fn into_result<T>(mut self, v: T) -> Result<T, Diagnostics> {
        if self.0.is_empty() {
            Ok(v)
        } else {
            // File order: by file, then position (flags without one first).
            self.0
                .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
            self.0.dedup();
            Err(self)
        }
    }
    /// A single diagnostic without a position (a file that cannot be read, a flag).
    pub fn single(file: impl Into<String>, field: &str, message: impl Into<String>) -> Self {
        Diagnostics(vec![Diagnostic::flag(file, field, message, None)])
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        if n > 1 {
            write!(f, "\n{n} errors")?;
        }
        Ok(())
    }
}

impl From<Diagnostics> for crate::error::BadInput {
    fn from(d: Diagnostics) -> Self {
        crate::error::BadInput(d.to_string())
    }
}

/// Spec diagnostics in a command's error chain are bad input (exit 2).
/// `Diagnostics` is deliberately not a `std::error::Error`, so that `?`
/// always goes through here.
impl From<Diagnostics> for anyhow::Error {
    fn from(d: Diagnostics) -> Self {
        anyhow::Error::new(crate::error::BadInput::from(d))
    }
}

/// Collects diagnostics for one file while it is read.
pub struct Cx {
    pub file: String,
    pub diags: Diagnostics,
    /// Position of every field visited, by dotted path, for later checks.
    pub positions: std::collections::BTreeMap<String, Pos>,
}

impl Cx {
    pub fn new(file: impl Into<String>) -> Self {
        Cx {
            file: file.into(),
            diags: Diagnostics::default(),
            positions: Default::default(),
        }
    }
    /// Report an error at a position.
    pub fn error(
        &mut self,
        pos: Pos,
        field: &str,
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        self.diags.push(Diagnostic {
            file: self.file.clone(),
            line: pos.line,
            column: pos.column,
            field: field.into(),
            message: message.into(),
            hint,
        });
    }
}

/// `did you mean `x`?` when a known word is close to the unknown one.
pub(crate) fn did_you_mean(word: &str, known: &[&str]) -> Option<String> {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(word, k), *k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k.to_string())
}

/// A hint for an unknown word: the closest known one, and the full list.
pub(crate) fn unknown_hint(word: &str, known: &[&str]) -> String {
    let list = known
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    match did_you_mean(word, known) {
        Some(k) => format!("did you mean `{k}`? known: {list}"),
        None => format!("known: {list}"),
    }
}

/// Join a field path: `phases[0]` + `threads` -> `phases[0].threads`.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Origin of a spec: its file and the position of each field, so that
/// checks made later (plan, host fit) can still point at the line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Origin {
    pub file: String,
    pub positions: std::collections::BTreeMap<String, Pos>,
}

impl Origin {
    /// Position of a field, or of its closest parent that has one.
    pub(crate) fn pos(&self, field: &str) -> Pos {
        let mut f = field.to_string();
        loop {
            if let Some(p) = self.positions.get(&f) {
                return *p;
            }
            match f.rfind(['.', '[']) {
                Some(i) => f.truncate(i),
                None => return Pos { line: 1, column: 1 },
            }
        }
    }
    /// A diagnostic pointing at a field of this spec.
    pub fn diag(
        &self,
        field: &str,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Diagnostic {
        let p = self.pos(field);
        Diagnostic {
            file: self.file.clone(),
            line: p.line,
            column: p.column,
            field: field.into(),
            message: message.into(),
            hint,
        }
    }
}
