//! Receive engines, and the enum that dispatches to the one a side chose.

mod copy;
mod datagram;
mod provided;

use io_uring::squeue::Flags;

pub use copy::CopyRecv;
pub use datagram::DatagramRecv;
pub use provided::ProvidedRecv;

use crate::io::path::{PerOp, RecvEvent, RecvPath};
use crate::ring::{Completion, FlowFd, Ring};
use crate::verify::Verifier;
use ringperf_core::error::Result;
use ringperf_core::report::RecvReport;
use ringperf_core::spec::{RecvEngine, RingTuning};

/// The SO_RCVLOWAT a stream receiver's data sockets get, if any: what was asked for, else
/// one provided buffer for the engines that receive into them. A standing receive is then
/// woken when a whole buffer can be filled, not for every train of segments that arrives;
/// the kernel still wakes it at EOF and when the receive window or memory runs short, so
/// nothing waits for ever. recv and trunc keep the kernel's default of 1 byte, as netperf
/// and iperf3 do, unless asked.
pub fn stream_rcvlowat(engine: RecvEngine, tuning: &RingTuning, asked: Option<u32>) -> Option<u32> {
    asked.or_else(|| engine.uses_buffer_ring().then_some(tuning.buf_size))
}

/// What verification says of the trunc engine.
const TRUNC_UNCHECKED: &str =
    "the trunc engine discards the payload in the kernel; only byte counts are checked";

/// What a receive path needs to know to set itself up.
pub struct RecvSetup<'a> {
    pub fds: &'a [FlowFd],
    /// Longest single receive.
    pub max_len: usize,
    /// Linked receives in flight per stream flow (one-shot engines).
    pub depth: usize,
}

/// The receive engine of one worker.
pub enum AnyRecv {
    Copy(CopyRecv),
    Provided(ProvidedRecv),
}

impl AnyRecv {
    pub fn new(
        engine: RecvEngine,
        ring: &mut Ring,
        RecvSetup { fds, max_len, depth }: RecvSetup,
        tuning: &RingTuning,
        verify: &mut Verifier,
    ) -> Result<AnyRecv> {
        Ok(match engine {
            RecvEngine::Recv => AnyRecv::Copy(CopyRecv::new(fds, max_len, false, verify.enabled(), depth)?),
            RecvEngine::Trunc => {
                verify.cannot_check(TRUNC_UNCHECKED);
                AnyRecv::Copy(CopyRecv::new(fds, max_len, true, false, depth)?)
            }
            RecvEngine::Multishot | RecvEngine::Bundle => {
                provided(engine, ring, fds, tuning, verify.enabled())?
            }
            RecvEngine::Syscall | RecvEngine::ZerocopyReceive => {
                return Err(crate::io::path::not_a_ring_engine("receive", engine.name()))
            }
        })
    }
}

impl AnyRecv {
    /// A receive path for sockets the workload makes per operation (see
    /// [`RecvPath::arm_on`]): `owners` buffer owners, receives of up to `max_len` bytes;
    /// `read_payload`: the workload reads what lands ([`RecvPath::payload`]), so every
    /// owner (every provided buffer) gets memory of its own.
    pub fn per_op(
        engine: RecvEngine,
        ring: &mut Ring,
        owners: usize,
        max_len: usize,
        read_payload: bool,
        tuning: &RingTuning,
        verify: &mut Verifier,
    ) -> Result<AnyRecv> {
        let read = read_payload || verify.enabled();
        Ok(match engine {
            RecvEngine::Recv => AnyRecv::Copy(CopyRecv::per_op(owners, max_len, false, read)?),
            RecvEngine::Trunc => {
                verify.cannot_check(TRUNC_UNCHECKED);
                AnyRecv::Copy(CopyRecv::per_op(owners, max_len, true, false)?)
            }
            // No socket of its own: each owner's comes with its arm_on.
            RecvEngine::Multishot | RecvEngine::Bundle => {
                provided(engine, ring, &vec![FlowFd::Raw(-1); owners], tuning, read)?
            }
            RecvEngine::Syscall | RecvEngine::ZerocopyReceive => {
                return Err(crate::io::path::not_a_ring_engine("receive", engine.name()))
            }
        })
    }
}

/// The provided-buffer path (multishot, or bundle) over `fds`, its buffers as `tuning`
/// sizes them.
fn provided(
    engine: RecvEngine,
    ring: &mut Ring,
    fds: &[FlowFd],
    tuning: &RingTuning,
    read_payload: bool,
) -> Result<AnyRecv> {
    let (count, size) = (tuning.buf_count as u16, tuning.buf_size as usize);
    let bundle = engine == RecvEngine::Bundle;
    Ok(AnyRecv::Provided(ProvidedRecv::new(ring, fds, bundle, count, size, read_payload)?))
}

macro_rules! dispatch_recv {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnyRecv::Copy($p) => $e,
            AnyRecv::Provided($p) => $e,
        }
    };
}

impl RecvPath for AnyRecv {
    #[inline]
    fn fd(&self, flow: usize) -> FlowFd {
        dispatch_recv!(self, p => p.fd(flow))
    }
    #[inline]
    fn multishot(&self) -> bool {
        matches!(self, AnyRecv::Provided(_))
    }
    #[inline]
    fn arm(&mut self, ring: &mut Ring, flow: usize, len: u32, wait_all: bool, flags: Flags) -> Result<()> {
        dispatch_recv!(self, p => p.arm(ring, flow, len, wait_all, flags))
    }
    #[inline]
    fn arm_on(&mut self, ring: &mut Ring, on: PerOp, len: u32, wait_all: bool, flags: Flags) -> Result<()> {
        dispatch_recv!(self, p => p.arm_on(ring, on, len, wait_all, flags))
    }
    fn cancel_on(&mut self, ring: &mut Ring, owner: usize) -> Result<()> {
        dispatch_recv!(self, p => p.cancel_on(ring, owner))
    }
    #[inline]
    fn live_on(&self, owner: usize) -> bool {
        dispatch_recv!(self, p => p.live_on(owner))
    }
    fn reads_payload(&self) -> bool {
        dispatch_recv!(self, p => p.reads_payload())
    }
    #[inline]
    fn payload(&self, c: &Completion) -> &[u8] {
        dispatch_recv!(self, p => p.payload(c))
    }
    fn chain(&self) -> usize {
        match self {
            AnyRecv::Copy(p) => p.chain(),
            AnyRecv::Provided(p) => p.chain(),
        }
    }
    fn note_chain(&mut self, depth: usize) {
        match self {
            AnyRecv::Copy(p) => p.note_chain(depth),
            AnyRecv::Provided(p) => p.note_chain(depth),
        }
    }
    #[inline]
    fn complete(&mut self, ring: &mut Ring, c: &Completion, verify: &mut Verifier) -> Result<RecvEvent> {
        match self {
            AnyRecv::Copy(p) => p.complete(ring, c, verify),
            AnyRecv::Provided(p) => p.complete(ring, c, verify),
        }
    }
    #[inline]
    fn after_batch(&mut self) {
        if let AnyRecv::Provided(p) = self {
            p.after_batch()
        }
    }
    fn report(&self) -> RecvReport {
        match self {
            AnyRecv::Copy(p) => p.report(),
            AnyRecv::Provided(p) => p.report(),
        }
    }
}
