//! Ctrl-C for a test: the first SIGINT (or SIGTERM, or SIGHUP, the terminal gone, unless
//! started under `nohup`) writes a byte to a socket pair that the engine watches, so the run
//! stops at once and the partial report is still printed; a second one ends the process on
//! the spot, in case something does not stop. A [`Stopper`] stops the run the same way from
//! inside the process: standard output's reader went away.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::{flag, low_level};

use ringperf_core::Error;

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
    stopper: Stopper,
}

/// Stops the run as Ctrl-C does (the engine sees the same pipe, tells the server, and keeps
/// what was measured), for a reason of the process's own.
#[derive(Clone)]
pub struct Stopper {
    write: Arc<UnixStream>,
    why: Arc<Mutex<Option<String>>>,
}

impl Stopper {
    /// Stops the run; the first `why` is the partial report's reason.
    pub fn stop(&self, why: &str) {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| why.to_string());
        let _ = (&*self.write).write_all(&[1]);
    }

    fn why(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
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
        let stopper = Stopper { write: Arc::new(write), why: Arc::new(Mutex::new(None)) };
        Ok(Interrupt { read, fired, stopper })
    }

    /// A handle that stops the run from another thread (an output that failed).
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    /// Why the process stopped the run itself, if it did (not a signal).
    pub fn stopped_because(&self) -> Option<String> {
        self.stopper.why()
    }

    /// Readable once a signal came.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// True once a signal came or the run was stopped (see [`Stopper`]).
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst) || self.stopper.why().is_some() || {
            let _ = self.read.set_nonblocking(true);
            let mut b = [0u8; 1];
            matches!((&self.read).read(&mut b), Ok(1))
        }
    }
}
