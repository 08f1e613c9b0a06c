//! Where a run or a cell stands: `running` while it is written, then
//! `finished`, `failed` or `interrupted`. Records spell them in lowercase.

use std::fmt;

/// Where a run (`run.json`) stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Being written by a live benchcage (or by one that died: `cleanup`
    /// marks it `interrupted`).
    #[default]
    Running,
    /// Every cell ran to its end.
    Finished,
    /// A cell failed, or the run could not go on.
    Failed,
    /// Stopped by a signal or a dead owner; `--resume` continues it.
    Interrupted,
}

/// Where a cell (`cell.json`) stands: the same states as a run.
pub type CellStatus = RunStatus;

impl RunStatus {
    /// Its name in records and the history database.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// The status named `s` in a record, if it is one.
    pub fn parse(s: &str) -> Option<RunStatus> {
        [
            RunStatus::Running,
            RunStatus::Finished,
            RunStatus::Failed,
            RunStatus::Interrupted,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_written_and_read_as_their_lowercase_names() {
        for st in [
            RunStatus::Running,
            RunStatus::Finished,
            RunStatus::Failed,
            RunStatus::Interrupted,
        ] {
            let json = serde_json::to_string(&st).unwrap();
            assert_eq!(json, format!("\"{}\"", st.as_str()));
            assert_eq!(serde_json::from_str::<RunStatus>(&json).unwrap(), st);
            assert_eq!(RunStatus::parse(st.as_str()), Some(st));
        }
        assert_eq!(RunStatus::parse("done"), None);
    }
}
