//! `ringperf load`'s output: the probe's idle and loaded latency side by side, the
//! inflation, the probe's rate, the load per direction, the run's CPU and the time series;
//! or the whole LoadReport as JSON.

use std::fmt::Write;

use ringperf_engine::load::{LoadDirection, LoadReport};
use ringperf_engine::report::LatencySummary;

use super::Units;

pub fn json(r: &LoadReport) -> String {
    // Plain data with string keys: serialization cannot fail.
    let mut s = serde_json::to_string_pretty(r).expect("LoadReport serializes");
    s.push('\n');
    s
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn phase_row(o: &mut String, name: &str, l: Option<&LatencySummary>) {
    match l {
        Some(l) => {
            let _ = writeln!(
                o,
                "{name:<18} {:>9} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                l.count,
                us(l.p50_ns),
                us(l.p90_ns),
                us(l.p99_ns),
                us(l.max_ns)
            );
        }
        None => {
            let _ = writeln!(o, "{name:<18} {:>9} {:>10} {:>10} {:>10} {:>10}", 0, "-", "-", "-", "-");
        }
    }
}

pub fn human(r: &LoadReport, units: Units) -> String {
    let mut o = String::new();
    let secs = |ns: u64| ns as f64 / 1e9;
    let p = &r.probe;
    let schedule = match r.probe_rate.target_per_sec {
        Some(t) => format!("open loop at {t:.0}/s"),
        None => "closed loop".to_string(),
    };
    let flows = |n: u32| if n == 1 { "1 flow".to_string() } else { format!("{n} flows") };
    let load = match r.loads.first().and_then(|l| l.report.as_ref()) {
        Some(l) if r.load == ringperf_engine::load::LoadKind::Udp => {
            format!("a UDP flood up ({}, {} B datagrams)", flows(l.spec.flows), l.spec.send_size)
        }
        Some(l) if r.load == ringperf_engine::load::LoadKind::Both => {
            format!("TCP streams both ways ({} each way)", flows(l.spec.flows))
        }
        Some(l) => format!("TCP streams {} ({})", r.load.name(), flows(l.spec.flows)),
        None => format!("load {}", r.load.name()),
    };
    let server =
        if r.embedded_server { format!("a server embedded on {}", p.server) } else { p.server.clone() };
    let _ = writeln!(
        o,
        "ringperf load: {} probes ({}, {schedule}) to {server}, then {load}",
        r.probe_test,
        flows(p.spec.flows),
    );
    let _ = writeln!(
        o,
        "{:<18} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "probe round trips", "count", "p50 us", "p90 us", "p99 us", "max us"
    );
    let split = r.split_ns.map_or(r.idle_ms as f64 / 1e3, secs);
    let total = secs(p.local.elapsed_ns);
    phase_row(&mut o, &format!("idle ({split:.1} s)"), r.idle.as_ref());
    phase_row(&mut o, &format!("loaded ({:.1} s)", (total - split).max(0.0)), r.loaded.as_ref());
    if let Some(i) = r.inflation {
        let _ = writeln!(o, "{:<18} {:>9} {:>9.2}x {:>9.2}x {:>9.2}x", "inflation", "", i.p50, i.p90, i.p99);
    }
    let rate = &r.probe_rate;
    let _ = match rate.target_per_sec {
        Some(t) => writeln!(
            o,
            "probe rate: {t:.1}/s target, {:.1}/s achieved ({} sent late, {} dropped)",
            rate.achieved_per_sec, rate.slipped, rate.dropped
        ),
        None => writeln!(
            o,
            "probe rate: {:.1}/s achieved, closed loop ({})",
            rate.achieved_per_sec,
            rate.closed_loop_reason.as_deref().unwrap_or("no schedule")
        ),
    };
    for part in &r.loads {
        let _ = match (&part.report, &part.error) {
            (Some(l), _) => writeln!(
                o,
                "load {:<6} {:>10.2} {} over {:.2} s ({} bytes sent, {} received)",
                part.direction.name(),
                units.convert(part.throughput_bits_per_sec.unwrap_or(0.0)),
                units.label(),
                l.local.elapsed_secs(),
                sent_received(part.direction, l).0,
                sent_received(part.direction, l).1,
            ),
            (None, Some(e)) => writeln!(o, "load {:<6} failed: {e}", part.direction.name()),
            (None, None) => Ok(()),
        };
    }
    if let (Some(start), Some(split)) = (r.load_start_ns, r.split_ns) {
        let _ = writeln!(
            o,
            "load started {:.1} ms after the idle phase ended (its sessions' set-up)",
            start.saturating_sub(split) as f64 / 1e6
        );
    }
    if let Some(c) = r.cpu {
        let per_kb = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.3}"));
        let _ = write!(
            o,
            "CPU over the whole run: local {:.1} % busy, {} us/KB of load",
            c.local_busy_percent,
            per_kb(c.local_us_per_kb)
        );
        match c.remote_busy_percent {
            Some(b) => {
                let _ = writeln!(o, "; remote {b:.1} % busy, {} us/KB", per_kb(c.remote_us_per_kb));
            }
            None => o.push('\n'),
        }
    }
    for (name, side) in [("local", Some(&p.local)), ("remote", p.remote.as_ref())] {
        if let Some(line) = side.and_then(profile_line) {
            let _ = writeln!(o, "{name} profile over the whole run: {line}");
        }
    }
    if !r.series.is_empty() {
        let _ =
            writeln!(o, "\n{:>8} {:>8} {:>10} {:>10} {:>12}", "t (s)", "probes", "p50 us", "p99 us", "load");
        for s in &r.series {
            let opt = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| format!("{:.1}", us(v)));
            let _ = writeln!(
                o,
                "{:>8.2} {:>8} {:>10} {:>10} {:>12.2}",
                secs(s.start_ns + s.duration_ns),
                s.probe_transactions,
                opt(s.probe_p50_ns),
                opt(s.probe_p99_ns),
                units.convert(s.load_bits_per_sec())
            );
        }
        let _ = writeln!(o, "(load in {}, all directions)", units.label());
    }
    o
}

/// A load test's payload: what the sender sent and what the receiver received.
fn sent_received(d: LoadDirection, r: &ringperf_engine::TestReport) -> (u64, u64) {
    let remote = r.remote.as_ref();
    match d {
        LoadDirection::Up | LoadDirection::UdpUp => {
            (r.local.bytes_sent, remote.map_or(0, |s| s.bytes_received))
        }
        LoadDirection::Down => (remote.map_or(0, |s| s.bytes_sent), r.local.bytes_received),
    }
}

/// The profile's tool overhead and its largest categories, as shares of busy CPU (the
/// costs per unit of the probe's report are per probe transaction: not shown here).
fn profile_line(s: &ringperf_engine::report::SideReport) -> Option<String> {
    let p = s.profile.as_ref()?;
    if let Some(why) = &p.unavailable {
        return Some(format!("unavailable: {}", why.replace(|c: char| c.is_control(), "?")));
    }
    let mut top: Vec<_> = p.categories.iter().collect();
    top.sort_by(|a, b| b.share_percent.total_cmp(&a.share_percent));
    let shares: Vec<String> =
        top.iter().take(5).map(|c| format!("{} {:.1} %", c.category.label(), c.share_percent)).collect();
    Some(format!(
        "tool overhead {:.2} % of busy CPU; busy CPU by category: {} [{} samples]",
        p.tool_overhead_percent,
        shares.join(", "),
        p.samples
    ))
}
