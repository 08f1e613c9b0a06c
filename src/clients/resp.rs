//! Bounds on a Redis reply (RESP2) before any of it is decoded: a server
//! must not make the client buffer a reply of any size or decode one
//! nested deeply enough to overflow its stack (issue 34). [`Framer`]
//! walks a reply's headers as its bytes arrive, without recursion, and
//! says when the reply is whole; only then is it decoded.

/// Redis's own `proto-max-bulk-len`: the longest bulk string a server
/// takes (512 MB).
pub(crate) const MAX_BULK: u64 = 512 * 1024 * 1024;
/// The most elements one array may announce: as many as Redis takes in a
/// bulk (`proto-max-bulk-len`), far beyond any reply a benchmark reads.
pub(crate) const MAX_ELEMENTS: u64 = MAX_BULK;
/// The most bytes one reply may hold, all its elements together: one
/// bulk string at the limit and then some.
pub(crate) const MAX_REPLY: usize = 2 * MAX_BULK as usize;
/// The deepest nesting of arrays taken; the replies benchcage reads nest
/// two deep at most.
pub(crate) const MAX_DEPTH: usize = 64;
/// The longest header line (`+OK`, `-ERR ...`, `:1`, `$5`, `*3`).
const MAX_LINE: usize = 64 * 1024;

/// Why a reply was refused before it was decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    #[error(
        "a bulk string of {0} bytes, over Redis's proto-max-bulk-len ({MAX_BULK} bytes); refused \
         before reading it"
    )]
    BulkTooLong(u64),
    #[error(
        "an array of {0} elements, over the {MAX_ELEMENTS} taken (Redis's proto-max-bulk-len); \
         refused before reading it"
    )]
    TooManyElements(u64),
    #[error("a reply of more than {MAX_REPLY} bytes; refused")]
    ReplyTooLong,
    #[error("a reply nested more than {MAX_DEPTH} arrays deep; refused")]
    TooDeep,
    #[error("a reply header line longer than {MAX_LINE} bytes; refused")]
    LineTooLong,
    #[error("not a RESP2 reply: {0}")]
    Malformed(String),
}

/// Where the walk over the reply at the front of a buffer stands; kept
/// between reads so each byte is looked at about once.
#[derive(Debug, Default)]
pub(crate) struct Framer {
    /// Bytes of the reply known whole so far.
    pos: usize,
    /// Elements still to come of each open array, outermost first.
    open: Vec<u64>,
}

impl Framer {
    /// Walks on over `buf` (the reply starts at its front): `Some(len)`
    /// once the reply's `len` bytes are all there, `None` while more are
    /// needed. The caller consumes the reply and calls [`Framer::reset`].
    pub(crate) fn advance(&mut self, buf: &[u8]) -> Result<Option<usize>, FrameError> {
        loop {
            let Some(nl) = find_crlf(&buf[self.pos..]) else {
                if buf.len() - self.pos > MAX_LINE {
                    return Err(FrameError::LineTooLong);
                }
                return self.within(buf);
            };
            let line = &buf[self.pos..self.pos + nl];
            let body = self.pos + nl + 2;
            let (&kind, rest) = line
                .split_first()
                .ok_or_else(|| FrameError::Malformed("an empty line".into()))?;
            match kind {
                b'+' | b'-' | b':' => self.pos = body,
                b'$' => {
                    let len = number(rest)?;
                    if len >= 0 {
                        let len = len as u64;
                        if len > MAX_BULK {
                            return Err(FrameError::BulkTooLong(len));
                        }
                        let end = body + len as usize + 2;
                        if buf.len() < end {
                            return self.within(buf);
                        }
                        if &buf[end - 2..end] != b"\r\n" {
                            return Err(FrameError::Malformed(
                                "a bulk string longer than it said".into(),
                            ));
                        }
                        self.pos = end;
                    } else {
                        self.pos = body;
                    }
                }
                b'*' => {
                    let n = number(rest)?;
                    self.pos = body;
                    if n > 0 {
                        let n = n as u64;
                        if n > MAX_ELEMENTS {
                            return Err(FrameError::TooManyElements(n));
                        }
                        if self.open.len() >= MAX_DEPTH {
                            return Err(FrameError::TooDeep);
                        }
                        self.open.push(n);
                        continue;
                    }
                }
                other => {
                    return Err(FrameError::Malformed(format!(
                        "a reply that starts with byte {other:#04x}"
                    )));
                }
            }
            // One element is whole: it closes every array it completes.
            while let Some(left) = self.open.last_mut() {
                *left -= 1;
                if *left > 0 {
                    break;
                }
                self.open.pop();
            }
            if self.open.is_empty() {
                return Ok(Some(self.pos));
            }
        }
    }

    /// Starts over for the next reply.
    pub(crate) fn reset(&mut self) {
        self.pos = 0;
        self.open.clear();
    }

    /// More bytes are needed: `None`, unless the buffer already holds
    /// more than a reply may.
    fn within(&self, buf: &[u8]) -> Result<Option<usize>, FrameError> {
        if buf.len() > MAX_REPLY {
            return Err(FrameError::ReplyTooLong);
        }
        Ok(None)
    }
}

fn find_crlf(b: &[u8]) -> Option<usize> {
    b.windows(2).position(|w| w == b"\r\n")
}

/// The signed decimal of a `$` or `*` header.
fn number(digits: &[u8]) -> Result<i64, FrameError> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|n| *n >= -1)
        .ok_or_else(|| {
            FrameError::Malformed(format!(
                "a length `{}`",
                String::from_utf8_lossy(&digits[..digits.len().min(32)])
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(bytes: &[u8]) -> Result<Option<usize>, FrameError> {
        Framer::default().advance(bytes)
    }

    #[test]
    fn every_kind_of_reply_is_whole_at_its_last_byte() {
        for r in [
            &b"+OK\r\n"[..],
            b"-ERR no\r\n",
            b":42\r\n",
            b"$5\r\nhello\r\n",
            b"$-1\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"*2\r\n$1\r\na\r\n*2\r\n:1\r\n$0\r\n\r\n",
        ] {
            assert_eq!(
                whole(r),
                Ok(Some(r.len())),
                "{}",
                String::from_utf8_lossy(r)
            );
            for cut in 0..r.len() {
                assert_eq!(whole(&r[..cut]), Ok(None), "{cut} bytes of {r:?}");
            }
        }
    }

    #[test]
    fn a_reply_read_in_pieces_is_found_whole_with_the_next_one_behind_it() {
        let r = b"*3\r\n$3\r\nabc\r\n:7\r\n*1\r\n+x\r\n+NEXT\r\n";
        let mut f = Framer::default();
        let mut got = None;
        for end in 1..=r.len() {
            if let Some(n) = f.advance(&r[..end]).unwrap() {
                got = Some(n);
                break;
            }
        }
        assert_eq!(got, Some(r.len() - 7));
    }

    #[test]
    fn a_bulk_string_over_proto_max_bulk_len_is_refused_from_its_header() {
        assert_eq!(
            whole(b"$9999999999\r\nxx"),
            Err(FrameError::BulkTooLong(9_999_999_999))
        );
        assert_eq!(whole(b"$536870912\r\n"), Ok(None));
        assert_eq!(
            whole(b"*9999999999\r\n"),
            Err(FrameError::TooManyElements(9_999_999_999))
        );
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_refused_without_recursion() {
        let deep = b"*1\r\n".repeat(2_000_000);
        assert_eq!(whole(&deep), Err(FrameError::TooDeep));
        let mut ok = b"*1\r\n".repeat(MAX_DEPTH);
        ok.extend(b":1\r\n");
        assert_eq!(whole(&ok), Ok(Some(ok.len())));
    }

    #[test]
    fn bad_headers_are_errors_not_waits() {
        assert!(matches!(whole(b"?x\r\n"), Err(FrameError::Malformed(_))));
        assert!(matches!(whole(b"$x\r\n"), Err(FrameError::Malformed(_))));
        assert!(matches!(whole(b"$-2\r\n"), Err(FrameError::Malformed(_))));
        assert!(matches!(
            whole(b"$1\r\nabc\r\n"),
            Err(FrameError::Malformed(_))
        ));
        assert_eq!(
            whole(&vec![b'+'; MAX_LINE + 2]),
            Err(FrameError::LineTooLong)
        );
    }
}
