//! The classic loops' clock: a watcher thread that owns the deadline, the peer guard, the
//! interval tick and the stop watch, so the loop itself reads no clock per operation (as
//! netperf's SIGALRM does). It raises flags the loop checks between calls with one relaxed
//! load, wakes a loop waiting in epoll through an eventfd, and, to stop a run at once (a
//! stop, or a peer that never finishes), shuts the data sockets down, which ends any call
//! still blocked on them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use crate::classic::sys;
use ringperf_core::error::{Error, Result};

/// The window's end has passed: start nothing new.
pub const DEADLINE: u32 = 1;
/// An interval has ended: sample the counters (the loop clears it).
pub const TICK: u32 = 2;
/// The peer or the user asked to stop: end now.
pub const ABORT: u32 = 4;
/// The peer did not finish within the grace after the deadline.
pub const GUARD: u32 = 8;

/// What the watcher is to watch.
pub struct WatchPlan {
    pub deadline_ns: Option<u64>,
    pub guard_ns: Option<u64>,
    pub window_start_ns: u64,
    pub interval_ns: u64,
    pub stop_fd: Option<RawFd>,
    /// Shut down when the run must end at once.
    pub sockets: Vec<RawFd>,
}

/// A running watcher; dropping it ends the thread.
pub struct Watch {
    flags: Arc<AtomicU32>,
    wake: Arc<OwnedFd>,
    quit: Arc<OwnedFd>,
    handle: Option<JoinHandle<()>>,
}

impl Watch {
    pub fn start(plan: WatchPlan) -> Result<Watch> {
        let flags = Arc::new(AtomicU32::new(0));
        let wake = Arc::new(sys::eventfd()?);
        let quit = Arc::new(sys::eventfd()?);
        let deadline = plan.deadline_ns.map(|t| timer(t, 0)).transpose()?;
        let guard = plan.guard_ns.map(|t| timer(t, 0)).transpose()?;
        let tick = (plan.interval_ns > 0)
            .then(|| timer(plan.window_start_ns + plan.interval_ns, plan.interval_ns))
            .transpose()?;
        let (f, w, q) = (flags.clone(), wake.clone(), quit.clone());
        let handle = thread::Builder::new()
            .name("ringperf-watch".into())
            .spawn(move || {
                watch(&f, w.as_raw_fd(), q.as_raw_fd(), [deadline, guard, tick], plan.stop_fd, &plan.sockets)
            })
            .map_err(|e| Error::io("starting a classic worker's watcher thread", e))?;
        Ok(Watch { flags, wake, quit, handle: Some(handle) })
    }

    pub fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    /// Readable whenever a flag was raised (for a loop that waits in epoll).
    pub fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        sys::signal(self.quit.as_raw_fd());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A CLOCK_MONOTONIC timerfd that first fires at `at_ns`, then every `period_ns` (0: once).
fn timer(at_ns: u64, period_ns: u64) -> Result<OwnedFd> {
    // SAFETY: timerfd_create takes no memory; the result is checked.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC | libc::TFD_NONBLOCK) };
    if fd < 0 {
        return Err(Error::io("creating a timerfd", io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a new descriptor nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let ts =
        |ns: u64| libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ };
    // An absolute time of 0 would disarm the timer: a deadline already past fires at once.
    let spec = libc::itimerspec { it_interval: ts(period_ns), it_value: ts(at_ns.max(1)) };
    // SAFETY: `spec` is a valid itimerspec; the old value is not asked for.
    if unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) } < 0 {
        return Err(Error::io("arming a timerfd", io::Error::last_os_error()));
    }
    Ok(owned)
}

fn watch(
    flags: &AtomicU32,
    wake: RawFd,
    quit: RawFd,
    [deadline, guard, tick]: [Option<OwnedFd>; 3],
    stop: Option<RawFd>,
    sockets: &[RawFd],
) {
    let fd_of = |t: &Option<OwnedFd>| t.as_ref().map_or(-1, |t| t.as_raw_fd());
    let mut fds = [quit, fd_of(&deadline), fd_of(&guard), fd_of(&tick), stop.unwrap_or(-1)]
        .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    let raise = |bit: u32| {
        flags.fetch_or(bit, Ordering::Relaxed);
        sys::signal(wake);
    };
    let end_now = |bit: u32| {
        raise(bit);
        for &s in sockets {
            // SAFETY: shutdown on a socket the worker holds open until this thread is joined.
            unsafe { libc::shutdown(s, libc::SHUT_RDWR) };
        }
    };
    loop {
        // SAFETY: `fds` is a live array of pollfd; entries with fd -1 are ignored.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if n < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // The watcher cannot wait: stop the run rather than let it go unbounded.
            end_now(ABORT);
            return;
        }
        for (i, p) in fds.iter_mut().enumerate() {
            if p.revents == 0 {
                continue;
            }
            p.revents = 0;
            match i {
                0 => return,
                1 => {
                    sys::drain(p.fd);
                    p.fd = -1;
                    raise(DEADLINE);
                }
                2 => {
                    sys::drain(p.fd);
                    p.fd = -1;
                    end_now(GUARD);
                }
                3 => {
                    sys::drain(p.fd);
                    raise(TICK);
                }
                _ => {
                    // The stop descriptor stays readable: watch it no more.
                    p.fd = -1;
                    end_now(ABORT);
                }
            }
        }
    }
}
