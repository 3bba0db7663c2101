//! Length-prefixed JSON messages: a 4-byte big-endian length, then that many bytes of JSON.
//! Frames are capped, every read has a deadline that covers the whole frame (a peer that
//! trickles bytes cannot stretch it), and anything malformed is an error, never a panic.
//!
//! A session: Hello -> Challenge -> Auth -> Welcome -> (ClockProbe -> ClockReply)* -> Test
//! -> Ready -> Go -> Report, and the client may send Abort during the run. A controller
//! sends ThirdParty instead of Test: the agent runs that session against another agent as
//! its client (after ThirdPartyArmed -> StartAt when synchronized) and answers with
//! ThirdPartyReport. Hello's first two fields never change and every later one is
//! optional, so a server of any version parses an older client's Hello and says which
//! version to run; an older server refuses a newer Hello's extra field by name, which the
//! client reports as the server being older (see `connection::refused_at_hello`).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use ringperf_core::env::Environment;
use ringperf_core::error::{Error, Result};
use ringperf_core::payload::WirePayload;
use ringperf_core::report::{SideReport, TestReport};
use ringperf_core::spec::TestSpec;
use ringperf_core::spec::WireSpec;
use ringperf_core::text::{one_line, peer_text};

/// `d` in whole milliseconds, rounded up: a wait sent in ms is never shorter than meant.
pub fn whole_ms(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// How long the server waits for each control message of a session before the test starts.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// Bumped on any incompatible change; both ends must speak the same version.
/// 2: challenge-response authentication, Abort, partial reports.
/// 3: ClockProbe/ClockReply and Test's clock offset; UDP datagrams carry send stamps.
/// 4: ThirdParty/StartAt and ThirdPartyArmed/ThirdPartyReport: a controller has an agent
///    run the client side against another agent.
/// 5: the server proves first, for the endpoint the client dialled: Hello carries the
///    client's nonce and that endpoint, Challenge the server's proof, Auth only the
///    client's proof, Welcome none (auth label "ringperf-auth/3").
pub const PROTOCOL_VERSION: u32 = 5;

/// The most clock probes a server answers in one session.
pub const MAX_CLOCK_PROBES: u32 = 64;

/// The largest frame either end accepts, except the server's report. A spec is a few KiB,
/// the welcome's environment tens; latency histograms are deflated.
pub const MAX_FRAME: usize = 1 << 20;

/// What a side report holds apart from its flows and interval samples (CPU, ring, socket
/// and environment figures, the workers, a deflated histogram), at most.
const REPORT_BASE: usize = 1 << 20;
/// One connection's entries in a side report (its flow figures and its tcp_info with the
/// limits over the window, or its UDP figures), at most: about 800 bytes in practice, every
/// number at its widest still within it.
const REPORT_PER_CONNECTION: usize = 1536;
/// One interval sample in a side report, at most: about 200 bytes in practice, every
/// number at its widest under 400.
const REPORT_PER_SAMPLE: usize = 512;

/// The largest report frame a run of `spec` can make: a report has an entry per connection
/// and per interval sample, so 3500 flows or 5000 samples need more than [`MAX_FRAME`].
/// Both ends use it, the server to send the report and the client to read it; the spec's
/// validation bounds the samples, and so this.
pub fn report_frame_cap(spec: &TestSpec) -> usize {
    let connections = spec.connections() as usize;
    REPORT_BASE
        + connections * REPORT_PER_CONNECTION
        + spec.interval_samples() as usize * REPORT_PER_SAMPLE
        + ringperf_core::measure::profile::report_bytes(&spec.profile)
}

/// The largest third-party report frame: both sides' reports and the environments.
pub fn third_party_frame_cap(spec: &TestSpec) -> usize {
    2 * report_frame_cap(spec) + REPORT_BASE
}

/// The largest frame the server reads before a client has authenticated: Hello and Auth
/// are a few hundred bytes, so a stranger cannot make the server buffer more than this.
pub const MAX_HANDSHAKE_FRAME: usize = 4096;

/// The largest frame the server reads from an authenticated client (a Test spec is ~2 KiB).
pub const MAX_CLIENT_FRAME: usize = 64 * 1024;

/// Which end sends a message type, for errors that tell the reader which end to upgrade.
pub trait Message: DeserializeOwned {
    /// The end that sends it ("client").
    const FROM: &'static str;
    /// The end that reads it ("server").
    const TO: &'static str;
}

impl Message for ClientMessage {
    const FROM: &'static str = "client";
    const TO: &'static str = "server";
}

impl Message for ServerMessage {
    const FROM: &'static str = "server";
    const TO: &'static str = "client";
}

/// Client to server. Messages without fields are empty struct variants (`Go {}`): serde
/// lets a unit variant of a tagged enum carry any extra field, an empty struct none.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    /// Always first. `protocol` and `tool_version` never change; the rest is optional on
    /// the wire so that a server parses an older client's Hello and names the version to
    /// run, but a protocol-5 Hello must carry both.
    Hello {
        protocol: u32,
        tool_version: String,
        /// The client's nonce (hex, 16 to 64 bytes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client_nonce: Option<String>,
        /// The server's address and port as the client dialled it (`a.b.c.d:p`, `[v6]:p`):
        /// the endpoint the server's proof must be made for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server_endpoint: Option<String>,
    },
    /// After the server's Challenge (and, when it asked for a key, after the client
    /// checked the server's proof): the client's proof (hex HMAC-SHA256, see `auth`).
    Auth { proof: Option<String> },
    /// Asks for the server's CLOCK_MONOTONIC now (before Test; at most
    /// [`MAX_CLOCK_PROBES`]), for the one-way delay's clock offset.
    ClockProbe {},
    /// The test to run, and the server's clock minus the client's that the server's
    /// one-way stamps and arrivals are corrected by (0 on one host or without probes).
    Test {
        spec: Box<WireSpec>,
        #[serde(default)]
        clock_offset_ns: i64,
        /// How long the server's armed side waits for Go, ms, when a plan's start keeps
        /// its client longer than the server's own control timeout (see
        /// third_party::MAX_ARMED_WAIT, which caps it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        go_within_ms: Option<u64>,
    },
    /// Open the measurement window now.
    Go {},
    /// crr: every client cycle has finished, so the server's workers may stop.
    FlowsDone {},
    /// Stop the test now (the user pressed Ctrl-C): the server ends its side at once and
    /// sends the partial report it has. A stopped crr client sends it instead of FlowsDone.
    /// During a third-party run it stops the agent's run the same way.
    Abort {},
    /// Instead of Test, from a controller: run the client side of `spec` against the
    /// agent at `peer_host`:`peer_port`, logging in to it with this agent's own key, and
    /// send back the whole report (ThirdPartyReport). Only an agent started with
    /// `--allow-third-party` takes it. With `synchronized`, the agent sets the test up,
    /// says ThirdPartyArmed and opens the window at the StartAt time the controller sends.
    ThirdParty {
        spec: Box<WireSpec>,
        peer_host: String,
        peer_port: u16,
        #[serde(default)]
        synchronized: bool,
        /// Synchronized: how long after ThirdPartyArmed the start time may come, and how far
        /// ahead it may then lie, ms: the plan's other tests arm first, and a large plan's
        /// StartAt messages take long to go out. Absent: third_party::START_WAIT.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_within_ms: Option<u64>,
    },
    /// The answer to ThirdPartyArmed: open the window when this agent's CLOCK_MONOTONIC
    /// reads `agent_ns`.
    StartAt { agent_ns: u64 },
}

/// Server to client (`Armed {}` for the reason given on [`ClientMessage`]).
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerMessage {
    /// The answer to Hello: a fresh nonce for this session, whether a key is required and,
    /// when it is, the server's proof for the endpoint the Hello named.
    Challenge {
        protocol: u32,
        server_nonce: String,
        auth_required: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        proof: Option<String>,
    },
    /// The answer to ClockProbe: the server's CLOCK_MONOTONIC when it read the probe, ns.
    ClockReply {
        server_ns: u64,
    },
    Welcome {
        protocol: u32,
        tool_version: String,
        environment: Box<Environment>,
    },
    /// Data connections may now be opened to `data_port`, each starting with `cookie`.
    Ready {
        data_port: u16,
        cookie: u64,
        /// UDP workloads: one server socket per flow, on these ports in flow order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        udp_ports: Vec<u16>,
    },
    /// The server's workers are set up and waiting: the client may send Go. Without this
    /// step a server slower to set up (a buffer ring, a big pipe, a busy CPU) would open its
    /// window late, and the two sides would measure different windows.
    Armed {},
    /// The server side's measurements, after its window closed (or after an Abort).
    Report {
        side: Box<SideReport>,
    },
    /// A synchronized third-party run is set up on both agents: send StartAt.
    ThirdPartyArmed {},
    /// A third-party run's whole report, both sides merged by the agent that ran the
    /// client side (partial when it was cut short).
    ThirdPartyReport {
        report: Box<TestReport<WirePayload>>,
    },
    /// The session failed; the server closes it after sending this.
    Error {
        kind: ErrorKind,
        message: String,
    },
}

/// Which exit code an error reply maps to on the client.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Usage,
    Requirement,
    Peer,
    Protocol,
    /// The client did not prove it holds the server's key.
    Auth,
}

impl ErrorKind {
    pub fn of(e: &Error) -> ErrorKind {
        match e {
            Error::Usage(_) => ErrorKind::Usage,
            Error::Requirement(_) => ErrorKind::Requirement,
            Error::Protocol(_) => ErrorKind::Protocol,
            Error::Peer(_) | Error::Io { .. } | Error::Interrupted(_) => ErrorKind::Peer,
        }
    }

    /// The error the client raises for a server's error reply.
    pub fn into_error(self, message: String) -> Error {
        // The server's words go to the user's terminal: one line, no escapes, bounded.
        let message = format!("server: {}", escape_bounded_line(&message));
        match self {
            ErrorKind::Usage => Error::Usage(message),
            ErrorKind::Requirement => Error::Requirement(message),
            ErrorKind::Peer | ErrorKind::Auth => Error::Peer(message),
            ErrorKind::Protocol => Error::Protocol(message),
        }
    }
}

/// Most characters of a server's error reply a client shows.
const SERVER_MESSAGE_MAX: usize = 1000;

/// `message` as one line of at most [`SERVER_MESSAGE_MAX`] characters.
fn escape_bounded_line(message: &str) -> String {
    ringperf_core::text::cut(&one_line(message), SERVER_MESSAGE_MAX)
}

/// Encodes one frame of at most [`MAX_FRAME`] bytes.
pub fn encode_frame<T: Serialize>(msg: &T) -> Result<Vec<u8>> {
    encode_frame_capped(msg, MAX_FRAME)
}

/// Encodes one frame of at most `cap` bytes.
pub fn encode_frame_capped<T: Serialize>(msg: &T, cap: usize) -> Result<Vec<u8>> {
    let body = serde_json::to_vec(msg).map_err(|e| Error::Protocol(format!("cannot encode message: {e}")))?;
    if body.len() > cap || u32::try_from(body.len()).is_err() {
        return Err(Error::Protocol(format!(
            "message of {} bytes is over the {cap}-byte frame cap",
            body.len()
        )));
    }
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    Ok(frame)
}

/// Writes one frame of at most [`MAX_FRAME`] bytes.
pub fn write_frame<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<()> {
    write_frame_capped(w, msg, MAX_FRAME)
}

/// Writes one frame of at most `cap` bytes.
pub fn write_frame_capped<T: Serialize>(w: &mut impl Write, msg: &T, cap: usize) -> Result<()> {
    let frame = encode_frame_capped(msg, cap)?;
    w.write_all(&frame).map_err(|e| io_error("sending a control message", e))?;
    w.flush().map_err(|e| io_error("sending a control message", e))
}

/// Reads one frame of at most [`MAX_FRAME`] bytes and decodes it; the reader's own
/// timeouts bound the wait. `what` names the expected message for errors.
pub fn read_frame<T: Message>(r: &mut impl Read, what: &str) -> Result<T> {
    let mut frame = FrameBuf::new(MAX_FRAME);
    loop {
        if let Some(body) = frame.read_once(r, what)? {
            return decode(&body, what);
        }
    }
}

/// Reads one frame of at most `cap` bytes from a blocking socket; the whole frame must
/// arrive before `deadline`, however slowly its bytes come. A readable `interrupt` fd
/// (the client's Ctrl-C pipe) ends the wait with [`Error::Interrupted`].
pub fn read_frame_by<T: Message>(
    stream: &TcpStream,
    what: &str,
    deadline: Instant,
    cap: usize,
    interrupt: Option<BorrowedFd<'_>>,
) -> Result<T> {
    let mut frame = FrameBuf::new(cap);
    loop {
        wait_readable(stream, what, deadline, interrupt)?;
        // poll said readable: this one read returns data, EOF or an error without blocking.
        if let Some(body) = frame.read_once(&mut &*stream, what)? {
            return decode(&body, what);
        }
    }
}

/// Waits until `stream` is readable, `deadline` passes, or `interrupt` becomes readable.
pub fn wait_readable(
    stream: &TcpStream,
    what: &str,
    deadline: Instant,
    interrupt: Option<BorrowedFd<'_>>,
) -> Result<()> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Peer(format!("timed out {what}: the peer stopped answering")));
        }
        let mut fds = [
            libc::pollfd { fd: stream.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: interrupt.map_or(-1, |f| f.as_raw_fd()), events: libc::POLLIN, revents: 0 },
        ];
        // Round up so a wait of 0.4 ms does not turn into a busy loop of 0 ms polls.
        let ms = (left.as_micros().div_ceil(1000)).min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of two pollfds for the duration of the call; an fd
        // of -1 is ignored by poll(2).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::io("poll", e));
        }
        if fds[1].revents != 0 {
            return Err(Error::Interrupted(format!("interrupted while {what}")));
        }
        if fds[0].revents != 0 {
            return Ok(());
        }
    }
}

/// One frame being assembled from a stream, a read at a time. Memory grows with the bytes
/// that really arrived, never with the length a peer claims.
pub struct FrameBuf {
    cap: usize,
    header: [u8; 4],
    header_got: usize,
    /// The announced body length, once the header is complete.
    len: Option<usize>,
    body: Vec<u8>,
}

impl FrameBuf {
    pub fn new(cap: usize) -> FrameBuf {
        FrameBuf { cap, header: [0; 4], header_got: 0, len: None, body: Vec::new() }
    }

    /// Bytes received of this frame so far.
    pub fn received(&self) -> usize {
        self.header_got + self.body.len()
    }

    /// Takes up to what the frame still needs from `bytes` (never more, so a following
    /// frame's bytes are left alone). Returns how many bytes it took, and the body once the
    /// frame is complete.
    pub fn push(&mut self, bytes: &[u8], what: &str) -> Result<(usize, Option<Vec<u8>>)> {
        let mut used = 0;
        if self.len.is_none() {
            let n = (4 - self.header_got).min(bytes.len());
            self.header[self.header_got..self.header_got + n].copy_from_slice(&bytes[..n]);
            self.header_got += n;
            used = n;
            if self.header_got < 4 {
                return Ok((used, None));
            }
            let len = u32::from_be_bytes(self.header) as usize;
            if len == 0 || len > self.cap {
                return Err(Error::Protocol(format!(
                    "frame of {len} bytes (while waiting for {what}) is outside 1..={}",
                    self.cap
                )));
            }
            self.len = Some(len);
        }
        let len = self.len.unwrap_or(0);
        let n = (len - self.body.len()).min(bytes.len() - used);
        self.body.extend_from_slice(&bytes[used..used + n]);
        used += n;
        if self.body.len() == len {
            let body = std::mem::take(&mut self.body);
            *self = FrameBuf::new(self.cap);
            return Ok((used, Some(body)));
        }
        Ok((used, None))
    }

    /// How many bytes the frame still needs (the header first).
    pub fn wanted(&self) -> usize {
        match self.len {
            None => 4 - self.header_got,
            Some(len) => len - self.body.len(),
        }
    }

    /// One read call on a blocking `r` for at most what the frame still needs.
    /// Ok(None): not complete yet.
    pub fn read_once(&mut self, r: &mut impl Read, what: &str) -> Result<Option<Vec<u8>>> {
        let mut chunk = [0u8; 16 * 1024];
        let want = self.wanted().min(chunk.len());
        let n = match r.read(&mut chunk[..want]) {
            Ok(0) => {
                let e = io::Error::new(io::ErrorKind::UnexpectedEof, "EOF");
                let doing = if self.received() == 0 {
                    format!("waiting for {what}")
                } else {
                    format!("reading {what}")
                };
                return Err(io_error(&doing, e));
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(None),
            // On a blocking reader, WouldBlock is its read timeout: io_error says so.
            Err(e) => return Err(io_error(&format!("reading {what}"), e)),
        };
        Ok(self.push(&chunk[..n], what)?.1)
    }
}
/// Decodes a frame body: invalid UTF-8, invalid JSON and the wrong shape are all errors.
/// The decoder's message quotes what the peer sent (a message type, a field name, a
/// string), so it is escaped and bounded before it reaches a log line or a reply.
pub fn decode<T: Message>(body: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| {
        let e = e.to_string();
        if let Some((field, _)) = quoted_name(&e, "unknown field `") {
            return Error::Protocol(format!(
                "unknown field `{}` in {what}: the {} is newer than this {} (protocol {PROTOCOL_VERSION}); upgrade the {}",
                peer_text(field),
                T::FROM,
                T::TO,
                T::TO
            ));
        }
        // Only the peer's name is bounded, so serde's list of what it expected stays whole.
        let shown = match quoted_name(&e, "unknown variant `") {
            Some((name, rest)) => format!("unknown variant `{}{}", peer_text(name), one_line(rest)),
            None => peer_text(&e),
        };
        Error::Protocol(format!("malformed message while waiting for {what}: {shown}"))
    })
}

/// The name in serde's "unknown field `NAME`, expected ..." (or "unknown variant `NAME`",
/// or "..., there are no fields"), and serde's text after it. The name may hold anything,
/// backticks too, but what follows it is serde's own text, whose last "`, expected" or
/// "`, there are no fields" ends the name.
fn quoted_name<'a>(message: &'a str, prefix: &str) -> Option<(&'a str, &'a str)> {
    let rest = message.strip_prefix(prefix)?;
    let end = rest.rfind("`, expected").or_else(|| rest.rfind("`, there are no fields"))?;
    Some(rest.split_at(end))
}

fn io_error(what: &str, e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            Error::Peer(format!("timed out {what}: the peer stopped answering"))
        }
        io::ErrorKind::UnexpectedEof => {
            Error::Peer(format!("the peer closed the control connection while {what}"))
        }
        _ => Error::Peer(format!("control connection failed while {what}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_roundtrip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &ClientMessage::Go {}).unwrap();
        let m: ClientMessage = read_frame(&mut &buf[..], "go").unwrap();
        assert!(matches!(m, ClientMessage::Go {}));
    }

    #[test]
    fn oversized_empty_and_garbage_frames_are_errors() {
        let huge = u32::MAX.to_be_bytes();
        assert!(matches!(read_frame::<ClientMessage>(&mut &huge[..], "x"), Err(Error::Protocol(_))));
        let empty = 0u32.to_be_bytes();
        assert!(matches!(read_frame::<ClientMessage>(&mut &empty[..], "x"), Err(Error::Protocol(_))));
        for body in
            [&b"\xff\xfe"[..], b"{not json", br#"{"type":"launch_missiles"}"#, br#"{"type":"hello"}"#, b"[]"]
        {
            let mut f = (body.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(body);
            assert!(
                matches!(read_frame::<ClientMessage>(&mut &f[..], "x"), Err(Error::Protocol(_))),
                "{body:?}"
            );
        }
        let short = [0u8, 0, 0, 10, b'{'];
        assert!(matches!(read_frame::<ClientMessage>(&mut &short[..], "x"), Err(Error::Peer(_))));
    }

    #[test]
    fn what_a_peer_named_is_quoted_escaped_and_bounded() {
        let message =
            |body: &serde_json::Value| match decode::<ClientMessage>(body.to_string().as_bytes(), "hello") {
                Err(Error::Protocol(m)) => m,
                other => panic!("expected a protocol error, got {other:?}"),
            };
        let m = message(&serde_json::json!({"type": "x`, expected\nforged\u{1b}"}));
        assert!(m.contains("unknown variant `x`, expected\\nforged\\x1b`, expected one of `hello`"), "{m}");
        let m = message(&serde_json::json!({"type": "y".repeat(300)}));
        assert!(m.contains("(180 more bytes)`, expected one of `hello`"), "{m}");
        // A message without fields has none to add either.
        let m = message(&serde_json::json!({"type": "go", "now": true}));
        assert!(m.contains("unknown field `now` in hello"), "{m}");
        let mut spec = serde_json::to_value(TestSpec::default()).unwrap();
        spec["ring"]["z\r"] = serde_json::json!(1);
        let m = message(&serde_json::json!({"type": "test", "spec": spec}));
        assert!(m.starts_with("unknown field `z\\r` in hello: the client is newer than this server"), "{m}");
        assert!(!m.chars().any(char::is_control), "{m}");
    }

    #[test]
    fn report_entries_fit_their_share_of_the_report_cap() {
        use ringperf_core::measure::tcp_info::{Limits, TcpFlowInfo};
        use ringperf_core::report::{FlowReport, IntervalSample, UdpFlowReport};
        let len = |v: serde_json::Value| serde_json::to_vec(&v).unwrap().len();
        // Every number at its widest: what no run reaches, so a bound from above.
        let widest = |v: serde_json::Value| {
            let serde_json::Value::Object(m) = v else { panic!("not an object") };
            let wide = m.into_iter().map(|(k, v)| {
                let w = match v {
                    serde_json::Value::Number(n) if n.is_f64() => serde_json::json!(-2.2250738585072014e-308),
                    serde_json::Value::Null | serde_json::Value::Number(_) => serde_json::json!(u64::MAX),
                    other => other,
                };
                (k, w)
            });
            serde_json::Value::Object(wide.collect())
        };
        let flow = len(widest(serde_json::to_value(FlowReport::default()).unwrap()))
            + len(widest(serde_json::to_value(TcpFlowInfo::default()).unwrap()))
            + len(widest(serde_json::to_value(Limits::default()).unwrap()))
            + len(widest(serde_json::to_value(UdpFlowReport::default()).unwrap()));
        assert!(flow < REPORT_PER_CONNECTION, "a connection's entries take up to {flow} bytes");
        let sample = IntervalSample {
            busy_percent: Some(1.0),
            latency_p50_ns: Some(1),
            latency_p99_ns: Some(1),
            ..IntervalSample::default()
        };
        let sample = len(widest(serde_json::to_value(sample).unwrap()));
        assert!(sample < REPORT_PER_SAMPLE, "an interval sample takes up to {sample} bytes");
        // The largest legal spec's report still has a bounded frame.
        let most = TestSpec {
            flows: ringperf_core::spec::MAX_FLOWS,
            bidir: true,
            duration_ms: ringperf_core::spec::MAX_DURATION_MS,
            interval_ms: ringperf_core::spec::MAX_DURATION_MS / ringperf_core::spec::MAX_INTERVAL_SAMPLES,
            ..TestSpec::default()
        };
        most.validate().unwrap();
        assert!(report_frame_cap(&most) <= 64 << 20, "{}", report_frame_cap(&most));
        assert!(report_frame_cap(&TestSpec { flows: 3500, ..TestSpec::default() }) > MAX_FRAME);
    }

    #[test]
    fn frame_buf_takes_only_its_frame() {
        let mut two = encode_frame(&ClientMessage::Go {}).unwrap();
        two.extend(encode_frame(&ClientMessage::Abort {}).unwrap());
        let mut f = FrameBuf::new(MAX_HANDSHAKE_FRAME);
        let (used, body) = f.push(&two, "x").unwrap();
        assert!(matches!(decode::<ClientMessage>(&body.unwrap(), "x").unwrap(), ClientMessage::Go {}));
        let (_, body) = f.push(&two[used..], "x").unwrap();
        assert!(matches!(decode::<ClientMessage>(&body.unwrap(), "x").unwrap(), ClientMessage::Abort {}));
        // A claimed length over the cap is refused from the header alone.
        assert!(matches!(FrameBuf::new(16).push(&17u32.to_be_bytes(), "x"), Err(Error::Protocol(_))));
    }
}

/// Property tests of the decoder: whatever a peer sends, decoding returns (Ok or Err) and
/// never panics, however the bytes are split; valid messages survive the round trip. A few
/// thousand cases run in well under a second with the normal test suite.
#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;
    use ringperf_core::spec::{Direction, Pacing, RecvEngine, RingTuning, SendEngine, SideSpec, Workload};

    fn assemble(bytes: &[u8], cuts: &[usize], cap: usize) -> Result<Option<Vec<u8>>> {
        let mut f = FrameBuf::new(cap);
        let mut rest = bytes;
        let mut cuts = cuts.iter();
        while !rest.is_empty() {
            let n = cuts.next().map_or(rest.len(), |&c| c % rest.len() + 1);
            let (used, body) = f.push(&rest[..n], "fuzz")?;
            if body.is_some() {
                return Ok(body);
            }
            rest = &rest[used..];
        }
        Ok(None)
    }

    fn label() -> impl Strategy<Value = WirePayload> {
        proptest::option::of("[a-zA-Z0-9._-]{1,64}")
            .prop_map(|l| l.map_or(WirePayload::Pattern, WirePayload::Label))
    }

    fn spec_strategy() -> impl Strategy<Value = WireSpec> {
        let engines = (0..4usize, 0..4usize, any::<u32>(), any::<bool>(), label(), label());
        let shape = (any::<bool>(), any::<bool>(), any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>());
        let scale = (
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            any::<u32>(),
            any::<bool>(),
        );
        (shape, scale, engines).prop_map(
            |(
                (rr, reverse, duration_ms, size, flows, resp),
                (total_bps, per_flow_bps, threads, bidir),
                (se, re, depth, verify, local_payload, remote_payload),
            )| WireSpec {
                workload: if rr { Workload::Rr } else { Workload::Stream },
                direction: if reverse { Direction::ServerToClient } else { Direction::ClientToServer },
                duration_ms,
                send_size: size,
                request_size: size,
                response_size: resp,
                flows,
                threads,
                bidir,
                pacing: Pacing { total_bps, per_flow_bps },
                verify,
                local: SideSpec { payload: local_payload, ..SideSpec::default() },
                remote: SideSpec {
                    send_engine: SendEngine::ALL[se],
                    recv_engine: RecvEngine::ALL[re],
                    payload: remote_payload,
                    ..SideSpec::default()
                },
                ring: RingTuning { send_depth: depth, ..RingTuning::default() },
                ..crate::wire::to_wire(&TestSpec::default(), crate::wire::Recipient::Agent)
                    .expect("a default spec")
            },
        )
    }

    fn message_strategy() -> impl Strategy<Value = ClientMessage> {
        prop_oneof![
            (
                any::<u32>(),
                ".{0,40}",
                proptest::option::of("[0-9a-f]{0,128}"),
                proptest::option::of(".{0,50}")
            )
                .prop_map(|(protocol, tool_version, client_nonce, server_endpoint)| {
                    ClientMessage::Hello { protocol, tool_version, client_nonce, server_endpoint }
                }),
            proptest::option::of("[0-9a-zA-Z]{0,80}").prop_map(|proof| ClientMessage::Auth { proof }),
            (spec_strategy(), any::<i64>(), proptest::option::of(any::<u64>())).prop_map(
                |(s, clock_offset_ns, go_within_ms)| ClientMessage::Test {
                    spec: Box::new(s),
                    clock_offset_ns,
                    go_within_ms
                }
            ),
            Just(ClientMessage::ClockProbe {}),
            (spec_strategy(), ".{0,40}", any::<u16>(), any::<bool>(), proptest::option::of(any::<u64>()))
                .prop_map(|(s, peer_host, peer_port, synchronized, start_within_ms)| {
                    ClientMessage::ThirdParty {
                        spec: Box::new(s),
                        peer_host,
                        peer_port,
                        synchronized,
                        start_within_ms,
                    }
                }),
            any::<u64>().prop_map(|agent_ns| ClientMessage::StartAt { agent_ns }),
            Just(ClientMessage::Go {}),
            Just(ClientMessage::Abort {}),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600),
                                       cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
            let _ = read_frame::<ClientMessage>(&mut &bytes[..], "fuzz");
            let _ = read_frame::<ServerMessage>(&mut &bytes[..], "fuzz");
            let _ = decode::<ClientMessage>(&bytes, "fuzz");
            if let Ok(Some(body)) = assemble(&bytes, &cuts, MAX_HANDSHAKE_FRAME) {
                let _ = decode::<ClientMessage>(&body, "fuzz");
            }
        }

        #[test]
        fn json_shaped_garbage_never_panics(body in r#"\{("type":"(hello|auth|test|go|abort|error)",?)?("[a-z_]{1,12}":(-?[0-9]{1,25}|"[^"]{0,8}"|null|true|\[\]|\{\}),?){0,6}\}"#) {
            let _ = decode::<ClientMessage>(body.as_bytes(), "fuzz");
            let _ = decode::<ServerMessage>(body.as_bytes(), "fuzz");
        }

        #[test]
        fn valid_messages_roundtrip_however_split(msg in message_strategy(),
                                                  cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
            let frame = encode_frame(&msg).unwrap();
            let whole: ClientMessage = read_frame(&mut &frame[..], "fuzz").unwrap();
            prop_assert_eq!(serde_json::to_value(&whole).unwrap(), serde_json::to_value(&msg).unwrap());
            let body = assemble(&frame, &cuts, MAX_FRAME).unwrap().expect("a whole frame");
            let split: ClientMessage = decode(&body, "fuzz").unwrap();
            prop_assert_eq!(serde_json::to_value(&split).unwrap(), serde_json::to_value(&msg).unwrap());
        }

        #[test]
        fn challenges_roundtrip(protocol in any::<u32>(), server_nonce in "[0-9a-f]{0,64}",
                                auth_required in any::<bool>(), proof in proptest::option::of("[0-9a-f]{64}")) {
            let msg = ServerMessage::Challenge { protocol, server_nonce, auth_required, proof };
            let frame = encode_frame(&msg).unwrap();
            let back: ServerMessage = read_frame(&mut &frame[..], "fuzz").unwrap();
            prop_assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&msg).unwrap());
        }

        #[test]
        fn a_corrupted_valid_frame_is_an_error_or_a_message(msg in message_strategy(), at in any::<usize>(), byte in any::<u8>()) {
            let mut frame = encode_frame(&msg).unwrap();
            let i = at % frame.len();
            frame[i] = byte;
            let _ = read_frame::<ClientMessage>(&mut &frame[..], "fuzz");
        }

        #[test]
        fn decoded_specs_validate_without_panicking(spec in spec_strategy()) {
            use ringperf_core::payload::PayloadFiles;
            use ringperf_core::spec::SpecSide;
            for own in [SpecSide::Local, SpecSide::Remote] {
                // What the server or agent does with a spec: make it local, then check it.
                if let Ok((spec, _)) = crate::wire::into_local(spec.clone(), own, &PayloadFiles::default()) {
                    let _ = spec.validate();
                    let _ = crate::limits::Limits::default().check(&spec);
                }
            }
        }
    }
}
