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

use crate::control::client::{
    connect, login, resolve, run_connected, unexpected, BeforeGo, Control, RunOptions, CONNECT_TIMEOUT,
    PARTIAL_REPORT_WAIT,
};
use crate::control::protocol::{
    read_frame_by, third_party_frame_cap, write_frame, write_frame_capped, ClientMessage, ServerMessage,
    MAX_CLIENT_FRAME,
};
use crate::control::server::CONTROL_TIMEOUT;
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::payload::{Recipient, WireSpec};
use crate::report::TestReport;
use crate::spec::TestSpec;
use crate::workload::PEER_GRACE_NS;

/// The serve flag an agent needs before it takes third-party work.
pub const ALLOW_FLAG: &str = "--allow-third-party";

/// The furthest ahead a StartAt may lie: past it the peer agent, armed and waiting for
/// Go, would give up (it waits [`CONTROL_TIMEOUT`]).
pub const MAX_START_AHEAD: Duration = Duration::from_secs(5);

/// How long a synchronized agent waits for its start time after saying it is armed: the
/// controller waits for every other test to arm first.
pub const START_WAIT: Duration = Duration::from_secs(8);

/// How long the agent may take from the request to the report, beyond the test itself:
/// connecting to the peer, logging in, setting up both sides, and the peer's report.
pub(crate) fn report_wait(spec: &TestSpec) -> Duration {
    Duration::from_millis(spec.duration_ms)
        + Duration::from_nanos(PEER_GRACE_NS)
        + CONNECT_TIMEOUT
        + START_WAIT
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
    s.request(spec, peer_host, peer_port, false)?;
    s.report()
}

/// A controller's control connection to one agent, for one third-party run.
pub struct AgentSession<'a> {
    c: Control<'a>,
    agent: String,
    spec: TestSpec,
}

impl<'a> AgentSession<'a> {
    /// Logs in to `agent` (`host:port`, for messages) on `stream`.
    pub fn login(stream: TcpStream, agent: &str, opts: &RunOptions<'a>) -> Result<AgentSession<'a>> {
        let (c, _, _) = login(stream, agent, opts)?;
        Ok(AgentSession { c, agent: agent.to_string(), spec: TestSpec::default() })
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
    pub fn request(
        &mut self,
        spec: &TestSpec,
        peer_host: &str,
        peer_port: u16,
        synchronized: bool,
    ) -> Result<()> {
        let wire = spec.to_wire(Recipient::Agent)?;
        self.spec = spec.clone();
        self.c.send(&ClientMessage::ThirdParty {
            spec: Box::new(wire),
            peer_host: peer_host.to_string(),
            peer_port,
            synchronized,
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
        let got = match self.c.expect_capped("the agent's report", report_wait(&self.spec), cap) {
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
    let stream = connect(&resolve(host, port, "-H")?)?;
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
    psk: Option<&crate::control::auth::Psk>,
) -> Result<TestReport> {
    let wait_for_start = || -> Result<()> {
        let mut w = stream;
        write_frame(&mut w, &ServerMessage::ThirdPartyArmed {})?;
        let by = Instant::now() + START_WAIT;
        let agent_ns = match read_frame_by(stream, "the controller's start time", by, MAX_CLIENT_FRAME, None)?
        {
            ClientMessage::StartAt { agent_ns } => agent_ns,
            ClientMessage::Abort {} => {
                return Err(Error::Interrupted("the controller stopped the run before it started".into()))
            }
            other => {
                return Err(Error::Protocol(format!(
                    "expected a 'start_at' message, got '{}'",
                    crate::control::handshake::name(&other)
                )))
            }
        };
        let now = monotonic_ns();
        let ahead = Duration::from_nanos(agent_ns.saturating_sub(now));
        if ahead > MAX_START_AHEAD {
            return Err(Error::Protocol(format!(
                "the start time is {} ms ahead, more than the {} s an armed peer waits: the controller's clock estimate is wrong",
                ahead.as_millis(),
                MAX_START_AHEAD.as_secs()
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
        before_go: synchronized.then_some(BeforeGo(&wait_for_start)),
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
/// agent, which only passes the words on, so the peer is named instead.
fn from_peer(e: Error, peer: &str) -> Error {
    let name = |m: String| match m.strip_prefix("server: ") {
        Some(rest) => format!("the peer agent {peer}: {rest}"),
        None => m,
    };
    match e {
        Error::Usage(m) => Error::Usage(name(m)),
        Error::Requirement(m) => Error::Requirement(name(m)),
        Error::Protocol(m) => Error::Protocol(name(m)),
        Error::Peer(m) => Error::Peer(name(m)),
        e => e,
    }
}
