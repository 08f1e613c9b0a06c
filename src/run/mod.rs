//! `benchcage run`: from a scenario to verified results.
//!
//! - `session`: one `benchcage run`, from its flags to the indexed run
//!   (plan, fetch, reap, adapt, the matrix here or on Slurm, report).
//! - `cell`: one cell, start to end (provision .. teardown, write);
//!   `cell/topology/` the members of a replica set or sharded cluster.
//! - `matrix`: every cell of a plan, run records, resume, interrupts.
//! - `phase`, `exec`: how a phase runs (the load generator as a child in
//!   the client group, external tools).
//! - `id`, `key`, `resume`: run ids, cell keys, what finished.
//! - `orphans`: runs whose benchcage was killed outright, and their
//!   empty work folders (for `cleanup`).
//! - `signals`: Ctrl-C and SIGTERM as cancellation tokens.
//! - `claim`: CPUs a live run holds; a cell whose CPUs are held waits.
//! - `live`: the live status line.
//! - `lock`: one live process per run (a `--resume` of a live run is refused).
//! - `disk`, `provenance`: free space, data size, version, git rev, spec hashes.
//!
//! Thread sweeps are sub-results of one cell: a cell loads its data once
//! and runs each phase at each thread count in order, one phase file per
//! run (`phases/02-workload-a-t4.json`). The cell key includes the thread
//! lists, so a different sweep is a different cell.

pub mod adapt;
pub mod cell;
pub mod claim;
pub mod cluster;
pub mod disk;
pub mod exec;
pub mod facts;
pub mod id;
pub mod key;
pub mod live;
pub mod lock;
pub mod matrix;
pub mod node;
pub mod orphans;
pub mod phase;
pub mod provenance;
pub mod resume;
pub mod session;
pub mod signals;
pub mod tools;
