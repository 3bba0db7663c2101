//! What the workloads share about a flow's end: the grace a peer gets, closing a write
//! side, the end-of-test watch, and the errors when a peer breaks the pattern.

use ringperf_core::error::Error;

/// Server side of a test the client ends (crr, counted UDP): completes with op STOP once
/// the session writes `fd`, the eventfd it writes when the client says its flows are done.
pub(crate) fn watch_flows_done(
    ring: &mut crate::ring::Ring,
    fd: std::os::fd::RawFd,
) -> ringperf_core::error::Result<()> {
    use io_uring::{opcode, types};
    let poll = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
        .build()
        .user_data(crate::ring::token(crate::io::op::STOP, 0));
    // SAFETY: PollAdd points at no memory; the eventfd outlives the ring's use of it.
    unsafe { ring.push(&poll) }
}

/// How long after its own deadline a side waits for the peer to finish before it gives up:
/// the manual's grace (docs/commands.md). Every ring role has a guard at the deadline plus
/// this (the driver arms it), every classic loop that waits for its peer too (its watcher's
/// guard, or a UDP receiver's shorter drain; UDP sends never wait), and the client's wait for
/// the server's report ends with it, so a peer that stops answering ends any run within it; a
/// server session is cut soon after it (`control::reclaim`).
pub const PEER_GRACE_NS: u64 = 10_000_000_000;

pub(crate) fn shutdown_write(fd: std::os::fd::RawFd) {
    // SAFETY: plain syscall on a descriptor this worker owns; failure (peer gone) is harmless.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}

/// A peer that closes this long or more before the deadline stopped early (killed, or
/// gave up); closing later is the normal end. The margin covers the skew between the two
/// windows: the server opens its window when its session thread reads Go, which with 32
/// sessions on 2 CPUs was seen 0.4 s after the client opened its own (250 ms failed
/// whole runs there). A killed peer is caught sooner by the stop watch on the control
/// connection, so this only has to catch a sender that quit on purpose.
pub const EARLY_CLOSE_MARGIN_NS: u64 = 1_000_000_000;

/// Fails if a flow reached EOF well before `deadline_ns`: the peer stopped mid-test.
pub(crate) fn check_not_early(deadline_ns: u64) -> Result<(), Error> {
    let now = ringperf_core::measure::clock::monotonic_ns();
    if now + EARLY_CLOSE_MARGIN_NS < deadline_ns {
        return Err(Error::Peer(format!(
            "the peer closed a data connection {:.2} s before the end of the test: was it stopped or killed?",
            (deadline_ns - now) as f64 / 1e9
        )));
    }
    Ok(())
}

/// A sender whose sends stay unfinished this long after the deadline has a peer that
/// stopped reading (hung or gone without a reset).
pub(crate) fn peer_not_reading() -> Error {
    Error::Peer(format!(
        "the peer stopped reading: sends were still blocked {} s after the end of the test (is it hung?)",
        PEER_GRACE_NS / 1_000_000_000
    ))
}

/// Cancels the standing receive of each of `flows` flows (token RECV, flow); each
/// cancellation's own completion comes back as CANCEL.
pub(crate) fn cancel_receives(
    ring: &mut crate::ring::Ring,
    flows: usize,
) -> ringperf_core::error::Result<()> {
    use crate::io::op;
    use crate::ring::token;
    for f in 0..flows {
        let e =
            io_uring::opcode::AsyncCancel::new(token(op::RECV, f)).build().user_data(token(op::CANCEL, f));
        // SAFETY: AsyncCancel points at no memory.
        unsafe { ring.push(&e)? };
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

/// A TCP workload got an event only a datagram send path makes.
pub(crate) fn datagram_on_tcp() -> Error {
    Error::Protocol("a TCP workload drove a datagram send path: this is a bug in ringperf".into())
}
