//! One io_uring per worker thread: setup flags, batched submission and reaping, counters,
//! and the user_data token encoding shared by every workload.

use std::io;

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::error::{Error, Result};
use crate::report::RingCounters;
use crate::spec::RingTuning;

/// A completion copied out of the CQ, so handlers can queue new work while processing it.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub user_data: u64,
    pub result: i32,
    pub flags: u32,
}

impl Completion {
    /// The operation kind the token carries.
    #[inline]
    pub fn op(&self) -> u8 {
        (self.user_data & 0xff) as u8
    }
    /// The flow index the token carries.
    #[inline]
    pub fn flow(&self) -> usize {
        (self.user_data >> 8) as usize
    }
    /// True if more CQEs will follow for this SQE (multishot, zero-copy notifications).
    #[inline]
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }
}

/// user_data of an SQE: the flow index above an 8-bit operation kind.
#[inline]
pub fn token(op: u8, flow: usize) -> u64 {
    ((flow as u64) << 8) | u64::from(op)
}

/// A SINGLE_ISSUER + DEFER_TASKRUN ring owned by the thread that created it.
pub struct Ring {
    ring: IoUring,
    counters: RingCounters,
    /// Timespecs handed to Timeout SQEs; boxed so each address stays put when the Vec grows.
    #[allow(clippy::vec_box)]
    timeouts: Vec<Box<types::Timespec>>,
}

impl Ring {
    /// Builds the ring on the calling thread; `min_cq` is the most completions that can be
    /// outstanding at once, so the CQ cannot overflow.
    pub fn new(tuning: &RingTuning, min_cq: u32) -> Result<Ring> {
        let entries = tuning.sq_entries;
        let cq = (entries * 2).max(min_cq.next_power_of_two());
        let ring: IoUring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .setup_submit_all()
            .setup_cqsize(cq)
            .build(entries)
            .map_err(|e| {
                Error::io(
                    "creating an io_uring with SINGLE_ISSUER and DEFER_TASKRUN (needs Linux 6.1 and io_uring enabled: check /proc/sys/kernel/io_uring_disabled)",
                    e,
                )
            })?;
        Ok(Ring { ring, counters: RingCounters::default(), timeouts: Vec::new() })
    }

    /// Queues one SQE, submitting first if the SQ is full.
    ///
    /// # Safety
    /// Every buffer and file descriptor the entry points at must stay valid until its
    /// completion has been reaped.
    #[inline]
    pub unsafe fn push(&mut self, entry: &squeue::Entry) -> Result<()> {
        loop {
            // SAFETY: the caller guarantees the entry's buffers outlive its completion.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                self.counters.sqes += 1;
                return Ok(());
            }
            self.submit_and_wait(0)?;
        }
    }

    /// Queues an absolute CLOCK_MONOTONIC timeout that completes with -ETIME at `at_ns`.
    pub fn push_deadline(&mut self, at_ns: u64, user_data: u64) -> Result<()> {
        let ts =
            Box::new(types::Timespec::new().sec(at_ns / 1_000_000_000).nsec((at_ns % 1_000_000_000) as u32));
        let entry = opcode::Timeout::new(&*ts).flags(types::TimeoutFlags::ABS).build().user_data(user_data);
        self.timeouts.push(ts);
        // SAFETY: the timespec is boxed in `self.timeouts` and lives as long as the ring.
        unsafe { self.push(&entry) }
    }

    /// Submits what is queued and waits for at least `want` completions, in one syscall.
    pub fn submit_and_wait(&mut self, want: usize) -> Result<()> {
        loop {
            self.counters.enters += 1;
            match self.ring.submit_and_wait(want) {
                Ok(_) => return Ok(()),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EBUSY)) => continue,
                Err(e) => return Err(Error::io("io_uring_enter", e)),
            }
        }
    }

    /// Moves every ready completion into `out` (cleared first) and publishes the CQ head
    /// once. `out` is sized by the caller, so this does not allocate on the hot path.
    #[inline]
    pub fn reap(&mut self, out: &mut Vec<Completion>) {
        out.clear();
        for cqe in self.ring.completion() {
            out.push(Completion { user_data: cqe.user_data(), result: cqe.result(), flags: cqe.flags() });
        }
        self.counters.cqes += out.len() as u64;
    }

    /// CQ capacity: the right capacity for the `out` vector of [`Ring::reap`].
    pub fn cq_entries(&self) -> usize {
        self.ring.params().cq_entries() as usize
    }

    pub fn counters(&self) -> RingCounters {
        self.counters
    }
}

/// Turns a negative CQE result into an error naming the operation; peer resets and broken
/// pipes become peer errors so the CLI exits 3 with a useful message.
pub fn cqe_error(what: &str, res: i32) -> Error {
    let errno = -res;
    match errno {
        libc::ECONNRESET | libc::EPIPE | libc::ENOTCONN => Error::Peer(format!(
            "the peer closed the data connection during the test ({what}: {})",
            io::Error::from_raw_os_error(errno)
        )),
        _ => Error::io(what.to_string(), io::Error::from_raw_os_error(errno)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::clock::monotonic_ns;

    #[test]
    fn tokens_roundtrip() {
        let c = Completion { user_data: token(7, 123_456), result: 0, flags: 0 };
        assert_eq!(c.op(), 7);
        assert_eq!(c.flow(), 123_456);
    }

    #[test]
    fn deadline_fires_and_counters_move() {
        let mut ring = Ring::new(&RingTuning::default(), 8).unwrap();
        ring.push_deadline(monotonic_ns() + 2_000_000, token(1, 0)).unwrap();
        let mut out = Vec::with_capacity(ring.cq_entries());
        ring.submit_and_wait(1).unwrap();
        ring.reap(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].result, -libc::ETIME);
        let c = ring.counters();
        assert_eq!((c.sqes, c.cqes), (1, 1));
        assert!(c.enters >= 1);
    }
}
