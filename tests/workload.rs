//! The load generator, stores and tools against real servers.

mod support;

use benchcage::clients;
use support::{Kind, Server};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

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
fn ping_fails_fast_when_nothing_listens() {
    let port = support::free_port();
    let r = block_on(clients::ping(&benchcage::sandbox::Probe::Redis, port));
    assert!(r.is_err());
}
