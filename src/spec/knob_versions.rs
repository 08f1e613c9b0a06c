//! Which versions of an engine have a knob, and which of its values: an
//! engine that changed across releases (MongoDB 2.2 to 8.0) says so as
//! data on the knob, and plan refuses a knob or a value the cell's version
//! lacks, naming the version.
//!
//! ```yaml
//! storage_engine:
//!   type: enum
//!   values: [mmapv1, wiredTiger]
//!   default: wiredTiger
//!   default_before: {"3.2": mmapv1}        # the default of versions before 3.2
//!   values_from: {wiredTiger: "3.0"}       # wiredTiger from 3.0 on
//!   values_before: {mmapv1: "4.2"}         # mmapv1 up to 4.0
//! compression:
//!   type: enum
//!   values: [none, snappy, zlib, zstd]
//!   from: "3.0"                            # the knob exists from 3.0 on
//!   when: {storage_engine: wiredTiger}     # and only with that storage engine
//! ```
//!
//! A knob (or its default) a version lacks is left out of that version's
//! cells; a scenario or `--set` that gives it is refused.

use super::de::{Fields, Text};
use super::diag::{Cx, join};
use crate::render::version_num;
use std::collections::BTreeMap;

/// The fields of a knob that say which versions have it.
pub const FIELDS: &[&str] = &[
    "from",
    "before",
    "default_before",
    "values_from",
    "values_before",
    "when",
];

/// A knob's version rules; the default has none (every version has it all).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KnobVersions {
    /// The first version that has the knob.
    pub from: Option<String>,
    /// The first version that no longer has it.
    pub before: Option<String>,
    /// The default of the versions before each key (the lowest key that
    /// applies wins), where it differs from `default:`.
    pub default_before: BTreeMap<String, String>,
    /// The first version that takes each value.
    pub values_from: BTreeMap<String, String>,
    /// The first version that no longer takes each value.
    pub values_before: BTreeMap<String, String>,
    /// Other knobs and the value each must have for this knob to apply
    /// (`compression` only with `storage_engine: wiredTiger`).
    pub when: BTreeMap<String, String>,
}

/// Why a knob or its value does not apply to a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lacks {
    /// The version lacks the knob: "from 3.0 on", "before 4.2".
    Version(String),
    /// The version lacks the value.
    Value(String),
    /// Another knob has another value (`storage_engine` is `mmapv1`).
    When { knob: String, needs: String },
}

impl KnobVersions {
    /// Read the version fields of a knob's mapping.
    pub fn read(f: &Fields, cx: &mut Cx, path: &str) -> KnobVersions {
        let text = |cx: &mut Cx, k: &str| f.opt::<Text>(cx, k).map(|t| t.0);
        let map = |cx: &mut Cx, k: &str| -> BTreeMap<String, String> {
            f.opt::<BTreeMap<String, Text>>(cx, k)
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect()
        };
        let v = KnobVersions {
            from: text(cx, "from"),
            before: text(cx, "before"),
            default_before: map(cx, "default_before"),
            values_from: map(cx, "values_from"),
            values_before: map(cx, "values_before"),
            when: map(cx, "when"),
        };
        for (k, ver) in [("from", &v.from), ("before", &v.before)] {
            if let Some(ver) = ver
                && version_num(ver) == 0
            {
                cx.error(
                    f.pos_of(k),
                    &join(path, k),
                    format!("`{ver}` is not a version"),
                    Some("a release like \"3.0\" or \"4.2.1\"".into()),
                );
            }
        }
        v
    }

    /// The default of `version`, when it is not the knob's `default:`.
    pub(crate) fn default_of(&self, version: &str) -> Option<&str> {
        let have = version_num(version);
        self.default_before
            .iter()
            .filter(|(b, _)| have < version_num(b))
            .min_by_key(|(b, _)| version_num(b))
            .map(|(_, v)| v.as_str())
    }

    /// Whether `version` has the knob at all.
    pub(crate) fn version_lacks(&self, version: &str) -> Option<Lacks> {
        let have = version_num(version);
        if let Some(f) = &self.from
            && have < version_num(f)
        {
            return Some(Lacks::Version(format!("from {f} on")));
        }
        if let Some(b) = &self.before
            && have >= version_num(b)
        {
            return Some(Lacks::Version(format!("before {b} only")));
        }
        None
    }

    /// Whether `version` takes `value`.
    pub(crate) fn value_lacks(&self, version: &str, value: &str) -> Option<Lacks> {
        let have = version_num(version);
        if let Some(f) = self.values_from.get(value)
            && have < version_num(f)
        {
            return Some(Lacks::Value(format!("`{value}` (from {f} on)")));
        }
        if let Some(b) = self.values_before.get(value)
            && have >= version_num(b)
        {
            return Some(Lacks::Value(format!("`{value}` (before {b} only)")));
        }
        None
    }

    /// Whether the other knobs have what this one needs; `values` are the
    /// cell's knobs in canonical text.
    pub(crate) fn when_lacks(&self, values: &BTreeMap<String, String>) -> Option<Lacks> {
        self.when.iter().find_map(|(k, needs)| {
            (values.get(k) != Some(needs)).then(|| Lacks::When {
                knob: k.clone(),
                needs: needs.clone(),
            })
        })
    }
}

impl Lacks {
    /// Words for a refusal: "`compression` is from 3.0 on".
    pub(crate) fn describe(&self, knob: &str) -> String {
        match self {
            Lacks::Version(w) => format!("has no knob `{knob}` (it is {w})"),
            Lacks::Value(w) => format!("does not take {knob} {w}"),
            Lacks::When { knob: other, needs } => {
                format!("has no knob `{knob}` unless {other} is {needs}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage() -> KnobVersions {
        KnobVersions {
            default_before: [("3.2".to_string(), "mmapv1".to_string())].into(),
            values_from: [("wiredTiger".to_string(), "3.0".to_string())].into(),
            values_before: [("mmapv1".to_string(), "4.2".to_string())].into(),
            ..KnobVersions::default()
        }
    }

    #[test]
    fn the_default_before_a_version_applies_only_below_it() {
        let v = storage();
        assert_eq!(v.default_of("2.4"), Some("mmapv1"));
        assert_eq!(v.default_of("3.0"), Some("mmapv1"));
        assert_eq!(v.default_of("3.2"), None);
        assert_eq!(v.default_of("3.2.6"), None);
    }

    #[test]
    fn a_value_is_taken_only_by_the_versions_that_have_it() {
        let v = storage();
        assert!(v.value_lacks("2.6", "wiredTiger").is_some());
        assert!(v.value_lacks("3.0", "wiredTiger").is_none());
        assert!(v.value_lacks("4.0", "mmapv1").is_none());
        let l = v.value_lacks("4.2", "mmapv1").unwrap();
        assert_eq!(
            l.describe("storage_engine"),
            "does not take storage_engine `mmapv1` (before 4.2 only)"
        );
    }

    #[test]
    fn a_knob_outside_its_versions_or_without_its_condition_is_lacking() {
        let v = KnobVersions {
            from: Some("3.0".into()),
            when: [("storage_engine".to_string(), "wiredTiger".to_string())].into(),
            ..KnobVersions::default()
        };
        assert!(v.version_lacks("2.6").is_some());
        assert!(v.version_lacks("3.0").is_none());
        let mm: BTreeMap<String, String> =
            [("storage_engine".to_string(), "mmapv1".to_string())].into();
        assert_eq!(
            v.when_lacks(&mm).unwrap().describe("compression"),
            "has no knob `compression` unless storage_engine is wiredTiger"
        );
    }
}
