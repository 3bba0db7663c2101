//! The `ringperf engines` table: one row per engine combination, then the workload's
//! default harness against the other one.

use std::fmt::Write;

use ringperf_core::harness::Harness;
use ringperf_core::report::SideReport;
use ringperf_core::TestReport;

use ringperf_core::units::Units;

pub fn render(reports: &[TestReport], units: Units, default: Harness) -> String {
    let transactional = reports.first().is_some_and(|r| r.spec.workload.is_transactional());
    let mut o = if transactional { transaction_table(reports) } else { byte_table(reports, units) };
    if let Some(line) = harness_line(reports, default) {
        let _ = writeln!(o, "\n{line}");
    }
    o
}

/// A classic side has no ring: its system calls stand where the enters would.
fn calls(s: &SideReport) -> u64 {
    s.ring.syscalls.map_or(s.ring.enters, |c| c.total())
}

/// A partial run whose server never reported: what the local side measured, and why.
fn partial_row(o: &mut String, r: &TestReport, rate: f64) {
    let _ = writeln!(
        o,
        "{:<8} {:<10} {:>12.2} {:>8.2}   partial, the server's side is missing: {}",
        r.spec.local.send_engine.name(),
        r.spec.local.recv_engine.name(),
        rate,
        r.local.cpu.system.busy_percent,
        r.partial_reason.as_deref().unwrap_or("")
    );
}

/// Streams (and udp-stream): throughput, service demand per KB, zero copy, enters per MB.
fn byte_table(reports: &[TestReport], units: Units) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<8} {:<10} {:>12} {:>8} {:>8} {:>8} {:>8} {:>10} {:>10} {:>9}",
        "send",
        "recv",
        units.label(),
        "CPU% loc",
        "CPU% rem",
        "SD loc",
        "SD rem",
        "zero-copy",
        "enters/MB",
        "tool ovh%"
    );
    for r in reports {
        let Some(remote) = &r.remote else {
            partial_row(&mut o, r, units.convert(r.summary.throughput_bits_per_sec));
            continue;
        };
        let (Some(sender), Some(receiver)) = r.sender_and_receiver() else { continue };
        let zc = r.zero_copy_fraction().map_or_else(|| "-".into(), |z| format!("{:.1} %", 100.0 * z));
        let mb = sender.bytes_sent as f64 / 1e6;
        let enters = (calls(sender) + calls(receiver)) as f64;
        let _ = writeln!(
            o,
            "{:<8} {:<10} {:>12.2} {:>8.2} {:>8.2} {:>8.3} {:>8.3} {:>10} {:>10.1} {:>9.2}",
            r.engine_pair().0.name(),
            r.engine_pair().1.name(),
            units.convert(r.summary.throughput_bits_per_sec),
            r.local.cpu.system.busy_percent,
            remote.cpu.system.busy_percent,
            r.local.service_demand.us_per_kb.unwrap_or(0.0),
            remote.service_demand.us_per_kb.unwrap_or(0.0),
            zc,
            if mb > 0.0 { enters / mb } else { 0.0 },
            r.local.cpu.tool_overhead_percent.max(remote.cpu.tool_overhead_percent),
        );
    }
    let _ = writeln!(
        o,
        "\nSD: busy CPU us per KB (all CPUs of the side's host); zero-copy: share of bytes the kernel did not copy (its own notification report); enters/MB: both sides' io_uring_enter calls per MB sent (a syscall side: its send, recv and epoll_wait calls)"
    );
    o
}

/// rr, crr and udp-rr: transactions per second, service demand per transaction, system
/// calls per transaction.
fn transaction_table(reports: &[TestReport]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<8} {:<10} {:>12} {:>8} {:>8} {:>8} {:>8} {:>10} {:>9}",
        "send", "recv", "trans/s", "CPU% loc", "CPU% rem", "SD loc", "SD rem", "calls/tr", "tool ovh%"
    );
    for r in reports {
        let rate = r.summary.transactions_per_sec.unwrap_or(0.0);
        let Some(remote) = &r.remote else {
            partial_row(&mut o, r, rate);
            continue;
        };
        let per =
            |n: u64| if r.local.transactions > 0 { n as f64 / r.local.transactions as f64 } else { 0.0 };
        let _ = writeln!(
            o,
            "{:<8} {:<10} {:>12.1} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>10.2} {:>9.2}",
            r.engine_pair().0.name(),
            r.engine_pair().1.name(),
            rate,
            r.local.cpu.system.busy_percent,
            remote.cpu.system.busy_percent,
            r.local.service_demand.us_per_transaction.unwrap_or(0.0),
            remote.service_demand.us_per_transaction.unwrap_or(0.0),
            per(calls(&r.local) + calls(remote)),
            r.local.cpu.tool_overhead_percent.max(remote.cpu.tool_overhead_percent),
        );
    }
    let _ = writeln!(
        o,
        "\nSD: busy CPU us per transaction (all CPUs of the side's host); calls/tr: both sides' io_uring_enter calls per transaction (a syscall side: its send, recv and epoll_wait calls)"
    );
    o
}

/// The busy CPU per unit of work the run cost: the client's service demand, which covers
/// every CPU of its host, so the embedded server's too; against a server on another host,
/// both hosts' added.
fn service_demand(r: &TestReport) -> Option<f64> {
    let per = |s: &SideReport| {
        if r.spec.workload.is_transactional() {
            s.service_demand.us_per_transaction
        } else {
            s.service_demand.us_per_kb
        }
    };
    let local = per(&r.local)?;
    if r.embedded_server {
        return Some(local);
    }
    Some(local + per(r.remote.as_ref()?)?)
}

/// What a harness is called in the comparison.
fn harness_name(r: &TestReport) -> String {
    let (send, recv) = r.engine_pair();
    match Harness::of_send(send) {
        Harness::Classic => send.name().to_string(),
        Harness::IoUring => format!("io_uring {}/{}", send.name(), recv.name()),
    }
}

/// `rr: syscall 12.3 us/tr (default), io_uring copy/multishot 14.0 us/tr (+13.8 %)`: the
/// rows that ran the default harness's engines and the other harness's, when both ran
/// whole.
pub fn harness_line(reports: &[TestReport], default: Harness) -> Option<String> {
    let first = reports.first()?;
    let w = first.spec.workload;
    let ran = |h: Harness| {
        reports.iter().find(|r| !r.partial && r.remote.is_some() && r.engine_pair() == h.engines(w))
    };
    let (a, b) = (ran(default)?, ran(default.other())?);
    let (sd_a, sd_b) = (service_demand(a)?, service_demand(b)?);
    let unit = if w.is_transactional() { "us/tr" } else { "us/KB" };
    let change = |x: f64, base: f64| {
        if base > 0.0 {
            format!("{:+.1} %", 100.0 * (x / base - 1.0))
        } else {
            "-".to_string()
        }
    };
    let where_ = if first.embedded_server { "this host's CPUs" } else { "both hosts' CPUs" };
    Some(format!(
        "{}: {} {sd_a:.3} {unit} (default), {} {sd_b:.3} {unit} ({}); busy CPU per {} over {where_}, one run each: compare with -i or the bench before concluding",
        first.spec.command_name(),
        harness_name(a),
        harness_name(b),
        change(sd_b, sd_a),
        if w.is_transactional() { "transaction" } else { "KB" },
    ))
}
