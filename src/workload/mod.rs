//! The built-in load generator, stores and external tools.
//!
//! - `rng`, `keys`, `dist`, `mix`: deterministic YCSB-style operation streams.
//! - `histo`: per-worker HDR histograms and series, merged at the end.
//! - `driver`: runs workers through a phase (count or time, warm-up,
//!   target rate, cancellation) into a `PhaseResult`.
//! - `ycsb`, `candles`: the workloads; `stores`: engines' data models.
//! - `tools`: sysbench, pgbench, YCSB output, any command.
//! - `summary`: YCSB-style text output.

use crate::results::model::PhaseResult;
use tokio_util::sync::CancellationToken;

pub mod bounds;
pub mod candles;
pub mod clock;
pub mod config;
pub mod dataset;
pub mod dist;
pub mod driver;
pub mod histo;
pub mod iibench;
pub mod keys;
pub mod mix;
pub mod phases;
pub mod rng;
pub mod stores;
pub mod summary;
pub mod sysbench_mongo;
pub mod tools;
pub mod tpcc;
pub mod ycsb;

pub use dataset::{Dataset, Load};
pub use dist::Distribution;
pub use keys::InsertOrder;

pub use config::{
    Common, DriveConfig, ErrorBudget, Generator, GeneratorKind, Hotspot, Problem, Problems, Run,
    Threads, Validated, WorkloadConfig, WorkloadError, WorkloadKind,
};

impl DriveConfig {
    /// Checks everything up front against what this host can hold; every
    /// problem in one message. For `drive` input (flags or `--config`),
    /// which nothing has checked before.
    pub fn validate(&self) -> Result<Validated, WorkloadError> {
        self.validate_on(&bounds::Capacity::probe())
    }

    /// Checks everything up front against `cap`: nothing is connected or
    /// allocated for a config that fails here.
    pub(crate) fn validate_on(&self, cap: &bounds::Capacity) -> Result<Validated, WorkloadError> {
        let mut errs = Problems::default();
        let target = self.store_target(&mut errs)?;
        let mut misplaced = Problems::default();
        let typed = self.typed(&mut misplaced);
        let generator = typed.generator;
        if let Some(t) = &target {
            generator.check_store(t, &mut errs);
        }
        errs.list.append(&mut misplaced.list);
        let stop = self.stop_of(&mut errs);
        self.check_counts(generator.mix(), stop, &mut errs);
        let facts = self.facts(&generator);
        self.check_batch(facts.row_params, target.as_ref(), &mut errs);
        self.check_ranges(&mut errs);
        let budget = match self.error_budget.budget() {
            Ok(b) => b,
            Err(e) => {
                errs.push("error_budget", e);
                driver::Budget::Count(0)
            }
        };
        let threads = self.threads.list();
        // What the host can hold, once the counts themselves are sane.
        if errs.list.is_empty() {
            for (t, shape) in self.worker_shapes(&facts, &threads, stop) {
                if let Err(r) = bounds::check_threads(t, &shape, cap) {
                    errs.push("threads", r.to_string());
                    break;
                }
            }
        }
        if !errs.list.is_empty() {
            return Err(WorkloadError::Config(errs));
        }
        Ok(Validated {
            run: Run {
                common: typed.common,
                target: target.expect("checked above"),
                stop,
                budget,
                threads,
                label: generator.label(),
            },
            generator,
        })
    }

    /// Checks a config a plan made from a validated scenario: only what
    /// the scenario cannot say, which depends on the store the cell's
    /// engine is (candles only on mongodb and postgres, a batch within one
    /// SQL INSERT). Counts, lengths, the mix and what the host holds were
    /// checked when the scenario was validated and planned.
    pub(crate) fn check_planned(&self) -> Result<(), WorkloadError> {
        let mut errs = Problems::default();
        let target = self.store_target(&mut errs)?;
        let generator = self.typed(&mut Problems::default()).generator;
        if let Some(t) = &target {
            generator.check_store(t, &mut errs);
        }
        if let Some(b) = self.batch
            && let Some(msg) =
                batch_beyond_sql(b, self.facts(&generator).row_params, target.as_ref())
        {
            errs.push("batch", msg);
        }
        if errs.list.is_empty() {
            Ok(())
        } else {
            Err(WorkloadError::Config(errs))
        }
    }

    /// The store URL, parsed; a URL that is not loopback is refused at once.
    fn store_target(
        &self,
        errs: &mut Problems,
    ) -> Result<Option<stores::StoreTarget>, WorkloadError> {
        let url = self.store.clone().unwrap_or_default();
        if url.is_empty() {
            errs.push(
                "store",
                "no store: give `store` (or --store) like redis://127.0.0.1:6379",
            );
            return Ok(None);
        }
        match stores::StoreTarget::parse(&url) {
            Ok(t) => Ok(Some(t)),
            Err(e @ stores::UrlError::NotLoopback { .. }) => Err(e.into()),
            Err(e) => {
                errs.push("store", e.to_string());
                Ok(None)
            }
        }
    }

    /// What checking a config needs to know of its generator before it
    /// connects: one arm per generator.
    fn facts(&self, g: &Generator) -> Facts {
        // A generator whose batch is never one SQL INSERT is held to
        // YCSB's columns.
        let ycsb_params = self.field_count as u64 + 1;
        match g {
            Generator::Ycsb(y) => Facts {
                kinds: ycsb::NAMES.len(),
                record_bytes: bounds::ycsb_record_bytes(y.field_count, y.field_length),
                load_batch: self.batch.unwrap_or(1),
                measured_batch: 0,
                // A scan reads up to `max_scan_length` records.
                reply_records: if y.mix.share(mix::OpKind::Scan) > 0.0 {
                    y.max_scan_length
                } else {
                    0
                },
                row_params: ycsb_params,
            },
            // A query reads a ticker's, an interval's or a day's candles.
            Generator::Candles(c) => Facts {
                kinds: candles::NAMES.len(),
                record_bytes: candles::RECORD_BYTES,
                load_batch: self.batch.unwrap_or(candles::BATCH),
                measured_batch: 0,
                reply_records: c.queries.reply_records(self.records),
                row_params: candles::PG_NCOLS as u64,
            },
            Generator::SysbenchMongo(_) => Facts {
                kinds: sysbench_mongo::NAMES.len(),
                record_bytes: sysbench_mongo::RECORD_BYTES,
                load_batch: self.batch.unwrap_or(sysbench_mongo::BATCH),
                measured_batch: 0,
                reply_records: sysbench_mongo::RANGE_SIZE,
                row_params: ycsb_params,
            },
            // Its measured phases insert batches too.
            Generator::Iibench(i) => Facts {
                kinds: iibench::NAMES.len(),
                record_bytes: iibench::record_bytes(i.data_length),
                load_batch: self.batch.unwrap_or(iibench::BATCH),
                measured_batch: self.batch.unwrap_or(iibench::BATCH),
                reply_records: 0,
                row_params: iibench::SQL_NCOLS as u64,
            },
            Generator::Tpcc(_) => Facts {
                kinds: tpcc::NAMES.len(),
                record_bytes: tpcc::LOAD_ROW_BYTES,
                load_batch: tpcc::LOAD_JOB_ROWS,
                measured_batch: 0,
                reply_records: 0,
                row_params: ycsb_params,
            },
        }
    }

    /// When a measured phase stops: a count of operations or a time.
    fn stop_of(&self, errs: &mut Problems) -> Option<driver::Stop> {
        match (self.operations, self.duration) {
            (Some(_), Some(_)) => {
                errs.push("operations", "give `operations` or `duration`, not both");
                None
            }
            (Some(n), None) => {
                errs.refused("operations", bounds::check_operations(n));
                Some(driver::Stop::Ops(n))
            }
            (None, Some(d)) => {
                errs.refused(
                    "duration",
                    bounds::check_seconds("duration", d.as_secs_f64()),
                );
                Some(driver::Stop::Time(d.std()))
            }
            (None, None) if self.load => None,
            (None, None) => {
                errs.push(
                    "operations",
                    "give `operations` (a count) or `duration` (like `30s`)",
                );
                None
            }
        }
    }

    /// Warm-up, thread counts, the record shape, key padding and records
    /// (with what the phase inserts: YCSB's `mix`) within their bounds.
    fn check_counts(&self, mix: Option<&Mix>, stop: Option<driver::Stop>, errs: &mut Problems) {
        if let Some(w) = self.warmup {
            errs.refused("warmup", bounds::check_seconds("warmup", w.as_secs_f64()));
        }
        let threads = self.threads.list();
        if threads.is_empty() {
            errs.push("threads", "give a count of at least 1 or a list of them");
        }
        if let Some(r) = threads
            .iter()
            .find_map(|&t| bounds::check_thread_count(t).err())
        {
            errs.push("threads", r.to_string());
        }
        if let Err(r) = bounds::check_record_shape(self.field_count, self.field_length) {
            let field = if self.field_count == 0 || self.field_count > bounds::MAX_FIELDS {
                "field_count"
            } else {
                "field_length"
            };
            errs.push(field, r.to_string());
        }
        if self.key_padding > bounds::MAX_KEY_PADDING {
            errs.push(
                "key_padding",
                format!(
                    "{} digits is out of range (0 to {}: MongoDB before 4.2 refuses index keys over 1024 bytes)",
                    self.key_padding,
                    bounds::MAX_KEY_PADDING
                ),
            );
        }
        if self.records == 0 {
            errs.push("records", "records must be at least 1");
        }
        let inserts = match (stop, mix) {
            (Some(driver::Stop::Ops(n)), Some(mix)) => {
                (mix.share(mix::OpKind::Insert) * n as f64).ceil() as u64
            }
            _ => 0,
        };
        errs.refused("records", bounds::check_records(self.records, inserts));
    }

    /// A batch of at least 1, within one SQL INSERT's parameters
    /// (`row_params` per record), within its bound.
    fn check_batch(
        &self,
        row_params: u64,
        target: Option<&stores::StoreTarget>,
        errs: &mut Problems,
    ) {
        let Some(b) = self.batch else {
            return;
        };
        if b == 0 {
            errs.push(
                "batch",
                "batch must be at least 1 (1 inserts one record at a time)",
            );
        } else if let Some(msg) = batch_beyond_sql(b, row_params, target) {
            errs.push("batch", msg);
        } else {
            errs.refused("batch", bounds::check_batch(b));
        }
    }

    /// Scan length, target rate and hotspot shares within their ranges.
    fn check_ranges(&self, errs: &mut Problems) {
        if self.max_scan_length == 0 || self.max_scan_length > bounds::MAX_SCAN {
            errs.push(
                "max_scan_length",
                format!(
                    "{} is out of range (1 to {} records)",
                    self.max_scan_length,
                    bounds::MAX_SCAN
                ),
            );
        }
        if let Some(t) = self.target {
            errs.refused("target", bounds::check_target(t));
        }
        if let Some(n) = self.data_length
            && n > iibench::MAX_DATA_LENGTH
        {
            errs.push(
                "data_length",
                format!(
                    "{n} bytes is out of range (0 to {}, iibench's VARCHAR(4000))",
                    iibench::MAX_DATA_LENGTH
                ),
            );
        }
        if let Some(h) = self.hotspot
            && !((0.0..=1.0).contains(&h.data) && (0.0..=1.0).contains(&h.ops))
        {
            errs.push("hotspot", "hotspot data and ops are shares between 0 and 1");
        }
    }

    /// Each phase's thread count and what one of its workers holds: the
    /// load (its batch), then one per measured thread count.
    fn worker_shapes(
        &self,
        f: &Facts,
        threads: &[u32],
        stop: Option<driver::Stop>,
    ) -> Vec<(u32, bounds::WorkerShape)> {
        let shape = bounds::WorkerShape {
            kinds: f.kinds,
            paced: self.target.is_some(),
            record_bytes: f.record_bytes,
            field_count: self.field_count,
            batch: 0,
            reply_records: 0,
            seconds: 0,
        };
        let mut out = Vec::new();
        if self.load {
            let t = self.load_threads.or(threads.first().copied()).unwrap_or(1);
            let batch = f.load_batch;
            out.push((
                t,
                bounds::WorkerShape {
                    paced: false,
                    batch,
                    ..shape
                },
            ));
        }
        if let Some(stop) = stop {
            let seconds = match stop {
                driver::Stop::Time(d) => d.as_secs().saturating_add(1),
                driver::Stop::Ops(_) => 0,
            };
            let measured = bounds::WorkerShape {
                reply_records: f.reply_records,
                seconds,
                batch: f.measured_batch,
                ..shape
            };
            out.extend(threads.iter().map(|&t| (t, measured)));
        }
        out
    }
}

/// What checking a config needs to know of its generator.
struct Facts {
    /// Operation kinds its workers record.
    kinds: usize,
    /// Bytes of one record (or row) it inserts.
    record_bytes: u64,
    /// Records per insert in the load.
    load_batch: u64,
    /// Records per insert in a measured phase (0: it does not insert batches).
    measured_batch: u64,
    /// Records one measured operation may read back.
    reply_records: u64,
    /// Parameters one record takes in a multi-row SQL INSERT.
    row_params: u64,
}

/// Why batch `b` does not fit one multi-row INSERT on a SQL store, which
/// binds `per_record` parameters for every record.
fn batch_beyond_sql(
    b: u64,
    per_record: u64,
    target: Option<&stores::StoreTarget>,
) -> Option<String> {
    let sql = target.is_some_and(|t| {
        matches!(
            t.kind,
            stores::StoreKind::Postgres | stores::StoreKind::Mysql
        )
    });
    let most = (stores::sql::MAX_PARAMS as u64 / per_record).max(1);
    (sql && b > most).then(|| {
        format!(
            "batch {b} needs {} parameters in one INSERT ({per_record} per record); \
             PostgreSQL and MySQL take at most {}: use a batch of at most {most}",
            b * per_record,
            stores::sql::MAX_PARAMS
        )
    })
}

use mix::Mix;

/// Runs the configured workload: the load phase when asked, then one
/// measured phase per thread count. Results come back in order. Each
/// generator gets the shared part and its own fields.
pub async fn run(
    v: &Validated,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    let r = &v.run;
    match &v.generator {
        Generator::Candles(c) => candles::run(r, c, cancel).await,
        Generator::SysbenchMongo(s) => sysbench_mongo::run(r, s, cancel).await,
        Generator::Iibench(i) => iibench::run(r, i, cancel).await,
        Generator::Tpcc(t) => tpcc::run(r, t, cancel).await,
        Generator::Ycsb(y) => {
            let schema = ycsb::schema(y, r.common.engine.as_deref());
            let store = stores::AnyStore::new(&r.target, schema);
            crate::with_store!(&store, s => ycsb::run(s, r, y, cancel).await)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_json_with_defaults_validates() {
        let c: DriveConfig = serde_json::from_str(
            r#"{"store": "null://", "workload": "custom", "mix": {"read": 0.9, "insert": 0.1},
                "threads": [1, 4], "duration": "2s", "error_budget": "1%"}"#,
        )
        .unwrap();
        let v = c.validate().unwrap();
        assert_eq!(v.run.threads, vec![1, 4]);
        assert_eq!(
            v.run.stop,
            Some(driver::Stop::Time(std::time::Duration::from_secs(2)))
        );
        assert_eq!(v.run.budget, driver::Budget::Fraction(0.01));
        assert_eq!(v.run.label, "ycsb:custom");
        assert_eq!(c.field_count, 10);
    }

    #[test]
    fn bad_configs_list_every_problem() {
        let c: DriveConfig = serde_json::from_str(
            r#"{"store": "null://", "workload": "a", "mix": {"read": 1}, "threads": 0,
                "operations": 5, "duration": "1s"}"#,
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("only for workload `custom`"), "{e}");
        assert!(e.contains("not both"), "{e}");
        assert!(e.contains("threads"), "{e}");
        let unknown = serde_json::from_str::<DriveConfig>(r#"{"recrods": 5}"#);
        assert!(unknown.is_err());
    }

    #[test]
    fn a_zero_batch_or_one_too_large_for_a_sql_insert_is_refused() {
        let cfg = |store: &str, batch: u64| DriveConfig {
            store: Some(store.into()),
            load: true,
            batch: Some(batch),
            ..Default::default()
        };
        let e = cfg("null://", 0).validate().unwrap_err().to_string();
        assert!(e.contains("batch must be at least 1"), "{e}");
        // 11 parameters per record (key and 10 fields): 5957 fit in 65535.
        assert!(cfg("postgres://127.0.0.1/db", 5957).validate().is_ok());
        let e = cfg("mysql://127.0.0.1/db", 5958)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 5957"), "{e}");
        assert!(cfg("redis://127.0.0.1", 50_000).validate().is_ok());
    }

    #[test]
    fn counts_beyond_the_host_are_refused_naming_the_field_or_the_flag() {
        let small = bounds::Capacity {
            memory: crate::units::Bytes::from_mib(64),
            memory_from: "64MiB in this test".into(),
            open_files: 1 << 20,
        };
        let cfg = DriveConfig {
            store: Some("null://".into()),
            operations: Some(10),
            threads: Threads::Sweep(vec![1, 100]),
            ..Default::default()
        };
        let Err(WorkloadError::Config(mut p)) = cfg.validate_on(&small) else {
            panic!("100 threads fit 64 MiB");
        };
        assert_eq!(p.list.len(), 1, "{p}");
        assert!(
            p.to_string().starts_with("threads: 100 threads may need "),
            "{p}"
        );
        p.as_flags = true;
        assert!(p.to_string().starts_with("--threads: 100 threads"), "{p}");
        assert!(p.to_string().contains("64MiB in this test"), "{p}");
        let most = bounds::most_threads(
            &cfg.worker_shapes(
                &cfg.facts(&cfg.typed(&mut Problems::default()).generator),
                &[1],
                Some(driver::Stop::Ops(10)),
            )[0]
            .1,
            &small,
        );
        assert!(
            p.to_string()
                .contains(&format!("use at most {most} threads")),
            "{p}"
        );

        let huge = DriveConfig {
            store: Some("null://".into()),
            operations: Some(u64::MAX),
            records: u64::MAX,
            field_length: 100 << 20,
            target: Some(1e-300),
            key_padding: usize::MAX,
            ..Default::default()
        };
        let Err(WorkloadError::Config(p)) = huge.validate_on(&small) else {
            panic!("refused");
        };
        let fields: Vec<&str> = p.list.iter().map(|x| x.field).collect();
        assert_eq!(
            fields,
            [
                "operations",
                "field_length",
                "key_padding",
                "records",
                "target"
            ],
            "{p}"
        );
    }

    #[test]
    fn a_wire_config_reads_into_its_generators_variant_with_its_own_fields() {
        let typed = |json: &str| {
            let mut errs = Problems::default();
            let c = serde_json::from_str::<DriveConfig>(json)
                .unwrap()
                .typed(&mut errs);
            (c, errs.to_string())
        };
        let (c, errs) = typed(r#"{"workload": "tpcc", "warehouses": 3, "denormalize": false}"#);
        assert_eq!(errs, "");
        assert_eq!(
            c.generator,
            Generator::Tpcc(config::Tpcc {
                warehouses: 3,
                denormalize: Some(false)
            })
        );
        // The dataset's record shape a plan writes for every generator is
        // YCSB's alone; the shared fields are every generator's.
        let (c, errs) =
            typed(r#"{"workload": "candles", "queries": "day", "field_count": 3, "records": 9}"#);
        assert_eq!(errs, "");
        let queries = config::CandleQuery::Day;
        assert_eq!(c.generator, Generator::Candles(config::Candles { queries }));
        assert_eq!(
            (c.common.records, c.generator.label().as_str()),
            (9, "candles:day")
        );
        let (c, errs) = typed(r#"{"workload": "b", "field_count": 3, "distribution": "uniform"}"#);
        let Generator::Ycsb(y) = &c.generator else {
            panic!("{c:?}");
        };
        assert_eq!(
            (y.letter, y.field_count, y.distribution),
            (Some('b'), 3, Distribution::Uniform)
        );
        assert_eq!(
            (errs.as_str(), c.generator.label().as_str()),
            ("", "ycsb:b")
        );
        // A generator's own field given to another one is refused there.
        let (c, errs) = typed(r#"{"workload": "iibench", "warehouses": 2, "denormalize": true}"#);
        assert_eq!(c.generator.kind(), GeneratorKind::Iibench);
        assert_eq!(
            errs,
            "warehouses: `warehouses` only applies to `workload: tpcc`; \
             denormalize: `denormalize` only applies to `workload: tpcc` (on mongodb)"
        );
    }

    #[test]
    fn a_store_a_generator_does_not_run_on_is_refused_before_anything_connects() {
        let cfg = |workload: &str, store: &str| {
            serde_json::from_value::<DriveConfig>(serde_json::json!({
                "workload": workload, "store": store, "operations": 1
            }))
            .unwrap()
        };
        let e = cfg("sysbench-mongo", "redis://127.0.0.1:6379")
            .check_planned()
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "store: the sysbench-mongo workload runs on mongodb, not redis"
        );
        let e = cfg("tpcc", "redis://127.0.0.1:6379")
            .validate()
            .unwrap_err();
        assert!(
            e.to_string().contains(
                "the tpcc workload runs on postgres, mysql/mariadb and mongodb, not redis"
            ),
            "{e}"
        );
        assert!(
            cfg("candles", "postgres://127.0.0.1/db")
                .check_planned()
                .is_ok()
        );
    }

    #[test]
    fn non_loopback_store_is_refused() {
        let c = DriveConfig {
            store: Some("redis://192.168.1.9:6379".into()),
            operations: Some(1),
            ..Default::default()
        };
        assert!(matches!(c.validate(), Err(WorkloadError::Url(_))));
    }
}
