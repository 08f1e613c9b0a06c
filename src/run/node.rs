//! A cell running as a cluster job (`run --on slurm`), on its node: the
//! node's record (job, hardware, the allocation read back) and the check
//! that the cell's sandboxes fit inside that allocation.

use crate::results::model::{HostInfo, NodeRecord};
use crate::run::cell::CellWork;
use crate::units::{Bytes, CpuSet};

/// This node's record for the Slurm job of this process: the job id and
/// node name from the job's environment, the CPUs this process may run on
/// (`/proc/self/status`), the memory Slurm allocated (`scontrol`).
pub(crate) async fn slurm_node(host: &HostInfo) -> NodeRecord {
    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let job_id = std::env::var("SLURM_JOB_ID").unwrap_or_default();
    let name = std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| host.hostname.clone());
    let mut mem = std::env::var("SLURM_MEM_PER_NODE")
        .ok()
        .and_then(|m| crate::slurm::parse_slurm_size(&m));
    if mem.is_none() && !job_id.is_empty() {
        mem = crate::slurm::job_tres(&job_id).await.and_then(|(_, m)| m);
    }
    NodeRecord {
        scheduler: "slurm".into(),
        job_id,
        started_at,
        name,
        host: host.clone(),
        allocation_cpus: allowed_cpus(
            &std::fs::read_to_string("/proc/self/status").unwrap_or_default(),
        )
        .map(|c| c.to_string())
        .unwrap_or_default(),
        allocation_memory_bytes: mem,
        client: None,
    }
}

/// Where the client of a cell with `client: {node: other}` goes: the
/// allocation's node other than this one, and this node's address as it
/// reaches it. An allocation of one node cannot hold it.
pub async fn remote_client(node: &NodeRecord) -> Result<crate::model::RemoteClient, String> {
    let nodes = crate::slurm::allocation_nodes()
        .await
        .map_err(|e| format!("reading job {}'s nodes: {e:#}", node.job_id))?;
    let Some(other) = nodes.iter().find(|n| **n != node.name) else {
        return Err(format!(
            "its client goes on another node (client.node: other), but job {}'s allocation is node {} alone; it must be submitted with two nodes",
            node.job_id,
            nodes.join(",")
        ));
    };
    let address = crate::slurm::node_address(&node.name)
        .await
        .map_err(|e| format!("finding node {}'s address for the client: {e:#}", node.name))?;
    Ok(crate::model::RemoteClient {
        node: other.clone(),
        address,
    })
}

/// `Cpus_allowed_list:` of a `/proc/PID/status` text.
pub(crate) fn allowed_cpus(status: &str) -> Option<CpuSet> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Why `cell` does not fit in the job's allocation `node`, if it does not:
/// its CPUs (server, client, every member) must be among the allocated
/// ones, and its memory caps must add up to no more than the allocation.
pub fn outside_allocation(cell: &CellWork, node: &NodeRecord) -> Option<String> {
    let cpus = cell.all_cpus();
    if let Ok(allowed) = node.allocation_cpus.parse::<CpuSet>() {
        let outside: Vec<u32> = cpus.iter().filter(|c| !allowed.contains(*c)).collect();
        if !outside.is_empty() {
            return Some(format!(
                "its CPUs {cpus} are not all in job {}'s allocation ({allowed}) on node {}: CPU(s) {} are outside; ask for a node with them (or more CPUs: --partition)",
                node.job_id,
                node.name,
                CpuSet::new(outside)
            ));
        }
    }
    let memory: u64 =
        cell.limits.memory.0 + cell.replicas.iter().map(|m| m.limits.memory.0).sum::<u64>();
    match node.allocation_memory_bytes {
        Some(alloc) if memory > alloc => Some(format!(
            "its memory caps add up to {}, more than job {}'s allocation of {} on node {}",
            Bytes(memory),
            node.job_id,
            Bytes(alloc),
            node.name
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowed_cpus_are_read_from_proc_status() {
        let s = "Name:\tbenchcage\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        assert_eq!(allowed_cpus(s).unwrap().to_string(), "0-1");
        assert!(allowed_cpus("Name: x\n").is_none());
    }
}
