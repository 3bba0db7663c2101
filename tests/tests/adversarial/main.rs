//! The adversarial suite: real `ringperf serve` processes attacked the way the trust
//! boundaries issue's probe attacked them, as a key holder and as a stranger. Each attack
//! asserts two things: that it fails, and that the server goes on serving an honest
//! client afterwards with its threads and descriptors back where they were.
//!
//! One module per attack surface; what they share is below.

use std::thread;
use std::time::Duration;

use ringperf_tests::{check_stream_report, Ringperf, Server};

mod file_read;
mod memory;
mod outputs;
mod plans;
mod rate;
mod reflection;
mod relay;
mod stopped_peer;

/// How long a server may take to give back a finished session's threads and fds.
pub const SETTLE: Duration = Duration::from_secs(10);

/// A server's resources before an attack: (fds, threads), taken once it has settled.
pub fn baseline(server: &Server) -> (usize, usize) {
    thread::sleep(Duration::from_millis(200));
    (server.fds(), server.threads())
}

/// Asserts that `server` still serves an honest 1-second stream whole, and that its fds
/// and threads come back to `base` afterwards.
pub fn still_serves(rp: &Ringperf, server: &mut Server, base: (usize, usize), psk: Option<&std::path::Path>) {
    still_serves_with(rp, server, base, psk, &[]);
}

/// [`still_serves`] with `extra` flags for the honest stream (a rate the server's limits
/// ask for).
pub fn still_serves_with(
    rp: &Ringperf,
    server: &mut Server,
    base: (usize, usize),
    psk: Option<&std::path::Path>,
    extra: &[&str],
) {
    server.assert_running();
    let port = server.port_arg();
    let mut args = vec!["stream", "-H", "127.0.0.1", "-p", &port, "-l", "1", "--json"];
    args.extend_from_slice(extra);
    let key;
    if let Some(p) = psk {
        key = p.display().to_string();
        args.extend(["--psk-file", &key]);
    }
    let report = rp.run(&args).success().report();
    check_stream_report(&report, false);
    let now = server.settle_to(base, SETTLE);
    assert!(
        now.0 <= base.0 && now.1 <= base.1,
        "the server did not give back what the attack took: (fds, threads) {now:?}, before {base:?}; log: {:?}",
        server.log()
    );
}

#[test]
fn an_honest_client_is_served_and_the_server_settles() {
    let rp = ringperf_tests::ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    still_serves(&rp, &mut server, base, None);
}
