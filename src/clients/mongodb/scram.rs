//! SCRAM-SHA-256 (RFC 5802 and RFC 7677) as MongoDB runs it: `saslStart`
//! and `saslContinue` on the auth source database, the payloads as binary.
//! Passwords are taken as given (no SASLprep: ASCII passwords only).

use super::wire::Malformed;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = hmac::Hmac<Sha256>;

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

/// A fresh client nonce.
pub(crate) fn nonce() -> String {
    let mut b = [0u8; 24];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    B64.encode(b)
}

/// The client's side of one conversation.
pub(crate) struct Scram {
    password: String,
    first_bare: String,
    nonce: String,
    server_signature: Vec<u8>,
}

impl Scram {
    /// Starts with `user` and a client nonce; [`Scram::client_first`] is
    /// the first message.
    pub fn new(user: &str, password: &str, nonce: String) -> Scram {
        let user = user.replace('=', "=3D").replace(',', "=2C");
        Scram {
            password: password.to_string(),
            first_bare: format!("n={user},r={nonce}"),
            nonce,
            server_signature: Vec::new(),
        }
    }

    /// `n,,n=user,r=nonce`.
    pub(crate) fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.first_bare).into_bytes()
    }

    /// The final message answering the server's first (`r=..,s=..,i=..`).
    pub(crate) fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, Malformed> {
        let text = std::str::from_utf8(server_first).map_err(|e| Malformed(e.to_string()))?;
        let field = |k: &str| {
            text.split(',')
                .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
                .ok_or_else(|| Malformed(format!("the server's SCRAM reply has no `{k}`")))
        };
        let r = field("r")?;
        if !r.starts_with(&self.nonce) {
            return Err(Malformed(
                "the server's SCRAM nonce does not extend ours".into(),
            ));
        }
        let salt = B64
            .decode(field("s")?)
            .map_err(|e| Malformed(e.to_string()))?;
        let rounds: u32 = field("i")?
            .parse()
            .map_err(|_| Malformed("a bad SCRAM iteration count".into()))?;
        let mut salted = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<Sha256>(self.password.as_bytes(), &salt, rounds, &mut salted);
        let client_key = hmac(&salted, b"Client Key");
        let stored_key = Sha256::digest(&client_key);
        let without_proof = format!("c=biws,r={r}");
        let auth = format!("{},{text},{without_proof}", self.first_bare);
        let signature = hmac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = hmac(&salted, b"Server Key");
        self.server_signature = hmac(&server_key, auth.as_bytes());
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Checks the server's final message (`v=signature`).
    pub fn verify(&self, server_final: &[u8]) -> Result<(), Malformed> {
        let text = std::str::from_utf8(server_final).map_err(|e| e.to_string())?;
        let v = text
            .split(',')
            .find_map(|kv| kv.strip_prefix("v="))
            .ok_or("the server's last SCRAM message has no signature")?;
        if B64.decode(v).ok().as_deref() == Some(&self.server_signature[..]) {
            Ok(())
        } else {
            Err("the server's SCRAM signature does not match (not the server we asked)".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677, section 3: user "user", password "pencil".
    #[test]
    fn the_rfc_7677_example_conversation_is_reproduced() {
        let mut s = Scram::new("user", "pencil", "rOprNGfwEbeRWgbNEkqO".into());
        assert_eq!(s.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let fin = s.client_final(server_first).unwrap();
        assert_eq!(
            String::from_utf8(fin).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        s.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert!(s.verify(b"v=AAAA").is_err());
    }
}
