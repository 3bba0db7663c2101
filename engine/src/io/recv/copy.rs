//! `recv`: IORING_OP_RECV into a user buffer (the kernel copies out every byte), and
//! `trunc`: the same receive with MSG_TRUNC, which on TCP discards the payload in the
//! kernel without copying it.

use io_uring::opcode;
use io_uring::squeue::Flags;

use crate::buf::{Mapping, CACHE_LINE};
use crate::io::path::{op, push_cancel, PerOp, RecvEvent, RecvPath};
use crate::ring::uapi::IORING_RECVSEND_POLL_FIRST;
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::verify::Verifier;
use crate::with_fd;
use ringperf_core::error::Result;
use ringperf_core::report::RecvReport;
use ringperf_core::spec::RecvEngine;

pub struct CopyRecv {
    fds: Vec<FlowFd>,
    /// When the payload is checked, one landing buffer per flow and place in its chain (a
    /// chain's receives all land before the worker looks); otherwise every receive shares
    /// one, since nobody reads it. Each starts on a cache line: on AMD Zen the kernel's
    /// copy to user (rep movsb) runs at half speed or worse into a misaligned destination,
    /// and a heap buffer 16 bytes into a line doubled recv's service demand.
    bufs: Mapping,
    per_flow: bool,
    /// Bytes from one buffer to the next: the longest receive rounded up to a cache line.
    stride: usize,
    /// Linked receives a stream flow keeps in flight.
    depth: usize,
    /// Per flow: the chain place of its next arm and of its next completion. A flow's
    /// receives complete in the order they were armed, one CQE each.
    armed_at: Vec<usize>,
    landed_at: Vec<usize>,
    /// Per owner: receives armed that will post a CQE (not skip-success) and have not.
    live: Vec<u32>,
    trunc: bool,
    report: RecvReport,
}

impl CopyRecv {
    pub fn new(
        fds: &[FlowFd],
        max_len: usize,
        trunc: bool,
        per_flow: bool,
        depth: usize,
    ) -> Result<CopyRecv> {
        CopyRecv::build(fds.to_vec(), fds.len(), max_len, trunc, per_flow, depth)
    }

    /// A path for sockets the workload makes per operation (see [`RecvPath::arm_on`]):
    /// `owners` buffer owners (flows, or connection slots), each with its own landing
    /// buffer if `per_owner` (the workload reads what lands), else one shared buffer.
    pub fn per_op(owners: usize, max_len: usize, trunc: bool, per_owner: bool) -> Result<CopyRecv> {
        CopyRecv::build(Vec::new(), owners, max_len, trunc, per_owner && !trunc, 1)
    }

    fn build(
        fds: Vec<FlowFd>,
        owners: usize,
        max_len: usize,
        trunc: bool,
        per_flow: bool,
        depth: usize,
    ) -> Result<CopyRecv> {
        let depth = depth.clamp(1, 64);
        let n = if per_flow { owners * depth } else { 1 };
        let stride = max_len.next_multiple_of(CACHE_LINE);
        let bufs = Mapping::new(n * stride)?;
        // trunc's buffer is only an address the kernel never writes to.
        let landing_bytes = if trunc { 0 } else { bufs.len() as u64 };
        Ok(CopyRecv {
            fds,
            bufs,
            per_flow,
            stride,
            depth,
            armed_at: vec![0; owners],
            landed_at: vec![0; owners],
            live: vec![0; owners],
            trunc,
            report: RecvReport {
                engine: if trunc { RecvEngine::Trunc } else { RecvEngine::Recv },
                landing_bytes,
                ..RecvReport::default()
            },
        })
    }

    #[inline]
    fn buf_start(&self, flow: usize, place: usize) -> usize {
        if self.per_flow {
            (flow * self.depth + place) * self.stride
        } else {
            0
        }
    }

    /// The `len` bytes the last receive into `owner`'s buffer put there, on a path with
    /// one buffer per owner and no chain (see [`CopyRecv::per_op`]).
    #[inline]
    pub fn landed(&self, owner: usize, len: usize) -> &[u8] {
        debug_assert!(self.per_flow && self.depth == 1);
        self.bufs.slice(self.buf_start(owner, 0), len.min(self.stride))
    }

    /// The next place in `flow`'s chain after `at`.
    #[inline]
    fn advance(at: &mut [usize], flow: usize, depth: usize) -> usize {
        let place = at[flow];
        at[flow] = if place + 1 == depth { 0 } else { place + 1 };
        place
    }
}

impl RecvPath for CopyRecv {
    #[inline]
    fn fd(&self, flow: usize) -> FlowFd {
        self.fds[flow]
    }

    fn multishot(&self) -> bool {
        false
    }

    fn chain(&self) -> usize {
        self.depth
    }

    fn note_chain(&mut self, depth: usize) {
        self.report.linked_receives = depth as u32;
    }

    #[inline]
    fn arm_on(&mut self, ring: &mut Ring, on: PerOp, len: u32, wait_all: bool, flags: Flags) -> Result<()> {
        let PerOp { sock, owner } = on;
        // Nobody reads what trunc discards, so it waits for whole receives: the kernel
        // retries a partial one itself, and the worker sees one CQE per `len` bytes. A
        // chain of receives does the same, so that a short one ends it only at EOF.
        let msg = match (self.trunc, wait_all || self.depth > 1) {
            (true, _) => libc::MSG_TRUNC | libc::MSG_WAITALL,
            (false, true) => libc::MSG_WAITALL,
            (false, false) => 0,
        };
        debug_assert!(len as usize <= self.stride);
        let place = Self::advance(&mut self.armed_at, owner, self.depth);
        // SAFETY: buf_start(owner, place) + stride <= the mapping's length.
        let ptr = unsafe { self.bufs.as_ptr().add(self.buf_start(owner, place)) };
        // A whole-message receive (request/response) is armed before its message can have
        // arrived: POLL_FIRST skips the first, futile attempt and goes straight to poll.
        // An empty one completes at once, readable or not, so it does not wait on poll.
        let ioprio = if wait_all && len > 0 { IORING_RECVSEND_POLL_FIRST } else { 0 };
        let e = with_fd!(sock, |t| opcode::Recv::new(t, ptr, len)
            .ioprio(ioprio)
            .flags(msg)
            .build()
            .user_data(token(op::RECV, owner))
            .flags(flags));
        self.report.arms += 1;
        if !flags.contains(Flags::SKIP_SUCCESS) {
            self.live[owner] += 1;
        }
        // SAFETY: the buffer lives as long as this path and holds `len` <= max_len bytes.
        unsafe { ring.push(&e) }
    }

    fn cancel_on(&mut self, ring: &mut Ring, owner: usize) -> Result<()> {
        push_cancel(ring, token(op::RECV, owner), owner)
    }

    #[inline]
    fn live_on(&self, owner: usize) -> bool {
        self.live[owner] > 0
    }

    fn reads_payload(&self) -> bool {
        self.per_flow
    }

    #[inline]
    fn payload(&self, c: &Completion) -> &[u8] {
        if c.result <= 0 || !self.per_flow {
            return &[];
        }
        let flow = c.flow();
        // complete() moved past the place this receive landed in.
        let place = (self.landed_at[flow] + self.depth - 1) % self.depth;
        self.bufs.slice(self.buf_start(flow, place), (c.result as usize).min(self.stride))
    }

    #[inline]
    fn complete(&mut self, _ring: &mut Ring, c: &Completion, verify: &mut Verifier) -> Result<RecvEvent> {
        let flow = c.flow();
        let place = Self::advance(&mut self.landed_at, flow, self.depth);
        self.live[flow] = self.live[flow].saturating_sub(1);
        match c.result {
            0 => Ok(RecvEvent::Eof { flow }),
            r if r > 0 => {
                self.report.data_cqes += 1;
                if verify.enabled() && !self.trunc {
                    verify.check(flow, self.bufs.slice(self.buf_start(flow, place), r as usize));
                }
                Ok(RecvEvent::Data { flow, bytes: r as u32 })
            }
            r if r == -libc::ECANCELED => Ok(RecvEvent::Cancelled { flow }),
            r => Err(cqe_error("recv", r)),
        }
    }

    fn report(&self) -> RecvReport {
        self.report.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flows_landing_buffer_starts_on_a_cache_line() {
        let fds = [FlowFd::Raw(-1), FlowFd::Raw(-1), FlowFd::Raw(-1)];
        for max_len in [1, 1000, 65536, 65537] {
            let r = CopyRecv::new(&fds, max_len, false, true, 2).unwrap();
            for (flow, place) in (0..fds.len()).flat_map(|f| [(f, 0), (f, 1)]) {
                let start = r.buf_start(flow, place);
                assert_eq!(
                    (r.bufs.as_ptr() as usize + start) % CACHE_LINE,
                    0,
                    "flow {flow}, max_len {max_len}"
                );
                assert!(start + max_len <= r.bufs.len(), "flow {flow} place {place} overruns");
            }
        }
    }

    #[test]
    fn a_checked_chain_lands_each_receive_in_its_own_buffer() {
        let fds = [FlowFd::Raw(-1), FlowFd::Raw(-1)];
        let r = CopyRecv::new(&fds, 4096, false, true, 4).unwrap();
        let mut starts: Vec<usize> =
            (0..2).flat_map(|f| (0..4).map(move |p| (f, p))).map(|(f, p)| r.buf_start(f, p)).collect();
        starts.sort_unstable();
        starts.dedup();
        assert_eq!(starts.len(), 8, "two flows of four places need eight buffers");
        let mut at = vec![0; 2];
        let places: Vec<usize> = (0..6).map(|_| CopyRecv::advance(&mut at, 1, 4)).collect();
        assert_eq!(places, [0, 1, 2, 3, 0, 1]);
        assert_eq!(at[0], 0, "another flow's place does not move");
    }
}
