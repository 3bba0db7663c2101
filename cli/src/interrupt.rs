//! Ctrl-C for a test: the first SIGINT (or SIGTERM, or SIGHUP, the terminal gone, unless
//! started under `nohup`) writes a byte to a socket pair that the engine watches, so the run stops at once and
//! the partial report is still printed; a second one ends the process on the spot, in case
//! something does not stop.

use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::{flag, low_level};

use ringperf_engine::Error;

/// The signals that stop a run or a server: SIGINT, SIGTERM, and SIGHUP unless it is
/// ignored (`nohup`), so that what was started to outlive its terminal still does.
pub fn stop_signals() -> Vec<i32> {
    let mut sigs = vec![SIGINT, SIGTERM];
    if !ignored(SIGHUP) {
        sigs.push(SIGHUP);
    }
    sigs
}

/// Whether `sig`'s disposition, as this process inherited it, is SIG_IGN.
fn ignored(sig: i32) -> bool {
    // SAFETY: an all-zero sigaction is a valid value for sigaction(2) to fill.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `old`, a valid sigaction.
    let r = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    r == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// The read end of the interrupt pipe, and whether a signal came.
pub struct Interrupt {
    read: UnixStream,
    fired: Arc<AtomicBool>,
}

impl Interrupt {
    pub fn install() -> Result<Interrupt, Error> {
        let (read, write) = UnixStream::pair().map_err(|e| Error::io("creating the Ctrl-C pipe", e))?;
        let fired = Arc::new(AtomicBool::new(false));
        for sig in stop_signals() {
            let fail = |e| Error::io("installing a signal handler", e);
            // Registered first, so it sees the flag before this signal sets it: the second
            // signal exits with 130 at once.
            flag::register_conditional_shutdown(sig, 130, fired.clone()).map_err(fail)?;
            flag::register(sig, fired.clone()).map_err(fail)?;
            let w = write.try_clone().map_err(|e| Error::io("creating the Ctrl-C pipe", e))?;
            low_level::pipe::register(sig, w).map_err(fail)?;
        }
        Ok(Interrupt { read, fired })
    }

    /// Readable once a signal came.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst) || {
            let _ = self.read.set_nonblocking(true);
            let mut b = [0u8; 1];
            matches!((&self.read).read(&mut b), Ok(1))
        }
    }
}
