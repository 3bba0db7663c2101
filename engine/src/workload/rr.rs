//! Request/response: one transaction in flight per flow.
//!
//! With a one-shot receive engine each transaction is one linked chain (client: send ->
//! receive; server: receive -> send), so a copy-engine transaction costs one CQE and one
//! io_uring_enter per side. Otherwise (a multishot engine, or a send engine that cannot be
//! chained) a receive stays armed on its own and the workload counts bytes until a whole
//! message has arrived.

use io_uring::squeue::Flags;

use crate::error::{Error, Result};
use crate::io::{op, RecvEvent, RecvPath, SendEvent, SendPath};
use crate::measure::clock::monotonic_ns;
use crate::measure::intervals::IntervalSampler;
use crate::ring::{token, Ring};
use crate::verify::Verifier;
use crate::workload::{check_not_early, peer_stuck, unexpected, Ending, FlowCounters};

/// Request and response sizes of one transaction.
#[derive(Clone, Copy, Debug)]
pub struct Transaction {
    pub request: u32,
    pub response: u32,
}

struct ClientFlow {
    started: u64,
    send_offset: u64,
    got: u32,
    /// A request is out and its response not yet complete.
    active: bool,
    /// The next request waits for a send buffer to come back.
    want_send: bool,
}

struct Client<'a, S, R> {
    send: &'a mut S,
    recv: &'a mut R,
    tx: Transaction,
    chained: bool,
    flows: Vec<ClientFlow>,
    active: usize,
}

impl<S: SendPath, R: RecvPath> Client<'_, S, R> {
    fn start(&mut self, ring: &mut Ring, f: usize, now: u64) -> Result<()> {
        if self.send.available(f) == 0 {
            self.send.short_of_buffers(f);
            self.flows[f].want_send = true;
            return Ok(());
        }
        let skip = if self.send.can_skip_success() { Flags::SKIP_SUCCESS } else { Flags::empty() };
        let flags = if self.chained { Flags::IO_LINK | skip } else { skip };
        let off = self.flows[f].send_offset;
        self.flows[f].send_offset += u64::from(self.send.push(ring, f, off, self.tx.request, flags)?);
        if self.chained {
            self.recv.arm(ring, f, self.tx.response, true, Flags::empty())?;
        }
        let fl = &mut self.flows[f];
        fl.started = now;
        fl.want_send = false;
        fl.active = true;
        self.active += 1;
        Ok(())
    }
}

/// The client: send a request, receive the whole response, record the round trip, repeat
/// until `deadline_ns`; transactions in flight at the deadline are completed and counted.
/// An ABORT completion ends it at once; transactions in flight then are not counted.
#[allow(clippy::too_many_arguments)]
pub fn client<S: SendPath, R: RecvPath>(
    ring: &mut Ring,
    send: &mut S,
    recv: &mut R,
    tx: Transaction,
    deadline_ns: u64,
    sampler: &mut IntervalSampler,
    verify: &mut Verifier,
    counters: &mut [FlowCounters],
) -> Result<Ending> {
    let nflows = counters.len();
    let chained = !recv.multishot() && send.can_chain();
    let flows = (0..nflows)
        .map(|_| ClientFlow { started: 0, send_offset: 0, got: 0, active: false, want_send: false })
        .collect();
    let mut cl = Client { send, recv, tx, chained, flows, active: 0 };
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(deadline_ns, token(op::DEADLINE, 0))?;
    if !chained {
        for f in 0..nflows {
            cl.recv.arm(ring, f, tx.response, false, Flags::empty())?;
        }
    }
    let now = monotonic_ns();
    for f in 0..nflows {
        cl.start(ring, f, now)?;
    }
    let mut stopping = false;
    while !(stopping && cl.active == 0 && cl.send.outstanding() == 0) {
        ring.submit_and_wait()?;
        ring.reap(&mut done);
        for c in &done {
            match c.op() {
                op::DEADLINE => stopping = true,
                op::ABORT => return Ok(Ending::Aborted),
                op::INTERVAL => sampler.tick(counters),
                op::SEND | op::SPLICE_IN => match cl.send.complete(ring, c)? {
                    SendEvent::Nothing => {}
                    SendEvent::Cancelled { .. } | SendEvent::Chain { cancelled: 1.., .. } => {
                        return Err(Error::Peer("a request send was cancelled mid-chain".into()))
                    }
                    // A send path may free its buffer with the send's own CQE (splice) or
                    // with a later notification (zc); the response may have come first.
                    SendEvent::Sent { flow, .. }
                    | SendEvent::Chain { flow, .. }
                    | SendEvent::Released { flow } => {
                        if cl.flows[flow].want_send && !stopping {
                            cl.start(ring, flow, monotonic_ns())?;
                        }
                    }
                },
                op::RECV => match cl.recv.complete(ring, c, verify)? {
                    RecvEvent::Data { flow, bytes } => {
                        if !chained && !cl.recv.multishot() {
                            cl.recv.arm(ring, flow, tx.response, false, Flags::empty())?;
                        }
                        let fl = &mut cl.flows[flow];
                        fl.got += bytes;
                        if fl.got < tx.response {
                            if chained {
                                return Err(torn("response", fl.got, tx.response));
                            }
                            continue;
                        }
                        if fl.got > tx.response || !fl.active {
                            return Err(Error::Protocol(format!(
                                "the server sent {} bytes for a {}-byte response",
                                fl.got, tx.response
                            )));
                        }
                        fl.got = 0;
                        fl.active = false;
                        cl.active -= 1;
                        let now = monotonic_ns();
                        sampler.record(now - fl.started);
                        let k = &mut counters[flow];
                        k.transactions += 1;
                        k.bytes_sent += u64::from(tx.request);
                        k.bytes_received += u64::from(tx.response);
                        if !stopping {
                            cl.start(ring, flow, now)?;
                        }
                    }
                    RecvEvent::Eof { .. } => {
                        return Err(Error::Peer("the server closed a data connection during the test".into()))
                    }
                    RecvEvent::Nothing | RecvEvent::Cancelled { .. } => {}
                },
                other => return Err(unexpected(other)),
            }
        }
        cl.recv.after_batch();
    }
    Ok(Ending::Completed)
}

fn torn(what: &str, got: u32, want: u32) -> Error {
    Error::Peer(format!("the peer closed the connection mid-{what} ({got} of {want} bytes)"))
}

struct ServerFlow {
    send_offset: u64,
    got: u32,
    /// Responses owed but waiting for a send buffer.
    owed: u32,
    /// Chained mode: the next chain waits for a send buffer.
    waiting: bool,
}

struct Server<'a, S, R> {
    send: &'a mut S,
    recv: &'a mut R,
    tx: Transaction,
    flows: Vec<ServerFlow>,
}

impl<S: SendPath, R: RecvPath> Server<'_, S, R> {
    /// Chained mode: receive a whole request, then (linked) send the response.
    fn arm_chain(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        if self.send.available(f) == 0 {
            self.send.short_of_buffers(f);
            self.flows[f].waiting = true;
            return Ok(());
        }
        self.flows[f].waiting = false;
        self.recv.arm(ring, f, self.tx.request, true, Flags::IO_LINK)?;
        let skip = if self.send.can_skip_success() { Flags::SKIP_SUCCESS } else { Flags::empty() };
        let off = self.flows[f].send_offset;
        self.flows[f].send_offset += u64::from(self.send.push(ring, f, off, self.tx.response, skip)?);
        Ok(())
    }

    /// Multishot mode: answer every whole request that arrived, as buffers allow.
    fn answer(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        let skip = if self.send.can_skip_success() { Flags::SKIP_SUCCESS } else { Flags::empty() };
        while self.flows[f].owed > 0 && self.send.available(f) > 0 {
            let off = self.flows[f].send_offset;
            self.flows[f].send_offset += u64::from(self.send.push(ring, f, off, self.tx.response, skip)?);
            self.flows[f].owed -= 1;
        }
        if self.flows[f].owed > 0 {
            self.send.short_of_buffers(f);
        }
        Ok(())
    }
}

/// The server: receive a whole request, answer with a response, until the client closes.
/// A transaction counts when its request arrived whole; a failed response aborts the test.
/// An ABORT completion ends it at once.
#[allow(clippy::too_many_arguments)]
pub fn server<S: SendPath, R: RecvPath>(
    ring: &mut Ring,
    send: &mut S,
    recv: &mut R,
    tx: Transaction,
    (deadline_ns, guard_ns): (u64, u64),
    verify: &mut Verifier,
    sampler: &mut IntervalSampler,
    counters: &mut [FlowCounters],
) -> Result<Ending> {
    let nflows = counters.len();
    let chained = !recv.multishot() && send.can_chain();
    let flows = (0..nflows).map(|_| ServerFlow { send_offset: 0, got: 0, owed: 0, waiting: false }).collect();
    let mut sv = Server { send, recv, tx, flows };
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(guard_ns, token(op::GUARD, 0))?;
    for f in 0..nflows {
        if chained {
            sv.arm_chain(ring, f)?;
        } else {
            sv.recv.arm(ring, f, tx.request, false, Flags::empty())?;
        }
    }
    let mut open = nflows;
    // Chained mode: the response linked to a flow's final (EOF) receive is cancelled, and
    // that cancellation is the flow's last CQE.
    let mut cancels_due = 0usize;
    while open > 0 || cancels_due > 0 || sv.send.outstanding() > 0 {
        ring.submit_and_wait()?;
        ring.reap(&mut done);
        for c in &done {
            match c.op() {
                op::GUARD => return Err(peer_stuck()),
                op::ABORT => return Ok(Ending::Aborted),
                op::INTERVAL => sampler.tick(counters),
                op::SEND | op::SPLICE_IN => match sv.send.complete(ring, c)? {
                    SendEvent::Nothing => {}
                    SendEvent::Cancelled { .. } | SendEvent::Chain { cancelled: 1.., .. } => {
                        cancels_due = cancels_due.saturating_sub(1)
                    }
                    SendEvent::Sent { flow, .. }
                    | SendEvent::Chain { flow, .. }
                    | SendEvent::Released { flow } => {
                        if chained && sv.flows[flow].waiting {
                            sv.arm_chain(ring, flow)?;
                        } else if !chained {
                            sv.answer(ring, flow)?;
                        }
                    }
                },
                op::RECV => match sv.recv.complete(ring, c, verify)? {
                    RecvEvent::Data { flow, bytes } if chained => {
                        if bytes != tx.request {
                            // A torn request: the client went away mid-message.
                            check_not_early(deadline_ns)?;
                            open -= 1;
                            cancels_due += 1;
                            continue;
                        }
                        count(&mut counters[flow], tx);
                        // The client sends its next request only after this response arrived
                        // whole, so arming the next chain now cannot reorder anything.
                        sv.arm_chain(ring, flow)?;
                    }
                    RecvEvent::Data { flow, bytes } => {
                        if !sv.recv.multishot() {
                            sv.recv.arm(ring, flow, tx.request, false, Flags::empty())?;
                        }
                        let fl = &mut sv.flows[flow];
                        fl.got += bytes;
                        while fl.got >= tx.request {
                            fl.got -= tx.request;
                            fl.owed += 1;
                            count(&mut counters[flow], tx);
                        }
                        sv.answer(ring, flow)?;
                    }
                    RecvEvent::Eof { .. } => {
                        check_not_early(deadline_ns)?;
                        open -= 1;
                        if chained {
                            cancels_due += 1;
                        }
                    }
                    RecvEvent::Nothing | RecvEvent::Cancelled { .. } => {}
                },
                other => return Err(unexpected(other)),
            }
        }
        sv.recv.after_batch();
    }
    Ok(Ending::Completed)
}

fn count(k: &mut FlowCounters, tx: Transaction) {
    k.transactions += 1;
    k.bytes_received += u64::from(tx.request);
    k.bytes_sent += u64::from(tx.response);
}
