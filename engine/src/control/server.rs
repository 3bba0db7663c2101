//! `ringperf serve`: accepts control connections and runs each session on its own thread,
//! isolated from the others. A failed session gets an error reply and is closed; the
//! server keeps serving.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::control::protocol::{
    read_frame, write_frame, ClientMessage, ErrorKind, ServerMessage, PROTOCOL_VERSION,
};
use crate::env::{allowed_cpus, Environment};
use crate::error::{Error, Result};
use crate::net::{accept_flows, listen, poll_readable, random_cookie, udp};
use crate::side::{DataSockets, Side};
use crate::spec::Workload;

/// How long the server waits for each control message before the test starts.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// What the server tells its operator. The engine never prints; the CLI renders these.
#[derive(Debug, Clone)]
pub enum ServerEvent {
    Listening { addr: SocketAddr },
    SessionStarted { peer: SocketAddr },
    TestDone { peer: SocketAddr, test: &'static str, bytes: u64, transactions: u64 },
    SessionFailed { peer: SocketAddr, error: String },
    Stopping { sessions: usize },
}

/// Receives server events, from any session thread.
pub type EventSink = Arc<dyn Fn(ServerEvent) + Send + Sync>;

/// A bound control listener.
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
}

impl Server {
    pub fn bind(addr: SocketAddr) -> Result<Server> {
        let listener = TcpListener::bind(addr).map_err(|e| match e.kind() {
            io::ErrorKind::AddrInUse => Error::Usage(format!(
                "{addr} is already in use: is another `ringperf serve` running? Pick another --port"
            )),
            io::ErrorKind::AddrNotAvailable => {
                Error::Usage(format!("{} is not an address of this host: check --bind", addr.ip()))
            }
            _ => Error::io(format!("binding the control port {addr}"), e),
        })?;
        let addr = listener.local_addr().map_err(|e| Error::io("reading the bound address", e))?;
        Ok(Server { listener, addr })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `stop` is set, then waits for the sessions in progress to finish.
    pub fn serve(&self, stop: &AtomicBool, events: EventSink) -> Result<()> {
        events(ServerEvent::Listening { addr: self.addr });
        let mut sessions: Vec<JoinHandle<()>> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            if !poll_readable(self.listener.as_raw_fd(), Duration::from_millis(100))? {
                continue;
            }
            let (stream, peer) = match self.listener.accept() {
                Ok(pair) => pair,
                // A connection that vanished before accept, or fd pressure: keep serving.
                Err(_) => continue,
            };
            sessions.retain(|h| !h.is_finished());
            let events = events.clone();
            let spawned = thread::Builder::new()
                .name("ringperf-session".into())
                .spawn(move || run_session(stream, peer, &events));
            if let Ok(h) = spawned {
                sessions.push(h);
            }
        }
        sessions.retain(|h| !h.is_finished());
        events(ServerEvent::Stopping { sessions: sessions.len() });
        for h in sessions {
            let _ = h.join();
        }
        Ok(())
    }
}

fn run_session(mut stream: TcpStream, peer: SocketAddr, events: &EventSink) {
    events(ServerEvent::SessionStarted { peer });
    match session(&mut stream) {
        Ok(done) => events(ServerEvent::from(ServerEventDone { peer, ..done })),
        Err(e) => {
            let reply = ServerMessage::Error { kind: ErrorKind::of(&e), message: e.to_string() };
            let _ = write_frame(&mut stream, &reply);
            events(ServerEvent::SessionFailed { peer, error: e.to_string() });
        }
    }
}

/// Runs one test for one client. Returns a TestDone event with a placeholder peer.
fn session(stream: &mut TcpStream) -> Result<ServerEventDone> {
    let _ = stream.set_nodelay(true);
    stream.set_read_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| Error::io("setting a read timeout", e))?;
    stream.set_write_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| Error::io("setting a write timeout", e))?;
    let local_ip = stream.local_addr().map_err(|e| Error::io("reading the control address", e))?.ip();

    match read_frame(stream, "hello")? {
        ClientMessage::Hello { protocol, .. } if protocol == PROTOCOL_VERSION => {}
        ClientMessage::Hello { protocol, .. } => {
            return Err(Error::Protocol(format!(
                "client speaks protocol {protocol}, this server speaks {PROTOCOL_VERSION}: run the same ringperf version on both hosts"
            )))
        }
        other => return Err(out_of_order("hello", &other)),
    }
    write_frame(
        stream,
        &ServerMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            environment: Box::new(Environment::capture()),
        },
    )?;

    let spec = match read_frame(stream, "the test spec")? {
        ClientMessage::Test { spec } => spec,
        other => return Err(out_of_order("test", &other)),
    };
    spec.validate()?;
    for &cpu in &spec.remote.cpus {
        check_cpu(cpu, "remote")?;
    }

    let cookie = random_cookie();
    // UDP: the descriptors that echo late hellos until `Go` (see net::udp).
    let mut udp_fds = Vec::new();
    let data = if spec.workload.is_udp() {
        let (socks, udp_ports) = udp::bind_flows(local_ip, &spec)?;
        write_frame(stream, &ServerMessage::Ready { data_port: 0, cookie, udp_ports })?;
        udp::accept_flows(&socks, cookie)?;
        udp_fds = socks.iter().map(AsRawFd::as_raw_fd).collect();
        DataSockets::Flows(socks)
    } else {
        let listener = listen(local_ip, &spec)?;
        let port = listener.local_addr().ok().and_then(|a| a.as_socket()).map(|a| a.port()).unwrap_or(0);
        write_frame(stream, &ServerMessage::Ready { data_port: port, cookie, udp_ports: Vec::new() })?;
        if spec.workload == Workload::Crr {
            // crr connects once per cycle: the listener serves the whole test.
            DataSockets::Listener { listener, cookie }
        } else {
            DataSockets::Flows(accept_flows(&listener, cookie, spec.connections())?)
        }
    };

    let mut side = Side::prepare_data(&spec, &spec.group_roles(false), &spec.remote, data, None)?;
    if !udp_fds.is_empty() {
        // The side owns the sockets now; it only uses them once the window opens.
        udp::echo_hellos_until(&udp_fds, cookie, stream.as_raw_fd())?;
    }
    match read_frame(stream, "go")? {
        ClientMessage::Go => {}
        other => return Err(out_of_order("go", &other)),
    }
    side.start()?;
    if spec.workload == Workload::Crr {
        // The client says when its last cycle is done; until then connections keep coming.
        let wait =
            Duration::from_millis(spec.duration_ms) + Duration::from_nanos(crate::workload::PEER_GRACE_NS);
        let _ = stream.set_read_timeout(Some(wait));
        let done = read_frame::<ClientMessage>(stream, "the end of the client's cycles");
        // Stop the workers whatever came: on a failure they end with what is under way.
        side.signal_stop();
        let _ = stream.set_read_timeout(Some(CONTROL_TIMEOUT));
        match done {
            Ok(ClientMessage::FlowsDone) => {}
            Ok(other) => {
                let _ = side.finish();
                return Err(out_of_order("flows_done", &other));
            }
            Err(e) => {
                let _ = side.finish();
                return Err(e);
            }
        }
    }
    let report = side.finish()?;
    let done = ServerEventDone {
        peer: stream.peer_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
        test: spec.netperf_name(),
        bytes: report.bytes_sent + report.bytes_received,
        transactions: report.transactions,
    };
    write_frame(stream, &ServerMessage::Report { side: Box::new(report) })?;
    Ok(done)
}

/// The fields of [`ServerEvent::TestDone`].
struct ServerEventDone {
    peer: SocketAddr,
    test: &'static str,
    bytes: u64,
    transactions: u64,
}

impl From<ServerEventDone> for ServerEvent {
    fn from(d: ServerEventDone) -> Self {
        ServerEvent::TestDone { peer: d.peer, test: d.test, bytes: d.bytes, transactions: d.transactions }
    }
}

fn out_of_order(expected: &str, got: &ClientMessage) -> Error {
    let name = match got {
        ClientMessage::Hello { .. } => "hello",
        ClientMessage::Test { .. } => "test",
        ClientMessage::Go => "go",
        ClientMessage::FlowsDone => "flows_done",
    };
    Error::Protocol(format!("expected a '{expected}' message, got '{name}'"))
}

/// Checks that `cpu` exists and this process may run on it.
pub fn check_cpu(cpu: usize, side: &str) -> Result<()> {
    let allowed = allowed_cpus();
    if allowed.contains(&cpu) {
        return Ok(());
    }
    let list: Vec<String> = allowed.iter().map(|c| c.to_string()).collect();
    Err(Error::Usage(format!(
        "CPU {cpu} does not exist on the {side} host or is outside its affinity mask (usable: {}): pick one of those for -T",
        list.join(",")
    )))
}
