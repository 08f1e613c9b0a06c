//! What a measured phase is held to: how long it runs and what the
//! kernel's counters must show (a scenario's `length:` and `expect:`).

use crate::units::Duration;

/// How long a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Length {
    Duration(Duration),
    Operations(u64),
}

/// A fidelity assertion checked against kernel counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Reads reach the disk (major faults / device reads).
    IoBound,
    /// The working set stays in memory.
    InMemory,
}
