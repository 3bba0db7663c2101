//! `msg-zerocopy`: the classic zero-copy send. SO_ZEROCOPY on each socket, every send
//! flagged MSG_ZEROCOPY, and the kernel's completions read from the socket's error queue
//! (recvmsg MSG_ERRQUEUE): each one covers a range of sends and says with
//! SO_EE_CODE_ZEROCOPY_COPIED whether the kernel copied them after all (loopback and veth
//! always do). The sends come from the constant pattern buffer, which nothing rewrites, so
//! a send in flight needs no buffer of its own; what bounds them is the socket's option
//! memory (optmem_max), which a send that would overrun refuses with ENOBUFS.

use std::io;
use std::os::fd::RawFd;

use crate::classic::context::Ctx;
use crate::classic::{ABORT, GUARD};
use ringperf_core::error::{Error, Result};
use ringperf_core::report::ZeroCopyReport;

/// SO_ZEROCOPY (asm-generic/socket.h).
const SO_ZEROCOPY: i32 = 60;
/// The error-queue origin of a zero-copy completion (linux/errqueue.h).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// The completion's sends were copied after all.
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;
/// Sends a flow remembers the length of until their completion; a flow with this many
/// outstanding waits for completions before it sends again.
const TRACKED: usize = 4096;
/// Outstanding sends at which a flow reads its completions between sends.
const READ_AT: u32 = 256;
/// How long one wait for completions lasts before it looks at the run's flags.
const WAIT_MS: i32 = 100;

/// Zero-copy accounting of one worker's flows.
pub struct MsgZeroCopy {
    /// Per flow: the id the kernel gives the next zero-copy send, and the first id whose
    /// completion has not come.
    next: Vec<u32>,
    done: Vec<u32>,
    /// Per flow, TRACKED slots: the bytes of send `id` at `id % TRACKED`.
    lens: Vec<u32>,
    report: ZeroCopyReport,
}

impl MsgZeroCopy {
    /// Turns SO_ZEROCOPY on for every socket.
    pub fn new(fds: &[RawFd]) -> Result<MsgZeroCopy> {
        for &fd in fds {
            crate::net::setsockopt_int(fd, libc::SOL_SOCKET, SO_ZEROCOPY, 1, "SO_ZEROCOPY").map_err(|_| {
                Error::Usage(
                    "engine msg-zerocopy needs SO_ZEROCOPY (Linux 4.14), which this kernel refused: pick another send engine".into(),
                )
            })?;
        }
        Ok(MsgZeroCopy {
            next: vec![0; fds.len()],
            done: vec![0; fds.len()],
            lens: vec![0; fds.len() * TRACKED],
            report: ZeroCopyReport::default(),
        })
    }

    pub const FLAGS: i32 = libc::MSG_ZEROCOPY;

    fn outstanding(&self, f: usize) -> u32 {
        self.next[f].wrapping_sub(self.done[f])
    }

    /// A zero-copy send of `len` bytes on flow `f` went out: it has the next id.
    #[inline]
    pub fn sent(&mut self, f: usize, len: usize) {
        self.lens[f * TRACKED + self.next[f] as usize % TRACKED] = len as u32;
        self.next[f] = self.next[f].wrapping_add(1);
        self.report.sends += 1;
    }

    /// Reads flow `f`'s completions when it has many outstanding, and waits for some
    /// when it has as many as it can track. Call between sends.
    #[inline]
    pub fn between_sends(&mut self, cx: &mut Ctx, f: usize) -> Result<()> {
        if self.outstanding(f) >= READ_AT {
            self.read(cx, f)?;
            if self.outstanding(f) as usize >= TRACKED - 1 {
                self.wait_below(cx, f, (TRACKED / 2) as u32)?;
            }
        }
        Ok(())
    }

    /// A send was refused for want of option memory (ENOBUFS): wait for a completion.
    pub fn short_of_memory(&mut self, cx: &mut Ctx, f: usize) -> Result<()> {
        self.report.buffer_waits += 1;
        let now = self.outstanding(f);
        if now == 0 {
            return Err(Error::Peer(
                "a MSG_ZEROCOPY send failed with ENOBUFS with nothing outstanding: raise net.core.optmem_max"
                    .into(),
            ));
        }
        self.wait_below(cx, f, now)
    }

    /// Waits until flow `f` has fewer than `below` sends outstanding; a stop or the guard
    /// ends the wait early (the caller reports them).
    fn wait_below(&mut self, cx: &mut Ctx, f: usize, below: u32) -> Result<()> {
        let fd = cx.fds[f];
        while self.outstanding(f) >= below {
            if cx.events() & (ABORT | GUARD) != 0 {
                return Ok(());
            }
            // POLLERR is reported whatever the events asked: the error queue has something.
            let mut p = libc::pollfd { fd, events: 0, revents: 0 };
            cx.calls.other += 1;
            // SAFETY: one live pollfd for the call.
            unsafe { libc::poll(&mut p, 1, WAIT_MS) };
            self.read(cx, f)?;
        }
        Ok(())
    }

    /// Waits for every flow's completions (the end of the run).
    pub fn wait_all(&mut self, cx: &mut Ctx) -> Result<()> {
        for f in 0..self.next.len() {
            self.wait_below(cx, f, 1)?;
        }
        Ok(())
    }

    /// Reads every completion flow `f`'s error queue holds now.
    pub fn read(&mut self, cx: &mut Ctx, f: usize) -> Result<()> {
        let fd = cx.fds[f];
        loop {
            // Room for one cmsg carrying a sock_extended_err (and the offender address).
            let mut control = [0u64; 16];
            let mut msg: libc::msghdr =
                // SAFETY: an all-zero msghdr is a valid empty one.
                unsafe { std::mem::zeroed() };
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            cx.calls.recvs += 1;
            // SAFETY: `msg` points at `control`, live for the call; no data buffers.
            let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) {
                    return Ok(());
                }
                return Err(Error::io("reading MSG_ZEROCOPY completions", e));
            }
            // SAFETY: `msg` was filled by recvmsg; the cmsg walk stays inside `control`.
            let mut cm = unsafe { libc::CMSG_FIRSTHDR(&msg) };
            while !cm.is_null() {
                // SAFETY: `cm` is a cmsg header inside `control`, as CMSG_FIRSTHDR/NXTHDR give.
                let (level, kind) = unsafe { ((*cm).cmsg_level, (*cm).cmsg_type) };
                let is_err = (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                    || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR);
                if is_err {
                    // SAFETY: an IP(V6)_RECVERR cmsg carries a sock_extended_err; read unaligned.
                    let ee: libc::sock_extended_err =
                        unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cm).cast()) };
                    if ee.ee_errno == 0 && ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                        self.complete(
                            f,
                            ee.ee_info,
                            ee.ee_data,
                            ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0,
                        );
                    }
                }
                // SAFETY: as above.
                cm = unsafe { libc::CMSG_NXTHDR(&msg, cm) };
            }
        }
    }

    /// Sends `lo..=hi` of flow `f` completed.
    fn complete(&mut self, f: usize, lo: u32, hi: u32, copied: bool) {
        let n = hi.wrapping_sub(lo).wrapping_add(1);
        let mut bytes = 0u64;
        for k in 0..n {
            bytes += u64::from(self.lens[f * TRACKED + lo.wrapping_add(k) as usize % TRACKED]);
        }
        self.report.completion_ranges += 1;
        self.report.notifications += u64::from(n);
        if copied {
            self.report.copied += u64::from(n);
            self.report.bytes_copied += bytes;
        } else {
            self.report.bytes_zero_copy += bytes;
        }
        if hi.wrapping_sub(self.done[f]) < u32::MAX / 2 {
            self.done[f] = hi.wrapping_add(1);
        }
    }

    pub fn report(&self) -> ZeroCopyReport {
        self.report.clone()
    }
}
