//! Faults: Ctrl-C on the client, 200 sessions with killed clients among them, a data
//! connection reset mid-run, and a lossy, slow path. Nothing measured is lost: a run cut
//! short prints its partial report; the server cleans up and keeps serving.
//!
//! The reset and loss tests build a namespace pair (root only; skipped with a message
//! otherwise) and remove it afterwards.

use std::net::Ipv4Addr;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use ringperf_tests::{
    check_stream_report, parse, ringperf, run_with_timeout, skip, skip_unless, ChildGuard, NetnsPair,
    Program, Ringperf, Server, SideReportExt, TestReport, TestReportExt, IP, NFT, RUN_TIMEOUT, SS, TC,
};

/// Starts `args` against `server` for 20 s and returns once the run has been going ~1 s.
fn long_client(rp: &Ringperf, server: &Server, args: &[&str]) -> ChildGuard {
    let port = server.port_arg();
    let mut all = args.to_vec();
    all.extend(["-H", "127.0.0.1", "-p", &port, "-l", "20", "--json"]);
    let mut cmd = rp.command(&all);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let client = ChildGuard::spawn(cmd);
    assert!(server.wait_for_log("session started", Duration::from_secs(20)).is_some());
    thread::sleep(Duration::from_secs(1));
    client
}

/// What an ended client printed: stdout, stderr.
fn output(client: &mut ChildGuard) -> (String, String) {
    use std::io::Read;
    let (mut out, mut err) = (String::new(), String::new());
    client.child_mut().stdout.take().expect("stdout").read_to_string(&mut out).expect("stdout");
    client.child_mut().stderr.take().expect("stderr").read_to_string(&mut err).expect("stderr");
    (out, err)
}

/// Ctrl-C mid-test: the partial report is printed with both sides (the server was told
/// to stop and sent what it had), exit 130, and the server does not wait out the test.
fn ctrl_c(args: &[&str]) {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let mut client = long_client(&rp, &server, args);
    let signalled = Instant::now();
    client.signal(libc::SIGINT);
    let status = client.wait_timeout(Duration::from_secs(10)).expect("the client ignored Ctrl-C for 10 s");
    let took = signalled.elapsed();
    let (out, err) = output(&mut client);
    assert_eq!(status.code(), Some(130), "Ctrl-C exit code: {status}\n{err}");
    assert!(err.contains("partial result") && err.contains("Ctrl-C"), "stderr: {err}");
    let r: TestReport = parse("the client's stdout", &out);
    assert!(r.partial);
    assert!(r.partial_reason.as_deref().expect("partial_reason").contains("Ctrl-C"));
    assert!(r.remote.is_some(), "the server's partial side is missing: {r:?}");
    let local = r.local.bytes_sent + r.local.bytes_received;
    let remote = r.remote().bytes_sent + r.remote().bytes_received;
    assert!(local > 0 && remote > 0, "a side measured nothing: local {local}, remote {remote}");
    assert!(r.local.elapsed_ns < 5_000_000_000, "the client ran on after Ctrl-C");
    assert!(r.remote().elapsed_ns < 5_000_000_000, "the server ran on after the abort");
    assert!(
        server.wait_for_log("stopped by the client", Duration::from_secs(5)).is_some(),
        "the server did not log the stop: {:?}",
        server.log()
    );
    eprintln!(
        "figures: ctrl-c {args:?}: exit 130 after {took:?}, local {local} B, remote {remote} B, partial"
    );
    let r = rp.run_report(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.5"]);
    check_stream_report(&r, false);
    server.assert_running();
}

#[test]
fn ctrl_c_mid_stream_prints_the_partial_report_and_stops_the_server() {
    ctrl_c(&["stream"]);
}

#[test]
fn ctrl_c_mid_reverse_stream_prints_the_partial_report_and_stops_the_server() {
    ctrl_c(&["stream", "--reverse"]);
}

#[test]
fn ctrl_c_mid_rr_prints_the_partial_report_and_stops_the_server() {
    ctrl_c(&["rr"]);
}

/// The server killed mid-run (`args` against it, 20 s): the client fails within a few
/// seconds with exit 3 and a partial report that keeps what it measured until then.
/// Returns the report.
fn killed_server(args: &[&str]) -> TestReport {
    let rp = ringperf!();
    let mut server = rp.serve();
    let mut client = long_client(&rp, &server, args);
    let killed = Instant::now();
    server.child().kill();
    let status = client
        .wait_timeout(Duration::from_secs(10))
        .expect("the client ran on for 10 s after its server died");
    let took = killed.elapsed();
    let (out, err) = output(&mut client);
    assert_eq!(status.code(), Some(3), "a dead server did not exit 3: {status}\n{err}");
    let r: TestReport = parse(&format!("the client's stdout (stderr: {err})"), &out);
    assert!(r.partial, "a broken run not marked partial: {r:?}");
    let local = r.local.bytes_sent + r.local.bytes_received;
    assert!(local > 0, "the partial report lost what was measured: {r:?}");
    assert!(r.local.elapsed_ns < 5_000_000_000, "the client ran on after its server died");
    eprintln!(
        "figures: server killed under {args:?}: exit 3 after {took:?}, local {local} B kept, reason: {}",
        r.partial_reason.as_deref().expect("partial_reason")
    );
    r
}

/// The UDP sender's sends are refused once the server is gone: the run fails, and the
/// datagrams sent until then are still reported.
#[test]
fn a_killed_server_fails_a_udp_stream_run_and_keeps_what_was_sent() {
    let r = killed_server(&["udp-stream"]);
    assert!(r.local.udp().datagrams_sent > 0, "{r:?}");
}

/// crr's connects are refused once the server is gone and its cycles under way break: a
/// broken cycle ends at the CQE of the op that failed (the close linked after it posts
/// none), which fails the run instead of leaving the flow waiting for ever.
#[test]
fn a_killed_server_fails_a_crr_run_and_keeps_the_connections_made() {
    let r = killed_server(&["crr", "--flows", "4"]);
    assert!(r.local.transactions > 0, "{r:?}");
}

/// crr watches the stop too: the client stops cycling at once (the cycles under way are
/// cancelled), the server is told and reports what it served.
#[test]
fn ctrl_c_mid_crr_prints_the_partial_report_and_stops_the_server() {
    ctrl_c(&["crr", "--flows", "4", "--threads", "2"]);
}

/// UDP has no EOF to end the server's side early: it stops on the client's Abort.
#[test]
fn ctrl_c_mid_udp_stream_prints_the_partial_report_and_stops_the_server() {
    ctrl_c(&["udp-stream"]);
}

#[test]
fn ctrl_c_mid_udp_rr_prints_the_partial_report_and_stops_the_server() {
    ctrl_c(&["udp-rr"]);
}

/// Several workers per side: every one of them stops, and the partial counters of all of
/// them are combined on both sides.
#[test]
fn ctrl_c_mid_multi_worker_stream_prints_the_partial_report_and_stops_the_server() {
    ctrl_c(&["stream", "--flows", "4", "--threads", "2"]);
}

#[test]
fn ctrl_c_mid_bidir_stream_prints_the_partial_report_and_stops_the_server() {
    ctrl_c(&["stream", "--bidir", "--flows", "2", "--threads", "2"]);
}

/// 200 sessions, one in ten killed mid-test: afterwards the server's descriptors and
/// threads are back to their baseline and it still serves.
#[test]
fn two_hundred_sessions_with_killed_clients_leave_no_trace() {
    let rp = ringperf!();
    let mut server = rp.serve();
    thread::sleep(Duration::from_millis(200));
    let baseline = (server.fds(), server.threads());
    let port = server.port_arg();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (rp, port) = (rp.clone(), port.clone());
            thread::spawn(move || {
                let (mut ok, mut killed) = (0, 0);
                for i in 0..50 {
                    if i % 10 == 9 {
                        let mut cmd = rp.command(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "5"]);
                        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
                        let mut c = ChildGuard::spawn(cmd);
                        thread::sleep(Duration::from_millis(400 + 50 * w));
                        c.kill();
                        killed += 1;
                    } else {
                        let test = if i % 2 == 0 { "stream" } else { "rr" };
                        let o = rp.run(&[test, "-H", "127.0.0.1", "-p", &port, "-l", "0.05", "--json"]);
                        let r = o.success().report();
                        assert!(!r.partial, "a whole run came back partial: {:?}", r.partial_reason);
                        ok += 1;
                    }
                }
                (ok, killed)
            })
        })
        .collect();
    let (mut ok, mut killed) = (0, 0);
    for w in workers {
        let (o, k) = w.join().expect("worker");
        ok += o;
        killed += k;
    }
    assert_eq!(ok + killed, 200);
    let after = server.settle_to(baseline, Duration::from_secs(15));
    let failed = server.log().iter().filter(|l| l.contains("session failed")).count();
    eprintln!(
        "figures: 200 sessions ({ok} whole, {killed} killed, {failed} logged as failed): fds/threads baseline {baseline:?}, after {after:?}"
    );
    assert!(
        failed <= killed,
        "{failed} sessions failed but only {killed} clients were killed: {:?}",
        server.log()
    );
    assert!(after.0 <= baseline.0 && after.1 <= baseline.1, "fds/threads {after:?} not back to {baseline:?}");
    let done = server.log().iter().filter(|l| l.contains(" done (")).count();
    assert_eq!(done, ok, "the server logged {done} finished tests for {ok} whole runs");
    let r = rp.run_report(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"]);
    check_stream_report(&r, false);
    server.assert_running();
}

/// The server stopped (SIGSTOP) mid-run, `args` for 2 s: the client gives up after the peer
/// grace with exit 3 and a partial report whose Elapsed ends with the test's length, not
/// with the grace it waited on top of it.
fn hung_server(args: &[&str]) {
    const LENGTH_NS: u64 = 2_000_000_000;
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let mut all = args.to_vec();
    all.extend(["-H", "127.0.0.1", "-p", &port, "-l", "2", "--json"]);
    let client = {
        let rp = rp.clone();
        let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        thread::spawn(move || rp.run(&all.iter().map(String::as_str).collect::<Vec<_>>()))
    };
    assert!(server.wait_for_log("session started", Duration::from_secs(20)).is_some(), "{:?}", server.log());
    thread::sleep(Duration::from_millis(500));
    server.child().signal(libc::SIGSTOP);
    let o = client.join().expect("client thread");
    server.child().signal(libc::SIGCONT);
    assert_eq!(o.status.code(), Some(3), "a hung server did not exit 3: {o}");
    let r = o.report();
    assert!(r.partial, "a run against a hung server not marked partial: {r:?}");
    let moved = r.local.bytes_sent + r.local.bytes_received;
    assert!(moved > 0, "the partial report lost what was measured: {r:?}");
    let elapsed = r.local.elapsed_ns;
    assert!(
        elapsed <= LENGTH_NS + 1_000_000_000,
        "Elapsed {elapsed} ns counts the wait for a hung peer, not just the {LENGTH_NS} ns test"
    );
    eprintln!(
        "figures: hung server under {args:?}: exit 3, elapsed {:.3} s, {moved} B, reason: {}",
        elapsed as f64 / 1e9,
        r.partial_reason.as_deref().expect("partial_reason")
    );
}

#[test]
fn a_hung_server_gives_a_partial_stream_report_whose_elapsed_is_the_test_length() {
    hung_server(&["stream"]);
}

#[test]
fn a_hung_server_gives_a_partial_reverse_stream_report_whose_elapsed_is_the_test_length() {
    hung_server(&["stream", "--reverse"]);
}

/// A namespace pair for `test`, or `None` after saying why it cannot be made here: not
/// root, or one of `programs` (besides `ip`) missing.
fn netns_pair(test: &str, tag: &str, n: u8, programs: &[Program]) -> Option<NetnsPair> {
    if skip_unless(test, true, &[&[IP], programs].concat()) {
        return None;
    }
    match NetnsPair::create(tag, n) {
        Ok(p) => Some(p),
        Err(e) => {
            skip(test, &format!("cannot create a namespace pair: {e}"));
            None
        }
    }
}

/// A data connection reset mid-run (`ss -K` destroys the server's data sockets): the
/// client reports a partial result with exit 3, the server logs the failure and serves on.
#[test]
fn a_data_connection_reset_mid_run_gives_a_partial_report() {
    let Some(pair) = netns_pair("a_data_connection_reset_mid_run_gives_a_partial_report", "reset", 71, &[SS])
    else {
        return;
    };
    let rp = ringperf!();
    let a_ip: Ipv4Addr = pair.a_addr.parse().expect("address");
    let mut server = Server::spawn_in(&rp, &pair.a, a_ip, &[]);
    let port = server.port_arg();
    let client = {
        let cmd = pair.b.exec(
            rp.path(),
            &["stream", "-H", &pair.a_addr, "-p", &port, "-l", "10", "--flows", "2", "--json"],
        );
        thread::spawn(move || run_with_timeout(cmd, RUN_TIMEOUT))
    };
    assert!(server.wait_for_log("session started", Duration::from_secs(20)).is_some());
    thread::sleep(Duration::from_secs(1));
    // Destroy the server's data sockets (dst = the client's address, not the control port).
    let mut kill = std::process::Command::new("ip");
    kill.args([
        "netns",
        "exec",
        pair.a.name(),
        "ss",
        "-K",
        "dst",
        &pair.b_addr,
        "sport",
        "!=",
        &format!(":{port}"),
    ]);
    pair.run_checked(kill).expect("ss -K");
    let o = client.join().expect("client");
    assert_eq!(o.status.code(), Some(3), "a reset did not exit 3: {o}");
    let r = o.report();
    assert!(r.partial, "a reset run not marked partial: {r:?}");
    let sent = r.local.bytes_sent;
    assert!(sent > 0, "the partial report lost the bytes sent");
    assert!(r.local.elapsed_ns < 9_000_000_000, "the client did not notice the reset");
    eprintln!(
        "figures: reset mid-run: exit 3, partial report with {sent} B sent, reason: {}",
        r.partial_reason.as_deref().expect("partial_reason")
    );
    assert!(server.wait_for_log("session failed", Duration::from_secs(15)).is_some(), "{:?}", server.log());
    let o = run_with_timeout(
        pair.b.exec(rp.path(), &["stream", "-H", &pair.a_addr, "-p", &port, "-l", "0.5", "--json"]),
        RUN_TIMEOUT,
    );
    check_stream_report(&o.success().report(), false);
    server.assert_running();
}

/// 3 % of TCP segments dropped each way and a 50 Mbit/s queue: the run completes, every
/// byte arrives, and the sender reports its retransmits from TCP_INFO.
#[test]
fn a_lossy_slow_path_completes_and_reports_retransmits() {
    const TEST: &str = "a_lossy_slow_path_completes_and_reports_retransmits";
    let Some(pair) = netns_pair(TEST, "loss", 72, &[NFT, TC]) else { return };
    if let Err(e) = pair.degrade(3, "50mbit", "30ms") {
        skip(TEST, &format!("cannot degrade the path with nft and tc: {e}"));
        return;
    }
    let rp = ringperf!();
    let a_ip: Ipv4Addr = pair.a_addr.parse().expect("address");
    let mut server = Server::spawn_in(&rp, &pair.a, a_ip, &[]);
    let port = server.port_arg();
    for reverse in [false, true] {
        let mut args = vec!["stream", "-H", &pair.a_addr, "-p", &port, "-l", "3", "--json"];
        if reverse {
            args.push("--reverse");
        }
        let o = run_with_timeout(pair.b.exec(rp.path(), &args), RUN_TIMEOUT);
        let r = o.success().report();
        check_stream_report(&r, reverse);
        let sender = if reverse { r.remote() } else { &r.local };
        let retrans = sender.socket.retransmits.expect("the sender's socket.retransmits");
        assert!(retrans > 0, "3 % loss and no retransmits reported by the sender");
        eprintln!(
            "figures: lossy path (3 % drop, 50 Mbit/s tbf), reverse={reverse}: {} bytes conserved, {retrans} retransmits, {:.1} Mbit/s",
            sender.bytes_sent,
            r.summary.throughput_bits_per_sec / 1e6
        );
    }
    server.assert_running();
}
