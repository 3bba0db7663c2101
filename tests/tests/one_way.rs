//! One-way delay of udp-stream's and udp-rr's stamped datagrams: positive and below the
//! round trip on loopback, counted once per stamped datagram, merged over workers, carried
//! in the JSON with the clock offset it was corrected by; and the offset estimate against a
//! separate server process (same clock) within its own uncertainty of zero.

use std::time::Duration;

use ringperf_tests::{
    at, bool_at, lab_name, ringperf, run_with_timeout, skip_unless, u64_at, Lab, Server, LAB_PROGRAMS,
};
use serde_json::Value;

/// The one-way summary a side recorded, checked for what every summary must hold.
fn one_way<'a>(r: &'a Value, side: &str) -> &'a Value {
    let w = at(r, &format!("{side}.udp.one_way"));
    let d = at(w, "delay");
    let count = u64_at(d, "count");
    assert!(count > 0, "{side}: no one-way delay recorded");
    let p = |k: &str| u64_at(d, k);
    assert!(
        p("min_ns") <= p("p50_ns")
            && p("p50_ns") <= p("p90_ns")
            && p("p90_ns") <= p("p99_ns")
            && p("p99_ns") <= p("max_ns"),
        "{side}: one-way percentiles out of order: {d}"
    );
    assert!(
        !at(d, "histogram").as_str().expect("a histogram").is_empty(),
        "{side}: no histogram in the JSON"
    );
    w
}

/// The clock section of a run on one host: the offset is estimated, not applied.
fn check_same_host_clock(r: &Value) {
    let k = at(r, "clock");
    assert!(bool_at(k, "same_host"), "a loopback run is on one host: {k}");
    assert_eq!(at(k, "applied_offset_ns").as_i64(), Some(0), "no correction on one host: {k}");
    assert!(u64_at(k, "probes") > 0);
}

#[test]
fn udp_rr_one_way_delays_are_positive_and_below_the_round_trip() {
    // Two workers, so each side's one-way histogram is a merge of two.
    let r = ringperf!().run_json(&["udp-rr", "-l", "1", "-r", "64", "--flows", "4", "--threads", "2"]);
    check_same_host_clock(&r);
    let rtt_p50 = u64_at(&r, "local.latency.p50_ns");
    let request = one_way(&r, "remote");
    let response = one_way(&r, "local");
    for (name, w) in [("request", request), ("response", response)] {
        let p50 = u64_at(w, "delay.p50_ns");
        assert!(p50 > 0, "{name}: one-way p50 is {p50}");
        assert!(p50 < rtt_p50, "{name}: one-way p50 {p50} ns is not below the round trip's {rtt_p50} ns");
        assert_eq!(u64_at(w, "not_after_send"), 0, "{name}: arrivals before their stamp on one clock");
        assert_eq!(u64_at(w, "uncertainty_ns"), 0, "{name}: one host is exact");
        assert!(bool_at(w, "trusted"), "{name}: an exact figure is trusted");
    }
    // Every answered transaction's response was stamped and recorded once; every request the
    // server received (retransmissions included) too.
    assert_eq!(u64_at(response, "delay.count"), u64_at(&r, "local.transactions"));
    let rx = at(&r, "remote.udp");
    assert_eq!(
        u64_at(request, "delay.count"),
        u64_at(rx, "datagrams_received") + u64_at(rx, "duplicated"),
        "the server's one-way count is not the requests it received"
    );
}

#[test]
fn udp_stream_one_way_counts_every_datagram_received() {
    let r = ringperf!().run_json(&["udp-stream", "-l", "1", "-m", "1000", "--flows", "2", "--threads", "2"]);
    check_same_host_clock(&r);
    let w = one_way(&r, "remote");
    assert!(u64_at(w, "delay.p50_ns") > 0);
    let rx = at(&r, "remote.udp");
    assert_eq!(
        u64_at(w, "delay.count"),
        u64_at(rx, "datagrams_received") + u64_at(rx, "duplicated"),
        "every datagram the receiver got carries a stamp"
    );
    assert!(at(&r, "local.udp").get("one_way").is_none(), "the sender receives nothing to time");
}

#[test]
fn datagrams_too_small_for_a_stamp_say_one_way_is_not_measured() {
    let rp = ringperf!();
    // udp-rr's default 8-byte datagrams hold the sequence number only.
    let r = rp.run_json(&["udp-rr", "-l", "0.3"]);
    for side in ["local", "remote"] {
        assert!(at(&r, &format!("{side}.udp")).get("one_way").is_none(), "{side}: a one-way figure from 8 B");
    }
    assert!(r.get("clock").is_none(), "no clock probes when nothing is stamped");
    let o = rp.run(&["udp-rr", "-l", "0.3", "-r", "64,8", "-v"]).success();
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
    let r = rp.run_json(&["udp-stream", "-H", "127.0.0.1", "-p", &port, "-l", "0.5", "-m", "256"]);
    check_same_host_clock(&r);
    let k = at(&r, "clock");
    let offset = at(k, "offset_ns").as_i64().expect("an offset");
    let uncertainty = u64_at(k, "uncertainty_ns");
    assert!(uncertainty > 0, "a round trip takes time: {k}");
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
    let r = o.json();
    let k = at(&r, "clock");
    assert!(!bool_at(k, "same_host"), "198.18.0.2 is not a loopback address: {k}");
    let offset = at(k, "offset_ns").as_i64().expect("an offset");
    let uncertainty = u64_at(k, "uncertainty_ns");
    assert_eq!(at(k, "applied_offset_ns").as_i64(), Some(offset), "between hosts the estimate is applied");
    assert!(
        offset.unsigned_abs() <= uncertainty,
        "one kernel's clock, yet {offset} ns is outside ±{uncertainty} ns"
    );
    eprintln!(
        "udp-rr between namespaces: clock offset {offset} ns ±{uncertainty} ns; one-way p50 request {} ns, response {} ns; round trip p50 {} ns",
        u64_at(&r, "remote.udp.one_way.delay.p50_ns"),
        u64_at(&r, "local.udp.one_way.delay.p50_ns"),
        u64_at(&r, "local.latency.p50_ns")
    );
    for side in ["local", "remote"] {
        let w = one_way(&r, side);
        assert_eq!(
            u64_at(w, "uncertainty_ns"),
            uncertainty,
            "{side}: the figure carries the clock's uncertainty"
        );
        let trusted = uncertainty * 2 <= u64_at(w, "delay.p50_ns");
        assert_eq!(
            bool_at(w, "trusted"),
            trusted,
            "{side}: trusted must say whether ±{uncertainty} ns is under half the p50"
        );
    }
    // The human report labels each direction with the offset and its uncertainty.
    let human_args = [&args[..args.len() - 1], &["-v"]].concat();
    let human = run_with_timeout(lab.exec("a", rp.path(), &human_args), Duration::from_secs(60));
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
    let r = ringperf!().run_json(&["udp-rr", "-l", "0.3", "-r", "64", "-i", "3,3"]);
    assert_eq!(at(&r, "iterations").as_array().map(Vec::len), Some(3));
    let rtts = u64_at(&r, "local.latency.count");
    assert!(rtts > u64_at(&r, "local.transactions"), "the round trips did not merge over iterations");
    assert_eq!(
        u64_at(one_way(&r, "local"), "delay.count"),
        rtts,
        "response delays not merged like round trips"
    );
    let request = one_way(&r, "remote");
    assert!(u64_at(request, "delay.count") >= rtts, "request delays not merged over iterations");
    assert!(bool_at(request, "trusted"));
}
