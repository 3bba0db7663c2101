//! Receive paths.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

/// Builds the SQEs that take payload off a socket.
pub trait RecvPath {
    /// One receive of up to `len` bytes on `fd`; with `wait_all` it completes only when
    /// `len` bytes arrived, the peer closed, or an error occurred.
    fn prepare(&mut self, fd: RawFd, len: u32, wait_all: bool) -> squeue::Entry;
}

/// IORING_OP_RECV into one user-space buffer: the kernel copies every byte out.
///
/// The payload is counted, not inspected, so every flow shares the same landing buffer.
pub struct CopyRecv {
    buf: Vec<u8>,
}

impl CopyRecv {
    pub fn new(max_len: usize) -> CopyRecv {
        CopyRecv { buf: vec![0; max_len] }
    }
}

impl RecvPath for CopyRecv {
    #[inline]
    fn prepare(&mut self, fd: RawFd, len: u32, wait_all: bool) -> squeue::Entry {
        debug_assert!(len as usize <= self.buf.len());
        let flags = if wait_all { libc::MSG_WAITALL } else { 0 };
        opcode::Recv::new(types::Fd(fd), self.buf.as_mut_ptr(), len).flags(flags).build()
    }
}
