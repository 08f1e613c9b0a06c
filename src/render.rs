//! Engine config files rendered with Tera from knobs and the environment.
//! The only importer of `tera`.
//!
//! Every `{{ value }}` goes through an escape function chosen by the file's
//! format, so a knob value holding a quote or a newline stays inside its
//! line: newlines become `\n`, quotes are escaped for the format. Templates
//! put string values inside quotes; sizes and durations arrive as numbers
//! (bytes, milliseconds) and are shaped by the filters below.
//!
//! Template context: `engine`, `version`, `version_num` (`3.2` -> 302,
//! `10.11` -> 1011), `environment`, `cache_bytes`, `memory_bytes` (0 = no
//! cap), `cpus`, and `knobs` (only the knobs that are set). Filters:
//! `gib` (`12`, `1.5`), `gib_int` (whole GiB, at least 1), `mib`, `kib`,
//! `short_size` (`12g`, `512m`), `secs` (whole seconds, at least 1), `ms`.

use crate::spec::engine::{ConfigFormat, Engine, KnobValue};
use crate::units::Bytes;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A rendered config file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RenderedConfig {
    /// File name, as in `{config:<name>}`.
    pub name: String,
    /// Where the engine reads it, with `{config_dir}` still a placeholder.
    pub path: String,
    pub content: String,
}

/// Why a template did not render.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("cannot read template {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("template {path}: {message}")]
    Template { path: String, message: String },
}

/// What a template is rendered from.
#[derive(Debug, Clone)]
pub struct RenderInput<'a> {
    pub engine: &'a Engine,
    pub version: &'a str,
    pub environment: &'a str,
    pub cache: Bytes,
    pub memory: Option<Bytes>,
    pub cpus: usize,
    /// Typed values of the knobs that are set.
    pub knobs: &'a BTreeMap<String, KnobValue>,
}

/// `3.2` -> 302, `2.0.2` -> 200, `10.11` -> 1011.
pub fn version_num(v: &str) -> u64 {
    let mut parts = v.split(['.', '-']).map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u64>()
            .unwrap_or(0)
    });
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    major * 100 + minor
}

fn escape_double(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn escape_pg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn escape_fn(format: ConfigFormat) -> fn(&str) -> String {
    match format {
        ConfigFormat::Pg => escape_pg,
        ConfigFormat::Yaml | ConfigFormat::Ini | ConfigFormat::Redis | ConfigFormat::Toml => {
            escape_double
        }
    }
}

fn num_arg(v: &tera::Value, filter: &str) -> tera::Result<f64> {
    v.as_f64()
        .ok_or_else(|| tera::Error::msg(format!("filter `{filter}` needs a number, got {v}")))
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn register_filters(t: &mut tera::Tera) {
    type Args = HashMap<String, tera::Value>;
    let gib = Bytes::GIB as f64;
    t.register_filter("gib", move |v: &tera::Value, _: &Args| {
        Ok(tera::Value::String(trim_float(num_arg(v, "gib")? / gib)))
    });
    t.register_filter("gib_int", move |v: &tera::Value, _: &Args| {
        let g = (num_arg(v, "gib_int")? / gib).floor().max(1.0) as u64;
        Ok(tera::Value::from(g))
    });
    t.register_filter("mib", |v: &tera::Value, _: &Args| {
        Ok(tera::Value::from(
            (num_arg(v, "mib")? / Bytes::MIB as f64).floor() as u64,
        ))
    });
    t.register_filter("kib", |v: &tera::Value, _: &Args| {
        Ok(tera::Value::from(
            (num_arg(v, "kib")? / Bytes::KIB as f64).floor() as u64,
        ))
    });
    t.register_filter("short_size", |v: &tera::Value, _: &Args| {
        let b = num_arg(v, "short_size")? as u64;
        for (unit, suffix) in [(Bytes::GIB, "g"), (Bytes::MIB, "m"), (Bytes::KIB, "k")] {
            if b >= unit && b.is_multiple_of(unit) {
                return Ok(tera::Value::String(format!("{}{suffix}", b / unit)));
            }
        }
        Ok(tera::Value::String(b.to_string()))
    });
    t.register_filter("secs", |v: &tera::Value, _: &Args| {
        let s = (num_arg(v, "secs")? / 1000.0).round().max(1.0) as u64;
        Ok(tera::Value::from(s))
    });
    t.register_filter("ms", |v: &tera::Value, _: &Args| {
        Ok(tera::Value::from(num_arg(v, "ms")? as u64))
    });
}

fn knob_json(v: &KnobValue) -> tera::Value {
    match v {
        KnobValue::Size(b) => tera::Value::from(b.0),
        KnobValue::Duration(d) => tera::Value::from(d.std().as_millis() as u64),
        KnobValue::Bool(b) => tera::Value::from(*b),
        KnobValue::Int(i) => tera::Value::from(*i),
        KnobValue::Enum(s) | KnobValue::String(s) => tera::Value::from(s.clone()),
    }
}

/// Render one template text in a format (used by `render_all` and tests).
pub fn render_text(
    name: &str,
    text: &str,
    format: ConfigFormat,
    input: &RenderInput,
) -> Result<String, RenderError> {
    let mut t = tera::Tera::default();
    // Every output is escaped for the file's format, whatever the template says.
    t.autoescape_on(vec![""]);
    t.set_escape_fn(escape_fn(format));
    register_filters(&mut t);
    t.add_raw_template(name, text)
        .map_err(|e| RenderError::Template {
            path: name.to_string(),
            message: tera_message(&e),
        })?;
    let mut cx = tera::Context::new();
    cx.insert("engine", &input.engine.name);
    cx.insert("version", input.version);
    cx.insert("version_num", &version_num(input.version));
    cx.insert("environment", input.environment);
    cx.insert("cache_bytes", &input.cache.0);
    cx.insert("memory_bytes", &input.memory.map(|m| m.0).unwrap_or(0));
    cx.insert("cpus", &input.cpus);
    let knobs: BTreeMap<&str, tera::Value> = input
        .knobs
        .iter()
        .map(|(k, v)| (k.as_str(), knob_json(v)))
        .collect();
    cx.insert("knobs", &knobs);
    t.render(name, &cx).map_err(|e| RenderError::Template {
        path: name.to_string(),
        message: tera_message(&e),
    })
}

fn tera_message(e: &tera::Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

/// Render every config file of an engine from templates under `home/templates`.
pub fn render_all(home: &Path, input: &RenderInput) -> Result<Vec<RenderedConfig>, RenderError> {
    let mut out = Vec::new();
    for cf in &input.engine.config_files {
        let path = home.join("templates").join(&cf.template);
        let text = std::fs::read_to_string(&path).map_err(|source| RenderError::Read {
            path: format!("templates/{}", cf.template),
            source,
        })?;
        let content = render_text(
            &format!("templates/{}", cf.template),
            &text,
            cf.format,
            input,
        )?;
        out.push(RenderedConfig {
            name: cf.name().to_string(),
            path: cf.path.clone(),
            content,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_become_comparable_numbers() {
        assert_eq!(version_num("3.2"), 302);
        assert_eq!(version_num("2.0.2"), 200);
        assert_eq!(version_num("10.11"), 1011);
        assert!(version_num("4.4") > version_num("4.2"));
    }

    #[test]
    fn double_quoted_escaping_keeps_a_value_on_one_line() {
        let e = escape_double("a\"\nb\\");
        assert_eq!(e, "a\\\"\\nb\\\\");
        assert!(!e.contains('\n'));
        assert_eq!(escape_pg("it's\nx"), "it''s\\nx");
    }
}
