//! UDP_RR: one transaction in flight per flow; the request carries the flow's sequence
//! number and the response echoes it.
//!
//! Both sides move their datagrams through a datagram send path and a standing multishot
//! datagram receive per flow (armed once, not per transaction: a transaction costs each
//! side one send SQE and no receive SQE); the workload reads each datagram's number through
//! `payload`, and arms a receive again only when the kernel ended it (no F_MORE).
//!
//! Client, per transaction: a Send of the request, queued from the completion of the
//! previous response, so it goes out in the same enter. A response completes the
//! transaction (one clock read at each edge). One multishot Timeout per worker ticks every
//! quarter of --timeout-us (one clock read per tick, none per transaction): a request
//! without its response for --timeout-us by then is counted as a timeout and sent again
//! with the same number, so a lost datagram costs one timeout, not the run. A response
//! with another number (the answer to a request already answered, or to the first copy of
//! a retransmitted one) is stale: counted and ignored. After the deadline a timeout ends
//! the flow's last transaction instead of retrying it.
//!
//! One-way delay (requests and responses with room for a send stamp): the client stamps a
//! request with its transaction edge's clock read and records a response's delay at the
//! read that ends the transaction; the server reads its clock once per completion batch,
//! records each request's delay against it and stamps the responses with it.
//!
//! Server: every request is answered with its number. A number seen before is a
//! retransmission (answered again, counted once). It ends like the UDP stream receiver:
//! after its deadline, once no request arrived for a quiet period, it cancels its
//! receives.

use io_uring::squeue::Flags;
use io_uring::{opcode, types};

use crate::error::Result;
use crate::io::{op, RecvEvent, RecvPath, SendEvent, SendPath};
use crate::measure::clock::monotonic_ns;
use crate::measure::one_way::OneWayRecorder;
use crate::report::{UdpFlowReport, UdpReport};
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::spec::TestSpec;
use crate::verify::Verifier;
use crate::workload::drain::Drain;
use crate::workload::driver::{RoleReport, Run, Timers, Workload};

fn timespec(ns: u64) -> Box<types::Timespec> {
    Box::new(types::Timespec::new().sec(ns / 1_000_000_000).nsec((ns % 1_000_000_000) as u32))
}

fn seq_of(buf: &[u8]) -> u64 {
    u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"))
}

struct ClientFlow {
    seq: u64,
    /// When the transaction began (its latency counts from here, retransmissions included).
    started: u64,
    /// When its request was last sent (the timeout counts from here).
    sent_at: u64,
    active: bool,
}

/// Provided buffers of a udp-rr side's standing receives on a worker with `flows` flows:
/// one datagram is in flight per flow (two around a retransmission), and a buffer comes
/// back at the end of its batch.
pub fn udp_rr_recv_buffers(flows: usize) -> u16 {
    (flows.saturating_mul(2)).clamp(64, 32_768).next_power_of_two() as u16
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
    flows: Vec<ClientFlow>,
    /// Flows with a transaction under way.
    active: usize,
    report: UdpReport,
    /// The responses' one-way delays; `Some` also means requests carry a send stamp.
    one_way: Option<OneWayRecorder>,
    stamp_requests: bool,
}

impl<S: SendPath, R: RecvPath> UdpRrClient<S, R> {
    pub fn new(spec: &TestSpec, fds: &[FlowFd], path: S, recv: R) -> UdpRrClient<S, R> {
        let timeout_ns = u64::from(spec.udp.timeout_us) * 1000;
        UdpRrClient {
            flows_n: fds.len(),
            path,
            req: spec.request_size as usize,
            recv,
            verify: Verifier::new(false, 0),
            timeout_ns,
            tick: timespec(timeout_ns / TIMEOUT_TICKS),
            flows: fds.iter().map(|_| ClientFlow { seq: 0, started: 0, sent_at: 0, active: false }).collect(),
            active: 0,
            report: UdpReport {
                datagram_size: spec.request_size,
                flows: vec![UdpFlowReport::default(); fds.len()],
                ..UdpReport::default()
            },
            one_way: OneWayRecorder::for_direction(spec, false),
            stamp_requests: spec.one_way_unmeasured(true).is_none(),
        }
    }

    /// Sends flow `f`'s current request, at `now`.
    fn send(&mut self, ring: &mut Ring, f: usize, now: u64) -> Result<()> {
        if self.stamp_requests {
            self.path.set_stamp(now);
        }
        // No CQE unless it fails. The path's buffer is rewritten only for the next
        // transaction or a retransmission, after this copy send has been issued.
        self.path.push(ring, f, self.flows[f].seq, self.req as u32, Flags::SKIP_SUCCESS)?;
        self.flows[f].sent_at = now;
        self.report.sends += 1;
        self.report.datagrams_sent += 1;
        self.report.flows[f].datagrams_sent += 1;
        Ok(())
    }

    fn arm(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        self.recv.arm(ring, f, 0, false, Flags::empty())
    }

    fn begin(&mut self, ring: &mut Ring, f: usize, now: u64) -> Result<()> {
        let fl = &mut self.flows[f];
        fl.started = now;
        fl.active = true;
        self.send(ring, f, now)
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

    /// The retransmission check: every flow whose request has waited --timeout-us is
    /// counted as a timeout and sent again, or after the deadline retired.
    fn on_tick(&mut self, ring: &mut Ring, stopping: bool) -> Result<()> {
        let now = monotonic_ns();
        for f in 0..self.flows_n {
            let fl = &self.flows[f];
            if !fl.active || now.saturating_sub(fl.sent_at) < self.timeout_ns {
                continue;
            }
            self.report.timeouts += 1;
            self.report.flows[f].timeouts += 1;
            if stopping {
                self.retire(f);
            } else {
                self.report.retransmissions += 1;
                self.report.flows[f].retransmissions += 1;
                self.send(ring, f, now)?;
            }
        }
        Ok(())
    }

    /// Ends flow `f`'s last transaction (after the deadline).
    fn retire(&mut self, f: usize) {
        self.flows[f].active = false;
        self.active -= 1;
    }
}

/// Runs transactions on every flow until the deadline. A stop ends it at once;
/// transactions in flight then are not counted.
impl<S: SendPath, R: RecvPath> Workload for UdpRrClient<S, R> {
    fn timers(&self) -> Timers {
        Timers { deadline: true, guard: false }
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        for f in 0..self.flows_n {
            self.arm(ring, f)?;
        }
        self.push_tick(ring)?;
        let now = monotonic_ns();
        for f in 0..self.flows_n {
            self.begin(ring, f, now)?;
        }
        self.active = self.flows_n;
        Ok(())
    }

    fn done(&self, _run: &Run) -> bool {
        self.active == 0
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            // The retransmission check's tick (-ETIME). A multishot timeout that ended
            // (no F_MORE) is armed again.
            op::TX_TIMEOUT => {
                self.on_tick(ring, run.stopping)?;
                if !c.more() && self.active > 0 {
                    self.push_tick(ring)?;
                }
            }
            op::SEND => match self.path.complete(ring, c)? {
                // Only failures have a CQE. A refused datagram is one more loss the
                // timeout recovers from; anything else is an error.
                SendEvent::Dropped { .. } => self.report.send_errors += 1,
                _ => return Err(cqe_error("a UDP request send", c.result)),
            },
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
                        if !self.flows[f].active || seq != self.flows[f].seq {
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
                        run.sampler.record(now - self.flows[f].started);
                        self.report.receives += 1;
                        self.report.datagrams_received += 1;
                        self.report.flows[f].datagrams_received += 1;
                        let k = &mut run.counters[f];
                        k.transactions += 1;
                        k.bytes_sent += self.req as u64;
                        k.bytes_received += u64::from(bytes);
                        self.flows[f].seq += 1;
                        if run.stopping {
                            self.retire(f);
                        } else {
                            self.begin(ring, f, now)?;
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
        RoleReport { udp: Some(udp), ..RoleReport::default() }
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
    /// Per flow: the next new request number, a send in flight, an answer owed meanwhile.
    next: Vec<u64>,
    sending: Vec<bool>,
    owed: Vec<Option<u64>>,
    drain: Drain,
    report: UdpReport,
    /// Receives still standing, responses in flight.
    armed: usize,
    in_flight: usize,
    /// The requests' one-way delays (`None`: they carry no stamp).
    one_way: Option<OneWayRecorder>,
    /// Responses carry a send stamp: the batch's clock read, on the client's clock.
    stamp_responses: bool,
    clock_offset_ns: i64,
    /// This completion batch's clock read for the response stamps, 0 until taken.
    batch_stamp: u64,
}

impl<S: SendPath, R: RecvPath> UdpRrServer<S, R> {
    pub fn new(spec: &TestSpec, fds: &[FlowFd], path: S, recv: R) -> UdpRrServer<S, R> {
        // Quiet for two client timeouts: a retransmission would have come by then.
        let quiet_ns = (2 * u64::from(spec.udp.timeout_us) * 1000).max(20_000_000);
        UdpRrServer {
            flows_n: fds.len(),
            recv,
            verify: Verifier::new(false, 0),
            path,
            rsp: spec.response_size as usize,
            next: vec![0; fds.len()],
            sending: vec![false; fds.len()],
            owed: vec![None; fds.len()],
            // Up to 200 ms of requests still coming, then one quiet period.
            drain: Drain::new(quiet_ns, 200_000_000 + quiet_ns),
            report: UdpReport {
                datagram_size: spec.response_size,
                flows: vec![UdpFlowReport::default(); fds.len()],
                ..UdpReport::default()
            },
            armed: 0,
            in_flight: 0,
            one_way: OneWayRecorder::for_direction(spec, true),
            stamp_responses: spec.one_way_unmeasured(false).is_none(),
            clock_offset_ns: spec.clock_offset_ns,
            batch_stamp: 0,
        }
    }

    fn arm(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        self.recv.arm(ring, f, 0, false, Flags::empty())
    }

    fn answer(&mut self, ring: &mut Ring, f: usize, seq: u64) -> Result<()> {
        if self.sending[f] {
            // The buffer is in use: answer when its send is done.
            self.owed[f] = Some(seq);
            return Ok(());
        }
        self.sending[f] = true;
        self.path.push(ring, f, seq, self.rsp as u32, Flags::empty())?;
        self.report.sends += 1;
        Ok(())
    }
}

/// Answers requests until after the deadline no request came for a quiet period; every
/// new request counts as it arrives. A stop ends it at once.
impl<S: SendPath, R: RecvPath> Workload for UdpRrServer<S, R> {
    fn timers(&self) -> Timers {
        Timers { deadline: true, guard: false }
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        for f in 0..self.flows_n {
            self.arm(ring, f)?;
        }
        self.armed = self.flows_n;
        Ok(())
    }

    fn done(&self, _run: &Run) -> bool {
        self.armed == 0 && self.in_flight == 0
    }

    fn on_deadline(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.drain.start(ring, run.deadline_ns)
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            op::CANCEL => {}
            op::DRAIN => self.drain.on_tick(ring, run.deadline_ns, self.flows_n)?,
            op::SEND => {
                let f = c.flow();
                self.sending[f] = false;
                self.in_flight -= 1;
                match self.path.complete(ring, c)? {
                    SendEvent::Sent { .. } => {
                        self.report.datagrams_sent += 1;
                        self.report.flows[f].datagrams_sent += 1;
                    }
                    SendEvent::Dropped { .. } => self.report.send_errors += 1,
                    _ => return Err(cqe_error("a UDP response send", c.result)),
                }
                if let Some(seq) = self.owed[f].take() {
                    self.in_flight += 1;
                    self.answer(ring, f, seq)?;
                }
            }
            op::RECV => {
                let f = c.flow();
                match self.recv.complete(ring, c, &mut self.verify)? {
                    RecvEvent::Cancelled { .. } => {
                        self.armed -= 1;
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
                        self.drain.saw_data();
                        if seq >= self.next[f] {
                            self.next[f] = seq + 1;
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
                        if !self.sending[f] {
                            self.in_flight += 1;
                        }
                        self.answer(ring, f, seq)?;
                    }
                }
                // The kernel ended the standing receive (no F_MORE): arm it again unless
                // the drain cancelled it.
                if !c.more() {
                    if self.drain.cancelled() {
                        self.armed -= 1;
                    } else {
                        self.arm(ring, f)?;
                    }
                }
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
    }

    fn report(&self) -> RoleReport {
        let udp =
            UdpReport { one_way: self.one_way.as_ref().map(OneWayRecorder::report), ..self.report.clone() };
        RoleReport { udp: Some(udp), end_ns: self.drain.end_ns(), ..RoleReport::default() }
    }
}
