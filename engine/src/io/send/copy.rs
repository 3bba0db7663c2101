//! `copy`: IORING_OP_SEND from one patterned buffer; the kernel copies every byte, so the
//! buffer is free again the moment the send completes.

use io_uring::opcode;
use io_uring::squeue::Flags;

use crate::buf::PayloadArena;
use crate::io::path::{op, PerOp, SendEvent, SendPath};
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::with_fd;
use ringperf_core::error::Result;
use ringperf_core::report::SendReport;

/// Where a send's bytes come from.
enum Source {
    /// Every flow's stream: the shared pattern at the stream's offset.
    Pattern(PayloadArena),
    /// Per owner: its own message, a fixed header then the pattern (see
    /// [`PayloadArena::framed`]).
    Framed(PayloadArena),
}

pub struct CopySend {
    fds: Vec<FlowFd>,
    source: Source,
    report: SendReport,
}

impl CopySend {
    pub fn new(fds: &[FlowFd], max_len: usize) -> Result<CopySend> {
        Ok(CopySend {
            fds: fds.to_vec(),
            source: Source::Pattern(PayloadArena::new(1, max_len)?),
            report: SendReport::default(),
        })
    }

    /// A path for sockets the workload makes per operation (see [`SendPath::push_on`]):
    /// owner `o`'s message is `headers[o]` followed by `body_len` bytes of the pattern, so
    /// a header and its payload leave in one send; with no headers every owner sends the
    /// same `body_len` bytes of pattern.
    pub fn per_op<const H: usize>(headers: &[[u8; H]], body_len: usize) -> Result<CopySend> {
        Ok(CopySend {
            fds: Vec::new(),
            source: Source::Framed(PayloadArena::framed(headers, body_len)?),
            report: SendReport::default(),
        })
    }
}

impl SendPath for CopySend {
    #[inline]
    fn fd(&self, flow: usize) -> FlowFd {
        self.fds[flow]
    }

    #[inline]
    fn available(&self, _flow: usize) -> usize {
        usize::MAX
    }

    #[inline]
    fn can_skip_success(&self) -> bool {
        true
    }

    #[inline]
    fn push_on(&mut self, ring: &mut Ring, on: PerOp, offset: u64, len: u32, flags: Flags) -> Result<u32> {
        let PerOp { sock, owner } = on;
        let ptr = match &self.source {
            Source::Pattern(arena) => arena.at(0, offset),
            Source::Framed(arena) => arena.message(owner, offset),
        };
        // MSG_WAITALL: a send completes whole or fails, so the byte stream has no holes.
        let e = with_fd!(sock, |t| opcode::Send::new(t, ptr, len)
            .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
            .build()
            .user_data(token(op::SEND, owner))
            .flags(flags));
        self.report.sends += 1;
        // SAFETY: the arena lives as long as this path, which outlives the ring's use of it.
        unsafe { ring.push(&e)? };
        Ok(len)
    }

    #[inline]
    fn complete(&mut self, _ring: &mut Ring, c: &Completion) -> Result<SendEvent> {
        match c.result {
            r if r >= 0 => Ok(SendEvent::Sent { flow: c.flow(), bytes: r as u32 }),
            r if r == -libc::ECANCELED => Ok(SendEvent::Cancelled { flow: c.flow() }),
            r => Err(cqe_error("send", r)),
        }
    }

    fn outstanding(&self) -> usize {
        0
    }

    fn report(&self) -> SendReport {
        self.report.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    use super::*;
    use crate::io::path::RecvPath;
    use crate::io::recv::CopyRecv;
    use crate::verify::fill;
    use ringperf_core::spec::RingTuning;

    #[test]
    fn a_framed_send_carries_its_flows_header_and_lands_in_the_owners_buffer() {
        let (a, b) = UnixStream::pair().expect("a socket pair");
        let mut ring = Ring::new(&RingTuning::default(), 16).expect("a ring");
        let headers = [[1u8; 4], [2u8; 4]];
        let mut send = CopySend::per_op(&headers, 6).expect("a path");
        let mut recv = CopyRecv::per_op(3, 10, false, true).expect("a path");
        let sent = send
            .push_on(&mut ring, PerOp { sock: FlowFd::Raw(a.as_raw_fd()), owner: 1 }, 0, 10, Flags::IO_LINK)
            .expect("push");
        assert_eq!(sent, 10);
        let b_sock = PerOp { sock: FlowFd::Raw(b.as_raw_fd()), owner: 2 };
        recv.arm_on(&mut ring, b_sock, 10, true, Flags::empty()).expect("arm");
        let mut out = Vec::with_capacity(ring.cq_entries());
        let mut seen = Vec::new();
        while seen.len() < 2 {
            ring.submit_and_wait().expect("enter");
            ring.reap(&mut out);
            seen.extend(out.iter().map(|c| (c.op(), c.result)));
        }
        seen.sort_unstable();
        assert_eq!(seen, [(op::SEND, 10), (op::RECV, 10)]);
        let mut pattern = [0u8; 6];
        fill(&mut pattern);
        let got = recv.landed(2, 10);
        assert_eq!(&got[..4], &[2u8; 4], "flow 1's header, not flow 0's");
        assert_eq!(&got[4..], &pattern);
        assert_eq!(recv.landed(0, 10), &[0u8; 10], "another owner's buffer is untouched");
    }
}
