//! One copy of each helper the test files share; a test file says
//! `mod support;` and uses what it needs.
//!
//! - `chromium`: headless Chromium in its own process group and profile.
//! - `clean`: what a run may not leave behind.
//! - `nights`: a history of nights made from copies of one real run.
//! - `cli`: the benchcage binary under test, its output, the fixtures built
//!   beside it.
//! - `copies`: copies of a real run folder with its figures scaled.
//! - `files`: reading and writing what runs leave, project homes in temp dirs.
//! - `host`: processes and cgroups as the kernel shows them.
//! - `plans`: a host of a write-up's size for plans.
//! - `scratch`: a sandbox test's folder, run id and ledgers.
//! - `launch`: engine launches for the sandbox tests and the hold fixture.
//! - `server`, `legacy`: real servers on loopback ports.
//! - `tap`: a wire tap in front of a MongoDB-protocol server.
//!
//! Which test files need root or engines, and which run in `make
//! test-fast`, is said in docs/testing.md.

#![allow(dead_code)]

pub mod chromium;
pub mod clean;
pub mod cli;
pub mod copies;
pub mod files;
pub mod host;
pub mod launch;
pub mod legacy;
pub mod nights;
pub mod plans;
pub mod scratch;
pub mod server;
pub mod tap;

// Not every test file starts a server.
#[allow(unused_imports)]
pub use server::{Kind, Server, free_port};

/// One runtime for a whole test binary: a connection lives in the runtime
/// that made it, across several `block_on` calls.
static RT: std::sync::LazyLock<tokio::runtime::Runtime> = std::sync::LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
});

/// Run a future to completion on the test binary's runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    RT.block_on(f)
}

/// The middle value (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
