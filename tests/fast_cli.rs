//! Commands and clients that need no server: `benchcage drive` against
//! its null store and its refusals, clients that give up on a silent port,
//! the memory hog's refusals. Needs neither root nor engines (the fast tier).

mod support;

use benchcage::clients;
use benchcage::clients::mongodb::{MongoConn, MongoOptions};
use benchcage::results::model::PhaseResult;
use support::block_on;
use support::cli::{assert_success, bc, drive, summary_count};
use support::host::{MLOCK_TESTS, assert_mlocked_near, mlocked};
use support::scratch::Scratch;
use support::server::mongo_endpoint;

#[test]
fn ping_fails_fast_when_nothing_listens() {
    let port = support::free_port();
    let r = block_on(clients::ping(&benchcage::model::Probe::Redis, port));
    assert!(r.is_err());
}

#[test]
fn drive_counts_workload_f_read_modify_writes_under_read_and_update_too() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("f.json");
    let out = bc()
        .args(["drive", "--store", "null://", "--workload", "f"])
        .args(["--operations", "20000", "--threads", "2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let (read, update, rmw) = (
        summary_count(&text, "READ"),
        summary_count(&text, "UPDATE"),
        summary_count(&text, "READ-MODIFY-WRITE"),
    );
    assert!((8000..12000).contains(&rmw), "{text}");
    assert_eq!(update, rmw, "{text}");
    // Plain reads plus one read per RMW: every operation of F reads once.
    assert_eq!(read, 20000, "{text}");
    let results: Vec<PhaseResult> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &results[0];
    assert_eq!(r.total_ops, 20000, "each operation counted once");
    assert_eq!(r.ops["READ"].count, read);
    assert_eq!(r.ops["UPDATE"].count, rmw);
    assert!((r.throughput * r.duration_s - 20000.0).abs() < 1.0);
}

#[test]
fn drive_refuses_a_non_loopback_store_with_exit_code_2() {
    let out = bc()
        .args([
            "drive",
            "--store",
            "redis://10.1.2.3:6379",
            "--operations",
            "10",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not loopback"));
}

#[test]
fn drive_takes_a_workload_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("w.json");
    let json = dir.path().join("r.json");
    std::fs::write(
        &cfg,
        r#"{"name": "sweep", "store": "null://", "workload": "b", "threads": [1, 2],
            "operations": 5000, "records": 100}"#,
    )
    .unwrap();
    let out = bc()
        .args(["drive", "--config"])
        .arg(&cfg)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_success(&out);
    let results: Vec<PhaseResult> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        results.iter().map(|r| r.threads).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(
        results
            .iter()
            .all(|r| r.name == "sweep" && r.total_ops == 5000)
    );
}

#[test]
fn drive_help_says_a_load_deletes_nothing_without_reset() {
    let (code, out, _) = drive(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("--reset"), "{out}");
    assert!(
        out.contains("never deletes data it did not create"),
        "{out}"
    );
}

#[test]
fn a_server_that_never_answers_fails_within_the_timeout() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    // Accepts and reads, never replies.
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 1024];
        while std::io::Read::read(&mut s, &mut buf).unwrap_or(0) > 0 {}
    });
    let opts = MongoOptions::from_query("socketTimeoutMS=300").unwrap();
    let start = std::time::Instant::now();
    let e = block_on(MongoConn::connect_with(&mongo_endpoint(port), &opts))
        .err()
        .expect("no handshake")
        .to_string();
    assert!(e.contains("no reply within 300 ms"), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    drop(t);
}

#[test]
fn the_hog_refuses_with_exit_2_when_it_cannot_leave_enough() {
    let _one = MLOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new("hog-refuse");
    let base = mlocked();
    let out = s.benchcage(&["hog", "--leave", "100TiB"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot leave 100TiB") && err.contains("smaller --leave"),
        "{err}"
    );
    assert_mlocked_near(base, "after a refusal");
}

#[test]
fn the_hog_refuses_a_bare_number_and_a_leave_under_the_floor_and_locks_nothing() {
    let _one = MLOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new("hog-floor");
    let base = mlocked();
    for (leave, says) in [
        ("0", "has no unit"),
        ("16", "has no unit"),
        ("0B", "leave at least 512MiB"),
        ("100MiB", "leave at least 512MiB"),
    ] {
        let out = s.benchcage(&["hog", "--leave", leave]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--leave {leave}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "--leave {leave}: {err}");
        assert!(
            out.stdout.is_empty(),
            "--leave {leave} printed a locked line"
        );
    }
    assert_mlocked_near(base, "after the refusals");
}
