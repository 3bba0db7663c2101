//! Classic reference engines (`--send-engine syscall`, `--recv-engine syscall`): the paths
//! netperf and neper take, measured by the same report as the io_uring engines. A worker
//! whose side chose them runs one of these loops instead of the ring driver: send(2) and
//! recv(2) on blocking sockets when it has one flow, non-blocking sockets over epoll when
//! it has several. Time comes from a watcher thread ([`watch`]), never from a clock read
//! per call.
//!
//! Pacing (`-b`, `--flow-rate`, a server's `--max-rate`) uses the ring engines' token
//! bucket ([`Pacer`]) without its ring timer, one bucket per worker at the sum of its
//! flows' rates: before a send (a stream's, a request, a response, a datagram) a worker in
//! debt refills by the clock and, still in debt, sleeps until it is out of it or the
//! watcher raises a flag ([`context::Ctx::pace`]); each send then charges what it carried
//! ([`context::Ctx::charge`]). A bucket per flow would have the loop sleep off one flow's debt
//! while the others waited: over epoll the flows then took turns at one flow's rate.
//! Unpaced, that is one compare per send and no clock read.

mod context;
mod crr;
mod msgzc;
mod rr;
mod stream;
mod sys;
mod udp;
mod watch;
mod zcrecv;

use std::sync::mpsc;

use crate::window::{ClosedWindow, WorkerOutcome, WorkerPlan, WorkerWindow};
use crate::workload::ending::PEER_GRACE_NS;
use crate::workload::pacer::{crr_server_rate_bps, flow_send_rate_bps, Pacer};
use context::{Ctx, Loop};
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::intervals::FlowCounters;
use ringperf_core::report::{RingCounters, RingSetup, SyscallCounters};
use ringperf_core::spec::{Role, SideSpec, TestSpec};

/// The classic loop a worker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassicRole {
    StreamSender,
    StreamReceiver,
    RrClient,
    RrServer,
    UdpSender,
    UdpReceiver,
    UdpRrClient,
    UdpRrServer,
    CrrClient,
    CrrServer,
}

impl ClassicRole {
    /// The classic loop for `role` when its side chose a classic engine for what the role
    /// does; `None` runs the ring.
    pub fn of(role: Role, side: &SideSpec) -> Option<ClassicRole> {
        let (send, recv) = (side.send_engine.is_classic(), side.recv_engine.is_classic());
        match role {
            Role::StreamSender if send => Some(ClassicRole::StreamSender),
            Role::StreamReceiver if recv => Some(ClassicRole::StreamReceiver),
            // The spec refuses a request/response side with one classic engine only.
            Role::RrClient if send && recv => Some(ClassicRole::RrClient),
            Role::RrServer if send && recv => Some(ClassicRole::RrServer),
            // The spec refuses a crr or UDP side with one classic engine only.
            Role::UdpSender if send => Some(ClassicRole::UdpSender),
            Role::UdpReceiver if recv => Some(ClassicRole::UdpReceiver),
            Role::UdpRrClient if send && recv => Some(ClassicRole::UdpRrClient),
            Role::UdpRrServer if send && recv => Some(ClassicRole::UdpRrServer),
            Role::CrrClient if send && recv => Some(ClassicRole::CrrClient),
            Role::CrrServer if send && recv => Some(ClassicRole::CrrServer),
            _ => None,
        }
    }

    /// Which of the watcher's timers the loop needs: the deadline, and the guard this long
    /// after it (a peer that never finishes; for a UDP receiver, the longest drain).
    fn timers(self, spec: &TestSpec) -> (bool, Option<u64>) {
        match self {
            ClassicRole::StreamSender | ClassicRole::RrClient | ClassicRole::CrrClient => {
                (true, Some(PEER_GRACE_NS))
            }
            ClassicRole::StreamReceiver | ClassicRole::RrServer | ClassicRole::CrrServer => {
                (false, Some(PEER_GRACE_NS))
            }
            // UDP sends never wait for the peer, and a timeout bounds every udp-rr wait.
            ClassicRole::UdpSender | ClassicRole::UdpRrClient => (true, None),
            ClassicRole::UdpReceiver => (true, Some(udp::stream_drain().1)),
            ClassicRole::UdpRrServer => (true, Some(udp::rr_server_drain(spec).1)),
        }
    }
}

/// A flag bit the loops test.
pub(crate) use watch::{ABORT, DEADLINE, GUARD};

/// Runs a classic worker: the same steps as a ring worker (ready, wait for the window,
/// measure the thread's CPU, sample intervals, read TCP_INFO), with a loop of system
/// calls where the ring would be. The caller has pinned the thread.
pub(crate) fn run(
    role: ClassicRole,
    mut plan: WorkerPlan,
    ready: mpsc::Sender<()>,
    start: mpsc::Receiver<u64>,
) -> Result<WorkerOutcome> {
    let spec = &plan.spec;
    // Counter slots: one per flow; crr has no socket per flow (its client counts its own
    // flows, its server every flow of the test, in global order).
    let nflows = match role {
        ClassicRole::CrrClient => plan.flow_ids.len(),
        ClassicRole::CrrServer => spec.flows as usize,
        _ => plan.fds.len(),
    };
    let crr = matches!(role, ClassicRole::CrrClient | ClassicRole::CrrServer);
    if !crr {
        for &fd in &plan.fds {
            sys::set_nonblocking(fd, nflows > 1)?;
        }
    }
    let mut lp = role_loop(role, &plan, nflows)?;
    let mut window = WorkerWindow::open(&mut plan, &ready, &start, None)?;
    let (window_start, deadline) = (window.start_ns, window.deadline_ns);
    window.sampler.open(window_start);
    let spec = &plan.spec;
    let (want_deadline, guard_after) = role.timers(spec);
    let watcher = watch::Watch::start(watch::WatchPlan {
        deadline_ns: want_deadline.then_some(deadline),
        guard_ns: guard_after.map(|g| deadline + g),
        window_start_ns: window_start,
        interval_ns: window.sampler.interval_ns(),
        // The crr server stops through its own eventfd: its control connection also carries
        // the client's FlowsDone mid-run. Its listener serves the whole session.
        stop_fd: plan.watch_fd.filter(|_| role != ClassicRole::CrrServer),
        sockets: if crr { Vec::new() } else { plan.fds.clone() },
    })?;
    let mut flows = vec![FlowCounters::default(); nflows];
    let mut pacer = role_pacer(role, spec, plan.max_rate_bps, nflows);
    pacer.start_clock();
    let mut cx = Ctx {
        fds: &plan.fds,
        flags: watcher.flags(),
        wake_fd: watcher.wake_fd(),
        counters: &mut flows,
        sampler: &mut window.sampler,
        deadline_ns: deadline,
        record_latency: spec.record_latency,
        calls: SyscallCounters::default(),
        pacer,
    };
    let ending = lp.run(&mut cx);
    let calls = cx.calls;
    let role_report = lp.report();
    // A role that ends its own window (a UDP receiver's drain) says when.
    let end_ns = role_report.end_ns.unwrap_or_else(monotonic_ns);
    drop(watcher);
    let settle = role == ClassicRole::StreamSender;
    let ClosedWindow { end_ns, tool, tcp, intervals, latency, latency_split } =
        window.close(&ending, end_ns, &flows, &plan.fds, settle);
    Ok(WorkerOutcome {
        flows,
        global_flows: role == ClassicRole::CrrServer,
        ending,
        ring: RingCounters { syscalls: Some(calls), ..RingCounters::default() },
        ring_setup: RingSetup::default(),
        tool,
        end_ns,
        latency,
        latency_split,
        intervals,
        tcp,
        reports: role_report,
    })
}

/// The loop of a classic role, over `nflows` counter slots.
fn role_loop(role: ClassicRole, plan: &WorkerPlan, nflows: usize) -> Result<Box<dyn Loop>> {
    let spec = &plan.spec;
    let crr_plan = || {
        plan.crr
            .clone()
            .ok_or_else(|| Error::Protocol("a crr worker without its plan: this is a bug in ringperf".into()))
    };
    if role == ClassicRole::StreamReceiver && plan.max_rate_bps.is_some() {
        return Err(Error::Usage(
            "the syscall receive engine cannot hold a stream to this server's {max-rate}: use {recv-engine} recv".into(),
        ));
    }
    Ok(match role {
        ClassicRole::StreamSender => Box::new(stream::Sender::new(spec, &plan.fds, plan.side.send_engine)?),
        ClassicRole::StreamReceiver => {
            Box::new(stream::Receiver::new(spec, &plan.fds, plan.side.recv_engine)?)
        }
        ClassicRole::RrClient => Box::new(rr::Client::new(spec, nflows)?),
        ClassicRole::RrServer => Box::new(rr::Server::new(spec, nflows)?),
        ClassicRole::UdpSender => Box::new(udp::Sender::new(spec, nflows)),
        ClassicRole::UdpReceiver => Box::new(udp::Receiver::new(spec, nflows)),
        ClassicRole::UdpRrClient => Box::new(udp::RrClient::new(spec, nflows)?),
        ClassicRole::UdpRrServer => Box::new(udp::RrServer::new(spec, nflows)),
        ClassicRole::CrrClient => {
            let c = crr_plan()?;
            let peer =
                c.peer.ok_or_else(|| Error::Protocol("a crr client without a peer: this is a bug".into()))?;
            Box::new(crr::Client::new(spec, peer, c.cookie, &plan.flow_ids))
        }
        ClassicRole::CrrServer => {
            let c = crr_plan()?;
            let stop = c
                .stop_fd
                .ok_or_else(|| Error::Protocol("a crr server without a stop signal: this is a bug".into()))?;
            let listener = *plan.fds.first().ok_or_else(|| {
                Error::Protocol("a crr server without its listener: this is a bug in ringperf".into())
            })?;
            Box::new(crr::Server::new(spec, listener, c.cookie, stop))
        }
    })
}

/// The one bucket that paces what a classic worker sends, all its `nflows` flows together.
fn role_pacer(role: ClassicRole, spec: &TestSpec, max_rate_bps: Option<u64>, nflows: usize) -> Pacer {
    // Each bucket holds two of the role's messages at least, so a sleep that ends late
    // (a busy machine) carries the time over instead of losing it.
    let message = match role {
        ClassicRole::StreamSender => spec.send_size,
        ClassicRole::UdpSender => spec.send_size.saturating_mul(spec.udp_datagrams_per_send()),
        ClassicRole::RrClient | ClassicRole::CrrClient | ClassicRole::UdpRrClient => spec.request_size,
        ClassicRole::RrServer | ClassicRole::CrrServer | ClassicRole::UdpRrServer => spec.response_size,
        ClassicRole::StreamReceiver | ClassicRole::UdpReceiver => 0,
    };
    let rate = match role {
        // Any connection may be any flow's: the worker's share of the session's flows.
        ClassicRole::CrrServer => crr_server_rate_bps(spec, max_rate_bps),
        _ => flow_send_rate_bps(spec, max_rate_bps).map(|r| r.saturating_mul(nflows as u64)),
    };
    Pacer::new(rate, 1, message)
}
