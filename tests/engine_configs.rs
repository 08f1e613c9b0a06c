//! The engines installed here accept the configs benchcage renders for
//! them: postgres and mariadbd read them back, redis-server and SecantusDB
//! start on them. Needs root (postgres runs as its own user) and the
//! engines (`make deps`).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};
use support::cli::{assert_success, combined, render_to};
use support::host::KillOnDrop;

fn chown_to(path: &Path, user: &str) {
    let st = std::process::Command::new("chown")
        .args(["-R", user])
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn postgres_accepts_its_rendered_config_and_reads_back_the_cache() {
    let t = tempfile::Builder::new()
        .prefix("benchcage-pgconf-")
        .tempdir()
        .unwrap();
    let o = render_to(
        "postgres",
        "quickstart",
        &["application_name=it's \"quoted\""],
        t.path(),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    chown_to(t.path(), "postgres");
    let show = |param: &str| {
        let out = std::process::Command::new("runuser")
            .args([
                "-u",
                "postgres",
                "--",
                "/usr/lib/postgresql/15/bin/postgres",
                "-D",
            ])
            .arg(t.path())
            .args(["-C", param])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "postgres refused the config: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // 128 MiB of 8 KiB pages.
    assert_eq!(show("shared_buffers"), "16384");
    assert_eq!(show("listen_addresses"), "127.0.0.1");
    // A quote in a value is escaped, not a way out of the string.
    assert_eq!(show("application_name"), "it's \"quoted\"");
}

fn mariadbd_verbose(cnf: &Path) -> String {
    let out = std::process::Command::new("mariadbd")
        .arg(format!("--defaults-file={}", cnf.display()))
        .args(["--help", "--verbose"])
        .output()
        .unwrap();
    let all = combined(&out);
    assert!(
        out.status.success(),
        "mariadbd refused {}: {}",
        cnf.display(),
        all.lines()
            .filter(|l| l.contains("ERROR"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    all
}

fn option_value(verbose: &str, name: &str) -> String {
    verbose
        .lines()
        .find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some(name)).then(|| it.collect::<Vec<_>>().join(" "))
        })
        .unwrap_or_default()
}

#[test]
fn mariadbd_accepts_the_innodb_and_myrocks_configs() {
    let t = tempfile::tempdir().unwrap();
    // MariaDB's measured 89MiB beside its pool leaves 39MiB of 128.
    let o = render_to(
        "mariadb",
        "tiny-128m",
        &["sync_on_commit=false", "cache=32MiB"],
        t.path(),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = mariadbd_verbose(&t.path().join("my.cnf"));
    assert_eq!(
        option_value(&v, "innodb-buffer-pool-size"),
        (32 * 1024 * 1024).to_string()
    );
    assert_eq!(option_value(&v, "innodb-flush-log-at-trx-commit"), "2");
    assert_eq!(option_value(&v, "innodb-flush-method"), "O_DIRECT");
    assert_eq!(option_value(&v, "bind-address"), "127.0.0.1");

    let t = tempfile::tempdir().unwrap();
    let o = render_to("myrocks", "tiny-128m", &["compression=zstd"], t.path());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = mariadbd_verbose(&t.path().join("my.cnf"));
    assert_eq!(
        option_value(&v, "rocksdb-block-cache-size"),
        (48 * 1024 * 1024).to_string()
    );
    assert_eq!(
        option_value(&v, "rocksdb-default-cf-options"),
        "compression=kZSTD"
    );
    assert_eq!(option_value(&v, "default-storage-engine"), "ROCKSDB");
    assert_eq!(option_value(&v, "rocksdb-allow-mmap-reads"), "FALSE");
    assert_eq!(option_value(&v, "aria-pagecache-buffer-size"), "1048576");

    let t = tempfile::tempdir().unwrap();
    let sets = ["mmap_reads=true", "memtable_size=8MiB"];
    let o = render_to("myrocks", "ram-sweep", &sets, t.path());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = mariadbd_verbose(&t.path().join("my.cnf"));
    assert_eq!(option_value(&v, "rocksdb-allow-mmap-reads"), "TRUE");
    assert_eq!(option_value(&v, "rocksdb-use-direct-reads"), "FALSE");
    assert_eq!(
        option_value(&v, "rocksdb-default-cf-options"),
        "compression=kLZ4Compression;write_buffer_size=8388608"
    );

    // The check itself bites: a misspelt option is refused.
    let bad = t.path().join("bad.cnf");
    std::fs::write(&bad, "[mysqld]\nrocksdb_block_cach_size = 1\n").unwrap();
    let out = std::process::Command::new("mariadbd")
        .arg(format!("--defaults-file={}", bad.display()))
        .args(["--help", "--verbose"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

fn resp(stream: &mut TcpStream, cmd: &[&str]) -> String {
    let mut req = format!("*{}\r\n", cmd.len());
    for a in cmd {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.write_all(req.as_bytes()).unwrap();
    let mut r = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    if let Some(n) = line.strip_prefix('*') {
        let n: usize = n.trim().parse().unwrap();
        let mut parts = Vec::new();
        for _ in 0..n {
            let mut len = String::new();
            r.read_line(&mut len).unwrap();
            let mut val = String::new();
            r.read_line(&mut val).unwrap();
            parts.push(val.trim_end().to_string());
        }
        parts.join(" ")
    } else {
        line.trim_end().to_string()
    }
}

#[test]
fn redis_server_starts_with_its_rendered_config_and_reports_its_maxmemory() {
    // redis 7.0 has no config test mode: start it on a free loopback port,
    // read the settings back, shut it down.
    let t = tempfile::Builder::new()
        .prefix("benchcage-redisconf-")
        .tempdir()
        .unwrap();
    let cfg = t.path().join("cfg");
    let o = render_to("redis", "quickstart", &["cache_size=96MiB"], &cfg);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new("/usr/bin/redis-server")
        .arg(cfg.join("redis.conf"))
        .args(["--port", &port.to_string(), "--dir"])
        .arg(t.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut guard = KillOnDrop(child);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut stream = loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            break s;
        }
        assert!(Instant::now() < deadline, "redis never listened");
        std::thread::sleep(Duration::from_millis(50));
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        resp(&mut stream, &["CONFIG", "GET", "maxmemory"]),
        format!("maxmemory {}", 96 * 1024 * 1024)
    );
    assert_eq!(
        resp(&mut stream, &["CONFIG", "GET", "bind"]),
        "bind 127.0.0.1"
    );
    assert_eq!(
        resp(&mut stream, &["CONFIG", "GET", "appendfsync"]),
        "appendfsync everysec"
    );
    let _ = resp(&mut stream, &["SHUTDOWN", "NOSAVE"]);
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    let status = guard.0.wait().unwrap();
    assert!(status.success() || status.code().is_some());
}

#[test]
fn secantusdb_loads_its_rendered_toml() {
    let t = tempfile::tempdir().unwrap();
    let o = render_to("secantusdb", "vm-1g", &["sync_on_commit=true"], t.path());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let script = format!(
        "from pathlib import Path\nfrom secantus.config import load_config\nc, _ = load_config(Path({:?}))\nprint(c.cache_size, c.sync_on_commit)\n",
        t.path().join("secantusd.toml").display().to_string()
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "512M True");
}
