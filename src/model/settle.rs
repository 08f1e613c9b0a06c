//! The settle step between a cell's load and its measured phases: the
//! memory cap it sets and whether it drops the page cache. One type from
//! the scenario (`settle:`, one per cell of a sweep) through the plan and
//! the run into the cell record (`cell.json`'s `settle`).

use crate::units::{Bytes, Share};
use serde::{Deserialize, Serialize};

/// Between load and measurement, for one cell. Its JSON is the cell
/// record's `settle` (`memory` left out when the environment's cap is
/// kept); the cell key writes it its own way (`plan::identity`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Settle {
    /// The memory cap set after the load, as the scenario gave it
    /// (`25% of data`, `64MiB`); `None` keeps the environment's cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<SettleMemory>,
    /// Drop the server's page cache before the phases.
    #[serde(default)]
    pub drop_caches: bool,
}

/// The memory cap settle sets after the load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettleMemory {
    /// A share of the data size measured after the load: `25% of data`.
    OfData(f64),
    Absolute(Bytes),
}

impl SettleMemory {
    /// As a scenario writes it: `25% of data`, `64MiB`.
    pub fn text(&self) -> String {
        match self {
            SettleMemory::OfData(f) => format!("{} of data", Share(*f)),
            SettleMemory::Absolute(b) => b.to_string(),
        }
    }

    /// Short tag for cell ids and environment names: `mem25pct`, `mem64MiB`.
    pub fn tag(&self) -> String {
        match self {
            SettleMemory::OfData(f) => {
                let pct = f * 100.0;
                if (pct - pct.round()).abs() < 1e-9 {
                    format!("mem{}pct", pct.round() as i64)
                } else {
                    format!("mem{}pct", format!("{pct:.2}").replace('.', "_"))
                }
            }
            SettleMemory::Absolute(b) => format!("mem{}", b.to_string().replace('.', "_")),
        }
    }
}

/// The environment a settle sweep's cell ran in, without the cap tag the
/// planner appends (`ram-sweep-mem25pct` -> `ram-sweep`); other names as is.
pub(crate) fn without_settle_tag(environment: &str) -> &str {
    let Some((base, tag)) = environment.rsplit_once("-mem") else {
        return environment;
    };
    let number = |t: &str| {
        !t.is_empty() && t.starts_with(|c: char| c.is_ascii_digit()) && {
            let n = t.replace('_', ".");
            n.parse::<f64>().is_ok()
        }
    };
    let tagged = match tag.strip_suffix("pct") {
        Some(pct) => number(pct),
        None => tag.replace('_', ".").parse::<Bytes>().is_ok(),
    };
    if tagged && !base.is_empty() {
        base
    } else {
        environment
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settle_tag_of_a_sweep_cell_comes_off_its_environment_name() {
        for m in [
            SettleMemory::OfData(0.25),
            SettleMemory::OfData(2.0),
            SettleMemory::OfData(0.125),
            SettleMemory::Absolute(Bytes::from_mib(64)),
        ] {
            let env = format!("ram-sweep-{}", m.tag());
            assert_eq!(without_settle_tag(&env), "ram-sweep", "{env}");
        }
        for name in ["ram-sweep", "no-memory", "x-mem", "-mem25pct", "a-memfoo"] {
            assert_eq!(without_settle_tag(name), name);
        }
    }

    #[test]
    fn the_cell_record_keeps_the_settle_cap_as_the_scenario_gave_it() {
        let quarter = Settle {
            memory: Some(SettleMemory::OfData(0.25)),
            drop_caches: true,
        };
        let json = serde_json::to_string(&quarter).unwrap();
        assert_eq!(json, r#"{"memory":{"of_data":0.25},"drop_caches":true}"#);
        assert_eq!(serde_json::from_str::<Settle>(&json).unwrap(), quarter);
        assert_eq!(quarter.memory.map(|m| m.tag()).as_deref(), Some("mem25pct"));
        // No cap: left out, as records written before settle had no cap.
        let none = serde_json::to_string(&Settle::default()).unwrap();
        assert_eq!(none, r#"{"drop_caches":false}"#);
        assert_eq!(
            serde_json::from_str::<Settle>("{}").unwrap(),
            Settle::default()
        );
    }
}
