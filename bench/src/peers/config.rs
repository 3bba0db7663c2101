//! What every tool is asked to do in one comparison: the workload and the shared settings.

use std::time::Duration;

/// Which comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// TCP bulk transfer, client to server: ringperf stream against iperf3.
    Stream,
    /// TCP request/response, one transaction in flight (TCP_RR).
    Rr,
    /// TCP connect, request, response, close, repeated (TCP_CRR).
    Crr,
    /// UDP request/response, one transaction in flight (UDP_RR).
    UdpRr,
    /// UDP bulk transfer, client to server (UDP_STREAM): datagrams received and lost.
    UdpStream,
}

impl Workload {
    /// TCP bulk transfer (work in bytes).
    pub fn is_stream(self) -> bool {
        self == Workload::Stream
    }

    /// Transactions (rr, crr, udp-rr): work in round trips.
    pub fn is_transactional(self) -> bool {
        matches!(self, Workload::Rr | Workload::Crr | Workload::UdpRr)
    }

    /// Whether a congestion control applies (TCP).
    pub fn is_tcp(self) -> bool {
        matches!(self, Workload::Stream | Workload::Rr | Workload::Crr)
    }

    /// netperf's name for the test (a TCP stream's direction and sendfile: see
    /// `Config::netperf_test`).
    fn netperf_test(self) -> &'static str {
        match self {
            Workload::Stream => "TCP_STREAM",
            Workload::Rr => "TCP_RR",
            Workload::Crr => "TCP_CRR",
            Workload::UdpRr => "UDP_RR",
            Workload::UdpStream => "UDP_STREAM",
        }
    }

    /// ringperf's subcommand for the test.
    pub fn ringperf_command(self) -> &'static str {
        match self {
            Workload::Stream => "stream",
            Workload::Rr => "rr",
            Workload::Crr => "crr",
            Workload::UdpRr => "udp-rr",
            Workload::UdpStream => "udp-stream",
        }
    }
}

/// What every tool is asked to do in one comparison.
#[derive(Clone, Debug)]
pub struct Config {
    pub workload: Workload,
    /// Test length of each run, seconds.
    pub secs: u32,
    /// CPU of the client (sender / requester).
    pub client_cpu: usize,
    /// CPU of the server (receiver / responder).
    pub server_cpu: usize,
    /// Bytes per send (stream) or per request and per response (rr).
    pub size: u32,
    /// Congestion control set on every tool's sockets; None leaves the system default.
    pub cc: Option<String>,
    /// Flows, threads and the CPU set they share.
    pub layout: Layout,
    /// TCP_NODELAY on every data socket.
    pub nodelay: bool,
    /// UDP stream settings.
    pub udp: UdpOptions,
    /// TCP stream settings: direction and sendfile.
    pub stream: StreamOptions,
    /// Sample every CPU over each run's window and sort the samples into the engine's
    /// categories (ringperf: its own `--profile`; a peer: the bench's profiler).
    pub profile: bool,
}

/// Which TCP stream: netperf's TCP_STREAM, TCP_MAERTS or TCP_SENDFILE.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// Server to client (TCP_MAERTS; ringperf --reverse, iperf3 -R).
    pub reverse: bool,
    /// Send this file with sendfile/splice (TCP_SENDFILE; ringperf sendfile -F, netperf -F;
    /// iperf3 -Z sends a temp file of its own).
    pub sendfile: Option<std::path::PathBuf>,
}

/// How many flows over how many threads, and where they may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub flows: u32,
    pub threads: u32,
    /// Every process and thread of both sides may run on these CPUs (ringperf --cpus, peers
    /// under taskset -c); None: the client is pinned to client_cpu, the server to server_cpu.
    pub cpu_set: Option<String>,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout { flows: 1, threads: 1, cpu_set: None }
    }
}

/// What a UDP stream run sends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpOptions {
    /// Send rate (-b), None: as fast as the sender can.
    pub rate: Option<String>,
    /// Datagrams of `size` sent many per send with UDP_SEGMENT (ringperf --gso).
    pub gso: bool,
    /// SO_SNDBUF and SO_RCVBUF on both sides.
    pub socket_buffer: Option<String>,
}

impl Config {
    /// One flow, the client pinned to `cpus.0` and the server to `cpus.1`.
    pub fn new(workload: Workload, secs: u32, cpus: (usize, usize), size: u32, cc: Option<String>) -> Config {
        Config {
            workload,
            secs,
            client_cpu: cpus.0,
            server_cpu: cpus.1,
            size,
            cc,
            layout: Layout::default(),
            nodelay: false,
            udp: UdpOptions::default(),
            stream: StreamOptions::default(),
            profile: false,
        }
    }

    /// netperf's name for the test.
    pub fn netperf_test(&self) -> &'static str {
        match (self.workload, self.stream.reverse, self.stream.sendfile.is_some()) {
            (Workload::Stream, true, _) => "TCP_MAERTS",
            (Workload::Stream, false, true) => "TCP_SENDFILE",
            (w, _, _) => w.netperf_test(),
        }
    }

    /// The congestion control where it applies (TCP).
    pub fn tcp_cc(&self) -> Option<&str> {
        self.cc.as_deref().filter(|_| self.workload.is_tcp())
    }

    /// Upper bound on one run: the test, plus generous set-up and tear-down.
    pub fn run_timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.secs) + 45)
    }
}

/// How long a server may take to start listening.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How many fresh ports to try when a server cannot listen on the first one.
pub const PORT_ATTEMPTS: usize = 3;
