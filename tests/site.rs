//! `benchcage site` over a history made from copies of one real run
//! (`support::nights`): the index lists every series with a sparkline and
//! its latest change point, links resolve to files that exist, a page per
//! engine, pages that render in headless Chromium and make no request;
//! bad input exits 2 and writes nothing. The ignored benchmark builds a
//! year of the nightly matrix (`make bench-site`).
//!
//! Needs root, redis-server and chromium (one real run of a few seconds).

mod support;

use benchcage::changes::edivisive::normal;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;
use support::chromium::Chromium;
use support::copies::{real_run, scale};
use support::files::walk;
use support::nights::{bc, history, noise};

fn temp(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(prefix).tempdir().unwrap()
}

/// Every `attr="..."` value in `html`.
fn attrs(html: &str, attr: &str) -> Vec<String> {
    let k = format!(" {attr}=\"");
    html.split(&k)
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].replace("&amp;", "&"))
        .collect()
}

/// The table row of the index that shows series `label`.
fn row_of<'a>(index: &'a str, label: &str) -> &'a str {
    let at = index
        .find(&format!(">{label}</a>"))
        .unwrap_or_else(|| panic!("no series {label} in the index"));
    let start = index[..at].rfind("<tr").unwrap();
    &index[start..at + index[at..].find("</tr>").unwrap()]
}

/// Percent-decode an href path (the site encodes only bytes a URL path
/// cannot hold).
fn decode(h: &str) -> String {
    let b = h.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&h[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A loopback HTTP server that answers every request 404 and counts the
/// connections; it stops when dropped.
struct Loopback {
    port: u16,
    seen: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Loopback {
    fn start() -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (s, st) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        s.fetch_add(1, Ordering::SeqCst);
                        let _ = conn.set_nonblocking(false);
                        let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                        let mut buf = [0u8; 4096];
                        let _ = conn.read(&mut buf);
                        let _ = conn.write_all(
                            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                }
            }
        });
        Loopback {
            port,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn requests(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn the_site_lists_every_series_with_a_sparkline_and_links_that_resolve_and_makes_no_request() {
    let tmp = temp("benchcage-site-test-");
    let real = real_run(tmp.path(), "tests/scenarios/run-short-phase.yaml", &[]);
    let results = tmp.path().join("results");
    // Twelve nights, throughput 15% lower from night 7 on.
    let ids = history(&real, &results, 12, |n| {
        noise(n) * if n >= 7 { 0.85 } else { 1.0 }
    });
    let site = results.join("site");
    let (code, said) = bc(&results, &["site", "-o", site.to_str().unwrap()]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("12 run(s)"), "{said}");

    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    // Every series of the history, each with a sparkline of its 12 runs.
    let (code, changes) = bc(&results, &["changes"]);
    assert!(code == 0 || code == 1, "{changes}");
    let n_series: usize = changes
        .split(" change point(s) in ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no series count in {changes}"));
    assert!(n_series >= 2, "{changes}");
    assert_eq!(index.matches("<svg class=\"spark\"").count(), n_series);
    assert_eq!(index.matches("data-points=\"12\"").count(), n_series);
    // The step is the latest change point of the throughput series, shown
    // with the run it starts at, linked to that run's report.
    let row = row_of(&index, "redis@7.0 quickstart workload-c t2 READ throughput");
    assert!(row.contains("class=\"mark change\""), "{row}");
    assert!(
        row.contains(&format!(
            "href=\"../{}/report.html\">{}</a>",
            ids[6], ids[6]
        )),
        "{row}"
    );
    assert!(row.contains("-15."), "{row}");
    assert!(row.contains("regression"), "{row}");
    // Every run is listed, linked to its report.
    for id in &ids {
        assert!(
            index.contains(&format!("href=\"../{id}/report.html\"")),
            "no link to {id}"
        );
    }

    // A page per engine; every page self-contained, every link resolves.
    let pages: Vec<PathBuf> = walk(&site)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    let names: BTreeSet<String> = pages
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["index.html".to_string(), "engine-redis.html".to_string()])
    );
    let engine = std::fs::read_to_string(site.join("engine-redis.html")).unwrap();
    assert!(engine.contains("<svg class=\"chart\""), "no chart");
    assert!(
        engine.contains(&ids[6]),
        "the change point's run is missing"
    );
    let mut resolved = 0;
    for page in &pages {
        let html = std::fs::read_to_string(page).unwrap();
        assert!(
            html.contains(
                "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src &#39;none&#39;; style-src &#39;unsafe-inline&#39;; img-src data:\">"
            ),
            "{}: no CSP",
            page.display()
        );
        for banned in ["<script", "<link", "@import", "<img", "<iframe"] {
            assert!(!html.contains(banned), "{}: {banned}", page.display());
        }
        // `url(` only for a chart's own clip path.
        assert_eq!(
            html.matches("url(").count(),
            html.matches("url(#").count(),
            "{}",
            page.display()
        );
        assert!(attrs(&html, "src").is_empty(), "{}", page.display());
        for h in attrs(&html, "href") {
            assert!(
                !h.starts_with("http://") && !h.starts_with("https://") && !h.starts_with("//"),
                "{}: {h}",
                page.display()
            );
            let path = decode(h.split('#').next().unwrap());
            let target = site.join(&path);
            assert!(
                target.is_file(),
                "{}: {h} -> {}",
                page.display(),
                target.display()
            );
            resolved += 1;
        }
    }
    assert!(resolved > ids.len(), "{resolved} links");

    // Headless Chromium renders the index: the DOM it built holds every
    // sparkline, and a screenshot shows something.
    let mut chromium = Chromium::new();
    let dom = chromium.run(
        &["--dump-dom"],
        &format!("file://{}", site.join("index.html").display()),
    );
    assert_eq!(dom.matches("class=\"spark\"").count(), n_series);
    assert!(dom.contains("Results over time"));
    let shot = tmp.path().join("index.png");
    chromium.run(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1200",
        ],
        &format!("file://{}", site.join("index.html").display()),
    );
    let png = std::fs::read(&shot).expect("chromium saved a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "empty screenshot"
    );

    // No request leaves a page: an image and a style sheet on a loopback
    // server, slipped into a copy of the index, are never fetched; the
    // same copy without the policy fetches them (so the check can see a
    // request when there is one).
    let server = Loopback::start();
    let bait = format!(
        "<img src=\"http://127.0.0.1:{0}/x.png\"><link rel=\"stylesheet\" href=\"http://127.0.0.1:{0}/x.css\"></body>",
        server.port
    );
    let probe = site.join("probe.html");
    std::fs::write(&probe, index.replace("</body>", &bait)).unwrap();
    chromium.run(&["--dump-dom"], &format!("file://{}", probe.display()));
    assert_eq!(
        server.requests(),
        0,
        "a page with the site's policy made a request"
    );
    let meta = index.find("<meta http-equiv").unwrap();
    let meta = &index[meta..meta + index[meta..].find('>').unwrap() + 1];
    let open = index.replace(meta, "").replace("</body>", &bait);
    std::fs::write(&probe, open).unwrap();
    chromium.run(&["--dump-dom"], &format!("file://{}", probe.display()));
    assert!(
        server.requests() > 0,
        "the control page without the policy made no request: the check sees nothing"
    );
    std::fs::remove_file(&probe).unwrap();
    let profile = chromium.profile.path().to_path_buf();
    drop(chromium);
    assert!(
        !profile.exists(),
        "the chromium profile folder is left behind"
    );

    // Built again, the site is replaced whole; nothing is left beside it.
    std::fs::write(site.join("stale.html"), "old").unwrap();
    let (code, said) = bc(&results, &["site", "-o", site.to_str().unwrap()]);
    assert_eq!(code, 0, "{said}");
    assert!(
        !site.join("stale.html").exists(),
        "the old site was not replaced"
    );
    assert!(site.join("index.html").is_file());
    let beside: Vec<String> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".site"))
        .collect();
    assert!(beside.is_empty(), "left beside the site: {beside:?}");
}

#[test]
fn bad_input_exits_2_before_anything_is_written() {
    let tmp = temp("benchcage-site-bad-");
    let results = tmp.path().join("results");
    let site = tmp.path().join("site");
    let s = site.to_str().unwrap();

    // No results folder.
    let (code, said) = bc(&results, &["site", "-o", s]);
    assert_eq!(code, 2, "{said}");
    assert!(
        said.contains("does not exist") && said.contains("--results"),
        "{said}"
    );
    // A results folder without history.
    std::fs::create_dir(&results).unwrap();
    let (code, said) = bc(&results, &["site", "-o", s]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("history --index"), "{said}");
    assert!(!site.exists(), "a site was written on bad input");

    // A history (of no runs), and -o a file, or a folder of something else.
    std::fs::write(results.join("history.sqlite"), b"").unwrap();
    std::fs::write(&site, "keep me").unwrap();
    let (code, said) = bc(&results, &["site", "-o", s]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("is a file"), "{said}");
    assert_eq!(std::fs::read_to_string(&site).unwrap(), "keep me");
    std::fs::remove_file(&site).unwrap();
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("notes.txt"), "mine").unwrap();
    let (code, said) = bc(&results, &["site", "-o", s]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("did not write"), "{said}");
    assert_eq!(
        std::fs::read_dir(&site).unwrap().count(),
        1,
        "the folder was touched"
    );
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// The nightly matrix (scenarios/nightly.yaml): engine, version.
const NIGHTLY: [(&str, &str); 9] = [
    ("postgres", "12"),
    ("postgres", "13"),
    ("postgres", "14"),
    ("postgres", "15"),
    ("postgres", "16"),
    ("postgres", "17"),
    ("redis", "6.2"),
    ("redis", "7.0"),
    ("redis", "8.2"),
];

/// Night `n` (0-based, from 2025-12-04) of the nightly matrix, three
/// repetitions of each of its nine versions, every cell a copy of the
/// real cell `cell` (its figures scaled) in the real run folder `real`.
fn nightly_night(real: &Path, cell: &Path, results: &Path, n: u32) -> String {
    let day = chrono::NaiveDate::from_ymd_opt(2025, 12, 4).unwrap() + chrono::Days::new(n as u64);
    let id = format!("{}-020000-{n:04x}", day.format("%Y%m%d"));
    let dir = results.join(&id);
    let cell_json: Value =
        serde_json::from_slice(&std::fs::read(cell.join("cell.json")).unwrap()).unwrap();
    let mut keys = Vec::new();
    for (v, (engine, version)) in NIGHTLY.iter().enumerate() {
        for rep in 0..3u32 {
            let key = format!(
                "{engine}-{version}-quickstart-r{rep}-{:012x}",
                0xbe4c_0000 + v
            );
            let to = dir.join("cells").join(&key);
            for entry in walk(cell) {
                let rel = entry.strip_prefix(cell).unwrap();
                let target = to.join(rel);
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                if rel != Path::new("cell.json") {
                    std::fs::hard_link(&entry, &target).unwrap();
                }
            }
            // Each version its own level, 2% of Gaussian noise a cell
            // and night, a 10% step down for redis 8.2 at night 300 and
            // one 8% up for postgres 15 at night 120.
            let mut g = StdRng::seed_from_u64(u64::from(n) * 1000 + v as u64 * 10 + u64::from(rep));
            let step = match (*engine, *version) {
                ("redis", "8.2") if n >= 300 => 0.9,
                ("postgres", "15") if n >= 120 => 1.08,
                _ => 1.0,
            };
            let f = (0.8 + 0.05 * v as f64) * (1.0 + 0.02 * normal(&mut g)) * step;
            let mut c = cell_json.clone();
            scale(&mut c, f, false);
            c["key"] = Value::from(key.clone());
            c["label"] = Value::from(format!("{engine}@{version}/quickstart/r{rep}"));
            c["engine"] = Value::from(*engine);
            c["version"] = Value::from(*version);
            c["repetition"] = Value::from(rep);
            c["group"] = Value::from(format!(
                "{engine}-{version}-quickstart-{:012x}",
                0xbe4c_0000 + v
            ));
            std::fs::write(to.join("cell.json"), serde_json::to_vec(&c).unwrap()).unwrap();
            keys.push(key);
        }
    }
    for entry in std::fs::read_dir(real).unwrap() {
        let entry = entry.unwrap().path();
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if entry.is_file() && name != "run.json" {
            std::fs::hard_link(&entry, dir.join(&name)).unwrap();
        }
    }
    let mut run: Value =
        serde_json::from_slice(&std::fs::read(real.join("run.json")).unwrap()).unwrap();
    run["run_id"] = Value::from(id.clone());
    run["scenario"] = Value::from("nightly");
    run["started_at"] = Value::from(format!("{}T02:00:00+00:00", day.format("%Y-%m-%d")));
    run["finished_at"] = Value::from(format!("{}T03:30:00+00:00", day.format("%Y-%m-%d")));
    run["cells"] = Value::from(keys);
    std::fs::write(
        dir.join("run.json"),
        serde_json::to_vec_pretty(&run).unwrap(),
    )
    .unwrap();
    id
}

/// `make bench-site` (scripts/bench/site.sh): a year of nightly runs,
/// 365 runs of the nightly matrix (27 cells each, its phases and thread
/// counts) made from ONE real run of one of its cells, then `benchcage
/// site` timed on them. BENCHCAGE_SITE_BIN picks the binary to time (the
/// script passes a release build; the target, under 10 s, is checked only
/// for it). One `BENCH {json}` line.
#[test]
#[ignore]
fn bench_a_year_of_nightly_runs_builds_its_site_in_seconds() {
    let tmp = temp("benchcage-bench-site-");
    let real = real_run(
        tmp.path(),
        "scenarios/nightly.yaml",
        &[
            "--only",
            "redis@7.0",
            "--set",
            "repetitions=1",
            "--set",
            "records=1000",
            "--set",
            "duration=2s",
            "--set",
            "warmup=0s",
        ],
    );
    let cell = std::fs::read_dir(real.join("cells"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let results = tmp.path().join("results");
    let t = Instant::now();
    let ids: Vec<String> = (0..365)
        .map(|n| nightly_night(&real, &cell, &results, n))
        .collect();
    let copy_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut args = vec!["history", "--index"];
    args.extend(ids.iter().map(String::as_str));
    let (code, said) = bc(&results, &args);
    assert_eq!(code, 0, "{said}");
    let index_s = t.elapsed().as_secs_f64();

    let bin = std::env::var("BENCHCAGE_SITE_BIN").ok();
    let site = results.join("site");
    let t = Instant::now();
    let out = std::process::Command::new(bin.as_deref().unwrap_or(support::cli::BIN))
        .args(["site", "-o"])
        .arg(&site)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let site_s = t.elapsed().as_secs_f64();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("365 run(s)"), "{said}");
    let bytes: u64 = walk(&site)
        .iter()
        .map(|p| p.metadata().unwrap().len())
        .sum();
    println!(
        "BENCH {}",
        serde_json::json!({
            "runs": ids.len(),
            "cells": ids.len() * 27,
            "said": said.lines().next().unwrap_or(""),
            "binary": bin.as_deref().unwrap_or(support::cli::BIN),
            "copies_s": copy_s,
            "history_index_s": index_s,
            "site_s": site_s,
            "site_bytes": bytes,
            "target_s": 10.0,
        })
    );
    if bin.is_some() {
        assert!(
            site_s < 10.0,
            "the site took {site_s:.1} s for a year of nights"
        );
    }
}
