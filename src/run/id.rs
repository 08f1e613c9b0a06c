//! Run ids: `YYYYMMDD-HHMMSS-xxxx` (UTC time of the start and four hex
//! digits: the millisecond of the start in the top ten bits, six random
//! bits below). Ids sort by start time to the millisecond, so two runs
//! started in the same second still sort in the order they started; the
//! random bits keep two runs started in the same millisecond apart. The
//! id is also the run's folder name under `results/`.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::fmt;

/// A validated run id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RunId(String);

/// A name that is not a run id (bad input: exit code 2); the message
/// shows the form ids have.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotARunId(pub String);

impl RunId {
    /// A fresh id for a run starting at `now`.
    pub fn new(now: DateTime<Utc>) -> RunId {
        let mut h = Sha256::new();
        h.update(std::process::id().to_le_bytes());
        h.update(now.timestamp_nanos_opt().unwrap_or_default().to_le_bytes());
        h.update(format!("{:?}", std::thread::current().id()).as_bytes());
        let random = u16::from(h.finalize()[0] & 0x3f);
        // A leap second reports 1000..1999 ms: it sorts last in its second.
        let millis = now.timestamp_subsec_millis().min(999) as u16;
        RunId(format!(
            "{}-{:04x}",
            now.format("%Y%m%d-%H%M%S"),
            (millis << 6) | random
        ))
    }

    /// Parse an id given on the command line (`--resume`).
    pub fn parse(s: &str) -> Result<RunId, NotARunId> {
        let ok = s.len() == 20
            && s.char_indices().all(|(i, c)| match i {
                8 | 15 => c == '-',
                16..=19 => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
                _ => c.is_ascii_digit(),
            });
        if ok {
            Ok(RunId(s.to_string()))
        } else {
            Err(NotARunId(format!(
                "`{s}` is not a run id; run ids look like `20261130-101500-ab12` (the folder names under results/)"
            )))
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
    fn run_ids_of_one_second_sort_by_their_start() {
        let at = |ms: u32| {
            let t = DateTime::parse_from_rfc3339("2026-11-30T10:15:00Z")
                .unwrap()
                .with_timezone(&Utc);
            RunId::new(t + chrono::Duration::milliseconds(i64::from(ms)))
        };
        for (earlier, later) in [(0, 1), (1, 2), (499, 500), (998, 999), (999, 1000)] {
            for _ in 0..50 {
                let (a, b) = (at(earlier), at(later));
                assert!(a < b, "{a} started before {b}");
            }
        }
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
