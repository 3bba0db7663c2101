//! The client's control connection: reaching a server (resolving, connecting, from a
//! chosen local address), framed reads with a deadline that give way to an interrupt,
//! and the login that checks the server's proof before proving this client's.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use crate::auth::{self, Endpoint, Psk};
use crate::handshake::{answer_challenge, Unproved, PUBLIC_ENDPOINT};
use crate::protocol::{
    read_frame_by, write_frame, ClientMessage, ServerMessage, CONTROL_TIMEOUT, MAX_FRAME, PROTOCOL_VERSION,
};
use ringperf_core::env::Environment;
use ringperf_core::error::{Error, Result};
use ringperf_core::setting::Setting;
use ringperf_core::spec::{TestSpec, Workload};

pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The addresses of `host`, for errors naming the setting that gave it (its token).
pub(crate) fn resolve(host: &str, port: u16, flag: impl std::fmt::Display) -> Result<Vec<SocketAddr>> {
    Ok((host, port)
        .to_socket_addrs()
        .map_err(|e| {
            Error::Peer(format!("cannot resolve host '{host}': {e}: check the name given to {flag}"))
        })?
        .collect())
}

/// The control connection to the first of `addrs` that answers, from `local` if given.
pub(crate) fn open_control(
    addrs: &[SocketAddr],
    spec: &TestSpec,
    local: Option<IpAddr>,
    host: &str,
) -> Result<TcpStream> {
    let Some(ip) = local else { return connect(addrs) };
    if spec.workload == Workload::Crr {
        return Err(Error::Usage(format!(
            "a local address ({ip}) is not taken by crr, whose connections come and go on the ring: drop {} for TCP_CRR",
            Setting::LocalAddress.token()
        )));
    }
    let same_family: Vec<SocketAddr> =
        addrs.iter().copied().filter(|a| a.is_ipv4() == ip.is_ipv4()).collect();
    if same_family.is_empty() {
        return Err(Error::Usage(format!(
            "the local address {ip} and host '{host}' are of different families: give both as IPv4 or both as IPv6"
        )));
    }
    connect_from(ip, &same_family)
}

/// The control connection from local address `ip` (a port of the kernel's choice).
fn connect_from(ip: IpAddr, addrs: &[SocketAddr]) -> Result<TcpStream> {
    use socket2::{Domain, Protocol, SockAddr, Socket, Type};
    let mut last = None;
    for addr in addrs {
        let sock = Socket::new(Domain::for_address(*addr), Type::STREAM, Some(Protocol::TCP))
            .map_err(|e| Error::io("creating the control socket", e))?;
        sock.bind(&SocketAddr::new(ip, 0).into()).map_err(|e| {
            Error::Usage(format!("cannot use the local address {ip} ({e}): give an address of this host"))
        })?;
        match sock.connect_timeout(&SockAddr::from(*addr), CONNECT_TIMEOUT) {
            Ok(()) => return Ok(sock.into()),
            Err(e) => last = Some((addr, e)),
        }
    }
    match last {
        Some((addr, e)) => {
            Err(Error::Peer(format!("cannot reach {addr} from {ip}: {e}: check the addresses and the route")))
        }
        None => Err(Error::Peer("the host name resolved to no address: check {host}".into())),
    }
}

pub(crate) fn connect(addrs: &[SocketAddr]) -> Result<TcpStream> {
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some((addr, e)),
        }
    }
    let Some((addr, e)) = last else {
        return Err(Error::Peer("the host name resolved to no address: check {host}".into()));
    };
    Err(Error::Peer(match e.kind() {
        io::ErrorKind::ConnectionRefused => format!(
            "server at {addr} refused the connection: is `ringperf serve` running there, on port {}?",
            addr.port()
        ),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => format!(
            "no answer from {addr} within {} s: check the address and any firewall in between",
            CONNECT_TIMEOUT.as_secs()
        ),
        _ => format!("cannot reach {addr}: {e}: check the address and the route to it"),
    }))
}

/// The control connection as the client uses it: every read has a deadline for the whole
/// message and gives way to the interrupt.
pub(crate) struct Control<'a> {
    pub(crate) stream: TcpStream,
    pub(crate) interrupt: Option<BorrowedFd<'a>>,
}

impl Control<'_> {
    pub(crate) fn send(&mut self, msg: &ClientMessage) -> Result<()> {
        write_frame(&mut self.stream, msg)
    }

    /// The next message; a server's error reply becomes the error it describes.
    pub(crate) fn expect(&mut self, what: &str, within: Duration) -> Result<ServerMessage> {
        self.expect_capped(what, within, MAX_FRAME)
    }

    /// [`Control::expect`] for a frame of up to `cap` bytes (the server's report).
    pub(crate) fn expect_capped(
        &mut self,
        what: &str,
        within: Duration,
        cap: usize,
    ) -> Result<ServerMessage> {
        let deadline = Instant::now() + within;
        match read_frame_by(&self.stream, what, deadline, cap, self.interrupt)? {
            ServerMessage::Error { kind, message } => Err(kind.into_error(message)),
            m => Ok(m),
        }
    }
}

/// Logs in on the control connection `stream` to `server` (its name, for messages): says
/// Hello with a nonce and the endpoint it dialled (the address and port `stream` is
/// connected to), checks the server's proof for that endpoint when it has a key or must
/// see one, and only then proves itself. Returns the connection logged in, the server's
/// environment, and the address it authenticated, the one place data connections go.
/// `psk`: the key this client holds; `must_prove`: refuse a server that proves no key
/// even when it asks for none; `interrupt`: readable means stop now.
pub(crate) fn login<'a>(
    stream: TcpStream,
    server: &str,
    psk: Option<&Psk>,
    must_prove: bool,
    interrupt: Option<BorrowedFd<'a>>,
) -> Result<(Control<'a>, Environment, SocketAddr)> {
    let dialled = stream.peer_addr().map_err(|e| Error::io("reading the server address", e))?;
    let endpoint = Endpoint::of(dialled);
    let _ = stream.set_nodelay(true);
    stream.set_write_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| Error::io("setting a write timeout", e))?;
    let mut c = Control { stream, interrupt };

    let client_nonce = auth::nonce()?;
    let hello = ClientMessage::Hello {
        protocol: PROTOCOL_VERSION,
        tool_version: version(),
        client_nonce: Some(auth::hex(&client_nonce)),
        server_endpoint: Some(endpoint.to_string()),
    };
    let challenge = c
        .send(&hello)
        .and_then(|()| c.expect("the server's challenge", CONTROL_TIMEOUT))
        .map_err(|e| refused_at_hello(e, server))?;
    if !matches!(challenge, ServerMessage::Challenge { .. }) {
        return Err(unexpected("challenge", &challenge));
    }
    let answer = answer_challenge(psk, must_prove, endpoint, &client_nonce, &challenge)
        .map_err(|u| match u {
            Unproved::NoKey => Error::Peer(format!(
                "the agent at {server} asks for no key: a third-party run sends data only to an agent that proves it holds this agent's key: start it with `ringperf serve {}` and the same key",
                Setting::PskFile.token()
            )),
            Unproved::WrongProof => Error::Peer(format!(
                "authentication failed: the server at {server} did not prove it is the host dialled ({endpoint}) and holds this key: its key is another (check {psk} or RINGPERF_PSK), or it passes logins on to another host (a relay); if {endpoint} forwards to the server (NAT, a port forward, a proxy), its operator must list it with `ringperf serve {PUBLIC_ENDPOINT} {endpoint}`",
                psk = Setting::PskFile.token()
            )),
            Unproved::Malformed(why) => Error::Protocol(format!("the server at {server} sent a bad challenge: {why}")),
        })?;
    c.send(&answer)?;
    let remote_env = match c.expect("the server's welcome", CONTROL_TIMEOUT)? {
        ServerMessage::Welcome { environment, .. } => *environment,
        other => return Err(unexpected("welcome", &other)),
    };
    Ok((c, remote_env, dialled))
}

/// A server closes a connection from outside its --allow list before reading a byte, so
/// the client sees a close or a reset where the challenge should be: say what that means.
fn refused_at_hello(e: Error, server: &str) -> Error {
    match e {
        // A server older than protocol 5 refuses this Hello's new fields by name.
        Error::Protocol(m) if m.contains("unknown field `") && m.contains("` in hello") => {
            let theirs = m
                .split_once("(protocol ")
                .and_then(|(_, rest)| rest.split_once(')'))
                .map_or(String::new(), |(n, _)| format!(", protocol {n}"));
            Error::Protocol(format!(
                "the server at {server} runs an older ringperf{theirs} (this client speaks protocol {PROTOCOL_VERSION}): run the same ringperf version on both hosts ({m})"
            ))
        }
        // The server's own error reply, or no answer at all, say what they say.
        Error::Peer(m) if !m.starts_with("server: ") && !m.starts_with("timed out") => Error::Peer(format!(
            "the server at {server} closed the connection before answering ({m}): it refused this client, most likely because this host is not in its {} list: ask its operator to allow it",
            Setting::Allow.token()
        )),
        e => e,
    }
}

pub(crate) fn unexpected(expected: &str, got: &ServerMessage) -> Error {
    let name = match got {
        ServerMessage::Challenge { .. } => "challenge",
        ServerMessage::ClockReply { .. } => "clock_reply",
        ServerMessage::Welcome { .. } => "welcome",
        ServerMessage::Ready { .. } => "ready",
        ServerMessage::Armed {} => "armed",
        ServerMessage::Report { .. } => "report",
        ServerMessage::ThirdPartyArmed {} => "third_party_armed",
        ServerMessage::ThirdPartyReport { .. } => "third_party_report",
        ServerMessage::Error { .. } => "error",
    };
    Error::Protocol(format!("expected '{expected}' from the server, got '{name}'"))
}

pub(crate) fn version() -> String {
    env!("CARGO_PKG_VERSION").into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{decode, ErrorKind, Message};

    /// The Hello of protocol 4 and before, as those servers parse it.
    #[derive(serde::Deserialize, Debug)]
    #[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
    enum OldClientMessage {
        #[allow(dead_code)]
        Hello { protocol: u32, tool_version: String },
    }

    impl Message for OldClientMessage {
        const FROM: &'static str = "client";
        const TO: &'static str = "server";
    }

    #[test]
    fn an_older_server_refusing_this_hello_is_reported_as_older() {
        let hello = ClientMessage::Hello {
            protocol: PROTOCOL_VERSION,
            tool_version: version(),
            client_nonce: Some("00".repeat(32)),
            server_endpoint: Some("127.0.0.1:12866".into()),
        };
        let body = serde_json::to_vec(&hello).unwrap();
        // An older server's decoder names the first new field...
        let Err(Error::Protocol(said)) = decode::<OldClientMessage>(&body, "hello") else {
            panic!("an old-shape decoder took the new hello")
        };
        assert!(said.starts_with("unknown field `client_nonce` in hello: the client is newer"), "{said}");
        // ...in the words a protocol-4 server sends, which this client reports as such.
        let reply = "unknown field `client_nonce` in hello: the client is newer than this server (protocol 4); upgrade the server";
        let e = refused_at_hello(ErrorKind::Protocol.into_error(reply.into()), "b:12866");
        let Error::Protocol(m) = e else { panic!("{e:?}") };
        assert!(m.starts_with("the server at b:12866 runs an older ringperf, protocol 4 (this client speaks protocol 5): run the same ringperf version"), "{m}");
    }
}
