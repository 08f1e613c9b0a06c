//! `benchcage run`: from a scenario to verified results.
//!
//! - `id`: run ids.
//! - `key`: cell keys, the identity of a cell across runs.
//! - `resume`: which cells of an earlier run finished.
//! - `signals`: Ctrl-C and SIGTERM as cancellation tokens.

pub mod id;
pub mod key;
pub mod resume;
pub mod signals;
