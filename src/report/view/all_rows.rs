//! "All results": one row per cell, phase and operation kind; the numbers
//! of a row that is not a result are dashes.

use super::{Table, cell_label};
use crate::report::fmt;
use crate::results::flat::{FlatRow, NO_OP, Verdict};

/// The table of every row; with a run column when there are several runs.
pub(super) fn table(rows: &[FlatRow], with_run: bool) -> Table {
    let mut cols = vec![];
    if with_run {
        cols.push(("Run", false));
    }
    cols.extend([
        ("Cell", false),
        ("Phase", false),
        ("Op", false),
        ("Status", false),
        ("Threads", true),
        ("Memory cap", true),
        ("ops/s", true),
        ("p50 (ms)", true),
        ("p95 (ms)", true),
        ("p99 (ms)", true),
        ("p99.9 (ms)", true),
        ("max (ms)", true),
        ("Errors", true),
    ]);
    let mut t = Table::new("All results", &cols);
    t.rows = rows.iter().map(|r| row(r, with_run)).collect();
    t
}

fn row(r: &FlatRow, with_run: bool) -> Vec<String> {
    let ok = r.status == Verdict::Ok && r.op != NO_OP;
    let num = |s: String| if ok { s } else { fmt::DASH.to_string() };
    let mut row = vec![];
    if with_run {
        row.push(r.run_id.clone());
    }
    row.extend([
        cell_label(r),
        r.phase.clone(),
        r.op.clone(),
        r.status.as_str().to_uppercase(),
        r.threads.to_string(),
        fmt::bytes_or_dash(r.memory_limit_bytes),
        num(fmt::ops(r.throughput)),
        num(fmt::ms_or_dash(r.lat_p50_us)),
        num(fmt::ms_or_dash(r.lat_p95_us)),
        num(fmt::ms_or_dash(r.lat_p99_us)),
        num(fmt::ms_or_dash(r.lat_p999_us)),
        num(fmt::ms_or_dash(r.lat_max_us)),
        fmt::thousands(r.errors as i64),
    ]);
    row
}

#[cfg(test)]
mod tests {
    use super::super::testing::row as made_up;
    use super::*;

    #[test]
    fn a_row_that_is_not_a_result_shows_no_numbers() {
        let ok = FlatRow {
            memory_limit_bytes: Some(512 << 20),
            ..made_up("redis", "c", "run", 4, 1234.0)
        };
        let invalid = FlatRow {
            status: Verdict::Invalid,
            errors: 1200,
            ..ok.clone()
        };
        let t = table(&[ok, invalid], true);
        assert_eq!(t.headers[0], "Run");
        assert_eq!(
            t.rows[0][4..],
            [
                "OK", "4", "512 MiB", "1,234", "1.00", "—", "—", "—", "—", "0"
            ]
        );
        assert_eq!(
            t.rows[1][4..],
            [
                "INVALID", "4", "512 MiB", "—", "—", "—", "—", "—", "—", "1,200"
            ]
        );
    }
}
