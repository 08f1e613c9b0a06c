//! A PostgreSQL connection that speaks the extended query protocol itself,
//! over `postgres-protocol` (its only importer), for pipelines of
//! prepared statements: each step goes out as Bind and Execute and one
//! Sync ends the pipeline, so the server answers all of it in one flush
//! and the client reads it in one wakeup. tokio-postgres ends every query
//! with a Sync of its own, and the server flushes at each: one reply, one
//! wakeup of the client, per statement (issue 14: the client's CPU per
//! TPC-C NEW ORDER). There is no driver task either: the caller's task
//! writes the socket and reads the replies.
//!
//! After an error the server skips the rest of the pipeline up to its
//! Sync, as a pipeline of separate queries would not: the first error is
//! the pipeline's, and the steps after it did not run.

use super::{Arg, args, db_error, err};
use crate::clients::{Cell, ClientError, Endpoint, Outcome, Param, Step};
use ::tokio_postgres::fallible_iterator::FallibleIterator;
use ::tokio_postgres::types::{FromSql, IsNull, ToSql, Type};
use bytes::BytesMut;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Binary, for every parameter and every result column.
const BINARY: i16 = 1;

/// A statement prepared on the server: its name there, and the types of
/// its parameters and of its result columns.
struct Prepared {
    name: String,
    params: Vec<Type>,
    columns: Vec<Type>,
}

/// One connection; the server ends the session when it is dropped.
pub struct PgPipe {
    ep: Endpoint,
    stream: TcpStream,
    out: BytesMut,
    inbuf: BytesMut,
    statements: Vec<Prepared>,
    /// `BEGIN`, prepared at connect (a [`Step::Begin`]).
    begin: usize,
    /// Statements without parameters ([`Step::Text`], [`PgPipe::select`]),
    /// by their SQL, prepared on first use.
    texts: Vec<(String, usize)>,
}

impl PgPipe {
    /// Connects over TCP to a loopback endpoint (no TLS), as the
    /// endpoint's user (trust, password, MD5 or SCRAM-SHA-256).
    pub async fn connect(ep: &Endpoint) -> Result<PgPipe, ClientError> {
        ep.check_loopback()?;
        crate::clients::setup_step("postgres", "connect", &ep.addr(), Self::open(ep)).await
    }

    /// Connects, runs the startup and prepares `BEGIN`, unbounded.
    async fn open(ep: &Endpoint) -> Result<PgPipe, ClientError> {
        let stream = TcpStream::connect((ep.host.as_str(), ep.port))
            .await
            .map_err(|e| err(ep, e))?;
        stream.set_nodelay(true).map_err(|e| err(ep, e))?;
        let mut c = PgPipe {
            ep: ep.clone(),
            stream,
            out: BytesMut::with_capacity(4096),
            inbuf: BytesMut::with_capacity(16 * 1024),
            statements: Vec::new(),
            begin: 0,
            texts: Vec::new(),
        };
        c.startup().await?;
        c.begin = c.prepare("BEGIN").await?;
        // Ready before a transaction needs them: an aborted one refuses
        // to parse anything but its end.
        for sql in ["COMMIT", "ROLLBACK"] {
            c.statement_of(sql).await?;
        }
        Ok(c)
    }

    fn fail(&self, e: impl std::fmt::Display) -> ClientError {
        err(&self.ep, e)
    }

    async fn send(&mut self) -> Result<(), ClientError> {
        let r = self.stream.write_all(&self.out).await;
        self.out.clear();
        r.map_err(|e| self.fail(e))
    }

    /// The next message from the server; notices and parameter changes
    /// are skipped.
    async fn next(&mut self) -> Result<Message, ClientError> {
        loop {
            match Message::parse(&mut self.inbuf).map_err(|e| self.fail(e))? {
                Some(Message::NoticeResponse(_) | Message::ParameterStatus(_)) => {}
                Some(m) => return Ok(m),
                None => {
                    let n = self
                        .stream
                        .read_buf(&mut self.inbuf)
                        .await
                        .map_err(|e| self.fail(e))?;
                    if n == 0 {
                        return Err(self.fail("the server closed the connection"));
                    }
                }
            }
        }
    }

    /// The startup message, authentication, and the server's parameters
    /// up to its first ReadyForQuery.
    async fn startup(&mut self) -> Result<(), ClientError> {
        let user = self.ep.user.clone().unwrap_or_else(|| "postgres".into());
        let db = self
            .ep
            .database
            .clone()
            .unwrap_or_else(|| "postgres".into());
        let params = [
            ("user", user.as_str()),
            ("database", db.as_str()),
            ("client_encoding", "UTF8"),
        ];
        frontend::startup_message(params, &mut self.out).map_err(|e| self.fail(e))?;
        self.send().await?;
        let password = self.ep.password.clone().unwrap_or_default();
        let mut scram: Option<sasl::ScramSha256> = None;
        loop {
            match self.next().await? {
                Message::AuthenticationOk | Message::BackendKeyData(_) => {}
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password.as_bytes(), &mut self.out)
                        .map_err(|e| self.fail(e))?;
                    self.send().await?;
                }
                Message::AuthenticationMd5Password(b) => {
                    let hash = md5_hash(user.as_bytes(), password.as_bytes(), b.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.out)
                        .map_err(|e| self.fail(e))?;
                    self.send().await?;
                }
                Message::AuthenticationSasl(_) => {
                    let s = sasl::ScramSha256::new(
                        password.as_bytes(),
                        sasl::ChannelBinding::unsupported(),
                    );
                    frontend::sasl_initial_response(
                        sasl::SCRAM_SHA_256,
                        s.message(),
                        &mut self.out,
                    )
                    .map_err(|e| self.fail(e))?;
                    scram = Some(s);
                    self.send().await?;
                }
                Message::AuthenticationSaslContinue(b) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| self.fail("SCRAM continued before it started"))?;
                    s.update(b.data()).map_err(|e| err(&self.ep, e))?;
                    frontend::sasl_response(s.message(), &mut self.out)
                        .map_err(|e| self.fail(e))?;
                    self.send().await?;
                }
                Message::AuthenticationSaslFinal(b) => {
                    let mut s = scram
                        .take()
                        .ok_or_else(|| self.fail("SCRAM ended before it started"))?;
                    s.finish(b.data()).map_err(|e| self.fail(e))?;
                }
                Message::ReadyForQuery(_) => return Ok(()),
                Message::ErrorResponse(b) => return Err(db_error(&self.ep, &b)),
                _ => return Err(self.fail("an unexpected message while connecting")),
            }
        }
    }

    /// Prepares `sql` (`$1` placeholders); returns its handle.
    pub async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        let name = format!("s{}", self.statements.len());
        let failed = |e: String| err(&self.ep, format!("{e} (preparing `{sql}`)"));
        frontend::parse(&name, sql, std::iter::empty(), &mut self.out)
            .map_err(|e| failed(e.to_string()))?;
        frontend::describe(b'S', &name, &mut self.out).map_err(|e| failed(e.to_string()))?;
        frontend::sync(&mut self.out);
        self.send().await?;
        let (mut params, mut columns, mut error) = (Vec::new(), Vec::new(), None);
        loop {
            match self.next().await? {
                Message::ParseComplete | Message::NoData => {}
                Message::ParameterDescription(b) => {
                    let oids: Vec<u32> = b.parameters().collect().map_err(|e| self.fail(e))?;
                    params = oids.into_iter().map(type_of).collect();
                }
                Message::RowDescription(b) => {
                    let oids: Vec<u32> = b
                        .fields()
                        .map(|f| Ok(f.type_oid()))
                        .collect()
                        .map_err(|e| self.fail(e))?;
                    columns = oids.into_iter().map(type_of).collect();
                }
                Message::ErrorResponse(b) => error = Some(db_error(&self.ep, &b)),
                Message::ReadyForQuery(_) => break,
                _ => return Err(self.fail("an unexpected reply to a prepare")),
            }
        }
        if let Some(e) = error {
            return Err(err(&self.ep, format!("{e} (preparing `{sql}`)")));
        }
        self.statements.push(Prepared {
            name,
            params,
            columns,
        });
        Ok(self.statements.len() - 1)
    }

    /// The handle of `sql` without parameters, prepared on first use.
    async fn statement_of(&mut self, sql: &str) -> Result<usize, ClientError> {
        if let Some((_, id)) = self.texts.iter().find(|(t, _)| t == sql) {
            return Ok(*id);
        }
        let id = self.prepare(sql).await?;
        self.texts.push((sql.to_string(), id));
        Ok(id)
    }

    /// Bind and Execute of statement `id` with `params`, into the request.
    fn bind(&mut self, id: usize, params: &[Param<'_>]) -> Result<(), ClientError> {
        let st = &self.statements[id];
        let values = args(&st.params, params);
        let types = st.params.iter().chain(std::iter::repeat(&Type::TEXT));
        let r = frontend::bind(
            "",
            &st.name,
            [BINARY],
            values.iter().zip(types),
            |(v, ty): (&Arg, &Type), buf| match v.to_sql_checked(ty, buf)? {
                IsNull::Yes => Ok(postgres_protocol::IsNull::Yes),
                IsNull::No => Ok(postgres_protocol::IsNull::No),
            },
            [BINARY],
            &mut self.out,
        );
        if let Err(e) = r {
            self.out.clear();
            let e = match e {
                frontend::BindError::Conversion(e) => e.to_string(),
                frontend::BindError::Serialization(e) => e.to_string(),
            };
            return Err(self.fail(format!("encoding a parameter: {e}")));
        }
        frontend::execute("", 0, &mut self.out).map_err(|e| self.fail(e))
    }

    /// Runs `steps` in order as one pipeline ended by one Sync: one write,
    /// and the server's answer to all of it in one flush. Returns each
    /// step's outcome, or the first failed step's error (the server ran
    /// none of the steps after it).
    pub async fn pipeline(&mut self, steps: &[Step<'_>]) -> Result<Vec<Outcome>, ClientError> {
        // Statements of text steps are prepared first, in round trips of
        // their own, once per connection.
        let mut ids = Vec::with_capacity(steps.len());
        for step in steps {
            ids.push(match *step {
                Step::Begin => self.begin,
                Step::Text(sql) => self.statement_of(sql).await?,
                Step::Rows(id, _) | Step::Exec(id, _) => id,
            });
        }
        for (step, &id) in steps.iter().zip(&ids) {
            let params = match *step {
                Step::Rows(_, p) | Step::Exec(_, p) => p,
                Step::Begin | Step::Text(_) => &[],
            };
            self.bind(id, params)?;
        }
        frontend::sync(&mut self.out);
        self.send().await?;
        self.replies(steps, &ids).await
    }

    /// Reads the answers to a pipeline up to its ReadyForQuery.
    async fn replies(
        &mut self,
        steps: &[Step<'_>],
        ids: &[usize],
    ) -> Result<Vec<Outcome>, ClientError> {
        let mut out = Vec::with_capacity(steps.len());
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            match self.next().await? {
                Message::BindComplete => {}
                Message::DataRow(b) => {
                    let columns = &self.statements[ids[out.len()]].columns;
                    rows.push(decode_row(&self.ep, columns, &b)?);
                }
                Message::CommandComplete(b) => {
                    let tag = b.tag().map_err(|e| self.fail(e))?;
                    out.push(match steps[out.len()] {
                        Step::Rows(..) => Outcome::Rows(std::mem::take(&mut rows)),
                        Step::Exec(..) => Outcome::Changed(changed(tag)),
                        Step::Begin | Step::Text(_) => Outcome::Done,
                    });
                }
                Message::EmptyQueryResponse => out.push(Outcome::Done),
                Message::ErrorResponse(b) => error = Some(db_error(&self.ep, &b)),
                Message::ReadyForQuery(_) => break,
                _ => return Err(self.fail("an unexpected reply in a pipeline")),
            }
        }
        match error {
            Some(e) => Err(e),
            None if out.len() == steps.len() => Ok(out),
            None => Err(self.fail("a pipeline ended before every step answered")),
        }
    }

    /// Runs prepared statement `id`; returns its rows, decoded.
    pub async fn rows(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> Result<Vec<Vec<Cell>>, ClientError> {
        let mut out = self.pipeline(&[Step::Rows(id, params)]).await?;
        Ok(out.pop().map(Outcome::into_rows).unwrap_or_default())
    }

    /// Runs prepared statement `id`; returns the rows it changed.
    pub async fn exec(&mut self, id: usize, params: &[Param<'_>]) -> Result<u64, ClientError> {
        match self.pipeline(&[Step::Exec(id, params)]).await?.pop() {
            Some(Outcome::Changed(n)) => Ok(n),
            _ => Ok(0),
        }
    }

    /// Runs `sql` without parameters (`ROLLBACK`).
    pub async fn text(&mut self, sql: &str) -> Result<(), ClientError> {
        self.pipeline(&[Step::Text(sql)]).await.map(|_| ())
    }

    /// Every row `sql` (no parameters) returns, decoded.
    pub async fn select(&mut self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        let id = self.statement_of(sql).await?;
        self.rows(id, &[]).await
    }
}

/// The type of an OID; a type this client does not know reads as text.
fn type_of(oid: u32) -> Type {
    Type::from_oid(oid).unwrap_or(Type::TEXT)
}

/// The rows a command tag counts (`UPDATE 3`, `INSERT 0 5`); 0 for others.
fn changed(tag: &str) -> u64 {
    tag.rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn decode_row(
    ep: &Endpoint,
    columns: &[Type],
    b: &postgres_protocol::message::backend::DataRowBody,
) -> Result<Vec<Cell>, ClientError> {
    let buf = b.buffer();
    let mut cells = Vec::with_capacity(columns.len());
    let mut ranges = b.ranges();
    let mut i = 0;
    while let Some(range) = ranges.next().map_err(|e| err(ep, e))? {
        let ty = columns.get(i).unwrap_or(&Type::TEXT);
        let cell = match range {
            Some(r) => Cell::from_sql(ty, &buf[r]),
            None => Cell::from_sql_null(ty),
        };
        cells.push(cell.map_err(|e| err(ep, e))?);
        i += 1;
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_tag_counts_the_rows_it_names_last() {
        assert_eq!(changed("UPDATE 3"), 3);
        assert_eq!(changed("INSERT 0 5"), 5);
        assert_eq!(changed("DELETE 0"), 0);
        assert_eq!(changed("BEGIN"), 0);
    }
}
