//! Request/response: one transaction in flight per flow. Each transaction is one linked
//! pair of SQEs and one CQE on each side, so it costs one io_uring_enter per side.

use std::os::fd::RawFd;

use io_uring::squeue::Flags;

use crate::error::{Error, Result};
use crate::io::{RecvPath, SendPath};
use crate::measure::clock::monotonic_ns;
use crate::measure::latency::LatencyRecorder;
use crate::ring::{cqe_error, token, Ring};
use crate::workload::stream::{peer_stuck, unexpected};
use crate::workload::{op, FlowCounters};

/// Request and response sizes of one transaction.
#[derive(Clone, Copy, Debug)]
pub struct Transaction {
    pub request: u32,
    pub response: u32,
}

/// The client: send a request, receive the whole response, record the round trip, repeat
/// until `deadline_ns`; transactions in flight at the deadline are completed and counted.
pub fn client<S: SendPath, R: RecvPath>(
    ring: &mut Ring,
    fds: &[RawFd],
    send: &mut S,
    recv: &mut R,
    tx: Transaction,
    deadline_ns: u64,
    latency: &mut LatencyRecorder,
) -> Result<Vec<FlowCounters>> {
    let mut flows = vec![FlowCounters::default(); fds.len()];
    let mut started = vec![0u64; fds.len()];
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(deadline_ns, token(op::DEADLINE, 0))?;
    let now = monotonic_ns();
    for (i, &fd) in fds.iter().enumerate() {
        started[i] = now;
        push_request(ring, send, recv, fd, i, tx)?;
    }
    let mut in_flight = fds.len();
    let mut stopping = false;
    while !(stopping && in_flight == 0) {
        ring.submit_and_wait(1)?;
        ring.reap(&mut done);
        for c in &done {
            match c.op() {
                op::DEADLINE => stopping = true,
                // Sends skip their success CQE, so one arriving means it failed.
                op::SEND => return Err(cqe_error("send request", c.result)),
                op::RECV => {
                    let i = c.flow();
                    if c.result == -libc::ECANCELED {
                        continue; // its send failed; that CQE carries the error
                    }
                    if c.result < 0 {
                        return Err(cqe_error("receive response", c.result));
                    }
                    if c.result as u32 != tx.response {
                        return Err(Error::Peer(format!(
                            "the server closed the connection mid-response ({} of {} bytes)",
                            c.result, tx.response
                        )));
                    }
                    let now = monotonic_ns();
                    latency.record(now - started[i]);
                    let f = &mut flows[i];
                    f.transactions += 1;
                    f.bytes_sent += u64::from(tx.request);
                    f.bytes_received += u64::from(tx.response);
                    if stopping {
                        in_flight -= 1;
                    } else {
                        started[i] = now;
                        push_request(ring, send, recv, fds[i], i, tx)?;
                    }
                }
                other => return Err(unexpected(other)),
            }
        }
    }
    Ok(flows)
}

fn push_request<S: SendPath, R: RecvPath>(
    ring: &mut Ring,
    send: &mut S,
    recv: &mut R,
    fd: RawFd,
    flow: usize,
    tx: Transaction,
) -> Result<()> {
    let s = send
        .prepare(fd, tx.request)
        .user_data(token(op::SEND, flow))
        .flags(Flags::IO_LINK | Flags::SKIP_SUCCESS);
    let r = recv.prepare(fd, tx.response, true).user_data(token(op::RECV, flow));
    // SAFETY: the paths own their buffers and outlive this worker's ring use.
    unsafe {
        ring.push(&s)?;
        ring.push(&r)
    }
}

/// The server: receive a whole request, answer with a response, until the client closes.
/// A transaction counts when its request arrived whole; a failed response aborts the test.
pub fn server<S: SendPath, R: RecvPath>(
    ring: &mut Ring,
    fds: &[RawFd],
    send: &mut S,
    recv: &mut R,
    tx: Transaction,
    guard_ns: u64,
) -> Result<Vec<FlowCounters>> {
    let mut flows = vec![FlowCounters::default(); fds.len()];
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(guard_ns, token(op::GUARD, 0))?;
    for (i, &fd) in fds.iter().enumerate() {
        push_answer(ring, send, recv, fd, i, tx)?;
    }
    // Each flow ends with two CQEs: the short (EOF) receive and its cancelled response.
    let mut endings_left = 2 * fds.len();
    while endings_left > 0 {
        ring.submit_and_wait(1)?;
        ring.reap(&mut done);
        for c in &done {
            let i = c.flow();
            match c.op() {
                op::GUARD => return Err(peer_stuck()),
                op::SEND if c.result == -libc::ECANCELED => endings_left -= 1,
                op::SEND => return Err(cqe_error("send response", c.result)),
                op::RECV => {
                    if c.result < 0 && c.result != -libc::ECONNRESET {
                        return Err(cqe_error("receive request", c.result));
                    }
                    if c.result as u32 == tx.request {
                        let f = &mut flows[i];
                        f.transactions += 1;
                        f.bytes_received += u64::from(tx.request);
                        f.bytes_sent += u64::from(tx.response);
                        // The client sends the next request only after this response
                        // arrived whole, so re-arming now cannot reorder anything.
                        push_answer(ring, send, recv, fds[i], i, tx)?;
                    } else {
                        // EOF (or a reset, or a torn request): the client is done.
                        endings_left -= 1;
                    }
                }
                other => return Err(unexpected(other)),
            }
        }
    }
    Ok(flows)
}

fn push_answer<S: SendPath, R: RecvPath>(
    ring: &mut Ring,
    send: &mut S,
    recv: &mut R,
    fd: RawFd,
    flow: usize,
    tx: Transaction,
) -> Result<()> {
    let r = recv.prepare(fd, tx.request, true).user_data(token(op::RECV, flow)).flags(Flags::IO_LINK);
    let s = send.prepare(fd, tx.response).user_data(token(op::SEND, flow)).flags(Flags::SKIP_SUCCESS);
    // SAFETY: the paths own their buffers and outlive this worker's ring use.
    unsafe {
        ring.push(&r)?;
        ring.push(&s)
    }
}
