//! TPC-C on PostgreSQL and MySQL/MariaDB: the relational schema and a load
//! of multi-row `INSERT`s; the terminals' transactions are in
//! [`super::sql_terminal`].

use super::TpccStore;
use super::loader::{Dates, Rows};
use super::schema::{Dialect, TABLES};
use super::sql_terminal::SqlTerminal;
use crate::clients::mysql::MyConn;
use crate::clients::postgres::{PgConn, PgPipe};
use crate::clients::{Cell, ClientError, Endpoint, Outcome, Param, Step};
use crate::workload::stores::StoreError;
use crate::workload::stores::sql::MAX_PARAMS;
use std::collections::BTreeMap;
use std::future::Future;

/// Database used on MySQL when the URL names none.
pub(crate) const MYSQL_DB: &str = "tpcc";
/// Most rows in one load `INSERT`.
const LOAD_ROWS: usize = 1000;

/// What the TPC-C code needs of a SQL connection.
pub trait SqlConn: Send + 'static {
    fn prepare(&mut self, sql: &str) -> impl Future<Output = Result<usize, ClientError>> + Send;
    fn rows(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, ClientError>> + Send;
    /// Rows changed.
    fn exec(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<u64, ClientError>> + Send;
    /// A statement without parameters (`BEGIN`, DDL).
    fn text(&mut self, sql: &str) -> impl Future<Output = Result<(), ClientError>> + Send;
    /// The rows of a query without parameters.
    fn select(
        &mut self,
        sql: &str,
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, ClientError>> + Send;
    /// Runs `steps` in order, in one round trip where the protocol allows.
    fn pipeline(
        &mut self,
        steps: &[Step<'_>],
    ) -> impl Future<Output = Result<Vec<Outcome>, ClientError>> + Send;
}

impl SqlConn for PgConn {
    async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        PgConn::prepare(self, sql).await
    }
    async fn rows(&mut self, id: usize, p: &[Param<'_>]) -> Result<Vec<Vec<Cell>>, ClientError> {
        self.query_rows(id, p).await
    }
    async fn exec(&mut self, id: usize, p: &[Param<'_>]) -> Result<u64, ClientError> {
        self.execute(id, p).await
    }
    async fn text(&mut self, sql: &str) -> Result<(), ClientError> {
        self.batch(sql).await
    }
    async fn select(&mut self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        PgConn::select(self, sql).await
    }
    async fn pipeline(&mut self, steps: &[Step<'_>]) -> Result<Vec<Outcome>, ClientError> {
        PgConn::pipeline(self, steps).await
    }
}

impl SqlConn for MyConn {
    async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        MyConn::prepare(self, sql).await
    }
    async fn rows(&mut self, id: usize, p: &[Param<'_>]) -> Result<Vec<Vec<Cell>>, ClientError> {
        self.query_rows(id, p).await
    }
    async fn exec(&mut self, id: usize, p: &[Param<'_>]) -> Result<u64, ClientError> {
        self.execute(id, p).await
    }
    async fn text(&mut self, sql: &str) -> Result<(), ClientError> {
        self.exec_text(sql).await
    }
    async fn select(&mut self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        MyConn::select(self, sql).await
    }
    async fn pipeline(&mut self, steps: &[Step<'_>]) -> Result<Vec<Outcome>, ClientError> {
        MyConn::pipeline(self, steps).await
    }
}

/// TPC-C tables in PostgreSQL or MySQL.
pub struct SqlTpcc {
    pub ep: Endpoint,
    pub dialect: Dialect,
    /// MySQL storage engine.
    pub engine: Option<String>,
}

/// A PostgreSQL or MySQL connection.
pub enum AnySql {
    Pg(PgConn),
    /// PostgreSQL's, one Sync per pipeline: a terminal's.
    PgPipe(PgPipe),
    My(MyConn),
}

impl SqlConn for AnySql {
    async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        match self {
            AnySql::Pg(c) => SqlConn::prepare(c, sql).await,
            AnySql::PgPipe(c) => c.prepare(sql).await,
            AnySql::My(c) => SqlConn::prepare(c, sql).await,
        }
    }
    async fn rows(&mut self, id: usize, p: &[Param<'_>]) -> Result<Vec<Vec<Cell>>, ClientError> {
        match self {
            AnySql::Pg(c) => c.rows(id, p).await,
            AnySql::PgPipe(c) => c.rows(id, p).await,
            AnySql::My(c) => c.rows(id, p).await,
        }
    }
    async fn exec(&mut self, id: usize, p: &[Param<'_>]) -> Result<u64, ClientError> {
        match self {
            AnySql::Pg(c) => c.exec(id, p).await,
            AnySql::PgPipe(c) => c.exec(id, p).await,
            AnySql::My(c) => c.exec(id, p).await,
        }
    }
    async fn text(&mut self, sql: &str) -> Result<(), ClientError> {
        match self {
            AnySql::Pg(c) => c.text(sql).await,
            AnySql::PgPipe(c) => c.text(sql).await,
            AnySql::My(c) => c.text(sql).await,
        }
    }
    async fn select(&mut self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        match self {
            AnySql::Pg(c) => SqlConn::select(c, sql).await,
            AnySql::PgPipe(c) => c.select(sql).await,
            AnySql::My(c) => SqlConn::select(c, sql).await,
        }
    }
    async fn pipeline(&mut self, steps: &[Step<'_>]) -> Result<Vec<Outcome>, ClientError> {
        match self {
            AnySql::Pg(c) => c.pipeline(steps).await,
            AnySql::PgPipe(c) => c.pipeline(steps).await,
            AnySql::My(c) => c.pipeline(steps).await,
        }
    }
}

impl SqlTpcc {
    /// The endpoint with its database: MySQL's defaults to `tpcc`.
    fn db_endpoint(&self) -> Endpoint {
        let mut ep = self.ep.clone();
        if self.dialect == Dialect::Mysql {
            ep.database.get_or_insert_with(|| MYSQL_DB.into());
        }
        ep
    }

    /// A plain connection to the TPC-C database.
    pub async fn raw(&self) -> Result<AnySql, StoreError> {
        let ep = self.db_endpoint();
        Ok(match self.dialect {
            Dialect::Postgres => AnySql::Pg(PgConn::connect(&ep).await?),
            Dialect::Mysql => AnySql::My(MyConn::connect(&ep).await?),
        })
    }

    fn db_name(&self) -> String {
        self.db_endpoint()
            .database
            .unwrap_or_else(|| "postgres".into())
    }
}

impl TpccStore for SqlTpcc {
    type Conn = SqlTerminal;
    type Loader = SqlLoader;

    /// A terminal on PostgreSQL sends each pipeline with one Sync.
    async fn connect(&self) -> Result<SqlTerminal, StoreError> {
        let conn = match self.dialect {
            Dialect::Postgres => AnySql::PgPipe(PgPipe::connect(&self.db_endpoint()).await?),
            Dialect::Mysql => self.raw().await?,
        };
        SqlTerminal::prepare(conn, self.dialect).await
    }

    async fn loader(&self) -> Result<SqlLoader, StoreError> {
        Ok(SqlLoader {
            conn: self.raw().await?,
            dialect: self.dialect,
            inserts: BTreeMap::new(),
        })
    }

    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let db = self.db_name();
        let mut bare = self.ep.clone();
        let exists = match self.dialect {
            Dialect::Postgres => {
                crate::clients::postgres::query_text(&bare, "SELECT to_regclass('warehouse')::text")
                    .await?
            }
            Dialect::Mysql => {
                bare.database = None;
                let literal = db.replace('\\', "\\\\").replace('\'', "''");
                let n = crate::clients::mysql::query_text(
                    &bare,
                    &format!(
                        "SELECT COUNT(*) FROM information_schema.tables \
                         WHERE table_schema = '{literal}' AND table_name = 'warehouse'"
                    ),
                )
                .await?;
                if n.trim() == "0" { String::new() } else { n }
            }
        };
        if exists.is_empty() {
            return Ok(None);
        }
        let mut c = self.raw().await?;
        let any = c
            .select("SELECT COUNT(*) FROM (SELECT 1 FROM warehouse LIMIT 1) one")
            .await?;
        let rows = any.first().and_then(|r| r.first()).and_then(Cell::int);
        Ok((rows != Some(0)).then(|| {
            format!(
                "{} at {} holds TPC-C tables with rows in database {db} (a load drops them)",
                match self.dialect {
                    Dialect::Postgres => "postgres",
                    Dialect::Mysql => "mysql",
                },
                self.ep.addr()
            )
        }))
    }

    async fn recreate(&self) -> Result<(), StoreError> {
        if self.dialect == Dialect::Mysql {
            let mut bare = self.ep.clone();
            bare.database = None;
            let mut c = MyConn::connect(&bare).await?;
            c.exec_text(&format!(
                "CREATE DATABASE IF NOT EXISTS `{}`",
                self.db_name().replace('`', "``")
            ))
            .await?;
        }
        let mut c = self.raw().await?;
        for t in TABLES {
            c.text(&format!("DROP TABLE IF EXISTS {}", t.name)).await?;
            for stmt in self.dialect.create(t, self.engine.as_deref()) {
                c.text(&stmt).await?;
            }
        }
        Ok(())
    }

    async fn check(&self) -> Result<Vec<String>, StoreError> {
        let mut c = self.raw().await?;
        super::check::sql(&mut c).await
    }

    async fn data_rows(&self) -> Result<BTreeMap<&'static str, u64>, StoreError> {
        let mut c = self.raw().await?;
        let mut out = BTreeMap::new();
        for t in TABLES {
            let r = c
                .select(&format!("SELECT COUNT(*) FROM {}", t.name))
                .await?;
            let n = r.first().and_then(|r| r.first()).and_then(Cell::int);
            out.insert(t.name, n.unwrap_or(0) as u64);
        }
        Ok(out)
    }
}

/// A connection that inserts load batches, each as multi-row `INSERT`s
/// prepared once per table, date fill and row count.
pub struct SqlLoader {
    conn: AnySql,
    dialect: Dialect,
    inserts: BTreeMap<(&'static str, Dates, usize), usize>,
}

impl super::TpccLoader for SqlLoader {
    async fn insert(&mut self, batches: &[Rows]) -> Result<(), StoreError> {
        for b in batches {
            self.insert_table(b).await?;
        }
        Ok(())
    }
}

impl SqlLoader {
    /// Inserts one table's rows.
    async fn insert_table(&mut self, batch: &Rows) -> Result<(), StoreError> {
        let cols: Vec<&str> = batch.columns().collect();
        let dates: Vec<&str> = batch.date_columns().collect();
        let per_stmt = (MAX_PARAMS / cols.len().max(1)).min(LOAD_ROWS);
        for chunk in batch.rows.chunks(per_stmt) {
            let key = (batch.table.name, batch.dates, chunk.len());
            let st = match self.inserts.get(&key) {
                Some(s) => *s,
                None => {
                    let fill = match batch.dates {
                        Dates::Now => "CURRENT_TIMESTAMP",
                        Dates::Null => "NULL",
                    };
                    let mut row = vec!["?"; cols.len()];
                    row.extend(std::iter::repeat_n(fill, dates.len()));
                    let row = format!("({})", row.join(", "));
                    let names: Vec<&str> = cols.iter().chain(dates.iter()).copied().collect();
                    let sql = format!(
                        "INSERT INTO {} ({}) VALUES {}",
                        batch.table.name,
                        names.join(", "),
                        vec![row; chunk.len()].join(", ")
                    );
                    let s = self.conn.prepare(&self.dialect.marks(&sql)).await?;
                    self.inserts.insert(key, s);
                    s
                }
            };
            let params: Vec<Param> = chunk.iter().flatten().map(param).collect();
            self.conn.exec(st, &params).await?;
        }
        Ok(())
    }
}

fn param(c: &Cell) -> Param<'_> {
    match c {
        Cell::Int(i) => Param::Int(*i),
        Cell::Float(f) => Param::Float(*f),
        Cell::Text(t) => Param::Text(t),
        Cell::Null => Param::Null,
    }
}
