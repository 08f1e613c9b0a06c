//! The pause between two looks at something the kernel or an engine will
//! change soon (a process gone, a group empty or frozen, a port answering):
//! 1 ms first, doubling up to a ceiling, so that a wait costs about what
//! the thing takes and never a fixed sleep longer than that.

use std::time::{Duration, Instant};

/// Pauses from 1 ms, doubling up to `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

/// The first pause.
pub const FIRST: Duration = Duration::from_millis(1);

impl Backoff {
    /// Pauses from [`FIRST`], doubling up to `max`.
    pub fn up_to(max: Duration) -> Backoff {
        Backoff {
            next: FIRST.min(max),
            max,
        }
    }

    /// The next pause, then double it.
    pub fn next_pause(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(self.max);
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
}
