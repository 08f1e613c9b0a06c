//! Every second, the server's and the client's kernel counters, recorded as
//! a time series for the cell (`samples.json`).
//!
//! The sampler reads through [`StatsSource`] so that it does not know the
//! backend; the run hands it the sandbox's stats reader, which needs no
//! access to the sandbox, so a long readiness wait or phase never stalls
//! it. It also publishes the latest server sample for the live view.

use crate::results::model::ResourceSample;
use crate::sandbox::CgroupStats;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Which cgroup a sample is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Server,
    Client,
}

impl Target {
    /// Both cgroups: the client runs on this host.
    pub const BOTH: &'static [Target] = &[Target::Server, Target::Client];
    /// The server's only: the client runs on another node, and what its
    /// cgroup here holds (the `srun` that started it) is not the client.
    pub const SERVER: &'static [Target] = &[Target::Server];

    /// The name recorded in [`ResourceSample::cgroup`].
    pub fn name(self) -> &'static str {
        match self {
            Target::Server => "server",
            Target::Client => "client",
        }
    }
}

/// Where the sampler reads kernel counters from.
#[async_trait::async_trait]
pub(crate) trait StatsSource: Send + Sync {
    /// Counters of one cgroup; an error skips that sample (the cgroup may be
    /// gone already while the sampler stops).
    async fn stats(&self, target: Target) -> anyhow::Result<CgroupStats>;

    /// Counters of the topology's other members (a replica set's
    /// secondaries), by member name, sampled beside the server's: those
    /// that cannot be read now (not provisioned yet, gone) are left out.
    async fn member_stats(&self) -> Vec<(String, CgroupStats)> {
        Vec::new()
    }
}

/// One sample from the kernel counters of one cgroup.
pub(crate) fn to_sample(t_ms: u64, target: Target, phase: &str, s: &CgroupStats) -> ResourceSample {
    sample_of(t_ms, target.name(), phase, s)
}

/// One sample of the cgroup named `cgroup` (`server`, `client`, or a
/// member's name).
fn sample_of(t_ms: u64, cgroup: &str, phase: &str, s: &CgroupStats) -> ResourceSample {
    ResourceSample {
        t_ms,
        cpu_usec: s.cpu_usec,
        memory_bytes: s.memory_usage,
        memory_limit_bytes: s.memory_limit,
        page_cache_bytes: s.page_cache,
        rss_bytes: s.rss,
        major_faults: s.major_faults,
        io_read_bytes: s.io_read_bytes,
        io_write_bytes: s.io_write_bytes,
        cgroup: cgroup.to_string(),
        phase: phase.to_string(),
        inactive_file_bytes: s.inactive_file,
    }
}

/// A running sampler. Stop it with [`Sampler::finish`] to get its series.
pub(crate) struct Sampler {
    stop: CancellationToken,
    join: JoinHandle<Vec<ResourceSample>>,
    phase: Arc<Mutex<String>>,
    latest: watch::Receiver<Option<ResourceSample>>,
}

impl Sampler {
    /// Start sampling `targets` every `period`; `epoch` is the cell's
    /// start, from which `t_ms` counts. The first sample is taken at once.
    pub fn start(
        source: Arc<dyn StatsSource>,
        targets: &'static [Target],
        period: Duration,
        epoch: Instant,
    ) -> Sampler {
        let stop = CancellationToken::new();
        let phase = Arc::new(Mutex::new(String::new()));
        let (tx, latest) = watch::channel(None);
        let join = tokio::spawn(sample_loop(
            source,
            targets,
            period,
            epoch,
            stop.clone(),
            phase.clone(),
            tx,
        ));
        Sampler {
            stop,
            join,
            phase,
            latest,
        }
    }

    /// Label the samples that follow with this stage or phase.
    pub(crate) fn set_phase(&self, name: &str) {
        let mut p = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *p = name.to_string();
    }

    /// The label of the samples being taken, shared (the replication lag
    /// samples carry it too).
    pub(crate) fn phase_label(&self) -> Arc<Mutex<String>> {
        self.phase.clone()
    }

    /// The latest server sample, for the live view.
    pub fn latest(&self) -> watch::Receiver<Option<ResourceSample>> {
        self.latest.clone()
    }

    /// Stop and return every sample, in time order.
    pub async fn finish(self) -> Vec<ResourceSample> {
        self.stop.cancel();
        self.join.await.unwrap_or_default()
    }
}

async fn sample_loop(
    source: Arc<dyn StatsSource>,
    targets: &'static [Target],
    period: Duration,
    epoch: Instant,
    stop: CancellationToken,
    phase: Arc<Mutex<String>>,
    latest: watch::Sender<Option<ResourceSample>>,
) -> Vec<ResourceSample> {
    let mut out = Vec::new();
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        // Stopping takes one closing sample: a cell (or a member) that lives
        // less than a period between two ticks is still seen running.
        let closing = tokio::select! {
            _ = stop.cancelled() => true,
            _ = tick.tick() => false,
        };
        let t_ms = epoch.elapsed().as_millis() as u64;
        let label = phase.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for &target in targets {
            if let Ok(stats) = source.stats(target).await {
                let sample = to_sample(t_ms, target, &label, &stats);
                if target == Target::Server {
                    latest.send_replace(Some(sample.clone()));
                }
                out.push(sample);
            }
        }
        for (name, stats) in source.member_stats().await {
            out.push(sample_of(t_ms, &name, &label, &stats));
        }
        if closing {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Counters that grow by one major fault and 4 KiB read per call.
    struct Growing(AtomicU64);

    #[async_trait::async_trait]
    impl StatsSource for Growing {
        async fn stats(&self, target: Target) -> anyhow::Result<CgroupStats> {
            if target == Target::Client {
                anyhow::bail!("no client cgroup");
            }
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            Ok(CgroupStats {
                memory_usage: 100 + n,
                memory_limit: 1000,
                major_faults: n,
                io_read_bytes: 4096 * n,
                ..Default::default()
            })
        }
    }

    #[tokio::test]
    async fn sampler_records_one_sample_per_period_labelled_with_the_phase() {
        let sampler = Sampler::start(
            Arc::new(Growing(AtomicU64::new(0))),
            Target::BOTH,
            Duration::from_millis(50),
            Instant::now(),
        );
        sampler.set_phase("load");
        tokio::time::sleep(Duration::from_millis(125)).await;
        sampler.set_phase("workload-a/t4");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let latest = sampler.latest();
        let samples = sampler.finish().await;
        let latest = latest.borrow().clone().unwrap();
        assert!(samples.len() >= 4, "{}", samples.len());
        assert!(samples.iter().all(|s| s.cgroup == "server"));
        assert!(
            samples
                .windows(2)
                .all(|w| w[0].major_faults < w[1].major_faults)
        );
        assert_eq!(samples.last().unwrap().phase, "workload-a/t4");
        assert_eq!(latest.major_faults, samples.last().unwrap().major_faults);
        assert!(samples.iter().any(|s| s.phase == "load"));
    }

    #[tokio::test]
    async fn stopping_takes_a_closing_sample_of_every_cgroup() {
        let sampler = Sampler::start(
            Arc::new(Topology),
            Target::BOTH,
            Duration::from_secs(3600),
            Instant::now(),
        );
        tokio::time::sleep(Duration::from_millis(60)).await;
        sampler.set_phase("teardown");
        let samples = sampler.finish().await;
        // The first tick's sample and the closing one, each of every cgroup.
        assert_eq!(samples.len(), 6, "{samples:?}");
        let last: Vec<_> = samples.iter().filter(|s| s.phase == "teardown").collect();
        assert_eq!(last.len(), 3, "{samples:?}");
        assert!(last.iter().all(|s| s.t_ms >= 60), "{last:?}");
    }

    #[tokio::test]
    async fn a_client_on_another_node_is_not_sampled_here() {
        let sampler = Sampler::start(
            Arc::new(Topology),
            Target::SERVER,
            Duration::from_secs(3600),
            Instant::now(),
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
        let samples = sampler.finish().await;
        let of = |name: &str| samples.iter().filter(|s| s.cgroup == name).count();
        assert_eq!(
            (of("server"), of("m1"), of("client")),
            (2, 2, 0),
            "{samples:?}"
        );
    }

    /// A server and two members, m2 not readable.
    struct Topology;

    #[async_trait::async_trait]
    impl StatsSource for Topology {
        async fn stats(&self, target: Target) -> anyhow::Result<CgroupStats> {
            Ok(CgroupStats {
                cpu_usec: if target == Target::Server { 1 } else { 2 },
                ..Default::default()
            })
        }
        async fn member_stats(&self) -> Vec<(String, CgroupStats)> {
            let s = CgroupStats {
                cpu_usec: 7,
                ..Default::default()
            };
            vec![("m1".into(), s)]
        }
    }

    #[tokio::test]
    async fn the_members_of_a_topology_are_sampled_beside_the_server_under_their_names() {
        let sampler = Sampler::start(
            Arc::new(Topology),
            Target::BOTH,
            Duration::from_millis(40),
            Instant::now(),
        );
        sampler.set_phase("load");
        tokio::time::sleep(Duration::from_millis(100)).await;
        *sampler.phase_label().lock().unwrap() = "reads/t1".into();
        tokio::time::sleep(Duration::from_millis(60)).await;
        let samples = sampler.finish().await;
        let of = |name: &str| samples.iter().filter(|s| s.cgroup == name).count();
        assert!(of("m1") >= 3, "{samples:?}");
        assert_eq!(of("m1"), of("server"));
        assert_eq!(of("m1"), of("client"));
        assert!(
            samples
                .iter()
                .filter(|s| s.cgroup == "m1")
                .all(|s| s.cpu_usec == 7)
        );
        assert!(
            samples
                .iter()
                .any(|s| s.cgroup == "m1" && s.phase == "reads/t1")
        );
    }

    #[test]
    fn a_sample_carries_every_counter() {
        let s = CgroupStats {
            memory_usage: 1,
            memory_limit: 2,
            page_cache: 3,
            rss: 4,
            inactive_file: 5,
            major_faults: 6,
            cpu_usec: 7,
            io_read_bytes: 8,
            io_write_bytes: 9,
            ..Default::default()
        };
        let r = to_sample(10, Target::Client, "p", &s);
        assert_eq!(
            (
                r.memory_bytes,
                r.memory_limit_bytes,
                r.page_cache_bytes,
                r.rss_bytes
            ),
            (1, 2, 3, 4)
        );
        assert_eq!(
            (
                r.inactive_file_bytes,
                r.major_faults,
                r.cpu_usec,
                r.io_read_bytes
            ),
            (5, 6, 7, 8)
        );
        assert_eq!(
            (r.io_write_bytes, r.t_ms, r.cgroup.as_str()),
            (9, 10, "client")
        );
    }
}
