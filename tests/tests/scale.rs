//! Many flows over several worker threads, both directions at once, pacing and socket
//! knobs: per-flow counts add up to the totals and every flow moves data.

use ringperf_tests::{
    check_rr_report, check_stream_report, ringperf, Role, SideReport, SideReportExt, TestReportExt,
};

/// What a flow or a side counted: bytes sent or received, or transactions.
#[derive(Clone, Copy, Debug)]
enum Count {
    BytesSent,
    BytesReceived,
    Transactions,
}

fn check_flows_add_up(side: &str, x: &SideReport, n: usize, field: Count) {
    let f = &x.flows;
    assert_eq!(f.len(), n, "{side}: {} flows reported", f.len());
    let of = |sent: u64, received: u64, transactions: u64| match field {
        Count::BytesSent => sent,
        Count::BytesReceived => received,
        Count::Transactions => transactions,
    };
    let sum: u64 = f.iter().map(|flow| of(flow.bytes_sent, flow.bytes_received, flow.transactions)).sum();
    assert_eq!(
        sum,
        of(x.bytes_sent, x.bytes_received, x.transactions),
        "{side}: per-flow {field:?} do not sum to the total"
    );
    for (i, flow) in f.iter().enumerate() {
        assert_eq!(flow.flow, i);
        assert!(
            of(flow.bytes_sent, flow.bytes_received, flow.transactions) > 0,
            "{side}: flow {i} moved no data"
        );
    }
}

#[test]
fn stream_with_64_flows_over_2_threads_conserves_every_flow() {
    let r = ringperf!().run_report(&["stream", "-l", "1", "--flows", "64", "--threads", "2"]);
    check_stream_report(&r, false);
    check_flows_add_up("local", &r.local, 64, Count::BytesSent);
    check_flows_add_up("remote", r.remote(), 64, Count::BytesReceived);
    let (l, m) = (&r.local.flows, &r.remote().flows);
    for i in 0..64 {
        assert_eq!(l[i].bytes_sent, m[i].bytes_received, "flow {i} lost bytes");
    }
    for (_, x) in r.sides() {
        let w = &x.workers;
        assert_eq!(w.len(), 2);
        assert_eq!(w.iter().map(|x| x.flows).sum::<usize>(), 64);
    }
    let j = r.local.tcp().jain_fairness.expect("local.tcp.jain_fairness");
    assert!((1.0 / 64.0..=1.0 + 1e-9).contains(&j), "Jain index {j}");
}

#[test]
fn rr_with_64_flows_over_2_threads_counts_every_flow() {
    let r = ringperf!().run_report(&["rr", "-l", "1", "--flows", "64", "--threads", "2"]);
    check_rr_report(&r);
    check_flows_add_up("local", &r.local, 64, Count::Transactions);
    check_flows_add_up("remote", r.remote(), 64, Count::Transactions);
    let (l, m) = (&r.local.flows, &r.remote().flows);
    for i in 0..64 {
        assert_eq!(l[i].transactions, m[i].transactions, "flow {i}");
    }
}

#[test]
fn bidir_reports_each_direction_and_conserves_both() {
    let r = ringperf!().run_report(&[
        "stream",
        "-l",
        "1",
        "--bidir",
        "--flows",
        "2",
        "--threads",
        "2",
        "--verify",
    ]);
    let (local, remote) = (&r.local, r.remote());
    assert_eq!(r.test, "TCP_BIDIR");
    assert_eq!(local.role, Role::StreamBidir);
    assert_eq!(local.bytes_sent, remote.bytes_received);
    assert_eq!(remote.bytes_sent, local.bytes_received);
    assert!(local.bytes_sent > 0 && remote.bytes_sent > 0);
    assert!(
        r.summary.reverse_throughput_bits_per_sec.expect("summary.reverse_throughput_bits_per_sec") > 0.0
    );
    assert_eq!(local.flows.len(), 4);
    for (_, x) in r.sides() {
        assert_eq!(x.verify().mismatches, 0);
    }
}

/// Pacing is an upper bound that cannot be met by accident: a broken pacer sends at
/// loopback speed, tens of times the cap.
#[test]
fn pacing_caps_the_rate_in_total_and_per_flow() {
    let r = ringperf!().run_report(&["stream", "-l", "1", "-b", "200M", "--flows", "2"]);
    let tput = r.summary.throughput_bits_per_sec;
    assert!(tput > 0.0 && tput <= 200e6 * 1.05 + 2.0 * 131072.0 * 8.0, "{tput} bit/s over a 200M cap");
    assert_eq!(r.spec.pacing.total_bps, Some(200_000_000));
    let r = ringperf!().run_report(&["stream", "-l", "1", "--flow-rate", "50M", "--flows", "2"]);
    for f in &r.local.flows {
        let bits = f.bytes_sent as f64 * 8.0;
        assert!(bits <= 50e6 * 1.05 + 2.0 * 131072.0 * 8.0, "a flow sent {bits} bits in 1 s over a 50M cap");
    }
}

#[test]
fn socket_knobs_reach_both_sides_and_are_echoed() {
    let r = ringperf!().run_report(&[
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
    for (side, x) in r.sides() {
        assert!(x.socket.nodelay, "{side}");
        let mss = x.socket.mss;
        assert!(mss > 0 && mss <= 1000, "{side}: mss {mss}");
        assert_eq!(x.socket.congestion_control, "reno");
    }
    assert_eq!(r.spec.socket.tos, Some(16));
    assert!(r.spec.socket.nodelay);
}

#[test]
fn cpu_lists_pin_workers_round_robin() {
    let r =
        ringperf!().run_report(&["stream", "-l", "0.5", "--flows", "4", "--threads", "2", "--cpus", "0-1"]);
    for (side, x) in r.sides() {
        let cpus: Vec<Option<usize>> = x.workers.iter().map(|w| w.cpu).collect();
        assert_eq!(cpus, [Some(0), Some(1)], "{side}");
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
    let r = ringperf!().run_report(&["-t", "TCP_MAERTS", "-l", "0.5", "--", "-m", "32K"]);
    check_stream_report(&r, true);
    assert_eq!(r.spec.send_size, 32768);
}
