//! The tools under comparison. Each one knows how to run itself once with the shared
//! settings and how to read its own output; the CPU window around the run is taken the
//! same way for all of them (see `process::run_measured`).

pub mod anchors;
pub mod iperf3;
pub mod neper;
pub mod netperf;
pub mod ringperf;
pub mod sockperf;

use std::collections::HashMap;
use std::time::Duration;

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
}

impl Workload {
    /// Bulk transfer (work in bytes) rather than transactions.
    pub fn is_stream(self) -> bool {
        self == Workload::Stream
    }

    /// Whether a congestion control applies (TCP).
    pub fn is_tcp(self) -> bool {
        self != Workload::UdpRr
    }

    /// netperf's name for the test.
    pub fn netperf_test(self) -> &'static str {
        match self {
            Workload::Stream => "TCP_STREAM",
            Workload::Rr => "TCP_RR",
            Workload::Crr => "TCP_CRR",
            Workload::UdpRr => "UDP_RR",
        }
    }

    /// ringperf's subcommand for the test.
    pub fn ringperf_command(self) -> &'static str {
        match self {
            Workload::Stream => "stream",
            Workload::Rr => "rr",
            Workload::Crr => "crr",
            Workload::UdpRr => "udp-rr",
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
}

impl Config {
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
}

impl RunResult {
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
        }
    }

    /// KB (1024 bytes) moved, or transactions: what service demand is per.
    pub fn units(&self) -> f64 {
        match &self.work {
            Work::Stream { bytes, .. } => *bytes as f64 / 1024.0,
            Work::Rr { transactions, .. } => *transactions as f64,
        }
    }

    /// Busy CPU µs, all CPUs, per KB (1024 bytes) moved or per transaction, from the
    /// bench's own /proc/stat window.
    pub fn service_demand(&self) -> Option<f64> {
        self.cpu.service_demand(self.units())
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
