//! A pinned thread that owns one ring and its flows from the window start until its
//! workload finishes. Setup (pinning, ring, registered buffers, fixed files) happens
//! before the window opens.

use std::fs::File;
use std::os::fd::RawFd;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

use crate::classic::ClassicRole;
use crate::io::recv::DatagramRecv;
use crate::io::send::{zc_slots_per_flow, zc_stream_unnotified_bytes, DatagramSend, SendSetup};
use crate::io::{AnyRecv, AnySend, RecvSetup};
use crate::ring::{FlowFd, Ring, TaskRun};
use crate::verify::Verifier;
use crate::window::{ClosedWindow, CrrPlan, WorkerOutcome, WorkerPlan, WorkerWindow};
use crate::workload::crr::{flow_headers as crr_flow_headers, CrrClient, CrrServer};
use crate::workload::driver::{drive, start_intervals, Run, Workload};
use crate::workload::pacer::{crr_server_rate_bps, flow_send_rate_bps, Pacer};
use crate::workload::rr::{RrClient, RrServer, Transaction};
use crate::workload::schedule::Schedule;
use crate::workload::stream::{StreamReceiver, StreamSender};
use crate::workload::udp_rr::{udp_rr_recv_buffers, udp_rr_send_depth, UdpRrClient, UdpRrServer};
use crate::workload::udp_stream::{udp_recv_buffers, udp_send_depth, UdpReceiver, UdpSender};
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::intervals::FlowCounters;
use ringperf_core::report::Ending;
use ringperf_core::setting::Setting;
use ringperf_core::spec::{RecvEngine, Role, SendEngine, TestSpec};

/// How a worker is built for its role: sized before the ring exists, built once it does.
struct RoleSetup {
    /// Completions the role can have outstanding at once.
    max_cqes: usize,
    task_run: TaskRun,
    /// The thread runs under SCHED_BATCH (a splice stream; see `stream_sender`).
    sched_batch: bool,
    /// Counter slots: one per local flow, except the crr server, which counts every flow.
    counted: usize,
    /// The counters cover every flow of the test in global order (crr server).
    global_flows: bool,
    /// After its window the role waits for its sockets to send what is queued, so that
    /// TCP_INFO counts every segment (a stream sender).
    settle_tcp: bool,
    build: RoleBuild,
}

type RoleBuild = Box<dyn FnOnce(&mut Ring, &[FlowFd]) -> Result<Box<dyn Workload>>>;

/// What a worker runs: a ring and its driver, or a classic engine's loop of system calls.
enum Shape {
    Ring(RoleSetup),
    Classic(ClassicRole),
}

/// The one place that maps a role to its shape and its constructor.
fn role_setup(plan: &WorkerPlan, splice_file: Option<File>) -> Result<Shape> {
    if let Some(classic) = ClassicRole::of(plan.role, &plan.side) {
        return Ok(Shape::Classic(classic));
    }
    let c = Sizing::of(plan);
    let crr = || {
        plan.crr
            .clone()
            .ok_or_else(|| Error::Protocol("a crr worker without its plan: this is a bug in ringperf".into()))
    };
    let setup = match plan.role {
        Role::StreamSender => stream_sender(c, splice_file),
        Role::StreamReceiver => stream_receiver(c),
        Role::RrClient | Role::RrServer => rr(c, plan.role == Role::RrClient, splice_file),
        Role::CrrClient => crr_client(c, crr()?, plan.flow_ids.clone())?,
        Role::CrrServer => crr_server(c, crr()?)?,
        Role::UdpSender | Role::UdpReceiver => udp_stream(c, plan.role == Role::UdpSender),
        Role::UdpRrClient | Role::UdpRrServer => udp_rr(c, plan.role == Role::UdpRrClient),
        Role::StreamBidir => {
            return Err(Error::Protocol(
                "a worker is a sender or a receiver, never both: this is a bug in ringperf".into(),
            ))
        }
    };
    Ok(Shape::Ring(setup))
}

/// What every role's setup reads from its worker's plan.
struct Sizing {
    spec: TestSpec,
    send_engine: SendEngine,
    recv_engine: RecvEngine,
    send_depth: usize,
    /// Sockets of this worker, and the flows it carries (a crr client has no socket per flow).
    nflows: usize,
    local_flows: usize,
    socks: Vec<RawFd>,
    max_rate_bps: Option<u64>,
    /// What each flow of this side sends is paced to this (see `flow_send_rate_bps`).
    send_rate: Option<u64>,
    flows_done: Option<RawFd>,
    tx: Transaction,
}

impl Sizing {
    fn of(plan: &WorkerPlan) -> Sizing {
        let spec = plan.spec.clone();
        let send_rate = flow_send_rate_bps(&spec, plan.max_rate_bps);
        let tx = Transaction {
            request: spec.request_size,
            response: spec.response_size,
            burst: spec.rr_depth(),
            limit: spec.transaction_limit.unwrap_or(u64::MAX),
        };
        Sizing {
            send_depth: spec.ring.send_depth as usize,
            send_engine: plan.side.send_engine,
            recv_engine: plan.side.recv_engine,
            nflows: plan.fds.len(),
            local_flows: plan.flow_ids.len(),
            socks: plan.fds.clone(),
            max_rate_bps: plan.max_rate_bps,
            send_rate,
            flows_done: plan.flows_done_fd,
            tx,
            spec,
        }
    }

    /// Per flow: a chain of sends, the notifications of every buffer it can have awaiting
    /// one (a zero-copy stream keeps megabytes of them), a chain of receives; plus the
    /// deadline.
    fn paths_cqes(&self, zc_unnotified_bytes: usize) -> usize {
        let (send_depth, nflows) = (self.send_depth, self.nflows);
        let notifications = if self.send_engine.is_zero_copy() {
            zc_slots_per_flow(self.spec.send_size as usize, send_depth, nflows, zc_unnotified_bytes)
        } else {
            send_depth + 1
        };
        ((send_depth + 1) + notifications + self.spec.ring.recv_depth as usize + 1) * nflows + 8
    }
}

/// A setup of `max_cqes` completions and `counted` counter slots, with the defaults every
/// role starts from.
fn ring_setup(max_cqes: usize, counted: usize, build: RoleBuild) -> RoleSetup {
    RoleSetup {
        max_cqes,
        task_run: TaskRun::Deferred,
        sched_batch: false,
        counted,
        global_flows: false,
        settle_tcp: false,
        build,
    }
}

fn stream_sender(c: Sizing, splice_file: Option<File>) -> RoleSetup {
    let zc_unnotified_bytes = zc_stream_unnotified_bytes(c.spec.workers(), c.spec.send_size as usize);
    let max_cqes = c.paths_cqes(zc_unnotified_bytes);
    // A splice stream's work runs on io-wq: with cooperative task work its chains wake the
    // worker once per chain instead of once per step, and SCHED_BATCH (inherited by the
    // io-wq workers, which start later) keeps the task work each freed request still sends
    // the worker from preempting io-wq on the shared CPU.
    let splice = c.send_engine == SendEngine::Splice;
    let Sizing { spec, send_engine, send_depth, socks, send_rate, nflows, .. } = c;
    let build: RoleBuild = Box::new(move |ring, fds| {
        let send_setup = SendSetup {
            fds,
            max_len: spec.send_size as usize,
            depth: send_depth,
            zc_unnotified_bytes,
            file: splice_file,
        };
        let send = AnySend::new(send_engine, ring, send_setup)?;
        let pacer = Pacer::for_chains(send_rate, fds.len(), spec.send_size, send_depth as u32);
        Ok(Box::new(StreamSender::new(send, &socks, spec.send_size, send_depth, pacer, spec.byte_limit)))
    });
    let mut setup = ring_setup(max_cqes, nflows, build);
    if splice {
        setup.task_run = TaskRun::Cooperative;
        setup.sched_batch = true;
    }
    setup.settle_tcp = true;
    setup
}
fn stream_receiver(c: Sizing) -> RoleSetup {
    let max_cqes = c.paths_cqes(0);
    let Sizing { spec, recv_engine, max_rate_bps, nflows, .. } = c;
    let verify_on = spec.verify;
    ring_setup(
        max_cqes,
        nflows,
        Box::new(move |ring, fds| {
            let mut verify = Verifier::new(verify_on, fds.len());
            let depth = spec.ring.recv_depth as usize;
            let recv_setup = RecvSetup { fds, max_len: spec.recv_size as usize, depth };
            let recv = AnyRecv::new(recv_engine, ring, recv_setup, &spec.ring, &mut verify)?;
            // Each flow is held to its share of the session's limit.
            let police = max_rate_bps.map(|b| (b / u64::from(spec.flows.max(1))).max(1));
            let police = Pacer::new(police, fds.len(), spec.recv_size);
            Ok(Box::new(StreamReceiver::new(
                recv,
                verify,
                fds.len(),
                spec.recv_size,
                police,
                spec.byte_limit.is_some(),
            )))
        }),
    )
}

fn rr(c: Sizing, client: bool, splice_file: Option<File>) -> RoleSetup {
    let max_cqes = c.paths_cqes(0);
    let Sizing { spec, send_engine, recv_engine, send_rate, tx, nflows, .. } = c;
    let verify_on = spec.verify;
    ring_setup(
        max_cqes,
        nflows,
        Box::new(move |ring, fds| {
            // Buffers are sized for what this role moves, not for every size in the spec:
            // with a burst, for the messages one send carries and one receive may take.
            let (send_len, recv_len) =
                if client { (tx.request, tx.response) } else { (tx.response, tx.request) };
            let (send_len, recv_len) = (send_len * tx.per_send(send_len), tx.recv_len(recv_len));
            let mut verify = Verifier::new(verify_on, fds.len());
            let send_setup = SendSetup {
                fds,
                max_len: send_len as usize,
                depth: 1,
                zc_unnotified_bytes: 0,
                file: splice_file,
            };
            let send = AnySend::new(send_engine, ring, send_setup)?;
            let recv_setup = RecvSetup { fds, max_len: recv_len as usize, depth: 1 };
            let recv = AnyRecv::new(recv_engine, ring, recv_setup, &spec.ring, &mut verify)?;
            // Tokens for a whole send: a burst's send carries several messages.
            let pacer = Pacer::for_messages(send_rate, fds.len(), send_len);
            Ok(if client {
                let schedule = open_loop_schedule(&spec, fds.len());
                Box::new(RrClient::new((send, recv, verify), tx, fds.len(), schedule, pacer))
                    as Box<dyn Workload>
            } else {
                Box::new(RrServer::new((send, recv, verify), tx, fds.len(), pacer))
            })
        }),
    )
}

/// An open-loop client's send schedule over its window, if the spec asks for one.
fn open_loop_schedule(spec: &TestSpec, flows: usize) -> Option<Schedule> {
    let window_ns = spec.duration_ms * 1_000_000;
    spec.open_loop.map(|o| Schedule::new(o.interval_ns(spec.flows), flows, window_ns))
}

fn crr_client(c: Sizing, plan: CrrPlan, flow_ids: Vec<u32>) -> Result<RoleSetup> {
    let peer =
        plan.peer.ok_or_else(|| Error::Protocol("a crr client without a peer: this is a bug".into()))?;
    let Sizing { spec, send_engine, recv_engine, send_rate, local_flows, .. } = c;
    let verify_on = spec.verify;
    // Per flow: its socket's CQE or its chain's one (a broken chain posts only the failed
    // op's), and a stop's cancel; plus timers, with room to spare. Engines that post more
    // per cycle (a connect, a send, its notification, pieces of a response, a cancelled
    // receive) get room for those.
    let per_flow = if send_engine == SendEngine::Copy && recv_engine == RecvEngine::Recv { 5 } else { 12 };
    // crr holds no socket per flow: its client counts its own flows.
    Ok(ring_setup(
        per_flow * local_flows + 16,
        local_flows,
        Box::new(move |ring, _| {
            let headers = crr_flow_headers(plan.cookie, &flow_ids);
            let flows = flow_ids.len();
            let send = AnySend::per_op(send_engine, ring, flows, &headers, spec.request_size as usize)?;
            let mut verify = Verifier::new(verify_on, flows);
            let recv_len = spec.response_size as usize;
            let recv = AnyRecv::per_op(recv_engine, ring, flows, recv_len, false, &spec.ring, &mut verify)?;
            let pacer = Pacer::for_messages(send_rate, flows, spec.request_size);
            Ok(Box::new(CrrClient::new(&spec, peer, &flow_ids, send, recv, verify, pacer)))
        }),
    ))
}

fn crr_server(c: Sizing, plan: CrrPlan) -> Result<RoleSetup> {
    let stop = plan
        .stop_fd
        .ok_or_else(|| Error::Protocol("a crr server without a stop signal: this is a bug".into()))?;
    let Sizing { spec, send_engine, recv_engine, max_rate_bps, .. } = c;
    let verify_on = spec.verify;
    let (max_cqes, counted) = (CrrServer::max_cqes(&spec), spec.flows as usize);
    let mut setup = ring_setup(
        max_cqes,
        counted,
        Box::new(move |ring, fds| {
            let listener = *fds.first().ok_or_else(|| {
                Error::Protocol("a crr server without its listener: this is a bug in ringperf".into())
            })?;
            let slots = CrrServer::slots(&spec);
            let no_headers: &[[u8; 0]] = &[];
            let response_len = spec.response_size as usize;
            let send = AnySend::per_op(send_engine, ring, slots, no_headers, response_len)?;
            let mut verify = Verifier::new(verify_on, slots);
            let recv_len = CrrServer::recv_len(&spec, recv_engine);
            let recv = AnyRecv::per_op(recv_engine, ring, slots, recv_len, true, &spec.ring, &mut verify)?;
            // One bucket for the worker: any connection may be any flow's.
            let pacer = Pacer::for_messages(crr_server_rate_bps(&spec, max_rate_bps), 1, spec.response_size);
            Ok(Box::new(CrrServer::new(&spec, listener, (plan.cookie, stop), send, recv, verify, pacer)))
        }),
    );
    setup.global_flows = true;
    Ok(setup)
}

fn udp_stream(c: Sizing, sender: bool) -> RoleSetup {
    // Per flow: its sends, a receive, a cancel and its own CQE; plus timers.
    let max_cqes = c.local_flows * (c.send_depth + 4) + 16;
    let Sizing { spec, flows_done, nflows, .. } = c;
    ring_setup(
        max_cqes,
        nflows,
        Box::new(move |ring, fds| {
            Ok(if sender {
                let per_send = spec.udp_datagrams_per_send() as usize;
                let path = DatagramSend::new(fds, spec.send_size as usize, per_send, udp_send_depth(&spec));
                Box::new(UdpSender::new(&spec, path, fds.len())) as Box<dyn Workload>
            } else {
                let (count, size) = udp_recv_buffers(&spec);
                let path = DatagramRecv::new(ring, fds, count, size)?;
                Box::new(UdpReceiver::new(&spec, path, fds.len(), flows_done))
            })
        }),
    )
}

fn udp_rr(c: Sizing, client: bool) -> RoleSetup {
    let max_cqes = c.paths_cqes(0);
    let Sizing { spec, send_rate, flows_done, nflows, .. } = c;
    ring_setup(
        max_cqes,
        nflows,
        Box::new(move |ring, fds| {
            let (size, recv_size) = if client {
                (spec.request_size, spec.response_size)
            } else {
                (spec.response_size, spec.request_size)
            };
            let depth = spec.rr_depth();
            let path = DatagramSend::new(fds, size as usize, 1, udp_rr_send_depth(depth));
            let buffers = udp_rr_recv_buffers(fds.len(), depth);
            let recv = DatagramRecv::new(ring, fds, buffers, recv_size as usize)?;
            let pacer = Pacer::for_messages(send_rate, fds.len(), size);
            Ok(if client {
                let schedule = open_loop_schedule(&spec, fds.len());
                Box::new(UdpRrClient::new(&spec, fds, path, recv, schedule, pacer)) as Box<dyn Workload>
            } else {
                Box::new(UdpRrServer::new(&spec, fds, path, recv, flows_done, pacer))
            })
        }),
    )
}

/// A worker's ring and everything the ring points into. Fields drop in declaration order:
/// the ring goes first, so no operation it still holds (a cancelled send, a standing
/// receive) outlives the role's registered send/receive memory, on every return path.
struct Engine {
    ring: Ring,
    role: Box<dyn Workload>,
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

fn run(mut plan: WorkerPlan, ready: mpsc::Sender<()>, start: mpsc::Receiver<u64>) -> Result<WorkerOutcome> {
    if let Some(cpu) = plan.cpu {
        if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
            return Err(Error::Usage(format!(
                "cannot pin the worker to CPU {cpu}: pick a CPU this host has for {}",
                Setting::Cpus.token()
            )));
        }
    }
    let splice_file = plan.splice_file.take();
    let setup = match role_setup(&plan, splice_file)? {
        Shape::Ring(setup) => setup,
        Shape::Classic(role) => return crate::classic::run(role, plan, ready, start),
    };
    let spec = &plan.spec;
    let tuning = &spec.ring;
    let sched_batch = setup.sched_batch && set_sched_batch();
    let task_run = tuning.task_run.unwrap_or(setup.task_run);
    let mut ring = Ring::with_task_run(tuning, (setup.max_cqes + 8) as u32, task_run)?;
    let fds: Vec<FlowFd> = if tuning.fixed_files && !plan.fds.is_empty() {
        ring.register_files(&plan.fds)?;
        (0..plan.fds.len() as u32).map(FlowFd::Fixed).collect()
    } else {
        plan.fds.iter().map(|&fd| FlowFd::Raw(fd)).collect()
    };
    let role = (setup.build)(&mut ring, &fds)?;
    let mut engine = Engine { ring, role };
    let settle_tcp = setup.settle_tcp;
    let mut window = WorkerWindow::open(&mut plan, &ready, &start, Some(gettid()))?;
    start_intervals(&mut engine.ring, &mut window.sampler, window.start_ns)?;
    let mut flows = vec![FlowCounters::default(); setup.counted];
    let mut run = Run {
        counters: &mut flows,
        sampler: &mut window.sampler,
        deadline_ns: window.deadline_ns,
        stopping: false,
    };
    let ending = drive(&mut engine.ring, engine.role.as_mut(), &mut run, plan.watch_fd);
    if !matches!(ending, Ok(Ending::Completed)) {
        shut_down(&plan.fds);
    }
    let mut reports = engine.role.report();
    let end_ns = reports.end_ns.unwrap_or_else(monotonic_ns);
    let ClosedWindow { end_ns, tool, tcp, intervals, latency, latency_split } =
        window.close(&ending, end_ns, &flows, &plan.fds, settle_tcp);
    if let Some(sp) = reports.send.as_mut().and_then(|r| r.splice.as_mut()) {
        sp.sched_batch = sched_batch;
    }
    Ok(WorkerOutcome {
        flows,
        global_flows: setup.global_flows,
        ending,
        intervals,
        tcp,
        ring: engine.ring.counters(),
        ring_setup: engine.ring.setup(),
        tool,
        end_ns,
        latency,
        latency_split,
        reports,
    })
}

/// Shuts a run's data sockets down once it ended early (the guard, a stop, an error):
/// nothing more goes over them, and an operation still blocked on one (a splice on io-wq
/// waiting for a stopped peer's window, which holds its pipe's lock, so that even closing
/// the pipe would wait for it) returns at once instead of holding the worker.
fn shut_down(fds: &[RawFd]) {
    for &fd in fds {
        // SAFETY: shutdown on a socket the side keeps open until this worker is joined.
        unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
    }
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
