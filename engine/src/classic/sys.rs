//! The system calls of the classic loops, each wrapped once: what a call returned, told
//! apart the way the loops need (moved bytes, would block, end of stream, failure).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use ringperf_core::error::{Error, Result};

/// What one send or receive did.
#[derive(Debug)]
pub enum Io {
    /// It moved this many bytes (never 0 for a receive: that is `Eof`).
    Done(usize),
    /// A non-blocking socket had no room (send) or nothing queued (receive).
    Again,
    /// The peer closed its side (a receive returned 0).
    Eof,
    Failed(io::Error),
}

fn classify(r: isize) -> Io {
    if r > 0 {
        return Io::Done(r as usize);
    }
    if r == 0 {
        return Io::Eof;
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Io::Again,
        _ => Io::Failed(e),
    }
}

/// send(2) of `buf` on `fd`; never raises SIGPIPE. An empty `buf` reports `Done(0)`.
#[inline]
pub fn send(fd: RawFd, buf: &[u8]) -> Io {
    send_flags(fd, buf, 0)
}

/// [`send`] with more flags (MSG_ZEROCOPY).
#[inline]
pub fn send_flags(fd: RawFd, buf: &[u8], flags: i32) -> Io {
    if buf.is_empty() {
        return Io::Done(0);
    }
    // SAFETY: `buf` is a live slice of `buf.len()` readable bytes for the whole call.
    let r = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL | flags) };
    match classify(r) {
        // A send of a non-empty buffer that returns 0 moved nothing: try again.
        Io::Eof => Io::Again,
        other => other,
    }
}

/// recv(2) into `buf` on `fd`.
#[inline]
pub fn recv(fd: RawFd, buf: &mut [u8]) -> Io {
    // SAFETY: `buf` is a live, writable slice of `buf.len()` bytes for the whole call.
    let r = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    classify(r)
}

/// SO_RCVTIMEO: a blocking receive on `fd` returns `Again` after `ns` without data (the
/// kernel keeps the time; the loop reads no clock).
pub fn set_recv_timeout(fd: RawFd, ns: u64) -> Result<()> {
    set_timeout(fd, libc::SO_RCVTIMEO, ns, "setting SO_RCVTIMEO on a data socket")
}

/// SO_SNDTIMEO: a blocking send (or connect) on `fd` returns `Again` after `ns` without
/// room, so a loop blocked by a peer that stopped reading still sees the guard.
pub fn set_send_timeout(fd: RawFd, ns: u64) -> Result<()> {
    set_timeout(fd, libc::SO_SNDTIMEO, ns, "setting SO_SNDTIMEO on a data socket")
}

fn set_timeout(fd: RawFd, name: libc::c_int, ns: u64, what: &str) -> Result<()> {
    let tv = libc::timeval { tv_sec: (ns / 1_000_000_000) as _, tv_usec: ((ns % 1_000_000_000) / 1000) as _ };
    // SAFETY: `tv` is a valid timeval of the size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(Error::io(what, io::Error::last_os_error()));
    }
    Ok(())
}

/// A non-blocking CLOCK_MONOTONIC timerfd that fires once per arming.
pub struct OwnedTimer {
    fd: OwnedFd,
}

impl OwnedTimer {
    pub fn new() -> Result<OwnedTimer> {
        // SAFETY: timerfd_create takes no memory; the result is checked.
        let fd =
            unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC | libc::TFD_NONBLOCK) };
        if fd < 0 {
            return Err(Error::io("creating a timerfd", io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        Ok(OwnedTimer { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Fires once, `ns` (at least 1) from now; an expiry not yet read is forgotten.
    pub fn arm(&self, ns: u64) -> Result<()> {
        let ns = ns.max(1);
        let ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ };
        let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: ts };
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked for.
        if unsafe { libc::timerfd_settime(self.fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(Error::io("arming a timerfd", io::Error::last_os_error()));
        }
        Ok(())
    }
}

/// Puts `fd` in blocking or non-blocking mode.
pub fn set_nonblocking(fd: RawFd, on: bool) -> Result<()> {
    // SAFETY: fcntl on a descriptor the worker holds; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(Error::io("reading a data socket's flags", io::Error::last_os_error()));
    }
    let want = if on { flags | libc::O_NONBLOCK } else { flags & !libc::O_NONBLOCK };
    // SAFETY: as above.
    if want != flags && unsafe { libc::fcntl(fd, libc::F_SETFL, want) } < 0 {
        return Err(Error::io("setting a data socket's blocking mode", io::Error::last_os_error()));
    }
    Ok(())
}

/// A non-blocking eventfd, written to wake a loop that waits in epoll.
pub fn eventfd() -> Result<OwnedFd> {
    // SAFETY: eventfd takes no memory; the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(Error::io("creating an eventfd", io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds one to an eventfd's counter.
pub fn signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64; a full counter (never reached) only fails.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
}

/// Reads (and so resets) an eventfd's or a timerfd's counter; 0 if it was not readable.
pub fn drain(fd: RawFd) -> u64 {
    let mut n: u64 = 0;
    // SAFETY: reads at most 8 bytes into a live u64.
    let r = unsafe { libc::read(fd, (&mut n as *mut u64).cast(), 8) };
    if r == 8 {
        n
    } else {
        0
    }
}

/// One epoll instance and the room for the events one wait returns.
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// `capacity`: events one wait may return.
    pub fn new(capacity: usize) -> Result<Epoll> {
        // SAFETY: epoll_create1 takes no memory; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(Error::io("creating an epoll instance", io::Error::last_os_error()));
        }
        Ok(Epoll {
            // SAFETY: `fd` is a new descriptor nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
        })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, events: u32) -> Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` is a valid epoll_event for the call; `fd` is a descriptor we hold.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) } < 0 {
            return Err(Error::io("changing an epoll set", io::Error::last_os_error()));
        }
        Ok(())
    }

    pub fn add(&self, fd: RawFd, token: u64, events: u32) -> Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, events)
    }

    pub fn modify(&self, fd: RawFd, token: u64, events: u32) -> Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, events)
    }

    pub fn delete(&self, fd: RawFd) -> Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits until something is ready, for at most `timeout_ms` (-1: no limit); returns
    /// how many events [`Epoll::event`] holds, 0 when it ran out.
    pub fn wait_ms(&mut self, timeout_ms: i32) -> Result<usize> {
        // SAFETY: `events` has room for `len` entries for the whole call.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(0);
            }
            return Err(Error::io("waiting in epoll", e));
        }
        Ok(n as usize)
    }

    /// The `i`th event of the last wait: its token and its readiness bits.
    #[inline]
    pub fn event(&self, i: usize) -> (u64, u32) {
        let e = self.events[i];
        (e.u64, e.events)
    }
}
