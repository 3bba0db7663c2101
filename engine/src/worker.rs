//! A pinned thread that owns one ring and its flows from the window start until its
//! workload finishes. Setup (pinning, ring, buffers) happens before the window opens.

use std::os::fd::RawFd;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

use crate::error::{Error, Result};
use crate::io::{CopyRecv, CopySend};
use crate::measure::clock::monotonic_ns;
use crate::measure::cpu::ThreadCpuSnapshot;
use crate::measure::latency::LatencyRecorder;
use crate::report::{RingCounters, ToolCpu};
use crate::ring::Ring;
use crate::spec::{RecvEngine, Role, SendEngine, SideSpec, TestSpec};
use crate::workload::rr::{self, Transaction};
use crate::workload::{stream, FlowCounters, PEER_GRACE_NS};

/// What a worker is asked to do.
pub struct WorkerPlan {
    pub role: Role,
    pub spec: TestSpec,
    pub side: SideSpec,
    /// Data sockets; the caller keeps them open until the worker has been joined.
    pub fds: Vec<RawFd>,
}

/// What a worker measured.
pub struct WorkerOutcome {
    pub flows: Vec<FlowCounters>,
    pub ring: RingCounters,
    pub tool: ToolCpu,
    /// CLOCK_MONOTONIC when the workload finished.
    pub end_ns: u64,
    pub latency: LatencyRecorder,
}

/// A running worker thread, parked until [`Worker::start`].
pub struct Worker {
    handle: JoinHandle<Result<WorkerOutcome>>,
    start: mpsc::Sender<u64>,
}

impl Worker {
    /// Spawns the thread and returns once it is pinned and its ring is built.
    pub fn spawn(plan: WorkerPlan) -> Result<Worker> {
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let (start_tx, start_rx) = mpsc::channel::<u64>();
        let handle = thread::Builder::new()
            .name("ringperf-worker".into())
            .spawn(move || run(plan, ready_tx, start_rx))
            .map_err(|e| Error::io("starting a worker thread", e))?;
        match ready_rx.recv() {
            Ok(()) => Ok(Worker { handle, start: start_tx }),
            Err(_) => Err(join(handle)
                .err()
                .unwrap_or_else(|| Error::Protocol("worker exited before it was ready".into()))),
        }
    }

    /// Opens the window: the worker runs until `window_start_ns + duration`.
    pub fn start(&self, window_start_ns: u64) {
        // If the worker already died, join() reports why.
        let _ = self.start.send(window_start_ns);
    }

    pub fn join(self) -> Result<WorkerOutcome> {
        drop(self.start);
        join(self.handle)
    }
}

fn join(handle: JoinHandle<Result<WorkerOutcome>>) -> Result<WorkerOutcome> {
    handle.join().unwrap_or_else(|_| {
        Err(Error::Protocol("a worker thread panicked: this is a bug in ringperf".into()))
    })
}

fn run(plan: WorkerPlan, ready: mpsc::Sender<()>, start: mpsc::Receiver<u64>) -> Result<WorkerOutcome> {
    if let Some(cpu) = plan.side.cpu {
        if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
            return Err(Error::Usage(format!(
                "cannot pin the worker to CPU {cpu}: pick a CPU this host has for -T"
            )));
        }
    }
    let spec = &plan.spec;
    // Per flow at most two CQEs are outstanding, plus the deadline.
    let mut ring = Ring::new(&spec.ring, 2 * plan.fds.len() as u32 + 8)?;
    let tx = Transaction { request: spec.request_size, response: spec.response_size };
    let largest = spec.send_size.max(spec.recv_size).max(tx.request).max(tx.response) as usize;
    let (SendEngine::Copy, RecvEngine::Recv) = (plan.side.send_engine, plan.side.recv_engine);
    let mut send = CopySend::new(largest);
    let mut recv = CopyRecv::new(largest);
    let mut latency = LatencyRecorder::new();
    let _ = ready.send(());
    let Ok(window_start) = start.recv() else {
        return Err(Error::Peer("the test was abandoned before it started".into()));
    };
    let cpu_before = ThreadCpuSnapshot::now();
    let deadline = window_start + spec.duration_ms * 1_000_000;
    let guard = deadline + PEER_GRACE_NS;
    let fds = &plan.fds;
    let flows = match plan.role {
        Role::StreamSender => stream::send(&mut ring, fds, &mut send, spec.send_size, deadline)?,
        Role::StreamReceiver => stream::receive(&mut ring, fds, &mut recv, spec.recv_size, guard)?,
        Role::RrClient => rr::client(&mut ring, fds, &mut send, &mut recv, tx, deadline, &mut latency)?,
        Role::RrServer => rr::server(&mut ring, fds, &mut send, &mut recv, tx, guard)?,
    };
    let end_ns = monotonic_ns();
    let tool = ThreadCpuSnapshot::now().since(&cpu_before);
    Ok(WorkerOutcome { flows, ring: ring.counters(), tool, end_ns, latency })
}
