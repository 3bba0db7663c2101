//! A standalone `ringperf serve`: it serves real clients, survives clients that die or
//! misbehave, answers malformed control traffic with an error instead of crashing, and
//! stops cleanly on SIGTERM. Every test starts its own server on an ephemeral port.

use std::process::Stdio;
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

use ringperf_tests::{
    assert_closed_by_server, check_rr_report, check_stream_report, flow_header, ringperf, ChildGuard,
    Control, Reply, Ringperf, Role, Server, TestReport, TestReportExt,
};

/// Runs a 1 s stream test against `server` and checks it fully.
fn stream_against(rp: &Ringperf, server: &Server, reverse: bool) -> TestReport {
    let port = server.port_arg();
    let mut args = vec!["stream", "-H", "127.0.0.1", "-p", &port, "-l", "1"];
    if reverse {
        args.push("--reverse");
    }
    let r = rp.run_report(&args);
    check_stream_report(&r, reverse);
    assert!(!r.embedded_server, "embedded_server is true with -H");
    assert_eq!(r.server, format!("127.0.0.1:{port}"));
    r
}

/// The server is alive and still runs whole tests.
fn still_serves(rp: &Ringperf, server: &mut Server) {
    server.assert_running();
    stream_against(rp, server, false);
    server.assert_running();
}

#[test]
fn standalone_server_serves_stream_and_rr() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let r = stream_against(&rp, &server, false);
    // The server's log accounts for the same bytes its report did.
    let bytes = r.remote().bytes_received;
    let want = format!("TCP_STREAM done ({bytes} bytes");
    assert!(
        server.wait_for_log(&want, Duration::from_secs(10)).is_some(),
        "no '{want}' in the server log: {:?}",
        server.log()
    );

    let port = server.port_arg();
    let r = rp.run_report(&["rr", "-H", "127.0.0.1", "-p", &port, "-l", "1"]);
    check_rr_report(&r);
    assert!(!r.embedded_server);
    server.assert_running();
}

/// A client killed in the middle of a test leaves the server able to run the next one.
fn killed_client_then_next_test(reverse: bool) {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let mut args = vec!["stream", "-H", "127.0.0.1", "-p", &port, "-l", "10"];
    if reverse {
        args.push("--reverse");
    }
    let mut cmd = rp.command(&args);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut client = ChildGuard::spawn(cmd);
    assert!(
        server.wait_for_log("session started", Duration::from_secs(20)).is_some(),
        "the client never reached the server: {:?}",
        server.log()
    );
    thread::sleep(Duration::from_secs(1));
    assert!(client.try_status().is_none(), "the 10 s client ended early");
    client.kill();

    still_serves(&rp, &mut server);
    stream_against(&rp, &server, reverse);
}

#[test]
fn client_killed_mid_stream_then_next_test_succeeds() {
    killed_client_then_next_test(false);
}

#[test]
fn client_killed_mid_reverse_stream_then_next_test_succeeds() {
    killed_client_then_next_test(true);
}

#[test]
fn garbage_frame_gets_an_error_reply_and_the_server_keeps_serving() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let mut c = Control::connect(server.port());
    c.send_frame(b"this is not JSON at all");
    let (kind, msg) = c.expect_error();
    assert_eq!(kind, "protocol", "garbage is a protocol error: {msg}");
    c.expect_closed();
    still_serves(&rp, &mut server);
}

#[test]
fn wrong_protocol_version_is_refused_with_the_reason() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let mut c = Control::connect(server.port());
    c.send_json(&json!({"type": "hello", "protocol": 999, "tool_version": "x"}));
    let (kind, msg) = c.expect_error();
    assert_eq!(kind, "protocol");
    let lower = msg.to_lowercase();
    assert!(lower.contains("protocol") && msg.contains("999"), "the reply does not name the version: {msg}");
    c.expect_closed();
    server.assert_running();
}

#[test]
fn frame_claiming_4_gib_is_refused_and_the_server_keeps_serving() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let mut c = Control::connect(server.port());
    // A length of 4 GiB - 1 and no body: the server must not try to allocate or wait for it.
    c.send_raw(&u32::MAX.to_be_bytes());
    match c.read_reply() {
        // A protocol error about the frame, not a timeout after waiting for 4 GiB.
        Reply::Frame(v) => {
            assert_eq!(v["type"], "error", "expected an error reply, got {v}");
            assert_eq!(v["kind"], "protocol", "the frame cap was not enforced up front: {v}");
            let msg = v["message"].as_str().unwrap_or_default();
            assert!(msg.contains(&u32::MAX.to_string()), "the reply does not name the claimed size: {msg}");
            c.expect_closed();
        }
        Reply::Closed => {}
    }
    still_serves(&rp, &mut server);
}

/// Malformed sessions of other shapes: each gets an error reply or a close, none kills
/// the server.
#[test]
fn malformed_sessions_of_every_shape_leave_the_server_serving() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let frame = |body: &[u8]| {
        let mut f = (body.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        f
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("zero-length frame", 0u32.to_be_bytes().to_vec()),
        ("invalid UTF-8", frame(b"\xff\xfe\xfd")),
        ("unknown message type", frame(br#"{"type":"launch_missiles"}"#)),
        ("hello without fields", frame(br#"{"type":"hello"}"#)),
        ("go before hello", frame(br#"{"type":"go"}"#)),
        ("a JSON array", frame(b"[1,2,3]")),
        ("frame over the 1 MiB cap", ((1u32 << 20) + 1).to_be_bytes().to_vec()),
    ];
    for (what, bytes) in &cases {
        let mut c = Control::connect(server.port());
        c.send_raw(bytes);
        match c.read_reply() {
            Reply::Frame(v) => {
                assert_eq!(v["type"], "error", "{what}: expected an error reply, got {v}");
                assert_eq!(v["kind"], "protocol", "{what}: expected a protocol error, got {v}");
                c.expect_closed();
            }
            Reply::Closed => {}
        }
        server.assert_running();
    }
    // "go" first must be named as out of order.
    let mut c = Control::connect(server.port());
    c.send_json(&json!({"type": "go"}));
    let (_, msg) = c.expect_error();
    assert!(msg.contains("hello"), "the reply to 'go' first does not say a hello was expected: {msg}");

    // A frame cut short, then the client goes away; and a client that connects and leaves.
    let mut c = Control::connect(server.port());
    c.send_raw(&[0, 0, 0, 100, b'{', b'"']);
    drop(c);
    drop(Control::connect(server.port()));
    still_serves(&rp, &mut server);
}

/// A spec the CLI would never send (it validates first) must be rejected by the server too.
#[test]
fn server_validates_the_spec_a_peer_sends() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let mut spec = serde_json::to_value(ringperf_core::TestSpec::default()).expect("spec serializes");
    spec["duration_ms"] = json!(1000);
    let bad: Vec<(&str, &str, Value)> = vec![
        ("flows", "flows", json!(1_000_000_000u64)),
        ("duration_ms", "length", json!(0)),
        ("send_size", "send size", json!(0)),
        ("response_size", "response size", json!(u32::MAX)),
    ];
    for (field, needle, value) in bad {
        let mut c = Control::connect(server.port());
        let v = c.handshake(None);
        assert_eq!(v["protocol"], ringperf_control::protocol::PROTOCOL_VERSION);
        assert!(v["environment"]["kernel_release"].is_string(), "welcome without environment: {v}");
        let mut s = spec.clone();
        s[field] = value;
        c.send_json(&json!({"type": "test", "spec": s}));
        let (kind, msg) = c.expect_error();
        assert_eq!(kind, "usage", "{field}: {msg}");
        assert!(msg.contains(needle), "the reply for a bad {field} does not mention '{needle}': {msg}");
        c.expect_closed();
    }
    server.assert_running();
}

/// A client that connects and says nothing must not hold up other clients.
#[test]
fn silent_client_does_not_block_other_clients() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let idle = Control::connect(server.port());
    still_serves(&rp, &mut server);
    drop(idle);
}

#[test]
fn sigterm_stops_an_idle_server_with_status_0() {
    let rp = ringperf!();
    let mut server = rp.serve();
    server.child().signal(libc::SIGTERM);
    let status = server.child().wait_timeout(Duration::from_secs(5));
    let status = status.unwrap_or_else(|| panic!("the server ignored SIGTERM for 5 s: {:?}", server.log()));
    assert_eq!(status.code(), Some(0), "the server exited with {status} on SIGTERM: {:?}", server.log());
}

/// SIGTERM during a test: the server stops accepting but lets the test finish, then exits 0.
#[test]
fn sigterm_lets_the_test_in_progress_finish() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let client = {
        let rp = rp.clone();
        thread::spawn(move || rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "2", "--json"]))
    };
    assert!(
        server.wait_for_log("session started", Duration::from_secs(20)).is_some(),
        "the client never reached the server: {:?}",
        server.log()
    );
    thread::sleep(Duration::from_millis(500));
    server.child().signal(libc::SIGTERM);
    let outcome = client.join().expect("client thread");
    let r = outcome.success().report();
    check_stream_report(&r, false);
    let status = server.child().wait_timeout(Duration::from_secs(15));
    let status =
        status.unwrap_or_else(|| panic!("the server did not exit after SIGTERM: {:?}", server.log()));
    assert_eq!(status.code(), Some(0), "the server exited with {status}: {:?}", server.log());
}

/// The server dies in the middle of a test: the client must exit 3 with a one-line
/// message, not hang, and still print what it measured as a report marked partial.
fn server_killed_mid_test(args: &[&str]) {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let mut all = args.to_vec();
    all.extend(["-H", "127.0.0.1", "-p", &port, "-l", "10", "--json"]);
    let client = {
        let rp = rp.clone();
        let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        thread::spawn(move || rp.run(&all.iter().map(String::as_str).collect::<Vec<_>>()))
    };
    assert!(
        server.wait_for_log("session started", Duration::from_secs(20)).is_some(),
        "the client never reached the server: {:?}",
        server.log()
    );
    thread::sleep(Duration::from_secs(1));
    server.child().kill();
    let o = client.join().expect("client thread");
    assert_eq!(o.status.code(), Some(3), "wrong exit code: {o}");
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr: {o}");
    assert!(lines[0].contains("partial result"), "the message does not say the result is partial: {o}");
    let r = o.report();
    assert!(r.partial, "a cut-short run not marked partial: {r:?}");
    assert!(!r.partial_reason.as_deref().expect("partial_reason").is_empty());
    assert!(r.remote.is_none(), "a dead server's side cannot have reported: {:?}", r.remote);
    let moved = r.local.bytes_sent + r.local.bytes_received;
    assert!(moved > 0, "the partial report lost what the client measured: {r:?}");
    let elapsed = r.local.elapsed_ns;
    assert!(elapsed < 10_000_000_000, "the client waited out the test after the server died: {elapsed} ns");
}

#[test]
fn server_killed_mid_stream_fails_the_client_with_exit_3() {
    server_killed_mid_test(&["stream"]);
}

#[test]
fn server_killed_mid_reverse_stream_fails_the_client_with_exit_3() {
    server_killed_mid_test(&["stream", "--reverse"]);
}

#[test]
fn server_killed_mid_rr_fails_the_client_with_exit_3() {
    server_killed_mid_test(&["rr"]);
}

/// A raw control connection to `server`, logged in and 'ready' for the default stream
/// test `duration_ms` long, `adjust`ed: the connection, the data port and the cookie.
fn ready_for_stream(
    server: &Server,
    duration_ms: u64,
    adjust: impl FnOnce(&mut Value),
) -> (Control, u16, u64) {
    let mut c = Control::connect(server.port());
    c.handshake(None);
    let mut spec = serde_json::to_value(ringperf_core::TestSpec::default()).expect("spec serializes");
    spec["duration_ms"] = json!(duration_ms);
    adjust(&mut spec);
    let (port, cookie) = c.start_test(&spec);
    (c, port, cookie)
}

/// Two clients at once on one server: each session sees only its own traffic.
#[test]
fn concurrent_sessions_are_isolated() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let rr = {
        let (rp, port) = (rp.clone(), port.clone());
        thread::spawn(move || rp.run(&["rr", "-H", "127.0.0.1", "-p", &port, "-l", "1", "--json"]))
    };
    stream_against(&rp, &server, false);
    let r = rr.join().expect("rr thread").success().report();
    check_rr_report(&r);
    server.assert_running();
}

/// A client written here, not the engine's: the server's byte count must match exactly
/// what was sent on the data connection (the 12-byte flow header excluded), and data
/// connections with a wrong cookie or flow index must be dropped, not counted.
#[test]
fn server_counts_a_foreign_clients_bytes_exactly_and_drops_strangers() {
    use std::io::Write;
    use std::net::{Shutdown, TcpStream};

    let rp = ringperf!();
    let mut server = rp.serve();
    let (mut c, port, cookie) = ready_for_stream(&server, 1000, |_| {});
    let data = |cookie: u64, flow: u32| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("data connection");
        s.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
        s.set_write_timeout(Some(Duration::from_secs(15))).expect("timeout");
        s.write_all(&flow_header(cookie, flow)).expect("flow header");
        s
    };
    let stranger = data(cookie ^ 0xdead_beef, 0);
    assert_closed_by_server(stranger, "a data connection with a wrong cookie");
    let bad_flow = data(cookie, 7);
    assert_closed_by_server(bad_flow, "a data connection with a flow index out of range");
    let mut flow = data(cookie, 0);

    // The server says when its workers are armed; a client then sends go.
    c.armed_then_go();
    let chunk: Vec<u8> = (0..65_536u32).map(|i| (i % 251) as u8).collect();
    let mut sent = 0u64;
    for _ in 0..40 {
        flow.write_all(&chunk).expect("sending payload");
        sent += chunk.len() as u64;
    }
    flow.write_all(&chunk[..12_345]).expect("sending payload");
    sent += 12_345;
    // A well-behaved sender closes at the end of the window, not before it: an early
    // close is a failed test (see the test below).
    thread::sleep(Duration::from_millis(1100));
    flow.shutdown(Shutdown::Write).expect("half-close");

    let side = c.side_report();
    assert_eq!(side.role, Role::StreamReceiver);
    assert_eq!(side.bytes_received, sent, "the server miscounted what it received");
    assert_eq!(side.bytes_sent, 0);
    drop(flow);
    server.assert_running();
}

/// A sender that closes its data connection long before the deadline (a killed client)
/// must fail the session with a message, not pass as a short, successful test.
#[test]
fn a_sender_that_stops_early_fails_the_session() {
    use std::io::Write;
    use std::net::Shutdown;

    let rp = ringperf!();
    let mut server = rp.serve();
    let (mut c, port, cookie) = ready_for_stream(&server, 5000, |_| {});
    let mut flow = c.open_flow_and_go(port, cookie);
    flow.write_all(&[1u8; 4096]).expect("payload");
    flow.shutdown(Shutdown::Write).expect("half-close");
    match c.read_reply() {
        Reply::Frame(v) => {
            assert_eq!(v["type"], "error", "an early close was reported as {v}");
            let msg = v["message"].as_str().unwrap_or_default();
            assert!(msg.contains("before the end of the test"), "unexpected message: {msg}");
        }
        Reply::Closed => panic!("the server closed the session without saying why"),
    }
    server.assert_running();
}

/// An MPTCP data connection from this host: `cookie` and `flow` as the flow header, from
/// `source`, to the server's data port; `None` where MPTCP sockets cannot be opened.
fn mptcp_data(source: &str, port: u16, cookie: u64, flow: u32) -> Option<std::net::TcpStream> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let p = ringperf_core::measure::mptcp::IPPROTO_MPTCP;
    // SAFETY: socket takes no memory; the new descriptor is owned by the stream below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, p) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is our own new socket and nothing else owns it.
    let sock = unsafe { socket2::Socket::from_raw_fd(fd) };
    let bind: std::net::SocketAddr = format!("{source}:0").parse().expect("a source address");
    sock.bind(&bind.into()).expect("binding the source address");
    let to: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("the data port");
    sock.connect(&to.into()).expect("an MPTCP data connection");
    let mut s: std::net::TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
    s.write_all(&flow_header(cookie, flow)).expect("flow header");
    Some(s)
}

/// An MPTCP test's data listener listens on every address and stays open to the end (a
/// subflow joins through it), so the accept filter must still hold there: a wrong cookie
/// and another source address are closed, a connection made after the flows are in is
/// never served or counted, and the session counts exactly its own flow's bytes.
#[test]
fn an_mptcp_listener_drops_strangers_and_counts_only_its_flow() {
    use std::io::Write;
    use std::net::Shutdown;

    let test = "an_mptcp_listener_drops_strangers_and_counts_only_its_flow";
    let rp = ringperf!();
    let mut server = rp.serve();
    let (mut c, port, cookie) = ready_for_stream(&server, 1000, |spec| spec["socket"]["mptcp"] = json!(true));
    let Some(stranger) = mptcp_data("127.0.0.1", port, cookie ^ 0xdead_beef, 0) else {
        return ringperf_tests::skip(test, "this kernel or namespace opens no MPTCP sockets");
    };
    assert_closed_by_server(stranger, "an MPTCP data connection with a wrong cookie");
    let elsewhere = mptcp_data("127.0.0.77", port, cookie, 0).expect("an MPTCP socket");
    assert_closed_by_server(elsewhere, "an MPTCP data connection with the right cookie from another address");
    let mut flow = mptcp_data("127.0.0.1", port, cookie, 0).expect("an MPTCP socket");

    c.armed_then_go();
    // After the flows are in: a second connection with the right cookie reaches the
    // listener that is still open, and what it sends must not be counted.
    let mut late = mptcp_data("127.0.0.1", port, cookie, 0).expect("an MPTCP socket");
    let chunk: Vec<u8> = (0..65_536u32).map(|i| (i % 251) as u8).collect();
    late.write_all(&chunk).expect("the late connection sends into its backlog");
    let mut sent = 0u64;
    for _ in 0..20 {
        flow.write_all(&chunk).expect("sending payload");
        sent += chunk.len() as u64;
    }
    thread::sleep(Duration::from_millis(1100));
    flow.shutdown(Shutdown::Write).expect("half-close");

    let side = c.side_report();
    assert_eq!(side.bytes_received, sent, "the server counted bytes of a connection that is not its flow");
    drop((flow, late));
    server.assert_running();
}
