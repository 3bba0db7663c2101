//! Load: one server holds 32 clients at once, each with 3 flows, refuses none of them
//! (all are within its limits), and keeps each session's figures separate: every client's
//! report conserves its own bytes, and the server's log holds one line per client with
//! exactly that client's count.

use std::thread;
use std::time::Duration;

use ringperf_tests::{bool_at, check_stream_report, ringperf, u64_at};

const CLIENTS: usize = 32;
const FLOWS: &str = "3";

#[test]
fn thirty_two_clients_with_three_flows_each_are_served_at_once_and_kept_apart() {
    let rp = ringperf!();
    // All 32 come from 127.0.0.1: one host, so the per-host cap must allow them.
    let per_host = CLIENTS.to_string();
    let mut server = rp.serve_with(&["--max-sessions-per-host", &per_host]);
    let port = server.port_arg();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (rp, port) = (rp.clone(), port.clone());
            thread::spawn(move || {
                let mut args =
                    vec!["stream", "-H", "127.0.0.1", "-p", &port, "-l", "3", "--flows", FLOWS, "--json"];
                // Every fourth client paces itself, so the sessions move different amounts.
                let rate = format!("{}m", 20 * (i + 1));
                if i % 4 == 0 {
                    args.extend(["-b", &rate]);
                }
                rp.run(&args)
            })
        })
        .collect();
    // While they run: how many sessions does the server hold at once?
    let mut most = 0;
    for _ in 0..20 {
        thread::sleep(Duration::from_millis(100));
        let started = server.log().iter().filter(|l| l.contains("session started")).count();
        let ended = server.log().iter().filter(|l| l.contains(" done (") || l.contains("failed")).count();
        most = most.max(started.saturating_sub(ended));
    }
    let reports: Vec<serde_json::Value> =
        clients.into_iter().map(|c| c.join().expect("client").success().json()).collect();
    let mut received = Vec::new();
    for r in &reports {
        check_stream_report(r, false);
        assert!(!bool_at(r, "partial"));
        assert_eq!(u64_at(r, "spec.flows"), 3);
        received.push(u64_at(r, "remote.bytes_received"));
    }
    // The server's log: one line per session, each with one client's own byte count. Two
    // clients may move exactly the same bytes (counts are whole 128 KiB sends, and 24
    // unpaced clients share the CPUs evenly), so each count must appear on as many lines
    // as there are clients that reported it.
    let log = server.log();
    for bytes in &received {
        let want = format!("TCP_STREAM done ({bytes} bytes");
        let clients = received.iter().filter(|&b| b == bytes).count();
        assert_eq!(
            log.iter().filter(|l| l.contains(&want)).count(),
            clients,
            "not one log line per client that moved {bytes} bytes ({clients} did)"
        );
    }
    let rejected = log.iter().filter(|l| l.contains("rejected")).count();
    assert_eq!(rejected, 0, "the server refused clients within its limits: {log:?}");
    eprintln!(
        "figures: {CLIENTS} clients x {FLOWS} flows: all served, {most} sessions seen at once, 0 refused, totals {} .. {} bytes",
        received.iter().min().unwrap_or(&0),
        received.iter().max().unwrap_or(&0)
    );
    assert!(most >= CLIENTS / 2, "the server never held more than {most} sessions at once");
    server.assert_running();
}
