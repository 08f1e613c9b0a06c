//! A cell's identity: exactly what its key is computed from
//! ([`crate::run::key::cell_key`]). `--resume`, `compare`, the history
//! index and the snapshot cache find a cell by that key, so this type
//! decides once what makes two cells the same cell, and the golden test
//! `tests/fast_cell_keys.rs` proves that every shipped and test scenario
//! keeps its keys byte for byte.
//!
//! The rule for a new part: a part only some cells have is an `Option`
//! (or an empty list) that is left out when absent, so that every cell
//! planned before the part existed keeps its key. The parts below the top
//! level (`limits`, `workload`) are hashed as JSON objects with their keys
//! in the map's order, as they always were; their field order here is the
//! order in which they were first written.

use super::cell::{PlannedCell, PlannedPhase, StoreOption};
use super::members::PlannedMember;
use crate::model::Settle;
use crate::model::{CellLimits, ThpPolicy};
use crate::spec::scenario::{Dataset, Load};
use crate::units::Bytes;
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything a cell's key is made of. Values that change from run to run
/// (port, data dir, run id) are not in it: rendered configs hold them as
/// placeholders.
#[derive(Debug, Clone, Serialize)]
pub struct CellIdentity<'a> {
    pub engine: &'a str,
    pub version: &'a str,
    /// `cgroup` or `docker`.
    pub backend: &'a str,
    /// Config file name -> rendered content.
    pub rendered_config: BTreeMap<&'a str, &'a str>,
    /// Limits, cache, hog and topology.
    #[serde(serialize_with = "as_json_object")]
    pub limits: LimitsIdentity<'a>,
    /// Dataset, load, settle and phases.
    #[serde(serialize_with = "as_json_object")]
    pub workload: WorkloadIdentity<'a>,
    /// Every thread count the cell's phases run with, in order.
    pub threads: Vec<u32>,
    /// 0 for the group key, which is the same for every repetition.
    pub repetition: u32,
}

/// What a cell's server is given: its limits, cache and hog, and a
/// topology's members.
#[derive(Debug, Clone, Serialize)]
pub struct LimitsIdentity<'a> {
    pub limits: &'a CellLimits,
    pub cache: Bytes,
    pub hog_leave: Option<Bytes>,
    /// Only when the environment turns them off: with `leave` (the
    /// default) a cell is the cell it was before the policy existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transparent_hugepages: Option<ThpPolicy>,
    /// A replica set or cluster (`replica_set:3`); `None` for one server,
    /// which keeps the key it had before topologies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// A topology's members, their CPUs and own configs; `None` as above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<&'a [PlannedMember]>,
    /// The network between the client and the server and how it is
    /// emulated; `None` (the loopback as it is) keeps the key a cell had
    /// before networks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<&'a crate::network::Network>,
}

/// What a cell runs against its server.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadIdentity<'a> {
    pub dataset: &'a Option<Dataset>,
    pub load: &'a Option<Load>,
    /// With `memory: null` when no cap is set, as the scenario's settle
    /// was always written (the cell record leaves it out).
    #[serde(serialize_with = "settle_with_its_cap")]
    pub settle: &'a Option<Settle>,
    pub phases: &'a [PlannedPhase],
    /// The store URL options knobs set (`w=1`); left out when none is
    /// set, so cells without them keep their keys.
    #[serde(skip_serializing_if = "<[StoreOption]>::is_empty")]
    pub store_options: &'a [StoreOption],
}

/// `value` as a JSON object (keys in the map's order), which is how
/// these parts were always hashed.
fn as_json_object<T: Serialize, S: serde::Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// A settle step as cell keys have always held it: `memory` written even
/// when it is `None`.
fn settle_with_its_cap<S: serde::Serializer>(
    settle: &&Option<Settle>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let Some(settle) = settle else {
        return s.serialize_none();
    };
    let mut st = s.serialize_struct("Settle", 2)?;
    st.serialize_field("memory", &settle.memory)?;
    st.serialize_field("drop_caches", &settle.drop_caches)?;
    st.end()
}

impl PlannedCell {
    /// The cell's identity for repetition `repetition` (the cell's own for
    /// its key, 0 for its group key).
    pub fn identity(&self, repetition: u32) -> CellIdentity<'_> {
        let topology = self.members.len() > 1;
        CellIdentity {
            engine: &self.engine,
            version: &self.version,
            backend: self.backend.name(),
            rendered_config: self
                .configs
                .iter()
                .map(|c| (c.name.as_str(), c.content.as_str()))
                .collect(),
            limits: LimitsIdentity {
                limits: &self.limits,
                cache: self.cache,
                hog_leave: self.hog_leave,
                transparent_hugepages: (self.transparent_hugepages == ThpPolicy::Off)
                    .then_some(self.transparent_hugepages),
                topology: topology.then(|| self.topology.key()),
                members: topology.then_some(self.members.as_slice()),
                network: self.network.as_ref(),
            },
            workload: WorkloadIdentity {
                dataset: &self.dataset,
                load: &self.load,
                settle: &self.settle,
                phases: &self.phases,
                store_options: &self.store_options,
            },
            threads: self.phases.iter().map(|p| p.threads).collect(),
            repetition,
        }
    }
}
