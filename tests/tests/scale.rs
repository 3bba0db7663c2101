//! Many flows over several worker threads, both directions at once, pacing and socket
//! knobs: per-flow counts add up to the totals and every flow moves data.

use ringperf_tests::{at, check_rr_report, check_stream_report, f64_at, ringperf, str_at, u64_at};
use serde_json::Value;

fn flows(r: &Value, side: &str) -> Vec<Value> {
    at(r, &format!("{side}.flows")).as_array().expect("flows").clone()
}

fn check_flows_add_up(r: &Value, side: &str, n: usize, field: &str) {
    let f = flows(r, side);
    assert_eq!(f.len(), n, "{side}: {} flows reported", f.len());
    let sum: u64 = f.iter().map(|x| u64_at(x, field)).sum();
    assert_eq!(
        sum,
        u64_at(r, &format!("{side}.{field}")),
        "{side}: per-flow {field} do not sum to the total"
    );
    for (i, x) in f.iter().enumerate() {
        assert_eq!(u64_at(x, "flow"), i as u64);
        assert!(u64_at(x, field) > 0, "{side}: flow {i} moved no data");
    }
}

#[test]
fn stream_with_64_flows_over_2_threads_conserves_every_flow() {
    let r = ringperf!().run_json(&["stream", "-l", "1", "--flows", "64", "--threads", "2"]);
    check_stream_report(&r, false);
    check_flows_add_up(&r, "local", 64, "bytes_sent");
    check_flows_add_up(&r, "remote", 64, "bytes_received");
    let (l, m) = (flows(&r, "local"), flows(&r, "remote"));
    for i in 0..64 {
        assert_eq!(u64_at(&l[i], "bytes_sent"), u64_at(&m[i], "bytes_received"), "flow {i} lost bytes");
    }
    for side in ["local", "remote"] {
        let w = at(&r, &format!("{side}.workers")).as_array().unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w.iter().map(|x| u64_at(x, "flows")).sum::<u64>(), 64);
    }
    let j = f64_at(&r, "local.tcp.jain_fairness");
    assert!((1.0 / 64.0..=1.0 + 1e-9).contains(&j), "Jain index {j}");
}

#[test]
fn rr_with_64_flows_over_2_threads_counts_every_flow() {
    let r = ringperf!().run_json(&["rr", "-l", "1", "--flows", "64", "--threads", "2"]);
    check_rr_report(&r);
    check_flows_add_up(&r, "local", 64, "transactions");
    check_flows_add_up(&r, "remote", 64, "transactions");
    let (l, m) = (flows(&r, "local"), flows(&r, "remote"));
    for i in 0..64 {
        assert_eq!(u64_at(&l[i], "transactions"), u64_at(&m[i], "transactions"), "flow {i}");
    }
}

#[test]
fn bidir_reports_each_direction_and_conserves_both() {
    let r =
        ringperf!().run_json(&["stream", "-l", "1", "--bidir", "--flows", "2", "--threads", "2", "--verify"]);
    assert_eq!(str_at(&r, "test"), "TCP_BIDIR");
    assert_eq!(str_at(&r, "local.role"), "stream_bidir");
    assert_eq!(u64_at(&r, "local.bytes_sent"), u64_at(&r, "remote.bytes_received"));
    assert_eq!(u64_at(&r, "remote.bytes_sent"), u64_at(&r, "local.bytes_received"));
    assert!(u64_at(&r, "local.bytes_sent") > 0 && u64_at(&r, "remote.bytes_sent") > 0);
    assert!(f64_at(&r, "summary.reverse_throughput_bits_per_sec") > 0.0);
    assert_eq!(flows(&r, "local").len(), 4);
    for side in ["local", "remote"] {
        assert_eq!(u64_at(&r, &format!("{side}.verify.mismatches")), 0);
    }
}

/// Pacing is an upper bound that cannot be met by accident: a broken pacer sends at
/// loopback speed, tens of times the cap.
#[test]
fn pacing_caps_the_rate_in_total_and_per_flow() {
    let r = ringperf!().run_json(&["stream", "-l", "1", "-b", "200M", "--flows", "2"]);
    let tput = f64_at(&r, "summary.throughput_bits_per_sec");
    assert!(tput > 0.0 && tput <= 200e6 * 1.05 + 2.0 * 131072.0 * 8.0, "{tput} bit/s over a 200M cap");
    assert_eq!(u64_at(&r, "spec.pacing.total_bps"), 200_000_000);
    let r = ringperf!().run_json(&["stream", "-l", "1", "--flow-rate", "50M", "--flows", "2"]);
    for f in flows(&r, "local") {
        let bits = u64_at(&f, "bytes_sent") as f64 * 8.0;
        assert!(bits <= 50e6 * 1.05 + 2.0 * 131072.0 * 8.0, "a flow sent {bits} bits in 1 s over a 50M cap");
    }
}

#[test]
fn socket_knobs_reach_both_sides_and_are_echoed() {
    let r = ringperf!().run_json(&[
        "rr",
        "-l",
        "0.5",
        "--nodelay",
        "--mss",
        "1000",
        "--tos",
        "0x10",
        "--cc",
        "reno",
    ]);
    check_rr_report(&r);
    for side in ["local", "remote"] {
        assert_eq!(at(&r, &format!("{side}.socket.nodelay")), true, "{side}");
        let mss = u64_at(&r, &format!("{side}.socket.mss"));
        assert!(mss > 0 && mss <= 1000, "{side}: mss {mss}");
        assert_eq!(str_at(&r, &format!("{side}.socket.congestion_control")), "reno");
    }
    assert_eq!(u64_at(&r, "spec.socket.tos"), 16);
    assert_eq!(at(&r, "spec.socket.nodelay"), true);
}

#[test]
fn cpu_lists_pin_workers_round_robin() {
    let r = ringperf!().run_json(&["stream", "-l", "0.5", "--flows", "4", "--threads", "2", "--cpus", "0-1"]);
    for side in ["local", "remote"] {
        let cpus: Vec<u64> =
            at(&r, &format!("{side}.workers")).as_array().unwrap().iter().map(|w| u64_at(w, "cpu")).collect();
        assert_eq!(cpus, [0, 1], "{side}");
    }
}

#[test]
fn bad_scale_flags_are_usage_errors() {
    let rp = ringperf!();
    rp.run(&["stream", "-l", "0.5", "--threads", "0"]).failure(2, &["threads"]);
    rp.run(&["stream", "-l", "0.5", "--flows", "0"]).failure(2, &["flows"]);
    rp.run(&["stream", "-l", "0.5", "--cpus", "x"]).failure(2, &["cpu"]);
    rp.run(&["stream", "-l", "0.5", "--cpus", "999"]).failure(2, &["cpu 999"]);
    rp.run(&["stream", "-l", "0.5", "-b", "0"]).failure(2, &["rate"]);
    rp.run(&["stream", "-l", "0.5", "--bidir", "--reverse"]).failure(2, &["cannot be used"]);
    rp.run(&["stream", "-l", "0.5", "--mss", "10"]).failure(2, &["--mss"]);
    rp.run(&["-t", "TCP_STREAM", "--", "-P", "5000"]).failure(2, &["-P", "not supported"]);
    // -L is taken (issue 20); an address this host does not have is a usage error.
    rp.run(&["-t", "TCP_STREAM", "-L", "192.0.2.1"]).failure(2, &["192.0.2.1", "address of this host"]);
}

/// netperf's command line runs the same test as the native one.
#[test]
fn netperf_style_invocation_runs() {
    let r = ringperf!().run_json(&["-t", "TCP_MAERTS", "-l", "0.5", "--", "-m", "32K"]);
    check_stream_report(&r, true);
    assert_eq!(u64_at(&r, "spec.send_size"), 32768);
}
