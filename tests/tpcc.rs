//! The built-in TPC-C workload against real servers: the load's
//! cardinalities, the mix of a run, the consistency conditions after it,
//! and a corrupted district that fails them (and `drive`).

mod support;

use benchcage::model::{DocumentSchema, TxnMode};
use benchcage::results::model::{PhaseResult, PhaseStatus};
use benchcage::workload::stores::StoreTarget;
use benchcage::workload::tpcc::mongo::{self, MongoTpcc};
use benchcage::workload::tpcc::schema::Dialect;
use benchcage::workload::tpcc::sql::{SqlConn, SqlTpcc};
use benchcage::workload::tpcc::{TpccStore, txn::MIX};
use benchcage::workload::{self, DriveConfig};
use serde_json::json;
use std::collections::BTreeSet;
use support::cli::drive;
use support::tap::Tap;
use support::{Kind, Server, block_on};
use tokio_util::sync::CancellationToken;

fn run_config(cfg: &DriveConfig) -> Vec<PhaseResult> {
    let v = cfg.validate().expect("valid config");
    block_on(workload::run(&v, &CancellationToken::new())).expect("workload runs")
}

/// The server's URL, MariaDB's on a database of its own.
fn url(s: &Server) -> String {
    s.url().replace("/mysql", "/tpcc")
}

fn store(s: &Server) -> SqlTpcc {
    let t = StoreTarget::parse(&url(s)).unwrap();
    SqlTpcc {
        ep: t.endpoint,
        dialect: match s.kind {
            Kind::Postgres => Dialect::Postgres,
            _ => Dialect::Mysql,
        },
        engine: None,
    }
}

/// The MongoDB store, in one of py-tpcc's document schemas.
fn mongo_store(s: &Server, schema: DocumentSchema) -> MongoTpcc {
    let t = StoreTarget::parse(&url(s)).unwrap();
    MongoTpcc::new(t.endpoint, t.mongo, schema)
}

/// The logical sessions of the commands that went through `tap`, checked
/// to be ended: one `endSessions`, after the last command of any of them,
/// with every one of their ids. Returns how many there were.
fn sessions_ended(tap: &Tap) -> usize {
    let commands = tap.commands();
    let used: BTreeSet<String> = commands
        .iter()
        .filter_map(|c| c.get("lsid"))
        .map(|l| l.to_string())
        .collect();
    let ends: Vec<usize> = (0..commands.len())
        .filter(|&i| commands[i].get("endSessions").is_some())
        .collect();
    if used.is_empty() {
        assert_eq!(ends, Vec::<usize>::new(), "endSessions without sessions");
        return 0;
    }
    assert_eq!(ends.len(), 1, "one endSessions: {ends:?}");
    let ended: BTreeSet<String> = commands[ends[0]]["endSessions"]
        .as_array()
        .expect("an array of session ids")
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(ended, used);
    let last_use = commands.iter().rposition(|c| c.get("lsid").is_some());
    assert!(last_use < Some(ends[0]), "a session was used after its end");
    used.len()
}

/// Rows (documents, embedded order lines) per table.
fn data_rows(s: &Server, schema: DocumentSchema) -> std::collections::BTreeMap<&'static str, u64> {
    match s.kind {
        Kind::Secantus => block_on(mongo_store(s, schema).data_rows()),
        _ => block_on(store(s).data_rows()),
    }
    .unwrap()
}

/// The violated consistency conditions.
fn check(s: &Server, schema: DocumentSchema) -> Vec<String> {
    match s.kind {
        Kind::Secantus => block_on(mongo_store(s, schema).check()),
        _ => block_on(store(s).check()),
    }
    .unwrap()
}

/// Documents of a MongoDB collection that match `query`.
fn count_documents(s: &Server, coll: &str, query: serde_json::Value) -> u64 {
    block_on(async {
        let mut c = mongo_store(s, DocumentSchema::Denormalized)
            .raw()
            .await
            .unwrap();
        let r = c
            .cmd(serde_json::json!({"count": coll, "query": query}))
            .await
            .unwrap();
        r["n"].as_u64().unwrap()
    })
}

/// Adds 1 to district `w`/`d`'s next order id (`next`) or its `D_YTD`.
fn corrupt_district(s: &Server, w: u32, d: u32, next: bool) {
    if s.kind != Kind::Secantus {
        let col = if next { "d_next_o_id" } else { "d_ytd" };
        return corrupt(
            s,
            &format!("UPDATE district SET {col} = {col} + 1 WHERE d_w_id = {w} AND d_id = {d}"),
        );
    }
    let field = if next { "D_NEXT_O_ID" } else { "D_YTD" };
    block_on(async {
        let mut c = mongo_store(s, DocumentSchema::Denormalized)
            .raw()
            .await
            .unwrap();
        let u = serde_json::json!({"update": "DISTRICT", "updates": [
            {"q": {"D_W_ID": w, "D_ID": d}, "u": {"$inc": {field: 1}}}]});
        let r = c.cmd(u).await.unwrap();
        assert_eq!(r["nModified"], 1, "{r}");
    });
}

/// TPC-C on `url`; on MongoDB in py-tpcc's `denormalize` schema when given.
fn tpcc(
    url: &str,
    warehouses: u32,
    denormalize: Option<bool>,
    load: bool,
    operations: Option<u64>,
) -> DriveConfig {
    serde_json::from_value(serde_json::json!({
        "store": url, "workload": "tpcc", "warehouses": warehouses, "denormalize": denormalize,
        "threads": 4, "load": load, "operations": operations, "seed": 3,
    }))
    .unwrap()
}

/// Runs `sql` on the TPC-C database.
fn corrupt(s: &Server, sql: &str) {
    block_on(async {
        let mut c = store(s).raw().await.unwrap();
        c.text(sql).await.unwrap();
    });
}

/// One number a query on the TPC-C database returns.
fn number(s: &Server, sql: &str) -> i64 {
    block_on(async {
        let mut c = store(s).raw().await.unwrap();
        let rows = c.select(sql).await.unwrap();
        rows[0][0].int().unwrap_or(0)
    })
}

/// The stock rows changed as the order lines of the run say (a NEW ORDER
/// updates all of an order's stock rows in one statement, lines of one
/// item together): counters start at 0, so their sums are the run's
/// lines; quantities stay within 10 to 100; each line carries its
/// district's `S_DIST_xx`.
fn assert_stock_follows_order_lines(s: &Server) {
    let new = "FROM order_line WHERE ol_o_id > 3000";
    let lines = number(s, &format!("SELECT COUNT(*) {new}"));
    assert!(lines > 0, "the run placed no order lines");
    assert_eq!(number(s, "SELECT SUM(s_order_cnt) FROM stock"), lines);
    let ordered = number(s, &format!("SELECT SUM(ol_quantity) {new}"));
    assert_eq!(number(s, "SELECT SUM(s_ytd) FROM stock"), ordered);
    let remote = number(
        s,
        &format!("SELECT COUNT(*) {new} AND ol_supply_w_id <> ol_w_id"),
    );
    assert_eq!(number(s, "SELECT SUM(s_remote_cnt) FROM stock"), remote);
    let outside = "SELECT COUNT(*) FROM stock WHERE s_quantity < 10 OR s_quantity > 100";
    assert_eq!(number(s, outside), 0);
    let dist: String = (1..=10)
        .map(|d| format!(" WHEN {d} THEN s_dist_{d:02}"))
        .collect();
    let wrong = format!(
        "SELECT COUNT(*) FROM order_line JOIN stock \
         ON s_w_id = ol_supply_w_id AND s_i_id = ol_i_id \
         WHERE ol_o_id > 3000 AND ol_dist_info <> CASE ol_d_id{dist} END"
    );
    assert_eq!(number(s, &wrong), 0);
}

/// The run's deliveries, whole (TPC-C's consistency conditions 5, 7 and,
/// summed over every customer, 10): an order has a carrier exactly when
/// it is no longer a new order, and its lines a delivery date exactly
/// when it has a carrier; each order delivered in the run counted once in
/// its customer's deliveries and its lines' amounts in the balance (which
/// payments lowered by what the history holds).
fn assert_deliveries_are_whole(s: &Server) {
    let carrier_or_new = "SELECT COUNT(*) FROM orders LEFT JOIN new_order \
        ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id \
        WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL)";
    assert_eq!(number(s, carrier_or_new), 0);
    let lines = "SELECT COUNT(*) FROM orders JOIN order_line \
        ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
        WHERE (o_carrier_id IS NULL) <> (ol_delivery_d IS NULL)";
    assert_eq!(number(s, lines), 0);
    let in_run = "FROM orders WHERE o_id >= 2101 AND o_carrier_id IS NOT NULL";
    let delivered = number(s, &format!("SELECT COUNT(*) {in_run}"));
    assert!(delivered > 0, "the run delivered no order");
    assert_eq!(
        number(s, "SELECT SUM(c_delivery_cnt) FROM customer"),
        delivered
    );
    // Customers start at -10.00 with one 10.00 history row each.
    let off = "SELECT COUNT(*) FROM customer WHERE c_id = 1 AND c_d_id = 1 AND c_w_id = 1 AND ABS(\
         (SELECT SUM(c_balance) FROM customer) + (SELECT SUM(h_amount) FROM history) - \
         (SELECT SUM(ol_amount) FROM order_line JOIN orders \
          ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
          WHERE o_id >= 2101 AND o_carrier_id IS NOT NULL)) < 0.005";
    assert_eq!(
        number(s, off),
        1,
        "balances do not add up to deliveries less payments"
    );
}

/// The run's `payments`, each with its history row, and each bad-credit
/// customer who paid in the run with the payment's line before their data
/// (`C_ID C_D_ID ...`). Together with the balances of
/// [`assert_deliveries_are_whole`] and condition 1 (warehouse and district
/// year-to-date), every part of a PAYMENT is checked.
fn assert_payments_are_whole(s: &Server, warehouses: u64, payments: u64) {
    let history = number(s, "SELECT COUNT(*) FROM history") as u64;
    assert_eq!(history, 30_000 * warehouses + payments);
    let paid = "FROM customer WHERE c_credit = 'BC' AND c_payment_cnt > 1";
    assert!(number(s, &format!("SELECT COUNT(*) {paid}")) > 0);
    let unmarked =
        format!("SELECT COUNT(*) {paid} AND c_data NOT LIKE CONCAT(c_id, ' ', c_d_id, ' %')");
    assert_eq!(number(s, &unmarked), 0);
}

/// Loads `warehouses`, checks every table's rows, runs the mix and checks
/// its shares and the consistency conditions; then corrupts a district
/// and checks that the conditions, the phase and `drive` fail.
fn tpcc_end_to_end(kind: Kind, warehouses: u32) {
    tpcc_on(&Server::start(kind), warehouses, None, None);
}

/// As [`tpcc_end_to_end`] on a running server; on MongoDB in py-tpcc's
/// `denormalize` schema when given (its default when not), which every
/// phase must record, and in the `transactions` mode its server allows,
/// which every measured phase must record.
fn tpcc_on(s: &Server, warehouses: u32, denormalize: Option<bool>, transactions: Option<TxnMode>) {
    let kind = s.kind;
    let w = warehouses as u64;
    let schema = DocumentSchema::from_denormalize(denormalize);
    let mongo_schema = (kind == Kind::Secantus).then_some(schema);
    let tpcc = |load, ops| tpcc(&url(s), warehouses, denormalize, load, ops);
    let load = run_config(&tpcc(true, None));
    // MongoDB's run goes through a wire tap, for the sessions it ends.
    let tap = (kind == Kind::Secantus).then(|| Tap::start(s.port));
    assert_eq!(load.len(), 1);
    let samples: Vec<&String> = load[0]
        .ops
        .values()
        .flat_map(|o| &o.error_samples)
        .collect();
    assert!(load[0].status.is_ok(), "{:?}: {samples:?}", load[0].status);
    let recorded = load[0].mongo_tpcc.as_ref();
    assert_eq!(recorded.map(|m| m.schema), mongo_schema);
    assert_eq!(recorded.and_then(|m| m.transactions), None);
    let rows = data_rows(s, schema);
    for (table, want) in [
        ("item", 100_000),
        ("warehouse", w),
        ("district", 10 * w),
        ("stock", 100_000 * w),
        ("customer", 30_000 * w),
        ("history", 30_000 * w),
        ("orders", 30_000 * w),
        ("new_order", 9_000 * w),
    ] {
        assert_eq!(rows[table], want, "{table}: {rows:?}");
    }
    // 5 to 15 lines an order, 10 on average.
    let lines = rows["order_line"] as f64 / (30_000 * w) as f64;
    assert!((9.8..10.2).contains(&lines), "{lines} lines per order");
    assert_eq!(load[0].total_ops, rows.values().sum::<u64>());
    if kind == Kind::Mariadb {
        // Sizes read after ANALYZE TABLE: ~100 MB a warehouse, not the
        // third of it that InnoDB's statistics hold right after the load.
        let ep = store(s).ep;
        block_on(benchcage::clients::mysql::analyze_database(&ep, "tpcc")).unwrap();
        let size = block_on(benchcage::clients::mysql::query_text(
            &ep,
            "SELECT CAST(SUM(data_length + index_length) AS CHAR) \
             FROM information_schema.tables WHERE table_schema = 'tpcc'",
        ))
        .unwrap();
        let mb = size.parse::<u64>().unwrap() / 1_000_000;
        assert!(mb >= 70 * w, "{mb} MB for {w} warehouses");
    }
    if kind == Kind::Secantus {
        // Order lines where the schema puts them: in their own collection,
        // or in their orders.
        let embedded = json!({"ORDER_LINE": {"$exists": true}});
        let (in_collection, in_orders) = match schema {
            DocumentSchema::Normalized => (rows["order_line"], 0),
            DocumentSchema::Denormalized => (0, 30_000 * w),
        };
        assert_eq!(count_documents(s, "ORDER_LINE", json!({})), in_collection);
        assert_eq!(count_documents(s, "ORDERS", embedded), in_orders);
    }
    assert_eq!(check(s, schema), Vec::<String>::new());

    // SecantusDB runs a few dozen transactions a second.
    let n = if kind == Kind::Secantus { 600 } else { 1500 };
    let mut cfg = tpcc(false, Some(n));
    if let Some(t) = &tap {
        let tapped = url(s).replace(&format!(":{}", s.port), &format!(":{}", t.port));
        cfg.store = Some(tapped);
    }
    let run = run_config(&cfg);
    let r = &run[0];
    if let Some(t) = &tap {
        // One session per terminal, each in its transactions.
        let want = match transactions {
            Some(TxnMode::MultiDocument) => 4,
            _ => 0,
        };
        assert_eq!(sessions_ended(t), want);
    }
    assert_eq!(r.mongo_tpcc.as_ref().map(|m| m.schema), mongo_schema);
    assert_eq!(r.mongo_tpcc.and_then(|m| m.transactions), transactions);
    let samples: Vec<&String> = r.ops.values().flat_map(|o| &o.error_samples).collect();
    assert!(r.status.is_ok(), "{:?}: {samples:?}", r.status);
    assert_eq!(r.total_ops, n);
    for (k, share) in MIX {
        let name = [
            "NEW_ORDER",
            "PAYMENT",
            "ORDER_STATUS",
            "DELIVERY",
            "STOCK_LEVEL",
        ][k as usize];
        let got = r.ops.get(name).map_or(0, |o| o.count) as f64 / n as f64 * 100.0;
        // Four standard deviations of a share of 1500 draws.
        let sd = (share as f64 * (100.0 - share as f64) / n as f64).sqrt();
        assert!(
            (got - share as f64).abs() <= 4.0 * sd,
            "{name}: {got:.1}% for {share}%"
        );
    }
    let h = r.headline.as_ref().expect("tpmC");
    assert_eq!(h.name, "tpmC");
    let new_orders = r.ops["NEW_ORDER"].count as f64;
    assert!((h.value - new_orders * 60.0 / r.duration_s).abs() < 1e-6);
    // The run changed the districts it checks: orders were placed.
    let after = data_rows(s, schema);
    assert!(after["orders"] > rows["orders"]);
    if kind != Kind::Secantus {
        assert_stock_follows_order_lines(s);
        assert_deliveries_are_whole(s);
        assert_payments_are_whole(s, w, r.ops["PAYMENT"].count);
    }

    corrupt_district(s, 1, 3, true);
    corrupt_district(s, 1, 7, false);
    let v = check(s, schema);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("condition 1: warehouse 1"), "{v:?}");
    assert!(v[1].starts_with("condition 2: district 1/3"), "{v:?}");
    let run = run_config(&tpcc(false, Some(40)));
    match &run[0].status {
        PhaseStatus::Invalid { reason } => {
            // A NEW ORDER in district 3 may move its max(O_ID) up to the
            // bumped D_NEXT_O_ID; the skipped id then breaks condition 3.
            assert!(reason.contains("district 1/3"), "{reason}")
        }
        other => panic!("a corrupted district left the phase {other:?}"),
    }
    let (warehouses, store) = (warehouses.to_string(), url(s));
    let mut args = vec![
        "--store",
        &store,
        "--workload",
        "tpcc",
        "--warehouses",
        &warehouses,
        "--threads",
        "2",
        "--operations",
        "20",
    ];
    let denormalize = denormalize.map(|d| d.to_string());
    if let Some(d) = &denormalize {
        args.extend(["--denormalize", d]);
    }
    let (code, out, err) = drive(&args);
    assert_ne!(code, Some(0), "{out}");
    // The transactions ran, but a phase that failed its checks prints no
    // headline figure (issue 34).
    assert!(out.contains("[NEW_ORDER], Operations, "), "{out}");
    assert!(!out.contains("[OVERALL], tpmC, "), "{out}");
    assert!(err.contains("condition 1: warehouse 1"), "{err}");
    if let Some(schema) = mongo_schema {
        let line = format!("[TPC-C], Schema, {}", schema.name());
        assert!(out.contains(&line), "{out}");
        let t = transactions.expect("a MongoDB run's transaction mode");
        let line = format!("[TPC-C], Transactions, {}", t.name());
        assert!(out.contains(&line), "{out}");
    } else {
        assert!(!out.contains("[TPC-C]"), "{out}");
    }
}

#[test]
fn tpcc_loads_runs_and_checks_consistency_on_postgres() {
    tpcc_end_to_end(Kind::Postgres, 1);
}

#[test]
fn tpcc_loads_runs_and_checks_consistency_on_mariadb() {
    tpcc_end_to_end(Kind::Mariadb, 1);
}

#[test]
fn tpcc_at_two_warehouses_on_postgres() {
    tpcc_end_to_end(Kind::Postgres, 2);
}

#[test]
fn tpcc_on_secantusdb_runs_in_multi_document_transactions() {
    let s = Server::start(Kind::Secantus);
    let mut c = block_on(mongo_store(&s, DocumentSchema::Denormalized).raw()).unwrap();
    assert!(block_on(mongo::has_transactions(&mut c)).unwrap());
    tpcc_on(&s, 1, None, Some(TxnMode::MultiDocument));
}

#[test]
fn tpcc_on_secantusdb_in_the_normalized_schema_keeps_order_lines_in_a_collection_of_their_own() {
    tpcc_on(
        &Server::start(Kind::Secantus),
        1,
        Some(false),
        Some(TxnMode::MultiDocument),
    );
}

#[test]
fn tpcc_on_a_standalone_secantusdb_runs_without_transactions_at_two_warehouses() {
    let mut s = Server::start(Kind::Secantus);
    s.restart_secantus_with(&["--standalone"]);
    let mut c = block_on(mongo_store(&s, DocumentSchema::Denormalized).raw()).unwrap();
    assert!(!block_on(mongo::has_transactions(&mut c)).unwrap());
    tpcc_on(&s, 2, None, Some(TxnMode::None));
}

#[test]
fn tpcc_refuses_a_store_it_does_not_run_on_and_warehouses_or_a_document_schema_elsewhere() {
    let (code, _, err) = drive(&[
        "--store",
        "redis://127.0.0.1:1",
        "--workload",
        "tpcc",
        "--operations",
        "1",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("tpcc workload runs on postgres, mysql/mariadb and mongodb"),
        "{err}"
    );
    let (code, _, err) = drive(&[
        "--store",
        "postgres://127.0.0.1:1/x",
        "--workload",
        "a",
        "--warehouses",
        "2",
        "--operations",
        "1",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--warehouses: `warehouses` only applies"),
        "{err}"
    );
    // py-tpcc's document schema is MongoDB's: refused for SQL stores and
    // for other workloads, before anything connects.
    for (store, workload, want) in [
        (
            "postgres://127.0.0.1:1/x",
            "tpcc",
            "--denormalize: py-tpcc's MongoDB document schema does not apply to postgres",
        ),
        (
            "mongodb://127.0.0.1:1/x",
            "a",
            "--denormalize: `denormalize` only applies to `workload: tpcc`",
        ),
    ] {
        let args = [
            "--store",
            store,
            "--workload",
            workload,
            "--denormalize",
            "false",
            "--operations",
            "1",
        ];
        let (code, _, err) = drive(&args);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(want), "{err}");
    }
}
