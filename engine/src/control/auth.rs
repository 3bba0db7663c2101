//! Pre-shared-key authentication: challenge and response with HMAC-SHA256.
//!
//! The key never crosses the wire. Each session the server picks a fresh random nonce and
//! the client adds its own; each side proves it holds the key with an HMAC over both
//! nonces and a label naming the side. A recorded answer is worthless in the next session
//! (the server's nonce differs), and the server's proof cannot be replayed as a client's
//! (the label differs). Proofs are compared in constant time (`Mac::verify_slice`).

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};

/// Bytes of each nonce.
pub const NONCE_LEN: usize = 32;
/// Shortest key accepted: 128 bits, as bytes of whatever the operator put in the file.
pub const MIN_KEY_LEN: usize = 16;
/// Longest key accepted; a key file is a secret, not a document.
pub const MAX_KEY_LEN: usize = 4096;
/// The environment variable a client reads its key from when no --psk-file is given.
pub const PSK_ENV: &str = "RINGPERF_PSK";

/// Domain separation: a proof from this protocol means nothing anywhere else.
const LABEL: &[u8] = b"ringperf-auth/2";

type HmacSha256 = Hmac<Sha256>;

/// A pre-shared key. Its Debug output never shows the key.
#[derive(Clone)]
pub struct Psk(Vec<u8>);

impl fmt::Debug for Psk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Psk({} bytes)", self.0.len())
    }
}

/// Which side a proof speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Party {
    Client,
    Server,
}

impl Psk {
    /// Reads a key file: its bytes less trailing whitespace. Neither its group nor other
    /// users may have any access to it (mode 600 or 400), like an ssh private key.
    pub fn from_file(path: &Path) -> Result<Psk> {
        let shown = path.display();
        // Opened without blocking and checked to be a regular file: a FIFO named as the key
        // cannot hold the server's start or a client.
        let file = crate::input::open_regular(path, "key file")?;
        let meta = file.metadata().map_err(|e| Error::io(format!("reading the key file '{shown}'"), e))?;
        // Like an ssh private key: a key its group can read is a key shared with the group.
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(Error::Usage(format!(
                "the key file '{shown}' has mode {mode:03o}, open to its group or other users: run `chmod 600 {shown}`"
            )));
        }
        if meta.len() > MAX_KEY_LEN as u64 + 2 {
            return Err(Error::Usage(format!(
                "the key file '{shown}' is over {MAX_KEY_LEN} bytes: a key, not a document, belongs there"
            )));
        }
        let bytes = crate::input::read_from(file, path, crate::input::KEY)?;
        Psk::new(bytes, &format!("the key in '{shown}'"))
    }

    /// A key given as a string (the RINGPERF_PSK variable).
    pub fn from_secret(secret: &str, what: &str) -> Result<Psk> {
        Psk::new(secret.as_bytes().to_vec(), what)
    }

    fn new(mut bytes: Vec<u8>, what: &str) -> Result<Psk> {
        while bytes.last().is_some_and(u8::is_ascii_whitespace) {
            bytes.pop();
        }
        if bytes.len() < MIN_KEY_LEN || bytes.len() > MAX_KEY_LEN {
            return Err(Error::Usage(format!(
                "{what} is {} bytes long: use {MIN_KEY_LEN} to {MAX_KEY_LEN} bytes, e.g. `head -c 32 /dev/urandom | base64 > ringperf.key`",
                bytes.len()
            )));
        }
        Ok(Psk(bytes))
    }

    fn mac(&self, party: Party, server_nonce: &[u8], client_nonce: &[u8]) -> HmacSha256 {
        // HMAC takes keys of any length; new_from_slice cannot fail for it.
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.0).expect("HMAC accepts any key length");
        m.update(LABEL);
        m.update(match party {
            Party::Client => b"\0client\0",
            Party::Server => b"\0server\0",
        });
        m.update(server_nonce);
        m.update(client_nonce);
        m
    }

    /// The proof `party` sends for the session with these nonces, hex-encoded.
    pub fn proof(&self, party: Party, server_nonce: &[u8], client_nonce: &[u8]) -> String {
        hex(&self.mac(party, server_nonce, client_nonce).finalize().into_bytes())
    }

    /// Checks a hex proof in constant time. Malformed hex is simply a wrong proof.
    pub fn verify(&self, party: Party, server_nonce: &[u8], client_nonce: &[u8], proof: &str) -> bool {
        let Some(bytes) = unhex(proof) else { return false };
        self.mac(party, server_nonce, client_nonce).verify_slice(&bytes).is_ok()
    }
}

/// A fresh nonce from the kernel's CSPRNG.
pub fn nonce() -> Result<[u8; NONCE_LEN]> {
    let mut b = [0u8; NONCE_LEN];
    let mut got = 0;
    while got < b.len() {
        // SAFETY: writes at most `b.len() - got` bytes into the rest of `b`.
        let n = unsafe { libc::getrandom(b[got..].as_mut_ptr().cast(), b.len() - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::io("reading random bytes for a nonce", e));
        }
        got += n as usize;
    }
    Ok(b)
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Parses hex of at most 128 bytes (no proof or nonce is longer); `None` if malformed.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.len() > 256 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    s.as_bytes().chunks(2).map(|p| Some(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Psk {
        Psk::from_secret(s, "test key").unwrap()
    }

    #[test]
    fn a_proof_verifies_only_for_its_key_party_and_nonces() {
        let k = key("correct horse battery staple");
        let (sn, cn) = (nonce().unwrap(), nonce().unwrap());
        let p = k.proof(Party::Client, &sn, &cn);
        assert!(k.verify(Party::Client, &sn, &cn, &p));
        assert!(!k.verify(Party::Server, &sn, &cn, &p), "a client proof passed as the server's");
        let other = nonce().unwrap();
        assert!(!k.verify(Party::Client, &other, &cn, &p), "a proof replayed under a new server nonce");
        assert!(!key("another key of enough length").verify(Party::Client, &sn, &cn, &p));
        for bad in ["", "zz", "00", &p[..10], &format!("{p}00")] {
            assert!(!k.verify(Party::Client, &sn, &cn, bad), "{bad:?}");
        }
    }

    #[test]
    fn nonces_differ_and_hex_roundtrips() {
        assert_ne!(nonce().unwrap(), nonce().unwrap());
        let b = nonce().unwrap();
        assert_eq!(unhex(&hex(&b)).unwrap(), b);
        assert_eq!(unhex("0g"), None);
    }

    #[test]
    fn short_keys_are_refused_and_trailing_newlines_ignored() {
        assert!(matches!(Psk::from_secret("short", "k"), Err(Error::Usage(_))));
        let a = key("0123456789abcdef\n");
        let b = key("0123456789abcdef");
        let (sn, cn) = ([1u8; 32], [2u8; 32]);
        assert!(b.verify(Party::Server, &sn, &cn, &a.proof(Party::Server, &sn, &cn)));
        assert_eq!(format!("{a:?}"), "Psk(16 bytes)");
    }
}
