//! The `ringperf` binary: everything lives in the `ringperf_cli` library.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether descriptor 1 was closed when the process was started (`ringperf ... >&-`).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Looks at descriptor 1 before Rust's runtime puts /dev/null on it if it is closed, which
/// would make every write to a closed standard output succeed, and the report vanish.
extern "C" fn note_closed_stdout() {
    // SAFETY: F_GETFD only reads the descriptor table; a closed descriptor fails with EBADF.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
    STDOUT_CLOSED.store(closed, Ordering::Relaxed);
}

// Run by the C runtime before `main`, as the standard library's own argument capture is.
// The function takes nothing, touches only an atomic, and cannot unwind.
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

fn main() {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        ringperf_cli::output::stdout_closed_at_start();
    }
    std::process::exit(ringperf_cli::main());
}
