//! Interrupts: the first Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT, SIGUSR1)
//! stops the current phase and lets the run tear down and keep what
//! finished; the second one makes teardown skip its grace periods (SIGKILL
//! at once) but still tear down.
//!
//! SIGHUP (the terminal closed), SIGQUIT (Ctrl-\) and SIGUSR1 would
//! otherwise end the process at once by their default action, skipping
//! teardown: the engine, the load generator, the cgroups and the ledger
//! would stay (issue 15, D5).

use tokio_util::sync::CancellationToken;

/// The two levels of "stop" a run listens to.
#[derive(Debug, Clone, Default)]
pub struct Interrupts {
    /// Stop measuring: cancel the phase, skip the remaining cells.
    pub stop: CancellationToken,
    /// Hurry teardown: no grace periods. Teardown itself still runs.
    pub hurry: CancellationToken,
}

impl Interrupts {
    /// Tokens nobody cancels but the caller (tests, library use).
    pub fn manual() -> Interrupts {
        Interrupts::default()
    }

    /// Listen to SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGUSR1 for the rest
    /// of the process.
    pub fn install() -> std::io::Result<Interrupts> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut hup = signal(SignalKind::hangup())?;
        let mut quit = signal(SignalKind::quit())?;
        let mut usr1 = signal(SignalKind::user_defined1())?;
        let me = Interrupts::default();
        let tokens = me.clone();
        tokio::spawn(async move {
            let mut count = 0u32;
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                    _ = quit.recv() => {}
                    _ = usr1.recv() => {}
                }
                count += 1;
                if count == 1 {
                    eprintln!(
                        "\ninterrupted: stopping the phase and tearing down (Ctrl-C again to hurry teardown)"
                    );
                    tokens.stop.cancel();
                } else {
                    eprintln!(
                        "\nhurrying teardown: killing without grace periods; cleanup still runs"
                    );
                    tokens.hurry.cancel();
                }
            }
        });
        Ok(me)
    }
}
