//! The standing receives of a UDP side that waits for its peer (the UDP stream receiver,
//! the UDP rr server): one multishot receive per flow, armed at the start and again
//! whenever the kernel ends one, until the drain after the deadline (or the client's
//! "done") cancels them all. The side's run is over when every one has ended; its window
//! ends where the drain says.

use std::os::fd::RawFd;

use io_uring::squeue::Flags;

use crate::io::RecvPath;
use crate::ring::{Completion, Ring};
use crate::workload::drain::Drain;
use crate::workload::ending::watch_flows_done;
use ringperf_core::error::Result;

pub struct StandingReceives {
    drain: Drain,
    flows: usize,
    /// Receives still standing.
    armed: usize,
    /// A counted test: the eventfd the session writes when the client is done, which
    /// starts the drain then instead of at the deadline.
    flows_done: Option<RawFd>,
}

impl StandingReceives {
    /// `flows_done`: the eventfd the session writes when the client is done (`None`: the
    /// deadline ends the run).
    pub fn new(drain: Drain, flows: usize, flows_done: Option<RawFd>) -> StandingReceives {
        StandingReceives { drain, flows, armed: 0, flows_done }
    }

    /// Whether the driver watches the control connection for a stop: a counted test's
    /// session reads it itself (for the client's "done", or a stop) and says so through
    /// `flows_done`.
    pub fn driver_watches(&self) -> bool {
        self.flows_done.is_none()
    }

    /// Arms a receive on every flow (and the watch on the client's "done").
    pub fn start(&mut self, ring: &mut Ring, path: &mut impl RecvPath) -> Result<()> {
        if let Some(fd) = self.flows_done {
            watch_flows_done(ring, fd)?;
        }
        for f in 0..self.flows {
            arm(ring, path, f)?;
        }
        self.armed = self.flows;
        Ok(())
    }

    /// The deadline came: drain what still arrives, then cancel.
    pub fn on_deadline(&mut self, ring: &mut Ring, deadline_ns: u64) -> Result<()> {
        self.drain.start(ring, deadline_ns)
    }

    /// Handles the completions that end the run (the client's "done", the drain's ticks,
    /// the cancels); false for any other.
    pub fn complete(&mut self, ring: &mut Ring, kind: u8) -> Result<bool> {
        self.drain.complete(ring, kind, self.flows)
    }

    /// A datagram arrived: the drain goes on while they do.
    #[inline]
    pub fn saw_data(&mut self) {
        self.drain.saw_data();
    }

    /// A receive the drain cancelled has ended.
    pub fn cancelled(&mut self) {
        self.armed -= 1;
    }

    /// After a receive completion of flow `f`: a multishot receive the kernel ended (no
    /// F_MORE; ENOBUFS, and at times otherwise) is armed again unless the drain
    /// cancelled the receives.
    pub fn after_receive(&mut self, ring: &mut Ring, path: &mut impl RecvPath, c: &Completion) -> Result<()> {
        if c.more() {
            Ok(())
        } else if self.drain.cancelled() {
            self.armed -= 1;
            Ok(())
        } else {
            arm(ring, path, c.flow())
        }
    }

    /// Every receive has ended.
    pub fn all_ended(&self) -> bool {
        self.armed == 0
    }

    /// Where the side's window ends: the last drain tick that still saw datagrams.
    pub fn end_ns(&self) -> Option<u64> {
        self.drain.end_ns()
    }
}

fn arm(ring: &mut Ring, path: &mut impl RecvPath, f: usize) -> Result<()> {
    path.arm(ring, f, 0, false, Flags::empty())
}
