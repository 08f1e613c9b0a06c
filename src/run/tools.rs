//! External tools (sysbench, pgbench, YCSB, any command) as phase
//! executors, placed in the client group.

use crate::results::model::PhaseResult;
use crate::run::phase::{PhaseEnv, PhaseExec};
use crate::spec::plan::{PlannedCell, PlannedPhase};
use crate::spec::scenario::Tool;
use std::sync::Arc;

/// The executor of a tool phase.
pub fn tool_exec(cell: Arc<PlannedCell>, tool: Tool, phase: PlannedPhase) -> Arc<dyn PhaseExec> {
    Arc::new(ToolExec { cell, tool, phase })
}

struct ToolExec {
    cell: Arc<PlannedCell>,
    tool: Tool,
    phase: PlannedPhase,
}

#[async_trait::async_trait]
impl PhaseExec for ToolExec {
    fn describe(&self) -> String {
        match &self.tool {
            Tool::Sysbench { test, .. } => format!("sysbench:{test}"),
            Tool::Pgbench { .. } => "pgbench".into(),
            Tool::Ycsb { .. } => "ycsb-external".into(),
            Tool::Command { .. } => "command".into(),
        }
    }

    fn check(&self, _threads: u32) -> Result<(), String> {
        Ok(())
    }

    async fn run(&self, env: PhaseEnv) -> anyhow::Result<PhaseResult> {
        let _ = (&self.cell, &self.phase, env);
        anyhow::bail!(
            "phase `{}` runs {}, and external tools are not wired into `run` in this build",
            self.phase.phase.name,
            self.describe()
        )
    }
}
