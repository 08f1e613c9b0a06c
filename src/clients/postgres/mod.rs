//! The only importer of `tokio-postgres`; `pipe` speaks the protocol
//! itself for pipelines.

mod pipe;

pub use pipe::PgPipe;

use super::{Cell, ClientError, Endpoint, Outcome, Param, Step};
use ::tokio_postgres::error::SqlState;
use ::tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use bytes::BytesMut;

fn err(ep: &Endpoint, e: impl std::fmt::Display) -> ClientError {
    ClientError::Postgres {
        addr: ep.addr(),
        msg: e.to_string(),
    }
}

/// A `tokio-postgres` error with what the server said: its `Display`
/// alone is only "db error" for every server error (issue 34).
fn describe(e: &::tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut msg = format!("db error: {} (SQLSTATE {})", db.message(), db.code().code());
            if let Some(d) = db.detail() {
                msg.push_str(&format!("; {d}"));
            }
            msg
        }
        None => {
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                msg.push_str(&format!(": {s}"));
                source = s.source();
            }
            msg
        }
    }
}

/// A server error; a deadlock or serialization failure is a conflict the
/// caller may retry.
fn db_err(ep: &Endpoint, e: ::tokio_postgres::Error) -> ClientError {
    let conflict = e.code().is_some_and(|c| {
        *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
    });
    if conflict {
        ClientError::Conflict {
            engine: "postgres",
            addr: ep.addr(),
            msg: describe(&e),
        }
    } else {
        err(ep, describe(&e))
    }
}

/// A server error as the protocol carries it (fields `C`, the SQLSTATE,
/// and `M`, the message); a deadlock or serialization failure is a
/// conflict the caller may retry.
fn db_error(
    ep: &Endpoint,
    body: &postgres_protocol::message::backend::ErrorResponseBody,
) -> ClientError {
    use ::tokio_postgres::fallible_iterator::FallibleIterator;
    let (mut code, mut msg) = (String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => msg = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    let msg = format!("db error: {msg} (SQLSTATE {code})");
    let conflict = [
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::T_R_SERIALIZATION_FAILURE,
    ]
    .iter()
    .any(|c| c.code() == code);
    if conflict {
        ClientError::Conflict {
            engine: "postgres",
            addr: ep.addr(),
            msg,
        }
    } else {
        err(ep, msg)
    }
}

/// `SHOW server_version`.
pub async fn server_version(ep: &Endpoint) -> Result<String, ClientError> {
    let conn = PgConn::connect(ep).await?;
    let row = conn
        .client
        .query_one("SHOW server_version", &[])
        .await
        .map_err(|e| db_err(ep, e))?;
    row.try_get::<_, String>(0).map_err(|e| err(ep, e))
}

/// The first column of the first row of `sql`, as text (`NULL` is empty):
/// engine facts such as `SHOW shared_buffers` or `pg_database_size`.
pub async fn query_text(ep: &Endpoint, sql: &str) -> Result<String, ClientError> {
    let conn = PgConn::connect(ep).await?;
    let row = conn
        .client
        .query_one(sql, &[])
        .await
        .map_err(|e| db_err(ep, e))?;
    let v: Option<String> = row.try_get(0).map_err(|e| err(ep, e))?;
    Ok(v.unwrap_or_default())
}

/// One connection; its driver task ends when this is dropped.
pub struct PgConn {
    ep: Endpoint,
    client: ::tokio_postgres::Client,
    statements: Vec<::tokio_postgres::Statement>,
}

impl PgConn {
    /// Connects over TCP to a loopback endpoint (no TLS).
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        super::setup_step("postgres", "connect", &ep.addr(), Self::open(ep)).await
    }

    /// Connects and runs the startup (login), unbounded.
    async fn open(ep: &Endpoint) -> Result<Self, ClientError> {
        let mut cfg = ::tokio_postgres::Config::new();
        cfg.host(&ep.host)
            .port(ep.port)
            .user(ep.user.as_deref().unwrap_or("postgres"))
            .dbname(ep.database.as_deref().unwrap_or("postgres"));
        if let Some(p) = &ep.password {
            cfg.password(p);
        }
        let (client, connection) = cfg
            .connect(::tokio_postgres::NoTls)
            .await
            .map_err(|e| db_err(ep, e))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(PgConn {
            ep: ep.clone(),
            client,
            statements: Vec::new(),
        })
    }

    /// Runs statements separated by `;` with no parameters.
    pub async fn batch(&self, sql: &str) -> Result<(), ClientError> {
        self.client
            .batch_execute(sql)
            .await
            .map_err(|e| db_err(&self.ep, e))
    }

    /// Every row `sql` (no parameters) returns, decoded.
    pub async fn select(&self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        let rows = self
            .client
            .query(sql, &[])
            .await
            .map_err(|e| db_err(&self.ep, e))?;
        decode(&self.ep, &rows)
    }
}

impl PgConn {
    /// Prepares `sql` on this connection; returns its handle.
    pub async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        let st = self
            .client
            .prepare(sql)
            .await
            .map_err(|e| err(&self.ep, format!("{} (preparing `{sql}`)", describe(&e))))?;
        self.statements.push(st);
        Ok(self.statements.len() - 1)
    }

    /// Runs prepared statement `id`; returns the rows it returned.
    pub async fn query(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        Ok(self.run_query(id, params).await?.len() as u64)
    }

    async fn run_query(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> Result<Vec<::tokio_postgres::Row>, ClientError> {
        let st = &self.statements[id];
        let args = args(st.params(), params);
        self.client
            .query(st, &refs(&args))
            .await
            .map_err(|e| db_err(&self.ep, e))
    }

    /// Runs prepared statement `id`; returns its rows, decoded.
    pub(crate) async fn query_rows(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> Result<Vec<Vec<Cell>>, ClientError> {
        let rows = self.run_query(id, params).await?;
        decode(&self.ep, &rows)
    }

    /// Runs prepared statement `id`; returns the rows it changed.
    pub async fn execute(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        let st = &self.statements[id];
        let args = args(st.params(), params);
        self.client
            .execute(st, &refs(&args))
            .await
            .map_err(|e| db_err(&self.ep, e))
    }
}

/// Most steps sent in one go: `join_all` polls up to this many futures in
/// order (a request goes out at its future's first poll); a longer
/// pipeline goes in parts.
const PIPELINE_MAX: usize = 30;

impl PgConn {
    /// Runs `steps` in order as one pipeline: every request is written
    /// before the first answer is read, so the pipeline costs one round
    /// trip (per [`PIPELINE_MAX`] steps). Returns each step's outcome, or
    /// the first failed step's error: PostgreSQL still ran the later
    /// steps, in the transaction that error aborted.
    pub async fn pipeline(&mut self, steps: &[Step<'_>]) -> Result<Vec<Outcome>, ClientError> {
        let mut out = Vec::with_capacity(steps.len());
        for part in steps.chunks(PIPELINE_MAX) {
            for r in self.pipeline_part(part).await {
                out.push(r?);
            }
        }
        Ok(out)
    }

    async fn pipeline_part(&self, steps: &[Step<'_>]) -> Vec<Result<Outcome, ClientError>> {
        let (client, statements, ep) = (&self.client, &self.statements, &self.ep);
        let sent = steps.iter().map(|step| async move {
            let db = |e| db_err(ep, e);
            match *step {
                Step::Begin => client.batch_execute("BEGIN").await.map_err(db)?,
                Step::Text(sql) => client.batch_execute(sql).await.map_err(db)?,
                Step::Rows(id, params) => {
                    let args = args(statements[id].params(), params);
                    let rows = client
                        .query(&statements[id], &refs(&args))
                        .await
                        .map_err(db)?;
                    return Ok(Outcome::Rows(decode(ep, &rows)?));
                }
                Step::Exec(id, params) => {
                    let args = args(statements[id].params(), params);
                    let n = client
                        .execute(&statements[id], &refs(&args))
                        .await
                        .map_err(db)?;
                    return Ok(Outcome::Changed(n));
                }
            }
            Ok(Outcome::Done)
        });
        futures::future::join_all(sent).await
    }
}

fn decode(ep: &Endpoint, rows: &[::tokio_postgres::Row]) -> Result<Vec<Vec<Cell>>, ClientError> {
    rows.iter()
        .map(|r| {
            (0..r.len())
                .map(|i| r.try_get::<_, Cell>(i).map_err(|e| err(ep, e)))
                .collect()
        })
        .collect()
}

/// A parameter in the width the statement declared for it: PostgreSQL
/// checks binary parameters against their declared type, so an `INT`
/// column's parameter must go as 4 bytes and a `NUMERIC` one as a numeric.
#[derive(Debug)]
enum Arg<'a> {
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Numeric(f64),
    Text(&'a str),
    Null,
}

/// `params` as the statement's parameter `types` take them.
fn args<'a>(types: &[Type], params: &[Param<'a>]) -> Vec<Arg<'a>> {
    params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let ty = types.get(i).unwrap_or(&Type::TEXT);
            match *p {
                Param::Text(s) => Arg::Text(s),
                Param::Null => Arg::Null,
                Param::Int(v) if *ty == Type::INT2 => {
                    i16::try_from(v).map_or(Arg::I64(v), Arg::I16)
                }
                Param::Int(v) if *ty == Type::INT4 => {
                    i32::try_from(v).map_or(Arg::I64(v), Arg::I32)
                }
                Param::Int(v) if *ty == Type::NUMERIC => Arg::Numeric(v as f64),
                Param::Int(v) if *ty == Type::FLOAT8 => Arg::F64(v as f64),
                Param::Int(v) => Arg::I64(v),
                Param::Float(v) if *ty == Type::NUMERIC => Arg::Numeric(v),
                Param::Float(v) if *ty == Type::FLOAT4 => Arg::F32(v as f32),
                Param::Float(v) => Arg::F64(v),
            }
        })
        .collect()
}

fn refs<'a>(args: &'a [Arg<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
}

impl ToSql for Arg<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Arg::I16(v) => v.to_sql(ty, out),
            Arg::I32(v) => v.to_sql(ty, out),
            Arg::I64(v) => v.to_sql(ty, out),
            Arg::F32(v) => v.to_sql(ty, out),
            Arg::F64(v) => v.to_sql(ty, out),
            Arg::Text(v) => v.to_sql(ty, out),
            Arg::Null => Ok(IsNull::Yes),
            Arg::Numeric(v) => {
                numeric_to_sql(*v, out);
                Ok(IsNull::No)
            }
        }
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    to_sql_checked!();
}

/// Decimal places a float keeps as a `NUMERIC` parameter (the column's
/// own scale rounds it further).
const NUMERIC_SCALE: usize = 6;

/// `v` in PostgreSQL's binary `NUMERIC`: digit count, weight, sign and
/// display scale, then base-10000 digits from the most significant.
fn numeric_to_sql(v: f64, out: &mut BytesMut) {
    let text = format!("{:.*}", NUMERIC_SCALE, v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let int = int.trim_start_matches('0');
    let pad = (4 - int.len() % 4) % 4;
    let int = format!("{}{int}", "0".repeat(pad));
    let mut frac = frac.to_string();
    while frac.len() % 4 != 0 {
        frac.push('0');
    }
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| std::str::from_utf8(c).unwrap_or("0").parse().unwrap_or(0))
            .collect()
    };
    let mut digits = group(&int);
    let mut weight = digits.len() as i16 - 1;
    digits.extend(group(&frac));
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    let sign: u16 = if v < 0.0 && !digits.is_empty() {
        0x4000
    } else {
        0
    };
    out.extend_from_slice(&(digits.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(NUMERIC_SCALE as u16).to_be_bytes());
    for d in digits {
        out.extend_from_slice(&d.to_be_bytes());
    }
}

/// PostgreSQL's binary `NUMERIC` as a float.
fn numeric_from_sql(raw: &[u8]) -> Result<f64, Box<dyn std::error::Error + Sync + Send>> {
    let word = |i: usize| -> Result<u16, Box<dyn std::error::Error + Sync + Send>> {
        raw.get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "short NUMERIC value".into())
    };
    let n = word(0)? as usize;
    let weight = word(2)? as i16 as i32;
    let sign = word(4)?;
    if sign == 0xC000 {
        return Ok(f64::NAN);
    }
    let mut v = 0.0;
    for i in 0..n {
        let d = word(8 + 2 * i)? as f64;
        v += d * 10_000f64.powi(weight - i as i32);
    }
    Ok(if sign == 0x4000 { -v } else { v })
}

impl<'a> FromSql<'a> for Cell {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Cell, Box<dyn std::error::Error + Sync + Send>> {
        Ok(match *ty {
            Type::INT2 => Cell::Int(i16::from_sql(ty, raw)? as i64),
            Type::INT4 => Cell::Int(i32::from_sql(ty, raw)? as i64),
            Type::INT8 => Cell::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Cell::Float(f32::from_sql(ty, raw)? as f64),
            Type::FLOAT8 => Cell::Float(f64::from_sql(ty, raw)?),
            Type::NUMERIC => Cell::Float(numeric_from_sql(raw)?),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                Cell::Text(String::from_sql(ty, raw)?)
            }
            _ => Cell::Null,
        })
    }
    fn from_sql_null(_: &Type) -> Result<Cell, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Cell::Null)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_round_trip_through_the_binary_format() {
        for v in [
            0.0,
            1.0,
            -10.0,
            12.34,
            300000.0,
            0.0005,
            4999.99,
            123456789.5,
        ] {
            let mut out = BytesMut::new();
            numeric_to_sql(v, &mut out);
            let back = numeric_from_sql(&out).unwrap();
            assert!((back - v).abs() < 1e-9, "{v} came back as {back}");
        }
    }
}
