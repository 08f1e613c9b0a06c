//! How TPC-C ran on MongoDB: py-tpcc's two document schemas and its two
//! ways of running a transaction. A phase result records both, so a
//! report can tell runs of one schema or mode from those of the other.

/// py-tpcc's document schemas (its `denormalize` option).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocumentSchema {
    /// Each order embeds its lines in an `ORDER_LINE` array (py-tpcc's
    /// default, `denormalize: true`).
    #[default]
    Denormalized,
    /// One collection per table: `ORDER_LINE` is a collection of its own
    /// (`denormalize: false`).
    Normalized,
}

impl DocumentSchema {
    /// The schema py-tpcc's `denormalize` option names; its default when
    /// not given.
    pub fn from_denormalize(denormalize: Option<bool>) -> DocumentSchema {
        match denormalize {
            Some(false) => DocumentSchema::Normalized,
            Some(true) | None => DocumentSchema::Denormalized,
        }
    }

    /// Whether orders embed their lines.
    pub(crate) fn embeds_lines(self) -> bool {
        self == DocumentSchema::Denormalized
    }

    /// `denormalized` or `normalized`.
    pub fn name(self) -> &'static str {
        match self {
            DocumentSchema::Denormalized => "denormalized",
            DocumentSchema::Normalized => "normalized",
        }
    }
}

impl std::fmt::Display for DocumentSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DocumentSchema::Denormalized => "denormalized documents (orders embed their lines)",
            DocumentSchema::Normalized => {
                "normalized documents (ORDER_LINE a collection of its own)"
            }
        })
    }
}

/// How a TPC-C transaction ran on MongoDB, as the server allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxnMode {
    /// One multi-document transaction each (a 4.0+ replica set).
    MultiDocument,
    /// py-tpcc's non-transactional mode: a sequence of single-document
    /// writes (a standalone server, or one older than 4.0).
    None,
}

impl TxnMode {
    /// `multi-document` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            TxnMode::MultiDocument => "multi-document",
            TxnMode::None => "none",
        }
    }
}

impl std::fmt::Display for TxnMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TxnMode::MultiDocument => "multi-document transactions",
            TxnMode::None => "no transactions (py-tpcc's non-transactional mode)",
        })
    }
}

/// What a TPC-C phase on MongoDB ran in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MongoTpccMode {
    pub schema: DocumentSchema,
    /// How the transactions ran; `None` for the load, which runs none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<TxnMode>,
}

impl std::fmt::Display for MongoTpccMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.schema)?;
        match self.transactions {
            Some(t) => write!(f, ", {t}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denormalize_false_is_the_normalized_schema_and_the_default_embeds_lines() {
        assert_eq!(
            DocumentSchema::from_denormalize(Some(false)),
            DocumentSchema::Normalized
        );
        assert!(DocumentSchema::from_denormalize(None).embeds_lines());
        assert!(DocumentSchema::from_denormalize(Some(true)).embeds_lines());
    }

    #[test]
    fn a_mode_reads_as_words_and_serializes_as_names() {
        let m = MongoTpccMode {
            schema: DocumentSchema::Normalized,
            transactions: Some(TxnMode::MultiDocument),
        };
        assert_eq!(
            m.to_string(),
            "normalized documents (ORDER_LINE a collection of its own), multi-document transactions"
        );
        let json = serde_json::to_value(m).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"schema": "normalized", "transactions": "multi-document"})
        );
        let load = MongoTpccMode {
            schema: DocumentSchema::Denormalized,
            transactions: None,
        };
        assert_eq!(
            serde_json::to_value(load).unwrap(),
            serde_json::json!({"schema": "denormalized"})
        );
    }
}
