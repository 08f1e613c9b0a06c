//! A cell's records, one click away: the cell, its planned limits, its
//! fidelity record, its knobs and the host.

use super::super::header::host_facts;
use super::super::{Table, kv_table};
use crate::report::fmt;
use crate::results::layout::CellData;
use crate::results::model::{CellRecord, FidelityRecord, RunRecord};
use std::collections::BTreeMap;

/// The tables of a cell's details.
pub(super) fn tables(run: &RunRecord, cell: &CellData) -> Vec<Table> {
    let rec = &cell.record;
    let mut host = host_facts(&run.host);
    host.extend(
        run.host
            .transparent_hugepages
            .clone()
            .map(|t| ("Transparent huge pages".into(), t)),
    );
    let mut tables = vec![kv_table("Cell", cell_facts(rec))];
    let workload = workload_facts(rec);
    if !workload.is_empty() {
        tables.push(kv_table("Workload", workload));
    }
    tables.extend([
        kv_table("Limits (planned)", pairs(&rec.limits)),
        kv_table("Fidelity record", fidelity_facts(&rec.fidelity)),
        kv_table("Knobs", pairs(&rec.knobs)),
        kv_table("Host", host),
    ]);
    tables
}

/// What a phase ran in beyond its name, where the workload records it:
/// TPC-C on MongoDB's document schema and transaction mode, per phase.
fn workload_facts(rec: &CellRecord) -> Vec<(String, String)> {
    rec.phases
        .iter()
        .filter_map(|p| {
            let m = p.mongo_tpcc.as_ref()?;
            Some((p.name.clone(), format!("TPC-C on MongoDB: {m}")))
        })
        .collect()
}

fn pairs(m: &BTreeMap<String, String>) -> Vec<(String, String)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Key, engine, environment (and image), threads, data size, status.
fn cell_facts(rec: &CellRecord) -> Vec<(String, String)> {
    let mut facts = vec![
        ("Cell key".to_string(), rec.key.clone()),
        ("Engine".into(), format!("{}@{}", rec.engine, rec.version)),
        (
            "Engine reports version".into(),
            rec.engine_reported_version.clone(),
        ),
        (
            "Environment".into(),
            format!("{} ({})", rec.environment, rec.backend),
        ),
        ("Threads".into(), rec.threads.to_string()),
        ("Repetition".into(), rec.repetition.to_string()),
        ("Data size".into(), fmt::bytes_or_dash(rec.data_size_bytes)),
        ("Status".into(), rec.status.to_string()),
        (
            "Failure".into(),
            rec.failure.clone().unwrap_or_else(|| fmt::DASH.into()),
        ),
        ("Overhead (s)".into(), format!("{:.1}", rec.overhead_s)),
    ];
    if let Some(image) = &rec.image {
        // Right after the environment it ran in.
        facts.insert(4, ("Image".into(), image.describe()));
    }
    if let Some(n) = &rec.node {
        facts.push((
            "Node".into(),
            format!(
                "{} ({} job {}; allocation CPUs {}, memory {}; hardware class {})",
                n.name,
                n.scheduler,
                n.job_id,
                n.allocation_cpus,
                fmt::bytes_or_dash(n.allocation_memory_bytes),
                n.host.class()
            ),
        ));
    }
    if let Some(source) = &rec.load_source {
        facts.push(("Data".into(), data_source(source)));
    }
    if let Some(d) = &rec.data_digest {
        facts.push(("Records digest".into(), d.clone()));
    }
    if !rec.topology.is_empty() {
        facts.push(("Topology".into(), rec.topology.clone()));
    }
    if let Some(s) = rec.topology_ready_s {
        facts.push(("Ready for the load (s)".into(), format!("{s:.1}")));
    }
    facts
}

/// Where the data of the phases came from, in words; a snapshot
/// discarded before the load says why first.
pub(super) fn data_source(source: &crate::results::model::LoadSource) -> String {
    use crate::results::model::LoadSource;
    let text = loaded_or_restored(source);
    match source {
        LoadSource::Fresh {
            key,
            discarded: Some(why),
            ..
        } => format!(
            "snapshot {} discarded ({why}); {text}",
            key.as_deref().unwrap_or("-")
        ),
        _ => text,
    }
}

fn loaded_or_restored(source: &crate::results::model::LoadSource) -> String {
    use crate::results::model::LoadSource;
    match source {
        LoadSource::Snapshot {
            key,
            restore_s,
            load_s,
            from_run,
        } => format!(
            "restored from snapshot {key} in {restore_s:.1}s (its load took {load_s:.1}s in run {from_run}); the phases ran on restored data"
        ),
        LoadSource::Fresh {
            key: Some(key),
            saved: true,
            save_s,
            ..
        } => format!(
            "loaded by this cell, then saved as snapshot {key} in {:.1}s",
            save_s.unwrap_or(0.0)
        ),
        LoadSource::Fresh {
            key,
            note: Some(note),
            ..
        } => format!(
            "loaded by this cell; snapshot {}: {note}",
            key.as_deref().unwrap_or("-")
        ),
        LoadSource::Fresh { .. } => "loaded by this cell".into(),
    }
}

/// The verdict, kills and restarts, CPUs, the hog, and what was read back.
fn fidelity_facts(f: &FidelityRecord) -> Vec<(String, String)> {
    let mut cpus: BTreeMap<&str, usize> = BTreeMap::new();
    for list in f.engine_thread_cpus.values() {
        *cpus.entry(list.as_str()).or_default() += 1;
    }
    let mut facts = vec![
        (
            "Verdict".to_string(),
            if f.is_valid() {
                "valid".to_string()
            } else {
                format!("INVALID: {}", f.violations.join("; "))
            },
        ),
        ("OOM kills".into(), f.oom_kills.to_string()),
        ("Engine restarts".into(), f.engine_restarts.to_string()),
        (
            "Engine threads by CPUs allowed".into(),
            if cpus.is_empty() {
                fmt::DASH.into()
            } else {
                cpus.iter()
                    .map(|(l, n)| format!("{n} on {l}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        (
            "Hog locked".into(),
            f.hog_locked_bytes
                .map_or_else(|| "no hog".into(), |b| fmt::bytes(b as f64)),
        ),
        (
            "Engine-reported cache".into(),
            fmt::bytes_or_dash(f.engine_reported_cache_bytes),
        ),
    ];
    facts.extend(
        f.limits_read_back
            .iter()
            .map(|(k, v)| (format!("read back: {k}"), v.clone())),
    );
    let lost = cpu_lost(f);
    if !lost.is_empty() {
        facts.push(("Server CPUs lost, per phase".into(), lost));
    }
    if let Some(n) = &f.network {
        facts.push(("Network".into(), network_fact(n)));
    }
    if let Some(d) = &f.disk {
        facts.push(("Data disk".into(), disk_fact(d)));
    }
    facts
}

/// The data disk asked and what statvfs read back on the data dir.
fn disk_fact(d: &crate::results::model::DiskFidelity) -> String {
    let r = &d.read_back;
    let on = if r.mounted {
        format!("{} filesystem", r.fs_type)
    } else {
        "NOT mounted: the data dir was on the work root's filesystem".into()
    };
    format!(
        "{} asked; {on} of {} read back (statvfs), {} free when the cell ended",
        d.asked,
        fmt::bytes(r.size.0 as f64),
        fmt::bytes(r.available.0 as f64)
    )
}

/// The asked network, the round trip measured through it and on the bare
/// loopback, and what the relay cost the client.
fn network_fact(n: &crate::results::model::NetworkFidelity) -> String {
    let mut text = format!(
        "{}; round trip {} us measured (median of {}; loopback {} us)",
        n.asked.describe(),
        n.round_trip.median_us,
        n.round_trip.count,
        n.loopback.median_us
    );
    if let Some(r) = &n.relay {
        text.push_str(&format!(
            "; relay: {} connection(s), {}, {:.0} us late on average, {:.1} s of the client's CPU",
            r.connections,
            fmt::bytes(r.bytes as f64),
            r.late_mean_us,
            r.cpu_us as f64 / 1e6
        ));
    }
    if let Some(ns) = &n.namespace {
        text.push_str(&format!(
            "; namespace {}, qdiscs on its loopback: {}",
            ns.name,
            ns.qdiscs.join(" | ")
        ));
    }
    text
}

/// What each phase lost of the server's CPUs: to work outside its cgroup
/// and to the hypervisor (steal), with the steal the environment allows.
fn cpu_lost(f: &FidelityRecord) -> String {
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    f.phase_io
        .iter()
        .filter(|(_, io)| io.cpu_foreign_share.is_some() || io.cpu_steal_share.is_some())
        .map(|(name, io)| {
            let allowed = io
                .cpu_steal_allowed
                .map(|a| format!(" (allowed {})", pct(a)))
                .unwrap_or_default();
            format!(
                "{name}: others {}, steal {}{allowed}",
                io.cpu_foreign_share.map_or(fmt::DASH.into(), pct),
                io.cpu_steal_share.map_or(fmt::DASH.into(), pct)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(us: u64) -> crate::network::probe::RoundTrips {
        crate::network::probe::RoundTrips {
            count: 100,
            median_us: us,
            p10_us: us,
            p90_us: us,
        }
    }

    /// The "Network" fact of a record with `network`.
    fn network_text(network: crate::results::model::NetworkFidelity) -> String {
        let f = FidelityRecord {
            network: Some(network),
            ..FidelityRecord::default()
        };
        let facts = fidelity_facts(&f);
        let (_, text) = facts.iter().find(|(k, _)| k == "Network").unwrap();
        text.clone()
    }

    /// A network's record: `delay` and `rate` asked with `emulation`,
    /// a loopback of 40 us and `measured` us through it.
    fn network(
        delay: &str,
        rate: Option<&str>,
        emulation: crate::network::Emulation,
        measured: u64,
    ) -> crate::results::model::NetworkFidelity {
        crate::results::model::NetworkFidelity {
            asked: crate::network::Network {
                delay: delay.parse().unwrap(),
                jitter: None,
                rate: rate.map(|r| r.parse().unwrap()),
                loss: 0.0,
                emulation,
            },
            loopback: rt(40),
            round_trip: rt(measured),
            relay: None,
            links: None,
            namespace: None,
        }
    }

    #[test]
    fn fidelity_facts_show_the_network_asked_and_measured() {
        let mut n = network("1ms", None, crate::network::Emulation::Proxy, 2150);
        n.relay = Some(crate::network::relay::RelayStats {
            connections: 17,
            cpu_us: 2_500_000,
            ..Default::default()
        });
        let text = network_text(n);
        assert!(
            text.starts_with("delay 1ms (proxy); round trip 2150 us measured"),
            "{text}"
        );
        assert!(text.contains("loopback 40 us"), "{text}");
        assert!(
            text.contains("17 connection(s)") && text.contains("2.5 s of the client's CPU"),
            "{text}"
        );
        assert!(!text.contains("namespace"), "{text}");
    }

    #[test]
    fn fidelity_facts_show_the_kernel_emulations_qdiscs() {
        let mut n = network("0us", Some("10mbit"), crate::network::Emulation::Kernel, 60);
        n.namespace = Some(crate::results::model::NamespaceFidelity {
            name: "benchcage-r1".into(),
            qdiscs: vec!["qdisc tbf 8001: root refcnt 2 rate 10Mbit burst 256Kb lat 100ms".into()],
            inode: Some(4026532174),
            engine_inode: Some(4026532174),
            bridge: None,
        });
        let text = network_text(n);
        assert!(text.contains("(kernel)"), "{text}");
        assert!(
            text.contains(
                "namespace benchcage-r1, qdiscs on its loopback: qdisc tbf 8001: root refcnt 2 rate 10Mbit"
            ),
            "{text}"
        );
    }

    #[test]
    fn fidelity_facts_show_the_data_disk_asked_and_read_back() {
        let f = FidelityRecord {
            disk: Some(crate::results::model::DiskFidelity {
                asked: crate::units::Bytes::from_mib(64),
                read_back: crate::sandbox::disk::DiskReadBack {
                    size: crate::units::Bytes::from_mib(58),
                    available: crate::units::Bytes::from_mib(57),
                    fs_type: "ext4".into(),
                    mounted: true,
                },
            }),
            ..FidelityRecord::default()
        };
        let facts = fidelity_facts(&f);
        let (_, text) = facts.iter().find(|(k, _)| k == "Data disk").unwrap();
        assert!(
            text.starts_with("64MiB asked; ext4 filesystem of 58"),
            "{text}"
        );
    }

    #[test]
    fn fidelity_facts_show_each_phases_lost_cpu_and_the_steal_allowed() {
        let mut f = FidelityRecord::default();
        f.phase_io.insert(
            "02-reads-t4".into(),
            crate::results::model::PhaseIo {
                cpu_foreign_share: Some(0.02),
                cpu_steal_share: Some(0.23),
                cpu_steal_allowed: Some(0.3),
                ..Default::default()
            },
        );
        let facts = fidelity_facts(&f);
        let lost = facts
            .iter()
            .find(|(k, _)| k == "Server CPUs lost, per phase")
            .map(|(_, v)| v.as_str());
        assert_eq!(
            lost,
            Some("02-reads-t4: others 2%, steal 23% (allowed 30%)")
        );
    }

    #[test]
    fn fidelity_facts_say_what_was_violated_and_count_threads_by_cpus() {
        let f = FidelityRecord {
            violations: vec!["hog lost its lock".into()],
            engine_thread_cpus: [("1", "2"), ("2", "2"), ("3", "0-1")]
                .into_iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            ..FidelityRecord::default()
        };
        let facts = fidelity_facts(&f);
        assert_eq!(facts[0].1, "INVALID: hog lost its lock");
        assert_eq!(facts[3].1, "1 on 0-1, 2 on 2");
        assert_eq!(facts[4].1, "no hog");
        assert_eq!(facts[5].1, "—");
    }

    #[test]
    fn cell_facts_dash_what_is_unknown() {
        let facts = cell_facts(&CellRecord {
            engine: "redis".into(),
            version: "7.0".into(),
            environment: "small".into(),
            backend: "cgroup".into(),
            ..CellRecord::default()
        });
        assert_eq!(facts[1].1, "redis@7.0");
        assert_eq!(facts[3].1, "small (cgroup)");
        assert_eq!(facts[6], ("Data size".to_string(), "—".to_string()));
        assert_eq!(facts[8], ("Failure".to_string(), "—".to_string()));
    }
}

#[cfg(test)]
mod workload_tests {
    use super::super::resources::tests::phase;
    use super::*;
    use crate::model::{DocumentSchema, MongoTpccMode, TxnMode};

    #[test]
    fn a_cell_shows_the_schema_and_transactions_of_its_mongodb_tpcc_phases_only() {
        let mut rec = CellRecord::default();
        let mut load = phase("load", 1.0);
        load.mongo_tpcc = Some(MongoTpccMode {
            schema: DocumentSchema::Normalized,
            transactions: None,
        });
        let mut run = phase("run", 1.0);
        run.mongo_tpcc = Some(MongoTpccMode {
            schema: DocumentSchema::Normalized,
            transactions: Some(TxnMode::None),
        });
        let other = phase("ycsb", 1.0);
        rec.phases = vec![load, run, other];
        let facts = workload_facts(&rec);
        assert_eq!(facts.len(), 2, "{facts:?}");
        assert_eq!(
            facts[0],
            (
                "load".to_string(),
                "TPC-C on MongoDB: normalized documents (ORDER_LINE a collection of its own)"
                    .to_string()
            )
        );
        assert!(
            facts[1]
                .1
                .ends_with("no transactions (py-tpcc's non-transactional mode)"),
            "{facts:?}"
        );
        rec.phases.truncate(0);
        assert!(workload_facts(&rec).is_empty());
    }
}

#[cfg(test)]
mod data_source_tests {
    use super::*;
    use crate::results::model::LoadSource;

    #[test]
    fn a_cell_on_restored_data_says_so_with_its_snapshot_and_times() {
        let mut rec = CellRecord {
            load_source: Some(LoadSource::Snapshot {
                key: "0123456789abcdef".into(),
                restore_s: 1.25,
                load_s: 25.0,
                from_run: "20261201-120000-abcd".into(),
            }),
            data_digest: Some("2000 rows, md5 x".into()),
            ..CellRecord::default()
        };
        let facts = cell_facts(&rec);
        let data = facts.iter().find(|(k, _)| k == "Data").unwrap();
        assert_eq!(
            data.1,
            "restored from snapshot 0123456789abcdef in 1.2s (its load took 25.0s in run 20261201-120000-abcd); the phases ran on restored data"
        );
        assert!(
            facts
                .iter()
                .any(|(k, v)| k == "Records digest" && v == "2000 rows, md5 x")
        );
        rec.load_source = Some(LoadSource::Fresh {
            key: Some("0123456789abcdef".into()),
            saved: false,
            save_s: None,
            note: Some("not saved: another run saved the same key first".into()),
            discarded: None,
        });
        let facts = cell_facts(&rec);
        let data = facts.iter().find(|(k, _)| k == "Data").unwrap();
        assert!(data.1.contains("another run saved"), "{}", data.1);
        rec.load_source = Some(LoadSource::Fresh {
            key: Some("0123456789abcdef".into()),
            saved: true,
            save_s: Some(0.5),
            note: None,
            discarded: Some("the engine did not start on it: FATAL".into()),
        });
        let facts = cell_facts(&rec);
        let data = facts.iter().find(|(k, _)| k == "Data").unwrap();
        assert_eq!(
            data.1,
            "snapshot 0123456789abcdef discarded (the engine did not start on it: FATAL); loaded by this cell, then saved as snapshot 0123456789abcdef in 0.5s"
        );
        rec.load_source = None;
        assert!(!cell_facts(&rec).iter().any(|(k, _)| k == "Data"));
    }
}
