//! `multishot` and `bundle`: one armed receive per flow keeps delivering into buffers the
//! kernel picks from a provided-buffer ring, until EOF. A multishot ends early more often
//! than one would guess (out of buffers, CQ pressure, sometimes a bundle with data), so it
//! is re-armed whenever a CQE arrives without F_MORE.

use io_uring::squeue::Flags;
use io_uring::{cqueue, opcode};

use crate::buf::BufRing;
use crate::io::path::{op, push_cancel, standing_unlinked, PerOp, RecvEvent, RecvPath};
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::verify::Verifier;
use crate::with_fd;
use ringperf_core::error::{Error, Result};
use ringperf_core::report::RecvReport;
use ringperf_core::spec::RecvEngine;

/// The buffer group of a worker's ring (one group per ring).
const BGID: u16 = 0;

/// Bundle sizes above this are counted in the last bucket.
pub const MAX_BUCKET: usize = 64;

pub struct ProvidedRecv {
    /// Per flow (or per owner of a per-operation path: the socket its receive was last
    /// armed on), where a receive that ended early is armed again.
    fds: Vec<FlowFd>,
    /// Per owner: a receive is armed and its last CQE has not come.
    live: Vec<bool>,
    /// Per owner: ended by [`RecvPath::cancel_on`]; never armed again until `arm_on`.
    stopped: Vec<bool>,
    /// Every buffer has memory of its own, so [`RecvPath::payload`] can read it.
    distinct: bool,
    bundle: bool,
    bufs: BufRing,
    report: RecvReport,
}

impl ProvidedRecv {
    pub fn new(
        ring: &mut Ring,
        fds: &[FlowFd],
        bundle: bool,
        count: u16,
        size: usize,
        read_payload: bool,
    ) -> Result<ProvidedRecv> {
        let bufs = BufRing::new(ring, count, size, BGID, read_payload)?;
        let landing_bytes = bufs.landing_bytes() as u64;
        Ok(ProvidedRecv {
            fds: fds.to_vec(),
            live: vec![false; fds.len()],
            stopped: vec![false; fds.len()],
            distinct: read_payload,
            bundle,
            bufs,
            report: RecvReport {
                engine: if bundle { RecvEngine::Bundle } else { RecvEngine::Multishot },
                buffers_per_cqe: if bundle { vec![0; MAX_BUCKET + 1] } else { Vec::new() },
                landing_bytes,
                ..RecvReport::default()
            },
        })
    }

    /// The receive of `flow` ended without EOF: armed again unless it was cancelled.
    fn rearm(&mut self, ring: &mut Ring, flow: usize) -> Result<()> {
        if self.stopped[flow] {
            self.live[flow] = false;
            return Ok(());
        }
        self.report.rearms += 1;
        self.push_arm(ring, flow)
    }

    fn push_arm(&mut self, ring: &mut Ring, flow: usize) -> Result<()> {
        self.live[flow] = true;
        let bgid = self.bufs.bgid();
        let e = with_fd!(self.fds[flow], |t| if self.bundle {
            opcode::RecvMultiBundle::new(t, bgid).build()
        } else {
            opcode::RecvMulti::new(t, bgid).build()
        });
        self.report.arms += 1;
        // SAFETY: the buffer ring lives as long as this path.
        unsafe { ring.push(&e.user_data(token(op::RECV, flow))) }
    }
}

impl RecvPath for ProvidedRecv {
    fn fd(&self, flow: usize) -> FlowFd {
        self.fds[flow]
    }

    fn multishot(&self) -> bool {
        true
    }

    /// Arms the standing receive; `len` and `wait_all` do not apply (the kernel fills
    /// whole buffers), and a standing receive is never linked.
    fn arm(&mut self, ring: &mut Ring, flow: usize, _: u32, _: bool, flags: Flags) -> Result<()> {
        standing_unlinked(flags)?;
        // Armed again after a cancel (a policed stream's), it keeps going as before.
        self.stopped[flow] = false;
        self.push_arm(ring, flow)
    }

    /// A standing receive on `sock` until EOF, an error or [`RecvPath::cancel_on`].
    fn arm_on(&mut self, ring: &mut Ring, on: PerOp, len: u32, wait_all: bool, flags: Flags) -> Result<()> {
        self.fds[on.owner] = on.sock;
        self.arm(ring, on.owner, len, wait_all, flags)
    }

    fn cancel_on(&mut self, ring: &mut Ring, owner: usize) -> Result<()> {
        self.stopped[owner] = true;
        push_cancel(ring, token(op::RECV, owner), owner)
    }

    #[inline]
    fn live_on(&self, owner: usize) -> bool {
        self.live[owner]
    }

    fn reads_payload(&self) -> bool {
        self.distinct
    }

    #[inline]
    fn payload(&self, c: &Completion) -> &[u8] {
        match cqueue::buffer_select(c.flags) {
            Some(bid) if c.result > 0 && self.distinct => self.bufs.data(bid, c.result as usize),
            _ => &[],
        }
    }

    #[inline]
    fn complete(&mut self, ring: &mut Ring, c: &Completion, verify: &mut Verifier) -> Result<RecvEvent> {
        let flow = c.flow();
        if c.result == -libc::ENOBUFS {
            self.report.enobufs += 1;
            if !c.more() {
                self.rearm(ring, flow)?;
            }
            return Ok(RecvEvent::Nothing);
        }
        if c.result <= 0 {
            // Only data keeps a multishot receive going.
            self.live[flow] = false;
        }
        if c.result == -libc::ECANCELED {
            return Ok(RecvEvent::Cancelled { flow });
        }
        if c.result < 0 {
            return Err(cqe_error(if self.bundle { "recv bundle" } else { "multishot recv" }, c.result));
        }
        if c.result == 0 {
            return Ok(RecvEvent::Eof { flow });
        }
        let n = c.result as usize;
        let Some(first) = cqueue::buffer_select(c.flags) else {
            return Err(Error::Protocol("a provided-buffer receive completed without a buffer id".into()));
        };
        self.report.data_cqes += 1;
        let size = self.bufs.buf_size();
        let used = n.div_ceil(size);
        if self.bundle {
            self.report.buffers_per_cqe[used.min(MAX_BUCKET)] += 1;
        }
        let mut left = n;
        // Positions are read before each recycle rewrites the mirror at the tail. The
        // kernel consumes buffers in ring order and posts CQEs in that order (all on this
        // thread's task work), so the tail never overtakes a bundle still being read.
        let pos0 = self.bufs.position_of(first);
        for i in 0..used {
            let bid = self.bufs.bid_at(pos0.wrapping_add(i as u16));
            let take = left.min(size);
            if verify.enabled() {
                verify.check(flow, self.bufs.data(bid, take));
            }
            left -= take;
            self.bufs.recycle(bid);
        }
        if !c.more() {
            self.rearm(ring, flow)?;
        }
        Ok(RecvEvent::Data { flow, bytes: n as u32 })
    }

    #[inline]
    fn after_batch(&mut self) {
        self.bufs.publish();
    }

    fn report(&self) -> RecvReport {
        self.report.clone()
    }
}
