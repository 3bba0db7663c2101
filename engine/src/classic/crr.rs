//! TCP_CRR over system calls, on the ring's wire format (every connection starts with the
//! session cookie and its flow, then the request): a classic client can face a ring
//! server and the reverse.
//!
//! Client, per cycle: socket, the spec's options, connect, send the header and request,
//! receive the whole response, close (netperf's loop). With one flow per worker the socket
//! is blocking, with SO_RCVTIMEO so that a stop or a hung server is seen within
//! STOP_CHECK_NS; with several, non-blocking sockets over epoll. Server: the listener (shared
//! by the side's workers), its stop signal and every connection in one epoll set; a
//! connection counts when the client closed after the whole response, as on the ring (or,
//! when the server closes first, once the whole response is out). With one flow the server
//! is netserver's blocking loop instead: accept, receive, send, close.

use std::net::SocketAddr;
use std::os::fd::RawFd;

use socket2::SockAddr;

use crate::classic::context::{Ctx, Loop};
use crate::classic::sys::{self, Epoll, Io};
use crate::classic::{ABORT, DEADLINE, GUARD};
use crate::net::FLOW_HEADER_LEN;
use crate::verify::fill_payload;
use crate::workload::crr::{client_options, header, protocol, PortCursor, SockOpt};
use crate::workload::driver::RoleReport;
use crate::workload::ending::peer_stuck;
use ringperf_core::error::{Error, Result};
use ringperf_core::report::CrrReport;
use ringperf_core::report::Ending;
use ringperf_core::spec::{CloseFirst, TestSpec};

const LISTENER: usize = usize::MAX - 1;
const STOP: usize = usize::MAX - 2;
/// How often a blocked client receive looks whether the run was stopped.
const STOP_CHECK_NS: u64 = 100_000_000;
/// How long the one-flow server waits on a silent connection before it drops it: a real
/// client sends its request as it connects and closes as the response arrives, so only a
/// stranger (or a client gone mid-cycle) is silent this long, and it must not hold the
/// server's one connection at a time until the guard.
const SILENT_PEER_NS: u64 = 1_000_000_000;
/// Connections one server wakeup accepts before it serves the others.
const ACCEPTS_PER_TURN: usize = 16;

fn close(cx: &mut Ctx, fd: RawFd) {
    cx.calls.other += 1;
    // SAFETY: closes a descriptor this loop made and no one else uses.
    unsafe { libc::close(fd) };
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// What became of one client cycle that did not fail.
enum Cycle {
    Done,
    /// --client-ports: the bound port's 4-tuple was still taken; the next port is tried.
    PortBusy,
    Stopped,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting,
    Sending(usize),
    Receiving(usize),
}

#[derive(Clone, Copy)]
struct Flow {
    fd: RawFd,
    phase: Phase,
    started: u64,
}

pub struct Client {
    peer: SockAddr,
    domain: i32,
    /// IPPROTO_TCP, or IPPROTO_MPTCP with the spec's MPTCP.
    protocol: i32,
    /// Per flow: its header and request, `request_len` bytes apart.
    messages: Vec<u8>,
    request_len: usize,
    buf: Vec<u8>,
    options: Vec<SockOpt>,
    ports: Option<(u16, u16)>,
    port_cursor: PortCursor,
    flows: Vec<Flow>,
    report: CrrReport,
}

impl Client {
    pub fn new(spec: &TestSpec, peer: SocketAddr, cookie: u64, flow_ids: &[u32]) -> Client {
        let request_len = FLOW_HEADER_LEN + spec.request_size as usize;
        let mut messages = vec![0u8; request_len * flow_ids.len()];
        for (m, &g) in messages.chunks_mut(request_len).zip(flow_ids) {
            m[..FLOW_HEADER_LEN].copy_from_slice(&header(cookie, g));
            fill_payload(&mut m[FLOW_HEADER_LEN..]);
        }
        Client {
            peer: SockAddr::from(peer),
            domain: if peer.is_ipv6() { libc::AF_INET6 } else { libc::AF_INET },
            protocol: protocol(spec),
            messages,
            request_len,
            buf: vec![0; spec.response_size as usize],
            options: client_options(spec, peer.is_ipv6()),
            ports: spec.crr.client_ports,
            port_cursor: PortCursor::new(peer, flow_ids),
            flows: flow_ids.iter().map(|_| Flow { fd: -1, phase: Phase::Idle, started: 0 }).collect(),
            report: CrrReport { linger0: spec.crr.linger0, ..CrrReport::default() },
        }
    }

    /// A socket for one cycle with the spec's options (and its --client-ports port).
    fn open(&mut self, cx: &mut Ctx, nonblocking: bool) -> Result<RawFd> {
        let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
        cx.calls.other += 1;
        // SAFETY: socket takes no memory; the result is checked.
        let fd = unsafe { libc::socket(self.domain, kind, self.protocol) };
        if fd < 0 {
            return Err(Error::io("creating a crr client socket (raise `ulimit -n`?)", errno()));
        }
        let set = (|| {
            for o in &self.options {
                cx.calls.other += 1;
                o.apply(fd)?;
            }
            if !nonblocking {
                cx.calls.other += 2;
                sys::set_recv_timeout(fd, STOP_CHECK_NS)?;
                // Bounds the connect and the request's sends too.
                sys::set_send_timeout(fd, STOP_CHECK_NS)?;
            }
            if let Some(range) = self.ports {
                self.port_cursor.bind(fd, range, &mut self.report.port_busy, &mut cx.calls.other)?;
            }
            Ok(())
        })();
        if let Err(e) = set {
            close(cx, fd);
            return Err(e);
        }
        Ok(fd)
    }

    /// connect(2); `Ok(false)` for a busy --client-ports 4-tuple, `Ok(true)` when connected
    /// or (non-blocking) under way.
    fn connect(&mut self, cx: &mut Ctx, fd: RawFd) -> Result<bool> {
        cx.calls.other += 1;
        // SAFETY: the peer's address is valid for the length it states.
        if unsafe { libc::connect(fd, self.peer.as_ptr().cast(), self.peer.len()) } == 0 {
            return Ok(true);
        }
        let e = errno();
        match e.raw_os_error() {
            Some(libc::EINPROGRESS) => Ok(true),
            Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) if self.ports.is_some() => {
                self.report.port_busy += 1;
                Ok(false)
            }
            _ => Err(connect_error(e, self.ports.is_some())),
        }
    }

    fn count(&mut self, cx: &mut Ctx, f: usize) -> u64 {
        let now = cx.record(self.flows[f].started);
        let k = &mut cx.counters[f];
        k.transactions += 1;
        k.bytes_sent += (self.request_len - FLOW_HEADER_LEN) as u64;
        k.bytes_received += self.buf.len() as u64;
        self.report.connections += 1;
        now
    }

    /// One blocking cycle of flow `f` on `fd`, which the caller closes.
    fn cycle(&mut self, cx: &mut Ctx, f: usize, fd: RawFd) -> Result<Cycle> {
        if !self.connect(cx, fd)? {
            return Ok(Cycle::PortBusy);
        }
        let mut sent = 0;
        let start = f * self.request_len;
        while sent < self.request_len {
            cx.calls.sends += 1;
            match sys::send(fd, &self.messages[start + sent..start + self.request_len]) {
                Io::Done(n) => sent += n,
                // SO_SNDTIMEO (or still connecting): look whether the run was stopped.
                Io::Again | Io::Eof => {
                    if let Some(end) = stop_or_guard(cx) {
                        return end;
                    }
                }
                Io::Failed(e) => return Err(Error::Peer(format!("a crr request send failed: {e}"))),
            }
        }
        let mut got = 0;
        while got < self.buf.len() {
            cx.calls.recvs += 1;
            match sys::recv(fd, &mut self.buf[got..]) {
                Io::Done(n) => got += n,
                // SO_RCVTIMEO: nothing yet; look whether the run was stopped.
                Io::Again => {
                    if let Some(end) = stop_or_guard(cx) {
                        return end;
                    }
                }
                Io::Eof => return Err(torn()),
                Io::Failed(e) => return Err(Error::Peer(format!("a crr response receive failed: {e}"))),
            }
        }
        Ok(Cycle::Done)
    }

    /// Waits for the worker's pacing and charges it a cycle's request; `None` if a flag of
    /// `stop` came up first. Returns the clock for the cycle's start: `now`, or read again
    /// after a wait.
    fn paced(&self, cx: &mut Ctx, stop: u32, now: u64) -> Option<u64> {
        if !cx.pace(stop) {
            return None;
        }
        cx.charge(self.request_len - FLOW_HEADER_LEN);
        Some(if cx.pacer.enabled() { cx.start_clock() } else { now })
    }

    fn run_blocking(&mut self, cx: &mut Ctx) -> Result<Ending> {
        let mut now = cx.start_clock();
        while cx.events() & (DEADLINE | ABORT | GUARD) == 0 {
            let Some(paced) = self.paced(cx, DEADLINE | ABORT | GUARD, now) else { break };
            now = paced;
            self.flows[0].started = now;
            let fd = self.open(cx, false)?;
            let r = self.cycle(cx, 0, fd);
            close(cx, fd);
            match r? {
                Cycle::Done => now = self.count(cx, 0),
                Cycle::PortBusy => {}
                Cycle::Stopped => break,
            }
        }
        if cx.events() & ABORT != 0 {
            return Ok(Ending::Aborted);
        }
        Ok(Ending::Completed)
    }

    /// Starts flow `f`'s next cycle (a busy port is retried on the next one).
    fn begin(&mut self, cx: &mut Ctx, ep: &Epoll, f: usize, now: u64) -> Result<()> {
        loop {
            let fd = self.open(cx, true)?;
            match self.connect(cx, fd) {
                Ok(true) => {
                    cx.calls.other += 1;
                    ep.add(fd, f as u64, libc::EPOLLOUT as u32)?;
                    self.flows[f] = Flow { fd, phase: Phase::Connecting, started: now };
                    return Ok(());
                }
                Ok(false) => close(cx, fd),
                Err(e) => {
                    close(cx, fd);
                    return Err(e);
                }
            }
        }
    }

    /// Sends what is left of flow `f`'s request; on the whole of it, waits for the response.
    fn send_request(&mut self, cx: &mut Ctx, ep: &Epoll, f: usize, mut sent: usize) -> Result<()> {
        let fd = self.flows[f].fd;
        let start = f * self.request_len;
        while sent < self.request_len {
            cx.calls.sends += 1;
            match sys::send(fd, &self.messages[start + sent..start + self.request_len]) {
                Io::Done(n) => sent += n,
                Io::Again | Io::Eof => break,
                Io::Failed(e) => return Err(Error::Peer(format!("a crr request send failed: {e}"))),
            }
        }
        if sent < self.request_len {
            self.flows[f].phase = Phase::Sending(sent);
            return Ok(());
        }
        cx.calls.other += 1;
        ep.modify(fd, f as u64, libc::EPOLLIN as u32)?;
        self.flows[f].phase = Phase::Receiving(0);
        Ok(())
    }

    fn close_all(&mut self, cx: &mut Ctx) {
        for f in 0..self.flows.len() {
            if self.flows[f].fd >= 0 {
                close(cx, self.flows[f].fd);
                self.flows[f].fd = -1;
            }
        }
    }

    fn run_epoll(&mut self, cx: &mut Ctx) -> Result<Ending> {
        let nflows = self.flows.len();
        let mut ep = cx.epoll(nflows + 1)?;
        let now = cx.start_clock();
        for f in 0..nflows {
            // A stop while waiting: the loop below sees it.
            if let Some(now) = self.paced(cx, ABORT | GUARD, now) {
                self.begin(cx, &ep, f, now)?;
            }
        }
        let mut active = nflows;
        while active > 0 {
            let flags = cx.events();
            if flags & ABORT != 0 {
                self.close_all(cx);
                return Ok(Ending::Aborted);
            }
            if flags & GUARD != 0 {
                self.close_all(cx);
                return Err(peer_stuck());
            }
            let stopping = flags & DEADLINE != 0;
            let n = cx.wait(&mut ep, -1)?;
            for i in 0..n {
                let Some((f, _)) = cx.event(&ep, i) else {
                    continue;
                };
                let fd = self.flows[f].fd;
                match self.flows[f].phase {
                    Phase::Connecting => {
                        cx.calls.other += 1;
                        if let Some(e) = socket_error(fd) {
                            let busy = self.ports.is_some()
                                && matches!(e.raw_os_error(), Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE));
                            close(cx, fd);
                            self.flows[f].fd = -1;
                            if !busy {
                                self.close_all(cx);
                                return Err(connect_error(e, self.ports.is_some()));
                            }
                            self.report.port_busy += 1;
                            let started = self.flows[f].started;
                            self.begin(cx, &ep, f, started)?;
                            continue;
                        }
                        self.send_request(cx, &ep, f, 0)?;
                    }
                    Phase::Sending(sent) => self.send_request(cx, &ep, f, sent)?,
                    Phase::Receiving(mut got) => {
                        let mut done = false;
                        while got < self.buf.len() {
                            cx.calls.recvs += 1;
                            match sys::recv(fd, &mut self.buf[got..]) {
                                Io::Done(n) => got += n,
                                Io::Again => break,
                                Io::Eof => {
                                    self.close_all(cx);
                                    return Err(torn());
                                }
                                Io::Failed(e) => {
                                    self.close_all(cx);
                                    return Err(Error::Peer(format!("a crr response receive failed: {e}")));
                                }
                            }
                        }
                        if got == self.buf.len() {
                            done = true;
                        } else {
                            self.flows[f].phase = Phase::Receiving(got);
                        }
                        if done {
                            close(cx, fd);
                            self.flows[f].fd = -1;
                            self.flows[f].phase = Phase::Idle;
                            let now = self.count(cx, f);
                            if stopping {
                                active -= 1;
                            } else if let Some(now) = self.paced(cx, ABORT | GUARD, now) {
                                self.begin(cx, &ep, f, now)?;
                            }
                        }
                    }
                    Phase::Idle => {}
                }
            }
        }
        Ok(Ending::Completed)
    }
}

/// A run that ended early (the guard, an error) leaves cycles under way: their sockets
/// close with the loop.
impl Drop for Client {
    fn drop(&mut self) {
        close_held(self.flows.iter_mut().map(|f| &mut f.fd));
    }
}

/// Closes each of `fds` still open (a loop sets a descriptor it closed to -1).
fn close_held<'a>(fds: impl Iterator<Item = &'a mut RawFd>) {
    for fd in fds.filter(|fd| **fd >= 0) {
        // SAFETY: a descriptor the loop made and has not closed.
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
}

impl Loop for Client {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        if self.flows.len() > 1 {
            self.run_epoll(cx)
        } else {
            self.run_blocking(cx)
        }
    }

    fn report(&self) -> RoleReport {
        RoleReport { crr: Some(self.report.clone()), ..RoleReport::default() }
    }
}

/// How a blocking cycle that waited a STOP_CHECK_NS for its peer ends: stopped, failed by
/// the guard, or (`None`) it goes on waiting.
fn stop_or_guard(cx: &mut Ctx) -> Option<Result<Cycle>> {
    let flags = cx.events();
    if flags & ABORT != 0 {
        return Some(Ok(Cycle::Stopped));
    }
    if flags & GUARD != 0 {
        return Some(Err(peer_stuck()));
    }
    None
}

/// SO_ERROR of a socket whose non-blocking connect finished: `None` when it connected.
fn socket_error(fd: RawFd) -> Option<std::io::Error> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` and `len` are valid for getsockopt to write an int.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Some(errno());
    }
    (err != 0).then(|| std::io::Error::from_raw_os_error(err))
}

fn torn() -> Error {
    Error::Peer("the server closed a crr connection before its whole response arrived".into())
}

fn connect_error(e: std::io::Error, ports: bool) -> Error {
    match e.raw_os_error() {
        Some(libc::EADDRNOTAVAIL) if !ports => Error::Peer(
            "connect failed with EADDRNOTAVAIL: the client's ephemeral ports are used up by TIME_WAIT; use {linger0}, {client-ports} LO-HI, a shorter test, or net.ipv4.tcp_tw_reuse=1".into(),
        ),
        Some(libc::ECONNREFUSED) => Error::Peer(
            "the server refused a crr connection: its listener is gone (did the server stop?)".into(),
        ),
        _ => Error::Peer(format!("a crr connect failed: {e}")),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ConnPhase {
    /// This many bytes of the header and request are in.
    Request(usize),
    /// This many bytes of the response are out.
    Responding(usize),
    /// The whole response is out: the client's close ends the connection.
    AwaitClose,
}

#[derive(Clone, Copy)]
struct Conn {
    fd: RawFd,
    flow: u32,
    phase: ConnPhase,
}

pub struct Server {
    listener: RawFd,
    stop: RawFd,
    cookie: u64,
    flows: usize,
    request_len: usize,
    /// Per slot: its header and request as they come in.
    requests: Vec<u8>,
    response: Vec<u8>,
    /// `--close-first server`: close once the response is out, not after the client's close.
    closes_first: bool,
    conns: Vec<Conn>,
    free: Vec<usize>,
    report: CrrReport,
}

impl Server {
    pub fn new(spec: &TestSpec, listener: RawFd, cookie: u64, stop: RawFd) -> Server {
        // One slot per flow is enough for the client; the rest absorbs strangers and
        // connections whose close is still under way (as the ring server does).
        let slots = spec.flows as usize * 2 + 16;
        let request_len = FLOW_HEADER_LEN + spec.request_size as usize;
        let mut response = vec![0u8; spec.response_size as usize];
        fill_payload(&mut response);
        Server {
            listener,
            stop,
            cookie,
            flows: spec.flows as usize,
            request_len,
            requests: vec![0; slots * request_len],
            response,
            closes_first: spec.crr.close_first == CloseFirst::Server,
            conns: vec![Conn { fd: -1, flow: 0, phase: ConnPhase::AwaitClose }; slots],
            free: (0..slots).rev().collect(),
            report: CrrReport {
                linger0: spec.crr.linger0,
                server_closed_first: spec.crr.close_first == CloseFirst::Server,
                ..CrrReport::default()
            },
        }
    }

    /// A connection answered in full (and, unless the server closes first, closed by the
    /// client after it): counted as the client counts it.
    fn count(&mut self, cx: &mut Ctx, slot: usize) {
        let k = &mut cx.counters[self.conns[slot].flow as usize];
        k.transactions += 1;
        k.bytes_received += (self.request_len - FLOW_HEADER_LEN) as u64;
        k.bytes_sent += self.response.len() as u64;
        self.report.connections += 1;
    }

    fn release(&mut self, cx: &mut Ctx, slot: usize) {
        close(cx, self.conns[slot].fd);
        self.conns[slot].fd = -1;
        self.free.push(slot);
    }

    fn accept(&mut self, cx: &mut Ctx, ep: &Epoll, stopping: bool) -> Result<usize> {
        let mut opened = 0;
        for _ in 0..ACCEPTS_PER_TURN {
            cx.calls.other += 1;
            // SAFETY: no peer address is asked for.
            let fd = unsafe {
                libc::accept4(
                    self.listener,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                )
            };
            if fd < 0 {
                let e = errno();
                match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::ECONNABORTED | libc::EINTR) => break,
                    _ => return Err(Error::io("accepting a crr connection", e)),
                }
            }
            let Some(slot) = (!stopping).then(|| self.free.pop()).flatten() else {
                self.report.rejected += 1;
                close(cx, fd);
                continue;
            };
            self.conns[slot] = Conn { fd, flow: 0, phase: ConnPhase::Request(0) };
            cx.calls.other += 1;
            ep.add(fd, slot as u64, libc::EPOLLIN as u32)?;
            opened += 1;
        }
        Ok(opened)
    }

    /// Moves connection `slot` on; returns whether it ended.
    fn serve(&mut self, cx: &mut Ctx, ep: &Epoll, slot: usize) -> Result<bool> {
        let fd = self.conns[slot].fd;
        match self.conns[slot].phase {
            ConnPhase::Request(mut got) => {
                let start = slot * self.request_len;
                while got < self.request_len {
                    cx.calls.recvs += 1;
                    match sys::recv(fd, &mut self.requests[start + got..start + self.request_len]) {
                        Io::Done(n) => got += n,
                        Io::Again => {
                            self.conns[slot].phase = ConnPhase::Request(got);
                            return Ok(false);
                        }
                        // The client went away mid-request.
                        Io::Eof | Io::Failed(_) => {
                            self.report.rejected += 1;
                            self.release(cx, slot);
                            return Ok(true);
                        }
                    }
                }
                let req = &self.requests[start..start + FLOW_HEADER_LEN];
                let mut c = [0u8; 8];
                c.copy_from_slice(&req[..8]);
                let mut fl = [0u8; 4];
                fl.copy_from_slice(&req[8..12]);
                let flow = u32::from_le_bytes(fl);
                if u64::from_le_bytes(c) != self.cookie || flow as usize >= self.flows {
                    self.report.rejected += 1;
                    self.release(cx, slot);
                    return Ok(true);
                }
                self.conns[slot].flow = flow;
                self.respond(cx, ep, slot, 0)
            }
            ConnPhase::Responding(sent) => self.respond(cx, ep, slot, sent),
            ConnPhase::AwaitClose => {
                let mut one = [0u8; 1];
                cx.calls.recvs += 1;
                let closed = match sys::recv(fd, &mut one) {
                    Io::Again => return Ok(false),
                    Io::Eof => true,
                    // With --linger0 the client's close is a reset.
                    Io::Failed(e) => e.raw_os_error() == Some(libc::ECONNRESET),
                    Io::Done(_) => false,
                };
                if closed {
                    self.count(cx, slot);
                } else {
                    self.report.rejected += 1;
                }
                self.release(cx, slot);
                Ok(true)
            }
        }
    }

    fn respond(&mut self, cx: &mut Ctx, ep: &Epoll, slot: usize, mut sent: usize) -> Result<bool> {
        let fd = self.conns[slot].fd;
        // The worker's one pacing bucket; the guard (seen at the loop's top) ends a wait.
        let go = sent > 0 || cx.pace(GUARD);
        while go && sent < self.response.len() {
            cx.calls.sends += 1;
            match sys::send(fd, &self.response[sent..]) {
                Io::Done(n) => {
                    sent += n;
                    cx.charge(n);
                }
                Io::Again | Io::Eof => break,
                Io::Failed(_) => {
                    self.report.rejected += 1;
                    self.release(cx, slot);
                    return Ok(true);
                }
            }
        }
        let was = self.conns[slot].phase;
        if sent < self.response.len() {
            if !matches!(was, ConnPhase::Responding(_)) {
                cx.calls.other += 1;
                ep.modify(fd, slot as u64, libc::EPOLLOUT as u32)?;
            }
            self.conns[slot].phase = ConnPhase::Responding(sent);
            return Ok(false);
        }
        if self.closes_first {
            self.count(cx, slot);
            self.release(cx, slot);
            return Ok(true);
        }
        if matches!(was, ConnPhase::Responding(_)) {
            cx.calls.other += 1;
            ep.modify(fd, slot as u64, libc::EPOLLIN as u32)?;
        }
        self.conns[slot].phase = ConnPhase::AwaitClose;
        Ok(false)
    }
}

impl Server {
    /// One flow: netserver's loop on blocking sockets, accept, receive the request, send
    /// the response, close (after the client's close with `--close-first client`). A poll
    /// of the listener, the stop signal and the watcher's wake-up comes before each accept,
    /// so the run ends the moment the session says so; the connection's SO_RCVTIMEO bounds
    /// its waits, so the stop and the guard are seen within STOP_CHECK_NS of a silent peer.
    fn run_blocking(&mut self, cx: &mut Ctx) -> Result<Ending> {
        sys::set_nonblocking(self.listener, false)?;
        let mut fds = [self.listener, self.stop, cx.wake_fd].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        loop {
            if cx.events() & GUARD != 0 {
                return Err(peer_stuck());
            }
            cx.calls.other += 1;
            // SAFETY: `fds` is a valid array of pollfd for the call's whole length.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if n < 0 {
                let e = errno();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(Error::io("waiting for a crr connection", e));
            }
            if fds[2].revents != 0 {
                sys::drain(cx.wake_fd);
            }
            if fds[1].revents != 0 {
                break;
            }
            if fds[0].revents == 0 {
                continue;
            }
            cx.calls.other += 1;
            // SAFETY: no peer address is asked for.
            let fd = unsafe {
                libc::accept4(self.listener, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC)
            };
            if fd < 0 {
                let e = errno();
                match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::ECONNABORTED | libc::EINTR) => continue,
                    _ => return Err(Error::io("accepting a crr connection", e)),
                }
            }
            self.conns[0] = Conn { fd, flow: 0, phase: ConnPhase::Request(0) };
            sys::set_recv_timeout(fd, STOP_CHECK_NS)?;
            sys::set_send_timeout(fd, STOP_CHECK_NS)?;
            self.serve_blocking(cx)?;
        }
        Ok(Ending::Completed)
    }

    /// Serves the connection in slot 0 to its end on a blocking socket.
    fn serve_blocking(&mut self, cx: &mut Ctx) -> Result<()> {
        let fd = self.conns[0].fd;
        let mut silent = 0;
        let mut got = 0;
        while got < self.request_len {
            cx.calls.recvs += 1;
            match sys::recv(fd, &mut self.requests[got..self.request_len]) {
                Io::Done(n) => got += n,
                Io::Again if self.keep_waiting(cx, &mut silent)? => {}
                Io::Again | Io::Eof | Io::Failed(_) => return self.reject(cx),
            }
        }
        let mut c = [0u8; 8];
        c.copy_from_slice(&self.requests[..8]);
        let mut fl = [0u8; 4];
        fl.copy_from_slice(&self.requests[8..12]);
        let flow = u32::from_le_bytes(fl);
        if u64::from_le_bytes(c) != self.cookie || flow as usize >= self.flows {
            return self.reject(cx);
        }
        self.conns[0].flow = flow;
        if !cx.pace(GUARD) {
            return self.reject(cx);
        }
        let mut sent = 0;
        while sent < self.response.len() {
            cx.calls.sends += 1;
            match sys::send(fd, &self.response[sent..]) {
                Io::Done(n) => {
                    sent += n;
                    cx.charge(n);
                }
                // SO_SNDTIMEO: a client that stopped reading is failed by the guard.
                Io::Again if cx.events() & GUARD != 0 => return Err(peer_stuck()),
                Io::Again => {}
                Io::Eof | Io::Failed(_) => return self.reject(cx),
            }
        }
        if !self.closes_first {
            // The client's close (a reset with --linger0) ends the connection.
            let mut one = [0u8; 1];
            loop {
                cx.calls.recvs += 1;
                match sys::recv(fd, &mut one) {
                    Io::Eof => break,
                    Io::Failed(e) if e.raw_os_error() == Some(libc::ECONNRESET) => break,
                    Io::Again if self.keep_waiting(cx, &mut silent)? => {}
                    Io::Again | Io::Done(_) | Io::Failed(_) => return self.reject(cx),
                }
            }
        }
        self.count(cx, 0);
        close(cx, fd);
        self.conns[0].fd = -1;
        Ok(())
    }

    /// After one more SO_RCVTIMEO without data: whether to go on waiting (not once the
    /// run stops or the peer has been silent for SILENT_PEER_NS); the guard fails the run.
    fn keep_waiting(&self, cx: &mut Ctx, silent: &mut u64) -> Result<bool> {
        if cx.events() & GUARD != 0 {
            return Err(peer_stuck());
        }
        *silent += STOP_CHECK_NS;
        Ok(*silent < SILENT_PEER_NS && !signalled(self.stop))
    }

    /// Drops the connection in slot 0 uncounted.
    fn reject(&mut self, cx: &mut Ctx) -> Result<()> {
        self.report.rejected += 1;
        close(cx, self.conns[0].fd);
        self.conns[0].fd = -1;
        Ok(())
    }
}

/// Whether the side's stop eventfd has been signalled (polled, never read: every worker of
/// the side watches the one eventfd).
fn signalled(stop: RawFd) -> bool {
    let mut p = libc::pollfd { fd: stop, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd for the call; a zero timeout never blocks.
    unsafe { libc::poll(&mut p, 1, 0) > 0 && p.revents & libc::POLLIN != 0 }
}

/// A run that ended early (the guard, an error) leaves connections open, in CLOSE-WAIT once
/// their client closed: they close with the loop.
impl Drop for Server {
    fn drop(&mut self) {
        close_held(self.conns.iter_mut().map(|k| &mut k.fd));
    }
}

/// Serves connections until the stop signal, then until every one under way is done; the
/// guard fails a client that never finishes.
impl Loop for Server {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        if self.flows == 1 {
            return self.run_blocking(cx);
        }
        sys::set_nonblocking(self.listener, true)?;
        let mut ep = cx.epoll(self.conns.len() + 3)?;
        ep.add(self.listener, LISTENER as u64, libc::EPOLLIN as u32)?;
        // Polled, never read: every worker of the side watches the one eventfd.
        ep.add(self.stop, STOP as u64, libc::EPOLLIN as u32)?;
        let mut active = 0usize;
        let mut stopping = false;
        while !(stopping && active == 0) {
            if cx.events() & GUARD != 0 {
                return Err(peer_stuck());
            }
            let n = cx.wait(&mut ep, -1)?;
            for i in 0..n {
                let Some((token, _)) = cx.event(&ep, i) else {
                    continue;
                };
                match token {
                    STOP => {
                        stopping = true;
                        ep.delete(self.stop)?;
                        ep.delete(self.listener)?;
                    }
                    LISTENER => active += self.accept(cx, &ep, stopping)?,
                    slot => {
                        if self.conns[slot].fd >= 0 && self.serve(cx, &ep, slot)? {
                            active -= 1;
                        }
                    }
                }
            }
        }
        Ok(Ending::Completed)
    }

    fn report(&self) -> RoleReport {
        RoleReport { crr: Some(self.report.clone()), ..RoleReport::default() }
    }
}
