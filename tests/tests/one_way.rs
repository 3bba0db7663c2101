//! One-way delay of udp-stream's and udp-rr's stamped datagrams: positive and below the
//! round trip on loopback, counted once per stamped datagram, merged over workers, carried
//! in the JSON with the clock offset it was corrected by; and the offset estimate against a
//! separate server process (same clock) within its own uncertainty of zero.

use std::time::Duration;

use ringperf_tests::{
    lab_name, ringperf, run_with_timeout, skip_unless, Lab, LatencySummary, OneWayReport, Server,
    SideReportExt, TestReport, TestReportExt, LAB_PROGRAMS,
};

/// The one-way summary a side recorded, checked for what every summary must hold.
fn one_way<'a>(r: &'a TestReport, side: &str) -> &'a OneWayReport {
    let w = if side == "local" { r.local.one_way() } else { r.remote().one_way() };
    let d = delay(w);
    assert!(d.count > 0, "{side}: no one-way delay recorded");
    assert!(
        d.min_ns <= d.p50_ns && d.p50_ns <= d.p90_ns && d.p90_ns <= d.p99_ns && d.p99_ns <= d.max_ns,
        "{side}: one-way percentiles out of order: {d:?}"
    );
    assert!(!d.histogram.is_empty(), "{side}: no histogram in the JSON");
    w
}

/// The delays of a one-way summary, which must have some.
fn delay(w: &OneWayReport) -> &LatencySummary {
    w.delay.as_ref().unwrap_or_else(|| panic!("no stamped datagram arrived: {w:?}"))
}

/// The clock section of a run on one host: the offset is estimated, not applied.
fn check_same_host_clock(r: &TestReport) {
    let k = r.clock();
    assert!(k.same_host, "a loopback run is on one host: {k:?}");
    assert_eq!(k.applied_offset_ns, 0, "no correction on one host: {k:?}");
    assert!(k.probes > 0);
}

#[test]
fn udp_rr_one_way_delays_are_positive_and_below_the_round_trip() {
    // Two workers, so each side's one-way histogram is a merge of two.
    let r = ringperf!().run_report(&["udp-rr", "-l", "1", "-r", "64", "--flows", "4", "--threads", "2"]);
    check_same_host_clock(&r);
    let rtt_p50 = r.local.latency().p50_ns;
    let request = one_way(&r, "remote");
    let response = one_way(&r, "local");
    for (name, w) in [("request", request), ("response", response)] {
        let p50 = delay(w).p50_ns;
        assert!(p50 > 0, "{name}: one-way p50 is {p50}");
        assert!(p50 < rtt_p50, "{name}: one-way p50 {p50} ns is not below the round trip's {rtt_p50} ns");
        assert_eq!(w.not_after_send, 0, "{name}: arrivals before their stamp on one clock");
        assert_eq!(w.uncertainty_ns, Some(0), "{name}: one host is exact");
        assert_eq!(w.trusted, Some(true), "{name}: an exact figure is trusted");
    }
    // Every answered transaction's response was stamped and recorded once; every request the
    // server received (retransmissions included) too.
    assert_eq!(delay(response).count, r.local.transactions);
    let rx = r.remote().udp();
    assert_eq!(
        delay(request).count,
        rx.datagrams_received + rx.duplicated,
        "the server's one-way count is not the requests it received"
    );
}

#[test]
fn udp_stream_one_way_counts_every_datagram_received() {
    let r =
        ringperf!().run_report(&["udp-stream", "-l", "1", "-m", "1000", "--flows", "2", "--threads", "2"]);
    check_same_host_clock(&r);
    let w = one_way(&r, "remote");
    assert!(delay(w).p50_ns > 0);
    let rx = r.remote().udp();
    assert_eq!(
        delay(w).count,
        rx.datagrams_received + rx.duplicated,
        "every datagram the receiver got carries a stamp"
    );
    assert!(r.local.udp().one_way.is_none(), "the sender receives nothing to time");
}

#[test]
fn datagrams_too_small_for_a_stamp_say_one_way_is_not_measured() {
    let rp = ringperf!();
    // udp-rr's default 8-byte datagrams hold the sequence number only.
    let r = rp.run_report(&["udp-rr", "-l", "0.3"]);
    for (side, x) in r.sides() {
        assert!(x.udp().one_way.is_none(), "{side}: a one-way figure from 8 B");
    }
    assert!(r.clock.is_none(), "no clock probes when nothing is stamped");
    let o = rp.run(&["udp-rr", "-l", "0.3", "-r", "64,8"]).success();
    assert!(o.stdout.contains("one-way client->server (us, "), "{o}");
    assert!(o.stdout.contains("one-way server->client: not measured (datagrams smaller than 16 B)"), "{o}");
    let kv = rp.run(&["udp-rr", "-l", "0.3", "--keyval"]).success();
    assert!(kv.stdout.lines().any(|l| l == "ONE_WAY_C2S_P50_LATENCY="), "{kv}");
}

#[test]
fn the_clock_offset_to_a_separate_server_is_zero_within_its_uncertainty() {
    let rp = ringperf!();
    let server = Server::spawn(&rp);
    let port = server.port_arg();
    let r = rp.run_report(&["udp-stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.5", "-m", "256"]);
    check_same_host_clock(&r);
    let k = r.clock();
    let (offset, uncertainty) = (k.offset_ns, k.uncertainty_ns);
    assert!(uncertainty > 0, "a round trip takes time: {k:?}");
    assert!(
        offset.unsigned_abs() <= uncertainty,
        "one clock, yet the offset {offset} ns is outside ±{uncertainty} ns"
    );
    one_way(&r, "remote");
}

/// Between two network namespaces the peer is not loopback, so the client applies its
/// estimate (the clock is the same kernel's, so it must come out within its uncertainty of
/// zero) and labels the figures with the uncertainty.
#[test]
fn a_peer_in_another_namespace_gets_the_offset_applied_and_labelled() {
    let test = "a_peer_in_another_namespace_gets_the_offset_applied_and_labelled";
    if skip_unless(test, true, LAB_PROGRAMS) {
        return;
    }
    let lab = Lab::up(&lab_name("owd"), &[]);
    let rp = ringperf!();
    let server = Server::start(lab.exec("b", rp.path(), &["serve", "--bind", "198.18.0.2", "--port", "0"]));
    let port = server.port_arg();
    let args = ["udp-rr", "-H", "198.18.0.2", "-p", &port, "-l", "1", "-r", "64", "--json"];
    let o = run_with_timeout(lab.exec("a", rp.path(), &args), Duration::from_secs(60));
    assert!(o.status.success(), "{o}");
    let r = o.report();
    let k = r.clock();
    assert!(!k.same_host, "198.18.0.2 is not a loopback address: {k:?}");
    let (offset, uncertainty) = (k.offset_ns, k.uncertainty_ns);
    assert_eq!(k.applied_offset_ns, offset, "between hosts the estimate is applied");
    assert!(
        offset.unsigned_abs() <= uncertainty,
        "one kernel's clock, yet {offset} ns is outside ±{uncertainty} ns"
    );
    eprintln!(
        "udp-rr between namespaces: clock offset {offset} ns ±{uncertainty} ns; one-way p50 request {} ns, response {} ns; round trip p50 {} ns",
        delay(r.remote().one_way()).p50_ns,
        delay(r.local.one_way()).p50_ns,
        r.local.latency().p50_ns
    );
    for side in ["local", "remote"] {
        let w = one_way(&r, side);
        assert_eq!(w.uncertainty_ns, Some(uncertainty), "{side}: the figure carries the clock's uncertainty");
        let trusted = uncertainty * 2 <= delay(w).p50_ns;
        assert_eq!(
            w.trusted,
            Some(trusted),
            "{side}: trusted must say whether ±{uncertainty} ns is under half the p50"
        );
    }
    // The human report labels each direction with the offset and its uncertainty.
    let human = run_with_timeout(lab.exec("a", rp.path(), &args[..args.len() - 1]), Duration::from_secs(60));
    assert!(human.status.success(), "{human}");
    let lines: Vec<&str> = human.stdout.lines().filter(|l| l.starts_with("one-way ")).collect();
    assert_eq!(lines.len(), 2, "one line per direction: {human}");
    for line in lines {
        assert!(line.contains("clock offset ") && line.contains("uncertainty +/-"), "unlabelled: {line}");
    }
}

/// With iterations (-i) the one-way histograms merge over every iteration, as the round
/// trips do: each transaction adds one round trip, one response delay and (loopback loses
/// nothing) one request delay.
#[test]
fn one_way_delays_merge_over_iterations_like_the_round_trips() {
    let r = ringperf!().run_report(&["udp-rr", "-l", "0.3", "-r", "64", "-i", "3,3"]);
    assert_eq!(r.iterations.len(), 3);
    let rtts = r.local.latency().count;
    assert!(rtts > r.local.transactions, "the round trips did not merge over iterations");
    assert_eq!(delay(one_way(&r, "local")).count, rtts, "response delays not merged like round trips");
    let request = one_way(&r, "remote");
    assert!(delay(request).count >= rtts, "request delays not merged over iterations");
    assert_eq!(request.trusted, Some(true));
}
