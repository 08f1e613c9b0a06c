//! The limits of one cell: CPUs, memory, swap, pids and IO throttles.

use crate::units::{Bytes, CpuSet};
use std::fmt;

/// Swap allowed to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SwapPolicy {
    /// No swap at all (v1: memsw = memory; v2: swap.max = 0).
    Off,
    /// At most this much swap on top of the memory cap.
    Limit(Bytes),
}

/// IO throttles for the data device; `None` means unthrottled.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IoLimits {
    pub read_bps: Option<u64>,
    pub write_bps: Option<u64>,
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
}

/// Where the client (the load generator) runs, against the server's node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientNode {
    /// On the server's machine, on the client CPUs, over loopback.
    #[default]
    Same,
    /// On another node of a Slurm allocation of two (`run --on slurm`),
    /// over the cluster's network.
    Other,
}

impl ClientNode {
    pub fn is_same(&self) -> bool {
        *self == ClientNode::Same
    }
}

/// Where a client on another node runs, as its Slurm job placed it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteClient {
    /// The allocation's node the client runs on.
    pub node: String,
    /// The server's node's address, as the client reaches it.
    pub address: String,
}

/// Limits of one cell, already resolved from the environment (scale applied).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CellLimits {
    pub server_cpus: CpuSet,
    pub client_cpus: CpuSet,
    pub memory: Bytes,
    pub swap: SwapPolicy,
    pub pids: u64,
    pub io: IoLimits,
    /// The size of the data dir's own filesystem (a loop-mounted image);
    /// `None`: the data dir is on the work root's filesystem. Left out
    /// when `None`, so cells without a disk keep their keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<Bytes>,
    /// Where the client runs. Left out when on the server's machine, so
    /// those cells keep their keys; a client on another node is another
    /// measurement, with a key of its own.
    #[serde(default, skip_serializing_if = "ClientNode::is_same")]
    pub client_node: ClientNode,
}

impl fmt::Display for SwapPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwapPolicy::Off => f.write_str("off"),
            SwapPolicy::Limit(b) => write!(f, "{b}"),
        }
    }
}

impl fmt::Display for IoLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(b) = self.read_bps {
            parts.push(format!("read {}/s", Bytes(b)));
        }
        if let Some(n) = self.read_iops {
            parts.push(format!("read {n} IOPS"));
        }
        if let Some(b) = self.write_bps {
            parts.push(format!("write {}/s", Bytes(b)));
        }
        if let Some(n) = self.write_iops {
            parts.push(format!("write {n} IOPS"));
        }
        if parts.is_empty() {
            f.write_str("unthrottled")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}
