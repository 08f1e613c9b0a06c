//! A run's cells turned into each claim's observations and outcome: which
//! cells play each side, which of their phases count (only ok ones), the
//! figure and per-second series of each, then `stats` for the ratio, its
//! interval and the verdict.

use super::stats;
use crate::model::claim::{Claim, ClaimsRecord, Metric, Outcome, Side, Verdict};
use crate::results::flat::{Verdict as PhaseVerdict, phase_verdict};
use crate::results::layout::{CellData, RunData};
use crate::results::model::{CellRecord, PhaseResult};
use crate::stats::{Blocks, MIN_SERIES, Obs, RatioInterval};
use std::collections::BTreeSet;

/// The name of the load phase in results.
const LOAD_PHASE: &str = "load";

/// Decide every claim on the run's cells.
pub fn evaluate(claims: &[Claim], run: &RunData) -> ClaimsRecord {
    ClaimsRecord {
        claims: claims.iter().map(|c| outcome(c, &run.cells)).collect(),
    }
}

/// The matrix entry a cell belongs to: its label up to the first `/`
/// (`redis@7.0/quickstart/r0` -> `redis@7.0`).
fn entry_of(cell: &CellRecord) -> &str {
    cell.label.split('/').next().unwrap_or(&cell.label)
}

/// Whether a cell ran in `env`: the environment itself, or one cap of a
/// settle sweep over it (`<env>-<cap>`).
fn in_environment(cell: &CellRecord, env: &str) -> bool {
    cell.environment == env
        || cell
            .environment
            .strip_prefix(env)
            .is_some_and(|r| r.starts_with('-'))
}

/// The cells that play `side`, in the claim's environment when it names one.
fn cells_of<'r>(side: &Side, claim: &Claim, cells: &'r [CellData]) -> Vec<&'r CellRecord> {
    cells
        .iter()
        .map(|c| &c.record)
        .filter(|c| side.entries.iter().any(|e| e == entry_of(c)))
        .filter(|c| {
            claim
                .environment
                .as_deref()
                .is_none_or(|e| in_environment(c, e))
        })
        .collect()
}

/// One side's observations, or why there are none; each rejected
/// repetition's reason is kept.
struct SideObs {
    obs: Vec<Obs>,
    cells: Vec<String>,
    skipped: Vec<String>,
}

fn observe(claim: &Claim, side: &Side, cells: &[&CellRecord]) -> SideObs {
    let mut out = SideObs {
        obs: Vec::new(),
        cells: Vec::new(),
        skipped: Vec::new(),
    };
    for cell in cells {
        match observe_cell(claim, cell) {
            Ok(o) => {
                out.obs.push(o);
                out.cells.push(cell.key.clone());
            }
            Err(why) => out.skipped.push(format!("{}: {why}", cell.label)),
        }
    }
    if side.entries.is_empty() {
        out.skipped
            .push("nothing in this scenario's matrix plays it".into());
    } else if cells.is_empty() {
        out.skipped.push(format!(
            "no cell of {} ({}) finished",
            side.name,
            side.entries.join(", ")
        ));
    }
    out
}

/// Why one repetition gives no figure for a claim (no such phase, a
/// void phase, no such operation): the claim's outcome lists it as
/// skipped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
struct NotMeasured(String);

impl From<String> for NotMeasured {
    fn from(s: String) -> NotMeasured {
        NotMeasured(s)
    }
}

/// The phase of `cell` the claim compares: by name, at the claim's thread
/// count or the highest one the cell ran it at.
fn phase_of<'c>(
    claim: &Claim,
    cell: &'c CellRecord,
) -> Result<(usize, &'c PhaseResult), NotMeasured> {
    let name = claim.phase.as_deref().unwrap_or(LOAD_PHASE);
    let found = cell
        .phases
        .iter()
        .enumerate()
        .filter(|(_, p)| p.name == name)
        .filter(|(_, p)| claim.threads.is_none_or(|t| p.threads == t))
        .max_by_key(|(_, p)| p.threads);
    found.ok_or_else(|| match (name, claim.threads) {
        (LOAD_PHASE, _) => "the cell did not load (it restored a snapshot)"
            .to_string()
            .into(),
        (_, Some(t)) => format!("no phase `{name}` at {t} threads").into(),
        _ => format!("no phase `{name}`").into(),
    })
}

/// One repetition's figure (and series) for the claim's metric.
fn observe_cell(claim: &Claim, cell: &CellRecord) -> Result<Obs, NotMeasured> {
    if claim.metric == Metric::DataSize {
        return match cell.data_size_bytes {
            Some(b) if b > 0 => Ok(Obs::value(b as f64)),
            _ => Err("no data size was measured".to_string().into()),
        };
    }
    let (index, phase) = phase_of(claim, cell)?;
    let (verdict, reason) = phase_verdict(cell, index);
    if verdict != PhaseVerdict::Ok {
        return Err(format!("phase `{}` is {}: {reason}", phase.name, verdict.as_str()).into());
    }
    match claim.metric {
        Metric::Throughput => throughput(claim, phase),
        Metric::LatencyP99 => {
            let op = match &claim.op {
                Some(op) => phase.ops.get(op).map(|s| (op, s)),
                None => phase.ops.iter().max_by_key(|(_, s)| s.count),
            };
            let (op, stats) = op.ok_or_else(|| no_op(claim, phase))?;
            stats
                .latency_us
                .p99
                .map(Obs::value)
                .ok_or_else(|| format!("{op} has no p99 latency").into())
        }
        Metric::Tpmc => phase
            .headline
            .as_ref()
            .map(|h| Obs::value(h.value))
            .ok_or_else(|| format!("phase `{}` has no tpmC", phase.name).into()),
        Metric::LoadTime => Ok(Obs::value(phase.duration_s)),
        Metric::DataSize => unreachable!("handled above"),
    }
}

fn no_op(claim: &Claim, phase: &PhaseResult) -> NotMeasured {
    NotMeasured(match &claim.op {
        Some(op) => format!("phase `{}` recorded no {op}", phase.name),
        None => format!("phase `{}` recorded no operation", phase.name),
    })
}

/// Operations per second of the phase or its `op`, with the per-second
/// counts of the seconds the phase ran in full.
fn throughput(claim: &Claim, phase: &PhaseResult) -> Result<Obs, NotMeasured> {
    let value = match &claim.op {
        Some(op) => phase.ops.get(op).map(|s| s.throughput),
        None => Some(phase.throughput),
    }
    .filter(|v| *v > 0.0)
    .ok_or_else(|| no_op(claim, phase))?;
    let series = phase.per_second(claim.op.as_deref());
    Ok(Obs { value, series })
}

fn outcome(claim: &Claim, cells: &[CellData]) -> Outcome {
    let a_cells = cells_of(&claim.a, claim, cells);
    let b_cells = cells_of(&claim.b, claim, cells);
    let mut out = Outcome {
        claim: claim.clone(),
        verdict: Verdict::NotMeasured,
        reason: None,
        ratio: None,
        lo: None,
        hi: None,
        a_value: None,
        b_value: None,
        a_cells: Vec::new(),
        b_cells: Vec::new(),
    };
    if claim.environment.is_none() {
        let envs: BTreeSet<&str> = a_cells
            .iter()
            .chain(&b_cells)
            .map(|c| c.environment.as_str())
            .collect();
        if envs.len() > 1 {
            out.reason = Some(format!(
                "the sides ran in several environments ({}); the claim names none (`environment:`)",
                envs.into_iter().collect::<Vec<_>>().join(", ")
            ));
            return out;
        }
    }
    let a = observe(claim, &claim.a, &a_cells);
    let b = observe(claim, &claim.b, &b_cells);
    out.a_cells = a.cells.clone();
    out.b_cells = b.cells.clone();
    let skipped: Vec<String> = a.skipped.iter().chain(&b.skipped).cloned().collect();
    if a.obs.is_empty() || b.obs.is_empty() {
        let (side, why) = if a.obs.is_empty() {
            (&claim.a, &a.skipped)
        } else {
            (&claim.b, &b.skipped)
        };
        out.reason = Some(format!(
            "{} has no valid measurement: {}",
            side.name,
            why.join("; ")
        ));
        return out;
    }
    let mean = |o: &[Obs]| o.iter().map(|o| o.value).sum::<f64>() / o.len() as f64;
    out.a_value = Some(mean(&a.obs));
    out.b_value = Some(mean(&b.obs));
    let Some(RatioInterval {
        ratio,
        lo,
        hi,
        resampled,
    }) = crate::stats::ratio_interval(&a.obs, &b.obs, Blocks::Auto)
    else {
        out.reason = Some(format!("{} measured 0", claim.b.name));
        return out;
    };
    out.verdict = stats::decide(claim.expect, lo, hi);
    (out.ratio, out.lo, out.hi) = (Some(ratio), Some(lo), Some(hi));
    let mut how = vec![method(&a.obs, &b.obs, resampled)];
    if !skipped.is_empty() {
        how.push(format!("left out: {}", skipped.join("; ")));
    }
    out.reason = Some(how.join("; "));
    out
}

/// How the interval was made, in words.
fn method(a: &[Obs], b: &[Obs], resampled: bool) -> String {
    if !resampled {
        return "one value a side: the interval is the point".into();
    }
    let seconds = a.iter().chain(b).any(|o| o.series.len() >= MIN_SERIES);
    format!(
        "95% bootstrap over {} x {} repetitions{}",
        a.len(),
        b.len(),
        if seconds {
            " and moving blocks of per-second series"
        } else {
            ""
        }
    )
}
