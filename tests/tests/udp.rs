//! UDP stream and UDP_RR: sequence accounting that adds up on loopback, GSO and GRO
//! batching, and a lossy path made inside two network namespaces (nftables drops 5 % of
//! the UDP datagrams; this kernel has no netem) where the loss must be reported, not hidden.

use std::time::Duration;

use ringperf_tests::{
    check_side_common, lab_name, ringperf, run_with_timeout, skip, skip_unless, Lab, Role, Server,
    SideReportExt, TestReport, TestReportExt, LAB_PROGRAMS, NFT,
};

/// The sequence accounting of a udp-stream report: what the receiver saw adds up to what
/// the sender sent. Returns (sent, received).
fn check_udp_stream(r: &TestReport, size: u64) -> (u64, u64) {
    assert_eq!(r.test, "UDP_STREAM");
    assert_eq!(r.local.role, Role::UdpSender);
    assert_eq!(r.remote().role, Role::UdpReceiver);
    let tx = r.local.udp();
    let rx = r.remote().udp();
    let sent = tx.datagrams_sent;
    let errors = tx.send_errors;
    let received = rx.datagrams_received;
    let span = rx.sequence_span;
    assert!(sent > 0, "the sender sent nothing");
    assert!(received > 0, "the receiver received nothing");
    assert_eq!(received + rx.lost, span, "received + lost != the sequence span the receiver saw");
    assert!(
        span <= sent + errors,
        "the receiver saw sequence numbers up to {span}, but only {sent} + {errors} were sent"
    );
    assert!(received <= sent, "more distinct datagrams received ({received}) than sent ({sent})");
    assert_eq!(r.local.bytes_sent, sent * size, "sender bytes != datagrams x size");
    let dups = rx.duplicated;
    assert_eq!(r.remote().bytes_received, (received + dups) * size, "receiver bytes != datagrams x size");
    for (side, x) in r.sides() {
        check_side_common(side, x);
        let udp = x.udp();
        let per_flow = &udp.flows;
        assert_eq!(per_flow.len() as u64, u64::from(r.spec.flows));
        let (key, sum, total): (_, u64, _) = if side == "local" {
            ("datagrams_sent", per_flow.iter().map(|f| f.datagrams_sent).sum(), udp.datagrams_sent)
        } else {
            (
                "datagrams_received",
                per_flow.iter().map(|f| f.datagrams_received).sum(),
                udp.datagrams_received,
            )
        };
        assert_eq!(sum, total, "{side}: per-flow {key} do not add up");
        assert!(udp.us_per_datagram.unwrap_or_else(|| panic!("{side}: no udp.us_per_datagram")) > 0.0);
    }
    (sent, received)
}

#[test]
fn udp_stream_on_loopback_accounts_every_datagram() {
    let r = ringperf!().run_report(&["udp-stream", "-l", "1", "-m", "1000", "--flows", "2"]);
    check_udp_stream(&r, 1000);
    let tx = r.local.udp();
    assert!((tx.sends as f64 - tx.datagrams_sent as f64).abs() < 1.0, "one datagram per send without GSO");
}

#[test]
fn udp_stream_gso_sends_many_datagrams_per_sqe_and_gro_coalesces() {
    let r = ringperf!().run_report(&["udp-stream", "-l", "1", "--gso", "1400", "-m", "1400", "--gro"]);
    check_udp_stream(&r, 1400);
    let tx = r.local.udp();
    let per_send = tx.datagrams_sent as f64 / tx.sends as f64;
    assert!(per_send > 1.0, "GSO sent {per_send} datagrams per send");
    // On loopback a GSO send reaches the receiver as one super-packet, which UDP_GRO
    // hands to one receive whole.
    let rx = r.remote().udp();
    let per_recv = (rx.datagrams_received + rx.duplicated) as f64 / rx.receives as f64;
    assert!(per_recv > 1.0, "GRO delivered {per_recv} datagrams per receive");
}

/// The batched path for small datagrams (`--gso 64 --gro`): 64-byte datagrams, 64 per
/// send, coalesced by UDP_GRO into one receive, and still every datagram's number
/// accounted: what was sent is what was received plus what the receiver counted lost, and
/// a coalesced receive is never counted as one datagram.
#[test]
fn udp_stream_gso_gro_at_64_bytes_conserves_every_datagram() {
    // Paced, with room in the receive buffer: loopback then loses nothing at the tail,
    // where a loss would be invisible to the receiver's sequence.
    let r =
        ringperf!().run_report(&["udp-stream", "-l", "1", "--gso", "64", "--gro", "-b", "100M", "-S", "4M"]);
    let (sent, received) = check_udp_stream(&r, 64);
    let tx = r.local.udp();
    let rx = r.remote().udp();
    let lost = rx.lost;
    assert_eq!(
        sent + tx.send_errors,
        received + lost,
        "sent != received + lost ({sent} sent, {received} received, {lost} lost)"
    );
    assert_eq!(tx.sends * 64, sent, "every GSO send carries 64 datagrams");
    let receives = rx.receives;
    assert!(receives * 2 <= received, "GRO: {receives} receives for {received} datagrams");
    assert!(rx.gro);
    assert_eq!(tx.gso_segment, Some(64));
}

#[test]
fn udp_options_are_checked() {
    for args in [
        &["udp-stream", "-l", "1", "-m", "4"][..],
        &["udp-stream", "-l", "1", "--gso", "1400", "-m", "1000"],
        &["udp-stream", "-l", "1", "--nodelay"],
        &["rr", "-l", "1", "--gro"][..],
    ] {
        let o = ringperf!().run(args);
        assert_eq!(o.code(), 2, "{args:?}: {o}");
    }
}

/// A two-host lab whose host b drops 5 % of incoming UDP datagrams (nftables numgen), with
/// a server on b; `None` (after skipping `test` with the reason) when this host cannot make one.
fn lossy_lab(test: &str, tag: &str) -> Option<(Lab, Server)> {
    if skip_unless(test, true, &[LAB_PROGRAMS, &[NFT]].concat()) {
        return None;
    }
    let lab = Lab::up(&lab_name(tag), &[]);
    let ns = lab.namespace("b");
    let mut ok = true;
    for rule in [
        vec!["add", "table", "inet", "rploss"],
        vec!["add", "chain", "inet", "rploss", "input", "{ type filter hook input priority 0; }"],
        vec![
            "add", "rule", "inet", "rploss", "input", "meta", "l4proto", "udp", "numgen", "random", "mod",
            "100", "<", "5", "drop",
        ],
    ] {
        let mut c = std::process::Command::new("ip");
        c.args(["netns", "exec", &ns, "nft"]).args(&rule);
        let o = run_with_timeout(c, Duration::from_secs(10));
        if !o.status.success() {
            let why = o.stderr.trim();
            skip(
                test,
                &format!("cannot make a lossy path with nftables (apt-get install -y nftables): {why}"),
            );
            ok = false;
            break;
        }
    }
    if !ok {
        return None;
    }
    let rp = ringperf!();
    let server = Server::start(lab.exec("b", rp.path(), &["serve", "--bind", "198.18.0.2", "--port", "0"]));
    Some((lab, server))
}

#[test]
fn udp_stream_reports_five_percent_loss_on_a_lossy_path() {
    let Some((lab, server)) = lossy_lab("udp_stream_reports_five_percent_loss_on_a_lossy_path", "udpl")
    else {
        return;
    };
    let rp = ringperf!();
    let port = server.port_arg();
    let cmd = lab.exec(
        "a",
        rp.path(),
        &["udp-stream", "-H", "198.18.0.2", "-p", &port, "-l", "2", "-m", "1000", "-b", "20M", "--json"],
    );
    let o = run_with_timeout(cmd, Duration::from_secs(60));
    assert!(o.status.success(), "{o}");
    let r = o.report();
    let (sent, received) = check_udp_stream(&r, 1000);
    let loss = 100.0 * (sent - received) as f64 / sent as f64;
    eprintln!("udp-stream over a 5 % lossy path: {sent} sent, {received} received, {loss:.2} % lost");
    // At least 2500 datagrams at 5 %: three standard deviations are about 1.3 points; a
    // slow moment of a receiver that shares two CPUs with other tests adds a little.
    assert!(
        (3.0..=8.0).contains(&loss),
        "loss of {loss:.2} % on a path that drops 5 % ({sent} sent, {received} received)"
    );
    assert!(r.remote().udp().lost > 0, "the receiver saw no gap in the sequence");
}

/// A udp-rr of `flows` flows with 64-byte requests and 1000-byte responses counted its
/// transactions alike on both sides.
fn check_udp_rr_counts(r: &TestReport, flows: u64) {
    let t = r.local.transactions;
    assert!(t > 0, "no transaction completed");
    assert_eq!(r.local.latency().count, t);
    assert_eq!(r.local.bytes_sent, t * 64);
    assert_eq!(r.local.bytes_received, t * 1000);
    // Loopback loses nothing, but a slow moment can still time a transaction out: the
    // server counts each request once, retransmitted or not, and may have answered a
    // flow's last request after the client gave up on it at the deadline.
    let served = r.remote().transactions;
    assert!(served >= t && served <= t + flows, "the server counted {served} transactions, the client {t}");
    assert!(r.local.udp().retransmissions <= r.local.udp().timeouts);
    for (side, x) in r.sides() {
        check_side_common(side, x);
    }
}

#[test]
fn udp_rr_on_loopback_counts_transactions_on_both_sides() {
    let r = ringperf!().run_report(&["udp-rr", "-l", "1", "--flows", "2", "-r", "64,1000"]);
    assert_eq!(r.test, "UDP_RR");
    check_udp_rr_counts(&r, 2);
}

/// udp-rr's standing receive: one request SQE per transaction on the client (the receive
/// is not armed per transaction), and with a timeout short enough to fire on loopback the
/// retransmissions, stale answers and duplicates still add up on both sides.
#[test]
fn udp_rr_standing_receive_counts_agree_through_timeouts() {
    let flows = 2u64;
    let r = ringperf!().run_report(&["udp-rr", "-l", "1", "--flows", "2", "--timeout-us", "100"]);
    let t = r.local.transactions;
    assert!(t > 0, "no transaction completed");
    assert_eq!(r.local.latency().count, t);
    let served = r.remote().transactions;
    assert!(served >= t && served <= t + flows, "the server counted {served} transactions, the client {t}");
    let tx = r.local.udp();
    let rx = r.remote().udp();
    let (sent, timeouts, retrans) = (tx.datagrams_sent, tx.timeouts, tx.retransmissions);
    eprintln!("udp-rr --timeout-us 100: {t} transactions, {timeouts} timeouts, {retrans} retransmissions");
    assert!(retrans <= timeouts && timeouts <= retrans + flows);
    // Every request sent is a transaction begun or a retransmission.
    assert!(
        sent >= t + retrans && sent <= t + retrans + flows,
        "{sent} requests for {t} transactions and {retrans} retransmissions"
    );
    // Loopback loses nothing: the server got every request, a retransmitted one as a duplicate.
    assert_eq!(rx.datagrams_received + rx.duplicated, sent);
    assert_eq!(rx.datagrams_received, served);
    // Requests, a few arms and the retransmission tick: not a receive per transaction.
    let sqes = r.local.ring.sqes;
    assert!(sqes <= sent + 8 * flows + 8, "{sqes} SQEs for {sent} requests: receives armed per transaction?");
    for (side, x) in r.sides() {
        check_side_common(side, x);
    }
}

#[test]
fn udp_rr_survives_loss_with_timeouts_and_retransmissions() {
    let Some((lab, server)) = lossy_lab("udp_rr_survives_loss_with_timeouts_and_retransmissions", "udprr")
    else {
        return;
    };
    let rp = ringperf!();
    let port = server.port_arg();
    let args = ["udp-rr", "-H", "198.18.0.2", "-p", &port, "-l", "1.5", "--timeout-us", "2000", "--json"];
    let o = run_with_timeout(lab.exec("a", rp.path(), &args), Duration::from_secs(60));
    assert!(o.status.success(), "{o}");
    let r = o.report();
    let t = r.local.transactions;
    let timeouts = r.local.udp().timeouts;
    let retrans = r.local.udp().retransmissions;
    eprintln!(
        "udp-rr over a 5 % lossy path: {t} transactions, {timeouts} timeouts, {retrans} retransmissions"
    );
    assert!(t > 0, "no transaction completed");
    assert!(timeouts > 0, "5 % loss and not one timeout");
    // Each timeout is followed by a retransmission, except for a flow's last one after the deadline.
    assert!(retrans <= timeouts && timeouts <= retrans + u64::from(r.spec.flows));
    assert_eq!(r.local.latency().count, t);
    assert!(r.remote().transactions >= t, "the server answered fewer requests than completed");
}

/// The classic engines (syscall on both sides) keep the same sequence accounting: one flow
/// on blocking sockets, 64 flows per worker over epoll, and with GSO/GRO.
#[test]
fn udp_stream_with_the_syscall_engines_accounts_every_datagram() {
    let classic = ["--send-engine", "syscall", "--recv-engine", "syscall"];
    for extra in [&["--flows", "1"][..], &["--flows", "64"], &["--gso", "1000", "--gro"]] {
        let mut args = vec!["udp-stream", "-l", "1", "-m", "1000"];
        args.extend(extra);
        args.extend(classic);
        let r = ringperf!().run_report(&args);
        check_udp_stream(&r, 1000);
        for (side, x) in r.sides() {
            let calls = x.syscalls();
            assert_eq!(calls.epoll_waits > 0, extra[1] == "64", "{extra:?} {side}: {calls:?}");
        }
        assert_eq!(r.local.syscalls().sends, r.local.udp().sends, "{extra:?}");
    }
}

#[test]
fn udp_rr_with_the_syscall_engines_counts_transactions_on_both_sides() {
    for flows in ["1", "64"] {
        let args = [
            "udp-rr",
            "-l",
            "1",
            "--flows",
            flows,
            "-r",
            "64,1000",
            "--send-engine",
            "syscall",
            "--recv-engine",
            "syscall",
        ];
        let r = ringperf!().run_report(&args);
        // As with the ring: each flow's last request may be answered after the client gave
        // up on it at the deadline.
        check_udp_rr_counts(&r, flows.parse().expect("a number"));
    }
}
