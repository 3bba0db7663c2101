//! Reflection: a client whose control connection comes from 127.0.0.1 sends its UDP hellos
//! and requests from 127.0.0.77, the victim's address (on loopback any 127/8 address can
//! be bound, so the forged source is a real socket that counts what it gets). A server
//! that took such a hello would send the test's traffic (a udp-rr's responses, 8,169
//! times the requests' bytes in the probe) to the victim. It must take a flow's hello only from the control
//! connection's address, drop and count the rest, serve the honest flow, and send the
//! victim nothing: on `serve` without a key, with one, and invoked as `netserver`.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use ringperf_core::spec::{RecvEngine, SendEngine, Workload};
use ringperf_core::TestSpec;
use ringperf_engine::net::udp::hello;
use ringperf_tests::fabric::KeyFile;
use ringperf_tests::{Control, Reply, Ringperf, Server, SideReport, SideReportExt};

use crate::{baseline, still_serves};

const VICTIM: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 77);
/// Forged datagrams sent before the honest hello: hellos and requests, half each.
const FORGED: u64 = 8;
/// The longest wait for one datagram the server owes us.
const DATAGRAM_WAIT: Duration = Duration::from_secs(10);

/// A udp-rr of `ms` that answers an 8-byte request with 1000 bytes (what a reflection
/// would multiply), on the ring or, `classic`, on the system-call loops.
fn udp_rr(ms: u64, classic: bool) -> TestSpec {
    let mut s = TestSpec::for_workload(Workload::UdpRr);
    s.duration_ms = ms;
    s.request_size = 8;
    s.response_size = 1000;
    if classic {
        for side in [&mut s.local, &mut s.remote] {
            side.send_engine = SendEngine::Syscall;
            side.recv_engine = RecvEngine::Syscall;
        }
    }
    s
}

/// A udp-stream (client to server, the only way it runs).
fn udp_stream(ms: u64) -> TestSpec {
    let mut s = TestSpec::for_workload(Workload::UdpStream);
    s.duration_ms = ms;
    s
}

/// Request number `seq` of `size` bytes.
fn request(seq: u64, size: u32) -> Vec<u8> {
    let mut r = vec![0u8; size as usize];
    r[..8].copy_from_slice(&seq.to_le_bytes());
    r
}

fn bind(ip: Ipv4Addr) -> UdpSocket {
    UdpSocket::bind((ip, 0)).unwrap_or_else(|e| panic!("binding a UDP socket to {ip}: {e}"))
}

/// Waits for a datagram from `from` on `sock` (others are skipped); its length.
fn datagram_from(sock: &UdpSocket, from: SocketAddr, buf: &mut [u8]) -> usize {
    let until = Instant::now() + DATAGRAM_WAIT;
    sock.set_read_timeout(Some(DATAGRAM_WAIT)).expect("a read timeout");
    while Instant::now() < until {
        match sock.recv_from(buf) {
            Ok((n, src)) if src == from => return n,
            Ok(_) => {}
            Err(e) => panic!("no datagram from {from} within {DATAGRAM_WAIT:?}: {e}"),
        }
    }
    panic!("no datagram from {from} within {DATAGRAM_WAIT:?}")
}

/// Asserts that nothing is waiting on the victim's socket.
fn nothing_reached(victim: &UdpSocket) {
    victim.set_nonblocking(true).expect("non-blocking");
    let mut buf = [0u8; 2048];
    match victim.recv_from(&mut buf) {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Ok((n, from)) => {
            panic!("the victim at {VICTIM} received {n} bytes from {from}: the server reflected")
        }
        Err(e) => panic!("reading the victim's socket: {e}"),
    }
}

/// The key's secret as a client proves it (the file's line).
fn secret(key: &KeyFile) -> String {
    std::fs::read_to_string(key.path()).expect("the key file").trim_end().to_string()
}

/// Runs `spec` on a raw control session from 127.0.0.1 whose UDP flow gets [`FORGED`]
/// hellos and requests from the victim before the honest hello and more requests from it
/// after; the honest flow must be served and the victim get nothing. Returns the server's
/// report.
fn forged_and_honest(server: &Server, psk: Option<&str>, spec: &TestSpec) -> SideReport {
    let victim = bind(VICTIM);
    let honest = bind(Ipv4Addr::LOCALHOST);
    let mut c = Control::connect(server.port());
    c.handshake(psk);
    let (ports, cookie) = c.start_udp_test(&serde_json::to_value(spec).expect("the spec serializes"));
    assert_eq!(ports.len(), 1, "one flow, one port: {ports:?}");
    let to = SocketAddr::from((Ipv4Addr::LOCALHOST, ports[0]));
    let hi = hello(cookie, 0);
    let size = spec.request_size.max(8);
    for seq in 0..FORGED / 2 {
        victim.send_to(&hi, to).expect("a forged hello");
        victim.send_to(&request(seq, size), to).expect("a forged request");
    }
    // The honest hello, repeated as a client does until the server echoes it.
    let until = Instant::now() + DATAGRAM_WAIT;
    honest.set_read_timeout(Some(Duration::from_millis(100))).expect("a read timeout");
    let mut buf = vec![0u8; 65_536];
    loop {
        assert!(Instant::now() < until, "the server never echoed the honest hello from 127.0.0.1");
        honest.send_to(&hi, to).expect("the honest hello");
        match honest.recv_from(&mut buf) {
            Ok((n, from)) if from == to && buf[..n] == hi => break,
            _ => continue,
        }
    }
    assert!(matches!(c.read_reply(), Reply::Frame(v) if v["type"] == "armed"), "no 'armed' before go");
    c.send_json(&serde_json::json!({"type": "go"}));
    // Forged requests in the window: the flow's socket is connected to 127.0.0.1 now.
    for seq in 0..4 {
        victim.send_to(&request(100 + seq, size), to).expect("a forged request");
    }
    // The honest flow is served, and only it: the server counts what came from 127.0.0.1.
    let honest_datagrams = 3;
    for seq in 0..honest_datagrams {
        match spec.workload {
            Workload::UdpRr => {
                honest.send_to(&request(seq, size), to).expect("an honest request");
                let n = datagram_from(&honest, to, &mut buf);
                assert_eq!(n, spec.response_size as usize, "the honest request's response");
                assert_eq!(buf[..8], seq.to_le_bytes(), "the response echoes the request's number");
            }
            _ => {
                honest.send_to(&request(seq, spec.send_size), to).expect("an honest datagram");
            }
        }
    }
    let side = c.side_report();
    assert_eq!(
        side.udp().datagrams_received,
        honest_datagrams,
        "the server took datagrams from someone other than the control peer: {:?}",
        side.udp()
    );
    // Everything the server sent went out before its report.
    nothing_reached(&victim);
    assert_eq!(
        side.udp().foreign_datagrams,
        FORGED,
        "the server's report does not count the forged datagrams: {:?}",
        side.udp()
    );
    side
}

/// The server's log has `sessions` lines naming dropped datagrams, each saying how many
/// and where they came from.
fn logged(server: &Server, datagrams: u64, sessions: usize) {
    let needle = format!("dropped {datagrams} datagrams");
    let until = Instant::now() + Duration::from_secs(5);
    let lines = loop {
        let lines: Vec<String> = server.log().into_iter().filter(|l| l.contains(&needle)).collect();
        if lines.len() >= sessions || Instant::now() >= until {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(lines.len(), sessions, "'{needle}' lines in the server's log: {:?}", server.log());
    for line in lines {
        assert!(line.contains(&VICTIM.to_string()), "the log line does not name the source: {line}");
    }
}

/// Every UDP workload's handshake, against `server`: a udp-rr on the ring and on the
/// system-call loops, and a udp-stream.
fn every_udp_workload(rp: &Ringperf, mut server: Server, key: Option<&KeyFile>) {
    let base = baseline(&server);
    let psk = key.map(secret);
    let specs = [udp_rr(300, false), udp_rr(300, true), udp_stream(300)];
    for (k, spec) in specs.iter().enumerate() {
        forged_and_honest(&server, psk.as_deref(), spec);
        logged(&server, FORGED, k + 1);
    }
    still_serves(rp, &mut server, base, key.map(KeyFile::path));
}

#[test]
fn a_keyless_server_answers_udp_only_from_the_control_peer() {
    let rp = ringperf_tests::ringperf!();
    let server = rp.serve();
    every_udp_workload(&rp, server, None);
}

#[test]
fn a_server_with_a_key_answers_udp_only_from_the_control_peer() {
    let rp = ringperf_tests::ringperf!();
    let key = KeyFile::new("reflection");
    let server = rp.serve_with(&["--psk-file", key.arg()]);
    every_udp_workload(&rp, server, Some(&key));
}

/// `netserver` (ringperf run under that name, as netperf's harnesses start it) is keyless.
#[test]
fn netserver_answers_udp_only_from_the_control_peer() {
    let rp = ringperf_tests::ringperf!();
    let mut cmd = rp.command(&["-D", "-L", "127.0.0.1", "-p", "0"]);
    cmd.arg0("netserver");
    let server = Server::start(cmd);
    every_udp_workload(&rp, server, None);
}

/// The attack as the probe ran it: only forged hellos, the whole setup time. The session
/// fails, saying where the datagrams came from, and the victim got nothing.
#[test]
fn forged_hellos_alone_fail_the_session_and_reach_no_one() {
    let rp = ringperf_tests::ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let victim = bind(VICTIM);
    let mut c = Control::connect(server.port());
    c.handshake(None);
    let (ports, cookie) = c.start_udp_test(&serde_json::to_value(udp_rr(1000, false)).expect("spec"));
    let to = SocketAddr::from((Ipv4Addr::LOCALHOST, ports[0]));
    for seq in 0..FORGED / 2 {
        victim.send_to(&hello(cookie, 0), to).expect("a forged hello");
        victim.send_to(&request(seq, 8), to).expect("a forged request");
    }
    // The server gives up on the flow after its setup time (10 s) and says why.
    let (_, msg) = c.expect_error();
    for needle in ["0 of 1 UDP flows", &format!("{FORGED} datagrams"), "127.0.0.1", "127.0.0.77"] {
        assert!(msg.contains(needle), "the refusal lacks '{needle}': {msg}");
    }
    nothing_reached(&victim);
    logged(&server, FORGED, 1);
    still_serves(&rp, &mut server, base, None);
}
