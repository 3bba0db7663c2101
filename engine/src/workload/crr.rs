//! TCP_CRR: connect, request, response, close, repeated per flow until the deadline.
//!
//! The request and response payload go through the copy send and receive paths, on the
//! socket each op names ([`CopySend::push_on`], [`CopyRecv::arm_on`]); socket, connect,
//! accept and close are crr's own ops.
//!
//! Client, per cycle: an io_uring Socket op, then one linked chain Connect -> Send (cookie,
//! flow, request) -> Recv (response, MSG_WAITALL) -> Close. Connect, Send and Recv skip their
//! CQE on success, so a good cycle costs two CQEs: the socket's and the close's. The chain
//! cannot start with the Socket op: the later ops need its descriptor, which only a direct
//! (fixed-table) descriptor would give up front, and a direct descriptor cannot take the
//! plain setsockopt/bind calls that SO_LINGER and --client-ports need. Those are two
//! syscalls on the socket the Socket op made; nothing is allocated per cycle.
//!
//! Server: one multishot Accept per worker on the session's listener (every worker shares
//! it); per connection a Recv of the header and request, then a linked Send (response) ->
//! Recv that completes when the client closes, then Close. A connection counts when the
//! client closed after a whole response, the same moment the client counts it. The client
//! tells the session when all its cycles are done (after its deadline); the session then
//! signals every server worker through an eventfd that each ring polls.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

use io_uring::squeue::Flags;
use io_uring::{opcode, types};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::error::{Error, Result};
use crate::io::op;
use crate::io::recv::CopyRecv;
use crate::io::send::CopySend;
use crate::measure::clock::monotonic_ns;
use crate::net::FLOW_HEADER_LEN;
use crate::report::CrrReport;
use crate::ring::{cqe_error, slot_token, token, Completion, FlowFd, Ring};
use crate::spec::{CrrOptions, TestSpec};
use crate::with_fd;
use crate::workload::driver::{RoleReport, Run, Timers, Workload};
use crate::workload::Ending;

/// One socket option, with its value already encoded, so applying it allocates nothing.
pub(crate) struct SockOpt {
    level: i32,
    name: i32,
    value: Vec<u8>,
    what: &'static str,
}

impl SockOpt {
    fn int(level: i32, name: i32, v: i32, what: &'static str) -> SockOpt {
        SockOpt { level, name, value: v.to_ne_bytes().to_vec(), what }
    }

    pub(crate) fn apply(&self, fd: RawFd) -> Result<()> {
        // SAFETY: the value buffer is valid for its length during the call.
        let r = unsafe {
            libc::setsockopt(
                fd,
                self.level,
                self.name,
                self.value.as_ptr().cast(),
                self.value.len() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(Error::io(
                format!("setting {} on a crr client socket", self.what),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }
}

/// The spec's options for every client socket, encoded once.
pub(crate) fn client_options(spec: &TestSpec, v6: bool) -> Vec<SockOpt> {
    let mut out = Vec::new();
    let s = &spec.socket;
    let b = &spec.local.socket_buffers;
    if let Some(n) = b.send {
        out.push(SockOpt::int(libc::SOL_SOCKET, libc::SO_SNDBUF, n as i32, "SO_SNDBUF"));
    }
    if let Some(n) = b.recv {
        out.push(SockOpt::int(libc::SOL_SOCKET, libc::SO_RCVBUF, n as i32, "SO_RCVBUF"));
    }
    if let Some(cc) = &spec.congestion_control {
        out.push(SockOpt {
            level: libc::IPPROTO_TCP,
            name: libc::TCP_CONGESTION,
            value: cc.as_bytes().to_vec(),
            what: "TCP_CONGESTION",
        });
    }
    if let Some(m) = s.mss {
        out.push(SockOpt::int(libc::IPPROTO_TCP, libc::TCP_MAXSEG, m as i32, "TCP_MAXSEG"));
    }
    if s.nodelay {
        out.push(SockOpt::int(libc::IPPROTO_TCP, libc::TCP_NODELAY, 1, "TCP_NODELAY"));
    }
    if let Some(tos) = s.tos {
        out.push(if v6 {
            SockOpt::int(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, i32::from(tos), "IPV6_TCLASS")
        } else {
            SockOpt::int(libc::IPPROTO_IP, libc::IP_TOS, i32::from(tos), "IP_TOS")
        });
    }
    if let Some(bps) = s.max_pacing_rate_bps {
        out.push(SockOpt {
            level: libc::SOL_SOCKET,
            name: libc::SO_MAX_PACING_RATE,
            value: (bps / 8).max(1).to_ne_bytes().to_vec(),
            what: "SO_MAX_PACING_RATE",
        });
    }
    if spec.crr.linger0 {
        let l = libc::linger { l_onoff: 1, l_linger: 0 };
        let mut value = vec![0u8; std::mem::size_of::<libc::linger>()];
        value[..4].copy_from_slice(&l.l_onoff.to_ne_bytes());
        value[4..8].copy_from_slice(&l.l_linger.to_ne_bytes());
        out.push(SockOpt { level: libc::SOL_SOCKET, name: libc::SO_LINGER, value, what: "SO_LINGER 0" });
    }
    if spec.crr.client_ports.is_some() {
        // A port whose last connection is in TIME_WAIT can be bound again; connect then
        // decides (tcp_tw_reuse) whether the 4-tuple may be reused.
        out.push(SockOpt::int(libc::SOL_SOCKET, libc::SO_REUSEADDR, 1, "SO_REUSEADDR"));
    }
    out
}

/// A socket with the options every client cycle's socket gets, applied the same way, for
/// the report: the cycles' own sockets come and go inside the window, and reading one
/// there would cost the cycle a syscall. Like netperf, the report then gives the sizes a
/// socket has before it connects (what -s asked for, doubled by Linux, or the defaults).
pub fn client_socket(spec: &TestSpec, peer: SocketAddr) -> Result<Socket> {
    let sock = Socket::new(Domain::for_address(peer), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| Error::io("creating a crr client socket", e))?;
    for o in client_options(spec, peer.is_ipv6()) {
        o.apply(sock.as_raw_fd())?;
    }
    Ok(sock)
}

/// The 12-byte header every crr connection starts with, like a stream's data connection.
pub(crate) fn header(cookie: u64, flow: u32) -> [u8; FLOW_HEADER_LEN] {
    let mut h = [0u8; FLOW_HEADER_LEN];
    h[..8].copy_from_slice(&cookie.to_le_bytes());
    h[8..].copy_from_slice(&flow.to_le_bytes());
    h
}

/// A cycle's failure that is not an errno: the response ended early.
const TORN: i32 = -libc::EPROTO;

/// How long a stopped client waits for the cycles it cancelled to come back, so that it
/// closes their sockets itself. A cancel comes back within one ring round trip; a cycle
/// still out after this is left to the ring's teardown, its socket to the process's exit.
const ABORT_DRAIN_NS: u64 = 100_000_000;

struct Cycle {
    fd: RawFd,
    started: u64,
}

/// The client side of one worker: its flows' cycles and their buffers.
pub struct CrrClient {
    peer: Box<SockAddr>,
    /// The unspecified address of the peer's family: what --client-ports binds to.
    local: SockAddr,
    domain: i32,
    /// Sends each flow's header plus request, written once.
    send: CopySend,
    request_len: usize,
    /// Receives the response; every flow's lands in one buffer nobody reads.
    recv: CopyRecv,
    response_len: usize,
    options: Vec<SockOpt>,
    ports: Option<(u16, u16)>,
    next_port: u32,
    cycles: Vec<Cycle>,
    /// Cycles under way (after the deadline or a stop, none starts).
    active: usize,
    /// A stop came: cycles under way are being cancelled.
    aborting: bool,
    report: CrrReport,
}

impl CrrClient {
    /// `flow_ids`: the global flow numbers of this worker's flows (they go in the header).
    pub fn new(spec: &TestSpec, peer: SocketAddr, cookie: u64, flow_ids: &[u32]) -> Result<CrrClient> {
        let request_len = FLOW_HEADER_LEN + spec.request_size as usize;
        let headers: Vec<_> = flow_ids.iter().map(|&g| header(cookie, g)).collect();
        let response_len = spec.response_size as usize;
        let CrrOptions { linger0, client_ports } = spec.crr;
        // Each worker starts at its own place in the port range, so workers rarely collide.
        let next_port = flow_ids.first().copied().unwrap_or(0);
        Ok(CrrClient {
            peer: Box::new(SockAddr::from(peer)),
            local: SockAddr::from(match peer {
                SocketAddr::V4(_) => SocketAddr::from(([0u8; 4], 0)),
                SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
            }),
            domain: if peer.is_ipv6() { libc::AF_INET6 } else { libc::AF_INET },
            send: CopySend::framed(&headers, spec.request_size as usize)?,
            request_len,
            recv: CopyRecv::per_op(flow_ids.len(), response_len, false)?,
            response_len,
            options: client_options(spec, peer.is_ipv6()),
            ports: client_ports,
            next_port,
            cycles: flow_ids.iter().map(|_| Cycle { fd: -1, started: 0 }).collect(),
            active: 0,
            aborting: false,
            report: CrrReport { linger0, ..CrrReport::default() },
        })
    }

    fn begin(&mut self, ring: &mut Ring, f: usize, now: u64) -> Result<()> {
        let c = &mut self.cycles[f];
        c.started = now;
        c.fd = -1;
        let e = opcode::Socket::new(self.domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, libc::IPPROTO_TCP)
            .build()
            .user_data(token(op::SOCKET, f));
        // SAFETY: the Socket op points at no memory.
        unsafe { ring.push(&e) }
    }

    /// Binds `fd` to the next free port of --client-ports.
    fn bind_port(&mut self, fd: RawFd, lo: u16, hi: u16) -> Result<()> {
        let span = u32::from(hi - lo) + 1;
        let mut local = self.local.clone();
        for _ in 0..span {
            let port = lo + (self.next_port % span) as u16;
            self.next_port = self.next_port.wrapping_add(1);
            set_port(&mut local, port);
            // SAFETY: `local` is a valid socket address of the length it states.
            let r = unsafe { libc::bind(fd, local.as_ptr().cast(), local.len()) };
            if r == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EADDRINUSE) {
                return Err(Error::io(format!("binding a crr client socket to port {port}"), e));
            }
            self.report.port_busy += 1;
        }
        Err(Error::Usage(format!(
            "every port of --client-ports {lo}-{hi} is in use: widen the range, use fewer flows or --linger0"
        )))
    }

    /// The socket exists: set it up and queue connect -> send -> receive -> close.
    fn chain(&mut self, ring: &mut Ring, f: usize, fd: RawFd) -> Result<()> {
        self.cycles[f].fd = fd;
        for o in &self.options {
            o.apply(fd)?;
        }
        if let Some((lo, hi)) = self.ports {
            self.bind_port(fd, lo, hi)?;
        }
        let t = types::Fd(fd);
        let link = Flags::IO_LINK | Flags::SKIP_SUCCESS;
        let connect = opcode::Connect::new(t, self.peer.as_ptr().cast(), self.peer.len())
            .build()
            .user_data(token(op::CONNECT, f))
            .flags(link);
        // SAFETY: the peer's address lives in self, which the worker drops after the ring.
        unsafe { ring.push(&connect)? };
        // The paths push straight after it, so the chain's SQEs stay in order.
        let sock = FlowFd::Raw(fd);
        self.send.push_on(ring, sock, f, token(op::SEND, f), 0, self.request_len as u32, link)?;
        self.recv.arm_on(ring, sock, f, token(op::RECV, f), self.response_len as u32, true, link)?;
        let close = opcode::Close::new(t).build().user_data(token(op::CLOSE, f));
        // SAFETY: Close points at no memory.
        unsafe { ring.push(&close) }
    }

    /// Cancels every op on the sockets of the cycles whose chain is under way; each such
    /// cycle then ends with the CQE of its op that failed (or of its close, if it won).
    fn cancel_cycles(&self, ring: &mut Ring) -> Result<()> {
        for (f, c) in self.cycles.iter().enumerate().filter(|(_, c)| c.fd >= 0) {
            let e = opcode::AsyncCancel2::new(types::CancelBuilder::fd(types::Fd(c.fd)).all())
                .build()
                .user_data(token(op::CANCEL, f));
            // SAFETY: AsyncCancel points at no memory.
            unsafe { ring.push(&e)? };
        }
        Ok(())
    }

    /// A cycle ends with exactly one CQE: its close's, or that of the op whose failure
    /// broke the chain.
    fn cycle_ended(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<()> {
        let f = c.flow();
        let failed = if c.op() == op::CLOSE {
            0
        } else {
            // A skip-success op posts its CQE only when it failed or came up short, and
            // then the ops linked after it post none (REQ_F_SKIP_LINK_CQES): the close
            // never ran, so close here.
            // SAFETY: the descriptor belongs to this cycle and no op uses it now.
            unsafe { libc::close(self.cycles[f].fd) };
            if c.result >= 0 {
                TORN
            } else {
                c.result
            }
        };
        // Closed: a stop must not cancel by this number, now free for reuse.
        self.cycles[f].fd = -1;
        let now = monotonic_ns();
        if failed == 0 {
            run.sampler.record(now - self.cycles[f].started);
            let k = &mut run.counters[f];
            k.transactions += 1;
            k.bytes_sent += self.request_len as u64 - FLOW_HEADER_LEN as u64;
            k.bytes_received += self.response_len as u64;
            self.report.connections += 1;
        } else if self.aborting {
            // Cancelled by the stop (or failed meanwhile): not an error.
        } else if self.ports.is_some() && matches!(-failed, libc::EADDRNOTAVAIL | libc::EADDRINUSE) {
            self.report.port_busy += 1;
        } else {
            return Err(cycle_error(failed, self.ports.is_some()));
        }
        if run.stopping {
            self.active -= 1;
        } else {
            self.begin(ring, f, now)?;
        }
        Ok(())
    }
}

/// Runs cycles on every flow until the deadline; cycles under way then are finished. A
/// stop ends it at once: no cycle starts, those under way are cancelled (and not
/// counted), and their sockets are closed as they come back, for at most ABORT_DRAIN_NS.
impl Workload for CrrClient {
    fn timers(&self) -> Timers {
        // The guard is armed only by a stop (see `on_abort`).
        Timers { deadline: true, guard: false }
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        let now = monotonic_ns();
        for f in 0..self.cycles.len() {
            self.begin(ring, f, now)?;
        }
        self.active = self.cycles.len();
        Ok(())
    }

    fn done(&self, run: &Run) -> bool {
        run.stopping && self.active == 0
    }

    fn on_abort(&mut self, ring: &mut Ring, run: &mut Run) -> Result<Option<Ending>> {
        run.stopping = true;
        self.aborting = true;
        self.cancel_cycles(ring)?;
        ring.push_deadline(monotonic_ns() + ABORT_DRAIN_NS, token(op::GUARD, 0))?;
        Ok(None)
    }

    fn on_guard(&mut self) -> Result<Ending> {
        // Only a stop arms it: some cancelled cycle did not come back in time.
        Ok(Ending::Aborted)
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            op::CANCEL => {}
            op::SOCKET if self.aborting => {
                // The cycle was only starting: its socket is not used.
                if c.result >= 0 {
                    // SAFETY: the ring just made this descriptor for this cycle alone.
                    unsafe { libc::close(c.result) };
                }
                self.active -= 1;
            }
            op::SOCKET => {
                if c.result < 0 {
                    return Err(cqe_error("creating a crr client socket (raise `ulimit -n`?)", c.result));
                }
                self.chain(ring, c.flow(), c.result)?;
            }
            op::CONNECT | op::SEND | op::RECV | op::CLOSE => self.cycle_ended(ring, c, run)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn finish(&mut self, _run: &Run) -> Result<Ending> {
        Ok(if self.aborting { Ending::Aborted } else { Ending::Completed })
    }

    fn report(&self) -> RoleReport {
        RoleReport { crr: Some(self.report.clone()), ..RoleReport::default() }
    }
}

pub(crate) fn set_port(addr: &mut SockAddr, port: u16) {
    let p = port.to_be();
    // SAFETY: the storage holds a sockaddr_in or sockaddr_in6 as its family says; the port
    // field sits at the same offset in both.
    unsafe {
        let sa = addr.as_ptr() as *mut libc::sockaddr_in;
        (*sa).sin_port = p;
    }
}

fn cycle_error(res: i32, ports: bool) -> Error {
    match -res {
        libc::EADDRNOTAVAIL => Error::Peer(if ports {
            "no usable client port left".into()
        } else {
            "connect failed with EADDRNOTAVAIL: the client's ephemeral ports are used up by TIME_WAIT; use --linger0, --client-ports LO-HI, a shorter test, or net.ipv4.tcp_tw_reuse=1".into()
        }),
        libc::EPROTO => {
            Error::Peer("the server closed a crr connection before its whole response arrived".into())
        }
        libc::ECONNREFUSED => Error::Peer(
            "the server refused a crr connection: its listener is gone (did the server stop?)".into(),
        ),
        _ => cqe_error("a crr connection cycle", res),
    }
}

/// One accepted connection on the server.
struct Conn {
    fd: RawFd,
    flow: u32,
}

/// The server side of one worker: accepts on the shared listener, answers every cycle.
pub struct CrrServer {
    listener: FlowFd,
    cookie: u64,
    flows: usize,
    /// Receives each connection slot's header plus request into the slot's own buffer.
    recv: CopyRecv,
    request_len: usize,
    /// Sends every response (the pattern).
    send: CopySend,
    response_len: usize,
    /// Per slot: one byte the client's close completes (it never carries data).
    eof: Vec<u8>,
    conns: Vec<Conn>,
    free: Vec<u32>,
    stop: RawFd,
    /// Connections under way.
    active: usize,
    /// The multishot accept is still armed.
    accepting: bool,
    report: CrrReport,
}

impl CrrServer {
    /// `stop`: an eventfd the session writes when the client has finished its cycles.
    pub fn new(spec: &TestSpec, listener: FlowFd, cookie: u64, stop: RawFd) -> Result<CrrServer> {
        // One slot per flow is enough for the client (one cycle in flight per flow); the
        // rest absorbs strangers and connections whose close is still under way.
        let slots = spec.flows as usize * 2 + 16;
        let request_len = FLOW_HEADER_LEN + spec.request_size as usize;
        let response_len = spec.response_size as usize;
        Ok(CrrServer {
            listener,
            cookie,
            flows: spec.flows as usize,
            recv: CopyRecv::per_op(slots, request_len, true)?,
            request_len,
            send: CopySend::new(&[], response_len)?,
            response_len,
            eof: vec![0u8; slots],
            conns: (0..slots).map(|_| Conn { fd: -1, flow: 0 }).collect(),
            free: (0..slots as u32).rev().collect(),
            stop,
            active: 0,
            accepting: false,
            report: CrrReport { linger0: spec.crr.linger0, ..CrrReport::default() },
        })
    }

    /// Most CQEs this side can have outstanding: per slot a receive, a failed send and
    /// the close wait, plus accepts.
    pub fn max_cqes(spec: &TestSpec) -> usize {
        (spec.flows as usize * 2 + 16) * 3 + 16
    }

    fn arm_accept(&mut self, ring: &mut Ring) -> Result<()> {
        let e =
            with_fd!(self.listener, |t| opcode::AcceptMulti::new(t).build().user_data(token(op::ACCEPT, 0)));
        // SAFETY: AcceptMulti without an address points at no memory.
        unsafe { ring.push(&e) }
    }

    fn close(ring: &mut Ring, fd: RawFd) -> Result<()> {
        let e = opcode::Close::new(types::Fd(fd))
            .build()
            .user_data(token(op::CLOSE, 0))
            .flags(Flags::SKIP_SUCCESS);
        // SAFETY: Close points at no memory.
        unsafe { ring.push(&e) }
    }

    fn release(&mut self, ring: &mut Ring, slot: usize) -> Result<()> {
        let fd = std::mem::replace(&mut self.conns[slot].fd, -1);
        self.free.push(slot as u32);
        Self::close(ring, fd)
    }

    fn accepted(&mut self, ring: &mut Ring, fd: RawFd, stopping: bool) -> Result<bool> {
        let Some(slot) = (!stopping).then(|| self.free.pop()).flatten() else {
            self.report.rejected += 1;
            Self::close(ring, fd)?;
            return Ok(false);
        };
        let slot = slot as usize;
        self.conns[slot] = Conn { fd, flow: 0 };
        let user_data = slot_token(op::RECV, 0, slot);
        self.recv.arm_on(
            ring,
            FlowFd::Raw(fd),
            slot,
            user_data,
            self.request_len as u32,
            true,
            Flags::empty(),
        )?;
        Ok(true)
    }

    fn request(&mut self, ring: &mut Ring, slot: usize, res: i32) -> Result<bool> {
        let buf = self.recv.landed(slot, self.request_len);
        let cookie = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
        let flow = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes"));
        if res != self.request_len as i32 || cookie != self.cookie || flow as usize >= self.flows {
            self.report.rejected += 1;
            self.release(ring, slot)?;
            return Ok(false);
        }
        self.conns[slot].flow = flow;
        let fd = self.conns[slot].fd;
        let link = Flags::IO_LINK | Flags::SKIP_SUCCESS;
        let user_data = slot_token(op::SEND, 0, slot);
        self.send.push_on(ring, FlowFd::Raw(fd), slot, user_data, 0, self.response_len as u32, link)?;
        let wait = opcode::Recv::new(types::Fd(fd), self.eof[slot..].as_mut_ptr(), 1)
            .build()
            .user_data(slot_token(op::PEER_CLOSE, 0, slot));
        // SAFETY: the slot's byte lives in self, dropped only after the ring.
        unsafe { ring.push(&wait) }?;
        Ok(true)
    }
}

/// Serves connections until the stop signal, then until every one under way is done. The
/// counters have an entry per flow of the test (any worker may serve any flow). Its stop
/// comes through the stop eventfd, not the watch: the control connection also carries the
/// client's FlowsDone mid-run, which would look like a stop.
impl Workload for CrrServer {
    fn timers(&self) -> Timers {
        Timers { deadline: false, guard: true }
    }

    fn watches(&self) -> bool {
        false
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        let poll = opcode::PollAdd::new(types::Fd(self.stop), libc::POLLIN as u32)
            .build()
            .user_data(token(op::STOP, 0));
        // SAFETY: PollAdd points at no memory; the eventfd outlives the ring's use of it.
        unsafe { ring.push(&poll)? };
        self.arm_accept(ring)?;
        self.accepting = true;
        Ok(())
    }

    fn done(&self, run: &Run) -> bool {
        run.stopping && self.active == 0 && !self.accepting
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            op::STOP => {
                run.stopping = true;
                let e =
                    opcode::AsyncCancel::new(token(op::ACCEPT, 0)).build().user_data(token(op::CANCEL, 0));
                // SAFETY: AsyncCancel points at no memory.
                unsafe { ring.push(&e)? };
            }
            op::CANCEL | op::CLOSE => {}
            op::ACCEPT => {
                if c.result >= 0 && self.accepted(ring, c.result, run.stopping)? {
                    self.active += 1;
                } else if c.result < 0
                    && !matches!(-c.result, libc::ECANCELED | libc::ECONNABORTED | libc::EINTR)
                {
                    return Err(cqe_error("accepting a crr connection", c.result));
                }
                if !c.more() {
                    if run.stopping {
                        self.accepting = false;
                    } else {
                        self.arm_accept(ring)?;
                    }
                }
            }
            op::RECV => {
                if !self.request(ring, c.slot(), c.result)? {
                    self.active -= 1;
                }
            }
            op::SEND => {
                // The response failed or went short (a skip-success send posts only then),
                // and the close wait linked after it then posts no CQE
                // (REQ_F_SKIP_LINK_CQES): the connection ends here.
                self.report.rejected += 1;
                self.release(ring, c.slot())?;
                self.active -= 1;
            }
            op::PEER_CLOSE => {
                let slot = c.slot();
                let conn = &self.conns[slot];
                // The client closes after the whole response: EOF, or a reset with --linger0.
                let closed = c.result >= 0 || c.result == -libc::ECONNRESET;
                if closed {
                    let k = &mut run.counters[conn.flow as usize];
                    k.transactions += 1;
                    k.bytes_received += self.request_len as u64 - FLOW_HEADER_LEN as u64;
                    k.bytes_sent += self.response_len as u64;
                    self.report.connections += 1;
                } else {
                    self.report.rejected += 1;
                }
                self.release(ring, slot)?;
                self.active -= 1;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn report(&self) -> RoleReport {
        RoleReport { crr: Some(self.report.clone()), ..RoleReport::default() }
    }
}
