//! How the table's fields write their values: decimals, the empty field of a figure a run
//! does not have, and the parts of a report the fields read.

use super::Run;
use crate::measure::kernel::{KernelCounters, LinkStats};
use crate::measure::profile::ProfileReport;
use crate::report::{LatencySummary, SideReport, UdpReport};
use crate::spec::{Direction, TestSpec};

/// `v` with `places` decimals.
pub(super) fn fixed(v: f64, places: usize) -> String {
    format!("{v:.places$}")
}

/// `v` with `places` decimals, empty without one.
pub(super) fn opt(v: Option<f64>, places: usize) -> String {
    v.map_or_else(String::new, |v| fixed(v, places))
}

/// Nanoseconds as microseconds.
pub(super) fn us(ns: Option<u64>) -> String {
    opt(ns.map(|n| n as f64 / 1e3), 3)
}

/// A keyval latency in whole microseconds, as netperf prints its own (empty stays empty).
pub(super) fn whole_us(text: String) -> Option<String> {
    Some(match text.parse::<f64>() {
        Ok(us) => format!("{}", us.round() as u64),
        Err(_) => text,
    })
}

/// Space-separated CPU numbers.
pub(super) fn cpus(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join(" ")
}

/// The distinct CPUs the data sockets were last received on.
pub(super) fn rx_cpus(k: &KernelCounters) -> String {
    let mut v: Vec<usize> = k.flows.iter().filter_map(|f| f.rx_cpu).map(|c| c as usize).collect();
    v.sort_unstable();
    v.dedup();
    cpus(&v)
}

pub(super) fn softnet_dropped(k: &KernelCounters) -> String {
    k.softnet.iter().map(|r| r.dropped).sum::<u64>().to_string()
}

pub(super) fn softnet_squeezed(k: &KernelCounters) -> String {
    k.softnet.iter().map(|r| r.time_squeeze).sum::<u64>().to_string()
}

/// A figure of a side's MPTCP report, empty without one.
pub(super) fn mptcp(
    s: Option<&SideReport>,
    f: impl Fn(&crate::measure::mptcp::MptcpReport) -> Option<u32>,
) -> String {
    s.and_then(|s| f(s.mptcp.as_ref()?)).map_or(String::new(), |n| n.to_string())
}

/// A side's TCP retransmissions, empty without TCP.
pub(super) fn retrans(s: &SideReport) -> String {
    s.tcp.as_ref().map_or(String::new(), |t| t.total_retrans.to_string())
}

/// A kernel-counter figure of side `s`, empty when it has none (an older peer, no report).
pub(super) fn kernel(s: Option<&SideReport>, g: impl Fn(&KernelCounters) -> String) -> String {
    s.and_then(|s| s.kernel.as_ref()).map_or_else(String::new, g)
}

/// A NIC counter of side `s`, empty without one.
pub(super) fn link(s: Option<&SideReport>, g: impl Fn(&LinkStats) -> u64) -> String {
    kernel(s, |k| k.nic.as_ref().and_then(|n| n.link.as_ref()).map_or(String::new(), |l| g(l).to_string()))
}

/// A figure of side `s`'s profile, empty when it has none (or the kernel refused one).
pub(super) fn profile(s: Option<&SideReport>, g: impl Fn(&ProfileReport) -> String) -> String {
    s.and_then(|s| s.profile.as_ref()).filter(|p| p.unavailable.is_none()).map_or_else(String::new, g)
}

/// A UDP figure of side `s`, empty when the side has no UDP report.
pub(super) fn udp(s: Option<&SideReport>, g: impl Fn(&UdpReport) -> String) -> String {
    s.and_then(|s| s.udp.as_ref()).map_or_else(String::new, g)
}

impl<'a> Run<'a> {
    /// A figure of the server's side, empty when a partial run's server never reported.
    pub(super) fn remote(&self, g: impl Fn(&SideReport) -> String) -> String {
        self.report.remote.as_ref().map_or_else(String::new, g)
    }

    /// The full width of the confidence interval of `name` in percent, netperf's -1 without one.
    pub(super) fn confid(&self, name: &str) -> String {
        let c = self.report.confidence.as_ref();
        c.and_then(|c| c.estimates.iter().find(|e| e.name == name))
            .map_or("-1.000".into(), |e| fixed(2.0 * e.half_width_percent, 3))
    }

    pub(super) fn latency(&self) -> Option<&'a LatencySummary> {
        self.report.local.latency.as_ref()
    }

    /// Empty unless request/response, where the value is `v`'s.
    pub(super) fn rr_only(&self, v: impl ToString) -> String {
        if self.rr {
            v.to_string()
        } else {
            String::new()
        }
    }

    /// The network path's service demand in SD_UNITS.
    pub(super) fn network_sd(&self, p: &ProfileReport) -> String {
        let sd = &p.network_service_demand;
        opt(if self.rr { sd.us_per_transaction } else { sd.us_per_kb }, 3)
    }

    /// The one-way delay of the client's datagrams (`request`) or of udp-rr's responses.
    pub(super) fn one_way(&self, request: bool) -> Option<&'a LatencySummary> {
        self.report.one_way(request)?.delay.as_ref()
    }
}

/// netperf's size of one side's (local?) sends or receives: in a stream, the size of the
/// calls on the side that makes them (the sender's sends, the receiver's receives) and 0
/// on the other; in request/response, the request on the client's sends and the server's
/// receives, the response on the others.
pub(super) fn call_size(spec: &TestSpec, local: bool, send: bool) -> String {
    if spec.workload.is_transactional() {
        let request = local == send;
        return if request { spec.request_size } else { spec.response_size }.to_string();
    }
    let local_sends = spec.direction != Direction::ServerToClient;
    let makes_them = local_sends == (local == send);
    let size = if send { spec.send_size } else { spec.recv_size };
    if makes_them {
        size.to_string()
    } else {
        "0".into()
    }
}
