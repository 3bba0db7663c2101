//! TCP_CRR: connect, request, response, close, repeated per flow until the deadline.
//!
//! The request and response payload go through the side's send and receive paths
//! ([`AnySend`], [`AnyRecv`], built per operation: one buffer owner per client flow or
//! server connection slot), on the socket each op names ([`SendPath::push_on`],
//! [`RecvPath::arm_on`]); socket, connect, accept and close are crr's own ops.
//!
//! Client, per cycle: an io_uring Socket op, then with a one-shot receive and a send that
//! can be linked (copy, zc, zc-msg) one linked chain Connect -> Send (cookie, flow,
//! request) -> Recv (response, MSG_WAITALL) -> Close. With copy, Connect, Send and Recv
//! skip their CQE on success, so a good cycle costs two CQEs: the socket's and the
//! close's. A zero-copy send posts its CQE (the kernel refuses to skip it) and later a
//! notification, so its connect posts one too. Splice (a receive linked behind splices
//! stalls) and the multishot engines (a standing receive is never linked) connect first,
//! then send and receive: a one-shot Recv linked to the Close, or a standing multishot
//! receive, cancelled once the response is whole, then the Close. A cycle is over once
//! every op that owes a CQE has posted it; a zero-copy flow starts its next cycle only
//! when a buffer is back. The socket's options (buffers, --cc, SO_LINGER for --linger0)
//! and the --client-ports bind are syscalls on the socket the Socket op made; nothing is
//! allocated per cycle. The chain could start with the Socket op on a direct
//! (fixed-table) descriptor, the options and bind going in as linked
//! SOCKET_URING_OP_SETSOCKOPT (Linux 6.7) and IORING_OP_BIND (6.11) ops: one enter and one
//! CQE per cycle instead of two. Measured on 6.18 (2 vCPUs, loopback) it cost the client
//! 6-8 % more CPU per connection for no gain in rate, so cycles keep a plain descriptor
//! (git history: the commit that tried it, and its revert).
//!
//! Server: one multishot Accept per worker on the session's listener (every worker shares
//! it; accepting into the fixed-file table instead measured no cheaper); per connection a
//! Recv of the header and request (trunc: a Recv of the header of crr's own, linked to the
//! path's receive of the request; multishot and bundle: a standing receive, cancelled
//! once the request is whole when the server closes first, else kept until the client
//! closes), then the response. By default the server closes first, as netperf's
//! netserver does: the response linked (when it can be) to the Close, so the client's
//! close never has to wake the server. With `--close-first client` (neper's order) the
//! response is linked to a Recv that completes when the client closes, then Close. The
//! response waits for the header's cookie check, so it is never linked behind the
//! request's receive. A connection counts when its whole response went out (and, when the
//! client closes first, the client closed after it), as the client counts it. The client
//! tells the session when all its cycles are done (after its deadline); the session then
//! signals every server worker through an eventfd that each ring polls.
//!
//! Pacing (`-b`, `--flow-rate`, a server's `--max-rate`): a client flow starts a cycle
//! only with its request's tokens, and a server worker sends a response only with its
//! tokens (one bucket per worker: any worker may serve any flow); a cycle or a response
//! that finds none waits for the pacer's tick, the server's in arrival order.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

use io_uring::squeue::Flags;
use io_uring::{opcode, types};
use socket2::{SockAddr, Socket};

use crate::io::{op, AnyRecv, AnySend, PerOp, RecvEvent, RecvPath, SendEvent, SendPath};
use crate::net::FLOW_HEADER_LEN;
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::verify::Verifier;
use crate::with_fd;
use crate::workload::driver::{RoleReport, Run, Timers, Workload};
use crate::workload::pacer::Pacer;
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::report::CrrReport;
use ringperf_core::report::Ending;
use ringperf_core::setting::Setting;
use ringperf_core::spec::{CloseFirst, CrrOptions, RecvEngine, TestSpec};

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
    let sock = crate::net::stream_socket(peer, spec.socket.mptcp, "a crr client socket")?;
    for o in client_options(spec, peer.is_ipv6()) {
        o.apply(sock.as_raw_fd())?;
    }
    Ok(sock)
}

/// The protocol of every client socket: IPPROTO_MPTCP when the spec asks for MPTCP.
pub(crate) fn protocol(spec: &TestSpec) -> i32 {
    if spec.socket.mptcp {
        ringperf_core::measure::mptcp::IPPROTO_MPTCP
    } else {
        libc::IPPROTO_TCP
    }
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
/// still out after this is taken back by [`reclaim`].
const ABORT_DRAIN_NS: u64 = 100_000_000;

/// How long the end of a run waits for the ops it cancels to come back (see [`reclaim`]).
const RECLAIM_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The end of a crr run, however it ended (the guard, a stop, an error): cancels every op
/// still in flight and waits for each to come back, so that each descriptor's fate is
/// known, then closes every descriptor of `slots` still open and every new one the ring
/// made that no slot took (completions of op `made`). Without it a session cut short left
/// its connections open, in CLOSE-WAIT once the peer closed, until the process exited.
/// `unhandled`: what the run reaped and did not handle; `closed_by`: the op of the Close
/// that closes a slot's descriptor (flow = slot). `held`: the descriptor a slot owns (a
/// client cycle's socket, a server connection), -1 once the role is done with it, and
/// whether a Close op of the ring closed it.
fn reclaim<T>(
    ring: &mut Ring,
    unhandled: &[Completion],
    (made, closed_by): (u8, u8),
    slots: &mut [T],
    held: impl Fn(&mut T) -> (&mut RawFd, &mut bool),
) {
    let mut left = Vec::with_capacity(unhandled.len() + ring.cq_entries());
    ring.cancel_everything(RECLAIM_WAIT, &mut left);
    left.extend_from_slice(unhandled);
    let mut open = Vec::new();
    for c in left.iter().filter(|c| c.result >= 0) {
        if c.op() == made && !slots.iter_mut().any(|s| *held(s).0 == c.result) {
            open.push(c.result);
        } else if c.op() == closed_by {
            if let Some(s) = slots.get_mut(c.flow()) {
                *held(s).1 = true;
            }
        }
    }
    for s in slots {
        let (fd, closed) = held(s);
        if *fd >= 0 && !*closed {
            open.push(*fd);
        }
        *fd = -1;
    }
    for fd in open {
        // SAFETY: a descriptor the role made that no op uses any more (every op has come
        // back) and no Close op closed.
        unsafe { libc::close(fd) };
    }
}

/// What a send completion meant for a crr role, whose every send is one whole message.
enum MessageSent {
    /// Nothing for the role to do.
    Nothing,
    /// A send buffer came back to this owner: a message waiting for one can go.
    Released(usize),
    /// The owner's message went out, `whole` or not (its send failed, came up short, or
    /// was cancelled).
    Done { owner: usize, whole: bool },
}

/// Handles a send completion `c` of a role whose messages are `len` bytes. A send's own
/// error is not the run's: it ends its cycle or connection, which says what went wrong.
fn message_sent(send: &mut AnySend, ring: &mut Ring, c: &Completion, len: usize) -> Result<MessageSent> {
    let event = match send.complete(ring, c) {
        Ok(e) => e,
        Err(_) if c.result < 0 => SendEvent::Cancelled { flow: c.flow() },
        Err(e) => return Err(e),
    };
    Ok(match event {
        SendEvent::Nothing => MessageSent::Nothing,
        SendEvent::Released { flow } => MessageSent::Released(flow),
        SendEvent::Sent { flow, bytes } => MessageSent::Done { owner: flow, whole: bytes as usize == len },
        SendEvent::Chain { flow, bytes, cancelled, .. } => {
            MessageSent::Done { owner: flow, whole: cancelled == 0 && bytes as usize == len }
        }
        SendEvent::Cancelled { flow } => MessageSent::Done { owner: flow, whole: false },
        SendEvent::Dropped { .. } => return Err(crate::workload::ending::datagram_on_tcp()),
    })
}

/// How a client cycle moves its request and response, from what the side's engines allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// One linked chain Connect -> Send -> Recv(WAITALL) -> Close: a one-shot receive and
    /// a send that can be linked.
    Chained,
    /// Connect on its own; once connected, the send, and either a one-shot Recv(WAITALL)
    /// linked to the Close, or a standing multishot receive that is cancelled once the
    /// response is whole, then the Close. For splice (a receive linked behind splices
    /// stalls) and the multishot engines (a standing receive is never linked).
    Connected,
}

#[derive(Default)]
struct Cycle {
    fd: RawFd,
    started: u64,
    /// CQEs the cycle still owes: each is cleared by its CQE, or by a failure after which
    /// the kernel skips it (REQ_F_SKIP_LINK_CQES).
    connect_due: bool,
    send_due: bool,
    recv_due: bool,
    close_due: bool,
    /// The Close is queued (Connected shape: once the response is whole or the receive
    /// ended).
    close_queued: bool,
    /// The Close op closed the descriptor: its number may already be another cycle's.
    closed: bool,
    /// An op that posts its CQE on success failed: every op linked after it then posts
    /// one too (-ECANCELED).
    broken: bool,
    /// Response bytes received (Connected shape with a multishot receive).
    got: u32,
    /// The first failure (an errno, or TORN); 0 while the cycle goes well.
    failed: i32,
    /// The cycle waits for a send buffer (a zero-copy notification) to start.
    waiting: bool,
}

impl Cycle {
    fn idle() -> Cycle {
        Cycle { fd: -1, ..Cycle::default() }
    }

    fn owes(&self) -> bool {
        self.connect_due || self.send_due || self.recv_due || self.close_due
    }

    fn fail(&mut self, code: i32) {
        if self.failed == 0 {
            self.failed = code;
        }
    }

    /// An op of the chain failed (or came up short): if it skips its CQE on success, the
    /// kernel skips the CQEs of the ops after it too (`later` clears what they owed);
    /// otherwise they all post theirs (-ECANCELED), the receive too if `recv_after`.
    fn chain_broke(&mut self, skipped_success: bool, recv_after: bool, later: impl FnOnce(&mut Cycle)) {
        if self.broken {
            return;
        }
        if skipped_success {
            later(self);
        } else {
            self.broken = true;
            self.recv_due |= recv_after;
        }
    }
}

/// The client side of one worker: its flows' cycles, and the send and receive paths their
/// request and response go through.
pub struct CrrClient {
    peer: Box<SockAddr>,
    domain: i32,
    /// IPPROTO_TCP, or IPPROTO_MPTCP with the spec's MPTCP.
    protocol: i32,
    /// Sends each flow's header plus request (one message per flow, written once).
    send: AnySend,
    request_len: usize,
    /// Receives the responses.
    recv: AnyRecv,
    verify: Verifier,
    response_len: usize,
    shape: Shape,
    /// Which ops of a cycle skip their CQE on success.
    skip_connect: bool,
    skip_send: bool,
    skip_recv: bool,
    options: Vec<SockOpt>,
    ports: Option<(u16, u16)>,
    port_cursor: PortCursor,
    cycles: Vec<Cycle>,
    /// Cycles under way (after the deadline or a stop, none starts).
    active: usize,
    /// A stop came: cycles under way are being cancelled.
    aborting: bool,
    report: CrrReport,
    /// Connections each flow makes before it stops (the spec's transaction limit;
    /// u64::MAX when timed).
    limit: u64,
    /// Paces the requests: a flow starts its cycle with its request's tokens.
    pacer: Pacer,
    request_size: u32,
}

/// The header every flow's request starts with: `cookie` and its global flow number.
pub fn flow_headers(cookie: u64, flow_ids: &[u32]) -> Vec<[u8; FLOW_HEADER_LEN]> {
    flow_ids.iter().map(|&g| header(cookie, g)).collect()
}

impl CrrClient {
    /// `flow_ids`: the global flow numbers of this worker's flows (they go in the header);
    /// `send` and `recv`: per-operation paths with one owner per flow, `send`'s messages
    /// made from [`flow_headers`].
    pub fn new(
        spec: &TestSpec,
        peer: SocketAddr,
        flow_ids: &[u32],
        send: AnySend,
        recv: AnyRecv,
        verify: Verifier,
        pacer: Pacer,
    ) -> CrrClient {
        let request_len = FLOW_HEADER_LEN + spec.request_size as usize;
        let response_len = spec.response_size as usize;
        let CrrOptions { linger0, client_ports, .. } = spec.crr;
        let shape = if send.can_chain() && !recv.multishot() { Shape::Chained } else { Shape::Connected };
        let skip_send = send.can_skip_success();
        CrrClient {
            peer: Box::new(SockAddr::from(peer)),
            domain: if peer.is_ipv6() { libc::AF_INET6 } else { libc::AF_INET },
            protocol: protocol(spec),
            // A connect linked before a send that posts its CQE must post its own, or a
            // failed connect would leave that send's CQE (and its buffer) in doubt.
            skip_connect: shape == Shape::Chained && skip_send,
            skip_send,
            // A checked response is read at its CQE.
            skip_recv: !verify.enabled(),
            send,
            request_len,
            recv,
            verify,
            response_len,
            shape,
            options: client_options(spec, peer.is_ipv6()),
            ports: client_ports,
            port_cursor: PortCursor::new(peer, flow_ids),
            cycles: flow_ids.iter().map(|_| Cycle::idle()).collect(),
            active: 0,
            aborting: false,
            report: CrrReport { linger0, ..CrrReport::default() },
            limit: spec.transaction_limit.unwrap_or(u64::MAX),
            pacer,
            request_size: spec.request_size,
        }
    }

    /// Starts flow `f`'s next cycle, or marks it waiting for a send buffer, or leaves it
    /// for the pacer's tick (which calls this again).
    fn begin(&mut self, ring: &mut Ring, f: usize, now: u64) -> Result<()> {
        let c = &mut self.cycles[f];
        *c = Cycle::idle();
        if self.send.available(f) == 0 {
            self.send.short_of_buffers(f);
            c.waiting = true;
            return Ok(());
        }
        if !self.pacer.allow(f, self.request_size) {
            return Ok(());
        }
        c.started = now;
        self.active += 1;
        let e = opcode::Socket::new(self.domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, self.protocol)
            .build()
            .user_data(token(op::SOCKET, f));
        // SAFETY: the Socket op points at no memory.
        unsafe { ring.push(&e) }
    }

    fn flags(skip: bool) -> Flags {
        if skip {
            Flags::SKIP_SUCCESS
        } else {
            Flags::empty()
        }
    }

    /// The socket exists: set it up and queue the cycle (see [`Shape`]).
    fn connect(&mut self, ring: &mut Ring, f: usize, fd: RawFd) -> Result<()> {
        self.cycles[f].fd = fd;
        for o in &self.options {
            o.apply(fd)?;
        }
        if let Some(range) = self.ports {
            // The ring counts no system calls of its own.
            self.port_cursor.bind(fd, range, &mut self.report.port_busy, &mut 0)?;
        }
        let chained = self.shape == Shape::Chained;
        let flags = if chained { Flags::IO_LINK | Self::flags(self.skip_connect) } else { Flags::empty() };
        let connect = opcode::Connect::new(types::Fd(fd), self.peer.as_ptr().cast(), self.peer.len())
            .build()
            .user_data(token(op::CONNECT, f))
            .flags(flags);
        // SAFETY: the peer's address lives in self, which the worker drops after the ring.
        unsafe { ring.push(&connect)? };
        self.cycles[f].connect_due = !(chained && self.skip_connect);
        if chained {
            // The paths push straight after it, so the chain's SQEs stay in order.
            self.exchange(ring, f, Flags::IO_LINK)?;
        }
        Ok(())
    }

    /// Queues the request and the response's receive on the connected (or connecting,
    /// when `link` links them behind the connect) socket of flow `f`.
    fn exchange(&mut self, ring: &mut Ring, f: usize, link: Flags) -> Result<()> {
        let sock = PerOp { sock: FlowFd::Raw(self.cycles[f].fd), owner: f };
        let send_flags = link | Self::flags(self.skip_send);
        self.send.push_on(ring, sock, 0, self.request_len as u32, send_flags)?;
        self.verify.restart(f, 0);
        let c = &mut self.cycles[f];
        c.send_due = !self.skip_send;
        if self.recv.multishot() {
            self.recv.arm_on(ring, sock, self.response_len as u32, false, Flags::empty())?;
            c.recv_due = true;
            return Ok(());
        }
        let recv_flags = Flags::IO_LINK | Self::flags(self.skip_recv);
        self.recv.arm_on(ring, sock, self.response_len as u32, true, recv_flags)?;
        c.recv_due = !self.skip_recv;
        Self::queue_close(ring, c, f)
    }

    fn queue_close(ring: &mut Ring, c: &mut Cycle, f: usize) -> Result<()> {
        let close = opcode::Close::new(types::Fd(c.fd)).build().user_data(token(op::CLOSE, f));
        c.close_queued = true;
        c.close_due = true;
        // SAFETY: Close points at no memory.
        unsafe { ring.push(&close) }
    }

    /// Cancels every op on the sockets of the cycles under way; each then ends with the
    /// CQEs of its ops that failed or won.
    fn cancel_cycles(&self, ring: &mut Ring) -> Result<()> {
        let open = |c: &&Cycle| c.fd >= 0 && !c.closed;
        for (f, c) in self.cycles.iter().enumerate().filter(|(_, c)| open(c)) {
            let e = opcode::AsyncCancel2::new(types::CancelBuilder::fd(types::Fd(c.fd)).all())
                .build()
                .user_data(token(op::CANCEL, f));
            // SAFETY: AsyncCancel points at no memory.
            unsafe { ring.push(&e)? };
        }
        Ok(())
    }

    fn on_connect(&mut self, ring: &mut Ring, c: &Completion) -> Result<()> {
        let f = c.flow();
        let cy = &mut self.cycles[f];
        cy.connect_due = false;
        if c.result < 0 {
            cy.fail(c.result);
            if self.shape == Shape::Chained {
                cy.chain_broke(self.skip_connect, true, |cy| {
                    cy.send_due = false;
                    cy.recv_due = false;
                    cy.close_due = false;
                });
            }
        } else if self.shape == Shape::Connected {
            if self.aborting {
                // Stopped while connecting: the cycle ends here, uncounted.
                cy.fail(-libc::ECANCELED);
            } else {
                self.exchange(ring, f, Flags::empty())?;
            }
        }
        Ok(())
    }

    fn on_send(&mut self, ring: &mut Ring, c: &Completion, run: &Run) -> Result<Option<usize>> {
        let (f, whole) = match message_sent(&mut self.send, ring, c, self.request_len)? {
            MessageSent::Nothing => return Ok(None),
            MessageSent::Released(flow) => {
                if self.cycles[flow].waiting && !run.stopping {
                    self.begin(ring, flow, monotonic_ns())?;
                }
                return Ok(None);
            }
            MessageSent::Done { owner, whole } => (owner, whole),
        };
        let cy = &mut self.cycles[f];
        cy.send_due = false;
        if !whole {
            cy.fail(if c.result < 0 { c.result } else { TORN });
            if self.shape == Shape::Chained {
                cy.chain_broke(self.skip_send, true, |cy| {
                    cy.recv_due = false;
                    cy.close_due = false;
                });
            }
        }
        Ok(Some(f))
    }

    fn on_recv(&mut self, ring: &mut Ring, c: &Completion) -> Result<usize> {
        let f = c.flow();
        let event = match self.recv.complete(ring, c, &mut self.verify) {
            Ok(e) => e,
            // A receive's own error ends its cycle, which says what went wrong.
            Err(_) if c.result < 0 => RecvEvent::Cancelled { flow: f },
            Err(e) => return Err(e),
        };
        let want = self.response_len as u32;
        let cy = &mut self.cycles[f];
        if self.recv.multishot() {
            if let RecvEvent::Data { bytes, .. } = event {
                cy.got += bytes;
                if cy.got > want {
                    return Err(Error::Protocol(format!(
                        "the server sent {} bytes for a {want}-byte crr response",
                        cy.got
                    )));
                }
                if cy.got == want && !cy.close_queued {
                    self.recv.cancel_on(ring, f)?;
                    Self::queue_close(ring, cy, f)?;
                }
            }
            if !self.recv.live_on(f) {
                cy.recv_due = false;
                if !cy.close_queued {
                    // The receive ended before the whole response.
                    cy.fail(if c.result < 0 { c.result } else { TORN });
                    Self::queue_close(ring, cy, f)?;
                }
            }
            return Ok(f);
        }
        // A one-shot receive posts one CQE: on success only if it does not skip it.
        cy.recv_due = false;
        let whole = matches!(event, RecvEvent::Data { bytes, .. } if bytes == want);
        if !whole && !cy.broken {
            cy.fail(if c.result < 0 { c.result } else { TORN });
            cy.chain_broke(self.skip_recv, false, |cy| cy.close_due = false);
        }
        Ok(f)
    }

    /// Once a cycle has all its CQEs: closes its socket if the Close never ran, counts it,
    /// and starts the flow's next one.
    fn settle(&mut self, ring: &mut Ring, f: usize, run: &mut Run) -> Result<()> {
        let cy = &mut self.cycles[f];
        if cy.owes() || cy.fd < 0 {
            return Ok(());
        }
        if !cy.closed {
            // SAFETY: the descriptor belongs to this cycle and no op uses it now.
            unsafe { libc::close(cy.fd) };
        }
        // Closed: a stop must not cancel by this number, now free for reuse.
        cy.fd = -1;
        let failed = cy.failed;
        let now = monotonic_ns();
        if failed == 0 {
            run.sampler.record(now - cy.started);
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
        self.active -= 1;
        // A count: a flow's cycles run one after another, so comparing its counter here
        // stops it at exactly its count.
        if !run.stopping && run.counters[f].transactions < self.limit {
            self.begin(ring, f, now)?;
        }
        Ok(())
    }
}

/// Runs cycles on every flow until the deadline; cycles under way then are finished. A
/// stop ends it at once: no cycle starts, those under way are cancelled (and not
/// counted), and their sockets are closed as they come back, for at most ABORT_DRAIN_NS.
impl Workload for CrrClient {
    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.start(ring)?;
        let now = monotonic_ns();
        for f in 0..self.cycles.len() {
            self.begin(ring, f, now)?;
        }
        Ok(())
    }

    /// A pacing tick: the flows whose next cycle waited for tokens start it.
    fn on_pace(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.pacer.tick();
        let mut now = 0;
        for f in 0..self.cycles.len() {
            if self.pacer.take_waiting(f) && !run.stopping {
                if now == 0 {
                    now = monotonic_ns();
                }
                self.begin(ring, f, now)?;
            }
        }
        Ok(())
    }

    fn done(&self, run: &Run) -> bool {
        // Zero-copy buffers the kernel still holds come back before the ring goes.
        // A timed test has no count: no walk over the flows at every batch.
        let counted = self.limit != u64::MAX && run.counters.iter().all(|k| k.transactions >= self.limit);
        (run.stopping || counted) && self.active == 0 && self.send.outstanding() == 0
    }

    fn on_abort(&mut self, ring: &mut Ring, run: &mut Run) -> Result<Option<Ending>> {
        run.stopping = true;
        self.aborting = true;
        self.cancel_cycles(ring)?;
        ring.push_deadline(monotonic_ns() + ABORT_DRAIN_NS, token(op::GUARD, 0))?;
        Ok(None)
    }

    fn on_guard(&mut self) -> Result<Ending> {
        if self.aborting {
            // The stop's own guard: some cancelled cycle did not come back in time.
            return Ok(Ending::Aborted);
        }
        // The grace after the deadline is over and cycles are still under way.
        Err(crate::workload::ending::peer_stuck())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        let f = match c.op() {
            op::CANCEL => return Ok(true),
            op::SOCKET if self.aborting => {
                // The cycle was only starting: its socket is not used.
                if c.result >= 0 {
                    // SAFETY: the ring just made this descriptor for this cycle alone.
                    unsafe { libc::close(c.result) };
                }
                self.active -= 1;
                return Ok(true);
            }
            op::SOCKET => {
                if c.result < 0 {
                    return Err(cqe_error("creating a crr client socket (raise `ulimit -n`?)", c.result));
                }
                self.connect(ring, c.flow(), c.result)?;
                return Ok(true);
            }
            op::CONNECT => {
                self.on_connect(ring, c)?;
                c.flow()
            }
            op::SEND | op::SPLICE_IN => match self.on_send(ring, c, run)? {
                Some(f) => f,
                None => return Ok(true),
            },
            op::RECV => self.on_recv(ring, c)?,
            op::CLOSE => {
                let cy = &mut self.cycles[c.flow()];
                cy.close_due = false;
                // A Close cancelled by a broken chain never ran: `settle` closes.
                cy.closed = c.result >= 0;
                c.flow()
            }
            _ => return Ok(false),
        };
        self.settle(ring, f, run)?;
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.recv.after_batch();
    }

    fn finish(&mut self, _run: &Run) -> Result<Ending> {
        Ok(if self.aborting { Ending::Aborted } else { Ending::Completed })
    }

    fn reclaim(&mut self, ring: &mut Ring, unhandled: &[Completion]) {
        reclaim(ring, unhandled, (op::SOCKET, op::CLOSE), &mut self.cycles, |c| (&mut c.fd, &mut c.closed));
    }

    fn report(&self) -> RoleReport {
        RoleReport {
            crr: Some(self.report.clone()),
            ..RoleReport::paths(&self.send, &self.recv, &self.verify)
        }
    }
}

/// Where a crr client's next socket binds in --client-ports.
pub(crate) struct PortCursor {
    /// The unspecified address of the peer's family: what a socket binds to.
    local: SockAddr,
    next: u32,
}

impl PortCursor {
    /// Each worker starts at its own place in the port range (its first flow), so workers
    /// rarely collide.
    pub(crate) fn new(peer: SocketAddr, flow_ids: &[u32]) -> PortCursor {
        PortCursor {
            local: SockAddr::from(match peer {
                SocketAddr::V4(_) => SocketAddr::from(([0u8; 4], 0)),
                SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
            }),
            next: flow_ids.first().copied().unwrap_or(0),
        }
    }

    /// Binds `fd` to the next free port of `lo`-`hi`: a port in use is counted in `busy`
    /// and passed over; `binds` counts the bind(2) calls.
    pub(crate) fn bind(
        &mut self,
        fd: RawFd,
        (lo, hi): (u16, u16),
        busy: &mut u64,
        binds: &mut u64,
    ) -> Result<()> {
        let span = u32::from(hi - lo) + 1;
        let mut local = self.local.clone();
        for _ in 0..span {
            let port = lo + (self.next % span) as u16;
            self.next = self.next.wrapping_add(1);
            set_port(&mut local, port);
            *binds += 1;
            // SAFETY: `local` is a valid socket address of the length it states.
            if unsafe { libc::bind(fd, local.as_ptr().cast(), local.len()) } == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EADDRINUSE) {
                return Err(Error::io(format!("binding a crr client socket to port {port}"), e));
            }
            *busy += 1;
        }
        Err(Error::Usage(format!(
            "every port of {} {lo}-{hi} is in use: widen the range, use fewer flows or {}",
            Setting::ClientPorts.token(),
            Setting::Linger0.token()
        )))
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
            "connect failed with EADDRNOTAVAIL: the client's ephemeral ports are used up by TIME_WAIT; use {linger0}, {client-ports} LO-HI, a shorter test, or net.ipv4.tcp_tw_reuse=1".into()
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
#[derive(Default)]
struct Conn {
    fd: RawFd,
    flow: u32,
    /// Request bytes received, header included.
    got: u32,
    /// The header as it arrives (trunc receives it here, with crr's own op).
    head: [u8; FLOW_HEADER_LEN],
    /// CQEs the connection still owes: its header receive (trunc, only on failure), its
    /// request receive (a multishot one until it ends), its response, its close wait.
    header_due: bool,
    recv_due: bool,
    send_due: bool,
    wait_due: bool,
    /// The response waits for a send buffer (a zero-copy notification) or for pacing
    /// tokens.
    owed: bool,
    /// It waits in the pacer's queue (`CrrServer::paced`), once.
    queued: bool,
    /// The response was queued, and went out whole.
    answered: bool,
    sent: bool,
    /// The client closed (EOF, or a reset with --linger0).
    peer_closed: bool,
    /// The close linked behind the response ran: the descriptor is gone.
    closed: bool,
    /// Not a good cycle of the client's: a torn or foreign request, a failed response.
    bad: bool,
}

impl Conn {
    fn new(fd: RawFd) -> Conn {
        Conn { fd, ..Conn::default() }
    }

    fn owes(&self) -> bool {
        self.header_due || self.recv_due || self.send_due || self.wait_due || self.owed
    }
}

/// The server side of one worker: accepts on the shared listener, answers every cycle
/// through its send and receive paths (one owner per connection slot).
pub struct CrrServer {
    listener: FlowFd,
    cookie: u64,
    flows: usize,
    /// Receives each connection's header plus request (trunc: the request after the header).
    recv: AnyRecv,
    verify: Verifier,
    request_len: usize,
    /// Sends every response (the pattern).
    send: AnySend,
    response_len: usize,
    /// The response is linked to what follows it (the close wait, or the close when the
    /// server closes first): a one-shot receive and a send that can be linked.
    chained: bool,
    /// `--close-first server`: close once the response is out (netperf's netserver), not
    /// after the client's close.
    closes_first: bool,
    skip_send: bool,
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
    /// Paces the responses, one bucket for the worker.
    pacer: Pacer,
    /// Slots whose response waits for the pacer's tokens, in arrival order (sized for
    /// every slot: pushing never allocates).
    paced: VecDeque<u32>,
}

impl CrrServer {
    /// Connection slots: one per flow is enough for the client (one cycle in flight per
    /// flow); the rest absorbs strangers and connections whose close is still under way.
    pub fn slots(spec: &TestSpec) -> usize {
        spec.flows as usize * 2 + 16
    }

    /// Bytes the receive path takes per request: the header and request, or for a path
    /// that discards what it receives (trunc) the request alone.
    pub fn recv_len(spec: &TestSpec, engine: RecvEngine) -> usize {
        let body = spec.request_size as usize;
        if engine == RecvEngine::Trunc {
            body
        } else {
            FLOW_HEADER_LEN + body
        }
    }

    /// `stop`: an eventfd the session writes when the client has finished its cycles;
    /// `send` and `recv`: per-operation paths with [`CrrServer::slots`] owners.
    pub fn new(
        spec: &TestSpec,
        listener: FlowFd,
        (cookie, stop): (u64, RawFd),
        send: AnySend,
        recv: AnyRecv,
        verify: Verifier,
        pacer: Pacer,
    ) -> CrrServer {
        let slots = Self::slots(spec);
        CrrServer {
            listener,
            cookie,
            flows: spec.flows as usize,
            chained: send.can_chain() && !recv.multishot(),
            closes_first: spec.crr.close_first == CloseFirst::Server,
            skip_send: send.can_skip_success(),
            recv,
            verify,
            request_len: FLOW_HEADER_LEN + spec.request_size as usize,
            send,
            response_len: spec.response_size as usize,
            eof: vec![0u8; slots],
            conns: (0..slots).map(|_| Conn::new(-1)).collect(),
            free: (0..slots as u32).rev().collect(),
            stop,
            active: 0,
            accepting: false,
            report: CrrReport {
                linger0: spec.crr.linger0,
                server_closed_first: spec.crr.close_first == CloseFirst::Server,
                ..CrrReport::default()
            },
            pacer,
            paced: VecDeque::with_capacity(slots),
        }
    }

    /// Most CQEs this side can have outstanding: per slot its receive(s), its response
    /// (and a zero-copy notification), its close wait, plus accepts.
    pub fn max_cqes(spec: &TestSpec) -> usize {
        Self::slots(spec) * 5 + 16
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

    fn accepted(&mut self, ring: &mut Ring, fd: RawFd, stopping: bool) -> Result<bool> {
        let Some(slot) = (!stopping).then(|| self.free.pop()).flatten() else {
            self.report.rejected += 1;
            Self::close(ring, fd)?;
            return Ok(false);
        };
        let slot = slot as usize;
        let sock = PerOp { sock: FlowFd::Raw(fd), owner: slot };
        let conn = &mut self.conns[slot];
        *conn = Conn::new(fd);
        conn.recv_due = true;
        if self.recv.multishot() {
            self.verify.restart(slot, FLOW_HEADER_LEN as u64);
            self.recv.arm_on(ring, sock, 0, false, Flags::empty())?;
        } else if self.recv.reads_payload() {
            self.verify.restart(slot, FLOW_HEADER_LEN as u64);
            self.recv.arm_on(ring, sock, self.request_len as u32, true, Flags::empty())?;
        } else {
            // The path discards what it receives: the header comes first, through a
            // receive of crr's own; if it fails, the request's receive never runs.
            let head = conn.head.as_mut_ptr();
            let e = opcode::Recv::new(types::Fd(fd), head, FLOW_HEADER_LEN as u32)
                .flags(libc::MSG_WAITALL)
                .build()
                .user_data(token(op::CRR_HEADER, slot))
                .flags(Flags::IO_LINK | Flags::SKIP_SUCCESS);
            // SAFETY: the slot's header lives in self (never reallocated), dropped only
            // after the ring.
            unsafe { ring.push(&e)? };
            conn.header_due = true;
            let body = (self.request_len - FLOW_HEADER_LEN) as u32;
            self.recv.arm_on(ring, sock, body, true, Flags::empty())?;
        }
        Ok(true)
    }

    /// A request receive completed on `slot`.
    fn on_recv(&mut self, ring: &mut Ring, c: &Completion) -> Result<usize> {
        let slot = c.flow();
        let event = match self.recv.complete(ring, c, &mut self.verify) {
            Ok(e) => e,
            // The connection's own error (a reset): it ends, uncounted unless it was the
            // client's close.
            Err(_) if c.result < 0 => RecvEvent::Cancelled { flow: slot },
            Err(e) => return Err(e),
        };
        let multishot = self.recv.multishot();
        let payload = self.recv.payload(c);
        let conn = &mut self.conns[slot];
        if let RecvEvent::Data { bytes, .. } = event {
            let at = conn.got as usize;
            if at < FLOW_HEADER_LEN && !payload.is_empty() {
                let n = (FLOW_HEADER_LEN - at).min(payload.len());
                conn.head[at..at + n].copy_from_slice(&payload[..n]);
            }
            // trunc's header came by its own receive.
            conn.got += bytes + if conn.header_due { FLOW_HEADER_LEN as u32 } else { 0 };
            conn.header_due = false;
        }
        if multishot {
            match event {
                RecvEvent::Eof { .. } => conn.peer_closed = true,
                RecvEvent::Cancelled { .. } if c.result == -libc::ECONNRESET => conn.peer_closed = true,
                // Ours: a server that closes first stops its receive once it answered.
                RecvEvent::Cancelled { .. } if self.closes_first && conn.answered => {}
                RecvEvent::Cancelled { .. } => conn.bad = true,
                _ => {}
            }
            conn.recv_due = self.recv.live_on(slot);
        } else {
            conn.recv_due = false;
        }
        let whole = conn.got as usize == self.request_len;
        if conn.got as usize > self.request_len || (!multishot && !whole) {
            conn.bad = true;
        } else if whole && !conn.answered && !conn.bad {
            let cookie = u64::from_le_bytes(conn.head[..8].try_into().expect("8 bytes"));
            let flow = u32::from_le_bytes(conn.head[8..12].try_into().expect("4 bytes"));
            if cookie != self.cookie || flow as usize >= self.flows {
                conn.bad = true;
            } else {
                conn.flow = flow;
                conn.answered = true;
                if multishot && self.closes_first && conn.recv_due {
                    // Nothing more is read: the close must not wait for the client's.
                    self.recv.cancel_on(ring, slot)?;
                }
                self.respond(ring, slot)?;
            }
        }
        Ok(slot)
    }

    /// Queues `slot`'s response (and, for a one-shot receive, the wait for the client's
    /// close), or marks it owed until a send buffer comes back, or until the pacer's tick
    /// (behind the responses that already wait for one).
    fn respond(&mut self, ring: &mut Ring, slot: usize) -> Result<()> {
        let conn = &mut self.conns[slot];
        if self.send.available(slot) == 0 {
            self.send.short_of_buffers(slot);
            conn.owed = true;
            return Ok(());
        }
        if conn.queued {
            return Ok(());
        }
        if !self.paced.is_empty() || !self.pacer.allow(0, self.response_len as u32) {
            conn.owed = true;
            conn.queued = true;
            self.paced.push_back(slot as u32);
            return Ok(());
        }
        self.send_response(ring, slot)
    }

    /// Queues `slot`'s response, its buffer and tokens in hand.
    fn send_response(&mut self, ring: &mut Ring, slot: usize) -> Result<()> {
        let conn = &mut self.conns[slot];
        conn.owed = false;
        let fd = conn.fd;
        let skip = if self.skip_send { Flags::SKIP_SUCCESS } else { Flags::empty() };
        let link = if self.chained { Flags::IO_LINK } else { Flags::empty() };
        let sock = PerOp { sock: FlowFd::Raw(fd), owner: slot };
        self.send.push_on(ring, sock, 0, self.response_len as u32, link | skip)?;
        let conn = &mut self.conns[slot];
        conn.send_due = !self.skip_send;
        // A skip-success send posts only when it fails (`on_send` then says so).
        conn.sent = self.skip_send;
        if self.closes_first {
            if self.chained {
                let close =
                    opcode::Close::new(types::Fd(fd)).build().user_data(token(op::SERVER_CLOSE, slot));
                conn.wait_due = true;
                // SAFETY: Close points at no memory.
                unsafe { ring.push(&close)? };
            }
            // Otherwise `settle` closes it once the response (and a standing receive's
            // cancellation) have posted.
            return Ok(());
        }
        if self.recv.multishot() {
            // The standing receive sees the client's close.
            return Ok(());
        }
        let wait = opcode::Recv::new(types::Fd(fd), self.eof[slot..].as_mut_ptr(), 1)
            .build()
            .user_data(token(op::PEER_CLOSE, slot));
        conn.wait_due = true;
        // SAFETY: the slot's byte lives in self, dropped only after the ring.
        unsafe { ring.push(&wait) }
    }

    fn on_send(&mut self, ring: &mut Ring, c: &Completion) -> Result<Option<usize>> {
        let (slot, whole) = match message_sent(&mut self.send, ring, c, self.response_len)? {
            MessageSent::Nothing => return Ok(None),
            MessageSent::Released(slot) => {
                if self.conns[slot].owed {
                    self.respond(ring, slot)?;
                }
                return Ok(None);
            }
            MessageSent::Done { owner, whole } => (owner, whole),
        };
        let conn = &mut self.conns[slot];
        conn.send_due = false;
        conn.sent = whole;
        if !whole {
            conn.bad = true;
            // A linked close wait behind a skip-success send that failed posts no CQE
            // (REQ_F_SKIP_LINK_CQES); behind one that posts its CQE, it is cancelled and
            // posts its own.
            if self.chained && self.skip_send {
                conn.wait_due = false;
            }
        }
        Ok(Some(slot))
    }

    /// Once a connection has all its CQEs: counts it (its whole response went out, and
    /// unless the server closes first the client closed after it, the moment the client
    /// counts it) and closes it, unless its linked close already did.
    fn settle(&mut self, ring: &mut Ring, slot: usize, run: &mut Run) -> Result<()> {
        let conn = &self.conns[slot];
        if conn.owes() || conn.fd < 0 {
            return Ok(());
        }
        if (conn.peer_closed || self.closes_first) && conn.sent && !conn.bad {
            let k = &mut run.counters[conn.flow as usize];
            k.transactions += 1;
            k.bytes_received += self.request_len as u64 - FLOW_HEADER_LEN as u64;
            k.bytes_sent += self.response_len as u64;
            self.report.connections += 1;
        } else {
            self.report.rejected += 1;
        }
        let closed = self.conns[slot].closed;
        let fd = std::mem::replace(&mut self.conns[slot].fd, -1);
        self.free.push(slot as u32);
        self.active -= 1;
        if closed {
            return Ok(());
        }
        Self::close(ring, fd)
    }
}

/// Serves connections until the stop signal, then until every one under way is done. The
/// counters have an entry per flow of the test (any worker may serve any flow). Its stop
/// comes through the stop eventfd, not the watch: the control connection also carries the
/// client's FlowsDone mid-run, which would look like a stop.
impl Workload for CrrServer {
    fn timers(&self) -> Timers {
        Timers { deadline: false }
    }

    fn watches(&self) -> bool {
        false
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.start(ring)?;
        crate::workload::ending::watch_flows_done(ring, self.stop)?;
        self.arm_accept(ring)?;
        self.accepting = true;
        Ok(())
    }

    fn done(&self, run: &Run) -> bool {
        run.stopping && self.active == 0 && !self.accepting && self.send.outstanding() == 0
    }

    /// A pacing tick: the responses that waited for tokens go, oldest first, as the
    /// refill allows.
    fn on_pace(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.tick();
        self.pacer.take_waiting(0);
        while let Some(&slot) = self.paced.front() {
            let slot = slot as usize;
            if self.send.available(slot) == 0 {
                // Its buffer's return answers it (`respond` again).
                self.paced.pop_front();
                self.conns[slot].queued = false;
                self.send.short_of_buffers(slot);
                continue;
            }
            if !self.pacer.allow(0, self.response_len as u32) {
                break;
            }
            self.paced.pop_front();
            self.conns[slot].queued = false;
            self.send_response(ring, slot)?;
        }
        Ok(())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        let slot = match c.op() {
            op::STOP => {
                run.stopping = true;
                let e =
                    opcode::AsyncCancel::new(token(op::ACCEPT, 0)).build().user_data(token(op::CANCEL, 0));
                // SAFETY: AsyncCancel points at no memory.
                unsafe { ring.push(&e)? };
                return Ok(true);
            }
            op::CANCEL | op::CLOSE => return Ok(true),
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
                return Ok(true);
            }
            op::CRR_HEADER => {
                // Only a failed or short header receive posts; the request's receive
                // linked behind it then posts nothing.
                let conn = &mut self.conns[c.flow()];
                conn.header_due = false;
                conn.recv_due = false;
                conn.bad = true;
                c.flow()
            }
            op::RECV => self.on_recv(ring, c)?,
            op::SEND | op::SPLICE_IN => match self.on_send(ring, c)? {
                Some(slot) => slot,
                None => return Ok(true),
            },
            op::SERVER_CLOSE => {
                let conn = &mut self.conns[c.flow()];
                conn.wait_due = false;
                // -ECANCELED: the response failed first, and the descriptor is still open.
                if c.result >= 0 {
                    conn.closed = true;
                } else if c.result != -libc::ECANCELED {
                    return Err(cqe_error("closing a crr connection", c.result));
                }
                c.flow()
            }
            op::PEER_CLOSE => {
                let conn = &mut self.conns[c.flow()];
                conn.wait_due = false;
                // The client closes after the whole response: EOF, or a reset with
                // --linger0. -ECANCELED: the response failed first.
                if c.result >= 0 || c.result == -libc::ECONNRESET {
                    conn.peer_closed = true;
                } else {
                    conn.bad = true;
                }
                c.flow()
            }
            _ => return Ok(false),
        };
        self.settle(ring, slot, run)?;
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.recv.after_batch();
    }

    fn reclaim(&mut self, ring: &mut Ring, unhandled: &[Completion]) {
        reclaim(ring, unhandled, (op::ACCEPT, op::SERVER_CLOSE), &mut self.conns, |c| {
            (&mut c.fd, &mut c.closed)
        });
    }

    fn report(&self) -> RoleReport {
        RoleReport {
            crr: Some(self.report.clone()),
            ..RoleReport::paths(&self.send, &self.recv, &self.verify)
        }
    }
}
