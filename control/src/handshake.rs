//! The start of every control connection, before it gets a session thread: the client's
//! Hello (with its nonce and the endpoint it dialled), the server's Challenge (with its
//! proof for that endpoint, when it has a key), then the client's Auth. The server's accept
//! loop drives every connection in this phase from one thread with non-blocking reads, so
//! connections that send nothing, or send a byte a minute, cost one descriptor and a few
//! bytes each, and never a thread; each must finish the whole handshake within
//! [`HANDSHAKE_TIMEOUT`]. What to answer to each message is decided by [`answer_hello`] and
//! [`check_auth`], apart from the socket, so that it can be property-tested.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use crate::auth::{self, Endpoint, Party, Psk, Session, NONCE_LEN};
use crate::protocol::{
    decode, encode_frame, ClientMessage, ErrorKind, FrameBuf, ServerMessage, MAX_HANDSHAKE_FRAME,
    PROTOCOL_VERSION,
};
use ringperf_core::error::Error;
use ringperf_core::setting::{Setting, Token};
use ringperf_core::text::peer_text;

/// How long a new connection has to say Hello and answer the challenge, in all.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Shortest and longest client nonce accepted, in bytes.
pub const CLIENT_NONCE_LEN: std::ops::RangeInclusive<usize> = 16..=64;

/// The serve setting that lists the endpoints a server may be dialled at besides its own.
pub const PUBLIC_ENDPOINT: Token = Setting::PublicEndpoint.token();

/// What a server proves itself as: its key, and the endpoints it may be dialled at.
#[derive(Clone, Copy, Debug)]
pub struct Identity<'a> {
    /// `None`: the server asks for no key and proves nothing.
    pub psk: Option<&'a Psk>,
    /// Endpoints that forward to this server (NAT, port forwards, proxies), for which it
    /// proves as for the address and port a connection was accepted on.
    pub public: &'a [Endpoint],
}

/// What the server holds between its Challenge and the client's Auth.
#[derive(Clone, Debug)]
pub struct Login {
    server_nonce: [u8; NONCE_LEN],
    client_nonce: Vec<u8>,
    server_endpoint: Endpoint,
}

impl Login {
    fn session(&self) -> Session<'_> {
        Session {
            server_nonce: &self.server_nonce,
            client_nonce: &self.client_nonce,
            server_endpoint: self.server_endpoint,
        }
    }
}

/// Why a connection is closed in its handshake: `reason` for the log, and the reply to
/// send first, if any.
#[derive(Debug)]
pub struct Refusal {
    pub reason: String,
    pub reply: Option<(ErrorKind, String)>,
}

/// The server's answer to a Hello on a connection accepted at `accepted`: the Challenge to
/// send and what it then expects, or why it refuses. A server with a key proves only for
/// `accepted` and its listed public endpoints: proving for any endpoint a client names
/// would let a relay obtain a proof for its own.
pub fn answer_hello(
    id: Identity<'_>,
    accepted: Endpoint,
    hello: &ClientMessage,
    server_nonce: [u8; NONCE_LEN],
) -> Result<(ServerMessage, Login), Refusal> {
    let ClientMessage::Hello { protocol, client_nonce, server_endpoint, .. } = hello else {
        return Err(refusal(
            ErrorKind::Protocol,
            format!("expected a 'hello' message, got '{}'", name(hello)),
        ));
    };
    if *protocol != PROTOCOL_VERSION {
        return Err(refusal(
            ErrorKind::Protocol,
            format!(
                "client speaks protocol {protocol}, this server speaks {PROTOCOL_VERSION}: run the same ringperf version on both hosts"
            ),
        ));
    }
    let (Some(client_nonce), Some(server_endpoint)) = (client_nonce, server_endpoint) else {
        return Err(refusal(
            ErrorKind::Protocol,
            format!("a protocol-{PROTOCOL_VERSION} hello carries the client's nonce and the server endpoint it dialled"),
        ));
    };
    let Some(client_nonce) = auth::unhex(client_nonce).filter(|n| CLIENT_NONCE_LEN.contains(&n.len())) else {
        return Err(refusal(
            ErrorKind::Protocol,
            format!(
                "the client nonce must be {} to {} bytes of hex",
                CLIENT_NONCE_LEN.start(),
                CLIENT_NONCE_LEN.end()
            ),
        ));
    };
    let Ok(dialled) = server_endpoint.parse::<Endpoint>() else {
        return Err(refusal(
            ErrorKind::Protocol,
            format!(
                "the server endpoint '{}' is not an address and port (a.b.c.d:PORT or [v6]:PORT)",
                peer_text(server_endpoint)
            ),
        ));
    };
    let login = Login { server_nonce, client_nonce, server_endpoint: dialled };
    let proof = match id.psk {
        None => None,
        Some(_) if dialled != accepted && !id.public.contains(&dialled) => {
            let listed: Vec<String> = id.public.iter().map(Endpoint::to_string).collect();
            let listed = if listed.is_empty() { "none".to_string() } else { listed.join(", ") };
            return Err(Refusal {
                reason: format!(
                    "the client dialled {dialled}, not this server's endpoint: accepted on {accepted}, {PUBLIC_ENDPOINT} {listed}; it came through a relay, or a forward to list with {PUBLIC_ENDPOINT}"
                ),
                reply: Some((
                    ErrorKind::Auth,
                    format!(
                        "this server cannot prove it is the host dialled ({dialled}): that is not one of its endpoints, so the connection came through a relay or a forward; if {dialled} forwards to it (NAT, a port forward, a proxy), its operator must list it with `ringperf serve {PUBLIC_ENDPOINT} {dialled}`"
                    ),
                )),
            });
        }
        Some(key) => Some(key.proof(Party::Server, &login.session())),
    };
    let challenge = ServerMessage::Challenge {
        protocol: PROTOCOL_VERSION,
        server_nonce: auth::hex(&server_nonce),
        auth_required: id.psk.is_some(),
        proof,
    };
    Ok((challenge, login))
}

/// Checks the client's Auth for `login`: with a key, its proof must be for the same
/// session, role "client".
pub fn check_auth(id: Identity<'_>, login: &Login, auth: &ClientMessage) -> Result<(), Refusal> {
    let ClientMessage::Auth { proof } = auth else {
        return Err(refusal(
            ErrorKind::Protocol,
            format!("expected an 'auth' message, got '{}'", name(auth)),
        ));
    };
    let Some(key) = id.psk else { return Ok(()) };
    match proof {
        None => Err(Refusal {
            reason: "authentication required and the client offered no key".into(),
            reply: Some((
                ErrorKind::Auth,
                "this server requires a pre-shared key: pass {psk-file} FILE or set RINGPERF_PSK to the key its operator gave you".into(),
            )),
        }),
        Some(p) if !key.verify(Party::Client, &login.session(), p) => Err(Refusal {
            reason: "wrong key: authentication failed".into(),
            reply: Some((
                ErrorKind::Auth,
                "authentication failed: your pre-shared key is not this server's: check {psk-file} or RINGPERF_PSK".into(),
            )),
        }),
        Some(_) => Ok(()),
    }
}

/// Why a client refuses a server's Challenge before it proves anything.
#[derive(Debug, PartialEq, Eq)]
pub enum Unproved {
    /// The server asks for no key, and this client sends only to one that proves it.
    NoKey,
    /// The server asks for a key but sent no proof, or one not made for the endpoint this
    /// client dialled with this client's key and nonce.
    WrongProof,
    /// The Challenge is malformed (the reason).
    Malformed(String),
}

/// The client's answer to the server's `challenge` (the message after its Hello, which
/// carried `client_nonce` and named `dialled`): its Auth, with its proof when the server
/// asked for a key and proved it holds `psk` for `dialled`. A client that has a key, or
/// must see a proof (`must_prove`: an agent sending data only to another agent of its
/// key), checks the server's proof before it sends anything, so it never proves itself
/// to a host that has not proved itself first.
pub fn answer_challenge(
    psk: Option<&Psk>,
    must_prove: bool,
    dialled: Endpoint,
    client_nonce: &[u8],
    challenge: &ServerMessage,
) -> Result<ClientMessage, Unproved> {
    let ServerMessage::Challenge { server_nonce, auth_required, proof, .. } = challenge else {
        return Err(Unproved::Malformed("expected a 'challenge' message".into()));
    };
    let server_nonce = auth::unhex(server_nonce)
        .filter(|n| n.len() >= 16)
        .ok_or_else(|| Unproved::Malformed("the server's nonce is not 16 or more bytes of hex".into()))?;
    if !auth_required {
        return if must_prove { Err(Unproved::NoKey) } else { Ok(ClientMessage::Auth { proof: None }) };
    }
    let Some(key) = psk else {
        // No key to check with, none to prove: the server refuses the Auth and says why.
        return if must_prove { Err(Unproved::WrongProof) } else { Ok(ClientMessage::Auth { proof: None }) };
    };
    let session = Session { server_nonce: &server_nonce, client_nonce, server_endpoint: dialled };
    match proof {
        Some(p) if key.verify(Party::Server, &session, p) => {
            Ok(ClientMessage::Auth { proof: Some(key.proof(Party::Client, &session)) })
        }
        _ => Err(Unproved::WrongProof),
    }
}

/// A connection in its handshake.
pub struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    /// The address and port it was accepted on, as a proof binds it.
    accepted: Endpoint,
    deadline: Instant,
    frame: FrameBuf,
    state: State,
}

enum State {
    AwaitHello,
    AwaitAuth(Login),
}

/// A connection that finished its handshake: the stream is blocking again.
pub struct Authenticated {
    pub stream: TcpStream,
    pub peer: SocketAddr,
}

/// What one readable event did to a pending connection.
pub enum Step {
    /// Still in the handshake.
    Wait,
    Done(Box<Authenticated>),
    /// Close it: `reason` for the log, and the reply to send first, if any.
    Refuse {
        reason: String,
        reply: Option<(ErrorKind, String)>,
    },
}

impl From<Refusal> for Step {
    fn from(r: Refusal) -> Step {
        Step::Refuse { reason: r.reason, reply: r.reply }
    }
}

impl Pending {
    pub fn new(stream: TcpStream, peer: SocketAddr, now: Instant) -> io::Result<Pending> {
        stream.set_nonblocking(true)?;
        let _ = stream.set_nodelay(true);
        let accepted = Endpoint::of(stream.local_addr()?);
        Ok(Pending {
            stream,
            peer,
            accepted,
            deadline: now + HANDSHAKE_TIMEOUT,
            frame: FrameBuf::new(MAX_HANDSHAKE_FRAME),
            state: State::AwaitHello,
        })
    }

    pub fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// What the connection was doing when its time ran out, for the log and the reply.
    pub fn timed_out(&self) -> String {
        let what = match self.state {
            State::AwaitHello => "hello",
            State::AwaitAuth(_) => "the answer to the challenge",
        };
        format!(
            "timed out waiting for {what} ({} bytes of it arrived in {} s): the handshake must finish within {} s",
            self.frame.received(),
            HANDSHAKE_TIMEOUT.as_secs(),
            HANDSHAKE_TIMEOUT.as_secs()
        )
    }

    /// Handles a readable event: one non-blocking read, and the message if it completed.
    pub fn on_readable(&mut self, id: Identity<'_>) -> Step {
        let mut chunk = [0u8; 512];
        let want = self.frame.wanted().min(chunk.len());
        let n = match self.stream.read(&mut chunk[..want]) {
            Ok(0) if matches!(self.state, State::AwaitAuth(_)) => {
                return silent(
                    "closed the connection after the challenge: a client that does not accept this server (another key, no key where it requires one, or it dialled another endpoint) leaves without proving anything",
                )
            }
            Ok(0) => return silent("closed the connection during the handshake"),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {
                return Step::Wait
            }
            Err(e) => return silent(&format!("the connection failed during the handshake: {e}")),
        };
        let what = match self.state {
            State::AwaitHello => "hello",
            State::AwaitAuth(_) => "auth",
        };
        let body = match self.frame.push(&chunk[..n], what) {
            Ok((_, None)) => return Step::Wait,
            Ok((_, Some(body))) => body,
            Err(e) => return refusal(ErrorKind::Protocol, e.to_string()).into(),
        };
        let msg: ClientMessage = match decode(&body, what) {
            Ok(m) => m,
            Err(e) => return refusal(ErrorKind::Protocol, e.to_string()).into(),
        };
        match &self.state {
            State::AwaitHello => {
                let server_nonce = match auth::nonce() {
                    Ok(n) => n,
                    Err(e) => return refusal(ErrorKind::Peer, e.to_string()).into(),
                };
                let (challenge, login) = match answer_hello(id, self.accepted, &msg, server_nonce) {
                    Ok(answer) => answer,
                    Err(r) => return r.into(),
                };
                if let Err(e) = self.send(&challenge) {
                    return silent(&format!("cannot send the challenge: {e}"));
                }
                self.state = State::AwaitAuth(login);
                Step::Wait
            }
            State::AwaitAuth(login) => {
                if let Err(r) = check_auth(id, login, &msg) {
                    return r.into();
                }
                if let Err(e) = self.stream.set_nonblocking(false) {
                    return silent(&format!("cannot make the connection blocking: {e}"));
                }
                let stream = match self.stream.try_clone() {
                    Ok(s) => s,
                    Err(e) => return silent(&format!("cannot hand the connection to a session: {e}")),
                };
                Step::Done(Box::new(Authenticated { stream, peer: self.peer }))
            }
        }
    }

    /// Sends a small frame on the non-blocking socket; it fits the empty send buffer, so a
    /// short write means the peer is not a client worth waiting for.
    fn send(&mut self, msg: &ServerMessage) -> Result<(), Error> {
        let frame = encode_frame(msg)?;
        match self.stream.write(&frame) {
            Ok(n) if n == frame.len() => Ok(()),
            Ok(n) => Err(Error::Peer(format!("only {n} of {} bytes could be sent", frame.len()))),
            Err(e) => Err(Error::io("sending a handshake message", e)),
        }
    }

    /// Sends `reply` as an error frame (best effort) and closes the connection.
    pub fn close_with(mut self, reply: Option<(ErrorKind, String)>) {
        if let Some((kind, message)) = reply {
            let _ = self.send(&ServerMessage::Error { kind, message });
        }
    }
}

fn refusal(kind: ErrorKind, message: String) -> Refusal {
    Refusal { reason: message.clone(), reply: Some((kind, message)) }
}

fn silent(reason: &str) -> Step {
    Step::Refuse { reason: reason.to_string(), reply: None }
}

pub fn name(m: &ClientMessage) -> &'static str {
    match m {
        ClientMessage::Hello { .. } => "hello",
        ClientMessage::Auth { .. } => "auth",
        ClientMessage::ClockProbe {} => "clock_probe",
        ClientMessage::Test { .. } => "test",
        ClientMessage::Go {} => "go",
        ClientMessage::Abort {} => "abort",
        ClientMessage::FlowsDone {} => "flows_done",
        ClientMessage::ThirdParty { .. } => "third_party",
        ClientMessage::StartAt { .. } => "start_at",
    }
}

/// The login decided apart from the socket: a relay at another endpoint never gets a proof
/// it can use, a client never proves itself to a server that has not proved itself first,
/// and whatever a peer sends is refused or answered, never a panic.
#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(s: &str) -> Psk {
        Psk::from_secret(s, "test key").unwrap()
    }

    fn hello(client_nonce: &[u8], stated: Endpoint) -> ClientMessage {
        ClientMessage::Hello {
            protocol: PROTOCOL_VERSION,
            tool_version: "test".into(),
            client_nonce: Some(auth::hex(client_nonce)),
            server_endpoint: Some(stated.to_string()),
        }
    }

    /// A few addresses and ports, so that equal endpoints come up often.
    fn endpoint() -> impl Strategy<Value = Endpoint> {
        let ip = prop_oneof![
            Just("127.0.0.1"),
            Just("127.0.0.2"),
            Just("198.18.0.1"),
            Just("::1"),
            Just("::ffff:127.0.0.1"),
        ];
        (ip, 12866u16..12869).prop_map(|(ip, port)| Endpoint::of(SocketAddr::new(ip.parse().unwrap(), port)))
    }

    /// One login as the client and server of this module play it, with `relay` rewriting
    /// the Hello's endpoint on the way (a relay that knows where it forwards). Returns the
    /// client's answer and, when it proved itself, whether the server took the proof.
    fn login(
        client_key: Option<&Psk>,
        server_key: Option<&Psk>,
        must_prove: bool,
        dialled: Endpoint,
        accepted: Endpoint,
        public: &[Endpoint],
        relay_rewrites_to: Option<Endpoint>,
    ) -> Result<Option<bool>, Unproved> {
        let id = Identity { psk: server_key, public };
        let client_nonce = auth::nonce().unwrap();
        let h = hello(&client_nonce, relay_rewrites_to.unwrap_or(dialled));
        let challenge = match answer_hello(id, accepted, &h, auth::nonce().unwrap()) {
            Ok(answer) => answer,
            // The server refused the Hello: the client proved nothing.
            Err(r) => {
                assert_eq!(r.reply.map(|(k, _)| k), Some(ErrorKind::Auth));
                return Ok(None);
            }
        };
        let auth = answer_challenge(client_key, must_prove, dialled, &client_nonce, &challenge.0)?;
        Ok(Some(check_auth(id, &challenge.1, &auth).is_ok()))
    }

    #[test]
    fn a_direct_login_with_one_key_succeeds_both_ways() {
        let k = key("the one key of this test, long");
        let at: Endpoint = "127.0.0.1:12866".parse().unwrap();
        assert_eq!(login(Some(&k), Some(&k), true, at, at, &[], None), Ok(Some(true)));
        // A keyless server and a client that does not insist: no proofs either way.
        assert_eq!(login(Some(&k), None, false, at, at, &[], None), Ok(Some(true)));
        assert_eq!(login(Some(&k), None, true, at, at, &[], None), Err(Unproved::NoKey));
        // Another key: the client refuses the server's proof before proving anything.
        let other = key("another key, just as long");
        assert_eq!(login(Some(&other), Some(&k), false, at, at, &[], None), Err(Unproved::WrongProof));
        // No key: the server refuses the empty Auth.
        assert_eq!(login(None, Some(&k), false, at, at, &[], None), Ok(Some(false)));
    }

    #[test]
    fn a_relay_fails_and_a_listed_forward_works() {
        let k = key("the one key of this test, long");
        let (relay, real): (Endpoint, Endpoint) =
            ("127.0.0.1:40000".parse().unwrap(), "127.0.0.1:12866".parse().unwrap());
        // A byte-for-byte relay: the server sees an endpoint not its own and refuses.
        assert_eq!(login(Some(&k), Some(&k), true, relay, real, &[], None), Ok(None));
        // A relay that rewrites the Hello: the proof is for the real server, not the relay.
        assert_eq!(login(Some(&k), Some(&k), true, relay, real, &[], Some(real)), Err(Unproved::WrongProof));
        // The same forward, listed by the server's operator.
        assert_eq!(login(Some(&k), Some(&k), true, relay, real, &[relay], None), Ok(Some(true)));
    }

    #[test]
    fn an_older_hello_is_told_the_version() {
        let k = key("the one key of this test, long");
        let id = Identity { psk: Some(&k), public: &[] };
        let at: Endpoint = "127.0.0.1:1".parse().unwrap();
        let old: ClientMessage =
            serde_json::from_str(r#"{"type":"hello","protocol":4,"tool_version":"0.0.9"}"#).unwrap();
        let r = answer_hello(id, at, &old, [0; NONCE_LEN]).unwrap_err();
        assert!(r.reason.contains("client speaks protocol 4, this server speaks 5"), "{}", r.reason);
        let bare = ClientMessage::Hello {
            protocol: PROTOCOL_VERSION,
            tool_version: "x".into(),
            client_nonce: None,
            server_endpoint: Some(at.to_string()),
        };
        assert!(answer_hello(id, at, &bare, [0; NONCE_LEN]).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn a_login_succeeds_exactly_when_the_dialled_endpoint_is_the_servers(
            dialled in endpoint(),
            accepted in endpoint(),
            public in proptest::collection::vec(endpoint(), 0..3),
            same_key in any::<bool>(),
            rewrite in any::<bool>(),
        ) {
            let k = key("the one key of this test, long");
            let other = key("another key, just as long");
            let client_key = if same_key { &k } else { &other };
            let own = dialled == accepted || public.contains(&dialled);
            // A Hello rewritten to another endpoint gets a proof for that one, never for
            // the one dialled.
            let stated = if rewrite { accepted } else { dialled };
            let got = login(Some(client_key), Some(&k), true, dialled, accepted, &public, rewrite.then_some(accepted));
            match got {
                // Only a direct (or listed) login with the same key logs in; the client's
                // proof is then always taken.
                Ok(Some(taken)) => {
                    prop_assert!(own && same_key && stated == dialled && taken, "{dialled} {accepted} {public:?}")
                }
                // Refused at Hello: only a Hello naming an endpoint not the server's.
                Ok(None) => prop_assert!(!rewrite && !own),
                Err(Unproved::WrongProof) => prop_assert!(!(own && same_key && stated == dialled)),
                Err(e) => prop_assert!(false, "unexpected {e:?}"),
            }
        }

        #[test]
        fn a_client_proves_nothing_to_a_challenge_it_cannot_check(
            server_nonce in "[0-9a-f]{0,140}|.{0,20}",
            auth_required in any::<bool>(),
            proof in proptest::option::of("[0-9a-f]{64}|.{0,70}"),
            must_prove in any::<bool>(),
        ) {
            let k = key("the one key of this test, long");
            let at: Endpoint = "127.0.0.1:12866".parse().unwrap();
            let challenge = ServerMessage::Challenge { protocol: PROTOCOL_VERSION, server_nonce, auth_required, proof };
            match answer_challenge(Some(&k), must_prove, at, &[5; 32], &challenge) {
                // A made-up challenge gets a proof from no client; a keyless one gets an
                // empty answer from a client that does not insist.
                Ok(ClientMessage::Auth { proof: None }) => prop_assert!(!auth_required && !must_prove),
                Ok(other) => prop_assert!(false, "answered {other:?}"),
                Err(_) => {}
            }
        }

        #[test]
        fn whatever_a_peer_sends_is_answered_and_never_logs_it_in_unproved(
            protocol in prop_oneof![Just(PROTOCOL_VERSION), any::<u32>()],
            nonce in proptest::option::of("[0-9a-fA-F]{0,140}|.{0,20}"),
            stated in proptest::option::of(".{0,30}|127\\.0\\.0\\.1:1286[0-9]"),
            proof in proptest::option::of("[0-9a-f]{64}|.{0,70}"),
        ) {
            let k = key("the one key of this test, long");
            let at: Endpoint = "127.0.0.1:12866".parse().unwrap();
            let id = Identity { psk: Some(&k), public: &[] };
            let h = ClientMessage::Hello { protocol, tool_version: String::new(), client_nonce: nonce, server_endpoint: stated };
            if let Ok((ServerMessage::Challenge { proof: server_proof, .. }, login)) = answer_hello(id, at, &h, auth::nonce().unwrap()) {
                // The server proved for its own endpoint only.
                prop_assert!(server_proof.is_some());
                prop_assert_eq!(login.server_endpoint, at);
                // A proof the peer made up is refused.
                let refused = check_auth(id, &login, &ClientMessage::Auth { proof }).is_err();
                prop_assert!(refused, "a made-up proof logged in");
            }
        }
    }
}
