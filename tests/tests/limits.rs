//! Who held a flow back: the kernel's chronographs (tcp_info busy, rwnd- and
//! sndbuf-limited time) as shares of the window, per flow and per side, the verdict line of
//! the default report, and ECN's CE echoes on a path that marks them.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::Duration;

use ringperf_cli::render::{human, HumanOptions, Units};
use ringperf_tests::{
    parse, ringperf, run_with_timeout, skip, skip_unless, CeMarker, ChildGuard, NetnsPair, Server,
    TestReport, IP, TC,
};
use serde_json::Value;

const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A share of the window: a number in [0, 100].
fn share(l: &Value, key: &str, what: &str) -> f64 {
    let v = l[key].as_f64().unwrap_or_else(|| panic!("{what}: no {key} in {l}"));
    assert!((0.0..=100.0).contains(&v), "{what}: {key} {v} is outside [0, 100]: {l}");
    v
}

/// The limits object `l` holds together: shares in [0, 100], busy at least the two limited
/// shares, the four parts adding up to the window and no more, the deltas likewise.
fn check_limits(l: &Value, what: &str) {
    let (busy, rwnd, sndbuf) = (
        share(l, "busy_percent", what),
        share(l, "rwnd_limited_percent", what),
        share(l, "sndbuf_limited_percent", what),
    );
    let (sending, idle) = (share(l, "sending_percent", what), share(l, "idle_percent", what));
    assert!(busy + 1e-9 >= rwnd + sndbuf, "{what}: busy {busy} < rwnd {rwnd} + sndbuf {sndbuf}: {l}");
    assert!(
        (rwnd + sndbuf + sending + idle - 100.0).abs() < 1e-6,
        "{what}: the shares add to more or less than the window: {l}"
    );
    let us = |k: &str| l[k].as_u64().unwrap_or_else(|| panic!("{what}: no {k} in {l}"));
    assert!(us("window_us") > 0 && us("flows") >= 1, "{what}: {l}");
    assert!(us("busy_us") >= us("rwnd_limited_us") + us("sndbuf_limited_us"), "{what}: {l}");
}

/// Every side's TCP report holds its limits and end figures, per flow and summed: the
/// figures this kernel fills are numbers, the ones it lacks null and named in `missing`.
fn check_sides(r: &Value) {
    for side in ["local", "remote"] {
        let t = &r[side]["tcp"];
        assert!(t.is_object(), "{side}: no TCP report");
        let missing: Vec<&str> =
            t["missing"].as_array().expect("missing").iter().filter_map(Value::as_str).collect();
        check_limits(&t["limits"], &format!("{side} side"));
        for (i, f) in t["flows"].as_array().expect("flows").iter().enumerate() {
            check_limits(&f["limits"], &format!("{side} flow {i}"));
        }
        for (key, field) in [
            ("delivered", "tcpi_delivered"),
            ("delivered_ce", "tcpi_delivered_ce"),
            ("reord_seen", "tcpi_reord_seen"),
            ("min_rtt_us", "tcpi_min_rtt"),
            ("notsent_bytes", "tcpi_notsent_bytes"),
        ] {
            let lacks = missing.contains(&field);
            assert_eq!(t[key].is_null(), lacks, "{side}: {key} is {} but missing says {missing:?}", t[key]);
            for f in t["flows"].as_array().expect("flows") {
                assert_eq!(f[key].is_null(), lacks, "{side}: a flow's {key} is {}", f[key]);
            }
        }
    }
}

/// The default report of `r`, as the CLI prints it.
fn default_report(r: &TestReport) -> String {
    human::render(r, Units::parse("m"), &HumanOptions { banner: true, ..HumanOptions::default() })
}

#[test]
fn a_tiny_receive_buffer_makes_the_receivers_window_dominate() {
    let out = ringperf!().run(&["stream", "-l", "2", "-S", ",1K", "--json"]).success().stdout;
    let json: Value = serde_json::from_str(&out).expect("JSON");
    check_sides(&json);
    let l = &json["local"]["tcp"]["limits"];
    let rwnd = share(l, "rwnd_limited_percent", "sender");
    for other in ["sndbuf_limited_percent", "sending_percent", "idle_percent"] {
        assert!(rwnd > share(l, other, "sender"), "rwnd-limited {rwnd} % does not dominate {other}: {l}");
    }
    assert!(rwnd >= 50.0, "the smallest receive buffer held the sender only {rwnd} % of the window: {l}");
    let r: TestReport = parse("report", &out);
    let text = default_report(&r);
    let verdict =
        text.lines().find(|l| l.starts_with("limited by: ")).unwrap_or_else(|| panic!("no verdict:\n{text}"));
    assert!(verdict.starts_with("limited by: the receiver's window "), "{verdict}");
    assert!(verdict.contains(&format!("{rwnd:.0} % of the window")), "{verdict} against {rwnd}");
    assert!(text.lines().count() <= 12, "{text}");
}

#[test]
fn request_response_sides_report_their_limits_and_print_no_verdict() {
    let out = ringperf!().run(&["rr", "-l", "1", "--json"]).success().stdout;
    let json: Value = serde_json::from_str(&out).expect("JSON");
    check_sides(&json);
    let r: TestReport = parse("report", &out);
    assert!(!default_report(&r).contains("limited by: "), "{}", default_report(&r));
    // -v prints each side's shares.
    let v = ringperf!().run(&["stream", "-l", "0.5", "-v"]).success().stdout;
    for side in ["local ", "remote"] {
        assert!(v.lines().any(|l| l.starts_with(side) && l.contains("  limits: busy ")), "{v}");
    }
}

/// A pair of namespaces for `test`, or `None` after saying why not.
fn pair(test: &str, tag: &str, n: u8) -> Option<NetnsPair> {
    if skip_unless(test, true, &[IP, TC]) {
        return None;
    }
    NetnsPair::create(tag, n).map_err(|e| skip(test, &format!("cannot create a namespace pair: {e}"))).ok()
}

/// `ip netns exec NS args...`, which must succeed.
fn in_ns(pair: &NetnsPair, ns: &str, args: &[&str]) -> Result<(), String> {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).args(args);
    pair.run_checked(c)
}

/// A stream from `a` to a server in `b`, the client's extra `args` added: its JSON report.
fn stream_across(pair: &NetnsPair, args: &[&str]) -> Value {
    let rp = ringperf!();
    let b_ip: Ipv4Addr = pair.b_addr.parse().expect("address");
    let server = Server::spawn_in(&rp, &pair.b, b_ip, &[]);
    let port = server.port_arg();
    let mut all = vec!["stream", "-H", pair.b_addr.as_str(), "-p", port.as_str(), "--json"];
    all.extend_from_slice(args);
    let o = run_with_timeout(pair.a.exec(rp.path(), &all), RUN_TIMEOUT);
    assert!(o.status.success(), "{o}");
    serde_json::from_str(&o.stdout).expect("JSON")
}

#[test]
fn a_path_that_marks_ce_is_echoed_in_delivered_ce() {
    let test = "a_path_that_marks_ce_is_echoed_in_delivered_ce";
    let Some(pair) = pair(test, "ce", 182) else { return };
    let dir = std::env::temp_dir().join(format!("ringperf-bpffs-{}", std::process::id()));
    let marker = match CeMarker::load(&dir) {
        Ok(m) => m,
        Err(e) => return skip(test, &format!("cannot load the CE-marking classifier: {e}")),
    };
    let (a, b) = (pair.a.name().to_string(), pair.b.name().to_string());
    for ns in [&a, &b] {
        in_ns(&pair, ns, &["sysctl", "-qw", "net.ipv4.tcp_ecn=1"]).expect("ECN on");
    }
    // ECN negotiated and nothing marking: no CE is echoed, so what follows is the classifier's.
    let plain = stream_across(&pair, &["-l", "0.5"]);
    assert_eq!(
        plain["local"]["tcp"]["delivered_ce"].as_u64(),
        Some(0),
        "CE echoed on a path that marks nothing"
    );
    let pinned = marker.pinned().to_str().expect("a path").to_string();
    in_ns(&pair, &a, &["tc", "qdisc", "add", "dev", "rp182a", "clsact"]).expect("clsact");
    if let Err(e) = in_ns(
        &pair,
        &a,
        &["tc", "filter", "add", "dev", "rp182a", "egress", "bpf", "direct-action", "object-pinned", &pinned],
    ) {
        return skip(test, &format!("tc would not attach the classifier: {e}"));
    }
    let json = stream_across(&pair, &["-l", "1"]);
    check_sides(&json);
    let ce = json["local"]["tcp"]["delivered_ce"].as_u64().expect("delivered_ce");
    let delivered = json["local"]["tcp"]["delivered"].as_u64().expect("delivered");
    eprintln!("figures: CE-marked segments echoed: {ce} of {delivered} delivered");
    assert!(ce > 0 && ce <= delivered, "CE-marked segments echoed: {ce} of {delivered}");
    let flows_ce: u64 = json["local"]["tcp"]["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .filter_map(|f| f["delivered_ce"].as_u64())
        .sum();
    assert_eq!(flows_ce, ce, "the side sums its flows");
    drop(marker);
    assert!(!dir.exists(), "the private bpffs is gone");
}

/// The sender's shares, and its verdict line, of a stream from `a` to `b` with `args`.
fn sender_limits(pair: &NetnsPair, args: &[&str]) -> (Value, Option<String>) {
    let json = stream_across(pair, args);
    check_sides(&json);
    let r: TestReport = serde_json::from_value(json.clone()).expect("a report");
    let text = default_report(&r);
    assert!(text.lines().count() <= 12, "{text}");
    let verdict = text.lines().find(|l| l.starts_with("limited by: ")).map(str::to_string);
    (json["local"]["tcp"].clone(), verdict)
}

#[test]
fn a_tiny_send_buffer_held_in_flight_by_slow_acks_makes_the_send_buffer_dominate() {
    let test = "a_tiny_send_buffer_held_in_flight_by_slow_acks_makes_the_send_buffer_dominate";
    let available =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    if !available.split_whitespace().any(|c| c == "cubic") {
        return skip(
            test,
            &format!("this kernel offers no cubic congestion control (it has: {available:?})"),
        );
    }
    let Some(pair) = pair(test, "sb", 183) else { return };
    let (a, b) = (pair.a.name().to_string(), pair.b.name().to_string());
    // The kernel caps an skb at the device's GSO size, not at SO_SNDBUF: at veth's 64 KiB a
    // socket with an 8 KiB buffer still queued 128 KiB. At 4 KiB the buffer bounds the flight.
    if let Err(e) = in_ns(&pair, &a, &["ip", "link", "set", "dev", "rp183a", "gso_max_size", "4096"]) {
        return skip(test, &format!("cannot lower the sender veth's GSO size: {e}"));
    }
    // The ACKs' direction gets a slow link whose queue a UDP blast keeps standing: every ACK
    // waits behind it (tens of ms, no netem here), while the data path stays unshaped. The
    // blast's own socket buffer throttles it at the queue, which stays short of overflowing:
    // ACKs are delayed, not lost (tc counted no drop), so the flow does not go cwnd-limited.
    if let Err(e) = in_ns(
        &pair,
        &b,
        &[
            "tc", "qdisc", "add", "dev", "rp183b", "root", "tbf", "rate", "10mbit", "burst", "16k",
            "latency", "200ms",
        ],
    ) {
        return skip(test, &format!("tc has no tbf qdisc here: {e}"));
    }
    let rp = ringperf!();
    let a_ip: Ipv4Addr = pair.a_addr.parse().expect("address");
    let sink = Server::spawn_in(&rp, &pair.a, a_ip, &[]);
    let port = sink.port_arg();
    let mut blast = pair.b.exec(
        rp.path(),
        &["udp-stream", "-H", pair.a_addr.as_str(), "-p", port.as_str(), "-b", "20m", "-l", "120"],
    );
    blast.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut blast = ChildGuard::spawn(blast);
    // Paced (internal pacing, far above what the buffer lets through) and cubic on both runs:
    // the kernel starts the sndbuf chronograph only at a transmit that empties the write queue
    // while the application waits for room, and pacing is what sends the queue's tail later.
    let paced = ["-l", "2", "--cc", "cubic", "--fq-rate", "50m"];
    // The autotuned buffer first (it also lets the queue stand): the same path alone does not
    // make the send buffer the limit.
    let (open, _) = sender_limits(&pair, &paced);
    let open_sndbuf = share(&open["limits"], "sndbuf_limited_percent", "autotuned sender");
    let tiny_args: Vec<&str> = paced.iter().copied().chain(["-s", "4K,"]).collect();
    let (tiny, verdict) = sender_limits(&pair, &tiny_args);
    assert!(blast.try_status().is_none(), "the UDP blast ended before the runs did");
    let l = &tiny["limits"];
    let sndbuf = share(l, "sndbuf_limited_percent", "sender");
    eprintln!(
        "figures: send buffer {sndbuf:.1} % of the window at -s 4K, {open_sndbuf:.1} % autotuned; min RTT {} us",
        tiny["min_rtt_us"]
    );
    for other in ["rwnd_limited_percent", "sending_percent", "idle_percent"] {
        assert!(
            sndbuf > share(l, other, "sender"),
            "sndbuf-limited {sndbuf} % does not dominate {other}: {l}"
        );
    }
    assert!(
        sndbuf >= 50.0,
        "with every ACK delayed (min RTT {} us) the tiny send buffer held the sender only {sndbuf} %: {l}",
        tiny["min_rtt_us"]
    );
    assert!(
        open_sndbuf < sndbuf,
        "the autotuned buffer was as much the limit ({open_sndbuf} %) as the tiny one ({sndbuf} %): {}",
        open["limits"]
    );
    let verdict = verdict.unwrap_or_else(|| panic!("no verdict line at {sndbuf} % send buffer"));
    assert!(verdict.starts_with("limited by: the send buffer "), "{verdict}");
    assert!(verdict.contains(&format!("{sndbuf:.0} % of the window")), "{verdict} against {sndbuf}");
}
