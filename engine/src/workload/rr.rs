//! Request/response: `burst` transactions in flight per flow (one by default).
//!
//! With one in flight and a one-shot receive engine each transaction is one linked chain
//! (client: send -> receive; server: receive -> send), so a copy-engine transaction costs
//! one CQE and one io_uring_enter per side. Otherwise (a multishot engine, a send engine
//! that cannot be chained, or a burst) a receive stays armed on its own and the workload
//! counts bytes until a whole message has arrived. rr's default receive engine is
//! multishot ([`ringperf_core::spec::RecvEngine::default_for`]): the standing receive saves the
//! chain's re-arm and poll arming, one SQE and about 12 % of service demand per
//! transaction; `--recv-engine recv` gives the chain.
//!
//! With a burst, each side keeps at most one send in flight per flow: two sends in flight
//! on one TCP socket are not ordered once one waits for send-buffer space, so the requests
//! (responses) that come due meanwhile wait and leave together in the next send.
//!
//! Open loop (`--rate`) uses the burst's FIFO with the backlog as its depth, but requests
//! come due on a [`Schedule`] instead of with responses: an absolute timeout on the ring
//! wakes the client when the next request is due, and a round trip counts from the
//! request's intended send time, so a stall shows in every request it delayed.
//!
//! Pacing (`-b`, `--flow-rate`, a server's `--max-rate`): each side's [`Pacer`] holds the
//! payload it sends (requests, responses) to its rate. A request or response that finds
//! its flow's bucket short waits, as one short of a send buffer does, until the pacer's
//! tick; a chained server arms its next receive -> send chain only with the response's
//! tokens in hand, so the response never leaves before them.

use io_uring::squeue::Flags;

use crate::io::{op, RecvEvent, RecvPath, SendEvent, SendPath};
use crate::ring::{Completion, Ring};
use crate::verify::Verifier;
use crate::workload::driver::{RoleReport, Run, Timers, Workload};
use crate::workload::ending::{check_not_early, datagram_on_tcp};
use crate::workload::pacer::Pacer;
use crate::workload::schedule::Schedule;
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::intervals::FlowCounters;
use ringperf_core::report::RrReport;

/// Request and response sizes of one transaction, and how many each flow keeps in flight.
#[derive(Clone, Copy, Debug)]
pub struct Transaction {
    pub request: u32,
    pub response: u32,
    /// Transactions in flight per flow (`--burst`).
    pub burst: u32,
    /// Transactions each flow makes before it stops (netperf's negative -l); u64::MAX
    /// when the test is timed.
    pub limit: u64,
}

/// Most bytes of due messages one burst send carries (always at least one message): the
/// send paths size their buffers for it, and a zero-copy arena counts against the memory
/// lock limit.
pub const BURST_SEND_BYTES: u32 = 64 * 1024;

impl Transaction {
    /// Messages of `len` bytes one send carries: one without a burst, else as many of the
    /// due ones as fit [`BURST_SEND_BYTES`].
    pub fn per_send(&self, len: u32) -> u32 {
        if self.burst <= 1 {
            1
        } else {
            (BURST_SEND_BYTES / len.max(1)).clamp(1, self.burst)
        }
    }

    /// The longest receive a side arms for messages of `len` bytes: one message without a
    /// burst, else as many as a burst send carries, so one receive can take several.
    pub fn recv_len(&self, len: u32) -> u32 {
        self.per_send(len).saturating_mul(len)
    }
}

/// Where a flow's next send starts in its byte stream, and whether a burst's send of the
/// flow is in flight: a burst keeps at most one, because two sends in flight on one TCP
/// socket are not ordered once one waits for send-buffer space.
#[derive(Default)]
struct SendSlot {
    offset: u64,
    in_flight: bool,
}

impl SendSlot {
    /// Burst: puts up to `per_send` of `due` messages of `len` bytes in one send on flow
    /// `f`, as many as its pacing tokens cover, unless a send of the flow is in flight or
    /// its buffers are all with the kernel (that send's or buffer's completion, or the
    /// pacer's tick, comes back here); returns how many it sent. The send keeps its CQE:
    /// the next one waits for it.
    fn send_due<S: SendPath>(
        &mut self,
        (send, pacer): (&mut S, &mut Pacer),
        ring: &mut Ring,
        f: usize,
        due: u32,
        (per_send, len): (u32, u32),
    ) -> Result<u32> {
        if self.in_flight || due == 0 {
            return Ok(0);
        }
        if send.available(f) == 0 {
            send.short_of_buffers(f);
            return Ok(0);
        }
        let k = pacer.allow_up_to(f, len, due.min(per_send));
        if k == 0 {
            return Ok(0);
        }
        self.offset += u64::from(send.push(ring, f, self.offset, k * len, Flags::empty())?);
        self.in_flight = true;
        Ok(k)
    }

    /// One message of `len` bytes with `flags`, outside a burst.
    fn send_one<S: SendPath>(
        &mut self,
        send: &mut S,
        ring: &mut Ring,
        f: usize,
        len: u32,
        flags: Flags,
    ) -> Result<()> {
        self.offset += u64::from(send.push(ring, f, self.offset, len, flags)?);
        Ok(())
    }
}

#[derive(Default)]
struct ClientFlow {
    slot: SendSlot,
    got: u32,
    /// One in flight: a request is out and its response not yet complete.
    active: bool,
    /// One in flight: the next request waits for a send buffer to come back.
    want_send: bool,
    /// Burst: the oldest of this flow's slots in `RrClient::due`, and how many are taken
    /// (transactions due, sent or not).
    head: u32,
    len: u32,
    /// Burst: the newest `queued` of them are due and not yet sent.
    queued: u32,
}

/// What both roles hold: their paths, the transaction, and how its messages move.
struct Ends<S, R> {
    send: S,
    recv: R,
    verify: Verifier,
    tx: Transaction,
    chained: bool,
    /// Messages one burst send carries at most.
    per_send: u32,
    /// The receive length a re-armed one-shot receive asks for.
    recv_len: u32,
}

impl<S, R> Ends<S, R> {
    /// `(sent, received)`: the sizes of the messages the role sends and receives.
    fn new(
        send: S,
        recv: R,
        verify: Verifier,
        tx: Transaction,
        chained: bool,
        (sent, received): (u32, u32),
    ) -> Self {
        Ends { send, recv, verify, tx, chained, per_send: tx.per_send(sent), recv_len: tx.recv_len(received) }
    }
}

/// The client: send a request, receive the whole response, record the round trip, repeat
/// until the deadline; transactions in flight at the deadline are completed and counted.
/// A stop ends it at once; transactions in flight then are not counted. With a burst each
/// whole response completes the flow's oldest transaction, whose round trip counts from
/// when it came due (waiting for the previous send is part of it), and makes the next due.
pub struct RrClient<S, R> {
    ends: Ends<S, R>,
    flows: Vec<ClientFlow>,
    /// `burst` slots per flow, a ring of when each of its transactions came due (one in
    /// flight: slot f is when flow f's request went out).
    due: Vec<u64>,
    /// Transactions sent and not yet answered, over all flows.
    active: usize,
    /// Burst: flows with a send in flight.
    sending: usize,
    max_in_flight: u32,
    /// Open loop: the schedule requests come due on (`tx.burst` is then the backlog).
    schedule: Option<Schedule>,
    /// Paces the requests (`-b`, `--flow-rate`).
    pacer: Pacer,
}

impl<S: SendPath, R: RecvPath> RrClient<S, R> {
    /// The first argument: the send and receive paths and the verifier; `schedule`: open loop, with
    /// `tx.burst` the backlog; `None`: closed loop.
    pub fn new(
        (send, recv, verify): (S, R, Verifier),
        tx: Transaction,
        flows: usize,
        schedule: Option<Schedule>,
        pacer: Pacer,
    ) -> RrClient<S, R> {
        let burst = tx.burst.max(1);
        let tx = Transaction { burst, ..tx };
        let chained = burst == 1 && schedule.is_none() && !recv.multishot() && send.can_chain();
        let due = vec![0; flows * burst as usize];
        let flows = (0..flows).map(|_| ClientFlow::default()).collect();
        RrClient {
            ends: Ends::new(send, recv, verify, tx, chained, (tx.request, tx.response)),
            flows,
            due,
            active: 0,
            sending: 0,
            max_in_flight: 0,
            schedule,
            pacer,
        }
    }

    /// Whether requests go through the per-flow FIFO: a burst, or open loop.
    fn bursting(&self) -> bool {
        self.ends.tx.burst > 1 || self.schedule.is_some()
    }

    /// Open loop: every request whose time has come by `now` (and before the deadline: a
    /// late wakeup must not add requests beyond the window) joins its flow's FIFO, or is
    /// dropped if the flow has its backlog outstanding; then each flow sends what it can
    /// and the wakeup is armed for the next request.
    fn release_due(&mut self, ring: &mut Ring, now: u64, deadline_ns: u64) -> Result<()> {
        let burst = self.ends.tx.burst;
        let until = now.min(deadline_ns.saturating_sub(1));
        for f in 0..self.flows.len() {
            let Some(s) = &mut self.schedule else { return Ok(()) };
            let fl = &mut self.flows[f];
            let base = f * burst as usize;
            let due = s.take_due(f, until, burst - fl.len);
            for i in 0..due.count {
                let slot = (fl.head + fl.len) % burst;
                self.due[base + slot as usize] = due.first + u64::from(i) * s.interval_ns();
                fl.len += 1;
                fl.queued += 1;
            }
            self.note_slips(f, now);
            self.send_due(ring, f)?;
        }
        match &mut self.schedule {
            Some(s) => s.arm(ring, deadline_ns),
            None => Ok(()),
        }
    }

    /// Open loop: counts `f`'s requests still waiting to be sent that are already later
    /// than the allowance at `now` (each once).
    fn note_slips(&mut self, f: usize, now: u64) {
        let Some(s) = &mut self.schedule else { return };
        let fl = &self.flows[f];
        let burst = self.ends.tx.burst;
        let base = f * burst as usize;
        for i in fl.len - fl.queued..fl.len {
            let due = self.due[base + ((fl.head + i) % burst) as usize];
            if !s.note_slip(f, due, now) {
                break; // The later ones are less late.
            }
        }
    }

    /// Burst: sends as many of `f`'s due requests as one send carries, unless a send of the
    /// flow is in flight or its buffers are all with the kernel (the send's or the buffer's
    /// completion calls this again). The send keeps its CQE: the next one waits for it.
    fn send_due(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        let fl = &mut self.flows[f];
        let paths = (&mut self.ends.send, &mut self.pacer);
        let k = fl.slot.send_due(paths, ring, f, fl.queued, (self.ends.per_send, self.ends.tx.request))?;
        if k == 0 {
            return Ok(());
        }
        fl.queued -= k;
        self.sending += 1;
        self.active += k as usize;
        if let Some(s) = &mut self.schedule {
            s.report.sent += u64::from(k);
        }
        self.max_in_flight = self.max_in_flight.max(fl.len - fl.queued);
        Ok(())
    }

    /// Burst: the whole responses `f` has received complete its oldest transactions, each
    /// making the next one due (until the deadline). Open loop: the schedule makes them due.
    fn complete_responses(&mut self, ring: &mut Ring, f: usize, run: &mut Run) -> Result<()> {
        let tx = self.ends.tx;
        let burst = tx.burst;
        let closed = self.schedule.is_none();
        let base = f * burst as usize;
        let mut now = 0;
        loop {
            let fl = &mut self.flows[f];
            let sent = fl.len - fl.queued;
            if fl.got > 0 && sent == 0 {
                return Err(Error::Protocol(format!(
                    "the server sent {} bytes with no request of this flow waiting for them",
                    fl.got
                )));
            }
            if fl.got < tx.response {
                break;
            }
            fl.got -= tx.response;
            if now == 0 {
                now = monotonic_ns();
            }
            let started = self.due[base + fl.head as usize];
            fl.head = if fl.head + 1 == burst { 0 } else { fl.head + 1 };
            fl.len -= 1;
            self.active -= 1;
            // A count: no new transaction once this one, those still out and those done
            // reach it.
            let issued = run.counters[f].transactions + 1 + u64::from(fl.len);
            if closed && !run.stopping && issued < tx.limit {
                let slot = (fl.head + fl.len) % burst;
                self.due[base + slot as usize] = now;
                fl.len += 1;
                fl.queued += 1;
            }
            run.sampler.record(now - started);
            let k = &mut run.counters[f];
            k.transactions += 1;
            k.bytes_sent += u64::from(tx.request);
            k.bytes_received += u64::from(tx.response);
        }
        if now != 0 {
            self.note_slips(f, now);
        }
        self.send_due(ring, f)
    }

    /// Sends flow `f`'s next request at `now`, or leaves it for a send buffer to come back,
    /// or for the pacer's tick (which then calls this again).
    fn start_tx(&mut self, ring: &mut Ring, f: usize, now: u64) -> Result<()> {
        if self.ends.send.available(f) == 0 {
            self.ends.send.short_of_buffers(f);
            self.flows[f].want_send = true;
            return Ok(());
        }
        if !self.pacer.allow(f, self.ends.tx.request) {
            self.flows[f].want_send = false;
            return Ok(());
        }
        let skip = if self.ends.send.can_skip_success() { Flags::SKIP_SUCCESS } else { Flags::empty() };
        let flags = if self.ends.chained { Flags::IO_LINK | skip } else { skip };
        self.flows[f].slot.send_one(&mut self.ends.send, ring, f, self.ends.tx.request, flags)?;
        if self.ends.chained {
            self.ends.recv.arm(ring, f, self.ends.tx.response, true, Flags::empty())?;
        }
        self.due[f] = now;
        self.max_in_flight = 1;
        let fl = &mut self.flows[f];
        fl.want_send = false;
        fl.active = true;
        self.active += 1;
        Ok(())
    }

    fn on_send(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<()> {
        match self.ends.send.complete(ring, c)? {
            SendEvent::Nothing => {}
            SendEvent::Cancelled { .. } | SendEvent::Chain { cancelled: 1.., .. } => {
                return Err(Error::Peer("a request send was cancelled mid-chain".into()))
            }
            SendEvent::Dropped { .. } => return Err(datagram_on_tcp()),
            SendEvent::Sent { flow, .. } | SendEvent::Chain { flow, .. } if self.bursting() => {
                self.flows[flow].slot.in_flight = false;
                self.sending -= 1;
                self.send_due(ring, flow)?;
            }
            SendEvent::Released { flow } if self.bursting() => self.send_due(ring, flow)?,
            // A send path may free its buffer with the send's own CQE (splice) or with a
            // later notification (zc); the response may have come first.
            SendEvent::Sent { flow, .. } | SendEvent::Chain { flow, .. } | SendEvent::Released { flow } => {
                if self.flows[flow].want_send && !run.stopping {
                    self.start_tx(ring, flow, monotonic_ns())?;
                }
            }
        }
        Ok(())
    }

    fn on_recv(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<()> {
        let tx = self.ends.tx;
        match self.ends.recv.complete(ring, c, &mut self.ends.verify)? {
            RecvEvent::Data { flow, bytes } => {
                if !self.ends.chained && !self.ends.recv.multishot() {
                    self.ends.recv.arm(ring, flow, self.ends.recv_len, false, Flags::empty())?;
                }
                let bursting = self.bursting();
                let fl = &mut self.flows[flow];
                fl.got += bytes;
                if bursting {
                    return self.complete_responses(ring, flow, run);
                }
                if fl.got < tx.response {
                    if self.ends.chained {
                        return Err(torn("response", fl.got, tx.response));
                    }
                    return Ok(());
                }
                if fl.got > tx.response || !fl.active {
                    return Err(Error::Protocol(format!(
                        "the server sent {} bytes for a {}-byte response",
                        fl.got, tx.response
                    )));
                }
                fl.got = 0;
                fl.active = false;
                self.active -= 1;
                let now = monotonic_ns();
                run.sampler.record(now - self.due[flow]);
                let k = &mut run.counters[flow];
                k.transactions += 1;
                k.bytes_sent += u64::from(tx.request);
                k.bytes_received += u64::from(tx.response);
                if !run.stopping && k.transactions < tx.limit {
                    self.start_tx(ring, flow, now)?;
                }
            }
            RecvEvent::Eof { .. } => {
                return Err(Error::Peer("the server closed a data connection during the test".into()))
            }
            RecvEvent::Nothing | RecvEvent::Cancelled { .. } => {}
        }
        Ok(())
    }
}

impl<S: SendPath, R: RecvPath> Workload for RrClient<S, R> {
    fn start(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.pacer.start(ring)?;
        if !self.ends.chained {
            for f in 0..self.flows.len() {
                self.ends.recv.arm(ring, f, self.ends.recv_len, false, Flags::empty())?;
            }
        }
        let now = monotonic_ns();
        if let Some(s) = &mut self.schedule {
            s.start(run.deadline_ns.saturating_sub(s.window_ns));
            return self.release_due(ring, now, run.deadline_ns);
        }
        for f in 0..self.flows.len() {
            if self.bursting() {
                // The whole burst is due at once, and leaves in as few sends as fit.
                let burst = self.ends.tx.burst;
                self.due[f * burst as usize..][..burst as usize].fill(now);
                let first = u32::try_from(self.ends.tx.limit).map_or(burst, |limit| burst.min(limit));
                let fl = &mut self.flows[f];
                (fl.len, fl.queued) = (first, first);
                self.send_due(ring, f)?;
            } else {
                self.start_tx(ring, f, now)?;
            }
        }
        Ok(())
    }

    fn done(&self, run: &Run) -> bool {
        // A timed test has no count: no walk over the flows at every batch.
        let counted = self.ends.tx.limit != u64::MAX
            && run.counters.iter().all(|k| k.transactions >= self.ends.tx.limit);
        (run.stopping || counted)
            && self.active == 0
            && self.sending == 0
            && self.ends.send.outstanding() == 0
    }

    /// The deadline: nothing new comes due, and what is due but not yet sent never goes.
    fn on_deadline(&mut self, _ring: &mut Ring, run: &mut Run) -> Result<()> {
        run.stopping = true;
        for fl in &mut self.flows {
            if let Some(s) = &mut self.schedule {
                s.report.unsent_at_end += u64::from(fl.queued);
            }
            fl.len -= fl.queued;
            fl.queued = 0;
        }
        Ok(())
    }

    /// A pacing tick: the requests that waited for tokens go, as the refill allows.
    fn on_pace(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.pacer.tick();
        let mut now = 0;
        for f in 0..self.flows.len() {
            if !self.pacer.take_waiting(f) || run.stopping {
                continue;
            }
            if self.bursting() {
                self.send_due(ring, f)?;
            } else if !self.flows[f].active {
                if now == 0 {
                    now = monotonic_ns();
                }
                self.start_tx(ring, f, now)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            op::SEND | op::SPLICE_IN => self.on_send(ring, c, run)?,
            op::RECV => self.on_recv(ring, c, run)?,
            // Open loop: the wakeup for the next due request.
            op::DUE if self.schedule.is_some() => {
                if !run.stopping {
                    self.release_due(ring, monotonic_ns(), run.deadline_ns)?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.ends.recv.after_batch();
    }

    fn report(&self) -> RoleReport {
        RoleReport {
            rr: Some(RrReport {
                burst: self.ends.tx.burst,
                max_in_flight: self.max_in_flight,
                open_loop: self.schedule.as_ref().map(|s| s.report),
            }),
            ..RoleReport::paths(&self.ends.send, &self.ends.recv, &self.ends.verify)
        }
    }
}

fn torn(what: &str, got: u32, want: u32) -> Error {
    Error::Peer(format!("the peer closed the connection mid-{what} ({got} of {want} bytes)"))
}

#[derive(Default)]
struct ServerFlow {
    slot: SendSlot,
    got: u32,
    /// Responses owed but waiting for a send buffer (burst: or for the send in flight).
    owed: u32,
    /// Chained mode: the next chain waits for a send buffer.
    waiting: bool,
}

/// The server: receive a whole request, answer with a response, until the client closes.
/// A transaction counts when its request arrived whole; a failed response aborts the test.
pub struct RrServer<S, R> {
    ends: Ends<S, R>,
    flows: Vec<ServerFlow>,
    open: usize,
    /// Chained mode: the response linked to a flow's final (EOF) receive is cancelled, and
    /// that cancellation is the flow's last CQE.
    cancels_due: usize,
    /// Burst: flows with a send in flight.
    sending: usize,
    /// The most whole requests one flow had waiting for an answer at once.
    max_waiting: u32,
    /// Paces the responses (the client's `-b`, `--flow-rate`, held to `--max-rate`).
    pacer: Pacer,
}

impl<S: SendPath, R: RecvPath> RrServer<S, R> {
    /// The first argument: the send and receive paths and the verifier.
    pub fn new(
        (send, recv, verify): (S, R, Verifier),
        tx: Transaction,
        flows: usize,
        pacer: Pacer,
    ) -> RrServer<S, R> {
        let tx = Transaction { burst: tx.burst.max(1), ..tx };
        let chained = tx.burst == 1 && !recv.multishot() && send.can_chain();
        let flows = (0..flows).map(|_| ServerFlow::default()).collect();
        RrServer {
            ends: Ends::new(send, recv, verify, tx, chained, (tx.response, tx.request)),
            flows,
            open: 0,
            cancels_due: 0,
            sending: 0,
            max_waiting: 0,
            pacer,
        }
    }

    /// Burst: answers as many owed requests of `f` as one send carries, unless a send of
    /// the flow is in flight or its buffers are all with the kernel (their completions
    /// call this again). The send keeps its CQE: the next one waits for it.
    fn answer_one_send(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        let fl = &mut self.flows[f];
        let paths = (&mut self.ends.send, &mut self.pacer);
        let k = fl.slot.send_due(paths, ring, f, fl.owed, (self.ends.per_send, self.ends.tx.response))?;
        if k > 0 {
            fl.owed -= k;
            self.sending += 1;
        }
        Ok(())
    }

    /// Chained mode: receive a whole request, then (linked) send the response; the chain
    /// waits for a send buffer, and for the response's pacing tokens (the tick arms it).
    fn arm_chain(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        if self.ends.send.available(f) == 0 {
            self.ends.send.short_of_buffers(f);
            self.flows[f].waiting = true;
            return Ok(());
        }
        self.flows[f].waiting = false;
        if !self.pacer.allow(f, self.ends.tx.response) {
            return Ok(());
        }
        self.ends.recv.arm(ring, f, self.ends.tx.request, true, Flags::IO_LINK)?;
        let skip = if self.ends.send.can_skip_success() { Flags::SKIP_SUCCESS } else { Flags::empty() };
        self.flows[f].slot.send_one(&mut self.ends.send, ring, f, self.ends.tx.response, skip)?;
        Ok(())
    }

    /// Multishot mode: answer every whole request that arrived, as buffers allow. With one
    /// transaction in flight at most one response is ever owed, so sends cannot overlap.
    fn answer(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        if self.ends.tx.burst > 1 {
            return self.answer_one_send(ring, f);
        }
        let skip = if self.ends.send.can_skip_success() { Flags::SKIP_SUCCESS } else { Flags::empty() };
        while self.flows[f].owed > 0 && self.ends.send.available(f) > 0 {
            if !self.pacer.allow(f, self.ends.tx.response) {
                // The pacer's tick answers it.
                return Ok(());
            }
            self.flows[f].slot.send_one(&mut self.ends.send, ring, f, self.ends.tx.response, skip)?;
            self.flows[f].owed -= 1;
        }
        if self.flows[f].owed > 0 {
            self.ends.send.short_of_buffers(f);
        }
        Ok(())
    }

    fn on_send(&mut self, ring: &mut Ring, c: &Completion) -> Result<()> {
        match self.ends.send.complete(ring, c)? {
            SendEvent::Nothing => {}
            SendEvent::Cancelled { .. } | SendEvent::Chain { cancelled: 1.., .. } => {
                self.cancels_due = self.cancels_due.saturating_sub(1)
            }
            SendEvent::Dropped { .. } => return Err(datagram_on_tcp()),
            SendEvent::Sent { flow, .. } | SendEvent::Chain { flow, .. } if self.ends.tx.burst > 1 => {
                self.flows[flow].slot.in_flight = false;
                self.sending -= 1;
                self.answer_one_send(ring, flow)?;
            }
            SendEvent::Sent { flow, .. } | SendEvent::Chain { flow, .. } | SendEvent::Released { flow } => {
                if self.ends.chained && self.flows[flow].waiting {
                    self.arm_chain(ring, flow)?;
                } else if !self.ends.chained {
                    self.answer(ring, flow)?;
                }
            }
        }
        Ok(())
    }

    fn on_recv(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<()> {
        let tx = self.ends.tx;
        match self.ends.recv.complete(ring, c, &mut self.ends.verify)? {
            RecvEvent::Data { flow, bytes } if self.ends.chained => {
                if bytes != tx.request {
                    // A torn request: the client went away mid-message (or, in a counted
                    // test, closed after its last transaction).
                    if tx.limit == u64::MAX {
                        check_not_early(run.deadline_ns)?;
                    }
                    self.open -= 1;
                    self.cancels_due += 1;
                    return Ok(());
                }
                count(&mut run.counters[flow], tx);
                self.max_waiting = 1;
                // The client sends its next request only after this response arrived
                // whole, so arming the next chain now cannot reorder anything.
                self.arm_chain(ring, flow)?;
            }
            RecvEvent::Data { flow, bytes } => {
                if !self.ends.recv.multishot() {
                    self.ends.recv.arm(ring, flow, self.ends.recv_len, false, Flags::empty())?;
                }
                let fl = &mut self.flows[flow];
                fl.got += bytes;
                while fl.got >= tx.request {
                    fl.got -= tx.request;
                    fl.owed += 1;
                    count(&mut run.counters[flow], tx);
                }
                self.max_waiting = self.max_waiting.max(fl.owed);
                self.answer(ring, flow)?;
            }
            RecvEvent::Eof { flow } => {
                // A counted client closes when its transactions are done.
                if tx.limit == u64::MAX {
                    check_not_early(run.deadline_ns)?;
                }
                self.open -= 1;
                if self.ends.chained {
                    self.cancels_due += 1;
                }
                // A client closes once it has every answer it waits for: what is still
                // owed went to a client that did not wait (a flood of requests, paced
                // answers), and nobody reads it.
                self.flows[flow].owed = 0;
            }
            RecvEvent::Nothing | RecvEvent::Cancelled { .. } => {}
        }
        Ok(())
    }
}

impl<S: SendPath, R: RecvPath> Workload for RrServer<S, R> {
    fn timers(&self) -> Timers {
        Timers { deadline: false }
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.start(ring)?;
        self.open = self.flows.len();
        for f in 0..self.flows.len() {
            if self.ends.chained {
                self.arm_chain(ring, f)?;
            } else {
                self.ends.recv.arm(ring, f, self.ends.recv_len, false, Flags::empty())?;
            }
        }
        Ok(())
    }

    fn done(&self, _run: &Run) -> bool {
        self.open == 0 && self.cancels_due == 0 && self.sending == 0 && self.ends.send.outstanding() == 0
    }

    /// A pacing tick: the responses (chained: the chains) that waited for tokens go.
    fn on_pace(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.tick();
        for f in 0..self.flows.len() {
            if !self.pacer.take_waiting(f) {
                continue;
            }
            if self.ends.chained {
                self.arm_chain(ring, f)?;
            } else {
                self.answer(ring, f)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            op::SEND | op::SPLICE_IN => self.on_send(ring, c)?,
            op::RECV => self.on_recv(ring, c, run)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.ends.recv.after_batch();
    }

    fn report(&self) -> RoleReport {
        let rr = RrReport { burst: self.ends.tx.burst, max_in_flight: self.max_waiting, open_loop: None };
        RoleReport { rr: Some(rr), ..RoleReport::paths(&self.ends.send, &self.ends.recv, &self.ends.verify) }
    }
}

fn count(k: &mut FlowCounters, tx: Transaction) {
    k.transactions += 1;
    k.bytes_received += u64::from(tx.request);
    k.bytes_sent += u64::from(tx.response);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_send_carries_what_fits_and_always_one_message() {
        let tx = |burst| Transaction { request: 1, response: 1, burst, limit: u64::MAX };
        // One in flight: one message per send and per receive, as without a burst.
        assert_eq!((tx(1).per_send(1), tx(1).recv_len(50_000)), (1, 50_000));
        // Small messages: the whole burst in one send.
        assert_eq!(tx(16).per_send(1), 16);
        assert_eq!(tx(16).recv_len(1000), 16_000);
        // Large ones: as many as fit the send's bytes, and never none.
        assert_eq!(tx(8).per_send(50_000), 1);
        assert_eq!(tx(8).per_send(10_000), 6);
        assert_eq!(tx(4096).per_send(1), 4096);
        assert_eq!(tx(8).recv_len(1 << 30), 1 << 30);
    }
}
