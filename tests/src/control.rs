//! A raw control connection, speaking the control protocol's frames by hand so that a
//! test can send what a real client never sends.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use ringperf_control::protocol::ServerMessage;
use serde_json::Value;

use crate::reports::SideReport;

/// A raw control connection, for feeding the server what a real client never sends.
pub struct Control {
    stream: TcpStream,
    /// The client nonce (hex) and server endpoint the last Hello sent.
    login: Option<(String, String)>,
}

/// What the server did after we sent something.
#[derive(Debug)]
pub enum Reply {
    /// A length-prefixed JSON frame.
    Frame(Value),
    /// The server closed the connection (EOF or reset) without a frame.
    Closed,
}

/// The largest reply frame we accept from the server (its own cap is 1 MiB).
const MAX_REPLY: usize = 1 << 20;
const CONTROL_IO_TIMEOUT: Duration = Duration::from_secs(15);

impl Control {
    pub fn connect(port: u16) -> Control {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connecting to the server at {addr}: {e}"));
        Control::on(stream)
    }

    /// Connects to the server on 127.0.0.1 from `source` (another loopback address), so a
    /// test can be a second host to a server's per-address limits.
    pub fn connect_from(source: Ipv4Addr, port: u16) -> Control {
        let sockaddr = |ip: Ipv4Addr, port: u16| {
            // SAFETY: all-zero is a valid sockaddr_in.
            let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = u32::from(ip).to_be();
            sa.sin_port = port.to_be();
            sa
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: socket(2) has no memory effects.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        assert!(raw >= 0, "socket: {}", io::Error::last_os_error());
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let from = sockaddr(source, 0);
        // SAFETY: `from` is a valid sockaddr_in of `len` bytes.
        let rc = unsafe { libc::bind(fd.as_raw_fd(), (&raw const from).cast(), len) };
        assert_eq!(rc, 0, "binding to {source}: {}", io::Error::last_os_error());
        let to = sockaddr(Ipv4Addr::LOCALHOST, port);
        // SAFETY: `to` is a valid sockaddr_in of `len` bytes; a blocking connect on loopback.
        let rc = unsafe { libc::connect(fd.as_raw_fd(), (&raw const to).cast(), len) };
        assert_eq!(rc, 0, "connecting from {source} to port {port}: {}", io::Error::last_os_error());
        Control::on(TcpStream::from(fd))
    }

    fn on(stream: TcpStream) -> Control {
        stream.set_read_timeout(Some(CONTROL_IO_TIMEOUT)).expect("read timeout");
        stream.set_write_timeout(Some(CONTROL_IO_TIMEOUT)).expect("write timeout");
        let _ = stream.set_nodelay(true);
        Control { stream, login: None }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("writing to the control connection");
    }

    /// Sends `body` as one frame: 4-byte big-endian length, then the body.
    pub fn send_frame(&mut self, body: &[u8]) {
        let mut f = u32::try_from(body.len()).expect("frame fits u32").to_be_bytes().to_vec();
        f.extend_from_slice(body);
        self.send_raw(&f);
    }

    pub fn send_json(&mut self, v: &Value) {
        self.send_frame(&serde_json::to_vec(v).expect("JSON encodes"));
    }

    /// Asks for the test `spec` (a TestSpec as JSON) and returns the data port and the
    /// session cookie of the server's 'ready'; anything else fails the test.
    pub fn start_test(&mut self, spec: &Value) -> (u16, u64) {
        self.send_json(&serde_json::json!({"type": "test", "spec": spec}));
        match self.read_reply() {
            Reply::Frame(v) if v["type"] == "ready" => {
                (v["data_port"].as_u64().expect("data_port") as u16, v["cookie"].as_u64().expect("cookie"))
            }
            other => panic!("expected 'ready', got {other:?}"),
        }
    }

    /// Asks for the UDP test `spec` and returns the server's UDP ports (in flow order) and
    /// the session cookie of its 'ready'; anything else fails the test.
    pub fn start_udp_test(&mut self, spec: &Value) -> (Vec<u16>, u64) {
        self.send_json(&serde_json::json!({"type": "test", "spec": spec}));
        match self.read_reply() {
            Reply::Frame(v) if v["type"] == "ready" => {
                let ports = v["udp_ports"].as_array().expect("udp_ports");
                let ports = ports.iter().map(|p| p.as_u64().expect("a port") as u16).collect();
                (ports, v["cookie"].as_u64().expect("cookie"))
            }
            other => panic!("expected 'ready', got {other:?}"),
        }
    }

    /// Opens the one data connection of a one-flow TCP test the server is 'ready' for on
    /// `port` (its header: `cookie`, flow 0), waits for 'armed' and says 'go': the window is
    /// open when this returns.
    pub fn open_flow_and_go(&mut self, port: u16, cookie: u64) -> TcpStream {
        let mut flow = TcpStream::connect(("127.0.0.1", port)).expect("data connection");
        flow.write_all(&flow_header(cookie, 0)).expect("flow header");
        self.armed_then_go();
        flow
    }

    /// Waits for the server's 'armed' (its workers are ready for the flows) and says 'go';
    /// any other reply fails the test.
    pub fn armed_then_go(&mut self) {
        assert!(matches!(self.read_reply(), Reply::Frame(v) if v["type"] == "armed"), "no 'armed' before go");
        self.send_json(&serde_json::json!({"type": "go"}));
    }

    /// Reads the server's next frame, or notes that it closed the connection. A read
    /// timeout fails the test: the server must answer or close, never leave us hanging.
    pub fn read_reply(&mut self) -> Reply {
        let mut len = [0u8; 4];
        match read_full(&mut self.stream, &mut len) {
            Ok(true) => {}
            Ok(false) => return Reply::Closed,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Reply::Closed,
            Err(e) => panic!("waiting for the server's reply: {e}"),
        }
        let n = u32::from_be_bytes(len) as usize;
        assert!((1..=MAX_REPLY).contains(&n), "the server sent a frame of {n} bytes");
        let mut body = vec![0u8; n];
        match read_full(&mut self.stream, &mut body) {
            Ok(true) => {}
            other => panic!("the server's frame of {n} bytes was cut short: {other:?}"),
        }
        Reply::Frame(serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!("the server's reply is not JSON ({e}): {:?}", String::from_utf8_lossy(&body))
        }))
    }

    /// Reads a reply that must be an error frame and returns (kind, message).
    pub fn expect_error(&mut self) -> (String, String) {
        match self.read_reply() {
            Reply::Frame(v) => {
                assert_eq!(v["type"], "error", "expected an error reply, got {v}");
                let kind = v["kind"].as_str().unwrap_or_else(|| panic!("error reply without kind: {v}"));
                let msg = v["message"].as_str().unwrap_or_else(|| panic!("error reply without message: {v}"));
                assert!(!msg.is_empty(), "empty error message: {v}");
                (kind.to_string(), msg.to_string())
            }
            Reply::Closed => panic!("the server closed the connection without an error reply"),
        }
    }

    /// Says hello with this build's protocol version, a fresh client nonce and the
    /// endpoint dialled, and returns the challenge.
    pub fn hello(&mut self) -> Value {
        let nonce = ringperf_control::auth::hex(&ringperf_control::auth::nonce().expect("nonce"));
        let dialled = self.stream.peer_addr().expect("the server's address");
        let endpoint = ringperf_control::auth::Endpoint::of(dialled).to_string();
        self.hello_with(&nonce, &endpoint)
    }

    /// Says hello with this client nonce (hex) and server endpoint, and returns the
    /// challenge (to replay a recorded hello, or to name an endpoint not dialled).
    pub fn hello_with(&mut self, client_nonce: &str, server_endpoint: &str) -> Value {
        let v = ringperf_control::protocol::PROTOCOL_VERSION;
        self.send_json(&serde_json::json!({
            "type": "hello",
            "protocol": v,
            "tool_version": "test",
            "client_nonce": client_nonce,
            "server_endpoint": server_endpoint,
        }));
        self.login = Some((client_nonce.to_string(), server_endpoint.to_string()));
        match self.read_reply() {
            Reply::Frame(c) if c["type"] == "challenge" => c,
            other => panic!("expected a challenge, got {other:?}"),
        }
    }

    /// Answers a challenge: with a key, checks that the server proved it holds it for the
    /// endpoint the hello named, and sends the client's proof. Returns the proof sent.
    pub fn answer(&mut self, challenge: &Value, psk: Option<&str>) -> Option<String> {
        use ringperf_control::auth::{self, Endpoint, Party, Psk, Session};
        let (nonce, endpoint) = self.login.clone().expect("answer follows hello");
        let server_nonce = auth::unhex(challenge["server_nonce"].as_str().expect("server_nonce"))
            .expect("the server nonce is hex");
        let client_nonce = auth::unhex(&nonce).expect("the client nonce is hex");
        let server_endpoint: Endpoint = endpoint.parse().expect("an endpoint");
        let session = Session { server_nonce: &server_nonce, client_nonce: &client_nonce, server_endpoint };
        let proof = psk.map(|k| {
            let key = Psk::from_secret(k, "test key").expect("test key");
            let theirs = challenge["proof"]
                .as_str()
                .unwrap_or_else(|| panic!("the server sent no proof: {challenge}"));
            assert!(key.verify(Party::Server, &session, theirs), "the server's proof is wrong: {challenge}");
            key.proof(Party::Client, &session)
        });
        self.send_json(&serde_json::json!({"type": "auth", "proof": proof}));
        proof
    }

    /// Hello and auth (with `psk` if given); returns the welcome.
    pub fn handshake(&mut self, psk: Option<&str>) -> Value {
        let challenge = self.hello();
        self.answer(&challenge, psk);
        match self.read_reply() {
            Reply::Frame(w) if w["type"] == "welcome" => w,
            other => panic!("expected a welcome, got {other:?}"),
        }
    }

    /// Reads a reply that must be the server's report of its side (after its window
    /// closed, or after an abort) and returns that side.
    pub fn side_report(&mut self) -> SideReport {
        match self.read_reply() {
            Reply::Frame(v) => match serde_json::from_value::<ServerMessage>(v.clone()) {
                Ok(ServerMessage::Report { side }) => *side,
                Ok(_) => panic!("expected the server's report, got {v}"),
                Err(e) => panic!("expected the server's report, got a frame it cannot be ({e}): {v}"),
            },
            Reply::Closed => panic!("expected the server's report, but it closed the connection"),
        }
    }

    /// Asserts the server closes the connection (after any reply) rather than waiting.
    pub fn expect_closed(&mut self) {
        match self.read_reply() {
            Reply::Closed => {}
            Reply::Frame(v) => panic!("expected the server to close the session, got another frame: {v}"),
        }
    }
}

/// Fills `buf`; Ok(false) on EOF before the first byte.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("EOF after {got} bytes")))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The header a data connection starts with: the session's cookie, then the flow's index,
/// both little-endian.
pub fn flow_header(cookie: u64, flow: u32) -> Vec<u8> {
    let mut h = cookie.to_le_bytes().to_vec();
    h.extend_from_slice(&flow.to_le_bytes());
    h
}

/// The server closed the data connection `s` (EOF or reset) rather than serve it; `what`
/// names the connection for the failure.
pub fn assert_closed_by_server(mut s: TcpStream, what: &str) {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => {}
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
        other => panic!("{what} was not closed: {other:?}"),
    }
}
