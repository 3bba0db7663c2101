//! Ctrl-C for a test: the first SIGINT (or SIGTERM) writes a byte to a socket pair that the
//! engine watches, so the run stops at once and the partial report is still printed; a
//! second one ends the process on the spot, in case something does not stop. A [`Stopper`]
//! stops the run the same way from inside the process: standard output's reader went away.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::{flag, low_level};

use ringperf_engine::Error;

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
        for sig in [SIGINT, SIGTERM] {
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
