//! Open loop (`--rate`): when each flow's requests come due, shared by rr and udp-rr.
//!
//! One absolute timeout on the ring is armed at a time, for the earliest next request;
//! when it fires, the workload takes every request of each flow whose time has come, as
//! many as the flow's backlog has room for, and the rest are dropped and counted. The
//! clock is read once per wakeup; requests carry their intended time, so a round trip
//! counts from when its request was due and a stall shows in every request it delayed.

use io_uring::{opcode, types};

use crate::io::op;
use crate::ring::{token, Ring};
use ringperf_core::error::Result;
use ringperf_core::report::OpenLoopReport;

/// The least and most a request may leave after its intended time before it counts as
/// slipped: one request interval, but never under a timer wakeup's usual lateness on a
/// busy VM, nor so long that a slow schedule hides a late request.
const SLIP_ALLOWANCE_NS: (u64, u64) = (100_000, 10_000_000);

/// The requests of one flow that came due at a wakeup: `count` of them, the first intended
/// at `first`, each next one a schedule interval later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    pub first: u64,
    pub count: u32,
}

pub struct Schedule {
    interval_ns: u64,
    /// The window's length: the schedule starts when the window opens.
    pub(crate) window_ns: u64,
    allowance_ns: u64,
    /// Per flow: the intended send time of its next request.
    next: Vec<u64>,
    /// Per flow: the intended time of the newest request counted as slipped; requests due
    /// up to it are not counted again.
    late_upto: Vec<u64>,
    /// The pending wakeup's time (boxed: the kernel reads it when the timeout is submitted,
    /// and only one is pending at a time, so rewriting it for the next is safe).
    ts: Box<types::Timespec>,
    pub(crate) report: OpenLoopReport,
}

impl Schedule {
    /// `interval_ns` between two requests of a flow, for `flows` flows, over a window of
    /// `window_ns`.
    pub fn new(interval_ns: u64, flows: usize, window_ns: u64) -> Schedule {
        let interval_ns = interval_ns.max(1);
        let allowance_ns = interval_ns.clamp(SLIP_ALLOWANCE_NS.0, SLIP_ALLOWANCE_NS.1);
        Schedule {
            interval_ns,
            window_ns,
            allowance_ns,
            next: vec![0; flows],
            late_upto: vec![0; flows],
            ts: Box::new(types::Timespec::new()),
            report: OpenLoopReport {
                target_rate: flows as f64 * 1e9 / interval_ns as f64,
                slip_allowance_ns: allowance_ns,
                ..OpenLoopReport::default()
            },
        }
    }

    /// The time between two requests of one flow.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// Starts the schedule at `t0` (the window's opening, which may be a little ahead of or
    /// behind the worker's start), the flows spread evenly over the first interval so that
    /// they do not all send at once.
    pub(crate) fn start(&mut self, t0: u64) {
        let flows = self.next.len() as u64;
        for (f, next) in self.next.iter_mut().enumerate() {
            *next = t0 + self.interval_ns * f as u64 / flows.max(1);
        }
    }

    /// Every request of flow `f` due by `until`: the first `room` are taken (returned), the
    /// rest dropped from the schedule and counted, without a loop (a long stall at a high
    /// rate would make that loop long).
    pub(crate) fn take_due(&mut self, f: usize, until: u64, room: u32) -> Due {
        let first = self.next[f];
        if first > until {
            return Due { first, count: 0 };
        }
        let due = (until - first) / self.interval_ns + 1;
        let count = due.min(u64::from(room));
        let dropped = due - count;
        self.report.scheduled += due;
        self.report.dropped += dropped;
        self.next[f] += due * self.interval_ns;
        Due { first, count: count as u32 }
    }

    /// Counts a request of flow `f` intended at `due` that is still unsent at `now` as
    /// slipped if it is later than the allowance (each request once). False when it is not
    /// late: then neither is any later request of the flow.
    pub(crate) fn note_slip(&mut self, f: usize, due: u64, now: u64) -> bool {
        if due <= self.late_upto[f] {
            return true;
        }
        if due.saturating_add(self.allowance_ns) >= now {
            return false;
        }
        self.report.slipped += 1;
        self.late_upto[f] = due;
        true
    }

    /// Arms the wakeup for the earliest next request, if it falls inside the window that
    /// ends at `deadline_ns`.
    pub(crate) fn arm(&mut self, ring: &mut Ring, deadline_ns: u64) -> Result<()> {
        let Some(&at) = self.next.iter().min().filter(|&&at| at < deadline_ns) else { return Ok(()) };
        *self.ts = types::Timespec::new().sec(at / 1_000_000_000).nsec((at % 1_000_000_000) as u32);
        let e = opcode::Timeout::new(&*self.ts)
            .flags(types::TimeoutFlags::ABS)
            .build()
            .user_data(token(op::DUE, 0));
        // SAFETY: the timespec is boxed in self, which outlives the submission that reads it,
        // and it is rewritten only after this timeout has completed.
        unsafe { ring.push(&e) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_spreads_its_flows_and_bounds_its_slip_allowance() {
        let mut s = Schedule::new(1_000_000, 4, 3_000_000_000);
        s.start(10_000);
        assert_eq!(s.next, [10_000, 260_000, 510_000, 760_000]);
        assert_eq!((s.allowance_ns, s.report.target_rate), (1_000_000, 4000.0));
        // One interval, but not below a timer's wakeup lateness nor above 10 ms.
        assert_eq!(Schedule::new(10_000, 1, 1).allowance_ns, 100_000);
        assert_eq!(Schedule::new(1_000_000_000, 1, 1).allowance_ns, 10_000_000);
        assert_eq!(Schedule::new(0, 1, 1).interval_ns, 1, "never a zero interval");
    }

    #[test]
    fn requests_beyond_the_room_are_dropped_and_every_one_is_scheduled_once() {
        let mut s = Schedule::new(1000, 1, 1_000_000);
        s.start(0);
        assert_eq!(s.take_due(0, 0, 4), Due { first: 0, count: 1 });
        // Not yet due: nothing taken, nothing counted.
        assert_eq!(s.take_due(0, 999, 4), Due { first: 1000, count: 0 });
        // Ten due, room for three: seven dropped, and the next one is the eleventh.
        assert_eq!(s.take_due(0, 10_500, 3), Due { first: 1000, count: 3 });
        assert_eq!((s.report.scheduled, s.report.dropped), (11, 7));
        assert_eq!(s.take_due(0, 11_000, 0), Due { first: 11_000, count: 0 });
        assert_eq!((s.report.scheduled, s.report.dropped), (12, 8));
    }

    #[test]
    fn a_late_request_slips_once_and_an_early_one_stops_the_count() {
        let mut s = Schedule::new(1_000_000, 1, 1);
        assert!(!s.note_slip(0, 5_000_000, 5_500_000), "within the allowance");
        assert!(s.note_slip(0, 5_000_000, 7_000_000));
        assert!(s.note_slip(0, 5_000_000, 9_000_000), "counted already, the count goes on");
        assert_eq!(s.report.slipped, 1);
    }
}
