//! Hostile control traffic while a real client runs: a slow-loris client, a flood of
//! half-open connections, frames that claim 4 GiB or nothing, bytes that are not UTF-8 or
//! not JSON, JSON of the wrong shape, absurd values. Each gets an error reply or a close,
//! the real client's test completes, and the server's threads, descriptors and memory come
//! back to where they were.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use ringperf_tests::{check_stream_report, ringperf, Control, Reply, Server};

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// Sends `bytes` on a fresh connection and asserts an error reply (and a close) or a close.
fn answered(server: &Server, what: &str, bytes: &[u8]) -> Option<(String, String)> {
    let mut c = Control::connect(server.port());
    c.send_raw(bytes);
    match c.read_reply() {
        Reply::Frame(v) => {
            assert_eq!(v["type"], "error", "{what}: expected an error reply, got {v}");
            c.expect_closed();
            Some((v["kind"].as_str().unwrap_or("").into(), v["message"].as_str().unwrap_or("").into()))
        }
        Reply::Closed => None,
    }
}

/// Handshakes, then sends `spec` as the test; expects the refusal's kind.
fn spec_refused(server: &Server, what: &str, spec: Value, kind: &str) {
    let mut c = Control::connect(server.port());
    c.handshake(None);
    c.send_json(&json!({"type": "test", "spec": spec}));
    let (k, msg) = c.expect_error();
    assert_eq!(k, kind, "{what}: {msg}");
    c.expect_closed();
}

#[test]
fn hostile_inputs_are_answered_while_a_real_test_completes() {
    let rp = ringperf!();
    let mut server = rp.serve_with(&["--max-handshakes", "64"]);
    // Let the server settle (its first session spawns nothing yet) and take a baseline.
    thread::sleep(Duration::from_millis(200));
    let baseline = (server.fds(), server.threads());
    let rss_before = server.rss_kib();

    let port = server.port_arg();
    let real = {
        let (rp, port) = (rp.clone(), port.clone());
        thread::spawn(move || {
            rp.run(&["stream", "-H", "127.0.0.1", "-p", &port, "-l", "4", "--flows", "2", "--json"])
        })
    };
    assert!(server.wait_for_log("session started", Duration::from_secs(20)).is_some());

    // A flood of half-open connections: 200 connects that never send a byte.
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, server.port()));
    let flood: Vec<TcpStream> =
        (0..200).filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()).collect();
    let flooded = flood.len();
    assert!(flooded >= 150, "only {flooded} of 200 flood connections connected");
    // The server holds at most --max-handshakes of them; no thread per connection.
    thread::sleep(Duration::from_millis(300));
    let threads_during = server.threads();
    assert!(
        threads_during <= baseline.1 + 4,
        "the flood grew the server from {} to {threads_during} threads",
        baseline.1
    );
    assert!(
        server.fds() <= baseline.0 + 64 + 16,
        "the flood holds {} fds (baseline {})",
        server.fds(),
        baseline.0
    );

    // Slow loris: a valid hello, one byte every 300 ms. The deadline covers the whole
    // handshake, so it is closed after about 5 s, not after 5 s per byte.
    let loris = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).expect("loris connect");
        s.set_write_timeout(Some(Duration::from_secs(2))).expect("timeout");
        let hello = frame(br#"{"type":"hello","protocol":2,"tool_version":"slow"}"#);
        let start = Instant::now();
        for b in hello.iter().cycle().take(200) {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(300));
            if start.elapsed() > Duration::from_secs(20) {
                break;
            }
        }
        start.elapsed()
    });

    // Every malformed shape, each answered.
    let mut big = 1u32 << 20;
    big += 1;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a frame claiming 4 GiB", u32::MAX.to_be_bytes().to_vec()),
        ("a frame over the handshake cap", big.to_be_bytes().to_vec()),
        ("a zero-length frame", 0u32.to_be_bytes().to_vec()),
        ("invalid UTF-8", frame(b"\xff\xfe\xfd\xfc")),
        ("invalid JSON", frame(b"{\"type\": \"hello\", ")),
        ("JSON of the wrong shape", frame(br#"{"type":"hello","protocol":"two","tool_version":[]}"#)),
        ("a JSON array", frame(b"[1,2,3]")),
        ("a negative version", frame(br#"{"type":"hello","protocol":-1,"tool_version":"x"}"#)),
        ("an unknown message", frame(br#"{"type":"launch_missiles"}"#)),
        ("a spec before hello", frame(br#"{"type":"test","spec":{}}"#)),
    ];
    for (what, bytes) in &cases {
        if let Some((kind, msg)) = answered(&server, what, bytes) {
            assert_eq!(kind, "protocol", "{what}: {msg}");
        }
    }

    // Absurd values in a spec from an authenticated (keyless) client.
    let mut spec = serde_json::to_value(ringperf_core::TestSpec::default()).expect("spec");
    spec["duration_ms"] = json!(1000);
    let absurd: Vec<(&str, &str, Value, &str)> = vec![
        ("a billion flows", "flows", json!(1_000_000_000u64), "usage"),
        ("a zero send size", "send_size", json!(0), "usage"),
        ("a zero duration", "duration_ms", json!(0), "usage"),
        ("a negative duration", "duration_ms", json!(-5), "protocol"),
        ("a duration past u64", "duration_ms", json!(1e30), "protocol"),
        ("a 4 GiB response", "response_size", json!(u64::from(u32::MAX) + 1), "protocol"),
        ("a string for flows", "flows", json!("many"), "protocol"),
    ];
    for (what, field, value, kind) in absurd {
        let mut s = spec.clone();
        s[field] = value;
        spec_refused(&server, what, s, kind);
    }
    // A path for the server to open: the wire spec has no field for one (the old one is
    // unknown) and its payload no variant.
    let mut s = spec.clone();
    s["remote"]["splice_file"] = json!("/etc/shadow");
    spec_refused(&server, "a file for the server to open", s, "protocol");
    let mut s = spec.clone();
    s["remote"]["payload"] = json!({ "file": "/etc/shadow" });
    spec_refused(&server, "a payload path for the server", s, "protocol");

    // The real client finished its test while all of that went on.
    let r = real.join().expect("real client").success().report();
    check_stream_report(&r, false);

    let loris_time = loris.join().expect("loris");
    assert!(
        loris_time < Duration::from_secs(9),
        "the slow-loris client was kept for {loris_time:?}: the handshake deadline is not per frame"
    );
    assert!(server.log().iter().any(|l| l.contains("timed out waiting for")), "no timeout logged");

    drop(flood);
    let after = server.settle_to(baseline, Duration::from_secs(10));
    assert!(
        after.0 <= baseline.0 && after.1 <= baseline.1,
        "fds/threads {after:?} did not come back to {baseline:?}"
    );
    let rss_after = server.rss_kib();
    let rejected = server.log().iter().filter(|l| l.contains("rejected")).count();
    eprintln!(
        "figures: hostile: {} flood connections (threads {} -> {threads_during} during), {} malformed frames, {} absurd specs, loris closed after {loris_time:?}; {rejected} rejections logged; real test completed; fds/threads {baseline:?} -> {after:?}; RSS {rss_before} -> {rss_after} KiB",
        flooded,
        baseline.1,
        cases.len(),
        9
    );
    assert!(
        rss_after < rss_before + 32 * 1024,
        "the server's memory grew from {rss_before} KiB to {rss_after} KiB"
    );
    server.assert_running();
}
