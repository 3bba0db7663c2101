//! `ringperf serve`: accepts control connections, takes each through its handshake on the
//! accept thread (see `handshake`), and runs each authenticated session on its own thread,
//! isolated from the others. A failed session gets an error reply and is closed; the
//! server keeps serving. Threads, descriptors and memory are bounded by the limits:
//! `max_handshakes` connections in their handshake, `max_sessions` sessions.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::control::access::{allowed, Cidr};
use crate::control::auth::{Party, Psk};
use crate::control::handshake::{self, Authenticated, Pending, Step};
use crate::control::limits::Limits;
use crate::control::protocol::{
    read_frame_by, write_frame, ClientMessage, ErrorKind, ServerMessage, MAX_CLIENT_FRAME, PROTOCOL_VERSION,
};
use crate::env::{allowed_cpus, Environment};
use crate::error::{Error, Result};
use crate::net::{accept_flows, listen, random_cookie, udp};
use crate::side::{DataSockets, Side};
use crate::spec::Workload;
use crate::workload::Ending;

/// How long the server waits for each control message of a session before the test starts.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a session whose run was cut short waits for the client's Abort before it
/// decides the client is gone.
const ABORT_WAIT: Duration = Duration::from_millis(500);

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
    /// A connection closed before it became a session: not on the allow list, a failed
    /// or timed-out handshake, a wrong key, or the server at its session limit.
    Rejected {
        peer: SocketAddr,
        reason: String,
    },
    Stopping {
        sessions: usize,
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
}

/// A bound control listener.
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    config: Arc<ServerConfig>,
}

impl Server {
    pub fn bind(addr: SocketAddr) -> Result<Server> {
        let listener = TcpListener::bind(addr).map_err(|e| match e.kind() {
            io::ErrorKind::AddrInUse => Error::Usage(format!(
                "{addr} is already in use: is another `ringperf serve` running? Pick another --port"
            )),
            io::ErrorKind::AddrNotAvailable => {
                Error::Usage(format!("{} is not an address of this host: check --bind", addr.ip()))
            }
            _ => Error::io(format!("binding the control port {addr}"), e),
        })?;
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
        let live = Arc::new(AtomicUsize::new(0));
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
                match p.on_readable(cfg.psk.as_ref()) {
                    Step::Wait => keep.push(p),
                    Step::Refuse { reason, reply } => {
                        events(ServerEvent::Rejected { peer: p.peer(), reason });
                        p.close_with(reply);
                    }
                    Step::Done(a) => {
                        drop(p);
                        start_session(*a, cfg, &live, &mut sessions, &events);
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
            sessions.retain(|h| !h.is_finished());
        }
        for p in pending {
            p.close_with(Some((ErrorKind::Peer, "the server is shutting down".into())));
        }
        sessions.retain(|h| !h.is_finished());
        events(ServerEvent::Stopping { sessions: sessions.len() });
        for h in sessions {
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
            if !allowed(&cfg.allow, peer.ip()) {
                drop(stream);
                events(ServerEvent::Rejected { peer, reason: "not in the --allow list: closed".into() });
                continue;
            }
            if pending.len() >= cfg.limits.max_handshakes.max(1) {
                let oldest = pending.remove(0);
                let reason = format!(
                    "closed to make room: {} connections were in their handshake (--max-handshakes)",
                    cfg.limits.max_handshakes
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
/// already runs `max_sessions` of them.
fn start_session(
    a: Authenticated,
    cfg: &Arc<ServerConfig>,
    live: &Arc<AtomicUsize>,
    sessions: &mut Vec<JoinHandle<()>>,
    events: &EventSink,
) {
    let max = cfg.limits.max_sessions;
    if live.load(Ordering::Acquire) >= max {
        let reason = format!(
            "the server is running {max} tests, its --max-sessions limit: try again when one has finished"
        );
        events(ServerEvent::Rejected { peer: a.peer, reason: reason.clone() });
        let mut stream = a.stream;
        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = write_frame(&mut stream, &ServerMessage::Error { kind: ErrorKind::Peer, message: reason });
        return;
    }
    live.fetch_add(1, Ordering::AcqRel);
    let (cfg, live2, events2) = (cfg.clone(), live.clone(), events.clone());
    let spawned = thread::Builder::new().name("ringperf-session".into()).spawn(move || {
        run_session(a, &cfg, &events2);
        live2.fetch_sub(1, Ordering::AcqRel);
    });
    match spawned {
        Ok(h) => sessions.push(h),
        // The closure (and the connection) is dropped: the client sees the close.
        Err(_) => {
            live.fetch_sub(1, Ordering::AcqRel);
        }
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

fn run_session(a: Authenticated, cfg: &ServerConfig, events: &EventSink) {
    let peer = a.peer;
    events(ServerEvent::SessionStarted { peer });
    match session(&a, cfg) {
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
            let reply = ServerMessage::Error { kind: ErrorKind::of(&e), message: e.to_string() };
            let mut s = &a.stream;
            let _ = write_frame(&mut s, &reply);
            events(ServerEvent::SessionFailed { peer, error: e.to_string() });
        }
    }
}

/// Runs one test for one authenticated client.
fn session(a: &Authenticated, cfg: &ServerConfig) -> Result<SessionEnd> {
    let stream: &TcpStream = &a.stream;
    let mut w = stream;
    stream.set_write_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| Error::io("setting a write timeout", e))?;
    let local_ip = stream.local_addr().map_err(|e| Error::io("reading the control address", e))?.ip();
    let by = || Instant::now() + CONTROL_TIMEOUT;

    let proof = cfg.psk.as_ref().map(|k| k.proof(Party::Server, &a.server_nonce, &a.client_nonce));
    write_frame(
        &mut w,
        &ServerMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            environment: Box::new(Environment::capture()),
            proof,
        },
    )?;

    let spec = match read_frame_by(stream, "the test spec", by(), MAX_CLIENT_FRAME, None)? {
        ClientMessage::Test { spec } => spec,
        other => return Err(out_of_order("test", &other)),
    };
    spec.validate()?;
    cfg.limits.check(&spec)?;
    for &cpu in &spec.remote.cpus {
        check_cpu(cpu, "remote")?;
    }

    let cookie = random_cookie();
    // UDP: the descriptors that echo late hellos until `Go` (see net::udp).
    let mut udp_fds = Vec::new();
    let data = if spec.workload.is_udp() {
        let (socks, udp_ports) = udp::bind_flows(local_ip, &spec)?;
        write_frame(&mut w, &ServerMessage::Ready { data_port: 0, cookie, udp_ports })?;
        udp::accept_flows(&socks, cookie)?;
        udp_fds = socks.iter().map(AsRawFd::as_raw_fd).collect();
        DataSockets::Flows(socks)
    } else {
        let listener = listen(local_ip, &spec)?;
        let port = listener.local_addr().ok().and_then(|a| a.as_socket()).map(|a| a.port()).unwrap_or(0);
        write_frame(&mut w, &ServerMessage::Ready { data_port: port, cookie, udp_ports: Vec::new() })?;
        if spec.workload == Workload::Crr {
            // crr connects once per cycle: the listener serves the whole test.
            DataSockets::Listener { listener, cookie, peer: a.peer }
        } else {
            DataSockets::Flows(accept_flows(&listener, cookie, spec.connections(), a.peer.ip())?)
        }
    };

    let controls = (None, Some(stream.as_raw_fd()), cfg.limits.max_rate_bps);
    let mut side = Side::prepare_data(&spec, &spec.group_roles(false), &spec.remote, data, controls)?;
    write_frame(&mut w, &ServerMessage::Armed)?;
    if !udp_fds.is_empty() {
        // The side owns the sockets now; it only uses them once the window opens.
        udp::echo_hellos_until(&udp_fds, cookie, stream.as_raw_fd())?;
    }
    match read_frame_by(stream, "go", by(), MAX_CLIENT_FRAME, None)? {
        ClientMessage::Go => {}
        other => return Err(out_of_order("go", &other)),
    }
    side.start()?;
    // crr: the client stopped mid-run (Ctrl-C) and asked for what was measured.
    let mut aborted = false;
    if spec.workload == Workload::Crr {
        // The client says when its last cycle is done; until then connections keep coming.
        let wait =
            Duration::from_millis(spec.duration_ms) + Duration::from_nanos(crate::workload::PEER_GRACE_NS);
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
            Ok(ClientMessage::FlowsDone) => {}
            Ok(ClientMessage::Abort) => aborted = true,
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
    let finished = side.finish()?;
    let report = finished.report;
    let figures = TestFigures {
        test: spec.netperf_name(),
        bytes: report.bytes_sent + report.bytes_received,
        transactions: report.transactions,
    };
    match finished.ending {
        // crr: the workers finished what was under way, stopped by the client.
        Ok(Ending::Completed) if aborted => {
            write_frame(&mut w, &ServerMessage::Report { side: Box::new(report) })?;
            Ok(SessionEnd::Stopped(figures))
        }
        Ok(Ending::Completed) => {
            write_frame(&mut w, &ServerMessage::Report { side: Box::new(report) })?;
            Ok(SessionEnd::Done(figures))
        }
        // Cut short: either the client asked (Abort: it gets what was measured) or it
        // is gone (EOF) and there is no one to report to.
        ending => {
            let deadline = Instant::now() + ABORT_WAIT;
            match read_frame_by::<ClientMessage>(stream, "the client's abort", deadline, MAX_CLIENT_FRAME, None) {
                Ok(ClientMessage::Abort) => {
                    write_frame(&mut w, &ServerMessage::Report { side: Box::new(report) })?;
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

fn out_of_order(expected: &str, got: &ClientMessage) -> Error {
    Error::Protocol(format!("expected a '{expected}' message, got '{}'", handshake::name(got)))
}

/// Checks that `cpu` exists and this process may run on it.
pub fn check_cpu(cpu: usize, side: &str) -> Result<()> {
    let allowed = allowed_cpus();
    if allowed.contains(&cpu) {
        return Ok(());
    }
    let list: Vec<String> = allowed.iter().map(|c| c.to_string()).collect();
    Err(Error::Usage(format!(
        "CPU {cpu} does not exist on the {side} host or is outside its affinity mask (usable: {}): pick one of those for -T",
        list.join(",")
    )))
}
