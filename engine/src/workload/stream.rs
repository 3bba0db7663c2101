//! Bulk transfer: the sender keeps a chain of linked sends in flight per flow until the
//! deadline, then half-closes; the receiver reads until every flow reaches EOF.

use std::os::fd::RawFd;

use io_uring::squeue::Flags;

use crate::io::{op, RecvEvent, RecvPath, SendEvent, SendPath};
use crate::ring::{Completion, Ring};
use crate::verify::Verifier;
use crate::workload::driver::{RoleReport, Run, Timers, Wait, Workload};
use crate::workload::ending::{check_not_early, datagram_on_tcp, peer_not_reading, shutdown_write};
use crate::workload::pacer::Pacer;
use ringperf_core::error::Result;
use ringperf_core::report::Ending;

/// Sends `size`-byte messages on every flow until the deadline, waits for the sends in
/// flight and for every zero-copy buffer to come back, then half-closes each flow so the
/// receiver sees EOF.
///
/// Each flow has one chain of up to `depth` sends in flight: linked with MSG_WAITALL they
/// keep the stream in order; a new chain starts only when the last one has finished.
/// Sends still blocked PEER_GRACE_NS after the deadline fail the test (the peer hung).
/// Every send takes its flow's pacing tokens first (when pacing is on) and a flow that
/// finds none waits for the next tick.
pub struct StreamSender<S> {
    path: S,
    socks: Vec<RawFd>,
    size: u32,
    depth: usize,
    pacer: Pacer,
    offsets: Vec<u64>,
    in_flight: Vec<usize>,
    total_in_flight: usize,
    /// Bytes each flow sends before it stops (the spec's byte limit; u64::MAX when timed).
    budget: u64,
}

impl<S: SendPath> StreamSender<S> {
    /// `budget`: the bytes each flow sends before it stops, if the test counts bytes.
    pub fn new(
        path: S,
        socks: &[RawFd],
        size: u32,
        depth: usize,
        pacer: Pacer,
        budget: Option<u64>,
    ) -> StreamSender<S> {
        StreamSender {
            budget: budget.unwrap_or(u64::MAX),
            path,
            socks: socks.to_vec(),
            size,
            depth,
            pacer,
            offsets: vec![0; socks.len()],
            in_flight: vec![0; socks.len()],
            total_in_flight: 0,
        }
    }

    /// Queues flow `f`'s next chain.
    fn refill(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        // Count the sends the pacer allows first, so the chain's last send is known and
        // carries no IO_LINK.
        let free = self.path.available(f);
        if free < self.depth {
            self.path.short_of_buffers(f);
        }
        // A byte count: no more sends than the flow's remaining budget takes (a counter,
        // not a clock: the window ends when the last of them has been sent).
        let left = self.budget.saturating_sub(self.offsets[f]);
        let room = self
            .depth
            .min(free)
            .min(usize::try_from(left.div_ceil(u64::from(self.size))).unwrap_or(usize::MAX));
        let mut k = 0;
        while k < room && self.pacer.allow(f, self.size) {
            k += 1;
        }
        for i in 1..=k {
            let flags = if i < k { Flags::IO_LINK } else { Flags::empty() };
            let len = u64::from(self.size).min(self.budget - self.offsets[f]) as u32;
            self.offsets[f] += u64::from(self.path.push(ring, f, self.offsets[f], len, flags)?);
            self.in_flight[f] += 1;
            self.total_in_flight += 1;
        }
        Ok(())
    }

    fn ended(&mut self, flow: usize, sends: usize) {
        self.in_flight[flow] -= sends;
        self.total_in_flight -= sends;
    }
}

impl<S: SendPath> Workload for StreamSender<S> {
    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        self.pacer.start(ring)?;
        for f in 0..self.socks.len() {
            self.refill(ring, f)?;
        }
        Ok(())
    }

    fn wait(&self) -> Wait {
        // No flow can refill before its whole chain is back, so a worker whose every flow
        // has a chain out waits for the shortest one (bounded, so a guard or a stop still
        // gets through). Zero-copy notifications count toward the wait too: they come
        // anyway, and each one may be what frees a buffer.
        let chain = self.path.chain_cqes(self.in_flight.iter().copied().min().unwrap_or(0));
        if self.pacer.enabled() {
            Wait::Batch
        } else {
            Wait::Chain(chain)
        }
    }

    fn done(&self, run: &Run) -> bool {
        let sent_all = self.offsets.iter().all(|&o| o >= self.budget);
        (run.stopping || sent_all) && self.total_in_flight == 0 && self.path.outstanding() == 0
    }

    fn on_guard(&mut self) -> Result<Ending> {
        Err(peer_not_reading())
    }

    fn on_pace(&mut self, ring: &mut Ring, run: &mut Run) -> Result<()> {
        self.pacer.tick();
        for f in 0..self.socks.len() {
            if self.pacer.take_waiting(f) && !run.stopping && self.in_flight[f] == 0 {
                self.refill(ring, f)?;
            }
        }
        Ok(())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        if !matches!(c.op(), op::SEND | op::SPLICE_IN) {
            return Ok(false);
        }
        let flow = match self.path.complete(ring, c)? {
            SendEvent::Sent { flow, bytes } => {
                run.counters[flow].bytes_sent += u64::from(bytes);
                self.ended(flow, 1);
                flow
            }
            SendEvent::Cancelled { flow } => {
                self.ended(flow, 1);
                flow
            }
            SendEvent::Chain { flow, sent, bytes, cancelled } => {
                run.counters[flow].bytes_sent += bytes;
                self.ended(flow, (sent + cancelled) as usize);
                flow
            }
            SendEvent::Released { flow } => flow,
            SendEvent::Dropped { .. } => return Err(datagram_on_tcp()),
            SendEvent::Nothing => return Ok(true),
        };
        if !run.stopping && self.in_flight[flow] == 0 {
            self.refill(ring, flow)?;
        }
        Ok(true)
    }

    fn finish(&mut self, _run: &Run) -> Result<Ending> {
        // The caller closes the sockets; the half-close tells the receiver the stream ended.
        for &fd in &self.socks {
            shutdown_write(fd);
        }
        Ok(Ending::Completed)
    }

    fn report(&self) -> RoleReport {
        RoleReport { send: Some(self.path.report()), ..RoleReport::default() }
    }
}

/// Receives on every flow until each one reaches EOF. The guard bounds the wait: if the
/// sender never finishes, the test fails instead of hanging; EOF well before the deadline
/// means the sender stopped early, and fails the test too. With a `police` pacer that is
/// on, a flow that overdraws its bucket is not re-armed until a tick refills it (a standing
/// multishot receive is cancelled, and armed again once it has ended and the bucket is out
/// of debt): the sender is held to the rate by TCP's window. Policing ends with the window.
pub struct StreamReceiver<R> {
    path: R,
    verify: Verifier,
    size: u32,
    police: Pacer,
    policing: bool,
    /// Receives a flow keeps linked in flight (a policed flow takes one at a time).
    depth: usize,
    armed: Vec<usize>,
    /// A standing receive cancelled by policing, not armed again yet.
    held: Vec<bool>,
    /// A held flow whose bucket is out of debt: armed as soon as its receive has ended.
    released: Vec<bool>,
    ended: Vec<bool>,
    open: usize,
    /// The sender stops after a byte count: its EOF before the deadline is the test's end,
    /// not a peer that stopped.
    counted: bool,
}

impl<R: RecvPath> StreamReceiver<R> {
    pub fn new(
        path: R,
        verify: Verifier,
        flows: usize,
        size: u32,
        police: Pacer,
        counted: bool,
    ) -> StreamReceiver<R> {
        let policing = police.enabled();
        let depth = if policing || path.multishot() { 1 } else { path.chain().max(1) };
        StreamReceiver {
            path,
            verify,
            size,
            police,
            policing,
            depth,
            armed: vec![0; flows],
            held: vec![false; flows],
            released: vec![false; flows],
            ended: vec![false; flows],
            open: flows,
            counted,
        }
    }

    fn arm(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        for i in 1..=self.depth {
            let link = if i < self.depth { Flags::IO_LINK } else { Flags::empty() };
            self.path.arm(ring, f, self.size, false, link)?;
        }
        self.armed[f] = self.depth;
        Ok(())
    }

    /// Lets flow `f` receive again after policing held it back: a one-shot chain is armed
    /// at once; a cancelled standing receive once the kernel has ended it (two receives
    /// standing on one socket would split the stream between them).
    fn release(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        if !self.path.multishot() {
            return self.arm(ring, f);
        }
        self.released[f] = true;
        self.resume(ring, f)
    }

    /// Arms a held standing receive again if it was released and has ended.
    fn resume(&mut self, ring: &mut Ring, f: usize) -> Result<()> {
        if self.held[f] && self.released[f] && !self.path.live_on(f) && !self.ended[f] {
            self.held[f] = false;
            self.released[f] = false;
            self.arm(ring, f)?;
        }
        Ok(())
    }
}

impl<R: RecvPath> Workload for StreamReceiver<R> {
    fn timers(&self) -> Timers {
        // The deadline matters only to policing, which ends with the window.
        Timers { deadline: self.policing }
    }

    fn start(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        if self.policing {
            self.police.start(ring)?;
        }
        self.path.note_chain(self.depth);
        for f in 0..self.armed.len() {
            self.arm(ring, f)?;
        }
        Ok(())
    }

    fn wait(&self) -> Wait {
        // A flow re-arms only once its whole chain is back; wait for the shortest chain
        // (bounded, so the guard or a stop still gets through).
        if self.depth > 1 {
            Wait::Chain(self.armed.iter().copied().min().unwrap_or(0))
        } else {
            Wait::Batch
        }
    }

    fn done(&self, _run: &Run) -> bool {
        self.open == 0
    }

    fn on_deadline(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        // What is still queued now is read at full speed.
        self.policing = false;
        for f in 0..self.armed.len() {
            if self.police.take_waiting(f) || self.held[f] {
                self.release(ring, f)?;
            }
        }
        Ok(())
    }

    fn on_pace(&mut self, ring: &mut Ring, _run: &mut Run) -> Result<()> {
        if self.policing {
            self.police.tick();
            for f in 0..self.armed.len() {
                if self.police.release(f) {
                    self.release(ring, f)?;
                }
            }
        }
        Ok(())
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion, run: &mut Run) -> Result<bool> {
        match c.op() {
            op::RECV => {}
            // A policing cancel that found the standing receive already ended (its own
            // success is skipped): nothing to do.
            op::CANCEL => return Ok(true),
            _ => return Ok(false),
        }
        let flow = c.flow();
        match self.path.complete(ring, c, &mut self.verify)? {
            RecvEvent::Data { flow, bytes } => {
                run.counters[flow].bytes_received += u64::from(bytes);
                // Over its budget, a flow is not re-armed until a tick refills it.
                let within = !self.policing || self.police.charge(flow, bytes);
                if !self.path.multishot() {
                    self.armed[flow] = self.armed[flow].saturating_sub(1);
                    if self.armed[flow] == 0 && within {
                        self.arm(ring, flow)?;
                    }
                } else if !within && !self.held[flow] {
                    self.held[flow] = true;
                    self.path.cancel_on(ring, flow)?;
                }
            }
            RecvEvent::Cancelled { flow } if self.held[flow] => self.armed[flow] = 0,
            RecvEvent::Cancelled { flow } => {
                // Linked behind a receive that came up short (the last bytes before EOF):
                // once the chain is back, a new one finds the EOF.
                self.armed[flow] = self.armed[flow].saturating_sub(1);
                if self.armed[flow] == 0 && !self.ended[flow] {
                    self.arm(ring, flow)?;
                }
            }
            RecvEvent::Eof { flow } => {
                if !self.counted {
                    check_not_early(run.deadline_ns)?;
                }
                self.armed[flow] = self.armed[flow].saturating_sub(1);
                self.ended[flow] = true;
                self.open -= 1;
            }
            RecvEvent::Nothing => {}
        }
        // A held standing receive may have ended with this completion.
        self.resume(ring, flow)?;
        Ok(true)
    }

    fn after_batch(&mut self) {
        self.path.after_batch();
    }

    fn report(&self) -> RoleReport {
        RoleReport { recv: Some(self.path.report()), verify: self.verify.report(), ..RoleReport::default() }
    }
}
