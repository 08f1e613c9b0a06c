//! Results: the model, atomic writes, the run folder layout, flat rows and
//! the history database.

pub mod atomic;
pub mod flat;
pub mod history;
pub mod layout;
pub mod model;
pub mod order;
