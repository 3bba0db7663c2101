//! TCP_CRR against the embedded server: both sides count the same connections, every
//! connection is one transaction with one latency sample, per flow and in total.

use std::path::Path;
use std::time::Duration;

use ringperf_tests::{
    check_side_common, parse, ringperf, run_with_timeout, skip, skip_unless, Netns, Role, SideReportExt,
    TestReport, TestReportExt, IP,
};

fn check_crr(r: &TestReport, flows: usize) {
    let (local, remote) = (&r.local, r.remote());
    assert_eq!(r.test, "TCP_CRR");
    assert_eq!(local.role, Role::CrrClient);
    assert_eq!(remote.role, Role::CrrServer);
    let t = local.transactions;
    assert!(t > 0, "the client completed no connection cycle");
    assert_eq!(t, remote.transactions, "client and server count different connections");
    assert_eq!(local.crr().connections, t);
    assert_eq!(remote.crr().connections, t);
    assert_eq!(remote.crr().rejected, 0, "the server rejected connections of its own client");
    assert_eq!(local.latency().count, t, "latency.count != connections");
    let (req, rsp) = (u64::from(r.spec.request_size), u64::from(r.spec.response_size));
    assert_eq!(local.bytes_sent, t * req);
    assert_eq!(local.bytes_received, t * rsp);
    assert_eq!(remote.bytes_received, t * req);
    assert_eq!(remote.bytes_sent, t * rsp);
    for (side, x) in r.sides() {
        check_side_common(side, x);
        let per_flow = &x.flows;
        assert_eq!(per_flow.len(), flows, "{side}: one report per flow");
        let sum: u64 = per_flow.iter().map(|f| f.transactions).sum();
        assert_eq!(sum, t, "{side}: per-flow connections do not add up to the total");
        assert!(per_flow.iter().all(|f| f.transactions > 0), "{side}: a flow made no connection");
    }
    for (l, rm) in local.flows.iter().zip(&remote.flows) {
        assert_eq!(l.transactions, rm.transactions, "flow {}: the sides disagree", l.flow);
    }
    let l = local.latency();
    assert!(l.min_ns <= l.p50_ns && l.p50_ns <= l.max_ns);
}

#[test]
fn crr_sides_agree_on_connections() {
    let r = ringperf!().run_report(&["crr", "-l", "1"]);
    check_crr(&r, 1);
    assert!(!r.local.crr().linger0);
}

#[test]
fn crr_many_flows_over_two_threads_with_rst_close() {
    let r = ringperf!().run_report(&[
        "crr",
        "-l",
        "1",
        "--flows",
        "4",
        "--threads",
        "2",
        "-r",
        "100,2000",
        "--linger0",
    ]);
    check_crr(&r, 4);
    assert!(r.local.crr().linger0);
    assert_eq!(r.local.workers.len(), 2);
}

#[test]
fn crr_client_port_range_is_used() {
    let r = ringperf!().run_report(&["crr", "-l", "1", "--client-ports", "41000-41999", "--linger0"]);
    check_crr(&r, 1);
}

/// The crr client holds no socket across cycles, yet its socket sizes are reported: those
/// of a socket made with the test's options (as netperf reports them), so what -s asked
/// for, doubled by Linux, when given. The human table shows the same numbers.
#[test]
fn crr_client_reports_its_socket_buffer_sizes() {
    let rp = ringperf!();
    let r = rp.run_report(&["crr", "-l", "0.3"]);
    for (side, x) in r.sides() {
        let (snd, rcv) = (x.socket.send_buffer, x.socket.recv_buffer);
        assert!(snd > 0 && rcv > 0, "{side}: socket buffers {snd},{rcv}");
        // The client holds no connection before its cycles, and still names its egress.
        assert_eq!(x.network().device.as_deref(), Some("lo"), "{side}: egress device");
    }
    let r = rp.run_report(&["crr", "-l", "0.3", "-s", "64K,96K", "-S", "32K,48K"]);
    check_crr(&r, 1);
    assert_eq!(r.local.socket.send_buffer, 2 * 64 * 1024, "-s send size");
    assert_eq!(r.local.socket.recv_buffer, 2 * 96 * 1024, "-s receive size");
    assert_eq!(r.remote().socket.send_buffer, 2 * 32 * 1024, "-S send size");
    assert_eq!(r.remote().socket.recv_buffer, 2 * 48 * 1024, "-S receive size");
    let o = rp.run(&["crr", "-l", "0.3", "-s", "64K,96K"]).success();
    // The result row: local sizes, then request and response sizes (1 and 1).
    let row = o
        .stdout
        .lines()
        .find(|l| l.split_whitespace().skip(2).take(2).eq(["1", "1"]))
        .unwrap_or_else(|| panic!("no result row in the table:\n{}", o.stdout));
    let sizes: Vec<&str> = row.split_whitespace().take(2).collect();
    assert_eq!(sizes, ["131072", "196608"], "the table's local socket sizes: {row}");
}

#[test]
fn crr_rejects_options_it_does_not_use() {
    let o = ringperf!().run(&["crr", "-l", "1", "--send-depth", "4"]);
    assert_eq!(o.code(), 2, "{o}");
    let o = ringperf!().run(&["crr", "-l", "1", "--client-ports", "5-1"]);
    assert_eq!(o.code(), 2, "{o}");
}

/// Both sides' engines, as the report gives them, and what their paths counted: every
/// transaction is one request send on the client and one response send on the server.
fn check_engines(r: &TestReport, send: &str, recv: &str) {
    let t = r.local.transactions;
    for (side, x) in r.sides() {
        assert_eq!(x.send_engine.name(), send, "{side}");
        assert_eq!(x.recv_engine.name(), recv, "{side}");
        assert_eq!(x.recv().engine.name(), recv, "{side}");
        assert_eq!(x.send().sends, t, "{side}: one send per connection");
        if send.starts_with("zc") {
            let zc = x.zero_copy();
            // Every buffer came back before the run ended, and loopback copies every send
            // (each SendZc notification on 127.0.0.1 carries ZC_COPIED), as the stream
            // report says.
            assert_eq!(zc.sends, t, "{side}: {zc:?}");
            assert_eq!(zc.notifications, t, "{side}: a notification is missing: {zc:?}");
            assert_eq!(zc.copied, t, "{side}: loopback did not copy? {zc:?}");
        } else {
            let zc = &x.send().zero_copy;
            assert!(zc.is_none(), "{side}: {send} reported zero-copy figures: {zc:?}");
        }
        if send == "splice" {
            assert!(x.splice().pipe_size > 0, "{side}");
        }
    }
}

/// With --verify each side checks what it received against the pattern: the client every
/// response byte, the server every request byte after the header; trunc says it cannot.
fn check_verified(r: &TestReport, recv: &str) {
    let t = r.local.transactions;
    let (req, rsp) = (u64::from(r.spec.request_size), u64::from(r.spec.response_size));
    for ((side, x), per) in r.sides().into_iter().zip([rsp, req]) {
        let v = x.verify();
        assert!(v.enabled, "{side}: {v:?}");
        assert_eq!(v.mismatches, 0, "{side}: payload corrupted: {v:?}");
        if recv == "trunc" {
            assert!(v.not_checked.as_deref().is_some_and(|s| s.contains("trunc")), "{side}: {v:?}");
        } else {
            assert_eq!(v.bytes_checked, t * per, "{side}: not every byte was checked: {v:?}");
        }
    }
}

#[test]
fn crr_sends_through_every_send_engine() {
    let rp = ringperf!();
    for send in ["copy", "zc", "zc-msg", "splice"] {
        let r = rp.run_report(&["crr", "-l", "0.5", "--flows", "2", "--send-engine", send]);
        check_crr(&r, 2);
        check_engines(&r, send, "recv");
        // Requests and responses large enough for zero copy to send from registered memory.
        let r = rp.run_report(&["crr", "-l", "0.5", "-r", "100,5000", "--verify", "--send-engine", send]);
        check_crr(&r, 1);
        check_engines(&r, send, "recv");
        check_verified(&r, "recv");
        if send.starts_with("zc") {
            assert!(r.remote().zero_copy().fixed_buffers, "a 5000-byte response");
        }
    }
}

#[test]
fn crr_receives_through_every_receive_engine() {
    let rp = ringperf!();
    for recv in ["recv", "trunc", "multishot", "bundle"] {
        let r = rp.run_report(&["crr", "-l", "0.5", "-r", "200,3000", "--verify", "--recv-engine", recv]);
        check_crr(&r, 1);
        check_engines(&r, "copy", recv);
        check_verified(&r, recv);
        for (side, x) in r.sides() {
            assert!(x.recv().data_cqes > 0, "{side}: no data CQEs counted");
        }
        // The client's reset (--linger0) ends a standing receive on the server with
        // ECONNRESET, which is the close it waits for; flows spread over two workers.
        let r = rp.run_report(&[
            "crr",
            "-l",
            "0.5",
            "--flows",
            "4",
            "--threads",
            "2",
            "--linger0",
            "--recv-engine",
            recv,
        ]);
        check_crr(&r, 4);
        check_engines(&r, "copy", recv);
    }
}

/// The server waits for the client's close with `--close-first client` (neper's order) and
/// closes first without it (netperf's), on every receive engine, with a send that cannot be
/// linked, and on the classic loop: the sides count the same cycles either way.
#[test]
fn crr_either_side_closes_first_through_every_engine() {
    let rp = ringperf!();
    let pairs = [
        ("copy", "recv"),
        ("copy", "trunc"),
        ("copy", "multishot"),
        ("zc", "bundle"),
        ("syscall", "syscall"),
    ];
    for first in ["client", "server"] {
        for (send, recv) in pairs {
            let r = rp.run_report(&[
                "crr",
                "-l",
                "0.4",
                "--flows",
                "2",
                "--close-first",
                first,
                "--send-engine",
                send,
                "--recv-engine",
                recv,
            ]);
            check_crr(&r, 2);
            if send == "syscall" {
                // The classic loop reports no io_uring send and receive paths.
                assert_eq!(r.remote().send_engine.name(), "syscall");
            } else {
                check_engines(&r, send, recv);
            }
            assert_eq!(
                r.remote().crr().server_closed_first,
                first == "server",
                "--close-first {first} with {send}/{recv}"
            );
        }
    }
}

/// Engines that cannot skip their send's CQE or link it to the receive (zero copy,
/// splice) meet multishot and bundle receives: the cycle changes shape, not its count.
#[test]
fn crr_mixes_send_and_receive_engines() {
    let rp = ringperf!();
    for (send, recv) in [("zc", "multishot"), ("splice", "bundle"), ("zc-msg", "trunc"), ("splice", "recv")] {
        let r = rp.run_report(&[
            "crr",
            "-l",
            "0.5",
            "--flows",
            "2",
            "-r",
            "64,700",
            "--verify",
            "--send-engine",
            send,
            "--recv-engine",
            recv,
        ]);
        check_crr(&r, 2);
        check_engines(&r, send, recv);
        check_verified(&r, recv);
    }
}

/// (local, remote) ports of the TIME_WAIT sockets in a /proc/net/tcp table (state 06).
fn time_wait_ports(table: &str) -> Vec<(u16, u16)> {
    let port = |a: &str| u16::from_str_radix(a.rsplit(':').next()?, 16).ok();
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(3) == Some(&"06")).then(|| Some((port(f.get(1)?)?, port(f.get(2)?)?))).flatten()
        })
        .collect()
}

/// Tcp OutRsts from a /proc/net/snmp table.
fn out_resets(snmp: &str) -> u64 {
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next().expect("Tcp: names"), tcp.next().expect("Tcp: values"));
    let i = names.split_whitespace().position(|n| n == "OutRsts").expect("OutRsts");
    values.split_whitespace().nth(i).and_then(|v| v.parse().ok()).expect("an OutRsts value")
}

/// --linger0, --client-ports and --close-first reach every cycle's socket. In a network
/// namespace of its own (no other program's TIME_WAIT, no full TIME_WAIT table), TIME_WAIT
/// is left by the side that closed first: with the client closing first, --linger0 makes
/// every close a reset and leaves no TIME_WAIT on the range, and normal closes leave one
/// TIME_WAIT per port of the range used, none of the client's connections outside it;
/// with the server closing first (the default), every cycle's TIME_WAIT is the server's,
/// toward a port of the range, and the client leaves none.
#[test]
fn crr_linger0_client_ports_and_close_order_reach_every_cycle() {
    const TEST: &str = "crr_linger0_client_ports_and_close_order_reach_every_cycle";
    if skip_unless(TEST, true, &[IP]) {
        return;
    }
    let rp = ringperf!();
    let in_ns = |ns: &Netns, program: &str, args: &[&str]| {
        let o = run_with_timeout(ns.exec(Path::new(program), args), Duration::from_secs(30));
        assert!(o.status.success(), "{program} {args:?} in {}: {}", ns.name(), o.stderr);
        o.stdout
    };
    let cases = [
        ("client", true, (61300u16, 61399u16)),
        ("client", false, (61400, 61499)),
        ("server", false, (61500, 61599)),
    ];
    for (first, linger0, range) in cases {
        let ns = match Netns::create(&format!("rpt-crr-{}-{first}-{linger0}", std::process::id())) {
            Ok(ns) => ns,
            Err(why) => return skip(TEST, &why),
        };
        in_ns(&ns, "ip", &["link", "set", "lo", "up"]);
        let ports = format!("{}-{}", range.0, range.1);
        // On the ring: its server's close follows its send at once. One-flow crr runs the
        // classic loop by default, where the client's FIN goes first on more cycles (10 to
        // 28 of 100 ports here, the ring 0 or 1) than the bound below allows.
        let mut args = vec![
            "crr",
            "-l",
            "0.3",
            "--client-ports",
            &ports,
            "--close-first",
            first,
            "--json",
            "--harness",
            "io-uring",
        ];
        if linger0 {
            args.push("--linger0");
        }
        let before = out_resets(&in_ns(&ns, "cat", &["/proc/net/snmp"]));
        let r: TestReport =
            parse("the report", &in_ns(&ns, rp.path().to_str().expect("a UTF-8 path"), &args));
        check_crr(&r, 1);
        assert_eq!(r.remote().crr().server_closed_first, first == "server");
        let resets = out_resets(&in_ns(&ns, "cat", &["/proc/net/snmp"])) - before;
        let all = time_wait_ports(&in_ns(&ns, "cat", &["/proc/net/tcp"]));
        let ours = |p: &u16| (range.0..=range.1).contains(p);
        let in_range: Vec<u16> = all.iter().map(|&(l, _)| l).filter(ours).collect();
        let t = r.local.transactions;
        if first == "server" {
            // The client closes as soon as it has the whole response, without waiting for the
            // server's FIN (netperf's client waits for it, at the cost of another wake-up): on
            // a loaded host the client's FIN now and then goes first, so most cycles, not
            // all, leave their TIME_WAIT on the server.
            let used = t.min(100) as usize;
            assert!(
                in_range.len() * 10 <= used,
                "the server closed first, yet the client left TIME_WAIT: {all:?}"
            );
            // One per client port used, reused by the next SYN to it (after 100 cycles: all).
            let servers = all.iter().filter(|(_, remote)| ours(remote)).count();
            assert!(
                servers <= used && servers * 10 >= used * 9,
                "the server's TIME_WAIT toward {ports}: {all:?}"
            );
            assert!(all.len() - servers - in_range.len() <= 2, "TIME_WAIT not toward {ports}: {all:?}");
            continue;
        }
        if linger0 {
            assert!(resets >= t, "--linger0: {resets} resets for {t} connections");
            assert!(in_range.is_empty(), "--linger0 left {} TIME_WAIT sockets on {ports}", in_range.len());
        } else {
            // Each port holds at most one TIME_WAIT toward the one server port (a new
            // connect reuses it), so the count is the ports used: all after 100 cycles.
            assert_eq!(in_range.len() as u64, t.min(100), "TIME_WAIT on --client-ports {ports}");
        }
        // The rest is the control connection's, on an ephemeral port: never a cycle's.
        assert!(all.len() - in_range.len() <= 2, "TIME_WAIT outside {ports}: {all:?}");
    }
}
