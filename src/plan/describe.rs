//! A plan in words and as JSON, as `benchcage plan` prints it: the cells,
//! pinned CPUs, memory (hog included), rendered configs, what runs as
//! whom, the versions to fetch, the tools' Python environments, where
//! each cell's data comes from, and the estimated duration. Creates
//! nothing.

use crate::display::{approx, span};
use crate::fetch::Pending;
use crate::host::HostFacts;
use crate::model::{Backend, DocumentSchema, Probe, Program};
use crate::plan::{HOG_MARGIN, PhaseConfig, Plan, PlannedCell};
use crate::spec::scenario::{Length, Work};
use crate::workload::tools::Tool;
use crate::workload::tools::pyenv::PyEnv;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The versions the plan's cells need and the fetch cache lacks, as the
/// project under `home` lists their sources.
pub(crate) fn pending(home: &Path, plan: &Plan) -> Vec<Pending> {
    // The planner has reported (or refused) broken specs already.
    let project = crate::spec::Project::load_all(home).0;
    crate::plan::fetches::pending(&project, &plan.cells, &crate::fetch::cache::root())
}

/// The plan as `plan --json` prints it: the plan, and the versions to
/// fetch under `to_fetch`.
pub(crate) fn json(plan: &Plan, pending: &[Pending]) -> serde_json::Result<String> {
    let mut v = serde_json::to_value(plan)?;
    v["to_fetch"] = pending
        .iter()
        .map(|p| serde_json::json!({"engine": p.engine, "version": p.version, "source": p.source.describe()}))
        .collect();
    serde_json::to_string_pretty(&v)
}

/// The plan in words on `host`, with the versions to fetch, the tools'
/// Python environments, and where each cell's data comes from.
pub(crate) fn text(plan: &Plan, host: &HostFacts, pending: &[Pending]) -> String {
    let mut o = describe(plan, host);
    o.push_str(&describe_pending(pending));
    o.push_str(&describe_tool_envs(plan));
    if crate::snapshot::store::off_by_env() {
        o.push_str("data: every cell loads (BENCHCAGE_SNAPSHOTS=off)\n");
    } else if let Ok(cache) = crate::snapshot::store::Cache::from_env() {
        o.push_str(&describe_snapshots(plan, &cache));
    }
    o
}

/// The Python environments the plan's tool phases run in (py-tpcc with a
/// pinned pymongo), each once.
pub(crate) fn tool_envs(plan: &Plan) -> Vec<PyEnv> {
    let mut out: Vec<PyEnv> = Vec::new();
    for c in &plan.cells {
        for p in &c.phases {
            if let PhaseConfig::Tool(t) = &p.config
                && let Tool::Pytpcc(py) = &t.tool
                && let Some(e) = py.env()
                && !out.contains(&e)
            {
                out.push(e);
            }
        }
    }
    out
}

/// Each Python environment a tool runs in, and whether it is made.
pub(crate) fn describe_tool_envs(plan: &Plan) -> String {
    let mut o = String::new();
    for e in tool_envs(plan) {
        let pins: Vec<String> = e.pins.iter().map(|(p, v)| format!("{p}=={v}")).collect();
        let state = match e.record() {
            Some(r) => format!("made (python {})", r.python),
            None => "not made: `run --fetch` makes it".into(),
        };
        let _ = writeln!(
            o,
            "py-tpcc python: {} ({}), {state}",
            e.python().display(),
            pins.join(" ")
        );
    }
    o
}

/// Bad input naming the first Python environment not made yet, and how
/// to make it.
pub(crate) fn missing_tool_envs(plan: &Plan) -> anyhow::Result<()> {
    for e in tool_envs(plan) {
        if let Err(m) = e.ready() {
            return Err(crate::error::bad_input(m.to_string()));
        }
    }
    Ok(())
}

/// Where the data of each cell with a snapshot key comes from, as the
/// cache stands now.
pub(crate) fn describe_snapshots(plan: &Plan, cache: &crate::snapshot::store::Cache) -> String {
    let sources = crate::plan::snapshot::sources(&plan.cells, cache);
    let mut o = String::new();
    for (c, s) in plan.cells.iter().zip(sources) {
        if let Some(s) = s {
            if o.is_empty() {
                let _ = writeln!(o, "data (snapshot cache {}):", cache.root.display());
            }
            let _ = writeln!(o, "  {}: {s}", c.id);
        }
    }
    o
}

/// The versions a run must fetch first, and how.
pub(crate) fn describe_pending(pending: &[Pending]) -> String {
    let mut o = String::new();
    if pending.is_empty() {
        return o;
    }
    for p in pending {
        let _ = writeln!(
            o,
            "to fetch  {}: {}, not in the cache",
            p.label(),
            p.source.describe()
        );
    }
    let labels: Vec<String> = pending.iter().map(|p| p.label()).collect();
    let _ = writeln!(
        o,
        "  a run fetches them with `run --fetch`, or first: benchcage fetch {}",
        labels.join(" ")
    );
    o
}

/// How the plan departs from the write-up it reproduces, and from the
/// specs as written (scale, `set`, `--set`).
fn describe_deviations(o: &mut String, plan: &Plan) {
    if let Some(r) = &plan.reproduces {
        let title = if r.title.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.title)
        };
        if r.deviations.is_empty() {
            let _ = writeln!(o, "reproduces write-up {}{title} as published", r.writeup);
        } else {
            let _ = writeln!(
                o,
                "deviations from write-up {}{title}, as published:",
                r.writeup
            );
            for d in &r.deviations {
                let _ = writeln!(o, "  {:<8} {d}", d.kind.to_string());
            }
        }
    }
    if !plan.deviations.is_empty() {
        let _ = writeln!(o, "deviations from the specs as written:");
        for d in &plan.deviations {
            let _ = writeln!(o, "  - {d}");
        }
    }
}

/// The plan in words.
pub(crate) fn describe(plan: &Plan, host: &HostFacts) -> String {
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
        host.cgroup
    );
    describe_deviations(&mut o, plan);
    crate::claims::text::describe_plan(&mut o, &plan.claims);
    let e = &plan.estimate;
    let _ = writeln!(
        o,
        "cells: {}, estimated duration {} (start and teardown {}, loads {}, tool prepares {}, settle {}, phases {})",
        plan.cells.len(),
        span(plan.estimated_duration),
        span(e.start_and_teardown),
        span(e.load),
        span(e.tool_prepare),
        span(e.settle),
        span(e.phases)
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
    describe_resources(o, c, host);
    describe_work(o, c, host);
    describe_execution(o, c);
    describe_configs(o, c, shown);
}

/// Backend, CPUs, memory, hog, IO, huge pages and knobs.
fn describe_resources(o: &mut String, c: &PlannedCell, host: &HostFacts) {
    let program = match &c.program {
        Program::Binary(p) => p.display().to_string(),
        Program::Image(i) => format!("image {i}"),
    };
    let _ = writeln!(o, "  backend   {}: {program}", c.backend);
    let l = &c.limits;
    let swap = l.swap;
    let steal = match c.steal_allowance {
        Some(a) => format!(
            "; up to {a} steal time allowed (server.steal_allowance: a phase stays valid while the hypervisor takes no more)"
        ),
        None => String::new(),
    };
    let _ = writeln!(
        o,
        "  cpus      server {} (pinned), client {} (pinned, outside the server's cgroup){steal}",
        l.server_cpus, l.client_cpus
    );
    let cache = match &c.cache_from {
        Some(from) => from.clone(),
        None => c.cache.to_string(),
    };
    let _ = writeln!(
        o,
        "  memory    cap {}, swap {swap}, cache {cache}",
        l.memory
    );
    if let Some(n) = &c.network {
        let how = match n.emulation {
            crate::network::Emulation::Kernel => {
                "the engine and the client run in a network namespace of the cell's own whose loopback carries the qdiscs"
            }
            _ => "the client reaches the server through a relay on its CPUs",
        };
        let _ = writeln!(
            o,
            "  network   {}: a round trip adds {}; {how}, and a probe measures the round trip before the load",
            n.describe(),
            crate::units::Duration(n.shape(0).round_trip())
        );
    }
    if !l.client_node.is_same() {
        let _ = writeln!(
            o,
            "  client    on another node: a two-node exclusive Slurm job (`run --on slurm`), the load generator a job step there on CPUs {}, the server also listening on its node's address; over the cluster's own network",
            l.client_cpus
        );
    }
    if let Some(size) = l.disk {
        let fills = match &c.footprint {
            Some(fp) if fp.estimate > size => format!(
                "; the data would take {fp}, more than the disk: the load will fill it and the cell fail with the disk named"
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "  data disk the data dir on an ext4 filesystem of {size} of its own (a sparse image file under the work root, loop-mounted; removed at teardown){fills}"
        );
    }
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
        let _ = writeln!(o, "  io        {io}");
    }
    if let Some(line) = thp_line(c, host) {
        let _ = writeln!(o, "  host      {line}");
    }
    let knobs: Vec<String> = c.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(o, "  knobs     {}", knobs.join(", "));
    for r in &c.raised_knobs {
        let _ = writeln!(o, "  raised    {r}");
    }
}

/// Dataset, disk, load, settle and the measured runs.
fn describe_work(o: &mut String, c: &PlannedCell, host: &HostFacts) {
    if let Some(d) = &c.dataset {
        let _ = writeln!(
            o,
            "  dataset   {} records x {} fields x {} B ({} keys)",
            d.records, d.field_count, d.field_length, d.insert_order
        );
    }
    if let Some(fp) = &c.footprint {
        let free = match (host.work_free, &host.work_free_set) {
            (Some(f), Some(_)) => format!(
                "{} free ({})",
                approx(f),
                crate::sandbox::roots::WORK_FREE_ENV
            ),
            (Some(f), None) => format!("{} free", approx(f)),
            (None, _) => "free space unknown".into(),
        };
        let _ = writeln!(
            o,
            "  disk      {fp}; {} has {free}",
            host.work_dir.display()
        );
    }
    if let Some(load) = &c.load {
        let schema = load
            .denormalize
            .map(|d| format!(", {}", DocumentSchema::from_denormalize(Some(d))))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "  load      {}, {} threads, batch {}{schema}",
            load.workload, load.threads, load.batch
        );
    }
    if c.members.len() > 1 {
        let members: Vec<String> = c
            .members
            .iter()
            .map(|m| format!("{} ({}, cpus {})", m.name, m.role.name(), m.cpus))
            .collect();
        let _ = writeln!(
            o,
            "  topology  {}: {}; each member in its own sandbox with the environment's memory cap",
            c.topology.key(),
            members.join(", ")
        );
    }
    if let Some(s) = &c.snapshot {
        let _ = writeln!(
            o,
            "  snapshot  {}: restored instead of loading when the cache holds it; else loaded, then saved (the engine stopped cleanly and started again)",
            s.id
        );
    }
    if let Some(s) = &c.settle {
        let cache = match (&c.cache_resize, s.memory) {
            (_, None) => String::new(),
            (Some(stmt), Some(_)) => format!(
                "; the engine cache keeps its share of the cap ({} of {}): `{stmt}`",
                c.cache, c.limits.memory
            ),
            (None, Some(_)) => format!(
                "; the engine cache stays {} (the engine cannot resize it while it runs)",
                c.cache
            ),
        };
        let _ = writeln!(
            o,
            "  settle    memory {}, drop caches {}{cache}",
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
        let what = &p.phase.work;
        let _ = writeln!(
            o,
            "  phase     {}: {len}, warmup {}, {what}",
            p.id, p.phase.warmup
        );
    }
}

/// Each rendered config, or which cell showed the same one first.
fn describe_configs(o: &mut String, c: &PlannedCell, shown: &mut BTreeMap<String, String>) {
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
    describe_member_configs(o, c);
}

/// A member's own config files, as the lines that differ from the first
/// member's.
fn describe_member_configs(o: &mut String, c: &PlannedCell) {
    let first = c.members.first().map(|m| m.name.as_str()).unwrap_or("m0");
    for m in c.members.iter().filter(|m| !m.configs.is_empty()) {
        for cfg in &m.configs {
            let base = c.configs.iter().find(|b| b.name == cfg.name);
            let theirs: Vec<&str> = base
                .map(|b| b.content.lines().collect())
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "  config    {} of {}: {first}'s, except",
                cfg.name, m.name
            );
            for line in cfg.content.lines().filter(|l| !theirs.contains(l)) {
                let _ = writeln!(o, "    | {line}");
            }
        }
    }
}

/// Everything `run` executes for a cell, and as whom: the engine's user,
/// `init` commands, argv and environment, and the client-side commands
/// (the load generator, external tools), which run as benchcage's user.
fn describe_execution(o: &mut String, c: &PlannedCell) {
    let inside = match c.backend {
        Backend::Docker => " inside the container",
        Backend::Cgroup => "",
    };
    let default = if c.user == crate::spec::engine::DEFAULT_USER {
        format!(" (the default: {} has no `user:`)", c.engine)
    } else {
        String::new()
    };
    let _ = writeln!(o, "  user      {}{inside}{default}", c.user);
    let shown = |argv: &[String]| {
        argv.iter()
            .map(|a| shell_word(&c.shown_arg(a)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for argv in &c.init {
        let _ = writeln!(o, "  init      {}", shown(argv));
    }
    let _ = writeln!(o, "  command   {}", shown(&c.command));
    if c.env.is_empty() {
        let _ = writeln!(o, "  env       none added");
    }
    for (k, v) in &c.env {
        let _ = writeln!(o, "  env       {k}={}", shell_word(v));
    }
    let _ = writeln!(
        o,
        "  where     {{port}}: a free 127.0.0.1 port; {{data_dir}}, {{config_dir}}: new folders under {}/<run-id>/<cell>, owned by {}",
        crate::sandbox::roots::work_root().display(),
        c.user
    );
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map_or_else(|| "benchcage's user".to_string(), |u| u.name);
    if c.load.is_some()
        || c.phases
            .iter()
            .any(|p| matches!(p.phase.work, Work::Builtin(_)))
    {
        let _ = writeln!(
            o,
            "  client    load generator: benchcage drive --config <phase file>, as {me}, in the client group"
        );
        if c.readiness.probe == Probe::Mongodb {
            let url = c.store_url(&[0]).replace(":0", ":{port}");
            let query = url.split_once('?').map_or("", |(_, q)| q);
            if let Ok(opts) = crate::clients::mongodb::MongoOptions::from_query(query) {
                let _ = writeln!(o, "  store     {url}: {}", opts.describe());
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for p in &c.phases {
        if let Work::Tool(t) = &p.phase.work
            && seen.insert(p.phase.name.clone())
        {
            let duration = match p.phase.length {
                Length::Duration(d) => d.0,
                Length::Operations(_) => std::time::Duration::ZERO,
            };
            for line in tool_commands(t, duration) {
                let _ = writeln!(
                    o,
                    "  client    {}: {line}, as {me}, in the client group",
                    p.phase.name
                );
            }
        }
    }
    let pytpcc: Vec<&str> = tool_phase_names(c, true);
    if let (Some(w), false) = (c.knobs.get("write_concern"), pytpcc.is_empty()) {
        let _ = writeln!(
            o,
            "  store     write_concern={w} goes into py-tpcc's config file for {}",
            pytpcc.join(", ")
        );
    }
    let tools: Vec<&str> = tool_phase_names(c, false);
    if !c.store_options.is_empty() && !tools.is_empty() {
        let _ = writeln!(
            o,
            "  store     the store knobs {} reach only the built-in load generator; tool phases {} use the tool's own settings",
            store_knobs(c).join(", "),
            tools.join(", ")
        );
    }
}

/// What the cell does with the host's transparent huge pages, when it
/// matters: the environment turns them off, or the engine refuses `always`.
fn thp_line(c: &PlannedCell, host: &HostFacts) -> Option<String> {
    use crate::model::{ThpNeed, ThpPolicy};
    use crate::sandbox::thp::ThpMode;
    let state = host.thp.as_ref().ok().and_then(|t| t.as_ref());
    match (c.transparent_hugepages, state) {
        (ThpPolicy::Off, None) => {
            Some("transparent huge pages: none in this kernel, nothing to turn off".into())
        }
        (ThpPolicy::Off, Some(t)) if t.enabled == ThpMode::Never => {
            Some("transparent huge pages: already never, nothing to change".into())
        }
        (ThpPolicy::Off, Some(t)) => Some(format!(
            "transparent huge pages: never during the cell, the host's {} restored after (host.transparent_hugepages: off)",
            t.enabled
        )),
        (ThpPolicy::Leave, Some(t)) if c.thp_need == ThpNeed::NotAlways => Some(format!(
            "transparent huge pages: {} as the host has them ({} refuses only always)",
            t.enabled, c.engine
        )),
        _ => None,
    }
}

/// The knobs that set store options, as `name=value`.
fn store_knobs(c: &PlannedCell) -> Vec<String> {
    c.store_options
        .iter()
        .map(|o| format!("{}={}", o.knob, o.value))
        .collect()
}

/// Names of the phases of a cell that run an external tool, each once:
/// py-tpcc's (which take the write concern knob) or the others.
fn tool_phase_names(c: &PlannedCell, pytpcc: bool) -> Vec<&str> {
    use crate::spec::scenario::Tool;
    let mut out: Vec<&str> = Vec::new();
    for p in &c.phases {
        let is_tool = match &p.phase.work {
            Work::Tool(Tool::Pytpcc(_)) => pytpcc,
            Work::Tool(_) => !pytpcc,
            Work::Builtin(_) => false,
        };
        if is_tool && !out.contains(&p.phase.name.as_str()) {
            out.push(&p.phase.name);
        }
    }
    out
}

/// The commands a tool phase runs, placeholders as the scenario wrote them.
fn tool_commands(t: &crate::spec::scenario::Tool, duration: std::time::Duration) -> Vec<String> {
    use crate::spec::scenario::{PgbenchScript, Tool};
    let join = |argv: &[String]| {
        argv.iter()
            .map(|a| shell_word(a))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match t {
        Tool::Sysbench {
            test,
            tables,
            table_size,
            loaders,
        } => {
            let base = format!(
                "sysbench {}/{test}.lua --db-driver=<engine> <127.0.0.1:{{port}}> --tables={tables} --table-size={table_size}",
                crate::workload::tools::sysbench::TEST_DIR
            );
            vec![
                format!("{base} --threads={loaders} prepare"),
                format!(
                    "{base} --threads={{threads}} --time=<duration> run (through a report hook that loads the same script)"
                ),
                format!("{base} cleanup"),
            ]
        }
        Tool::Pgbench { scale, script } => {
            let which = match script {
                PgbenchScript::Builtin(b) => format!("-b {}", shell_word(b)),
                PgbenchScript::Script(f) => format!("-f {}", shell_word(f)),
            };
            let conn = "-h 127.0.0.1 -p {port} -U <user> <database>";
            vec![
                format!("pgbench -i -s {scale} {conn}"),
                format!(
                    "pgbench -c {{threads}} -j {{threads}} -T <duration> -P 1 -r -n {which} {conn}"
                ),
            ]
        }
        Tool::Ycsb { argv } | Tool::Command { argv, .. } => vec![join(argv)],
        Tool::Pytpcc(p) => {
            let python = p
                .python
                .as_deref()
                .map(|i| format!("{i} "))
                .unwrap_or_default();
            let base = format!(
                "cd <the directory of {}> && {python}tpcc.py --config <cell>/{} --warehouses {} --clients {{threads}}",
                p.path.as_deref().unwrap_or("tpcc.py on PATH"),
                crate::workload::tools::pytpcc::CONFIG_FILE,
                p.warehouses
            );
            if p.load {
                use crate::workload::tools::pytpcc::{LOAD_FLOOR_PER_MIN, load_limit};
                let limit = load_limit(p.warehouses, p.min_load_rate, duration);
                let rate = p.min_load_rate.unwrap_or(LOAD_FLOOR_PER_MIN);
                vec![format!(
                    "{base} --no-execute mongodb (timed; killed after {}: {} warehouses at the floor rate of {rate} a minute, `min_load_rate`)",
                    crate::units::Duration(limit),
                    p.warehouses
                )]
            } else {
                vec![format!("{base} --no-load --duration <duration> mongodb")]
            }
        }
    }
}

/// `arg` as one shell word: quoted when it holds anything a shell would split or expand.
fn shell_word(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "-_./=:,@%+{}".contains(ch));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}
