//! One socket to a MongoDB server: the handshake that learns its wire
//! version, request/reply round trips under a timeout, commands in the
//! protocol the server speaks, and a reconnect after the connection broke
//! (a timed-out or cut reply leaves the socket out of step, so it is
//! never reused).

use super::options::{MongoOptions, ReadPreference};
use super::scram::{self, Scram};
use super::wire::{self, Doc, Msg, Reply};
use crate::clients::{ClientError, Endpoint};
use bson::{Bson, Document, RawDocument, doc};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// First wire version with OP_MSG (MongoDB 3.6).
pub(crate) const WIRE_OP_MSG: i32 = 6;
/// First wire version with `find` / `getMore` commands (MongoDB 3.2).
pub(crate) const WIRE_FIND_COMMAND: i32 = 4;
/// First wire version with `insert` / `update` / `delete` / `createIndexes`
/// commands (MongoDB 2.6).
pub(crate) const WIRE_WRITE_COMMANDS: i32 = 2;

/// The largest message a server takes or sends unless its `isMaster`
/// says otherwise (`maxMessageSizeBytes`; every release has said 48 MB).
pub(crate) const DEFAULT_MAX_MESSAGE: usize = 48_000_000;
/// The most a server's `maxMessageSizeBytes` is believed: a reply's
/// length is allocated before its bytes arrive, so a server that
/// announces 2 GB must not get 2 GB reserved (issue 34).
pub(crate) const MAX_MESSAGE_CEILING: usize = 128 * 1024 * 1024;

/// How requests travel to this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OP_MSG (wire 6 and later).
    OpMsg,
    /// Commands as OP_QUERY on `<db>.$cmd` (wire 0 to 5).
    QueryCommands,
}

pub(super) fn fail(ep: &Endpoint, msg: impl std::fmt::Display) -> ClientError {
    ClientError::Mongodb {
        addr: ep.addr(),
        msg: msg.to_string(),
    }
}

/// A connection and what it learned at the handshake.
pub struct Session {
    pub ep: Endpoint,
    pub opts: MongoOptions,
    /// The wire version used: the server's `maxWireVersion`, capped by
    /// the options.
    pub wire: i32,
    /// The longest reply taken: the server's `maxMessageSizeBytes` (at
    /// most [`MAX_MESSAGE_CEILING`]), [`DEFAULT_MAX_MESSAGE`] until it said.
    max_message: usize,
    /// `None` after the connection broke; the next call reconnects.
    stream: Option<TcpStream>,
    /// The request being written.
    pub out: Vec<u8>,
    /// The last reply, whole (header included).
    pub inbuf: Vec<u8>,
    next_id: i32,
    /// The opcode of a request sent without a reply since the last reply
    /// (a legacy write), named if the server then closes the socket.
    unanswered: Option<i32>,
}

impl Session {
    /// Connects and asks `isMaster`, which every server version answers
    /// over OP_QUERY.
    pub async fn connect(ep: &Endpoint, opts: &MongoOptions) -> Result<Session, ClientError> {
        ep.check_loopback()?;
        let mut s = Session {
            ep: ep.clone(),
            opts: opts.clone(),
            wire: 0,
            max_message: DEFAULT_MAX_MESSAGE,
            stream: None,
            out: Vec::with_capacity(512),
            inbuf: Vec::with_capacity(16 * 1024),
            next_id: 0,
            unanswered: None,
        };
        s.reconnect().await?;
        Ok(s)
    }

    async fn reconnect(&mut self) -> Result<(), ClientError> {
        let addr = self.ep.addr();
        let stream = tokio::time::timeout(self.opts.timeout, TcpStream::connect(&addr))
            .await
            .map_err(|_| fail(&self.ep, "no connection within the timeout"))?
            .map_err(|e| fail(&self.ep, e))?;
        stream.set_nodelay(true).map_err(|e| fail(&self.ep, e))?;
        self.stream = Some(stream);
        self.max_message = DEFAULT_MAX_MESSAGE;
        let id = self.next_request();
        let m = wire::op_query(&mut self.out, id, 0, "admin.$cmd", 0, -1);
        let mut d = Doc::begin(&mut self.out);
        d.i32(&mut self.out, "isMaster", 1);
        d.end(&mut self.out);
        m.end(&mut self.out);
        let r = self.round_trip("isMaster").await?;
        let doc = self.command_reply(&r, "isMaster")?;
        let server = match doc.get("maxWireVersion") {
            Ok(Some(v)) => number(v).unwrap_or(0.0) as i32,
            // 2.4-era servers (TokuMX 1.5, 2.0) do not announce one.
            _ => 0,
        };
        let max = max_message(doc);
        self.wire = self.opts.max_wire.map_or(server, |cap| server.min(cap));
        self.max_message = max;
        if self.ep.user.is_some() {
            self.authenticate().await?;
        }
        Ok(())
    }

    /// SCRAM-SHA-256 as the endpoint's user, on its auth source (`admin`
    /// when it names none). No message carries the password.
    async fn authenticate(&mut self) -> Result<(), ClientError> {
        let user = self.ep.user.clone().unwrap_or_default();
        let password = self.ep.password.clone().unwrap_or_default();
        let db = self
            .ep
            .auth_source
            .clone()
            .unwrap_or_else(|| "admin".into());
        let ep = self.ep.clone();
        let failed = |e: wire::Malformed| {
            fail(
                &ep,
                format!("authentication of user `{user}` on `{db}` failed: {e}"),
            )
        };
        let mut scram = Scram::new(&user, &password, scram::nonce());
        let start = doc! {
            "saslStart": 1, "mechanism": "SCRAM-SHA-256",
            "payload": binary(scram.client_first()), "autoAuthorize": 1,
            "options": {"skipEmptyExchange": true},
        };
        let r = self.command_doc(&db, &start, "saslStart").await?;
        let conv = r.get("conversationId").cloned().unwrap_or(Bson::Int32(1));
        let first = payload(&r).map_err(&failed)?;
        let fin = scram.client_final(&first).map_err(&failed)?;
        let next = doc! {"saslContinue": 1, "conversationId": conv.clone(), "payload": binary(fin)};
        let r = self.command_doc(&db, &next, "saslContinue").await?;
        scram
            .verify(&payload(&r).map_err(&failed)?)
            .map_err(&failed)?;
        if !r.get_bool("done").unwrap_or(false) {
            let last =
                doc! {"saslContinue": 1, "conversationId": conv, "payload": binary(Vec::new())};
            self.command_doc(&db, &last, "saslContinue").await?;
        }
        Ok(())
    }

    /// Runs a command given as a document; returns the checked reply.
    pub(crate) async fn command_doc(
        &mut self,
        db: &str,
        cmd: &Document,
        what: &str,
    ) -> Result<Document, ClientError> {
        let mut body = Vec::new();
        cmd.to_writer(&mut body).map_err(|e| fail(&self.ep, e))?;
        let (m, d) = self.begin_command(db, false);
        // The command's own fields, then `$db` for OP_MSG.
        self.out.extend_from_slice(&body[4..body.len() - 1]);
        self.end_command(m, d, db, false);
        let r = self.round_trip(what).await?;
        let doc = self.command_reply(&r, what)?;
        Document::try_from(doc).map_err(|e| fail(&self.ep, e))
    }

    /// A fresh request id.
    pub(crate) fn next_request(&mut self) -> i32 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    /// The protocol of this server.
    pub fn protocol(&self) -> Protocol {
        if self.wire >= WIRE_OP_MSG {
            Protocol::OpMsg
        } else {
            Protocol::QueryCommands
        }
    }

    /// Reconnects first when an earlier call broke the connection.
    pub async fn ready(&mut self) -> Result<(), ClientError> {
        if self.stream.is_none() {
            self.reconnect().await?;
        }
        Ok(())
    }

    /// Starts a command on `db` in the server's protocol; add its fields
    /// to `self.out` and finish with [`Session::end_command`].
    pub(crate) fn begin_command(&mut self, db: &str, read: bool) -> (Msg, Doc) {
        let id = self.next_request();
        let m = match self.protocol() {
            Protocol::OpMsg => wire::op_msg(&mut self.out, id),
            Protocol::QueryCommands => {
                let flags = if read && self.opts.read_preference != ReadPreference::Primary {
                    wire::QUERY_SECONDARY_OK
                } else {
                    0
                };
                wire::op_query_cmd(&mut self.out, id, flags, db)
            }
        };
        let d = Doc::begin(&mut self.out);
        (m, d)
    }

    /// Closes a command begun by [`Session::begin_command`]: OP_MSG names
    /// its database (and a read preference other than primary) inside.
    pub(crate) fn end_command(&mut self, m: Msg, mut d: Doc, db: &str, read: bool) {
        if self.protocol() == Protocol::OpMsg {
            d.str(&mut self.out, "$db", db);
            let pref = self.opts.read_preference;
            if read && pref != ReadPreference::Primary {
                let mut p = d.open(&mut self.out, "$readPreference");
                p.str(&mut self.out, "mode", pref.mode());
                p.end(&mut self.out);
            }
        }
        d.end(&mut self.out);
        m.end(&mut self.out);
    }

    /// Sends the request in `self.out` and reads its reply into
    /// `self.inbuf`, within the timeout. Any failure breaks the connection.
    pub async fn round_trip(&mut self, what: &str) -> Result<Reply, ClientError> {
        let timeout = self.opts.timeout;
        let r = match tokio::time::timeout(timeout, self.exchange()).await {
            Ok(r) => r,
            Err(_) => Err(format!("no reply within {} ms", timeout.as_millis())),
        };
        r.map_err(|e| {
            self.stream = None;
            fail(&self.ep, format!("{what}: {e}"))
        })
    }

    /// Sends the request in `self.out` and expects no reply (the legacy
    /// write opcodes and OP_KILL_CURSORS).
    pub(crate) async fn send_only(&mut self, what: &str) -> Result<(), ClientError> {
        let timeout = self.opts.timeout;
        self.unanswered = wire::Header::parse(&self.out).map(|h| h.op);
        let stream = self
            .stream
            .as_mut()
            .ok_or_else(|| fail(&self.ep, "not connected"))?;
        let r = match tokio::time::timeout(timeout, stream.write_all(&self.out)).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!("could not send within {} ms", timeout.as_millis())),
        };
        r.map_err(|e| {
            self.stream = None;
            fail(&self.ep, format!("{what}: {e}"))
        })
    }

    async fn exchange(&mut self) -> Result<Reply, String> {
        let stream = self.stream.as_mut().ok_or("not connected")?;
        let id = wire::Header::parse(&self.out).map_or(0, |h| h.request_id);
        let op = wire::Header::parse(&self.out).map_or(0, |h| h.op);
        stream
            .write_all(&self.out)
            .await
            .map_err(|e| e.to_string())?;
        self.inbuf.clear();
        let mut want = wire::HEADER_LEN;
        while self.inbuf.len() < want {
            let n = stream
                .read_buf(&mut self.inbuf)
                .await
                .map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(closed(self.unanswered.take().unwrap_or(op)));
            }
            if want == wire::HEADER_LEN && self.inbuf.len() >= wire::HEADER_LEN {
                want = wire::Header::parse(&self.inbuf).map_or(0, |h| h.length);
                if want < wire::HEADER_LEN {
                    return Err(format!("a reply of {want} bytes, shorter than its header"));
                }
                if want > self.max_message {
                    return Err(format!(
                        "a reply of {want} bytes, over the server's maxMessageSizeBytes ({}); \
                         refused before reading it",
                        self.max_message
                    ));
                }
                self.inbuf.reserve(want.saturating_sub(self.inbuf.len()));
            }
        }
        self.unanswered = None;
        if self.inbuf.len() > want {
            return Err("more bytes than the reply holds (out of step)".into());
        }
        let h = wire::Header::parse(&self.inbuf).ok_or("a reply without a header")?;
        if h.response_to != id {
            return Err(format!(
                "a reply to request {} while waiting for {id} (out of step)",
                h.response_to
            ));
        }
        wire::parse_reply(&self.inbuf).map_err(|e| e.0)
    }

    /// The first document of the reply, checked: `ok: 0` and an OP_REPLY
    /// query failure become the server's message as an error.
    pub(crate) fn command_reply(&self, r: &Reply, what: &str) -> Result<&RawDocument, ClientError> {
        let doc = self.first_doc(r, what)?;
        if r.flags & wire::REPLY_QUERY_FAILURE != 0 && self.inbuf_is_reply() {
            return Err(fail(
                &self.ep,
                format!("{what} failed: {}", server_error(doc)),
            ));
        }
        match doc.get("ok") {
            Ok(Some(v)) if number(v) == Some(1.0) => Ok(doc),
            _ if transient(doc) => Err(ClientError::Conflict {
                engine: "mongodb",
                addr: self.ep.addr(),
                msg: format!("{what} failed: {}", server_error(doc)),
            }),
            _ => Err(fail(
                &self.ep,
                format!("{what} failed: {}", server_error(doc)),
            )),
        }
    }

    fn inbuf_is_reply(&self) -> bool {
        wire::Header::parse(&self.inbuf).is_some_and(|h| h.op == wire::OP_REPLY)
    }

    /// The first document of a reply, unchecked.
    pub(crate) fn first_doc(&self, r: &Reply, what: &str) -> Result<&RawDocument, ClientError> {
        let bytes = wire::documents(&self.inbuf, r.docs)
            .next()
            .ok_or_else(|| fail(&self.ep, format!("{what}: an empty reply")))?
            .map_err(|e| fail(&self.ep, format!("{what}: {e}")))?;
        RawDocument::from_bytes(bytes).map_err(|e| fail(&self.ep, format!("{what}: {e}")))
    }
}

/// The `maxMessageSizeBytes` of an `isMaster` reply, within
/// [`MAX_MESSAGE_CEILING`]; [`DEFAULT_MAX_MESSAGE`] when it has none.
fn max_message(is_master: &RawDocument) -> usize {
    match is_master
        .get("maxMessageSizeBytes")
        .ok()
        .flatten()
        .and_then(number)
    {
        Some(n) if n >= wire::HEADER_LEN as f64 => (n as usize).min(MAX_MESSAGE_CEILING),
        _ => DEFAULT_MAX_MESSAGE,
    }
}

fn closed(op: i32) -> String {
    let name = match op {
        wire::OP_MSG => "OP_MSG",
        wire::OP_QUERY => "OP_QUERY",
        wire::OP_GET_MORE => "OP_GET_MORE",
        wire::OP_INSERT => "OP_INSERT",
        wire::OP_UPDATE => "OP_UPDATE",
        wire::OP_DELETE => "OP_DELETE",
        wire::OP_KILL_CURSORS => "OP_KILL_CURSORS",
        _ => "the request",
    };
    format!(
        "the server closed the connection after {name} (a server closes it on an opcode \
         it does not know, or it went away)"
    )
}

/// A BSON number as f64.
pub fn number(v: bson::RawBsonRef<'_>) -> Option<f64> {
    match v {
        bson::RawBsonRef::Double(d) => Some(d),
        bson::RawBsonRef::Int32(i) => Some(i as f64),
        bson::RawBsonRef::Int64(i) => Some(i as f64),
        bson::RawBsonRef::Boolean(b) => Some(b as u8 as f64),
        _ => None,
    }
}

/// MongoDB's `WriteConflict`: another transaction wrote the document.
const WRITE_CONFLICT: f64 = 112.0;

/// Whether a failed reply says the transaction may be run again: a write
/// conflict, or the `TransientTransactionError` label the server puts on
/// a transaction it aborted.
fn transient(doc: &RawDocument) -> bool {
    let labelled = doc.get_array("errorLabels").is_ok_and(|a| {
        a.into_iter()
            .flatten()
            .any(|l| l.as_str() == Some("TransientTransactionError"))
    });
    labelled || doc.get("code").ok().flatten().and_then(number) == Some(WRITE_CONFLICT)
}

/// `errmsg (code N)` or `$err` of a failed reply.
pub(crate) fn server_error(doc: &RawDocument) -> String {
    let msg = doc
        .get_str("errmsg")
        .or_else(|_| doc.get_str("$err"))
        .or_else(|_| doc.get_str("err"))
        .unwrap_or("the server gave no message");
    match doc.get("code") {
        Ok(Some(c)) => match number(c) {
            Some(c) => format!("{msg} (code {c})"),
            None => msg.to_string(),
        },
        _ => msg.to_string(),
    }
}

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes,
    })
}

fn payload(d: &Document) -> Result<Vec<u8>, wire::Malformed> {
    match d.get("payload") {
        Some(Bson::Binary(b)) => Ok(b.bytes.clone()),
        Some(Bson::String(s)) => Ok(s.clone().into_bytes()),
        _ => Err(wire::Malformed(
            "the server's SCRAM reply has no payload".into(),
        )),
    }
}
