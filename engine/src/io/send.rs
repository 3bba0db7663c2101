//! Send paths.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

/// Builds the SQEs that put payload on a socket.
pub trait SendPath {
    /// One send of `len` payload bytes on `fd`. The entry is complete (flags included)
    /// except for its user_data, which the workload sets.
    fn prepare(&mut self, fd: RawFd, len: u32) -> squeue::Entry;
}

/// IORING_OP_SEND from one user-space payload buffer: the kernel copies every byte.
pub struct CopySend {
    payload: Vec<u8>,
}

impl CopySend {
    /// A payload buffer of `max_len` bytes, filled with a pattern rather than zeros so that
    /// no path can cheat on zero pages.
    pub fn new(max_len: usize) -> CopySend {
        CopySend { payload: (0..max_len).map(|i| (i % 251) as u8).collect() }
    }
}

impl SendPath for CopySend {
    #[inline]
    fn prepare(&mut self, fd: RawFd, len: u32) -> squeue::Entry {
        debug_assert!(len as usize <= self.payload.len());
        // MSG_WAITALL: a send completes whole or fails, so the byte stream has no holes.
        opcode::Send::new(types::Fd(fd), self.payload.as_ptr(), len)
            .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
            .build()
    }
}
