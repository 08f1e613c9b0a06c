//! The proxy emulation of a network: a TCP relay between the client and
//! the server that holds each chunk of a stream for the asked one-way
//! delay (plus jitter), paces it to the asked rate, and makes a lost chunk
//! wait a retransmission timeout, in the manner of Toxiproxy. Used where
//! the kernel has no netem (docs/network.md).
//!
//! Each direction of a connection is a reader thread and a writer thread
//! joined by a bounded queue: the reader stamps a chunk with the instant
//! it may leave, the writer sleeps until then and writes it. Threads, not
//! tokio tasks, because tokio's timer ticks in milliseconds and a 100 us
//! delay needs the kernel's own sleep (timer slack set to 1 ns).
//!
//! A TCP stream cannot lose bytes, so loss is what a lost segment costs
//! TCP: the chunk (and, in order, everything behind it) waits Linux's
//! minimum retransmission timeout of 200 ms.

use super::Shape;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Linux's TCP_RTO_MIN: what one lost segment delays a stream by.
pub const RETRANSMIT: Duration = Duration::from_millis(200);

/// Chunks in flight per direction before the reader stops reading (and
/// the sender's TCP window closes), as a real link's queue would.
const QUEUE: usize = 256;

/// What a relay did, for fidelity: its traffic and how late it released
/// chunks past their due instant (its own added latency).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RelayStats {
    pub connections: u64,
    pub chunks: u64,
    /// Both directions together.
    pub bytes: u64,
    /// The client's requests, toward the server.
    #[serde(default)]
    pub bytes_to_server: u64,
    /// The server's answers, toward the client.
    #[serde(default)]
    pub bytes_to_client: u64,
    /// Chunks that took the retransmission timeout.
    pub lost: u64,
    /// Mean and largest lateness of a write past its due instant, in us.
    pub late_mean_us: f64,
    pub late_max_us: u64,
    /// CPU time the relay's threads used, in us: taken from the client's
    /// CPUs, where the load generator runs too.
    #[serde(default)]
    pub cpu_us: u64,
}

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    chunks: AtomicU64,
    /// Bytes written toward the server (`[0]`) and toward the client (`[1]`).
    bytes: [AtomicU64; 2],
    lost: AtomicU64,
    late_sum_us: AtomicU64,
    late_max_us: AtomicU64,
    cpu_us: AtomicU64,
    /// Threads of connections still running.
    live: AtomicU64,
}

impl Counters {
    fn stats(&self) -> RelayStats {
        let chunks = self.chunks.load(Ordering::Relaxed);
        RelayStats {
            connections: self.connections.load(Ordering::Relaxed),
            chunks,
            bytes: self.bytes.iter().map(|b| b.load(Ordering::Relaxed)).sum(),
            bytes_to_server: self.bytes[0].load(Ordering::Relaxed),
            bytes_to_client: self.bytes[1].load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            late_mean_us: if chunks == 0 {
                0.0
            } else {
                self.late_sum_us.load(Ordering::Relaxed) as f64 / chunks as f64
            },
            late_max_us: self.late_max_us.load(Ordering::Relaxed),
            cpu_us: self.cpu_us.load(Ordering::Relaxed),
        }
    }
}

impl RelayStats {
    /// What happened between `before` and `self` (both of one relay or
    /// one set of relays): the traffic counters' differences.
    pub fn since(&self, before: &RelayStats) -> RelayStats {
        RelayStats {
            connections: self.connections.saturating_sub(before.connections),
            chunks: self.chunks.saturating_sub(before.chunks),
            bytes: self.bytes.saturating_sub(before.bytes),
            bytes_to_server: self.bytes_to_server.saturating_sub(before.bytes_to_server),
            bytes_to_client: self.bytes_to_client.saturating_sub(before.bytes_to_client),
            lost: self.lost.saturating_sub(before.lost),
            late_mean_us: self.late_mean_us,
            late_max_us: self.late_max_us,
            cpu_us: self.cpu_us.saturating_sub(before.cpu_us),
        }
    }

    /// Several relays' stats as one: counters summed, lateness weighted
    /// by chunks.
    pub fn sum(all: impl IntoIterator<Item = RelayStats>) -> RelayStats {
        let mut t = RelayStats::default();
        let mut late_sum = 0.0;
        for s in all {
            late_sum += s.late_mean_us * s.chunks as f64;
            t.connections += s.connections;
            t.chunks += s.chunks;
            t.bytes += s.bytes;
            t.bytes_to_server += s.bytes_to_server;
            t.bytes_to_client += s.bytes_to_client;
            t.lost += s.lost;
            t.cpu_us += s.cpu_us;
            t.late_max_us = t.late_max_us.max(s.late_max_us);
        }
        if t.chunks > 0 {
            t.late_mean_us = late_sum / t.chunks as f64;
        }
        t
    }
}

/// The link the connections of a cell share: its rate paces all of them
/// together, each direction on its own, as one network interface's queue
/// would (a rate per connection would let N connections carry N times
/// it). Clones share the link.
#[derive(Clone, Default)]
pub struct Wire {
    /// When each direction (toward the server, toward the client) is
    /// free again.
    free: [Arc<Mutex<Option<Instant>>>; 2],
}

/// A running relay: listens on `addr()`, forwards to its upstream.
pub struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    counters: Arc<Counters>,
    acceptor: Option<JoinHandle<()>>,
}

impl Relay {
    /// Listens on `listen` (port 0 picks one) and relays every connection
    /// to `upstream` through `shape`, its threads on `cpus` (the client's:
    /// the relay is part of the client's side of the link; empty: any),
    /// on a link of its own.
    pub fn start(
        listen: SocketAddr,
        upstream: SocketAddr,
        shape: Shape,
        cpus: &[u32],
    ) -> io::Result<Relay> {
        Self::open(listen, upstream, shape, cpus, Wire::default(), None)
    }

    /// As [`Relay::start`], on `wire`: relays given clones of one wire
    /// share its rate.
    pub fn start_on(
        listen: SocketAddr,
        upstream: SocketAddr,
        shape: Shape,
        cpus: &[u32],
        wire: Wire,
    ) -> io::Result<Relay> {
        Self::open(listen, upstream, shape, cpus, wire, None)
    }

    /// As [`Relay::start`], its connections to `upstream` made inside the
    /// network namespace whose file is `netns` (the listener stays where
    /// the caller is): a bridge from the host's loopback into a cell's
    /// namespace.
    pub fn start_in(
        listen: SocketAddr,
        upstream: SocketAddr,
        shape: Shape,
        cpus: &[u32],
        netns: Option<&std::path::Path>,
    ) -> io::Result<Relay> {
        Self::open(listen, upstream, shape, cpus, Wire::default(), netns)
    }

    fn open(
        listen: SocketAddr,
        upstream: SocketAddr,
        shape: Shape,
        cpus: &[u32],
        wire: Wire,
        netns: Option<&std::path::Path>,
    ) -> io::Result<Relay> {
        let listener = TcpListener::bind(listen)?;
        let addr = listener.local_addr()?;
        let netns = netns.map(super::netns::open).transpose()?;
        let stop = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::new()));
        let counters = Arc::new(Counters::default());
        let (entered_tx, entered) = sync_channel::<io::Result<()>>(1);
        let acceptor = {
            let (stop, open, counters) = (stop.clone(), open.clone(), counters.clone());
            let cpus: Arc<[u32]> = cpus.into();
            std::thread::Builder::new()
                .name("relay-accept".into())
                .spawn(move || {
                    pin(&cpus);
                    // The acceptor connects upstream: inside the namespace.
                    let entered = netns.as_ref().map_or(Ok(()), super::netns::enter);
                    let ok = entered.is_ok();
                    let _ = entered_tx.send(entered);
                    if ok {
                        accept(
                            listener, upstream, shape, &wire, &cpus, &stop, &open, &counters,
                        )
                    }
                })?
        };
        entered
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the relay's acceptor ended")))?;
        Ok(Relay {
            addr,
            stop,
            open,
            counters,
            acceptor: Some(acceptor),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stats(&self) -> RelayStats {
        self.counters.stats()
    }

    /// Stops accepting, closes every relayed connection, and says what
    /// the relay did, once its connections' threads have ended (each adds
    /// its CPU time as it ends), or after a second.
    pub fn stop(mut self) -> RelayStats {
        self.shut();
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.counters.live.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.counters.stats()
    }

    fn shut(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
        for s in self
            .open
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
        {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if self.acceptor.is_some() {
            self.shut();
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn accept(
    listener: TcpListener,
    upstream: SocketAddr,
    shape: Shape,
    wire: &Wire,
    cpus: &Arc<[u32]>,
    stop: &AtomicBool,
    open: &Mutex<Vec<TcpStream>>,
    counters: &Arc<Counters>,
) {
    let mut seed = shape.seed;
    for client in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(upstream) else {
            // The server refused: so does the relay, as a direct
            // connection would have been refused.
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        counters.connections.fetch_add(1, Ordering::Relaxed);
        if let (Ok(c), Ok(s), Ok(mut v)) = (client.try_clone(), server.try_clone(), open.lock()) {
            v.push(c);
            v.push(s);
        }
        for (way, (from, to)) in [(&client, &server), (&server, &client)]
            .into_iter()
            .enumerate()
        {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            if let (Ok(from), Ok(to)) = (from.try_clone(), to.try_clone()) {
                let schedule = Schedule::on(shape.clone(), seed, wire.free[way].clone());
                pipe(from, to, way, schedule, cpus.clone(), counters.clone());
            }
        }
    }
}

/// One direction (`way`: 0 toward the server, 1 toward the client) of one
/// connection: a reader stamping chunks, a writer releasing them on time.
fn pipe(
    from: TcpStream,
    to: TcpStream,
    way: usize,
    schedule: Schedule,
    cpus: Arc<[u32]>,
    counters: Arc<Counters>,
) {
    let (tx, rx) = sync_channel::<Chunk>(QUEUE);
    let c = counters.clone();
    let reader_cpus = cpus.clone();
    c.live.fetch_add(2, Ordering::SeqCst);
    let spawned = std::thread::Builder::new()
        .name("relay-read".into())
        .spawn(move || {
            pin(&reader_cpus);
            read_side(from, &tx, schedule, &c);
            ended(&c);
        });
    if spawned.is_err() {
        counters.live.fetch_sub(1, Ordering::SeqCst);
    }
    let w = counters.clone();
    let spawned = std::thread::Builder::new()
        .name("relay-write".into())
        .spawn(move || {
            pin(&cpus);
            write_side(to, &rx, way, &w);
            ended(&w);
        });
    if spawned.is_err() {
        counters.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A relay thread ends: its CPU time counts.
fn ended(c: &Counters) {
    c.cpu_us.fetch_add(thread_cpu_us(), Ordering::Relaxed);
    c.live.fetch_sub(1, Ordering::SeqCst);
}

/// CPU time the calling thread has used, in us.
fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    if ok {
        ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
    } else {
        0
    }
}

/// Keeps the calling thread on `cpus` (none: where it is).
fn pin(cpus: &[u32]) {
    if cpus.is_empty() {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET only
    // writes inside it for CPUs below CPU_SETSIZE, which is checked; and
    // sched_setaffinity(0, ...) touches the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if (c as usize) < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c as usize, &mut set);
            }
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

enum Chunk {
    Data {
        due: Instant,
        bytes: Vec<u8>,
    },
    /// The sender closed its side (or failed): pass the close on once
    /// everything before it is out.
    End {
        due: Instant,
    },
}

/// When each chunk may leave: the link is busy `len/rate` per chunk, then
/// the chunk travels `delay ± jitter`; a lost one waits [`RETRANSMIT`]
/// more; nothing overtakes what was sent before it.
pub struct Schedule {
    shape: Shape,
    rng: StdRng,
    /// When the link (shared with the other connections on it) is free.
    link_free: Arc<Mutex<Option<Instant>>>,
    last_due: Option<Instant>,
}

impl Schedule {
    /// On a link of its own.
    pub fn new(shape: Shape, seed: u64) -> Self {
        Schedule::on(shape, seed, Arc::default())
    }

    /// On a link shared through `link_free`.
    fn on(shape: Shape, seed: u64, link_free: Arc<Mutex<Option<Instant>>>) -> Self {
        Schedule {
            shape,
            rng: StdRng::seed_from_u64(seed),
            link_free,
            last_due: None,
        }
    }

    /// The instant a chunk of `len` bytes read at `now` is due, and
    /// whether it was lost once.
    pub fn due(&mut self, now: Instant, len: usize) -> (Instant, bool) {
        let sent = match self.shape.rate {
            Some(rate) => {
                let mut free = self.link_free.lock().unwrap_or_else(|e| e.into_inner());
                let start = free.map_or(now, |f| f.max(now));
                let done = start + rate.time_for(len);
                *free = Some(done);
                done
            }
            None => now,
        };
        let mut travel = self.shape.delay;
        if !self.shape.jitter.is_zero() {
            let j = self.shape.jitter.as_secs_f64();
            let off = self.rng.random_range(-j..=j);
            travel = Duration::from_secs_f64((travel.as_secs_f64() + off).max(0.0));
        }
        let lost = self.shape.loss > 0.0 && self.rng.random_bool(self.shape.loss.min(1.0));
        if lost {
            travel += RETRANSMIT;
        }
        let due = (sent + travel).max(self.last_due.unwrap_or(now));
        self.last_due = Some(due);
        (due, lost)
    }

    /// The largest read that keeps the rate's pacing within about a
    /// millisecond: a whole 64 KiB read at 10 mbit/s would leave in one
    /// 52 ms burst.
    pub fn read_size(&self) -> usize {
        const MAX: usize = 64 * 1024;
        match self.shape.rate {
            Some(rate) => ((rate.bytes_per_sec() / 1000.0) as usize).clamp(1460, MAX),
            None => MAX,
        }
    }
}

fn read_side(mut from: TcpStream, tx: &SyncSender<Chunk>, mut schedule: Schedule, c: &Counters) {
    let mut buf = vec![0u8; schedule.read_size()];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => {
                let due = schedule.due(Instant::now(), 0).0;
                let _ = tx.send(Chunk::End { due });
                return;
            }
            Ok(n) => {
                let (due, lost) = schedule.due(Instant::now(), n);
                if lost {
                    c.lost.fetch_add(1, Ordering::Relaxed);
                }
                let bytes = buf[..n].to_vec();
                if tx.send(Chunk::Data { due, bytes }).is_err() {
                    let _ = from.shutdown(Shutdown::Read);
                    return;
                }
            }
        }
    }
}

fn write_side(mut to: TcpStream, rx: &Receiver<Chunk>, way: usize, c: &Counters) {
    precise_sleeps();
    while let Ok(chunk) = rx.recv() {
        match chunk {
            Chunk::Data { due, bytes } => {
                let late = sleep_until(due);
                c.chunks.fetch_add(1, Ordering::Relaxed);
                c.bytes[way].fetch_add(bytes.len() as u64, Ordering::Relaxed);
                let us = late.as_micros() as u64;
                c.late_sum_us.fetch_add(us, Ordering::Relaxed);
                c.late_max_us.fetch_max(us, Ordering::Relaxed);
                if to.write_all(&bytes).is_err() {
                    let _ = to.shutdown(Shutdown::Both);
                    return;
                }
            }
            Chunk::End { due } => {
                sleep_until(due);
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
        }
    }
}

/// Sleeps until `due`; returns how late it woke.
fn sleep_until(due: Instant) -> Duration {
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    }
    Instant::now().saturating_duration_since(due)
}

/// The kernel rounds a sleep up by the thread's timer slack (50 us by
/// default); a 100 us delay needs it near zero.
fn precise_sleeps() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches only the
    // calling thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::probe::{Echo, round_trips};
    use crate::units::Rate;

    fn shape(delay_us: u64) -> Shape {
        Shape {
            delay: Duration::from_micros(delay_us),
            ..Shape::default()
        }
    }

    #[test]
    fn a_chunk_is_due_after_the_delay_and_never_before_the_one_ahead_of_it() {
        let mut s = Schedule::new(
            Shape {
                delay: Duration::from_millis(1),
                jitter: Duration::from_micros(900),
                ..Shape::default()
            },
            7,
        );
        let t0 = Instant::now();
        let mut last = t0;
        for i in 0..1000 {
            let now = t0 + Duration::from_micros(i * 10);
            let (due, lost) = s.due(now, 100);
            assert!(!lost);
            assert!(due >= last, "chunk {i} overtook the one before it");
            assert!(due >= now + Duration::from_micros(100));
            assert!(due <= now + Duration::from_millis(2));
            last = due;
        }
    }

    #[test]
    fn the_rate_spaces_chunks_by_their_time_on_the_link() {
        let mut s = Schedule::new(
            Shape {
                rate: Some("10mbit".parse::<Rate>().unwrap()),
                ..Shape::default()
            },
            1,
        );
        let t0 = Instant::now();
        // 100 chunks of 1250 B arriving at once take 100 ms at 10 mbit/s.
        let last = (0..100).map(|_| s.due(t0, 1250).0).last().unwrap();
        assert_eq!(last - t0, Duration::from_millis(100));
        assert_eq!(s.read_size(), 1460);
    }

    #[test]
    fn connections_on_one_wire_share_its_rate() {
        let shape = Shape {
            rate: Some("10mbit".parse::<Rate>().unwrap()),
            ..Shape::default()
        };
        let wire = Wire::default();
        let mut a = Schedule::on(shape.clone(), 1, wire.free[1].clone());
        let mut b = Schedule::on(shape.clone(), 2, wire.free[1].clone());
        let mut other_way = Schedule::on(shape, 3, wire.free[0].clone());
        let t0 = Instant::now();
        // 2 x 50 chunks of 1250 B at once: 100 ms on one link, not 50 ms
        // on two; the other direction is a link of its own.
        let mut last = t0;
        for _ in 0..50 {
            last = last.max(a.due(t0, 1250).0).max(b.due(t0, 1250).0);
        }
        assert_eq!(last - t0, Duration::from_millis(100));
        assert_eq!(other_way.due(t0, 1250).0 - t0, Duration::from_millis(1));
    }

    #[test]
    fn a_lost_chunk_waits_a_retransmission_timeout() {
        let mut s = Schedule::new(
            Shape {
                loss: 0.1,
                ..Shape::default()
            },
            3,
        );
        let t0 = Instant::now();
        let lost = (0..10_000).filter(|_| s.due(t0, 10).1).count();
        assert!((800..1200).contains(&lost), "{lost} of 10000 lost at 10%");
        assert!(s.last_due.unwrap() >= t0 + RETRANSMIT);
    }

    #[test]
    fn a_round_trip_through_the_relay_takes_twice_the_delay() {
        let echo = Echo::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let relay = Relay::start(
            "127.0.0.1:0".parse().unwrap(),
            echo.addr(),
            shape(2000),
            &[],
        )
        .unwrap();
        // One echo opens the path, 19 are timed: 20 bytes each way.
        let median = round_trips(relay.addr(), 19, Duration::from_secs(5))
            .unwrap()
            .median();
        assert!(
            median >= Duration::from_millis(4),
            "round trip {median:?} under 2 x 2 ms"
        );
        assert!(median < Duration::from_millis(8), "round trip {median:?}");
        let stats = relay.stop();
        assert_eq!(stats.connections, 1);
        assert_eq!(stats.bytes, 40, "20 bytes each way");
        assert!(
            stats.cpu_us > 0,
            "the relay's CPU time is counted: {stats:?}"
        );
    }

    #[test]
    fn a_ten_megabit_link_carries_a_megabyte_and_a_quarter_in_about_a_second() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let sink_addr = l.local_addr().unwrap();
        let sink = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut all = Vec::new();
            s.read_to_end(&mut all).unwrap();
            (all.len(), Instant::now())
        });
        let shape = Shape {
            rate: Some("10mbit".parse::<Rate>().unwrap()),
            ..Shape::default()
        };
        let relay = Relay::start("127.0.0.1:0".parse().unwrap(), sink_addr, shape, &[]).unwrap();
        let mut s = TcpStream::connect(relay.addr()).unwrap();
        let start = Instant::now();
        s.write_all(&vec![1u8; 1_250_000]).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let (got, end) = sink.join().unwrap();
        let took = (end - start).as_secs_f64();
        assert_eq!(got, 1_250_000);
        assert!(
            (0.9..1.1).contains(&took),
            "10 Mbit in {took:.3}s, not 1s within 10%"
        );
        relay.stop();
    }

    #[test]
    fn the_relay_passes_a_close_on_after_the_data_before_it() {
        let echo = Echo::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let relay =
            Relay::start("127.0.0.1:0".parse().unwrap(), echo.addr(), shape(500), &[]).unwrap();
        let mut s = TcpStream::connect(relay.addr()).unwrap();
        s.write_all(&[7u8; 100_000]).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        s.read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), 100_000);
        assert!(back.iter().all(|&b| b == 7));
        relay.stop();
    }
}
