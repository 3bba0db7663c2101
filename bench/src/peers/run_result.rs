//! What one run of one tool found: its work, the CPU window around it, and what the tool
//! said about itself.

use ringperf_core::measure::profile::{self, ProfileReport, Stopped};
use ringperf_core::report::ServiceDemand;

use crate::cpu::CpuWindow;

/// sockperf's name, which its runs carry: it reports no rate, so [`RunResult::rate`] takes
/// its transactions per second from the mean round trip.
pub const SOCKPERF: &str = "sockperf";

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
    pub ringperf: Option<Figures>,
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
                if self.tool == SOCKPERF {
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

/// What ringperf reported about itself in one run, beyond the work.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// local.cpu.tool_overhead_percent: the client's user-space CPU / all busy CPU.
    pub local_overhead_percent: f64,
    /// remote.cpu.tool_overhead_percent: the server's.
    pub remote_overhead_percent: f64,
    /// The server side's own service demand (us/KB for a stream, us/transaction for rr).
    pub remote_service_demand: Option<f64>,
    /// Share of the sender's notified bytes the kernel did not copy (zc and zc-msg only).
    pub zero_copy_fraction: Option<f64>,
    /// Interval samples the client took.
    pub local_intervals: usize,
    /// Round trips in the client's latency histogram (rr with latency recording).
    pub latency_count: Option<u64>,
}
