//! The built-in TPC-C workload against real servers: the load's
//! cardinalities, the mix of a run, the consistency conditions after it,
//! and a corrupted district that fails them (and `drive`).

mod support;

use benchcage::results::model::{PhaseResult, PhaseStatus};
use benchcage::workload::stores::StoreTarget;
use benchcage::workload::tpcc::schema::Dialect;
use benchcage::workload::tpcc::sql::{SqlConn, SqlTpcc};
use benchcage::workload::tpcc::{TpccStore, txn::MIX};
use benchcage::workload::{self, WorkloadConfig};
use support::cli::drive;
use support::{Kind, Server, block_on};
use tokio_util::sync::CancellationToken;

fn run_config(cfg: &WorkloadConfig) -> Vec<PhaseResult> {
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

fn tpcc(url: &str, warehouses: u32, load: bool, operations: Option<u64>) -> WorkloadConfig {
    serde_json::from_value(serde_json::json!({
        "store": url, "workload": "tpcc", "warehouses": warehouses,
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

/// Loads `warehouses`, checks every table's rows, runs the mix and checks
/// its shares and the consistency conditions; then corrupts a district
/// and checks that the conditions, the phase and `drive` fail.
fn tpcc_end_to_end(kind: Kind, warehouses: u32) {
    let s = Server::start(kind);
    let w = warehouses as u64;
    let load = run_config(&tpcc(&url(&s), warehouses, true, None));
    assert_eq!(load.len(), 1);
    assert!(load[0].status.is_ok(), "{:?}", load[0].status);
    let rows = block_on(store(&s).data_rows()).unwrap();
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
    assert_eq!(block_on(store(&s).check()).unwrap(), Vec::<String>::new());

    let n = 1500;
    let run = run_config(&tpcc(&url(&s), warehouses, false, Some(n)));
    let r = &run[0];
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
    let after = block_on(store(&s).data_rows()).unwrap();
    assert!(after["orders"] > rows["orders"]);

    corrupt(
        &s,
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 3",
    );
    corrupt(
        &s,
        "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 7",
    );
    let v = block_on(store(&s).check()).unwrap();
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("condition 1: warehouse 1"), "{v:?}");
    assert!(v[1].starts_with("condition 2: district 1/3"), "{v:?}");
    let run = run_config(&tpcc(&url(&s), warehouses, false, Some(40)));
    match &run[0].status {
        PhaseStatus::Invalid { reason } => {
            // A NEW ORDER in district 3 may move its max(O_ID) up to the
            // bumped D_NEXT_O_ID; the skipped id then breaks condition 3.
            assert!(reason.contains("district 1/3"), "{reason}")
        }
        other => panic!("a corrupted district left the phase {other:?}"),
    }
    let (code, out, err) = drive(&[
        "--store",
        &url(&s),
        "--workload",
        "tpcc",
        "--warehouses",
        &warehouses.to_string(),
        "--threads",
        "2",
        "--operations",
        "20",
    ]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("[OVERALL], tpmC, "), "{out}");
    assert!(err.contains("condition 1: warehouse 1"), "{err}");
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
fn tpcc_refuses_a_store_it_does_not_run_on_and_warehouses_elsewhere() {
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
        err.contains("tpcc workload runs on postgres and mysql"),
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
}
