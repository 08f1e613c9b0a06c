//! The per-second sampler and the fidelity record.
//!
//! - `procfs`: facts read from `/proc` (thread CPUs, locked and peak memory),
//!   each function taking the proc root so unit tests run on a fixture.
//! - `sampler`: every second, the server's and the client's kernel counters
//!   as a time series, over a [`sampler::StatsSource`].
//! - `fidelity`: the checks that decide whether a cell's numbers may be shown,
//!   as pure functions over what was recorded.

pub mod fidelity;
pub mod procfs;
pub mod sampler;
