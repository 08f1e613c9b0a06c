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

pub use dist::Distribution;
pub use keys::InsertOrder;

pub use config::{
    ErrorBudget, GeneratorKind, Hotspot, Problem, Problems, Threads, Validated, WorkloadConfig,
    WorkloadError, WorkloadKind,
};

impl WorkloadConfig {
    /// Checks everything up front against what this host can hold; every
    /// problem in one message. For `drive` input (flags or `--config`),
    /// which nothing has checked before.
    pub fn validate(&self) -> Result<Validated, WorkloadError> {
        self.validate_on(&bounds::Capacity::probe())
    }

    /// Checks everything up front against `cap`: nothing is connected or
    /// allocated for a config that fails here.
    pub fn validate_on(&self, cap: &bounds::Capacity) -> Result<Validated, WorkloadError> {
        let mut errs = Problems::default();
        let target = self.store_target(&mut errs)?;
        self.check_store_kind(target.as_ref(), &mut errs);
        self.check_warehouses(&mut errs);
        let (mix, dist) = self.mix_of(&mut errs);
        let stop = self.stop_of(&mut errs);
        self.check_counts(&mix, stop, &mut errs);
        self.check_batch(target.as_ref(), &mut errs);
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
            for (t, shape) in self.worker_shapes(&mix, &threads, stop) {
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
            cfg: self.clone(),
            target: target.expect("checked above"),
            mix,
            distribution: self.distribution.unwrap_or(dist),
            stop,
            budget,
            threads,
            label: self.label(),
        })
    }

    /// Checks a config a plan made from a validated scenario: only what
    /// the scenario cannot say, which depends on the store the cell's
    /// engine is (candles only on mongodb and postgres, a batch within one
    /// SQL INSERT). Counts, lengths, the mix and what the host holds were
    /// checked when the scenario was validated and planned.
    pub fn check_planned(&self) -> Result<(), WorkloadError> {
        let mut errs = Problems::default();
        let target = self.store_target(&mut errs)?;
        self.check_store_kind(target.as_ref(), &mut errs);
        if let Some(b) = self.batch
            && let Some(msg) = self.batch_beyond_sql(b, target.as_ref())
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

    /// `warehouses` belongs to tpcc, from 1 to [`tpcc::MAX_WAREHOUSES`];
    /// so does `denormalize`.
    fn check_warehouses(&self, errs: &mut Problems) {
        match (self.workload, self.warehouses) {
            (WorkloadKind::Tpcc, Some(w)) if w == 0 || w > tpcc::MAX_WAREHOUSES => errs.push(
                "warehouses",
                format!(
                    "{w} is out of range (1 to {} warehouses)",
                    tpcc::MAX_WAREHOUSES
                ),
            ),
            (WorkloadKind::Tpcc, _) | (_, None) => {}
            (_, Some(_)) => errs.push(
                "warehouses",
                "`warehouses` only applies to `workload: tpcc`",
            ),
        }
        if self.workload != WorkloadKind::Tpcc && self.denormalize.is_some() {
            errs.push(
                "denormalize",
                "`denormalize` only applies to `workload: tpcc` (on mongodb)",
            );
        }
    }

    /// The candles workload runs on mongodb and postgres only, tpcc and
    /// iibench on mongodb and the SQL stores, sysbench-mongo on mongodb;
    /// tpcc's `denormalize` is for mongodb.
    fn check_store_kind(&self, target: Option<&stores::StoreTarget>, errs: &mut Problems) {
        if self.workload == WorkloadKind::Tpcc
            && self.denormalize.is_some()
            && let Some(t) = target
            && t.kind != stores::StoreKind::Mongodb
        {
            errs.push(
                "denormalize",
                format!(
                    "py-tpcc's MongoDB document schema does not apply to {}, which has \
                     TPC-C's relational schema: leave it out, or run on a mongodb store",
                    t.kind
                ),
            );
        }
        if self.workload == WorkloadKind::Tpcc
            && let Some(t) = target
            && !matches!(
                t.kind,
                stores::StoreKind::Mysql | stores::StoreKind::Postgres | stores::StoreKind::Mongodb
            )
        {
            errs.push(
                "store",
                format!(
                    "the tpcc workload runs on postgres, mysql/mariadb and mongodb, not {}",
                    t.kind
                ),
            );
        }
        if self.workload == WorkloadKind::Iibench
            && let Some(t) = target
            && !matches!(
                t.kind,
                stores::StoreKind::Mongodb | stores::StoreKind::Postgres | stores::StoreKind::Mysql
            )
        {
            errs.push(
                "store",
                format!(
                    "the iibench workload runs on mongodb, postgres and mysql, not {}",
                    t.kind
                ),
            );
        }
        if self.workload == WorkloadKind::SysbenchMongo
            && let Some(t) = target
            && t.kind != stores::StoreKind::Mongodb
        {
            errs.push(
                "store",
                format!(
                    "the sysbench-mongo workload runs on mongodb, not {}",
                    t.kind
                ),
            );
        }
        if self.workload == WorkloadKind::Candles
            && let Some(t) = target
            && !matches!(
                t.kind,
                stores::StoreKind::Mongodb | stores::StoreKind::Postgres
            )
        {
            errs.push(
                "store",
                format!(
                    "the candles workload runs on mongodb and postgres, not {}",
                    t.kind
                ),
            );
        }
    }

    /// The YCSB letter of workloads `a`..`f`.
    fn letter(&self) -> Option<char> {
        match self.workload {
            WorkloadKind::A => Some('a'),
            WorkloadKind::B => Some('b'),
            WorkloadKind::C => Some('c'),
            WorkloadKind::D => Some('d'),
            WorkloadKind::E => Some('e'),
            WorkloadKind::F => Some('f'),
            _ => None,
        }
    }

    /// `ycsb:a`, `ycsb:custom`, `candles:by_ticker`.
    pub fn label(&self) -> String {
        match self.workload {
            WorkloadKind::Candles => {
                let q = self.queries.unwrap_or_default();
                format!("candles:{}", q.name())
            }
            WorkloadKind::SysbenchMongo | WorkloadKind::Iibench | WorkloadKind::Tpcc => {
                self.workload.generator().name().into()
            }
            WorkloadKind::Custom => "ycsb:custom".into(),
            _ => format!("ycsb:{}", self.letter().unwrap_or('c')),
        }
    }

    /// The operation mix and its default distribution: the workload
    /// letter's, or `mix` for `custom`.
    fn mix_of(&self, errs: &mut Problems) -> (Mix, Distribution) {
        let fallback = || Mix::ycsb('c').expect("c exists");
        match (self.letter(), &self.mix) {
            (Some(l), None) => Mix::ycsb(l).expect("a..f are YCSB workloads"),
            (Some(l), Some(_)) => {
                errs.push(
                    "workload",
                    format!(
                        "`mix` is only for workload `custom`, not `{l}`; drop it or set workload: custom"
                    ),
                );
                Mix::ycsb(l).expect("a..f are YCSB workloads")
            }
            (None, Some(m)) if self.workload == WorkloadKind::Custom => {
                match mix::Mix::from_map(m) {
                    Ok(m) => (m, Distribution::Zipfian),
                    Err(e) => {
                        errs.push("workload", e.to_string());
                        fallback()
                    }
                }
            }
            (None, None) if self.workload == WorkloadKind::Custom => {
                errs.push(
                    "workload",
                    "workload `custom` needs `mix`, e.g. {read: 0.9, update: 0.1}",
                );
                fallback()
            }
            _ => fallback(),
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
    /// (with what the phase inserts) within their bounds.
    fn check_counts(&self, mix: &Mix, stop: Option<driver::Stop>, errs: &mut Problems) {
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
        let inserts = match stop {
            Some(driver::Stop::Ops(n)) => (mix.share(mix::OpKind::Insert) * n as f64).ceil() as u64,
            _ => 0,
        };
        errs.refused("records", bounds::check_records(self.records, inserts));
    }

    /// A batch of at least 1, within one SQL INSERT's parameters, within
    /// its bound.
    fn check_batch(&self, target: Option<&stores::StoreTarget>, errs: &mut Problems) {
        let Some(b) = self.batch else {
            return;
        };
        if b == 0 {
            errs.push(
                "batch",
                "batch must be at least 1 (1 inserts one record at a time)",
            );
        } else if let Some(msg) = self.batch_beyond_sql(b, target) {
            errs.push("batch", msg);
        } else {
            errs.refused("batch", bounds::check_batch(b));
        }
    }

    /// Why batch `b` does not fit one multi-row INSERT on a SQL store,
    /// which binds every column of every record.
    fn batch_beyond_sql(&self, b: u64, target: Option<&stores::StoreTarget>) -> Option<String> {
        let sql = target.is_some_and(|t| {
            matches!(
                t.kind,
                stores::StoreKind::Postgres | stores::StoreKind::Mysql
            )
        });
        let per_record = match self.workload {
            WorkloadKind::Candles => candles::PG_NCOLS as u64,
            WorkloadKind::Iibench => iibench::SQL_NCOLS as u64,
            _ => self.field_count as u64 + 1,
        };
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
        mix: &Mix,
        threads: &[u32],
        stop: Option<driver::Stop>,
    ) -> Vec<(u32, bounds::WorkerShape)> {
        let candles = self.workload == WorkloadKind::Candles;
        let tpcc = self.workload == WorkloadKind::Tpcc;
        let (kinds, record_bytes) = if candles {
            (candles::NAMES.len(), candles::RECORD_BYTES)
        } else if self.workload == WorkloadKind::SysbenchMongo {
            (sysbench_mongo::NAMES.len(), sysbench_mongo::RECORD_BYTES)
        } else if self.workload == WorkloadKind::Iibench {
            (
                iibench::NAMES.len(),
                iibench::record_bytes(self.data_length.unwrap_or(0)),
            )
        } else if tpcc {
            (tpcc::NAMES.len(), tpcc::LOAD_ROW_BYTES)
        } else {
            (
                ycsb::NAMES.len(),
                bounds::ycsb_record_bytes(self.field_count, self.field_length),
            )
        };
        let shape = bounds::WorkerShape {
            kinds,
            paced: self.target.is_some(),
            record_bytes,
            field_count: self.field_count,
            batch: 0,
            reply_records: 0,
            seconds: 0,
        };
        let mut out = Vec::new();
        if self.load {
            let batch = match self.workload {
                WorkloadKind::Tpcc => tpcc::LOAD_JOB_ROWS,
                WorkloadKind::Candles => self.batch.unwrap_or(candles::BATCH),
                WorkloadKind::SysbenchMongo => self.batch.unwrap_or(sysbench_mongo::BATCH),
                WorkloadKind::Iibench => self.batch.unwrap_or(iibench::BATCH),
                _ => self.batch.unwrap_or(1),
            };
            let t = self.load_threads.or(threads.first().copied()).unwrap_or(1);
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
            // A candle query reads a ticker's, an interval's or a day's
            // candles; a YCSB scan up to `max_scan_length` records.
            let reply = if candles {
                self.queries.unwrap_or_default().reply_records(self.records)
            } else if self.workload == WorkloadKind::SysbenchMongo {
                sysbench_mongo::RANGE_SIZE
            } else if mix.share(mix::OpKind::Scan) > 0.0 {
                self.max_scan_length
            } else {
                0
            };
            let seconds = match stop {
                driver::Stop::Time(d) => d.as_secs().saturating_add(1),
                driver::Stop::Ops(_) => 0,
            };
            // iibench's measured phase inserts batches too.
            let batch = match self.workload {
                WorkloadKind::Iibench => self.batch.unwrap_or(iibench::BATCH),
                _ => 0,
            };
            for &t in threads {
                out.push((
                    t,
                    bounds::WorkerShape {
                        reply_records: reply,
                        seconds,
                        batch,
                        ..shape
                    },
                ));
            }
        }
        out
    }
}

use mix::Mix;

/// Runs the configured workload: the load phase when asked, then one
/// measured phase per thread count. Results come back in order.
pub async fn run(
    v: &Validated,
    cancel: &CancellationToken,
) -> Result<Vec<PhaseResult>, WorkloadError> {
    match v.cfg.workload.generator() {
        GeneratorKind::Candles => candles::run(v, cancel).await,
        GeneratorKind::SysbenchMongo => sysbench_mongo::run(v, cancel).await,
        GeneratorKind::Iibench => iibench::run(v, cancel).await,
        GeneratorKind::Tpcc => tpcc::run(v, cancel).await,
        GeneratorKind::Ycsb => {
            let schema = ycsb::schema(&v.cfg);
            let store = stores::AnyStore::new(&v.target, schema);
            crate::with_store!(&store, s => ycsb::run(s, v, cancel).await)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_json_with_defaults_validates() {
        let c: WorkloadConfig = serde_json::from_str(
            r#"{"store": "null://", "workload": "custom", "mix": {"read": 0.9, "insert": 0.1},
                "threads": [1, 4], "duration": "2s", "error_budget": "1%"}"#,
        )
        .unwrap();
        let v = c.validate().unwrap();
        assert_eq!(v.threads, vec![1, 4]);
        assert_eq!(
            v.stop,
            Some(driver::Stop::Time(std::time::Duration::from_secs(2)))
        );
        assert_eq!(v.budget, driver::Budget::Fraction(0.01));
        assert_eq!(v.label, "ycsb:custom");
        assert_eq!(c.field_count, 10);
    }

    #[test]
    fn bad_configs_list_every_problem() {
        let c: WorkloadConfig = serde_json::from_str(
            r#"{"store": "null://", "workload": "a", "mix": {"read": 1}, "threads": 0,
                "operations": 5, "duration": "1s"}"#,
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("only for workload `custom`"), "{e}");
        assert!(e.contains("not both"), "{e}");
        assert!(e.contains("threads"), "{e}");
        let unknown = serde_json::from_str::<WorkloadConfig>(r#"{"recrods": 5}"#);
        assert!(unknown.is_err());
    }

    #[test]
    fn a_zero_batch_or_one_too_large_for_a_sql_insert_is_refused() {
        let cfg = |store: &str, batch: u64| WorkloadConfig {
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
        let cfg = WorkloadConfig {
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
                &Mix::ycsb('a').unwrap().0,
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

        let huge = WorkloadConfig {
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
    fn non_loopback_store_is_refused() {
        let c = WorkloadConfig {
            store: Some("redis://192.168.1.9:6379".into()),
            operations: Some(1),
            ..Default::default()
        };
        assert!(matches!(c.validate(), Err(WorkloadError::Url(_))));
    }
}
