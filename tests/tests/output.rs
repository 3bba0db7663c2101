//! What the user sees: the embedded default, the JSON report's schema and echoed spec,
//! and the netperf-style human table.

use ringperf_tests::{at, bool_at, check_stream_report, report_of, ringperf, str_at, u64_at};

#[test]
fn embedded_default_runs_without_a_server() {
    // No -H and no server started by the test: the client must embed its own.
    let r = ringperf!().run_report(&["stream", "-l", "1"]);
    assert!(r.embedded_server, "embedded_server is not true without -H");
    let server = &r.server;
    let addr: std::net::SocketAddr =
        server.parse().unwrap_or_else(|e| panic!("server '{server}' is not an address: {e}"));
    assert!(addr.ip().is_loopback(), "the embedded server is not on loopback: {server}");
    // It takes an ephemeral port, so it never collides with a real server on the default.
    assert_ne!(addr.port(), 12866, "the embedded server took the default control port");
    check_stream_report(&r, false);
}

#[test]
fn json_carries_schema_spec_sides_and_environment() {
    // The JSON as a user's script reads it: names and paths, not the type.
    let r = ringperf!().run_json(&["stream", "-l", "1", "-m", "64K", "-M", "32K", "--cc", "reno"]);
    assert_eq!(u64_at(&r, "schema_version"), u64::from(ringperf_core::report::SCHEMA_VERSION));
    assert!(!str_at(&r, "tool_version").is_empty());
    // A whole run says so; the fields are there either way, so the schema does not change shape.
    assert!(!bool_at(&r, "partial"), "a whole run marked partial");
    assert!(at(&r, "partial_reason").is_null(), "a whole run with a partial_reason");

    // The spec is echoed as given.
    assert_eq!(u64_at(&r, "spec.send_size"), 64 * 1024, "spec.send_size is not the -m given");
    assert_eq!(u64_at(&r, "spec.recv_size"), 32 * 1024, "spec.recv_size is not the -M given");
    assert_eq!(u64_at(&r, "spec.duration_ms"), 1000, "spec.duration_ms is not the -l given");
    assert_eq!(str_at(&r, "spec.congestion_control"), "reno", "spec.congestion_control is not --cc");
    assert_eq!(u64_at(&r, "spec.flows"), 1);
    assert!(at(&r, "spec.local").is_object() && at(&r, "spec.remote").is_object());

    // Both side reports.
    for side in ["local", "remote"] {
        assert!(at(&r, side).is_object(), "no {side} side report");
        for f in ["role", "elapsed_ns", "bytes_sent", "bytes_received", "cpu", "service_demand", "ring"] {
            at(&r, &format!("{side}.{f}"));
        }
    }
    check_stream_report(&report_of(&r), false);

    // Both environments, with the facts a result depends on.
    for side in ["local", "remote"] {
        let e = format!("environment.{side}");
        for f in ["kernel_release", "cpu_model", "hostname"] {
            assert!(!str_at(&r, &format!("{e}.{f}")).is_empty(), "{e}.{f} is empty");
        }
        assert!(u64_at(&r, &format!("{e}.cpu_count")) >= 1, "{e}.cpu_count is 0");
    }
    // Over loopback both sides are this host, so their environments name the same one.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    for side in ["local", "remote"] {
        let e = format!("environment.{side}");
        assert_eq!(str_at(&r, &format!("{e}.kernel_release")), release.trim(), "{e}.kernel_release");
    }
    for f in ["hostname", "cpu_model", "cpu_count"] {
        assert_eq!(
            at(&r, &format!("environment.local.{f}")),
            at(&r, &format!("environment.remote.{f}")),
            "local and remote {f} differ on one host"
        );
    }
    // The CPU counts agree with what each side's /proc/stat covered.
    assert_eq!(u64_at(&r, "environment.local.cpu_count"), u64_at(&r, "local.cpu.system.cpus"));
}

#[test]
fn human_stream_table_has_netperf_headers() {
    let o = ringperf!().run(&["stream", "-l", "1"]).success();
    let out = &o.stdout;
    assert!(!out.trim_start().starts_with('{'), "the table is JSON:\n{out}");
    for h in
        ["TCP_STREAM", "embedded server", "Throughput", "Service Demand", "Elapsed", "10^6bits/s", "us/KB"]
    {
        assert!(out.contains(h), "the stream table lacks '{h}':\n{out}");
    }
    for side in ["local ", "remote"] {
        let line = format!("{side}  tool overhead");
        assert!(out.contains(&line), "no '{line}' line:\n{out}");
    }
    assert!(!out.contains("round trip"), "a stream table with latency:\n{out}");
}

#[test]
fn human_rr_table_has_netperf_headers_and_latency() {
    let o = ringperf!().run(&["rr", "-l", "1"]).success();
    let out = &o.stdout;
    for h in ["TCP_RR", "Trans.", "Rate", "per sec", "S.dem", "us/Tr", "tool overhead", "round trip", "p99.9"]
    {
        assert!(out.contains(h), "the rr table lacks '{h}':\n{out}");
    }
}
