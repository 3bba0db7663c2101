//! One side of a test (client or server): its data sockets, its worker, and the
//! measurement window around it, turned into a SideReport.

use std::os::fd::{AsRawFd, RawFd};

use socket2::Socket;

use std::fs::File;

use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::cpu::ProcStat;
use crate::measure::service_demand::{service_demand, tool_overhead_percent};
use crate::probe::IoUringProbe;
use crate::report::{CpuUsage, SideReport, SocketSizes};
use crate::spec::{RecvEngine, Role, SendEngine, SideSpec, TestSpec};
use crate::worker::{Worker, WorkerPlan};
use crate::workload::Ending;

/// A side whose worker is ready and waiting for the window to open.
pub struct Side {
    role: Role,
    cpu: Option<usize>,
    engines: (SendEngine, RecvEngine),
    sockets: Vec<Socket>,
    worker: Worker,
    window: Option<(ProcStat, u64)>,
}

impl Side {
    /// Spawns and readies the worker for `sockets`.
    /// `watch_fd`: readable means "stop now" (see [`WorkerPlan::watch_fd`]);
    /// `police_bps`: hold what this side receives to this rate ([`WorkerPlan::police_bps`]).
    pub fn prepare(
        spec: &TestSpec,
        role: Role,
        side: &SideSpec,
        sockets: Vec<Socket>,
        (watch_fd, police_bps): (Option<RawFd>, Option<u64>),
    ) -> Result<Side> {
        IoUringProbe::get().check_engines(side.send_engine, side.recv_engine)?;
        let splice_file = match (&side.splice_file, side.send_engine) {
            (Some(path), SendEngine::Splice) => Some(File::open(path).map_err(|e| {
                Error::Usage(format!(
                    "cannot open the -F file '{path}': {e}: check the path and its permissions"
                ))
            })?),
            _ => None,
        };
        let plan = WorkerPlan {
            role,
            spec: spec.clone(),
            side: side.clone(),
            fds: sockets.iter().map(AsRawFd::as_raw_fd).collect(),
            splice_file,
            watch_fd,
            police_bps,
        };
        let worker = Worker::spawn(plan)?;
        Ok(Side {
            role,
            cpu: side.cpu,
            engines: (side.send_engine, side.recv_engine),
            sockets,
            worker,
            window: None,
        })
    }

    /// Opens the measurement window now.
    pub fn start(&mut self) -> Result<()> {
        let before = ProcStat::read()?;
        let start_ns = monotonic_ns();
        self.worker.start(start_ns);
        self.window = Some((before, start_ns));
        Ok(())
    }

    /// Waits for the worker and measures the window. The sockets close afterwards. A run
    /// that failed or was stopped after the window opened still gives its report, with the
    /// reason in [`Finished::ending`].
    pub fn finish(self) -> Result<Finished> {
        let outcome = self.worker.join()?;
        let after = ProcStat::read()?;
        let (before, start_ns) = self.window.expect("finish() follows start()");
        let elapsed_ns = outcome.end_ns.saturating_sub(start_ns).max(1);
        let system = after.since(&before, elapsed_ns);
        let bytes_sent: u64 = outcome.flows.iter().map(|f| f.bytes_sent).sum();
        let bytes_received: u64 = outcome.flows.iter().map(|f| f.bytes_received).sum();
        let transactions: u64 = outcome.flows.iter().map(|f| f.transactions).sum();
        let socket = self
            .sockets
            .first()
            .map(|s| SocketSizes {
                send_buffer: s.send_buffer_size().unwrap_or(0) as u32,
                recv_buffer: s.recv_buffer_size().unwrap_or(0) as u32,
                congestion_control: s
                    .tcp_congestion()
                    .map(|b| String::from_utf8_lossy(&b).trim_end_matches('\0').to_string())
                    .unwrap_or_default(),
                retransmits: total_retransmits(&self.sockets),
            })
            .unwrap_or_default();
        let sd = service_demand(&system, bytes_sent + bytes_received, transactions);
        let overhead = tool_overhead_percent(outcome.tool.user_us, &system);
        let report = SideReport {
            role: self.role,
            pinned_cpu: self.cpu,
            elapsed_ns,
            bytes_sent,
            bytes_received,
            transactions,
            socket,
            cpu: CpuUsage { system, tool: outcome.tool, tool_overhead_percent: overhead },
            service_demand: sd,
            ring: outcome.ring,
            ring_setup: outcome.ring_setup,
            send_engine: self.engines.0,
            recv_engine: self.engines.1,
            send: outcome.send,
            recv: outcome.recv,
            verify: outcome.verify,
            latency: outcome.latency.summary(),
        };
        Ok(Finished { report, ending: outcome.ending })
    }
}

/// A side's report, and how its run ended.
pub struct Finished {
    pub report: SideReport,
    /// `Ok(Completed)`, `Ok(Aborted)` (stopped on request), or why the run failed.
    pub ending: Result<Ending>,
}

/// Segments retransmitted over the life of the data connections (TCP_INFO
/// tcpi_total_retrans, summed over flows); `None` if the kernel would not say.
fn total_retransmits(sockets: &[Socket]) -> Option<u64> {
    let mut total = 0u64;
    for s in sockets {
        // SAFETY: all-zero is a valid tcp_info (a plain C struct of integers).
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: `info` is writable for `len` bytes and the kernel writes at most `len`.
        let rc = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&raw mut info).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return None;
        }
        total += u64::from(info.tcpi_total_retrans);
    }
    Some(total)
}
