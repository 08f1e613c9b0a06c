//! The live view: which cell, which stage or phase, ops/s and the server's
//! memory against its cap. On a terminal one status line is redrawn in
//! place; otherwise (CI, a pipe, a log file) a plain line is printed every
//! few seconds so logs stay readable.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a plain (non-terminal) status line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// What the live view shows right now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// `2/4 redis@7.0 quickstart r1`.
    pub cell: String,
    /// `load`, `settle`, `workload-a t4`...
    pub stage: String,
    pub ops_per_s: Option<f64>,
    pub memory: Option<u64>,
    pub memory_cap: Option<u64>,
}

impl Status {
    /// The status as one line.
    pub fn line(&self) -> String {
        let mut out = format!("[{}] {}", self.cell, self.stage);
        if let Some(ops) = self.ops_per_s {
            out.push_str(&format!(" | {ops:.0} ops/s"));
        }
        if let Some(m) = self.memory {
            out.push_str(&format!(" | server memory {}", mib(m)));
            if let Some(cap) = self.memory_cap.filter(|c| *c > 0 && *c < u64::MAX / 2) {
                let pct = m as f64 * 100.0 / cap as f64;
                out.push_str(&format!(" of {} ({pct:.0}%)", mib(cap)));
            }
        }
        out
    }
}

fn mib(b: u64) -> String {
    format!("{:.1}MiB", b as f64 / (1u64 << 20) as f64)
}

/// Terminal or plain output.
pub struct Live {
    tty: bool,
    last_plain: Option<Instant>,
    last_stage: String,
    drawn: bool,
}

impl Live {
    /// A view on stderr, redrawn in place when stderr is a terminal.
    pub fn stderr() -> Live {
        Live {
            tty: std::io::stderr().is_terminal(),
            last_plain: None,
            last_stage: String::new(),
            drawn: false,
        }
    }

    /// Show the status (when not a terminal: at every new stage, and
    /// otherwise every few seconds).
    pub fn show(&mut self, status: &Status) {
        let mut err = std::io::stderr().lock();
        let stage = format!("{} {}", status.cell, status.stage);
        let new_stage = stage != self.last_stage;
        self.last_stage = stage;
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{}", status.line());
            self.drawn = true;
        } else if new_stage || self.last_plain.is_none_or(|t| t.elapsed() >= PLAIN_EVERY) {
            let _ = writeln!(err, "{}", status.line());
            self.last_plain = Some(Instant::now());
        }
        let _ = err.flush();
    }

    /// Print a line that stays (a stage finished, a cell failed).
    pub fn say(&mut self, msg: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty && self.drawn {
            let _ = write!(err, "\r\x1b[2K");
            self.drawn = false;
        }
        let _ = writeln!(err, "{msg}");
        self.last_plain = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_shows_cell_phase_rate_and_memory_against_the_cap() {
        let s = Status {
            cell: "1/2 redis@7.0 quickstart r1".into(),
            stage: "workload-a t4".into(),
            ops_per_s: Some(12345.4),
            memory: Some(64 << 20),
            memory_cap: Some(256 << 20),
        };
        let line = s.line();
        assert!(
            line.starts_with("[1/2 redis@7.0 quickstart r1] workload-a t4"),
            "{line}"
        );
        assert!(line.contains("12345 ops/s"), "{line}");
        assert!(line.contains("(25%)"), "{line}");
    }

    #[test]
    fn an_unlimited_cap_is_not_shown_as_a_percentage() {
        let s = Status {
            cell: "c".into(),
            stage: "load".into(),
            memory: Some(1 << 20),
            memory_cap: Some(u64::MAX),
            ..Default::default()
        };
        assert!(!s.line().contains('%'), "{}", s.line());
    }
}
