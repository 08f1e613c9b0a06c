//! A topology's members on a cell's clock: each member's CPU and memory
//! (the primary's from the server's samples, a secondary's from the
//! samples under its name), and how far each secondary was behind the
//! primary, read every second.

use super::resources::secs;
use crate::report::charts::{Line, PALETTE, Point, SeriesStyle};
use crate::report::fmt;
use crate::results::layout::CellData;
use crate::results::model::ResourceSample;
use std::collections::BTreeMap;

/// The name the primary goes by in the members' charts.
const PRIMARY: &str = "m0 (primary)";

/// Each member's samples, the primary first; empty for one server.
fn member_samples(cell: &CellData) -> Vec<(String, Vec<&ResourceSample>)> {
    let mut by: BTreeMap<&str, Vec<&ResourceSample>> = BTreeMap::new();
    for s in &cell.samples {
        if s.cgroup != "client" {
            by.entry(s.cgroup.as_str()).or_default().push(s);
        }
    }
    let primary = by.remove("server").into_iter().chain(by.remove(""));
    let primary: Vec<&ResourceSample> = primary.flatten().collect();
    if by.is_empty() {
        return Vec::new();
    }
    std::iter::once((PRIMARY.to_string(), primary))
        .chain(by.into_iter().map(|(k, v)| (k.to_string(), v)))
        .collect()
}

fn style(i: usize, name: &str) -> SeriesStyle {
    SeriesStyle {
        name: name.to_string(),
        color: PALETTE[i % PALETTE.len()].to_string(),
        dash: String::new(),
    }
}

fn line(style: SeriesStyle, points: Vec<Point>) -> Line {
    Line {
        style,
        points,
        markers: false,
        step: false,
    }
}

/// A line per member, its points made from its samples by `points`.
fn per_member(
    cell: &CellData,
    points: impl Fn(&str, &[&ResourceSample]) -> Vec<Point>,
) -> Vec<Line> {
    member_samples(cell)
        .into_iter()
        .enumerate()
        .map(|(i, (name, samples))| line(style(i, &name), points(&name, &samples)))
        .collect()
}

/// CPUs each member used between consecutive samples.
pub(super) fn cpu_lines(cell: &CellData) -> Vec<Line> {
    per_member(cell, |name, samples| {
        samples
            .windows(2)
            .map(|w| {
                let dt_us = w[1].t_ms.saturating_sub(w[0].t_ms).max(1) as f64 * 1000.0;
                let cpus = w[1].cpu_usec.saturating_sub(w[0].cpu_usec) as f64 / dt_us;
                let t = secs(w[1]);
                Point {
                    x: t,
                    y: cpus,
                    tip: format!("{name} {t:.0}s: {} CPUs", fmt::small(cpus)),
                }
            })
            .collect()
    })
}

/// Each member's memory use.
pub(super) fn memory_lines(cell: &CellData) -> Vec<Line> {
    per_member(cell, |name, samples| {
        samples
            .iter()
            .map(|s| {
                let t = secs(s);
                let b = s.memory_bytes as f64;
                Point {
                    x: t,
                    y: b,
                    tip: format!("{name} {t:.0}s: {}", fmt::bytes(b)),
                }
            })
            .collect()
    })
}

/// The lag chart's unit: time when the engine reports its lag in
/// milliseconds (the points are in µs then), else bytes.
pub(super) fn lag_axis_unit(cell: &CellData) -> crate::report::charts::Unit {
    let ms = cell
        .record
        .fidelity
        .members
        .values()
        .any(|m| m.lag_unit.as_deref() == Some("ms"));
    if ms {
        crate::report::charts::Unit::Micros
    } else {
        crate::report::charts::Unit::Bytes
    }
}

/// How far behind the primary each secondary was, per reading; a
/// reading that failed is left out (the fidelity record has it).
pub(super) fn lag_lines(cell: &CellData) -> Vec<Line> {
    cell.record
        .fidelity
        .members
        .iter()
        .enumerate()
        .filter(|(_, (_, m))| !m.lag.is_empty())
        .map(|(i, (name, m))| {
            let points = m
                .lag
                .iter()
                .filter_map(|l| {
                    let behind = l.behind?;
                    let t = l.t_ms as f64 / 1000.0;
                    let link = if l.linked { "" } else { ", not linked" };
                    let (y, what) = match m.lag_unit.as_deref() {
                        Some("ms") => (behind as f64 * 1000.0, format!("{behind} ms")),
                        _ => (behind as f64, fmt::bytes(behind as f64)),
                    };
                    Some(Point {
                        x: t,
                        y,
                        tip: format!("{name} {t:.0}s: {what} behind{link}"),
                    })
                })
                .collect();
            line(style(i + 1, name), points)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::resources::tests::cell;
    use super::*;
    use crate::results::model::{LagSample, MemberFidelity};

    fn member_sample(t_ms: u64, cpu_usec: u64, mem: u64) -> ResourceSample {
        ResourceSample {
            t_ms,
            cpu_usec,
            memory_bytes: mem,
            cgroup: "m1".into(),
            ..ResourceSample::default()
        }
    }

    #[test]
    fn one_server_has_no_member_lines() {
        let c = cell();
        assert!(cpu_lines(&c).is_empty());
        assert!(memory_lines(&c).is_empty());
        assert!(lag_lines(&c).is_empty());
    }

    #[test]
    fn each_member_gets_its_cpu_memory_and_lag_line() {
        let mut c = cell();
        c.samples.push(member_sample(1000, 0, 10));
        c.samples.push(member_sample(2000, 500_000, 20));
        c.samples.push(member_sample(4000, 2_500_000, 30));
        let m = MemberFidelity {
            lag: vec![
                LagSample {
                    t_ms: 1500,
                    phase: "load".into(),
                    linked: true,
                    behind: Some(4096),
                },
                LagSample {
                    t_ms: 2500,
                    phase: "load".into(),
                    linked: false,
                    behind: None,
                },
            ],
            ..MemberFidelity::default()
        };
        c.record.fidelity.members.insert("m1".into(), m);
        let cpu = cpu_lines(&c);
        let names: Vec<&str> = cpu.iter().map(|l| l.style.name.as_str()).collect();
        assert_eq!(names, [PRIMARY, "m1"]);
        let ys: Vec<f64> = cpu[1].points.iter().map(|p| p.y).collect();
        assert_eq!(ys, [0.5, 1.0]);
        let mem = memory_lines(&c);
        assert_eq!(
            mem[1].points.iter().map(|p| p.y).collect::<Vec<_>>(),
            [10.0, 20.0, 30.0]
        );
        // The primary's line is the server's samples.
        assert_eq!(
            mem[0].points.len(),
            c.samples.iter().filter(|s| s.cgroup != "m1").count()
        );
        let lag = lag_lines(&c);
        assert_eq!(lag.len(), 1);
        assert_eq!(lag[0].points.len(), 1, "the failed reading is left out");
        assert_eq!((lag[0].points[0].x, lag[0].points[0].y), (1.5, 4096.0));
        assert_eq!(lag_axis_unit(&c), crate::report::charts::Unit::Bytes);
        // A MongoDB secondary's lag is oplog time: drawn as time.
        let m = c.record.fidelity.members.get_mut("m1").unwrap();
        m.lag_unit = Some("ms".into());
        let lag = lag_lines(&c);
        assert_eq!(lag[0].points[0].y, 4_096_000.0);
        assert!(lag[0].points[0].tip.contains("4096 ms behind"));
        assert_eq!(lag_axis_unit(&c), crate::report::charts::Unit::Micros);
    }
}
