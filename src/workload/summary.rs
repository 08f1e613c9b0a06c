//! YCSB-style text output, so parsers written for YCSB read benchcage.

use crate::results::model::PhaseResult;
use std::fmt::Write;

/// The `[OVERALL]` and per-kind lines of one phase.
pub(crate) fn ycsb_text(r: &PhaseResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "[OVERALL], RunTime(ms), {}",
        (r.duration_s * 1000.0).round() as u64
    );
    let _ = writeln!(s, "[OVERALL], Throughput(ops/sec), {:.1}", r.throughput);
    // A failed phase's figure is not a result: no headline for it.
    if let Some(h) = r.headline.as_ref().filter(|_| r.status.is_ok()) {
        let _ = writeln!(s, "[OVERALL], {}, {:.1}", h.name, h.value);
    }
    // What a TPC-C phase on MongoDB ran in, as py-tpcc names it.
    if let Some(m) = &r.mongo_tpcc {
        let _ = writeln!(s, "[TPC-C], Schema, {}", m.schema.name());
        if let Some(t) = m.transactions {
            let _ = writeln!(s, "[TPC-C], Transactions, {}", t.name());
        }
    }
    for (name, op) in &r.ops {
        let l = &op.latency_us;
        if op.count > 0 {
            let _ = writeln!(s, "[{name}], Operations, {}", op.count);
            if let Some(mean) = l.mean {
                let _ = writeln!(s, "[{name}], AverageLatency(us), {mean:.1}");
            }
            // A value the phase does not have is left out, as YCSB does.
            for (label, v) in [
                ("MinLatency(us)", l.min),
                ("MaxLatency(us)", l.max),
                ("50thPercentileLatency(us)", l.p50),
                ("95thPercentileLatency(us)", l.p95),
                ("99thPercentileLatency(us)", l.p99),
                ("99.9PercentileLatency(us)", l.p999),
            ] {
                if let Some(v) = v {
                    let _ = writeln!(s, "[{name}], {label}, {}", v.round() as u64);
                }
            }
            if let Some(i) = &op.intended_latency_us {
                if let Some(mean) = i.mean {
                    let _ = writeln!(s, "[Intended-{name}], AverageLatency(us), {mean:.1}");
                }
                if let Some(p99) = i.p99 {
                    let _ = writeln!(
                        s,
                        "[Intended-{name}], 99thPercentileLatency(us), {}",
                        p99.round() as u64
                    );
                }
            }
            let _ = writeln!(s, "[{name}], Return=OK, {}", op.count);
        }
        if op.errors > 0 {
            let _ = writeln!(s, "[{name}], Return=ERROR, {}", op.errors);
            let _ = writeln!(s, "[{name}-FAILED], Operations, {}", op.errors);
            for m in &op.error_samples {
                let _ = writeln!(s, "[{name}-FAILED], Error, {m}");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::{Headline, PhaseStatus};

    fn tpcc(status: PhaseStatus) -> PhaseResult {
        PhaseResult {
            name: "tpcc".into(),
            workload: "tpcc".into(),
            threads: 1,
            duration_s: 0.007,
            total_ops: 1,
            total_errors: 1,
            throughput: 142.9,
            tool_ops_per_sec: None,
            headline: Some(Headline::tpmc(8571.4)),
            mongo_tpcc: None,
            tool_env: None,
            ops: Default::default(),
            series: vec![],
            status,
            raw_outputs: vec![],
        }
    }

    #[test]
    fn a_failed_phase_prints_no_headline_and_an_ok_one_does() {
        let failed = ycsb_text(&tpcc(PhaseStatus::Failed {
            reason: "connection reset".into(),
        }));
        assert!(!failed.contains("tpmC"), "{failed}");
        let ok = ycsb_text(&tpcc(PhaseStatus::Ok));
        assert!(ok.contains("[OVERALL], tpmC, 8571.4"), "{ok}");
    }
}
