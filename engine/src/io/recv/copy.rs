//! `recv`: IORING_OP_RECV into a user buffer (the kernel copies out every byte), and
//! `trunc`: the same receive with MSG_TRUNC, which on TCP discards the payload in the
//! kernel without copying it.

use io_uring::{opcode, squeue};

use crate::buf::{Mapping, CACHE_LINE};
use crate::error::Result;
use crate::io::{op, RecvEvent, RecvPath};
use crate::report::RecvReport;
use crate::ring::uapi::IORING_RECVSEND_POLL_FIRST;
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::spec::RecvEngine;
use crate::verify::Verifier;
use crate::with_fd;

pub struct CopyRecv {
    fds: Vec<FlowFd>,
    /// One landing buffer per flow when the payload is checked; otherwise all flows share
    /// one, since nobody reads it. Each starts on a cache line: on AMD Zen the kernel's
    /// copy to user (rep movsb) runs at half speed or worse into a misaligned destination,
    /// and a heap buffer 16 bytes into a line doubled recv's service demand.
    bufs: Mapping,
    per_flow: bool,
    /// Bytes from one flow's buffer to the next: `max_len` rounded up to a cache line.
    stride: usize,
    trunc: bool,
    report: RecvReport,
}

impl CopyRecv {
    pub fn new(fds: &[FlowFd], max_len: usize, trunc: bool, per_flow: bool) -> Result<CopyRecv> {
        let n = if per_flow { fds.len() } else { 1 };
        let stride = max_len.next_multiple_of(CACHE_LINE);
        Ok(CopyRecv {
            fds: fds.to_vec(),
            bufs: Mapping::new(n * stride)?,
            per_flow,
            stride,
            trunc,
            report: RecvReport {
                engine: if trunc { RecvEngine::Trunc } else { RecvEngine::Recv },
                ..RecvReport::default()
            },
        })
    }

    #[inline]
    fn buf_start(&self, flow: usize) -> usize {
        if self.per_flow {
            flow * self.stride
        } else {
            0
        }
    }
}

/// Linked trunc receives per stream flow: what trunc discards lands nowhere, so they can
/// queue up, and the worker handles a chain's CQEs in one wait.
const TRUNC_CHAIN: usize = 4;

impl RecvPath for CopyRecv {
    fn multishot(&self) -> bool {
        false
    }

    fn chain(&self) -> usize {
        if self.trunc {
            TRUNC_CHAIN
        } else {
            1
        }
    }

    #[inline]
    fn arm(
        &mut self,
        ring: &mut Ring,
        flow: usize,
        len: u32,
        wait_all: bool,
        flags: squeue::Flags,
    ) -> Result<()> {
        // Nobody reads what trunc discards, so it waits for whole receives: the kernel
        // retries a partial one itself, and the worker sees one CQE per `len` bytes.
        let msg = match (self.trunc, wait_all) {
            (true, _) => libc::MSG_TRUNC | libc::MSG_WAITALL,
            (false, true) => libc::MSG_WAITALL,
            (false, false) => 0,
        };
        debug_assert!(len as usize <= self.stride);
        // SAFETY: buf_start(flow) + stride <= the mapping's length.
        let ptr = unsafe { self.bufs.as_ptr().add(self.buf_start(flow)) };
        // A whole-message receive (request/response) is armed before its message can have
        // arrived: POLL_FIRST skips the first, futile attempt and goes straight to poll.
        let ioprio = if wait_all { IORING_RECVSEND_POLL_FIRST } else { 0 };
        let e = with_fd!(self.fds[flow], |t| opcode::Recv::new(t, ptr, len)
            .ioprio(ioprio)
            .flags(msg)
            .build()
            .user_data(token(op::RECV, flow))
            .flags(flags));
        self.report.arms += 1;
        // SAFETY: the buffer lives as long as this path and holds `len` <= max_len bytes.
        unsafe { ring.push(&e) }
    }

    #[inline]
    fn complete(&mut self, _ring: &mut Ring, c: &Completion, verify: &mut Verifier) -> Result<RecvEvent> {
        let flow = c.flow();
        match c.result {
            0 => Ok(RecvEvent::Eof { flow }),
            r if r > 0 => {
                self.report.data_cqes += 1;
                if verify.enabled() && !self.trunc {
                    verify.check(flow, self.bufs.slice(self.buf_start(flow), r as usize));
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
            let r = CopyRecv::new(&fds, max_len, false, true).unwrap();
            for flow in 0..fds.len() {
                let addr = r.bufs.as_ptr() as usize + r.buf_start(flow);
                assert_eq!(addr % CACHE_LINE, 0, "flow {flow}, max_len {max_len}");
                assert!(r.buf_start(flow) + max_len <= r.bufs.len(), "flow {flow} overruns");
            }
        }
    }
}
