//! `splice`: file -> pipe -> socket with two linked IORING_OP_SPLICE per send, the
//! TCP_SENDFILE of netperf. The source is the user's file (client side only) or a memfd of
//! patterned payload. Pipes are sized to the send; a short splice leaves bytes in the
//! pipe, and those go out first when the rest of the chain is queued again.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use io_uring::squeue::Flags;
use io_uring::{opcode, types};

use crate::io::path::{op, PerOp, SendEvent, SendPath};
use crate::ring::{cqe_error, slot_token, Completion, FlowFd, Ring};
use crate::verify::{fill_payload, PERIOD};
use crate::with_fd;
use ringperf_core::error::{Error, Result};
use ringperf_core::report::{SendReport, SpliceReport};

/// One send of a chain: where it reads the source, how long it is, and how much of it
/// reached the socket.
#[derive(Clone, Copy, Debug)]
struct Pending {
    pos: u64,
    want: u32,
    done: u32,
}

/// One SQE of a chain; the token's slot is its index in the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// file -> pipe: `len` bytes from source position `pos`.
    In { pos: u64, len: u32 },
    /// pipe -> socket: `len` bytes of send `send`.
    Out { send: usize, len: u32 },
}

impl Step {
    fn len(self) -> u32 {
        match self {
            Step::In { len, .. } | Step::Out { len, .. } => len,
        }
    }
}

struct FlowPipe {
    read: OwnedFd,
    write: OwnedFd,
    /// Bytes spliced into the pipe and not yet out to the socket. They always belong to
    /// the chain's first unfinished send: an In runs only after the Out before it drained
    /// the pipe.
    in_pipe: u32,
    /// The sends of the chain in flight, oldest first (capacity: the depth).
    sends: Vec<Pending>,
    /// The chain's SQEs in submission order (capacity: per send at most one file -> pipe
    /// and two pipe -> socket splices).
    steps: Vec<Step>,
    /// Position in a user file (memfd sources derive it from the stream offset).
    file_pos: u64,
}

impl FlowPipe {
    fn idle(&self) -> bool {
        self.steps.is_empty() && self.sends.is_empty()
    }

    /// Applies a step's result to the pipe and the sends.
    fn apply(&mut self, step: Step, moved: u32) {
        match step {
            Step::In { .. } => self.in_pipe += moved,
            Step::Out { send, .. } => {
                self.in_pipe -= moved.min(self.in_pipe);
                self.sends[send].done += moved;
            }
        }
    }

    /// Sends that moved anything, the bytes of all, and the sends that never started.
    fn tally(&self) -> (u32, u64, u32) {
        let sent = self.sends.iter().filter(|s| s.done > 0).count() as u32;
        let bytes = self.sends.iter().map(|s| u64::from(s.done)).sum();
        (sent, bytes, self.sends.len() as u32 - sent)
    }
}

/// Every send of a flow is a file -> pipe splice linked to a pipe -> socket splice, and
/// the sends of one refill are linked into one chain, so io-wq runs the whole chain on
/// one worker, in order. All SQEs but the chain's last skip their CQE on success: a
/// chain that goes through posts one CQE; a step that comes up short posts its own and
/// ends the chain (the kernel skips the cancelled steps' CQEs too), and the rest is
/// queued again from where it stopped.
pub struct SpliceSend {
    fds: Vec<FlowFd>,
    source: File,
    /// Length of the patterned period region of a memfd source; `None` for a user file.
    memfd_span: Option<u64>,
    /// A per-operation path (see [`SpliceSend::per_op`]): bytes from one owner's message
    /// to the next in the memfd (0: every owner sends the same message).
    message_stride: Option<u64>,
    file_len: u64,
    depth: usize,
    pipes: Vec<FlowPipe>,
    report: SpliceReport,
    sends: u64,
}

impl SpliceSend {
    /// A path for sockets the workload makes per operation (see [`SendPath::push_on`]):
    /// `owners` buffer owners, each with its own pipe; owner `o`'s message is `headers[o]`
    /// then `body_len` bytes of the pattern (with no headers, every owner the same
    /// pattern), read from a memfd.
    pub fn per_op<const H: usize>(owners: usize, headers: &[[u8; H]], body_len: usize) -> Result<SpliceSend> {
        let len = H + body_len;
        let stride = if headers.is_empty() { 0 } else { len.next_multiple_of(64) };
        let messages = headers.len().max(1);
        let mut bytes = vec![0u8; stride * (messages - 1) + len];
        for i in 0..messages {
            let msg = &mut bytes[i * stride..i * stride + len];
            let at = match headers.get(i) {
                Some(h) => {
                    msg[..H].copy_from_slice(h);
                    H
                }
                None => 0,
            };
            fill_payload(&mut msg[at..]);
        }
        let source = memfd_with(&bytes)?;
        let mut path =
            SpliceSend::build(&vec![FlowFd::Raw(-1); owners], len, 1, source, None, bytes.len() as u64)?;
        path.message_stride = Some(stride as u64);
        // The memfd is ringperf's own payload, not a user's file.
        path.report.file_bytes = None;
        path.report.file_smaller_than_send = None;
        Ok(path)
    }

    pub fn new(fds: &[FlowFd], max_len: usize, depth: usize, file: Option<File>) -> Result<SpliceSend> {
        let (source, memfd_span, file_len) = match file {
            Some(f) => {
                let len =
                    f.metadata().map_err(|e| Error::io("reading the size of the payload file", e))?.len();
                if len == 0 {
                    return Err(Error::Usage(
                        "the payload file is empty: give a file with payload in it".into(),
                    ));
                }
                (f, None, len)
            }
            None => {
                let (f, span) = patterned_memfd(max_len)?;
                let len = f.metadata().map_err(|e| Error::io("sizing the payload memfd", e))?.len();
                (f, Some(span), len)
            }
        };
        SpliceSend::build(fds, max_len, depth, source, memfd_span, file_len)
    }

    fn build(
        fds: &[FlowFd],
        max_len: usize,
        depth: usize,
        source: File,
        memfd_span: Option<u64>,
        file_len: u64,
    ) -> Result<SpliceSend> {
        let depth = depth.clamp(1, 64);
        let mut pipe_size = usize::MAX;
        let pipes = fds
            .iter()
            .map(|_| {
                let (read, write) = pipe()?;
                // A pipe that holds a whole chain lets one file -> pipe splice feed all its
                // sends (a send that starts mid-page spans one page more); the kernel caps
                // it at /proc/sys/fs/pipe-max-size, and longer sends come up short.
                let want = (max_len * depth + 4096).next_multiple_of(4096).max(65536);
                let size = size_pipe(write.as_raw_fd(), want);
                pipe_size = pipe_size.min(size);
                Ok(FlowPipe {
                    read,
                    write,
                    in_pipe: 0,
                    sends: Vec::with_capacity(depth),
                    steps: Vec::with_capacity(MAX_STEPS.min(3 * depth + 1)),
                    file_pos: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SpliceSend {
            fds: fds.to_vec(),
            source,
            memfd_span,
            message_stride: None,
            file_len,
            depth,
            pipes,
            report: SpliceReport {
                pipe_size: pipe_size as u64,
                chain_depth: depth as u32,
                file_bytes: memfd_span.is_none().then_some(file_len),
                file_smaller_than_send: (memfd_span.is_none() && file_len < max_len as u64)
                    .then_some(max_len as u64),
                ..SpliceReport::default()
            },
            sends: 0,
        })
    }

    /// Queues one step of `flow`'s chain. `last` ends the chain: no IO_LINK, and the CQE is
    /// kept; `extra` goes on the last step only (the caller's own flags).
    fn push_step(
        &mut self,
        ring: &mut Ring,
        flow: usize,
        step: Step,
        last: bool,
        extra: Flags,
    ) -> Result<()> {
        let p = &mut self.pipes[flow];
        let slot = p.steps.len();
        p.steps.push(step);
        let flags = if last { extra } else { Flags::IO_LINK | Flags::SKIP_SUCCESS };
        let e = match step {
            Step::In { pos, len } => opcode::Splice::new(
                types::Fd(self.source.as_raw_fd()),
                pos as i64,
                types::Fd(p.write.as_raw_fd()),
                -1,
                len,
            )
            .flags(libc::SPLICE_F_MOVE)
            .build()
            .user_data(slot_token(op::SPLICE_IN, flow, slot)),
            Step::Out { len, .. } => {
                let pipe_r = p.read.as_raw_fd();
                let e = with_fd!(self.fds[flow], |t| opcode::Splice::new(types::Fd(pipe_r), -1, t, -1, len)
                    .flags(libc::SPLICE_F_MOVE)
                    .build());
                e.user_data(slot_token(op::SEND, flow, slot))
            }
        };
        // SAFETY: the source file, the pipe and the socket live as long as this path.
        unsafe { ring.push(&e.flags(flags)) }
    }

    /// Queues the chain that moves what `flow` still owes: first the bytes already in the
    /// pipe, then the rest of the sends, each contiguous run of source that fits the pipe
    /// read by one file -> pipe splice and written by one pipe -> socket splice per send.
    /// `extra` goes on the chain's last SQE.
    fn queue_chain(&mut self, ring: &mut Ring, flow: usize, extra: Flags) -> Result<()> {
        let cap = self.report.pipe_size.saturating_sub(4096).max(4096) as u32;
        let p = &mut self.pipes[flow];
        p.steps.clear();
        let mut steps = [Step::In { pos: 0, len: 0 }; MAX_STEPS];
        let (n, leftovers) = plan_chain(&p.sends, p.in_pipe, cap, &mut steps);
        self.report.leftover_splices += leftovers;
        for (k, &step) in steps[..n].iter().enumerate() {
            let last = k + 1 == n;
            self.push_step(ring, flow, step, last, if last { extra } else { Flags::empty() })?;
        }
        Ok(())
    }

    /// The chain ended: reports its sends and makes the flow idle.
    fn finish(&mut self, flow: usize) -> SendEvent {
        let p = &mut self.pipes[flow];
        let (sent, bytes, cancelled) = p.tally();
        p.sends.clear();
        p.steps.clear();
        SendEvent::Chain { flow, sent, bytes, cancelled }
    }
}

impl SendPath for SpliceSend {
    #[inline]
    fn fd(&self, flow: usize) -> FlowFd {
        self.fds[flow]
    }

    #[inline]
    fn available(&self, flow: usize) -> usize {
        if self.pipes[flow].idle() {
            self.depth
        } else {
            0
        }
    }

    /// A short splice must be seen to be handled; the path skips CQEs inside its own
    /// chains instead.
    #[inline]
    fn can_skip_success(&self) -> bool {
        false
    }

    /// A chain that goes through posts one CQE, from its last step.
    fn chain_cqes(&self, _sends: usize) -> usize {
        1
    }

    /// Splices run on io-wq, and a receive linked behind them stalled on this kernel, so
    /// request/response over splice keeps its receive armed on its own.
    fn can_chain(&self) -> bool {
        false
    }

    fn push(&mut self, ring: &mut Ring, flow: usize, offset: u64, len: u32, flags: Flags) -> Result<u32> {
        let (pos, len) = match (self.message_stride, self.memfd_span) {
            (Some(stride), _) => (flow as u64 * stride + offset, len),
            // The memfd holds the pattern for span + max_len bytes, and span is a multiple
            // of the period: any offset maps to a position with the right pattern phase.
            (None, Some(span)) => (offset % span, len),
            (None, None) => {
                let p = &mut self.pipes[flow];
                if p.file_pos >= self.file_len {
                    p.file_pos = 0;
                }
                let n = (self.file_len - p.file_pos).min(u64::from(len)) as u32;
                let pos = p.file_pos;
                p.file_pos += u64::from(n);
                (pos, n)
            }
        };
        let p = &mut self.pipes[flow];
        if p.sends.len() == p.sends.capacity() {
            return Err(Error::Protocol(format!(
                "splice: more than {} sends linked on one flow: this is a bug in ringperf",
                self.depth
            )));
        }
        p.sends.push(Pending { pos, want: len, done: 0 });
        self.sends += 1;
        // The chain is queued whole once its last send is known (the one without IO_LINK),
        // so one file -> pipe splice can feed several sends.
        if !flags.contains(Flags::IO_LINK) {
            self.queue_chain(ring, flow, flags)?;
        }
        Ok(len)
    }

    /// The owner's pipe carries it: a short splice is queued again on `sock` too.
    fn push_on(&mut self, ring: &mut Ring, on: PerOp, offset: u64, len: u32, flags: Flags) -> Result<u32> {
        self.fds[on.owner] = on.sock;
        self.push(ring, on.owner, offset, len, flags)
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion) -> Result<SendEvent> {
        let flow = c.flow();
        let p = &mut self.pipes[flow];
        let at = c.slot();
        let Some(&step) = p.steps.get(at) else {
            return Err(Error::Protocol(format!(
                "splice: a completion for step {at} of a {}-step chain: this is a bug in ringperf",
                p.steps.len()
            )));
        };
        let last = at + 1 == p.steps.len();
        let r = c.result;
        if r < 0 && r != -libc::ECANCELED {
            let what = if c.op() == op::SPLICE_IN { "splice file -> pipe" } else { "splice pipe -> socket" };
            return Err(cqe_error(what, r));
        }
        // Every step before this one went through: only a failure or the last step posts.
        for k in 0..at {
            let s = p.steps[k];
            p.apply(s, s.len());
        }
        let moved = r.max(0) as u32;
        p.apply(step, moved);
        if last && moved == step.len() {
            return Ok(self.finish(flow));
        }
        match step {
            Step::In { .. } => self.report.short_in += 1,
            Step::Out { .. } => self.report.short_out += 1,
        }
        // Cancelled, or the source ran dry: nothing more can move.
        let dry = r == -libc::ECANCELED || (moved == 0 && matches!(step, Step::In { .. }));
        if dry && self.pipes[flow].in_pipe == 0 {
            return Ok(self.finish(flow));
        }
        if dry {
            // Only what is in the pipe can still go out: every send shrinks to what it has
            // sent plus its share of the pipe (a send with neither ends up cancelled).
            let p = &mut self.pipes[flow];
            let mut piped = p.in_pipe;
            for s in p.sends.iter_mut() {
                let share = (s.want - s.done).min(piped);
                piped -= share;
                s.want = s.done + share;
            }
        }
        self.queue_chain(ring, flow, Flags::empty())?;
        if self.pipes[flow].steps.is_empty() {
            // Nothing was left to move after all: no CQE will come, so end the chain here.
            return Ok(self.finish(flow));
        }
        Ok(SendEvent::Nothing)
    }

    fn outstanding(&self) -> usize {
        0
    }

    fn report(&self) -> SendReport {
        SendReport { sends: self.sends, zero_copy: None, splice: Some(self.report.clone()) }
    }
}

/// The most steps a chain of 64 sends can need: per send one file -> pipe splice and two
/// pipe -> socket splices (one drains what an earlier chain left in the pipe).
const MAX_STEPS: usize = 3 * 64 + 1;

/// Writes into `steps` the chain that moves what `sends` still owe, given `piped` bytes
/// already in the pipe (they continue the first unfinished send); a run of contiguous
/// source up to `cap` bytes is read by one file -> pipe splice. Returns the step count and
/// how many of the steps drain leftovers.
fn plan_chain(sends: &[Pending], piped: u32, cap: u32, steps: &mut [Step; MAX_STEPS]) -> (usize, u64) {
    let mut n = 0;
    let mut leftovers = 0;
    let mut i = sends.iter().position(|s| s.done < s.want).unwrap_or(sends.len());
    let mut at = sends.get(i).map_or(0, |s| s.done);
    let mut piped = piped;
    while piped > 0 && i < sends.len() {
        let take = (sends[i].want - at).min(piped);
        steps[n] = Step::Out { send: i, len: take };
        n += 1;
        leftovers += 1;
        piped -= take;
        at += take;
        if at == sends[i].want {
            i += 1;
            at = 0;
        }
    }
    while i < sends.len() {
        let start = sends[i].pos + u64::from(at);
        let in_at = n;
        n += 1;
        let mut len = 0u32;
        while i < sends.len() {
            let seg = sends[i].want - at;
            let pos = sends[i].pos + u64::from(at);
            if len > 0 && (pos != start + u64::from(len) || len + seg > cap) {
                break;
            }
            len += seg;
            steps[n] = Step::Out { send: i, len: seg };
            n += 1;
            i += 1;
            at = 0;
        }
        steps[in_at] = Step::In { pos: start, len };
    }
    (n, leftovers)
}

/// Grows a pipe to `want` bytes, or as far as /proc/sys/fs/pipe-max-size allows (root
/// without CAP_SYS_RESOURCE is capped too). Returns the size the pipe has.
fn size_pipe(fd: RawFd, want: usize) -> usize {
    let set = |n: usize| {
        // SAFETY: fcntl on a pipe we own.
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, n as libc::c_int) }
    };
    if set(want) < 0 {
        let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(1 << 20);
        set(want.min(max));
    }
    // SAFETY: fcntl on a pipe we own.
    let got = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
    got.max(0) as usize
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::io("creating a pipe for splice", std::io::Error::last_os_error()));
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A memfd of patterned payload: `span` bytes plus `max_len` more, so a send of `max_len`
/// can start anywhere in the span. The span is a multiple of both the pattern period and
/// the page size, so sends of whole pages start on a page and fill the pipe exactly.
fn patterned_memfd(max_len: usize) -> Result<(File, u64)> {
    let span = (1usize << 20).max(max_len).next_multiple_of(PERIOD * 4096);
    let mut buf = vec![0u8; span + max_len];
    fill_payload(&mut buf);
    Ok((memfd_with(&buf)?, span as u64))
}

/// A memfd holding `bytes`.
fn memfd_with(bytes: &[u8]) -> Result<File> {
    // SAFETY: the name is a valid NUL-terminated string.
    let fd = unsafe { libc::memfd_create(c"ringperf-payload".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::io("creating the payload memfd", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let mut f = unsafe { File::from_raw_fd(fd) };
    f.write_all(bytes).map_err(|e| Error::io("filling the payload memfd", e))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K64: u32 = 64 << 10;

    fn plan(sends: &[Pending], piped: u32, cap: u32) -> (Vec<Step>, u64) {
        let mut steps = [Step::In { pos: 0, len: 0 }; MAX_STEPS];
        let (n, leftovers) = plan_chain(sends, piped, cap, &mut steps);
        (steps[..n].to_vec(), leftovers)
    }

    fn send(pos: u64, want: u32, done: u32) -> Pending {
        Pending { pos, want, done }
    }

    #[test]
    fn contiguous_sends_share_one_file_read() {
        let sends: Vec<_> = (0..3).map(|i| send(u64::from(i * K64), K64, 0)).collect();
        let (steps, leftovers) = plan(&sends, 0, 1 << 20);
        let outs = (0..3).map(|i| Step::Out { send: i, len: K64 });
        let want: Vec<_> = std::iter::once(Step::In { pos: 0, len: 3 * K64 }).chain(outs).collect();
        assert_eq!(steps, want);
        assert_eq!(leftovers, 0);
    }

    #[test]
    fn a_full_pipe_or_a_jump_in_the_source_starts_a_new_read() {
        // The second send does not fit beside the first; the third starts elsewhere.
        let sends = [send(0, K64, 0), send(u64::from(K64), K64, 0), send(0, K64, 0)];
        let (steps, _) = plan(&sends, 0, K64 + 4096);
        assert_eq!(
            steps,
            [
                Step::In { pos: 0, len: K64 },
                Step::Out { send: 0, len: K64 },
                Step::In { pos: u64::from(K64), len: K64 },
                Step::Out { send: 1, len: K64 },
                Step::In { pos: 0, len: K64 },
                Step::Out { send: 2, len: K64 },
            ]
        );
    }

    #[test]
    fn what_the_pipe_holds_goes_out_first_and_the_rest_is_read_again() {
        // Send 0 is half out; the pipe holds its other half and 1000 bytes of send 1.
        let half = K64 / 2;
        let sends = [send(0, K64, half), send(u64::from(K64), K64, 0), send(u64::from(2 * K64), K64, 0)];
        let (steps, leftovers) = plan(&sends, half + 1000, 1 << 20);
        assert_eq!(
            steps,
            [
                Step::Out { send: 0, len: half },
                Step::Out { send: 1, len: 1000 },
                Step::In { pos: u64::from(K64) + 1000, len: K64 - 1000 + K64 },
                Step::Out { send: 1, len: K64 - 1000 },
                Step::Out { send: 2, len: K64 },
            ]
        );
        assert_eq!(leftovers, 2);
        // Every owed byte is written exactly once.
        let out: u32 = steps.iter().filter(|&s| matches!(s, Step::Out { .. })).map(|s| s.len()).sum();
        assert_eq!(out, 3 * K64 - half);
    }

    #[test]
    fn finished_sends_need_no_steps() {
        let (steps, _) = plan(&[send(0, K64, K64)], 0, 1 << 20);
        assert!(steps.is_empty());
    }
}
