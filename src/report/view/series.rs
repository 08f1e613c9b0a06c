//! Names, colors and dashes of series: one color per `engine@version`,
//! dashes for the same engine@version in another environment or run.

use crate::report::charts::{DASHES, PALETTE, SeriesStyle};
use crate::results::flat::FlatRow;
use crate::results::order::Natural;
use std::collections::{BTreeMap, BTreeSet};

/// The series of a report, fixed once from all its rows (and the past
/// rows of the trend, so that a series keeps its color there).
pub(super) struct SeriesMap {
    multi_env: bool,
    multi_run: bool,
    colors: BTreeMap<String, usize>,
    variants: BTreeMap<String, BTreeSet<Natural>>,
}

impl SeriesMap {
    pub(super) fn new(rows: &[FlatRow], past: &[FlatRow]) -> Self {
        let envs: BTreeSet<&str> = rows.iter().map(|r| r.environment.as_str()).collect();
        let runs: BTreeSet<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
        let mut m = SeriesMap {
            multi_env: envs.len() > 1,
            multi_run: runs.len() > 1,
            colors: BTreeMap::new(),
            variants: BTreeMap::new(),
        };
        let evs: BTreeSet<Natural> = rows.iter().map(|r| Natural(ev(r))).collect();
        for (i, e) in evs.iter().enumerate() {
            m.colors.insert(e.0.clone(), i);
        }
        for r in past {
            let next = m.colors.len();
            m.colors.entry(ev(r)).or_insert(next);
        }
        for r in rows.iter().chain(past) {
            let v = m.variant(r);
            m.variants.entry(ev(r)).or_default().insert(Natural(v));
        }
        m
    }

    /// What tells apart rows of one engine@version: their environment
    /// and run, when the report has several.
    fn variant(&self, r: &FlatRow) -> String {
        let mut parts = Vec::new();
        if self.multi_env {
            parts.push(r.environment.clone());
        }
        if self.multi_run {
            parts.push(r.run_id.clone());
        }
        parts.join(" · ")
    }

    /// The style of the series `r` belongs to.
    pub(super) fn style(&self, r: &FlatRow) -> SeriesStyle {
        let e = ev(r);
        let v = self.variant(r);
        let color = self.colors.get(&e).copied().unwrap_or(0);
        let dash = self
            .variants
            .get(&e)
            .and_then(|vs| vs.iter().position(|x| x.0 == v))
            .unwrap_or(0);
        SeriesStyle {
            name: if v.is_empty() {
                e
            } else {
                format!("{e} · {v}")
            },
            color: PALETTE[color % PALETTE.len()].to_string(),
            dash: DASHES[dash % DASHES.len()].to_string(),
        }
    }
}

/// A row's `engine@version`.
pub(super) fn ev(r: &FlatRow) -> String {
    format!("{}@{}", r.engine, r.version)
}

#[cfg(test)]
mod tests {
    use super::super::testing::row;
    use super::*;

    #[test]
    fn one_engine_in_two_environments_keeps_its_color_and_changes_its_dash() {
        let a = row("redis", "c1", "run", 4, 100.0);
        let b = FlatRow {
            environment: "large".into(),
            ..row("redis", "c2", "run", 4, 100.0)
        };
        let other = row("postgres", "c3", "run", 4, 100.0);
        let m = SeriesMap::new(&[a.clone(), b.clone(), other.clone()], &[]);
        let (sa, sb, so) = (m.style(&a), m.style(&b), m.style(&other));
        assert_eq!(sa.name, "redis@1.0 · small");
        assert_eq!(sb.name, "redis@1.0 · large");
        assert_eq!(sa.color, sb.color);
        assert_ne!(sa.dash, sb.dash);
        assert_ne!(sa.color, so.color);
    }

    #[test]
    fn a_single_environment_and_run_names_series_by_engine_alone() {
        let a = row("redis", "c1", "run", 4, 100.0);
        let m = SeriesMap::new(std::slice::from_ref(&a), &[]);
        assert_eq!(m.style(&a).name, "redis@1.0");
        assert_eq!(m.style(&a).dash, "");
    }
}
