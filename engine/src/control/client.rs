//! The client side of one test: connect (or start the embedded server), authenticate,
//! agree on the spec, open the data connections, run the local side, and merge both sides
//! into a TestReport. Once the window has opened a result is never thrown away: if the
//! server dies, a data connection breaks or the user presses Ctrl-C, the report says
//! `partial` and carries what was measured.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use crate::control::auth::{self, Endpoint, Psk};
use crate::control::handshake::{answer_challenge, Unproved, PUBLIC_ENDPOINT};
use crate::control::protocol::{
    read_frame_by, report_frame_cap, write_frame, ClientMessage, ServerMessage, MAX_FRAME, PROTOCOL_VERSION,
};
use crate::control::server::{check_cpu, Server, ServerConfig, CONTROL_TIMEOUT};
use crate::control::wire::{to_wire, Recipient};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::confidence::{batch_means, estimate, Estimate};
use crate::net::connect_flows;
use crate::payload::Payload;
use crate::report::Ending;
use crate::report::{
    ClockReport, Environments, IntervalSample, IterationFigures, SideReport, Summary, TestReport,
    SCHEMA_VERSION,
};
use crate::setting::Setting;
use crate::side::{DataSockets, Side};
use crate::spec::{Role, TestSpec, Workload};
use crate::workload::PEER_GRACE_NS;

/// Where the server is.
#[derive(Clone, Debug)]
pub enum Target {
    /// A server started inside this process on 127.0.0.1, for this one test.
    Embedded,
    Remote {
        host: String,
        port: u16,
    },
    /// Third party: the agent at `agent_host`:`agent_port` runs the client side against the
    /// agent at `peer_host`:`peer_port` (as the first agent resolves and reaches it) and
    /// sends back the whole report; this host carries only the control connection.
    ThirdParty {
        agent_host: String,
        agent_port: u16,
        peer_host: String,
        peer_port: u16,
    },
}

/// Runs just before Go, once both sides are armed: a synchronized third-party run waits
/// there for the controller's start time, at most the Duration, which the server is told
/// so that its armed side waits as long. An error ends the run before its window opens.
#[derive(Clone, Copy)]
pub struct BeforeGo<'a>(pub &'a (dyn Fn() -> Result<()> + Sync), pub Duration);

impl std::fmt::Debug for BeforeGo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeGo")
    }
}

/// What a caller can ask of a run beyond the spec.
#[derive(Clone, Debug, Default)]
pub struct RunOptions<'a> {
    /// Receives the local side's interval samples as they happen.
    pub live: Option<mpsc::Sender<IntervalSample>>,
    /// Confidence level for the within-run estimate (default 0.99, netperf's).
    pub level: Option<f64>,
    /// The key to prove to a server that requires one.
    pub psk: Option<Psk>,
    /// Readable means "stop now" (the CLI's Ctrl-C pipe): before the window opens the test
    /// fails with [`Error::Interrupted`]; after, the run ends with a partial report and the
    /// server is told to stop.
    pub interrupt: Option<BorrowedFd<'a>>,
    /// The server runs in this process with `in_client_process` set (`ringperf load`'s
    /// shared one): it takes no samples, and this side's, which cover every CPU, serve both.
    pub server_in_process: bool,
    /// Called between Armed and Go (see [`BeforeGo`]).
    pub before_go: Option<BeforeGo<'a>>,
    /// Refuse a server that does not prove it holds our key, even one that asks for none:
    /// an agent running a third-party test sends data only to another agent of its key.
    pub peer_must_prove_key: bool,
    /// The local address the control and data connections leave from (netperf's -L);
    /// `None`: the kernel picks by route. One address for both, since the server takes
    /// data connections only from the control connection's address.
    pub local_bind: Option<IpAddr>,
}

pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client that stopped early waits for the server's partial report.
pub(crate) const PARTIAL_REPORT_WAIT: Duration = Duration::from_secs(2);

/// How long a client whose run failed waits for the server's report, which usually
/// says better what went wrong.
const FAILED_REPORT_WAIT: Duration = Duration::from_secs(1);

/// The least a wait for the server's report lasts, even past the grace: time to read a
/// report already on its way.
const LATE_REPORT_WAIT: Duration = Duration::from_millis(200);

/// The wait from now until `give_up`, and at least `floor`.
fn until(give_up: Instant, floor: Duration) -> Duration {
    give_up.saturating_duration_since(Instant::now()).max(floor)
}

/// Runs one test and returns the merged report of both sides.
pub fn run_test(spec: &TestSpec, target: &Target) -> Result<TestReport> {
    run_test_with(spec, target, &RunOptions::default())
}

/// [`run_test`] with options (live samples, confidence level, a key, an interrupt). A run
/// cut short after its window opened returns Ok with `partial` set; the caller decides
/// the exit code.
pub fn run_test_with(spec: &TestSpec, target: &Target, opts: &RunOptions<'_>) -> Result<TestReport> {
    spec.validate()?;
    for &cpu in &spec.local.cpus {
        check_cpu(cpu, "local")?;
    }
    match (&spec.local.payload, target) {
        // Checked before connecting, so a FIFO or a typo fails here, not mid-setup.
        (Payload::File(path), Target::Embedded | Target::Remote { .. }) => {
            crate::input::open_regular(path, "payload file")?;
        }
        (Payload::Label(label), Target::Embedded | Target::Remote { .. }) => {
            return Err(Error::Usage(format!(
                "payload label '{label}' names a file that an agent's operator listed, which only that agent sends: run the test from that agent"
            )))
        }
        _ => {}
    }
    match target {
        Target::Embedded => {
            let server = Server::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?
                .with_config(ServerConfig { in_client_process: true, ..ServerConfig::default() });
            let addr = server.local_addr();
            let stop = Arc::new(AtomicBool::new(false));
            let serving = {
                let stop = stop.clone();
                thread::Builder::new()
                    .name("ringperf-embedded-server".into())
                    .spawn(move || server.serve(&stop, Arc::new(|_| {})))
                    .map_err(|e| Error::io("starting the embedded server", e))?
            };
            let result = open_control(&[addr], spec, opts.local_bind, "127.0.0.1")
                .and_then(|s| run_on(s, spec, addr.to_string(), true, opts));
            stop.store(true, Ordering::Relaxed);
            let _ = serving.join();
            result
        }
        Target::Remote { host, port } => {
            let addrs = resolve(host, *port, Setting::Host.token())?;
            let stream = open_control(&addrs, spec, opts.local_bind, host)?;
            run_on(stream, spec, format!("{host}:{port}"), false, opts)
        }
        Target::ThirdParty { agent_host, agent_port, peer_host, peer_port } => {
            // Before connecting: a spec that names a path of this host never leaves it.
            to_wire(spec, Recipient::Agent)?;
            let stream = connect(&resolve(agent_host, *agent_port, Setting::From.token())?)?;
            let agent = format!("{agent_host}:{agent_port}");
            crate::control::third_party::request(stream, spec, &agent, peer_host, *peer_port, opts)
        }
    }
}

/// Runs `spec` against the server on the connected control `stream`, named `server` in
/// messages and the report: a third-party agent resolves and dials its peer once, logs
/// the address, and runs on that connection.
pub(crate) fn run_connected(
    stream: TcpStream,
    spec: &TestSpec,
    server: String,
    opts: &RunOptions<'_>,
) -> Result<TestReport> {
    spec.validate()?;
    for &cpu in &spec.local.cpus {
        check_cpu(cpu, "local")?;
    }
    run_on(stream, spec, server, false, opts)
}

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
fn open_control(
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
pub(crate) fn login<'a>(
    stream: TcpStream,
    server: &str,
    opts: &RunOptions<'a>,
) -> Result<(Control<'a>, Environment, SocketAddr)> {
    let dialled = stream.peer_addr().map_err(|e| Error::io("reading the server address", e))?;
    let endpoint = Endpoint::of(dialled);
    let _ = stream.set_nodelay(true);
    stream.set_write_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| Error::io("setting a write timeout", e))?;
    let mut c = Control { stream, interrupt: opts.interrupt };

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
    let must_prove = opts.peer_must_prove_key;
    let answer = answer_challenge(opts.psk.as_ref(), must_prove, endpoint, &client_nonce, &challenge)
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

fn run_on(
    stream: TcpStream,
    spec: &TestSpec,
    server: String,
    embedded: bool,
    opts: &RunOptions<'_>,
) -> Result<TestReport> {
    let wire = to_wire(spec, Recipient::Server)?;
    let (mut c, remote_env, authenticated) = login(stream, &server, opts)?;
    // Data connections go to the address that proved itself, and only there.
    let peer_ip = authenticated.ip();
    let clock = if measures_one_way(spec) {
        let same_host = embedded || peer_ip.is_loopback() || peer_ip.to_canonical().is_loopback();
        Some(estimate_clock(&mut c, same_host)?)
    } else {
        None
    };
    let clock_offset_ns = clock.map_or(0, |k| k.applied_offset_ns);
    // A wait before Go (a plan's start) longer than the server's control timeout: say so.
    let go_within_ms = opts.before_go.as_ref().map(|b| crate::control::third_party::whole_ms(b.1));
    c.send(&ClientMessage::Test { spec: Box::new(wire), clock_offset_ns, go_within_ms })?;
    let (port, cookie, udp_ports) = match c.expect("the server to get ready", CONTROL_TIMEOUT)? {
        ServerMessage::Ready { data_port, cookie, udp_ports } => (data_port, cookie, udp_ports),
        other => return Err(unexpected("ready", &other)),
    };
    let data = match spec.workload {
        Workload::Crr => DataSockets::Connector { peer: SocketAddr::new(peer_ip, port), cookie },
        w if w.is_udp() => DataSockets::Flows(crate::net::udp::connect_flows(
            peer_ip,
            &udp_ports,
            cookie,
            spec,
            opts.local_bind,
        )?),
        _ => {
            DataSockets::Flows(connect_flows(SocketAddr::new(peer_ip, port), cookie, spec, opts.local_bind)?)
        }
    };
    let watch = opts.interrupt.map(|f| f.as_raw_fd());
    let controls = (opts.live.clone(), watch, None);
    let mut side = Side::prepare_data(spec, &spec.group_roles(true), &spec.local, data, controls)?;
    // Both windows open together: the server's workers are ready before Go is sent.
    match c.expect("the server to arm its workers", CONTROL_TIMEOUT)? {
        ServerMessage::Armed {} => {}
        other => return Err(unexpected("armed", &other)),
    }
    if let Some(BeforeGo(wait, _)) = opts.before_go {
        wait()?;
    }
    c.send(&ClientMessage::Go {})?;
    side.start()?;
    // The grace after the test's end: however the run goes from here, the client is done
    // waiting for the server by then (the workers' guard fires at the same time).
    let give_up =
        Instant::now() + Duration::from_millis(spec.duration_ms) + Duration::from_nanos(PEER_GRACE_NS);
    let finished = side.finish()?;
    if spec.client_says_flows_done() && !matches!(finished.ending, Ok(Ending::Aborted)) {
        // Every cycle or count is over (or the side failed): the server's workers may stop. A
        // stopped run sends Abort instead (below), which stops them too.
        let _ = c.send(&ClientMessage::FlowsDone {});
    }
    let local = finished.report;
    let samples = finished.samples;

    // A report has an entry per flow and per interval sample: it may be well over MAX_FRAME.
    let report_cap = report_frame_cap(spec);
    // From here on a result exists: every failure makes it partial, never discards it.
    let (remote, failure) = match finished.ending {
        Ok(Ending::Completed) => {
            match c.expect_capped("the server's report", until(give_up, LATE_REPORT_WAIT), report_cap) {
                Ok(ServerMessage::Report { side }) => (Some(*side), None),
                Ok(other) => (None, Some(unexpected("report", &other))),
                Err(e) => (None, Some(e)),
            }
        }
        Ok(Ending::Aborted) => {
            // Ctrl-C: tell the server to stop and take whatever it measured.
            c.interrupt = None;
            let _ = c.send(&ClientMessage::Abort {});
            let remote = match c.expect_capped("the server's partial report", PARTIAL_REPORT_WAIT, report_cap)
            {
                Ok(ServerMessage::Report { side }) => Some(*side),
                _ => None,
            };
            (remote, Some(Error::Interrupted("interrupted by the user (Ctrl-C, SIGTERM or SIGHUP)".into())))
        }
        Err(e) => {
            // The server's own account of what went wrong is usually the better message.
            c.interrupt = None;
            let wait = until(give_up, LATE_REPORT_WAIT).min(FAILED_REPORT_WAIT);
            let e = match c.expect_capped("the server's report", wait, report_cap) {
                Err(server @ (Error::Usage(_) | Error::Requirement(_) | Error::Protocol(_))) => server,
                Err(Error::Peer(m)) if m.starts_with("server: ") => Error::Peer(m),
                _ => e,
            };
            (None, Some(e))
        }
    };
    let (mut local, mut remote) = (local, remote);
    // The embedded server took no samples of its own: this process's cover every CPU.
    if let (true, Some(s), Some(r)) = (embedded || opts.server_in_process, &samples, remote.as_mut()) {
        if r.profile.is_none() {
            r.profile = Some(s.report(r.cpu.system.busy_us, r.profile_work(), r.service_demand));
        }
    }
    if let Some(k) = &clock {
        for side in std::iter::once(&mut local).chain(remote.as_mut()) {
            if let Some(w) = side.udp.as_mut().and_then(|u| u.one_way.as_mut()) {
                w.label(k.one_way_uncertainty_ns());
            }
        }
    }
    let summary = summarize(&local, remote.as_ref(), opts.level.unwrap_or(DEFAULT_LEVEL));
    let figures = IterationFigures::of(&summary, &local, remote.as_ref());
    Ok(TestReport {
        schema_version: SCHEMA_VERSION,
        tool_version: version(),
        test: spec.netperf_name().into(),
        spec: spec.clone(),
        server,
        embedded_server: embedded,
        partial: failure.is_some(),
        partial_reason: failure.map(|e| e.to_string()),
        summary,
        iterations: vec![figures],
        confidence: None,
        local,
        remote,
        environment: Environments {
            local: Environment::capture(crate::probe::get().clone()),
            remote: remote_env,
        },
        clock,
        client: None,
    })
}

/// Clock probes the client sends before a test that measures one-way delay.
const CLOCK_PROBES: u32 = 8;

/// Whether either direction of the test carries send stamps.
fn measures_one_way(spec: &TestSpec) -> bool {
    spec.one_way_unmeasured(true).is_none()
        || (spec.workload == Workload::UdpRr && spec.one_way_unmeasured(false).is_none())
}

/// The server's clock against this one from [`CLOCK_PROBES`] round trips: each probe's
/// offset is the server's reading minus the midpoint of the probe's send and its reply,
/// wrong by at most half the round trip; the probe with the shortest round trip wins. On
/// one host the estimate is reported but not applied: both ends read the same clock.
fn estimate_clock(c: &mut Control<'_>, same_host: bool) -> Result<ClockReport> {
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..CLOCK_PROBES {
        let sent = monotonic_ns();
        c.send(&ClientMessage::ClockProbe {})?;
        let server_ns = match c.expect("the server's clock reply", CONTROL_TIMEOUT)? {
            ServerMessage::ClockReply { server_ns } => server_ns,
            other => return Err(unexpected("clock_reply", &other)),
        };
        let back = monotonic_ns();
        let rtt = back.saturating_sub(sent);
        let midpoint = sent + rtt / 2;
        let offset = (server_ns as i64).wrapping_sub(midpoint as i64);
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    let (rtt, offset_ns) = best.unwrap_or_default();
    Ok(ClockReport {
        same_host,
        probes: CLOCK_PROBES,
        offset_ns,
        uncertainty_ns: rtt.div_ceil(2),
        applied_offset_ns: if same_host { 0 } else { offset_ns },
    })
}

/// netperf's default confidence level.
pub const DEFAULT_LEVEL: f64 = 0.99;

/// Headline figures: stream throughput as the sender saw it (as the local receiver saw it
/// when the remote sender never reported); rr rates as the client saw them; and the
/// within-run estimate from the local side's intervals.
pub fn summarize(local: &SideReport, remote: Option<&SideReport>, level: f64) -> Summary {
    let secs = |s: &SideReport| s.elapsed_ns as f64 / 1e9;
    let rr = local.role.is_transactional();
    let within_run = within_run(local, rr, level);
    if rr {
        return Summary {
            throughput_bits_per_sec: (local.bytes_sent + local.bytes_received) as f64 * 8.0 / secs(local),
            reverse_throughput_bits_per_sec: None,
            transactions_per_sec: Some(local.transactions as f64 / secs(local)),
            mean_latency_ns: local.latency.as_ref().map(|l| l.mean_ns),
            within_run,
        };
    }
    // What the server sent, as it saw it; as this side received it if it never reported.
    let from_remote = |remote: Option<&SideReport>| match remote {
        Some(sender) => sender.bytes_sent as f64 * 8.0 / secs(sender),
        None => local.bytes_received as f64 * 8.0 / secs(local),
    };
    if local.role == Role::StreamBidir {
        // Each direction as its sender saw it.
        return Summary {
            throughput_bits_per_sec: local.bytes_sent as f64 * 8.0 / secs(local),
            reverse_throughput_bits_per_sec: Some(from_remote(remote)),
            transactions_per_sec: None,
            mean_latency_ns: None,
            within_run,
        };
    }
    let throughput = if matches!(local.role, Role::StreamSender | Role::UdpSender) {
        local.bytes_sent as f64 * 8.0 / secs(local)
    } else {
        from_remote(remote)
    };
    Summary {
        throughput_bits_per_sec: throughput,
        reverse_throughput_bits_per_sec: None,
        transactions_per_sec: None,
        mean_latency_ns: None,
        within_run,
    }
}

/// Batch means over the interval samples after warm-up (the first tenth of the run, and
/// at least the first interval), in at most ten batches.
fn within_run(side: &SideReport, rr: bool, level: f64) -> Option<Estimate> {
    let full: Vec<&IntervalSample> = side.intervals.iter().collect();
    let total_ns: u64 = full.iter().map(|s| s.duration_ns).sum();
    let warm = (total_ns / 10).max(full.first().map_or(0, |s| s.duration_ns));
    let values: Vec<f64> = full
        .iter()
        // The last interval may be a short remainder: leave it out.
        .filter(|s| s.start_ns >= warm && s.duration_ns * 2 >= full[0].duration_ns)
        .map(|s| if rr { s.transactions_per_sec() } else { s.throughput_bits_per_sec() })
        .collect();
    let name = if rr { "transactions/s" } else { "throughput" };
    estimate(name, &batch_means(&values, 10), level)
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
    use crate::control::protocol::{decode, ErrorKind, Message};

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
