//! `history_writer`: the fixture of the crash test of the history in
//! tests/fast_report.rs, built as an example and never installed. Indexes
//! the given run folders into HOME's history again and again until it is
//! killed. Uses only benchcage's library.
//!
//! Usage: `history_writer HOME RUN_DIR...`

use benchcage::results::history::History;
use benchcage::results::layout;
use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let home = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: history_writer HOME RUN_DIR..."))?;
    let runs = args
        .map(|dir| layout::load_run(&dir))
        .collect::<Result<Vec<_>, _>>()?;
    let mut history = History::open(&layout::history_db(&home))?;
    loop {
        for run in &runs {
            history.index_run(run)?;
        }
    }
}
