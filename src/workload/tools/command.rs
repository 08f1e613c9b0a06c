//! Any command: throughput and latency taken from its output by named
//! patterns (the first capture group, or one named `value`; the last match wins).

use super::{Ctx, Parsed, ToolError, Unreadable, mean_only, num, op, run_each};
use crate::results::model::PhaseResult;
use regex::Regex;

/// `tool: {command: {argv: [...], throughput: REGEX, latency: REGEX}}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// `{port}`, `{threads}`, `{duration_s}`, `{host}`, `{user}`, `{db}` are filled in.
    pub argv: Vec<String>,
    /// Operations per second.
    pub throughput: String,
    /// Mean latency, in `latency_unit`.
    #[serde(default)]
    pub latency: Option<String>,
    /// us, ms (default) or s.
    #[serde(default)]
    pub latency_unit: Option<String>,
    /// Count of successful operations.
    #[serde(default)]
    pub operations: Option<String>,
    /// Count of failed operations.
    #[serde(default)]
    pub errors: Option<String>,
    /// Name of the operation kind in the result (default `COMMAND`).
    #[serde(default)]
    pub kind: Option<String>,
}

fn last(re: &Regex, text: &str) -> Option<f64> {
    let c = re.captures_iter(text).last()?;
    let m = c.name("value").or_else(|| c.get(1)).or_else(|| c.get(0))?;
    num(m.as_str())
}

fn compile(name: &str, re: &str) -> Result<Regex, Unreadable> {
    Regex::new(re).map_err(|e| format!("pattern `{name}` ({re}): {e}").into())
}

/// Reads `text` with the config's patterns.
pub fn parse(c: &CommandConfig, text: &str, wall_s: f64) -> Result<Parsed, Unreadable> {
    let tput_re = compile("throughput", &c.throughput)?;
    let throughput = last(&tput_re, text)
        .ok_or_else(|| format!("`throughput` pattern `{}` matched nothing", c.throughput))?;
    let scale = match c.latency_unit.as_deref().unwrap_or("ms") {
        "us" => 1.0,
        "ms" => 1000.0,
        "s" => 1_000_000.0,
        other => return Err(format!("latency_unit `{other}`: use us, ms or s").into()),
    };
    let mean_us = match &c.latency {
        Some(re) => {
            let r = compile("latency", re)?;
            let v = last(&r, text)
                .ok_or_else(|| format!("`latency` pattern `{re}` matched nothing"))?;
            Some(v * scale)
        }
        None => None,
    };
    let count = match &c.operations {
        Some(re) => last(&compile("operations", re)?, text)
            .ok_or_else(|| format!("`operations` pattern `{re}` matched nothing"))?,
        None => (throughput * wall_s).round(),
    };
    let errors = match &c.errors {
        Some(re) => last(&compile("errors", re)?, text).unwrap_or(0.0),
        None => 0.0,
    };
    let kind = c.kind.clone().unwrap_or_else(|| "COMMAND".into());
    let op = op(count as u64, errors as u64, throughput, mean_only(mean_us));
    Ok(Parsed {
        duration_s: if throughput > 0.0 {
            count / throughput
        } else {
            wall_s
        },
        ops: [(kind, op)].into(),
        series: Vec::new(),
        tool_ops_per_sec: Some(throughput),
    })
}

/// Runs the command once per thread count.
pub async fn run(
    c: &CommandConfig,
    ctx: &Ctx<'_, impl Fn(&mut tokio::process::Command)>,
) -> Result<Vec<PhaseResult>, ToolError> {
    for (name, re) in [
        ("throughput", Some(&c.throughput)),
        ("latency", c.latency.as_ref()),
    ] {
        if let Some(re) = re {
            compile(name, re).map_err(|e| ToolError::Config(e.0))?;
        }
    }
    run_each("command", &c.argv, ctx, |text, wall| parse(c, text, wall)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_patterns_take_the_last_match() {
        let c = CommandConfig {
            argv: vec!["x".into()],
            throughput: r"tps = (?P<value>[\d.]+)".into(),
            latency: Some(r"latency average = ([\d.]+) ms".into()),
            latency_unit: None,
            operations: Some(r"processed: (\d+)".into()),
            errors: None,
            kind: Some("TX".into()),
        };
        let text = include_str!("../../../tests/fixtures/tools/pgbench-15-select-only.txt");
        let p = parse(&c, text, 3.1).unwrap();
        assert_eq!(p.ops["TX"].count, 46_635);
        assert!((p.ops["TX"].latency_us.mean.unwrap() - 128.0).abs() < 1e-9);
        assert!((p.ops["TX"].throughput - 15_597.141243).abs() < 1e-6);
        let mut bad = c.clone();
        bad.throughput = "nothing here (\\d+)".into();
        assert!(
            parse(&bad, text, 1.0)
                .unwrap_err()
                .0
                .contains("matched nothing")
        );
    }
}
