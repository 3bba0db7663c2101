//! What a classic loop shares with its worker while it runs (the flows, flags, counters,
//! sampler and pacer, its epoll set and wait), the patterned bytes it sends, and the loop
//! traits themselves.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use super::sys::{self, Epoll};
use super::watch;
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

/// The epoll token of the watcher's wake-up eventfd (flows use their index).
pub(crate) const WAKE: u64 = u64::MAX;

impl Ctx<'_> {
    /// An epoll set holding the wake-up eventfd (token [`WAKE`]), whose loop adds its own
    /// descriptors; `capacity`: events one wait may return.
    pub fn epoll(&self, capacity: usize) -> Result<Epoll> {
        let ep = Epoll::new(capacity)?;
        ep.add(self.wake_fd, WAKE, libc::EPOLLIN as u32)?;
        Ok(ep)
    }

    /// [`Ctx::epoll`] with every flow's socket in it too, watched for `events` (token: the
    /// flow's index).
    pub fn flows_epoll(&self, events: i32) -> Result<Epoll> {
        let ep = self.epoll(self.fds.len() + 1)?;
        for (f, &fd) in self.fds.iter().enumerate() {
            ep.add(fd, f as u64, events as u32)?;
        }
        Ok(ep)
    }

    /// Waits on `ep` for at most `timeout_ms` (-1: no limit), counting the call; returns
    /// how many events it holds.
    pub fn wait(&mut self, ep: &mut Epoll, timeout_ms: i32) -> Result<usize> {
        let n = ep.wait_ms(timeout_ms)?;
        self.calls.epoll_waits += 1;
        Ok(n)
    }

    /// Event `i` of `ep`'s last wait: its token (a flow's index, or one of the loop's own)
    /// and what is ready; `None` for the wake-up eventfd, drained here (the flag that rang
    /// it is read through [`Ctx::events`]).
    #[inline]
    pub fn event(&self, ep: &Epoll, i: usize) -> Option<(usize, u32)> {
        let (token, ready) = ep.event(i);
        if token == WAKE {
            sys::drain(self.wake_fd);
            return None;
        }
        Some((token as usize, ready))
    }

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

/// A loop that runs until its flows are done, in two shapes: one flow through blocking
/// calls, or several through epoll.
pub(crate) trait FlowLoop {
    fn run_blocking(&mut self, cx: &mut Ctx) -> Result<()>;
    fn run_epoll(&mut self, cx: &mut Ctx) -> Result<()>;

    /// Runs the shape the flow count asks for. A stop or the guard (with `on_guard`'s
    /// error) shut the sockets down, so it is the news rather than the loop's own error;
    /// `None`: the loop ran to its end.
    fn run_flows(&mut self, cx: &mut Ctx, on_guard: fn() -> Error) -> Result<Option<Ending>> {
        let r = if cx.fds.len() > 1 { self.run_epoll(cx) } else { self.run_blocking(cx) };
        if let Some(end) = cx.stopped(on_guard) {
            return end.map(Some);
        }
        r.map(|()| None)
    }
}
