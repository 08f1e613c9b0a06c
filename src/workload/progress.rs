//! The load-phase progress bar (the only importer of `indicatif`): rate
//! and ETA, drawn on stderr only when it is a terminal or when asked.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
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
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// A bar for a transfer whose size is learnt as it goes (image pulls: each
/// layer announces its size when it starts).
pub struct ByteBar(ProgressBar);

impl ByteBar {
    /// A byte bar on stderr labelled `label`.
    pub fn new(label: String) -> ByteBar {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label);
        ByteBar(bar)
    }

    /// `done` of `total` bytes so far.
    pub fn update(&self, done: u64, total: u64) {
        self.0.set_length(total);
        self.0.set_position(done);
    }

    /// Remove the bar from the terminal.
    pub fn finish(self) {
        self.0.finish_and_clear();
    }
}
