//! The history database, `results/history.sqlite`: every finished run,
//! one row per cell x phase x operation kind (see `flat::FlatRow`).
//!
//! The only file that uses rusqlite. SQLite runs in WAL mode and each run
//! is written in one transaction, so a writer killed mid-run leaves the
//! database as it was before that run: whole runs only, never half of one.

use crate::model::RunStatus;
use crate::results::flat::{COLUMNS, COST_COLUMNS, FlatRow, Verdict, flatten};
use crate::results::layout::RunData;
use rusqlite::{Connection, OpenFlags, Row, params, params_from_iter};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// 2: latencies may be NULL (a tool did not report them), and the tool's
/// own phase rate `tool_phase_throughput`.
/// 3: each row's `hardware_class` (empty in rows of earlier versions).
const SCHEMA_VERSION: i64 = 4;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    run_id            TEXT PRIMARY KEY,
    scenario          TEXT NOT NULL,
    scenario_hash     TEXT NOT NULL,
    status            TEXT NOT NULL,
    started_at        TEXT NOT NULL,
    finished_at       TEXT,
    hostname          TEXT NOT NULL,
    benchcage_version TEXT NOT NULL,
    git_rev           TEXT NOT NULL,
    cells             INTEGER NOT NULL,
    row_count         INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    run_id            TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    run_started_at    TEXT NOT NULL,
    scenario          TEXT NOT NULL,
    cell_key          TEXT NOT NULL,
    cell_group        TEXT NOT NULL,
    group_label       TEXT NOT NULL,
    engine            TEXT NOT NULL,
    version           TEXT NOT NULL,
    environment       TEXT NOT NULL,
    backend           TEXT NOT NULL,
    threads           INTEGER NOT NULL,
    repetition        INTEGER NOT NULL,
    phase_index       INTEGER NOT NULL,
    phase             TEXT NOT NULL,
    workload          TEXT NOT NULL,
    status            TEXT NOT NULL,
    reason            TEXT NOT NULL,
    op                TEXT NOT NULL,
    count             INTEGER NOT NULL,
    errors            INTEGER NOT NULL,
    throughput        REAL NOT NULL,
    lat_min_us        REAL,
    lat_mean_us       REAL,
    lat_p50_us        REAL,
    lat_p95_us        REAL,
    lat_p99_us        REAL,
    lat_p999_us       REAL,
    lat_max_us        REAL,
    phase_throughput  REAL NOT NULL,
    duration_s        REAL NOT NULL,
    data_size_bytes   INTEGER,
    memory_limit_bytes INTEGER,
    fidelity_valid    INTEGER NOT NULL,
    tool_phase_throughput REAL,
    hardware_class    TEXT NOT NULL DEFAULT '',
    phase_ops         INTEGER NOT NULL DEFAULT 0,
    major_faults      INTEGER,
    read_bytes        INTEGER,
    major_faults_per_op REAL,
    read_bytes_per_op REAL,
    major_faults_per_s REAL,
    read_bytes_per_s  REAL
);
CREATE INDEX IF NOT EXISTS results_by_run ON results(run_id);
CREATE INDEX IF NOT EXISTS results_by_group ON results(cell_group, phase, op);
CREATE INDEX IF NOT EXISTS runs_by_scenario ON runs(scenario, started_at);
";

/// The claims each run decided (`claims.json`), one row a claim; created
/// on every open when missing, so histories of any version gain it.
const CLAIMS_TABLE: &str = "
CREATE TABLE IF NOT EXISTS claims (
    run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    scenario   TEXT NOT NULL,
    claim_id   TEXT NOT NULL,
    says       TEXT NOT NULL,
    metric     TEXT NOT NULL,
    expect     TEXT NOT NULL,
    published  REAL,
    ratio      REAL,
    lo         REAL,
    hi         REAL,
    verdict    TEXT NOT NULL,
    reason     TEXT NOT NULL,
    PRIMARY KEY (run_id, claim_id)
);
";

/// A history operation that failed, naming the database.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history database {path}: {what}: {message}")]
    Sqlite {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
    /// The file is not an SQLite database, or a damaged one.
    #[error(
        "history database {path} is damaged or not a history ({message}); move it aside \
         and index the runs again with `benchcage history --index RUN`"
    )]
    Corrupt { path: PathBuf, message: String },
    #[error("cannot create the folder of {path}: {source}")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn sql_err<'a>(
    path: &'a Path,
    what: &'static str,
) -> impl Fn(rusqlite::Error) -> HistoryError + 'a {
    move |e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
            HistoryError::Corrupt {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        }
        _ => HistoryError::Sqlite {
            path: path.to_path_buf(),
            what,
            message: e.to_string(),
        },
    }
}

fn open(path: &Path, create: bool) -> Result<Connection, HistoryError> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| HistoryError::Folder {
                path: path.to_path_buf(),
                source,
            })?;
        }
    }
    let conn = Connection::open_with_flags(path, flags).map_err(sql_err(path, "open"))?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(sql_err(path, "set the busy timeout"))?;
    // WAL: a killed writer's uncommitted pages never reach the main file.
    // synchronous=FULL: a committed run survives a power cut too.
    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        .map_err(sql_err(path, "switch to WAL mode"))?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(sql_err(path, "set synchronous"))?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(sql_err(path, "enable foreign keys"))?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(sql_err(path, "read the schema version"))?;
    if version == 1 {
        conn.execute_batch(&migrate_from_v1())
            .map_err(sql_err(path, "upgrade the schema from version 1"))?;
    } else if version == 2 || version == 3 {
        let class = if version == 2 {
            "ALTER TABLE results ADD COLUMN hardware_class TEXT NOT NULL DEFAULT '';"
        } else {
            ""
        };
        conn.execute_batch(&format!(
            "BEGIN;
             {class}
             {COST_COLUMNS_V4}
             PRAGMA user_version = {SCHEMA_VERSION};
             COMMIT;"
        ))
        .map_err(sql_err(path, "upgrade the schema"))?;
    } else if version < SCHEMA_VERSION {
        conn.execute_batch(SCHEMA)
            .map_err(sql_err(path, "create the schema"))?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(sql_err(path, "write the schema version"))?;
    }
    conn.execute_batch(CLAIMS_TABLE)
        .map_err(sql_err(path, "create the claims table"))?;
    Ok(conn)
}

/// Version 3 to 4: the per-operation costs the reports show (rows of
/// older runs have none: NULL, and 0 operations).
const COST_COLUMNS_V4: &str = "ALTER TABLE results ADD COLUMN phase_ops INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE results ADD COLUMN major_faults INTEGER;
     ALTER TABLE results ADD COLUMN read_bytes INTEGER;
     ALTER TABLE results ADD COLUMN major_faults_per_op REAL;
     ALTER TABLE results ADD COLUMN read_bytes_per_op REAL;
     ALTER TABLE results ADD COLUMN major_faults_per_s REAL;
     ALTER TABLE results ADD COLUMN read_bytes_per_s REAL;";

/// Every column of `results`, in order: the row's, then its costs.
fn all_columns() -> String {
    COLUMNS
        .iter()
        .chain(COST_COLUMNS.iter())
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// Version 1 to 2 in one transaction: the results table is rebuilt (SQLite
/// cannot drop a NOT NULL) and every row copied; v1 rows have no tool rate.
fn migrate_from_v1() -> String {
    // Version 1 had the columns up to `fidelity_valid`.
    let v1 = COLUMNS[..33].join(", ");
    format!(
        "BEGIN;
         ALTER TABLE results RENAME TO results_v1;
         DROP INDEX IF EXISTS results_by_run;
         DROP INDEX IF EXISTS results_by_group;
         {SCHEMA}
         INSERT INTO results ({v1}) SELECT {v1} FROM results_v1;
         DROP TABLE results_v1;
         PRAGMA user_version = {SCHEMA_VERSION};
         COMMIT;"
    )
}

/// Open an existing history for reading; `None` when there is none yet
/// (nothing is created).
fn open_existing(path: &Path) -> Result<Option<Connection>, HistoryError> {
    if !path.is_file() {
        return Ok(None);
    }
    open(path, false).map(Some)
}

/// An open history database, for writing several runs over one connection.
pub struct History {
    path: PathBuf,
    conn: Connection,
}

impl History {
    /// Open (creating it and its folder when missing) the history at `path`.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        Ok(History {
            path: path.to_path_buf(),
            conn: open(path, true)?,
        })
    }

    /// Index a run: replace whatever the history held for its run id with
    /// its current rows, in one transaction. Returns the rows written.
    pub fn index_run(&mut self, run: &RunData) -> Result<usize, HistoryError> {
        write_run(&mut self.conn, &self.path, run)
    }
}

/// Index a run: replace whatever the history held for its run id with its
/// current rows, in one transaction. Returns the number of rows written.
/// Idempotent; creates the database (and its folder) when missing.
pub fn index_run(db_path: &Path, run: &RunData) -> Result<usize, HistoryError> {
    History::open(db_path)?.index_run(run)
}

fn write_run(conn: &mut Connection, db_path: &Path, run: &RunData) -> Result<usize, HistoryError> {
    let rows = flatten(run);
    let tx = conn
        .transaction()
        .map_err(sql_err(db_path, "begin a transaction"))?;
    let r = &run.run;
    tx.execute("DELETE FROM results WHERE run_id = ?1", params![r.run_id])
        .map_err(sql_err(db_path, "delete the run's old rows"))?;
    tx.execute("DELETE FROM runs WHERE run_id = ?1", params![r.run_id])
        .map_err(sql_err(db_path, "delete the old run"))?;
    tx.execute(
        "INSERT INTO runs (run_id, scenario, scenario_hash, status, started_at, finished_at, \
         hostname, benchcage_version, git_rev, cells, row_count) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            r.run_id,
            r.scenario,
            r.scenario_hash,
            r.status.as_str(),
            r.started_at,
            r.finished_at,
            r.host.hostname,
            r.benchcage_version,
            r.git_rev,
            run.cells.len() as i64,
            rows.len() as i64,
        ],
    )
    .map_err(sql_err(db_path, "insert the run"))?;
    insert_rows(&tx, db_path, &rows)?;
    tx.execute("DELETE FROM claims WHERE run_id = ?1", params![r.run_id])
        .map_err(sql_err(db_path, "delete the run's old claims"))?;
    for o in run.claims.iter().flat_map(|c| &c.claims) {
        tx.execute(
            "INSERT INTO claims (run_id, scenario, claim_id, says, metric, expect, published, \
             ratio, lo, hi, verdict, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                r.run_id,
                r.scenario,
                o.claim.id,
                o.claim.says,
                o.claim.metric.as_str(),
                o.claim.expect.to_string(),
                o.claim.published,
                o.ratio,
                o.lo,
                o.hi,
                o.verdict.as_str(),
                o.reason.clone().unwrap_or_default(),
            ],
        )
        .map_err(sql_err(db_path, "insert a claim"))?;
    }
    tx.commit().map_err(sql_err(db_path, "commit the run"))?;
    Ok(rows.len())
}

/// The verdicts of the claims `run_id` decided, by claim id; empty when it
/// decided none or the history does not exist.
pub fn claim_verdicts(db_path: &Path, run_id: &str) -> Result<Vec<(String, String)>, HistoryError> {
    let Some(conn) = open_existing(db_path)? else {
        return Ok(Vec::new());
    };
    let mut stmt = conn
        .prepare("SELECT claim_id, verdict FROM claims WHERE run_id = ?1 ORDER BY claim_id")
        .map_err(sql_err(db_path, "prepare the claims query"))?;
    let rows = stmt
        .query_map(params![run_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(sql_err(db_path, "read the claims"))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(sql_err(db_path, "read a claim"))
}

/// The flat rows of a run into `results`, in the open transaction.
fn insert_rows(
    tx: &rusqlite::Transaction<'_>,
    db_path: &Path,
    rows: &[FlatRow],
) -> Result<(), HistoryError> {
    let n = COLUMNS.len() + COST_COLUMNS.len();
    let placeholders: Vec<String> = (1..=n).map(|i| format!("?{i}")).collect();
    let mut stmt = tx
        .prepare(&format!(
            "INSERT INTO results ({}) VALUES ({})",
            all_columns(),
            placeholders.join(", ")
        ))
        .map_err(sql_err(db_path, "prepare the row insert"))?;
    for row in rows {
        stmt.execute(params![
            row.run_id,
            row.run_started_at,
            row.scenario,
            row.cell_key,
            row.cell_group,
            row.group_label,
            row.engine,
            row.version,
            row.environment,
            row.backend,
            row.threads,
            row.repetition,
            row.phase_index,
            row.phase,
            row.workload,
            row.status.as_str(),
            row.reason,
            row.op,
            row.count as i64,
            row.errors as i64,
            row.throughput,
            row.lat_min_us,
            row.lat_mean_us,
            row.lat_p50_us,
            row.lat_p95_us,
            row.lat_p99_us,
            row.lat_p999_us,
            row.lat_max_us,
            row.phase_throughput,
            row.duration_s,
            row.data_size_bytes.map(|b| b as i64),
            row.memory_limit_bytes.map(|b| b as i64),
            row.fidelity_valid,
            row.tool_phase_throughput,
            row.hardware_class,
            row.phase_ops as i64,
            row.major_faults.map(|b| b as i64),
            row.read_bytes.map(|b| b as i64),
            row.major_faults_per_op,
            row.read_bytes_per_op,
            row.major_faults_per_s,
            row.read_bytes_per_s,
        ])
        .map_err(sql_err(db_path, "insert a row"))?;
    }
    Ok(())
}

/// Column `i` of `r`, a run status as `run.json` spells it.
fn run_status(r: &Row<'_>, i: usize) -> rusqlite::Result<RunStatus> {
    let text: String = r.get(i)?;
    RunStatus::parse(&text).ok_or_else(|| {
        let why = format!("unknown run status `{text}`");
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, why.into())
    })
}

fn read_row(r: &Row<'_>) -> rusqlite::Result<FlatRow> {
    let status: String = r.get(15)?;
    Ok(FlatRow {
        run_id: r.get(0)?,
        run_started_at: r.get(1)?,
        scenario: r.get(2)?,
        cell_key: r.get(3)?,
        cell_group: r.get(4)?,
        group_label: r.get(5)?,
        engine: r.get(6)?,
        version: r.get(7)?,
        environment: r.get(8)?,
        backend: r.get(9)?,
        threads: r.get(10)?,
        repetition: r.get(11)?,
        phase_index: r.get(12)?,
        phase: r.get(13)?,
        workload: r.get(14)?,
        status: Verdict::parse(&status).unwrap_or(Verdict::Invalid),
        reason: r.get(16)?,
        op: r.get(17)?,
        count: r.get::<_, i64>(18)? as u64,
        errors: r.get::<_, i64>(19)? as u64,
        throughput: r.get(20)?,
        lat_min_us: r.get(21)?,
        lat_mean_us: r.get(22)?,
        lat_p50_us: r.get(23)?,
        lat_p95_us: r.get(24)?,
        lat_p99_us: r.get(25)?,
        lat_p999_us: r.get(26)?,
        lat_max_us: r.get(27)?,
        phase_throughput: r.get(28)?,
        duration_s: r.get(29)?,
        data_size_bytes: r.get::<_, Option<i64>>(30)?.map(|b| b as u64),
        memory_limit_bytes: r.get::<_, Option<i64>>(31)?.map(|b| b as u64),
        fidelity_valid: r.get(32)?,
        tool_phase_throughput: r.get(33)?,
        hardware_class: r.get(34)?,
        phase_ops: r.get::<_, i64>(35)? as u64,
        major_faults: r.get::<_, Option<i64>>(36)?.map(|b| b as u64),
        read_bytes: r.get::<_, Option<i64>>(37)?.map(|b| b as u64),
        major_faults_per_op: r.get(38)?,
        read_bytes_per_op: r.get(39)?,
        major_faults_per_s: r.get(40)?,
        read_bytes_per_s: r.get(41)?,
        ..FlatRow::default()
    })
}

/// Which runs `list_runs` returns.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunFilter {
    /// `engine` or `engine@version`.
    pub engine: Option<String>,
    pub scenario: Option<String>,
    /// Runs started on or after this `YYYY-MM-DD`.
    pub since: Option<String>,
}

/// One run as `benchcage history` lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunSummary {
    pub run_id: String,
    pub scenario: String,
    pub status: RunStatus,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub hostname: String,
    pub cells: u64,
    /// Distinct `engine@version`, sorted.
    pub engines: Vec<String>,
    /// Phases that are results, and phases that are not (failed, invalid, OOM).
    pub phases_ok: u64,
    pub phases_excluded: u64,
}

/// Runs matching `filter`, newest first. Empty when there is no history.
pub(crate) fn list_runs(
    db_path: &Path,
    filter: &RunFilter,
) -> Result<Vec<RunSummary>, HistoryError> {
    let Some(conn) = open_existing(db_path)? else {
        return Ok(Vec::new());
    };
    let mut sql = String::from(
        "SELECT run_id, scenario, status, started_at, finished_at, hostname, cells FROM runs r WHERE 1=1",
    );
    let mut args: Vec<String> = Vec::new();
    if let Some(s) = &filter.scenario {
        args.push(s.clone());
        sql.push_str(&format!(" AND scenario = ?{}", args.len()));
    }
    if let Some(since) = &filter.since {
        args.push(since.clone());
        sql.push_str(&format!(" AND started_at >= ?{}", args.len()));
    }
    if let Some(e) = &filter.engine {
        args.push(e.clone());
        let n = args.len();
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.run_id \
             AND (x.engine = ?{n} OR x.engine || '@' || x.version = ?{n}))"
        ));
    }
    sql.push_str(" ORDER BY started_at DESC, run_id DESC");
    let mut stmt = conn.prepare(&sql).map_err(sql_err(db_path, "list runs"))?;
    let mut runs: Vec<RunSummary> = stmt
        .query_map(params_from_iter(args.iter()), |r| {
            Ok(RunSummary {
                run_id: r.get(0)?,
                scenario: r.get(1)?,
                status: run_status(r, 2)?,
                started_at: r.get(3)?,
                finished_at: r.get(4)?,
                hostname: r.get(5)?,
                cells: r.get::<_, i64>(6)? as u64,
                engines: Vec::new(),
                phases_ok: 0,
                phases_excluded: 0,
            })
        })
        .and_then(|it| it.collect())
        .map_err(sql_err(db_path, "list runs"))?;
    let mut engines = conn
        .prepare(
            "SELECT DISTINCT engine || '@' || version FROM results WHERE run_id = ?1 ORDER BY 1",
        )
        .map_err(sql_err(db_path, "list engines"))?;
    let mut phases = conn
        .prepare(
            "SELECT status = 'ok', COUNT(*) FROM \
             (SELECT DISTINCT cell_key, phase_index, status FROM results WHERE run_id = ?1) \
             GROUP BY status = 'ok'",
        )
        .map_err(sql_err(db_path, "count phases"))?;
    for run in &mut runs {
        run.engines = engines
            .query_map(params![run.run_id], |r| r.get(0))
            .and_then(|it| it.collect())
            .map_err(sql_err(db_path, "list engines"))?;
        let counts: Vec<(bool, i64)> = phases
            .query_map(params![run.run_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|it| it.collect())
            .map_err(sql_err(db_path, "count phases"))?;
        for (ok, n) in counts {
            if ok {
                run.phases_ok = n as u64;
            } else {
                run.phases_excluded = n as u64;
            }
        }
    }
    Ok(runs)
}

/// The last `n` runs with status `finished` of `scenario` that started
/// before `before` (RFC 3339; all when `None`), excluding `exclude`;
/// newest first.
pub(crate) fn last_finished_runs(
    db_path: &Path,
    scenario: &str,
    n: usize,
    before: Option<&str>,
    exclude: Option<&str>,
) -> Result<Vec<String>, HistoryError> {
    let Some(conn) = open_existing(db_path)? else {
        return Ok(Vec::new());
    };
    let mut stmt = conn
        .prepare(
            "SELECT run_id FROM runs WHERE scenario = ?1 AND status = 'finished' \
             AND (?2 IS NULL OR started_at < ?2) AND (?3 IS NULL OR run_id <> ?3) \
             ORDER BY started_at DESC, run_id DESC LIMIT ?4",
        )
        .map_err(sql_err(db_path, "find the last runs"))?;
    stmt.query_map(params![scenario, before, exclude, n as i64], |r| r.get(0))
        .and_then(|it| it.collect())
        .map_err(sql_err(db_path, "find the last runs"))
}

/// Every row of the given runs, in run start, cell, phase and kind order.
pub fn rows_of_runs(db_path: &Path, run_ids: &[String]) -> Result<Vec<FlatRow>, HistoryError> {
    let Some(conn) = open_existing(db_path)? else {
        return Ok(Vec::new());
    };
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {} FROM results WHERE run_id = ?1 ORDER BY rowid",
            all_columns()
        ))
        .map_err(sql_err(db_path, "read rows"))?;
    let mut out = Vec::new();
    for id in run_ids {
        let rows: Vec<FlatRow> = stmt
            .query_map(params![id], read_row)
            .and_then(|it| it.collect())
            .map_err(sql_err(db_path, "read rows"))?;
        out.extend(rows);
    }
    out.sort_by(|a, b| a.run_started_at.cmp(&b.run_started_at));
    Ok(out)
}

/// Every row of every run in the history, in run start order.
pub(crate) fn all_rows(db_path: &Path) -> Result<Vec<FlatRow>, HistoryError> {
    let ids: Vec<String> = list_runs(db_path, &RunFilter::default())?
        .into_iter()
        .map(|r| r.run_id)
        .collect();
    rows_of_runs(db_path, &ids)
}

/// Acknowledged change points (`benchcage changes --ack`), kept in the
/// history beside the runs; made on first use.
const ACKS: &str = "CREATE TABLE IF NOT EXISTS acks (\
    id TEXT PRIMARY KEY, acked_at TEXT NOT NULL, note TEXT NOT NULL DEFAULT '')";

/// The ids of the acknowledged change points; empty without a history.
pub fn acknowledged(db_path: &Path) -> Result<std::collections::BTreeSet<String>, HistoryError> {
    let Some(conn) = open_existing(db_path)? else {
        return Ok(Default::default());
    };
    conn.execute(ACKS, [])
        .map_err(sql_err(db_path, "make the acks table"))?;
    let mut stmt = conn
        .prepare("SELECT id FROM acks")
        .map_err(sql_err(db_path, "read acks"))?;
    stmt.query_map([], |r| r.get(0))
        .and_then(|it| it.collect())
        .map_err(sql_err(db_path, "read acks"))
}

/// Acknowledge change point `id` now, with a note.
pub fn acknowledge(db_path: &Path, id: &str, note: &str) -> Result<(), HistoryError> {
    let conn = open(db_path, false)?;
    conn.execute(ACKS, [])
        .map_err(sql_err(db_path, "make the acks table"))?;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    conn.execute(
        "INSERT OR REPLACE INTO acks (id, acked_at, note) VALUES (?1, ?2, ?3)",
        params![id, now, note],
    )
    .map_err(sql_err(db_path, "write the ack"))?;
    Ok(())
}

/// What `check` found.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryCheck {
    /// `PRAGMA integrity_check` lines; `["ok"]` when sound.
    pub integrity: Vec<String>,
    /// `PRAGMA journal_mode`: `wal`.
    pub journal_mode: String,
    /// Per run: id, rows it should have, rows it has.
    pub runs: Vec<(String, u64, u64)>,
    /// Run ids that have rows but no run entry.
    pub orphans: Vec<String>,
}

impl HistoryCheck {
    /// Sound, and every run is whole.
    pub fn is_sound(&self) -> bool {
        self.integrity == ["ok"]
            && self.journal_mode == "wal"
            && self.orphans.is_empty()
            && self.runs.iter().all(|(_, want, have)| want == have)
    }
}

/// Check the database: SQLite's own integrity check, and that every run
/// holds exactly the rows it was indexed with.
pub fn check(db_path: &Path) -> Result<HistoryCheck, HistoryError> {
    let conn = open(db_path, false)?;
    let integrity: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(sql_err(db_path, "integrity check"))?;
    let journal_mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .map_err(sql_err(db_path, "read the journal mode"))?;
    let runs: Vec<(String, u64, u64)> = conn
        .prepare(
            "SELECT r.run_id, r.row_count, (SELECT COUNT(*) FROM results x WHERE x.run_id = r.run_id) \
             FROM runs r ORDER BY r.run_id",
        )
        .and_then(|mut s| {
            s.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, i64>(1)? as u64,
                    r.get::<_, i64>(2)? as u64,
                ))
            })?
            .collect()
        })
        .map_err(sql_err(db_path, "count rows per run"))?;
    let known: BTreeSet<&str> = runs.iter().map(|(id, _, _)| id.as_str()).collect();
    let with_rows: Vec<String> = conn
        .prepare("SELECT DISTINCT run_id FROM results ORDER BY run_id")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(sql_err(db_path, "list run ids"))?;
    let orphans = with_rows
        .into_iter()
        .filter(|id| !known.contains(id.as_str()))
        .collect();
    Ok(HistoryCheck {
        integrity,
        journal_mode,
        runs,
        orphans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema as version 3 wrote it: no per-operation costs.
    fn schema_v3() -> String {
        let at = SCHEMA.find(",\n    phase_ops").unwrap();
        let end = at + SCHEMA[at..].find("\n);").unwrap();
        let mut v3 = SCHEMA.to_string();
        v3.replace_range(at..end, "");
        v3
    }

    /// The schema as version 2 wrote it: no hardware class.
    fn schema_v2() -> String {
        schema_v3().replace(",\n    hardware_class    TEXT NOT NULL DEFAULT ''\n", "\n")
    }

    #[test]
    fn a_version_3_history_gains_the_costs_and_stores_them_from_then_on() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("history.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            let v3 = schema_v3();
            assert!(v3.contains("hardware_class") && !v3.contains("phase_ops"));
            c.execute_batch(&v3).unwrap();
            c.pragma_update(None, "user_version", 3).unwrap();
            c.execute_batch(
                "INSERT INTO runs VALUES ('r1','s','h','finished','2026','2026','host','0.1','g',1,1);
                 INSERT INTO results VALUES ('r1','2026','s','k','g','l','redis','7.0','e',
                   'cgroup',1,0,0,'p','ycsb:a','ok','','READ',10,0,5.0,1,2,3,4,5,6,7,5.0,2.0,
                   NULL,NULL,1,NULL,'hw');",
            )
            .unwrap();
        }
        let rows = rows_of_runs(&path, &["r1".into()]).unwrap();
        assert_eq!((rows[0].phase_ops, rows[0].major_faults), (0, None));
        assert_eq!(rows[0].hardware_class, "hw");
        // A row with costs goes in and comes back whole.
        let mut conn = open(&path, false).unwrap();
        let tx = conn.transaction().unwrap();
        let row = FlatRow {
            run_id: "r1".into(),
            phase_ops: 1000,
            major_faults: Some(7),
            read_bytes: Some(4096),
            major_faults_per_op: Some(0.007),
            read_bytes_per_op: Some(4.096),
            major_faults_per_s: Some(3.5),
            read_bytes_per_s: Some(2048.0),
            ..rows[0].clone()
        };
        insert_rows(&tx, &path, std::slice::from_ref(&row)).unwrap();
        tx.commit().unwrap();
        let back = rows_of_runs(&path, &["r1".into()]).unwrap();
        assert_eq!(back[1], row);
    }

    #[test]
    fn a_version_2_history_gains_an_empty_hardware_class_and_keeps_its_rows() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("history.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            let v2 = schema_v2();
            assert!(!v2.contains("hardware_class"));
            c.execute_batch(&v2).unwrap();
            c.pragma_update(None, "user_version", 2).unwrap();
            c.execute_batch(
                "INSERT INTO runs VALUES ('r1','s','h','finished','2026','2026','host','0.1','g',1,1);
                 INSERT INTO results VALUES ('r1','2026','s','k','g','l','redis','7.0','e',
                   'cgroup',1,0,0,'p','ycsb:a','ok','','READ',10,0,5.0,1,2,3,4,5,6,7,5.0,2.0,
                   NULL,NULL,1,NULL);",
            )
            .unwrap();
        }
        let rows = rows_of_runs(&path, &["r1".into()]).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].hardware_class, "");
        assert_eq!(rows[0].lat_p50_us, Some(3.0));
        let c = open(&path, false).unwrap();
        let v: i64 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    /// The schema as version 1 wrote it: latencies NOT NULL, no tool rate.
    fn schema_v1() -> String {
        let mut v1 = schema_v2().replace(",\n    tool_phase_throughput REAL\n", "\n");
        for c in [
            "lat_min_us",
            "lat_mean_us",
            "lat_p50_us",
            "lat_p95_us",
            "lat_p99_us",
            "lat_p999_us",
            "lat_max_us",
        ] {
            let at = v1.find(c).unwrap();
            let end = at + v1[at..].find(',').unwrap();
            v1.replace_range(end..end, " NOT NULL");
        }
        v1
    }

    #[test]
    fn a_version_1_history_is_upgraded_with_its_rows_and_takes_missing_latencies() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("history.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(&schema_v1()).unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
            c.execute_batch(
                "INSERT INTO runs VALUES ('r1','s','h','finished','2026','2026','host','0.1','g',1,1);
                 INSERT INTO results VALUES ('r1','2026','s','k','g','l','redis','7.0','e',
                   'cgroup',1,0,0,'p','ycsb:a','ok','','READ',10,0,5.0,1,2,3,4,5,6,7,5.0,2.0,
                   NULL,NULL,1);",
            )
            .unwrap();
            let e = c.execute_batch(
                "INSERT INTO results (run_id, run_started_at, scenario, cell_key, cell_group,
                   group_label, engine, version, environment, backend, threads, repetition,
                   phase_index, phase, workload, status, reason, op, count, errors, throughput,
                   phase_throughput, duration_s, fidelity_valid)
                 VALUES ('r1','2026','s','k','g','l','redis','7.0','e','cgroup',1,0,0,'p',
                   'ycsb:a','ok','','UPDATE',1,0,1.0,1.0,1.0,1)",
            );
            assert!(e.is_err(), "version 1 refuses a missing latency");
        }
        let rows = rows_of_runs(&path, &["r1".into()]).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].lat_p50_us, rows[0].lat_max_us),
            (Some(3.0), Some(7.0))
        );
        assert_eq!(rows[0].tool_phase_throughput, None);
        let c = open(&path, false).unwrap();
        let v: i64 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        c.execute_batch(
            "INSERT INTO results (run_id, run_started_at, scenario, cell_key, cell_group,
               group_label, engine, version, environment, backend, threads, repetition,
               phase_index, phase, workload, status, reason, op, count, errors, throughput,
               phase_throughput, duration_s, fidelity_valid, tool_phase_throughput)
             VALUES ('r1','2026','s','k','g','l','redis','7.0','e','cgroup',1,0,0,'p',
               'ycsb:a','ok','','UPDATE',1,0,1.0,1.0,1.0,1,1.5)",
        )
        .unwrap();
        let rows = rows_of_runs(&path, &["r1".into()]).unwrap();
        assert_eq!(rows[1].lat_p50_us, None);
        assert_eq!(rows[1].tool_phase_throughput, Some(1.5));
        let indexes: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'results'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexes, 2);
    }
}
