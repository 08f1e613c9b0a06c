//! Claims of a write-up decided by a run: `stats` (pure: the verdict an
//! interval from `crate::stats` gives), `evaluate` (a run's cells into each
//! claim's outcome). What is decided is kept in `claims.json`
//! (`results::layout`) and the history; reports show it.

pub mod evaluate;
pub mod stats;
pub mod text;

pub use evaluate::evaluate;
