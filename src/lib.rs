//! benchcage: honest database benchmarks in constrained environments.
//!
//! Layout (one concern per module, see docs/ARCHITECTURE.md):
//! - `claims`: a write-up's findings decided by a run (ratio, interval, verdict).
//! - `cli`, `commands`: the command line and one file per subcommand.
//! - `units`: sizes, shares, durations and CPU sets, parsed once.
//! - `bounded`: reading a file the user gives (spec, template), regular and bounded.
//! - `model`: the shared vocabulary (limits, launch, readiness, probe, backend, image).
//! - `spec`: environment, engine and scenario models and their validation.
//! - `plan`: a scenario turned into typed cells (nothing created).
//! - `render`: engine config files from Tera templates.
//! - `config_check`: an engine's own check of its rendered configs.
//! - `host`: facts about this machine.
//! - `images`: engine images built locally from a release tarball.
//! - `progress`: progress bars on stderr (loads, image pulls).
//! - `sandbox`: the sandbox trait, cgroup and docker backends, hog, ledger, readiness.
//! - `slurm`: Slurm's command-line tools (sbatch, squeue, scancel, scontrol, sinfo).
//! - `snapshot`: data dirs kept after a load and restored instead of loading again.
//! - `workload`: the built-in load generator, stores and external tools.
//! - `run`: the run lifecycle: cells, keys, resume, interrupts, live view.
//! - `metrics`: the sampler and the fidelity record.
//! - `results`: the result model, atomic writes, history.
//! - `report`: HTML, Markdown, CSV and JSON reports; `compare`'s verdicts.
//! - `stats`: the ratio of two sides with its bootstrap interval (claims, compare).

pub mod bounded;
pub mod changes;
pub mod claims;
pub mod cli;
pub mod clients;
pub mod commands;
pub mod config_check;
pub mod display;
pub mod error;
pub mod fetch;
pub mod host;
pub mod images;
pub mod metrics;
pub mod model;
pub mod network;
pub mod plan;
pub mod progress;
pub mod render;
pub mod report;
pub mod results;
pub mod run;
pub mod sandbox;
pub mod site;
pub mod slurm;
pub mod snapshot;
pub mod spec;
pub mod stats;
pub mod systool;
pub mod units;
pub mod workload;
