//! TestReport: the one result type. The CLI renders it and `--json` serializes it unchanged.

use serde::{Deserialize, Serialize};

use crate::env::Environment;
use crate::spec::{Role, TestSpec};

/// Bumped whenever a field changes meaning or disappears (adding fields does not bump it).
pub const SCHEMA_VERSION: u32 = 1;

/// A whole test: what was asked, what each side measured, and where it ran.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct TestReport {
    pub schema_version: u32,
    /// ringperf version that produced the report.
    pub tool_version: String,
    pub test: String,
    pub spec: TestSpec,
    /// The server the client talked to (`host:port`).
    pub server: String,
    /// True when the client ran against a server inside its own process.
    pub embedded_server: bool,
    pub summary: Summary,
    /// The client side.
    pub local: SideReport,
    /// The server side, as it reported itself.
    pub remote: SideReport,
    pub environment: Environments,
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
    /// Payload bits per second, as seen by the sending side (stream) or both directions (rr).
    pub throughput_bits_per_sec: f64,
    /// Completed transactions per second (rr only).
    pub transactions_per_sec: Option<f64>,
    /// Mean round trip of a transaction, from the client's per-transaction clock (rr only).
    pub mean_latency_ns: Option<f64>,
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
    /// Round-trip latency of every transaction (rr client only).
    pub latency: Option<LatencySummary>,
}

/// Socket buffer sizes as the kernel reports them (Linux doubles what was requested).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct SocketSizes {
    pub send_buffer: u32,
    pub recv_buffer: u32,
}

/// CPU over one side's window: the whole system, and the tool's own threads.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CpuUsage {
    pub system: SystemCpu,
    pub tool: ToolCpu,
    /// Tool user-space CPU as a percentage of all busy CPU time: how much of the figure is us.
    pub tool_overhead_percent: f64,
}

/// /proc/stat deltas over the window.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SystemCpu {
    pub cpus: usize,
    /// Busy share of all CPUs: (user+nice+system+irq+softirq) / all, 0..=100.
    pub busy_percent: f64,
    /// Stolen by the hypervisor, 0..=100, not counted as busy.
    pub steal_percent: f64,
    /// Busy CPU time summed over all CPUs, in microseconds.
    pub busy_us: f64,
    /// Busy share of each CPU, 0..=100.
    pub per_cpu_busy_percent: Vec<f64>,
}

/// CPU consumed by the side's worker threads.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct ToolCpu {
    /// CLOCK_THREAD_CPUTIME_ID delta: exact, user and system together.
    pub thread_ns: u64,
    /// getrusage(RUSAGE_THREAD) split, in tick resolution.
    pub user_us: u64,
    pub system_us: u64,
}

/// netperf's service demand: busy CPU microseconds (all CPUs) per unit of work of this side.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct ServiceDemand {
    /// Per KB (1024 bytes) of payload this side moved (sent plus received).
    pub us_per_kb: Option<f64>,
    /// Per transaction (rr).
    pub us_per_transaction: Option<f64>,
}

/// What the ring did: system calls and queue traffic.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct RingCounters {
    /// io_uring_enter calls.
    pub enters: u64,
    pub sqes: u64,
    pub cqes: u64,
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

/// Latency percentiles plus the full histogram, so runs and hosts can be merged later.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct LatencySummary {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub p9999_ns: u64,
    pub max_ns: u64,
    /// HdrHistogram V2 + deflate, base64.
    pub histogram: String,
}
