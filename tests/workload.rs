//! The load generator, stores and tools against real servers.

mod support;

use benchcage::clients;
use support::cli::{BIN, assert_success, bc, drive, summary_count};
use support::{Kind, Server, block_on};

fn server_version(kind: Kind) -> String {
    let s = Server::start(kind);
    block_on(clients::ping(&s.probe(), s.port)).unwrap()
}

#[test]
fn ping_reports_the_redis_version() {
    let v = server_version(Kind::Redis);
    assert!(v.chars().next().unwrap().is_ascii_digit(), "{v}");
}

#[test]
fn ping_reports_the_postgres_version() {
    let v = server_version(Kind::Postgres);
    assert!(v.starts_with("15"), "{v}");
}

#[test]
fn ping_reports_the_mariadb_version() {
    let v = server_version(Kind::Mariadb);
    assert!(v.contains("MariaDB"), "{v}");
}

#[test]
fn ping_reports_the_secantus_version() {
    let v = server_version(Kind::Secantus);
    assert!(v.chars().next().unwrap().is_ascii_digit(), "{v}");
}

#[test]
fn a_redis_error_inside_a_pipeline_leaves_the_connection_in_step() {
    use benchcage::clients::redis::RedisConn;
    let s = Server::start(Kind::Redis);
    block_on(async {
        let ep = clients::Endpoint::loopback(s.port);
        let mut c = RedisConn::connect(&ep).await.unwrap();
        c.cmd(&["SET", "plain", "v"]).await.unwrap();
        // HSET on a string fails, then ZADD answers: the error is reported
        // and both replies are consumed, so the next answer is GET's.
        let e = c
            .hset("plain", [("f", "x")].into_iter(), Some(("idx", 1.0)))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("WRONGTYPE"), "{e}");
        assert_eq!(c.cmd(&["GET", "plain"]).await.unwrap(), "v");
        assert!(c.cmd(&["NOSUCHCOMMAND"]).await.is_err());
        assert_eq!(c.cmd(&["PING"]).await.unwrap(), "PONG");
    });
}

use benchcage::results::model::PhaseResult;
use benchcage::workload::{self, DriveConfig};
use tokio_util::sync::CancellationToken;

fn run_config(cfg: &DriveConfig) -> Vec<PhaseResult> {
    let v = cfg.validate().expect("valid config");
    block_on(workload::run(&v, &CancellationToken::new())).expect("workload runs")
}

fn every_kind(url: &str) -> DriveConfig {
    serde_json::from_value(serde_json::json!({
        "store": url, "workload": "custom",
        "mix": {"read": 0.3, "update": 0.2, "insert": 0.1, "scan": 0.2, "read_modify_write": 0.2},
        "records": 300, "field_count": 4, "field_length": 20, "max_scan_length": 10,
        "threads": 2, "operations": 600, "load": true, "seed": 7
    }))
    .unwrap()
}

/// Loads, runs every operation kind without an error, then reads records
/// that were never loaded and checks those reads are counted as errors
/// that fail the phase.
fn store_end_to_end(kind: Kind) {
    let s = Server::start(kind);
    let results = run_config(&every_kind(&s.url()));
    assert_eq!(results.len(), 2, "load and run");
    let (load, run) = (&results[0], &results[1]);
    assert!(load.status.is_ok(), "{:?}", load.status);
    assert_eq!(load.ops["INSERT"].count, 300);
    assert!(run.status.is_ok(), "{:?} {:?}", run.status, run.ops);
    assert_eq!(run.total_ops, 600);
    for k in ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"] {
        let op = &run.ops[k];
        assert!(op.count > 0 && op.errors == 0, "{k}: {op:?}");
        let l = &op.latency_us;
        assert!(
            l.p50.unwrap() > 0.0 && l.max.unwrap() >= l.p99.unwrap(),
            "{l:?}"
        );
    }
    assert!(!run.series.is_empty());

    // Twice the records that exist: about half the reads miss. Allowed to
    // fail, the phase runs every operation and counts each miss.
    let mut missing = every_kind(&s.url());
    missing.workload = workload::WorkloadKind::C;
    missing.mix = None;
    missing.distribution = Some(workload::Distribution::Uniform);
    missing.load = false;
    missing.records = 1200;
    missing.error_budget = workload::ErrorBudget::Share("100%".into());
    let r = &run_config(&missing)[0];
    let read = &r.ops["READ"];
    assert!(read.errors > 200 && read.count > 100, "{read:?}");
    assert_eq!(read.count + read.errors, 600);
    assert_eq!(
        r.total_ops, read.count,
        "failures are not counted as operations"
    );
    assert!(r.status.is_ok(), "{:?}", r.status);
    assert!(
        read.error_samples[0].contains("not found"),
        "{:?}",
        read.error_samples
    );
    // Without a budget the first miss stops the phase and fails it.
    missing.error_budget = workload::ErrorBudget::Count(0);
    let r = &run_config(&missing)[0];
    assert!((1..=2).contains(&r.total_errors), "{}", r.total_errors);
    assert!(r.total_ops + r.total_errors < 600, "{}", r.total_ops);
    assert!(!r.status.is_ok(), "errors over the budget fail the phase");
}

#[test]
fn redis_store_runs_every_operation_and_counts_failures() {
    store_end_to_end(Kind::Redis);
}

#[test]
fn postgres_store_runs_every_operation_and_counts_failures() {
    store_end_to_end(Kind::Postgres);
}

#[test]
fn mariadb_store_runs_every_operation_and_counts_failures() {
    store_end_to_end(Kind::Mariadb);
}

#[test]
fn mongodb_store_on_secantus_runs_every_operation_and_counts_failures() {
    store_end_to_end(Kind::Secantus);
}

#[test]
fn mariadb_store_creates_the_table_in_the_requested_engine() {
    let s = Server::start(Kind::Mariadb);
    let mut cfg = every_kind(&format!(
        "{}?engine=RocksDB",
        s.url().trim_end_matches("/mysql")
    ));
    cfg.operations = Some(100);
    let results = run_config(&cfg);
    assert!(results.iter().all(|r| r.status.is_ok()), "{results:?}");
    let out = std::process::Command::new("mariadb")
        .args([
            "--no-defaults",
            "-h",
            "127.0.0.1",
            "-P",
            &s.port.to_string(),
            "-uroot",
            "-N",
            "-e",
        ])
        .arg("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_NAME='usertable'")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ROCKSDB");
}

/// Loads 300 records (4 fields) with `batch` records per insert.
fn load_only(url: &str, batch: u64) -> PhaseResult {
    let cfg: DriveConfig = serde_json::from_value(serde_json::json!({
        "store": url, "records": 300, "field_count": 4, "field_length": 20,
        "threads": 2, "load": true, "reset": true, "seed": 7, "batch": batch
    }))
    .unwrap();
    let mut r = run_config(&cfg);
    assert_eq!(r.len(), 1, "a load alone");
    r.remove(0)
}

/// Every record the last `load_only` wrote (keys, fields, values, and the
/// scan index on redis), as one string to compare.
fn contents(s: &Server) -> String {
    use benchcage::workload::keys::KeyFormat;
    let mut ep = clients::Endpoint::loopback(s.port);
    let fields = "ycsb_key, '|', field0, '|', field1, '|', field2, '|', field3";
    block_on(async {
        match s.kind {
            Kind::Redis => {
                let mut c = clients::redis::RedisConn::connect(&ep).await.unwrap();
                let mut out = c.cmd(&["DBSIZE"]).await.unwrap();
                let index = ["ZRANGE", "_indices", "0", "-1", "WITHSCORES"];
                out += &c.cmd(&index).await.unwrap();
                let keys = KeyFormat {
                    order: Default::default(),
                    padding: 1,
                };
                for n in 0..300 {
                    out += &c.cmd(&["HGETALL", &keys.key(n)]).await.unwrap();
                }
                out
            }
            Kind::Postgres => {
                ep.user = Some("postgres".into());
                ep.database = Some("postgres".into());
                let sql = format!(
                    "SELECT count(*) || ':' || md5(string_agg(concat({fields}), ',' \
                     ORDER BY ycsb_key)) FROM usertable"
                );
                clients::postgres::query_text(&ep, &sql).await.unwrap()
            }
            Kind::Mariadb => {
                ep.user = Some("root".into());
                ep.database = Some("ycsb".into());
                let sql = format!(
                    "SELECT CONCAT(COUNT(*), ':', SUM(CRC32(CONCAT({fields}))), ':', \
                     (SELECT ENGINE FROM information_schema.TABLES \
                      WHERE TABLE_NAME = 'usertable')) FROM usertable"
                );
                clients::mysql::query_text(&ep, &sql).await.unwrap()
            }
            Kind::Secantus => {
                ep.database = Some("ycsb".into());
                let mut c = clients::mongodb::MongoConn::connect(&ep).await.unwrap();
                let docs = c
                    .find_json("usertable", &serde_json::json!({}))
                    .await
                    .unwrap();
                format!("{}:{}", docs.len(), serde_json::Value::Array(docs))
            }
        }
    })
}

/// A load of one record per insert and a load of 64 per batch (the last
/// one 44) write the same records; the batched load counts records.
fn batched_load_writes_what_the_unbatched_load_writes(kind: Kind) {
    let s = Server::start(kind);
    // MariaDB: MyRocks, in the store's own database.
    let url = match kind {
        Kind::Mariadb => format!("{}?engine=RocksDB", s.url().trim_end_matches("/mysql")),
        _ => s.url(),
    };
    let one = load_only(&url, 1);
    let single = contents(&s);
    let batched = load_only(&url, 64);
    let together = contents(&s);
    for r in [&one, &batched] {
        assert!(r.status.is_ok(), "{:?}", r.ops);
        assert_eq!((r.total_ops, r.ops["INSERT"].count), (300, 300));
        assert!(r.ops["INSERT"].latency_us.mean.unwrap() > 0.0);
    }
    // 300 records (redis: 300 hashes and the index).
    assert!(
        single.starts_with("300:") || single.starts_with("301"),
        "{single:.200}"
    );
    assert_eq!(single, together);
    if kind == Kind::Mariadb {
        assert!(single.ends_with(":ROCKSDB"), "{single}");
    }
}

#[test]
fn batched_load_on_redis_writes_the_same_records_as_one_by_one() {
    batched_load_writes_what_the_unbatched_load_writes(Kind::Redis);
}

#[test]
fn batched_load_on_postgres_writes_the_same_records_as_one_by_one() {
    batched_load_writes_what_the_unbatched_load_writes(Kind::Postgres);
}

#[test]
fn batched_load_on_mariadb_myrocks_writes_the_same_records_as_one_by_one() {
    batched_load_writes_what_the_unbatched_load_writes(Kind::Mariadb);
}

#[test]
fn batched_load_on_secantus_writes_the_same_records_as_one_by_one() {
    batched_load_writes_what_the_unbatched_load_writes(Kind::Secantus);
}

fn candles(url: &str, query: &str, load: bool) -> DriveConfig {
    serde_json::from_value(serde_json::json!({
        "store": url, "workload": "candles", "queries": query,
        "records": 3000, "threads": 2, "operations": 40, "load": load
    }))
    .unwrap()
}

fn candles_end_to_end(kind: Kind) {
    let s = Server::start(kind);
    let first = run_config(&candles(&s.url(), "by_ticker", true));
    // Every candle counts as an INSERT; the latencies are per batch.
    assert_eq!(first[0].ops["INSERT"].count, 3000);
    assert_eq!(first[0].total_ops, 3000);
    assert_eq!(first[0].ops["INSERT"].calls, Some(6));
    assert!(first.iter().all(|r| r.status.is_ok()), "{first:?}");
    assert_eq!(first[1].ops["BY_TICKER"].count, 40);
    // The load takes the scenario's batch size.
    let mut batched = candles(&s.url(), "by_ticker", true);
    batched.batch = Some(300);
    batched.reset = true;
    let r = run_config(&batched);
    assert_eq!(r[0].ops["INSERT"].count, 3000, "{r:?}");
    // 10 batches of 300: one latency measurement each.
    assert_eq!(r[0].ops["INSERT"].calls, Some(10), "{r:?}");
    for (q, kind) in [("interval", "INTERVAL"), ("day", "DAY")] {
        let r = &run_config(&candles(&s.url(), q, false))[0];
        assert!(r.status.is_ok(), "{q}: {:?}", r.status);
        assert_eq!(r.ops[kind].count, 40, "{q}");
        assert_eq!(r.workload, format!("candles:{q}"));
    }
}

#[test]
fn candles_load_and_query_on_postgres() {
    candles_end_to_end(Kind::Postgres);
}

#[test]
fn candles_load_and_query_on_secantus() {
    candles_end_to_end(Kind::Secantus);
}

/// Write-up 000's finding: TokuMX answered queries short, without an
/// error, once its cache outgrew RAM. Against a server that answers half
/// of every find, each candle query is an error of its kind naming what
/// came back, and the phase fails on its error budget.
#[test]
fn a_candles_run_against_a_server_that_truncates_answers_fails_with_each_short_answer() {
    let s = support::legacy::LegacyMongo::start_with(4, &["--truncate", "0.5"]);
    let load = run_config(&candles(&s.url(), "by_ticker", true));
    assert_eq!(load[0].ops["INSERT"].count, 3000, "inserts are not finds");
    let by_ticker = &load[1];
    assert!(!by_ticker.status.is_ok(), "{:?}", by_ticker.status);
    let op = &by_ticker.ops["BY_TICKER"];
    assert!(op.errors >= 1 && op.count == 0, "{op:?}");
    // 3000 candles over 1000 tickers: 3 each, of which 1 came back.
    let m = &op.error_samples[0];
    assert!(
        m.starts_with("returned 1 of 3 candles of ticker TK"),
        "{:?}",
        op.error_samples
    );
    // Under a budget that lets every error pass, each one still counts.
    for (q, kind, what) in [
        ("day", "DAY", " candles of day "),
        ("interval", "INTERVAL", " candles with ts in "),
    ] {
        let mut c = candles(&s.url(), q, false);
        c.error_budget = serde_json::from_value(serde_json::json!("100%")).unwrap();
        let r = &run_config(&c)[0];
        let op = &r.ops[kind];
        assert_eq!((op.count, op.errors), (0, 40), "{q}: {op:?}");
        assert_eq!(r.total_errors, 40);
        for m in &op.error_samples {
            // `returned X of Y candles ...`: X is half of Y, as answered.
            let n: Vec<u64> = m.split(' ').filter_map(|w| w.parse().ok()).collect();
            assert!(m.contains(what) && n[0] == n[1] / 2, "{q}: {m}");
        }
        if q == "day" {
            assert_eq!(op.error_samples.len(), 1, "one day");
            assert!(op.error_samples[0].starts_with("returned 1500 of 3000 "));
        }
    }
}

#[test]
fn sysbench_mongo_loads_its_collections_in_batches_then_runs_transactions_on_secantus() {
    let s = Server::start(Kind::Secantus);
    let url = format!("{}/sbtest", s.url());
    let cfg: DriveConfig = serde_json::from_value(serde_json::json!({
        "store": url, "workload": "sysbench-mongo", "collections": 3, "records": 1500,
        "threads": [1, 2], "duration": "2s", "load": true, "load_threads": 2
    }))
    .unwrap();
    let r = run_config(&cfg);
    assert!(r.iter().all(|p| p.status.is_ok()), "{r:?}");
    assert_eq!(r[0].workload, "sysbench-mongo:load");
    // 3 collections x 1500 documents, 1000 per insert: 2 batches each.
    let ins = &r[0].ops["INSERT"];
    assert_eq!((ins.count, ins.calls), (4500, Some(6)), "{ins:?}");
    assert!(r[0].throughput > 0.0, "inserts/s reported");
    assert_eq!(r[0].threads, 2, "the loaders");
    for p in &r[1..] {
        let t = &p.ops["TRANSACTION"];
        assert!(t.count > 0 && t.errors == 0, "{t:?}");
        assert!((p.throughput - t.count as f64 / p.duration_s).abs() < 1e-6);
    }
    assert_eq!(r[1..].iter().map(|p| p.threads).collect::<Vec<_>>(), [1, 2]);
    // Each collection holds its documents, with `_id` 1..=1500, after
    // transactions that delete and re-insert them.
    block_on(async {
        let mut ep = clients::Endpoint::loopback(s.port);
        ep.database = Some("sbtest".into());
        let mut c = clients::mongodb::MongoConn::connect(&ep).await.unwrap();
        for coll in ["sbtest1", "sbtest2", "sbtest3"] {
            let all = c.count_find(coll, &serde_json::json!({})).await.unwrap();
            let ids = c
                .count_find(coll, &serde_json::json!({"_id": {"$gte": 1, "$lte": 1500}}))
                .await
                .unwrap();
            assert_eq!((all, ids), (1500, 1500), "{coll}");
        }
        assert!(!c.has_documents("sbtest4").await.unwrap());
    });
}

#[test]
fn sysbench_mongo_is_refused_on_a_sql_store_before_anything_connects() {
    let cfg: DriveConfig = serde_json::from_value(serde_json::json!({
        "store": "postgres://postgres@127.0.0.1:1/postgres", "workload": "sysbench-mongo",
        "operations": 10
    }))
    .unwrap();
    let e = cfg.validate().unwrap_err().to_string();
    assert!(
        e.contains("sysbench-mongo workload runs on mongodb, not"),
        "{e}"
    );
}

/// Rows in `purchases_index` and its secondary indexes' columns, as the
/// server's catalog lists them (`listIndexes`, `pg_indexes`,
/// `information_schema.STATISTICS`), sorted.
fn iibench_table(s: &Server) -> (u64, Vec<String>) {
    use benchcage::clients::{mysql, postgres};
    let mut ep = clients::Endpoint::loopback(s.port);
    block_on(async {
        match s.kind {
            Kind::Secantus => {
                ep.database = Some("iibench".into());
                let mut c = clients::mongodb::MongoConn::connect(&ep).await.unwrap();
                let rows = c
                    .count_find("purchases_index", &serde_json::json!({}))
                    .await
                    .unwrap();
                let r = c
                    .run_json(
                        "iibench",
                        &serde_json::json!({"listIndexes": "purchases_index"}),
                    )
                    .await
                    .unwrap();
                let mut ix: Vec<String> = r["cursor"]["firstBatch"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i["name"].as_str().unwrap())
                    .filter(|n| *n != "_id_")
                    .map(|n| n.replace("_1", ""))
                    .collect();
                ix.sort();
                (rows, ix)
            }
            Kind::Postgres => {
                ep.user = Some("postgres".into());
                let q = |sql: &'static str| {
                    let ep = ep.clone();
                    async move { postgres::query_text(&ep, sql).await.unwrap() }
                };
                let rows = q("SELECT count(*)::text FROM purchases_index").await;
                // `CREATE INDEX pdc ON public.purchases_index USING btree (price, ...)`
                let defs = q(
                    "SELECT string_agg(substring(indexdef from '\\((.*)\\)'), ';') \
                     FROM pg_indexes WHERE tablename = 'purchases_index' \
                     AND indexname <> 'purchases_index_pkey'",
                )
                .await;
                let mut ix: Vec<String> = defs.split(';').map(|d| d.replace(", ", "_")).collect();
                ix.sort();
                (rows.parse().unwrap(), ix)
            }
            Kind::Mariadb => {
                ep.user = Some("root".into());
                let rows = mysql::query_text(&ep, "SELECT COUNT(*) FROM iibench.purchases_index")
                    .await
                    .unwrap();
                let cols = mysql::query_text(
                    &ep,
                    "SELECT GROUP_CONCAT(c SEPARATOR ';') FROM (SELECT GROUP_CONCAT(COLUMN_NAME \
                     ORDER BY SEQ_IN_INDEX SEPARATOR '_') AS c FROM information_schema.STATISTICS \
                     WHERE TABLE_SCHEMA = 'iibench' AND TABLE_NAME = 'purchases_index' \
                     AND INDEX_NAME <> 'PRIMARY' GROUP BY INDEX_NAME) AS i",
                )
                .await
                .unwrap();
                let mut ix: Vec<String> = cols.split(';').map(str::to_string).collect();
                ix.sort();
                (rows.parse().unwrap(), ix)
            }
            Kind::Redis => unreachable!("iibench runs on mongodb and the SQL engines"),
        }
    })
}

/// Loads 2500 rows 500 at a time, then inserts for 2 s at 1 and 2
/// threads: every row reported is in the table, the table has iiBench's
/// 3 secondary indexes, and each phase's per-second rows/s series adds up
/// to its total.
fn iibench_end_to_end(kind: Kind) {
    let s = Server::start(kind);
    // MariaDB and MongoDB without a database in the URL: iibench's own.
    let url = s.url().trim_end_matches("/mysql").to_string();
    let cfg: DriveConfig = serde_json::from_value(serde_json::json!({
        "store": url, "workload": "iibench", "records": 2500, "batch": 500,
        "data_length": 20, "threads": [1, 2], "duration": "2s", "load": true, "load_threads": 2
    }))
    .unwrap();
    let r = run_config(&cfg);
    assert!(r.iter().all(|p| p.status.is_ok()), "{r:?}");
    assert_eq!(r[0].workload, "iibench:load");
    let ins = &r[0].ops["INSERT"];
    assert_eq!((ins.count, ins.calls), (2500, Some(5)), "{ins:?}");
    assert_eq!(r[0].threads, 2, "the loaders");
    assert_eq!(r[1..].iter().map(|p| p.threads).collect::<Vec<_>>(), [1, 2]);
    for p in &r[1..] {
        assert_eq!(p.workload, "iibench");
        assert!(p.series.len() >= 2, "a series over time: {:?}", p.series);
        let summed: u64 = p.series.iter().map(|x| x.ops).sum();
        assert_eq!(summed, p.total_ops, "{:?}", p.series);
        assert_eq!(p.total_ops % 500, 0, "whole batches: {}", p.total_ops);
        assert!((p.throughput - p.total_ops as f64 / p.duration_s).abs() < 1e-6);
        eprintln!(
            "{kind:?} iibench at {} threads: {:.0} rows/s",
            p.threads, p.throughput
        );
    }
    let (rows, indexes) = iibench_table(&s);
    let reported: u64 = r.iter().map(|p| p.total_ops).sum();
    assert_eq!(rows, reported, "rows in purchases_index");
    assert_eq!(
        indexes,
        [
            "cashregisterid_price_customerid",
            "price_customerid",
            "price_dateandtime_customerid"
        ],
        "{kind:?}"
    );
}

#[test]
fn iibench_loads_and_inserts_with_its_three_indexes_on_secantus() {
    iibench_end_to_end(Kind::Secantus);
}

#[test]
fn iibench_loads_and_inserts_with_its_three_indexes_on_postgres() {
    iibench_end_to_end(Kind::Postgres);
}

#[test]
fn iibench_loads_and_inserts_with_its_three_indexes_on_mariadb() {
    iibench_end_to_end(Kind::Mariadb);
}

/// `drive --workload iibench` loads then inserts for 5 s at 2 threads;
/// the summary's INSERT count is every row in the table. Prints rows/s.
fn drive_iibench(kind: Kind) {
    let s = Server::start(kind);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let url = s.url().trim_end_matches("/mysql").to_string();
    let out = bc()
        .args(["drive", "--store", &url, "--workload", "iibench"])
        .args(["--records", "5000", "--load", "--duration", "5s"])
        .args(["--threads", "2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_success(&out);
    let results: Vec<PhaseResult> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (rows, _) = iibench_table(&s);
    let measured = &results[1];
    assert_eq!(rows, 5000 + measured.total_ops, "{text}");
    let printed: u64 = text
        .lines()
        .filter_map(|l| l.strip_prefix("[INSERT], Operations, "))
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        printed, rows,
        "the load's and the phase's INSERT lines: {text}"
    );
    let per_second: Vec<u64> = measured.series.iter().map(|x| x.ops).collect();
    assert_eq!(per_second.iter().sum::<u64>(), measured.total_ops);
    eprintln!(
        "{kind:?}: drive --workload iibench --threads 2: load {:.0} rows/s, then {:.0} rows/s, per second {per_second:?}",
        results[0].throughput, measured.throughput
    );
}

#[test]
fn drive_runs_iibench_on_secantus_and_counts_every_row() {
    drive_iibench(Kind::Secantus);
}

#[test]
fn drive_runs_iibench_on_postgres_and_counts_every_row() {
    drive_iibench(Kind::Postgres);
}

#[test]
fn iibench_is_refused_on_redis_and_a_long_data_column_before_anything_connects() {
    let cfg: DriveConfig = serde_json::from_value(serde_json::json!({
        "store": "redis://127.0.0.1:1", "workload": "iibench", "operations": 10,
        "data_length": 4001
    }))
    .unwrap();
    let e = cfg.validate().unwrap_err().to_string();
    assert!(
        e.contains("iibench workload runs on mongodb, postgres and mysql, not redis"),
        "{e}"
    );
    assert!(e.contains("data_length: 4001 bytes is out of range"), "{e}");
}

#[test]
fn drive_prints_the_ycsb_summary_and_writes_json() {
    let s = Server::start(Kind::Redis);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = bc()
        .args([
            "drive",
            "--store",
            &s.url(),
            "--workload",
            "a",
            "--records",
            "200",
        ])
        .args(["--operations", "1000", "--threads", "2", "--load", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("[OVERALL], Throughput(ops/sec), "), "{text}");
    let reads: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("[READ], Operations, "))
        .unwrap()
        .parse()
        .unwrap();
    let updates: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("[UPDATE], Return=OK, "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(reads + updates, 1000);
    let results: Vec<PhaseResult> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1].ops["READ"].count, reads);
}

#[test]
fn drive_loads_in_batches_with_the_batch_flag() {
    let s = Server::start(Kind::Redis);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = bc()
        .args(["drive", "--store", &s.url(), "--workload", "c"])
        .args(["--records", "500", "--load", "--batch", "50"])
        .args([
            "--operations",
            "1000",
            "--distribution",
            "uniform",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(summary_count(&text, "INSERT"), 500, "{text}");
    // Every read finds its record: all 500 were written.
    assert_eq!(summary_count(&text, "READ"), 1000, "{text}");
    assert!(!text.contains("FAILED"), "{text}");
    let results: Vec<PhaseResult> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(results[0].total_ops, 500);
}

use benchcage::workload::stores::StoreKind;
use benchcage::workload::tools::{self, ToolConfig, ToolTarget};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn tool(yaml: &str) -> ToolConfig {
    serde_yaml::from_str(yaml).expect("tool config")
}

#[test]
fn sysbench_runs_live_against_mariadb_with_a_thread_list() {
    let s = Server::start(Kind::Mariadb);
    let out = tempfile::tempdir().unwrap();
    let target = ToolTarget {
        kind: StoreKind::Mysql,
        port: s.port,
        user: Some("root".into()),
        password: None,
        db: None,
        replica_set: None,
    };
    let spawned = AtomicUsize::new(0);
    let cfg = tool("sysbench: {test: oltp_point_select, tables: 1, table_size: 1000}");
    let results = block_on(tools::run_tool_sweep(
        &cfg,
        &target,
        &[1, 2],
        Duration::from_secs(2),
        out.path(),
        |_cmd| {
            spawned.fetch_add(1, Ordering::Relaxed);
        },
    ))
    .unwrap();
    // pre-cleanup, prepare, two runs, cleanup: the hook saw every process.
    assert_eq!(spawned.load(Ordering::Relaxed), 5);
    assert_eq!(
        results.iter().map(|r| r.threads).collect::<Vec<_>>(),
        vec![1, 2]
    );
    for r in &results {
        assert!(r.status.is_ok(), "{:?}", r.status);
        let t = &r.ops["TRANSACTION"];
        assert!(t.count > 100, "{t:?}");
        let l = &t.latency_us;
        assert!(
            l.mean.unwrap() > 0.0 && l.p95.unwrap() >= l.min.unwrap(),
            "{l:?}"
        );
        // sysbench reports no median and no p99.9: unknown, not 0.
        assert_eq!((l.p50, l.p999), (None, None), "{l:?}");
        assert!(!r.series.is_empty(), "series from the JSON hook");
        for f in &r.raw_outputs {
            assert!(out.path().join(f).is_file(), "raw output {f} saved");
        }
    }
    let run = std::fs::read_to_string(out.path().join("sysbench-run-2.txt")).unwrap();
    assert!(run.contains("BENCHCAGE-JSON {\"kind\":\"cumulative\""));
}

#[test]
fn sysbench_prepares_with_its_loaders_and_warms_up_unmeasured_before_each_count() {
    let s = Server::start(Kind::Mariadb);
    let out = tempfile::tempdir().unwrap();
    let target = ToolTarget {
        kind: StoreKind::Mysql,
        port: s.port,
        user: Some("root".into()),
        password: None,
        db: None,
        replica_set: None,
    };
    let mut cfg =
        tool("sysbench: {test: oltp_point_select, tables: 2, table_size: 1000, loaders: 2}");
    cfg.warmup = Duration::from_secs(1);
    let argvs = std::sync::Mutex::new(Vec::new());
    let results = block_on(tools::run_tool_sweep(
        &cfg,
        &target,
        &[1, 2],
        Duration::from_secs(2),
        out.path(),
        |cmd| {
            let args: Vec<String> = cmd
                .as_std()
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            argvs.lock().unwrap().push(args.join(" "));
        },
    ))
    .unwrap();
    let argvs = argvs.into_inner().unwrap();
    let step = |a: &String| a.rsplit(' ').next().unwrap().to_string();
    let steps: Vec<String> = argvs.iter().map(step).collect();
    assert_eq!(
        steps,
        ["cleanup", "prepare", "run", "run", "run", "run", "cleanup"],
        "{argvs:#?}"
    );
    assert!(argvs[1].contains("--threads=2"), "prepare: {}", argvs[1]);
    // Before each count: a warmup of 1 s at that count, then the 2 s run.
    for (i, n) in [(2, 1), (4, 2)] {
        assert!(
            argvs[i].contains(&format!("--threads={n} --time=1 ")),
            "{}",
            argvs[i]
        );
        assert!(
            argvs[i + 1].contains(&format!("--threads={n} --time=2 ")),
            "{}",
            argvs[i + 1]
        );
    }
    for (r, n) in results.iter().zip([1, 2]) {
        assert!(r.status.is_ok(), "{:?}", r.status);
        let warm = format!("sysbench-warmup-{n}.txt");
        assert!(r.raw_outputs.contains(&warm), "{:?}", r.raw_outputs);
        assert!(out.path().join(&warm).is_file());
        // The measured run alone counts: 2 s of it, not 3.
        assert!(
            r.series.len() <= 3,
            "{} seconds in the series",
            r.series.len()
        );
    }
}

#[test]
fn pgbench_runs_a_custom_point_read_script_live_against_postgres() {
    let s = Server::start(Kind::Postgres);
    let out = tempfile::tempdir().unwrap();
    let script = out.path().join("point-read.sql");
    std::fs::write(
        &script,
        "\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    )
    .unwrap();
    let target = ToolTarget {
        kind: StoreKind::Postgres,
        port: s.port,
        user: Some("postgres".into()),
        password: None,
        db: Some("postgres".into()),
        replica_set: None,
    };
    let cfg = tool(&format!(
        "pgbench: {{scale: 1, script: {}, args: ['-M', 'prepared']}}",
        script.display()
    ));
    let r = block_on(tools::run_tool(
        &cfg,
        &target,
        2,
        Duration::from_secs(2),
        out.path(),
        |_| {},
    ))
    .unwrap();
    assert!(r.status.is_ok(), "{:?}", r.status);
    assert_eq!(r.workload, "pgbench:point-read");
    assert!(r.ops["TRANSACTION"].count > 100);
    assert!(r.ops.keys().any(|k| k.starts_with("SQL SELECT abalance")));
    assert_eq!(r.raw_outputs, vec!["pgbench-init.txt", "pgbench-run-2.txt"]);
}

/// A directory holding `name`, a shell script put first on a spawned
/// tool's PATH by the hook: the real tool with its arguments rewritten.
fn shim(name: &str, body: &str) -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join(name);
    std::fs::write(&f, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", d.path().display(), std::env::var("PATH").unwrap());
    (d, path)
}

/// `pgbench -i` that creates its tables and generates no rows (`-I dt`)
/// exits 0: the phase fails naming what the tables hold.
#[test]
fn a_pgbench_init_that_exits_0_without_its_rows_fails_with_what_it_left() {
    let s = Server::start(Kind::Postgres);
    let out = tempfile::tempdir().unwrap();
    let target = ToolTarget {
        kind: StoreKind::Postgres,
        port: s.port,
        user: Some("postgres".into()),
        password: None,
        db: Some("postgres".into()),
        replica_set: None,
    };
    let (_bin, path) = shim("pgbench", "exec /usr/bin/pgbench \"$@\" -I dt");
    let e = block_on(tools::run_tool(
        &tool("pgbench: {scale: 1, builtin: select-only}"),
        &target,
        1,
        Duration::from_secs(1),
        out.path(),
        |c| {
            c.env("PATH", &path);
        },
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("pgbench -i exited 0, but its data is not there: pgbench_branches 0 of 1, pgbench_tellers 0 of 10, pgbench_accounts 0 of 100000"),
        "{e}"
    );
}

/// sysbench's prepare that wrote fewer rows than `table_size` (here it
/// was handed 10) exits 0: the phase fails naming what each table holds.
#[test]
fn a_sysbench_prepare_that_exits_0_short_of_its_rows_fails_with_what_it_left() {
    let s = Server::start(Kind::Mariadb);
    let out = tempfile::tempdir().unwrap();
    let target = ToolTarget {
        kind: StoreKind::Mysql,
        port: s.port,
        user: Some("root".into()),
        password: None,
        db: Some("sbtest".into()),
        replica_set: None,
    };
    let (_bin, path) = shim(
        "sysbench",
        "case \"$*\" in *prepare) p=1 ;; esac\n\
         for a do shift; [ -n \"$p\" ] && [ \"${a#--table-size=}\" != \"$a\" ] && a=--table-size=10; set -- \"$@\" \"$a\"; done\n\
         exec /usr/bin/sysbench \"$@\"",
    );
    let e = block_on(tools::run_tool(
        &tool("sysbench: {test: oltp_point_select, tables: 2, table_size: 500}"),
        &target,
        1,
        Duration::from_secs(1),
        out.path(),
        |c| {
            c.env("PATH", &path);
        },
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("sysbench prepare exited 0, but its data is not there: sbtest1 10 of 500, sbtest2 10 of 500"),
        "{e}"
    );
}

#[test]
fn ycsb_and_command_tools_parse_live_output() {
    let s = Server::start(Kind::Redis);
    let out = tempfile::tempdir().unwrap();
    let target = ToolTarget {
        kind: StoreKind::Redis,
        port: s.port,
        user: None,
        password: None,
        db: None,
        replica_set: None,
    };
    // benchcage drive prints YCSB's format, so it stands in for a YCSB install.
    let ycsb = tool(&format!(
        "ycsb: {{argv: ['{}', drive, --store, 'redis://{{host}}:{{port}}', --workload, c, \
         --records, '100', --operations, '2000', --threads, '{{threads}}', --load]}}",
        BIN
    ));
    let r = block_on(tools::run_tool(
        &ycsb,
        &target,
        2,
        Duration::from_secs(5),
        out.path(),
        |_| {},
    ))
    .unwrap();
    assert_eq!(r.ops["READ"].count, 2000, "{r:?}");
    assert!(r.status.is_ok());
    let cmd = tool(
        "command: {argv: [redis-benchmark, -h, '{host}', -p, '{port}', -c, '{threads}', \
         -n, '5000', -t, get, -q], throughput: 'GET: ([\\d.]+) requests per second', \
         latency: 'p50=([\\d.]+) msec'}",
    );
    let r = block_on(tools::run_tool(
        &cmd,
        &target,
        2,
        Duration::from_secs(5),
        out.path(),
        |_| {},
    ))
    .unwrap();
    let c = &r.ops["COMMAND"];
    assert!(c.throughput > 100.0, "{c:?}");
    assert!(c.latency_us.mean.unwrap() > 0.0);
    assert_eq!(c.latency_us.p99, None, "the command printed no p99");
    assert!(out.path().join("command-run-2.txt").is_file());
}

/// A stand-in for py-tpcc's `tpcc.py` that fails unless run as py-tpcc
/// needs: from its own directory (drivers found as `./drivers/*driver.py`),
/// with py-tpcc's flags only (argparse refuses `--port`), and a config file
/// whose `[mongodb]` section names loopback, the live server's port and
/// the write concern. It prints the original version's results table.
const FAKE_TPCC: &str = r#"#!/usr/bin/env python3
import argparse, configparser, glob, os, socket, sys
here = os.path.dirname(os.path.realpath(__file__))
assert os.getcwd() == here, "cwd %s is not %s" % (os.getcwd(), here)
drivers = [os.path.basename(d).replace("driver.py", "") for d in glob.glob("./drivers/*driver.py")]
a = argparse.ArgumentParser()
a.add_argument("system", choices=drivers)
a.add_argument("--config", type=open)
a.add_argument("--warehouses", type=int, default=4)
a.add_argument("--clients", type=int, default=1)
a.add_argument("--duration", type=int, default=60)
a.add_argument("--no-load", action="store_true")
a.add_argument("--no-execute", action="store_true")
args = a.parse_args()
c = configparser.ConfigParser()
c.read(os.path.realpath(args.config.name))
m = c["mongodb"]
assert m["host"] == "127.0.0.1", m["host"]
assert m["write_concern"] == "majority", dict(m)
assert m["denormalize"] == "True" and m["name"] == "tpcc", dict(m)
socket.create_connection((m["host"], int(m["port"])), timeout=5).close()
print("03-14-2021 10:01:12 [<module>:241] INFO : Initializing TPC-C benchmark using MongodbDriver")
if args.no_execute:
    with open(os.path.join(here, "loaded"), "w") as f:
        f.write("%d %d" % (args.warehouses, args.clients))
    sys.exit(0)
assert args.no_load
n = 30 * args.clients * args.warehouses
f = "\n  " + "%-16s" * 4
out = "=" * 66 + "\nExecution Results after %d seconds\n" % args.duration + "-" * 66
out += f % ("", "Executed", "Time (\u00b5s)", "Rate")
for name, cnt in [("DELIVERY", n // 10), ("NEW_ORDER", n), ("PAYMENT", n)]:
    out += f % (name, str(cnt), "%.12g" % (cnt * 2000.0), "500.00 txn/s")
out += "\n" + "-" * 66 + f % ("TOTAL", str(n * 21 // 10), "%.12g" % (n * 4200.0), "500.00 txn/s")
print(out)
"#;

#[test]
fn pytpcc_runs_from_its_own_directory_with_the_config_file_benchcage_wrote() {
    use std::os::unix::fs::PermissionsExt;
    let s = Server::start(Kind::Secantus);
    let home = tempfile::tempdir().unwrap();
    let pytpcc = home.path().join("py-tpcc").join("pytpcc");
    std::fs::create_dir_all(pytpcc.join("drivers")).unwrap();
    std::fs::write(pytpcc.join("drivers/mongodbdriver.py"), "").unwrap();
    let script = pytpcc.join("tpcc.py");
    std::fs::write(&script, FAKE_TPCC).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = ToolTarget {
        kind: StoreKind::Mongodb,
        port: s.port,
        user: None,
        password: None,
        db: None,
        replica_set: None,
    };
    let yaml = |load: bool| {
        let mut c = tool(&format!(
            "pytpcc: {{warehouses: 2, load: {load}, path: '{}', python: python3}}",
            script.display()
        ));
        let tools::Tool::Pytpcc(p) = &mut c.tool else {
            panic!("a pytpcc tool")
        };
        // What the run takes from the cell's write_concern knob.
        p.write_concern = Some("majority".into());
        c
    };
    let sweep = |cfg: &ToolConfig, threads: &[u32]| {
        block_on(tools::run_tool_sweep(
            cfg,
            &target,
            threads,
            Duration::from_secs(3),
            out.path(),
            |_| {},
        ))
    };
    let load = sweep(&yaml(true), &[3]).unwrap().remove(0);
    // It exited 0 having loaded nothing: the phase fails with what the
    // server holds, read back.
    let benchcage::results::model::PhaseStatus::Failed { reason } = &load.status else {
        panic!("a load that left no data passed: {load:?}")
    };
    assert!(
        reason.contains("WAREHOUSE 0 of 2, DISTRICT 0 of 20, CUSTOMER 0 of 60000, STOCK 0 of 200000, ITEM 0 of 100000"),
        "{reason}"
    );
    assert_eq!(load.workload, "pytpcc:load");
    assert_eq!(load.ops["WAREHOUSE"].count, 2);
    assert!(load.duration_s > 0.0 && load.headline.is_none(), "{load:?}");
    assert_eq!(
        std::fs::read_to_string(pytpcc.join("loaded")).unwrap(),
        "2 3",
        "loaded once, with --warehouses 2 --clients 3"
    );
    let runs = sweep(&yaml(false), &[1, 2]).unwrap();
    for (r, clients) in runs.iter().zip([1u64, 2]) {
        assert!(r.status.is_ok(), "{:?}", r.status);
        let new_orders = 30 * clients * 2;
        assert_eq!(r.ops["NEW_ORDER"].count, new_orders);
        // NEW ORDER per minute over the 3 seconds the table reports.
        let h = r.headline.as_ref().expect("tpmC");
        assert_eq!(
            (h.name.as_str(), h.value),
            ("tpmC", new_orders as f64 * 20.0),
            "{r:?}"
        );
        assert!((r.ops["NEW_ORDER"].latency_us.mean.unwrap() - 2000.0).abs() < 1e-6);
        assert!(r.raw_outputs.contains(&format!("pytpcc-run-{clients}.txt")));
    }
    // Not a mongodb engine: refused before anything runs.
    let pg = ToolTarget {
        kind: StoreKind::Postgres,
        ..target.clone()
    };
    let e = block_on(tools::run_tool(
        &yaml(false),
        &pg,
        1,
        Duration::from_secs(1),
        out.path(),
        |_| {},
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("py-tpcc cannot drive"), "{e}");
}

/// With ordered keys the records a YCSB scan reads are known from the
/// load: a server that answers half of each scan gives SCAN errors naming
/// what came back; the same run on an honest server has none.
#[test]
fn ycsb_scans_of_ordered_keys_are_checked_against_the_records_loaded() {
    let honest = support::legacy::LegacyMongo::start(4);
    let short = support::legacy::LegacyMongo::start_with(4, &["--truncate", "0.5"]);
    let config = |url: &str| -> DriveConfig {
        serde_json::from_value(serde_json::json!({
            "store": url, "workload": "custom", "mix": {"scan": 1.0},
            "records": 300, "insert_order": "ordered", "key_padding": 4,
            "max_scan_length": 10, "field_count": 2, "field_length": 10,
            "threads": 1, "operations": 200, "load": true, "error_budget": "100%"
        }))
        .unwrap()
    };
    let r = run_config(&config(&honest.url()));
    let scan = &r[1].ops["SCAN"];
    assert_eq!((scan.count, scan.errors), (200, 0), "{scan:?}");
    let r = run_config(&config(&short.url()));
    let scan = &r[1].ops["SCAN"];
    // A scan of 1 answered with 0, of 10 with 5: every one is short
    // (scans ending past record 299 are not checked).
    assert!(scan.errors > 150, "{scan:?}");
    assert!(
        scan.error_samples
            .iter()
            .all(|m| m.starts_with("returned ") && m.contains(" records scanning from user0")),
        "{:?}",
        scan.error_samples
    );
}

/// The test py-tpcc of `tests/support/pytpcc`, which behaves as the
/// MongoDB-maintained one does (see its docstring).
const SUPPORT_TPCC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/pytpcc/tpcc.py");

/// The maintained py-tpcc as write-up 004 ran it, 1 warehouse and 2
/// clients: it needs pymongo 3 (`Collection.insert`), which benchcage's
/// virtualenv brings; its workers read `uri`, which benchcage writes; and
/// its load is accepted only when TPC-C's rows are on the server, since it
/// exits 0 when its workers failed.
#[test]
fn the_maintained_pytpcc_loads_and_runs_in_a_pymongo_3_virtualenv_with_its_load_read_back() {
    use benchcage::results::model::PhaseStatus;
    use benchcage::workload::tools::pyenv::PyEnv;
    use std::os::unix::fs::PermissionsExt;
    let cache = tempfile::tempdir().unwrap();
    let env = PyEnv::pymongo(cache.path(), "3.13.0");
    let made = env
        .make()
        .expect("pip installs pymongo 3.13.0 into a virtualenv");
    assert_eq!(made.packages["pymongo"], "3.13.0");
    assert_eq!(env.make().unwrap(), made, "made once");
    let s = support::legacy::LegacyMongo::start(4);
    let out = tempfile::tempdir().unwrap();
    let target = ToolTarget {
        kind: StoreKind::Mongodb,
        port: s.port,
        user: None,
        password: None,
        db: None,
        replica_set: None,
    };
    let cfg = |load: bool, database: &str, pinned: bool| {
        let mut c = tool(&format!(
            "pytpcc: {{warehouses: 1, load: {load}, path: '{SUPPORT_TPCC}', database: {database}}}"
        ));
        let tools::Tool::Pytpcc(p) = &mut c.tool else {
            panic!("a pytpcc tool")
        };
        if pinned {
            p.pymongo = Some("3.13.0".into());
            p.python_env = Some(env.dir.clone());
        } else {
            p.python = Some("python3".into());
        }
        c
    };
    let sweep = |c: &ToolConfig| {
        block_on(tools::run_tool_sweep(
            c,
            &target,
            &[2],
            Duration::from_secs(2),
            out.path(),
            |_| {},
        ))
    };
    // The load, in the virtualenv: every row is there, and the phase says
    // which Python ran it.
    let load = sweep(&cfg(true, "tpcc", true)).unwrap().remove(0);
    assert!(load.status.is_ok(), "{:?}", load.status);
    let te = load.tool_env.as_ref().expect("the virtualenv is recorded");
    assert_eq!(te.packages["pymongo"], "3.13.0");
    assert_eq!(te.python, env.python().display().to_string());
    let written = std::fs::read_to_string(out.path().join(tools::pytpcc::CONFIG_FILE)).unwrap();
    assert!(
        written.contains(&format!("uri = mongodb://127.0.0.1:{}/\n", s.port)),
        "{written}"
    );
    // The transactions: both workers reached the server through `uri`.
    let run = sweep(&cfg(false, "tpcc", true)).unwrap().remove(0);
    assert!(run.status.is_ok(), "{:?}", run.status);
    assert_eq!(run.headline.as_ref().unwrap().name, "tpmC");
    assert_eq!(run.ops["NEW_ORDER"].count, 60);
    // The host's pymongo 4 has no `Collection.insert`: the load fails.
    let e = sweep(&cfg(true, "tpcc_host", false))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such method"), "{e}");
    // A config without `uri` (what benchcage wrote before): the driver
    // writes its default into the config the workers are handed, they go
    // to localhost:27017 and fail, py-tpcc exits 0 with ITEM alone loaded,
    // and the phase fails with what the server holds.
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("python-without-uri");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nsed -i '/^uri = /d' \"$3\"\nexec '{}' \"$@\"\n",
            env.python().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = cfg(true, "tpcc_no_uri", false);
    if let tools::Tool::Pytpcc(p) = &mut c.tool {
        p.python = Some(wrapper.display().to_string());
    }
    let r = sweep(&c).unwrap().remove(0);
    let PhaseStatus::Failed { reason } = &r.status else {
        panic!("a load whose workers failed passed: {r:?}")
    };
    assert!(
        reason.starts_with("py-tpcc exited 0, but its load is not there: WAREHOUSE 0 of 1, DISTRICT 0 of 10, CUSTOMER 0 of 30000, STOCK 0 of 100000 (whole: ITEM 100000)"),
        "{reason}"
    );
    let log = std::fs::read_to_string(out.path().join("pytpcc-load-2.txt")).unwrap();
    assert!(log.contains("localhost:27017"), "{log}");
}

/// A row, document or key of the user's own in the place a load would
/// clear; and whether it is still there.
async fn plant(s: &Server, url: &str) {
    use benchcage::workload::stores::StoreTarget;
    let ep = StoreTarget::parse(url).unwrap().endpoint;
    match s.kind {
        Kind::Redis => {
            let mut c = clients::redis::RedisConn::connect(&ep).await.unwrap();
            c.cmd(&["SET", "precious", "mine"]).await.unwrap();
        }
        Kind::Postgres => {
            let c = clients::postgres::PgConn::connect(&ep).await.unwrap();
            c.batch("CREATE TABLE usertable (k text); INSERT INTO usertable VALUES ('mine')")
                .await
                .unwrap();
        }
        Kind::Mariadb => {
            let mut bare = ep.clone();
            bare.database = None;
            let mut c = clients::mysql::MyConn::connect(&bare).await.unwrap();
            for sql in [
                "CREATE DATABASE ycsb",
                "CREATE TABLE ycsb.usertable (k VARCHAR(10))",
                "INSERT INTO ycsb.usertable VALUES ('mine')",
            ] {
                c.exec_text(sql).await.unwrap();
            }
        }
        Kind::Secantus => {
            let mut ep = ep.clone();
            ep.database = Some("ycsb".into());
            let mut c = clients::mongodb::MongoConn::connect(&ep).await.unwrap();
            c.insert_fields("usertable", "mine", [("k", "mine")].into_iter())
                .await
                .unwrap();
        }
    }
}

async fn planted_is_there(s: &Server, url: &str) -> bool {
    use benchcage::workload::stores::StoreTarget;
    let ep = StoreTarget::parse(url).unwrap().endpoint;
    match s.kind {
        Kind::Redis => {
            let mut c = clients::redis::RedisConn::connect(&ep).await.unwrap();
            c.cmd(&["GET", "precious"]).await.unwrap() == "mine"
        }
        Kind::Postgres => clients::postgres::query_text(&ep, "SELECT k FROM usertable LIMIT 1")
            .await
            .is_ok_and(|k| k == "mine"),
        Kind::Mariadb => {
            let mut bare = ep.clone();
            bare.database = None;
            clients::mysql::query_text(&bare, "SELECT k FROM ycsb.usertable")
                .await
                .is_ok_and(|k| k == "mine")
        }
        Kind::Secantus => {
            let mut ep = ep.clone();
            ep.database = Some("ycsb".into());
            let mut c = clients::mongodb::MongoConn::connect(&ep).await.unwrap();
            c.find_id("usertable", "mine").await.unwrap() > 0
        }
    }
}

/// A load into a place that holds someone's data is refused (exit 2,
/// with the way out) and deletes nothing; with --reset it goes ahead.
fn drive_load_keeps_data_it_did_not_create(kind: Kind) {
    let s = Server::start(kind);
    let url = match kind {
        Kind::Mariadb => format!("mysql://root@127.0.0.1:{}/ycsb", s.port),
        _ => s.url(),
    };
    block_on(plant(&s, &url));
    let load = ["--store", &url, "--records", "50", "--load"];
    let (code, _, err) = drive(&load);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--reset") && err.contains("refusing to load"),
        "{err}"
    );
    assert!(
        block_on(planted_is_there(&s, &url)),
        "{kind:?}: data deleted"
    );
    let (code, out, err) = drive(&[&load[..], &["--reset"]].concat());
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("[INSERT], Operations, 50"), "{out}");
    assert!(
        !block_on(planted_is_there(&s, &url)),
        "{kind:?}: --reset kept it"
    );
}

#[test]
fn drive_load_on_redis_never_flushes_keys_it_did_not_create_without_reset() {
    drive_load_keeps_data_it_did_not_create(Kind::Redis);
}

#[test]
fn drive_load_on_postgres_never_drops_a_table_holding_rows_without_reset() {
    drive_load_keeps_data_it_did_not_create(Kind::Postgres);
}

#[test]
fn drive_load_on_mariadb_never_drops_a_table_holding_rows_without_reset() {
    drive_load_keeps_data_it_did_not_create(Kind::Mariadb);
}

#[test]
fn drive_load_on_secantus_never_drops_a_collection_holding_documents_without_reset() {
    drive_load_keeps_data_it_did_not_create(Kind::Secantus);
}

#[test]
fn drive_authenticates_to_a_redis_with_requirepass_and_never_prints_the_password() {
    let s = Server::start(Kind::Redis);
    let secret = "s3cr/et@x";
    block_on(async {
        let ep = clients::Endpoint::loopback(s.port);
        let mut c = clients::redis::RedisConn::connect(&ep).await.unwrap();
        c.cmd(&[
            "ACL",
            "SETUSER",
            "bench",
            "on",
            ">pw-of-bench",
            "~*",
            "+@all",
        ])
        .await
        .unwrap();
        c.cmd(&["CONFIG", "SET", "requirepass", secret])
            .await
            .unwrap();
    });
    let base = format!("127.0.0.1:{}", s.port);
    let ops = ["--records", "100", "--operations", "200", "--workload", "c"];

    // No password: the server's NOAUTH, and how to give one.
    let plain = format!("redis://{base}");
    let (code, _, err) = drive(&[&["--store", plain.as_str(), "--load"][..], &ops].concat());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("NOAUTH") && err.contains("redis://:PASSWORD@"),
        "{err}"
    );

    // A wrong password: refused, and not echoed.
    let wrong = format!("redis://:wrong-pw-7788@{base}");
    let (code, out, err) = drive(&[&["--store", wrong.as_str()][..], &ops].concat());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("AUTH"), "{err}");
    assert!(!format!("{out}{err}").contains("wrong-pw-7788"), "{err}");

    // The right one (percent-encoded in the URL): loads, runs, and no
    // output or result file holds it.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let good = format!("redis://:s3cr%2Fet%40x@{base}/3");
    let (code, out, err) = drive(
        &[
            &["--store", good.as_str(), "--load", "--progress", "--json"][..],
            &[json.to_str().unwrap()],
            &ops,
        ]
        .concat(),
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("[READ], Operations, 200"), "{out}");
    let written = std::fs::read_to_string(&json).unwrap();
    for text in [&out, &err, &written] {
        assert!(
            !text.contains(secret) && !text.contains("s3cr%2Fet"),
            "{text}"
        );
    }
    // It used the URL's database 3, not 0.
    block_on(async {
        let mut ep = clients::Endpoint::loopback(s.port);
        ep.password = Some(secret.into());
        let mut c = clients::redis::RedisConn::connect(&ep).await.unwrap();
        assert_eq!(c.cmd(&["DBSIZE"]).await.unwrap(), "0");
        ep.database = Some("3".into());
        let mut c = clients::redis::RedisConn::connect(&ep).await.unwrap();
        assert_eq!(c.cmd(&["DBSIZE"]).await.unwrap(), "101");
    });

    // An ACL user with its own password.
    let acl = format!("redis://bench:pw-of-bench@{base}/3");
    let (code, out, err) = drive(&[&["--store", acl.as_str()][..], &ops].concat());
    assert_eq!(code, Some(0), "{out}\n{err}");

    // Bad input that names the URL shows it without the password.
    let far = format!("redis://:{secret}@10.1.2.3:6379");
    let (code, out, err) = drive(&[&["--store", far.as_str()][..], &ops].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("redis://:***@10.1.2.3:6379"), "{err}");
    assert!(!format!("{out}{err}").contains(secret), "{err}");
}

#[test]
fn drive_authenticates_to_a_mongodb_server_with_scram_from_the_url() {
    let mut s = Server::start(Kind::Secantus);
    let made = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import pymongo\n\
             c = pymongo.MongoClient('127.0.0.1', {}, directConnection=True)\n\
             c.admin.command('createUser', 'bench', pwd='m0ngo:pw', roles=['root'])\n",
            s.port
        ))
        .output()
        .unwrap();
    assert_success(&made);
    s.restart_secantus_with(&["--auth"]);
    let base = format!("127.0.0.1:{}", s.port);
    let ops = ["--records", "100", "--operations", "200", "--workload", "c"];

    let plain = format!("mongodb://{base}");
    let (code, _, err) = drive(&[&["--store", plain.as_str(), "--load"][..], &ops].concat());
    assert_eq!(code, Some(1), "an unauthenticated load must fail: {err}");

    let wrong = format!("mongodb://bench:wrong-pw-5566@{base}");
    let (code, out, err) = drive(&[&["--store", wrong.as_str(), "--load"][..], &ops].concat());
    assert_eq!(code, Some(1), "{err}");
    assert!(!format!("{out}{err}").contains("wrong-pw-5566"), "{err}");

    let good = format!("mongodb://bench:m0ngo%3Apw@{base}/ycsb?authSource=admin");
    let (code, out, err) = drive(&[&["--store", good.as_str(), "--load"][..], &ops].concat());
    assert_eq!(code, Some(0), "{out}\n{err}\n{}", s.log());
    assert!(out.contains("[READ], Operations, 200"), "{out}");
    assert!(!format!("{out}{err}").contains("m0ngo"), "{err}");
}

/// Makes the redis of `s` refuse every write from now on, as a full redis
/// does: `maxmemory` 1 byte with `noeviction` answers `OOM` to every
/// write and still serves reads.
fn fill_up(s: &Server) {
    use benchcage::clients::redis::RedisConn;
    block_on(async {
        let mut c = RedisConn::connect(&clients::Endpoint::loopback(s.port))
            .await
            .unwrap();
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
            .await
            .unwrap();
        c.cmd(&["CONFIG", "SET", "maxmemory", "1"]).await.unwrap();
        let e = c.cmd(&["SET", "probe", "x"]).await.unwrap_err();
        assert!(e.to_string().contains("OOM"), "{e}");
    });
}

/// `benchcage drive` with `args` against `s`: the exit code, stderr, and
/// the phases it wrote.
fn drive_json(s: &Server, args: &[&str]) -> (i32, String, Vec<PhaseResult>) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = bc()
        .args(["drive", "--store", &s.url()])
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let results = serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no results ({e}): {stderr}"));
    (out.status.code().unwrap_or(-1), stderr, results)
}

#[test]
fn a_load_without_an_error_budget_stops_at_the_first_insert_a_full_redis_refuses() {
    let s = Server::start(Kind::Redis);
    fill_up(&s);
    let (code, stderr, results) = drive_json(
        &s,
        &[
            "--workload",
            "c",
            "--records",
            "100000",
            "--threads",
            "4",
            "--load",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    let load = &results[0];
    assert_eq!(results.len(), 1, "no measured phase after a failed load");
    // Every worker stops at the first failure; each had at most one insert
    // on its way. Before, the load ran all 100000 inserts into the wall.
    assert_eq!(load.total_ops, 0);
    assert!(
        (1..=4).contains(&load.total_errors),
        "{}",
        load.total_errors
    );
    let n = load.total_errors;
    let want = format!(
        "phase `load` (4 threads): stopped when its error budget (0 errors) was spent: {n} of {n} operations failed (100000 planned)"
    );
    assert!(stderr.contains(&want), "{stderr}");
    assert!(
        load.ops["INSERT"].error_samples[0].contains("OOM"),
        "{:?}",
        load.ops["INSERT"].error_samples
    );
}

#[test]
fn a_load_stops_once_its_error_count_budget_is_spent_on_a_full_redis() {
    let s = Server::start(Kind::Redis);
    fill_up(&s);
    let (code, stderr, results) = drive_json(
        &s,
        &[
            "--workload",
            "c",
            "--records",
            "100000",
            "--threads",
            "4",
            "--load",
            "--batch",
            "10",
            "--error-budget",
            "50",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    let load = &results[0];
    // A batch of 10 fails together: the sixth spends the budget of 50, and
    // the other three workers had at most a batch each on its way.
    assert!(
        (60..=90).contains(&load.total_errors),
        "{}",
        load.total_errors
    );
    assert!(
        stderr.contains("stopped when its error budget (50 errors) was spent"),
        "{stderr}"
    );
}

#[test]
fn a_measured_phase_stops_at_the_first_update_a_full_redis_refuses() {
    let s = Server::start(Kind::Redis);
    let (code, stderr, _) = drive_json(
        &s,
        &[
            "--workload",
            "c",
            "--records",
            "1000",
            "--load",
            "--operations",
            "1",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    fill_up(&s);
    // Workload A: half reads, which a full redis still answers, half
    // updates, which it refuses.
    let (code, stderr, results) = drive_json(
        &s,
        &[
            "--workload",
            "a",
            "--records",
            "1000",
            "--operations",
            "1000000",
            "--threads",
            "2",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    let r = &results[0];
    assert!((1..=2).contains(&r.total_errors), "{}", r.total_errors);
    assert_eq!(r.ops["UPDATE"].errors, r.total_errors);
    // The reads before the first update: a handful, not a million.
    assert!(r.total_ops < 1000, "{} operations", r.total_ops);
    assert!(
        stderr.contains("stopped when its error budget (0 errors) was spent")
            && stderr.contains("(1000000 planned)"),
        "{stderr}"
    );
}

#[test]
fn a_postgres_pipeline_answers_every_step_and_runs_none_after_a_failed_one() {
    use benchcage::clients::{Cell, Outcome, Param, Step};
    let s = Server::start(Kind::Postgres);
    let ep = benchcage::workload::stores::StoreTarget::parse(&s.url())
        .unwrap()
        .endpoint;
    block_on(async {
        let c = clients::postgres::PgConn::connect(&ep).await.unwrap();
        c.batch("CREATE TABLE t (k int PRIMARY KEY, v numeric(6,2), s text)")
            .await
            .unwrap();
        let mut p = clients::postgres::PgPipe::connect(&ep).await.unwrap();
        let ins = p
            .prepare("INSERT INTO t VALUES ($1, $2, $3)")
            .await
            .unwrap();
        let sel = p.prepare("SELECT k, v, s FROM t ORDER BY k").await.unwrap();
        let a = [Param::Int(1), Param::Float(2.5), Param::Text("a")];
        let b = [Param::Int(2), Param::Float(3.25), Param::Null];
        let out = p
            .pipeline(&[
                Step::Begin,
                Step::Exec(ins, &a),
                Step::Exec(ins, &b),
                Step::Rows(sel, &[]),
                Step::Text("COMMIT"),
            ])
            .await
            .unwrap();
        let rows = vec![
            vec![Cell::Int(1), Cell::Float(2.5), Cell::Text("a".into())],
            vec![Cell::Int(2), Cell::Float(3.25), Cell::Null],
        ];
        let want = [
            Outcome::Done,
            Outcome::Changed(1),
            Outcome::Changed(1),
            Outcome::Rows(rows),
            Outcome::Done,
        ];
        assert_eq!(out, want);
        // A duplicate key fails its step; the server skips the rest of
        // the pipeline, COMMIT included, and the transaction waits for
        // its ROLLBACK.
        let c3 = [Param::Int(3), Param::Float(1.0), Param::Text("c")];
        let e = p
            .pipeline(&[
                Step::Begin,
                Step::Exec(ins, &c3),
                Step::Exec(ins, &a),
                Step::Exec(ins, &[Param::Int(4), Param::Null, Param::Null]),
                Step::Text("COMMIT"),
            ])
            .await
            .unwrap_err();
        assert!(e.to_string().contains("duplicate key"), "{e}");
        assert!(!e.is_conflict(), "{e}");
        p.text("ROLLBACK").await.unwrap();
        assert_eq!(p.rows(sel, &[]).await.unwrap().len(), 2);
        assert_eq!(
            p.select("SELECT count(*) FROM t").await.unwrap(),
            [[Cell::Int(2)]]
        );
    });
}

/// A `usertable` of someone else's whose updates the server refuses: the
/// phase prints and records the server's own message, not "db error".
#[test]
fn failed_operations_on_postgres_show_the_servers_message() {
    let s = Server::start(Kind::Postgres);
    let url = s.url();
    let common = ["--store", url.as_str(), "--records", "20", "--threads", "1"];
    let (code, out, err) = drive(
        &[
            &common[..],
            &["--workload", "c", "--load", "--operations", "5"],
        ]
        .concat(),
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    block_on(async {
        use benchcage::workload::stores::StoreTarget;
        let ep = StoreTarget::parse(&url).unwrap().endpoint;
        let c = clients::postgres::PgConn::connect(&ep).await.unwrap();
        c.batch(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'usertable belongs to another application'; END $$; \
             CREATE TRIGGER refuse BEFORE UPDATE ON usertable FOR EACH ROW EXECUTE FUNCTION refuse()",
        )
        .await
        .unwrap();
    });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("phases.json");
    let run = [
        "--workload",
        "a",
        "--operations",
        "40",
        "--error-budget",
        "100%",
        "--json",
        json.to_str().unwrap(),
    ];
    let (code, out, err) = drive(&[&common[..], &run[..]].concat());
    assert_eq!(code, Some(0), "{out}\n{err}");
    let want = "db error: usertable belongs to another application (SQLSTATE P0001)";
    assert!(
        out.contains(&format!(
            "[UPDATE-FAILED], Error, postgres at 127.0.0.1:{}: {want}",
            s.port
        )),
        "{out}"
    );
    let phases: Vec<PhaseResult> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let update = &phases[0].ops["UPDATE"];
    assert!(update.errors > 0, "{update:?}");
    assert!(
        update.error_samples[0].ends_with(want),
        "{:?}",
        update.error_samples
    );
}

/// A paused Redis (`CLIENT PAUSE`) accepts connections and answers
/// nothing: `drive` gives up within the setup bound (shortened here to
/// 1 s), naming the step and the server, instead of hanging.
#[test]
fn drive_gives_up_on_a_paused_redis_within_the_setup_bound() {
    let s = Server::start(Kind::Redis);
    block_on(async {
        let ep = clients::Endpoint::loopback(s.port);
        let mut c = clients::redis::RedisConn::connect(&ep).await.unwrap();
        // Over by itself well before the server is stopped.
        c.cmd(&["CLIENT", "PAUSE", "5000", "ALL"]).await.unwrap();
    });
    let url = s.url();
    let start = std::time::Instant::now();
    let out = bc()
        .args([
            "drive",
            "--store",
            &url,
            "--workload",
            "c",
            "--records",
            "10",
        ])
        .args(["--operations", "10", "--load"])
        .env("BENCHCAGE_SETUP_TIMEOUT", "1")
        .timeout(std::time::Duration::from_secs(12))
        .output()
        .unwrap();
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let want = format!("no reply within 1 s from 127.0.0.1:{}", s.port);
    assert!(err.contains(&want), "want `{want}`: {err}");
    assert!(took < std::time::Duration::from_secs(4), "{took:?}");
}
