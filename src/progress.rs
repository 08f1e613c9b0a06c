//! Progress bars on stderr (the only importer of `indicatif`), shared by
//! the load generator and the Docker backend, depending on neither: the
//! load-phase bar (rate and ETA, drawn only when stderr is a terminal or
//! when asked) and the transfer bar of image pulls (plain lines off a
//! terminal).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::time::{Duration, Instant};

/// What the bar counts towards.
#[derive(Debug, Clone, Copy)]
pub enum Total {
    Ops(u64),
    Time(Duration),
}

/// A running bar; `finish` stops it.
pub struct Bar {
    task: tokio::task::JoinHandle<()>,
    bar: ProgressBar,
}

impl Bar {
    pub fn finish(self) {
        self.task.abort();
        self.bar.finish();
    }
}

/// Draws a bar that polls `done()` ten times a second.
pub fn spawn(
    label: String,
    total: Total,
    start: Instant,
    done: impl Fn() -> u64 + Send + 'static,
) -> Bar {
    let (len, template) = match total {
        Total::Ops(n) => (n, "{msg} [{bar:30}] {pos}/{len} ops {per_sec} ETA {eta}"),
        Total::Time(d) => (d.as_secs().max(1), "{msg} [{bar:30}] {pos}/{len} s"),
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(label);
    let b = bar.clone();
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            match total {
                Total::Ops(_) => b.set_position(done()),
                Total::Time(_) => b.set_position(start.elapsed().as_secs()),
            }
        }
    });
    Bar { task, bar }
}

/// True when stderr is a terminal (the default for showing the bar).
pub(crate) fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// A transfer's size for reading: MiB with one decimal (`42.4MiB`).
pub fn mib(bytes: u64) -> String {
    format!("{:.1}MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// How often a plain (non-terminal) transfer line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(2);

/// Where a [`ByteBar`] draws.
enum Draw {
    /// A bar redrawn in place (stderr is a terminal).
    Bar(ProgressBar),
    /// Plain lines: the start, every few seconds, each note, the end.
    Plain {
        out: Box<dyn std::io::Write + Send>,
        last: Option<Instant>,
    },
}

/// A transfer whose size is learnt as it goes (image pulls: each layer
/// announces its size when it starts): a bar on a terminal, otherwise
/// plain lines so that logs stay readable.
pub(crate) struct ByteBar {
    draw: Draw,
    label: String,
    /// What the bytes are (`downloading`, `extracting`), when said.
    stage: String,
    started: Instant,
    done: u64,
    total: u64,
}

impl ByteBar {
    /// A transfer labelled `label` on stderr: a bar when stderr is a
    /// terminal, plain lines otherwise.
    pub fn new(label: String) -> ByteBar {
        if stderr_is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.clone());
            ByteBar::with(Draw::Bar(bar), label)
        } else {
            ByteBar::plain(label, Box::new(std::io::stderr()))
        }
    }

    /// Plain lines written to `out`, whatever it is.
    pub fn plain(label: String, out: Box<dyn std::io::Write + Send>) -> ByteBar {
        let mut b = ByteBar::with(Draw::Plain { out, last: None }, label);
        let line = format!("{}...", b.label);
        b.line(&line);
        b
    }

    fn with(draw: Draw, label: String) -> ByteBar {
        ByteBar {
            draw,
            label,
            stage: String::new(),
            started: Instant::now(),
            done: 0,
            total: 0,
        }
    }

    fn line(&mut self, text: &str) {
        match &mut self.draw {
            Draw::Bar(bar) => bar.println(text),
            Draw::Plain { out, last } => {
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
                *last = Some(Instant::now());
            }
        }
    }

    /// `done` of `total` bytes so far.
    pub fn update(&mut self, done: u64, total: u64) {
        (self.done, self.total) = (done, total);
        match &mut self.draw {
            Draw::Bar(bar) => {
                bar.set_length(total);
                bar.set_position(done);
            }
            Draw::Plain { last, .. } => {
                if last.is_none_or(|t| t.elapsed() >= PLAIN_EVERY) {
                    let line = format!("{}: {}", self.label, self.amount());
                    self.line(&line);
                }
            }
        }
    }

    /// Say what the bytes are from now on (`extracting`); a plain line
    /// marks the change.
    pub fn stage(&mut self, stage: &str) {
        if self.stage == stage {
            return;
        }
        self.stage = stage.to_string();
        match &mut self.draw {
            Draw::Bar(bar) => bar.set_message(format!("{} ({stage})", self.label)),
            Draw::Plain { last, .. } => *last = None,
        }
    }

    /// A line that stays (a layer finished), with the amount so far.
    pub fn note(&mut self, what: &str) {
        let line = format!("{}: {what}, {}", self.label, self.amount());
        self.line(&line);
    }

    fn amount(&self) -> String {
        let stage = if self.stage.is_empty() {
            String::new()
        } else {
            format!("{} ", self.stage)
        };
        format!("{stage}{} of {}", mib(self.done), mib(self.total))
    }

    /// Remove the bar (print nothing more in plain mode); the time since
    /// the start.
    pub fn finish(self) -> Duration {
        if let Draw::Bar(bar) = &self.draw {
            bar.finish_and_clear();
        }
        self.started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_transfer_off_a_terminal_prints_plain_lines_not_every_update() {
        let out = Shared::default();
        let mut bar = ByteBar::plain("pulling x:1".into(), Box::new(out.clone()));
        bar.stage("downloading");
        bar.update(1 << 20, 4 << 20);
        bar.update(2 << 20, 4 << 20);
        bar.note("layer abc done");
        bar.stage("extracting");
        bar.update(1 << 20, 4 << 20);
        bar.update(2 << 20, 4 << 20);
        bar.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "pulling x:1...\n\
             pulling x:1: downloading 1.0MiB of 4.0MiB\n\
             pulling x:1: layer abc done, downloading 2.0MiB of 4.0MiB\n\
             pulling x:1: extracting 1.0MiB of 4.0MiB\n",
            "a new stage prints at once, other updates every {PLAIN_EVERY:?}"
        );
    }
}
