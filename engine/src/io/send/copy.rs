//! `copy`: IORING_OP_SEND from one patterned buffer; the kernel copies every byte, so the
//! buffer is free again the moment the send completes.

use io_uring::{opcode, squeue};

use crate::buf::PayloadArena;
use crate::error::Result;
use crate::io::{op, SendEvent, SendPath};
use crate::report::SendReport;
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::with_fd;

pub struct CopySend {
    fds: Vec<FlowFd>,
    arena: PayloadArena,
    report: SendReport,
}

impl CopySend {
    pub fn new(fds: &[FlowFd], max_len: usize) -> Result<CopySend> {
        Ok(CopySend {
            fds: fds.to_vec(),
            arena: PayloadArena::new(1, max_len)?,
            report: SendReport::default(),
        })
    }
}

impl SendPath for CopySend {
    #[inline]
    fn available(&self, _flow: usize) -> usize {
        usize::MAX
    }

    #[inline]
    fn can_skip_success(&self) -> bool {
        true
    }

    #[inline]
    fn push(
        &mut self,
        ring: &mut Ring,
        flow: usize,
        offset: u64,
        len: u32,
        flags: squeue::Flags,
    ) -> Result<u32> {
        let ptr = self.arena.at(0, offset);
        // MSG_WAITALL: a send completes whole or fails, so the byte stream has no holes.
        let e = with_fd!(self.fds[flow], |t| opcode::Send::new(t, ptr, len)
            .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
            .build()
            .user_data(token(op::SEND, flow))
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
