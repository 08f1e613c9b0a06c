//! MongoDB wire messages as bytes: the standard header, OP_MSG, OP_QUERY,
//! the legacy write opcodes (OP_INSERT, OP_UPDATE, OP_DELETE), OP_GET_MORE,
//! OP_KILL_CURSORS, and the two replies (OP_MSG, OP_REPLY). Layouts are
//! those of MongoDB's wire protocol documentation ("Legacy Opcodes" and
//! "OP_MSG"); every integer is little-endian.
//!
//! Documents are written straight into the message buffer by [`Doc`], so a
//! hot command costs no allocation: a document's length is reserved when
//! it opens and filled in when it closes.

/// Reply to OP_QUERY and OP_GET_MORE.
pub const OP_REPLY: i32 = 1;
pub const OP_UPDATE: i32 = 2001;
pub const OP_INSERT: i32 = 2002;
pub const OP_QUERY: i32 = 2004;
pub(crate) const OP_GET_MORE: i32 = 2005;
pub(crate) const OP_DELETE: i32 = 2006;
pub(crate) const OP_KILL_CURSORS: i32 = 2007;
pub const OP_MSG: i32 = 2013;

/// Bytes of the standard header: messageLength, requestID, responseTo, opCode.
pub const HEADER_LEN: usize = 16;

/// OP_QUERY flag: reads may go to a secondary (`SecondaryOk`, bit 2).
pub(crate) const QUERY_SECONDARY_OK: i32 = 1 << 2;
/// OP_INSERT flag: go on past a failed document (`ContinueOnError`, bit 0).
pub(crate) const INSERT_CONTINUE_ON_ERROR: i32 = 1;
/// OP_DELETE flag: remove only the first match (`SingleRemove`, bit 0).
pub(crate) const DELETE_SINGLE_REMOVE: i32 = 1;
/// OP_REPLY flag: the cursor of an OP_GET_MORE is gone (bit 0).
pub(crate) const REPLY_CURSOR_NOT_FOUND: i32 = 1;
/// OP_REPLY flag: the query failed; the one document is `{$err: ...}` (bit 1).
pub(crate) const REPLY_QUERY_FAILURE: i32 = 1 << 1;

// BSON element types (bsonspec.org).
const T_DOUBLE: u8 = 0x01;
const T_STRING: u8 = 0x02;
const T_DOCUMENT: u8 = 0x03;
const T_ARRAY: u8 = 0x04;
const T_BOOL: u8 = 0x08;
const T_INT32: u8 = 0x10;
const T_INT64: u8 = 0x12;

fn put_i32(buf: &mut Vec<u8>, v: i32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

fn put_cstring(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(s.as_bytes());
    buf.push(0);
}

fn patch_len(buf: &mut [u8], start: usize) {
    let len = (buf.len() - start) as i32;
    buf[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// A BSON document being written at the end of a buffer; [`Doc::end`]
/// closes it (and [`Doc::open`] / [`Doc::array`] nest one inside).
pub struct Doc {
    start: usize,
    /// Next array index, for arrays.
    index: usize,
}

impl Doc {
    /// Opens a top-level document at the end of `buf`.
    pub(crate) fn begin(buf: &mut Vec<u8>) -> Doc {
        let start = buf.len();
        buf.extend_from_slice(&[0; 4]);
        Doc { start, index: 0 }
    }

    /// Closes the document: the terminating 0 and the length in front.
    pub fn end(self, buf: &mut Vec<u8>) {
        buf.push(0);
        patch_len(buf, self.start);
    }

    fn key(buf: &mut Vec<u8>, t: u8, name: &str) {
        buf.push(t);
        put_cstring(buf, name);
    }

    pub fn str(&mut self, buf: &mut Vec<u8>, name: &str, v: &str) -> &mut Self {
        Self::key(buf, T_STRING, name);
        put_i32(buf, v.len() as i32 + 1);
        put_cstring(buf, v);
        self
    }

    pub fn i32(&mut self, buf: &mut Vec<u8>, name: &str, v: i32) -> &mut Self {
        Self::key(buf, T_INT32, name);
        put_i32(buf, v);
        self
    }

    pub fn i64(&mut self, buf: &mut Vec<u8>, name: &str, v: i64) -> &mut Self {
        Self::key(buf, T_INT64, name);
        buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn f64(&mut self, buf: &mut Vec<u8>, name: &str, v: f64) -> &mut Self {
        Self::key(buf, T_DOUBLE, name);
        buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn bool(&mut self, buf: &mut Vec<u8>, name: &str, v: bool) -> &mut Self {
        Self::key(buf, T_BOOL, name);
        buf.push(v as u8);
        self
    }

    /// A whole encoded document as the value of `name`.
    pub fn raw(&mut self, buf: &mut Vec<u8>, name: &str, doc: &[u8]) -> &mut Self {
        Self::key(buf, T_DOCUMENT, name);
        buf.extend_from_slice(doc);
        self
    }

    /// Opens an embedded document `name`; close it with [`Doc::end`].
    pub fn open(&mut self, buf: &mut Vec<u8>, name: &str) -> Doc {
        Self::key(buf, T_DOCUMENT, name);
        Doc::begin(buf)
    }

    /// Opens an array `name`; add elements with [`Doc::next`] names.
    pub fn array(&mut self, buf: &mut Vec<u8>, name: &str) -> Doc {
        Self::key(buf, T_ARRAY, name);
        Doc::begin(buf)
    }

    /// Opens the next element of an array as an embedded document.
    pub(crate) fn push_doc(&mut self, buf: &mut Vec<u8>) -> Doc {
        let mut b = itoa::Buffer::new();
        let name = b.format(self.index);
        self.index += 1;
        Self::key(buf, T_DOCUMENT, name);
        Doc::begin(buf)
    }

    /// Writes the key of the next array element, a document that the
    /// caller writes whole right after.
    pub(crate) fn push_key(&mut self, buf: &mut Vec<u8>) {
        let mut b = itoa::Buffer::new();
        let name = b.format(self.index);
        self.index += 1;
        Self::key(buf, T_DOCUMENT, name);
    }

    /// Appends the next element of an array: a whole encoded document.
    pub fn push_raw(&mut self, buf: &mut Vec<u8>, doc: &[u8]) {
        let mut b = itoa::Buffer::new();
        let name = b.format(self.index);
        self.index += 1;
        Self::key(buf, T_DOCUMENT, name);
        buf.extend_from_slice(doc);
    }

    /// Appends the next element of an array: an int64.
    pub fn push_i64(&mut self, buf: &mut Vec<u8>, v: i64) {
        let mut b = itoa::Buffer::new();
        let name = b.format(self.index);
        self.index += 1;
        Self::key(buf, T_INT64, name);
        buf.extend_from_slice(&v.to_le_bytes());
    }
}

/// A message being written: the header is reserved by [`Msg::begin`] and
/// its length filled in by [`Msg::end`].
pub(crate) struct Msg {
    start: usize,
}

impl Msg {
    /// Clears `buf` and writes the header of a request `id` with `op`.
    pub(crate) fn begin(buf: &mut Vec<u8>, id: i32, op: i32) -> Msg {
        buf.clear();
        put_i32(buf, 0);
        put_i32(buf, id);
        put_i32(buf, 0);
        put_i32(buf, op);
        Msg { start: 0 }
    }

    /// Fills in the message length.
    pub fn end(self, buf: &mut [u8]) {
        patch_len(buf, self.start);
    }
}

/// OP_MSG up to its body: flagBits 0, then section kind 0 (the body
/// document follows).
pub(crate) fn op_msg(buf: &mut Vec<u8>, id: i32) -> Msg {
    let m = Msg::begin(buf, id, OP_MSG);
    put_i32(buf, 0);
    buf.push(0);
    m
}

/// OP_QUERY up to its query document: flags, fullCollectionName,
/// numberToSkip, numberToReturn.
pub(crate) fn op_query(
    buf: &mut Vec<u8>,
    id: i32,
    flags: i32,
    ns: &str,
    skip: i32,
    ret: i32,
) -> Msg {
    let m = Msg::begin(buf, id, OP_QUERY);
    put_i32(buf, flags);
    put_cstring(buf, ns);
    put_i32(buf, skip);
    put_i32(buf, ret);
    m
}

/// OP_QUERY of a command on `<db>.$cmd` up to the command document
/// (numberToSkip 0, numberToReturn -1: one reply, no cursor).
pub(crate) fn op_query_cmd(buf: &mut Vec<u8>, id: i32, flags: i32, db: &str) -> Msg {
    let m = Msg::begin(buf, id, OP_QUERY);
    put_i32(buf, flags);
    buf.extend_from_slice(db.as_bytes());
    put_cstring(buf, ".$cmd");
    put_i32(buf, 0);
    put_i32(buf, -1);
    m
}

/// OP_INSERT up to its documents: flags, fullCollectionName.
pub(crate) fn op_insert(buf: &mut Vec<u8>, id: i32, flags: i32, ns: &str) -> Msg {
    let m = Msg::begin(buf, id, OP_INSERT);
    put_i32(buf, flags);
    put_cstring(buf, ns);
    m
}

/// OP_UPDATE up to its selector: ZERO, fullCollectionName, flags
/// (bit 0 Upsert, bit 1 MultiUpdate). The selector and update follow.
pub(crate) fn op_update(buf: &mut Vec<u8>, id: i32, ns: &str, flags: i32) -> Msg {
    let m = Msg::begin(buf, id, OP_UPDATE);
    put_i32(buf, 0);
    put_cstring(buf, ns);
    put_i32(buf, flags);
    m
}

/// OP_DELETE up to its selector: ZERO, fullCollectionName, flags.
pub(crate) fn op_delete(buf: &mut Vec<u8>, id: i32, ns: &str, flags: i32) -> Msg {
    let m = Msg::begin(buf, id, OP_DELETE);
    put_i32(buf, 0);
    put_cstring(buf, ns);
    put_i32(buf, flags);
    m
}

/// A whole OP_GET_MORE: ZERO, fullCollectionName, numberToReturn, cursorID.
pub(crate) fn op_get_more(buf: &mut Vec<u8>, id: i32, ns: &str, ret: i32, cursor: i64) {
    let m = Msg::begin(buf, id, OP_GET_MORE);
    put_i32(buf, 0);
    put_cstring(buf, ns);
    put_i32(buf, ret);
    buf.extend_from_slice(&cursor.to_le_bytes());
    m.end(buf);
}

/// A whole OP_KILL_CURSORS: ZERO, numberOfCursorIDs, cursorIDs.
pub(crate) fn op_kill_cursors(buf: &mut Vec<u8>, id: i32, cursors: &[i64]) {
    let m = Msg::begin(buf, id, OP_KILL_CURSORS);
    put_i32(buf, 0);
    put_i32(buf, cursors.len() as i32);
    for c in cursors {
        buf.extend_from_slice(&c.to_le_bytes());
    }
    m.end(buf);
}

fn le_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The standard header of a received message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub length: usize,
    pub request_id: i32,
    pub response_to: i32,
    pub op: i32,
}

impl Header {
    /// The header at the start of `b`, once 16 bytes are there.
    pub fn parse(b: &[u8]) -> Option<Header> {
        Some(Header {
            length: le_i32(b, 0)?.max(0) as usize,
            request_id: le_i32(b, 4)?,
            response_to: le_i32(b, 8)?,
            op: le_i32(b, 12)?,
        })
    }
}

/// A reply, as offsets into the message: for OP_MSG one body document
/// (`number` 1, no cursor); for OP_REPLY its flags, cursor and documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub flags: i32,
    pub cursor_id: i64,
    pub number: i32,
    /// Where the first document starts.
    pub docs: usize,
}

/// What does not read on the wire or in a request: a reply cut short, a
/// document past its end, a statement, an option or a replica set status
/// that is not what it should be. Callers report it with the server it
/// came from ([`crate::clients::ClientError::Mongodb`]) or the spec field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

impl From<String> for Malformed {
    fn from(s: String) -> Malformed {
        Malformed(s)
    }
}

impl From<&str> for Malformed {
    fn from(s: &str) -> Malformed {
        Malformed(s.to_string())
    }
}

/// Reads the reply that `msg` (a whole message, header included) holds.
pub fn parse_reply(msg: &[u8]) -> Result<Reply, Malformed> {
    let h = Header::parse(msg).ok_or("a reply shorter than its header")?;
    match h.op {
        OP_MSG => {
            let flags = le_i32(msg, HEADER_LEN).ok_or("OP_MSG without flagBits")?;
            if msg.get(HEADER_LEN + 4) != Some(&0) {
                return Err("OP_MSG reply without a body section first".into());
            }
            Ok(Reply {
                flags,
                cursor_id: 0,
                number: 1,
                docs: HEADER_LEN + 5,
            })
        }
        OP_REPLY => {
            let flags = le_i32(msg, HEADER_LEN).ok_or("OP_REPLY cut short")?;
            let cursor = msg
                .get(HEADER_LEN + 4..HEADER_LEN + 12)
                .ok_or("OP_REPLY cut short")?;
            let number = le_i32(msg, HEADER_LEN + 16).ok_or("OP_REPLY cut short")?;
            Ok(Reply {
                flags,
                cursor_id: i64::from_le_bytes(cursor.try_into().unwrap()),
                number,
                docs: HEADER_LEN + 20,
            })
        }
        op => Err(Malformed(format!(
            "a reply with opcode {op}, expected OP_MSG or OP_REPLY"
        ))),
    }
}

/// The documents of a reply from `at`, each as its bytes.
pub fn documents(msg: &[u8], at: usize) -> impl Iterator<Item = Result<&[u8], Malformed>> {
    let mut at = at;
    std::iter::from_fn(move || {
        if at >= msg.len() {
            return None;
        }
        let len = match le_i32(msg, at) {
            Some(n) if n >= 5 && at + n as usize <= msg.len() => n as usize,
            _ => {
                at = msg.len();
                return Some(Err("a document runs past the end of its reply".into()));
            }
        };
        let d = &msg[at..at + len];
        at += len;
        Some(Ok(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{"_id": "k1"}` in BSON (bsonspec.org: int32 length, element, 0).
    const ID_K1: [u8; 17] = [
        17, 0, 0, 0, // length
        0x02, b'_', b'i', b'd', 0, // string "_id"
        3, 0, 0, 0, b'k', b'1', 0, // "k1"
        0,
    ];

    fn id_k1(buf: &mut Vec<u8>) {
        let mut d = Doc::begin(buf);
        d.str(buf, "_id", "k1");
        d.end(buf);
    }

    fn header(len: i32, id: i32, op: i32) -> Vec<u8> {
        [len, id, 0, op]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    }

    #[test]
    fn a_document_is_written_as_bson_with_its_length_in_front() {
        let mut buf = Vec::new();
        id_k1(&mut buf);
        assert_eq!(buf, ID_K1);
        assert_eq!(
            bson::RawDocument::from_bytes(&buf)
                .unwrap()
                .get_str("_id")
                .unwrap(),
            "k1"
        );
    }

    #[test]
    fn nested_documents_and_arrays_decode_with_the_bson_crate() {
        let mut buf = Vec::new();
        let mut d = Doc::begin(&mut buf);
        d.i32(&mut buf, "a", 1)
            .i64(&mut buf, "b", -2)
            .f64(&mut buf, "c", 0.5);
        d.bool(&mut buf, "t", true);
        let mut arr = d.array(&mut buf, "xs");
        let mut e = arr.push_doc(&mut buf);
        e.str(&mut buf, "k", "v");
        e.end(&mut buf);
        arr.push_i64(&mut buf, 7);
        arr.end(&mut buf);
        d.end(&mut buf);
        let doc = bson::Document::from_reader(&buf[..]).unwrap();
        assert_eq!(
            doc,
            bson::doc! {"a": 1, "b": -2i64, "c": 0.5, "t": true, "xs": [{"k": "v"}, 7i64]}
        );
    }

    /// OP_INSERT: header, int32 flags, cstring fullCollectionName, documents.
    #[test]
    fn op_insert_is_laid_out_as_the_documentation_says() {
        let mut buf = Vec::new();
        let m = op_insert(&mut buf, 7, INSERT_CONTINUE_ON_ERROR, "db.c");
        id_k1(&mut buf);
        m.end(&mut buf);
        let mut want = header(16 + 4 + 5 + 17, 7, 2002);
        want.extend([1, 0, 0, 0]);
        want.extend(b"db.c\0");
        want.extend(ID_K1);
        assert_eq!(buf, want);
    }

    /// OP_UPDATE: header, int32 ZERO, cstring ns, int32 flags, selector, update.
    #[test]
    fn op_update_is_laid_out_as_the_documentation_says() {
        let mut buf = Vec::new();
        let m = op_update(&mut buf, 8, "db.c", 0);
        id_k1(&mut buf);
        id_k1(&mut buf);
        m.end(&mut buf);
        let mut want = header(16 + 4 + 5 + 4 + 34, 8, 2001);
        want.extend([0, 0, 0, 0]);
        want.extend(b"db.c\0");
        want.extend([0, 0, 0, 0]);
        want.extend(ID_K1);
        want.extend(ID_K1);
        assert_eq!(buf, want);
    }

    /// OP_DELETE: header, int32 ZERO, cstring ns, int32 flags, selector.
    #[test]
    fn op_delete_is_laid_out_as_the_documentation_says() {
        let mut buf = Vec::new();
        let m = op_delete(&mut buf, 9, "db.c", DELETE_SINGLE_REMOVE);
        id_k1(&mut buf);
        m.end(&mut buf);
        let mut want = header(16 + 4 + 5 + 4 + 17, 9, 2006);
        want.extend([0, 0, 0, 0]);
        want.extend(b"db.c\0");
        want.extend([1, 0, 0, 0]);
        want.extend(ID_K1);
        assert_eq!(buf, want);
    }

    /// OP_QUERY: header, int32 flags, cstring ns, int32 numberToSkip,
    /// int32 numberToReturn, query document.
    #[test]
    fn op_query_is_laid_out_as_the_documentation_says() {
        let mut buf = Vec::new();
        let m = op_query(&mut buf, 10, QUERY_SECONDARY_OK, "db.$cmd", 0, -1);
        id_k1(&mut buf);
        m.end(&mut buf);
        let mut want = header(16 + 4 + 8 + 8 + 17, 10, 2004);
        want.extend([4, 0, 0, 0]);
        want.extend(b"db.$cmd\0");
        want.extend([0, 0, 0, 0]);
        want.extend((-1i32).to_le_bytes());
        want.extend(ID_K1);
        assert_eq!(buf, want);
    }

    /// OP_GET_MORE: header, int32 ZERO, cstring ns, int32 numberToReturn, int64 cursorID.
    #[test]
    fn op_get_more_is_laid_out_as_the_documentation_says() {
        let mut buf = Vec::new();
        op_get_more(&mut buf, 11, "db.c", 100, 0x0102030405060708);
        let mut want = header(16 + 4 + 5 + 4 + 8, 11, 2005);
        want.extend([0, 0, 0, 0]);
        want.extend(b"db.c\0");
        want.extend([100, 0, 0, 0]);
        want.extend([8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(buf, want);
    }

    /// OP_KILL_CURSORS: header, int32 ZERO, int32 numberOfCursorIDs, int64* cursorIDs.
    #[test]
    fn op_kill_cursors_is_laid_out_as_the_documentation_says() {
        let mut buf = Vec::new();
        op_kill_cursors(&mut buf, 12, &[5, 6]);
        let mut want = header(16 + 4 + 4 + 16, 12, 2007);
        want.extend([0, 0, 0, 0, 2, 0, 0, 0]);
        want.extend(5i64.to_le_bytes());
        want.extend(6i64.to_le_bytes());
        assert_eq!(buf, want);
    }

    /// OP_MSG: header, uint32 flagBits, section kind 0 and its document.
    #[test]
    fn op_msg_is_laid_out_as_the_documentation_says() {
        let mut buf = Vec::new();
        let m = op_msg(&mut buf, 13);
        id_k1(&mut buf);
        m.end(&mut buf);
        let mut want = header(16 + 4 + 1 + 17, 13, 2013);
        want.extend([0, 0, 0, 0, 0]);
        want.extend(ID_K1);
        assert_eq!(buf, want);
    }

    /// OP_REPLY: header, int32 responseFlags, int64 cursorID, int32
    /// startingFrom, int32 numberReturned, documents.
    #[test]
    fn op_reply_is_read_with_its_cursor_and_documents() {
        let mut msg = header(16 + 20 + 34, 99, OP_REPLY);
        msg[8..12].copy_from_slice(&13i32.to_le_bytes());
        msg.extend(REPLY_CURSOR_NOT_FOUND.to_le_bytes());
        msg.extend(42i64.to_le_bytes());
        msg.extend(0i32.to_le_bytes());
        msg.extend(2i32.to_le_bytes());
        msg.extend(ID_K1);
        msg.extend(ID_K1);
        let h = Header::parse(&msg).unwrap();
        assert_eq!((h.length, h.response_to, h.op), (70, 13, OP_REPLY));
        let r = parse_reply(&msg).unwrap();
        assert_eq!((r.flags, r.cursor_id, r.number), (1, 42, 2));
        let docs: Vec<_> = documents(&msg, r.docs).collect::<Result<_, _>>().unwrap();
        assert_eq!(docs, vec![&ID_K1[..], &ID_K1[..]]);
        let mut cut = msg.clone();
        cut.truncate(msg.len() - 3);
        assert!(documents(&cut, r.docs).any(|d| d.is_err()));
    }
}
