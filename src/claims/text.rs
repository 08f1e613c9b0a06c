//! What a run prints and writes of its claims: `decide` when the run
//! ends (`claims.json` written, the table printed), `table`, and what
//! `plan` prints of the claims it will check.

use crate::model::claim::{Claim, ClaimsRecord, Outcome, Verdict};
use crate::report::fmt::small as num;
use crate::results::atomic::write_atomic;
use crate::results::layout::{self, RunPaths};
use std::fmt::Write as _;
use std::path::Path;

/// Decide `claims` on the run in `run_dir` and write its `claims.json`;
/// prints the table. Nothing when there are no claims; a failure is a
/// warning, the results stand.
pub(crate) fn decide(run_dir: &Path, claims: &[Claim]) {
    if claims.is_empty() {
        return;
    }
    let written = layout::load_run(run_dir)
        .map_err(anyhow::Error::new)
        .and_then(|run| {
            let record = crate::claims::evaluate(claims, &run);
            let text = serde_json::to_string_pretty(&record)?;
            let paths = RunPaths {
                dir: run_dir.to_path_buf(),
            };
            write_atomic(&paths.claims_json(), text.as_bytes())?;
            Ok(record)
        });
    match written {
        Ok(record) => print!("{}", table(&record)),
        Err(e) => eprintln!("warning: deciding the write-up's claims: {e:#}"),
    }
}

/// `0.63` or `0.63 [0.58, 0.70]`.
fn ratio_text(o: &Outcome) -> String {
    match (o.ratio, o.lo, o.hi) {
        (Some(r), Some(lo), Some(hi)) if lo < hi => {
            format!("{} [{}, {}]", num(r), num(lo), num(hi))
        }
        (Some(r), _, _) => num(r),
        _ => "—".into(),
    }
}

/// The claims as a table, one line each, with the reason under a claim
/// that is not measured.
pub fn table(record: &ClaimsRecord) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "claims of the write-up (a / b, 95% interval):");
    let width = record
        .claims
        .iter()
        .map(|c| c.claim.id.len())
        .max()
        .unwrap_or(0);
    for c in &record.claims {
        let published = c.claim.published.map_or("—".into(), num);
        let _ = writeln!(
            o,
            "  {:<width$}  {:<12}  published {:<6} measured {:<24} {}",
            c.claim.id,
            c.verdict.as_str(),
            published,
            ratio_text(c),
            c.claim.says,
        );
        if c.verdict == Verdict::NotMeasured
            && let Some(r) = &c.reason
        {
            let _ = writeln!(o, "  {:<width$}  ({r})", "");
        }
    }
    let count = |v: Verdict| record.claims.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        o,
        "  {} hold, {} reversed, {} inconclusive, {} not measured",
        count(Verdict::Holds),
        count(Verdict::Reversed),
        count(Verdict::Inconclusive),
        count(Verdict::NotMeasured),
    );
    o
}

/// What `plan` prints of the claims a run will check.
pub(crate) fn describe_plan(o: &mut String, claims: &[Claim]) {
    if claims.is_empty() {
        return;
    }
    let _ = writeln!(o, "claims a run checks:");
    for c in claims {
        let what = match (&c.phase, &c.op) {
            (Some(p), Some(op)) => format!("{} of {op} in {p}", c.metric),
            (Some(p), None) => format!("{} in {p}", c.metric),
            (None, _) => c.metric.to_string(),
        };
        let side = |s: &crate::model::claim::Side| {
            if s.entries.len() == 1 && s.entries[0] == s.name {
                s.name.clone()
            } else {
                format!("{} ({})", s.name, s.entries.join(", "))
            }
        };
        let published = c
            .published
            .map_or(String::new(), |p| format!(", published {}", num(p)));
        let _ = writeln!(o, "  {}: \"{}\"", c.id, c.says);
        let _ = writeln!(
            o,
            "    {what}: a = {}, b = {}; expect {}{published}",
            side(&c.a),
            side(&c.b),
            c.expect
        );
        if let Some(s) = &c.stands_for {
            let _ = writeln!(o, "    here: {s}");
        }
    }
}
