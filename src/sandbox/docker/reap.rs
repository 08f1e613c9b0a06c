//! Removing containers for good (404 is done, 409 is "poll until gone"),
//! reaping the containers of dead runs for `cleanup`, and the daemon facts
//! for `doctor`.

use super::DockerBackendError;
use super::client::{DaemonInfo, DockerClient};
use super::spec::{LABEL_OWNER_PID, LABEL_RUN, owner_alive};
use std::time::{Duration, Instant};

/// What removing one container found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// It existed and is gone now.
    Removed,
    /// It did not exist (never created, or removed under us).
    Absent,
}

/// Stop (SIGTERM, then SIGKILL after `grace`), then remove with force and
/// volumes; 404 means done, 409 (removal in progress) means poll until the
/// daemon no longer knows it. Gives up at `deadline`.
pub async fn remove_fully(
    client: &DockerClient,
    name: &str,
    grace: Duration,
    deadline: Instant,
) -> Result<Removal, DockerBackendError> {
    let left = || deadline.saturating_duration_since(Instant::now());
    let grace = grace.min(left());
    match tokio::time::timeout(left(), client.stop(name, grace)).await {
        Ok(Err(e)) if e.is_not_found() => return Ok(Removal::Absent),
        Ok(Err(e)) if !e.is_conflict() => return Err(e.into()),
        _ => {}
    }
    loop {
        let attempt = tokio::time::timeout(left(), client.remove(name)).await;
        match attempt {
            Ok(Ok(())) => return Ok(Removal::Removed),
            Ok(Err(e)) if e.is_not_found() => return Ok(Removal::Removed),
            Ok(Err(e)) if e.is_conflict() => {}
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => {}
        }
        match tokio::time::timeout(left(), client.inspect(name)).await {
            Ok(Err(e)) if e.is_not_found() => return Ok(Removal::Removed),
            _ if left().is_zero() => {
                return Err(DockerBackendError::Api(
                    super::client::DockerError::RemoveContainer {
                        id: name.to_string(),
                        cause: super::client::Cause::TimedOut(grace),
                    },
                ));
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// What `cleanup` did about containers.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReapOutcome {
    /// `container <name> (run <id>, owner pid <pid> gone)`, removed or to remove.
    pub removed: Vec<String>,
    /// Containers that could not be removed, with the reason.
    pub leaked: Vec<String>,
    /// Why the daemon could not be asked, when it could not.
    pub unreachable: Option<String>,
}

/// Remove every container labelled with the id of a run whose owner process
/// is dead (pid gone or reused). With `dry_run`, only list them. A daemon
/// that does not answer is reported, not an error: there is nothing of
/// ours to remove from a machine without Docker.
pub async fn reap_dead_runs(dry_run: bool) -> ReapOutcome {
    let mut out = ReapOutcome::default();
    let client = match DockerClient::connect().await {
        Ok(c) => c,
        Err(e) => {
            out.unreachable = Some(e.to_string());
            return out;
        }
    };
    let list = match client.list_labelled(LABEL_RUN).await {
        Ok(l) => l,
        Err(e) => {
            out.unreachable = Some(e.to_string());
            return out;
        }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    for c in list.into_iter().filter(|c| !owner_alive(&c.labels)) {
        let what = format!(
            "container {} (run {}, owner pid {} gone)",
            c.name,
            c.labels.get(LABEL_RUN).map_or("?", String::as_str),
            c.labels.get(LABEL_OWNER_PID).map_or("?", String::as_str)
        );
        if dry_run {
            out.removed.push(what);
            continue;
        }
        match remove_fully(&client, &c.id, Duration::from_secs(2), deadline).await {
            Ok(_) => out.removed.push(what),
            Err(e) => out.leaked.push(format!("{what}: {e}")),
        }
    }
    out
}

/// Remove the named containers (ledger entries of a dead run); ones the
/// daemon does not know are already gone.
pub async fn remove_containers(names: &[String]) -> ReapOutcome {
    let mut out = ReapOutcome::default();
    if names.is_empty() {
        return out;
    }
    let client = match DockerClient::connect().await {
        Ok(c) => c,
        Err(e) => {
            out.leaked = names
                .iter()
                .map(|n| format!("container {n}: {e}"))
                .collect();
            out.unreachable = Some(e.to_string());
            return out;
        }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    for name in names {
        match remove_fully(&client, name, Duration::from_secs(2), deadline).await {
            Ok(Removal::Removed) => out.removed.push(format!("container {name}")),
            Ok(Removal::Absent) => {}
            Err(e) => out.leaked.push(format!("container {name}: {e}")),
        }
    }
    out
}

/// The daemon's version, cgroup driver and cgroup version, or why it cannot
/// be reached (for `doctor`).
pub async fn daemon_report() -> Result<DaemonInfo, String> {
    let client = DockerClient::connect().await.map_err(|e| e.to_string())?;
    client.info().await.map_err(|e| e.to_string())
}
