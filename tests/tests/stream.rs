//! Stream tests in both directions against the embedded server: every byte the sender
//! sent arrives, and the figures derived from the counts are consistent.

use ringperf_tests::{check_stream_report, ringperf};

#[test]
fn stream_client_to_server_conserves_bytes() {
    let r = ringperf!().run_report(&["stream", "-l", "1"]);
    check_stream_report(&r, false);
}

#[test]
fn stream_reverse_server_to_client_conserves_bytes() {
    let r = ringperf!().run_report(&["stream", "-l", "1", "--reverse"]);
    check_stream_report(&r, true);
}

/// A send size that does not divide the socket buffers or the receive size: the byte
/// counts must still match exactly (short sends or receives would show here).
#[test]
fn stream_odd_sizes_conserve_bytes() {
    let r = ringperf!().run_report(&["stream", "-l", "1", "-m", "1000", "-M", "777"]);
    check_stream_report(&r, false);
    assert_eq!(r.spec.send_size, 1000);
    assert_eq!(r.spec.recv_size, 777);
}
