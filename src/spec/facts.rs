//! What an engine reports about itself after the load, asked over its own
//! protocol: the size of its data (settle's `25% of data` is a share of
//! it) and the cache it really uses (an engine may size it from host RAM
//! rather than from its limit). An engine spec may say how to ask:
//!
//! ```yaml
//! facts:
//!   data_size: "SELECT pg_database_size(current_database())::text"
//!   cache_size: "SELECT CAST(@@rocksdb_block_cache_size AS CHAR)"
//! ```
//!
//! A query is SQL for the postgres and mysql probes (the first number of
//! the reply is the answer) and a field of `INFO memory` for redis. Each
//! one omitted is the probe's default ([`Facts::defaults`]); a
//! MongoDB-protocol engine answers through `dbStats` and `serverStatus`.

use super::de::{Fields, FromNode};
use super::diag::Cx;
use super::yaml::Node;
use crate::model::Probe;

pub use crate::model::facts::{FactQuery, Facts};

/// `facts:` of an engine spec over the probe's defaults; problems go to `cx`.
pub(crate) fn facts_from_node(node: Option<&Node>, probe: &Probe, cx: &mut Cx) -> Facts {
    let mut facts = Facts::defaults(probe);
    let Some(node) = node else {
        return facts;
    };
    let Some(f) = Fields::open(node, cx, "facts", &["data_size", "cache_size"]) else {
        return facts;
    };
    for key in ["data_size", "cache_size"] {
        let Some(n) = f.get(key) else {
            continue;
        };
        let Some(text) = String::from_node(n, cx, &f.field(key)) else {
            continue;
        };
        match query(probe, text) {
            Ok(q) if key == "data_size" => facts.data_size = q,
            Ok(q) => facts.cache_size = q,
            Err((msg, hint)) => cx.error(f.pos_of(key), &f.field(key), msg, Some(hint)),
        }
    }
    facts
}

/// One query as the probe's protocol takes it.
fn query(probe: &Probe, text: String) -> Result<FactQuery, (String, String)> {
    if text.trim().is_empty() || text.contains('\0') {
        return Err((
            "the query is empty or holds a NUL byte".into(),
            "give the SQL (postgres, mysql) or the `INFO memory` field (redis) to ask".into(),
        ));
    }
    match probe {
        Probe::Postgres { .. } | Probe::Mysql { .. } => Ok(FactQuery::Sql(text)),
        Probe::Redis if text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Ok(FactQuery::Info(text))
        }
        Probe::Redis => Err((
            format!(
                "`{}` is not a field of redis `INFO memory`",
                crate::error::excerpt(&text)
            ),
            "name a field like `used_memory_dataset`".into(),
        )),
        Probe::Mongodb => Err((
            "a MongoDB-protocol engine reports its data and cache through dbStats and serverStatus; they cannot be asked otherwise".into(),
            "remove `facts`".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Diagnostics, Kind, Parsed, parse_text};

    /// An engine of `probe` with `extra` lines, parsed.
    fn engine(probe: &str, extra: &str) -> Result<crate::spec::Engine, String> {
        let text = format!(
            "versions: {{\"1\": {{binary: /bin/true}}}}\ncommand: [\"{{binary}}\"]\n\
             readiness: {{probe: {probe}}}\n{extra}"
        );
        let mut diags = Diagnostics::default();
        match parse_text("engines/e.yaml", "e", &text, Kind::Engine, &mut diags) {
            Some(Parsed::Engine(e)) if diags.is_empty() => Ok(*e),
            _ => Err(diags.to_string()),
        }
    }

    #[test]
    fn an_engine_without_facts_asks_its_probes_default_questions() {
        let e = engine("mysql", "").unwrap();
        assert_eq!(
            e.facts.cache_size,
            FactQuery::Sql("SELECT CAST(@@innodb_buffer_pool_size AS CHAR)".into())
        );
        let e = engine("redis", "").unwrap();
        assert_eq!(
            e.facts.data_size,
            FactQuery::Info("used_memory_dataset".into())
        );
        assert_eq!(e.facts.cache_size, FactQuery::Info("maxmemory".into()));
    }

    #[test]
    fn an_engine_names_the_question_its_answer_needs_and_keeps_the_other_default() {
        let e = engine(
            "mysql",
            "facts: {cache_size: \"SELECT CAST(@@rocksdb_block_cache_size AS CHAR)\"}\n",
        )
        .unwrap();
        assert_eq!(
            e.facts.cache_size,
            FactQuery::Sql("SELECT CAST(@@rocksdb_block_cache_size AS CHAR)".into())
        );
        assert_eq!(
            e.facts.data_size,
            Facts::defaults(&e.readiness.probe).data_size
        );
    }

    #[test]
    fn questions_the_probe_cannot_ask_are_refused_at_their_line() {
        let e = engine("redis", "facts: {data_size: \"INFO keyspace\"}\n").unwrap_err();
        assert!(
            e.contains("engines/e.yaml:4:")
                && e.contains("`INFO keyspace` is not a field of redis `INFO memory`"),
            "{e}"
        );
        let e = engine("mongodb", "facts: {cache_size: x}\n").unwrap_err();
        assert!(e.contains("remove `facts`"), "{e}");
        let e = engine("postgres", "facts: {data_size: \"\"}\n").unwrap_err();
        assert!(e.contains("the query is empty"), "{e}");
        let e = engine("postgres", "storage_engine: rocksdb\n").unwrap_err();
        assert!(
            e.contains("storage_engine is for engines the MySQL protocol reaches"),
            "{e}"
        );
    }
}
