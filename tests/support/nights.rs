//! A history of nights made from copies of one real run (`changes.rs`,
//! `site.rs`), each a `support::copies` copy with its figures scaled.

use super::cli::BIN;
use super::copies::copy_run;
use std::path::Path;
use std::process::Command;

/// Copy `real` as night `n` (1-based) of November with its figures times
/// `f`, into `results`; returns its run id.
pub fn night(real: &Path, results: &Path, n: u32, f: f64) -> String {
    let id = format!("202611{n:02}-020000-{n:04x}");
    copy_run(
        real,
        results,
        &id,
        (
            &format!("2026-11-{n:02}T02:00:00+00:00"),
            &format!("2026-11-{n:02}T02:01:00+00:00"),
        ),
        f,
    );
    id
}

/// `benchcage ARGS --results RESULTS`: exit code and stdout with stderr.
pub fn bc(results: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .arg("--results")
        .arg(results)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code().unwrap_or(-1), format!("{text}{err}"))
}

/// `count` nights with the factors `f(night)`, indexed into a history.
pub fn history(real: &Path, results: &Path, count: u32, f: impl Fn(u32) -> f64) -> Vec<String> {
    let ids: Vec<String> = (1..=count).map(|n| night(real, results, n, f(n))).collect();
    let mut args = vec!["history", "--index"];
    args.extend(ids.iter().map(String::as_str));
    let (code, text) = bc(results, &args);
    assert_eq!(code, 0, "{text}");
    ids
}

/// ±1% of noise, the same for every run of a test.
pub fn noise(n: u32) -> f64 {
    1.0 + 0.01 * ((n as f64 * 2.39996).sin())
}
