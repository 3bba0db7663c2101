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
use crate::ring::{Completion, Ring};
use crate::verify::Verifier;
use crate::workload::driver::{RoleReport, Run, Timers, Workload};
use crate::workload::{check_not_early, datagram_on_tcp, FlowCounters};

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

/// The client: send a request, receive the whole response, record the round trip, repeat
/// until the deadline; transactions in flight at the deadline are completed and counted.
/// A stop ends it at once; transactions in flight then are not counted.
pub struct RrClient<S, R> {
    send: S,
    recv: R,
    verify: Verifier,
    tx: Transaction,
    chained: bool,
    flows: Vec<ClientFlow>,
    active: usize,
}

impl<S: SendPath, R: RecvPath> RrClient<S, R> {
    pub fn new(send: S, recv: R, verify: Verifier, tx: Transaction, flows: usize) -> RrClient<S, R> {
        let chained = !recv.multishot() && send.can_chain();
        let flows = (0..flows)
            .map(|_| ClientFlow { started: 0, send_offset: 0, got: 0, active: false, want_send: false })
            .collect();
        RrClient { send, recv, verify, tx, chained, flows, active: 0 }
    }

    fn start_tx(&mut self, ring: &mut Ring, f: usize, now: u64) -> Result<()> {
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

    fn on_send(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<()> {
        match self.send.complete(ring, c)? {
            SendEvent::Nothing => {}
            SendEvent::Cancelled { .. } | SendEvent::Chain { cancelled: 1.., .. } => {
                return Err(Error::Peer("a request send was cancelled mid-chain".into()))
            }
            SendEvent::Dropped { .. } => return Err(datagram_on_tcp()),
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
        let tx = self.tx;
        match self.recv.complete(ring, c, &mut self.verify)? {
            RecvEvent::Data { flow, bytes } => {
                if !self.chained && !self.recv.multishot() {
                    self.recv.arm(ring, flow, tx.response, false, Flags::empty())?;
                }
                let fl = &mut self.flows[flow];
                fl.got += bytes;
                if fl.got < tx.response {
                    if self.chained {
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
                run.sampler.record(now - fl.started);
                let k = &mut run.counters[flow];
                k.transactions += 1;
                k.bytes_sent += u64::from(tx.request);
                k.bytes_received += u64::from(tx.response);
                if !run.stopping {
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
    fn timers(&self) -> Timers {
        Timers { deadline: true, guard: false }
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        if !self.chained {
            for f in 0..self.flows.len() {
                self.recv.arm(ring, f, self.tx.response, false, Flags::empty())?;
            }
        }
        let now = monotonic_ns();
        for f in 0..self.flows.len() {
            self.start_tx(ring, f, now)?;
        }
        Ok(())
    }

    fn done(&self, run: &Run) -> bool {
        run.stopping && self.active == 0 && self.send.outstanding() == 0
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            op::SEND | op::SPLICE_IN => self.on_send(ring, c, run)?,
            op::RECV => self.on_recv(ring, c, run)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.recv.after_batch();
    }

    fn report(&self) -> RoleReport {
        RoleReport {
            send: Some(self.send.report()),
            recv: Some(self.recv.report()),
            verify: self.verify.report(),
            ..RoleReport::default()
        }
    }
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

/// The server: receive a whole request, answer with a response, until the client closes.
/// A transaction counts when its request arrived whole; a failed response aborts the test.
pub struct RrServer<S, R> {
    send: S,
    recv: R,
    verify: Verifier,
    tx: Transaction,
    chained: bool,
    flows: Vec<ServerFlow>,
    open: usize,
    /// Chained mode: the response linked to a flow's final (EOF) receive is cancelled, and
    /// that cancellation is the flow's last CQE.
    cancels_due: usize,
}

impl<S: SendPath, R: RecvPath> RrServer<S, R> {
    pub fn new(send: S, recv: R, verify: Verifier, tx: Transaction, flows: usize) -> RrServer<S, R> {
        let chained = !recv.multishot() && send.can_chain();
        let flows =
            (0..flows).map(|_| ServerFlow { send_offset: 0, got: 0, owed: 0, waiting: false }).collect();
        RrServer { send, recv, verify, tx, chained, flows, open: 0, cancels_due: 0 }
    }

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

    fn on_send(&mut self, ring: &mut Ring, c: &Completion) -> Result<()> {
        match self.send.complete(ring, c)? {
            SendEvent::Nothing => {}
            SendEvent::Cancelled { .. } | SendEvent::Chain { cancelled: 1.., .. } => {
                self.cancels_due = self.cancels_due.saturating_sub(1)
            }
            SendEvent::Dropped { .. } => return Err(datagram_on_tcp()),
            SendEvent::Sent { flow, .. } | SendEvent::Chain { flow, .. } | SendEvent::Released { flow } => {
                if self.chained && self.flows[flow].waiting {
                    self.arm_chain(ring, flow)?;
                } else if !self.chained {
                    self.answer(ring, flow)?;
                }
            }
        }
        Ok(())
    }

    fn on_recv(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<()> {
        let tx = self.tx;
        match self.recv.complete(ring, c, &mut self.verify)? {
            RecvEvent::Data { flow, bytes } if self.chained => {
                if bytes != tx.request {
                    // A torn request: the client went away mid-message.
                    check_not_early(run.deadline_ns)?;
                    self.open -= 1;
                    self.cancels_due += 1;
                    return Ok(());
                }
                count(&mut run.counters[flow], tx);
                // The client sends its next request only after this response arrived
                // whole, so arming the next chain now cannot reorder anything.
                self.arm_chain(ring, flow)?;
            }
            RecvEvent::Data { flow, bytes } => {
                if !self.recv.multishot() {
                    self.recv.arm(ring, flow, tx.request, false, Flags::empty())?;
                }
                let fl = &mut self.flows[flow];
                fl.got += bytes;
                while fl.got >= tx.request {
                    fl.got -= tx.request;
                    fl.owed += 1;
                    count(&mut run.counters[flow], tx);
                }
                self.answer(ring, flow)?;
            }
            RecvEvent::Eof { .. } => {
                check_not_early(run.deadline_ns)?;
                self.open -= 1;
                if self.chained {
                    self.cancels_due += 1;
                }
            }
            RecvEvent::Nothing | RecvEvent::Cancelled { .. } => {}
        }
        Ok(())
    }
}

impl<S: SendPath, R: RecvPath> Workload for RrServer<S, R> {
    fn timers(&self) -> Timers {
        Timers { deadline: false, guard: true }
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.open = self.flows.len();
        for f in 0..self.flows.len() {
            if self.chained {
                self.arm_chain(ring, f)?;
            } else {
                self.recv.arm(ring, f, self.tx.request, false, Flags::empty())?;
            }
        }
        Ok(())
    }

    fn done(&self, _run: &Run) -> bool {
        self.open == 0 && self.cancels_due == 0 && self.send.outstanding() == 0
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
        self.recv.after_batch();
    }

    fn report(&self) -> RoleReport {
        RoleReport {
            send: Some(self.send.report()),
            recv: Some(self.recv.report()),
            verify: self.verify.report(),
            ..RoleReport::default()
        }
    }
}

fn count(k: &mut FlowCounters, tx: Transaction) {
    k.transactions += 1;
    k.bytes_received += u64::from(tx.request);
    k.bytes_sent += u64::from(tx.response);
}
