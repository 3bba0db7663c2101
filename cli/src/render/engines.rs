//! The `ringperf engines` table: one row per engine combination.

use std::fmt::Write;

use ringperf_engine::TestReport;

use super::Units;

pub fn render(reports: &[TestReport], units: Units) -> String {
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
            // A partial run whose server never reported: what the local side measured, and why.
            // The local figures still say what moved until the run stopped.
            let _ = writeln!(
                o,
                "{:<8} {:<10} {:>12.2} {:>8.2}   partial, the server's side is missing: {}",
                r.spec.local.send_engine.name(),
                r.spec.local.recv_engine.name(),
                units.convert(r.summary.throughput_bits_per_sec),
                r.local.cpu.system.busy_percent,
                r.partial_reason.as_deref().unwrap_or("")
            );
            continue;
        };
        let (Some(sender), Some(receiver)) = r.sender_and_receiver() else { continue };
        let zc = r.zero_copy_fraction().map_or_else(|| "-".into(), |z| format!("{:.1} %", 100.0 * z));
        let mb = sender.bytes_sent as f64 / 1e6;
        // A classic side has no ring: its system calls stand where the enters would.
        let calls =
            |s: &ringperf_engine::report::SideReport| s.ring.syscalls.map_or(s.ring.enters, |c| c.total());
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
        "\nzero-copy: share of bytes the kernel did not copy (its own notification report); enters/MB: both sides' io_uring_enter calls per MB sent (a syscall side: its send, recv and epoll_wait calls)"
    );
    o
}
