//! The cgroup backend: engines under a `benchcage/<run-id>/` parent with
//! `server` and `client` groups in every controller (v1) or in the unified
//! tree (v2), made with the shared cgroup-file layer
//! ([`crate::sandbox::cgroupfs`]).

pub mod sandbox;

pub use sandbox::{CgroupConfig, CgroupSandbox};
