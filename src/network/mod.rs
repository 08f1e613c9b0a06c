//! The network between the client and the server as a constraint of an
//! environment (`network:`): a one-way delay, jitter, a rate and a loss,
//! imposed by the kernel (netem and a token bucket on a namespace's
//! loopback) or, where the kernel has no netem, by a relay in benchcage
//! ([`relay`]). Either way no packet leaves the machine.

pub mod netns;
pub mod probe;
pub mod relay;

use std::time::Duration;

/// How a cell's network is imposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Emulation {
    /// netem and a token bucket on the loopback of a namespace of the
    /// cell's own (everything stays 127.0.0.1).
    Kernel,
    /// A relay in benchcage between the client and the server ([`relay`]).
    Proxy,
    /// The kernel where it has netem, else the proxy.
    Auto,
}

impl Emulation {
    /// Every emulation by the name a spec gives it.
    pub const ALL: [(&'static str, Emulation); 3] = [
        ("auto", Emulation::Auto),
        ("kernel", Emulation::Kernel),
        ("proxy", Emulation::Proxy),
    ];

    pub fn name(self) -> &'static str {
        match self {
            Emulation::Kernel => "kernel",
            Emulation::Proxy => "proxy",
            Emulation::Auto => "auto",
        }
    }
}

/// One problem of a network ([`Network::problems`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The field below `network.` (`jitter`).
    pub field: &'static str,
    pub message: String,
    pub hint: String,
}

/// An environment's `network:` between the client and the server.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Network {
    /// One way; a round trip adds twice it.
    pub delay: crate::units::Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<crate::units::Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<crate::units::Rate>,
    /// A fraction in [0, 1].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub loss: f64,
    pub emulation: Emulation,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Network {
    /// What is wrong with this network, if anything: each problem's
    /// field (below `network.`), what is wrong, and what to do. Specs and
    /// `--set` refuse the same networks through it.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if let Some(j) = self.jitter
            && j > self.delay
        {
            out.push(Problem {
                field: "jitter",
                message: format!(
                    "a jitter of {j} is larger than the delay of {}: a chunk cannot arrive before it was sent",
                    self.delay
                ),
                hint: "give a jitter at most the delay".into(),
            });
        }
        if self.delay.std() > Duration::from_secs(10) {
            out.push(Problem {
                field: "delay",
                message: format!(
                    "a one-way delay of {} is not a network any engine's client tolerates",
                    self.delay
                ),
                hint: "give a delay under 10s; 100us is a data-centre network, 50ms a continent"
                    .into(),
            });
        }
        out
    }

    /// The network as this host imposes it: `auto` becomes the kernel
    /// emulation where `kernel` says the cell can have it (netem in this
    /// host's kernel, a cgroup cell of one server; see docs/network.md),
    /// else the proxy.
    pub fn resolved(mut self, kernel: bool) -> Network {
        if self.emulation == Emulation::Auto {
            self.emulation = if kernel {
                Emulation::Kernel
            } else {
                Emulation::Proxy
            };
        }
        self
    }

    /// The shape each direction gets, with the cell's seed.
    pub fn shape(&self, seed: u64) -> Shape {
        Shape {
            delay: self.delay.std(),
            jitter: self.jitter.map(|j| j.std()).unwrap_or_default(),
            rate: self.rate,
            loss: self.loss,
            seed,
        }
    }

    /// `delay 1ms, jitter 100us, rate 10gbit, loss 0.1% (proxy)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.delay.std().is_zero() || (self.rate.is_none() && self.loss == 0.0) {
            parts.push(format!("delay {}", self.delay));
        }
        if let Some(j) = self.jitter {
            parts.push(format!("jitter {j}"));
        }
        if let Some(r) = self.rate {
            parts.push(format!("rate {r}"));
        }
        if self.loss > 0.0 {
            parts.push(format!("loss {}%", self.loss * 100.0));
        }
        format!("{} ({})", parts.join(", "), self.emulation.name())
    }
}

/// What a link does to the traffic on it, in each direction.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Shape {
    /// One way: a round trip takes twice it.
    pub delay: Duration,
    /// Each chunk's delay is drawn uniformly from `delay ± jitter`.
    pub jitter: Duration,
    /// The link's rate; unlimited when `None`.
    pub rate: Option<crate::units::Rate>,
    /// The chance that a segment is lost, in [0, 1].
    pub loss: f64,
    /// Seed of the jitter and loss draws, so a cell's run repeats.
    pub seed: u64,
}

impl Shape {
    /// The round trip the shape should add: twice the one-way delay.
    pub fn round_trip(&self) -> Duration {
        self.delay * 2
    }
}

/// Reads a loss as a spec writes it: `0%`, `0.1%`, `2%` (at most 100%).
pub fn parse_loss(s: &str) -> Result<f64, crate::units::UnitError> {
    let t = s.trim();
    let shown = crate::error::excerpt(t);
    let bad = || {
        crate::units::UnitError(format!(
            "`{shown}` is not a loss; write a percentage from 0% to 100%, e.g. `0.1%`"
        ))
    };
    let v: f64 = t
        .strip_suffix('%')
        .ok_or_else(bad)?
        .trim()
        .parse()
        .map_err(|_| bad())?;
    if !(0.0..=100.0).contains(&v) {
        return Err(bad());
    }
    Ok(v / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_is_a_percentage_from_zero_to_a_hundred() {
        assert_eq!(parse_loss("0%").unwrap(), 0.0);
        assert_eq!(parse_loss("2%").unwrap(), 0.02);
        assert!(parse_loss("2").unwrap_err().0.contains("percentage"));
        assert!(parse_loss("101%").is_err());
        assert!(parse_loss("-1%").is_err());
    }
}
