//! The shared vocabulary: the types that flow from the specs through the
//! plan and the run to the sandbox and into the results (limits, launch,
//! readiness, probe, backend, image record, run and cell status, how
//! TPC-C ran on MongoDB, the settle step). Every layer depends on it; it depends on
//! nothing in the crate but `units`.
//! Types only, with their `Display` for people: behaviour lives with the
//! layer that acts.

pub mod backend;
pub mod claim;
pub mod cluster;
pub mod facts;
pub mod image;
pub mod knob;
pub mod launch;
pub mod limits;
pub mod phase;
pub mod probe;
pub mod readiness;
pub mod settle;
pub mod source;
pub mod status;
pub mod thp;
pub mod topology;
pub mod tpcc;

pub use backend::Backend;
pub use image::ImageRecord;
pub use launch::{EngineLaunch, Program};
pub use limits::{CellLimits, ClientNode, IoLimits, RemoteClient, SwapPolicy};
pub use probe::Probe;
pub use readiness::Readiness;
pub use settle::{Settle, SettleMemory};
pub use source::Source;
pub use status::{CellStatus, RunStatus};
pub use thp::{ThpNeed, ThpPolicy};
pub use topology::{Member, Role, ShardKeyKind, Topology};
pub use tpcc::{DocumentSchema, MongoTpccMode, TxnMode};
