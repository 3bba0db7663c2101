//! The tools under comparison. Each one knows how to run itself once with the shared
//! settings and how to read its own output; the CPU window around the run is taken the
//! same way for all of them (see `process::run_measured`).

pub mod anchors;
pub mod iperf2;
pub mod iperf3;
pub mod neper;
pub mod netperf;
pub mod ringperf;
pub mod sockperf;

use std::collections::HashMap;
use std::time::Duration;

use ringperf_core::measure::profile::{self, ProfileReport, Stopped};
use ringperf_core::report::ServiceDemand;
use serde_json::Value;

use crate::cpu::CpuWindow;
use crate::error::{BenchError, Result};

/// Which comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// TCP bulk transfer, client to server: ringperf stream against iperf3.
    Stream,
    /// TCP request/response, one transaction in flight (TCP_RR).
    Rr,
    /// TCP connect, request, response, close, repeated (TCP_CRR).
    Crr,
    /// UDP request/response, one transaction in flight (UDP_RR).
    UdpRr,
    /// UDP bulk transfer, client to server (UDP_STREAM): datagrams received and lost.
    UdpStream,
}

impl Workload {
    /// TCP bulk transfer (work in bytes).
    pub fn is_stream(self) -> bool {
        self == Workload::Stream
    }

    /// Transactions (rr, crr, udp-rr): work in round trips.
    pub fn is_transactional(self) -> bool {
        matches!(self, Workload::Rr | Workload::Crr | Workload::UdpRr)
    }

    /// Whether a congestion control applies (TCP).
    pub fn is_tcp(self) -> bool {
        matches!(self, Workload::Stream | Workload::Rr | Workload::Crr)
    }

    /// netperf's name for the test (a TCP stream's direction and sendfile: see
    /// `Config::netperf_test`).
    fn netperf_test(self) -> &'static str {
        match self {
            Workload::Stream => "TCP_STREAM",
            Workload::Rr => "TCP_RR",
            Workload::Crr => "TCP_CRR",
            Workload::UdpRr => "UDP_RR",
            Workload::UdpStream => "UDP_STREAM",
        }
    }

    /// ringperf's subcommand for the test.
    pub fn ringperf_command(self) -> &'static str {
        match self {
            Workload::Stream => "stream",
            Workload::Rr => "rr",
            Workload::Crr => "crr",
            Workload::UdpRr => "udp-rr",
            Workload::UdpStream => "udp-stream",
        }
    }
}

/// What every tool is asked to do in one comparison.
#[derive(Clone, Debug)]
pub struct Config {
    pub workload: Workload,
    /// Test length of each run, seconds.
    pub secs: u32,
    /// CPU of the client (sender / requester).
    pub client_cpu: usize,
    /// CPU of the server (receiver / responder).
    pub server_cpu: usize,
    /// Bytes per send (stream) or per request and per response (rr).
    pub size: u32,
    /// Congestion control set on every tool's sockets; None leaves the system default.
    pub cc: Option<String>,
    /// Flows, threads and the CPU set they share.
    pub layout: Layout,
    /// TCP_NODELAY on every data socket.
    pub nodelay: bool,
    /// UDP stream settings.
    pub udp: UdpOptions,
    /// TCP stream settings: direction and sendfile.
    pub stream: StreamOptions,
    /// Sample every CPU over each run's window and sort the samples into the engine's
    /// categories (ringperf: its own `--profile`; a peer: the bench's profiler).
    pub profile: bool,
}

/// Which TCP stream: netperf's TCP_STREAM, TCP_MAERTS or TCP_SENDFILE.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// Server to client (TCP_MAERTS; ringperf --reverse, iperf3 -R).
    pub reverse: bool,
    /// Send this file with sendfile/splice (TCP_SENDFILE; ringperf sendfile -F, netperf -F;
    /// iperf3 -Z sends a temp file of its own).
    pub sendfile: Option<std::path::PathBuf>,
}

/// How many flows over how many threads, and where they may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub flows: u32,
    pub threads: u32,
    /// Every process and thread of both sides may run on these CPUs (ringperf --cpus, peers
    /// under taskset -c); None: the client is pinned to client_cpu, the server to server_cpu.
    pub cpu_set: Option<String>,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout { flows: 1, threads: 1, cpu_set: None }
    }
}

/// What a UDP stream run sends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpOptions {
    /// Send rate (-b), None: as fast as the sender can.
    pub rate: Option<String>,
    /// Datagrams of `size` sent many per send with UDP_SEGMENT (ringperf --gso).
    pub gso: bool,
    /// SO_SNDBUF and SO_RCVBUF on both sides.
    pub socket_buffer: Option<String>,
}

impl Config {
    /// One flow, the client pinned to `cpus.0` and the server to `cpus.1`.
    pub fn new(workload: Workload, secs: u32, cpus: (usize, usize), size: u32, cc: Option<String>) -> Config {
        Config {
            workload,
            secs,
            client_cpu: cpus.0,
            server_cpu: cpus.1,
            size,
            cc,
            layout: Layout::default(),
            nodelay: false,
            udp: UdpOptions::default(),
            stream: StreamOptions::default(),
            profile: false,
        }
    }

    /// netperf's name for the test.
    pub fn netperf_test(&self) -> &'static str {
        match (self.workload, self.stream.reverse, self.stream.sendfile.is_some()) {
            (Workload::Stream, true, _) => "TCP_MAERTS",
            (Workload::Stream, false, true) => "TCP_SENDFILE",
            (w, _, _) => w.netperf_test(),
        }
    }

    /// The congestion control where it applies (TCP).
    pub fn tcp_cc(&self) -> Option<&str> {
        self.cc.as_deref().filter(|_| self.workload.is_tcp())
    }

    /// Upper bound on one run: the test, plus generous set-up and tear-down.
    pub fn run_timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.secs) + 45)
    }
}

/// How long a server may take to start listening.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How many fresh ports to try when a server cannot listen on the first one.
pub const PORT_ATTEMPTS: usize = 3;

/// The work a run did, in the unit its service demand is per.
#[derive(Clone, Debug)]
pub enum Work {
    Stream {
        /// Payload bytes the receiver got.
        bytes: u64,
        /// Throughput as the tool reports it.
        bits_per_sec: f64,
    },
    Rr {
        /// Completed round trips the tool counted over its whole timed run.
        transactions: u64,
        /// Transactions counted / the tool's timed run.
        tps_by_count: f64,
        /// 1 / mean round trip.
        tps_by_rtt: f64,
        mean_rtt_us: f64,
    },
    Udp {
        /// Datagrams the receiver got, over its window.
        received: u64,
        /// Datagrams the sender sent.
        sent: u64,
        /// Payload bytes per datagram.
        datagram_bytes: u32,
        /// `received` over the receiver's window.
        received_per_sec: f64,
    },
}

/// One run of one tool.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub tool: &'static str,
    pub cpu: CpuWindow,
    pub work: Work,
    /// The service demand the tool reported about itself, if it reports one.
    pub own_service_demand: Option<f64>,
    /// CPU of the tool's own processes (client and server, getrusage of reaped children),
    /// µs: a cross-check that other load on the host does not reach.
    pub process_cpu_us: Option<f64>,
    /// What ringperf said about itself (ringperf runs only).
    pub ringperf: Option<ringperf::Figures>,
    /// The kernel cost profile of the window, with `--profile`: ringperf's own (its local
    /// side), or the bench's of a peer's processes.
    pub profile: Option<ProfileReport>,
}

#[cfg(test)]
impl RunResult {
    /// A test's 1-second rr run of `tps` transactions at `busy` of 100 ticks on one of two
    /// CPUs (the other idle).
    pub fn one_second_rr(tool: &'static str, tps: f64, busy: u64) -> RunResult {
        use ringperf_core::measure::cpu::ProcStat;
        let b = ProcStat::parse("cpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n").unwrap();
        let a = ProcStat::parse(&format!("cpu0 {busy} 0 0 {} 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0\n", 100 - busy))
            .unwrap();
        let work = Work::Rr {
            transactions: tps as u64,
            tps_by_count: tps,
            tps_by_rtt: f64::NAN,
            mean_rtt_us: f64::NAN,
        };
        RunResult::new(tool, CpuWindow::from_stats(&b, &a, 1_000_000_000), work)
    }
}

impl RunResult {
    /// A peer's run: its work in the bench's CPU window, nothing it says about itself.
    pub fn new(tool: &'static str, cpu: CpuWindow, work: Work) -> RunResult {
        RunResult {
            tool,
            cpu,
            work,
            own_service_demand: None,
            process_cpu_us: None,
            ringperf: None,
            profile: None,
        }
    }

    /// A peer's run with the profile of its window, if one was taken: `tool_pids` are the
    /// processes the bench started for it (client and server), whose user-mode samples are
    /// the tool's user space, as ringperf's own are in its report.
    pub fn with_profile(mut self, stopped: Option<Stopped>, tool_pids: &[u32]) -> RunResult {
        let Some(stopped) = stopped else { return self };
        let sd = self.service_demand();
        let (work, service_demand) = match self.work {
            Work::Stream { bytes, .. } => (
                profile::Work { bytes, ..profile::Work::default() },
                ServiceDemand { us_per_kb: sd, ..ServiceDemand::default() },
            ),
            Work::Rr { transactions, .. } => (
                profile::Work { transactions, ..profile::Work::default() },
                ServiceDemand { us_per_transaction: sd, ..ServiceDemand::default() },
            ),
            Work::Udp { received, datagram_bytes, .. } => (
                profile::Work {
                    datagrams: received,
                    bytes: received * u64::from(datagram_bytes),
                    ..profile::Work::default()
                },
                ServiceDemand { us_per_kb: self.service_demand_per_kb(), ..ServiceDemand::default() },
            ),
        };
        self.profile = Some(stopped.report_for(tool_pids, self.cpu.busy_us(), work, service_demand));
        self
    }

    /// Throughput in bits/s (stream) or transactions per second (rr), the headline figure:
    /// ringperf's transactions per second are its count over its window, sockperf's are
    /// 1 / its mean round trip (it reports no rate).
    pub fn rate(&self) -> f64 {
        match &self.work {
            Work::Stream { bits_per_sec, .. } => *bits_per_sec,
            Work::Rr { tps_by_count, tps_by_rtt, .. } => {
                if self.tool == sockperf::NAME {
                    *tps_by_rtt
                } else {
                    *tps_by_count
                }
            }
            Work::Udp { received_per_sec, .. } => *received_per_sec,
        }
    }

    /// UDP: KB (1024 bytes) of payload received.
    pub fn kb_received(&self) -> Option<f64> {
        match self.work {
            Work::Udp { received, datagram_bytes, .. } => {
                Some(received as f64 * f64::from(datagram_bytes) / 1024.0)
            }
            _ => None,
        }
    }

    /// UDP: busy CPU µs per KB received.
    pub fn service_demand_per_kb(&self) -> Option<f64> {
        self.kb_received().and_then(|kb| self.cpu.service_demand(kb))
    }

    /// UDP: (sent - received) / sent, percent, from the tool's own counts.
    pub fn loss_percent(&self) -> Option<f64> {
        match self.work {
            Work::Udp { received, sent, .. } if sent > 0 => {
                Some(100.0 * sent.saturating_sub(received) as f64 / sent as f64)
            }
            _ => None,
        }
    }

    /// UDP: payload bits per second received.
    pub fn payload_bps(&self) -> Option<f64> {
        match self.work {
            Work::Udp { received_per_sec, datagram_bytes, .. } => {
                Some(received_per_sec * f64::from(datagram_bytes) * 8.0)
            }
            _ => None,
        }
    }

    /// UDP: datagrams sent per second of the bench's window.
    pub fn sent_per_sec(&self) -> Option<f64> {
        match self.work {
            Work::Udp { sent, .. } => Some(sent as f64 / self.cpu.wall_secs()),
            _ => None,
        }
    }

    /// Mean round trip, µs (transactions).
    pub fn mean_rtt_us(&self) -> Option<f64> {
        match self.work {
            Work::Rr { mean_rtt_us, .. } => Some(mean_rtt_us),
            _ => None,
        }
    }

    /// KB (1024 bytes) moved, transactions, or datagrams received: what service demand is per.
    pub fn units(&self) -> f64 {
        match &self.work {
            Work::Stream { bytes, .. } => *bytes as f64 / 1024.0,
            Work::Rr { transactions, .. } => *transactions as f64,
            Work::Udp { received, .. } => *received as f64,
        }
    }

    /// Busy CPU µs, all CPUs, per KB (1024 bytes) moved or per transaction, from the
    /// bench's own /proc/stat window.
    pub fn service_demand(&self) -> Option<f64> {
        self.cpu.service_demand(self.units())
    }

    /// The network path's service demand: the bench's service demand less the tool's share
    /// of busy CPU (its user space, helper threads, io_uring machinery and syscall
    /// entry/exit: `Category::is_tool`) by the kernel cost profile of the
    /// run; `None` without a profile that saw busy CPU. One method for every tool: the
    /// figure meant to describe the kernel, not what drove it.
    pub fn network_service_demand(&self) -> Option<f64> {
        let p = self.profile.as_ref().filter(|p| p.unavailable.is_none() && p.busy_samples > 0)?;
        Some(self.service_demand()? * (1.0 - p.tool_overhead_percent / 100.0))
    }

    /// The tool processes' own CPU µs per unit of work (see `process_cpu_us`).
    pub fn process_service_demand(&self) -> Option<f64> {
        let units = self.units();
        self.process_cpu_us.filter(|_| units > 0.0).map(|us| us / units)
    }
}

/// A tool that can run one test with the shared settings.
pub trait Tool {
    fn name(&self) -> &'static str;
    /// A one-line description of the exact commands, for the report header.
    fn describe(&self, cfg: &Config) -> String;
    fn run(&self, cfg: &Config) -> Result<RunResult>;
}

/// A number at a JSON pointer, or an error naming the tool and the field.
pub(crate) fn json_f64(v: &Value, tool: &str, pointer: &str) -> Result<f64> {
    v.pointer(pointer).and_then(Value::as_f64).ok_or_else(|| {
        BenchError::Tool(format!("{tool}'s JSON has no number at {pointer}: is this a supported version?"))
    })
}

pub(crate) fn json_u64(v: &Value, tool: &str, pointer: &str) -> Result<u64> {
    v.pointer(pointer).and_then(Value::as_u64).ok_or_else(|| {
        BenchError::Tool(format!(
            "{tool}'s JSON has no whole number at {pointer}: is this a supported version?"
        ))
    })
}

/// The KEY=VALUE lines of a tool's output (netperf -k, neper), keys as printed; the first
/// occurrence of a key wins.
pub(crate) fn key_values(text: &str) -> HashMap<&str, &str> {
    let mut kv = HashMap::new();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            kv.entry(k.trim()).or_insert(v.trim());
        }
    }
    kv
}

/// A number among `kv`, or an error naming the tool and the key.
pub(crate) fn kv_f64(kv: &HashMap<&str, &str>, tool: &str, key: &str) -> Result<f64> {
    kv.get(key).and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite()).ok_or_else(|| {
        BenchError::Tool(format!("{tool} printed no number for {key}: is this a supported version?"))
    })
}
