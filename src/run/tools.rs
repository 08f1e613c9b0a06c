//! External tools (sysbench, pgbench, YCSB, any command) as phase
//! executors: each runs the tool config the plan made, and every process
//! the tool spawns is placed in the client group by the phase's hook
//! before it runs.

use crate::model::Probe;
use crate::model::phase::Length;
use crate::plan::{PlannedCell, PlannedPhase};
use crate::results::model::PhaseResult;
use crate::run::phase::{PhaseEnv, PhaseExec, Unrunnable};
use crate::workload::stores::StoreKind;
use crate::workload::tools::{ReplicaSeeds, Tool, ToolConfig, ToolTarget, run_tool};
use std::sync::{Arc, Mutex};

/// The executor of a tool phase, running the tool config the plan made.
pub(crate) fn tool_exec(
    cell: Arc<PlannedCell>,
    config: ToolConfig,
    phase: PlannedPhase,
) -> Arc<dyn PhaseExec> {
    Arc::new(ToolExec {
        cell,
        config,
        phase,
    })
}

struct ToolExec {
    cell: Arc<PlannedCell>,
    config: ToolConfig,
    phase: PlannedPhase,
}

impl ToolExec {
    fn target(&self, port: u16, set_ports: &[u16]) -> ToolTarget {
        let probe = &self.cell.readiness.probe;
        let kind = match probe {
            Probe::Redis => StoreKind::Redis,
            Probe::Postgres { .. } => StoreKind::Postgres,
            Probe::Mysql { .. } => StoreKind::Mysql,
            Probe::Mongodb => StoreKind::Mongodb,
        };
        ToolTarget {
            kind,
            port,
            user: probe.user().map(str::to_string),
            password: None,
            db: probe.data_database().map(str::to_string),
            replica_set: self.replica_set(set_ports),
        }
    }

    /// The cell's replica set, when its server is a set's primary.
    fn replica_set(&self, set_ports: &[u16]) -> Option<ReplicaSeeds> {
        let n = self.cell.members.len();
        let name = self.cell.members.first()?.set_name(n, false)?;
        (set_ports.len() > 1).then(|| ReplicaSeeds {
            name,
            ports: set_ports.to_vec(),
        })
    }

    /// The config with what the cell's knobs say of the tool: py-tpcc's
    /// config file carries the `write_concern` knob, as write-up 004 set it.
    fn with_cell_knobs(&self) -> ToolConfig {
        let mut c = self.config.clone();
        if let Tool::Pytpcc(p) = &mut c.tool
            && p.write_concern.is_none()
        {
            p.write_concern = self.cell.knobs.get("write_concern").cloned();
        }
        c
    }

    fn duration(&self) -> Result<std::time::Duration, Unrunnable> {
        match self.phase.phase.length {
            Length::Duration(d) => Ok(d.std()),
            Length::Operations(_) => Err(Unrunnable(format!(
                "phase `{}`: tools run for a `duration`, not a count of operations",
                self.phase.phase.name
            ))),
        }
    }
}

#[async_trait::async_trait]
impl PhaseExec for ToolExec {
    fn describe(&self) -> String {
        match &self.config.tool {
            Tool::Sysbench(c) => format!("sysbench:{}", c.test),
            Tool::Pgbench(_) => "pgbench".into(),
            Tool::Ycsb(_) => "ycsb-external".into(),
            Tool::Command(_) => "command".into(),
            Tool::Pytpcc(c) if c.load => "pytpcc:load".into(),
            Tool::Pytpcc(_) => "pytpcc".into(),
        }
    }

    fn check(&self, threads: u32) -> Result<(), Unrunnable> {
        let _ = threads;
        self.duration().map(|_| ())
    }

    async fn run(&self, env: PhaseEnv) -> anyhow::Result<PhaseResult> {
        let cfg = &self.with_cell_knobs();
        let duration = self.duration()?;
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
        let target = self.target(env.port, &env.set_ports);
        let fut = run_tool(cfg, &target, env.threads, duration, &out_dir, hook);
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
