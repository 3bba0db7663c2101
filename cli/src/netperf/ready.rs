//! How a background netserver knows its server is up: the server writes its listening
//! address down a pipe it inherited, and the netserver reads it with a deadline.

use std::io::Write;
use std::os::fd::FromRawFd;

/// The variable that tells `ringperf serve` which inherited descriptor to write its
/// listening address to (one line), then close: how the background netserver knows the
/// server is up, and on which port.
pub const READY_FD_ENV: &str = "RINGPERF_READY_FD";

/// How long the background netserver waits for the server to bind.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads the server's address line from `ready`, or `None` if the pipe ends (the server
/// stopped) or nothing comes within READY_TIMEOUT.
pub(super) fn listening_address(ready: std::io::PipeReader) -> Option<std::net::SocketAddr> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(ready), &mut line);
        let _ = tx.send(line.trim().parse().ok());
    });
    rx.recv_timeout(READY_TIMEOUT).ok().flatten()
}

/// `ringperf serve`'s side of [`READY_FD_ENV`]: writes `addr` to the descriptor it names
/// and closes it. A variable that names no pipe is left alone.
pub fn tell_ready(addr: std::net::SocketAddr) {
    let Some(fd) = std::env::var(READY_FD_ENV).ok().and_then(|v| v.parse::<i32>().ok()) else { return };
    // SAFETY: libc::stat is plain data, for which all zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into `st`, a stat buffer of the right type; a descriptor that is
    // not open fails it, which is checked.
    let stat_ok = fd > 2 && unsafe { libc::fstat(fd, &mut st) } == 0;
    if !stat_ok || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return;
    }
    // SAFETY: the descriptor is an open pipe that the background netserver made for this
    // process to own; nothing else here uses it.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    let _ = writeln!(pipe, "{addr}");
}
