//! The cgroup-file layer both backends share: the hierarchy (v1, v2), a
//! group across its controllers, one file per controller concern, kernel
//! file names as constants in `files`, counters (`stats`, `oom`), removal
//! and delegation. The cgroup backend builds its server and client groups
//! from it; the Docker backend reads and checks a container's cgroup and
//! makes the client group with it. Everything that touches cgroup files
//! takes a root path so the v2 code runs on a temp-dir fixture in unit
//! tests.

pub mod cpuset;
pub mod delegation;
pub mod files;
pub mod freezer;
pub mod group;
pub mod hierarchy;
pub mod io;
pub mod memory;
pub mod oom;
pub mod pids;
pub mod remove;
pub mod stats;

pub use hierarchy::Hierarchy;
