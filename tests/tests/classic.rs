//! The classic reference engines (`--send-engine syscall`, `--recv-engine syscall`): every
//! workload they serve, on one flow (blocking sockets) and on 64 flows per worker (epoll),
//! on both sides and against io_uring peers, with --verify. They count system calls, not
//! ring enters, and keep the same accounting as the ring engines.

use std::process::Stdio;
use std::thread;
use std::time::Duration;

use ringperf_control::{run_test, Target};
use ringperf_core::spec::{Explicit, RecvEngine, SendEngine, SideSpec, Workload};
use ringperf_core::TestSpec;
use ringperf_tests::{
    check_rr_report, check_stream_report, parse, ringperf, ChildGuard, SideReport, SideReportExt, TestReport,
    TestReportExt,
};

const SYSCALL: (SendEngine, RecvEngine) = (SendEngine::Syscall, RecvEngine::Syscall);
const RING: (SendEngine, RecvEngine) = (SendEngine::Copy, RecvEngine::Recv);

/// The side of `r` named `side` (local, remote).
fn side<'a>(r: &'a TestReport, side: &str) -> &'a SideReport {
    if side == "local" {
        &r.local
    } else {
        r.remote()
    }
}

/// The payload check came out clean on `side`, over every byte it received.
fn check_verified(r: &TestReport, side: &str) {
    let x = self::side(r, side);
    let v = x.verify();
    assert_eq!(v.mismatches, 0, "{side}: payload corrupted: {v:?}");
    assert_eq!(v.bytes_checked, x.bytes_received, "{side}: {v:?}");
}

/// A classic side counts its calls (sends and receives where it moved payload), has no
/// ring, and with `flows_per_worker` > 1 waited in epoll.
fn check_classic_side(r: &TestReport, side: &str, sends: bool, receives: bool, flows_per_worker: u64) {
    let x = self::side(r, side);
    let c = x.ring.syscalls.unwrap_or_else(|| panic!("{side}: no system call counts: {:?}", x.ring));
    assert_eq!(x.ring.enters, 0, "{side}: a classic side reports ring enters");
    if sends {
        assert_eq!(x.send_engine.name(), "syscall");
        assert!(c.sends > 0, "{side}: {c:?}");
        assert!(x.send().sends > 0, "{side}: no sends in the send report");
        assert!(x.send().zero_copy.is_none());
    }
    if receives {
        assert_eq!(x.recv().engine.name(), "syscall");
        assert!(c.recvs > 0, "{side}: {c:?}");
    }
    if flows_per_worker > 1 {
        assert!(c.epoll_waits > 0, "{side}: {flows_per_worker} flows and no epoll_wait: {c:?}");
    } else {
        assert_eq!(c.epoll_waits, 0, "{side}: one blocking flow waited in epoll: {c:?}");
    }
}

fn run_cli(args: &[&str]) -> TestReport {
    let mut all = args.to_vec();
    all.extend(["-l", "1", "--verify", "--send-engine", "syscall", "--recv-engine", "syscall"]);
    ringperf!().run_report(&all)
}

/// A test run in this process against an embedded server, each side with its own engines
/// (the CLI gives both sides the same ones): the server gets its engines over the control
/// protocol, as any remote server would.
fn run_mixed(
    workload: Workload,
    local: (SendEngine, RecvEngine),
    remote: (SendEngine, RecvEngine),
) -> TestReport {
    let mut spec = TestSpec::for_workload(workload);
    spec.duration_ms = 1000;
    // crr and the UDP tests check their own framing (cookies, sequence numbers) instead.
    spec.verify = matches!(workload, Workload::Stream | Workload::Rr);
    spec.resolve(&Explicit::default());
    // After the defaults: the rule gives both sides one pair, and these differ.
    spec.local = SideSpec { send_engine: local.0, recv_engine: local.1, ..SideSpec::default() };
    spec.remote = SideSpec { send_engine: remote.0, recv_engine: remote.1, ..SideSpec::default() };
    let report =
        run_test(&spec, &Target::Embedded).unwrap_or_else(|e| panic!("{workload:?} run failed: {e}"));
    assert!(!report.partial, "{:?}", report.partial_reason);
    report
}

#[test]
fn rr_syscall_on_both_sides_one_flow_blocking() {
    let r = run_cli(&["rr", "-r", "100,3000"]);
    check_rr_report(&r);
    for side in ["local", "remote"] {
        check_verified(&r, side);
        check_classic_side(&r, side, true, true, 1);
    }
}

#[test]
fn rr_syscall_on_both_sides_64_flows_per_worker_over_epoll() {
    let r = run_cli(&["rr", "--flows", "64", "-r", "100,3000"]);
    check_rr_report(&r);
    for side in ["local", "remote"] {
        check_verified(&r, side);
        check_classic_side(&r, side, true, true, 64);
    }
    // Every flow did work: none starved behind the others.
    let flows = &r.local.flows;
    assert_eq!(flows.len(), 64);
    assert!(flows.iter().all(|f| f.transactions > 0), "a flow completed nothing");
}

#[test]
fn stream_syscall_on_both_sides_one_flow_and_reversed() {
    let r = run_cli(&["stream"]);
    check_stream_report(&r, false);
    check_verified(&r, "remote");
    check_classic_side(&r, "local", true, false, 1);
    check_classic_side(&r, "remote", false, true, 1);
    let r = run_cli(&["stream", "--reverse"]);
    check_stream_report(&r, true);
    check_verified(&r, "local");
    check_classic_side(&r, "remote", true, false, 1);
    check_classic_side(&r, "local", false, true, 1);
}

#[test]
fn stream_syscall_on_both_sides_64_flows_per_worker_over_epoll() {
    let r = run_cli(&["stream", "--flows", "64", "-m", "16K", "-M", "16K"]);
    check_stream_report(&r, false);
    check_verified(&r, "remote");
    check_classic_side(&r, "local", true, false, 64);
    check_classic_side(&r, "remote", false, true, 64);
}

#[test]
fn rr_syscall_client_against_a_ring_server_and_the_reverse() {
    for (local, remote) in [(SYSCALL, RING), (RING, SYSCALL)] {
        let r = run_mixed(Workload::Rr, local, remote);
        check_rr_report(&r);
        for side in ["local", "remote"] {
            check_verified(&r, side);
        }
        let classic = if local == SYSCALL { "local" } else { "remote" };
        let ring = if local == SYSCALL { "remote" } else { "local" };
        check_classic_side(&r, classic, true, true, 1);
        assert!(side(&r, ring).ring.syscalls.is_none(), "{ring}: a ring side counted syscalls");
    }
}

#[test]
fn stream_syscall_sender_against_a_ring_receiver_and_the_reverse() {
    let r = run_mixed(Workload::Stream, SYSCALL, RING);
    check_stream_report(&r, false);
    check_verified(&r, "remote");
    check_classic_side(&r, "local", true, false, 1);
    let r = run_mixed(Workload::Stream, RING, SYSCALL);
    check_stream_report(&r, false);
    check_verified(&r, "remote");
    check_classic_side(&r, "remote", false, true, 1);
}

#[test]
fn a_side_that_sends_and_receives_takes_both_classic_engines_or_neither() {
    let rp = ringperf!();
    for (send, recv) in [("syscall", "multishot"), ("copy", "syscall")] {
        let out = rp.run(&["rr", "-l", "1", "--send-engine", send, "--recv-engine", recv]);
        out.failure(2, &["--send-engine syscall with --recv-engine syscall"]);
    }
    // A stream side only sends or only receives: any pairing runs.
    let r = rp.run_report(&["stream", "-l", "0.5", "--send-engine", "syscall", "--recv-engine", "multishot"]);
    check_stream_report(&r, false);
}

/// The loops pace by the clock, as the ring's senders do by its timer: `-b` caps a stream
/// and both sides of rr (the server's responses too). Upper bounds a broken pacer misses
/// by a hundred times on loopback; the slack is the message a bucket starts with and the
/// one that takes it into debt at the end.
#[test]
fn syscall_loops_are_paced_like_the_ring() {
    let rp = ringperf!();
    let classic = ["--send-engine", "syscall", "--recv-engine", "syscall"];
    let bps = |x: &SideReport| x.bytes_sent as f64 * 8e9 / x.elapsed_ns as f64;
    let mut args = vec!["stream", "-l", "1", "-b", "10M"];
    args.extend(classic);
    let r = rp.run_report(&args);
    check_stream_report(&r, false);
    let sent = bps(&r.local);
    assert!(
        sent > 0.0 && sent <= 10e6 * 1.05 + 2.0 * 131_072.0 * 8.0,
        "a -b 10M syscall stream sent {sent} bit/s"
    );
    let mut args = vec!["rr", "-l", "1", "-b", "10M", "-r", "64,10000"];
    args.extend(classic);
    let r = rp.run_report(&args);
    check_rr_report(&r);
    let sent = bps(r.remote());
    assert!(
        sent > 0.0 && sent <= 10e6 * 1.05 + 2.0 * 10_000.0 * 8.0,
        "a -b 10M syscall rr server sent {sent} bit/s"
    );
}

/// Ctrl-C stops a classic run at once, blocked calls and all: partial report, exit 130.
#[test]
fn ctrl_c_stops_classic_loops_blocked_or_over_epoll() {
    for extra in [&["rr"][..], &["stream", "--reverse"], &["stream", "--flows", "4"], &["crr"], &["udp-rr"]] {
        let mut args = extra.to_vec();
        args.extend(["-l", "20", "--json", "--send-engine", "syscall", "--recv-engine", "syscall"]);
        let mut cmd = ringperf!().command(&args);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut client = ChildGuard::spawn(cmd);
        thread::sleep(Duration::from_millis(1500));
        client.signal(libc::SIGINT);
        let status =
            client.wait_timeout(Duration::from_secs(10)).expect("the client ignored Ctrl-C for 10 s");
        assert_eq!(status.code(), Some(130), "{extra:?}: {status}");
        let mut out = String::new();
        use std::io::Read;
        client.child_mut().stdout.take().expect("stdout").read_to_string(&mut out).expect("stdout");
        let r: TestReport = parse("the client's stdout", &out);
        assert!(r.partial, "{extra:?}");
        assert!(r.remote.is_some(), "{extra:?}: the server's partial side is missing");
        assert!(r.local.elapsed_ns < 10_000_000_000, "{extra:?}: ran on after Ctrl-C");
    }
}

/// A classic UDP side talks to a ring side: same datagram numbering, same accounting.
#[test]
fn udp_syscall_sides_against_ring_sides_agree() {
    for (local, remote) in [(SYSCALL, RING), (RING, SYSCALL)] {
        let r = run_mixed(Workload::UdpStream, local, remote);
        let (tx, rx) = (r.local.udp(), r.remote().udp());
        let sent = tx.datagrams_sent;
        let received = rx.datagrams_received;
        assert!(sent > 0 && received > 0, "{local:?} -> {remote:?}: sent {sent}, received {received}");
        assert_eq!(received + rx.lost, rx.sequence_span, "{local:?} -> {remote:?}");
        assert!(rx.sequence_span <= sent + tx.send_errors);
        // A datagram numbered otherwise than the peer numbers them would be stray or lost.
        assert!(rx.stray <= 2, "{local:?} -> {remote:?}: {rx:?}");
        assert!(rx.lost < sent, "{local:?} -> {remote:?}: {rx:?}");

        let r = run_mixed(Workload::UdpRr, local, remote);
        let t = r.local.transactions;
        let served = r.remote().transactions;
        assert!(t > 0, "{local:?} -> {remote:?}: no transaction");
        assert!(served >= t && served <= t + 1, "{local:?} -> {remote:?}: server {served}, client {t}");
        assert!(r.local.udp().retransmissions <= r.local.udp().timeouts);
    }
}

/// Both sides of a crr report count the same connections, and every byte adds up.
fn check_crr_counts(r: &TestReport, what: &str) {
    let (local, remote) = (&r.local, r.remote());
    let t = local.transactions;
    assert!(t > 0, "{what}: no connection cycle completed");
    assert_eq!(t, remote.transactions, "{what}: client and server count different cycles");
    assert_eq!(local.crr().connections, t, "{what}");
    assert_eq!(remote.crr().connections, t, "{what}");
    assert_eq!(remote.crr().rejected, 0, "{what}: the server rejected a connection");
    let (req, rsp) = (u64::from(r.spec.request_size), u64::from(r.spec.response_size));
    assert_eq!(local.bytes_sent, t * req, "{what}");
    assert_eq!(remote.bytes_received, t * req, "{what}");
    assert_eq!(remote.bytes_sent, t * rsp, "{what}");
    assert_eq!(local.bytes_received, t * rsp, "{what}");
    assert_eq!(local.latency().count, t, "{what}");
}

/// One flow runs netperf's and netserver's blocking loops on both sides (no epoll), in
/// either close order; 64 flows run over epoll. Counts agree on both sides every time.
#[test]
fn crr_syscall_on_both_sides_one_flow_and_64_flows() {
    for (flows, close_first) in [("1", "server"), ("1", "client"), ("64", "server")] {
        let args = [
            "crr",
            "-l",
            "1",
            "-r",
            "100,3000",
            "--flows",
            flows,
            "--close-first",
            close_first,
            "--send-engine",
            "syscall",
            "--recv-engine",
            "syscall",
        ];
        let r = ringperf!().run_report(&args);
        let what = format!("{flows} flow(s), {close_first} closes first");
        check_crr_counts(&r, &what);
        let c = r.local.syscalls();
        // socket, connect and close (at least) per cycle are the client's other calls.
        assert!(c.other >= 3 * r.local.transactions, "{what}: {c:?}");
        assert_eq!(c.epoll_waits > 0, flows == "64", "{what}: {c:?}");
        let s = r.remote().syscalls();
        assert_eq!(s.epoll_waits > 0, flows == "64", "{what}: server {s:?}");
        // Per connection the server accepts, receives and sends at least once.
        let t = r.remote().transactions;
        assert!(s.recvs >= t && s.sends >= t, "{what}: server {s:?}");
        assert_eq!(r.local.ring.enters, 0);
    }
}

#[test]
fn crr_syscall_client_against_a_ring_server_and_the_reverse() {
    for (local, remote) in [(SYSCALL, RING), (RING, SYSCALL)] {
        let r = run_mixed(Workload::Crr, local, remote);
        check_crr_counts(&r, &format!("{local:?} -> {remote:?}"));
    }
}

/// msg-zerocopy: every zero-copy send gets its completion from the error queue, and on
/// loopback the kernel copied every one, which the report says.
#[test]
fn msg_zerocopy_completions_match_sends_and_loopback_copies() {
    for flows in ["1", "64"] {
        let args =
            ["stream", "-l", "1", "-m", "64K", "--flows", flows, "--verify", "--send-engine", "msg-zerocopy"];
        let r = ringperf!().run_report(&args);
        check_stream_report(&r, false);
        check_verified(&r, "remote");
        assert_eq!(r.local.send_engine.name(), "msg-zerocopy");
        let zc = r.local.zero_copy();
        assert!(zc.sends > 0, "{flows}: {zc:?}");
        assert_eq!(zc.notifications, zc.sends, "{flows}: a completion is missing: {zc:?}");
        assert!(zc.completion_ranges > 0 && zc.completion_ranges <= zc.sends);
        assert_eq!(
            zc.bytes_copied + zc.bytes_zero_copy,
            r.local.bytes_sent,
            "{flows}: copied + zero-copied bytes differ from bytes sent: {zc:?}"
        );
        assert_eq!(zc.copied, zc.notifications, "loopback did not copy? {zc:?}");
        assert!(r.local.ring.syscalls.is_some(), "msg-zerocopy has no ring");
    }
    let out = ringperf!().run(&["stream", "-l", "0.5", "--send-engine", "msg-zerocopy"]).success();
    assert!(out.stdout.contains("msg-zerocopy") && out.stdout.contains("COPIED every send"), "{out}");
    let out = ringperf!().run(&["stream", "-l", "0.5", "--send-engine", "msg-zerocopy", "--require-zc"]);
    assert_eq!(out.code(), 1, "loopback copies, so --require-zc fails: {out}");
    ringperf!()
        .run(&["rr", "-l", "0.5", "--send-engine", "msg-zerocopy"])
        .failure(2, &["msg-zerocopy", "stream only"]);
}

/// zerocopy-receive: mapped + copied + read adds up to what arrived, the pattern holds in
/// all three, and on loopback the report says the kernel copied.
#[test]
fn zerocopy_receive_accounts_every_byte_and_says_loopback_copies() {
    for extra in [&["--flows", "1"][..], &["--flows", "64", "-M", "16K"], &["-m", "1K", "-M", "1K"]] {
        let mut args = vec!["stream", "-l", "1", "--verify", "--recv-engine", "zerocopy-receive"];
        args.extend(extra);
        let r = ringperf!().run_report(&args);
        check_stream_report(&r, false);
        check_verified(&r, "remote");
        let recv = r.remote().recv();
        let z = recv.zero_copy.as_ref().unwrap_or_else(|| panic!("{extra:?}: no recv.zero_copy: {recv:?}"));
        assert_eq!(recv.engine.name(), "zerocopy-receive");
        assert!(z.receives > 0, "{extra:?}: {z:?}");
        let received = r.remote().bytes_received;
        assert_eq!(
            z.bytes_mapped + z.bytes_copied + z.bytes_read,
            received,
            "{extra:?}: mapped + copied + read != received: {z:?}"
        );
        // Loopback payload is never in whole pages: mostly copies.
        assert!(z.bytes_mapped * 2 < received, "{extra:?}: {z:?}");
    }
    let out = ringperf!().run(&["stream", "-l", "0.5", "--recv-engine", "zerocopy-receive"]).success();
    assert!(out.stdout.contains("zerocopy receive:") && out.stdout.contains("copied"), "{out}");
    ringperf!()
        .run(&["rr", "-l", "0.5", "--send-engine", "syscall", "--recv-engine", "zerocopy-receive"])
        .failure(2, &["zerocopy-receive", "stream only"]);
}

/// Interval samples (-D) come from the watcher's tick on every classic loop, both sides,
/// and add up to the totals.
#[test]
fn classic_loops_take_interval_samples_on_both_sides() {
    for w in ["rr", "crr", "stream", "udp-rr"] {
        let args = [w, "-l", "1", "-D", "0.2", "--send-engine", "syscall", "--recv-engine", "syscall"];
        let r = ringperf!().run_report(&args);
        for (side, x) in r.sides() {
            let iv = &x.intervals;
            // At least one tick and the closing remainder (a loop blocked across several
            // ticks, on a loaded machine, samples once when it comes back).
            assert!(iv.len() >= 2, "{w} {side}: {} interval samples over 1 s at 0.2 s", iv.len());
            let (key, sum, total): (_, u64, _) = match (w, side) {
                ("stream", "remote") => {
                    ("bytes_received", iv.iter().map(|i| i.bytes_received).sum(), x.bytes_received)
                }
                ("stream", _) => ("bytes_sent", iv.iter().map(|i| i.bytes_sent).sum(), x.bytes_sent),
                _ => ("transactions", iv.iter().map(|i| i.transactions).sum(), x.transactions),
            };
            assert_eq!(sum, total, "{w} {side}: intervals do not add up ({key})");
        }
    }
}

/// The one-flow classic crr server is netserver's loop, one connection at a time: a
/// connection with a wrong cookie is closed uncounted, a silent one is dropped instead of
/// holding the server (a client hand-written here, over the control protocol), and the
/// real connections after them are answered and counted exactly.
#[test]
fn the_blocking_crr_server_drops_strangers_and_silent_connections_and_keeps_serving() {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    use ringperf_tests::{Control, Reply};
    use serde_json::json;

    let rp = ringperf!();
    let mut server = rp.serve();
    let mut c = Control::connect(server.port());
    c.handshake(None);
    let mut spec = serde_json::to_value(TestSpec::default()).expect("spec serializes");
    spec["workload"] = json!("crr");
    spec["duration_ms"] = json!(1000);
    for side in ["local", "remote"] {
        spec[side]["send_engine"] = json!("syscall");
        spec[side]["recv_engine"] = json!("syscall");
    }
    let (port, cookie) = c.start_test(&spec);
    assert!(matches!(c.read_reply(), Reply::Frame(v) if v["type"] == "armed"), "no 'armed' before go");
    c.send_json(&json!({"type": "go"}));
    let open = |header: Option<(u64, u32)>| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("data connection");
        s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        if let Some((cookie, flow)) = header {
            let mut h = cookie.to_le_bytes().to_vec();
            h.extend_from_slice(&flow.to_le_bytes());
            h.push(b'q'); // the 1-byte request
            s.write_all(&h).expect("header and request");
        }
        s
    };
    let closed_uncounted = |mut s: TcpStream, what: &str| {
        let mut b = [0u8; 1];
        match s.read(&mut b) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("a crr connection with {what} was not closed: {other:?}"),
        }
    };
    closed_uncounted(open(Some((cookie ^ 0x5eed, 0))), "a wrong cookie");
    closed_uncounted(open(None), "nothing sent");
    const REAL: u64 = 5;
    for _ in 0..REAL {
        let mut s = open(Some((cookie, 0)));
        let mut rsp = [0u8; 1];
        s.read_exact(&mut rsp).expect("the response after the strangers");
    }
    c.send_json(&json!({"type": "flows_done"}));
    let side = c.side_report();
    assert_eq!(side.crr().connections, REAL, "{:?}", side.crr());
    assert_eq!(side.crr().rejected, 2, "{:?}", side.crr());
    assert_eq!(side.syscalls().epoll_waits, 0, "one flow is the blocking loop");
    server.assert_running();
}
