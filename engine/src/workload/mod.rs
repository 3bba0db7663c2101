//! Workloads: state machines over a worker's flows, driving its send and receive paths.

pub mod crr;
pub mod pacer;
pub mod rr;
pub mod sequence;
pub mod stream;
pub mod udp_rr;
pub mod udp_stream;

use crate::error::Error;

/// Per-flow totals a workload returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub transactions: u64,
}

/// How long after its own deadline a side waits for the peer to finish before it gives up.
pub const PEER_GRACE_NS: u64 = 10_000_000_000;

pub(crate) fn shutdown_write(fd: std::os::fd::RawFd) {
    // SAFETY: plain syscall on a descriptor this worker owns; failure (peer gone) is harmless.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}

/// A peer that closes this long or more before the deadline stopped early (killed, or
/// gave up); closing later is the normal end, allowing for the control message's delay.
pub const EARLY_CLOSE_MARGIN_NS: u64 = 250_000_000;

/// Fails if a flow reached EOF well before `deadline_ns`: the peer stopped mid-test.
pub(crate) fn check_not_early(deadline_ns: u64) -> Result<(), Error> {
    let now = crate::measure::clock::monotonic_ns();
    if now + EARLY_CLOSE_MARGIN_NS < deadline_ns {
        return Err(Error::Peer(format!(
            "the peer closed a data connection {:.2} s before the end of the test: was it stopped or killed?",
            (deadline_ns - now) as f64 / 1e9
        )));
    }
    Ok(())
}

pub(crate) fn peer_stuck() -> Error {
    Error::Peer(format!(
        "the peer did not finish within {} s after the end of the test: is it overloaded or stopped?",
        PEER_GRACE_NS / 1_000_000_000
    ))
}

pub(crate) fn unexpected(op: u8) -> Error {
    Error::Protocol(format!("completion with unknown operation kind {op}: this is a bug in ringperf"))
}
