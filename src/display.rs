//! How benchcage's values read to people in plans, messages and reports.
//! User-facing text never shows Rust `Debug` output (`Some(..)`,
//! `Sysbench { test: .. }`); every type printed to a user has its
//! `Display` beside its definition. This module only formats plain values
//! (amounts, spans, lists) and depends on nothing but `units`.

use crate::units::Bytes;
use std::fmt;

/// Items joined with `, ` (`1, 4, 16`), for lists in messages.
pub fn list<T: fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A host-sized amount, rounded for reading: `23.5GiB`, `512.0MiB`.
pub(crate) fn approx(b: Bytes) -> String {
    if b.0 >= Bytes::GIB {
        format!("{:.1}GiB", b.as_gib_f64())
    } else {
        format!("{:.1}MiB", b.as_mib_f64())
    }
}

/// An exact amount that stays readable: `Bytes`' own form (`32MiB`,
/// `581.59MiB`), but a megabyte or more in whole KiB (a page-rounded
/// cap) rounded with the exact figure beside it: `145.4MiB (148884KiB)`.
pub(crate) fn exact(b: Bytes) -> String {
    let whole = b.to_string();
    if b.0 >= Bytes::MIB && whole.ends_with("KiB") {
        format!("{} ({whole})", approx(b))
    } else {
        whole
    }
}

/// A span for reading, whole seconds: `40s`, `7m04s`, `1h57m44s`.
pub(crate) fn span(d: crate::units::Duration) -> String {
    let s = d.std().as_secs_f64().round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, sec) => format!("{h}h{m:02}m{sec:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IoLimits, SwapPolicy};

    #[test]
    fn an_exact_amount_keeps_a_whole_unit_and_rounds_the_rest_beside_it() {
        assert_eq!(exact(Bytes(32 << 20)), "32MiB");
        assert_eq!(exact(Bytes(3 << 30)), "3GiB");
        assert_eq!(exact(Bytes(148_884 * 1024)), "145.4MiB (148884KiB)");
        assert_eq!(exact(Bytes(609_843_855)), "581.59MiB");
        assert_eq!(exact(Bytes(4096)), "4KiB");
        assert_eq!(exact(Bytes(1000)), "1000B");
    }

    #[test]
    fn spans_read_as_clock_time() {
        let d = |s: u64| crate::units::Duration(std::time::Duration::from_secs(s));
        assert_eq!(span(d(40)), "40s");
        assert_eq!(span(d(424)), "7m04s");
        assert_eq!(span(d(7064)), "1h57m44s");
        assert_eq!(span(d(3600)), "1h00m00s");
    }

    #[test]
    fn values_read_as_words_not_as_rust() {
        let io = IoLimits {
            read_bps: Some(100 * Bytes::MIB),
            write_iops: Some(500),
            ..Default::default()
        };
        assert_eq!(io.to_string(), "read 100MiB/s, write 500 IOPS");
        assert_eq!(IoLimits::default().to_string(), "unthrottled");
        assert_eq!(SwapPolicy::Limit(Bytes::from_mib(64)).to_string(), "64MiB");
        assert_eq!(list(&[1, 4, 16]), "1, 4, 16");
    }
}
