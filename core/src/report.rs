//! TestReport: the one result type. The CLI renders it and `--json` serializes it unchanged.

use serde::{Deserialize, Serialize};

use crate::env::{Environment, NetworkEnvironment};
use crate::measure::confidence::{ConfidenceReport, Estimate};
pub use crate::measure::cpu::{SystemCpu, ToolCpu};
pub use crate::measure::intervals::IntervalSample;
pub use crate::measure::latency::{LatencyPhases, LatencySummary};
pub use crate::measure::one_way::OneWayReport;
pub use crate::measure::service_demand::ServiceDemand;
use crate::measure::tcp_info::TcpReport;
use crate::payload::Payload;
use crate::retype::retype;
use crate::setting::{spelled, Setting};
use crate::spec::{RecvEngine, Role, SendEngine, TestSpec};

/// Bumped whenever a field changes meaning or disappears (adding fields does not bump it).
/// 2: `remote` may be null (a partial run whose server never reported), `partial` added.
/// 3: a side's `ring` may describe no ring at all (the classic engines: `enters` 0 and the
/// system calls in `ring.syscalls`), and sides carry `profile` and `kernel`; readers of
/// version 2 that divide by `enters` or assume an io_uring side must check the engines.
/// 4: a side's `splice_file` (a path or null) is its `payload`: "pattern", {"file": PATH}
/// or {"label": LABEL} (`report_upgrade` reads the old form).
pub const SCHEMA_VERSION: u32 = 4;

/// A whole test: what was asked, what each side measured, and where it ran. `P` is how
/// the spec's payloads are known: this host's report has a [`TestSpec`]; the one an agent
/// sends its controller has the [`crate::spec::WireSpec`] it was sent.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct TestReport<P = Payload> {
    pub schema_version: u32,
    /// ringperf version that produced the report.
    pub tool_version: String,
    pub test: String,
    pub spec: TestSpec<P>,
    /// The server the client talked to (`host:port`).
    pub server: String,
    /// True when the client ran against a server inside its own process.
    pub embedded_server: bool,
    /// True when the run did not finish: the server died, a data connection broke, or the
    /// user pressed Ctrl-C. The figures cover what was measured until then.
    pub partial: bool,
    /// Why the run is partial (the error the client reports); `None` for a whole run.
    pub partial_reason: Option<String>,
    pub summary: Summary,
    /// The headline figures of every iteration (one entry without -i).
    pub iterations: Vec<IterationFigures>,
    /// Present when iterating toward a confidence target (-i / -I).
    pub confidence: Option<ConfidenceReport>,
    /// The client side (of the last iteration).
    pub local: SideReport,
    /// The server side, as it reported itself; `None` when a partial run's server never did.
    pub remote: Option<SideReport>,
    pub environment: Environments,
    /// The server's clock against the client's, for one-way delays (UDP tests that stamp
    /// their datagrams); absent otherwise and from reports of versions before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockReport>,
    /// Third party: the agent that ran the client side (`host:port` as the controller
    /// reached it); `server` is then the agent it ran against. Absent for a direct run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// How a workload's run ended, when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It ran to its deadline (and, for the side that waits, to the peer's end).
    Completed,
    /// The stop watch fired: the peer or the user asked to stop before the deadline.
    Aborted,
}

/// How the client put the server's clock on its own for one-way delays: the offset
/// (server CLOCK_MONOTONIC minus client's) from round trips on the control connection,
/// keeping the probe with the shortest round trip: the server read its clock somewhere
/// within it, so the offset is known to half of it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct ClockReport {
    /// Both ends run on one kernel (the embedded server, or a loopback peer): one clock, so
    /// no correction is applied and the one-way figures are exact.
    pub same_host: bool,
    /// Round trips measured.
    pub probes: u32,
    /// The estimate: server minus client, ns.
    pub offset_ns: i64,
    /// How far the true offset may be from the estimate (half the best round trip), ns.
    pub uncertainty_ns: u64,
    /// The offset the server's stamps and arrivals were corrected by (0 on one host).
    pub applied_offset_ns: i64,
}

impl ClockReport {
    /// The uncertainty of a one-way figure corrected by this offset (0 on one host).
    pub fn one_way_uncertainty_ns(&self) -> u64 {
        if self.same_host {
            0
        } else {
            self.uncertainty_ns
        }
    }
}

impl<P> TestReport<P> {
    /// The same report with `spec` in place of its own (an agent's report as the
    /// controller, which asked for it, states the spec).
    pub fn with_spec<Q>(self, spec: TestSpec<Q>) -> TestReport<Q> {
        // Every field by name (see `retype!`): a field added to the report cannot be lost.
        retype!(self => TestReport {
            schema_version,
            tool_version,
            test,
            server,
            embedded_server,
            partial,
            partial_reason,
            summary,
            iterations,
            confidence,
            local,
            remote,
            environment,
            clock,
            client;
            spec: _ => spec,
        })
    }
}

impl TestReport {
    /// The side that sends the payload the headline throughput counts, and the side that
    /// receives it (the client sends for rr and, client to server, for --bidir); `None` for
    /// the side of a partial run whose server never reported.
    pub fn sender_and_receiver(&self) -> (Option<&SideReport>, Option<&SideReport>) {
        let remote = self.remote.as_ref();
        match self.local.role {
            Role::StreamReceiver | Role::UdpReceiver => (remote, Some(&self.local)),
            _ => (Some(&self.local), remote),
        }
    }

    /// The send and receive engines that moved the payload: as the sides report them, or
    /// as the spec asked where the side that would report one is missing.
    pub fn engine_pair(&self) -> (SendEngine, RecvEngine) {
        let (asked_send, asked_recv) = match self.local.role {
            Role::StreamReceiver => (self.spec.remote.send_engine, self.spec.local.recv_engine),
            Role::StreamSender => (self.spec.local.send_engine, self.spec.remote.recv_engine),
            _ => (self.spec.local.send_engine, self.spec.local.recv_engine),
        };
        let (sender, receiver) = self.sender_and_receiver();
        (sender.map_or(asked_send, |s| s.send_engine), receiver.map_or(asked_recv, |r| r.recv_engine))
    }

    /// udp-stream: datagrams the sender sent that the receiver never counted; `None` for
    /// other tests and when either side's count is missing.
    pub fn lost_datagrams(&self) -> Option<u64> {
        if self.spec.workload != crate::spec::Workload::UdpStream {
            return None;
        }
        let (sender, receiver) = self.sender_and_receiver();
        let sent = sender?.udp.as_ref()?.datagrams_sent;
        let received = receiver?.udp.as_ref()?.datagrams_received;
        Some(sent.saturating_sub(received))
    }

    /// The payload rate the receiving side took in over its own window, in bits/s (for UDP
    /// what arrived, against the sender's rate); `None` when that side never reported.
    pub fn receive_rate_bits_per_sec(&self) -> Option<f64> {
        self.sender_and_receiver().1.map(SideReport::receive_rate_bits_per_sec)
    }

    /// The whole report's headline figures: the summary's rates, and the means over the
    /// iterations of the rest (percentiles from the merged histogram).
    pub fn summary_figures(&self) -> IterationFigures {
        let mut fig = self.iterations.last().copied().unwrap_or_default();
        let mean = |g: &dyn Fn(&IterationFigures) -> Option<f64>| {
            let v: Vec<f64> = self.iterations.iter().filter_map(g).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        fig.throughput_bits_per_sec = self.summary.throughput_bits_per_sec;
        fig.transactions_per_sec = self.summary.transactions_per_sec;
        fig.local_cpu_percent = mean(&|i| Some(i.local_cpu_percent)).unwrap_or(0.0);
        fig.remote_cpu_percent = mean(&|i| i.remote_cpu_percent);
        fig.local_sd_us = mean(&|i| i.local_sd_us);
        fig.remote_sd_us = mean(&|i| i.remote_sd_us);
        fig.local_softirq_percent = mean(&|i| i.local_softirq_percent);
        fig.remote_softirq_percent = mean(&|i| i.remote_softirq_percent);
        fig.local_packets_per_net_rx = mean(&|i| i.local_packets_per_net_rx);
        fig.remote_packets_per_net_rx = mean(&|i| i.remote_packets_per_net_rx);
        fig.local_tool_overhead_percent = mean(&|i| i.local_tool_overhead_percent);
        fig.remote_tool_overhead_percent = mean(&|i| i.remote_tool_overhead_percent);
        fig.local_network_sd_us = mean(&|i| i.local_network_sd_us);
        fig.remote_network_sd_us = mean(&|i| i.remote_network_sd_us);
        fig.local_busy_percent = mean(&|i| i.local_busy_percent);
        fig.remote_busy_percent = mean(&|i| i.remote_busy_percent);
        fig.local_rwnd_limited_percent = mean(&|i| i.local_rwnd_limited_percent);
        fig.remote_rwnd_limited_percent = mean(&|i| i.remote_rwnd_limited_percent);
        fig.local_sndbuf_limited_percent = mean(&|i| i.local_sndbuf_limited_percent);
        fig.remote_sndbuf_limited_percent = mean(&|i| i.remote_sndbuf_limited_percent);
        fig.local_delivered_ce = mean(&|i| i.local_delivered_ce);
        fig.remote_delivered_ce = mean(&|i| i.remote_delivered_ce);
        fig.local_min_rtt_ns = mean(&|i| i.local_min_rtt_ns);
        fig.remote_min_rtt_ns = mean(&|i| i.remote_min_rtt_ns);
        if let Some(l) = &self.local.latency {
            fig.p50_latency_ns = Some(l.p50_ns);
            fig.p99_latency_ns = Some(l.p99_ns);
        }
        fig
    }

    /// The one-way delay of the client's datagrams at the server (`request`; udp-stream's
    /// only direction) or of udp-rr's responses at the client; `None` where the direction
    /// was not stamped or its side did not report.
    pub fn one_way(&self, request: bool) -> Option<&OneWayReport> {
        let side = match (self.spec.workload, request) {
            (crate::spec::Workload::UdpStream | crate::spec::Workload::UdpRr, true) => {
                self.remote.as_ref()?
            }
            (crate::spec::Workload::UdpRr, false) => &self.local,
            _ => return None,
        };
        side.udp.as_ref()?.one_way.as_ref()
    }

    /// The zero-copy share of the sender's bytes, when it sent with a zero-copy engine.
    pub fn zero_copy_fraction(&self) -> Option<f64> {
        let sender = self.sender_and_receiver().0?;
        sender.send.as_ref()?.zero_copy.as_ref().map(ZeroCopyReport::zero_copy_fraction)
    }

    /// Requirements the run did not meet: the report is still printed, and the CLI exits 1.
    pub fn failed_requirements(&self) -> Vec<String> {
        let mut out = Vec::new();
        let sides = [("local", Some(&self.local)), ("remote", self.remote.as_ref())];
        for (name, side) in sides.into_iter().filter_map(|(n, s)| Some((n, s?))) {
            if let Some(v) = &side.verify {
                if v.mismatches > 0 {
                    let at =
                        v.first_mismatch.map(|m| format!(" (first at flow {} byte {})", m.flow, m.offset));
                    out.push(format!(
                        "payload corrupted: {} chunk(s) received by the {name} side differ from the pattern{}",
                        v.mismatches,
                        at.unwrap_or_default()
                    ));
                }
            }
            if self.spec.require_zero_copy {
                if let Some(zc) = side.send.as_ref().and_then(|s| s.zero_copy.as_ref()) {
                    if zc.copied > 0 {
                        out.push(spelled(&format!(
                            "{}: the kernel copied {} of the {name} side's {} zero-copy sends ({} of {} bytes); loopback and veth always copy, a real NIC with scatter-gather is needed",
                            Setting::RequireZeroCopy.token(),
                            zc.copied,
                            zc.notifications,
                            zc.bytes_copied,
                            zc.bytes_copied + zc.bytes_zero_copy
                        )));
                    }
                }
            }
        }
        out
    }
}

/// Both hosts' environments.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Environments {
    pub local: Environment,
    pub remote: Environment,
}

/// The headline figures, derived from the side reports.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Summary {
    /// Payload bits per second, as seen by the sending side (stream; client to server with
    /// --bidir) or both directions (rr).
    pub throughput_bits_per_sec: f64,
    /// --bidir: server to client, as the server's senders saw it.
    #[serde(default)]
    pub reverse_throughput_bits_per_sec: Option<f64>,
    /// Completed transactions per second (rr only).
    pub transactions_per_sec: Option<f64>,
    /// Mean round trip of a transaction, from the client's per-transaction clock (rr only).
    pub mean_latency_ns: Option<f64>,
    /// Within-run confidence from the local side's interval samples after warm-up (batch
    /// means): throughput, or transactions/s for rr.
    pub within_run: Option<Estimate>,
}

/// One iteration's headline figures: the samples that confidence intervals and
/// `ringperf diff` work on.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct IterationFigures {
    pub throughput_bits_per_sec: f64,
    /// Transactions the client completed (rr).
    pub transactions: u64,
    pub transactions_per_sec: Option<f64>,
    pub local_cpu_percent: f64,
    /// `None` for a partial run whose server never reported.
    pub remote_cpu_percent: Option<f64>,
    pub local_sd_us: Option<f64>,
    pub remote_sd_us: Option<f64>,
    pub p50_latency_ns: Option<u64>,
    pub p99_latency_ns: Option<u64>,
    /// Busy CPU ns per TCP segment on each side, so the per-packet cost gets a confidence
    /// interval too. Absent from reports of versions before it existed.
    #[serde(default)]
    pub local_ns_per_segment: Option<f64>,
    #[serde(default)]
    pub remote_ns_per_segment: Option<f64>,
    /// Softirq share of all CPUs' ticks on each side, and the device's received packets per
    /// NET_RX softirq (measure::kernel), so a sweep can plot them. Absent from older reports.
    #[serde(default)]
    pub local_softirq_percent: Option<f64>,
    #[serde(default)]
    pub remote_softirq_percent: Option<f64>,
    #[serde(default)]
    pub local_packets_per_net_rx: Option<f64>,
    #[serde(default)]
    pub remote_packets_per_net_rx: Option<f64>,
    /// From the kernel cost profile (with --profile), so a sweep can plot them: the honest
    /// tool overhead (user space, helper threads, io_uring machinery and syscall entry/exit,
    /// percent of busy CPU) and the network
    /// path's service demand (us/KB, us/Tr for rr). `None` without a profile.
    #[serde(default)]
    pub local_tool_overhead_percent: Option<f64>,
    #[serde(default)]
    pub remote_tool_overhead_percent: Option<f64>,
    #[serde(default)]
    pub local_network_sd_us: Option<f64>,
    #[serde(default)]
    pub remote_network_sd_us: Option<f64>,
    /// Who held each side's sending flows back (tcp_info chronographs over the window,
    /// percent of their flow-time), so a sweep can plot them: busy (data queued), and of
    /// it the time held by the receiver's window and by the send buffer. Absent without
    /// TCP, from a kernel without chronographs, and from older reports.
    #[serde(default)]
    pub local_busy_percent: Option<f64>,
    #[serde(default)]
    pub remote_busy_percent: Option<f64>,
    #[serde(default)]
    pub local_rwnd_limited_percent: Option<f64>,
    #[serde(default)]
    pub remote_rwnd_limited_percent: Option<f64>,
    #[serde(default)]
    pub local_sndbuf_limited_percent: Option<f64>,
    #[serde(default)]
    pub remote_sndbuf_limited_percent: Option<f64>,
    /// Segments each side's flows saw echoed as CE-marked (ECN), summed, at the end.
    #[serde(default)]
    pub local_delivered_ce: Option<f64>,
    #[serde(default)]
    pub remote_delivered_ce: Option<f64>,
    /// The smallest min RTT of each side's flows, ns.
    #[serde(default)]
    pub local_min_rtt_ns: Option<f64>,
    #[serde(default)]
    pub remote_min_rtt_ns: Option<f64>,
}

impl IterationFigures {
    /// The figures of one run.
    pub fn of(summary: &Summary, local: &SideReport, remote: Option<&SideReport>) -> IterationFigures {
        let rr = summary.transactions_per_sec.is_some();
        let unit = |sd: &ServiceDemand| if rr { sd.us_per_transaction } else { sd.us_per_kb };
        let sd = |s: &SideReport| unit(&s.service_demand);
        // A profile the kernel refused has no figures.
        fn profile(s: Option<&SideReport>) -> Option<&crate::measure::profile::ProfileReport> {
            s.and_then(|s| s.profile.as_ref()).filter(|p| p.unavailable.is_none())
        }
        let (lp, rp) = (profile(Some(local)), profile(remote));
        IterationFigures {
            throughput_bits_per_sec: summary.throughput_bits_per_sec,
            transactions: local.transactions,
            transactions_per_sec: summary.transactions_per_sec,
            local_cpu_percent: local.cpu.system.busy_percent,
            remote_cpu_percent: remote.map(|r| r.cpu.system.busy_percent),
            local_sd_us: sd(local),
            remote_sd_us: remote.and_then(sd),
            p50_latency_ns: local.latency.as_ref().map(|l| l.p50_ns),
            p99_latency_ns: local.latency.as_ref().map(|l| l.p99_ns),
            local_ns_per_segment: local.service_demand.ns_per_segment,
            remote_ns_per_segment: remote.and_then(|r| r.service_demand.ns_per_segment),
            local_softirq_percent: local.kernel.as_ref().map(|k| k.softirq_percent),
            remote_softirq_percent: remote.and_then(|r| r.kernel.as_ref()).map(|k| k.softirq_percent),
            local_packets_per_net_rx: local.kernel.as_ref().and_then(|k| k.packets_per_net_rx),
            remote_packets_per_net_rx: remote
                .and_then(|r| r.kernel.as_ref())
                .and_then(|k| k.packets_per_net_rx),
            local_tool_overhead_percent: lp.map(|p| p.tool_overhead_percent),
            remote_tool_overhead_percent: rp.map(|p| p.tool_overhead_percent),
            local_network_sd_us: lp.and_then(|p| unit(&p.network_service_demand)),
            remote_network_sd_us: rp.and_then(|p| unit(&p.network_service_demand)),
            local_busy_percent: limits(Some(local)).map(|l| l.busy_percent),
            remote_busy_percent: limits(remote).map(|l| l.busy_percent),
            local_rwnd_limited_percent: limits(Some(local)).map(|l| l.rwnd_limited_percent),
            remote_rwnd_limited_percent: limits(remote).map(|l| l.rwnd_limited_percent),
            local_sndbuf_limited_percent: limits(Some(local)).map(|l| l.sndbuf_limited_percent),
            remote_sndbuf_limited_percent: limits(remote).map(|l| l.sndbuf_limited_percent),
            local_delivered_ce: tcp(Some(local)).and_then(|t| t.delivered_ce).map(|n| n as f64),
            remote_delivered_ce: tcp(remote).and_then(|t| t.delivered_ce).map(|n| n as f64),
            local_min_rtt_ns: tcp(Some(local)).and_then(|t| t.min_rtt_us).map(|us| f64::from(us) * 1e3),
            remote_min_rtt_ns: tcp(remote).and_then(|t| t.min_rtt_us).map(|us| f64::from(us) * 1e3),
        }
    }
}

/// A side's TCP report, where it has one.
fn tcp(s: Option<&SideReport>) -> Option<&TcpReport> {
    s?.tcp.as_ref()
}

/// Who held a side's sending flows back, where the kernel said.
fn limits(s: Option<&SideReport>) -> Option<&crate::measure::tcp_limits::Limits> {
    tcp(s)?.limits.as_ref()
}

/// What one side measured over its window.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SideReport {
    pub role: Role,
    /// CPU the worker was pinned to, if any.
    pub pinned_cpu: Option<usize>,
    /// From this side's window start to the end of its last operation.
    pub elapsed_ns: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Completed request/response transactions (rr only; 0 for stream).
    pub transactions: u64,
    /// Socket buffer sizes the kernel reports at the end of the test (getsockopt).
    pub socket: SocketSizes,
    pub cpu: CpuUsage,
    pub service_demand: ServiceDemand,
    pub ring: RingCounters,
    pub ring_setup: RingSetup,
    /// The engines this side used (the sender's send engine and the receiver's receive
    /// engine are the ones that matter for a stream).
    pub send_engine: SendEngine,
    pub recv_engine: RecvEngine,
    /// What the send engine did (present when this side sent payload).
    pub send: Option<SendReport>,
    /// What the receive engine did (present when this side received payload).
    pub recv: Option<RecvReport>,
    /// The payload check (present with --verify).
    pub verify: Option<VerifyReport>,
    /// Round-trip latency of every transaction (rr client only).
    pub latency: Option<LatencySummary>,
    /// With a latency split (`ringperf load`): the round trips of each phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_phases: Option<LatencyPhases>,
    /// CLOCK_MONOTONIC at this side's window start, so tests run at once by one process
    /// can be put on one time axis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_start_ns: Option<u64>,
    /// Interval samples over the window (see `spec.interval_ms`).
    pub intervals: Vec<IntervalSample>,
    /// TCP_INFO of every flow at the end, summed, with fairness.
    pub tcp: Option<TcpReport>,
    /// MPTCP of every flow at the end (with MPTCP asked for): stayed MPTCP or fell back,
    /// subflows, bytes per subflow. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mptcp: Option<crate::measure::mptcp::MptcpReport>,
    /// Every worker thread of this side.
    #[serde(default)]
    pub workers: Vec<WorkerReport>,
    /// Every flow, in flow order.
    #[serde(default)]
    pub flows: Vec<FlowReport>,
    /// The network path of this side's data connections: egress device, driver, offloads,
    /// MTU, qdisc, coalescing, sysctls. Absent from reports of versions before it existed.
    #[serde(default)]
    pub network: Option<NetworkEnvironment>,
    /// Connection cycles (crr only).
    #[serde(default)]
    pub crr: Option<CrrReport>,
    /// Datagram accounting (udp-stream and udp-rr only).
    #[serde(default)]
    pub udp: Option<UdpReport>,
    /// Transactions in flight (rr only). Absent from reports of versions before it existed.
    #[serde(default)]
    pub rr: Option<RrReport>,
    /// Kernel counters over the window: CPU split, network softirqs, the device's
    /// interrupts and counters, softnet, flow placement. Absent from older reports.
    #[serde(default)]
    pub kernel: Option<crate::measure::kernel::KernelCounters>,
    /// The kernel cost profile of the window (absent with --no-profile and from reports of
    /// versions before it existed).
    #[serde(default)]
    pub profile: Option<crate::measure::profile::ProfileReport>,
}

impl SideReport {
    /// This side's work units, from its own counts, as its profile's costs divide them.
    pub fn profile_work(&self) -> crate::measure::profile::Work {
        crate::measure::profile::Work {
            bytes: self.bytes_sent + self.bytes_received,
            transactions: self.transactions,
            segments: self.tcp.as_ref().map_or(0, |t| t.data_segs_out + t.data_segs_in),
            datagrams: self.udp.as_ref().map_or(0, |u| u.datagrams_sent + u.datagrams_received),
        }
    }

    /// This side's window in seconds (never zero, so rates stay finite).
    pub fn elapsed_secs(&self) -> f64 {
        self.elapsed_ns.max(1) as f64 / 1e9
    }

    /// Payload bits per second this side received over its own window.
    pub fn receive_rate_bits_per_sec(&self) -> f64 {
        self.bytes_received as f64 * 8.0 / self.elapsed_secs()
    }

    /// Payload bits per second this side sent over its own window.
    pub fn send_rate_bits_per_sec(&self) -> f64 {
        self.bytes_sent as f64 * 8.0 / self.elapsed_secs()
    }
}

/// TCP_CRR: what one side's connection cycles did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct CrrReport {
    /// Connections that went through a whole cycle (each one is a transaction).
    pub connections: u64,
    /// Client: connects refused with EADDRNOTAVAIL/EADDRINUSE because the bound port of
    /// `--client-ports` was still taken; the cycle was retried on the next port.
    pub port_busy: u64,
    /// Server: connections closed without an answer (wrong cookie, bad flow, torn request).
    pub rejected: u64,
    /// Client sockets closed with SO_LINGER 0 (RST, no TIME_WAIT).
    pub linger0: bool,
    /// Server: it closed each connection once its response was out, without waiting for
    /// the client's close (`--close-first server`). False from a server that predates it.
    #[serde(default)]
    pub server_closed_first: bool,
}

/// rr: how deep each side saw the flows' transactions go.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct RrReport {
    /// Transactions each flow keeps in flight (`--burst`).
    pub burst: u32,
    /// Client: the most transactions one flow had sent and not yet seen answered at once.
    /// Server: the most whole requests one flow had waiting for their responses to be
    /// handed to the kernel at once (its view of the depth; at most `burst`).
    pub max_in_flight: u32,
    /// The client's schedule, open loop only (`--rate`). Absent from closed-loop reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopReport>,
}

/// How an open-loop rr client kept its schedule, summed over its flows.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct OpenLoopReport {
    /// The schedule's rate over all of this side's flows, requests per second.
    pub target_rate: f64,
    /// Requests whose intended send time fell inside the window.
    pub scheduled: u64,
    /// Requests handed to the kernel (each is answered, or the run failed).
    pub sent: u64,
    /// Requests sent more than the slip allowance after their intended time.
    pub slipped: u64,
    /// Requests dropped from the schedule because their flow already had `backlog`
    /// outstanding.
    pub dropped: u64,
    /// Requests due but not yet sent when the window closed (never sent).
    pub unsent_at_end: u64,
    /// How late a request may leave before it counts as slipped, ns.
    pub slip_allowance_ns: u64,
}

impl OpenLoopReport {
    /// Requests sent per second of a window of `elapsed_ns`.
    pub fn achieved_rate(&self, elapsed_ns: u64) -> f64 {
        if elapsed_ns == 0 {
            0.0
        } else {
            self.sent as f64 * 1e9 / elapsed_ns as f64
        }
    }

    /// Slipped requests as a share of those sent (0 when none were).
    pub fn slip_share(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.slipped as f64 / self.sent as f64
        }
    }
}

/// Datagram accounting of one side of a UDP test. The sender fills the send half, the
/// receiver the receive half (udp-rr: both).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct UdpReport {
    /// Payload bytes per datagram (the GSO segment size with --gso).
    pub datagram_size: u32,
    /// UDP_SEGMENT size when the sender used GSO.
    pub gso_segment: Option<u32>,
    /// UDP_GRO was on at the receiver.
    pub gro: bool,
    pub datagrams_sent: u64,
    /// Send SQEs (each carries one datagram, or several with GSO).
    pub sends: u64,
    /// Datagrams whose send failed (ENOBUFS, EAGAIN, a cancelled link): their sequence
    /// numbers were used, so the receiver counts them as lost (netperf's "Errors").
    pub send_errors: u64,
    /// Distinct datagrams received (duplicates left out).
    pub datagrams_received: u64,
    /// Receive completions that carried data (with GRO one may hold several datagrams).
    pub receives: u64,
    /// Sequence numbers skipped and never seen within the reorder window: the receiver's
    /// own loss count. Losses after the last datagram received are invisible to it; the
    /// sender's count closes that gap (see `sequence_span`).
    pub lost: u64,
    /// Datagrams that arrived after a higher sequence number (and filled a gap).
    pub reordered: u64,
    /// Datagrams seen twice within the window.
    pub duplicated: u64,
    /// Datagrams older than the reorder window: counted as lost, reported here.
    pub late: u64,
    /// Per flow, the highest sequence number received plus one, summed: received + lost.
    pub sequence_span: u64,
    /// Datagrams that were not ringperf's (too short, or a late handshake): ignored.
    pub stray: u64,
    /// Receiver: times the provided-buffer ring ran dry (the kernel drops meanwhile).
    #[serde(default)]
    pub no_buffers: u64,
    /// Server: datagrams its UDP ports received during the handshake from other addresses
    /// than the control connection's, dropped (see `net::udp`). Absent from older reports.
    #[serde(default)]
    pub foreign_datagrams: u64,
    /// udp-rr: transactions whose response did not arrive within --timeout-us.
    pub timeouts: u64,
    /// udp-rr: requests sent again after a timeout.
    pub retransmissions: u64,
    /// udp-rr: responses for a request already answered or superseded, ignored.
    pub stale_responses: u64,
    /// Busy CPU microseconds per datagram this side moved (sent plus received).
    pub us_per_datagram: Option<f64>,
    /// Every flow, in flow order.
    pub flows: Vec<UdpFlowReport>,
    /// The one-way delay of the stamped datagrams this side received (udp-stream's
    /// receiver; udp-rr: the server's requests, the client's responses); absent where
    /// they were not stamped (`TestSpec::one_way_unmeasured` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_way: Option<OneWayReport>,
}

impl UdpReport {
    /// Datagrams per send SQE (> 1 only with GSO).
    pub fn datagrams_per_send(&self) -> f64 {
        ratio(self.datagrams_sent, self.sends)
    }
    /// Datagrams per receive completion: the GRO coalescing ratio.
    pub fn datagrams_per_receive(&self) -> f64 {
        ratio(self.datagrams_received + self.duplicated, self.receives)
    }
}

/// One UDP flow's datagram counts.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpFlowReport {
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub lost: u64,
    pub reordered: u64,
    pub duplicated: u64,
    pub timeouts: u64,
    pub retransmissions: u64,
}

/// One worker thread: its ring, its flows, its CPU.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct WorkerReport {
    pub cpu: Option<usize>,
    pub flows: usize,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub transactions: u64,
    pub ring: RingCounters,
    pub tool: ToolCpu,
}

/// One data connection.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowReport {
    pub flow: usize,
    pub worker: usize,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub transactions: u64,
}

/// How the ring was set up.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingSetup {
    pub sq_entries: u32,
    pub cq_entries: u32,
    pub defer_taskrun: bool,
    pub sqpoll: bool,
    pub sqpoll_cpu: Option<u32>,
    pub registered_ring_fd: bool,
    pub fixed_files: bool,
    pub napi_busy_poll_us: Option<u32>,
    pub sq_batch: u32,
    pub cq_batch: u32,
    pub cq_wait_us: u32,
    /// Waits leave the task out of iowait (IORING_ENTER_NO_IOWAIT, Linux 6.15); absent
    /// from older peers' reports.
    #[serde(default)]
    pub no_iowait: bool,
}

/// What a send engine did.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct SendReport {
    /// Sends submitted.
    pub sends: u64,
    /// Zero-copy accounting (`zc`, `zc-msg`).
    pub zero_copy: Option<ZeroCopyReport>,
    /// Splice accounting (`splice`).
    pub splice: Option<SpliceReport>,
}

/// The proof of zero copy: the kernel's own report, per send.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ZeroCopyReport {
    /// Send result CQEs of sends that ran.
    pub sends: u64,
    /// Sends cancelled before they ran (the end of an rr chain); they get no notification.
    pub cancelled: u64,
    /// Notification CQEs (each send that ran gets one).
    pub notifications: u64,
    /// Notifications that carried IORING_NOTIF_USAGE_ZC_COPIED: the kernel copied.
    pub copied: u64,
    pub bytes_zero_copy: u64,
    pub bytes_copied: u64,
    /// Send CQE to notification CQE, timed on one send in `latency_sample_every`.
    pub notification_latency: Option<LatencySummary>,
    pub latency_sample_every: u64,
    /// Buffers each flow has for sends awaiting their notification (the fewest of the
    /// workers): a flow cannot have more sends unnotified than this.
    #[serde(default)]
    pub buffers_per_flow: u64,
    /// Times a flow was ready to start sends but had fewer free buffers than it wanted,
    /// every other one still held by the kernel until its notification: ringperf itself
    /// held those sends back. Near 0 when the buffers are not what limits the run.
    #[serde(default)]
    pub buffer_waits: u64,
    /// Sends came from the registered arena (a fixed buffer); false for sends under a page,
    /// which go from plain memory so that the kernel can merge adjacent ones.
    #[serde(default)]
    pub fixed_buffers: bool,
    /// msg-zerocopy: completions read from the error queue, each covering a range of sends
    /// (`notifications` counts the sends they covered); 0 for zc and zc-msg.
    #[serde(default)]
    pub completion_ranges: u64,
}

impl ZeroCopyReport {
    /// Share of notified bytes that went out without a copy, 0..=1.
    pub fn zero_copy_fraction(&self) -> f64 {
        ratio(self.bytes_zero_copy, self.bytes_zero_copy + self.bytes_copied)
    }
}

/// Splice accounting: short splices and the leftovers they forced.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct SpliceReport {
    /// The smallest pipe of the flows, in bytes (F_GETPIPE_SZ after sizing).
    pub pipe_size: u64,
    /// file -> pipe splices that came up short (the linked pipe -> socket was cancelled).
    pub short_in: u64,
    /// pipe -> socket splices that left bytes in the pipe.
    pub short_out: u64,
    /// Extra pipe -> socket splices issued for what was left in a pipe.
    pub leftover_splices: u64,
    /// Sends linked into one chain (one CQE per chain when every step goes through).
    #[serde(default)]
    pub chain_depth: u32,
    /// The sender and its io-wq workers ran SCHED_BATCH (see the worker).
    #[serde(default)]
    pub sched_batch: bool,
    /// Size of the `-F` file in bytes; `None` when the payload came from a memfd.
    #[serde(default)]
    pub file_bytes: Option<u64>,
    /// The send size (-m) when the `-F` file is smaller than it: the sender loops over the
    /// file as netperf does, so each send moves at most `file_bytes` and the run measures
    /// per-send cost rather than throughput. `None` when a send can be whole.
    #[serde(default)]
    pub file_smaller_than_send: Option<u64>,
}

impl SpliceReport {
    /// What to say about a `-F` file smaller than a send, or `None` when it is not.
    pub fn small_file_warning(&self) -> Option<String> {
        let send = self.file_smaller_than_send?;
        let file = self.file_bytes?;
        Some(spelled(&format!(
            "the payload file is {file} bytes, smaller than the {send}-byte send size ({}): each send moved at most {file} bytes, so this measures the cost per send, not throughput: use a file of at least {send} bytes",
            Setting::SendSize.token()
        )))
    }
}

/// What a receive engine did.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct RecvReport {
    pub engine: RecvEngine,
    /// Receives armed (for multishot: the first arm plus every re-arm).
    pub arms: u64,
    /// CQEs that carried payload.
    pub data_cqes: u64,
    /// Completions with -ENOBUFS: the provided-buffer ring ran dry.
    pub enobufs: u64,
    /// Multishot receives that ended and were armed again.
    pub rearms: u64,
    /// Bundles: index n counts CQEs that spanned n buffers (the last bucket: n or more).
    pub buffers_per_cqe: Vec<u64>,
    /// Stream receives linked per flow (recv, trunc; 0 where not a stream or one-shot).
    #[serde(default)]
    pub linked_receives: u32,
    /// Bytes of memory the payload lands in: without --verify nobody reads it, so every
    /// receive (recv) or provided buffer (multishot, bundle) shares one buffer's worth.
    #[serde(default)]
    pub landing_bytes: u64,
    /// zerocopy-receive: where the received bytes came from.
    #[serde(default)]
    pub zero_copy: Option<ZeroCopyRecvReport>,
}

/// What TCP_ZEROCOPY_RECEIVE did: mapped + copied + read == the bytes received.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ZeroCopyRecvReport {
    /// getsockopt(TCP_ZEROCOPY_RECEIVE) calls.
    pub receives: u64,
    /// Bytes the kernel mapped into the receiver's window: no copy.
    pub bytes_mapped: u64,
    /// Bytes the kernel copied into the copy buffer (the short remainder of a receive).
    pub bytes_copied: u64,
    /// Bytes read with recv(2): what a receive could neither map nor copy (recv_skip_hint).
    pub bytes_read: u64,
}

impl ZeroCopyRecvReport {
    /// Share of the received bytes that were mapped, 0..=1.
    pub fn mapped_fraction(&self) -> f64 {
        ratio(self.bytes_mapped, self.bytes_mapped + self.bytes_copied + self.bytes_read)
    }
}

/// The payload check of --verify.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct VerifyReport {
    pub enabled: bool,
    pub bytes_checked: u64,
    /// Chunks whose bytes differed from the pattern.
    pub mismatches: u64,
    pub first_mismatch: Option<Mismatch>,
    /// Wall time spent checking, ns.
    pub cost_ns: u64,
    /// Why the payload could not be checked on this side, if it could not.
    pub not_checked: Option<String>,
}

/// Where the stream first differed from the pattern.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub flow: usize,
    pub offset: u64,
}

/// Data socket facts as the kernel reports them at the end (Linux doubles requested buffers).
/// The crr client, whose connections are gone by then, reports a socket made with the same
/// options before its window (see `workload::crr::client_socket`).
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct SocketSizes {
    pub send_buffer: u32,
    pub recv_buffer: u32,
    /// The congestion control the data socket really used (TCP_CONGESTION).
    pub congestion_control: String,
    /// Segments this side retransmitted, summed over its data connections (TCP_INFO
    /// tcpi_total_retrans at the end of the run); `None` if the kernel would not say.
    #[serde(default)]
    pub retransmits: Option<u64>,
    /// TCP_MAXSEG and TCP_NODELAY as the socket has them.
    #[serde(default)]
    pub mss: u32,
    #[serde(default)]
    pub nodelay: bool,
    /// SO_RCVLOWAT as the data sockets have it: 1 is the kernel's default (wake on any
    /// byte); 0 if the peer's ringperf did not report it.
    #[serde(default)]
    pub rcvlowat: u32,
}

/// CPU over one side's window: the whole system, and the tool's own threads.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CpuUsage {
    pub system: SystemCpu,
    pub tool: ToolCpu,
    /// Tool user-space CPU as a percentage of all busy CPU time: how much of the figure is us.
    pub tool_overhead_percent: f64,
}

/// What the ring did: system calls and queue traffic.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct RingCounters {
    /// io_uring_enter calls.
    pub enters: u64,
    pub sqes: u64,
    pub cqes: u64,
    /// A classic engine's worker has no ring (its enters, SQEs and CQEs stay 0): the
    /// system calls it made instead. `None` for a ring.
    #[serde(default)]
    pub syscalls: Option<SyscallCounters>,
}

/// The system calls a classic (`syscall`) worker made on its data path.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyscallCounters {
    /// send(2)/sendto(2) calls, those that returned EAGAIN included.
    pub sends: u64,
    /// recv(2)/recvfrom(2) calls, those that returned EAGAIN included.
    pub recvs: u64,
    /// epoll_wait(2) calls (several flows per worker; 0 with blocking sockets).
    pub epoll_waits: u64,
    /// Other calls of the data path: crr's socket, connect, accept and close.
    #[serde(default)]
    pub other: u64,
}

impl SyscallCounters {
    pub fn total(&self) -> u64 {
        self.sends + self.recvs + self.epoll_waits + self.other
    }
}

impl RingCounters {
    pub fn sqes_per_enter(&self) -> f64 {
        ratio(self.sqes, self.enters)
    }
    pub fn cqes_per_enter(&self) -> f64 {
        ratio(self.cqes, self.enters)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
