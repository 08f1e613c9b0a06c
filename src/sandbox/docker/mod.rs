//! The Docker backend: engines in containers with the same limits as the
//! cgroup backend. `client` is the only importer of bollard.

pub mod client;
