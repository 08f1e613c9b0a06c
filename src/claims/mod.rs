//! Claims of a write-up decided by a run: `stats` (pure: the ratio's
//! interval and the verdict rule), `evaluate` (a run's cells into each
//! claim's outcome). What is decided is kept in `claims.json`
//! (`results::layout`) and the history; reports show it.

pub mod evaluate;
pub mod stats;
pub mod text;

pub use evaluate::evaluate;
