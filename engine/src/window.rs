//! What a worker is asked to do and what it measured, and the measurement window between
//! the two: the same for a ring worker (`worker`) and a classic loop (`classic`), which
//! both import it and neither of which the other needs.

use std::fs::File;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::mpsc;
use std::time::Duration;

use crate::workload::driver::RoleReport;
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::cpu::{helper_threads_ns, ThreadCpuSnapshot};
use ringperf_core::measure::intervals::{FlowCounters, IntervalSampler, LatencySplit};
use ringperf_core::measure::latency::LatencyRecorder;
use ringperf_core::measure::tcp_info::{wait_until_sent, Chronos, Limits, TcpFlowInfo};
use ringperf_core::report::{Ending, IntervalSample, RingCounters, RingSetup, ToolCpu};
use ringperf_core::spec::{Role, SideSpec, TestSpec};

/// How long a stream sender waits after its window for its sockets to transmit what is
/// still queued, before it reads TCP_INFO.
pub(crate) const TCP_INFO_SETTLE: Duration = Duration::from_secs(1);

/// What a worker is asked to do.
pub struct WorkerPlan {
    pub role: Role,
    pub spec: TestSpec,
    pub side: SideSpec,
    /// CPU to pin this worker to.
    pub cpu: Option<usize>,
    /// Data sockets; the caller keeps them open until the worker has been joined (the crr
    /// server: the listener; the crr client: none).
    pub fds: Vec<RawFd>,
    /// The global flow numbers of this worker's flows (flows are dealt round-robin).
    pub flow_ids: Vec<u32>,
    /// Payload file for the `splice` engine, opened by the client.
    pub splice_file: Option<File>,
    /// Where to send interval samples as they happen (the client's `-D`).
    pub live: Option<mpsc::Sender<IntervalSample>>,
    /// A descriptor whose readability stops the run at once: the server's control
    /// connection (the client sent Abort, or died), or the client's Ctrl-C pipe.
    pub watch_fd: Option<RawFd>,
    /// This side's limit in bits/s over the whole test, shared evenly by its flows (a
    /// server's `--max-rate`): what it sends is paced to it whatever the spec asks, and a
    /// stream it receives is held to it.
    pub max_rate_bps: Option<u64>,
    /// crr: where to connect (client) or how to know the client is done (server).
    pub crr: Option<CrrPlan>,
    /// A counted UDP test's server: the eventfd the session writes when the client says
    /// its flows are done (the control connection is then the session's to read).
    pub flows_done_fd: Option<RawFd>,
}

/// What a crr worker needs besides its sockets.
#[derive(Clone, Debug)]
pub struct CrrPlan {
    /// Client: the server's data listener.
    pub peer: Option<SocketAddr>,
    /// The session cookie every connection's header carries.
    pub cookie: u64,
    /// Server: the eventfd written when the client has finished its cycles.
    pub stop_fd: Option<RawFd>,
}

/// What a worker measured. A run that failed or was stopped after the window opened
/// still has one: its counters cover what moved until then.
pub struct WorkerOutcome {
    pub flows: Vec<FlowCounters>,
    /// `flows` covers every flow of the test in global order (the crr server, where any
    /// worker may serve any flow) rather than this worker's flows.
    pub global_flows: bool,
    /// How the run ended; `Err` if it failed after the window opened.
    pub ending: Result<Ending>,
    pub ring: RingCounters,
    pub ring_setup: RingSetup,
    pub tool: ToolCpu,
    /// CLOCK_MONOTONIC when the workload finished.
    pub end_ns: u64,
    pub latency: LatencyRecorder,
    /// With `latency_split_ms`: the latency of each phase.
    pub latency_split: Option<LatencySplit>,
    pub intervals: Vec<IntervalSample>,
    pub tcp: Vec<TcpFlowInfo>,
    /// What the role reported besides its counters: its paths', verifier's and workload's
    /// reports.
    pub reports: RoleReport,
}

/// A worker's measurement window, the same for a ring role and a classic loop: opened
/// when the side says go, closed once the role has finished.
pub(crate) struct WorkerWindow {
    pub start_ns: u64,
    pub deadline_ns: u64,
    pub sampler: IntervalSampler,
    cpu_before: ThreadCpuSnapshot,
    /// Each flow's TCP chronographs as the window opened (`None`: not TCP, or none kept).
    chronos: Vec<Option<Chronos>>,
    /// The thread whose io_uring helpers (io-wq, SQPOLL) are counted, and their CPU so far.
    helpers: Option<(i32, u64)>,
}

/// What a closed window measured.
pub(crate) struct ClosedWindow {
    pub end_ns: u64,
    pub tool: ToolCpu,
    pub tcp: Vec<TcpFlowInfo>,
    pub intervals: Vec<IntervalSample>,
    pub latency: LatencyRecorder,
    pub latency_split: Option<LatencySplit>,
}

impl WorkerWindow {
    /// Tells the side this worker is ready, waits for its go and opens the window; the
    /// caller starts the sampler's ticks its own way (ring timeouts or the watcher).
    /// `helper_tid`: the thread whose io_uring helper threads count as the tool's.
    pub fn open(
        plan: &mut WorkerPlan,
        ready: &mpsc::Sender<()>,
        start: &mpsc::Receiver<u64>,
        helper_tid: Option<i32>,
    ) -> Result<WorkerWindow> {
        let helpers = helper_tid.map(|tid| (tid, helper_threads_ns(tid)));
        let _ = ready.send(());
        let Ok(start_ns) = start.recv() else {
            return Err(Error::Peer("the test was abandoned before it started".into()));
        };
        let cpu_before = ThreadCpuSnapshot::now();
        // Who held each flow back is counted from here, not from the socket's opening.
        let chronos = plan.fds.iter().map(|&fd| Chronos::read(fd)).collect();
        let spec = &plan.spec;
        let duration_ns = spec.duration_ms * 1_000_000;
        let sampler = IntervalSampler::new(
            spec.interval_ms * 1_000_000,
            duration_ns,
            &plan.fds,
            spec.record_latency,
            plan.live.take(),
        )
        .split_at(spec.latency_split_ms.map(|ms| ms * 1_000_000));
        Ok(WorkerWindow {
            start_ns,
            deadline_ns: start_ns + duration_ns,
            sampler,
            cpu_before,
            chronos,
            helpers,
        })
    }

    /// Closes the window at `end_ns` (when the role finished): the thread's CPU, TCP_INFO
    /// (with `settle`, after the sockets sent what they queued), the interval series and
    /// the latency histogram.
    pub fn close(
        self,
        ending: &Result<Ending>,
        end_ns: u64,
        flows: &[FlowCounters],
        fds: &[RawFd],
        settle: bool,
    ) -> ClosedWindow {
        let completed = matches!(ending, Ok(Ending::Completed));
        // A run that did not complete may have ended long after its deadline: a hung peer
        // is caught by the guard PEER_GRACE_NS later, and nothing was measured in that wait
        // but the wait itself. Its window closes at the deadline at the latest.
        let end_ns = if completed { end_ns } else { end_ns.min(self.deadline_ns) };
        let mut tool = ThreadCpuSnapshot::now().since(&self.cpu_before);
        if let Some((tid, before)) = self.helpers {
            tool.helper_ns = helper_threads_ns(tid).saturating_sub(before);
        }
        // The chronographs close with the window, before the settle: a sender waiting there
        // for a receiver that stopped reading would count the wait as rwnd-limited.
        let chronos_end: Vec<Option<Chronos>> = fds.iter().map(|&fd| Chronos::read(fd)).collect();
        if settle && completed {
            // After the window (end_ns is taken): TCP_INFO then counts every segment sent.
            wait_until_sent(fds, TCP_INFO_SETTLE);
        }
        let tcp = fds
            .iter()
            .enumerate()
            .map(|(i, &fd)| {
                let mut t = TcpFlowInfo::read(fd).unwrap_or_default();
                if let (Some(Some(open)), Some(Some(end))) = (self.chronos.get(i), chronos_end.get(i)) {
                    t.limits = Some(Limits::between(open, end));
                }
                t
            })
            .collect();
        let (intervals, latency, latency_split) = self.sampler.finish(end_ns, flows);
        ClosedWindow { end_ns, tool, tcp, intervals, latency, latency_split }
    }
}
