//! The client side of one test: connect (or start the embedded server), agree on the spec,
//! open the data connections, run the local side, and merge both sides into a TestReport.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use crate::control::protocol::{read_frame, write_frame, ClientMessage, ServerMessage, PROTOCOL_VERSION};
use crate::control::server::{check_cpu, Server, CONTROL_TIMEOUT};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::measure::confidence::{batch_means, estimate, Estimate};
use crate::net::connect_flows;
use crate::report::{
    Environments, IntervalSample, IterationFigures, SideReport, Summary, TestReport, SCHEMA_VERSION,
};
use crate::side::{DataSockets, Side};
use crate::spec::{Role, TestSpec, Workload};
use crate::workload::PEER_GRACE_NS;

/// Where the server is.
#[derive(Clone, Debug)]
pub enum Target {
    /// A server started inside this process on 127.0.0.1, for this one test.
    Embedded,
    Remote {
        host: String,
        port: u16,
    },
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a caller can ask of a run beyond the spec.
#[derive(Default, Clone)]
pub struct RunOptions {
    /// Receives the local side's interval samples as they happen.
    pub live: Option<mpsc::Sender<IntervalSample>>,
    /// Confidence level for the within-run estimate (default 0.99, netperf's).
    pub level: Option<f64>,
}

/// Runs one test and returns the merged report of both sides.
pub fn run_test(spec: &TestSpec, target: &Target) -> Result<TestReport> {
    run_test_with(spec, target, &RunOptions::default())
}

/// [`run_test`] with options.
pub fn run_test_with(spec: &TestSpec, target: &Target, opts: &RunOptions) -> Result<TestReport> {
    spec.validate()?;
    for &cpu in &spec.local.cpus {
        check_cpu(cpu, "local")?;
    }
    match target {
        Target::Embedded => {
            let server = Server::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
            let addr = server.local_addr();
            let stop = Arc::new(AtomicBool::new(false));
            let serving = {
                let stop = stop.clone();
                thread::Builder::new()
                    .name("ringperf-embedded-server".into())
                    .spawn(move || server.serve(&stop, Arc::new(|_| {})))
                    .map_err(|e| Error::io("starting the embedded server", e))?
            };
            let result = connect(&[addr]).and_then(|s| run_on(s, spec, addr.to_string(), true, opts));
            stop.store(true, Ordering::Relaxed);
            let _ = serving.join();
            result
        }
        Target::Remote { host, port } => {
            let addrs: Vec<SocketAddr> = (host.as_str(), *port)
                .to_socket_addrs()
                .map_err(|e| {
                    Error::Peer(format!("cannot resolve host '{host}': {e}: check the name given to -H"))
                })?
                .collect();
            let stream = connect(&addrs)?;
            run_on(stream, spec, format!("{host}:{port}"), false, opts)
        }
    }
}

fn connect(addrs: &[SocketAddr]) -> Result<TcpStream> {
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some((addr, e)),
        }
    }
    let Some((addr, e)) = last else {
        return Err(Error::Peer("the host name resolved to no address: check -H".into()));
    };
    Err(Error::Peer(match e.kind() {
        io::ErrorKind::ConnectionRefused => format!(
            "server at {addr} refused the connection: is `ringperf serve` running there, on port {}?",
            addr.port()
        ),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => format!(
            "no answer from {addr} within {} s: check the address and any firewall in between",
            CONNECT_TIMEOUT.as_secs()
        ),
        _ => format!("cannot reach {addr}: {e}: check the address and the route to it"),
    }))
}

fn expect_reply(stream: &mut TcpStream, what: &str) -> Result<ServerMessage> {
    match read_frame(stream, what)? {
        ServerMessage::Error { kind, message } => Err(kind.into_error(message)),
        m => Ok(m),
    }
}

fn run_on(
    mut stream: TcpStream,
    spec: &TestSpec,
    server: String,
    embedded: bool,
    opts: &RunOptions,
) -> Result<TestReport> {
    let _ = stream.set_nodelay(true);
    stream.set_read_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| Error::io("setting a read timeout", e))?;
    stream.set_write_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| Error::io("setting a write timeout", e))?;
    let peer_ip = stream.peer_addr().map_err(|e| Error::io("reading the server address", e))?.ip();

    write_frame(&mut stream, &ClientMessage::Hello { protocol: PROTOCOL_VERSION, tool_version: version() })?;
    let remote_env = match expect_reply(&mut stream, "the server's welcome")? {
        ServerMessage::Welcome { environment, .. } => *environment,
        other => return Err(unexpected("welcome", &other)),
    };
    write_frame(&mut stream, &ClientMessage::Test { spec: Box::new(spec.clone()) })?;
    let (port, cookie, udp_ports) = match expect_reply(&mut stream, "the server to get ready")? {
        ServerMessage::Ready { data_port, cookie, udp_ports } => (data_port, cookie, udp_ports),
        other => return Err(unexpected("ready", &other)),
    };
    let data = match spec.workload {
        Workload::Crr => DataSockets::Connector { peer: SocketAddr::new(peer_ip, port), cookie },
        w if w.is_udp() => {
            DataSockets::Flows(crate::net::udp::connect_flows(peer_ip, &udp_ports, cookie, spec)?)
        }
        _ => DataSockets::Flows(connect_flows(SocketAddr::new(peer_ip, port), cookie, spec)?),
    };
    let mut side = Side::prepare_data(spec, &spec.group_roles(true), &spec.local, data, opts.live.clone())?;
    write_frame(&mut stream, &ClientMessage::Go)?;
    side.start()?;
    let local = side.finish();
    if spec.workload == Workload::Crr {
        // Every cycle is over (or the side failed): the server's workers may stop.
        let _ = write_frame(&mut stream, &ClientMessage::FlowsDone);
    }

    let wait =
        Duration::from_millis(spec.duration_ms) + Duration::from_nanos(PEER_GRACE_NS) + CONTROL_TIMEOUT;
    let local = match local {
        Ok(l) => l,
        Err(e) => {
            // The server's own account of what went wrong is usually the better message.
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            return Err(match read_frame::<ServerMessage>(&mut stream, "the server's report") {
                Ok(ServerMessage::Error { kind, message }) => kind.into_error(message),
                _ => e,
            });
        }
    };
    stream.set_read_timeout(Some(wait)).map_err(|e| Error::io("setting a read timeout", e))?;
    let remote = match expect_reply(&mut stream, "the server's report")? {
        ServerMessage::Report { side } => *side,
        other => return Err(unexpected("report", &other)),
    };
    let summary = summarize(&local, &remote, opts.level.unwrap_or(DEFAULT_LEVEL));
    let figures = IterationFigures::of(&summary, &local, &remote);
    Ok(TestReport {
        schema_version: SCHEMA_VERSION,
        tool_version: version(),
        test: spec.netperf_name().into(),
        spec: spec.clone(),
        server,
        embedded_server: embedded,
        summary,
        iterations: vec![figures],
        confidence: None,
        local,
        remote,
        environment: Environments { local: Environment::capture(), remote: remote_env },
    })
}

/// netperf's default confidence level.
pub const DEFAULT_LEVEL: f64 = 0.99;

/// Headline figures: stream throughput as the sender saw it; rr rates as the client saw
/// them; and the within-run estimate from the local side's intervals.
pub fn summarize(local: &SideReport, remote: &SideReport, level: f64) -> Summary {
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
    if local.role == Role::StreamBidir {
        // Each direction as its sender saw it.
        return Summary {
            throughput_bits_per_sec: local.bytes_sent as f64 * 8.0 / secs(local),
            reverse_throughput_bits_per_sec: Some(remote.bytes_sent as f64 * 8.0 / secs(remote)),
            transactions_per_sec: None,
            mean_latency_ns: None,
            within_run,
        };
    }
    let sender = if matches!(local.role, Role::StreamSender | Role::UdpSender) { local } else { remote };
    Summary {
        throughput_bits_per_sec: sender.bytes_sent as f64 * 8.0 / secs(sender),
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

fn unexpected(expected: &str, got: &ServerMessage) -> Error {
    let name = match got {
        ServerMessage::Welcome { .. } => "welcome",
        ServerMessage::Ready { .. } => "ready",
        ServerMessage::Report { .. } => "report",
        ServerMessage::Error { .. } => "error",
    };
    Error::Protocol(format!("expected '{expected}' from the server, got '{name}'"))
}

fn version() -> String {
    env!("CARGO_PKG_VERSION").into()
}
