//! `benchcage plan SCENARIO`: the cells, pinned CPUs, memory (hog included),
//! rendered configs and estimated duration. Creates nothing.

use crate::cli::PlanArgs;
use crate::host::HostFacts;
use crate::sandbox::{Program, SwapPolicy};
use crate::spec::plan::{HOG_MARGIN, Plan, PlannedCell, approx, plan_command_line};
use crate::spec::scenario::{Length, Work};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(home: &Path, args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let host = HostFacts::probe();
    let plan = plan_command_line(
        home,
        &args.scenario,
        &args.set,
        args.env.as_deref(),
        args.only.as_deref(),
        &host,
    )?
    .plan;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan)?);
    } else {
        print!("{}", describe(&plan, &host));
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan in words.
pub fn describe(plan: &Plan, host: &HostFacts) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "plan: {}", plan.scenario);
    if !plan.description.is_empty() {
        let _ = writeln!(o, "  {}", plan.description);
    }
    let _ = writeln!(
        o,
        "host: {} CPUs online ({}), {} RAM, {} available, cgroup {}",
        host.online_cpus.len(),
        host.online_cpus,
        approx(host.mem_total),
        approx(host.mem_available),
        format!("{:?}", host.cgroup).to_lowercase()
    );
    if !plan.deviations.is_empty() {
        let _ = writeln!(o, "deviations from the specs as written:");
        for d in &plan.deviations {
            let _ = writeln!(o, "  - {d}");
        }
    }
    let _ = writeln!(
        o,
        "cells: {}, estimated duration {}",
        plan.cells.len(),
        plan.estimated_duration
    );
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    for c in &plan.cells {
        describe_cell(&mut o, c, host, &mut shown);
    }
    let _ = writeln!(o, "nothing was created.");
    o
}

fn describe_cell(
    o: &mut String,
    c: &PlannedCell,
    host: &HostFacts,
    shown: &mut BTreeMap<String, String>,
) {
    let _ = writeln!(o, "\n{}", c.id);
    let program = match &c.program {
        Program::Binary(p) => p.display().to_string(),
        Program::Image(i) => format!("image {i}"),
    };
    let _ = writeln!(
        o,
        "  backend   {}: {program}",
        format!("{:?}", c.backend).to_lowercase()
    );
    let l = &c.limits;
    let swap = match l.swap {
        SwapPolicy::Off => "off".to_string(),
        SwapPolicy::Limit(b) => b.to_string(),
    };
    let _ = writeln!(
        o,
        "  cpus      server {} (pinned), client {} (pinned, outside the server's cgroup)",
        l.server_cpus, l.client_cpus
    );
    let _ = writeln!(
        o,
        "  memory    cap {}, swap {swap}, cache {}",
        l.memory, c.cache
    );
    if let Some(leave) = c.hog_leave {
        let locks = host.mem_available.saturating_sub(leave);
        let _ = writeln!(
            o,
            "  hog       leaves {leave}: locks about {} of {} available (keeps {HOG_MARGIN} margin)",
            approx(locks),
            approx(host.mem_available)
        );
    }
    let io = &l.io;
    if io.read_bps.is_some()
        || io.write_bps.is_some()
        || io.read_iops.is_some()
        || io.write_iops.is_some()
    {
        let _ = writeln!(o, "  io        {io:?}");
    }
    let knobs: Vec<String> = c.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(o, "  knobs     {}", knobs.join(", "));
    if let Some(d) = &c.dataset {
        let _ = writeln!(
            o,
            "  dataset   {} records x {} fields x {} B ({} keys)",
            d.records,
            d.field_count,
            d.field_length,
            format!("{:?}", d.insert_order).to_lowercase()
        );
    }
    if let Some(load) = &c.load {
        let _ = writeln!(
            o,
            "  load      {:?}, {} threads, batch {}",
            load.workload, load.threads, load.batch
        );
    }
    if let Some(s) = &c.settle {
        let _ = writeln!(
            o,
            "  settle    memory {}, drop caches {}",
            s.memory
                .map(|m| m.text())
                .unwrap_or_else(|| "as the environment's cap".into()),
            s.drop_caches
        );
    }
    for p in &c.phases {
        let len = match p.phase.length {
            Length::Duration(d) => d.to_string(),
            Length::Operations(n) => format!("{n} operations"),
        };
        let what = match &p.phase.work {
            Work::Builtin(b) => format!("{b:?}"),
            Work::Tool(t) => format!("{t:?}"),
        };
        let _ = writeln!(
            o,
            "  phase     {}: {len}, warmup {}, {what}",
            p.id, p.phase.warmup
        );
    }
    for cfg in &c.configs {
        let key = format!("{}\n{}", cfg.name, cfg.content);
        match shown.get(&key) {
            Some(first) => {
                let _ = writeln!(
                    o,
                    "  config    {} -> {}: same as in {first}",
                    cfg.name, cfg.path
                );
            }
            None => {
                let _ = writeln!(o, "  config    {} -> {}", cfg.name, cfg.path);
                for line in cfg.content.lines() {
                    let _ = writeln!(o, "    | {line}");
                }
                shown.insert(key, c.id.clone());
            }
        }
    }
}
