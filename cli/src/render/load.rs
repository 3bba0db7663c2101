//! `ringperf load`'s output: the probe's idle and loaded latency side by side, the
//! inflation, the probe's rate, the load per direction, the run's CPU and the time series;
//! or the whole LoadReport as JSON.

use std::fmt::Write;

use ringperf_core::load::{LoadDirection, LoadReport};
use ringperf_core::report::LatencySummary;

use ringperf_core::units::Units;

pub fn json(r: &LoadReport) -> String {
    // Plain data with string keys: serialization cannot fail.
    let mut s = serde_json::to_string_pretty(r).expect("LoadReport serializes");
    s.push('\n');
    s
}

/// The run's figures as (NAME, value) pairs, netperf keyval style; a figure that was not
/// measured is an empty value, never 0.
fn fields(r: &LoadReport, units: Units) -> Vec<(&'static str, String)> {
    let num = |v: Option<f64>, digits: usize| v.map_or_else(String::new, |v| format!("{v:.digits$}"));
    let lat = |l: Option<&LatencySummary>, pick: fn(&LatencySummary) -> u64| num(l.map(|l| us(pick(l))), 1);
    let (idle, loaded) = (r.idle.as_ref(), r.loaded.as_ref());
    let rate = |d| num(r.throughput(d).map(|t| units.convert(t)), 2);
    let cpu = r.cpu.as_ref();
    vec![
        ("TEST", r.test.clone()),
        ("LOAD", r.load.name().into()),
        ("PROBE_TEST", r.probe_test.clone()),
        ("IDLE_MS", r.idle_ms.to_string()),
        ("LOADED_MS", r.loaded_ms.to_string()),
        ("PROBE_TRANSACTIONS", r.probe.local.transactions.to_string()),
        ("IDLE_COUNT", idle.map_or_else(|| "0".into(), |l| l.count.to_string())),
        ("IDLE_P50_LATENCY", lat(idle, |l| l.p50_ns)),
        ("IDLE_P90_LATENCY", lat(idle, |l| l.p90_ns)),
        ("IDLE_P99_LATENCY", lat(idle, |l| l.p99_ns)),
        ("IDLE_MAX_LATENCY", lat(idle, |l| l.max_ns)),
        ("LOADED_COUNT", loaded.map_or_else(|| "0".into(), |l| l.count.to_string())),
        ("LOADED_P50_LATENCY", lat(loaded, |l| l.p50_ns)),
        ("LOADED_P90_LATENCY", lat(loaded, |l| l.p90_ns)),
        ("LOADED_P99_LATENCY", lat(loaded, |l| l.p99_ns)),
        ("LOADED_MAX_LATENCY", lat(loaded, |l| l.max_ns)),
        ("INFLATION_P50", num(r.inflation.map(|i| i.p50), 3)),
        ("INFLATION_P90", num(r.inflation.map(|i| i.p90), 3)),
        ("INFLATION_P99", num(r.inflation.map(|i| i.p99), 3)),
        ("PROBE_TARGET_RATE", num(r.probe_rate.target_per_sec, 1)),
        ("PROBE_ACHIEVED_RATE", num(Some(r.probe_rate.achieved_per_sec), 1)),
        ("PROBE_SLIPPED", r.probe_rate.slipped.to_string()),
        ("PROBE_DROPPED", r.probe_rate.dropped.to_string()),
        ("LOAD_UP_THROUGHPUT", rate(LoadDirection::Up)),
        ("LOAD_DOWN_THROUGHPUT", rate(LoadDirection::Down)),
        ("LOAD_UDP_THROUGHPUT", rate(LoadDirection::UdpUp)),
        ("THROUGHPUT_UNITS", units.label().into()),
        (
            "LOAD_START_DELAY_MS",
            num(r.load_start_ns.zip(r.split_ns).map(|(l, s)| l.saturating_sub(s) as f64 / 1e6), 3),
        ),
        ("LOCAL_CPU_UTIL", num(cpu.map(|c| c.local_busy_percent), 2)),
        ("REMOTE_CPU_UTIL", num(cpu.and_then(|c| c.remote_busy_percent), 2)),
        ("LOCAL_SD_US_PER_KB", num(cpu.and_then(|c| c.local_us_per_kb), 3)),
        ("REMOTE_SD_US_PER_KB", num(cpu.and_then(|c| c.remote_us_per_kb), 3)),
        ("PARTIAL", u8::from(r.partial).to_string()),
    ]
}

/// `--keyval`: NAME=value lines (latencies in us).
pub fn keyval(r: &LoadReport, units: Units) -> String {
    fields(r, units).into_iter().map(|(n, v)| format!("{n}={v}\n")).collect()
}

/// `--csv`: a header of the keyval names and one row.
pub fn csv(r: &LoadReport, units: Units) -> String {
    let f = fields(r, units);
    let quote = |v: &str| {
        if v.contains([',', '"']) {
            format!("\"{}\"", v.replace('"', "\"\""))
        } else {
            v.to_string()
        }
    };
    let names: Vec<&str> = f.iter().map(|(n, _)| *n).collect();
    let values: Vec<String> = f.iter().map(|(_, v)| quote(v)).collect();
    format!("{}\n{}\n", names.join(","), values.join(","))
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
        Some(l) if r.load == ringperf_core::load::LoadKind::Udp => {
            format!("a UDP flood up ({}, {} B datagrams)", flows(l.spec.flows), l.spec.send_size)
        }
        Some(l) if r.load == ringperf_core::load::LoadKind::Both => {
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
fn sent_received(d: LoadDirection, r: &ringperf_core::TestReport) -> (u64, u64) {
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
fn profile_line(s: &ringperf_core::report::SideReport) -> Option<String> {
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
