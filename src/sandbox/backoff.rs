//! The pause between two looks at something the kernel or an engine will
//! change soon (a process gone, a group empty or frozen, a port answering):
//! 1 ms first, doubling up to a ceiling, so that a wait costs about what
//! the thing takes and never a fixed sleep longer than that.

use std::time::{Duration, Instant};

/// Pauses from 1 ms, growing (doubling, or by a quarter) up to `max`.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
    max: Duration,
    /// Each pause is the last times `grow.0 / grow.1`.
    grow: (u32, u32),
}

/// The first pause.
pub(crate) const FIRST: Duration = Duration::from_millis(1);

impl Backoff {
    /// Pauses from [`FIRST`], doubling up to `max`.
    pub(crate) fn up_to(max: Duration) -> Backoff {
        Backoff {
            next: FIRST.min(max),
            max,
            grow: (2, 1),
        }
    }

    /// Pauses from [`FIRST`], each a quarter longer than the last, up to
    /// `max`: for a wait that nothing signals (a port that starts to
    /// answer), the look after the thing happened comes at most a quarter
    /// of the wait later, where doubling can add the whole wait again.
    pub(crate) fn gently_up_to(max: Duration) -> Backoff {
        Backoff {
            grow: (5, 4),
            ..Backoff::up_to(max)
        }
    }

    /// The next pause, then grow it.
    pub(crate) fn next_pause(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * self.grow.0 / self.grow.1).min(self.max);
        now
    }

    /// Sleep the next pause, never past `deadline`.
    pub async fn sleep(&mut self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(self.next_pause().min(left)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_start_at_one_millisecond_and_double_up_to_the_ceiling() {
        let mut b = Backoff::up_to(Duration::from_millis(10));
        let pauses: Vec<u128> = (0..6).map(|_| b.next_pause().as_millis()).collect();
        assert_eq!(pauses, vec![1, 2, 4, 8, 10, 10]);
    }

    #[test]
    fn gentle_pauses_grow_by_a_quarter_up_to_the_ceiling() {
        let mut b = Backoff::gently_up_to(Duration::from_millis(200));
        let pauses: Vec<u128> = (0..40).map(|_| b.next_pause().as_micros()).collect();
        assert_eq!(pauses[..4], [1000, 1250, 1562, 1953]);
        // Never more than a quarter over the time waited before it (after
        // the first few): the look after the event is that close to it.
        let mut waited = 0;
        for p in &pauses {
            assert!(
                *p <= 2000 || *p * 4 <= waited * 5 / 4 + 4000,
                "{p} after {waited}"
            );
            waited += p;
        }
        assert_eq!(pauses[39], 200_000);
    }
}
