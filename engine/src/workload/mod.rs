//! Workloads: state machines over a worker's flows, generic over the send and receive paths.

pub mod rr;
pub mod stream;

/// Per-flow totals a workload returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub transactions: u64,
}

/// Operation kinds in the low byte of user_data (see [`crate::ring::token`]).
pub(crate) mod op {
    /// The end of the measurement window.
    pub const DEADLINE: u8 = 1;
    /// A safety net for the side that waits for its peer: fires if the peer never finishes.
    pub const GUARD: u8 = 2;
    pub const SEND: u8 = 3;
    pub const RECV: u8 = 4;
}

/// How long after its own deadline a side waits for the peer to finish before it gives up.
pub const PEER_GRACE_NS: u64 = 10_000_000_000;

pub(crate) fn shutdown_write(fd: std::os::fd::RawFd) {
    // SAFETY: plain syscall on a descriptor this worker owns; failure (peer gone) is harmless.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}
