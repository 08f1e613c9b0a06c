//! The hot path's clock (the only importer of `quanta`). Two timestamps
//! per operation through `clock_gettime` were about a quarter of the null
//! store's CPU per operation; quanta reads the CPU's time-stamp counter
//! when it is invariant (`constant_tsc` and `nonstop_tsc`) and falls back
//! to the monotonic clock otherwise. Deadlines handed to tokio timers go
//! back to `std::time::Instant` through one anchor taken at first use.

use std::sync::OnceLock;
use std::time::Duration;

/// A monotonic timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant(quanta::Instant);

/// The same moment on both clocks.
fn anchor() -> &'static (quanta::Instant, std::time::Instant) {
    static ANCHOR: OnceLock<(quanta::Instant, std::time::Instant)> = OnceLock::new();
    ANCHOR.get_or_init(|| (quanta::Instant::now(), std::time::Instant::now()))
}

impl Instant {
    /// Now.
    #[inline]
    pub fn now() -> Instant {
        Instant(quanta::Instant::now())
    }

    /// Time from `earlier` to this, zero if `earlier` is later.
    #[inline]
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }

    /// Nanoseconds from `earlier` to this, zero if `earlier` is later.
    #[inline]
    pub(crate) fn nanos_since(self, earlier: Instant) -> u64 {
        let d = self.saturating_duration_since(earlier);
        d.as_secs() * 1_000_000_000 + u64::from(d.subsec_nanos())
    }

    /// The same moment as a `std::time::Instant`, for timers.
    pub(crate) fn to_std(self) -> std::time::Instant {
        let (q, s) = *anchor();
        if self.0 >= q {
            s + (self.0 - q)
        } else {
            s.checked_sub(q - self.0).unwrap_or(s)
        }
    }
}

impl std::ops::Add<Duration> for Instant {
    type Output = Instant;
    #[inline]
    fn add(self, d: Duration) -> Instant {
        Instant(self.0 + d)
    }
}

impl std::ops::AddAssign<Duration> for Instant {
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        self.0 += d;
    }
}

#[cfg(test)]
mod tests {
    use super::Instant;
    use std::time::Duration;

    #[test]
    fn the_clock_agrees_with_the_std_clock_over_a_sleep() {
        let (q0, s0) = (Instant::now(), std::time::Instant::now());
        std::thread::sleep(Duration::from_millis(50));
        let (q1, s1) = (Instant::now(), std::time::Instant::now());
        let ours = q1.nanos_since(q0) as i64;
        let theirs = s1.duration_since(s0).as_nanos() as i64;
        assert!(ours >= 50_000_000, "{ours} ns for a 50 ms sleep");
        assert!((ours - theirs).abs() < 2_000_000, "{ours} vs {theirs} ns");
        assert_eq!(q0.nanos_since(q1), 0, "earlier minus later saturates");
    }

    #[test]
    fn a_deadline_maps_to_the_same_std_moment() {
        let now = Instant::now();
        let later = now + Duration::from_millis(200);
        let gap = later.to_std().duration_since(now.to_std());
        let off = gap.as_nanos() as i64 - 200_000_000;
        assert!(off.abs() < 1_000, "{gap:?}");
    }
}
