//! The cgroup backend: engines under a `benchcage/<run-id>/` parent with
//! `server` and `client` groups in every controller (v1) or in the unified
//! tree (v2). One file per controller concern; kernel file names are
//! constants in `files`; everything that touches cgroup files takes a root
//! path so the v2 code runs on a temp-dir fixture in unit tests.

pub mod cpuset;
pub mod delegation;
pub mod files;
pub mod freezer;
pub mod group;
pub mod hierarchy;
pub mod io;
pub mod memory;
pub mod pids;
pub mod remove;
pub mod sandbox;
pub mod stats;

pub use hierarchy::Hierarchy;
pub use sandbox::{CgroupConfig, CgroupSandbox};
