//! Readiness: a real protocol round trip (via `crate::clients::ping`)
//! repeated under one timeout; a failure carries the engine's log tail.

use crate::model::EngineLaunch;
use crate::sandbox::backoff::Backoff;
use crate::sandbox::{EngineStatus, Sandbox, SandboxError, process};
use std::time::{Duration, Instant};

/// The longest pause between two probes.
const MAX_PAUSE: Duration = Duration::from_millis(200);

/// Lines of engine log carried by a readiness error.
pub(crate) const LOG_TAIL_LINES: usize = 20;

/// Wait until the engine answers its probe; returns the server version it
/// reported. Fails early when the engine exits, and at the launch's
/// readiness timeout otherwise.
pub async fn wait_ready(
    sandbox: &mut dyn Sandbox,
    launch: &EngineLaunch,
) -> Result<String, SandboxError> {
    let timeout = launch.readiness.timeout;
    let deadline = Instant::now() + timeout.std();
    let mut last_error = "no probe answered yet".to_string();
    // From 1 ms, a quarter longer each time: most engines answer within a
    // few ms of their start, a few within a second; either way the probe
    // that answers comes soon after the engine is ready.
    let mut pause = Backoff::gently_up_to(MAX_PAUSE);
    loop {
        let status = sandbox.engine_status().await?;
        if let EngineStatus::Exited { .. } = status {
            return Err(SandboxError::EngineExited {
                status: process::describe(status),
                log_path: launch.log_path.clone(),
                log_tail: process::log_tail(&launch.log_path, LOG_TAIL_LINES),
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(SandboxError::NotReady {
                timeout,
                last_error,
                log_path: launch.log_path.clone(),
                log_tail: process::log_tail(&launch.log_path, LOG_TAIL_LINES),
            });
        }
        let attempt = left.min(Duration::from_secs(2));
        match tokio::time::timeout(
            attempt,
            crate::clients::ping(&launch.readiness.probe, launch.port),
        )
        .await
        {
            Ok(Ok(version)) => return Ok(version),
            Ok(Err(e)) => last_error = e.to_string(),
            Err(_) => {
                last_error = format!("probe got no answer within {:.1}s", attempt.as_secs_f64())
            }
        }
        pause.sleep(deadline).await;
    }
}
