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
//!
//! Templates are input too: `bounds` checks each one before it renders
//! (no `set`, macros or includes; bounded loops and output), and the
//! output is written through a cap, so no template can fill the memory.

mod bounds;

use crate::model::knob::KnobValue;
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

/// A config file rendered from a template.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Path under templates/: `mongodb/mongod.conf.tera`.
    pub template: String,
    /// Where the engine reads it: `{config_dir}/mongod.conf`.
    pub path: String,
    /// How values are escaped in this file.
    pub format: ConfigFormat,
}

impl ConfigFile {
    /// The file name, used in `{config:<name>}`.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// Syntax of a config file, which decides how string values are escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigFormat {
    /// YAML (mongod.conf): double-quoted strings.
    Yaml,
    /// INI / my.cnf and old mongod `key = value` files: double-quoted strings.
    Ini,
    /// redis.conf: double-quoted strings.
    Redis,
    /// postgresql.conf: single-quoted strings.
    Pg,
    /// TOML: double-quoted basic strings.
    Toml,
}

/// What the renderer needs of an engine: its name (`engine` in a
/// template) and its config files. `spec::engine::Engine` is one.
pub trait EngineFiles: std::fmt::Debug + Sync {
    fn name(&self) -> &str;
    fn config_files(&self) -> &[ConfigFile];
}

/// Why a template did not render.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("template {path}: this file {source}")]
    Read {
        path: String,
        source: crate::bounded::ReadError,
    },
    #[error("template {path}: {message}")]
    Template { path: String, message: String },
}

/// What a template is rendered from.
#[derive(Debug, Clone)]
pub struct RenderInput<'a> {
    pub engine: &'a dyn EngineFiles,
    pub version: &'a str,
    pub environment: &'a str,
    pub cache: Bytes,
    pub memory: Option<Bytes>,
    pub cpus: usize,
    /// Typed values of the knobs that are set.
    pub knobs: &'a BTreeMap<String, KnobValue>,
    /// The topology member the files are for (`member` in templates).
    pub member: MemberContext,
}

/// `member` in a template: which server of the cell's topology the files
/// are for (a MariaDB replica set's members each need a `server_id` of
/// their own). A standalone server is member 0 of 1, the primary.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemberContext {
    /// `m0`, `m1`, ...
    pub name: String,
    /// `primary`, `secondary`, ...
    pub role: String,
    /// Its place in the topology, from 0.
    pub index: usize,
    /// How many members the topology has.
    pub count: usize,
    /// The shard it belongs to, in a sharded cluster.
    pub shard: Option<u32>,
    /// The replica set it is a member of (`benchcage`, `cfg`, `shard0`);
    /// empty for one server, a router or a Redis Cluster member.
    pub set: String,
}

impl MemberContext {
    /// The one server of a standalone cell.
    pub fn standalone() -> MemberContext {
        MemberContext {
            name: "m0".into(),
            role: "primary".into(),
            index: 0,
            count: 1,
            shard: None,
            set: String::new(),
        }
    }
}

/// `3.2` -> 302, `2.0.2` -> 200, `10.11` -> 1011.
pub(crate) fn version_num(v: &str) -> u64 {
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
    let fail = |message: String| RenderError::Template {
        path: name.to_string(),
        message: crate::error::clip_lines(&message),
    };
    // Before Tera's parser, which recurses once per level.
    bounds::check_nesting(text).map_err(|e| fail(e.0))?;
    let mut t = tera::Tera::default();
    // Every output is escaped for the file's format, whatever the template says.
    t.autoescape_on(vec![""]);
    t.set_escape_fn(escape_fn(format));
    register_filters(&mut t);
    t.add_raw_template(name, text)
        .map_err(|e| fail(tera_message(&e)))?;
    let cx = context(input);
    let tree = tera::Template::new(name, None, text).map_err(|e| fail(tera_message(&e)))?;
    bounds::check(&tree.ast, &cx.clone().into_json()).map_err(|e| fail(e.0))?;
    let mut out = Capped::new(bounds::MAX_OUTPUT_BYTES);
    t.render_to(name, &cx, &mut out)
        .map_err(|e| fail(tera_message(&e)))?;
    String::from_utf8(out.bytes).map_err(|_| fail("rendered text that is not UTF-8".into()))
}

/// A writer that refuses to grow past a limit (a backstop for `bounds`).
struct Capped {
    bytes: Vec<u8>,
    limit: u64,
}

impl Capped {
    fn new(limit: u64) -> Self {
        Capped {
            bytes: Vec::new(),
            limit,
        }
    }
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if (self.bytes.len() + buf.len()) as u64 > self.limit {
            return Err(std::io::Error::other(format!(
                "the output grew past {} bytes",
                self.limit
            )));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The values a template sees.
fn context(input: &RenderInput) -> tera::Context {
    let mut cx = tera::Context::new();
    cx.insert("engine", input.engine.name());
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
    cx.insert("member", &input.member);
    cx
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
pub(crate) fn render_all(
    home: &Path,
    input: &RenderInput,
) -> Result<Vec<RenderedConfig>, RenderError> {
    let mut out = Vec::new();
    for cf in input.engine.config_files() {
        let path = home.join("templates").join(&cf.template);
        let text = crate::bounded::read_bounded(&path, crate::bounded::MAX_TEMPLATE_BYTES)
            .map_err(|source| RenderError::Read {
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

    fn render(tpl: &str, knobs: &BTreeMap<String, KnobValue>) -> Result<String, String> {
        let project = crate::spec::Project::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let input = RenderInput {
            engine: &project.engines["redis"],
            version: "7.0",
            environment: "x",
            cache: Bytes(Bytes::MIB),
            memory: None,
            cpus: 1,
            knobs,
            member: MemberContext::standalone(),
        };
        render_text("t", tpl, ConfigFormat::Redis, &input).map_err(|e| e.to_string())
    }

    fn refused_fast(tpl: &str, why: &str) {
        let start = std::time::Instant::now();
        let e = render(tpl, &BTreeMap::new()).unwrap_err();
        assert!(e.contains(why), "{tpl}: {e}");
        assert!(start.elapsed() < std::time::Duration::from_secs(1), "{tpl}");
    }

    #[test]
    fn a_template_loop_that_would_render_gigabytes_is_refused_before_it_runs() {
        refused_fast(
            "{% for i in range(end=100000000) %}x{% endfor %}",
            "at most 10000",
        );
        refused_fast(
            "{% for i in range(end=10000) %}{% for j in range(end=10000) %}{% endfor %}{% endfor %}",
            "more than 1000000 steps",
        );
        refused_fast(
            "{% for i in range(end=10000) %}{{ engine ~ engine ~ engine ~ engine }}........{% endfor %}",
            "more than 1048576 bytes",
        );
        refused_fast(
            "{% set_global s = \"x\" %}{% for i in range(end=60) %}{% set_global s = s ~ s %}{% endfor %}",
            "`set` is not supported",
        );
        refused_fast(
            "{{ engine | replace(from=\"\", to=\"xxxxxxxx\") | replace(from=\"\", to=\"xxxxxxxx\") }}",
            "filter `replace` is not supported",
        );
        refused_fast(
            "{% macro m(n) %}{{ self::m(n=n) }}{% endmacro m %}{{ self::m(n=1) }}",
            "macros are not supported",
        );
        refused_fast(
            "{{ get_env(name=\"HOME\") }}",
            "function `get_env` is not supported",
        );
        refused_fast(
            &format!(
                "{}x{}",
                "{% if true %}".repeat(20_000),
                "{% endif %}".repeat(20_000)
            ),
            "nest deeper than 32",
        );
        refused_fast(
            &format!("{{{{ {}1{} }}}}", "(".repeat(50_000), ")".repeat(50_000)),
            "nest deeper than 32",
        );
    }

    #[test]
    fn a_loop_over_a_long_knob_counts_its_characters() {
        let mut knobs = BTreeMap::new();
        knobs.insert("s".to_string(), KnobValue::String("y".repeat(2000)));
        let e = render(
            "{% for a in knobs.s %}{% for b in knobs.s %}{{ a }}{% endfor %}{% endfor %}",
            &knobs,
        )
        .unwrap_err();
        assert!(e.contains("more than 1000000 steps"), "{e}");
    }

    #[test]
    fn loops_conditions_and_filters_that_configs_use_still_render() {
        let mut knobs = BTreeMap::new();
        knobs.insert("a".to_string(), KnobValue::Int(3));
        knobs.insert("b".to_string(), KnobValue::Size(Bytes(Bytes::GIB)));
        let out = render(
            "{% for k, v in knobs %}{{ k }}={{ v }}\n{% endfor %}{% for i in range(end=3) %}{{ loop.index }}{% endfor %}\n{% if knobs.b is defined %}{{ knobs.b | gib_int }}g{% endif %}\n{{ knobs.c | default(value=\"none\") | upper }}",
            &knobs,
        )
        .unwrap();
        assert_eq!(out, "a=3\nb=1073741824\n123\n1g\nNONE");
    }
}
