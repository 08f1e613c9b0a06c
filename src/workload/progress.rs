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
