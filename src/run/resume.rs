//! Resume bookkeeping: which cells of a run finished, and which must run
//! again. A cell counts as done only when its `cell.json` says `finished`;
//! a failed, interrupted or half-written cell runs again on `--resume`.

use crate::model::CellStatus;
use crate::results::model::CellRecord;
use std::collections::BTreeMap;
use std::path::Path;

/// The command that resumes `run_id`: the run's own command line `argv`
/// (program, global flags, `run`, scenario and every flag but `--resume`)
/// followed by `--resume RUN`, quoted so that a POSIX shell reads back the
/// same words. Without a command line, a template the user fills in.
pub(crate) fn resume_command(argv: &[String], run_id: &str) -> String {
    if argv.is_empty() {
        return format!("benchcage run <same scenario and flags> --resume {run_id}");
    }
    let mut words: Vec<String> = argv.iter().map(|w| shell_quote(w)).collect();
    words.push("--resume".into());
    words.push(shell_quote(run_id));
    words.join(" ")
}

/// `s` as one shell word: bare when it holds only characters no shell
/// treats specially, else in single quotes (a `'` becomes `'\''`).
pub(crate) fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// What the results folder says about one planned cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellState {
    /// `cell.json` exists with status `finished`.
    Finished,
    /// `cell.json` exists with status `failed`, and why.
    Failed(String),
    /// A folder without a readable final record (interrupted or killed).
    Incomplete,
    /// Never started.
    Missing,
}

impl CellState {
    pub(crate) fn is_done(&self) -> bool {
        matches!(self, CellState::Finished)
    }
}

/// The state of each cell key in `cells_dir` (`results/<run>/cells`).
pub(crate) fn cell_states(cells_dir: &Path, keys: &[String]) -> BTreeMap<String, CellState> {
    keys.iter()
        .map(|k| (k.clone(), cell_state(&cells_dir.join(k))))
        .collect()
}

fn cell_state(dir: &Path) -> CellState {
    if !dir.exists() {
        return CellState::Missing;
    }
    let Ok(text) = std::fs::read(dir.join("cell.json")) else {
        return CellState::Incomplete;
    };
    match serde_json::from_slice::<CellRecord>(&text) {
        Ok(rec) if rec.status == CellStatus::Finished => CellState::Finished,
        Ok(rec) if rec.status == CellStatus::Failed => {
            CellState::Failed(rec.failure.unwrap_or_else(|| "no reason recorded".into()))
        }
        _ => CellState::Incomplete,
    }
}

/// Keys that must run, in plan order.
pub fn to_run(keys: &[String], states: &BTreeMap<String, CellState>) -> Vec<String> {
    keys.iter()
        .filter(|k| !states.get(*k).is_some_and(CellState::is_done))
        .cloned()
        .collect()
}

/// Keys the resumed plan has that the original run did not: the scenario,
/// an engine spec, a template or an override changed since.
pub(crate) fn unknown_keys(planned: &[String], recorded: &[String]) -> Vec<String> {
    planned
        .iter()
        .filter(|k| !recorded.contains(k))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_command_quotes_every_word_a_shell_would_split_or_expand() {
        let argv: Vec<String> = [
            "benchcage",
            "run",
            "scenarios/quickstart.yaml",
            "--only",
            "redis@7.0/quick start",
            "--set",
            "server.memory=1GiB",
            "--results",
            "/tmp/it's $HOME",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            resume_command(&argv, "20261130-101500-ab12"),
            "benchcage run scenarios/quickstart.yaml --only 'redis@7.0/quick start' \
             --set server.memory=1GiB --results '/tmp/it'\\''s $HOME' --resume 20261130-101500-ab12"
        );
        assert_eq!(shell_quote(""), "''");
        assert!(resume_command(&[], "x").contains("<same scenario and flags> --resume x"));
    }

    fn write_cell(cells: &Path, key: &str, status: CellStatus) {
        let dir = cells.join(key);
        std::fs::create_dir_all(&dir).unwrap();
        let rec = CellRecord {
            key: key.into(),
            status,
            failure: (status == CellStatus::Failed).then(|| "engine exited".to_string()),
            ..Default::default()
        };
        std::fs::write(dir.join("cell.json"), serde_json::to_vec(&rec).unwrap()).unwrap();
    }

    #[test]
    fn only_finished_cells_are_skipped_on_resume() {
        let tmp = tempfile::tempdir().unwrap();
        let cells = tmp.path();
        write_cell(cells, "a", CellStatus::Finished);
        write_cell(cells, "b", CellStatus::Failed);
        std::fs::create_dir_all(cells.join("c")).unwrap();
        std::fs::create_dir_all(cells.join("e")).unwrap();
        std::fs::write(cells.join("e/cell.json"), b"{\"key\":").unwrap();
        let keys: Vec<String> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let states = cell_states(cells, &keys);
        assert_eq!(states["a"], CellState::Finished);
        assert_eq!(states["b"], CellState::Failed("engine exited".into()));
        assert_eq!(states["c"], CellState::Incomplete);
        assert_eq!(states["d"], CellState::Missing);
        assert_eq!(states["e"], CellState::Incomplete);
        assert_eq!(to_run(&keys, &states), vec!["b", "c", "d", "e"]);
    }

    #[test]
    fn a_changed_plan_shows_its_new_keys() {
        let planned = vec!["a".to_string(), "z".to_string()];
        let recorded = vec!["a".to_string(), "b".to_string()];
        assert_eq!(unknown_keys(&planned, &recorded), vec!["z"]);
    }
}
