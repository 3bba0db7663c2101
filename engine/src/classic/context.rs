//! What a classic loop shares with its worker while it runs (the flows, flags, counters,
//! sampler and pacer), the patterned bytes it sends, and the loop trait itself.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{sys, watch};
use crate::verify::{fill_payload, phase, PERIOD};
use crate::workload::driver::RoleReport;
use crate::workload::pacer::Pacer;
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::intervals::{FlowCounters, IntervalSampler};
use ringperf_core::report::{Ending, SyscallCounters};

/// What a loop shares with its worker while it runs.
pub(crate) struct Ctx<'a> {
    pub fds: &'a [RawFd],
    pub flags: &'a AtomicU32,
    /// Readable when a flag was raised (epoll loops add it to their set).
    pub wake_fd: RawFd,
    pub counters: &'a mut [FlowCounters],
    pub sampler: &'a mut IntervalSampler,
    pub deadline_ns: u64,
    pub record_latency: bool,
    pub calls: SyscallCounters,
    /// Paces what this worker sends, all its flows together (see the module's comment).
    pub pacer: Pacer,
}

impl Ctx<'_> {
    /// The flags raised so far; an interval tick is sampled here and cleared. One relaxed
    /// load when nothing happened.
    #[inline]
    pub fn events(&mut self) -> u32 {
        let f = self.flags.load(Ordering::Relaxed);
        if f & watch::TICK != 0 {
            self.flags.fetch_and(!watch::TICK, Ordering::Relaxed);
            self.sampler.tick(self.counters);
        }
        f
    }

    /// A run that must end at once (a stop, or the guard with `on_guard`'s error); `None`
    /// if neither flag is up.
    pub fn stopped(&mut self, on_guard: fn() -> Error) -> Option<Result<Ending>> {
        let f = self.events();
        if f & watch::ABORT != 0 {
            Some(Ok(Ending::Aborted))
        } else if f & watch::GUARD != 0 {
            Some(Err(on_guard()))
        } else {
            None
        }
    }

    /// The round trip of a transaction started at `started`; returns the clock it read
    /// (0 when latency is not recorded, which saves the read).
    #[inline]
    pub fn record(&mut self, started: u64) -> u64 {
        if !self.record_latency {
            return 0;
        }
        let now = monotonic_ns();
        self.sampler.record(now.saturating_sub(started));
        now
    }

    /// Waits until the worker may send (its pacing bucket is out of debt); false if a
    /// flag of `stop` came up first. Unpaced it returns at once, reading no clock. What the
    /// send then carries is [`Ctx::charge`]d.
    #[inline]
    pub fn pace(&mut self, stop: u32) -> bool {
        while let Some(ns) = self.pacer.debt_ns(0) {
            if self.events() & stop != 0 {
                return false;
            }
            self.pause(ns);
        }
        true
    }

    /// Charges the worker's pacing bucket the `bytes` a send carried.
    #[inline]
    pub fn charge(&mut self, bytes: usize) {
        self.pacer.charge(0, u32::try_from(bytes).unwrap_or(u32::MAX));
    }

    /// Sleeps `ns`, or less if the watcher raises a flag meanwhile (its wake-up, drained
    /// here: the flags themselves say what happened).
    fn pause(&mut self, ns: u64) {
        let ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ };
        let mut p = libc::pollfd { fd: self.wake_fd, events: libc::POLLIN, revents: 0 };
        self.calls.other += 1;
        // SAFETY: one valid pollfd and a valid timespec for the call; no signal mask.
        let n = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
        if n > 0 && p.revents != 0 {
            sys::drain(self.wake_fd);
        }
    }

    /// The clock for a transaction's start (0 when latency is not recorded).
    #[inline]
    pub fn start_clock(&self) -> u64 {
        if self.record_latency {
            monotonic_ns()
        } else {
            0
        }
    }
}

/// The patterned bytes a loop sends: byte `o` of every flow's stream is the pattern's
/// byte `o`, so one buffer a period longer than the longest send serves every offset.
pub(crate) struct Pattern {
    bytes: Vec<u8>,
}

impl Pattern {
    pub fn new(max_len: usize) -> Pattern {
        let mut bytes = vec![0u8; max_len + PERIOD];
        fill_payload(&mut bytes);
        Pattern { bytes }
    }

    /// `len` bytes of the stream from `offset`.
    #[inline]
    pub fn at(&self, offset: u64, len: usize) -> &[u8] {
        let p = phase(offset);
        &self.bytes[p..p + len]
    }
}

/// One classic loop over a worker's flows.
pub(crate) trait Loop {
    fn run(&mut self, cx: &mut Ctx) -> Result<Ending>;
    fn report(&self) -> RoleReport;
}
