//! "Single node vs replica set" (write-up 004's comparison): per
//! engine@version and phase that ran in more than one topology, a bar for
//! each topology's mean throughput, and how far each falls from the
//! standalone server's.

use super::{Figure, Section, Table};
use crate::report::ReportInput;
use crate::report::charts::{
    Axis, Bar, BarChart, BarGroup, Chart, PALETTE, SeriesStyle, Unit, WIDTH,
};
use crate::report::fmt;
use crate::results::flat::{FlatRow, Verdict};
use crate::results::order::Natural;
use std::collections::{BTreeMap, BTreeSet};

const TITLE: &str = "Single node vs replica set";

/// What a record without a topology ran as.
const STANDALONE: &str = "standalone";

/// Throughputs of the ok phases, by (engine@version, phase at its threads)
/// and then topology.
type Groups = BTreeMap<(Natural, Natural), BTreeMap<Natural, Vec<f64>>>;

/// The ok phases of `rows`, grouped; only groups seen in more than one
/// topology are kept.
fn groups(input: &ReportInput, rows: &[FlatRow]) -> Groups {
    let topology: BTreeMap<(&str, &str), &str> = input
        .runs
        .iter()
        .flat_map(|r| {
            r.cells.iter().map(|c| {
                let t = c.record.topology.as_str();
                let t = if t.is_empty() { STANDALONE } else { t };
                ((r.run.run_id.as_str(), c.record.key.as_str()), t)
            })
        })
        .collect();
    let mut seen = BTreeSet::new();
    let mut out: Groups = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == Verdict::Ok) {
        // One value per phase, not per operation kind.
        if !seen.insert((&r.run_id, &r.cell_key, r.phase_index)) {
            continue;
        }
        let t = topology
            .get(&(r.run_id.as_str(), r.cell_key.as_str()))
            .copied()
            .unwrap_or(STANDALONE);
        let key = (
            Natural(format!("{}@{}", r.engine, r.version)),
            Natural(format!("{} t{}", r.phase, r.threads)),
        );
        out.entry(key)
            .or_default()
            .entry(Natural(t.to_string()))
            .or_default()
            .push(r.phase_throughput);
    }
    out.retain(|_, by| by.len() > 1);
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The section: one bar chart, a group per engine@version and phase, a
/// bar per topology; its table gives each one against standalone.
pub(super) fn section(input: &ReportInput, rows: &[FlatRow]) -> Option<Section> {
    let groups = groups(input, rows);
    if groups.is_empty() {
        return None;
    }
    let names: BTreeSet<&Natural> = groups.values().flat_map(|by| by.keys()).collect();
    let mut names: Vec<String> = names.into_iter().map(|n| n.0.clone()).collect();
    // Standalone first: the others are read against it.
    names.sort_by_key(|n| n != STANDALONE);
    let series: Vec<SeriesStyle> = names
        .iter()
        .enumerate()
        .map(|(i, n)| SeriesStyle {
            name: n.clone(),
            color: PALETTE[i % PALETTE.len()].into(),
            dash: String::new(),
        })
        .collect();
    let mut table = Table::new(
        TITLE,
        &[
            ("Engine", false),
            ("Phase", false),
            ("Topology", false),
            ("ops/s", true),
            ("Reps", true),
            ("vs standalone", true),
        ],
    );
    let mut bars = Vec::new();
    for ((ev, phase), by) in &groups {
        let base = by.get(&Natural(STANDALONE.into())).map(|v| mean(v));
        let mut group = BarGroup {
            label: format!("{} · {}", ev.0, phase.0),
            bars: Vec::new(),
        };
        for (i, name) in names.iter().enumerate() {
            let Some(v) = by.get(&Natural(name.clone())) else {
                continue;
            };
            let m = mean(v);
            let vs = match base {
                Some(b) if b > 0.0 && name != STANDALONE => {
                    format!("{:+.1}%", (m / b - 1.0) * 100.0)
                }
                _ => fmt::DASH.into(),
            };
            table.rows.push(vec![
                ev.0.clone(),
                phase.0.clone(),
                name.clone(),
                fmt::ops(m),
                v.len().to_string(),
                vs.clone(),
            ]);
            group.bars.push(Bar {
                series: i,
                value: m,
                range: None,
                tip: format!(
                    "{} · {} · {name}: {} ops/s ({vs})",
                    ev.0,
                    phase.0,
                    fmt::ops(m)
                ),
            });
        }
        bars.push(group);
    }
    Some(Section {
        id: "topologies".into(),
        title: TITLE.into(),
        note: "The same engine@version and phase as one server and as a replica set (the \
               load and phases go to the primary): the mean throughput of each topology's ok \
               phases over its repetitions, and the difference to the standalone server's."
            .into(),
        figures: vec![Figure {
            chart: Chart::Bar(BarChart {
                id: "topologies".into(),
                title: TITLE.into(),
                y: Axis::zero("throughput (ops/s)", Unit::Ops),
                series,
                groups: bars,
                width: WIDTH,
                height: 340.0,
            }),
            table,
        }],
        tables: vec![],
        empty: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::layout::{CellData, RunData};
    use crate::results::model::{CellRecord, RunRecord};

    fn row(key: &str, engine: &str, phase_index: u32, ops: f64, op: &str) -> FlatRow {
        FlatRow {
            run_id: "r".into(),
            cell_key: key.into(),
            engine: engine.into(),
            version: "1".into(),
            phase: "reads".into(),
            threads: 2,
            phase_index,
            op: op.into(),
            phase_throughput: ops,
            ..FlatRow::default()
        }
    }

    fn input(cells: &[(&str, &str)]) -> ReportInput {
        let cells = cells
            .iter()
            .map(|(key, topology)| CellData {
                record: CellRecord {
                    key: key.to_string(),
                    topology: topology.to_string(),
                    ..CellRecord::default()
                },
                samples: vec![],
            })
            .collect();
        ReportInput {
            runs: vec![RunData {
                dir: "r".into(),
                run: RunRecord {
                    run_id: "r".into(),
                    ..RunRecord::default()
                },
                cells,
                unfinished: vec![],
                claims: None,
            }],
            past: vec![],
        }
    }

    #[test]
    fn a_replica_set_is_set_against_the_same_version_as_one_server() {
        let input = input(&[("a", ""), ("b", "replica_set:3"), ("c", "standalone")]);
        let rows = [
            // Two operation kinds of one phase count once.
            row("a", "redis", 0, 1000.0, "READ"),
            row("a", "redis", 0, 1000.0, "UPDATE"),
            row("c", "redis", 0, 1200.0, "READ"),
            row("b", "redis", 0, 880.0, "READ"),
            // postgres ran in one topology only: not compared.
            row("d", "postgres", 0, 50.0, "READ"),
        ];
        let s = section(&input, &rows).unwrap();
        let t = &s.figures[0].table;
        assert_eq!(
            t.rows,
            [
                ["redis@1", "reads t2", "standalone", "1,100", "2", "—"],
                ["redis@1", "reads t2", "replica_set:3", "880", "1", "-20.0%"],
            ]
        );
        let Chart::Bar(chart) = &s.figures[0].chart else {
            panic!("a bar chart expected")
        };
        assert_eq!(chart.series[0].name, "standalone");
        assert_eq!(chart.groups.len(), 1);
        assert_eq!(chart.groups[0].bars.len(), 2);
    }

    #[test]
    fn without_two_topologies_there_is_no_section() {
        let input = input(&[("a", "standalone")]);
        assert!(section(&input, &[row("a", "redis", 0, 1.0, "READ")]).is_none());
    }
}
