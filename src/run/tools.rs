//! External tools (sysbench, pgbench, YCSB, any command) as phase
//! executors: the scenario's `tool:` block becomes the load generator's
//! tool config, and every process the tool spawns is placed in the client
//! group by the phase's hook before it runs.

use crate::results::model::PhaseResult;
use crate::run::phase::{PhaseEnv, PhaseExec};
use crate::sandbox::Probe;
use crate::spec::plan::{PlannedCell, PlannedPhase};
use crate::spec::scenario::{Length, PgbenchScript, Tool};
use crate::workload::stores::StoreKind;
use crate::workload::tools::{ToolConfig, ToolTarget, run_tool};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The executor of a tool phase; `home` resolves pgbench script paths.
pub fn tool_exec(
    cell: Arc<PlannedCell>,
    tool: Tool,
    phase: PlannedPhase,
    home: &Path,
) -> Arc<dyn PhaseExec> {
    Arc::new(ToolExec {
        cell,
        tool,
        phase,
        home: home.to_path_buf(),
    })
}

struct ToolExec {
    cell: Arc<PlannedCell>,
    tool: Tool,
    phase: PlannedPhase,
    home: PathBuf,
}

impl ToolExec {
    fn config(&self) -> Result<ToolConfig, String> {
        let tool = match &self.tool {
            Tool::Sysbench {
                test,
                tables,
                table_size,
            } => json!({"sysbench": {"test": test, "tables": tables, "table_size": table_size}}),
            Tool::Pgbench { scale, script } => match script {
                PgbenchScript::Builtin(b) => json!({"pgbench": {"scale": scale, "builtin": b}}),
                PgbenchScript::Script(p) => {
                    json!({"pgbench": {"scale": scale, "script": self.home.join(p)}})
                }
            },
            Tool::Ycsb { argv } => json!({"ycsb": {"argv": argv}}),
            Tool::Command {
                argv,
                throughput,
                latency,
                ..
            } => json!({"command": {"argv": argv, "throughput": throughput, "latency": latency}}),
        };
        let mut v = tool;
        v["error_budget"] = json!(self.phase.phase.error_budget);
        serde_json::from_value(v).map_err(|e| format!("tool config: {e}"))
    }

    fn target(&self, port: u16) -> ToolTarget {
        let (kind, user, db) = match &self.cell.readiness.probe {
            Probe::Redis => (StoreKind::Redis, None, None),
            Probe::Postgres { user, database } => (
                StoreKind::Postgres,
                Some(user.clone()),
                Some(database.clone()),
            ),
            Probe::Mysql { user } => (
                StoreKind::Mysql,
                Some(user.clone()),
                Some("benchcage".into()),
            ),
            Probe::Mongodb => (StoreKind::Mongodb, None, Some("benchcage".into())),
        };
        ToolTarget {
            kind,
            port,
            user,
            password: None,
            db,
        }
    }

    fn duration(&self) -> Result<std::time::Duration, String> {
        match self.phase.phase.length {
            Length::Duration(d) => Ok(d.std()),
            Length::Operations(_) => Err(format!(
                "phase `{}`: tools run for a `duration`, not a count of operations",
                self.phase.phase.name
            )),
        }
    }
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

    fn check(&self, threads: u32) -> Result<(), String> {
        let _ = threads;
        self.config()?;
        self.duration()?;
        Ok(())
    }

    async fn run(&self, env: PhaseEnv) -> anyhow::Result<PhaseResult> {
        let cfg = self.config().map_err(anyhow::Error::msg)?;
        let duration = self.duration().map_err(anyhow::Error::msg)?;
        let out_dir = env.cell_dir.join("raw").join(&env.stem);
        std::fs::create_dir_all(&out_dir)?;
        let misplaced: Arc<Mutex<Option<String>>> = Arc::default();
        let m = misplaced.clone();
        let place = env.place.clone();
        let hook = move |cmd: &mut tokio::process::Command| {
            if let Err(e) = place(cmd.as_std_mut()) {
                *m.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            }
        };
        let target = self.target(env.port);
        let fut = run_tool(&cfg, &target, env.threads, duration, &out_dir, hook);
        let mut res = tokio::select! {
            r = fut => r?,
            _ = env.cancel.cancelled() => anyhow::bail!("phase {} cancelled", self.phase.phase.name),
        };
        if let Some(why) = misplaced.lock().unwrap_or_else(|p| p.into_inner()).take() {
            anyhow::bail!("could not place the tool in the client group: {why}");
        }
        res.name = self.phase.phase.name.clone();
        for raw in &mut res.raw_outputs {
            *raw = format!("raw/{}/{raw}", env.stem);
        }
        Ok(res)
    }
}
