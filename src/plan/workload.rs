//! The scenario's work as its executors take it: the built-in load
//! generator's [`DriveConfig`] for the load and each built-in phase, a
//! tool's [`ToolConfig`] for each tool phase. This is the only place that
//! knows both the scenario's types and theirs; a planned cell carries the
//! typed configs to the run.

use super::PhaseConfig;
use crate::spec::scenario::{
    Builtin, Dataset, Length, Load, LoadWorkload, PgbenchScript, Phase, Tool, Work, YcsbWorkload,
};
use crate::workload::tools::{self, ToolConfig};
use crate::workload::{DriveConfig, ErrorBudget, WorkloadKind};
use std::collections::BTreeMap;
use std::path::Path;

/// What every generator config of a cell shares: the dataset and the
/// table's storage engine. The store URL and the thread count are filled
/// in when the cell runs.
fn base(name: &str, dataset: Option<&Dataset>, storage_engine: Option<&str>) -> DriveConfig {
    let mut c = DriveConfig {
        name: name.to_string(),
        engine: storage_engine.map(str::to_string),
        ..DriveConfig::default()
    };
    if let Some(d) = dataset {
        c.records = d.records;
        c.field_count = d.field_count;
        c.field_length = d.field_length;
        c.insert_order = d.insert_order;
    }
    c
}

/// The load: the dataset's records (or candles), `batch` at a time, into
/// an engine the run owns, so whatever is in it may go.
pub(super) fn load_config(
    load: &Load,
    dataset: Option<&Dataset>,
    storage_engine: Option<&str>,
) -> DriveConfig {
    let mut c = base("load", dataset, storage_engine);
    match load.workload {
        LoadWorkload::Candles => c.workload = WorkloadKind::Candles,
        LoadWorkload::SysbenchMongo => {
            c.workload = WorkloadKind::SysbenchMongo;
            c.collections = load.collections;
        }
        LoadWorkload::Iibench => c.workload = WorkloadKind::Iibench,
        LoadWorkload::Tpcc => {
            c.workload = WorkloadKind::Tpcc;
            c.warehouses = load.warehouses;
            c.denormalize = load.denormalize;
        }
        LoadWorkload::Ycsb => {}
    }
    if load.workload != LoadWorkload::Tpcc {
        c.batch = Some(u64::from(load.batch));
    }
    c.load = true;
    c.reset = true;
    c
}

/// A measured phase for its executor; `home` resolves a pgbench script.
pub(super) fn phase_config(
    phase: &Phase,
    dataset: Option<&Dataset>,
    storage_engine: Option<&str>,
    home: &Path,
) -> PhaseConfig {
    match &phase.work {
        Work::Builtin(b) => PhaseConfig::Builtin(builtin_config(phase, b, dataset, storage_engine)),
        Work::Tool(t) => PhaseConfig::Tool(ToolConfig {
            tool: tool(t, home),
            error_budget: ErrorBudget::Count(phase.error_budget),
            warmup: phase.warmup.std(),
        }),
    }
}

/// A built-in phase: the workload, its length, warm-up, target and budget.
fn builtin_config(
    phase: &Phase,
    b: &Builtin,
    dataset: Option<&Dataset>,
    storage_engine: Option<&str>,
) -> DriveConfig {
    let mut c = base(&phase.name, dataset, storage_engine);
    match b {
        Builtin::Ycsb {
            workload,
            distribution,
        } => {
            c.workload = ycsb_kind(workload);
            if let YcsbWorkload::Custom(mix) = workload {
                c.mix = Some(mix_map(mix));
            }
            c.distribution = Some(*distribution);
        }
        Builtin::Candles { queries } => {
            c.workload = WorkloadKind::Candles;
            c.queries = Some(*queries);
        }
        Builtin::SysbenchMongo { collections } => {
            c.workload = WorkloadKind::SysbenchMongo;
            c.collections = Some(*collections);
        }
        Builtin::Iibench => c.workload = WorkloadKind::Iibench,
        Builtin::Tpcc {
            warehouses,
            denormalize,
        } => {
            c.workload = WorkloadKind::Tpcc;
            c.warehouses = Some(*warehouses);
            c.denormalize = *denormalize;
        }
    }
    match phase.length {
        Length::Duration(d) => c.duration = Some(d),
        Length::Operations(n) => c.operations = Some(n),
    }
    if !phase.warmup.std().is_zero() {
        c.warmup = Some(phase.warmup);
    }
    c.target = phase.target.map(|t| t as f64);
    c.error_budget = ErrorBudget::Count(phase.error_budget);
    c
}

fn ycsb_kind(w: &YcsbWorkload) -> WorkloadKind {
    match w {
        YcsbWorkload::A => WorkloadKind::A,
        YcsbWorkload::B => WorkloadKind::B,
        YcsbWorkload::C => WorkloadKind::C,
        YcsbWorkload::D => WorkloadKind::D,
        YcsbWorkload::E => WorkloadKind::E,
        YcsbWorkload::F => WorkloadKind::F,
        YcsbWorkload::Custom(_) => WorkloadKind::Custom,
    }
}

/// A custom mix by operation name, the kinds it does not run left out.
fn mix_map(mix: &crate::spec::scenario::Mix) -> BTreeMap<String, f64> {
    [
        ("read", mix.read),
        ("update", mix.update),
        ("insert", mix.insert),
        ("scan", mix.scan),
        ("read_modify_write", mix.read_modify_write),
    ]
    .into_iter()
    .filter(|(_, v)| *v > 0.0)
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The scenario's `tool:` block as the tool runner takes it.
fn tool(t: &Tool, home: &Path) -> tools::Tool {
    match t {
        Tool::Sysbench {
            test,
            tables,
            table_size,
            loaders,
        } => tools::Tool::Sysbench(tools::sysbench::SysbenchConfig {
            test: test.clone(),
            tables: *tables,
            table_size: *table_size,
            loaders: *loaders,
            args: Vec::new(),
            prepare: true,
            cleanup: true,
        }),
        Tool::Pgbench { scale, script } => {
            let (builtin, script) = match script {
                PgbenchScript::Builtin(b) => (Some(b.clone()), None),
                PgbenchScript::Script(p) => (None, Some(home.join(p))),
            };
            tools::Tool::Pgbench(tools::pgbench::PgbenchConfig {
                scale: *scale,
                builtin,
                script,
                init: true,
                args: Vec::new(),
            })
        }
        Tool::Ycsb { argv } => tools::Tool::Ycsb(tools::ycsb::YcsbConfig { argv: argv.clone() }),
        Tool::Command {
            argv,
            throughput,
            latency,
            ..
        } => tools::Tool::Command(tools::command::CommandConfig {
            argv: argv.clone(),
            throughput: throughput.clone(),
            latency: latency.clone(),
            latency_unit: None,
            operations: None,
            errors: None,
            kind: None,
        }),
        Tool::Pytpcc(p) => tools::Tool::Pytpcc(tools::pytpcc::PytpccConfig {
            warehouses: p.warehouses,
            load: p.load,
            path: p.path.as_ref().map(|x| home.join(x)),
            python: p.python.clone(),
            denormalize: p.denormalize,
            transactions: p.transactions,
            database: "tpcc".into(),
            write_concern: None,
            min_load_rate: p.min_load_rate,
            pymongo: p.pymongo.clone(),
            python_env: p
                .pymongo
                .as_deref()
                .map(|v| tools::pyenv::PyEnv::pymongo(&crate::fetch::cache::root(), v).dir),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_candles_and_ycsb_loads_get_the_scenarios_batch_size() {
        for (workload, kind) in [
            (LoadWorkload::Candles, WorkloadKind::Candles),
            (LoadWorkload::Iibench, WorkloadKind::Iibench),
            (LoadWorkload::Ycsb, WorkloadKind::A),
        ] {
            let load = Load {
                threads: 1,
                workload,
                batch: 1000,
                warehouses: None,
                denormalize: None,
                collections: None,
                measured: false,
            };
            let cfg = load_config(&load, None, None);
            assert_eq!((cfg.batch, cfg.workload), (Some(1000), kind));
        }
    }

    #[test]
    fn a_sysbench_mongo_load_fills_the_collections_of_its_phases() {
        let load = Load {
            threads: 8,
            workload: LoadWorkload::SysbenchMongo,
            batch: 1000,
            warehouses: None,
            denormalize: None,
            collections: Some(4),
            measured: false,
        };
        let cfg = load_config(&load, None, None);
        assert_eq!(
            (cfg.workload, cfg.collections, cfg.batch),
            (WorkloadKind::SysbenchMongo, Some(4), Some(1000))
        );
    }

    #[test]
    fn a_tpcc_load_and_phase_carry_their_warehouses_and_no_batch() {
        let load = Load {
            threads: 2,
            workload: LoadWorkload::Tpcc,
            batch: 1,
            warehouses: Some(3),
            denormalize: Some(false),
            collections: None,
            measured: false,
        };
        let cfg = load_config(&load, None, None);
        assert_eq!(
            (cfg.workload, cfg.warehouses, cfg.batch, cfg.load),
            (WorkloadKind::Tpcc, Some(3), None, true)
        );
        assert_eq!(cfg.denormalize, Some(false));
    }

    #[test]
    fn a_custom_mix_keeps_the_kinds_it_runs_and_a_storage_engine_reaches_every_config() {
        let phase = Phase {
            name: "mixed".into(),
            work: Work::Builtin(Builtin::Ycsb {
                workload: YcsbWorkload::Custom(crate::spec::scenario::Mix {
                    read: 0.9,
                    insert: 0.1,
                    ..Default::default()
                }),
                distribution: crate::workload::Distribution::Uniform,
            }),
            threads: vec![1],
            length: Length::Operations(10),
            warmup: crate::units::Duration::from_secs(0),
            target: Some(50),
            expect: None,
            error_budget: 3,
        };
        let PhaseConfig::Builtin(c) = phase_config(&phase, None, Some("rocksdb"), Path::new("/"))
        else {
            panic!("a built-in phase");
        };
        let mix: Vec<&str> = c.mix.as_ref().unwrap().keys().map(String::as_str).collect();
        assert_eq!(mix, ["insert", "read"]);
        assert_eq!(
            (c.workload, c.operations, c.target, c.engine.as_deref()),
            (WorkloadKind::Custom, Some(10), Some(50.0), Some("rocksdb"))
        );
        assert_eq!((c.warmup, c.error_budget), (None, ErrorBudget::Count(3)));
    }
}
