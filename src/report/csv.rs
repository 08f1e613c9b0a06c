//! CSV export: a header, then one row per cell x phase x operation kind
//! (`COLUMNS`, then the phase's costs, `COST_COLUMNS`).

use crate::report::{Exporter, ReportError, ReportInput};
use crate::results::flat::{COLUMNS, COST_COLUMNS, flatten};

/// RFC 4180 CSV of `FlatRow`s.
pub(crate) struct Csv;

impl Exporter for Csv {
    fn export(&self, input: &ReportInput) -> Result<String, ReportError> {
        let mut out = [COLUMNS.join(","), COST_COLUMNS.join(",")].join(",");
        out.push('\n');
        for run in &input.runs {
            for row in flatten(run) {
                let fields: Vec<String> = row
                    .values()
                    .iter()
                    .chain(row.cost_values().iter())
                    .map(|v| field(v))
                    .collect();
                out.push_str(&fields.join(","));
                out.push('\n');
            }
        }
        Ok(out)
    }
}

/// Quote a field when it holds a comma, quote or line break.
fn field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_with_commas_and_quotes_are_quoted() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
