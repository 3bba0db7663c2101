//! One test over a logged-in control connection, as the client runs it: agree on the
//! spec, open the data connections, run the local side, and merge both sides into a
//! TestReport. Once the window has opened a result is never thrown away: if the server
//! dies, a data connection breaks or the user presses Ctrl-C, the report says `partial`
//! and carries what was measured.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::auth::Psk;
use crate::connection::{login, unexpected, version, Control};
use crate::protocol::{report_frame_cap, whole_ms, ClientMessage, ServerMessage, CONTROL_TIMEOUT};
use crate::wire::{to_wire, Recipient};
use ringperf_core::env::{check_cpu, Environment};
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::confidence::{batch_means, estimate, Estimate};
use ringperf_core::report::{
    ClockReport, Ending, Environments, IntervalSample, IterationFigures, SideReport, Summary, TestReport,
    SCHEMA_VERSION,
};
use ringperf_core::spec::{Role, TestSpec, Workload};
use ringperf_engine::net::connect_flows;
use ringperf_engine::side::{DataSockets, Side};
use ringperf_engine::workload::PEER_GRACE_NS;

/// Runs just before Go, once both sides are armed: a synchronized third-party run waits
/// there for the controller's start time, at most the Duration, which the server is told
/// so that its armed side waits as long. An error ends the run before its window opens.
#[derive(Clone, Copy)]
pub struct BeforeGo<'a>(pub &'a (dyn Fn() -> Result<()> + Sync), pub Duration);

impl std::fmt::Debug for BeforeGo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeGo")
    }
}

/// What a caller can ask of a run beyond the spec.
#[derive(Clone, Debug, Default)]
pub struct RunOptions<'a> {
    /// Receives the local side's interval samples as they happen.
    pub live: Option<mpsc::Sender<IntervalSample>>,
    /// Confidence level for the within-run estimate (default 0.99, netperf's).
    pub level: Option<f64>,
    /// The key to prove to a server that requires one.
    pub psk: Option<Psk>,
    /// Readable means "stop now" (the CLI's Ctrl-C pipe): before the window opens the test
    /// fails with [`Error::Interrupted`]; after, the run ends with a partial report and the
    /// server is told to stop.
    pub interrupt: Option<BorrowedFd<'a>>,
    /// The server runs in this process with `in_client_process` set (`ringperf load`'s
    /// shared one): it takes no samples, and this side's, which cover every CPU, serve both.
    pub server_in_process: bool,
    /// Called between Armed and Go (see [`BeforeGo`]).
    pub before_go: Option<BeforeGo<'a>>,
    /// Refuse a server that does not prove it holds our key, even one that asks for none:
    /// an agent running a third-party test sends data only to another agent of its key.
    pub peer_must_prove_key: bool,
    /// The local address the control and data connections leave from (netperf's -L);
    /// `None`: the kernel picks by route. One address for both, since the server takes
    /// data connections only from the control connection's address.
    pub local_bind: Option<IpAddr>,
}

/// How long a client that stopped early waits for the server's partial report.
pub(crate) const PARTIAL_REPORT_WAIT: Duration = Duration::from_secs(2);

/// How long a client whose run failed waits for the server's report, which usually
/// says better what went wrong.
const FAILED_REPORT_WAIT: Duration = Duration::from_secs(1);

/// The least a wait for the server's report lasts, even past the grace: time to read a
/// report already on its way.
const LATE_REPORT_WAIT: Duration = Duration::from_millis(200);

/// The wait from now until `give_up`, and at least `floor`.
fn until(give_up: Instant, floor: Duration) -> Duration {
    give_up.saturating_duration_since(Instant::now()).max(floor)
}

/// Runs `spec` against the server on the connected control `stream`, named `server` in
/// messages and the report: a third-party agent resolves and dials its peer once, logs
/// the address, and runs on that connection.
pub(crate) fn run_connected(
    stream: TcpStream,
    spec: &TestSpec,
    server: String,
    opts: &RunOptions<'_>,
) -> Result<TestReport> {
    spec.validate()?;
    for &cpu in &spec.local.cpus {
        check_cpu(cpu, "local")?;
    }
    run_on(stream, spec, server, false, opts)
}

pub(crate) fn run_on(
    stream: TcpStream,
    spec: &TestSpec,
    server: String,
    embedded: bool,
    opts: &RunOptions<'_>,
) -> Result<TestReport> {
    let wire = to_wire(spec, Recipient::Server)?;
    let (mut c, remote_env, authenticated) =
        login(stream, &server, opts.psk.as_ref(), opts.peer_must_prove_key, opts.interrupt)?;
    // Data connections go to the address that proved itself, and only there.
    let peer_ip = authenticated.ip();
    let clock = if measures_one_way(spec) {
        let same_host = embedded || peer_ip.is_loopback() || peer_ip.to_canonical().is_loopback();
        Some(estimate_clock(&mut c, same_host)?)
    } else {
        None
    };
    let clock_offset_ns = clock.map_or(0, |k| k.applied_offset_ns);
    // A wait before Go (a plan's start) longer than the server's control timeout: say so.
    let go_within_ms = opts.before_go.as_ref().map(|b| whole_ms(b.1));
    c.send(&ClientMessage::Test { spec: Box::new(wire), clock_offset_ns, go_within_ms })?;
    let (port, cookie, udp_ports) = match c.expect("the server to get ready", CONTROL_TIMEOUT)? {
        ServerMessage::Ready { data_port, cookie, udp_ports } => (data_port, cookie, udp_ports),
        other => return Err(unexpected("ready", &other)),
    };
    let data = connect_data(spec, peer_ip, port, cookie, &udp_ports, opts.local_bind)?;
    let watch = opts.interrupt.map(|f| f.as_raw_fd());
    let controls = (opts.live.clone(), watch, None);
    let mut side = Side::prepare_data(spec, &spec.group_roles(true), &spec.local, data, controls)?;
    // Both windows open together: the server's workers are ready before Go is sent.
    match c.expect("the server to arm its workers", CONTROL_TIMEOUT)? {
        ServerMessage::Armed {} => {}
        other => return Err(unexpected("armed", &other)),
    }
    if let Some(BeforeGo(wait, _)) = opts.before_go {
        wait()?;
    }
    c.send(&ClientMessage::Go {})?;
    side.start()?;
    // The grace after the test's end: however the run goes from here, the client is done
    // waiting for the server by then (the workers' guard fires at the same time).
    let give_up =
        Instant::now() + Duration::from_millis(spec.duration_ms) + Duration::from_nanos(PEER_GRACE_NS);
    let mut finished = side.finish_unprofiled()?;
    if matches!(finished.ending, Ok(Ending::Aborted)) {
        // Ctrl-C: tell the server to stop before the profile's symbolisation, which takes a
        // while: a server that finds the data connections closed first fails its run and
        // sends no partial report.
        c.interrupt = None;
        let _ = c.send(&ClientMessage::Abort {});
    } else if spec.client_says_flows_done() {
        // Every cycle or count is over (or the side failed): the server's workers may stop.
        let _ = c.send(&ClientMessage::FlowsDone {});
    }
    finished.add_profile();
    let local = finished.report;
    let samples = finished.samples;

    // A report has an entry per flow and per interval sample: it may be well over MAX_FRAME.
    let report_cap = report_frame_cap(spec);
    // From here on a result exists: every failure makes it partial, never discards it.
    let (remote, failure) = take_server_report(&mut c, finished.ending, give_up, report_cap);
    let (mut local, mut remote) = (local, remote);
    // The embedded server took no samples of its own: this process's cover every CPU.
    if let (true, Some(s), Some(r)) = (embedded || opts.server_in_process, &samples, remote.as_mut()) {
        if r.profile.is_none() {
            r.profile = Some(s.report(r.cpu.system.busy_us, r.profile_work(), r.service_demand));
        }
    }
    if let Some(k) = &clock {
        for side in std::iter::once(&mut local).chain(remote.as_mut()) {
            if let Some(w) = side.udp.as_mut().and_then(|u| u.one_way.as_mut()) {
                w.label(k.one_way_uncertainty_ns());
            }
        }
    }
    let summary = summarize(&local, remote.as_ref(), opts.level.unwrap_or(DEFAULT_LEVEL));
    let figures = IterationFigures::of(&summary, &local, remote.as_ref());
    Ok(TestReport {
        schema_version: SCHEMA_VERSION,
        tool_version: version(),
        test: spec.netperf_name().into(),
        spec: spec.clone(),
        server,
        embedded_server: embedded,
        partial: failure.is_some(),
        partial_reason: failure.map(|e| e.to_string()),
        summary,
        iterations: vec![figures],
        confidence: None,
        local,
        remote,
        environment: Environments {
            local: Environment::capture(ringperf_engine::probe::get().clone()),
            remote: remote_env,
        },
        clock,
        client: None,
    })
}

/// Opens the data flows to the ports the server offered: UDP flows, TCP connections, or
/// for crr nothing yet (each cycle connects).
fn connect_data(
    spec: &TestSpec,
    peer_ip: IpAddr,
    port: u16,
    cookie: u64,
    udp_ports: &[u16],
    local_bind: Option<IpAddr>,
) -> Result<DataSockets> {
    Ok(match spec.workload {
        Workload::Crr => DataSockets::Connector { peer: SocketAddr::new(peer_ip, port), cookie },
        w if w.is_udp() => DataSockets::Flows(ringperf_engine::net::udp::connect_flows(
            peer_ip, udp_ports, cookie, spec, local_bind,
        )?),
        _ => DataSockets::Flows(connect_flows(SocketAddr::new(peer_ip, port), cookie, spec, local_bind)?),
    })
}

/// Takes the server's report as the local side's ending allows: its full report after a
/// completed run, its partial one after Ctrl-C, or after a failure its account of what went
/// wrong, which usually says it better. Also says why the result is partial, if it is.
fn take_server_report(
    c: &mut Control<'_>,
    ending: Result<Ending>,
    give_up: Instant,
    report_cap: usize,
) -> (Option<SideReport>, Option<Error>) {
    match ending {
        Ok(Ending::Completed) => {
            match c.expect_capped("the server's report", until(give_up, LATE_REPORT_WAIT), report_cap) {
                Ok(ServerMessage::Report { side }) => (Some(*side), None),
                Ok(other) => (None, Some(unexpected("report", &other))),
                Err(e) => (None, Some(e)),
            }
        }
        Ok(Ending::Aborted) => {
            // Ctrl-C: the server was told to stop (above); take whatever it measured.
            let remote = match c.expect_capped("the server's partial report", PARTIAL_REPORT_WAIT, report_cap)
            {
                Ok(ServerMessage::Report { side }) => Some(*side),
                _ => None,
            };
            (remote, Some(Error::Interrupted("interrupted by the user (Ctrl-C, SIGTERM or SIGHUP)".into())))
        }
        Err(e) => {
            // The server's own account of what went wrong is usually the better message.
            c.interrupt = None;
            let wait = until(give_up, LATE_REPORT_WAIT).min(FAILED_REPORT_WAIT);
            let e = match c.expect_capped("the server's report", wait, report_cap) {
                Err(server @ (Error::Usage(_) | Error::Requirement(_) | Error::Protocol(_))) => server,
                Err(Error::Peer(m)) if m.starts_with("server: ") => Error::Peer(m),
                _ => e,
            };
            (None, Some(e))
        }
    }
}

/// Clock probes the client sends before a test that measures one-way delay.
const CLOCK_PROBES: u32 = 8;

/// Whether either direction of the test carries send stamps.
fn measures_one_way(spec: &TestSpec) -> bool {
    spec.one_way_unmeasured(true).is_none()
        || (spec.workload == Workload::UdpRr && spec.one_way_unmeasured(false).is_none())
}

/// The server's clock against this one from [`CLOCK_PROBES`] round trips: each probe's
/// offset is the server's reading minus the midpoint of the probe's send and its reply,
/// wrong by at most half the round trip; the probe with the shortest round trip wins. On
/// one host the estimate is reported but not applied: both ends read the same clock.
fn estimate_clock(c: &mut Control<'_>, same_host: bool) -> Result<ClockReport> {
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..CLOCK_PROBES {
        let sent = monotonic_ns();
        c.send(&ClientMessage::ClockProbe {})?;
        let server_ns = match c.expect("the server's clock reply", CONTROL_TIMEOUT)? {
            ServerMessage::ClockReply { server_ns } => server_ns,
            other => return Err(unexpected("clock_reply", &other)),
        };
        let back = monotonic_ns();
        let rtt = back.saturating_sub(sent);
        let midpoint = sent + rtt / 2;
        let offset = (server_ns as i64).wrapping_sub(midpoint as i64);
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    let (rtt, offset_ns) = best.unwrap_or_default();
    Ok(ClockReport {
        same_host,
        probes: CLOCK_PROBES,
        offset_ns,
        uncertainty_ns: rtt.div_ceil(2),
        applied_offset_ns: if same_host { 0 } else { offset_ns },
    })
}

/// netperf's default confidence level.
pub const DEFAULT_LEVEL: f64 = 0.99;

/// Headline figures: stream throughput as the sender saw it (as the local receiver saw it
/// when the remote sender never reported); rr rates as the client saw them; and the
/// within-run estimate from the local side's intervals.
pub fn summarize(local: &SideReport, remote: Option<&SideReport>, level: f64) -> Summary {
    let secs = |s: &SideReport| s.elapsed_ns as f64 / 1e9;
    let rr = local.role.is_transactional();
    let within_run = within_run(local, rr, level);
    if rr {
        return Summary {
            throughput_bits_per_sec: (local.bytes_sent + local.bytes_received) as f64 * 8.0 / secs(local),
            reverse_throughput_bits_per_sec: None,
            transactions_per_sec: Some(local.transactions as f64 / secs(local)),
            mean_latency_ns: local.latency.as_ref().map(|l| l.mean_ns),
            within_run,
        };
    }
    // What the server sent, as it saw it; as this side received it if it never reported.
    let from_remote = |remote: Option<&SideReport>| match remote {
        Some(sender) => sender.bytes_sent as f64 * 8.0 / secs(sender),
        None => local.bytes_received as f64 * 8.0 / secs(local),
    };
    if local.role == Role::StreamBidir {
        // Each direction as its sender saw it.
        return Summary {
            throughput_bits_per_sec: local.bytes_sent as f64 * 8.0 / secs(local),
            reverse_throughput_bits_per_sec: Some(from_remote(remote)),
            transactions_per_sec: None,
            mean_latency_ns: None,
            within_run,
        };
    }
    let throughput = if matches!(local.role, Role::StreamSender | Role::UdpSender) {
        local.bytes_sent as f64 * 8.0 / secs(local)
    } else {
        from_remote(remote)
    };
    Summary {
        throughput_bits_per_sec: throughput,
        reverse_throughput_bits_per_sec: None,
        transactions_per_sec: None,
        mean_latency_ns: None,
        within_run,
    }
}

/// Batch means over the interval samples after warm-up (the first tenth of the run, and
/// at least the first interval), in at most ten batches.
fn within_run(side: &SideReport, rr: bool, level: f64) -> Option<Estimate> {
    let full: Vec<&IntervalSample> = side.intervals.iter().collect();
    let total_ns: u64 = full.iter().map(|s| s.duration_ns).sum();
    let warm = (total_ns / 10).max(full.first().map_or(0, |s| s.duration_ns));
    let values: Vec<f64> = full
        .iter()
        // The last interval may be a short remainder: leave it out.
        .filter(|s| s.start_ns >= warm && s.duration_ns * 2 >= full[0].duration_ns)
        .map(|s| if rr { s.transactions_per_sec() } else { s.throughput_bits_per_sec() })
        .collect();
    let name = if rr { "transactions/s" } else { "throughput" };
    estimate(name, &batch_means(&values, 10), level)
}
