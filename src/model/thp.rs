//! What an environment and an engine say about the host's transparent
//! huge pages (the kernel setting itself is `sandbox::thp`'s).

/// What an environment asks of the host's THP for its cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpPolicy {
    /// Leave the host's setting as it is (an engine that refuses THP
    /// `always` is then refused at plan time on such a host).
    #[default]
    Leave,
    /// Write `never` before each cell, restore the old value after it.
    Off,
}

/// What an engine needs of THP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThpNeed {
    /// Runs whatever the setting.
    #[default]
    Any,
    /// Refuses to start while `enabled` is `always` (TokuMX).
    NotAlways,
}
