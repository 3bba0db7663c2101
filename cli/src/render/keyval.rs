//! `--keyval` and `--csv`: one set of NAME=value fields, with netperf's omni output names
//! where netperf has one (README lists them all), side by side over one report.

use ringperf_engine::report::{IterationFigures, SideReport, UdpReport};
use ringperf_engine::spec::Role;
use ringperf_engine::TestReport;

use super::Units;

/// The field names, in output order. Names without a netperf equivalent are ringperf's own.
pub const NAMES: &[&str] = &[
    "TEST",
    "THROUGHPUT",
    "THROUGHPUT_UNITS",
    "THROUGHPUT_CONFID",
    "TRANSACTION_RATE",
    "ELAPSED_TIME",
    "LOCAL_SEND_SIZE",
    "REMOTE_RECV_SIZE",
    "REQUEST_SIZE",
    "RESPONSE_SIZE",
    "LSS_SIZE_END",
    "LSR_SIZE_END",
    "RSS_SIZE_END",
    "RSR_SIZE_END",
    "LOCAL_CPU_UTIL",
    "REMOTE_CPU_UTIL",
    "LOCAL_CPU_CONFID",
    "REMOTE_CPU_CONFID",
    "LOCAL_CPU_COUNT",
    "REMOTE_CPU_COUNT",
    "LOCAL_SD",
    "REMOTE_SD",
    "SD_UNITS",
    "LOCAL_SD_PER_SEGMENT",
    "REMOTE_SD_PER_SEGMENT",
    "LOCAL_TOOL_OVERHEAD",
    "REMOTE_TOOL_OVERHEAD",
    "LOCAL_TRANSPORT_RETRANS",
    "REMOTE_TRANSPORT_RETRANS",
    "RT_LATENCY",
    "MIN_LATENCY",
    "MEAN_LATENCY",
    "P50_LATENCY",
    "P90_LATENCY",
    "P99_LATENCY",
    "MAX_LATENCY",
    "CONFIDENCE_LEVEL",
    "CONFIDENCE_ITERATION",
    "SEND_ENGINE",
    "RECV_ENGINE",
    "ZERO_COPY_FRACTION",
    "LOCAL_RELEASE",
    "REMOTE_RELEASE",
    "LOCAL_SEND_CALLS",
    "REMOTE_RECV_CALLS",
    "REMOTE_THROUGHPUT",
    "DATAGRAMS_SENT",
    "DATAGRAMS_RECEIVED",
    "LOST_DATAGRAMS",
    "REORDERED_DATAGRAMS",
    "DUPLICATE_DATAGRAMS",
    "DATAGRAMS_PER_SEND",
    "DATAGRAMS_PER_RECV",
    "LOCAL_SD_PER_DATAGRAM",
    "REMOTE_SD_PER_DATAGRAM",
    "UDP_TIMEOUTS",
    "UDP_RETRANSMISSIONS",
    "CRR_CONNECTIONS",
];

fn f(v: f64, places: usize) -> String {
    format!("{v:.places$}")
}

/// A UDP figure of side `s`, empty when the side has no UDP report.
fn udp_field(s: Option<&SideReport>, g: impl Fn(&UdpReport) -> String) -> String {
    s.and_then(|s| s.udp.as_ref()).map_or_else(String::new, g)
}

fn opt(v: Option<f64>, places: usize) -> String {
    v.map_or_else(String::new, |v| f(v, places))
}

/// The values of one run (`figures`), with everything else from the report.
fn values(r: &TestReport, fig: &IterationFigures, units: Units) -> Vec<String> {
    let rr = r.spec.workload.is_transactional();
    // A partial run's server may never have reported: its values are left empty.
    let remote = r.remote.as_ref();
    let (sender, receiver) = match r.local.role {
        Role::StreamReceiver => (remote, Some(&r.local)),
        Role::StreamSender => (Some(&r.local), remote),
        _ => (Some(&r.local), remote),
    };
    // The engines as asked for: the side that would report them may be missing.
    let (send_engine, recv_engine) = match r.local.role {
        Role::StreamReceiver => (r.spec.remote.send_engine, r.spec.local.recv_engine),
        Role::StreamSender => (r.spec.local.send_engine, r.spec.remote.recv_engine),
        _ => (r.spec.local.send_engine, r.spec.local.recv_engine),
    };
    let of_remote = |g: &dyn Fn(&SideReport) -> String| remote.map_or_else(String::new, g);
    let conf = r.confidence.as_ref();
    let confid = |name: &str| {
        conf.and_then(|c| c.estimates.iter().find(|e| e.name == name)).map_or("-1.000".into(), |e| {
            // netperf reports the full width of the interval in percent.
            f(2.0 * e.half_width_percent, 3)
        })
    };
    let lat = r.local.latency.as_ref();
    let us = |ns: Option<u64>| opt(ns.map(|n| n as f64 / 1e3), 3);
    let retrans = |s: &SideReport| s.tcp.as_ref().map_or(String::new(), |t| t.total_retrans.to_string());
    let per_seg = |s: &SideReport| opt(s.service_demand.ns_per_segment, 1);
    let zc = sender
        .and_then(|s| s.send.as_ref())
        .and_then(|s| s.zero_copy.as_ref())
        .map(|z| z.zero_copy_fraction());
    let out: Vec<String> = vec![
        r.test.clone(),
        // netperf reports request/response throughput in transactions per second.
        if rr { opt(fig.transactions_per_sec, 2) } else { f(units.convert(fig.throughput_bits_per_sec), 2) },
        if rr { "Trans/s".to_string() } else { units.label().to_string() },
        confid(if rr { "transactions/s" } else { "throughput" }),
        opt(fig.transactions_per_sec, 2),
        f(r.local.elapsed_ns as f64 / 1e9, 3),
        if rr { String::new() } else { r.spec.send_size.to_string() },
        if rr { String::new() } else { r.spec.recv_size.to_string() },
        if rr { r.spec.request_size.to_string() } else { String::new() },
        if rr { r.spec.response_size.to_string() } else { String::new() },
        r.local.socket.send_buffer.to_string(),
        r.local.socket.recv_buffer.to_string(),
        of_remote(&|s| s.socket.send_buffer.to_string()),
        of_remote(&|s| s.socket.recv_buffer.to_string()),
        f(fig.local_cpu_percent, 2),
        opt(fig.remote_cpu_percent, 2),
        confid("local CPU"),
        confid("remote CPU"),
        r.local.cpu.system.cpus.to_string(),
        of_remote(&|s| s.cpu.system.cpus.to_string()),
        opt(fig.local_sd_us, 3),
        opt(fig.remote_sd_us, 3),
        if rr { "usec/Tran".into() } else { "usec/KB".into() },
        per_seg(&r.local),
        of_remote(&per_seg),
        f(r.local.cpu.tool_overhead_percent, 3),
        of_remote(&|s| f(s.cpu.tool_overhead_percent, 3)),
        retrans(&r.local),
        of_remote(&retrans),
        opt(lat.map(|l| l.mean_ns / 1e3), 3),
        us(lat.map(|l| l.min_ns)),
        opt(lat.map(|l| l.mean_ns / 1e3), 3),
        us(fig.p50_latency_ns),
        us(lat.map(|l| l.p90_ns)),
        us(fig.p99_latency_ns),
        us(lat.map(|l| l.max_ns)),
        conf.map_or(String::new(), |c| f(100.0 * c.target.level, 1)),
        conf.map_or("1".into(), |c| c.iterations.to_string()),
        sender.map_or(send_engine, |s| s.send_engine).name().to_string(),
        receiver.map_or(recv_engine, |s| s.recv_engine).name().to_string(),
        opt(zc, 4),
        r.environment.local.kernel_release.clone(),
        r.environment.remote.kernel_release.clone(),
        // UDP: the sender's sends and the receiver's receives (netperf's call counts);
        // the receiver's own rate, datagram accounting, and crr connections.
        udp_field(sender, |u| u.sends.to_string()),
        udp_field(receiver, |u| u.receives.to_string()),
        receiver.filter(|rx| rx.udp.is_some()).map_or(String::new(), |rx| {
            let bits = rx.bytes_received as f64 * 8.0 / (rx.elapsed_ns.max(1) as f64 / 1e9);
            f(units.convert(bits), 2)
        }),
        udp_field(sender, |u| u.datagrams_sent.to_string()),
        udp_field(receiver, |u| u.datagrams_received.to_string()),
        match (sender.and_then(|s| s.udp.as_ref()), receiver.and_then(|s| s.udp.as_ref())) {
            (Some(s), Some(rv)) if !rr => s.datagrams_sent.saturating_sub(rv.datagrams_received).to_string(),
            _ => String::new(),
        },
        udp_field(receiver, |u| u.reordered.to_string()),
        udp_field(receiver, |u| u.duplicated.to_string()),
        udp_field(sender, |u| f(u.datagrams_per_send(), 2)),
        udp_field(receiver, |u| f(u.datagrams_per_receive(), 2)),
        udp_field(Some(&r.local), |u| opt(u.us_per_datagram, 3)),
        udp_field(r.remote.as_ref(), |u| opt(u.us_per_datagram, 3)),
        udp_field(Some(&r.local), |u| if rr { u.timeouts.to_string() } else { String::new() }),
        udp_field(Some(&r.local), |u| if rr { u.retransmissions.to_string() } else { String::new() }),
        r.local.crr.as_ref().map_or(String::new(), |c| c.connections.to_string()),
    ];
    debug_assert_eq!(out.len(), NAMES.len());
    out
}

/// The whole report's figures (means over iterations when iterated).
fn summary_figures(r: &TestReport) -> IterationFigures {
    let mut fig = *r.iterations.last().unwrap_or(&IterationFigures::default());
    let n = r.iterations.len().max(1) as f64;
    let mean = |g: &dyn Fn(&IterationFigures) -> Option<f64>| {
        let v: Vec<f64> = r.iterations.iter().filter_map(g).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    fig.throughput_bits_per_sec = r.summary.throughput_bits_per_sec;
    fig.transactions_per_sec = r.summary.transactions_per_sec;
    fig.local_cpu_percent = r.iterations.iter().map(|i| i.local_cpu_percent).sum::<f64>() / n;
    fig.remote_cpu_percent = mean(&|i| i.remote_cpu_percent);
    fig.local_sd_us = mean(&|i| i.local_sd_us);
    fig.remote_sd_us = mean(&|i| i.remote_sd_us);
    if let Some(l) = &r.local.latency {
        fig.p50_latency_ns = Some(l.p50_ns);
        fig.p99_latency_ns = Some(l.p99_ns);
    }
    fig
}

pub fn render(r: &TestReport, units: Units) -> String {
    let vals = values(r, &summary_figures(r), units);
    NAMES.iter().zip(vals).map(|(n, v)| format!("{n}={v}\n")).collect()
}

/// A header line (unless `header` is false, `-P 0`) and one row per iteration.
pub fn render_csv(r: &TestReport, units: Units, header: bool) -> String {
    let mut o = String::new();
    if header {
        o.push_str(&NAMES.join(","));
        o.push('\n');
    }
    for (i, fig) in r.iterations.iter().enumerate() {
        let mut vals = values(r, fig, units);
        // Each row is one run: its own iteration number.
        let idx = NAMES.iter().position(|n| *n == "CONFIDENCE_ITERATION").expect("listed");
        vals[idx] = (i + 1).to_string();
        o.push_str(&vals.iter().map(|v| csv_field(v)).collect::<Vec<_>>().join(","));
        o.push('\n');
    }
    o
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}
