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
use crate::workload::{check_not_early, peer_stuck, shutdown_write, unexpected, FlowCounters};

/// Sends `size`-byte messages on every flow until `deadline_ns` (CLOCK_MONOTONIC), waits
/// for the sends in flight and for every zero-copy buffer to come back, then half-closes
/// each flow so the receiver sees EOF.
///
/// Each flow has one chain of up to `depth` sends in flight: linked with MSG_WAITALL they
/// keep the stream in order; a new chain starts only when the last one has finished.
#[allow(clippy::too_many_arguments)]
pub fn send<S: SendPath>(
    ring: &mut Ring,
    socks: &[RawFd],
    path: &mut S,
    size: u32,
    depth: usize,
    deadline_ns: u64,
    sampler: &mut IntervalSampler,
    pacer: &mut Pacer,
) -> Result<Vec<FlowCounters>> {
    let n = socks.len();
    let mut flows = vec![FlowCounters::default(); n];
    let mut offsets = vec![0u64; n];
    let mut in_flight = vec![0usize; n];
    let mut total_in_flight = 0usize;
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(deadline_ns, token(op::DEADLINE, 0))?;
    pacer.start(ring)?;
    let mut refill = |ring: &mut Ring,
                      path: &mut S,
                      pacer: &mut Pacer,
                      f: usize,
                      in_flight: &mut [usize],
                      total: &mut usize| {
        let k = depth.min(path.available(f));
        let mut pushed = 0;
        while pushed < k && pacer.allow(f, size) {
            pushed += 1;
            let flags = if pushed < k { Flags::IO_LINK } else { Flags::empty() };
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
        ring.submit_and_wait()?;
        ring.reap(&mut done);
        for c in &done {
            let flow = match c.op() {
                op::DEADLINE => {
                    stopping = true;
                    continue;
                }
                op::INTERVAL => {
                    sampler.tick(&flows);
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
    Ok(flows)
}

/// Receives on every flow until each one reaches EOF. `guard_ns` bounds the wait: if the
/// sender never finishes, the test fails instead of hanging; EOF well before `deadline_ns`
/// means the sender stopped early, and fails the test too.
pub fn receive<R: RecvPath>(
    ring: &mut Ring,
    nflows: usize,
    path: &mut R,
    size: u32,
    (deadline_ns, guard_ns): (u64, u64),
    verify: &mut Verifier,
    sampler: &mut IntervalSampler,
) -> Result<Vec<FlowCounters>> {
    let mut flows = vec![FlowCounters::default(); nflows];
    let mut done = Vec::with_capacity(ring.cq_entries());
    ring.push_deadline(guard_ns, token(op::GUARD, 0))?;
    for f in 0..nflows {
        path.arm(ring, f, size, false, Flags::empty())?;
    }
    let mut open = nflows;
    while open > 0 {
        ring.submit_and_wait()?;
        ring.reap(&mut done);
        for c in &done {
            match c.op() {
                op::GUARD => return Err(peer_stuck()),
                op::INTERVAL => sampler.tick(&flows),
                op::RECV => match path.complete(ring, c, verify)? {
                    RecvEvent::Data { flow, bytes } => {
                        flows[flow].bytes_received += u64::from(bytes);
                        if !path.multishot() {
                            path.arm(ring, flow, size, false, Flags::empty())?;
                        }
                    }
                    RecvEvent::Eof { .. } => {
                        check_not_early(deadline_ns)?;
                        open -= 1;
                    }
                    RecvEvent::Nothing => {}
                },
                other => return Err(unexpected(other)),
            }
        }
        path.after_batch();
    }
    Ok(flows)
}
