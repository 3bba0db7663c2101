//! `ringperf serve`: accepts control connections, takes each through its handshake on the
//! accept thread (see `handshake`), and runs each authenticated session on its own thread,
//! isolated from the others. A failed session gets an error reply and is closed; the
//! server keeps serving. Threads, descriptors and memory are bounded by the limits:
//! `max_handshakes` connections in their handshake, `max_sessions` sessions (at most
//! `max_sessions_per_host` from one address, each with [`SPEC_TIMEOUT`] to send its test
//! once logged in), and `max_total_memory` of payload buffers over all running tests.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::access::{allowed, Cidr};
use crate::auth::{Endpoint, Psk};
use crate::handshake::{self, Authenticated, Identity, Pending, Step};
use crate::limits::{side_memory, Limits};
use crate::protocol::{
    read_frame_by, report_frame_cap, write_frame, write_frame_capped, ClientMessage, ErrorKind,
    ServerMessage, CONTROL_TIMEOUT, MAX_CLIENT_FRAME, MAX_CLOCK_PROBES, PROTOCOL_VERSION,
};
use crate::reclaim::{Watch, Watchdog};
use crate::third_party::granted_go_wait;
use crate::wire::into_local;
use ringperf_core::env::{check_cpu, Environment};
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::payload::{PayloadFile, PayloadFiles};
use ringperf_core::report::{Ending, SideReport};
use ringperf_core::setting::Setting;
use ringperf_core::spec::WireSpec;
use ringperf_core::spec::{SpecSide, TestSpec, Workload};
use ringperf_core::units::format_bytes;
use ringperf_engine::net::{accept_flows, listen, random_cookie, udp};
use ringperf_engine::side::{DataSockets, Finished, Side};

/// How long a logged-in client has to send its test spec after the welcome. A real client
/// sends it at once; a connection that logs in and stays silent holds a session slot, so
/// its hold is short.
pub const SPEC_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a session whose run was cut short waits for the client's Abort before it
/// decides the client is gone.
const ABORT_WAIT: Duration = Duration::from_millis(500);

/// How long a stopping server (the first SIGINT, SIGTERM or SIGHUP) waits for its sessions
/// before it cuts those still running: the peer grace, so a test that is ending anyway ends
/// whole, and whatever a session is blocked on, the server exits soon after.
pub const SHUTDOWN_GRACE: Duration = Duration::from_nanos(ringperf_engine::workload::PEER_GRACE_NS);

/// How long a cut session has to end before a stopping server exits without it.
const CUT_WAIT: Duration = Duration::from_secs(2);

/// What a session may take beyond its test's end and the peer grace: its partial
/// report's wait for the client's abort and the writing of its last reply. Past that, it is
/// cut ([`Watchdog`]).
const REPORT_SLACK: Duration = Duration::from_secs(2);

/// The longest a session's setup may take, from its accepted spec to `go`: the data
/// connections (or UDP hellos), the client's `go`, and between them its own work.
const SETUP_LIMIT: Duration = Duration::from_secs(3 * CONTROL_TIMEOUT.as_secs());

/// After accept fails for lack of descriptors, the accept loop pauses this long instead
/// of spinning on a listener that stays readable.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What the server tells its operator. The engine never prints; the CLI renders these.
#[derive(Debug, Clone)]
pub enum ServerEvent {
    Listening {
        addr: SocketAddr,
    },
    SessionStarted {
        peer: SocketAddr,
    },
    /// A session's spec passed every check and its payload memory is reserved.
    TestAccepted {
        peer: SocketAddr,
        test: &'static str,
        /// This agent runs the test's client side (a third-party run): what it reserved
        /// is that side's memory.
        client_side: bool,
        /// This test's payload memory estimate, in bytes.
        memory: u64,
        /// Reserved by all tests now running, this one included, and the budget.
        in_use: u64,
        budget: u64,
        running: usize,
    },
    /// A controller's third-party request was accepted: this agent now runs the client
    /// side of `test` against the agent at `target` (the name it was given, escaped), which
    /// it resolved once to `address`, the one address its control and data go to.
    ThirdParty {
        peer: SocketAddr,
        test: &'static str,
        target: String,
        address: SocketAddr,
    },
    /// An accepted test sends a file the operator listed, by the label the peer named.
    PayloadFile {
        peer: SocketAddr,
        label: String,
        path: PathBuf,
    },
    TestDone {
        peer: SocketAddr,
        test: &'static str,
        bytes: u64,
        transactions: u64,
    },
    /// The client stopped the test before its end (Ctrl-C) and got the partial report.
    TestStopped {
        peer: SocketAddr,
        test: &'static str,
        bytes: u64,
        transactions: u64,
    },
    SessionFailed {
        peer: SocketAddr,
        error: String,
    },
    /// A UDP test's data ports received `datagrams` from other addresses than the control
    /// connection's (`first` is the first one's source) and dropped them: once per session.
    ForeignDatagrams {
        peer: SocketAddr,
        datagrams: u64,
        first: SocketAddr,
    },
    /// A connection closed before it became a session: not on the allow list, a failed
    /// or timed-out handshake, a wrong key, or the server at a session limit.
    Rejected {
        peer: SocketAddr,
        reason: String,
    },
    /// The server stops: it waits up to `grace` for `sessions`, then cuts them.
    Stopping {
        sessions: usize,
        grace: Duration,
    },
    /// A session stopped making progress and was cut: past its deadline (its test's length
    /// plus the peer grace), or still running at the end of a stopping server's grace.
    SessionCut {
        peer: SocketAddr,
        test: Option<&'static str>,
        stopping: bool,
    },
    /// The server exits with `unfinished` sessions that did not end even once cut.
    Stopped {
        unfinished: usize,
    },
}

/// Receives server events, from any session thread.
pub type EventSink = Arc<dyn Fn(ServerEvent) + Send + Sync>;

/// What the operator configured.
#[derive(Clone, Debug, Default)]
pub struct ServerConfig {
    /// The pre-shared key every client must prove it holds; `None`: no authentication.
    pub psk: Option<Psk>,
    pub limits: Limits,
    /// Peers allowed to connect; empty: everyone.
    pub allow: Vec<Cidr>,
    /// The embedded server: it runs in the client's process, whose profile already samples
    /// every CPU and counts this process as the tool, so its side takes no profile of its
    /// own (a second sampler would see the same samples and double the sampling cost).
    pub in_client_process: bool,
    /// Takes ThirdParty requests: runs the client side of a test against another agent
    /// for a controller (`serve --allow-third-party`, which needs a key).
    pub allow_third_party: bool,
    /// Endpoints that forward to this server (NAT, port forwards, proxies; `serve
    /// --public-endpoint`): with a key, it proves it is the host dialled at these as well
    /// as at the address and port a connection was accepted on.
    pub public_endpoints: Vec<Endpoint>,
    /// The files a peer may have this host send, by label (`serve --payload-file`).
    pub payload_files: PayloadFiles,
}

/// A bound control listener.
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    config: Arc<ServerConfig>,
}

impl Server {
    /// Listens on one address.
    pub fn bind(addr: SocketAddr) -> Result<Server> {
        let listener = TcpListener::bind(addr).map_err(|e| bind_error(addr, e))?;
        Server::on(listener)
    }

    /// Listens on every address of both families: one IPv6 socket on `[::]` that takes
    /// IPv4 connections too (IPV6_V6ONLY off), or `0.0.0.0` on a host without IPv6.
    pub fn bind_all(port: u16) -> Result<Server> {
        let any6 = SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port));
        match dual_stack_listener(any6) {
            Ok(listener) => Server::on(listener),
            Err(e) if no_ipv6(&e) => Server::bind(SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port))),
            Err(e) => Err(bind_error(any6, e)),
        }
    }

    /// True when the listener takes IPv4 and IPv6 connections on one socket.
    pub fn is_dual_stack(&self) -> bool {
        self.addr.is_ipv6() && self.addr.ip().is_unspecified()
    }

    fn on(listener: TcpListener) -> Result<Server> {
        let addr = listener.local_addr().map_err(|e| Error::io("reading the bound address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("making the control listener non-blocking", e))?;
        Ok(Server { listener, addr, config: Arc::new(ServerConfig::default()) })
    }

    /// Applies the operator's key, limits and allow list.
    pub fn with_config(mut self, config: ServerConfig) -> Server {
        self.config = Arc::new(config);
        self
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `stop` is set, then waits for the sessions in progress to finish.
    pub fn serve(&self, stop: &AtomicBool, events: EventSink) -> Result<()> {
        events(ServerEvent::Listening { addr: self.addr });
        let cfg = &self.config;
        let live = Arc::new(SessionTable::default());
        let dog = Arc::new(Watchdog::default());
        let mut sessions: Vec<JoinHandle<()>> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        let mut fds: Vec<libc::pollfd> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            fds.clear();
            fds.push(libc::pollfd { fd: self.listener.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            fds.extend(pending.iter().map(|p| libc::pollfd { fd: p.fd(), events: libc::POLLIN, revents: 0 }));
            let now = Instant::now();
            let next = pending.iter().map(Pending::deadline).min().map_or(Duration::MAX, |d| d - now.min(d));
            let wait = next.min(Duration::from_millis(100));
            poll(&mut fds, wait)?;

            // Handshakes first, so that the indices of `fds` still match `pending`.
            let mut keep = Vec::with_capacity(pending.len());
            for (p, fd) in pending.drain(..).zip(fds[1..].iter()) {
                if fd.revents == 0 {
                    keep.push(p);
                    continue;
                }
                let mut p = p;
                let id = Identity { psk: cfg.psk.as_ref(), public: &cfg.public_endpoints };
                match p.on_readable(id) {
                    Step::Wait => keep.push(p),
                    Step::Refuse { reason, reply } => {
                        events(ServerEvent::Rejected { peer: p.peer(), reason });
                        p.close_with(reply);
                    }
                    Step::Done(a) => {
                        drop(p);
                        start_session(*a, cfg, (&live, &dog), &mut sessions, &events);
                    }
                }
            }
            pending = keep;
            let now = Instant::now();
            let (expired, rest): (Vec<Pending>, Vec<Pending>) =
                pending.drain(..).partition(|p| p.deadline() <= now);
            pending = rest;
            for p in expired {
                let reason = p.timed_out();
                events(ServerEvent::Rejected { peer: p.peer(), reason: reason.clone() });
                p.close_with(Some((ErrorKind::Peer, reason)));
            }

            if fds[0].revents != 0 {
                self.accept_all(cfg, &mut pending, &events);
            }
            cut_overdue(&dog, &events);
            sessions.retain(|h| !h.is_finished());
        }
        for p in pending {
            p.close_with(Some((ErrorKind::Peer, "the server is shutting down".into())));
        }
        sessions.retain(|h| !h.is_finished());
        events(ServerEvent::Stopping { sessions: sessions.len(), grace: SHUTDOWN_GRACE });
        // Sessions that end within the grace end whole; the rest are cut then, and the
        // server exits without those that still do not end.
        dog.stop_within(SHUTDOWN_GRACE);
        let give_up = Instant::now() + SHUTDOWN_GRACE + CUT_WAIT;
        while !sessions.is_empty() && Instant::now() < give_up {
            thread::sleep(STOP_LOOK);
            cut_overdue(&dog, &events);
            sessions.retain(|h| !h.is_finished());
        }
        if !sessions.is_empty() {
            events(ServerEvent::Stopped { unfinished: sessions.len() });
        }
        for h in sessions.into_iter().filter(|h| h.is_finished()) {
            let _ = h.join();
        }
        Ok(())
    }

    /// Accepts every waiting connection: strangers are closed at once; the rest start
    /// their handshake, the oldest handshake giving way when there are too many.
    fn accept_all(&self, cfg: &ServerConfig, pending: &mut Vec<Pending>, events: &EventSink) {
        loop {
            let (stream, peer) = match self.listener.accept() {
                Ok(pair) => pair,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) =>
                {
                    thread::sleep(ACCEPT_BACKOFF);
                    return;
                }
                // A connection that vanished before accept: keep serving.
                Err(_) => continue,
            };
            // On the dual-stack socket an IPv4 peer is ::ffff:a.b.c.d: the allow list, the
            // per-host count, the data sockets and the log all mean a.b.c.d.
            let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
            if !allowed(&cfg.allow, peer.ip()) {
                drop(stream);
                events(ServerEvent::Rejected { peer, reason: "not in the {allow} list: closed".into() });
                continue;
            }
            if pending.len() >= cfg.limits.max_handshakes.max(1) {
                let oldest = pending.remove(0);
                let reason = format!(
                    "closed to make room: {} connections were in their handshake ({})",
                    cfg.limits.max_handshakes,
                    Setting::MaxHandshakes.token()
                );
                events(ServerEvent::Rejected { peer: oldest.peer(), reason: reason.clone() });
                oldest.close_with(Some((ErrorKind::Peer, reason)));
            }
            match Pending::new(stream, peer, Instant::now()) {
                Ok(p) => pending.push(p),
                Err(e) => events(ServerEvent::Rejected {
                    peer,
                    reason: format!("cannot set the connection up: {e}"),
                }),
            }
        }
    }
}

/// A listener on `addr` (an IPv6 address) that accepts IPv4 connections as well.
fn dual_stack_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP))?;
    // Whatever net.ipv6.bindv6only says: this socket serves both families.
    sock.set_only_v6(false)?;
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into())?;
    sock.listen(1024)?;
    Ok(sock.into())
}

/// The errors of a host without IPv6 (a kernel built or booted without it, or no address).
fn no_ipv6(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL | libc::EPROTONOSUPPORT))
}

fn bind_error(addr: SocketAddr, e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::AddrInUse => Error::Usage(format!(
            "{addr} is already in use: is another `ringperf serve` running? Pick another {}",
            Setting::ServePort.token()
        )),
        io::ErrorKind::AddrNotAvailable => Error::Usage(format!(
            "{} is not an address of this host: check {}",
            addr.ip(),
            Setting::ServeBind.token()
        )),
        _ => Error::io(format!("binding the control port {addr}"), e),
    }
}

/// How often a stopping server looks whether its sessions ended.
const STOP_LOOK: Duration = Duration::from_millis(20);

/// Cuts the sessions past their deadline, and says so.
fn cut_overdue(dog: &Watchdog, events: &EventSink) {
    for c in dog.cut_overdue() {
        events(ServerEvent::SessionCut { peer: c.peer, test: c.test, stopping: c.stopping });
    }
}

fn poll(fds: &mut [libc::pollfd], wait: Duration) -> Result<()> {
    let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: `fds` is a valid, exclusively borrowed array of pollfds for the whole call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(Error::io("poll", e));
        }
        for f in fds.iter_mut() {
            f.revents = 0;
        }
    }
    Ok(())
}

/// Runs an authenticated connection's session on a thread of its own, unless the server
/// already has `max_sessions` of them, or `max_sessions_per_host` from that address.
fn start_session(
    a: Authenticated,
    cfg: &Arc<ServerConfig>,
    (live, dog): (&Arc<SessionTable>, &Arc<Watchdog>),
    sessions: &mut Vec<JoinHandle<()>>,
    events: &EventSink,
) {
    let max = cfg.limits.max_sessions;
    let mut slot = match SessionTable::admit(live, a.peer.ip(), max, cfg.limits.max_sessions_per_host) {
        Ok(slot) => slot,
        Err(reason) => {
            events(ServerEvent::Rejected { peer: a.peer, reason: reason.clone() });
            let mut stream = a.stream;
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let _ =
                write_frame(&mut stream, &ServerMessage::Error { kind: ErrorKind::Peer, message: reason });
            return;
        }
    };
    // Until it has a test: the welcome's write, then the spec.
    slot.watch = Watchdog::register(dog, &a.stream, a.peer, CONTROL_TIMEOUT + SPEC_TIMEOUT + REPORT_SLACK);
    let (cfg, events2) = (cfg.clone(), events.clone());
    let spawned = thread::Builder::new().name("ringperf-session".into()).spawn(move || {
        run_session(a, &cfg, &slot, &events2);
        drop(slot);
    });
    // On failure the closure (the connection and the slot) is dropped: the client sees the
    // close and the slot is free again.
    if let Ok(h) = spawned {
        sessions.push(h);
    }
}

/// Every live session, by state and by source address, and the payload memory the
/// running ones reserved. Locked when a session starts, is accepted and ends: never on a
/// data path.
#[derive(Default)]
struct SessionTable {
    state: Mutex<TableState>,
}

#[derive(Default)]
struct TableState {
    /// Session threads, whatever they are doing.
    live: usize,
    /// Sessions whose spec was accepted: running a test (or setting it up).
    running: usize,
    per_host: HashMap<IpAddr, usize>,
    /// Payload memory reserved by the running sessions, in bytes.
    memory: u64,
}

impl SessionTable {
    fn lock(&self) -> MutexGuard<'_, TableState> {
        // A session thread that panicked while holding the lock left consistent counts
        // (every update is one statement): keep counting.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for a new session from `host`, or why not (for the log and the reply).
    fn admit(
        table: &Arc<SessionTable>,
        host: IpAddr,
        max: usize,
        per_host: usize,
    ) -> std::result::Result<SessionSlot, String> {
        let mut t = table.lock();
        if t.live >= max {
            let waiting = t.live - t.running;
            return Err(format!(
                "the server has {} sessions, its {} limit ({} running tests, {waiting} logged in and not yet sent a test): try again when one has finished",
                t.live,
                Setting::MaxSessions.token(),
                t.running
            ));
        }
        let from_host = t.per_host.get(&host).copied().unwrap_or(0);
        if from_host >= per_host {
            return Err(format!(
                "{host} already has {from_host} sessions on this server, its {} limit: wait for them to finish or close them, then try again",
                Setting::MaxSessionsPerHost.token()
            ));
        }
        t.live += 1;
        *t.per_host.entry(host).or_insert(0) += 1;
        Ok(SessionSlot { table: table.clone(), host, watch: None })
    }
}

/// A session's place in the table, given back when the session ends.
struct SessionSlot {
    table: Arc<SessionTable>,
    host: IpAddr,
    /// The session's deadline, past which the accept loop cuts it.
    watch: Option<Watch>,
}

impl SessionSlot {
    /// The session is cut unless it ends within `within` from now (or moves this again).
    fn deadline_in(&self, within: Duration) {
        if let Some(w) = &self.watch {
            w.deadline_in(within);
        }
    }

    /// Reserves `memory` bytes of `budget` for this session's test, or says what is in use
    /// and what the test asks.
    fn reserve(&self, memory: u64, budget: u64) -> Result<Reservation<'_>> {
        let mut t = self.table.lock();
        let in_use = t.memory;
        if in_use.saturating_add(memory) > budget {
            return Err(Error::Peer(format!(
                "this server has {} of {} of payload memory in use by {} sessions ({{max-total-memory}}); this test needs {}: try fewer flows or smaller buffers, or wait",
                format_bytes(in_use),
                format_bytes(budget),
                t.running,
                format_bytes(memory)
            )));
        }
        t.memory += memory;
        t.running += 1;
        Ok(Reservation { slot: self, memory, in_use: t.memory, running: t.running })
    }
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        let mut t = self.table.lock();
        t.live -= 1;
        if let Some(n) = t.per_host.get_mut(&self.host) {
            *n -= 1;
            if *n == 0 {
                t.per_host.remove(&self.host);
            }
        }
    }
}

/// A running test's share of the memory budget, freed when the session ends.
struct Reservation<'a> {
    slot: &'a SessionSlot,
    memory: u64,
    /// The table's figures right after reserving, for the log.
    in_use: u64,
    running: usize,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut t = self.slot.table.lock();
        t.memory -= self.memory;
        t.running -= 1;
    }
}

/// How a session ended without an error.
enum SessionEnd {
    Done(TestFigures),
    Stopped(TestFigures),
}

/// What the log says about a test.
struct TestFigures {
    test: &'static str,
    bytes: u64,
    transactions: u64,
}

fn run_session(a: Authenticated, cfg: &ServerConfig, slot: &SessionSlot, events: &EventSink) {
    let peer = a.peer;
    events(ServerEvent::SessionStarted { peer });
    match session(&a, cfg, slot, events) {
        Ok(SessionEnd::Done(f)) => {
            events(ServerEvent::TestDone { peer, test: f.test, bytes: f.bytes, transactions: f.transactions })
        }
        Ok(SessionEnd::Stopped(f)) => events(ServerEvent::TestStopped {
            peer,
            test: f.test,
            bytes: f.bytes,
            transactions: f.transactions,
        }),
        Err(e) => {
            // Settings stay tokens: the client spells them as the front end its user typed.
            let reply = ServerMessage::Error { kind: ErrorKind::of(&e), message: e.unspelled() };
            let mut s = &a.stream;
            let _ = write_frame(&mut s, &reply);
            events(ServerEvent::SessionFailed { peer, error: e.to_string() });
        }
    }
}

/// Runs one test for one authenticated client.
fn session(
    a: &Authenticated,
    cfg: &ServerConfig,
    slot: &SessionSlot,
    events: &EventSink,
) -> Result<SessionEnd> {
    let stream: &TcpStream = &a.stream;
    let mut w = stream;
    stream.set_write_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| Error::io("setting a write timeout", e))?;
    let local_ip =
        stream.local_addr().map_err(|e| Error::io("reading the control address", e))?.ip().to_canonical();

    write_frame(
        &mut w,
        &ServerMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            environment: Box::new(Environment::capture(ringperf_engine::probe::get().clone())),
        },
    )?;

    let (spec, payload_file, go_within_ms) = match read_request(stream, cfg)? {
        Request::Test { spec, payload_file, go_within_ms } => (*spec, payload_file, go_within_ms),
        Request::ThirdParty { spec, peer_host, peer_port, start } => {
            let peer = Peer { host: &peer_host, port: peer_port };
            return third_party(a, cfg, slot, events, *spec, peer, start);
        }
    };
    let _reservation = accept(&spec, cfg, slot, a.peer, events, true)?;
    log_payload_file(payload_file, a.peer, events);
    let test_and_grace = Duration::from_millis(spec.duration_ms)
        + Duration::from_nanos(ringperf_engine::workload::PEER_GRACE_NS);
    // A plan's client may wait for its start longer than a control read (see third_party);
    // only a key holder may hold a session that long: a keyless server grants no more.
    let go_wait = granted_go_wait(go_within_ms.filter(|_| cfg.psk.is_some()));
    slot.deadline_in(SETUP_LIMIT + go_wait + test_and_grace + REPORT_SLACK);

    let cookie = random_cookie();
    let mut foreign = udp::Foreign::default();
    // An MPTCP test's listener stays open to the end: a subflow joins through it.
    let (data, _join_listener) = open_data(stream, local_ip, &spec, cookie, a.peer, events, &mut foreign)?;
    // UDP: the descriptors that echo late hellos until `Go` (see net::udp).
    let udp_fds: Vec<RawFd> = match &data {
        DataSockets::Flows(socks) if spec.workload.is_udp() => socks.iter().map(AsRawFd::as_raw_fd).collect(),
        _ => Vec::new(),
    };

    let controls = (None, Some(stream.as_raw_fd()), cfg.limits.max_rate_bps);
    let mut side = Side::prepare_data(&spec, &spec.group_roles(false), &spec.remote, data, controls)?;
    write_frame(&mut w, &ServerMessage::Armed {})?;
    if !udp_fds.is_empty() {
        // The side owns the sockets now; it only uses them once the window opens.
        udp::echo_hellos_until(&udp_fds, cookie, stream.as_raw_fd())?;
    }
    let go_by = Instant::now() + go_wait;
    match read_frame_by(stream, "go", go_by, MAX_CLIENT_FRAME, None)? {
        ClientMessage::Go {} => {}
        other => return Err(out_of_order("go", &other)),
    }
    slot.deadline_in(test_and_grace + REPORT_SLACK);
    side.start()?;
    let (finished, aborted) = finish_side(stream, &spec, side)?;
    let mut report = finished.report;
    if let Some(u) = report.udp.as_mut() {
        u.foreign_datagrams = foreign.datagrams;
    }
    let report_cap = report_frame_cap(&spec);
    let figures = TestFigures {
        test: spec.netperf_name(),
        bytes: report.bytes_sent + report.bytes_received,
        transactions: report.transactions,
    };
    send_report(stream, finished.ending, aborted, report, report_cap, figures)
}

/// What a logged-in client asks for after the welcome.
enum Request {
    /// A test against this server, its spec resolved for this side.
    Test { spec: Box<TestSpec>, payload_file: Option<PayloadFile>, go_within_ms: Option<u64> },
    /// A third-party run against the agent at `peer_host`:`peer_port` (see [`third_party`]).
    ThirdParty { spec: Box<WireSpec>, peer_host: String, peer_port: u16, start: Option<Option<u64>> },
}

/// Reads the client's request, answering its clock probes on the way: a session has
/// [`SPEC_TIMEOUT`] to name its test.
fn read_request(stream: &TcpStream, cfg: &ServerConfig) -> Result<Request> {
    let mut w = stream;
    let spec_by = Instant::now() + SPEC_TIMEOUT;
    let mut probes = 0;
    loop {
        match read_frame_by(stream, "the test spec", spec_by, MAX_CLIENT_FRAME, None) {
            Ok(ClientMessage::Test { spec, clock_offset_ns, go_within_ms }) => {
                let (mut spec, file) = into_local(*spec, SpecSide::Remote, &cfg.payload_files)?;
                spec.clock_offset_ns = clock_offset_ns;
                if cfg.in_client_process {
                    spec.profile.enabled = false;
                }
                return Ok(Request::Test { spec: Box::new(spec), payload_file: file, go_within_ms });
            }
            Ok(ClientMessage::ThirdParty { spec, peer_host, peer_port, synchronized, start_within_ms }) => {
                let start = synchronized.then_some(start_within_ms);
                return Ok(Request::ThirdParty { spec, peer_host, peer_port, start });
            }
            Ok(ClientMessage::ClockProbe {}) if probes < MAX_CLOCK_PROBES => {
                probes += 1;
                write_frame(&mut w, &ServerMessage::ClockReply { server_ns: monotonic_ns() })?;
            }
            Ok(ClientMessage::ClockProbe {}) => {
                return Err(Error::Protocol(format!(
                    "more than {MAX_CLOCK_PROBES} clock probes in one session: send the test"
                )))
            }
            Ok(other) => return Err(out_of_order("test", &other)),
            Err(Error::Peer(_)) if Instant::now() >= spec_by => {
                return Err(Error::Peer(format!(
                    "no test spec within {} s of the welcome: a logged-in client must send its test at once",
                    SPEC_TIMEOUT.as_secs()
                )))
            }
            Err(e) => return Err(e),
        }
    }
}

/// Offers the test's data sockets (Ready) and takes the client's flows on them: its UDP
/// flows' hellos, its TCP connections, or for crr the listener that serves the whole test.
/// Datagrams from elsewhere are counted in `foreign`. With MPTCP flows, also their listener,
/// which must outlive the accepts: the kernel takes every later subflow's join on it.
fn open_data(
    stream: &TcpStream,
    local_ip: IpAddr,
    spec: &TestSpec,
    cookie: u64,
    peer: SocketAddr,
    events: &EventSink,
    foreign: &mut udp::Foreign,
) -> Result<(DataSockets, Option<socket2::Socket>)> {
    let mut w = stream;
    if spec.workload.is_udp() {
        let (socks, udp_ports) = udp::bind_flows(local_ip, spec)?;
        write_frame(&mut w, &ServerMessage::Ready { data_port: 0, cookie, udp_ports })?;
        let accepted = udp::accept_flows(&socks, cookie, peer.ip(), foreign);
        if let Some(first) = foreign.first {
            events(ServerEvent::ForeignDatagrams { peer, datagrams: foreign.datagrams, first });
        }
        accepted?;
        Ok((DataSockets::Flows(socks), None))
    } else {
        let listener = listen(local_ip, spec)?;
        let port = listener.local_addr().ok().and_then(|a| a.as_socket()).map(|a| a.port()).unwrap_or(0);
        write_frame(&mut w, &ServerMessage::Ready { data_port: port, cookie, udp_ports: Vec::new() })?;
        if spec.workload == Workload::Crr {
            // crr connects once per cycle: the listener serves the whole test.
            Ok((DataSockets::Listener { listener, cookie, peer }, None))
        } else {
            let flows = accept_flows(&listener, cookie, spec.connections(), peer.ip())?;
            Ok((DataSockets::Flows(flows), spec.socket.mptcp.then_some(listener)))
        }
    }
}

/// Ends the side when its run is over: at once for a test the window ends, or once the
/// client says its cycles are done (or asks to stop). Also says whether the client stopped it.
fn finish_side(stream: &TcpStream, spec: &TestSpec, side: Side) -> Result<(Finished, bool)> {
    // crr: the client stopped mid-run (Ctrl-C) and asked for what was measured.
    let mut aborted = false;
    if spec.client_says_flows_done() {
        // The client says when its last cycle (or its count) is done; until then
        // connections or datagrams keep coming.
        let wait = Duration::from_millis(spec.duration_ms)
            + Duration::from_nanos(ringperf_engine::workload::PEER_GRACE_NS);
        let done = read_frame_by::<ClientMessage>(
            stream,
            "the end of the client's cycles",
            Instant::now() + wait,
            MAX_CLIENT_FRAME,
            None,
        );
        // Stop the workers whatever came: on a failure they end with what is under way.
        side.signal_stop();
        match done {
            Ok(ClientMessage::FlowsDone {}) => {}
            Ok(ClientMessage::Abort {}) => aborted = true,
            Ok(other) => {
                let _ = side.finish();
                return Err(out_of_order("flows_done", &other));
            }
            Err(e) => {
                let _ = side.finish();
                return Err(e);
            }
        }
    }
    Ok((side.finish()?, aborted))
}

/// Sends the server's report when the client may have it: a completed test, or one the
/// client stopped; a client that went away mid-test gets nothing, and the session says why.
fn send_report(
    stream: &TcpStream,
    ending: Result<Ending>,
    aborted: bool,
    report: SideReport,
    report_cap: usize,
    figures: TestFigures,
) -> Result<SessionEnd> {
    let mut w = stream;
    match ending {
        // crr: the workers finished what was under way, stopped by the client.
        Ok(Ending::Completed) if aborted => {
            write_frame_capped(&mut w, &ServerMessage::Report { side: Box::new(report) }, report_cap)?;
            Ok(SessionEnd::Stopped(figures))
        }
        Ok(Ending::Completed) => {
            write_frame_capped(&mut w, &ServerMessage::Report { side: Box::new(report) }, report_cap)?;
            Ok(SessionEnd::Done(figures))
        }
        // Cut short: either the client asked (Abort: it gets what was measured) or it
        // is gone (EOF) and there is no one to report to.
        ending => {
            let deadline = Instant::now() + ABORT_WAIT;
            match read_frame_by::<ClientMessage>(stream, "the client's abort", deadline, MAX_CLIENT_FRAME, None) {
                Ok(ClientMessage::Abort {}) => {
                    write_frame_capped(&mut w, &ServerMessage::Report { side: Box::new(report) }, report_cap)?;
                    Ok(SessionEnd::Stopped(figures))
                }
                Ok(other) => Err(out_of_order("abort", &other)),
                Err(_) => Err(match ending {
                    Err(e) => e,
                    Ok(_) => Error::Peer(
                        "the client closed the control connection mid-test (stopped or killed); its flows are closed".into(),
                    ),
                }),
            }
        }
    }
}

/// The agent a third-party request names.
#[derive(Clone, Copy)]
struct Peer<'a> {
    host: &'a str,
    port: u16,
}

/// Runs a controller's third-party request: this agent runs the client side of `wire`
/// against `peer`, under this agent's own limits, and sends the whole report back.
fn third_party(
    a: &Authenticated,
    cfg: &ServerConfig,
    slot: &SessionSlot,
    events: &EventSink,
    wire: WireSpec,
    peer: Peer<'_>,
    // Synchronized (a plan's test), with how long the controller says its start may take.
    start: Option<Option<u64>>,
) -> Result<SessionEnd> {
    use crate::third_party::{check_peer_host, dial_peer, refused, serve, ALLOW_THIRD_PARTY};
    let target = format!("{}:{}", ringperf_core::text::peer_text(peer.host), peer.port);
    // The local side is this agent's: its payload label names a file of this agent's
    // operator, and its CPUs are checked where the run starts.
    let local = into_local(wire.clone(), SpecSide::Local, &cfg.payload_files);
    let test = local.as_ref().map_or("a test", |(s, _)| s.netperf_name());
    // A refusal says what was asked, so its log line reads as a refused third-party request.
    let refuse = |e: Error| refused(e, test, &target);
    if !cfg.allow_third_party {
        return Err(refuse(Error::Peer(format!(
            "this agent does not run tests against other agents: its operator must start it with `ringperf serve {ALLOW_THIRD_PARTY} {} FILE`",
            Setting::PskFile.token()
        ))));
    }
    let Some(psk) = cfg.psk.as_ref() else {
        return Err(refuse(Error::Peer(format!(
            "this agent takes third-party work only with a key: its operator must start it with `ringperf serve {ALLOW_THIRD_PARTY} {} FILE`",
            Setting::PskFile.token()
        ))));
    };
    check_peer_host(peer.host).map_err(refuse)?;
    let (spec, payload_file) = local.map_err(refuse)?;
    let spec = &spec;
    let _reservation = accept(spec, cfg, slot, a.peer, events, false).map_err(refuse)?;
    // The run as a client keeps to its own bounds; this is the controller's.
    let armed = crate::third_party::armed_wait(start.flatten());
    slot.deadline_in(crate::third_party::report_wait(spec, armed) + REPORT_SLACK);
    // Resolved once: the address logged is the one logged in to and sent data to.
    let dialled = dial_peer(peer.host, peer.port)?;
    events(ServerEvent::ThirdParty { peer: a.peer, test, target, address: dialled.addr });
    log_payload_file(payload_file, a.peer, events);
    let report = serve(&a.stream, &wire, spec, dialled, start.is_some(), start.flatten(), Some(psk))?;
    let figures = TestFigures {
        test: spec.netperf_name(),
        bytes: report.local.bytes_sent + report.local.bytes_received,
        transactions: report.local.transactions,
    };
    Ok(if report.partial { SessionEnd::Stopped(figures) } else { SessionEnd::Done(figures) })
}

/// Checks a spec against the protocol and the operator's limits and reserves its payload
/// memory for as long as the returned reservation lives. `serving`: this host runs the
/// server side, whose CPUs are the spec's remote ones.
fn accept<'a>(
    spec: &TestSpec,
    cfg: &ServerConfig,
    slot: &'a SessionSlot,
    peer: SocketAddr,
    events: &EventSink,
    serving: bool,
) -> Result<Reservation<'a>> {
    spec.validate()?;
    // A third-party run holds the client side's buffers, not the server's.
    cfg.limits.check_side(spec, !serving)?;
    for &cpu in spec.remote.cpus.iter().filter(|_| serving) {
        check_cpu(cpu, "remote")?;
    }
    let memory = side_memory(spec, !serving);
    let r = slot.reserve(memory, cfg.limits.max_total_memory)?;
    if let Some(w) = &slot.watch {
        w.testing(spec.netperf_name());
    }
    events(ServerEvent::TestAccepted {
        peer,
        test: spec.netperf_name(),
        client_side: !serving,
        memory,
        in_use: r.in_use,
        budget: cfg.limits.max_total_memory,
        running: r.running,
    });
    Ok(r)
}

/// Names the listed file an accepted test sends, and for whom.
fn log_payload_file(file: Option<PayloadFile>, peer: SocketAddr, events: &EventSink) {
    if let Some(PayloadFile { label, path }) = file {
        events(ServerEvent::PayloadFile { peer, label, path });
    }
}

fn out_of_order(expected: &str, got: &ClientMessage) -> Error {
    Error::Protocol(format!("expected a '{expected}' message, got '{}'", handshake::name(got)))
}
