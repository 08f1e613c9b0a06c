//! From a planned cell (spec::plan) to the work of one cell: its key, its
//! launch, and an executor per phase. This is the only place that knows
//! both the plan's types and the load generator's config format.

use crate::metrics::fidelity::IoBoundThresholds;
use crate::run::cell::{CellWork, EngineFacts, LaunchFn, PhaseStep, SettleSpec};
use crate::run::exec::{ConfigFn, DriveExec};
use crate::run::key::{KeyInput, cell_key};
use crate::sandbox::{Backend, Probe};
use crate::spec::plan::{PlannedCell, PlannedPhase};
use crate::spec::scenario::{Builtin, Length, LoadWorkload, SettleMemory, Work, YcsbWorkload};
use crate::units::Share;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The store URL of the built-in load generator for an engine's probe.
pub fn store_url(probe: &Probe, port: u16) -> String {
    match probe {
        Probe::Redis => format!("redis://127.0.0.1:{port}"),
        Probe::Postgres { user, database } => {
            format!("postgres://{user}@127.0.0.1:{port}/{database}")
        }
        Probe::Mysql { user } => format!("mysql://{user}@127.0.0.1:{port}/benchcage"),
        Probe::Mongodb => format!("mongodb://127.0.0.1:{port}"),
    }
}

/// The key and group (key without the repetition) of a planned cell.
pub fn keys_of(cell: &PlannedCell) -> (String, String) {
    let mut input = KeyInput {
        engine: cell.engine.clone(),
        version: cell.version.clone(),
        backend: backend_name(cell.backend).into(),
        rendered_config: cell
            .configs
            .iter()
            .map(|c| (c.name.clone(), c.content.clone()))
            .collect(),
        limits: json!({
            "limits": cell.limits,
            "cache": cell.cache,
            "hog_leave": cell.hog_leave,
        }),
        workload: json!({
            "dataset": cell.dataset,
            "load": cell.load,
            "settle": cell.settle,
            "phases": cell.phases,
        }),
        threads: cell.phases.iter().map(|p| p.threads).collect(),
        repetition: cell.repetition,
    };
    let slug = format!(
        "{}-{}-{}-r{}",
        cell.engine, cell.version, cell.environment, cell.repetition
    );
    let key = cell_key(&slug, &input);
    input.repetition = 0;
    let group = cell_key(
        &format!("{}-{}-{}", cell.engine, cell.version, cell.environment),
        &input,
    );
    (key, group)
}

fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Cgroup => "cgroup",
        Backend::Docker => "docker",
    }
}

/// Check every generator config of a cell before anything is created:
/// a config the load generator would refuse is bad input.
pub fn check_configs(work: &CellWork) -> Result<(), String> {
    for step in work.load.iter().chain(work.phases.iter()) {
        for &t in &step.threads {
            step.exec
                .check(t)
                .map_err(|e| format!("{} phase `{}`: {e}", work.label, step.name))?;
        }
    }
    Ok(())
}

/// The work of one planned cell. `exe` is the benchcage binary that runs
/// the load generator as a child.
pub fn cell_work(
    cell: &PlannedCell,
    exe: PathBuf,
    home: &std::path::Path,
    facts: Arc<dyn EngineFacts>,
) -> CellWork {
    let (key, group) = keys_of(cell);
    let planned = Arc::new(cell.clone());
    let p = planned.clone();
    let launch: LaunchFn = Arc::new(move |port, data_dir, config_dir, log_path| {
        let files = p
            .configs
            .iter()
            .map(|c| (c.name.clone(), c.content.clone()))
            .collect();
        Ok((p.launch(port, data_dir, config_dir, log_path), files))
    });
    let mut limits_record = BTreeMap::new();
    limits_record.insert("server_cpus".into(), cell.limits.server_cpus.to_string());
    limits_record.insert("client_cpus".into(), cell.limits.client_cpus.to_string());
    limits_record.insert("memory".into(), cell.limits.memory.to_string());
    limits_record.insert("cache".into(), cell.cache.to_string());
    limits_record.insert("swap".into(), cell.limits.swap.to_string());
    if let Some(h) = cell.hog_leave {
        limits_record.insert("hog_leave".into(), h.to_string());
    }
    let settle = cell
        .settle
        .as_ref()
        .map(|s| SettleSpec {
            memory: s.memory.map(|m| match m {
                SettleMemory::OfData(f) => SettleCap::OfData(Share(f)),
                SettleMemory::Absolute(b) => SettleCap::Absolute(b),
            }),
            drop_caches: s.drop_caches,
        })
        .unwrap_or_default();
    let load = cell.load.as_ref().map(|l| PhaseStep {
        name: "load".into(),
        exec: Arc::new(DriveExec {
            label: match l.workload {
                LoadWorkload::Ycsb => "ycsb:load".into(),
                LoadWorkload::Candles => "candles:load".into(),
            },
            config: load_config(&planned),
            program: exe.clone(),
        }),
        threads: vec![l.threads],
        expect_io_bound: false,
        length: None,
    });
    let phases = cell
        .phases
        .iter()
        .map(|pp| PhaseStep {
            name: pp.phase.name.clone(),
            exec: phase_exec(&planned, pp, &exe, home),
            threads: vec![pp.threads],
            expect_io_bound: matches!(
                pp.phase.expect,
                Some(crate::spec::scenario::Expect::IoBound)
            ),
            length: match pp.phase.length {
                Length::Duration(d) => Some(pp.phase.warmup.std() + d.std()),
                Length::Operations(_) => None,
            },
        })
        .collect();
    CellWork {
        key,
        group,
        label: cell.id.clone(),
        engine: cell.engine.clone(),
        version: cell.version.clone(),
        environment: cell.environment.clone(),
        backend: cell.backend,
        limits: cell.limits.clone(),
        limits_record,
        knobs: cell.knobs.clone(),
        repetition: cell.repetition,
        launch,
        facts,
        load,
        settle,
        phases,
        io_bound: IoBoundThresholds::default(),
        hog_leave: cell.hog_leave,
        exe,
    }
}

pub use crate::run::cell::SettleCap;

/// Fields every generator config of a cell shares: store, dataset, engine.
fn base_config(cell: &PlannedCell, port: u16, name: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("name".into(), json!(name));
    m.insert(
        "store".into(),
        json!(store_url(&cell.readiness.probe, port)),
    );
    if let Some(d) = &cell.dataset {
        m.insert("records".into(), json!(d.records));
        m.insert("field_count".into(), json!(d.field_count));
        m.insert("field_length".into(), json!(d.field_length));
        m.insert("insert_order".into(), json!(d.insert_order));
    }
    if cell.engine == "myrocks" {
        m.insert("engine".into(), json!("rocksdb"));
    }
    m
}

fn load_config(cell: &Arc<PlannedCell>) -> ConfigFn {
    let cell = cell.clone();
    Arc::new(move |port, threads| {
        let mut m = base_config(&cell, port, "load");
        if let Some(l) = &cell.load {
            if l.workload == LoadWorkload::Candles {
                m.insert("workload".into(), json!("candles"));
            }
            m.insert("batch".into(), json!(l.batch));
        }
        m.insert("load".into(), json!(true));
        // The run owns its engine: whatever is in it, the run put there.
        m.insert("reset".into(), json!(true));
        m.insert("load_threads".into(), json!(threads));
        m.insert("threads".into(), json!(threads));
        Ok(Value::Object(m))
    })
}

fn phase_exec(
    cell: &Arc<PlannedCell>,
    pp: &PlannedPhase,
    exe: &std::path::Path,
    home: &std::path::Path,
) -> Arc<dyn crate::run::phase::PhaseExec> {
    match &pp.phase.work {
        Work::Builtin(b) => {
            let label = match b {
                Builtin::Ycsb { workload, .. } => format!("ycsb:{}", ycsb_name(workload)),
                Builtin::Candles { queries } => {
                    format!("candles:{}", json!(queries).as_str().unwrap_or(""))
                }
            };
            Arc::new(DriveExec {
                label,
                config: builtin_config(cell, pp),
                program: exe.to_path_buf(),
            })
        }
        Work::Tool(tool) => {
            crate::run::tools::tool_exec(cell.clone(), tool.clone(), pp.clone(), home)
        }
    }
}

fn ycsb_name(w: &YcsbWorkload) -> &'static str {
    match w {
        YcsbWorkload::A => "a",
        YcsbWorkload::B => "b",
        YcsbWorkload::C => "c",
        YcsbWorkload::D => "d",
        YcsbWorkload::E => "e",
        YcsbWorkload::F => "f",
        YcsbWorkload::Custom(_) => "custom",
    }
}

fn builtin_config(cell: &Arc<PlannedCell>, pp: &PlannedPhase) -> ConfigFn {
    let cell = cell.clone();
    let pp = pp.clone();
    Arc::new(move |port, threads| {
        let phase = &pp.phase;
        let mut m = base_config(&cell, port, &phase.name);
        match &phase.work {
            Work::Builtin(Builtin::Ycsb {
                workload,
                distribution,
            }) => {
                m.insert("workload".into(), json!(ycsb_name(workload)));
                if let YcsbWorkload::Custom(mix) = workload {
                    let mut mm = serde_json::Map::new();
                    for (k, v) in [
                        ("read", mix.read),
                        ("update", mix.update),
                        ("insert", mix.insert),
                        ("scan", mix.scan),
                        ("read_modify_write", mix.read_modify_write),
                    ] {
                        if v > 0.0 {
                            mm.insert(k.into(), json!(v));
                        }
                    }
                    m.insert("mix".into(), Value::Object(mm));
                }
                m.insert("distribution".into(), json!(distribution));
            }
            Work::Builtin(Builtin::Candles { queries }) => {
                m.insert("workload".into(), json!("candles"));
                m.insert("queries".into(), json!(queries));
            }
            Work::Tool(_) => anyhow::bail!(
                "phase {} runs a tool, not the built-in generator",
                phase.name
            ),
        }
        m.insert("threads".into(), json!(threads));
        match phase.length {
            Length::Duration(d) => m.insert("duration".into(), json!(d)),
            Length::Operations(n) => m.insert("operations".into(), json!(n)),
        };
        if !phase.warmup.std().is_zero() {
            m.insert("warmup".into(), json!(phase.warmup));
        }
        if let Some(t) = phase.target {
            m.insert("target".into(), json!(t as f64));
        }
        m.insert("error_budget".into(), json!(phase.error_budget));
        m.insert("load".into(), json!(false));
        Ok(Value::Object(m))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::scenario::Load;
    use crate::workload::WorkloadConfig;

    #[test]
    fn the_candles_and_ycsb_loads_get_the_scenarios_batch_size() {
        let project =
            crate::spec::Project::load(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let p = crate::spec::plan::plan(&project, "quickstart", &[], None, None).unwrap();
        for (workload, kind) in [
            (
                LoadWorkload::Candles,
                crate::workload::WorkloadKind::Candles,
            ),
            (LoadWorkload::Ycsb, crate::workload::WorkloadKind::A),
        ] {
            let mut cell = p.cells[0].clone();
            cell.load = Some(Load {
                threads: 1,
                workload,
                batch: 1000,
            });
            let v = load_config(&Arc::new(cell))(6379, 1).unwrap();
            let cfg: WorkloadConfig = serde_json::from_value(v).unwrap();
            assert_eq!((cfg.batch, cfg.workload), (Some(1000), kind));
        }
    }
}
