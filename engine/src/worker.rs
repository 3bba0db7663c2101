//! A pinned thread that owns one ring and its flows from the window start until its
//! workload finishes. Setup (pinning, ring, registered buffers, fixed files) happens
//! before the window opens.

use std::fs::File;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::io::op;
use crate::io::send::{zc_slots_per_flow, zc_stream_unnotified_bytes, SendSetup};
use crate::io::{AnyRecv, AnySend, RecvPath, RecvSetup, SendPath};
use crate::measure::clock::monotonic_ns;
use crate::measure::cpu::{helper_threads_ns, ThreadCpuSnapshot};
use crate::measure::intervals::IntervalSampler;
use crate::measure::latency::LatencyRecorder;
use crate::measure::tcp_info::{wait_until_sent, TcpFlowInfo};
use crate::report::{
    CrrReport, IntervalSample, RecvReport, RingCounters, RingSetup, SendReport, ToolCpu, UdpReport,
    VerifyReport,
};
use crate::ring::{token, FlowFd, Ring, TaskRun};
use crate::spec::{Role, SendEngine, SideSpec, TestSpec};
use crate::verify::Verifier;
use crate::workload::crr::{CrrClient, CrrServer};
use crate::workload::pacer::Pacer;
use crate::workload::rr::{self, Transaction};
use crate::workload::udp_rr::{UdpRrClient, UdpRrServer};
use crate::workload::udp_stream::{UdpReceiver, UdpSender};
use crate::workload::{stream, Ending, FlowCounters, PEER_GRACE_NS};

/// How long a stream sender waits after its window for its sockets to transmit what is
/// still queued, before it reads TCP_INFO.
const TCP_INFO_SETTLE: Duration = Duration::from_secs(1);

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
    /// Hold what this side receives to this many bits/s over the whole test, shared
    /// evenly by its flows (a server's `--max-rate`).
    pub police_bps: Option<u64>,
    /// crr: where to connect (client) or how to know the client is done (server).
    pub crr: Option<CrrPlan>,
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
    pub intervals: Vec<IntervalSample>,
    pub tcp: Vec<TcpFlowInfo>,
    pub send: Option<SendReport>,
    pub recv: Option<RecvReport>,
    pub verify: Option<VerifyReport>,
    pub crr: Option<CrrReport>,
    pub udp: Option<UdpReport>,
}

/// The state of a workload that brings its own buffers (crr and the UDP workloads): built
/// before the window opens, dropped after the ring.
enum Own {
    None,
    CrrClient(CrrClient),
    CrrServer(CrrServer),
    UdpSender(UdpSender),
    UdpReceiver(UdpReceiver),
    UdpRrClient(UdpRrClient),
    UdpRrServer(UdpRrServer),
}

impl Own {
    fn new(plan: &WorkerPlan, fds: &[FlowFd]) -> Result<Own> {
        let spec = &plan.spec;
        let crr = || {
            plan.crr.clone().ok_or_else(|| {
                Error::Protocol("a crr worker without its plan: this is a bug in ringperf".into())
            })
        };
        Ok(match plan.role {
            Role::CrrClient => {
                let c = crr()?;
                let peer = c
                    .peer
                    .ok_or_else(|| Error::Protocol("a crr client without a peer: this is a bug".into()))?;
                Own::CrrClient(CrrClient::new(spec, peer, c.cookie, &plan.flow_ids))
            }
            Role::CrrServer => {
                let c = crr()?;
                let stop = c.stop_fd.ok_or_else(|| {
                    Error::Protocol("a crr server without a stop signal: this is a bug".into())
                })?;
                Own::CrrServer(CrrServer::new(spec, fds[0], c.cookie, stop))
            }
            Role::UdpSender => Own::UdpSender(UdpSender::new(spec, fds)),
            Role::UdpReceiver => Own::UdpReceiver(UdpReceiver::new(spec, fds)),
            Role::UdpRrClient => Own::UdpRrClient(UdpRrClient::new(spec, fds)),
            Role::UdpRrServer => Own::UdpRrServer(UdpRrServer::new(spec, fds)),
            _ => Own::None,
        })
    }

    fn crr(&self) -> Option<CrrReport> {
        match self {
            Own::CrrClient(c) => Some(c.report()),
            Own::CrrServer(c) => Some(c.report()),
            _ => None,
        }
    }

    fn udp(&self) -> Option<UdpReport> {
        match self {
            Own::UdpSender(u) => Some(u.report()),
            Own::UdpReceiver(u) => Some(u.report()),
            Own::UdpRrClient(u) => Some(u.report()),
            Own::UdpRrServer(u) => Some(u.report()),
            _ => None,
        }
    }

    /// A workload that ends its own window (the UDP receiver's drain) says when.
    fn end_ns(&self) -> Option<u64> {
        match self {
            Own::UdpReceiver(u) => u.end_ns(),
            Own::UdpRrServer(u) => u.end_ns(),
            _ => None,
        }
    }

    /// Completions the workload can have outstanding at once.
    fn max_cqes(role: Role, spec: &TestSpec, local_flows: usize) -> Option<usize> {
        match role {
            // Per flow: its socket's CQE or its chain's one (a broken chain posts only the
            // failed op's), and a stop's cancel; plus timers, with room to spare.
            Role::CrrClient => Some(5 * local_flows + 16),
            Role::CrrServer => Some(CrrServer::max_cqes(spec)),
            // Per flow: its sends, a receive, a cancel and its own CQE; plus timers.
            Role::UdpSender | Role::UdpReceiver => {
                Some(local_flows * (spec.ring.send_depth as usize + 4) + 16)
            }
            _ => None,
        }
    }
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
    if let Some(cpu) = plan.cpu {
        if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
            return Err(Error::Usage(format!(
                "cannot pin the worker to CPU {cpu}: pick a CPU this host has for -T"
            )));
        }
    }
    let spec = &plan.spec;
    let tuning = &spec.ring;
    let nflows = plan.fds.len();
    // Per flow: a chain of sends, the notifications of every buffer it can have awaiting
    // one (a zero-copy stream keeps megabytes of them), a chain of receives; plus the
    // deadline.
    let send_depth = tuning.send_depth as usize;
    let zc_unnotified_bytes = if plan.role == Role::StreamSender {
        zc_stream_unnotified_bytes(spec.workers(), spec.send_size as usize)
    } else {
        0
    };
    let notifications = if plan.side.send_engine.is_zero_copy() {
        zc_slots_per_flow(spec.send_size as usize, send_depth, nflows, zc_unnotified_bytes)
    } else {
        send_depth + 1
    };
    let per_flow = (send_depth + 1) + notifications + tuning.recv_depth as usize + 1;
    let min_cq = Own::max_cqes(plan.role, spec, plan.flow_ids.len()).unwrap_or(per_flow * nflows + 8);
    // A splice stream's work runs on io-wq: with cooperative task work its chains wake the
    // worker once per chain instead of once per step, and SCHED_BATCH (inherited by the
    // io-wq workers, which start later) keeps the task work each freed request still sends
    // the worker from preempting io-wq on the shared CPU.
    let splice_stream = plan.role == Role::StreamSender && plan.side.send_engine == SendEngine::Splice;
    let task_run = if splice_stream { TaskRun::Cooperative } else { TaskRun::Deferred };
    let sched_batch = splice_stream && set_sched_batch();
    let mut ring = Ring::with_task_run(tuning, (min_cq + 8) as u32, task_run)?;
    let fds: Vec<FlowFd> = if tuning.fixed_files && !plan.fds.is_empty() {
        ring.register_files(&plan.fds)?;
        (0..nflows as u32).map(FlowFd::Fixed).collect()
    } else {
        plan.fds.iter().map(|&fd| FlowFd::Raw(fd)).collect()
    };
    let tx = Transaction { request: spec.request_size, response: spec.response_size };
    // Buffers are sized for what this role moves, not for every size in the spec.
    let (send_len, recv_len) = match plan.role {
        Role::StreamSender => (spec.send_size, 0),
        Role::StreamReceiver => (0, spec.recv_size),
        Role::RrClient => (tx.request, tx.response),
        Role::RrServer => (tx.response, tx.request),
        Role::StreamBidir => {
            return Err(Error::Protocol(
                "a worker is a sender or a receiver, never both: this is a bug in ringperf".into(),
            ))
        }
        // These bring their own buffers (see `Own`).
        _ => (0, 0),
    };
    let sends = send_len > 0;
    let receives = recv_len > 0;
    let mut verify = Verifier::new(spec.verify && receives, nflows);
    let mut own = Own::new(&plan, &fds)?;
    let mut send = if sends {
        let depth = if plan.role == Role::StreamSender { tuning.send_depth as usize } else { 1 };
        Some(AnySend::new(
            plan.side.send_engine,
            &mut ring,
            SendSetup {
                fds: &fds,
                max_len: send_len as usize,
                depth,
                zc_unnotified_bytes,
                file: plan.splice_file,
            },
        )?)
    } else {
        None
    };
    let mut recv = if receives {
        let depth = if plan.role == Role::StreamReceiver { tuning.recv_depth as usize } else { 1 };
        let setup = RecvSetup { fds: &fds, max_len: recv_len as usize, depth };
        Some(AnyRecv::new(plan.side.recv_engine, &mut ring, setup, tuning, &mut verify)?)
    } else {
        None
    };
    let tid = gettid();
    let helpers_before = helper_threads_ns(tid);
    let _ = ready.send(());
    let Ok(window_start) = start.recv() else {
        return Err(Error::Peer("the test was abandoned before it started".into()));
    };
    let cpu_before = ThreadCpuSnapshot::now();
    let duration_ns = spec.duration_ms * 1_000_000;
    let deadline = window_start + duration_ns;
    let mut sampler = IntervalSampler::new(
        spec.interval_ms * 1_000_000,
        duration_ns,
        &plan.fds,
        spec.record_latency,
        plan.live,
    );
    sampler.start(&mut ring, window_start)?;
    let guard = deadline + PEER_GRACE_NS;
    // crr holds no socket per flow: its client counts its own flows, its server every flow.
    let counted = match plan.role {
        Role::CrrClient => plan.flow_ids.len(),
        Role::CrrServer => spec.flows as usize,
        _ => nflows,
    };
    let mut flows = vec![FlowCounters::default(); counted];
    // The crr server does not watch: its control connection also carries the client's
    // FlowsDone mid-run, which would look like a stop. Its session reads that connection
    // and stops the workers through their stop eventfd instead (on Abort too).
    let watches = plan.role != Role::CrrServer;
    let ending = match plan.watch_fd {
        Some(fd) if watches => ring.push_watch(fd, token(op::ABORT, 0)),
        _ => Ok(()),
    };
    let ending = ending.and_then(|()| match (plan.role, send.as_mut(), recv.as_mut()) {
        (Role::StreamSender, Some(s), _) => {
            let depth = tuning.send_depth as usize;
            let rate = spec.pacing.flow_rate_bps(spec.flows);
            let mut pacer = Pacer::for_chains(rate, nflows, spec.send_size, depth as u32);
            stream::send(
                &mut ring,
                &plan.fds,
                s,
                (spec.send_size, depth),
                deadline,
                &mut sampler,
                &mut pacer,
                &mut flows,
            )
        }
        (Role::StreamReceiver, _, Some(r)) => {
            // Each flow is held to its share of the session's limit.
            let police = plan.police_bps.map(|b| (b / u64::from(spec.flows.max(1))).max(1));
            let mut police = Pacer::new(police, nflows, spec.recv_size);
            let window = (deadline, guard);
            stream::receive(
                &mut ring,
                r,
                spec.recv_size,
                window,
                &mut verify,
                &mut sampler,
                &mut police,
                &mut flows,
            )
        }
        (Role::RrClient, Some(s), Some(r)) => {
            rr::client(&mut ring, s, r, tx, deadline, &mut sampler, &mut verify, &mut flows)
        }
        (Role::RrServer, Some(s), Some(r)) => {
            rr::server(&mut ring, s, r, tx, (deadline, guard), &mut verify, &mut sampler, &mut flows)
        }
        _ => match &mut own {
            Own::CrrClient(c) => c.run(&mut ring, deadline, &mut sampler, &mut flows),
            Own::CrrServer(c) => c.run(&mut ring, guard, &mut sampler, &mut flows),
            Own::UdpSender(u) => {
                let per_send = spec.send_size * spec.udp_datagrams_per_send();
                let rate = spec.pacing.flow_rate_bps(spec.flows);
                let mut pacer = Pacer::for_chains(rate, nflows, per_send, u.chain() as u32);
                u.run(&mut ring, deadline, &mut sampler, &mut pacer, &mut flows)
            }
            Own::UdpReceiver(u) => u.run(&mut ring, deadline, &mut sampler, &mut flows),
            Own::UdpRrClient(u) => u.run(&mut ring, deadline, &mut sampler, &mut flows),
            Own::UdpRrServer(u) => u.run(&mut ring, deadline, &mut sampler, &mut flows),
            Own::None => {
                Err(Error::Protocol("worker role without its paths: this is a bug in ringperf".into()))
            }
        },
    });
    let end_ns = own.end_ns().unwrap_or_else(monotonic_ns);
    // A run that did not complete may have ended long after its deadline: a hung peer is
    // caught by the guard PEER_GRACE_NS later, and nothing was measured in that wait but
    // the wait itself. Its window closes at the deadline at the latest.
    let end_ns = if matches!(ending, Ok(Ending::Completed)) { end_ns } else { end_ns.min(deadline) };
    let mut tool = ThreadCpuSnapshot::now().since(&cpu_before);
    tool.helper_ns = helper_threads_ns(tid).saturating_sub(helpers_before);
    if plan.role == Role::StreamSender && matches!(ending, Ok(Ending::Completed)) {
        // After the window (end_ns is taken): TCP_INFO then counts every segment sent.
        wait_until_sent(&plan.fds, TCP_INFO_SETTLE);
    }
    let tcp = plan.fds.iter().map(|&fd| TcpFlowInfo::read(fd).unwrap_or_default()).collect();
    let (intervals, latency) = sampler.finish(end_ns, &flows);
    let outcome = WorkerOutcome {
        flows,
        global_flows: matches!(own, Own::CrrServer(_)),
        crr: own.crr(),
        udp: own.udp(),
        ending,
        intervals,
        tcp,
        ring: ring.counters(),
        ring_setup: ring.setup(),
        tool,
        end_ns,
        latency,
        send: send.as_ref().map(|s| {
            let mut r = s.report();
            if let Some(sp) = r.splice.as_mut() {
                sp.sched_batch = sched_batch;
            }
            r
        }),
        recv: recv.as_ref().map(RecvPath::report),
        verify: verify.report(),
    };
    // The kernel may still hold payload buffers of cancelled operations: close the ring
    // before the memory it points at goes away.
    drop(ring);
    drop(send);
    drop(recv);
    drop(own);
    Ok(outcome)
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Moves the calling thread to SCHED_BATCH: its wakeups no longer preempt what runs on its
/// CPU. False if the kernel refused (the run goes on under the default policy).
fn set_sched_batch() -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) == 0 }
}
