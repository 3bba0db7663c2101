//! UDP_RR: `--burst N` transactions in flight per flow (one by default), or open loop
//! (`--rate`) with up to `--backlog` outstanding; each request carries its own sequence
//! number and the response echoes it.
//!
//! Both sides move their datagrams through a datagram send path and a standing multishot
//! datagram receive per flow (armed once, not per transaction: a transaction costs each
//! side one send SQE and no receive SQE); the workload reads each datagram's number through
//! `payload`, and arms a receive again only when the kernel ended it (no F_MORE).
//!
//! Client: each flow keeps its outstanding requests in a small table indexed by number
//! modulo the depth, because responses may come back in any order or not at all; a number
//! whose slot is still taken (a lost request being retried) is skipped. Closed loop the
//! whole burst is due at the start and each response makes the next request due, sent in
//! the same enter; open loop the shared [`Schedule`] makes requests due, each counting its
//! round trip from its intended send time. With one outstanding a send skips its CQE;
//! deeper, each send keeps its buffer until its CQE, a flow keeps at most
//! [`udp_rr_send_depth`] in flight, and requests beyond wait for a buffer. A response
//! completes its request (one clock read at each edge). One multishot Timeout per worker
//! ticks every quarter of --timeout-us (one clock read per tick, none per transaction): a
//! request without its response for --timeout-us by then is counted as a timeout and sent
//! again with the same number, so a lost datagram costs one timeout, not the run. A
//! response for a number not outstanding (answered already, or the answer to the first
//! copy of a retransmitted one) is stale: counted and ignored. After the deadline a timeout
//! ends a request instead of retrying it, and a request still waiting for a buffer is not
//! sent.
//!
//! One-way delay (requests and responses with room for a send stamp): the client stamps a
//! request with its transaction edge's clock read and records a response's delay at the
//! read that ends the transaction; the server reads its clock once per completion batch,
//! records each request's delay against it and stamps the responses with it.
//!
//! Pacing (`-b`, `--flow-rate`, a server's `--max-rate`): each side's [`Pacer`] holds the
//! datagrams it sends to its rate. A request without tokens waits with those waiting for
//! a send buffer, a response with the answers owed; the pacer's tick sends them.
//!
//! Server: every request is answered with its number. A number seen before is a
//! retransmission (answered again, counted once): the server keeps the newest number seen
//! per slot of the client's table. It ends like the UDP stream receiver: after its
//! deadline, once no request arrived for a quiet period, it cancels its receives.

use std::os::fd::RawFd;

use io_uring::squeue::Flags;
use io_uring::{opcode, types};

use crate::io::{op, RecvEvent, RecvPath, SendEvent, SendPath};
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::verify::Verifier;
use crate::workload::drain::Drain;
use crate::workload::driver::{RoleReport, Run, Workload};
use crate::workload::pacer::Pacer;
use crate::workload::schedule::Schedule;
use crate::workload::standing::StandingReceives;
use ringperf_core::error::Result;
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::intervals::FlowCounters;
use ringperf_core::measure::one_way::OneWayRecorder;
use ringperf_core::report::{RrReport, UdpFlowReport, UdpReport};
use ringperf_core::spec::TestSpec;

fn timespec(ns: u64) -> Box<types::Timespec> {
    Box::new(types::Timespec::new().sec(ns / 1_000_000_000).nsec((ns % 1_000_000_000) as u32))
}

fn seq_of(buf: &[u8]) -> u64 {
    u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"))
}

/// A request's number when its slot of the flow's table is free.
const FREE: u64 = u64::MAX;
/// A request's last send time while it waits for a send buffer.
const UNSENT: u64 = u64::MAX;

/// One request a flow has outstanding, in the flow's table at its number modulo the depth:
/// responses may come back in any order or not at all, so they are matched by number.
#[derive(Clone, Copy)]
struct Request {
    /// Its number, or [`FREE`].
    seq: u64,
    /// When it came due, its latency counts from here (retransmissions included): when it
    /// was made, closed loop; its intended send time, open loop.
    started: u64,
    /// When it was last sent (the timeout counts from here), or [`UNSENT`].
    sent_at: u64,
}

const NO_REQUEST: Request = Request { seq: FREE, started: 0, sent_at: UNSENT };

#[derive(Clone, Copy, Default)]
struct ClientFlow {
    /// The number the flow's next request takes, unless its slot is still taken.
    next_seq: u64,
    /// Requests in its table: due, sent or not, and not yet answered.
    outstanding: u32,
    /// Requests made but waiting for a send buffer, oldest first: `unsent` numbers of a
    /// ring of `depth` from `unsent_head`.
    unsent_head: u32,
    unsent: u32,
}

/// Provided buffers of a udp-rr side's standing receives on a worker with `flows` flows of
/// `depth` requests outstanding each: a datagram per request in flight (two around a
/// retransmission), and a buffer comes back at the end of its batch.
pub fn udp_rr_recv_buffers(flows: usize, depth: u32) -> u16 {
    (flows.saturating_mul(depth.max(1) as usize).saturating_mul(2)).clamp(64, 32_768).next_power_of_two()
        as u16
}

/// The most sends one flow keeps in flight when it has more than one request outstanding:
/// each holds a buffer of its own until its completion, so this bounds the buffers and the
/// SQEs a deep burst or backlog costs; requests beyond it wait for a buffer.
const MAX_SENDS_PER_FLOW: u32 = 8;

/// Send buffers (sends in flight) per flow for `depth` requests outstanding.
pub fn udp_rr_send_depth(depth: u32) -> usize {
    depth.clamp(1, MAX_SENDS_PER_FLOW) as usize
}

/// The retransmission check runs this many times per --timeout-us: a lost datagram is
/// noticed between one and 1.25 timeouts after its send.
const TIMEOUT_TICKS: u64 = 4;

/// The client side of one worker.
pub struct UdpRrClient<S, R> {
    flows_n: usize,
    /// Sends each request with its flow's number (a datagram send path).
    path: S,
    req: usize,
    /// Receives the responses (a standing multishot receive per flow).
    recv: R,
    /// udp-rr does not check payload; the receive path's signature wants one.
    verify: Verifier,
    timeout_ns: u64,
    /// The period of the retransmission check (boxed: the kernel reads it).
    tick: Box<types::Timespec>,
    /// Requests each flow keeps outstanding: the burst closed loop, the backlog open loop.
    depth: u32,
    /// With one outstanding a flow's one buffer is rewritten only for its next request or a
    /// retransmission, so its sends skip their CQE; deeper, each send keeps its buffer until
    /// its CQE (`sends` counts them).
    tracked: bool,
    flows: Vec<ClientFlow>,
    /// `depth` slots per flow.
    table: Vec<Request>,
    /// `depth` numbers per flow: the rings of requests waiting for a send buffer.
    unsent: Vec<u64>,
    /// Requests outstanding over all flows.
    active: usize,
    /// Tracked sends in flight over all flows.
    sends: usize,
    max_in_flight: u32,
    /// Open loop: the schedule requests come due on (`depth` is then the backlog).
    schedule: Option<Schedule>,
    report: UdpReport,
    /// The responses' one-way delays; `Some` also means requests carry a send stamp.
    one_way: Option<OneWayRecorder>,
    stamp_requests: bool,
    /// Transactions each flow makes before it stops (the spec's transaction limit;
    /// u64::MAX when timed).
    limit: u64,
    /// Paces the requests; one without tokens waits with those short of a buffer.
    pacer: Pacer,
}

impl<S: SendPath, R: RecvPath> UdpRrClient<S, R> {
    pub fn new(
        spec: &TestSpec,
        fds: &[FlowFd],
        path: S,
        recv: R,
        schedule: Option<Schedule>,
        pacer: Pacer,
    ) -> UdpRrClient<S, R> {
        let timeout_ns = u64::from(spec.udp.timeout_us) * 1000;
        let depth = spec.rr_depth().max(1);
        let slots = fds.len() * depth as usize;
        UdpRrClient {
            flows_n: fds.len(),
            path,
            req: spec.request_size as usize,
            recv,
            verify: Verifier::new(false, 0),
            timeout_ns,
            tick: timespec(timeout_ns / TIMEOUT_TICKS),
            depth,
            tracked: depth > 1,
            flows: vec![ClientFlow::default(); fds.len()],
            table: vec![NO_REQUEST; slots],
            // Requests wait here for a buffer (deeper than one) or for pacing tokens.
            unsent: vec![0; slots],
            active: 0,
            sends: 0,
            max_in_flight: 0,
            schedule,
            report: UdpReport {
                datagram_size: spec.request_size,
                flows: vec![UdpFlowReport::default(); fds.len()],
                ..UdpReport::default()
            },
            one_way: OneWayRecorder::for_direction(spec, false),
            stamp_requests: spec.one_way_unmeasured(true).is_none(),
            limit: spec.transaction_limit.unwrap_or(u64::MAX),
            pacer,
        }
    }

    /// Whether flow `f` may make another request: a count leaves room for it (a counter
    /// compared, no clock read). Answered and outstanding requests together never pass it.
    fn within_count(&self, f: usize, counters: &[FlowCounters]) -> bool {
        counters[f].transactions + u64::from(self.flows[f].outstanding) < self.limit
    }

    fn slot(&self, f: usize, seq: u64) -> usize {
        f * self.depth as usize + (seq % u64::from(self.depth)) as usize
    }

    /// Sends the request in table slot `i` of flow `f`, at `now`.
    fn send(&mut self, ring: &mut Ring, f: usize, i: usize, now: u64) -> Result<()> {
        if self.stamp_requests {
            self.path.set_stamp(now);
        }
        // One outstanding: no CQE unless it fails. The path's buffer is rewritten only for
        // the next transaction or a retransmission, after this copy send has been issued.
        let flags = if self.tracked { Flags::empty() } else { Flags::SKIP_SUCCESS };
        self.path.push(ring, f, self.table[i].seq, self.req as u32, flags)?;
        if self.tracked {
            self.sends += 1;
        }
        self.table[i].sent_at = now;
        self.report.sends += 1;
        self.report.datagrams_sent += 1;
        self.report.flows[f].datagrams_sent += 1;
        Ok(())
    }

    /// A request's first send: open loop, it may have slipped.
    fn send_first(&mut self, ring: &mut Ring, f: usize, i: usize, now: u64) -> Result<()> {
        self.send(ring, f, i, now)?;
        if let Some(s) = &mut self.schedule {
            s.report.sent += 1;
            s.note_slip(f, self.table[i].started, now);
        }
        let fl = &self.flows[f];
        self.max_in_flight = self.max_in_flight.max(fl.outstanding - fl.unsent);
        Ok(())
    }

    /// Makes flow `f`'s next request, due at `due` (the flow has room for it), and sends it
    /// at `now` unless its sends are all in flight or it has no pacing tokens: then it
    /// waits for a buffer or the pacer's tick.
    fn issue(&mut self, ring: &mut Ring, f: usize, due: u64, now: u64) -> Result<()> {
        // A lost request keeps its slot: the next number whose slot is free goes next.
        let mut seq = self.flows[f].next_seq;
        while self.table[self.slot(f, seq)].seq != FREE {
            seq += 1;
        }
        let i = self.slot(f, seq);
        self.table[i] = Request { seq, started: due, sent_at: UNSENT };
        let fl = &mut self.flows[f];
        fl.next_seq = seq + 1;
        fl.outstanding += 1;
        self.active += 1;
        if fl.unsent == 0 && self.path.available(f) > 0 && self.pacer.allow(f, self.req as u32) {
            return self.send_first(ring, f, i, now);
        }
        let at = f * self.depth as usize + ((fl.unsent_head + fl.unsent) % self.depth) as usize;
        self.unsent[at] = seq;
        fl.unsent += 1;
        Ok(())
    }

    /// Sends flow `f`'s requests that wait for a buffer or tokens, as both allow.
    fn send_unsent(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        let mut now = 0;
        while self.flows[f].unsent > 0 && self.path.available(f) > 0 && self.pacer.allow(f, self.req as u32) {
            if now == 0 {
                now = monotonic_ns();
            }
            let fl = &mut self.flows[f];
            let seq = self.unsent[f * self.depth as usize + fl.unsent_head as usize];
            fl.unsent_head = (fl.unsent_head + 1) % self.depth;
            fl.unsent -= 1;
            let i = self.slot(f, seq);
            self.send_first(ring, f, i, now)?;
        }
        Ok(())
    }

    /// Open loop: every request whose time has come by `now` (and before the deadline: a
    /// late wakeup must not add requests beyond the window) is made and sent, or dropped
    /// if its flow has its backlog outstanding; then the wakeup is armed for the next one.
    fn release_due(&mut self, ring: &mut Ring, now: u64, deadline_ns: u64) -> Result<()> {
        let until = now.min(deadline_ns.saturating_sub(1));
        for f in 0..self.flows_n {
            let room = self.depth - self.flows[f].outstanding;
            let Some(s) = &mut self.schedule else { return Ok(()) };
            let (due, interval) = (s.take_due(f, until, room), s.interval_ns());
            for k in 0..due.count {
                self.issue(ring, f, due.first + u64::from(k) * interval, now)?;
            }
        }
        match &mut self.schedule {
            Some(s) => s.arm(ring, deadline_ns),
            None => Ok(()),
        }
    }

    fn arm(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        self.recv.arm(ring, f, 0, false, Flags::empty())
    }

    fn push_tick(&mut self, ring: &mut Ring) -> Result<()> {
        let e = opcode::Timeout::new(&*self.tick)
            .count(0)
            .flags(types::TimeoutFlags::MULTISHOT)
            .build()
            .user_data(token(op::TX_TIMEOUT, 0));
        // SAFETY: the timespec is boxed in self, which outlives the ring's use of it.
        unsafe { ring.push(&e) }
    }

    /// The retransmission check: every request that has waited --timeout-us since its last
    /// send is counted as a timeout and sent again, or after the deadline retired. A flow
    /// whose send buffers are all in flight retransmits at a later check.
    fn on_tick(&mut self, ring: &mut Ring, stopping: bool) -> Result<()> {
        let now = monotonic_ns();
        let depth = self.depth as usize;
        for f in 0..self.flows_n {
            let mut left = self.flows[f].outstanding - self.flows[f].unsent;
            let mut i = f * depth;
            while left > 0 && i < (f + 1) * depth {
                let r = self.table[i];
                if r.seq != FREE && r.sent_at != UNSENT {
                    left -= 1;
                    if now.saturating_sub(r.sent_at) >= self.timeout_ns {
                        if stopping {
                            self.report.timeouts += 1;
                            self.report.flows[f].timeouts += 1;
                            self.free(f, i);
                        } else if self.path.available(f) > 0 && self.pacer.allow(f, self.req as u32) {
                            self.report.timeouts += 1;
                            self.report.flows[f].timeouts += 1;
                            self.report.retransmissions += 1;
                            self.report.flows[f].retransmissions += 1;
                            self.send(ring, f, i, now)?;
                        }
                    }
                }
                i += 1;
            }
        }
        Ok(())
    }

    /// Frees table slot `i` of flow `f`: its request was answered, or given up after the
    /// deadline.
    fn free(&mut self, f: usize, i: usize) {
        self.table[i] = NO_REQUEST;
        self.flows[f].outstanding -= 1;
        self.active -= 1;
    }
}

/// Runs transactions on every flow until the deadline. A stop ends it at once;
/// transactions in flight then are not counted.
impl<S: SendPath, R: RecvPath> Workload for UdpRrClient<S, R> {
    fn start(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.pacer.start(ring)?;
        for f in 0..self.flows_n {
            self.arm(ring, f)?;
        }
        self.push_tick(ring)?;
        let now = monotonic_ns();
        if let Some(s) = &mut self.schedule {
            s.start(run.deadline_ns.saturating_sub(s.window_ns));
            return self.release_due(ring, now, run.deadline_ns);
        }
        // Closed loop: the whole burst is due at once (no more than a count allows).
        for f in 0..self.flows_n {
            for _ in 0..self.depth {
                if self.within_count(f, run.counters) {
                    self.issue(ring, f, now, now)?;
                }
            }
        }
        Ok(())
    }

    /// Open loop, a flow may have nothing outstanding between two requests: only after
    /// the deadline does that mean the end. A count ends it once every flow made its own.
    fn done(&self, run: &Run) -> bool {
        // A timed test has no count: no walk over the flows at every batch.
        let counted = self.limit != u64::MAX && run.counters.iter().all(|k| k.transactions >= self.limit);
        (run.stopping || counted) && self.active == 0 && self.sends == 0
    }

    /// The deadline: nothing new comes due, and a request still waiting for a buffer never
    /// goes.
    fn on_deadline(&mut self, _ring: &mut Ring, run: &mut Run) -> Result<()> {
        run.stopping = true;
        for f in 0..self.flows_n {
            let fl = self.flows[f];
            for k in 0..fl.unsent {
                let seq = self.unsent[f * self.depth as usize + ((fl.unsent_head + k) % self.depth) as usize];
                let i = self.slot(f, seq);
                self.free(f, i);
            }
            if let Some(s) = &mut self.schedule {
                s.report.unsent_at_end += u64::from(fl.unsent);
            }
            self.flows[f].unsent = 0;
        }
        Ok(())
    }

    /// A pacing tick: the requests that waited for tokens go, as the refill allows.
    fn on_pace(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.pacer.tick();
        for f in 0..self.flows_n {
            if self.pacer.take_waiting(f) && !run.stopping {
                self.send_unsent(ring, f)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            // Open loop: the wakeup for the next due request.
            op::DUE if self.schedule.is_some() => {
                if !run.stopping {
                    self.release_due(ring, monotonic_ns(), run.deadline_ns)?;
                }
            }
            // The retransmission check's tick (-ETIME). A multishot timeout that ended
            // (no F_MORE) is armed again.
            op::TX_TIMEOUT => {
                self.on_tick(ring, run.stopping)?;
                if !c.more() && (self.active > 0 || !run.stopping) {
                    self.push_tick(ring)?;
                }
            }
            op::SEND => {
                if self.tracked {
                    self.sends -= 1;
                }
                match self.path.complete(ring, c)? {
                    // One outstanding, only failures have a CQE. A refused datagram is one
                    // more loss the timeout recovers from; anything else is an error.
                    SendEvent::Dropped { .. } => self.report.send_errors += 1,
                    SendEvent::Sent { .. } if self.tracked => {}
                    _ => return Err(cqe_error("a UDP request send", c.result)),
                }
                // A buffer came back: a request that waits for one goes now.
                if self.tracked && !run.stopping {
                    self.send_unsent(ring, c.flow())?;
                }
            }
            op::RECV => {
                let f = c.flow();
                match self.recv.complete(ring, c, &mut self.verify)? {
                    // Nothing cancels the client's receives: one that ended is armed
                    // again below.
                    RecvEvent::Cancelled { .. } => {}
                    // ICMP port unreachable from an earlier send or no buffer (Nothing),
                    // or a short datagram: wait on.
                    RecvEvent::Nothing | RecvEvent::Eof { .. } => self.report.stray += 1,
                    RecvEvent::Data { bytes, .. } if (bytes as usize) < 8 => self.report.stray += 1,
                    RecvEvent::Data { bytes, .. } => {
                        let seq = seq_of(self.recv.payload(c));
                        let i = self.slot(f, seq);
                        let r = self.table[i];
                        // Not outstanding: answered already, retired, or never sent.
                        if seq == FREE || r.seq != seq || r.sent_at == UNSENT {
                            self.report.stale_responses += 1;
                            if !c.more() {
                                self.arm(ring, f)?;
                            }
                            return Ok(true);
                        }
                        let now = monotonic_ns();
                        if let Some(w) = &mut self.one_way {
                            w.record_at(now, self.recv.payload(c));
                        }
                        run.sampler.record(now.saturating_sub(r.started));
                        self.report.receives += 1;
                        self.report.datagrams_received += 1;
                        self.report.flows[f].datagrams_received += 1;
                        let k = &mut run.counters[f];
                        k.transactions += 1;
                        k.bytes_sent += self.req as u64;
                        k.bytes_received += u64::from(bytes);
                        self.free(f, i);
                        // Closed loop: each response makes the flow's next request due.
                        if !run.stopping && self.schedule.is_none() && self.within_count(f, run.counters) {
                            self.issue(ring, f, now, now)?;
                        }
                    }
                }
                if !c.more() {
                    self.arm(ring, f)?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.recv.after_batch();
    }

    fn report(&self) -> RoleReport {
        let udp =
            UdpReport { one_way: self.one_way.as_ref().map(OneWayRecorder::report), ..self.report.clone() };
        RoleReport {
            udp: Some(udp),
            rr: Some(RrReport {
                burst: self.depth,
                max_in_flight: self.max_in_flight,
                open_loop: self.schedule.as_ref().map(|s| s.report),
            }),
            ..RoleReport::default()
        }
    }
}

/// The server side of one worker.
pub struct UdpRrServer<S, R> {
    flows_n: usize,
    /// Receives the requests (a standing multishot receive per flow).
    recv: R,
    /// udp-rr does not check payload; the receive path's signature wants one.
    verify: Verifier,
    /// Sends each response with the number of its request (a datagram send path).
    path: S,
    rsp: usize,
    /// Requests a client flow keeps outstanding.
    depth: u32,
    /// `depth` slots per flow: one more than the newest request number seen at the number
    /// modulo the depth. The client reuses a slot only once its request was answered, so a
    /// number at or below its slot's is one seen before.
    seen: Vec<u64>,
    /// `depth` numbers per flow: rings of answers owed while the flow's sends are all in
    /// flight, `owed[f]` of them from `owed_head[f]`.
    owed_seqs: Vec<u64>,
    owed_head: Vec<u32>,
    owed: Vec<u32>,
    /// The batch of completions being handled, and per flow the batch its last new request
    /// came in and how many came in it: new requests that arrived together, before any of
    /// them was answered, are the server's view of the depth.
    batch: u64,
    batch_of: Vec<u64>,
    together: Vec<u32>,
    max_together: u32,
    receives: StandingReceives,
    report: UdpReport,
    /// Responses in flight.
    in_flight: usize,
    /// The requests' one-way delays (`None`: they carry no stamp).
    one_way: Option<OneWayRecorder>,
    /// Responses carry a send stamp: the batch's clock read, on the client's clock.
    stamp_responses: bool,
    clock_offset_ns: i64,
    /// This completion batch's clock read for the response stamps, 0 until taken.
    batch_stamp: u64,
    /// Paces the responses; one without tokens is owed until the pacer's tick.
    pacer: Pacer,
}

impl<S: SendPath, R: RecvPath> UdpRrServer<S, R> {
    /// `flows_done`: the eventfd the session writes when the client has made all its
    /// transactions (`None`: the deadline ends the test).
    pub fn new(
        spec: &TestSpec,
        fds: &[FlowFd],
        path: S,
        recv: R,
        flows_done: Option<RawFd>,
        pacer: Pacer,
    ) -> UdpRrServer<S, R> {
        // Quiet for two client timeouts: a retransmission would have come by then.
        let quiet_ns = (2 * u64::from(spec.udp.timeout_us) * 1000).max(20_000_000);
        let depth = spec.rr_depth().max(1);
        UdpRrServer {
            flows_n: fds.len(),
            recv,
            verify: Verifier::new(false, 0),
            path,
            rsp: spec.response_size as usize,
            depth,
            seen: vec![0; fds.len() * depth as usize],
            owed_seqs: vec![0; fds.len() * depth as usize],
            owed_head: vec![0; fds.len()],
            owed: vec![0; fds.len()],
            batch: 1,
            batch_of: vec![0; fds.len()],
            together: vec![0; fds.len()],
            max_together: 0,
            // Up to 200 ms of requests still coming, then one quiet period.
            receives: StandingReceives::new(
                Drain::new(quiet_ns, 200_000_000 + quiet_ns),
                fds.len(),
                flows_done,
            ),
            report: UdpReport {
                datagram_size: spec.response_size,
                flows: vec![UdpFlowReport::default(); fds.len()],
                ..UdpReport::default()
            },
            in_flight: 0,
            one_way: OneWayRecorder::for_direction(spec, true),
            stamp_responses: spec.one_way_unmeasured(false).is_none(),
            clock_offset_ns: spec.clock_offset_ns,
            batch_stamp: 0,
            pacer,
        }
    }

    fn answer(&mut self, ring: &mut Ring, f: usize, seq: u64) -> Result<()> {
        if self.path.available(f) == 0 || !self.pacer.allow(f, self.rsp as u32) {
            // The buffers are in use or the tokens spent: answer when a send is done or at
            // the pacer's tick. With more owed than the client keeps outstanding
            // (retransmissions), the newest owed answer gives way: the client sends that
            // request again.
            let depth = self.depth;
            let (head, n) = (self.owed_head[f], self.owed[f]);
            let at = if n == depth { (head + n - 1) % depth } else { (head + n) % depth };
            self.owed_seqs[f * depth as usize + at as usize] = seq;
            self.owed[f] = (n + 1).min(depth);
            return Ok(());
        }
        self.path.push(ring, f, seq, self.rsp as u32, Flags::empty())?;
        self.in_flight += 1;
        self.report.sends += 1;
        Ok(())
    }

    /// Answers what flow `f` owes, as buffers and tokens allow.
    fn send_owed(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        let depth = self.depth;
        while self.owed[f] > 0 && self.path.available(f) > 0 && self.pacer.allow(f, self.rsp as u32) {
            let seq = self.owed_seqs[f * depth as usize + self.owed_head[f] as usize];
            self.owed_head[f] = (self.owed_head[f] + 1) % depth;
            self.owed[f] -= 1;
            self.path.push(ring, f, seq, self.rsp as u32, Flags::empty())?;
            self.in_flight += 1;
            self.report.sends += 1;
        }
        Ok(())
    }

    /// Whether request `seq` of flow `f` is new (and from now on seen).
    fn first_seen(&mut self, f: usize, seq: u64) -> bool {
        let i = f * self.depth as usize + (seq % u64::from(self.depth)) as usize;
        if seq < self.seen[i] {
            return false;
        }
        self.seen[i] = seq.saturating_add(1);
        if self.batch_of[f] != self.batch {
            self.batch_of[f] = self.batch;
            self.together[f] = 0;
        }
        self.together[f] += 1;
        self.max_together = self.max_together.max(self.together[f]);
        true
    }
}

/// Answers requests until after the deadline no request came for a quiet period; every
/// new request counts as it arrives. A stop ends it at once.
impl<S: SendPath, R: RecvPath> Workload for UdpRrServer<S, R> {
    fn watches(&self) -> bool {
        self.receives.driver_watches()
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.start(ring)?;
        self.receives.start(ring, &mut self.recv)
    }

    fn done(&self, _run: &Run) -> bool {
        self.receives.all_ended() && self.in_flight == 0
    }

    fn on_deadline(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.receives.on_deadline(ring, run.deadline_ns)
    }

    /// A pacing tick: the answers owed for want of tokens go, as the refill allows.
    fn on_pace(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.tick();
        for f in 0..self.flows_n {
            if self.pacer.take_waiting(f) {
                self.send_owed(ring, f)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        // STOP: the client has its answers.
        if self.receives.complete(ring, c.op())? {
            return Ok(true);
        }
        match c.op() {
            op::SEND => {
                let f = c.flow();
                self.in_flight -= 1;
                match self.path.complete(ring, c)? {
                    SendEvent::Sent { .. } => {
                        self.report.datagrams_sent += 1;
                        self.report.flows[f].datagrams_sent += 1;
                    }
                    SendEvent::Dropped { .. } => self.report.send_errors += 1,
                    _ => return Err(cqe_error("a UDP response send", c.result)),
                }
                self.send_owed(ring, f)?;
            }
            op::RECV => {
                let f = c.flow();
                match self.recv.complete(ring, c, &mut self.verify)? {
                    RecvEvent::Cancelled { .. } => {
                        self.receives.cancelled();
                        return Ok(true);
                    }
                    // ICMP port unreachable from an earlier send (Nothing), or a short
                    // datagram.
                    RecvEvent::Nothing | RecvEvent::Eof { .. } => self.report.stray += 1,
                    RecvEvent::Data { bytes, .. } if (bytes as usize) < 8 => self.report.stray += 1,
                    RecvEvent::Data { bytes, .. } => {
                        let seq = seq_of(self.recv.payload(c));
                        // One clock read per completion batch: the requests' arrival
                        // and the responses' stamp.
                        if let Some(w) = &mut self.one_way {
                            w.record(self.recv.payload(c));
                            self.batch_stamp = w.batch_arrival();
                        } else if self.stamp_responses && self.batch_stamp == 0 {
                            self.batch_stamp =
                                (monotonic_ns() as i64).wrapping_sub(self.clock_offset_ns) as u64;
                        }
                        self.path.set_stamp(self.batch_stamp);
                        self.report.receives += 1;
                        self.receives.saw_data();
                        if self.first_seen(f, seq) {
                            self.report.datagrams_received += 1;
                            self.report.flows[f].datagrams_received += 1;
                            let k = &mut run.counters[f];
                            k.transactions += 1;
                            k.bytes_received += u64::from(bytes);
                            k.bytes_sent += self.rsp as u64;
                        } else {
                            self.report.duplicated += 1;
                            self.report.flows[f].duplicated += 1;
                        }
                        self.answer(ring, f, seq)?;
                    }
                }
                self.receives.after_receive(ring, &mut self.recv, c)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.recv.after_batch();
        self.batch_stamp = 0;
        if let Some(w) = &mut self.one_way {
            w.end_batch();
        }
        self.batch += 1;
    }

    fn report(&self) -> RoleReport {
        let udp =
            UdpReport { one_way: self.one_way.as_ref().map(OneWayRecorder::report), ..self.report.clone() };
        RoleReport {
            udp: Some(udp),
            rr: Some(RrReport { burst: self.depth, max_in_flight: self.max_together, open_loop: None }),
            end_ns: self.receives.end_ns(),
            ..RoleReport::default()
        }
    }
}
