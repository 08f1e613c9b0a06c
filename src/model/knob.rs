//! A knob's value once its type was checked (`spec::engine` reads it,
//! `plan` layers it, `render` puts it in a template).

use crate::units::{Bytes, Duration};

/// A knob value after its type was checked.
#[derive(Debug, Clone, PartialEq)]
pub enum KnobValue {
    Size(Bytes),
    Duration(Duration),
    Bool(bool),
    Int(i64),
    Enum(String),
    String(String),
}

impl KnobValue {
    /// Canonical text: `12GiB`, `1s`, `true`, `42`, the word or the string.
    pub(crate) fn canonical(&self) -> String {
        match self {
            KnobValue::Size(b) => b.to_string(),
            KnobValue::Duration(d) => d.to_string(),
            KnobValue::Bool(b) => b.to_string(),
            KnobValue::Int(i) => i.to_string(),
            KnobValue::Enum(s) | KnobValue::String(s) => s.clone(),
        }
    }
}
