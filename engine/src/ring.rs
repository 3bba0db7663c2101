//! One io_uring per worker thread: setup flags, batched submission and reaping, counters,
//! and the user_data token encoding shared by every workload.
//!
//! io_uring_enter is issued here rather than through the crate's `Submitter`, because the
//! crate forgets a registered ring fd on every `submitter()` call; this is the one place
//! that knows the ring's index, its SQPOLL state and its min-wait batching.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use ringperf_core::error::{Error, Result};
use ringperf_core::report::{RingCounters, RingSetup};
use ringperf_core::setting::Setting;
use ringperf_core::spec::RingTuning;
pub use ringperf_core::spec::TaskRun;

/// Kernel uapi values the io-uring crate does not export (its `sys` module is private):
/// copied from linux/io_uring.h, as the crate's own `src/sys/sys_x86_64.rs` has them.
pub mod uapi {
    pub const IORING_ENTER_GETEVENTS: u32 = 1 << 0;
    pub const IORING_ENTER_SQ_WAKEUP: u32 = 1 << 1;
    pub const IORING_ENTER_EXT_ARG: u32 = 1 << 3;
    pub const IORING_ENTER_REGISTERED_RING: u32 = 1 << 4;
    pub const IORING_ENTER_NO_IOWAIT: u32 = 1 << 7;
    pub const IORING_REGISTER_RING_FDS: u32 = 20;
    pub const IORING_RECVSEND_POLL_FIRST: u16 = 1 << 0;
    pub const IORING_SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
    pub const IORING_NOTIF_USAGE_ZC_COPIED: u32 = 1 << 31;
}

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
        ((self.user_data >> 8) & 0xff_ffff) as usize
    }
    /// The slot (buffer or sub-operation) index the token carries.
    #[inline]
    pub fn slot(&self) -> usize {
        (self.user_data >> 32) as usize
    }
    /// True if more CQEs will follow for this SQE (multishot, zero-copy notifications).
    #[inline]
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }
    /// True for a zero-copy notification CQE.
    #[inline]
    pub fn notif(&self) -> bool {
        cqueue::notif(self.flags)
    }
}

/// user_data of an SQE: slot (32 bits) | flow (24 bits) | operation kind (8 bits).
#[inline]
pub fn token(op: u8, flow: usize) -> u64 {
    ((flow as u64 & 0xff_ffff) << 8) | u64::from(op)
}

/// [`token`] with a slot index in the upper half.
#[inline]
pub fn slot_token(op: u8, flow: usize, slot: usize) -> u64 {
    token(op, flow) | ((slot as u64) << 32)
}

/// A data socket as the ring names it: a plain descriptor or a fixed-file slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowFd {
    Raw(RawFd),
    Fixed(u32),
}

/// Builds an opcode with `$fd` turned into the crate's Fd or Fixed type:
/// `with_fd!(fd, |t| opcode::Send::new(t, ptr, len).build())`.
#[macro_export]
macro_rules! with_fd {
    ($fd:expr, |$t:ident| $body:expr) => {
        match $fd {
            $crate::ring::FlowFd::Raw(raw) => {
                let $t = io_uring::types::Fd(raw);
                $body
            }
            $crate::ring::FlowFd::Fixed(slot) => {
                let $t = io_uring::types::Fixed(slot);
                $body
            }
        }
    };
}

/// The argument of IORING_ENTER_EXT_ARG (struct io_uring_getevents_arg).
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// True if the entry links the next one (IOSQE_IO_LINK or IOSQE_IO_HARDLINK).
#[inline]
fn links_next(entry: &squeue::Entry) -> bool {
    const LINKS: u8 = (1 << 2) | (1 << 3);
    // SAFETY: Entry is repr(C) around struct io_uring_sqe, whose second byte is `flags`.
    let flags = unsafe { *(entry as *const squeue::Entry).cast::<u8>().add(1) };
    flags & LINKS != 0
}

/// A ring owned by the thread that created it: SINGLE_ISSUER, and DEFER_TASKRUN unless
/// SQPOLL is asked for (the kernel refuses the two together) or the owner's work runs on
/// io-wq ([`TaskRun::Cooperative`]).
pub struct Ring {
    ring: IoUring,
    counters: RingCounters,
    setup: RingSetup,
    /// What io_uring_enter is called with: the registered index or the raw fd.
    enter_fd: i32,
    enter_flags: u32,
    sq_batch: u32,
    queued: u32,
    /// Entries at the SQ's tail that belong to a linked chain whose last entry has not been
    /// pushed yet: an enter leaves them in the queue, so it never cuts the chain.
    open_chain: u32,
    cq_batch: u32,
    cq_wait_us: u32,
    /// The kernel has min-wait (IORING_FEAT_MIN_TIMEOUT).
    min_wait: bool,
    /// SQPOLL: the open chain's entries, not yet visible to the SQ thread.
    held: Vec<squeue::Entry>,
    /// Timespecs handed to Timeout SQEs; boxed so each address stays put when the Vec grows.
    #[allow(clippy::vec_box)]
    timeouts: Vec<Box<types::Timespec>>,
}

impl Ring {
    /// Builds the ring on the calling thread; `min_cq` is the most completions that can be
    /// outstanding at once, so the CQ cannot overflow.
    pub fn new(tuning: &RingTuning, min_cq: u32) -> Result<Ring> {
        Ring::with_task_run(tuning, min_cq, TaskRun::Deferred)
    }

    /// [`Ring::new`] with the task-work mode chosen by the caller (SQPOLL overrides it).
    pub fn with_task_run(tuning: &RingTuning, min_cq: u32, task_run: TaskRun) -> Result<Ring> {
        let entries = tuning.sq_entries;
        let cq = (entries * 2).max(min_cq.next_power_of_two()).min(1 << 20);
        let mut b = IoUring::builder();
        b.setup_single_issuer().setup_submit_all().setup_cqsize(cq);
        let sqpoll = tuning.sqpoll;
        match sqpoll {
            Some(p) => {
                b.setup_sqpoll(p.idle_ms);
                if let Some(cpu) = p.cpu {
                    b.setup_sqpoll_cpu(cpu);
                }
            }
            // The kernel refuses the task-run flags with SQPOLL: they are about IPIs, which
            // an SQ thread does not need.
            None => {
                b.setup_coop_taskrun();
                if task_run == TaskRun::Deferred {
                    b.setup_defer_taskrun();
                }
            }
        }
        let ring: IoUring = b.build(entries).map_err(|e| {
            Error::io(
                if sqpoll.is_some() {
                    "creating an io_uring with SQPOLL (a bad {sqpoll} CPU gives EINVAL)"
                } else {
                    "creating an io_uring with SINGLE_ISSUER and DEFER_TASKRUN (needs Linux 6.1 and io_uring enabled: check /proc/sys/kernel/io_uring_disabled)"
                },
                e,
            )
        })?;
        let mut setup = RingSetup {
            sq_entries: ring.params().sq_entries(),
            cq_entries: ring.params().cq_entries(),
            defer_taskrun: sqpoll.is_none() && task_run == TaskRun::Deferred,
            sqpoll: sqpoll.is_some(),
            sqpoll_cpu: sqpoll.and_then(|p| p.cpu),
            registered_ring_fd: false,
            fixed_files: false,
            napi_busy_poll_us: None,
            sq_batch: tuning.sq_batch,
            cq_batch: tuning.cq_batch,
            cq_wait_us: tuning.cq_wait_us,
            no_iowait: false,
        };
        let min_wait = ring.params().is_feature_min_timeout();
        let mut enter_fd = ring.as_raw_fd();
        let mut enter_flags = 0;
        if tuning.registered_ring_fd {
            if let Some(index) = register_ring_fd(ring.as_raw_fd()) {
                enter_fd = index as i32;
                enter_flags = uapi::IORING_ENTER_REGISTERED_RING;
                setup.registered_ring_fd = true;
            }
        }
        // A worker waiting for its peer is not waiting for storage: without this flag
        // every wait counts as iowait, which costs the scheduler an atomic update of the
        // run queue's iowait count at each sleep and wake-up and shows the idle CPU as
        // iowait in /proc/stat.
        if ring.params().is_feature_no_iowait() {
            enter_flags |= uapi::IORING_ENTER_NO_IOWAIT;
            setup.no_iowait = true;
        }
        if let Some(us) = tuning.napi_busy_poll_us {
            let mut napi = types::Napi::new().set_busy_poll_timeout(us).set_prefer_busy_poll(true);
            ring.submitter().register_napi(&mut napi).map_err(|e| {
                Error::io("registering NAPI busy polling ({napi-busy-poll} needs Linux 6.9)", e)
            })?;
            setup.napi_busy_poll_us = Some(us);
        }
        Ok(Ring {
            ring,
            counters: RingCounters::default(),
            setup,
            enter_fd,
            enter_flags,
            sq_batch: tuning.sq_batch,
            queued: 0,
            open_chain: 0,
            cq_batch: tuning.cq_batch,
            cq_wait_us: tuning.cq_wait_us,
            min_wait,
            held: Vec::with_capacity(entries as usize),
            timeouts: Vec::new(),
        })
    }

    /// Registers `fds` as fixed files 0..n; the caller then names them `FlowFd::Fixed(i)`.
    pub fn register_files(&mut self, fds: &[RawFd]) -> Result<()> {
        self.ring
            .submitter()
            .register_files(fds)
            .map_err(|e| Error::io("registering the data sockets as fixed files", e))?;
        self.setup.fixed_files = true;
        Ok(())
    }

    /// Registers one buffer as fixed buffer 0 (for zero-copy sends).
    ///
    /// # Safety
    /// The memory must stay valid and mapped until the ring is dropped.
    pub unsafe fn register_buffer(&mut self, base: *mut u8, len: usize) -> Result<()> {
        let iov = [libc::iovec { iov_base: base.cast(), iov_len: len }];
        // SAFETY: the caller guarantees the memory outlives the ring.
        unsafe { self.ring.submitter().register_buffers(&iov) }.map_err(|e| {
            Error::io(
                format!(
                    "registering a {} KiB payload arena (as non-root, RLIMIT_MEMLOCK caps it: raise `ulimit -l` or use smaller {} / fewer flows)",
                    len / 1024,
                    Setting::SendSize.token()
                ),
                e,
            )
        })
    }

    /// Registers a provided-buffer ring of `entries` at `addr` under group `bgid`.
    ///
    /// # Safety
    /// `addr` must be page-aligned, zeroed memory of `entries * 16` bytes that outlives the ring.
    pub unsafe fn register_buf_ring(&mut self, addr: u64, entries: u16, bgid: u16) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.ring.submitter().register_buf_ring_with_flags(addr, entries, bgid, 0) }
            .map_err(|e| Error::io("registering a provided-buffer ring (needs Linux 5.19)", e))
    }

    /// Queues one SQE, submitting first if the SQ is full or the submit batch is reached.
    ///
    /// # Safety
    /// Every buffer and file descriptor the entry points at must stay valid until its
    /// completion has been reaped.
    ///
    /// A linked chain reaches the kernel whole: the kernel cuts a chain at the end of what
    /// it was handed, and the two halves then run side by side (on one TCP socket that
    /// reorders the stream). So a submit batch never closes inside a chain, and under
    /// SQPOLL, whose thread reads the SQ tail whenever it likes, a chain's entries are
    /// held back and published together when its last entry arrives.
    #[inline]
    pub unsafe fn push(&mut self, entry: &squeue::Entry) -> Result<()> {
        let links = links_next(entry);
        if self.setup.sqpoll && (links || !self.held.is_empty()) {
            self.held.push(entry.clone());
            self.counters.sqes += 1;
            return if links { Ok(()) } else { self.publish_held() };
        }
        loop {
            // SAFETY: the caller guarantees the entry's buffers outlive its completion.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                self.counters.sqes += 1;
                self.queued += 1;
                self.open_chain = if links { self.open_chain + 1 } else { 0 };
                if self.queued >= self.sq_batch && !links {
                    self.enter(0)?;
                }
                return Ok(());
            }
            // The queue is full: submit what comes before the open chain, if anything does.
            if self.ring.submission().len() as u32 <= self.open_chain {
                return Err(Error::Usage(format!(
                    "a linked chain of more than {} entries does not fit the submission queue: raise {}",
                    self.open_chain,
                    Setting::SqEntries.token()
                )));
            }
            self.enter(0)?;
        }
    }

    /// Publishes a held chain with one tail update.
    fn publish_held(&mut self) -> Result<()> {
        loop {
            // SAFETY: the held entries came through `push`, whose caller vouched for them.
            if unsafe { self.ring.submission().push_multiple(&self.held) }.is_ok() {
                self.queued += self.held.len() as u32;
                self.held.clear();
                if self.queued >= self.sq_batch {
                    self.enter(0)?;
                }
                return Ok(());
            }
            self.enter(0)?;
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

    /// Queues a multishot relative timeout: one -ETIME completion (with F_MORE) every
    /// `interval_ns` until the ring is dropped (Linux 6.4). The pacing clock and the interval tick.
    pub fn push_ticks(&mut self, interval_ns: u64, user_data: u64) -> Result<()> {
        let ts = Box::new(
            types::Timespec::new()
                .sec(interval_ns / 1_000_000_000)
                .nsec((interval_ns % 1_000_000_000) as u32),
        );
        let entry = opcode::Timeout::new(&*ts)
            .count(0)
            .flags(types::TimeoutFlags::MULTISHOT)
            .build()
            .user_data(user_data);
        self.timeouts.push(ts);
        // SAFETY: the timespec is boxed in `self.timeouts` and lives as long as the ring.
        unsafe { self.push(&entry) }
    }

    /// Queues a one-shot poll for `fd` becoming readable (data, EOF or an error): how a
    /// worker learns that its control connection or the user wants the test stopped.
    pub fn push_watch(&mut self, fd: RawFd, user_data: u64) -> Result<()> {
        let entry = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32).build().user_data(user_data);
        // SAFETY: a poll SQE points at no memory; the caller keeps `fd` open while the ring lives.
        unsafe { self.push(&entry) }
    }

    /// Submits what is queued and waits for completions: `cq_batch` of them, or after
    /// `cq_wait_us` at least one (the kernel's min-wait). One syscall.
    #[inline]
    pub fn submit_and_wait(&mut self) -> Result<()> {
        self.enter(self.cq_batch)
    }

    /// Submits and waits for `want` completions (at least one): for a caller that knows
    /// how many of its operations will complete without outside help, such as a chain of
    /// linked UDP sends, whose links the kernel then runs within this one call.
    #[inline]
    pub fn submit_and_wait_for(&mut self, want: usize) -> Result<()> {
        self.enter(want.clamp(1, u32::MAX as usize) as u32)
    }

    /// [`Ring::submit_and_wait_for`], but after `bound_us` (counted from the start of the
    /// wait) it returns with whatever has come, at least one (the kernel's min-wait, Linux
    /// 6.12): for a wait whose
    /// completions may not all come (a send stuck behind a peer that stopped reading), so
    /// a guard or a stop still gets through. Without min-wait it waits for one.
    #[inline]
    pub fn submit_and_wait_bounded(&mut self, want: usize, bound_us: u32) -> Result<()> {
        if !self.min_wait {
            return self.enter(1);
        }
        self.enter_with(want.clamp(1, u32::MAX as usize) as u32, bound_us.max(1))
    }

    fn enter(&mut self, want: u32) -> Result<()> {
        self.enter_with(want, self.cq_wait_us)
    }

    fn enter_with(&mut self, want: u32, min_wait_us: u32) -> Result<()> {
        // An open chain stays queued until its last entry is pushed (see `push`).
        let to_submit = (self.ring.submission().len() as u32).saturating_sub(self.open_chain);
        self.queued = self.open_chain;
        let mut flags = self.enter_flags;
        if self.setup.sqpoll {
            if self.ring.submission().need_wakeup() {
                flags |= uapi::IORING_ENTER_SQ_WAKEUP;
            }
            if want == 0 && flags & uapi::IORING_ENTER_SQ_WAKEUP == 0 {
                return Ok(()); // the SQ thread picks the entries up by itself
            }
        }
        // Deferred task work only runs inside an enter with GETEVENTS, so always ask.
        if want > 0 || self.setup.defer_taskrun {
            flags |= uapi::IORING_ENTER_GETEVENTS;
        }
        let arg = GeteventsArg { sigmask: 0, sigmask_sz: 0, min_wait_usec: min_wait_us, ts: 0 };
        let (argp, argsz) = if want > 1 && min_wait_us > 0 {
            flags |= uapi::IORING_ENTER_EXT_ARG;
            (&arg as *const GeteventsArg as usize, std::mem::size_of::<GeteventsArg>())
        } else {
            (0, 0)
        };
        self.counters.enters += 1;
        // SAFETY: io_uring_enter on our own ring; `arg` lives across the call.
        let r = unsafe {
            libc::syscall(libc::SYS_io_uring_enter, self.enter_fd, to_submit, want, flags, argp, argsz)
        };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // Interrupted or timed out: the caller reaps what is there and calls again.
            Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN) | Some(libc::ETIME) => Ok(()),
            _ => Err(Error::io("io_uring_enter", e)),
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

    /// Takes back everything in flight once a run is over: submits what is still queued,
    /// cancels every operation (IORING_REGISTER_SYNC_CANCEL, which returns once each has
    /// completed, or after `bound`), runs their task work and reaps every completion into
    /// `out`. Afterwards no operation the ring was given runs any more, so the caller knows
    /// for each of its descriptors whether a Close ran. `false` if some operation ignored
    /// the cancel for `bound` (Linux 6.0: before it, also `false`).
    pub fn cancel_everything(&mut self, bound: std::time::Duration, out: &mut Vec<Completion>) -> bool {
        // An unfinished chain goes in as it is: the kernel ends a chain at the batch's end.
        self.open_chain = 0;
        if !self.held.is_empty() && self.publish_held().is_err() {
            self.held.clear();
        }
        let _ = self.enter_with(0, 0);
        let cancelled =
            self.ring.submitter().register_sync_cancel(Some(bound.into()), types::CancelBuilder::any());
        let all = match cancelled {
            Ok(()) => true,
            // Nothing was in flight.
            Err(e) => e.raw_os_error() == Some(libc::ENOENT),
        };
        // Deferred task work (the completions' own) runs only inside an enter.
        let _ = self.enter_with(0, 0);
        self.reap(out);
        all
    }

    /// CQ capacity: the right capacity for the `out` vector of [`Ring::reap`].
    pub fn cq_entries(&self) -> usize {
        self.ring.params().cq_entries() as usize
    }

    pub fn counters(&self) -> RingCounters {
        self.counters
    }

    pub fn setup(&self) -> RingSetup {
        self.setup
    }

    /// The ring's own descriptor (for mmap of kernel-allocated buffer rings).
    pub fn raw_fd(&self) -> RawFd {
        self.ring.as_raw_fd()
    }
}

/// IORING_REGISTER_RING_FDS for one ring; `None` if the kernel lacks it (before 5.18).
fn register_ring_fd(ring_fd: RawFd) -> Option<u32> {
    #[repr(C)]
    struct RsrcUpdate {
        offset: u32,
        resv: u32,
        data: u64,
    }
    let mut up = RsrcUpdate { offset: u32::MAX, resv: 0, data: ring_fd as u64 };
    // SAFETY: one valid io_uring_rsrc_update for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring_fd,
            uapi::IORING_REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1,
        )
    };
    (r == 1).then_some(up.offset)
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
    use ringperf_core::measure::clock::monotonic_ns;
    use ringperf_core::spec::SqPoll;

    #[test]
    fn link_flags_are_read_from_the_entry() {
        let nop = opcode::Nop::new().build();
        assert!(!links_next(&nop));
        assert!(links_next(&nop.clone().flags(squeue::Flags::IO_LINK)));
        assert!(links_next(&nop.clone().flags(squeue::Flags::IO_HARDLINK)));
        assert!(!links_next(&nop.flags(squeue::Flags::SKIP_SUCCESS | squeue::Flags::ASYNC)));
    }

    #[test]
    fn tokens_roundtrip() {
        let c = Completion { user_data: slot_token(7, 123_456, 99), result: 0, flags: 0 };
        assert_eq!(c.op(), 7);
        assert_eq!(c.flow(), 123_456);
        assert_eq!(c.slot(), 99);
    }

    /// A chain pushed into an almost full queue is submitted whole: a failing first step
    /// still cancels every later one. Cut in two, the second half would run on its own
    /// (on a TCP socket, reordering the stream).
    #[test]
    fn a_chain_that_meets_a_full_queue_is_not_cut() {
        let tuning = RingTuning { sq_entries: 8, sq_batch: 8, ..RingTuning::default() };
        let mut ring = Ring::new(&tuning, 16).unwrap();
        let nop = |k: u64| opcode::Nop::new().build().user_data(token(3, k as usize));
        for k in 0..6 {
            // SAFETY: a NOP points at no memory.
            unsafe { ring.push(&nop(k)) }.unwrap();
        }
        // A read of a descriptor that is not open fails, and cancels what is linked to it.
        let failing =
            opcode::Read::new(types::Fd(-1), std::ptr::null_mut(), 0).build().user_data(token(4, 0));
        // SAFETY: the read names no buffer (length 0) and fails before it looks at one.
        unsafe { ring.push(&failing.flags(squeue::Flags::IO_LINK)) }.unwrap();
        for k in 0..3 {
            let e = nop(100 + k);
            let e = if k < 2 { e.flags(squeue::Flags::IO_LINK) } else { e };
            // SAFETY: as above.
            unsafe { ring.push(&e) }.unwrap();
        }
        let mut all = Vec::new();
        let mut out = Vec::with_capacity(ring.cq_entries());
        while all.len() < 10 {
            ring.submit_and_wait().unwrap();
            ring.reap(&mut out);
            all.extend(out.iter().copied());
        }
        let chained: Vec<i32> =
            all.iter().filter(|c| c.op() == 3 && c.flow() >= 100).map(|c| c.result).collect();
        assert_eq!(chained, vec![-libc::ECANCELED; 3], "the chain's later steps ran on their own: {all:?}");
        assert_eq!(all.iter().filter(|c| c.op() == 3 && c.flow() < 100 && c.result == 0).count(), 6);
    }

    #[test]
    fn a_chain_longer_than_the_queue_is_refused_not_cut() {
        let tuning = RingTuning { sq_entries: 8, sq_batch: 8, ..RingTuning::default() };
        let mut ring = Ring::new(&tuning, 16).unwrap();
        let link = opcode::Nop::new().build().flags(squeue::Flags::IO_LINK);
        let mut refused = None;
        for _ in 0..9 {
            // SAFETY: a NOP points at no memory.
            if let Err(e) = unsafe { ring.push(&link) } {
                refused = Some(e.to_string());
                break;
            }
        }
        let msg = refused.expect("a ninth linked entry cannot fit an 8-entry queue");
        assert!(msg.contains("raise {sq-entries}"), "{msg}");
    }

    /// What is in flight at a run's end comes back, queued or submitted, and nothing runs
    /// afterwards: a Close queued but never submitted runs, and a wait that would last a
    /// minute is cancelled.
    #[test]
    fn cancel_everything_takes_back_what_was_submitted_and_what_was_queued() {
        let mut ring = Ring::new(&RingTuning::default(), 16).unwrap();
        let mut fds = [0; 2];
        // Non-blocking, so that the read below fails rather than hangs if the Close did not run.
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) }, 0);
        ring.push_deadline(monotonic_ns() + 60_000_000_000, token(1, 0)).unwrap();
        ring.push_watch(fds[0], token(2, 0)).unwrap();
        ring.enter_with(0, 0).unwrap();
        let close = opcode::Close::new(types::Fd(fds[1])).build().user_data(token(5, 0));
        // SAFETY: Close points at no memory.
        unsafe { ring.push(&close) }.unwrap();
        let mut out = Vec::new();
        assert!(ring.cancel_everything(std::time::Duration::from_secs(1), &mut out));
        let result = |op: u8| out.iter().find(|c| c.op() == op).map(|c| c.result);
        assert_eq!(result(1), Some(-libc::ECANCELED), "{out:?}");
        assert_eq!(result(2), Some(-libc::ECANCELED), "{out:?}");
        assert_eq!(result(5), Some(0), "the queued Close did not run: {out:?}");
        // The pipe's only write end is closed, so its read end sees EOF at once. (Asking
        // the number with fcntl raced: another test's thread may get the number next.)
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into `byte`, from the read end this test made.
        let n = unsafe { libc::read(fds[0], (&raw mut byte).cast(), 1) };
        assert_eq!(n, 0, "the write end is still open: the queued Close did not run");
        // SAFETY: closes the pipe's read end, which this test made.
        unsafe { libc::close(fds[0]) };
        assert!(ring.cancel_everything(std::time::Duration::from_secs(1), &mut out));
        assert!(out.is_empty(), "{out:?}");
    }

    fn deadline_fires(tuning: RingTuning) {
        let mut ring = Ring::new(&tuning, 8).unwrap();
        ring.push_deadline(monotonic_ns() + 2_000_000, token(1, 0)).unwrap();
        let mut out = Vec::with_capacity(ring.cq_entries());
        while out.is_empty() {
            ring.submit_and_wait().unwrap();
            ring.reap(&mut out);
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].result, -libc::ETIME);
        let c = ring.counters();
        assert_eq!((c.sqes, c.cqes), (1, 1));
        assert!(c.enters >= 1);
    }

    #[test]
    fn deadline_fires_with_defaults_and_registered_fd() {
        let t = RingTuning::default();
        deadline_fires(t);
        assert!(Ring::new(&t, 8).unwrap().setup().registered_ring_fd);
    }

    #[test]
    fn deadline_fires_with_sqpoll_and_min_wait_batching() {
        deadline_fires(RingTuning {
            sqpoll: Some(SqPoll { cpu: None, idle_ms: 10 }),
            ..RingTuning::default()
        });
        deadline_fires(RingTuning { cq_batch: 8, cq_wait_us: 100, ..RingTuning::default() });
    }
}
