//! The start of every control connection, before it gets a session thread: Hello, then
//! the server's Challenge, then the client's Auth. The server's accept loop drives every
//! connection in this phase from one thread with non-blocking reads, so connections that
//! send nothing, or send a byte a minute, cost one descriptor and a few bytes each, and
//! never a thread; each must finish the whole handshake within [`HANDSHAKE_TIMEOUT`].

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use crate::control::auth::{self, Party, Psk, NONCE_LEN};
use crate::control::protocol::{
    decode, encode_frame, ClientMessage, ErrorKind, FrameBuf, ServerMessage, MAX_HANDSHAKE_FRAME,
    PROTOCOL_VERSION,
};
use crate::error::Error;

/// How long a new connection has to say Hello and answer the challenge, in all.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Shortest and longest client nonce accepted, in bytes.
const CLIENT_NONCE_LEN: std::ops::RangeInclusive<usize> = 16..=64;

/// A connection in its handshake.
pub struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    deadline: Instant,
    frame: FrameBuf,
    state: State,
}

enum State {
    AwaitHello,
    AwaitAuth { server_nonce: [u8; NONCE_LEN] },
}

/// A connection that finished its handshake: the stream is blocking again.
pub struct Authenticated {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub server_nonce: [u8; NONCE_LEN],
    pub client_nonce: Vec<u8>,
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

impl Pending {
    pub fn new(stream: TcpStream, peer: SocketAddr, now: Instant) -> io::Result<Pending> {
        stream.set_nonblocking(true)?;
        let _ = stream.set_nodelay(true);
        Ok(Pending {
            stream,
            peer,
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
            State::AwaitAuth { .. } => "the answer to the challenge",
        };
        format!(
            "timed out waiting for {what} ({} bytes of it arrived in {} s): the handshake must finish within {} s",
            self.frame.received(),
            HANDSHAKE_TIMEOUT.as_secs(),
            HANDSHAKE_TIMEOUT.as_secs()
        )
    }

    /// Handles a readable event: one non-blocking read, and the message if it completed.
    pub fn on_readable(&mut self, psk: Option<&Psk>) -> Step {
        let mut chunk = [0u8; 512];
        let want = self.frame.wanted().min(chunk.len());
        let n = match self.stream.read(&mut chunk[..want]) {
            Ok(0) => return silent("closed the connection during the handshake"),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {
                return Step::Wait
            }
            Err(e) => return silent(&format!("the connection failed during the handshake: {e}")),
        };
        let what = match self.state {
            State::AwaitHello => "hello",
            State::AwaitAuth { .. } => "auth",
        };
        let body = match self.frame.push(&chunk[..n], what) {
            Ok((_, None)) => return Step::Wait,
            Ok((_, Some(body))) => body,
            Err(e) => return refuse(ErrorKind::Protocol, e.to_string()),
        };
        let msg: ClientMessage = match decode(&body, what) {
            Ok(m) => m,
            Err(e) => return refuse(ErrorKind::Protocol, e.to_string()),
        };
        match (&self.state, msg) {
            (State::AwaitHello, ClientMessage::Hello { protocol, .. }) if protocol == PROTOCOL_VERSION => {
                let server_nonce = match auth::nonce() {
                    Ok(n) => n,
                    Err(e) => return refuse(ErrorKind::Peer, e.to_string()),
                };
                let challenge = ServerMessage::Challenge {
                    protocol: PROTOCOL_VERSION,
                    server_nonce: auth::hex(&server_nonce),
                    auth_required: psk.is_some(),
                };
                if let Err(e) = self.send(&challenge) {
                    return silent(&format!("cannot send the challenge: {e}"));
                }
                self.state = State::AwaitAuth { server_nonce };
                Step::Wait
            }
            (State::AwaitHello, ClientMessage::Hello { protocol, .. }) => refuse(
                ErrorKind::Protocol,
                format!(
                    "client speaks protocol {protocol}, this server speaks {PROTOCOL_VERSION}: run the same ringperf version on both hosts"
                ),
            ),
            (State::AwaitAuth { server_nonce }, ClientMessage::Auth { client_nonce, proof }) => {
                let server_nonce = *server_nonce;
                let Some(client_nonce) = auth::unhex(&client_nonce).filter(|n| CLIENT_NONCE_LEN.contains(&n.len()))
                else {
                    return refuse(
                        ErrorKind::Protocol,
                        format!(
                            "the client nonce must be {} to {} bytes of hex",
                            CLIENT_NONCE_LEN.start(),
                            CLIENT_NONCE_LEN.end()
                        ),
                    );
                };
                if let Some(key) = psk {
                    match proof {
                        None => return Step::Refuse {
                            reason: "authentication required and the client offered no key".into(),
                            reply: Some((
                                ErrorKind::Auth,
                                "this server requires a pre-shared key: pass --psk-file FILE or set RINGPERF_PSK to the key its operator gave you".into(),
                            )),
                        },
                        Some(p) if !key.verify(Party::Client, &server_nonce, &client_nonce, &p) => {
                            return Step::Refuse {
                                reason: "wrong key: authentication failed".into(),
                                reply: Some((
                                    ErrorKind::Auth,
                                    "authentication failed: your pre-shared key is not this server's: check --psk-file or RINGPERF_PSK".into(),
                                )),
                            }
                        }
                        Some(_) => {}
                    }
                }
                if let Err(e) = self.stream.set_nonblocking(false) {
                    return silent(&format!("cannot make the connection blocking: {e}"));
                }
                let stream = match self.stream.try_clone() {
                    Ok(s) => s,
                    Err(e) => return silent(&format!("cannot hand the connection to a session: {e}")),
                };
                Step::Done(Box::new(Authenticated { stream, peer: self.peer, server_nonce, client_nonce }))
            }
            (State::AwaitHello, other) => {
                refuse(ErrorKind::Protocol, format!("expected a 'hello' message, got '{}'", name(&other)))
            }
            (State::AwaitAuth { .. }, other) => {
                refuse(ErrorKind::Protocol, format!("expected an 'auth' message, got '{}'", name(&other)))
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

fn refuse(kind: ErrorKind, message: String) -> Step {
    Step::Refuse { reason: message.clone(), reply: Some((kind, message)) }
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
