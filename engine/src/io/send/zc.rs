//! `zc` and `zc-msg`: IORING_OP_SEND_ZC / SENDMSG_ZC from a registered arena, with
//! REPORT_USAGE on every send so each notification says whether the kernel copied after all.
//! A buffer slot belongs to the kernel from submission until its notification.

use io_uring::opcode;
use io_uring::squeue::Flags;

use crate::buf::PayloadArena;
use crate::io::path::{op, PerOp, SendEvent, SendPath};
use crate::ring::uapi::{IORING_NOTIF_USAGE_ZC_COPIED, IORING_SEND_ZC_REPORT_USAGE};
use crate::ring::{cqe_error, slot_token, Completion, FlowFd, Ring};
use crate::verify::PERIOD;
use crate::with_fd;
use ringperf_core::error::Result;
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::latency::LatencyRecorder;
use ringperf_core::report::{SendReport, ZeroCopyReport};

/// Notification latency is timed on one send in this many, so the hot path reads no clock
/// per operation.
pub const LATENCY_SAMPLE_EVERY: u64 = 16;

/// Smallest send that goes out from the registered arena (a fixed buffer). The kernel
/// gives every send from a fixed buffer fragments of its own, at most 17 to a packet, so
/// sends under a page cannot fill a 64 KiB segment and Nagle then holds each partial one
/// until the last is acknowledged: 1 KiB zc sends ran at a sixth of copy. From plain
/// memory the kernel pins the pages per send but merges adjacent sends into one fragment,
/// and a flow's sends are adjacent in its region: 1 KiB sends then run at half of copy.
pub const FIXED_BUFFER_MIN_SEND: usize = 4096;

/// Bytes of stream sends one worker may have awaiting their notifications. A notification
/// comes only when the kernel frees the data, and the kernel coalesces small sends into
/// one segment and holds a lone small one back (Nagle), so a sender that can keep only a
/// couple of small sends unnotified waits tens of ms for each: as much as a socket's
/// send buffer grows to by default (4 MiB) keeps small zero-copy sends from stalling.
pub const STREAM_UNNOTIFIED_BYTES: usize = 4 << 20;

/// Most buffers a worker keeps for zero copy however small its sends are: it bounds the
/// arena and the per-buffer bookkeeping (a few dozen bytes each).
pub const MAX_SLOTS_PER_WORKER: usize = 8192;

/// The stream bytes a flow's region of the arena runs through for `per_flow` sends of up
/// to `max_len` bytes: a multiple of the pattern period, so any stream offset maps to a
/// position with its pattern byte. Saturating, for memory estimates of specs that never
/// passed validation.
pub fn span(max_len: usize, per_flow: usize) -> usize {
    let bytes = per_flow.max(1).saturating_mul(max_len.max(1));
    bytes.checked_next_multiple_of(PERIOD).unwrap_or(bytes)
}

/// Arena bytes of one flow: its span and one send past its end, as
/// [`PayloadArena::slot_len`] sizes it (saturating, like [`span`]).
pub fn arena_bytes_per_flow(max_len: usize, per_flow: usize) -> usize {
    let bytes = span(max_len, per_flow).saturating_add(max_len).saturating_add(PERIOD);
    bytes.checked_next_multiple_of(64).unwrap_or(bytes)
}

/// Bytes of unnotified stream sends of up to `max_len` bytes each of a side's `workers`
/// may keep: [`STREAM_UNNOTIFIED_BYTES`], or less where the memory lock limit would refuse
/// it. As non-root, io_uring charges to RLIMIT_MEMLOCK (8 MiB by default, per user) a
/// registered arena whole, and a send from plain memory by the pages it pins until its
/// notification (two for a send under a page). A process may hold both sides (an embedded
/// server, --bidir): a quarter of the limit, shared by the side's workers, leaves room for
/// the other side.
pub fn stream_unnotified_bytes(workers: usize, max_len: usize) -> usize {
    // SAFETY: geteuid cannot fail and has no memory effects.
    if unsafe { libc::geteuid() } == 0 {
        return STREAM_UNNOTIFIED_BYTES;
    }
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the valid, writable `lim`.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return STREAM_UNNOTIFIED_BYTES;
    }
    let share = usize::try_from(lim.rlim_cur / 4).unwrap_or(usize::MAX) / workers.max(1);
    let sends_bytes = if max_len >= FIXED_BUFFER_MIN_SEND {
        share
    } else {
        (share / (2 * PAGE_SIZE)).saturating_mul(max_len.max(1))
    };
    sends_bytes.min(STREAM_UNNOTIFIED_BYTES)
}

/// The page size the kernel pins by (4 KiB on the machines ringperf runs on; a larger page
/// only makes the memory lock estimate above err low).
const PAGE_SIZE: usize = 4096;

/// Buffers per flow of a worker with `flows` flows sending up to `max_len` bytes in chains
/// of `depth`, which may keep `unnotified_bytes` of sends awaiting notification (0 for
/// request/response, whose sends wait for their peer anyway). Never fewer than one more
/// than the depth, so the next send can start while the last one's notification is on its
/// way; a stream gets enough to cover `unnotified_bytes` shared by its flows, within
/// [`MAX_SLOTS_PER_WORKER`].
pub fn slots_per_flow(max_len: usize, depth: usize, flows: usize, unnotified_bytes: usize) -> usize {
    let floor = depth + 1;
    let flows = flows.max(1);
    let by_bytes = (unnotified_bytes / flows).div_ceil(max_len.max(1));
    by_bytes.min(MAX_SLOTS_PER_WORKER / flows).max(floor)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZcKind {
    Send,
    SendMsg,
}

pub struct ZcSend {
    kind: ZcKind,
    fds: Vec<FlowFd>,
    /// One region per flow, which the flow's stream runs through: consecutive sends read
    /// adjacent memory. The arena is never written after it is filled, so a send reading
    /// bytes that an unnotified one also reads (notifications out of order) changes
    /// nothing either sends.
    arena: PayloadArena,
    /// Bytes of a flow's region its stream runs through; 0 for a per-operation path,
    /// whose arena holds one message per owner (see [`ZcSend::per_op`]).
    span: u64,
    /// Sends name the registered arena (see [`FIXED_BUFFER_MIN_SEND`]).
    fixed: bool,
    /// Sends each flow may have awaiting their notification; a slot is the bookkeeping
    /// of one of them.
    per_flow: usize,
    /// Free slot stacks, `per_flow` entries per flow, `free_len[flow]` of them valid.
    free: Vec<u32>,
    free_len: Vec<usize>,
    /// Bytes the slot's send moved, for the copied/zero-copy byte split.
    slot_bytes: Vec<u32>,
    /// When the slot's send completed, for sampled notification latency (0: not sampled).
    slot_sent_at: Vec<u64>,
    /// sendmsg headers and their iovecs, one per slot; never reallocated.
    msgs: Vec<libc::msghdr>,
    iovs: Vec<libc::iovec>,
    outstanding: usize,
    results: u64,
    zc: ZeroCopyReport,
    latency: LatencyRecorder,
    sends: u64,
    /// Times a flow wanted more sends than it had free buffers.
    buffer_waits: u64,
}

impl ZcSend {
    pub fn new(
        kind: ZcKind,
        ring: &mut Ring,
        fds: &[FlowFd],
        max_len: usize,
        per_flow: usize,
    ) -> Result<ZcSend> {
        let per_flow = per_flow.max(1);
        let arena = PayloadArena::new(fds.len(), span(max_len, per_flow) + max_len)?;
        ZcSend::build(kind, ring, fds, max_len, per_flow, arena)
    }

    /// A path for sockets the workload makes per operation (see [`SendPath::push_on`]):
    /// `owners` buffer owners, owner `o`'s message `headers[o]` then `body_len` bytes of
    /// the pattern (every owner the same pattern with no headers), registered as a fixed
    /// buffer when its sends are long enough; `per_owner` sends of each owner may await
    /// their notification.
    pub fn per_op<const H: usize>(
        kind: ZcKind,
        ring: &mut Ring,
        owners: usize,
        headers: &[[u8; H]],
        body_len: usize,
        per_owner: usize,
    ) -> Result<ZcSend> {
        let arena = PayloadArena::framed(headers, body_len)?;
        let mut path =
            ZcSend::build(kind, ring, &vec![FlowFd::Raw(-1); owners], H + body_len, per_owner, arena)?;
        path.span = 0;
        Ok(path)
    }

    fn build(
        kind: ZcKind,
        ring: &mut Ring,
        fds: &[FlowFd],
        max_len: usize,
        per_flow: usize,
        arena: PayloadArena,
    ) -> Result<ZcSend> {
        let per_flow = per_flow.max(1);
        let slots = fds.len() * per_flow;
        let fixed = max_len >= FIXED_BUFFER_MIN_SEND;
        if fixed {
            arena.register(ring)?;
        }
        let free = (0..fds.len()).flat_map(|_| 0..per_flow as u32).collect();
        // SAFETY: all-zero msghdr and iovec are valid values of these plain C structs.
        let zero_msg: libc::msghdr = unsafe { std::mem::zeroed() };
        let zero_iov = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        Ok(ZcSend {
            kind,
            fds: fds.to_vec(),
            arena,
            span: span(max_len, per_flow) as u64,
            fixed,
            per_flow,
            free,
            free_len: vec![per_flow; fds.len()],
            slot_bytes: vec![0; slots],
            slot_sent_at: vec![0; slots],
            msgs: vec![zero_msg; if kind == ZcKind::SendMsg { slots } else { 0 }],
            iovs: vec![zero_iov; if kind == ZcKind::SendMsg { slots } else { 0 }],
            outstanding: 0,
            results: 0,
            zc: ZeroCopyReport {
                latency_sample_every: LATENCY_SAMPLE_EVERY,
                buffers_per_flow: per_flow as u64,
                fixed_buffers: fixed,
                ..ZeroCopyReport::default()
            },
            latency: LatencyRecorder::new(),
            sends: 0,
            buffer_waits: 0,
        })
    }

    #[inline]
    fn release(&mut self, flow: usize, slot: usize) {
        let local = slot - flow * self.per_flow;
        self.free[flow * self.per_flow + self.free_len[flow]] = local as u32;
        self.free_len[flow] += 1;
        self.outstanding -= 1;
    }
}

impl SendPath for ZcSend {
    #[inline]
    fn fd(&self, flow: usize) -> FlowFd {
        self.fds[flow]
    }

    #[inline]
    fn available(&self, flow: usize) -> usize {
        self.free_len[flow]
    }

    /// The kernel refuses SKIP_SUCCESS on zero-copy sends (-EINVAL, and no notification).
    #[inline]
    fn can_skip_success(&self) -> bool {
        false
    }

    #[inline]
    fn push_on(&mut self, ring: &mut Ring, on: PerOp, offset: u64, len: u32, flags: Flags) -> Result<u32> {
        let PerOp { sock, owner: flow } = on;
        self.free_len[flow] -= 1;
        let slot = flow * self.per_flow + self.free[flow * self.per_flow + self.free_len[flow]] as usize;
        let ptr = if self.span == 0 {
            self.arena.message(flow, offset)
        } else {
            self.arena.at_in_span(flow, offset, self.span)
        };
        let fixed_index = if self.fixed { Some(0) } else { None };
        let ud = slot_token(op::SEND, flow, slot);
        let e = match self.kind {
            ZcKind::Send => with_fd!(sock, |t| opcode::SendZc::new(t, ptr, len)
                .buf_index(fixed_index)
                .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
                .zc_flags(IORING_SEND_ZC_REPORT_USAGE)
                .build()),
            ZcKind::SendMsg => {
                self.iovs[slot] = libc::iovec { iov_base: ptr as *mut _, iov_len: len as usize };
                let msg = &mut self.msgs[slot];
                msg.msg_iov = &mut self.iovs[slot];
                msg.msg_iovlen = 1;
                let msg: *const libc::msghdr = msg;
                with_fd!(sock, |t| opcode::SendMsgZc::new(t, msg)
                    .buf_index(fixed_index)
                    .flags((libc::MSG_WAITALL | libc::MSG_NOSIGNAL) as u32)
                    .ioprio(IORING_SEND_ZC_REPORT_USAGE)
                    .build())
            }
        };
        self.outstanding += 1;
        self.sends += 1;
        self.slot_sent_at[slot] = 0;
        // SAFETY: the arena (registered or not) and the msghdr/iovec slots live as long as
        // this path, the arena is never written after its fill, and the slot's msghdr is
        // not reused before its notification.
        unsafe { ring.push(&e.user_data(ud).flags(flags))? };
        Ok(len)
    }

    #[inline]
    fn complete(&mut self, _ring: &mut Ring, c: &Completion) -> Result<SendEvent> {
        let (flow, slot) = (c.flow(), c.slot());
        if c.notif() {
            self.zc.notifications += 1;
            let bytes = u64::from(self.slot_bytes[slot]);
            if c.result as u32 & IORING_NOTIF_USAGE_ZC_COPIED != 0 {
                self.zc.copied += 1;
                self.zc.bytes_copied += bytes;
            } else {
                self.zc.bytes_zero_copy += bytes;
            }
            let sent_at = self.slot_sent_at[slot];
            if sent_at != 0 {
                self.latency.record(monotonic_ns().saturating_sub(sent_at));
            }
            self.release(flow, slot);
            return Ok(SendEvent::Released { flow });
        }
        if c.result == -libc::ECANCELED {
            self.zc.cancelled += 1;
        } else {
            self.zc.sends += 1;
        }
        self.slot_bytes[slot] = c.result.max(0) as u32;
        if c.more() {
            self.results += 1;
            if self.results.is_multiple_of(LATENCY_SAMPLE_EVERY) {
                self.slot_sent_at[slot] = monotonic_ns();
            }
        } else {
            // No notification will follow: the buffer is ours again now.
            self.release(flow, slot);
        }
        match c.result {
            r if r >= 0 => Ok(SendEvent::Sent { flow, bytes: r as u32 }),
            r if r == -libc::ECANCELED => Ok(SendEvent::Cancelled { flow }),
            r => Err(cqe_error(if self.kind == ZcKind::Send { "send_zc" } else { "sendmsg_zc" }, r)),
        }
    }

    fn outstanding(&self) -> usize {
        self.outstanding
    }

    #[inline]
    fn short_of_buffers(&mut self, _flow: usize) {
        self.buffer_waits += 1;
    }

    fn report(&self) -> SendReport {
        let mut zc = self.zc.clone();
        zc.notification_latency = self.latency.summary();
        zc.buffer_waits = self.buffer_waits;
        SendReport { sends: self.sends, zero_copy: Some(zc), splice: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flows_region_holds_its_sends_and_one_more_at_any_phase() {
        for (len, per_flow) in [(1, 2), (1024, 4096), (128 << 10, 32), (251, 3), (65536, 2)] {
            let s = span(len, per_flow);
            assert!(s >= len * per_flow && s.is_multiple_of(PERIOD), "{len} x {per_flow}: span {s}");
            assert_eq!(arena_bytes_per_flow(len, per_flow), PayloadArena::slot_len(s + len));
        }
    }

    #[test]
    fn small_stream_sends_get_megabytes_of_buffers_and_rr_keeps_the_depth() {
        const B: usize = STREAM_UNNOTIFIED_BYTES;
        // 1 KiB sends on one flow: 4 MiB of them, not the 5 a depth of 4 would give.
        assert_eq!(slots_per_flow(1024, 4, 1, B), 4096);
        // 128 KiB sends: 32 cover 4 MiB.
        assert_eq!(slots_per_flow(128 << 10, 4, 1, B), 32);
        // Flows share the worker's bytes, and never go below the depth + 1.
        assert_eq!(slots_per_flow(1024, 4, 4, B), 1024);
        assert_eq!(slots_per_flow(1 << 20, 16, 8, B), 17);
        // Tiny sends are bounded by the worker's slot cap.
        assert_eq!(slots_per_flow(1, 1, 1, B), MAX_SLOTS_PER_WORKER);
        assert_eq!(slots_per_flow(1, 1, 2, B), MAX_SLOTS_PER_WORKER / 2);
        // A smaller budget (the memory lock limit) gives fewer.
        assert_eq!(slots_per_flow(1024, 4, 1, 1 << 20), 1024);
        // Request/response: one more than the depth.
        assert_eq!(slots_per_flow(1, 1, 1, 0), 2);
    }

    #[test]
    fn the_budget_never_exceeds_the_stream_bytes_and_shrinks_with_workers() {
        for len in [1024, 1 << 20] {
            let one = stream_unnotified_bytes(1, len);
            assert!(one > 0 && one <= STREAM_UNNOTIFIED_BYTES);
            assert!(stream_unnotified_bytes(4, len) <= one);
        }
    }
}
