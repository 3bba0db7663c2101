//! Who may use a server, and for what: pre-shared-key authentication (a wrong, missing or
//! replayed answer is refused and logged with the peer), the allow list, and each of the
//! operator's limits refused with its name and value.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use ringperf_core::setting::spell_settings;
use ringperf_tests::{check_stream_report, ringperf, Control, Reply, Ringperf, Server, TestReportExt};

const KEY: &str = "a-test-key-of-thirty-two-bytes!!";

/// A key file in a fresh temporary directory, mode 600.
fn key_file(name: &str, key: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringperf-security-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("key");
    fs::write(&path, format!("{key}\n")).expect("writing the key");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod 600");
    path
}

fn psk_server(rp: &Ringperf, name: &str) -> (Server, PathBuf) {
    let key = key_file(name, KEY);
    let server = rp.serve_with(&["--psk-file", key.to_str().expect("utf-8 path")]);
    (server, key)
}

#[test]
fn right_key_is_served_wrong_or_missing_key_is_refused_and_logged() {
    let rp = ringperf!();
    let (mut server, key) = psk_server(&rp, "keys");
    let port = server.port_arg();
    let base = ["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"];

    let mut args = base.to_vec();
    args.extend(["--psk-file", key.to_str().expect("path"), "--json"]);
    check_stream_report(&rp.run(&args).success().report(), false);

    let mut cmd = rp.command(&[&base[..], &["--json"]].concat());
    cmd.env("RINGPERF_PSK", KEY);
    let o = ringperf_tests::run_with_timeout(cmd, ringperf_tests::RUN_TIMEOUT);
    check_stream_report(&o.success().report(), false);

    let o = rp.run(&base);
    o.failure(3, &["pre-shared key", "--psk-file", "RINGPERF_PSK"]);
    assert!(
        server.wait_for_log("no key", Duration::from_secs(5)).is_some_and(|l| l.contains("127.0.0.1:")),
        "the refusal is not logged with the peer: {:?}",
        server.log()
    );

    // Another key: the client finds the server's proof wrong and leaves before it proves
    // anything; the server logs a client that left after the challenge.
    let mut cmd = rp.command(&base);
    cmd.env("RINGPERF_PSK", "another-key-of-enough-length-here");
    let o = ringperf_tests::run_with_timeout(cmd, ringperf_tests::RUN_TIMEOUT);
    o.failure(3, &["authentication failed", "did not prove", "check --psk-file or RINGPERF_PSK"]);
    assert!(
        server
            .wait_for_log("after the challenge", Duration::from_secs(5))
            .is_some_and(|l| l.contains("127.0.0.1:")),
        "the client that left is not logged with the peer: {:?}",
        server.log()
    );
    // A client that proves a wrong key without checking the server first is refused.
    let mut c = Control::connect(server.port());
    let ch = c.hello();
    c.send_json(&serde_json::json!({"type": "auth", "proof": "ab".repeat(32)}));
    let (kind, msg) = c.expect_error();
    assert_eq!(kind, "auth", "a wrong proof for {ch} was not refused: {msg}");
    assert!(
        server.wait_for_log("wrong key", Duration::from_secs(5)).is_some_and(|l| l.contains("127.0.0.1:")),
        "the wrong key is not logged with the peer: {:?}",
        server.log()
    );
    server.assert_running();
}

#[test]
fn a_recorded_answer_replayed_in_a_new_session_is_refused() {
    let rp = ringperf!();
    let (mut server, _key) = psk_server(&rp, "replay");
    // An honest session, recorded.
    let nonce = ringperf_control::auth::hex(&[7u8; 32]);
    let endpoint = format!("127.0.0.1:{}", server.port());
    let mut c = Control::connect(server.port());
    let first = c.hello_with(&nonce, &endpoint);
    assert_eq!(first["auth_required"], true, "the server does not ask for the key: {first}");
    let proof = c.answer(&first, Some(KEY));
    assert!(matches!(c.read_reply(), Reply::Frame(v) if v["type"] == "welcome"));
    drop(c);

    // The same hello and answer, word for word, in a new session.
    let mut c = Control::connect(server.port());
    let second = c.hello_with(&nonce, &endpoint);
    assert_ne!(first["server_nonce"], second["server_nonce"], "the server reused its nonce");
    assert_ne!(first["proof"], second["proof"], "the server proved the same for two sessions");
    c.send_json(&serde_json::json!({"type": "auth", "proof": proof}));
    let (kind, msg) = c.expect_error();
    assert_eq!(kind, "auth", "a replayed proof was not refused as an auth failure: {msg}");
    c.expect_closed();

    // The server's own proof reflected back as a client's is refused too.
    let mut c = Control::connect(server.port());
    let ch = c.hello();
    c.send_json(&serde_json::json!({"type": "auth", "proof": ch["proof"]}));
    let (kind, _) = c.expect_error();
    assert_eq!(kind, "auth", "the server's proof in {ch} was taken as a client's");
    server.assert_running();
}

/// The server proves it holds the key only for an endpoint of its own: a hello naming
/// another (what a relay passes on) gets no proof, an auth error that names the flag for a
/// real forward, and a log line.
#[test]
fn a_hello_naming_another_endpoint_gets_no_proof() {
    let rp = ringperf!();
    let (mut server, _key) = psk_server(&rp, "endpoint");
    let own = format!("127.0.0.1:{}", server.port());
    for elsewhere in
        ["127.0.0.2:12866".to_string(), format!("127.0.0.1:{}", server.port() ^ 1), "[::1]:1".into()]
    {
        let mut c = Control::connect(server.port());
        let nonce = ringperf_control::auth::hex(&[9u8; 32]);
        let v = ringperf_control::protocol::PROTOCOL_VERSION;
        c.send_json(&serde_json::json!({
            "type": "hello", "protocol": v, "tool_version": "t",
            "client_nonce": nonce, "server_endpoint": elsewhere,
        }));
        let (kind, msg) = c.expect_error();
        assert_eq!(kind, "auth", "{elsewhere}: {msg}");
        // The wire names the setting; a client's front end spells it as its user types it.
        let msg = spell_settings(&msg, ringperf_cli::args::spelling::native);
        assert!(msg.contains(&format!("--public-endpoint {elsewhere}")), "{msg}");
        assert!(!msg.contains(&own), "the refusal tells a stranger the server's own address: {msg}");
        c.expect_closed();
    }
    let line = server.wait_for_log("not this server's endpoint", Duration::from_secs(5)).expect("logged");
    assert!(line.contains(&format!("accepted on {own}")), "{line}");
    // Its own endpoint is proved.
    let mut c = Control::connect(server.port());
    c.handshake(Some(KEY));
    server.assert_running();
}

/// A dual-stack server accepts an IPv4 client on ::ffff:a.b.c.d and proves for a.b.c.d,
/// the endpoint the client dialled; an IPv6 client gets its proof for [::1].
#[test]
fn a_dual_stack_server_proves_for_the_endpoint_each_family_dialled() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        ringperf_tests::skip(
            "a_dual_stack_server_proves_for_the_endpoint_each_family_dialled",
            "no IPv6 loopback",
        );
        return;
    }
    let rp = ringperf!();
    let key = key_file("dual", KEY);
    let mut server =
        Server::start(rp.command(&["serve", "--port", "0", "--psk-file", key.to_str().expect("path")]));
    let port = server.port_arg();
    for host in ["127.0.0.1", "::1"] {
        let r = rp.run_report(&[
            "stream",
            "-H",
            host,
            "-p",
            &port,
            "-l",
            "0.3",
            "--psk-file",
            key.to_str().expect("path"),
        ]);
        check_stream_report(&r, false);
    }
    assert_eq!(
        server.log().iter().filter(|l| l.contains("session started")).count(),
        2,
        "{:?}",
        server.log()
    );
    server.assert_running();
}

#[test]
fn a_key_file_others_can_read_is_refused() {
    let rp = ringperf!();
    let key = key_file("mode", KEY);
    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).expect("chmod");
    let o =
        rp.run(&["serve", "--bind", "127.0.0.1", "--port", "0", "--psk-file", key.to_str().expect("path")]);
    o.failure(2, &["chmod 600"]);
}

#[test]
fn peers_outside_the_allow_list_are_closed_at_once_and_logged() {
    let rp = ringperf!();
    let mut server = rp.serve_with(&["--allow", "198.18.0.0/15", "--allow", "10.0.0.0/8"]);
    let port = server.port_arg();
    let o = rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"]);
    o.failure(3, &[]);
    assert!(
        server.wait_for_log("--allow", Duration::from_secs(5)).is_some_and(|l| l.contains("127.0.0.1:")),
        "the refusal is not logged: {:?}",
        server.log()
    );
    let mut c = Control::connect(server.port());
    c.expect_closed();
    server.assert_running();

    let mut open = rp.serve_with(&["--allow", "127.0.0.0/8"]);
    let port = open.port_arg();
    let r = rp.run_report(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"]);
    check_stream_report(&r, false);
    open.assert_running();
}

/// Each limit: the refusal names it and its value, the exit code says whose move it is.
#[test]
fn each_limit_is_refused_with_its_name_and_value() {
    let rp = ringperf!();
    let mut server = rp.serve_with(&[
        "--max-duration",
        "2",
        "--max-flows",
        "2",
        "--max-message",
        "1M",
        "--max-memory",
        "1M",
        "--max-rate",
        "200m",
    ]);
    let port = server.port_arg();
    // Defaults within every limit; a test's own -l or -b replaces them.
    let run = |extra: &[&str]| {
        let mut a = vec!["stream", "-H", "127.0.0.1", "-p", &port];
        if !extra.contains(&"-l") {
            a.extend(["-l", "1"]);
        }
        if !extra.contains(&"-b") {
            a.extend(["-b", "100m"]);
        }
        a.extend_from_slice(extra);
        rp.run(&a)
    };
    run(&["-l", "3"]).failure(2, &["--max-duration 2", "-l 2"]);
    run(&["--flows", "3"]).failure(2, &["--max-flows 2", "--flows 2"]);
    run(&["-M", "2M"]).failure(2, &["--max-message", "1048576"]);
    run(&["--flows", "2", "-M", "1M", "--verify", "--recv-engine", "recv"])
        .failure(2, &["--max-memory of 1 mib"]);
    run(&["-b", "300m"]).failure(2, &["--max-rate", "-b 200000000 or less"]);
    rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "1"]).failure(2, &["--max-rate", "pass -b"]);
    // rr asks for a rate like a stream (the server paces its responses to it).
    rp.run(&["rr", "-H", "127.0.0.1", "-p", &port, "-l", "1"]).failure(2, &["--max-rate", "pass -b"]);
    // The syscall receive has no ring timers to police with; every ring receive can be held.
    run(&["--recv-engine", "syscall"]).failure(2, &["--max-rate", "--recv-engine recv"]);

    // Within every limit the test runs, paced to what it asked for, on a one-shot and on a
    // standing receive (the default).
    for engine in ["recv", "multishot"] {
        let o = run(&["--json", "--recv-engine", engine]).success();
        let r = o.report();
        check_stream_report(&r, false);
        assert_eq!(r.remote().recv_engine.name(), engine);
        let bps = r.summary.throughput_bits_per_sec;
        assert!(bps <= 100e6 * 1.05, "a -b 100m test on {engine} ran at {bps} bit/s");
        assert!(!r.partial);
    }
    server.assert_running();
}

#[test]
fn sessions_over_the_limit_are_told_to_retry() {
    let rp = ringperf!();
    let mut server = rp.serve_with(&["--max-sessions", "1"]);
    let port = server.port_arg();
    let long = {
        let (rp, port) = (rp.clone(), port.clone());
        thread::spawn(move || rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "3", "--json"]))
    };
    assert!(server.wait_for_log("session started", Duration::from_secs(20)).is_some());
    let o = rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"]);
    o.failure(3, &["--max-sessions", "1", "try again"]);
    check_stream_report(&long.join().expect("client").success().report(), false);
    // The slot is free again.
    thread::sleep(Duration::from_millis(200));
    let r = rp.run_report(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.3"]);
    check_stream_report(&r, false);
    server.assert_running();
}

/// A client that agrees to a rate and then sends as fast as it can: the server holds what
/// it reads to its --max-rate during the window, so TCP's window throttles the sender. Both
/// ways the server can hold a receive: a one-shot chain it does not arm again, and a standing
/// receive (a stream's default) it cancels until the flow's bucket refills.
#[test]
fn a_client_that_ignores_the_agreed_rate_is_held_to_it() {
    use std::io::Write;
    use std::time::Instant;

    let rp = ringperf!();
    let mut server = rp.serve_with(&["--max-rate", "8m"]);
    for engine in ["recv", "multishot"] {
        let mut c = Control::connect(server.port());
        c.handshake(None);
        let mut spec = serde_json::to_value(ringperf_core::TestSpec::default()).expect("spec");
        spec["duration_ms"] = serde_json::json!(2000);
        spec["pacing"]["total_bps"] = serde_json::json!(8_000_000u64);
        spec["remote"]["recv_engine"] = serde_json::json!(engine);
        let (port, cookie) = c.start_test(&spec);
        let mut flow = c.open_flow_and_go(port, cookie);
        // Blast for most of the window (the server reads at full speed again once its window
        // closes); writes block once the server stops reading and the buffers are full.
        flow.set_write_timeout(Some(Duration::from_millis(100))).expect("timeout");
        let chunk = vec![7u8; 64 * 1024];
        let start = Instant::now();
        let mut sent = 0u64;
        while start.elapsed() < Duration::from_millis(1900) {
            if let Ok(n) = flow.write(&chunk) {
                sent += n as u64;
            }
        }
        drop(flow);
        let side = c.side_report();
        eprintln!(
            "figures: rate-ignoring client under --max-rate 8m, server receiving with {engine}: wrote {sent} B in 1.9 s, the server read {} B",
            side.bytes_received
        );
        assert_eq!(side.recv_engine.name(), engine, "the server received with another engine");
        // 1.9 s at 1 MB/s, plus what the socket buffers hold (tcp_rmem max is 32 MiB here,
        // wmem 4 MiB); an unpaced loopback stream moves gigabytes in that time.
        assert!(sent < 48 << 20, "{engine}: the client pushed {sent} bytes past a server at 8 Mbit/s");
        assert_eq!(side.bytes_received, sent, "{engine}: the server lost bytes it was sent");
    }
    server.assert_running();
}

#[test]
fn a_public_endpoint_needs_a_key_and_a_port() {
    let rp = ringperf!();
    let serve = ["serve", "--bind", "127.0.0.1", "--port", "0"];
    // Without a key the server proves nothing, so there is nothing to prove for.
    rp.run(&[&serve[..], &["--public-endpoint", "127.0.0.1:1"]].concat()).failure(2, &["--psk-file"]);
    let key = key_file("public", KEY);
    let with_key = [&serve[..], &["--psk-file", key.to_str().expect("path")]].concat();
    rp.run(&[&with_key[..], &["--public-endpoint", "203.0.113.5"]].concat())
        .failure(2, &["--public-endpoint '203.0.113.5'", "HOST:PORT"]);
}
