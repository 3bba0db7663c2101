//! The network environment in every report: the egress device of the data connection,
//! its driver, offloads, MTU, qdisc and the sysctls, per side. On loopback that is `lo`;
//! in a lab with TSO off on the sender's veth, the sender's environment must say so.

use ringperf_tests::{
    lab_name, lab_stream_a_to_b, ringperf, skip_unless, Lab, NetworkEnvironment, SideReportExt,
    TestReportExt, LAB_PROGRAMS,
};

/// What every side's network environment must carry, wherever it ran.
fn check_network(side: &str, net: Option<&NetworkEnvironment>) {
    let n = format!("{side}.network");
    let net = net.unwrap_or_else(|| panic!("{n} missing"));
    let o = &net.offloads;
    let offloads = [
        ("tso", o.tso),
        ("gso", o.gso),
        ("gro", o.gro),
        ("sg", o.sg),
        ("tx_checksum", o.tx_checksum),
        ("rx_checksum", o.rx_checksum),
    ];
    for (f, read) in offloads {
        assert!(read.is_some(), "{n}.offloads.{f} not read");
    }
    assert!(net.mtu.unwrap_or_else(|| panic!("{n}.mtu missing")) >= 576, "{n}.mtu implausible");
    assert!(
        !net.qdisc.as_deref().unwrap_or_else(|| panic!("{n}.qdisc missing")).is_empty(),
        "{n}.qdisc empty"
    );
    let sysctl = |s: &str| net.sysctls.get(s).cloned();
    let notes = net.unavailable.join("\n");
    for s in [
        "net.ipv4.tcp_limit_output_bytes",
        "net.ipv4.tcp_congestion_control",
        "net.core.rmem_max",
        "net.core.wmem_max",
    ] {
        assert!(sysctl(s).is_some_and(|v| !v.is_empty()), "{n}.sysctls lacks {s}");
    }
    // Global sysctls: the kernel shows them only in the initial network namespace.
    for s in ["net.core.busy_poll", "net.core.busy_read"] {
        assert!(
            sysctl(s).is_some_and(|v| !v.is_empty())
                || notes.contains(&format!("sysctl {s}: not present here")),
            "{n}.sysctls lacks {s} and does not say why: {notes}"
        );
    }
    for s in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
        let v = net.sysctls.get(s).map(String::as_str).unwrap_or_default();
        let fields: Vec<u64> = v.split(' ').filter_map(|f| f.parse().ok()).collect();
        assert_eq!(fields.len(), 3, "{n}.sysctls.{s} is not min default max: '{v}'");
    }
    // The size limits (BIG TCP's knobs) are read, or the kernel's silence is said.
    let z = &net.sizes;
    for (f, v) in
        [("gso_max_size", z.gso_max_size), ("gro_max_size", z.gro_max_size), ("tso_max_size", z.tso_max_size)]
    {
        assert!(
            v.is_some_and(|v| v > 0) || notes.contains(f),
            "{n}.sizes.{f} neither read nor explained: {notes}"
        );
    }
    // Coalescing is either read or explained.
    if net.coalescing.is_none() {
        assert!(notes.contains("coalescing"), "{n}: no coalescing and no reason: {notes}");
    }
}

#[test]
fn loopback_runs_report_lo_on_both_sides() {
    let r = ringperf!().run_report(&["stream", "-l", "1"]);
    for (side, x) in r.sides() {
        check_network(side, x.network.as_ref());
        let net = x.network();
        assert_eq!(net.device.as_deref(), Some("lo"));
        assert_eq!(net.driver.as_deref(), Some("loopback"));
        assert_eq!(net.local_address, "127.0.0.1");
        // lo is the one device that always has scatter-gather.
        assert_eq!(net.offloads.sg, Some(true));
    }
    // The host's default congestion control is the namespace's sysctl, read twice the same.
    assert_eq!(
        &r.environment.local.tcp_congestion_control,
        r.local.network().sysctls.get("net.ipv4.tcp_congestion_control").unwrap()
    );
}

#[test]
fn the_human_output_names_each_sides_egress() {
    let o = ringperf!().run(&["rr", "-l", "1", "-v"]).success();
    for side in ["local ", "remote"] {
        let line = o
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{side}  egress")))
            .unwrap_or_else(|| panic!("no '{side}  egress' line:\n{}", o.stdout));
        for f in [
            "egress lo (loopback driver)",
            "mtu ",
            "TSO on",
            "GSO ",
            "GRO ",
            "SG on",
            "qdisc ",
            "tcp_limit_output_bytes ",
        ] {
            assert!(line.contains(f), "the egress line lacks '{f}': {line}");
        }
    }
}

#[test]
fn tso_off_on_the_senders_veth_is_in_the_senders_environment() {
    if skip_unless("tso_off_on_the_senders_veth_is_in_the_senders_environment", true, LAB_PROGRAMS) {
        return;
    }
    let rp = ringperf!();
    // TSO off on host a's veth only: the client (a) sends, the server (b) receives.
    let lab = Lab::up(&lab_name("tsooff"), &["--tso", "a=off"]);
    let r = lab_stream_a_to_b(&lab, rp.path());
    ringperf_tests::check_stream_report(&r, false);
    for (side, x) in r.sides() {
        check_network(side, x.network.as_ref());
        let net = x.network();
        assert_eq!(net.device.as_deref(), Some("lab0"), "{side} egress is not the lab veth");
        assert_eq!(net.driver.as_deref(), Some("veth"));
        assert_eq!(net.mtu, Some(1500));
    }
    assert_eq!(r.local.network().local_address, "198.18.0.1");
    assert_eq!(r.local.network().peer_address, "198.18.0.2");
    assert_eq!(r.local.network().offloads.tso, Some(false), "the sender's TSO is off but the report says on");
    assert_eq!(
        r.remote().network().offloads.tso,
        Some(true),
        "the receiver's TSO was left on but the report says off"
    );
    let ns = lab.namespace("a");
    drop(lab);
    assert!(!ringperf_tests::netns_list().contains(&ns), "{ns} outlived the test");
}
