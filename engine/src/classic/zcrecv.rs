//! `zerocopy-receive`: TCP_ZEROCOPY_RECEIVE, the classic zero-copy receive. Each flow maps
//! a read-only window of its socket (mmap of the socket); one getsockopt maps the whole
//! pages of queued payload into it, copies a short remainder into a small copy buffer, and
//! says (recv_skip_hint) how many bytes could be neither and must be read with recv(2).
//! The kernel maps a page only when the payload sits in whole, page-aligned fragments:
//! on loopback (the sender's copies land in larger compound pages) nearly every byte is
//! copied, and the report says so.

use std::io;
use std::os::fd::RawFd;

use crate::classic::context::Ctx;
use ringperf_core::error::{Error, Result};
use ringperf_core::report::ZeroCopyRecvReport;

/// TCP_ZEROCOPY_RECEIVE (linux/tcp.h).
const TCP_ZEROCOPY_RECEIVE: i32 = 35;
/// The copy buffer a receive's short remainder lands in.
const COPYBUF: usize = 16 * 1024;

/// struct tcp_zerocopy_receive (linux/tcp.h, 64 bytes as of Linux 5.11).
#[repr(C)]
#[derive(Default)]
struct ZcArgs {
    address: u64,
    length: u32,
    recv_skip_hint: u32,
    inq: u32,
    err: i32,
    copybuf_address: u64,
    copybuf_len: i32,
    flags: u32,
    msg_control: u64,
    msg_controllen: u64,
    msg_flags: u32,
    reserved: u32,
}

/// What one receive delivered, in stream order: `mapped` bytes at the flow's window, then
/// `copied` bytes in the copy buffer; `skip` more are queued that only recv(2) can read.
#[derive(Clone, Copy, Debug, Default)]
pub struct Got {
    pub mapped: usize,
    pub copied: usize,
    pub skip: usize,
}

/// One mapped window per flow, and the accounting.
pub struct ZeroCopyRecv {
    windows: Vec<(*mut libc::c_void, usize)>,
    copybuf: Vec<u8>,
    report: ZeroCopyRecvReport,
}

impl ZeroCopyRecv {
    /// Maps a window of `len` bytes (whole pages) on every socket.
    pub fn new(fds: &[RawFd], len: usize) -> Result<ZeroCopyRecv> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let len = len.max(page).next_multiple_of(page);
        let mut out = ZeroCopyRecv {
            windows: Vec::with_capacity(fds.len()),
            copybuf: vec![0; COPYBUF],
            report: ZeroCopyRecvReport::default(),
        };
        for &fd in fds {
            // SAFETY: a fresh read-only shared mapping of the socket; the kernel picks the address.
            let addr =
                unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
            if addr == libc::MAP_FAILED {
                return Err(Error::Usage(format!(
                    "engine zerocopy-receive needs mmap on TCP sockets (Linux 4.18), which failed here: {}: pick another receive engine",
                    io::Error::last_os_error()
                )));
            }
            out.windows.push((addr, len));
        }
        Ok(out)
    }

    /// One TCP_ZEROCOPY_RECEIVE on flow `f`; it never blocks. The pages mapped by the
    /// flow's previous receive are unmapped by this one.
    #[inline]
    pub fn receive(&mut self, cx: &mut Ctx, f: usize) -> Result<Got> {
        let (addr, len) = self.windows[f];
        let mut z = ZcArgs {
            address: addr as u64,
            length: len as u32,
            copybuf_address: self.copybuf.as_mut_ptr() as u64,
            copybuf_len: COPYBUF as i32,
            ..ZcArgs::default()
        };
        let mut zlen = std::mem::size_of::<ZcArgs>() as libc::socklen_t;
        cx.calls.recvs += 1;
        self.report.receives += 1;
        // SAFETY: `z` is a valid tcp_zerocopy_receive of `zlen` bytes; the window and the
        // copy buffer it names are ours and live as long as this path.
        let r = unsafe {
            libc::getsockopt(
                cx.fds[f],
                libc::IPPROTO_TCP,
                TCP_ZEROCOPY_RECEIVE,
                (&mut z as *mut ZcArgs).cast(),
                &mut zlen,
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR) => Ok(Got::default()),
                Some(libc::ENOPROTOOPT | libc::EOPNOTSUPP) => Err(Error::Usage(
                    "engine zerocopy-receive needs TCP_ZEROCOPY_RECEIVE (Linux 4.18), which this kernel lacks: pick another receive engine".into(),
                )),
                // The peer reset or the socket was shut down: the caller's recv tells which.
                _ => Ok(Got { skip: 1, ..Got::default() }),
            };
        }
        let got = Got {
            mapped: z.length as usize,
            copied: z.copybuf_len.max(0) as usize,
            skip: z.recv_skip_hint as usize,
        };
        self.report.bytes_mapped += got.mapped as u64;
        self.report.bytes_copied += got.copied as u64;
        Ok(got)
    }

    /// The bytes flow `f`'s last receive mapped and then copied.
    pub fn landed(&self, f: usize, got: Got) -> (&[u8], &[u8]) {
        let (addr, _) = self.windows[f];
        // SAFETY: the kernel mapped `got.mapped` readable bytes at the window's start, and
        // they stay mapped until the flow's next receive, which needs `&mut self`.
        let mapped = unsafe { std::slice::from_raw_parts(addr as *const u8, got.mapped) };
        (mapped, &self.copybuf[..got.copied])
    }

    /// Bytes read with recv(2): what a receive could not map or copy, or found at EOF.
    pub fn read_by_recv(&mut self, n: usize) {
        self.report.bytes_read += n as u64;
    }

    pub fn report(&self) -> ZeroCopyRecvReport {
        self.report.clone()
    }
}

impl Drop for ZeroCopyRecv {
    fn drop(&mut self) {
        for &(addr, len) in &self.windows {
            // SAFETY: unmaps a window this path mapped and no slice outlives (see `landed`).
            unsafe { libc::munmap(addr, len) };
        }
    }
}

/// Waits until `fd` has something to read (or is shut down): the blocking form of a
/// zero-copy receive, which itself never waits.
pub fn wait_readable(cx: &mut Ctx, fd: RawFd) {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    cx.calls.other += 1;
    // SAFETY: one live pollfd for the call.
    unsafe { libc::poll(&mut p, 1, -1) };
}
