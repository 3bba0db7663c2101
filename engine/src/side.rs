//! One side of a test (client or server): its data sockets, its workers (one ring each,
//! flows dealt round-robin), and the measurement window around them, turned into a
//! SideReport.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;

use socket2::Socket;

use crate::probe;
use crate::window::{CrrPlan, WorkerOutcome, WorkerPlan};
use crate::worker::Worker;
use ringperf_core::env::NetworkEnvironment;
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::cpu::ProcStat;
use ringperf_core::measure::kernel::{DataSocketsAtEnd, KernelCounters, KernelProbe, KernelSnapshot};
use ringperf_core::measure::mptcp::{MptcpFlowInfo, MptcpMib, MptcpReport};
use ringperf_core::measure::profile::{Profiler, Stopped as ProfileSamples};
use ringperf_core::measure::service_demand::{service_demand, tool_overhead_percent};
use ringperf_core::measure::tcp_info::{TcpFlowInfo, TcpReport};
use ringperf_core::merge;
use ringperf_core::payload::Payload;
use ringperf_core::report::Ending;
use ringperf_core::report::{CpuUsage, FlowReport, IntervalSample, SideReport, SocketSizes, WorkerReport};
use ringperf_core::spec::{ProfileSpec, RecvEngine, Role, SendEngine, SideSpec, TestSpec};

/// What a side's workers run over.
pub enum DataSockets {
    /// One connected socket per flow (stream, rr, and the UDP workloads).
    Flows(Vec<Socket>),
    /// crr server: the session's listener, shared by every worker for the whole test;
    /// `peer` is the client (its control connection), whose route the report describes.
    Listener { listener: Socket, cookie: u64, peer: SocketAddr },
    /// crr client: no sockets yet; every flow opens a connection to `peer` per cycle.
    Connector { peer: SocketAddr, cookie: u64 },
}

/// Which flows a worker has: every `of`-th connection of its group, from `index`.
#[derive(Clone, Copy)]
struct Placement {
    group_start: usize,
    index: usize,
    of: usize,
}

/// A side whose workers are ready and waiting for the window to open.
pub struct Side {
    role: Role,
    cpus: Vec<Option<usize>>,
    placement: Vec<Placement>,
    engines: (SendEngine, RecvEngine),
    sockets: Vec<Socket>,
    workers: Vec<Worker>,
    window: Option<(ProcStat, u64)>,
    network: Option<NetworkEnvironment>,
    /// Flows of the test (the crr sides have no socket per flow).
    nflows: usize,
    /// crr server: the eventfd that tells the workers the client has finished.
    stop: Option<OwnedFd>,
    /// crr client: its socket facts, read before the window from a socket made like every
    /// cycle's (it holds none of its own across cycles).
    connector_socket: Option<SocketSizes>,
    /// Kernel counters (measure::kernel): readers opened before the window, and the
    /// snapshot taken as it opens.
    kernel: KernelProbe,
    kernel_before: Option<KernelSnapshot>,
    /// What the window's kernel cost profile asks for, and its sampling while the window
    /// is open.
    profile: ProfileSpec,
    profiler: Option<Profiler>,
    /// The data sockets were asked to be MPTCP: their state is read at the end.
    mptcp: bool,
    /// crr with MPTCP: the namespace's MPTCP counters as the window opened.
    mptcp_mib_before: Option<MptcpMib>,
}

impl Side {
    /// Spawns and readies `spec.workers()` workers per group of connections (one group, or
    /// two for --bidir, each with its role), flows dealt round-robin within a group.
    /// `live`: where interval samples go as they happen; `watch_fd`: readable means "stop
    /// now" for every worker (see [`WorkerPlan::watch_fd`]); `max_rate_bps`: this side's
    /// limit, which paces what it sends and holds what it receives
    /// ([`WorkerPlan::max_rate_bps`]).
    pub fn prepare(
        spec: &TestSpec,
        roles: &[Role],
        side: &SideSpec,
        sockets: Vec<Socket>,
        controls: Controls,
    ) -> Result<Side> {
        Side::prepare_data(spec, roles, side, DataSockets::Flows(sockets), controls)
    }

    /// [`Side::prepare`] for any kind of data sockets.
    pub fn prepare_data(
        spec: &TestSpec,
        roles: &[Role],
        side: &SideSpec,
        data: DataSockets,
        (live, watch_fd, max_rate_bps): Controls,
    ) -> Result<Side> {
        probe::get().check_engines(side.send_engine, side.recv_engine)?;
        let mut stop = None;
        let mut connector_socket = None;
        let mut crr_peer = None;
        let (sockets, crr) = match data {
            DataSockets::Flows(s) => (s, None),
            DataSockets::Listener { listener, cookie, peer } => {
                crr_peer = Some(peer);
                let owned = new_eventfd("the crr stop eventfd")?;
                let plan = CrrPlan { peer: None, cookie, stop_fd: Some(owned.as_raw_fd()) };
                stop = Some(owned);
                (vec![listener], Some(plan))
            }
            DataSockets::Connector { peer, cookie } => {
                // Its connections are gone by the end: no retransmit count to report.
                let probe = crate::workload::crr::client_socket(spec, peer)?;
                connector_socket = Some(socket_sizes(&probe, None));
                crr_peer = Some(peer);
                (Vec::new(), Some(CrrPlan { peer: Some(peer), cookie, stop_fd: None }))
            }
        };
        // A counted UDP test's server ends when the session hears the client is done.
        let udp_server = roles.iter().any(|r| matches!(r, Role::UdpReceiver | Role::UdpRrServer));
        let mut flows_done_fd = None;
        if udp_server && spec.client_says_flows_done() {
            let owned = new_eventfd("the counted test's done eventfd")?;
            flows_done_fd = Some(owned.as_raw_fd());
            stop = Some(owned);
        }
        if crr.is_none() {
            for s in &sockets {
                crate::net::tune(s, &spec.socket)?;
            }
        }
        // crr has no socket per flow: one group, every worker on the shared listener.
        let roles = if crr.is_some() { &roles[..1] } else { roles };
        let nflows = if crr.is_some() { spec.flows as usize } else { sockets.len() };
        let group_len = nflows / roles.len().max(1);
        let n = if crr.is_some() { spec.workers() } else { spec.workers().min(group_len.max(1)) };
        let mut workers = Vec::with_capacity(n * roles.len());
        let mut cpus = Vec::with_capacity(n * roles.len());
        let mut placement = Vec::with_capacity(n * roles.len());
        let lowat = crate::io::recv::stream_rcvlowat(side.recv_engine, &spec.ring, spec.socket.rcvlowat);
        for (g, &role) in roles.iter().enumerate() {
            let start = g * group_len;
            if let (Role::StreamReceiver, Some(bytes)) = (role, lowat) {
                for s in &sockets[start..start + group_len] {
                    crate::net::set_rcvlowat(s, bytes)?;
                }
            }
            for w in 0..n {
                let splice_file = splice_file(side, role)?;
                let k = workers.len();
                let cpu = (!side.cpus.is_empty()).then(|| side.cpus[k % side.cpus.len()]);
                let fds = match &crr {
                    // Every crr server worker accepts on the one listener.
                    Some(_) => sockets.iter().map(AsRawFd::as_raw_fd).collect(),
                    None => sockets[start..start + group_len]
                        .iter()
                        .skip(w)
                        .step_by(n)
                        .map(AsRawFd::as_raw_fd)
                        .collect(),
                };
                let plan = WorkerPlan {
                    role,
                    spec: spec.clone(),
                    side: side.clone(),
                    cpu,
                    fds,
                    flow_ids: (start + w..start + group_len).step_by(n).map(|f| f as u32).collect(),
                    splice_file,
                    live: live.clone(),
                    crr: crr.clone(),
                    flows_done_fd,
                    watch_fd,
                    max_rate_bps,
                };
                workers.push(Worker::spawn(plan)?);
                cpus.push(cpu);
                placement.push(Placement { group_start: start, index: w, of: n });
            }
        }
        let role = if roles.len() == 1 { roles[0] } else { Role::StreamBidir };
        // Read before the window opens, so the netlink and ioctl calls cost the test nothing.
        // crr holds no connected socket before its cycles: the route to the peer stands in.
        let network = match (crr_peer, sockets.first()) {
            (Some(peer), _) => Some(NetworkEnvironment::capture_towards(peer)),
            (None, Some(s)) => Some(NetworkEnvironment::capture(s)),
            (None, None) => None,
        };
        let kernel = KernelProbe::prepare(network.as_ref(), &cpus);
        Ok(Side {
            role,
            cpus,
            placement,
            engines: (side.send_engine, side.recv_engine),
            sockets,
            workers,
            window: None,
            network,
            nflows,
            stop,
            connector_socket,
            kernel,
            kernel_before: None,
            profile: spec.profile,
            profiler: None,
            mptcp: spec.socket.mptcp,
            mptcp_mib_before: None,
        })
    }

    /// crr server: the client has finished its cycles; workers end once theirs are done.
    pub fn signal_stop(&self) {
        if let Some(fd) = &self.stop {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a valid u64 to our own eventfd.
            unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
    }

    /// Opens the measurement window now, for every worker at once.
    pub fn start(&mut self) -> Result<()> {
        self.kernel_before = Some(self.kernel.snapshot());
        if self.mptcp && self.is_crr() {
            self.mptcp_mib_before = MptcpMib::read();
        }
        self.profiler = Profiler::start(&self.profile);
        let before = ProcStat::read()?;
        let start_ns = monotonic_ns();
        for w in &self.workers {
            w.start(start_ns);
        }
        self.window = Some((before, start_ns));
        Ok(())
    }

    /// Waits for the workers and measures the window. The sockets close afterwards. A run
    /// that failed or was stopped after the window opened still gives its report (the
    /// counters every worker kept until then), with the reason in [`Finished::ending`].
    pub fn finish(self) -> Result<Finished> {
        let mut finished = self.finish_unprofiled()?;
        finished.add_profile();
        Ok(finished)
    }

    /// [`Side::finish`] without the profile's report, whose symbolisation takes a while:
    /// [`Finished::add_profile`] builds it once the peer has been told what it must know at
    /// once (a stopped client's Abort).
    pub fn finish_unprofiled(mut self) -> Result<Finished> {
        let nworkers = self.workers.len();
        let mut outcomes = Vec::with_capacity(nworkers);
        let mut first_error = None;
        for w in std::mem::take(&mut self.workers) {
            match w.join() {
                Ok(o) => outcomes.push(o),
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        // How the side ended: a failure in any worker, else a stop, else a whole run.
        let ending = merge::ending(
            outcomes.iter_mut().map(|o| std::mem::replace(&mut o.ending, Ok(Ending::Completed))).collect(),
        );
        let after = ProcStat::read()?;
        let profiled = self.profiler.take().map(Profiler::stop);
        let (before, start_ns) = self.window.take().expect("finish() follows start()");
        let end_ns = outcomes.iter().map(|o| o.end_ns).max().unwrap_or(start_ns);
        let elapsed_ns = end_ns.saturating_sub(start_ns).max(1);
        let system = after.since(&before, elapsed_ns);
        let kernel = self.kernel_report(&before, &after);

        let (flows, tcp_flows, worker_reports) = self.attribute(&outcomes);
        let bytes_sent: u64 = flows.iter().map(|f| f.bytes_sent).sum();
        let bytes_received: u64 = flows.iter().map(|f| f.bytes_received).sum();
        let transactions: u64 = flows.iter().map(|f| f.transactions).sum();
        let socket = match self.sockets.first() {
            Some(s) => SocketSizes {
                // --bidir: the receiving group's sockets have it, the sending group's do not.
                rcvlowat: self.sockets.iter().map(crate::net::rcvlowat).max().unwrap_or(0),
                ..socket_sizes(s, total_retransmits(&self.sockets))
            },
            None => self.connector_socket.clone().unwrap_or_default(),
        };
        let per_flow_bytes: Vec<u64> = flows.iter().map(|f| f.bytes_sent + f.bytes_received).collect();
        let per_flow_sent: Vec<u64> = flows.iter().map(|f| f.bytes_sent).collect();
        // crr connections are gone by the end and UDP has no TCP_INFO: no TCP report.
        let tcp = matches!(
            self.role,
            Role::StreamSender | Role::StreamReceiver | Role::StreamBidir | Role::RrClient | Role::RrServer
        )
        .then(|| TcpReport::new(tcp_flows, &per_flow_bytes, &per_flow_sent));
        let segments = tcp.as_ref().map_or(0, |t| t.data_segs_out + t.data_segs_in);
        // Once per connection after the window; crr's connections are gone by then, so its
        // handshakes are counted instead.
        let mptcp = match self.mptcp_mib_before.take() {
            Some(before) => MptcpMib::read()
                .map(|now| MptcpReport::of_handshakes(now.since(&before, self.connector_socket.is_some()))),
            None => (self.mptcp && !self.is_crr()).then(|| {
                MptcpReport::new(self.sockets.iter().map(|s| MptcpFlowInfo::read(s.as_raw_fd())).collect())
            }),
        };
        let sd = service_demand(&system, bytes_sent + bytes_received, transactions, segments);
        let tool = merge::tool(&outcomes.iter().map(|o| o.tool).collect::<Vec<_>>());
        let overhead = tool_overhead_percent(tool.user_us, &system);
        let ring = merge::ring(&outcomes.iter().map(|o| o.ring).collect::<Vec<_>>());
        let ring_setup = outcomes.first().map(|o| o.ring_setup).unwrap_or_default();
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        let mut verifies = Vec::new();
        let mut latencies = Vec::new();
        let mut splits = Vec::new();
        let mut intervals = Vec::new();
        let crr = merge::crr(outcomes.iter().filter_map(|o| o.reports.crr.as_ref()));
        let rr = merge::rr(outcomes.iter().filter_map(|o| o.reports.rr.as_ref()));
        let udp = merge::udp(
            outcomes.iter().map(|o| o.reports.udp.as_ref()).collect(),
            self.nflows,
            system.busy_us,
        );
        for o in outcomes {
            sends.extend(o.reports.send);
            recvs.extend(o.reports.recv);
            verifies.extend(o.reports.verify);
            latencies.push(o.latency);
            splits.push(o.latency_split);
            intervals.push(o.intervals);
        }
        let report = SideReport {
            role: self.role,
            pinned_cpu: self.cpus.first().copied().flatten(),
            elapsed_ns,
            bytes_sent,
            bytes_received,
            transactions,
            socket,
            cpu: CpuUsage { system, tool, tool_overhead_percent: overhead },
            service_demand: sd,
            ring,
            ring_setup,
            send_engine: self.engines.0,
            recv_engine: self.engines.1,
            send: merge::send(sends),
            recv: merge::recv(recvs),
            verify: merge::verify(verifies),
            latency: merge::latency(latencies).summary(),
            latency_phases: merge::latency_phases(splits),
            window_start_ns: Some(start_ns),
            intervals: merge::intervals(intervals),
            tcp,
            mptcp,
            workers: worker_reports,
            flows,
            network: self.network,
            crr,
            udp,
            rr,
            kernel,
            profile: None,
        };
        Ok(Finished { report, ending, samples: profiled })
    }

    /// Each flow's counters under its global index and the worker that carried it, and
    /// each worker's totals.
    fn attribute(
        &self,
        outcomes: &[WorkerOutcome],
    ) -> (Vec<FlowReport>, Vec<TcpFlowInfo>, Vec<WorkerReport>) {
        let mut flows = vec![FlowReport::default(); self.nflows];
        let mut tcp_flows = vec![TcpFlowInfo::default(); self.nflows];
        let mut worker_reports = Vec::with_capacity(outcomes.len());
        // crr server: any worker may serve any flow; a flow is shown under the worker that
        // served most of its connections.
        let mut most = vec![0u64; self.nflows];
        for (w, o) in outcomes.iter().enumerate() {
            for (l, c) in o.flows.iter().enumerate() {
                let p = self.placement[w];
                let g = if o.global_flows { l } else { p.group_start + merge::global_flow(p.index, l, p.of) };
                let f = &mut flows[g];
                f.flow = g;
                if !o.global_flows || c.transactions > most[g] {
                    most[g] = c.transactions;
                    f.worker = w;
                }
                f.bytes_sent += c.bytes_sent;
                f.bytes_received += c.bytes_received;
                f.transactions += c.transactions;
                if let Some(t) = o.tcp.get(l) {
                    tcp_flows[g] = *t;
                }
            }
            worker_reports.push(WorkerReport {
                cpu: self.cpus[w],
                flows: o.flows.len(),
                bytes_sent: o.flows.iter().map(|f| f.bytes_sent).sum(),
                bytes_received: o.flows.iter().map(|f| f.bytes_received).sum(),
                transactions: o.flows.iter().map(|f| f.transactions).sum(),
                ring: o.ring,
                tool: o.tool,
            });
        }
        (flows, tcp_flows, worker_reports)
    }

    /// A crr side: its connections come and go within their cycles (a counted UDP test's
    /// server also has a stop eventfd, but is never MPTCP).
    fn is_crr(&self) -> bool {
        self.stop.is_some() || self.connector_socket.is_some()
    }

    /// The kernel counters over the window, if they were asked for.
    fn kernel_report(&mut self, before: &ProcStat, after: &ProcStat) -> Option<KernelCounters> {
        let snapshot = self.kernel_before.take()?;
        let fds: Vec<RawFd> = self.sockets.iter().map(AsRawFd::as_raw_fd).collect();
        let sockets = if self.stop.is_some() || self.connector_socket.is_some() {
            DataSocketsAtEnd::None(
                "crr: every connection closes within its cycle, none lasts to the end of the run",
            )
        } else {
            DataSocketsAtEnd::Flows(&fds)
        };
        Some(self.kernel.report(snapshot, before, after, sockets))
    }
}

impl Finished {
    /// The side's profile report, from its samples (none without a profile).
    pub fn add_profile(&mut self) {
        let r = &self.report;
        let profile =
            self.samples.as_ref().map(|p| p.report(r.cpu.system.busy_us, r.profile_work(), r.service_demand));
        self.report.profile = profile;
    }
}

/// The payload file a worker of `role` splices from, opened for it: a splice stream
/// sender's, none for any other.
fn splice_file(side: &SideSpec, role: Role) -> Result<Option<std::fs::File>> {
    Ok(match (&side.payload, side.send_engine) {
        (Payload::File(path), SendEngine::Splice) if role == Role::StreamSender => {
            Some(ringperf_core::input::open_regular(path, "payload file")?)
        }
        // Labels are resolved where a spec comes off the wire (and refused by the client
        // that would send one itself): none should get here.
        (Payload::Label(label), SendEngine::Splice) if role == Role::StreamSender => {
            return Err(Error::Usage(format!(
                "payload label '{}' was not resolved to a listed file: report this",
                ringperf_core::text::peer_text(label)
            )))
        }
        _ => None,
    })
}

/// What steers a side's workers besides the spec: where interval samples go as they
/// happen, the descriptor whose readability stops the run, and the side's rate limit.
pub type Controls = (Option<mpsc::Sender<IntervalSample>>, Option<RawFd>, Option<u64>);

/// A side's report, and how its run ended.
pub struct Finished {
    pub report: SideReport,
    /// `Ok(Completed)`, `Ok(Aborted)` (stopped on request), or why the run failed.
    pub ending: Result<Ending>,
    /// The profile's samples: they cover every CPU, so the embedded server's side, which
    /// shares this process, has its profile built from them too.
    pub samples: Option<ProfileSamples>,
}

/// What the report says about a side's data sockets, read from `s`.
fn socket_sizes(s: &Socket, retransmits: Option<u64>) -> SocketSizes {
    SocketSizes {
        send_buffer: s.send_buffer_size().unwrap_or(0) as u32,
        recv_buffer: s.recv_buffer_size().unwrap_or(0) as u32,
        congestion_control: s
            .tcp_congestion()
            .map(|b| String::from_utf8_lossy(&b).trim_end_matches('\0').to_string())
            .unwrap_or_default(),
        mss: s.mss().unwrap_or(0),
        nodelay: s.nodelay().unwrap_or(false),
        rcvlowat: crate::net::rcvlowat(s),
        retransmits,
    }
}

/// Segments retransmitted over the life of the data connections (TCP_INFO
/// tcpi_total_retrans, summed over flows); `None` if the kernel would not say.
fn total_retransmits(sockets: &[Socket]) -> Option<u64> {
    sockets.iter().map(|s| TcpFlowInfo::read(s.as_raw_fd()).map(|t| u64::from(t.total_retrans))).sum()
}

/// A new eventfd (`what` names it in the error).
fn new_eventfd(what: &str) -> Result<OwnedFd> {
    // SAFETY: eventfd has no memory effects; the result is checked below.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::io(format!("creating {what}"), std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
