//! Bulk transfer: the sender keeps one send in flight per flow until the deadline, then
//! half-closes; the receiver reads until every flow reaches EOF.

use std::os::fd::RawFd;

use crate::error::{Error, Result};
use crate::io::{RecvPath, SendPath};
use crate::ring::{cqe_error, token, Ring};
use crate::workload::{op, shutdown_write, FlowCounters};

/// Sends `size`-byte messages on every flow until `deadline_ns` (CLOCK_MONOTONIC), waits
/// for the sends in flight, then half-closes each flow so the receiver sees EOF.
///
/// One send in flight per socket: unlinked parallel sends reorder a TCP stream.
pub fn send<S: SendPath>(
    ring: &mut Ring,
    fds: &[RawFd],
    path: &mut S,
    size: u32,
    deadline_ns: u64,
) -> Result<Vec<FlowCounters>> {
    let mut flows = vec![FlowCounters::default(); fds.len()];
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(deadline_ns, token(op::DEADLINE, 0))?;
    for (i, &fd) in fds.iter().enumerate() {
        // SAFETY: the send path owns the payload and outlives this function's ring use.
        unsafe { ring.push(&path.prepare(fd, size).user_data(token(op::SEND, i)))? };
    }
    let mut in_flight = fds.len();
    let mut stopping = false;
    while !(stopping && in_flight == 0) {
        ring.submit_and_wait(1)?;
        ring.reap(&mut done);
        for c in &done {
            match c.op() {
                op::DEADLINE => stopping = true,
                op::SEND => {
                    if c.result < 0 {
                        return Err(cqe_error("send", c.result));
                    }
                    let i = c.flow();
                    flows[i].bytes_sent += c.result as u64;
                    if stopping {
                        in_flight -= 1;
                    } else {
                        // SAFETY: as above.
                        unsafe { ring.push(&path.prepare(fds[i], size).user_data(c.user_data))? };
                    }
                }
                other => return Err(unexpected(other)),
            }
        }
    }
    for &fd in fds {
        shutdown_write(fd);
    }
    Ok(flows)
}

/// Receives on every flow until each one reaches EOF. `guard_ns` bounds the wait: if the
/// sender never finishes, the test fails instead of hanging.
pub fn receive<R: RecvPath>(
    ring: &mut Ring,
    fds: &[RawFd],
    path: &mut R,
    size: u32,
    guard_ns: u64,
) -> Result<Vec<FlowCounters>> {
    let mut flows = vec![FlowCounters::default(); fds.len()];
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(guard_ns, token(op::GUARD, 0))?;
    for (i, &fd) in fds.iter().enumerate() {
        // SAFETY: the receive path owns the buffer and outlives this function's ring use.
        unsafe { ring.push(&path.prepare(fd, size, false).user_data(token(op::RECV, i)))? };
    }
    let mut open = fds.len();
    while open > 0 {
        ring.submit_and_wait(1)?;
        ring.reap(&mut done);
        for c in &done {
            match c.op() {
                op::GUARD => return Err(peer_stuck()),
                op::RECV => {
                    if c.result < 0 {
                        return Err(cqe_error("recv", c.result));
                    }
                    let i = c.flow();
                    if c.result == 0 {
                        open -= 1;
                    } else {
                        flows[i].bytes_received += c.result as u64;
                        // SAFETY: as above.
                        unsafe { ring.push(&path.prepare(fds[i], size, false).user_data(c.user_data))? };
                    }
                }
                other => return Err(unexpected(other)),
            }
        }
    }
    Ok(flows)
}

pub(crate) fn peer_stuck() -> Error {
    Error::Peer(format!(
        "the peer did not finish within {} s after the end of the test: is it overloaded or stopped?",
        crate::workload::PEER_GRACE_NS / 1_000_000_000
    ))
}

pub(crate) fn unexpected(op: u8) -> Error {
    Error::Protocol(format!("completion with unknown operation kind {op}: this is a bug in ringperf"))
}
