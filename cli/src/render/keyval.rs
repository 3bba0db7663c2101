//! `--keyval` and `--csv`: one set of NAME=value fields, with netperf's omni output names
//! where netperf has one (README lists them all), side by side over one report.

use ringperf_engine::measure::kernel::{KernelCounters, LinkStats};
use ringperf_engine::measure::profile::ProfileReport;
use ringperf_engine::report::{IterationFigures, LatencySummary, SideReport, UdpReport};
use ringperf_engine::TestReport;

use super::Units;
use crate::args;

/// What every field's extractor reads: one run's figures (`fig`) over the whole report.
struct Row<'a> {
    r: &'a TestReport,
    fig: &'a IterationFigures,
    units: Units,
    /// Request/response: throughput is transactions/s and sizes are -r's.
    rr: bool,
    sender: Option<&'a SideReport>,
    receiver: Option<&'a SideReport>,
    /// CSV: this row's iteration (from 0); keyval: `None`, the whole report.
    iteration: Option<usize>,
}

impl Row<'_> {
    /// A figure of the server's side, empty when a partial run's server never reported.
    fn remote(&self, g: impl Fn(&SideReport) -> String) -> String {
        self.r.remote.as_ref().map_or_else(String::new, g)
    }

    /// The full width of the confidence interval of `name` in percent, netperf's -1 without one.
    fn confid(&self, name: &str) -> String {
        let c = self.r.confidence.as_ref();
        c.and_then(|c| c.estimates.iter().find(|e| e.name == name))
            .map_or("-1.000".into(), |e| f(2.0 * e.half_width_percent, 3))
    }

    fn latency(&self) -> Option<&LatencySummary> {
        self.r.local.latency.as_ref()
    }

    /// Empty unless request/response, where the value is `v`'s.
    fn rr_only(&self, v: impl ToString) -> String {
        if self.rr {
            v.to_string()
        } else {
            String::new()
        }
    }
}

type Extract = fn(&Row) -> String;

/// Every measured field, with how its value comes out of a run: netperf's omni names where
/// netperf has one, ringperf's own otherwise. The settings a run echoes (sizes, engines,
/// ...) are declared on their flags ([`args::keyval_settings`]) and placed among these by
/// [`fields`]; the README lists the result, and a test keeps that list equal to it.
const FIGURES: &[(&str, Extract)] = &[
    ("TEST", |c| c.r.test.clone()),
    // netperf reports request/response throughput in transactions per second.
    ("THROUGHPUT", |c| {
        if c.rr {
            opt(c.fig.transactions_per_sec, 2)
        } else {
            f(c.units.convert(c.fig.throughput_bits_per_sec), 2)
        }
    }),
    ("THROUGHPUT_UNITS", |c| if c.rr { "Trans/s".into() } else { c.units.label().into() }),
    ("THROUGHPUT_CONFID", |c| c.confid(if c.rr { "transactions/s" } else { "throughput" })),
    ("TRANSACTION_RATE", |c| opt(c.fig.transactions_per_sec, 2)),
    ("ELAPSED_TIME", |c| f(c.r.local.elapsed_ns as f64 / 1e9, 3)),
    ("LSS_SIZE_END", |c| c.r.local.socket.send_buffer.to_string()),
    ("LSR_SIZE_END", |c| c.r.local.socket.recv_buffer.to_string()),
    ("RSS_SIZE_END", |c| c.remote(|s| s.socket.send_buffer.to_string())),
    ("RSR_SIZE_END", |c| c.remote(|s| s.socket.recv_buffer.to_string())),
    ("LOCAL_CPU_UTIL", |c| f(c.fig.local_cpu_percent, 2)),
    ("REMOTE_CPU_UTIL", |c| opt(c.fig.remote_cpu_percent, 2)),
    ("LOCAL_CPU_CONFID", |c| c.confid("local CPU")),
    ("REMOTE_CPU_CONFID", |c| c.confid("remote CPU")),
    ("LOCAL_CPU_COUNT", |c| c.r.local.cpu.system.cpus.to_string()),
    ("REMOTE_CPU_COUNT", |c| c.remote(|s| s.cpu.system.cpus.to_string())),
    ("LOCAL_SD", |c| opt(c.fig.local_sd_us, 3)),
    ("REMOTE_SD", |c| opt(c.fig.remote_sd_us, 3)),
    ("SD_UNITS", |c| if c.rr { "usec/Tran".into() } else { "usec/KB".into() }),
    ("LOCAL_SD_PER_SEGMENT", |c| opt(c.r.local.service_demand.ns_per_segment, 1)),
    ("REMOTE_SD_PER_SEGMENT", |c| c.remote(|s| opt(s.service_demand.ns_per_segment, 1))),
    ("LOCAL_TOOL_OVERHEAD", |c| f(c.r.local.cpu.tool_overhead_percent, 3)),
    ("REMOTE_TOOL_OVERHEAD", |c| c.remote(|s| f(s.cpu.tool_overhead_percent, 3))),
    ("LOCAL_TRANSPORT_RETRANS", |c| retrans(&c.r.local)),
    ("REMOTE_TRANSPORT_RETRANS", |c| c.remote(retrans)),
    ("RT_LATENCY", |c| opt(c.latency().map(|l| l.mean_ns / 1e3), 3)),
    ("MIN_LATENCY", |c| us(c.latency().map(|l| l.min_ns))),
    ("MEAN_LATENCY", |c| opt(c.latency().map(|l| l.mean_ns / 1e3), 3)),
    ("P50_LATENCY", |c| us(c.fig.p50_latency_ns)),
    ("P90_LATENCY", |c| us(c.latency().map(|l| l.p90_ns))),
    ("P99_LATENCY", |c| us(c.fig.p99_latency_ns)),
    ("MAX_LATENCY", |c| us(c.latency().map(|l| l.max_ns))),
    ("CONFIDENCE_LEVEL", |c| c.r.confidence.as_ref().map_or(String::new(), |k| f(100.0 * k.target.level, 1))),
    // A CSV row is one run: its own iteration number.
    ("CONFIDENCE_ITERATION", |c| match (c.iteration, &c.r.confidence) {
        (Some(i), _) => (i + 1).to_string(),
        (None, Some(k)) => k.iterations.to_string(),
        (None, None) => "1".into(),
    }),
    ("ZERO_COPY_FRACTION", |c| opt(c.r.zero_copy_fraction(), 4)),
    ("LOCAL_RELEASE", |c| c.r.environment.local.kernel_release.clone()),
    ("REMOTE_RELEASE", |c| c.r.environment.remote.kernel_release.clone()),
    // UDP: the sender's sends and the receiver's receives (netperf's call counts), the
    // receiver's own rate and datagram accounting.
    ("LOCAL_SEND_CALLS", |c| udp_field(c.sender, |u| u.sends.to_string())),
    ("REMOTE_RECV_CALLS", |c| udp_field(c.receiver, |u| u.receives.to_string())),
    ("REMOTE_THROUGHPUT", |c| match c.receiver.filter(|rx| rx.udp.is_some()) {
        Some(_) => opt(c.r.receive_rate_bits_per_sec().map(|b| c.units.convert(b)), 2),
        None => String::new(),
    }),
    ("DATAGRAMS_SENT", |c| udp_field(c.sender, |u| u.datagrams_sent.to_string())),
    ("DATAGRAMS_RECEIVED", |c| udp_field(c.receiver, |u| u.datagrams_received.to_string())),
    ("LOST_DATAGRAMS", |c| c.r.lost_datagrams().map_or(String::new(), |n| n.to_string())),
    ("REORDERED_DATAGRAMS", |c| udp_field(c.receiver, |u| u.reordered.to_string())),
    ("DUPLICATE_DATAGRAMS", |c| udp_field(c.receiver, |u| u.duplicated.to_string())),
    ("DATAGRAMS_PER_SEND", |c| udp_field(c.sender, |u| f(u.datagrams_per_send(), 2))),
    ("DATAGRAMS_PER_RECV", |c| udp_field(c.receiver, |u| f(u.datagrams_per_receive(), 2))),
    ("LOCAL_SD_PER_DATAGRAM", |c| udp_field(Some(&c.r.local), |u| opt(u.us_per_datagram, 3))),
    ("REMOTE_SD_PER_DATAGRAM", |c| udp_field(c.r.remote.as_ref(), |u| opt(u.us_per_datagram, 3))),
    ("UDP_TIMEOUTS", |c| udp_field(Some(&c.r.local), |u| c.rr_only(u.timeouts))),
    ("UDP_RETRANSMISSIONS", |c| udp_field(Some(&c.r.local), |u| c.rr_only(u.retransmissions))),
    ("CRR_CONNECTIONS", |c| c.r.local.crr.as_ref().map_or(String::new(), |k| k.connections.to_string())),
];

/// The kernel counters of each side (engine `measure::kernel`), after the settings so that
/// the settings keep the CSV columns scripts already read them from.
const KERNEL_FIGURES: &[(&str, Extract)] = &[
    ("LOCAL_SOFTIRQ_PERCENT", |c| opt(c.fig.local_softirq_percent, 2)),
    ("REMOTE_SOFTIRQ_PERCENT", |c| opt(c.fig.remote_softirq_percent, 2)),
    ("LOCAL_IRQ_PERCENT", |c| kernel(Some(&c.r.local), |k| f(k.irq_percent, 2))),
    ("REMOTE_IRQ_PERCENT", |c| kernel(c.r.remote.as_ref(), |k| f(k.irq_percent, 2))),
    ("LOCAL_NET_RX_SOFTIRQS", |c| kernel(Some(&c.r.local), |k| k.net_rx_softirqs.to_string())),
    ("REMOTE_NET_RX_SOFTIRQS", |c| kernel(c.r.remote.as_ref(), |k| k.net_rx_softirqs.to_string())),
    ("LOCAL_NET_TX_SOFTIRQS", |c| kernel(Some(&c.r.local), |k| k.net_tx_softirqs.to_string())),
    ("REMOTE_NET_TX_SOFTIRQS", |c| kernel(c.r.remote.as_ref(), |k| k.net_tx_softirqs.to_string())),
    ("LOCAL_PACKETS_PER_NET_RX", |c| opt(c.fig.local_packets_per_net_rx, 3)),
    ("REMOTE_PACKETS_PER_NET_RX", |c| opt(c.fig.remote_packets_per_net_rx, 3)),
    ("LOCAL_PACKETS_PER_INTERRUPT", |c| kernel(Some(&c.r.local), |k| opt(k.packets_per_interrupt, 3))),
    ("REMOTE_PACKETS_PER_INTERRUPT", |c| kernel(c.r.remote.as_ref(), |k| opt(k.packets_per_interrupt, 3))),
    ("LOCAL_INTERRUPTS", |c| {
        kernel(Some(&c.r.local), |k| k.interrupts.as_ref().map_or(String::new(), |i| i.total.to_string()))
    }),
    ("REMOTE_INTERRUPTS", |c| {
        kernel(c.r.remote.as_ref(), |k| k.interrupts.as_ref().map_or(String::new(), |i| i.total.to_string()))
    }),
    ("LOCAL_SOFTNET_DROPPED", |c| kernel(Some(&c.r.local), softnet_dropped)),
    ("REMOTE_SOFTNET_DROPPED", |c| kernel(c.r.remote.as_ref(), softnet_dropped)),
    ("LOCAL_SOFTNET_SQUEEZED", |c| kernel(Some(&c.r.local), softnet_squeezed)),
    ("REMOTE_SOFTNET_SQUEEZED", |c| kernel(c.r.remote.as_ref(), softnet_squeezed)),
    ("LOCAL_NIC", |c| {
        kernel(Some(&c.r.local), |k| k.nic.as_ref().map_or(String::new(), |n| n.device.clone()))
    }),
    ("REMOTE_NIC", |c| {
        kernel(c.r.remote.as_ref(), |k| k.nic.as_ref().map_or(String::new(), |n| n.device.clone()))
    }),
    ("LOCAL_NIC_RX_PACKETS", |c| link(Some(&c.r.local), |l| l.rx_packets)),
    ("LOCAL_NIC_TX_PACKETS", |c| link(Some(&c.r.local), |l| l.tx_packets)),
    ("REMOTE_NIC_RX_PACKETS", |c| link(c.r.remote.as_ref(), |l| l.rx_packets)),
    ("REMOTE_NIC_TX_PACKETS", |c| link(c.r.remote.as_ref(), |l| l.tx_packets)),
    ("LOCAL_NIC_ERRORS", |c| link(Some(&c.r.local), |l| l.rx_errors + l.tx_errors)),
    ("REMOTE_NIC_ERRORS", |c| link(c.r.remote.as_ref(), |l| l.rx_errors + l.tx_errors)),
    ("LOCAL_NIC_DROPS", |c| link(Some(&c.r.local), |l| l.rx_dropped + l.tx_dropped)),
    ("REMOTE_NIC_DROPS", |c| link(c.r.remote.as_ref(), |l| l.rx_dropped + l.tx_dropped)),
    // Space-separated CPU numbers, most network softirqs first.
    ("LOCAL_NET_SOFTIRQ_CPUS", |c| kernel(Some(&c.r.local), |k| cpus(&k.net_softirq_cpus))),
    ("REMOTE_NET_SOFTIRQ_CPUS", |c| kernel(c.r.remote.as_ref(), |k| cpus(&k.net_softirq_cpus))),
    ("LOCAL_RX_CPUS", |c| kernel(Some(&c.r.local), rx_cpus)),
    ("REMOTE_RX_CPUS", |c| kernel(c.r.remote.as_ref(), rx_cpus)),
];

/// A kernel-counter figure of side `s`, empty when it has none (an older peer, no report).
fn kernel(s: Option<&SideReport>, g: impl Fn(&KernelCounters) -> String) -> String {
    s.and_then(|s| s.kernel.as_ref()).map_or_else(String::new, g)
}

fn link(s: Option<&SideReport>, g: impl Fn(&LinkStats) -> u64) -> String {
    kernel(s, |k| k.nic.as_ref().and_then(|n| n.link.as_ref()).map_or(String::new(), |l| g(l).to_string()))
}

fn softnet_dropped(k: &KernelCounters) -> String {
    k.softnet.iter().map(|r| r.dropped).sum::<u64>().to_string()
}

fn softnet_squeezed(k: &KernelCounters) -> String {
    k.softnet.iter().map(|r| r.time_squeeze).sum::<u64>().to_string()
}

fn cpus(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join(" ")
}

/// The distinct CPUs the data sockets were last received on.
fn rx_cpus(k: &KernelCounters) -> String {
    let mut v: Vec<usize> = k.flows.iter().filter_map(|f| f.rx_cpu).map(|c| c as usize).collect();
    v.sort_unstable();
    v.dedup();
    cpus(&v)
}

/// Figures placed after every other field (settings included), so the columns before them
/// keep their places in CSV files: the kernel cost profile's honest tool overhead (user
/// space, helper threads, io_uring and syscall entry/exit, percent of busy CPU) and the
/// network path's service demand (in
/// SD_UNITS, and per segment in ns). Empty without a profile.
const PROFILE_FIGURES: &[(&str, Extract)] = &[
    ("LOCAL_TOOL_OVERHEAD_WITH_KERNEL", |c| profile(Some(&c.r.local), |p| f(p.tool_overhead_percent, 3))),
    ("REMOTE_TOOL_OVERHEAD_WITH_KERNEL", |c| profile(c.r.remote.as_ref(), |p| f(p.tool_overhead_percent, 3))),
    ("LOCAL_NETWORK_SD", |c| profile(Some(&c.r.local), |p| network_sd(c, p))),
    ("REMOTE_NETWORK_SD", |c| profile(c.r.remote.as_ref(), |p| network_sd(c, p))),
    ("LOCAL_NETWORK_SD_PER_SEGMENT", |c| {
        profile(Some(&c.r.local), |p| opt(p.network_service_demand.ns_per_segment, 1))
    }),
    ("REMOTE_NETWORK_SD_PER_SEGMENT", |c| {
        profile(c.r.remote.as_ref(), |p| opt(p.network_service_demand.ns_per_segment, 1))
    }),
];

/// One-way delays (udp-stream, udp-rr; µs): after every older column, settings included.
const ONE_WAY_FIGURES: &[(&str, Extract)] = &[
    ("ONE_WAY_C2S_P50_LATENCY", |c| us(one_way(c, true).map(|d| d.p50_ns))),
    ("ONE_WAY_C2S_P99_LATENCY", |c| us(one_way(c, true).map(|d| d.p99_ns))),
    ("ONE_WAY_S2C_P50_LATENCY", |c| us(one_way(c, false).map(|d| d.p50_ns))),
    ("ONE_WAY_S2C_P99_LATENCY", |c| us(one_way(c, false).map(|d| d.p99_ns))),
    ("ONE_WAY_CLOCK_UNCERTAINTY", |c| us(c.r.clock.map(|k| k.one_way_uncertainty_ns()))),
];

/// The one-way delay of the client's datagrams (`request`) or of udp-rr's responses.
fn one_way<'a>(c: &Row<'a>, request: bool) -> Option<&'a LatencySummary> {
    c.r.one_way(request)?.delay.as_ref()
}

/// A figure of side `s`'s profile, empty when it has none (or the kernel refused one).
fn profile(s: Option<&SideReport>, g: impl Fn(&ProfileReport) -> String) -> String {
    s.and_then(|s| s.profile.as_ref()).filter(|p| p.unavailable.is_none()).map_or_else(String::new, g)
}

/// The network path's service demand in SD_UNITS.
fn network_sd(c: &Row, p: &ProfileReport) -> String {
    let sd = &p.network_service_demand;
    opt(if c.rr { sd.us_per_transaction } else { sd.us_per_kb }, 3)
}

/// Where a field's value comes from.
#[derive(Clone, Copy)]
enum Value {
    /// A measured figure.
    Figure(Extract),
    /// A setting, as its flag's declaration reads it back from the report.
    Setting(fn(&TestReport) -> String),
}

/// Every field in output order: the figures, each setting right after the field its
/// declaration names, or, naming none, after the figures and settings before the kernel
/// counters. A setting may name a field that comes later (another setting declared after
/// it, a kernel, profile or one-way figure): a setting added since those columns existed names the
/// last one, so every older CSV column keeps its place.
fn fields() -> Vec<(&'static str, Value)> {
    let mut out: Vec<(&'static str, Value)> = FIGURES.iter().map(|&(n, e)| (n, Value::Figure(e))).collect();
    let mut later = Vec::new();
    let place = |out: &mut Vec<(&'static str, Value)>, s: &args::KeyvalSetting| match s.after {
        None => {
            out.push((s.name, Value::Setting(s.value)));
            true
        }
        Some(prev) => match out.iter().position(|(n, _)| *n == prev) {
            Some(i) => {
                out.insert(i + 1, (s.name, Value::Setting(s.value)));
                true
            }
            None => false,
        },
    };
    for s in args::keyval_settings() {
        if !place(&mut out, s) {
            later.push(s);
        }
    }
    later.retain(|s| !place(&mut out, s));
    out.extend(KERNEL_FIGURES.iter().map(|&(n, e)| (n, Value::Figure(e))));
    out.extend(PROFILE_FIGURES.iter().map(|&(n, e)| (n, Value::Figure(e))));
    out.extend(ONE_WAY_FIGURES.iter().map(|&(n, e)| (n, Value::Figure(e))));
    for s in later {
        let at =
            s.after.and_then(|prev| out.iter().position(|(n, _)| *n == prev)).map_or(out.len(), |i| i + 1);
        out.insert(at, (s.name, Value::Setting(s.value)));
    }
    out
}

/// The field names, in output order.
pub fn names() -> impl Iterator<Item = &'static str> {
    fields().into_iter().map(|(name, _)| name)
}

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

/// Nanoseconds as microseconds.
fn us(ns: Option<u64>) -> String {
    opt(ns.map(|n| n as f64 / 1e3), 3)
}

fn retrans(s: &SideReport) -> String {
    s.tcp.as_ref().map_or(String::new(), |t| t.total_retrans.to_string())
}

/// The values of one run (`fig`; `iteration` for a CSV row), with everything else from the report.
fn values(r: &TestReport, fig: &IterationFigures, units: Units, iteration: Option<usize>) -> Vec<String> {
    let (sender, receiver) = r.sender_and_receiver();
    let row = Row { r, fig, units, rr: r.spec.workload.is_transactional(), sender, receiver, iteration };
    fields()
        .into_iter()
        .map(|(_, value)| match value {
            Value::Figure(extract) => extract(&row),
            Value::Setting(read) => read(r),
        })
        .collect()
}

/// The value of field `name` over the whole report (as `--keyval` prints it); `None` for a
/// name that is no field.
pub fn value(r: &TestReport, name: &str, units: Units) -> Option<String> {
    let at = names().position(|n| n == name)?;
    values(r, &r.summary_figures(), units, None).into_iter().nth(at)
}

pub fn render(r: &TestReport, units: Units) -> String {
    let vals = values(r, &r.summary_figures(), units, None);
    names().zip(vals).map(|(n, v)| format!("{n}={v}\n")).collect()
}

/// A header line (unless `header` is false, `-P 0`) and one row per iteration.
pub fn render_csv(r: &TestReport, units: Units, header: bool) -> String {
    let mut o = String::new();
    if header {
        o.push_str(&names().collect::<Vec<_>>().join(","));
        o.push('\n');
    }
    for (i, fig) in r.iterations.iter().enumerate() {
        let vals = values(r, fig, units, Some(i));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readme_lists_every_keyval_name_in_order() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"));
        let start = readme.find("`--keyval` prints these names").expect("README has the keyval section");
        let list = readme[start..].split('`').nth(3).expect("the names in backquotes");
        let listed: Vec<&str> = list.split_whitespace().collect();
        let ours: Vec<&str> = names().collect();
        assert_eq!(listed, ours, "README's keyval list differs from the fields keyval.rs renders");
    }

    /// A setting whose `after` names no field would silently land at the end.
    #[test]
    fn every_keyval_setting_follows_a_field_that_exists() {
        let all: Vec<&str> = names().collect();
        for s in args::keyval_settings() {
            if let Some(prev) = s.after {
                assert!(all.contains(&prev), "{} comes after {prev}, which is no keyval field", s.name);
            }
        }
    }

    /// The settings' CSV columns stay where scripts that read them by position expect them.
    #[test]
    fn settings_keep_their_csv_columns() {
        let all: Vec<&str> = names().collect();
        let column = |n: &str| all.iter().position(|f| *f == n);
        assert_eq!(column("LOCAL_SEND_SIZE"), Some(6));
        assert_eq!(column("RESPONSE_SIZE"), Some(9));
        assert_eq!(column("SEND_ENGINE"), Some(38));
        assert_eq!(column("RCVLOWAT"), Some(58));
        assert_eq!(column("REMOTE_CONG_CONTROL"), Some(60));
        assert_eq!(column("REMOTE_NETWORK_SD_PER_SEGMENT"), Some(98));
        // ENGINE_REASON came after the one-way figures.
        let later = 1;
        assert_eq!(column("BURST_SIZE"), Some(all.len() - 6 - ONE_WAY_FIGURES.len() - later));
        assert_eq!(column("OPEN_LOOP_DROPPED"), Some(all.len() - 1 - ONE_WAY_FIGURES.len() - later));
        assert_eq!(column("ONE_WAY_CLOCK_UNCERTAINTY"), Some(all.len() - 1 - later));
        assert_eq!(all.last(), Some(&"ENGINE_REASON"), "a column added later goes after every older column");
    }
}
