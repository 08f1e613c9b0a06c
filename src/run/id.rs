//! Run ids: `YYYYMMDD-HHMMSS-xxxx` (UTC time of the start and four hex
//! digits that keep two runs started in the same second apart). The id is
//! also the run's folder name under `results/`.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::fmt;

/// A validated run id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(String);

impl RunId {
    /// A fresh id for a run starting at `now`.
    pub fn new(now: DateTime<Utc>) -> RunId {
        let mut h = Sha256::new();
        h.update(std::process::id().to_le_bytes());
        h.update(now.timestamp_nanos_opt().unwrap_or_default().to_le_bytes());
        h.update(format!("{:?}", std::thread::current().id()).as_bytes());
        let tail = hex::encode(&h.finalize()[..2]);
        RunId(format!("{}-{tail}", now.format("%Y%m%d-%H%M%S")))
    }

    /// Parse an id given on the command line (`--resume`).
    pub fn parse(s: &str) -> Result<RunId, String> {
        let ok = s.len() == 20
            && s.char_indices().all(|(i, c)| match i {
                8 | 15 => c == '-',
                16..=19 => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
                _ => c.is_ascii_digit(),
            });
        if ok {
            Ok(RunId(s.to_string()))
        } else {
            Err(format!(
                "`{s}` is not a run id; run ids look like `20261130-101500-ab12` (the folder names under results/)"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_id_parses_back_and_names_its_start() {
        let now = DateTime::parse_from_rfc3339("2026-11-30T10:15:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let id = RunId::new(now);
        assert!(id.as_str().starts_with("20261130-101500-"), "{id}");
        assert_eq!(RunId::parse(id.as_str()).unwrap(), id);
    }

    #[test]
    fn a_path_or_a_malformed_id_is_not_a_run_id() {
        for bad in [
            "../etc",
            "20261130-101500-ab1",
            "20261130-101500-ABCD",
            "x0261130-101500-ab12",
            "",
        ] {
            assert!(RunId::parse(bad).is_err(), "{bad}");
        }
    }
}
