//! Reports, history and regression checks, end to end through the
//! `benchcage` binary, on run folders written with the result model the
//! way `benchcage run` writes them. Needs neither root nor engines (the
//! fast tier); the HTML test drives chromium.

mod support;

use benchcage::model::{CellStatus, RunStatus};
use benchcage::results::history;
use benchcage::results::layout::{RunPaths, load_run};
use benchcage::results::model::{
    CellRecord, FidelityRecord, HostInfo, OpStats, Percentiles, PhaseResult, PhaseStatus,
    ResourceSample, RunRecord, SecondSample,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::cli::{assert_success, bc_home, combined, fixture, repo};
use support::files::{read_json, walk, write_json};

const MIB: u64 = 1 << 20;

/// An engine of a synthetic run.
#[derive(Clone)]
struct Engine {
    name: &'static str,
    version: &'static str,
    /// Peak ops/s of workload-a when everything fits in memory.
    base: f64,
    data_bytes: u64,
}

/// A realistic run folder: engines x threads x memory caps x repetitions,
/// each cell with load, workload-a and workload-c, per-second series and
/// resource samples; optionally one invalid phase and one OOM.
#[derive(Clone)]
struct Synth {
    run_id: String,
    scenario: String,
    started_at: String,
    engines: Vec<Engine>,
    threads: Vec<u32>,
    caps: Vec<u64>,
    reps: u32,
    /// Relative deviation of repetitions: rep 1 +noise, rep 2 -noise, ...
    noise: f64,
    /// Multiplier on workload-a's throughput, per engine name.
    factor: BTreeMap<&'static str, f64>,
    /// Plant an invalid phase and an OOM-killed phase.
    faults: bool,
    /// Run every thread count inside each cell (phases `workload-a` at t1,
    /// t16, ...), as `benchcage run` does for a phase with a thread list.
    sweep_in_cell: bool,
    /// Name each cap's environment the way a settle sweep does
    /// (`small-mem150pct`) instead of one `small` for every cap.
    env_per_cap: bool,
}

/// Throughput of the phase that is invalid: must never show as a result.
const PLANTED_INVALID_OPS: f64 = 98765.4;

fn engines() -> Vec<Engine> {
    vec![
        Engine {
            name: "redis",
            version: "7.0",
            base: 42_000.0,
            data_bytes: 300 * MIB,
        },
        Engine {
            name: "postgres",
            version: "15",
            base: 18_000.0,
            data_bytes: 420 * MIB,
        },
    ]
}

impl Synth {
    /// 2 engines x 3 thread counts x 2 repetitions, one invalid phase, one OOM.
    fn new(run_id: &str, started_at: &str) -> Self {
        Synth {
            run_id: run_id.into(),
            scenario: "nightly".into(),
            started_at: started_at.into(),
            engines: engines(),
            threads: vec![1, 16, 256],
            caps: vec![512 * MIB],
            reps: 2,
            noise: 0.005,
            factor: BTreeMap::new(),
            faults: true,
            sweep_in_cell: false,
            env_per_cap: false,
        }
    }

    fn cells(&self) -> Vec<(Engine, u32, u64, u32)> {
        let mut v = Vec::new();
        let threads = if self.sweep_in_cell {
            vec![0]
        } else {
            self.threads.clone()
        };
        for e in &self.engines {
            for t in &threads {
                for cap in &self.caps {
                    for rep in 1..=self.reps {
                        v.push((e.clone(), *t, *cap, rep));
                    }
                }
            }
        }
        v
    }

    fn key(e: &Engine, t: u32, cap: u64, rep: u32) -> String {
        format!(
            "{}-{}-t{t}-m{}-r{rep}",
            e.name,
            e.version.replace('.', "-"),
            cap / MIB
        )
    }

    /// Which planted fault a cell's workload-c gets.
    fn fault(&self, e: &Engine, t: u32, rep: u32) -> Option<PhaseStatus> {
        if !self.faults {
            return None;
        }
        let last_t = *self.threads.last().unwrap();
        let mid_t = self.threads[self.threads.len() / 2];
        if e.name == self.engines[0].name && t == last_t && rep == 1 {
            return Some(PhaseStatus::Oom {
                reason: "memory.oom_control: oom_kill 1 (the kernel killed the server)".into(),
            });
        }
        if e.name == self.engines[self.engines.len() - 1].name && t == mid_t && rep == self.reps {
            return Some(PhaseStatus::Invalid {
                reason: "declared `expect: io-bound` but the server read 0B from disk".into(),
            });
        }
        None
    }

    fn tput(&self, e: &Engine, t: u32, cap: u64, rep: u32) -> f64 {
        let sat = f64::from(t).powf(0.6) / (1.0 + f64::from(t) / 256.0) / 8.0;
        let ratio = cap as f64 / e.data_bytes as f64;
        let fit = if ratio >= 1.2 {
            1.0
        } else {
            (ratio / 1.2).powf(1.5)
        };
        let sign = if rep % 2 == 1 { 1.0 } else { -1.0 };
        e.base * sat.min(1.5) * fit * (1.0 + sign * self.noise)
    }

    fn stats(tput: f64, threads: u32, secs: f64) -> OpStats {
        let mean = f64::from(threads) / tput.max(1.0) * 1e6;
        OpStats {
            count: (tput * secs).round() as u64,
            errors: 0,
            throughput: tput,
            calls: None,
            latency_us: Percentiles {
                min: Some(mean * 0.2),
                mean: Some(mean),
                p50: Some(mean * 0.9),
                p95: Some(mean * 2.0),
                p99: Some(mean * 4.0),
                p999: Some(mean * 8.0),
                max: Some(mean * 20.0),
            },
            intended_latency_us: None,
            error_samples: vec![],
        }
    }

    fn phase(
        name: &str,
        workload: &str,
        threads: u32,
        tput: f64,
        mix: &[(&str, f64)],
        status: PhaseStatus,
    ) -> PhaseResult {
        let secs = if name == "load" { 5.0 } else { 10.0 };
        let ok_or_invalid = !matches!(status, PhaseStatus::Oom { .. });
        let ops: BTreeMap<String, OpStats> = if ok_or_invalid {
            mix.iter()
                .map(|(op, share)| (op.to_string(), Self::stats(tput * share, threads, secs)))
                .collect()
        } else {
            BTreeMap::new()
        };
        let series = (0..secs as u64)
            .take(if ok_or_invalid { usize::MAX } else { 4 })
            .map(|t| {
                let wobble = 1.0 + 0.04 * ((t as f64) * 1.3).sin();
                SecondSample {
                    t,
                    ops: (tput * wobble).round() as u64,
                    errors: 0,
                    by_kind: BTreeMap::new(),
                }
            })
            .collect();
        let total: u64 = ops.values().map(|o| o.count).sum();
        PhaseResult {
            name: name.into(),
            workload: workload.into(),
            threads,
            duration_s: secs,
            total_ops: total,
            total_errors: 0,
            throughput: if ok_or_invalid { tput } else { 0.0 },
            tool_ops_per_sec: None,
            headline: None,
            mongo_tpcc: None,
            ops,
            series,
            status,
            raw_outputs: vec![],
            tool_env: None,
        }
    }

    /// One sample a second: load, a second of settle, then each measured
    /// phase for its duration, labelled the way the run labels them.
    fn samples(e: &Engine, cap: u64, phases: &[PhaseResult]) -> Vec<ResourceSample> {
        let mut labels: Vec<String> = vec!["load".into(); 5];
        labels.push("settle".into());
        for p in &phases[1..] {
            let secs = match p.status {
                PhaseStatus::Oom { .. } => 4,
                _ => p.duration_s as usize,
            };
            labels.extend(std::iter::repeat_n(
                format!("{} t{}", p.name, p.threads),
                secs,
            ));
        }
        let ratio = cap as f64 / e.data_bytes as f64;
        let mut faults = 0u64;
        let mut read = 0u64;
        labels
            .into_iter()
            .enumerate()
            .map(|(s, phase)| {
                let s = s as u64;
                let fill = (s as f64 / 8.0).min(1.0);
                let memory = ((e.data_bytes as f64 * 1.1).min(cap as f64 * 0.96) * fill) as u64;
                if s >= 6 {
                    let miss = if ratio >= 1.2 { 0.2 } else { 1.0 / ratio };
                    faults += (40.0 * miss * miss) as u64;
                    read += (miss * 3.0 * MIB as f64) as u64;
                } else {
                    read += 2 * MIB;
                }
                ResourceSample {
                    t_ms: s * 1000,
                    cpu_usec: s * 900_000,
                    memory_bytes: memory,
                    memory_limit_bytes: cap,
                    page_cache_bytes: memory * 2 / 5,
                    rss_bytes: memory * 3 / 5,
                    major_faults: faults,
                    io_read_bytes: read,
                    io_write_bytes: s * MIB,
                    cgroup: "server".into(),
                    phase,
                    inactive_file_bytes: memory / 5,
                }
            })
            .collect()
    }

    fn cell(&self, e: &Engine, t: u32, cap: u64, rep: u32) -> (CellRecord, Vec<ResourceSample>) {
        let factor = self
            .factor
            .get(format!("{}@{}", e.name, e.version).as_str())
            .or_else(|| self.factor.get(e.name))
            .copied()
            .unwrap_or(1.0);
        let sweep: Vec<u32> = if self.sweep_in_cell {
            self.threads.clone()
        } else {
            vec![t]
        };
        let load_tput = e.base * 0.6 * (cap as f64 / e.data_bytes as f64).min(1.0);
        let mut phases = vec![Self::phase(
            "load",
            "ycsb:load",
            8,
            load_tput,
            &[("INSERT", 1.0)],
            PhaseStatus::Ok,
        )];
        for &tt in &sweep {
            phases.push(Self::phase(
                "workload-a",
                "ycsb:a",
                tt,
                self.tput(e, tt, cap, rep) * factor,
                &[("READ", 0.5), ("UPDATE", 0.5)],
                PhaseStatus::Ok,
            ));
        }
        let mut fault = None;
        for &tt in &sweep {
            let f = self.fault(e, tt, rep);
            let c_tput = match &f {
                Some(PhaseStatus::Invalid { .. }) => PLANTED_INVALID_OPS,
                _ => self.tput(e, tt, cap, rep) * 1.35,
            };
            phases.push(Self::phase(
                "workload-c",
                "ycsb:c",
                tt,
                c_tput,
                &[("READ", 1.0)],
                f.clone().unwrap_or(PhaseStatus::Ok),
            ));
            if f.is_some() {
                fault = f;
            }
            if matches!(fault, Some(PhaseStatus::Oom { .. })) {
                break;
            }
        }
        let oom = matches!(fault, Some(PhaseStatus::Oom { .. }));
        let key = Self::key(e, t, cap, rep);
        let mut limits = BTreeMap::new();
        limits.insert("memory".to_string(), format!("{}MiB", cap / MIB));
        limits.insert("server_cpus".to_string(), "0".to_string());
        let mut knobs = BTreeMap::new();
        knobs.insert("cache_size".to_string(), format!("{}MiB", cap / MIB / 2));
        let mut read_back = BTreeMap::new();
        read_back.insert("memory.limit_in_bytes".to_string(), cap.to_string());
        read_back.insert("cpuset.cpus".to_string(), "0".to_string());
        let mut cpus = BTreeMap::new();
        cpus.insert("4101".to_string(), "0".to_string());
        cpus.insert("4102".to_string(), "0".to_string());
        let rec = CellRecord {
            key,
            label: if self.sweep_in_cell {
                // The way `benchcage run` labels cells.
                format!("{}@{}/small-{}m/r{rep}", e.name, e.version, cap / MIB)
            } else {
                format!(
                    "{}@{} / {} / {} threads / {}MiB / rep {rep}",
                    e.name,
                    e.version,
                    self.scenario,
                    t,
                    cap / MIB
                )
            },
            engine: e.name.into(),
            version: e.version.into(),
            engine_reported_version: format!("{}.2", e.version),
            environment: if self.env_per_cap {
                format!("small-mem{}pct", cap * 100 / e.data_bytes)
            } else {
                "small".into()
            },
            backend: "cgroup".into(),
            threads: t,
            repetition: rep,
            limits,
            knobs,
            data_size_bytes: Some(e.data_bytes),
            phases,
            fidelity: FidelityRecord {
                limits_read_back: read_back,
                engine_thread_cpus: cpus,
                oom_kills: u64::from(oom),
                ..Default::default()
            },
            status: if oom {
                CellStatus::Failed
            } else {
                CellStatus::Finished
            },
            failure: oom.then(|| "engine OOM-killed during workload-c".to_string()),
            overhead_s: 3.5,
            memory_limit_bytes: Some(cap),
            ..Default::default()
        };
        let samples = Self::samples(e, cap, &rec.phases);
        (rec, samples)
    }

    /// Write the run under `results_root`; returns its folder. Plain writes:
    /// the atomic writer's fsyncs would make the big runs slow to build.
    fn write(&self, results_root: &Path) -> PathBuf {
        let paths = RunPaths::new(results_root, &self.run_id);
        let cells = self.cells();
        let run = RunRecord {
            run_id: self.run_id.clone(),
            scenario: self.scenario.clone(),
            scenario_hash: "9f2c4e1a7b3d5f60".into(),
            spec_hashes: BTreeMap::new(),
            started_at: self.started_at.clone(),
            finished_at: Some(self.started_at.replace("T02:", "T03:")),
            host: HostInfo {
                hostname: "bench-01".into(),
                cpu_model: "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz".into(),
                cores: 2,
                kernel: "6.1.0-27-amd64".into(),
                memory_bytes: 24 << 30,
                cgroup_version: "v1".into(),
                transparent_hugepages: None,
                class: String::new(),
            },
            benchcage_version: "0.1.0".into(),
            git_rev: "4448a7c0d1e2".into(),
            overrides: BTreeMap::new(),
            cells: cells
                .iter()
                .map(|(e, t, c, r)| Self::key(e, *t, *c, *r))
                .collect(),
            status: RunStatus::Finished,
            ..Default::default()
        };
        write_json(&paths.run_json(), &run);
        for (e, t, cap, rep) in &cells {
            let (rec, samples) = self.cell(e, *t, *cap, *rep);
            let cp = paths.cell(&rec.key);
            for (i, p) in rec.phases.iter().enumerate() {
                write_json(&cp.phase_json(i, &p.name, p.threads), p);
            }
            write_json(&cp.samples_json(), &samples);
            write_json(&cp.fidelity_json(), &rec.fidelity);
            write_json(&cp.cell_json(), &rec);
        }
        paths.dir
    }

    /// Rows the run flattens to: one per cell x phase x kind (one for a
    /// phase without kinds).
    fn expected_rows(&self) -> usize {
        self.cells()
            .iter()
            .map(|(e, t, c, r)| {
                self.cell(e, *t, *c, *r)
                    .0
                    .phases
                    .iter()
                    .map(|p| p.ops.len().max(1))
                    .sum::<usize>()
            })
            .sum()
    }
}

fn results(home: &Path) -> PathBuf {
    home.join("results")
}

/// Compare `actual` with tests/snapshots/<name>; `BLESS=1` rewrites it.
fn snapshot(name: &str, actual: &str) {
    let path = repo().join("tests/snapshots").join(name);
    if std::env::var_os("BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing snapshot {}; run with BLESS=1", path.display()));
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from its snapshot at line {}:\n expected: {:?}\n   actual: {:?}\n(run with BLESS=1 to accept)",
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

#[test]
fn markdown_and_csv_reports_match_their_snapshots() {
    let home = tempfile::tempdir().unwrap();
    let s = Synth::new("20261129-020000-base", "2026-11-29T02:00:00Z");
    s.write(&results(home.path()));
    let md = home.path().join("out/report.md");
    let csv = home.path().join("out/report.csv");
    bc_home(home.path())
        .args(["report", &s.run_id, "--format", "md", "-o"])
        .arg(&md)
        .assert()
        .success();
    bc_home(home.path())
        .args(["report", &s.run_id, "--format", "csv", "-o"])
        .arg(&csv)
        .assert()
        .success();
    let md = std::fs::read_to_string(md).unwrap();
    let csv = std::fs::read_to_string(csv).unwrap();
    snapshot("report.md", &md);
    snapshot("report.csv", &csv);

    // The planted faults are listed with their reasons and never as results.
    assert!(md.contains("## Not results"));
    assert!(md.contains("| OOM | memory.oom_control: oom_kill 1"));
    assert!(md.contains("| INVALID | declared `expect: io-bound`"));
    assert!(!md.contains("98,765"), "an invalid phase shows as a result");
    assert_eq!(csv.lines().count(), s.expected_rows() + 1);
}

#[test]
fn json_has_one_row_per_cell_phase_and_operation_kind() {
    let home = tempfile::tempdir().unwrap();
    let s = Synth::new("20261129-020000-json", "2026-11-29T02:00:00Z");
    s.write(&results(home.path()));
    let out = bc_home(home.path())
        .args(["report", &s.run_id, "--format", "json", "-o", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out).unwrap();
    assert_eq!(rows.len(), s.expected_rows());
    let oom: Vec<&serde_json::Value> = rows.iter().filter(|r| r["status"] == "oom").collect();
    assert_eq!(oom.len(), 1, "the OOM phase has no kinds: one row");
    assert_eq!(oom[0]["op"], "-");
    assert!(rows.iter().all(|r| r["run_id"] == s.run_id.as_str()));
}

/// Counts, per chart, the data marks the browser laid out with a size
/// inside their chart, plus the points it parsed from each line.
const COUNT_SCRIPT: &str = r#"<script>
(function () {
  var charts = document.querySelectorAll('svg.chart');
  charts.forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    var n = 0;
    svg.querySelectorAll('.mark').forEach(function (m) {
      var b = m.getBoundingClientRect();
      if (b.width > 0 && b.height > 0 && b.left >= box.left - 1 && b.right <= box.right + 1 &&
          b.top >= box.top - 1 && b.bottom <= box.bottom + 1) { n++; }
    });
    svg.querySelectorAll('polyline.series').forEach(function (p) {
      var b = p.getBBox();
      if (b.width > 0 || b.height > 0) { n += p.points.numberOfItems; }
    });
    svg.setAttribute('data-rendered', String(n));
  });
  document.body.setAttribute('data-charts', String(charts.length));
})();
</script>"#;

#[test]
fn html_report_renders_every_chart_with_data_points_in_chromium() {
    let home = tempfile::tempdir().unwrap();
    let root = results(home.path());
    // Two past runs in the history give the report a trend.
    for (id, at, f) in [
        ("20261127-020000-past", "2026-11-27T02:00:00Z", 0.96),
        ("20261128-020000-past", "2026-11-28T02:00:00Z", 1.02),
    ] {
        let mut past = Synth::new(id, at);
        past.factor.insert("redis", f);
        let dir = past.write(&root);
        history::index_run(&root.join("history.sqlite"), &load_run(&dir).unwrap()).unwrap();
    }
    // This run also sweeps the memory cap so the "doesn't fit" curve has points.
    let s = Synth::new("20261129-020000-html", "2026-11-29T02:00:00Z");
    let mut sweep = s.clone();
    sweep.threads = vec![16];
    sweep.caps = vec![1024 * MIB, 256 * MIB, 128 * MIB];
    sweep.reps = 1;
    sweep.faults = false;
    sweep.run_id = "sweep-tmp".into();
    let dir = s.write(&root);
    let sweep_dir = sweep.write(&root);
    // Merge the sweep's cells into the run.
    let mut run: RunRecord = read_json(&dir.join("run.json"));
    for entry in std::fs::read_dir(sweep_dir.join("cells")).unwrap() {
        let e = entry.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if !run.cells.contains(&name) {
            std::fs::rename(e.path(), dir.join("cells").join(&name)).unwrap();
            run.cells.push(name);
        }
    }
    std::fs::remove_dir_all(&sweep_dir).unwrap();
    write_json(&dir.join("run.json"), &run);

    // Without -o the report lands in the run folder and its path is printed.
    let out = bc_home(home.path())
        .args(["report", &s.run_id])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let printed = String::from_utf8(out).unwrap().trim().to_string();
    let report = dir.join("report.html");
    assert_eq!(
        PathBuf::from(&printed),
        std::path::absolute(&report).unwrap()
    );
    let html = std::fs::read_to_string(&report).unwrap();

    // Self-contained: nothing to fetch, nothing to run.
    for banned in ["<script", "<link", "@import", "src=", "https://"] {
        assert!(!html.contains(banned), "the report contains {banned}");
    }
    assert_eq!(
        html.matches("http://").count(),
        html.matches("http://www.w3.org/2000/svg").count(),
        "only the SVG namespace may look like a URL"
    );
    assert!(
        !html.contains("98,765"),
        "an invalid phase shows as a result"
    );
    assert!(html.contains("OOM"));
    assert!(html.contains("<details"));

    let ids: Vec<String> = html
        .split("data-chart=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect();
    for want in [
        "throughput",
        "threads-workload-a",
        "threads-workload-c",
        "latency-workload-a-read",
        "latency-workload-a-update",
        "latency-workload-c-read",
        "fit-throughput-workload-a",
        "fit-faults-workload-a",
        "data-size",
        "trend-workload-a",
    ] {
        assert!(ids.iter().any(|i| i == want), "no chart {want} in {ids:?}");
    }
    for prefix in ["cell-ops-", "cell-mem-", "cell-disk-"] {
        assert!(
            ids.iter().filter(|i| i.starts_with(prefix)).count() >= 15,
            "too few {prefix} charts"
        );
    }

    let probe = home.path().join("probe.html");
    std::fs::write(
        &probe,
        html.replace("</body>", &format!("{COUNT_SCRIPT}</body>")),
    )
    .unwrap();
    let mut chromium = support::chromium::Chromium::new();
    let dom = chromium.run(&["--dump-dom"], &format!("file://{}", probe.display()));
    assert!(
        dom.contains(&format!("data-charts=\"{}\"", ids.len())),
        "the browser did not run the check over {} charts",
        ids.len()
    );
    for id in &ids {
        let at = dom
            .find(&format!("data-chart=\"{id}\""))
            .unwrap_or_else(|| panic!("chart {id} missing from the DOM"));
        let tag = &dom[at..at + dom[at..].find('>').unwrap()];
        let attr = |name: &str| -> usize {
            let k = format!("{name}=\"");
            let s = &tag[tag.find(&k).unwrap_or_else(|| panic!("{id}: no {name}")) + k.len()..];
            s[..s.find('"').unwrap()].parse().unwrap()
        };
        let (points, rendered) = (attr("data-points"), attr("data-rendered"));
        assert!(points > 0, "chart {id} has no data");
        assert!(
            rendered >= points,
            "chart {id}: {rendered} of {points} data points rendered"
        );
    }

    // The trend has a value for every engine in every run.
    let md = markdown(home.path(), &s.run_id);
    let (trend, rows) = table_rows(&md, "### Trend: workload-a");
    assert_eq!(rows.len(), 3, "two past runs and this one: {trend}");
    assert!(rows.iter().all(|r| !r.contains('—')), "{trend}");

    // Kept beside the screenshot for a look by eye.
    let kept = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report.html");
    std::fs::write(&kept, &html).unwrap();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    chromium.run(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000",
        ],
        &format!("file://{}", report.display()),
    );
    let png = std::fs::read(&shot).expect("chromium saved a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 50_000,
        "empty screenshot"
    );
    let profile = chromium.profile.path().to_path_buf();
    drop(chromium);
    assert!(
        !profile.exists(),
        "the chromium profile folder is left behind"
    );
}

/// `benchcage report RUN --format md` as text.
fn markdown(home: &Path, run: &str) -> String {
    let out = bc_home(home)
        .args(["report", run, "--format", "md", "-o", "-"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// The section of `md` after `heading`, and the data rows of its first
/// table (header and rule left out).
fn table_rows<'a>(md: &'a str, heading: &str) -> (&'a str, Vec<&'a str>) {
    let section = md
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no `{heading}` in the report"));
    let rows = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    (section, rows)
}

/// The lines of a comparison that are regressions.
fn regressions(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.contains("REGRESSION")).collect()
}

fn compare(home: &Path, base: &str, cand: &str, extra: &[&str]) -> (i32, String) {
    let out = bc_home(home)
        .args(["compare", base, cand])
        .args(extra)
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), combined(&out))
}

#[test]
fn compare_exits_1_on_a_planted_ten_percent_regression() {
    let home = tempfile::tempdir().unwrap();
    let base = Synth::new("20261129-020000-base", "2026-11-29T02:00:00Z");
    let mut cand = Synth::new("20261130-020000-cand", "2026-11-30T02:00:00Z");
    cand.factor.insert("postgres", 0.90);
    base.write(&results(home.path()));
    cand.write(&results(home.path()));

    let (code, out) = compare(
        home.path(),
        &base.run_id,
        &cand.run_id,
        &["--threshold", "5%"],
    );
    assert_eq!(code, 1, "{out}");
    let regressed = regressions(&out);
    // postgres workload-a: 3 thread counts x READ and UPDATE.
    assert_eq!(regressed.len(), 6, "{out}");
    assert!(
        regressed
            .iter()
            .all(|l| l.contains("postgres@15") && l.contains("workload-a") && l.contains("-10.0%"))
    );
    // The OOM and the invalid phase are in both runs: not new failures.
    assert!(!out.contains("FAILED"), "{out}");

    // Both runs side by side in one report, told apart in every series.
    let out = bc_home(home.path())
        .args([
            "report",
            &base.run_id,
            &cand.run_id,
            "--format",
            "html",
            "-o",
        ])
        .arg(home.path().join("both.html"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let both = std::fs::read_to_string(home.path().join("both.html")).unwrap();
    assert!(both.contains(&format!("postgres@15 · {}", base.run_id)));
    assert!(both.contains(&format!("postgres@15 · {}", cand.run_id)));

    // The same run against itself is clean.
    let (code, out) = compare(home.path(), &base.run_id, &base.run_id, &[]);
    assert_eq!(code, 0, "{out}");
    // Latency rose with the drop: p99 regresses too.
    let (code, out) = compare(
        home.path(),
        &base.run_id,
        &cand.run_id,
        &["--metric", "p99"],
    );
    assert_eq!(code, 1, "{out}");
}

/// A version matrix: postgres 12, 13 and 14 and redis 6.2 and 7.0 on the
/// same setup, no planted faults.
fn version_matrix(run_id: &str) -> Synth {
    let mut s = Synth::new(run_id, "2026-11-30T02:00:00Z");
    s.faults = false;
    s.engines = ["12", "13", "14"]
        .into_iter()
        .map(|version| Engine {
            name: "postgres",
            version,
            base: 18_000.0,
            data_bytes: 420 * MIB,
        })
        .chain(["6.2", "7.0"].into_iter().map(|version| Engine {
            name: "redis",
            version,
            base: 42_000.0,
            data_bytes: 300 * MIB,
        }))
        .collect();
    s
}

#[test]
fn compare_by_version_takes_each_version_against_the_one_before_and_exits_1_on_a_regression() {
    let home = tempfile::tempdir().unwrap();
    let steady = version_matrix("20261130-020000-vers");
    let mut slower = version_matrix("20261130-030000-ver2");
    slower.factor.insert("postgres@14", 0.85);
    steady.write(&results(home.path()));
    slower.write(&results(home.path()));
    let by_version = |run: &str| {
        let out = bc_home(home.path())
            .args(["compare", "--by-version", run, "--threshold", "5%"])
            .output()
            .unwrap();
        (out.status.code().unwrap_or(-1), combined(&out))
    };

    let (code, out) = by_version(&steady.run_id);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("postgres 12 -> 13, postgres 13 -> 14, redis 6.2 -> 7.0"),
        "{out}"
    );
    assert!(!out.contains("REGRESSION"), "{out}");

    let (code, out) = by_version(&slower.run_id);
    assert_eq!(code, 1, "{out}");
    let regressed = regressions(&out);
    // workload-a: 3 thread counts x READ and UPDATE, only from 13 to 14.
    assert_eq!(regressed.len(), 6, "{out}");
    assert!(
        regressed
            .iter()
            .all(|l| l.contains("postgres 13 -> 14") && l.contains("-15.0%")),
        "{out}"
    );

    // The report of that run shows each engine over its versions, with
    // the step compare calls a regression marked on the version it reached.
    let md = bc_home(home.path())
        .args(["report", &slower.run_id, "--format", "md", "-o", "-"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    assert!(md.contains("## Versions"), "{md}");
    assert!(md.contains("postgres over its versions"), "{md}");
    assert!(md.contains("REGRESSION vs 13"), "{md}");
    assert!(!md.contains("REGRESSION vs 12"), "{md}");

    // A run whose phases are all invalid gives the guard nothing to see:
    // that is not a pass.
    let mut blind = version_matrix("20261130-050000-ver3");
    blind.faults = false;
    blind.write(&results(home.path()));
    for cell in std::fs::read_dir(results(home.path()).join(&blind.run_id).join("cells")).unwrap() {
        let path = cell.unwrap().path().join("cell.json");
        let mut rec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for phase in rec["phases"].as_array_mut().unwrap() {
            phase["status"] = "invalid".into();
            phase["reason"] = "a CPU hog shared the server's CPU".into();
        }
        std::fs::write(&path, rec.to_string()).unwrap();
    }
    let (code, out) = by_version(&blind.run_id);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("0 compared") && out.contains("nothing was compared"),
        "{out}"
    );

    // One run, one version per engine: nothing to compare is bad input.
    let single = Synth::new("20261130-040000-one1", "2026-11-30T04:00:00Z");
    single.write(&results(home.path()));
    let (code, out) = by_version(&single.run_id);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no engine at two or more versions"), "{out}");
    // --by-version takes one run; without it, compare takes two.
    let out = bc_home(home.path())
        .args(["compare", "--by-version", &steady.run_id, &slower.run_id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", combined(&out));
    assert!(combined(&out).contains("give one run"));
    let out = bc_home(home.path())
        .args(["compare", &steady.run_id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", combined(&out));
    assert!(
        combined(&out).contains("--by-version"),
        "{}",
        combined(&out)
    );
}

#[test]
fn a_thread_sweep_inside_each_cell_is_charted_and_compared_per_thread_count() {
    let home = tempfile::tempdir().unwrap();
    let mut base = Synth::new("20261129-020000-swp1", "2026-11-29T02:00:00Z");
    base.sweep_in_cell = true;
    let mut cand = base.clone();
    cand.run_id = "20261130-020000-swp2".into();
    cand.started_at = "2026-11-30T02:00:00Z".into();
    cand.factor.insert("postgres", 0.90);
    base.write(&results(home.path()));
    cand.write(&results(home.path()));

    let md = markdown(home.path(), &base.run_id);
    let (sweep, rows) = table_rows(&md, "### Throughput vs threads: workload-a");
    assert_eq!(rows.len(), 3, "{sweep}");
    assert!(rows.iter().all(|r| !r.contains('—')), "{sweep}");
    // Repetitions r1 and r2 of a cell are one configuration.
    assert!(md.contains("| redis@7.0/small-512m |"), "{md}");
    assert!(!md.contains("98,765"), "an invalid phase shows as a result");

    let (code, out) = compare(home.path(), &base.run_id, &cand.run_id, &[]);
    assert_eq!(code, 1, "{out}");
    let regressed = regressions(&out);
    assert_eq!(regressed.len(), 6, "{out}");
    for t in ["workload-a t1 ", "workload-a t16 ", "workload-a t256 "] {
        assert_eq!(
            regressed.iter().filter(|l| l.contains(t)).count(),
            2,
            "{t}: {out}"
        );
    }
}

#[test]
fn the_cells_of_a_settle_sweep_are_one_line_in_the_doesnt_fit_in_ram_charts() {
    let home = tempfile::tempdir().unwrap();
    let mut s = Synth::new("20261129-020000-mem1", "2026-11-29T02:00:00Z");
    s.engines.truncate(1);
    s.threads = vec![4];
    s.reps = 1;
    s.faults = false;
    s.caps = vec![600 * MIB, 300 * MIB, 150 * MIB, 75 * MIB];
    s.env_per_cap = true;
    s.write(&results(home.path()));
    let out = bc_home(home.path())
        .args(["report", &s.run_id, "--format", "md", "-o", "-"])
        .output()
        .unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    let table = md
        .split("### Throughput as the data stops fitting in RAM: workload-a")
        .nth(1)
        .unwrap_or_else(|| panic!("no memory sweep table in\n{md}"));
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    assert_eq!(rows.len(), 4, "{table}");
    assert!(rows.iter().all(|r| r.contains("| redis@7.0 |")), "{table}");
}

#[test]
fn compare_calls_a_drop_inside_the_repetitions_spread_inconclusive_and_exits_0() {
    let home = tempfile::tempdir().unwrap();
    // Repetitions 8% apart either way: the 95% interval of a 12% drop
    // reaches across the 5% threshold.
    let mut base = Synth::new("20261129-020000-noisy", "2026-11-29T02:00:00Z");
    base.noise = 0.08;
    let mut cand = Synth::new("20261130-020000-cand", "2026-11-30T02:00:00Z");
    cand.noise = 0.08;
    cand.factor.insert("postgres", 0.88);
    base.write(&results(home.path()));
    cand.write(&results(home.path()));
    let (code, out) = compare(
        home.path(),
        &base.run_id,
        &cand.run_id,
        &["--threshold", "5%"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("REGRESSION") && !out.contains('±'), "{out}");
    let dropped: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("postgres@15") && l.contains("workload-a"))
        .collect();
    assert_eq!(dropped.len(), 6, "{out}");
    for l in dropped {
        assert!(
            l.contains("-12.0%")
                && l.contains("  [-")
                && l.ends_with("]  inconclusive (more repetitions would settle it)"),
            "{l}"
        );
    }

    // The same 12% drop between quiet repetitions is a regression: its
    // whole interval is beyond 5%.
    let quiet = Synth::new("20261128-020000-quiet", "2026-11-28T02:00:00Z");
    quiet.write(&results(home.path()));
    let mut quiet_drop = Synth::new("20261130-030000-qcand", "2026-11-30T03:00:00Z");
    quiet_drop.factor.insert("postgres", 0.88);
    quiet_drop.write(&results(home.path()));
    let (code, out) = compare(
        home.path(),
        &quiet.run_id,
        &quiet_drop.run_id,
        &["--threshold", "5%"],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(regressions(&out).len(), 6, "{out}");
}

#[test]
fn compare_against_the_best_of_the_last_runs_in_the_history() {
    let home = tempfile::tempdir().unwrap();
    let root = results(home.path());
    for (id, at, f) in [
        ("20261126-020000-h1", "2026-11-26T02:00:00Z", 0.97),
        ("20261127-020000-h2", "2026-11-27T02:00:00Z", 1.00),
        ("20261128-020000-h3", "2026-11-28T02:00:00Z", 0.98),
    ] {
        let mut s = Synth::new(id, at);
        s.factor.insert("redis", f);
        s.write(&root);
        bc_home(home.path())
            .args(["history", "--index", id])
            .assert()
            .success();
    }
    let mut good = Synth::new("20261129-020000-good", "2026-11-29T02:00:00Z");
    good.factor.insert("redis", 0.99);
    good.write(&root);
    let (code, out) = compare(home.path(), "best-of-last:3", &good.run_id, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("best of the last 3 finished runs"), "{out}");

    let mut bad = Synth::new("20261129-030000-bad", "2026-11-29T03:00:00Z");
    bad.factor.insert("redis", 0.85);
    bad.write(&root);
    let (code, out) = compare(home.path(), "best-of-last:3", &bad.run_id, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("redis@7.0") && l.contains("REGRESSION"))
    );
}

#[test]
fn bad_input_exits_2_with_a_hint_and_creates_nothing() {
    let home = tempfile::tempdir().unwrap();
    let s = Synth::new("20261129-020000-base", "2026-11-29T02:00:00Z");
    s.write(&results(home.path()));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["compare", "nope", &s.run_id], "no run `nope`"),
        (vec!["compare", &s.run_id, "nope"], "no run `nope`"),
        (
            vec!["compare", &s.run_id, &s.run_id, "--threshold", "abc"],
            "is not a percentage",
        ),
        (
            vec!["compare", &s.run_id, &s.run_id, "--threshold=-5%"],
            "is not a percentage",
        ),
        (
            vec!["compare", &s.run_id, &s.run_id, "--metric", "speed"],
            "unknown metric",
        ),
        (vec!["compare", "best-of-last:0", &s.run_id], "1 or more"),
        (vec!["compare", "best-of-last:x", &s.run_id], "1 or more"),
        (
            vec!["compare", "best-of-last:3", &s.run_id],
            "holds no finished run",
        ),
        (vec!["report", "nope"], "no run `nope`"),
        (
            vec!["report", &s.run_id, "--format", "pdf"],
            "unknown report format",
        ),
        (vec!["history", "--since", "last week"], "YYYY-MM-DD"),
        (vec!["history", "--index", "nope"], "no run `nope`"),
    ];
    for (args, hint) in cases {
        let out = bc_home(home.path()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: {err}");
    }
    let left: Vec<String> = std::fs::read_dir(results(home.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![s.run_id.clone()], "bad input created files");
    let reports = std::fs::read_dir(results(home.path()).join(&s.run_id))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("report")
        })
        .count();
    assert_eq!(reports, 0, "bad input wrote a report");
}

#[test]
fn history_report_and_compare_read_the_results_folder_a_run_wrote_to() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let a = Synth::new("20261120-020000-aaaa", "2026-11-20T02:00:00Z");
    let b = Synth::new("20261129-020000-bbbb", "2026-11-29T02:00:00Z");
    for s in [&a, &b] {
        s.write(elsewhere.path());
    }
    let dir = elsewhere.path().to_str().unwrap();
    bc_home(home.path())
        .args(["history", "--results", dir, "--index", &a.run_id, &b.run_id])
        .assert()
        .success();
    assert!(elsewhere.path().join("history.sqlite").is_file());
    assert!(!results(home.path()).join("history.sqlite").exists());
    let out = bc_home(home.path())
        .env("BENCHCAGE_RESULTS", dir)
        .args(["history", "--ids"])
        .output()
        .unwrap();
    let ids = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        ids.lines().collect::<Vec<_>>(),
        [b.run_id.as_str(), a.run_id.as_str()]
    );
    // A run id names a run in that folder for report and compare too.
    bc_home(home.path())
        .args([
            "report",
            &b.run_id,
            "--results",
            dir,
            "--format",
            "md",
            "-o",
            "-",
        ])
        .assert()
        .success();
    let cmp = bc_home(home.path())
        .args(["compare", "best-of-last:1", &b.run_id, "--results", dir])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        text.contains(&a.run_id),
        "{text}{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
}

#[test]
fn history_lists_runs_by_engine_scenario_and_date_and_reindexing_replaces_a_run() {
    let home = tempfile::tempdir().unwrap();
    let root = results(home.path());
    let db = root.join("history.sqlite");
    let a = Synth::new("20261120-020000-aaaa", "2026-11-20T02:00:00Z");
    let mut b = Synth::new("20261129-020000-bbbb", "2026-11-29T02:00:00Z");
    b.engines.truncate(1);
    b.scenario = "other".into();
    for s in [&a, &b] {
        s.write(&root);
    }
    bc_home(home.path())
        .args(["history", "--index", &a.run_id, &b.run_id])
        .assert()
        .success();
    let ids = |args: &[&str]| -> Vec<String> {
        let out = bc_home(home.path())
            .arg("history")
            .arg("--ids")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect()
    };
    assert_eq!(ids(&[]), vec![b.run_id.clone(), a.run_id.clone()]);
    assert_eq!(ids(&["--engine", "postgres"]), vec![a.run_id.clone()]);
    assert_eq!(ids(&["--engine", "redis@7.0"]).len(), 2);
    assert_eq!(ids(&["--scenario", "other"]), vec![b.run_id.clone()]);
    assert_eq!(ids(&["--since", "2026-11-25"]), vec![b.run_id.clone()]);

    let listing = bc_home(home.path()).arg("history").output().unwrap();
    let text = String::from_utf8_lossy(&listing.stdout);
    assert!(text.contains("redis@7.0, postgres@15") || text.contains("postgres@15, redis@7.0"));

    // Index a twice, once after a cell's data changed: rows are replaced.
    let dir = root.join(&a.run_id);
    let mut run = load_run(&dir).unwrap();
    history::index_run(&db, &run).unwrap();
    run.cells.truncate(3);
    history::index_run(&db, &run).unwrap();
    let check = history::check(&db).unwrap();
    assert!(check.is_sound(), "{check:?}");
    let (_, want, have) = check.runs.iter().find(|r| r.0 == a.run_id).unwrap();
    // Three cells of load (1 kind), workload-a (2) and workload-c (1).
    assert_eq!((*want, *have), (12, 12), "{check:?}");
}

#[test]
fn history_survives_a_writer_killed_mid_run() {
    let home = tempfile::tempdir().unwrap();
    let root = results(home.path());
    let db = root.join("history.sqlite");
    let mut ids = Vec::new();
    let mut expected = BTreeMap::new();
    for i in 0..4 {
        // Big runs: each index is a transaction of a couple of thousand rows.
        let mut s = Synth::new(
            &format!("20261120-02000{i}-kill"),
            &format!("2026-11-20T02:00:0{i}Z"),
        );
        s.threads = vec![1, 2, 4, 8, 16, 32, 64, 128];
        s.caps = vec![128 * MIB, 256 * MIB, 512 * MIB, 1024 * MIB];
        s.reps = 3;
        s.write(&root);
        expected.insert(s.run_id.clone(), s.expected_rows() as u64);
        ids.push(s.run_id.clone());
    }
    for (round, delay_ms) in [450u64, 700, 1100, 1500].into_iter().enumerate() {
        let mut child = std::process::Command::new(fixture("history_writer"))
            .arg(home.path())
            .args(ids.iter().map(|id| root.join(id)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the writer has committed its first run (on a loaded host
        // that can take longer than any fixed delay), then let it write a while.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60)
            && !(db.exists() && history::check(&db).is_ok_and(|c| !c.runs.is_empty()))
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let check = history::check(&db).unwrap();
        assert_eq!(check.journal_mode, "wal", "round {round}");
        assert_eq!(check.integrity, vec!["ok".to_string()], "round {round}");
        assert!(check.orphans.is_empty(), "round {round}: {check:?}");
        assert!(!check.runs.is_empty(), "round {round}: nothing indexed yet");
        for (id, want, have) in &check.runs {
            assert_eq!(
                want, &expected[id],
                "round {round}: {id} row count recorded"
            );
            assert_eq!(have, &expected[id], "round {round}: {id} is not whole");
        }
    }
    // And the history still serves its readers.
    bc_home(home.path()).arg("history").assert().success();
}

#[test]
fn compare_on_a_damaged_run_or_history_is_bad_input_and_never_a_regression() {
    let home = tempfile::tempdir().unwrap();
    let root = results(home.path());
    let base = Synth::new("20261129-020000-base", "2026-11-29T02:00:00Z");
    let cand = Synth::new("20261130-020000-cand", "2026-11-30T02:00:00Z");
    base.write(&root);
    let cand_dir = cand.write(&root);
    let (code, out) = compare(home.path(), &base.run_id, &cand.run_id, &[]);
    assert_eq!(code, 0, "{out}");

    // A torn run.json (as after a power cut): exit 2 naming the file.
    let run_json = cand_dir.join("run.json");
    let whole = std::fs::read(&run_json).unwrap();
    std::fs::write(&run_json, &whole[..whole.len() / 2]).unwrap();
    let (code, out) = compare(home.path(), &base.run_id, &cand.run_id, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(&run_json.display().to_string()), "{out}");
    assert!(!out.contains("REGRESSION"), "{out}");
    std::fs::write(&run_json, &whole).unwrap();

    // A cell.json that is not JSON at all.
    let cell = std::fs::read_dir(cand_dir.join("cells"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("cell.json");
    let whole_cell = std::fs::read(&cell).unwrap();
    std::fs::write(&cell, b"\x00\x01garbage").unwrap();
    let (code, out) = compare(home.path(), &base.run_id, &cand.run_id, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("cell.json"), "{out}");
    std::fs::write(&cell, &whole_cell).unwrap();

    // A history file that is not a database.
    let db = root.join("history.sqlite");
    std::fs::write(&db, vec![0x5a; 8192]).unwrap();
    let (code, out) = compare(home.path(), "best-of-last:3", &cand.run_id, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&db.display().to_string()) && out.contains("damaged"),
        "{out}"
    );
}

#[test]
fn latencies_a_tool_did_not_print_are_absent_and_never_charted() {
    let home = tempfile::tempdir().unwrap();
    let s = Synth::new("20261129-020000-tool", "2026-11-29T02:00:00Z");
    let dir = s.write(&results(home.path()));
    // As a YCSB that printed no median and no p99.9: remove both from
    // every operation of every phase, and keep YCSB's own rate.
    for e in std::fs::read_dir(dir.join("cells")).unwrap() {
        let path = e.unwrap().path().join("cell.json");
        let mut rec: CellRecord = read_json(&path);
        for p in &mut rec.phases {
            p.tool_ops_per_sec = Some(p.throughput * 1.01);
            for op in p.ops.values_mut() {
                op.latency_us.p50 = None;
                op.latency_us.p999 = None;
            }
        }
        let text = serde_json::to_string(&rec).unwrap();
        assert!(!text.contains("\"p50\"") && !text.contains("\"p999\""));
        std::fs::write(&path, text).unwrap();
    }
    let report = |format: &str| report_text(home.path(), &s.run_id, format);
    let html = report("html");
    assert!(html.contains(" p99: "), "the known percentiles are charted");
    assert!(
        !html.contains(" p50: ") && !html.contains(" p99.9: "),
        "a percentile nobody measured is charted"
    );
    let md = report("md");
    let latency_rows: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.contains("Latency: workload-a"))
        .skip(1)
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.starts_with("| "))
        .skip(2)
        .collect();
    assert!(!latency_rows.is_empty(), "{md}");
    for row in latency_rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // Engine, Threads, then p50 (unknown), p95, p99, p99.9 (unknown), max.
        assert_eq!((cells[3], cells[6]), ("—", "—"), "{row}");
        assert_ne!(cells[4], "—", "{row}");
    }
    let csv = report("csv");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let row = csv
        .lines()
        .find(|l| l.contains(",workload-a,") && l.contains(",READ,"))
        .unwrap();
    let v: Vec<&str> = row.split(',').collect();
    assert_eq!((v[col("lat_p50_us")], v[col("lat_p999_us")]), ("", ""));
    assert!(v[col("lat_p99_us")].parse::<f64>().unwrap() > 0.0);
    assert!(v[col("tool_phase_throughput")].parse::<f64>().unwrap() > 0.0);
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let rows = json.as_array().or_else(|| json["rows"].as_array()).unwrap();
    let read = rows.iter().find(|r| r["op"] == "READ").unwrap();
    assert!(
        read["lat_p50_us"].is_null() && read["lat_p99_us"].is_number(),
        "{read}"
    );

    // The history keeps them unknown.
    bc_home(home.path())
        .args(["history", "--index", &s.run_id])
        .assert()
        .success();
    let rows = history::rows_of_runs(
        &home.path().join("results/history.sqlite"),
        std::slice::from_ref(&s.run_id),
    )
    .unwrap();
    assert!(
        rows.iter()
            .filter(|r| r.op == "READ")
            .all(|r| r.lat_p50_us.is_none())
    );
    assert!(rows.iter().any(|r| r.tool_phase_throughput.is_some()));
}

/// Copy a run folder kept under tests/fixtures into `results_root`;
/// returns its run id.
fn install_fixture(name: &str, results_root: &Path) -> String {
    let src = repo().join("tests/fixtures").join(name);
    let run: RunRecord = read_json(&src.join("run.json"));
    let dest = results_root.join(&run.run_id);
    for entry in walk(&src) {
        let to = dest.join(entry.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    run.run_id
}

/// `benchcage report RUN --format FORMAT -o -`.
fn report_text(home: &Path, run_id: &str, format: &str) -> String {
    let out = bc_home(home)
        .args(["report", run_id, "--format", format, "-o", "-"])
        .output()
        .unwrap();
    assert_success(&out);
    String::from_utf8(out.stdout).unwrap()
}

/// The names in an SVG chart's legend, in the order drawn.
fn legend_of(html: &str, chart: &str) -> Vec<String> {
    let at = html
        .find(&format!("data-chart=\"{chart}\""))
        .unwrap_or_else(|| panic!("no chart {chart}"));
    let svg = &html[at..at + html[at..].find("</svg>").unwrap()];
    let legend = &svg[svg.find("<g class=\"legend\">").unwrap()..];
    let legend = &legend[..legend.find("</g>").unwrap()];
    legend
        .split("class=\"lg\">")
        .skip(1)
        .map(|s| s[..s.find('<').unwrap()].to_string())
        .collect()
}

/// The real run of scenarios/doesnt-fit-in-ram.yaml kept as a fixture
/// (MyRocks with mmap reads; loaded under 1 GiB, then settled to 200, 100,
/// 50 and 25% of the data): every row carries the cap of its own phase,
/// costs are per operation, and everything comes in numeric order.
#[test]
fn the_shipped_sweep_reports_each_phase_at_its_own_cap_with_costs_per_operation() {
    let home = tempfile::tempdir().unwrap();
    let run_id = install_fixture("doesnt-fit-in-ram", &results(home.path()));
    let run = load_run(&results(home.path()).join(&run_id)).unwrap();
    assert_eq!(run.cells.len(), 4);

    let json = report_text(home.path(), &run_id, "json");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let csv = report_text(home.path(), &run_id, "csv");
    let md = report_text(home.path(), &run_id, "md");
    snapshot("doesnt-fit-in-ram.json", &json);
    snapshot("doesnt-fit-in-ram.csv", &csv);
    snapshot("doesnt-fit-in-ram.md", &md);

    let cell = |key: &str| {
        run.cells
            .iter()
            .find(|c| c.record.key == key)
            .map(|c| &c.record)
            .unwrap()
    };
    let mut settle_caps = Vec::new();
    for r in &rows {
        let rec = cell(r["cell_key"].as_str().unwrap());
        let stem = format!(
            "{:02}-{}-t{}",
            r["phase_index"].as_u64().unwrap() + 1,
            r["phase"].as_str().unwrap(),
            r["threads"]
        );
        let io = &rec.fidelity.phase_io[&stem];
        // The cap the kernel reported during the phase, whatever the cell's.
        assert_eq!(r["memory_limit_bytes"], io.memory_limit_bytes, "{stem}");
        match r["phase"].as_str().unwrap() {
            "load" => assert_eq!(io.memory_limit_bytes, 1 << 30, "the load ran under 1 GiB"),
            "point-reads" => {
                assert_eq!(Some(io.memory_limit_bytes), rec.memory_limit_bytes);
                settle_caps.push(io.memory_limit_bytes);
            }
            other => panic!("unexpected phase {other}"),
        }
        // The inputs of the derived costs are in the row.
        let ops = r["phase_ops"].as_f64().unwrap();
        let faults = r["major_faults"].as_f64().unwrap();
        let read = r["read_bytes"].as_f64().unwrap();
        let secs = r["duration_s"].as_f64().unwrap();
        assert_eq!(faults, io.major_faults as f64);
        assert_eq!(read, io.io_read_bytes as f64);
        let close =
            |a: &serde_json::Value, b: f64| (a.as_f64().unwrap() - b).abs() <= 1e-9 * b.max(1.0);
        assert!(close(&r["major_faults_per_op"], faults / ops), "{r}");
        assert!(close(&r["read_bytes_per_op"], read / ops), "{r}");
        assert!(close(&r["major_faults_per_s"], faults / secs), "{r}");
        assert!(close(&r["read_bytes_per_s"], read / secs), "{r}");
    }
    // Rows come by cap, smallest first: numeric order, not text order.
    assert_eq!(settle_caps.len(), 4);
    assert!(
        settle_caps.windows(2).all(|w| w[0] < w[1]),
        "{settle_caps:?}"
    );
    let envs: Vec<&str> = rows
        .iter()
        .filter(|r| r["phase"] == "point-reads")
        .map(|r| r["environment"].as_str().unwrap())
        .collect();
    assert_eq!(
        envs,
        [
            "ram-sweep-mem25pct",
            "ram-sweep-mem50pct",
            "ram-sweep-mem100pct",
            "ram-sweep-mem200pct"
        ]
    );
    let csv_envs: Vec<&str> = csv
        .lines()
        .skip(1)
        .filter(|l| l.contains(",point-reads,"))
        .map(|l| l.split(',').nth(8).unwrap())
        .collect();
    assert_eq!(csv_envs, envs);

    // Major faults per operation rise as the cap falls, at every step.
    let per_op: Vec<f64> = rows
        .iter()
        .filter(|r| r["phase"] == "point-reads")
        .map(|r| r["major_faults_per_op"].as_f64().unwrap())
        .collect();
    assert!(
        per_op.windows(2).all(|w| w[0] > w[1]),
        "faults per op by cap, smallest first: {per_op:?}"
    );

    // The load ran at one cap in every cell: one row, not a sweep chart.
    let html = report_text(home.path(), &run_id, "html");
    assert!(html.contains("data-chart=\"fit-faults-point-reads\""));
    assert!(html.contains("data-chart=\"fit-reads-point-reads\""));
    assert!(
        !html.contains("data-chart=\"fit-throughput-load\""),
        "a fake sweep of the load"
    );
    let one_cap = md
        .split("### Phases that ran at one cap")
        .nth(1)
        .expect("a table of the phases at one cap");
    let one_cap_rows: Vec<&str> = one_cap
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    assert_eq!(one_cap_rows.len(), 1, "{one_cap}");
    assert!(
        one_cap_rows[0].starts_with("| load | myrocks@10.11 | 4 | 1 GiB |"),
        "{one_cap}"
    );
    assert!(
        one_cap_rows[0].ends_with("| 4 |"),
        "the mean of 4 cells: {one_cap}"
    );
    // Derived numbers say what they are.
    for basis in [
        "major faults per operation",
        "device bytes read per operation",
        "(ratio, log₂)",
        "mean of the cells",
    ] {
        assert!(html.contains(basis), "no axis says {basis}");
    }

    // Legends in numeric order.
    let legend = legend_of(&html, "throughput");
    assert_eq!(
        legend,
        [
            "myrocks@10.11 · ram-sweep-mem25pct",
            "myrocks@10.11 · ram-sweep-mem50pct",
            "myrocks@10.11 · ram-sweep-mem100pct",
            "myrocks@10.11 · ram-sweep-mem200pct"
        ]
    );
    let cells_in_html: Vec<usize> = envs
        .iter()
        .map(|e| html.find(&format!("myrocks@10.11/{e}/r0</h3>")).unwrap())
        .collect();
    assert!(
        cells_in_html.windows(2).all(|w| w[0] < w[1]),
        "cells out of order"
    );
}
