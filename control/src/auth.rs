//! Pre-shared-key authentication: a mutual challenge and response with HMAC-SHA256, in
//! which the server proves first and each proof is valid only for the endpoint the client
//! dialled.
//!
//! The key never crosses the wire. The client sends its nonce and the endpoint it dialled
//! (the address and port it connected to) in its Hello; the server adds a fresh nonce and,
//! if that endpoint is one of its own, proves it holds the key with an HMAC over a label,
//! its role, both nonces and that endpoint. Only once that proof checks out against the
//! endpoint the client really dialled does the client prove itself, over the same session
//! with its own role. So a relay at another endpoint cannot pass a real server's proof off
//! as its own (the endpoint differs), the client proves nothing to it, and a recorded
//! answer is worthless in the next session (the nonces differ). Every field is
//! length-prefixed or of fixed length, so no two sessions feed the HMAC the same bytes.
//! Proofs are compared in constant time (`Mac::verify_slice`). SECURITY.md says why the
//! client's own endpoint is not bound (NAT).

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::str::FromStr;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use ringperf_core::error::{Error, Result};

/// Bytes of each nonce.
pub const NONCE_LEN: usize = 32;
/// Shortest key accepted: 128 bits, as bytes of whatever the operator put in the file.
pub const MIN_KEY_LEN: usize = 16;
/// Longest key accepted; a key file is a secret, not a document.
pub const MAX_KEY_LEN: usize = 4096;
/// The environment variable a client reads its key from when no --psk-file is given.
pub const PSK_ENV: &str = "RINGPERF_PSK";

/// Domain separation: a proof from this protocol means nothing anywhere else.
const LABEL: &[u8] = b"ringperf-auth/3";

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

/// A server's endpoint as a proof binds it: an IP address and a port, an IPv4-mapped IPv6
/// address taken as the IPv4 one (a dual-stack server sees ::ffff:a.b.c.d where the client
/// dialled a.b.c.d) and an IPv6 scope left out (each host numbers its own interfaces).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    ip: IpAddr,
    port: u16,
}

impl Endpoint {
    pub fn of(addr: SocketAddr) -> Endpoint {
        Endpoint { ip: addr.ip().to_canonical(), port: addr.port() }
    }

    pub fn addr(self) -> SocketAddr {
        SocketAddr::new(self.ip, self.port)
    }

    /// What the HMAC takes: a family tag, the address's bytes, the port (big-endian).
    fn feed(self, m: &mut HmacSha256) {
        match self.ip {
            IpAddr::V4(v4) => {
                m.update(&[4]);
                m.update(&v4.octets());
            }
            IpAddr::V6(v6) => {
                m.update(&[6]);
                m.update(&v6.octets());
            }
        }
        m.update(&self.port.to_be_bytes());
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.addr().fmt(f)
    }
}

impl FromStr for Endpoint {
    type Err = std::net::AddrParseError;

    /// `a.b.c.d:port` or `[v6]:port`, as [`Endpoint`]'s Display writes it.
    fn from_str(s: &str) -> std::result::Result<Endpoint, Self::Err> {
        s.parse().map(Endpoint::of)
    }
}

/// One login as both proofs bind it: the server's nonce, the client's, and the server's
/// endpoint (as the prover sees it; the verifier checks with the endpoint as it sees it).
#[derive(Clone, Copy, Debug)]
pub struct Session<'a> {
    pub server_nonce: &'a [u8],
    pub client_nonce: &'a [u8],
    pub server_endpoint: Endpoint,
}

impl Psk {
    /// Reads a key file: its bytes less trailing whitespace. Neither its group nor other
    /// users may have any access to it (mode 600 or 400), like an ssh private key.
    pub fn from_file(path: &Path) -> Result<Psk> {
        let shown = path.display();
        // Opened without blocking and checked to be a regular file: a FIFO named as the key
        // cannot hold the server's start or a client.
        let file = ringperf_core::input::open_regular(path, "key file")?;
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
        let bytes = ringperf_core::input::read_from(file, path, ringperf_core::input::KEY)?;
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

    fn mac(&self, party: Party, session: &Session<'_>) -> HmacSha256 {
        // HMAC takes keys of any length; new_from_slice cannot fail for it.
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.0).expect("HMAC accepts any key length");
        m.update(LABEL);
        m.update(match party {
            Party::Client => b"\0client\0",
            Party::Server => b"\0server\0",
        });
        // Nonces are of variable length: each is prefixed with its own (at most 128 bytes,
        // see `unhex`), so the boundary between them cannot be shifted.
        for nonce in [session.server_nonce, session.client_nonce] {
            m.update(&(nonce.len() as u16).to_be_bytes());
            m.update(nonce);
        }
        session.server_endpoint.feed(&mut m);
        m
    }

    /// The proof `party` sends for `session`, hex-encoded.
    pub fn proof(&self, party: Party, session: &Session<'_>) -> String {
        hex(&self.mac(party, session).finalize().into_bytes())
    }

    /// Checks a hex proof in constant time. Malformed hex is simply a wrong proof.
    pub fn verify(&self, party: Party, session: &Session<'_>, proof: &str) -> bool {
        let Some(bytes) = unhex(proof) else { return false };
        self.mac(party, session).verify_slice(&bytes).is_ok()
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

    fn endpoint(s: &str) -> Endpoint {
        s.parse().unwrap()
    }

    #[test]
    fn a_proof_verifies_only_for_its_key_party_nonces_and_endpoint() {
        let k = key("correct horse battery staple");
        let (sn, cn) = (nonce().unwrap(), nonce().unwrap());
        let at = endpoint("192.0.2.7:12866");
        let s = Session { server_nonce: &sn, client_nonce: &cn, server_endpoint: at };
        let p = k.proof(Party::Client, &s);
        assert!(k.verify(Party::Client, &s, &p));
        assert!(!k.verify(Party::Server, &s, &p), "a client proof passed as the server's");
        let other = nonce().unwrap();
        let fresh = Session { server_nonce: &other, ..s };
        assert!(!k.verify(Party::Client, &fresh, &p), "a proof replayed under a new server nonce");
        let fresh = Session { client_nonce: &other, ..s };
        assert!(!k.verify(Party::Client, &fresh, &p), "a proof replayed under a new client nonce");
        assert!(!key("another key of enough length").verify(Party::Client, &s, &p));
        for bad in ["", "zz", "00", &p[..10], &format!("{p}00")] {
            assert!(!k.verify(Party::Client, &s, bad), "{bad:?}");
        }
        // A relay at another address or port cannot pass this proof off as its own.
        for relay in ["192.0.2.8:12866", "192.0.2.7:12867", "[2001:db8::7]:12866"] {
            let moved = Session { server_endpoint: endpoint(relay), ..s };
            assert!(!k.verify(Party::Client, &moved, &p), "a proof for {at} passed for {relay}");
            let server = k.proof(Party::Server, &s);
            assert!(
                !k.verify(Party::Server, &moved, &server),
                "the server's proof for {at} passed for {relay}"
            );
        }
    }

    #[test]
    fn the_nonce_boundary_cannot_be_shifted() {
        let k = key("correct horse battery staple");
        let at = endpoint("127.0.0.1:1");
        let (a, b) = ([1u8; 33], [2u8; 31]);
        let (a2, b2) = ([1u8; 32], {
            let mut v = [2u8; 32];
            v[0] = 1;
            v
        });
        let s = Session { server_nonce: &a, client_nonce: &b, server_endpoint: at };
        let shifted = Session { server_nonce: &a2, client_nonce: &b2, server_endpoint: at };
        assert!(!k.verify(Party::Server, &shifted, &k.proof(Party::Server, &s)));
    }

    #[test]
    fn endpoints_are_taken_as_each_side_sees_the_same_one() {
        // A dual-stack server accepts an IPv4 client on ::ffff:a.b.c.d.
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:12866".parse().unwrap();
        assert_eq!(Endpoint::of(mapped), endpoint("127.0.0.1:12866"));
        // The scope is each host's own interface number.
        let scoped = SocketAddr::V6(std::net::SocketAddrV6::new("fe80::1".parse().unwrap(), 7, 0, 3));
        assert_eq!(Endpoint::of(scoped), endpoint("[fe80::1]:7"));
        for shown in ["127.0.0.1:12866", "[::1]:80", "[fe80::1]:7"] {
            assert_eq!(endpoint(shown).to_string(), shown);
        }
        assert!("127.0.0.1".parse::<Endpoint>().is_err() && "host:1".parse::<Endpoint>().is_err());
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
        let s = Session { server_nonce: &sn, client_nonce: &cn, server_endpoint: endpoint("[::1]:9") };
        assert!(b.verify(Party::Server, &s, &a.proof(Party::Server, &s)));
        assert_eq!(format!("{a:?}"), "Psk(16 bytes)");
    }
}
