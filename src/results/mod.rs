//! Results: the model, atomic writes, run layout and history.

pub mod model;
