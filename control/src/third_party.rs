//! Third-party runs: a controller asks agent A to run the client side of a test against
//! agent B. A logs in to B exactly as a client does, with A's own key (the key never
//! crosses the wire: see SECURITY.md), runs the test as it would locally, and sends the
//! whole report back. The controller's host carries the two control messages and the
//! report, never a data byte.
//!
//! A synchronized run (a plan's tests) stops between B's Armed and A's Go: A says
//! ThirdPartyArmed, the controller answers StartAt with a time on A's clock, and A sends Go
//! when its clock reaches it.

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::connection::{connect, login, resolve, unexpected, Control, CONNECT_TIMEOUT};
use crate::protocol::{
    read_frame_by, third_party_frame_cap, whole_ms, write_frame, write_frame_capped, ClientMessage,
    ServerMessage, CONTROL_TIMEOUT, MAX_CLIENT_FRAME,
};
use crate::run::{run_connected, BeforeGo, RunOptions, PARTIAL_REPORT_WAIT};
use crate::wire::{to_wire, Recipient};
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::report::TestReport;
use ringperf_core::setting::{Setting, Token};
use ringperf_core::spec::TestSpec;
use ringperf_core::spec::WireSpec;
use ringperf_core::text::{cut, peer_text, PEER_TEXT_MAX};
use ringperf_engine::workload::PEER_GRACE_NS;

/// The serve setting an agent needs before it takes third-party work.
pub const ALLOW_THIRD_PARTY: Token = Setting::AllowThirdParty.token();

/// How long a synchronized agent waits for its start time after saying it is armed, and
/// how far ahead of that moment the start may lie, when the controller does not say
/// (`start_within_ms`): the controller waits for every other test to arm first.
pub const START_WAIT: Duration = Duration::from_secs(8);

/// The longest an armed test waits for its start, whatever its controller asks: a plan's
/// wait grows with its tests (plan::armed_wait), and both agents of each test hold the
/// test's sockets and threads while they wait.
pub const MAX_ARMED_WAIT: Duration = Duration::from_secs(600);

/// The armed wait an agent grants a controller that asks `start_within_ms`.
pub fn armed_wait(start_within_ms: Option<u64>) -> Duration {
    start_within_ms.map_or(START_WAIT, Duration::from_millis).min(MAX_ARMED_WAIT)
}

/// How long the peer's armed side waits for Go when its client waits `armed` for the start:
/// the client's wait, plus the control timeout for what comes around it (the peer armed
/// before the controller heard so, and Go follows the start).
pub fn go_wait(armed: Duration) -> Duration {
    armed + CONTROL_TIMEOUT
}

/// How long a server's armed side waits for Go when its client asks `go_within_ms` (absent:
/// [`CONTROL_TIMEOUT`]): never less than that, never more than a plan may need.
pub fn granted_go_wait(go_within_ms: Option<u64>) -> Duration {
    go_within_ms
        .map_or(CONTROL_TIMEOUT, Duration::from_millis)
        .clamp(CONTROL_TIMEOUT, go_wait(MAX_ARMED_WAIT))
}

/// How long the agent may take from the request to the report, beyond the test itself:
/// connecting to the peer, logging in, setting up both sides, waiting `armed` for the
/// start, and the peer's report.
pub(crate) fn report_wait(spec: &TestSpec, armed: Duration) -> Duration {
    Duration::from_millis(spec.duration_ms)
        + Duration::from_nanos(PEER_GRACE_NS)
        + CONNECT_TIMEOUT
        + armed
        + 3 * CONTROL_TIMEOUT
}

/// The controller's side of one unsynchronized third-party run on the logged-out control
/// connection `stream` to `agent`.
pub(crate) fn request(
    stream: TcpStream,
    spec: &TestSpec,
    agent: &str,
    peer_host: &str,
    peer_port: u16,
    opts: &RunOptions<'_>,
) -> Result<TestReport> {
    let mut s = AgentSession::login(stream, agent, opts)?;
    s.request(spec, peer_host, peer_port, None)?;
    s.report()
}

/// A controller's control connection to one agent, for one third-party run.
pub struct AgentSession<'a> {
    c: Control<'a>,
    agent: String,
    spec: TestSpec,
    /// How long the agent waits armed for its start (synchronized runs).
    armed: Duration,
}

impl<'a> AgentSession<'a> {
    /// Logs in to `agent` (`host:port`, for messages) on `stream`.
    pub fn login(stream: TcpStream, agent: &str, opts: &RunOptions<'a>) -> Result<AgentSession<'a>> {
        let (c, _, _) = login(stream, agent, opts.psk.as_ref(), opts.peer_must_prove_key, opts.interrupt)?;
        Ok(AgentSession { c, agent: agent.to_string(), spec: TestSpec::default(), armed: START_WAIT })
    }

    /// Probes the agent's clock `probes` times (before the request): (offset, uncertainty)
    /// in ns, the agent's CLOCK_MONOTONIC minus this host's, from the probe with the
    /// shortest round trip, which bounds the error to half of it.
    pub fn probe_clock(&mut self, probes: u32) -> Result<(i64, u64)> {
        let mut best: Option<(u64, i64)> = None;
        for _ in 0..probes {
            let sent = monotonic_ns();
            self.c.send(&ClientMessage::ClockProbe {})?;
            let agent_ns = match self.c.expect("the agent's clock reply", CONTROL_TIMEOUT)? {
                ServerMessage::ClockReply { server_ns } => server_ns,
                other => return Err(unexpected("clock_reply", &other)),
            };
            let rtt = monotonic_ns().saturating_sub(sent);
            let offset = (agent_ns as i64).wrapping_sub((sent + rtt / 2) as i64);
            if best.is_none_or(|(r, _)| rtt < r) {
                best = Some((rtt, offset));
            }
        }
        let (rtt, offset) = best.unwrap_or_default();
        Ok((offset, rtt.div_ceil(2)))
    }

    /// Asks the agent to run the client side of `spec` against `peer_host`:`peer_port`.
    /// The spec goes in its wire form: payload labels, never a path of this host.
    /// `synchronized`: set it up, say so, and wait up to this long for the start time (see
    /// [`armed_wait`]).
    pub fn request(
        &mut self,
        spec: &TestSpec,
        peer_host: &str,
        peer_port: u16,
        synchronized: Option<Duration>,
    ) -> Result<()> {
        let wire = to_wire(spec, Recipient::Agent)?;
        self.spec = spec.clone();
        self.armed = synchronized.map_or(START_WAIT, |d| d.min(MAX_ARMED_WAIT));
        self.c.send(&ClientMessage::ThirdParty {
            spec: Box::new(wire),
            peer_host: peer_host.to_string(),
            peer_port,
            synchronized: synchronized.is_some(),
            start_within_ms: synchronized.map(whole_ms),
        })
    }

    /// Waits until the agent and its peer are set up (synchronized runs).
    pub fn armed(&mut self) -> Result<()> {
        let within = CONNECT_TIMEOUT + 3 * CONTROL_TIMEOUT;
        match self.c.expect("the agent to set its test up", within)? {
            ServerMessage::ThirdPartyArmed {} => Ok(()),
            other => Err(unexpected("third_party_armed", &other)),
        }
    }

    /// Tells the agent when to open its window, on its own clock.
    pub fn start_at(&mut self, agent_ns: u64) -> Result<()> {
        self.c.send(&ClientMessage::StartAt { agent_ns })
    }

    /// Stops the run (a plan that gives up): the agent stops its test.
    pub fn abort(&mut self) {
        let _ = self.c.send(&ClientMessage::Abort {});
    }

    /// The agent's report, naming the agent as the client and stating the spec as this
    /// controller asked it. On the interrupt (Ctrl-C) the agent is told to stop and its
    /// partial report is taken.
    pub fn report(&mut self) -> Result<TestReport> {
        let cap = third_party_frame_cap(&self.spec);
        let got = match self.c.expect_capped("the agent's report", report_wait(&self.spec, self.armed), cap) {
            Err(Error::Interrupted(why)) => {
                self.c.interrupt = None;
                self.abort();
                match self.c.expect_capped("the agent's partial report", PARTIAL_REPORT_WAIT * 2, cap) {
                    Ok(m) => m,
                    Err(_) => return Err(Error::Interrupted(why)),
                }
            }
            other => other?,
        };
        match got {
            ServerMessage::ThirdPartyReport { report } => {
                let mut r = report.with_spec(self.spec.clone());
                r.client = Some(self.agent.clone());
                Ok(r)
            }
            other => Err(unexpected("third_party_report", &other)),
        }
    }
}

/// The peer agent of a third-party run, resolved and dialled once: its control connection
/// is the one the agent logs in on, and the address it reached is where the data goes.
pub(crate) struct DialledPeer {
    /// The name the controller gave, `host:port`.
    pub name: String,
    pub stream: TcpStream,
    pub addr: SocketAddr,
}

/// Resolves `host` once and connects to the first of its addresses that answers.
pub(crate) fn dial_peer(host: &str, port: u16) -> Result<DialledPeer> {
    // The error quotes the name for this agent's log: cut to PEER_TEXT_MAX if longer.
    let addrs = resolve(host, port, Setting::Host.token())
        .map_err(|e| map_message(e, |m| m.replace(host, &peer_text(host))))?;
    let stream = connect(&addrs)?;
    let addr = stream.peer_addr().map_err(|e| Error::io("reading the peer agent's address", e))?;
    Ok(DialledPeer { name: format!("{host}:{port}"), stream, addr })
}

/// The agent's side: runs the client side of `spec` (the controller's `wire` spec, as
/// this agent resolved it) against the dialled peer agent on behalf of the controller on
/// `stream`, and sends the report back, stating `wire`. The controller's Abort, or its
/// connection closing (a controller killed mid-run), stops the run at once, so the agent
/// and its peer are free for the next test.
pub(crate) fn serve(
    stream: &TcpStream,
    wire: &WireSpec,
    spec: &TestSpec,
    peer: DialledPeer,
    synchronized: bool,
    start_within_ms: Option<u64>,
    psk: Option<&crate::auth::Psk>,
) -> Result<TestReport> {
    let armed = armed_wait(start_within_ms);
    let wait_for_start = || -> Result<()> {
        let mut w = stream;
        write_frame(&mut w, &ServerMessage::ThirdPartyArmed {})?;
        let by = Instant::now() + armed;
        let agent_ns = match read_frame_by(stream, "the controller's start time", by, MAX_CLIENT_FRAME, None)?
        {
            ClientMessage::StartAt { agent_ns } => agent_ns,
            ClientMessage::Abort {} => {
                return Err(Error::Interrupted("the controller stopped the run before it started".into()))
            }
            other => {
                return Err(Error::Protocol(format!(
                    "expected a 'start_at' message, got '{}'",
                    crate::handshake::name(&other)
                )))
            }
        };
        let now = monotonic_ns();
        let ahead = Duration::from_nanos(agent_ns.saturating_sub(now));
        let left = by.saturating_duration_since(Instant::now());
        if ahead > left {
            return Err(Error::Protocol(format!(
                "the start time is {} ms ahead, past the {} ms left of the {} ms this run's agents wait armed for it: the controller's clock estimate is wrong",
                ahead.as_millis(),
                left.as_millis(),
                armed.as_millis()
            )));
        }
        std::thread::sleep(ahead);
        Ok(())
    };
    let opts = RunOptions {
        live: None,
        level: None,
        psk: psk.cloned(),
        // The controller's connection: readable means Abort or a controller gone.
        interrupt: Some(stream.as_fd()),
        before_go: synchronized.then_some(BeforeGo(&wait_for_start, go_wait(armed))),
        peer_must_prove_key: true,
        server_in_process: false,
        local_bind: None,
    };
    let name = peer.name.clone();
    let report = run_connected(peer.stream, spec, peer.name, &opts).map_err(|e| from_peer(e, &name))?;
    let mut w = stream;
    write_frame_capped(
        &mut w,
        &ServerMessage::ThirdPartyReport { report: Box::new(report.clone().with_spec(wire.clone())) },
        third_party_frame_cap(spec),
    )?;
    Ok(report)
}

/// The peer agent's refusal as the controller should read it: "server: " would name this
/// agent, which only passes the words on, so the peer is named instead. The message goes
/// to this agent's log too, so what came from a peer is cut to [`PEER_TEXT_MAX`]: the peer
/// agent's words, and a peer name the controller gave that is longer.
fn from_peer(e: Error, peer: &str) -> Error {
    let shown = peer_text(peer);
    let name = |m: String| {
        let m = if shown != peer { m.replace(peer, &shown) } else { m };
        match m.strip_prefix("server: ") {
            Some(rest) => format!("the peer agent {shown}: {}", cut(rest, PEER_TEXT_MAX)),
            None => m,
        }
    };
    map_message(e, name)
}

/// `e` with its message passed through `f`, its kind (and so its exit code) kept.
fn map_message(e: Error, f: impl FnOnce(String) -> String) -> Error {
    match e {
        Error::Usage(m) => Error::Usage(f(m)),
        Error::Requirement(m) => Error::Requirement(f(m)),
        Error::Protocol(m) => Error::Protocol(f(m)),
        Error::Peer(m) => Error::Peer(f(m)),
        Error::Interrupted(m) => Error::Interrupted(f(m)),
        e => e,
    }
}

/// A refused third-party request's error, saying what was asked (`test` against
/// `target`, already escaped), so that the agent's log line and the controller both read
/// it as a refused third-party request.
pub(crate) fn refused(e: Error, test: &str, target: &str) -> Error {
    map_message(e, |m| format!("third-party request refused ({test} against {target}): {m}"))
}

/// Checks the peer a controller names: a host name or an address (letters, digits and
/// `.-_:%[]`), at most 253 characters as DNS allows. Anything else is refused before this
/// agent resolves or quotes it.
pub(crate) fn check_peer_host(host: &str) -> Result<()> {
    let fits = !host.is_empty()
        && host.len() <= 255
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b".-_:%[]".contains(&b));
    if fits {
        return Ok(());
    }
    Err(Error::Usage(format!("the peer '{}' is not a host name or an address", peer_text(host))))
}
