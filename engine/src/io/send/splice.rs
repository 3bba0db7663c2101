//! `splice`: file -> pipe -> socket with two linked IORING_OP_SPLICE per send, the
//! TCP_SENDFILE of netperf. The source is the user's file (client side only) or a memfd of
//! patterned payload. Pipes are sized to the send; a short first splice leaves bytes in the
//! pipe, and those are spliced out on their own before the flow sends again.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use io_uring::{opcode, squeue, types};

use crate::error::{Error, Result};
use crate::io::{op, SendEvent, SendPath};
use crate::report::{SendReport, SpliceReport};
use crate::ring::{cqe_error, token, Completion, FlowFd, Ring};
use crate::verify::{fill, PERIOD};
use crate::with_fd;

struct FlowPipe {
    read: OwnedFd,
    write: OwnedFd,
    /// Bytes spliced into the pipe and not yet out to the socket.
    in_pipe: u32,
    /// Bytes of the current send that reached the socket, and its full length.
    sent: u32,
    want: u32,
    /// Source position of the next file -> pipe splice.
    pos: u64,
    /// Bytes the last file -> pipe splice moved (0: it was cancelled or hit EOF).
    last_in: u32,
    /// A send (or its leftover) is in flight.
    busy: bool,
    /// Position in a user file (memfd sources derive it from the stream offset).
    file_pos: u64,
}

pub struct SpliceSend {
    fds: Vec<FlowFd>,
    source: File,
    /// Length of the patterned period region of a memfd source; `None` for a user file.
    memfd_span: Option<u64>,
    file_len: u64,
    pipes: Vec<FlowPipe>,
    report: SpliceReport,
    sends: u64,
}

impl SpliceSend {
    pub fn new(fds: &[FlowFd], max_len: usize, file: Option<File>) -> Result<SpliceSend> {
        let (source, memfd_span, file_len) = match file {
            Some(f) => {
                let len = f.metadata().map_err(|e| Error::io("reading the size of the -F file", e))?.len();
                if len == 0 {
                    return Err(Error::Usage("the -F file is empty: give a file with payload in it".into()));
                }
                (f, None, len)
            }
            None => {
                let (f, span) = patterned_memfd(max_len)?;
                let len = f.metadata().map_err(|e| Error::io("sizing the payload memfd", e))?.len();
                (f, Some(span), len)
            }
        };
        let mut pipe_size = usize::MAX;
        let pipes = fds
            .iter()
            .map(|_| {
                let (read, write) = pipe()?;
                // A pipe that holds a whole send keeps the first splice from coming up short;
                // a send that starts mid-page spans one page more.
                let want = (max_len + 4096).next_multiple_of(4096).max(65536);
                let size = size_pipe(write.as_raw_fd(), want);
                pipe_size = pipe_size.min(size);
                Ok(FlowPipe {
                    read,
                    write,
                    in_pipe: 0,
                    sent: 0,
                    want: 0,
                    pos: 0,
                    last_in: 0,
                    busy: false,
                    file_pos: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SpliceSend {
            fds: fds.to_vec(),
            source,
            memfd_span,
            file_len,
            pipes,
            report: SpliceReport { pipe_size: pipe_size as u64, ..SpliceReport::default() },
            sends: 0,
        })
    }

    /// file -> pipe (linked) -> socket for the next `len` bytes at the flow's position.
    fn push_chain(&mut self, ring: &mut Ring, flow: usize, len: u32, flags: squeue::Flags) -> Result<()> {
        let p = &mut self.pipes[flow];
        p.last_in = 0;
        let p = &self.pipes[flow];
        let first = opcode::Splice::new(
            types::Fd(self.source.as_raw_fd()),
            p.pos as i64,
            types::Fd(p.write.as_raw_fd()),
            -1,
            len,
        )
        .flags(libc::SPLICE_F_MOVE)
        .build()
        .user_data(token(op::SPLICE_IN, flow))
        .flags(squeue::Flags::IO_LINK);
        // SAFETY: source file and pipe live as long as this path.
        unsafe { ring.push(&first)? };
        self.push_out(ring, flow, len, flags)
    }

    fn push_out(&mut self, ring: &mut Ring, flow: usize, len: u32, flags: squeue::Flags) -> Result<()> {
        let pipe_r = self.pipes[flow].read.as_raw_fd();
        let e = with_fd!(self.fds[flow], |t| opcode::Splice::new(types::Fd(pipe_r), -1, t, -1, len)
            .flags(libc::SPLICE_F_MOVE)
            .build()
            .user_data(token(op::SEND, flow))
            .flags(flags));
        // SAFETY: the pipe and the socket live as long as this path.
        unsafe { ring.push(&e) }
    }
}

impl SendPath for SpliceSend {
    #[inline]
    fn available(&self, flow: usize) -> usize {
        usize::from(!self.pipes[flow].busy)
    }

    /// A short splice must be seen to be handled, so successes keep their CQEs.
    #[inline]
    fn can_skip_success(&self) -> bool {
        false
    }

    /// Splices run on io-wq, and a receive linked behind them stalled on this kernel, so
    /// request/response over splice keeps its receive armed on its own.
    fn can_chain(&self) -> bool {
        false
    }

    fn push(
        &mut self,
        ring: &mut Ring,
        flow: usize,
        offset: u64,
        len: u32,
        flags: squeue::Flags,
    ) -> Result<u32> {
        let (pos, len) = match self.memfd_span {
            // The memfd holds the pattern for span + max_len bytes, and span is a multiple
            // of the period: any offset maps to a position with the right pattern phase.
            Some(span) => (offset % span, len),
            None => {
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
        p.busy = true;
        p.sent = 0;
        p.want = len;
        p.pos = pos;
        self.sends += 1;
        self.push_chain(ring, flow, len, flags)?;
        Ok(len)
    }

    fn complete(&mut self, ring: &mut Ring, c: &Completion) -> Result<SendEvent> {
        let flow = c.flow();
        if c.op() == op::SPLICE_IN {
            if c.result < 0 && c.result != -libc::ECANCELED {
                return Err(cqe_error("splice file -> pipe", c.result));
            }
            let got = c.result.max(0) as u32;
            let p = &mut self.pipes[flow];
            p.in_pipe += got;
            p.pos += u64::from(got);
            p.last_in = got;
            return Ok(SendEvent::Nothing);
        }
        let p = &mut self.pipes[flow];
        if c.result == -libc::ECANCELED {
            // The first half came up short (or an earlier link failed), so this second half
            // never ran.
            self.report.short_in += 1;
        } else if c.result < 0 {
            return Err(cqe_error("splice pipe -> socket", c.result));
        } else {
            let n = c.result as u32;
            p.in_pipe -= n.min(p.in_pipe);
            p.sent += n;
            if p.in_pipe > 0 {
                self.report.short_out += 1;
            }
        }
        if p.in_pipe > 0 {
            let left = p.in_pipe;
            self.report.leftover_splices += 1;
            self.push_out(ring, flow, left, squeue::Flags::empty())?;
            return Ok(SendEvent::Nothing);
        }
        if p.sent < p.want && p.last_in > 0 {
            // The pipe is empty but the send is not done: splice the rest of it.
            let rest = p.want - p.sent;
            self.report.leftover_splices += 1;
            self.push_chain(ring, flow, rest, squeue::Flags::empty())?;
            return Ok(SendEvent::Nothing);
        }
        p.busy = false;
        if p.sent == 0 {
            // Nothing moved: an earlier SQE of the chain ended it (EOF in rr).
            return Ok(SendEvent::Cancelled { flow });
        }
        Ok(SendEvent::Sent { flow, bytes: p.sent })
    }

    fn outstanding(&self) -> usize {
        0
    }

    fn report(&self) -> SendReport {
        SendReport { sends: self.sends, zero_copy: None, splice: Some(self.report.clone()) }
    }
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
    // SAFETY: the name is a valid NUL-terminated string.
    let fd = unsafe { libc::memfd_create(c"ringperf-payload".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::io("creating the payload memfd", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let mut f = unsafe { File::from_raw_fd(fd) };
    let mut buf = vec![0u8; span + max_len];
    fill(&mut buf);
    f.write_all(&buf).map_err(|e| Error::io("filling the payload memfd", e))?;
    Ok((f, span as u64))
}
