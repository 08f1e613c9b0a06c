//! How benchcage's values read to people in plans, messages and reports.
//! User-facing text never shows Rust `Debug` output (`Some(..)`,
//! `Sysbench { test: .. }`); every type printed to a user has its
//! `Display` here or beside its definition.

use crate::host::CgroupLayout;
use crate::spec::scenario::{Builtin, LoadWorkload, Mix, PgbenchScript, Tool, Work, YcsbWorkload};
use crate::units::{Bytes, Share};
#[cfg(test)]
use crate::workload::ErrorBudget;
use crate::workload::driver::Budget;
use crate::workload::stores::StoreKind;
use crate::workload::{Distribution, InsertOrder};
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
pub fn approx(b: Bytes) -> String {
    if b.0 >= Bytes::GIB {
        format!("{:.1}GiB", b.as_gib_f64())
    } else {
        format!("{:.1}MiB", b.as_mib_f64())
    }
}

/// A span for reading, whole seconds: `40s`, `7m04s`, `1h57m44s`.
pub fn span(d: crate::units::Duration) -> String {
    let s = d.std().as_secs_f64().round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, sec) => format!("{h}h{m:02}m{sec:02}s"),
    }
}

/// An error budget as a person writes it: `0 errors`, `1 error`, `1%`.
impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Count(1) => f.write_str("1 error"),
            Budget::Count(n) => write!(f, "{n} errors"),
            Budget::Fraction(x) => write!(f, "{}", Share(*x)),
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreKind::Null => "null",
            StoreKind::Redis => "redis",
            StoreKind::Postgres => "postgres",
            StoreKind::Mysql => "mysql",
            StoreKind::Mongodb => "mongodb",
        })
    }
}

impl fmt::Display for CgroupLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupLayout::V1 => "v1",
            CgroupLayout::Hybrid => "hybrid",
            CgroupLayout::V2 => "v2",
            CgroupLayout::None => "none",
        })
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipfian => "zipfian",
            Distribution::Latest => "latest",
            Distribution::Hotspot => "hotspot",
            Distribution::Sequential => "sequential",
        })
    }
}

impl fmt::Display for InsertOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InsertOrder::Hashed => "hashed",
            InsertOrder::Ordered => "ordered",
        })
    }
}

impl fmt::Display for LoadWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadWorkload::Ycsb => "YCSB records",
            LoadWorkload::Candles => "trade candles",
        })
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [
            ("read", self.read),
            ("update", self.update),
            ("insert", self.insert),
            ("scan", self.scan),
            ("read-modify-write", self.read_modify_write),
        ]
        .iter()
        .filter(|(_, share)| *share > 0.0)
        .map(|(name, share)| format!("{name} {share}"))
        .collect();
        f.write_str(&parts.join(", "))
    }
}

impl fmt::Display for YcsbWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YcsbWorkload::A => f.write_str("A"),
            YcsbWorkload::B => f.write_str("B"),
            YcsbWorkload::C => f.write_str("C"),
            YcsbWorkload::D => f.write_str("D"),
            YcsbWorkload::E => f.write_str("E"),
            YcsbWorkload::F => f.write_str("F"),
            YcsbWorkload::Custom(m) => write!(f, "custom ({m})"),
        }
    }
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Builtin::Ycsb {
                workload,
                distribution,
            } => write!(f, "YCSB workload {workload}, {distribution}"),
            Builtin::Candles { queries } => write!(f, "candles, {} queries", queries.name()),
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tool::Sysbench {
                test,
                tables,
                table_size,
            } => write!(f, "sysbench {test}, {tables} tables x {table_size} rows"),
            Tool::Pgbench { scale, script } => match script {
                PgbenchScript::Builtin(b) => write!(f, "pgbench -b {b}, scale {scale}"),
                PgbenchScript::Script(p) => write!(f, "pgbench -f {p}, scale {scale}"),
            },
            Tool::Ycsb { argv } => write!(f, "YCSB: {}", argv.join(" ")),
            Tool::Command { argv, .. } => write!(f, "command: {}", argv.join(" ")),
        }
    }
}

impl fmt::Display for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Work::Builtin(b) => write!(f, "{b}"),
            Work::Tool(t) => write!(f, "{t}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IoLimits, SwapPolicy};

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
        let t = Tool::Sysbench {
            test: "oltp_read_write".into(),
            tables: 8,
            table_size: 1000,
        };
        assert_eq!(
            t.to_string(),
            "sysbench oltp_read_write, 8 tables x 1000 rows"
        );
        let w = Builtin::Ycsb {
            workload: YcsbWorkload::Custom(Mix {
                read: 0.9,
                update: 0.05,
                insert: 0.05,
                ..Default::default()
            }),
            distribution: Distribution::Zipfian,
        };
        assert_eq!(
            w.to_string(),
            "YCSB workload custom (read 0.9, update 0.05, insert 0.05), zipfian"
        );
        assert_eq!(SwapPolicy::Limit(Bytes::from_mib(64)).to_string(), "64MiB");
        assert_eq!(CgroupLayout::Hybrid.to_string(), "hybrid");
        assert_eq!(Budget::Count(0).to_string(), "0 errors");
        assert_eq!(Budget::Count(1).to_string(), "1 error");
        assert_eq!(Budget::Fraction(0.01).to_string(), "1%");
        assert_eq!(Budget::Fraction(0.005).to_string(), "0.5%");
        assert_eq!(ErrorBudget::Count(0).to_string(), "0 errors");
        assert_eq!(ErrorBudget::Share(" 1% ".into()).to_string(), "1%");
        assert_eq!(list(&[1, 4, 16]), "1, 4, 16");
    }
}
