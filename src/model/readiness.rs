//! Readiness as data: which probe proves the engine serves, and how long
//! it may take.

use super::probe::Probe;

/// Readiness is data: which protocol round trip proves the engine serves.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Readiness {
    pub probe: Probe,
    pub timeout: crate::units::Duration,
}
