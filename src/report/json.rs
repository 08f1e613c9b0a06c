//! JSON export: an array of rows, one per cell x phase x operation kind.

use crate::report::{Exporter, ReportError, ReportInput};
use crate::results::flat::{FlatRow, flatten};

/// Pretty JSON array of `FlatRow`s.
pub(crate) struct Json;

impl Exporter for Json {
    fn export(&self, input: &ReportInput) -> Result<String, ReportError> {
        let rows: Vec<FlatRow> = input.runs.iter().flat_map(flatten).collect();
        let mut s = serde_json::to_string_pretty(&rows)?;
        s.push('\n');
        Ok(s)
    }
}
