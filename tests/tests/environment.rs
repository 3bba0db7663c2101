//! The network environment in every report: the egress device of the data connection,
//! its driver, offloads, MTU, qdisc and the sysctls, per side. On loopback that is `lo`;
//! in a lab with TSO off on the sender's veth, the sender's environment must say so.

use ringperf_tests::{
    at, bool_at, lab_name, ringperf, skip_unless, str_at, u64_at, Lab, Server, LAB_PROGRAMS, RUN_TIMEOUT,
};

/// What every side's network environment must carry, wherever it ran.
fn check_network(r: &serde_json::Value, side: &str) {
    let n = format!("{side}.network");
    assert!(at(r, &n).is_object(), "{n} missing: {}", at(r, side));
    for f in ["tso", "gso", "gro", "sg", "tx_checksum", "rx_checksum"] {
        assert!(at(r, &format!("{n}.offloads.{f}")).is_boolean(), "{n}.offloads.{f} not read");
    }
    assert!(u64_at(r, &format!("{n}.mtu")) >= 576, "{n}.mtu implausible");
    assert!(!str_at(r, &format!("{n}.qdisc")).is_empty(), "{n}.qdisc empty");
    let sysctl = |s: &str| at(r, &format!("{n}.sysctls")).get(s).and_then(|v| v.as_str()).map(str::to_string);
    let notes = at(r, &format!("{n}.unavailable")).to_string();
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
        let v = at(r, &format!("{n}.sysctls")).get(s).and_then(|v| v.as_str()).unwrap_or_default();
        let fields: Vec<u64> = v.split(' ').filter_map(|f| f.parse().ok()).collect();
        assert_eq!(fields.len(), 3, "{n}.sysctls.{s} is not min default max: '{v}'");
    }
    // Coalescing is either read or explained.
    if at(r, &format!("{n}.coalescing")).is_null() {
        assert!(notes.contains("coalescing"), "{n}: no coalescing and no reason: {notes}");
    }
}

#[test]
fn loopback_runs_report_lo_on_both_sides() {
    let r = ringperf!().run_json(&["stream", "-l", "1"]);
    for side in ["local", "remote"] {
        check_network(&r, side);
        assert_eq!(str_at(&r, &format!("{side}.network.device")), "lo");
        assert_eq!(str_at(&r, &format!("{side}.network.driver")), "loopback");
        assert_eq!(str_at(&r, &format!("{side}.network.local_address")), "127.0.0.1");
        // lo is the one device that always has scatter-gather.
        assert!(bool_at(&r, &format!("{side}.network.offloads.sg")));
    }
    // The host's default congestion control is the namespace's sysctl, read twice the same.
    assert_eq!(
        str_at(&r, "environment.local.tcp_congestion_control"),
        at(&r, "local.network.sysctls")
            .get("net.ipv4.tcp_congestion_control")
            .and_then(|v| v.as_str())
            .unwrap()
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
    let mut server =
        Server::start(lab.exec("b", rp.path(), &["serve", "--bind", "198.18.0.2", "--port", "0"]));
    let port = server.port_arg();
    let o = ringperf_tests::run_with_timeout(
        lab.exec("a", rp.path(), &["stream", "-H", "198.18.0.2", "-p", &port, "-l", "1", "--json"]),
        RUN_TIMEOUT,
    )
    .success();
    server.assert_running();
    let r = o.json();
    ringperf_tests::check_stream_report(&r, false);
    for side in ["local", "remote"] {
        check_network(&r, side);
        assert_eq!(
            str_at(&r, &format!("{side}.network.device")),
            "lab0",
            "{side} egress is not the lab veth"
        );
        assert_eq!(str_at(&r, &format!("{side}.network.driver")), "veth");
        assert_eq!(u64_at(&r, &format!("{side}.network.mtu")), 1500);
    }
    assert_eq!(str_at(&r, "local.network.local_address"), "198.18.0.1");
    assert_eq!(str_at(&r, "local.network.peer_address"), "198.18.0.2");
    assert!(!bool_at(&r, "local.network.offloads.tso"), "the sender's TSO is off but the report says on");
    assert!(
        bool_at(&r, "remote.network.offloads.tso"),
        "the receiver's TSO was left on but the report says off"
    );
    drop(server);
    let ns = lab.namespace("a");
    drop(lab);
    assert!(!ringperf_tests::netns_list().contains(&ns), "{ns} outlived the test");
}
