//! What a MongoDB connection is asked to do beyond its address: the write
//! concern, the read preference, how long one round trip may take, and
//! (tests only) a cap on the wire version the server announced, which
//! forces an older protocol.

use super::wire::Malformed;
use std::time::Duration;

/// Acknowledgement a write waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum W {
    /// This many members (0: no acknowledgement at all).
    Nodes(i32),
    /// A majority of the replica set.
    Majority,
}

/// `w` and `j` of a write; `None` leaves the server's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteConcern {
    pub w: Option<W>,
    pub j: Option<bool>,
}

impl WriteConcern {
    /// True when nothing was asked (the server's default applies).
    pub(crate) fn is_default(&self) -> bool {
        self.w.is_none() && self.j.is_none()
    }

    /// True for `w: 0` without `j`: the server sends no acknowledgement.
    pub(crate) fn unacknowledged(&self) -> bool {
        self.w == Some(W::Nodes(0)) && self.j != Some(true)
    }
}

/// Which member reads may go to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReadPreference {
    #[default]
    Primary,
    PrimaryPreferred,
    Secondary,
    SecondaryPreferred,
    Nearest,
}

impl ReadPreference {
    /// The mode's name on the wire.
    pub fn mode(self) -> &'static str {
        match self {
            ReadPreference::Primary => "primary",
            ReadPreference::PrimaryPreferred => "primaryPreferred",
            ReadPreference::Secondary => "secondary",
            ReadPreference::SecondaryPreferred => "secondaryPreferred",
            ReadPreference::Nearest => "nearest",
        }
    }

    fn parse(s: &str) -> Option<ReadPreference> {
        [
            ReadPreference::Primary,
            ReadPreference::PrimaryPreferred,
            ReadPreference::Secondary,
            ReadPreference::SecondaryPreferred,
            ReadPreference::Nearest,
        ]
        .into_iter()
        .find(|p| p.mode().eq_ignore_ascii_case(s))
    }
}

/// The URL options a scenario may set through engine knobs (`store:` of
/// a knob): the write concern and the read preference. `socketTimeoutMS`
/// and `maxWireVersion` stay the URL's (timeouts and tests).
pub const STORE_OPTIONS: &[&str] = &["w", "journal", "readPreference"];

/// How long one round trip may take unless the URL says otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one query's cursor may be followed unless the options say
/// otherwise: far beyond reading any collection a benchmark loads.
pub(crate) const DEFAULT_CURSOR_TIME: Duration = Duration::from_secs(600);

/// Options of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MongoOptions {
    pub write_concern: WriteConcern,
    pub read_preference: ReadPreference,
    /// Longest wait for one reply (and for the connection itself).
    pub timeout: Duration,
    /// Longest a query may keep asking its cursor for more (`getMore`),
    /// however many batches: a server whose cursor never ends must not
    /// keep a client busy forever (issue 34).
    pub cursor_time: Duration,
    /// For tests: use the protocol of at most this wire version (6 and up
    /// OP_MSG, below that commands as OP_QUERY, below 2 the legacy opcodes).
    pub max_wire: Option<i32>,
}

impl Default for MongoOptions {
    fn default() -> Self {
        MongoOptions {
            write_concern: WriteConcern::default(),
            read_preference: ReadPreference::default(),
            timeout: DEFAULT_TIMEOUT,
            cursor_time: DEFAULT_CURSOR_TIME,
            max_wire: None,
        }
    }
}

impl std::fmt::Display for W {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            W::Nodes(n) => write!(f, "{n}"),
            W::Majority => f.write_str("majority"),
        }
    }
}

impl MongoOptions {
    /// What writes wait for and where reads go, in words:
    /// `writes w: 1, j: true; reads primary`.
    pub(crate) fn describe(&self) -> String {
        let wc = self.write_concern;
        let writes = if wc.is_default() {
            "writes with the server's default write concern".to_string()
        } else if wc.unacknowledged() {
            "writes unacknowledged (w: 0)".to_string()
        } else {
            let mut parts = Vec::new();
            if let Some(w) = wc.w {
                parts.push(format!("w: {w}"));
            }
            if let Some(j) = wc.j {
                parts.push(format!("j: {j}"));
            }
            format!("writes acknowledged with {}", parts.join(", "))
        };
        format!("{writes}; reads from {}", self.read_preference.mode())
    }

    /// Reads the options of a `mongodb://` URL's query string: `w`
    /// (a number or `majority`), `journal` (true/false), `readPreference`,
    /// `socketTimeoutMS`, and `maxWireVersion` (tests). Other keys are
    /// left to the caller.
    pub fn from_query(query: &str) -> Result<MongoOptions, Malformed> {
        let mut o = MongoOptions::default();
        for (k, v) in query.split('&').filter_map(|kv| kv.split_once('=')) {
            match k {
                "w" => {
                    o.write_concern.w = Some(match v {
                        "majority" => W::Majority,
                        n => W::Nodes(n.parse().map_err(|_| {
                            format!("w=`{v}`: use a number of members or `majority`")
                        })?),
                    })
                }
                "journal" | "j" => {
                    o.write_concern.j = Some(
                        v.parse()
                            .map_err(|_| format!("{k}=`{v}`: use true or false"))?,
                    )
                }
                "readPreference" => {
                    o.read_preference = ReadPreference::parse(v).ok_or_else(|| {
                        format!(
                            "readPreference=`{v}`: use primary, primaryPreferred, secondary, \
                             secondaryPreferred or nearest"
                        )
                    })?
                }
                "socketTimeoutMS" => {
                    let ms: u64 = v.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                        format!("socketTimeoutMS=`{v}`: use a number of milliseconds above 0")
                    })?;
                    o.timeout = Duration::from_millis(ms);
                }
                "maxWireVersion" => {
                    o.max_wire = Some(v.parse().map_err(|_| {
                        format!("maxWireVersion=`{v}`: use a wire version number (0, 4, 6, ...)")
                    })?)
                }
                _ => {}
            }
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_options_set_write_concern_read_preference_and_timeout() {
        let o = MongoOptions::from_query(
            "w=majority&journal=true&readPreference=secondaryPreferred&socketTimeoutMS=250&engine=x",
        )
        .unwrap();
        assert_eq!(o.write_concern.w, Some(W::Majority));
        assert_eq!(o.write_concern.j, Some(true));
        assert_eq!(o.read_preference, ReadPreference::SecondaryPreferred);
        assert_eq!(o.timeout, Duration::from_millis(250));
        assert_eq!(o.max_wire, None);
        let one = MongoOptions::from_query("w=1&maxWireVersion=4").unwrap();
        assert_eq!(one.write_concern.w, Some(W::Nodes(1)));
        assert_eq!(one.max_wire, Some(4));
        assert!(
            MongoOptions::from_query("w=0")
                .unwrap()
                .write_concern
                .unacknowledged()
        );
        assert!(MongoOptions::default().write_concern.is_default());
    }

    #[test]
    fn options_are_described_in_words() {
        let d = |q: &str| MongoOptions::from_query(q).unwrap().describe();
        assert_eq!(
            d(""),
            "writes with the server's default write concern; reads from primary"
        );
        assert_eq!(
            d("w=1&journal=true&readPreference=nearest"),
            "writes acknowledged with w: 1, j: true; reads from nearest"
        );
        assert_eq!(
            d("w=majority"),
            "writes acknowledged with w: majority; reads from primary"
        );
        assert!(d("w=0").starts_with("writes unacknowledged"));
    }

    #[test]
    fn bad_url_options_say_what_to_use() {
        for (q, hint) in [
            ("w=some", "majority"),
            ("journal=yes", "true or false"),
            ("readPreference=any", "nearest"),
            ("socketTimeoutMS=0", "above 0"),
            ("maxWireVersion=new", "wire version"),
        ] {
            let e = MongoOptions::from_query(q).unwrap_err().0;
            assert!(e.contains(hint), "{q}: {e}");
        }
    }
}
