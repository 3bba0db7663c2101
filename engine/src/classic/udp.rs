//! UDP over system calls: udp-stream and udp-rr with the ring workloads' wire format
//! (every datagram starts with its flow's 8-byte sequence number; a udp-rr response echoes
//! its request's) and their counters, so a classic side can face a ring side.
//!
//! UDP has no EOF: a receiver (the udp-stream receiver, the udp-rr server) ends on its own
//! clock. After the deadline it goes on while datagrams still come, and ends after a quiet
//! spell without any, or at the watcher's guard (the longest drain). A blocking socket
//! waits with SO_RCVTIMEO and an epoll loop with its wait's timeout, so the kernel keeps
//! the time.

use crate::classic::context::{Ctx, Loop};
use crate::classic::sys::{self, Io, OwnedTimer};
use crate::classic::{ABORT, DEADLINE, GUARD};
use crate::net::udp::HELLO_BIT;
use crate::verify::fill_payload;
use crate::workload::driver::RoleReport;
use crate::workload::sequence::{add_sequences, SeqTracker};
use crate::workload::udp_stream::{DRAIN_MAX_NS, DRAIN_TICK_NS};
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::report::Ending;
use ringperf_core::report::{UdpFlowReport, UdpReport};
use ringperf_core::spec::{TestSpec, UDP_SEQ_LEN};

const CALLS_PER_TURN: usize = 16;

/// The guard of a udp-rr server: the longest it drains after its deadline (as the ring's).
pub fn rr_server_drain(spec: &TestSpec) -> (u64, u64) {
    let quiet = rr_quiet_ns(spec);
    (quiet, 200_000_000 + quiet)
}

/// Quiet for two client timeouts: a retransmission would have come by then.
fn rr_quiet_ns(spec: &TestSpec) -> u64 {
    (2 * u64::from(spec.udp.timeout_us) * 1000).max(20_000_000)
}

/// The udp-stream receiver's drain: (quiet spell, longest drain).
pub fn stream_drain() -> (u64, u64) {
    (DRAIN_TICK_NS, DRAIN_MAX_NS)
}

fn seq_of(d: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

/// Writes the numbers `first`, `first + 1`, ... at the start of each `size`-byte datagram.
fn number(buf: &mut [u8], size: usize, first: u64) {
    for (k, d) in buf.chunks_mut(size.max(1)).enumerate() {
        if d.len() >= UDP_SEQ_LEN as usize {
            d[..UDP_SEQ_LEN as usize].copy_from_slice(&(first + k as u64).to_le_bytes());
        }
    }
}

fn report_for(flows: usize, datagram_size: u32) -> UdpReport {
    UdpReport { datagram_size, flows: vec![UdpFlowReport::default(); flows], ..UdpReport::default() }
}

fn port_closed() -> Error {
    Error::Peer("the receiver's UDP port is closed (ICMP port unreachable): did the server stop?".into())
}

/// What a receive loop does at the end of a quiet wait: after the deadline the drain is
/// over, and this side's window ends when the last datagram could have come.
fn quiet_end(cx: &mut Ctx, quiet_ns: u64) -> Option<u64> {
    (cx.events() & DEADLINE != 0).then(|| cx.deadline_ns.max(monotonic_ns().saturating_sub(quiet_ns)))
}

pub struct Sender {
    buf: Vec<u8>,
    size: usize,
    per_send: usize,
    seq: Vec<u64>,
    report: UdpReport,
}

impl Sender {
    pub fn new(spec: &TestSpec, flows: usize) -> Sender {
        let size = spec.send_size as usize;
        let per_send = spec.udp_datagrams_per_send() as usize;
        let mut buf = vec![0u8; size * per_send];
        fill_payload(&mut buf);
        let mut report = report_for(flows, spec.send_size);
        report.gso_segment = spec.udp.gso_segment;
        Sender { buf, size, per_send, seq: vec![0; flows], report }
    }

    /// One send of flow `f`'s next datagrams; `Ok(false)` when the socket has no room.
    #[inline]
    fn send_once(&mut self, cx: &mut Ctx, f: usize) -> Result<bool> {
        number(&mut self.buf, self.size, self.seq[f]);
        cx.calls.sends += 1;
        match sys::send(cx.fds[f], &self.buf) {
            Io::Done(n) => {
                cx.charge(n);
                let d = n.div_ceil(self.size) as u64;
                self.seq[f] += self.per_send as u64;
                self.report.sends += 1;
                self.report.datagrams_sent += d;
                self.report.flows[f].datagrams_sent += d;
                cx.counters[f].bytes_sent += n as u64;
                Ok(true)
            }
            Io::Again | Io::Eof => Ok(false),
            Io::Failed(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Err(port_closed()),
            // The kernel refused the datagrams (ENOBUFS): their numbers are gone, so the
            // receiver counts them as lost, as a ring sender's failed send does.
            Io::Failed(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                self.seq[f] += self.per_send as u64;
                self.report.sends += 1;
                self.report.send_errors += self.per_send as u64;
                Ok(false)
            }
            Io::Failed(e) => Err(Error::io("a UDP send", e)),
        }
    }
}

impl Loop for Sender {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        if cx.fds.len() == 1 {
            while cx.events() & (DEADLINE | ABORT) == 0 {
                if cx.pace(DEADLINE | ABORT) {
                    self.send_once(cx, 0)?;
                }
            }
        } else {
            let mut ep = cx.flows_epoll(libc::EPOLLOUT)?;
            while cx.events() & (DEADLINE | ABORT) == 0 {
                let n = cx.wait(&mut ep, -1)?;
                for i in 0..n {
                    let Some((token, _)) = cx.event(&ep, i) else {
                        continue;
                    };
                    for _ in 0..CALLS_PER_TURN {
                        if !cx.pace(DEADLINE | ABORT) || !self.send_once(cx, token)? {
                            break;
                        }
                    }
                }
            }
        }
        Ok(if cx.events() & ABORT != 0 { Ending::Aborted } else { Ending::Completed })
    }

    fn report(&self) -> RoleReport {
        RoleReport { udp: Some(self.report.clone()), ..RoleReport::default() }
    }
}

/// A receiver's or server's datagrams, one receive at a time: what each one is for
/// the role ([`Datagrams::on`]), the drain around them (`run`).
trait Datagrams {
    /// One datagram (or a GRO batch) arrived on flow `f`.
    fn on(&mut self, cx: &mut Ctx, f: usize, n: usize) -> Result<()>;
    /// The buffer a receive lands in, and the report that counts a stray datagram.
    fn landing(&mut self) -> (&mut [u8], &mut UdpReport);
}

/// How raised `flags` end a drain: `Some(None)` for a stop, `Some(Some(now))` for the
/// guard (the window ends there); `None` while neither is up.
fn flagged_end(flags: u32) -> Option<Option<u64>> {
    if flags & ABORT != 0 {
        Some(None)
    } else if flags & GUARD != 0 {
        Some(Some(monotonic_ns()))
    } else {
        None
    }
}

/// Receives on every flow until the drain after the deadline ends; returns the end of
/// this side's window, or `None` when a stop ended it.
fn receive_until_drained(d: &mut dyn Datagrams, cx: &mut Ctx, quiet_ns: u64) -> Result<Option<u64>> {
    let one = |d: &mut dyn Datagrams, cx: &mut Ctx, f: usize| -> Result<bool> {
        cx.calls.recvs += 1;
        match sys::recv(cx.fds[f], d.landing().0) {
            Io::Done(n) => {
                d.on(cx, f, n)?;
                Ok(true)
            }
            Io::Again => Ok(false),
            // The watcher's shutdown (seen at the loop's top), or a zero-length datagram.
            Io::Eof if cx.events() & (ABORT | GUARD) != 0 => Ok(false),
            Io::Eof => {
                d.landing().1.stray += 1;
                Ok(false)
            }
            // ICMP port unreachable for an earlier send: the peer is not there (yet).
            Io::Failed(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                d.landing().1.stray += 1;
                Ok(true)
            }
            Io::Failed(_) if cx.events() & (ABORT | GUARD) != 0 => Ok(false),
            Io::Failed(e) => Err(Error::io("a UDP receive", e)),
        }
    };
    if cx.fds.len() == 1 {
        sys::set_recv_timeout(cx.fds[0], quiet_ns)?;
        loop {
            if let Some(end) = flagged_end(cx.events()) {
                return Ok(end);
            }
            if !one(d, cx, 0)? {
                if let Some(end) = quiet_end(cx, quiet_ns) {
                    return Ok(Some(end));
                }
            }
        }
    }
    let mut ep = cx.flows_epoll(libc::EPOLLIN)?;
    let quiet_ms = quiet_ns.div_ceil(1_000_000) as i32;
    loop {
        let flags = cx.events();
        if let Some(end) = flagged_end(flags) {
            return Ok(end);
        }
        let n = cx.wait(&mut ep, if flags & DEADLINE != 0 { quiet_ms } else { -1 })?;
        if n == 0 {
            if let Some(end) = quiet_end(cx, quiet_ns) {
                return Ok(Some(end));
            }
        }
        for i in 0..n {
            let Some((token, _)) = cx.event(&ep, i) else {
                continue;
            };
            for _ in 0..CALLS_PER_TURN {
                if !one(d, cx, token)? {
                    break;
                }
            }
        }
    }
}

pub struct Receiver {
    buf: Vec<u8>,
    size: usize,
    seq: Vec<SeqTracker>,
    report: UdpReport,
    end_ns: Option<u64>,
}

impl Receiver {
    pub fn new(spec: &TestSpec, flows: usize) -> Receiver {
        let size = spec.send_size as usize;
        let buf_len = if spec.udp.gro { 65_536.max(size) } else { size };
        let mut report = report_for(flows, spec.send_size);
        report.gro = spec.udp.gro;
        Receiver {
            buf: vec![0; buf_len],
            size,
            seq: vec![SeqTracker::default(); flows],
            report,
            end_ns: None,
        }
    }
}

impl Datagrams for Receiver {
    #[inline]
    fn on(&mut self, cx: &mut Ctx, f: usize, n: usize) -> Result<()> {
        self.report.receives += 1;
        // GRO hands over equal-size datagrams back to back (the last may be shorter).
        for d in self.buf[..n].chunks(self.size) {
            if d.len() < UDP_SEQ_LEN as usize || seq_of(d) & HELLO_BIT != 0 {
                self.report.stray += 1;
                continue;
            }
            self.seq[f].on(seq_of(d));
            cx.counters[f].bytes_received += d.len() as u64;
        }
        Ok(())
    }

    fn landing(&mut self) -> (&mut [u8], &mut UdpReport) {
        (&mut self.buf, &mut self.report)
    }
}

impl Loop for Receiver {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        let (quiet, _) = stream_drain();
        self.end_ns = receive_until_drained(self, cx, quiet)?;
        Ok(if self.end_ns.is_some() { Ending::Completed } else { Ending::Aborted })
    }

    fn report(&self) -> RoleReport {
        let mut r = self.report.clone();
        add_sequences(&mut r, &self.seq);
        RoleReport { udp: Some(r), end_ns: self.end_ns, ..RoleReport::default() }
    }
}

/// udp-rr server: answers every request with its number until the drain ends; a new
/// number counts a transaction, an old one is a retransmission (answered, counted once).
pub struct RrServer {
    buf: Vec<u8>,
    response: Vec<u8>,
    next: Vec<u64>,
    quiet_ns: u64,
    report: UdpReport,
    end_ns: Option<u64>,
}

impl RrServer {
    pub fn new(spec: &TestSpec, flows: usize) -> RrServer {
        let mut response = vec![0u8; spec.response_size as usize];
        fill_payload(&mut response);
        RrServer {
            buf: vec![0; spec.request_size as usize],
            response,
            next: vec![0; flows],
            quiet_ns: rr_quiet_ns(spec),
            report: report_for(flows, spec.response_size),
            end_ns: None,
        }
    }
}

impl Datagrams for RrServer {
    fn on(&mut self, cx: &mut Ctx, f: usize, n: usize) -> Result<()> {
        if n < UDP_SEQ_LEN as usize {
            self.report.stray += 1;
            return Ok(());
        }
        let seq = seq_of(&self.buf);
        self.report.receives += 1;
        if seq >= self.next[f] {
            self.next[f] = seq + 1;
            self.report.datagrams_received += 1;
            self.report.flows[f].datagrams_received += 1;
            let k = &mut cx.counters[f];
            k.transactions += 1;
            k.bytes_received += n as u64;
            k.bytes_sent += self.response.len() as u64;
        } else {
            self.report.duplicated += 1;
            self.report.flows[f].duplicated += 1;
        }
        number(&mut self.response, usize::MAX, seq);
        if !cx.pace(ABORT | GUARD) {
            return Ok(());
        }
        cx.calls.sends += 1;
        self.report.sends += 1;
        match sys::send(cx.fds[f], &self.response) {
            Io::Done(n) => {
                cx.charge(n);
                self.report.datagrams_sent += 1;
                self.report.flows[f].datagrams_sent += 1;
            }
            // No room or refused: the client's timeout sends the request again.
            Io::Again | Io::Eof => self.report.send_errors += 1,
            Io::Failed(e) if matches!(e.raw_os_error(), Some(libc::ENOBUFS | libc::ECONNREFUSED)) => {
                self.report.send_errors += 1
            }
            // The watcher shut the socket down: the drain or a stop ended the run.
            Io::Failed(_) if cx.events() & (ABORT | GUARD) != 0 => {}
            Io::Failed(e) => return Err(Error::io("a UDP response send", e)),
        }
        Ok(())
    }

    fn landing(&mut self) -> (&mut [u8], &mut UdpReport) {
        (&mut self.buf, &mut self.report)
    }
}

impl Loop for RrServer {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        let quiet = self.quiet_ns;
        self.end_ns = receive_until_drained(self, cx, quiet)?;
        Ok(if self.end_ns.is_some() { Ending::Completed } else { Ending::Aborted })
    }

    fn report(&self) -> RoleReport {
        RoleReport { udp: Some(self.report.clone()), end_ns: self.end_ns, ..RoleReport::default() }
    }
}

/// udp-rr client: per flow a request with its number, the response awaited for
/// --timeout-us, then sent again with the same number; after the deadline a timeout ends
/// the flow's last transaction instead.
pub struct RrClient {
    request: Vec<u8>,
    buf: Vec<u8>,
    timeout_ns: u64,
    seq: Vec<u64>,
    started: Vec<u64>,
    active: Vec<bool>,
    /// Several flows: one timerfd per flow for its transaction's timeout.
    timers: Vec<OwnedTimer>,
    report: UdpReport,
}

/// What became of one receive of a response.
enum Answer {
    /// The response to the flow's current request.
    Matched(usize),
    /// Something else (stale, stray): keep waiting.
    Other,
    /// Nothing (more) to read: the timeout (blocking) or an empty socket (epoll).
    Nothing,
    /// The watcher shut the socket down.
    Shut,
}

impl RrClient {
    pub fn new(spec: &TestSpec, flows: usize) -> Result<RrClient> {
        let mut request = vec![0u8; spec.request_size as usize];
        fill_payload(&mut request);
        let timers = if flows > 1 {
            (0..flows).map(|_| OwnedTimer::new()).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        Ok(RrClient {
            request,
            buf: vec![0; spec.response_size as usize],
            timeout_ns: u64::from(spec.udp.timeout_us) * 1000,
            seq: vec![0; flows],
            started: vec![0; flows],
            active: vec![false; flows],
            timers,
            report: report_for(flows, spec.request_size),
        })
    }

    /// Sends flow `f`'s request (unless a stop or the deadline comes while it waits for
    /// its pacing: then its timeout ends it) and arms its timeout.
    fn send_request(&mut self, cx: &mut Ctx, f: usize) -> Result<()> {
        number(&mut self.request, usize::MAX, self.seq[f]);
        if !cx.pace(DEADLINE | ABORT) {
            return self.arm_timeout(cx, f);
        }
        cx.charge(self.request.len());
        cx.calls.sends += 1;
        self.report.sends += 1;
        self.report.datagrams_sent += 1;
        self.report.flows[f].datagrams_sent += 1;
        match sys::send(cx.fds[f], &self.request) {
            Io::Done(_) => {}
            // Lost before it left: the timeout sends it again.
            Io::Again | Io::Eof => self.report.send_errors += 1,
            Io::Failed(e) if matches!(e.raw_os_error(), Some(libc::ENOBUFS | libc::ECONNREFUSED)) => {
                self.report.send_errors += 1
            }
            Io::Failed(_) if cx.events() & ABORT != 0 => {}
            Io::Failed(e) => return Err(Error::io("a UDP request send", e)),
        }
        self.arm_timeout(cx, f)
    }

    fn arm_timeout(&mut self, cx: &mut Ctx, f: usize) -> Result<()> {
        if let Some(t) = self.timers.get(f) {
            cx.calls.other += 1;
            t.arm(self.timeout_ns)?;
        }
        Ok(())
    }

    fn recv_answer(&mut self, cx: &mut Ctx, f: usize) -> Result<Answer> {
        cx.calls.recvs += 1;
        match sys::recv(cx.fds[f], &mut self.buf) {
            Io::Done(n) if n < UDP_SEQ_LEN as usize => {
                self.report.stray += 1;
                Ok(Answer::Other)
            }
            Io::Done(n) if seq_of(&self.buf) == self.seq[f] => Ok(Answer::Matched(n)),
            Io::Done(_) => {
                self.report.stale_responses += 1;
                Ok(Answer::Other)
            }
            Io::Again => Ok(Answer::Nothing),
            Io::Eof if cx.events() & ABORT != 0 => Ok(Answer::Shut),
            Io::Eof => {
                self.report.stray += 1;
                Ok(Answer::Other)
            }
            Io::Failed(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                self.report.stray += 1;
                Ok(Answer::Other)
            }
            Io::Failed(e) => Err(Error::io("a UDP response receive", e)),
        }
    }

    /// The response of flow `f` came: count it; returns the clock it read.
    fn matched(&mut self, cx: &mut Ctx, f: usize, n: usize) -> u64 {
        let now = cx.record(self.started[f]);
        self.report.receives += 1;
        self.report.datagrams_received += 1;
        self.report.flows[f].datagrams_received += 1;
        let k = &mut cx.counters[f];
        k.transactions += 1;
        k.bytes_sent += self.request.len() as u64;
        k.bytes_received += n as u64;
        self.seq[f] += 1;
        now
    }

    fn timed_out(&mut self, f: usize) {
        self.report.timeouts += 1;
        self.report.flows[f].timeouts += 1;
    }

    fn retransmit(&mut self, cx: &mut Ctx, f: usize) -> Result<()> {
        self.report.retransmissions += 1;
        self.report.flows[f].retransmissions += 1;
        self.send_request(cx, f)
    }

    fn run_blocking(&mut self, cx: &mut Ctx) -> Result<Ending> {
        sys::set_recv_timeout(cx.fds[0], self.timeout_ns)?;
        let mut now = cx.start_clock();
        'transactions: while cx.events() & (DEADLINE | ABORT) == 0 {
            self.started[0] = now;
            self.send_request(cx, 0)?;
            loop {
                match self.recv_answer(cx, 0)? {
                    Answer::Matched(n) => {
                        now = self.matched(cx, 0, n);
                        continue 'transactions;
                    }
                    Answer::Other => {}
                    Answer::Shut => break 'transactions,
                    Answer::Nothing => {
                        self.timed_out(0);
                        if cx.events() & (DEADLINE | ABORT) != 0 {
                            break 'transactions;
                        }
                        self.retransmit(cx, 0)?;
                    }
                }
            }
        }
        Ok(if cx.events() & ABORT != 0 { Ending::Aborted } else { Ending::Completed })
    }

    fn run_epoll(&mut self, cx: &mut Ctx) -> Result<Ending> {
        let nflows = cx.fds.len();
        let mut ep = cx.epoll(2 * nflows + 1)?;
        for (f, &fd) in cx.fds.iter().enumerate() {
            ep.add(fd, f as u64, libc::EPOLLIN as u32)?;
            ep.add(self.timers[f].fd(), (nflows + f) as u64, libc::EPOLLIN as u32)?;
        }
        let now = cx.start_clock();
        for f in 0..nflows {
            self.started[f] = now;
            self.active[f] = true;
            self.send_request(cx, f)?;
        }
        let mut active = nflows;
        while active > 0 {
            let flags = cx.events();
            if flags & ABORT != 0 {
                return Ok(Ending::Aborted);
            }
            let stopping = flags & DEADLINE != 0;
            let n = cx.wait(&mut ep, -1)?;
            for i in 0..n {
                let Some((token, _)) = cx.event(&ep, i) else {
                    continue;
                };
                if token >= nflows {
                    let f = token - nflows;
                    cx.calls.other += 1;
                    // Re-armed since it fired (its response came): nothing to read.
                    if sys::drain(self.timers[f].fd()) == 0 || !self.active[f] {
                        continue;
                    }
                    self.timed_out(f);
                    if stopping {
                        self.active[f] = false;
                        active -= 1;
                    } else {
                        self.retransmit(cx, f)?;
                    }
                    continue;
                }
                let f = token;
                for _ in 0..CALLS_PER_TURN {
                    match self.recv_answer(cx, f)? {
                        Answer::Matched(n) if self.active[f] => {
                            let now = self.matched(cx, f, n);
                            if stopping {
                                // Its timer may still fire: an inactive flow ignores it.
                                self.active[f] = false;
                                active -= 1;
                            } else {
                                self.started[f] = now;
                                self.send_request(cx, f)?;
                            }
                        }
                        Answer::Matched(_) | Answer::Other => {}
                        Answer::Nothing => break,
                        Answer::Shut => return Ok(Ending::Aborted),
                    }
                }
            }
        }
        Ok(Ending::Completed)
    }
}

impl Loop for RrClient {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending> {
        if cx.fds.len() > 1 {
            self.run_epoll(cx)
        } else {
            self.run_blocking(cx)
        }
    }

    fn report(&self) -> RoleReport {
        RoleReport { udp: Some(self.report.clone()), ..RoleReport::default() }
    }
}
