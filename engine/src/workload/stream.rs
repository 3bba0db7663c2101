//! Bulk transfer: the sender keeps a chain of linked sends in flight per flow until the
//! deadline, then half-closes; the receiver reads until every flow reaches EOF.

use std::os::fd::RawFd;

use io_uring::squeue::Flags;

use crate::error::Result;
use crate::io::{op, RecvEvent, RecvPath, SendEvent, SendPath};
use crate::measure::intervals::IntervalSampler;
use crate::ring::{token, Ring};
use crate::verify::Verifier;
use crate::workload::pacer::Pacer;
use crate::workload::{
    check_not_early, peer_not_reading, peer_stuck, shutdown_write, unexpected, Ending, FlowCounters,
    PEER_GRACE_NS,
};

/// How long a wait for a whole chain lasts before it settles for the completions that
/// have come (the kernel's min-wait, counted from the start of the wait): long enough for
/// a chain of large sends, short next to the peer guard.
const CHAIN_WAIT_BOUND_US: u32 = 10_000;

/// Sends `size`-byte messages on every flow until `deadline_ns` (CLOCK_MONOTONIC), waits
/// for the sends in flight and for every zero-copy buffer to come back, then half-closes
/// each flow so the receiver sees EOF.
///
/// Each flow has one chain of up to `depth` sends in flight: linked with MSG_WAITALL they
/// keep the stream in order; a new chain starts only when the last one has finished.
/// Sends still blocked PEER_GRACE_NS after the deadline fail the test (the peer hung);
/// an ABORT completion ends it at once. Every send takes its flow's pacing tokens first
/// (when pacing is on) and a flow that finds none waits for the next tick. `flows` is
/// kept up to date as sends complete, so a run that fails or is stopped still reports
/// what moved, and the interval sampler reads the same counters.
#[allow(clippy::too_many_arguments)]
pub fn send<S: SendPath>(
    ring: &mut Ring,
    socks: &[RawFd],
    path: &mut S,
    (size, depth): (u32, usize),
    deadline_ns: u64,
    sampler: &mut IntervalSampler,
    pacer: &mut Pacer,
    flows: &mut [FlowCounters],
) -> Result<Ending> {
    let n = socks.len();
    let mut offsets = vec![0u64; n];
    let mut in_flight = vec![0usize; n];
    let mut total_in_flight = 0usize;
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(deadline_ns, token(op::DEADLINE, 0))?;
    ring.push_deadline(deadline_ns + PEER_GRACE_NS, token(op::GUARD, 0))?;
    pacer.start(ring)?;
    let mut refill = |ring: &mut Ring,
                      path: &mut S,
                      pacer: &mut Pacer,
                      f: usize,
                      in_flight: &mut [usize],
                      total: &mut usize| {
        // Count the sends the pacer allows first, so the chain's last send is known and
        // carries no IO_LINK.
        let free = path.available(f);
        if free < depth {
            path.short_of_buffers(f);
        }
        let room = depth.min(free);
        let mut k = 0;
        while k < room && pacer.allow(f, size) {
            k += 1;
        }
        for i in 1..=k {
            let flags = if i < k { Flags::IO_LINK } else { Flags::empty() };
            offsets[f] += u64::from(path.push(ring, f, offsets[f], size, flags)?);
            in_flight[f] += 1;
            *total += 1;
        }
        Ok::<(), crate::error::Error>(())
    };
    for f in 0..n {
        refill(ring, path, pacer, f, &mut in_flight, &mut total_in_flight)?;
    }
    let mut stopping = false;
    while !(stopping && total_in_flight == 0 && path.outstanding() == 0) {
        // No flow can refill before its whole chain is back, so a worker whose every flow
        // has a chain out waits for the shortest one (bounded, so a guard or a stop still
        // gets through). Zero-copy notifications count toward the wait too: they come
        // anyway, and each one may be what frees a buffer.
        let chain = path.chain_cqes(in_flight.iter().copied().min().unwrap_or(0));
        if chain > 1 && !pacer.enabled() {
            ring.submit_and_wait_bounded(chain, CHAIN_WAIT_BOUND_US)?;
        } else {
            ring.submit_and_wait()?;
        }
        ring.reap(&mut done);
        for c in &done {
            let flow = match c.op() {
                op::DEADLINE => {
                    stopping = true;
                    continue;
                }
                op::GUARD => return Err(peer_not_reading()),
                // The caller closes the sockets once the peer has been told why.
                op::ABORT => return Ok(Ending::Aborted),
                op::INTERVAL => {
                    sampler.tick(flows);
                    continue;
                }
                op::PACE => {
                    pacer.tick();
                    for f in 0..n {
                        if pacer.take_waiting(f) && !stopping && in_flight[f] == 0 {
                            refill(ring, path, pacer, f, &mut in_flight, &mut total_in_flight)?;
                        }
                    }
                    continue;
                }
                op::SEND | op::SPLICE_IN => match path.complete(ring, c)? {
                    SendEvent::Sent { flow, bytes } => {
                        flows[flow].bytes_sent += u64::from(bytes);
                        in_flight[flow] -= 1;
                        total_in_flight -= 1;
                        flow
                    }
                    SendEvent::Cancelled { flow } => {
                        in_flight[flow] -= 1;
                        total_in_flight -= 1;
                        flow
                    }
                    SendEvent::Chain { flow, sent, bytes, cancelled } => {
                        flows[flow].bytes_sent += bytes;
                        let ended = (sent + cancelled) as usize;
                        in_flight[flow] -= ended;
                        total_in_flight -= ended;
                        flow
                    }
                    SendEvent::Released { flow } => flow,
                    SendEvent::Nothing => continue,
                },
                other => return Err(unexpected(other)),
            };
            if !stopping && in_flight[flow] == 0 {
                refill(ring, path, pacer, flow, &mut in_flight, &mut total_in_flight)?;
            }
        }
    }
    for &fd in socks {
        shutdown_write(fd);
    }
    Ok(Ending::Completed)
}

/// Receives on every flow until each one reaches EOF. `guard_ns` bounds the wait: if the
/// sender never finishes, the test fails instead of hanging; EOF well before `deadline_ns`
/// means the sender stopped early, and fails the test too. An ABORT completion ends it at once.
/// With a `police` pacer that is on (one-shot receive engines only), a flow that overdraws
/// its bucket is not re-armed until a tick refills it: the sender is held to the rate by
/// TCP's window. Policing ends with the window.
#[allow(clippy::too_many_arguments)]
pub fn receive<R: RecvPath>(
    ring: &mut Ring,
    path: &mut R,
    size: u32,
    (deadline_ns, guard_ns): (u64, u64),
    verify: &mut Verifier,
    sampler: &mut IntervalSampler,
    police: &mut Pacer,
    flows: &mut [FlowCounters],
) -> Result<Ending> {
    let nflows = flows.len();
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(guard_ns, token(op::GUARD, 0))?;
    // A multishot receive cannot be held back; limits refuse the combination.
    let mut policing = police.enabled() && !path.multishot();
    if policing {
        police.start(ring)?;
        // Policing ends with the window: what is still queued then is read at full speed.
        ring.push_deadline(deadline_ns, token(op::DEADLINE, 0))?;
    }
    // Receives a flow keeps linked in flight (a policed flow takes one at a time).
    let depth = if policing || path.multishot() { 1 } else { path.chain().max(1) };
    path.note_chain(depth);
    let mut armed = vec![0usize; nflows];
    let mut ended = vec![false; nflows];
    let arm = |ring: &mut Ring, path: &mut R, armed: &mut [usize], f: usize| -> Result<()> {
        for i in 1..=depth {
            let link = if i < depth { Flags::IO_LINK } else { Flags::empty() };
            path.arm(ring, f, size, false, link)?;
        }
        armed[f] = depth;
        Ok(())
    };
    for f in 0..nflows {
        arm(ring, path, &mut armed, f)?;
    }
    let mut open = nflows;
    while open > 0 {
        // A flow re-arms only once its whole chain is back; wait for the shortest chain
        // (bounded, so the guard or a stop still gets through).
        let chain = if depth > 1 { armed.iter().copied().min().unwrap_or(0) } else { 0 };
        if chain > 1 {
            ring.submit_and_wait_bounded(chain, CHAIN_WAIT_BOUND_US)?;
        } else {
            ring.submit_and_wait()?;
        }
        ring.reap(&mut done);
        for c in &done {
            match c.op() {
                op::GUARD => return Err(peer_stuck()),
                op::ABORT => return Ok(Ending::Aborted),
                op::INTERVAL => sampler.tick(flows),
                op::DEADLINE => {
                    policing = false;
                    for f in 0..nflows {
                        if police.take_waiting(f) {
                            arm(ring, path, &mut armed, f)?;
                        }
                    }
                }
                op::PACE => {
                    if policing {
                        police.tick();
                        for f in 0..nflows {
                            if police.release(f) {
                                arm(ring, path, &mut armed, f)?;
                            }
                        }
                    }
                }
                op::RECV => match path.complete(ring, c, verify)? {
                    RecvEvent::Data { flow, bytes } => {
                        flows[flow].bytes_received += u64::from(bytes);
                        // Over its budget, a flow is not re-armed until a tick refills it.
                        let within = !policing || police.charge(flow, bytes);
                        if !path.multishot() {
                            armed[flow] = armed[flow].saturating_sub(1);
                            if armed[flow] == 0 && within {
                                arm(ring, path, &mut armed, flow)?;
                            }
                        }
                    }
                    RecvEvent::Cancelled { flow } => {
                        // Linked behind a receive that came up short (the last bytes before
                        // EOF): once the chain is back, a new one finds the EOF.
                        armed[flow] = armed[flow].saturating_sub(1);
                        if armed[flow] == 0 && !ended[flow] {
                            arm(ring, path, &mut armed, flow)?;
                        }
                    }
                    RecvEvent::Eof { flow } => {
                        check_not_early(deadline_ns)?;
                        armed[flow] = armed[flow].saturating_sub(1);
                        ended[flow] = true;
                        open -= 1;
                    }
                    RecvEvent::Nothing => {}
                },
                other => return Err(unexpected(other)),
            }
        }
        path.after_batch();
    }
    Ok(Ending::Completed)
}
