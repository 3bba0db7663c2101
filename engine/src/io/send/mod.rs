//! Send engines, and the enum that dispatches to the one a side chose.

mod copy;
mod datagram;
mod splice;
mod zc;

use std::fs::File;

use io_uring::squeue::Flags;

pub use copy::CopySend;
pub use datagram::DatagramSend;
pub use splice::SpliceSend;
pub use zc::{
    arena_bytes_per_flow as zc_arena_bytes_per_flow, slots_per_flow as zc_slots_per_flow,
    stream_unnotified_bytes as zc_stream_unnotified_bytes, ZcKind, ZcSend,
    STREAM_UNNOTIFIED_BYTES as ZC_STREAM_UNNOTIFIED_BYTES,
};

use crate::io::path::{PerOp, SendEvent, SendPath};
use crate::ring::{Completion, FlowFd, Ring};
use ringperf_core::error::Result;
use ringperf_core::report::SendReport;
use ringperf_core::spec::SendEngine;

/// The send engine of one worker. Built once per worker, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum AnySend {
    Copy(CopySend),
    Zc(ZcSend),
    Splice(SpliceSend),
}

/// What a send path needs to know to set itself up.
pub struct SendSetup<'a> {
    pub fds: &'a [FlowFd],
    /// Largest single send.
    pub max_len: usize,
    /// Sends in flight per flow.
    pub depth: usize,
    /// Bytes of sends a zero-copy stream may keep awaiting notification (see
    /// `zc::stream_unnotified_bytes`); 0 for request/response, whose buffers follow the depth.
    pub zc_unnotified_bytes: usize,
    /// Payload source for `splice`, already opened by the client; `None` uses a memfd.
    pub file: Option<File>,
}

impl AnySend {
    pub fn new(engine: SendEngine, ring: &mut Ring, s: SendSetup) -> Result<AnySend> {
        Ok(match engine {
            SendEngine::Copy => AnySend::Copy(CopySend::new(s.fds, s.max_len)?),
            SendEngine::Zc | SendEngine::ZcMsg => {
                let kind = if engine == SendEngine::Zc { ZcKind::Send } else { ZcKind::SendMsg };
                let slots = zc::slots_per_flow(s.max_len, s.depth, s.fds.len(), s.zc_unnotified_bytes);
                AnySend::Zc(ZcSend::new(kind, ring, s.fds, s.max_len, slots)?)
            }
            SendEngine::Splice => AnySend::Splice(SpliceSend::new(s.fds, s.max_len, s.depth, s.file)?),
            SendEngine::Syscall | SendEngine::MsgZerocopy => {
                return Err(crate::io::path::not_a_ring_engine("send", engine.name()))
            }
        })
    }
}

impl AnySend {
    /// A send path for sockets the workload makes per operation (see
    /// [`SendPath::push_on`]): `owners` buffer owners, owner `o`'s message `headers[o]`
    /// then `body_len` bytes of the pattern (with no headers, every owner the same
    /// pattern). A zero-copy owner keeps a buffer for one send awaiting its notification
    /// while its next starts.
    pub fn per_op<const H: usize>(
        engine: SendEngine,
        ring: &mut Ring,
        owners: usize,
        headers: &[[u8; H]],
        body_len: usize,
    ) -> Result<AnySend> {
        Ok(match engine {
            SendEngine::Copy => AnySend::Copy(CopySend::per_op(headers, body_len)?),
            SendEngine::Zc | SendEngine::ZcMsg => {
                let kind = if engine == SendEngine::Zc { ZcKind::Send } else { ZcKind::SendMsg };
                AnySend::Zc(ZcSend::per_op(kind, ring, owners, headers, body_len, 2)?)
            }
            SendEngine::Splice => AnySend::Splice(SpliceSend::per_op(owners, headers, body_len)?),
            SendEngine::Syscall | SendEngine::MsgZerocopy => {
                return Err(crate::io::path::not_a_ring_engine("send", engine.name()))
            }
        })
    }
}

macro_rules! dispatch {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnySend::Copy($p) => $e,
            AnySend::Zc($p) => $e,
            AnySend::Splice($p) => $e,
        }
    };
}

impl SendPath for AnySend {
    #[inline]
    fn fd(&self, flow: usize) -> FlowFd {
        dispatch!(self, p => p.fd(flow))
    }
    #[inline]
    fn available(&self, flow: usize) -> usize {
        dispatch!(self, p => p.available(flow))
    }
    #[inline]
    fn can_skip_success(&self) -> bool {
        dispatch!(self, p => p.can_skip_success())
    }

    fn chain_cqes(&self, sends: usize) -> usize {
        dispatch!(self, p => p.chain_cqes(sends))
    }
    #[inline]
    fn can_chain(&self) -> bool {
        dispatch!(self, p => p.can_chain())
    }
    #[inline]
    fn push(&mut self, ring: &mut Ring, flow: usize, offset: u64, len: u32, flags: Flags) -> Result<u32> {
        dispatch!(self, p => p.push(ring, flow, offset, len, flags))
    }
    #[inline]
    fn push_on(&mut self, ring: &mut Ring, on: PerOp, offset: u64, len: u32, flags: Flags) -> Result<u32> {
        dispatch!(self, p => p.push_on(ring, on, offset, len, flags))
    }
    #[inline]
    fn complete(&mut self, ring: &mut Ring, c: &Completion) -> Result<SendEvent> {
        dispatch!(self, p => p.complete(ring, c))
    }
    #[inline]
    fn outstanding(&self) -> usize {
        dispatch!(self, p => p.outstanding())
    }
    #[inline]
    fn short_of_buffers(&mut self, flow: usize) {
        dispatch!(self, p => p.short_of_buffers(flow))
    }
    fn report(&self) -> SendReport {
        dispatch!(self, p => p.report())
    }
}
