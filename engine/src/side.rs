//! One side of a test (client or server): its data sockets, its worker, and the
//! measurement window around it, turned into a SideReport.

use std::os::fd::AsRawFd;

use socket2::Socket;

use std::fs::File;
use std::sync::mpsc;

use crate::env::NetworkEnvironment;
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::cpu::ProcStat;
use crate::measure::service_demand::{service_demand, tool_overhead_percent};
use crate::measure::tcp_info::TcpReport;
use crate::probe::IoUringProbe;
use crate::report::{CpuUsage, IntervalSample, SideReport, SocketSizes};
use crate::spec::{RecvEngine, Role, SendEngine, SideSpec, TestSpec};
use crate::worker::{Worker, WorkerPlan};

/// A side whose worker is ready and waiting for the window to open.
pub struct Side {
    role: Role,
    cpu: Option<usize>,
    engines: (SendEngine, RecvEngine),
    sockets: Vec<Socket>,
    worker: Worker,
    window: Option<(ProcStat, u64)>,
    network: Option<NetworkEnvironment>,
}

impl Side {
    /// Spawns and readies the worker for `sockets`.
    pub fn prepare(
        spec: &TestSpec,
        role: Role,
        side: &SideSpec,
        sockets: Vec<Socket>,
        live: Option<mpsc::Sender<IntervalSample>>,
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
            live,
        };
        let worker = Worker::spawn(plan)?;
        // Read before the window opens, so the netlink and ioctl calls cost the test nothing.
        let network = sockets.first().map(NetworkEnvironment::capture);
        Ok(Side {
            role,
            cpu: side.cpu,
            engines: (side.send_engine, side.recv_engine),
            sockets,
            worker,
            window: None,
            network,
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

    /// Waits for the worker and measures the window. The sockets close afterwards.
    pub fn finish(self) -> Result<SideReport> {
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
            })
            .unwrap_or_default();
        let per_flow_bytes: Vec<u64> =
            outcome.flows.iter().map(|f| f.bytes_sent + f.bytes_received).collect();
        let tcp = TcpReport::new(outcome.tcp, &per_flow_bytes);
        let sd = service_demand(
            &system,
            bytes_sent + bytes_received,
            transactions,
            tcp.data_segs_out + tcp.data_segs_in,
        );
        let overhead = tool_overhead_percent(outcome.tool.user_us, &system);
        Ok(SideReport {
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
            intervals: outcome.intervals,
            tcp: Some(tcp),
            network: self.network,
        })
    }
}
