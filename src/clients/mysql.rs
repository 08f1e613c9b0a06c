//! The only importer of `mysql_async`.

use super::{Cell, ClientError, Endpoint, Outcome, Param, Step};
use ::mysql_async::prelude::Queryable;

fn err(ep: &Endpoint, e: impl std::fmt::Display) -> ClientError {
    ClientError::Mysql {
        addr: ep.addr(),
        msg: e.to_string(),
    }
}

/// `ER_LOCK_DEADLOCK` and `ER_LOCK_WAIT_TIMEOUT`: InnoDB rolled the
/// transaction back (or the statement, for a wait timeout); it may be run
/// again.
const CONFLICT_CODES: [u16; 2] = [1213, 1205];

/// A server error; a deadlock or lock wait timeout is a conflict the
/// caller may retry.
fn db_err(ep: &Endpoint, e: ::mysql_async::Error) -> ClientError {
    match &e {
        ::mysql_async::Error::Server(s) if CONFLICT_CODES.contains(&s.code) => {
            ClientError::Conflict {
                engine: "mysql",
                addr: ep.addr(),
                msg: e.to_string(),
            }
        }
        _ => err(ep, e),
    }
}

/// `SELECT VERSION()`.
pub async fn server_version(ep: &Endpoint) -> Result<String, ClientError> {
    let mut conn = MyConn::connect(ep).await?;
    let v: Option<String> = conn
        .conn
        .query_first("SELECT VERSION()")
        .await
        .map_err(|e| err(ep, e))?;
    let _ = conn.conn.disconnect().await;
    v.ok_or_else(|| err(ep, "SELECT VERSION() returned no row"))
}

/// The first column of the first row of `sql`, as text (`NULL` or no row
/// is empty): engine facts such as `SELECT @@innodb_buffer_pool_size`.
pub async fn query_text(ep: &Endpoint, sql: &str) -> Result<String, ClientError> {
    let mut conn = MyConn::connect(ep).await?;
    let v: Option<Option<String>> = conn.conn.query_first(sql).await.map_err(|e| err(ep, e))?;
    let _ = conn.conn.disconnect().await;
    Ok(v.flatten().unwrap_or_default())
}

/// `ANALYZE TABLE` of every table of database `db`: InnoDB refreshes the
/// statistics that `information_schema.tables` reports sizes from, which
/// it otherwise recalculates in the background, well after a bulk load
/// (a TPC-C warehouse read as a third of its size).
pub async fn analyze_database(ep: &Endpoint, db: &str) -> Result<(), ClientError> {
    let mut conn = MyConn::connect(ep).await?;
    let names: Vec<String> = conn
        .conn
        .exec(
            "SELECT table_name FROM information_schema.tables \
             WHERE table_schema = ? AND table_type = 'BASE TABLE'",
            (db,),
        )
        .await
        .map_err(|e| err(ep, e))?;
    if !names.is_empty() {
        let quote = |n: &str| format!("`{}`", n.replace('`', "``"));
        let list: Vec<String> = names
            .iter()
            .map(|t| format!("{}.{}", quote(db), quote(t)))
            .collect();
        let sql = format!("ANALYZE TABLE {}", list.join(", "));
        conn.conn.query_drop(sql).await.map_err(|e| err(ep, e))?;
    }
    let _ = conn.conn.disconnect().await;
    Ok(())
}

/// `CHECKSUM TABLE table`: the live checksum of its rows (a full scan),
/// equal for equal rows in one storage engine; empty for a missing table.
pub(crate) async fn table_checksum(ep: &Endpoint, table: &str) -> Result<String, ClientError> {
    let mut conn = MyConn::connect(ep).await?;
    let row: Option<(String, Option<u64>)> = conn
        .conn
        .query_first(format!("CHECKSUM TABLE {table}"))
        .await
        .map_err(|e| err(ep, e))?;
    let _ = conn.conn.disconnect().await;
    Ok(row
        .and_then(|r| r.1)
        .map(|c| c.to_string())
        .unwrap_or_default())
}

/// Every row of `sql` (text protocol, no parameters) by column name, each
/// value as text (`NULL` is empty): `SHOW SLAVE STATUS`, `SHOW BINARY LOGS`.
pub(crate) async fn query_named(
    ep: &Endpoint,
    sql: &str,
) -> Result<Vec<std::collections::BTreeMap<String, String>>, ClientError> {
    let mut conn = MyConn::connect(ep).await?;
    let rows: Vec<::mysql_async::Row> = conn.conn.query(sql).await.map_err(|e| err(ep, e))?;
    let _ = conn.conn.disconnect().await;
    Ok(rows
        .into_iter()
        .map(|row| {
            let names: Vec<String> = row
                .columns_ref()
                .iter()
                .map(|c| c.name_str().into_owned())
                .collect();
            names
                .into_iter()
                .zip(decode(row))
                .map(|(name, cell)| {
                    let text = match cell {
                        Cell::Null => String::new(),
                        Cell::Text(t) => t,
                        Cell::Int(i) => i.to_string(),
                        Cell::Float(f) => f.to_string(),
                    };
                    (name, text)
                })
                .collect()
        })
        .collect())
}

/// One connection.
pub struct MyConn {
    ep: Endpoint,
    conn: ::mysql_async::Conn,
    statements: Vec<::mysql_async::Statement>,
    /// Each statement commits on its own (the server's default).
    autocommit: bool,
}

impl MyConn {
    /// Connects over TCP to a loopback endpoint.
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        super::setup_step("mysql", "connect", &ep.addr(), Self::open(ep)).await
    }

    /// Connects and runs the handshake (login), unbounded.
    async fn open(ep: &Endpoint) -> Result<Self, ClientError> {
        let opts = ::mysql_async::OptsBuilder::default()
            .ip_or_hostname(ep.host.clone())
            .tcp_port(ep.port)
            .user(Some(ep.user.clone().unwrap_or_else(|| "root".into())))
            .pass(ep.password.clone())
            .db_name(ep.database.clone())
            .client_found_rows(true)
            .prefer_socket(false)
            // The connection keeps every statement it prepares for its
            // lifetime; mysql_async's cache (10 by default) would close
            // the eleventh's predecessors on the server under it.
            .stmt_cache_size(0);
        let conn = ::mysql_async::Conn::new(opts)
            .await
            .map_err(|e| err(ep, e))?;
        Ok(MyConn {
            ep: ep.clone(),
            conn,
            statements: Vec::new(),
            autocommit: true,
        })
    }

    /// Runs one statement without parameters, discarding rows.
    pub async fn exec_text(&mut self, sql: &str) -> Result<(), ClientError> {
        self.conn
            .query_drop(sql)
            .await
            .map_err(|e| db_err(&self.ep, e))
    }

    /// Every row `sql` (no parameters) returns, decoded.
    pub async fn select(&mut self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        let rows: Vec<::mysql_async::Row> = self
            .conn
            .query(sql)
            .await
            .map_err(|e| db_err(&self.ep, e))?;
        Ok(rows.into_iter().map(decode).collect())
    }
}

impl MyConn {
    /// Prepares `sql` on this connection; returns its handle.
    pub async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        let st = self
            .conn
            .prep(sql)
            .await
            .map_err(|e| err(&self.ep, format!("{e} (preparing `{sql}`)")))?;
        self.statements.push(st);
        Ok(self.statements.len() - 1)
    }

    /// Runs prepared statement `id`; returns the rows it returned.
    pub async fn query(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        let rows: Vec<::mysql_async::Row> = self
            .conn
            .exec(&self.statements[id], to_params(params))
            .await
            .map_err(|e| db_err(&self.ep, e))?;
        Ok(rows.len() as u64)
    }

    /// Runs prepared statement `id`; returns its rows, decoded.
    pub(crate) async fn query_rows(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> Result<Vec<Vec<Cell>>, ClientError> {
        let rows: Vec<::mysql_async::Row> = self
            .conn
            .exec(&self.statements[id], to_params(params))
            .await
            .map_err(|e| db_err(&self.ep, e))?;
        Ok(rows.into_iter().map(decode).collect())
    }

    /// Runs prepared statement `id`; returns the rows it matched or changed.
    pub async fn execute(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        self.conn
            .exec_drop(&self.statements[id], to_params(params))
            .await
            .map_err(|e| db_err(&self.ep, e))?;
        Ok(self.conn.affected_rows())
    }
}

impl MyConn {
    /// Turns autocommit off: the first statement after a `COMMIT` opens
    /// the next transaction, which saves [`Step::Begin`] its round trip.
    pub(crate) async fn autocommit_off(&mut self) -> Result<(), ClientError> {
        self.exec_text("SET autocommit = 0").await?;
        self.autocommit = false;
        Ok(())
    }

    /// Runs `steps` one after the other (the protocol answers each before
    /// the next is sent), up to the first that fails.
    pub async fn pipeline(&mut self, steps: &[Step<'_>]) -> Result<Vec<Outcome>, ClientError> {
        let mut out = Vec::with_capacity(steps.len());
        for step in steps {
            out.push(match *step {
                Step::Begin if !self.autocommit => Outcome::Done,
                Step::Begin => {
                    self.exec_text("BEGIN").await?;
                    Outcome::Done
                }
                Step::Text(sql) => {
                    self.exec_text(sql).await?;
                    Outcome::Done
                }
                Step::Rows(id, params) => Outcome::Rows(self.query_rows(id, params).await?),
                Step::Exec(id, params) => Outcome::Changed(self.execute(id, params).await?),
            });
        }
        Ok(out)
    }
}

/// A row's values: numbers as numbers, `DECIMAL` and strings as text
/// (which [`Cell::float`] parses), dates and times as `Null`.
fn decode(row: ::mysql_async::Row) -> Vec<Cell> {
    use ::mysql_async::Value;
    row.unwrap()
        .into_iter()
        .map(|v| match v {
            Value::Int(i) => Cell::Int(i),
            Value::UInt(u) => Cell::Int(u as i64),
            Value::Float(f) => Cell::Float(f as f64),
            Value::Double(f) => Cell::Float(f),
            Value::Bytes(b) => Cell::Text(String::from_utf8_lossy(&b).into_owned()),
            Value::NULL | Value::Date(..) | Value::Time(..) => Cell::Null,
        })
        .collect()
}

fn to_params(params: &[Param<'_>]) -> ::mysql_async::Params {
    ::mysql_async::Params::Positional(
        params
            .iter()
            .map(|p| match p {
                Param::Text(s) => ::mysql_async::Value::from(*s),
                Param::Int(i) => ::mysql_async::Value::from(*i),
                Param::Float(f) => ::mysql_async::Value::from(*f),
                Param::Null => ::mysql_async::Value::NULL,
            })
            .collect(),
    )
}
