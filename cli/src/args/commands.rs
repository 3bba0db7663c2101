//! Every command and the flags of its own: the test commands' groups (declared with
//! `flag_group!`, over the shared `TestArgs`), the other commands' plain clap structs, and
//! the lists of every group's marks that the parser, `sweep` and `--keyval` read.

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};

use ringperf_engine::control::access::Cidr;
use ringperf_engine::control::limits::{
    DEFAULT_MAX_HANDSHAKES, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_HOST,
};
use ringperf_engine::load::LoadKind;
use ringperf_engine::payload::{Payload, PayloadFile};
use ringperf_engine::spec::{CloseFirst, Direction, RecvEngine, SendEngine};
use ringperf_engine::{TestSpec, DEFAULT_PORT};

use super::registry::{flag_group, rr_only, FlagScope, KeyvalSetting};
use super::test_flags::{EngineArgs, ProfileArgs, StatsArgs, TestArgs};
use super::values::{
    parse_chart_figure, parse_cidr, parse_close_first, parse_cpu_list, parse_figure, parse_host, parse_idle,
    parse_interval, parse_label, parse_limit_size, parse_load_kind, parse_one_size, parse_payload_file,
    parse_port_range, parse_rate_arg, parse_recv_engine, parse_seconds, parse_send_engine, parse_sizes,
    parse_tx_rate, CpuList,
};

#[derive(Parser, Debug)]
#[command(
    name = "ringperf",
    version,
    about = "An io_uring network traffic engine: netperf-style tests whose numbers describe the kernel, not the tool",
    after_help = "Without -H, a test runs against a server embedded in the same process on 127.0.0.1.\nExit codes: 0 ok, 1 a requirement failed, 2 usage error, 3 peer or network error, 130 stopped by Ctrl-C.\nA run cut short (server gone, connection broken, Ctrl-C) still prints what it measured, marked partial."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// TCP bulk transfer, client to server (netperf TCP_STREAM); --reverse for TCP_MAERTS.
    Stream(StreamArgs),
    /// TCP request/response, one transaction in flight per flow or --burst N (netperf TCP_RR).
    Rr(RrArgs),
    /// TCP connect, request, response, close, repeated (netperf TCP_CRR).
    Crr(CrrArgs),
    /// UDP datagrams with sequence numbers, client to server (netperf UDP_STREAM).
    UdpStream(UdpStreamArgs),
    /// UDP request/response with a per-transaction timeout and retransmission (netperf UDP_RR).
    UdpRr(UdpRrArgs),
    /// Stream from a file (or a memfd) through file -> pipe -> socket splices (netperf TCP_SENDFILE).
    Sendfile(SendfileArgs),
    /// Run a workload on each harness or engine pair and print one table: rr, crr, udp-rr or
    /// udp-stream on its default harness and the other one, with the difference in service
    /// demand; a stream once per engine, each against the default of the other side
    /// (--matrix: every pair).
    Engines(EnginesArgs),
    /// Latency under load: rr (or udp-rr) probes alone for --idle seconds, then with TCP
    /// streams or a UDP flood added for -l seconds; idle and loaded percentiles side by side
    /// (flent's RRUL).
    Load(LoadArgs),
    /// Run one workload over a grid: list-taking flags (see `ringperf sweep stream --help`)
    /// are multiplied out, a row per point.
    Sweep(SweepArgs),
    /// Draw a saved --json report (or a sweep's JSON) as an SVG chart, or --profile-out's
    /// folded stacks as a flame graph.
    Plot(PlotCmdArgs),
    /// Show what this kernel's io_uring supports.
    Probe(ProbeArgs),
    /// Compare two --json reports figure by figure, with significance.
    Diff(DiffArgs),
    /// Run the server that tests connect to (netperf's netserver).
    Serve(ServeArgs),
    /// Run several tests at once between agents (pairs, incast, one-to-many, mesh), all
    /// started together, from a TOML plan; a row per test and aggregates.
    Plan(PlanArgs),
    /// Make `netperf` and `netserver` symlinks to this binary in DIR: invoked by those names,
    /// ringperf takes netperf's and netserver's command lines (for flent and other harnesses).
    InstallLinks(InstallLinksArgs),
}

impl Command {
    /// The flags every test takes, for a test command.
    pub fn test_args(&self) -> Option<&TestArgs> {
        Some(match self {
            Command::Stream(a) => &a.test,
            Command::Rr(a) => &a.test,
            Command::Crr(a) => &a.test,
            Command::UdpStream(a) => &a.test,
            Command::UdpRr(a) => &a.test,
            Command::Sendfile(a) => &a.test,
            _ => return None,
        })
    }
}

/// Which way a stream goes: `--reverse` is the server sending.
pub fn direction(reverse: bool) -> Direction {
    if reverse {
        Direction::ServerToClient
    } else {
        Direction::ClientToServer
    }
}

/// -r REQ,RSP: a side left out keeps the workload's default.
fn set_sizes(spec: &mut TestSpec, (request, response): (Option<u32>, Option<u32>)) {
    spec.request_size = request.unwrap_or(spec.request_size);
    spec.response_size = response.unwrap_or(spec.response_size);
}

flag_group! {
#[derive(Args, Debug)]
pub struct StreamArgs {
    #[command(flatten)]
    test: TestArgs,
    /// Bytes per send (netperf -m).
    #[arg(short = 'm', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    send_size: u32 => spec.send_size [sweep "send_size", ','],
    /// Bytes per receive (netperf -M).
    #[arg(short = 'M', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    recv_size: u32 => spec.recv_size [sweep "recv_size", ','],
    /// Server sends, client receives (netperf TCP_MAERTS).
    #[arg(long)]
    reverse: bool => with { |spec, reverse| spec.direction = direction(*reverse) },
    /// Both directions at once, --flows connections each way, reported separately.
    #[arg(long, conflicts_with = "reverse")]
    bidir: bool => spec.bidir,
    #[command(flatten)]
    plot: PlotArgs,
}
}

flag_group! {
#[derive(Args, Debug)]
pub struct RrArgs {
    #[command(flatten)]
    test: TestArgs,
    /// Request and response sizes (netperf -r); one number sets both.
    #[arg(short = 'r', value_name = "REQ,RSP", default_value = "1,1", value_parser = parse_sizes)]
    sizes: (Option<u32>, Option<u32>) => with { |spec, sizes| set_sizes(spec, *sizes) } [sweep "req_rsp", ':']
        [keyval "REQUEST_SIZE" after "REMOTE_RECV_SIZE" = |r| rr_only(r, r.spec.request_size)]
        [keyval "RESPONSE_SIZE" after "REQUEST_SIZE" = |r| rr_only(r, r.spec.response_size)],
    #[command(flatten)]
    plot: PlotArgs,
}
}

flag_group! {
#[derive(Args, Debug)]
pub struct CrrArgs {
    #[command(flatten)]
    test: TestArgs,
    #[command(flatten)]
    plot: PlotArgs,
    /// Request and response sizes (netperf -r); one number sets both.
    #[arg(short = 'r', value_name = "REQ,RSP", default_value = "1,1", value_parser = parse_sizes)]
    sizes: (Option<u32>, Option<u32>) => with { |spec, sizes| set_sizes(spec, *sizes) },
    /// Close client connections with SO_LINGER 0: a RST, so no TIME_WAIT is left behind.
    #[arg(long)]
    linger0: bool => spec.crr.linger0,
    /// Bind client connections to ports LO-HI, round-robin, instead of the kernel's
    /// ephemeral choice (a busy port is skipped and counted).
    #[arg(long, value_name = "LO-HI", value_parser = parse_port_range)]
    client_ports: Option<(u16, u16)> => spec.crr.client_ports,
    /// Which side closes each connection once the response is out: server (netperf's
    /// TCP_CRR, the server ends in TIME_WAIT) or client (neper's tcp_crr: the server waits
    /// for the client's close).
    #[arg(long, value_name = "SIDE", default_value = "server", value_parser = parse_close_first)]
    close_first: CloseFirst => spec.crr.close_first,
}
}

flag_group! {
#[derive(Args, Debug)]
pub struct UdpStreamArgs {
    #[command(flatten)]
    test: TestArgs,
    #[command(flatten)]
    plot: PlotArgs,
    /// Send with UDP_SEGMENT (GSO): datagrams of SEGSIZE bytes, as many per send as the
    /// kernel allows (at most 64, at most 64 KiB); SEGSIZE is then the datagram size.
    #[arg(long, value_name = "SEGSIZE", value_parser = parse_one_size)]
    gso: Option<u32> => with { |spec, segment| {
        spec.udp.gso_segment = *segment;
        if let Some(n) = *segment {
            (spec.send_size, spec.recv_size) = (n, n);
        }
    } },
    // Declared after --gso: its setter then overrides the datagram size --gso set.
    /// Payload bytes per datagram, including its 8-byte sequence number (netperf -m)
    /// [default: 1024, or --gso's SEGSIZE].
    #[arg(short = 'm', value_name = "SIZE", value_parser = parse_one_size)]
    send_size: Option<u32> => with { |spec, size| if let Some(n) = *size {
        (spec.send_size, spec.recv_size) = (n, n);
    } },
    /// Receive with UDP_GRO: one receive may return several datagrams (the coalescing
    /// ratio is reported).
    #[arg(long)]
    gro: bool => spec.udp.gro,
}
}

flag_group! {
#[derive(Args, Debug)]
pub struct UdpRrArgs {
    #[command(flatten)]
    test: TestArgs,
    #[command(flatten)]
    plot: PlotArgs,
    /// Request and response sizes (netperf -r), each at least 8 bytes (the sequence number).
    #[arg(short = 'r', value_name = "REQ,RSP", default_value = "8,8", value_parser = parse_sizes)]
    sizes: (Option<u32>, Option<u32>) => with { |spec, sizes| set_sizes(spec, *sizes) },
    /// Send a request again when its response has not come after this many microseconds.
    #[arg(long, value_name = "US", default_value_t = ringperf_engine::spec::UdpOptions::default().timeout_us)]
    timeout_us: u32 => spec.udp.timeout_us,
}
}

flag_group! {
#[derive(Args, Debug)]
pub struct SendfileArgs {
    #[command(flatten)]
    test: TestArgs,
    /// File of this host to send; without it, a memfd of patterned payload. Not with
    /// --from: an agent sends only files its operator listed (--payload).
    #[arg(short = 'F', value_name = "FILE")]
    file: Option<std::path::PathBuf> => with { |spec, file| if let Some(f) = file {
        spec.local.payload = Payload::File(f.clone());
    } },
    /// With --from (or in a plan): the file the agent's operator listed under LABEL
    /// (`serve --payload-file LABEL=PATH`) is what the agent sends.
    #[arg(long = "payload", value_name = "LABEL", conflicts_with = "file", value_parser = parse_label)]
    payload: Option<String> => with { |spec, label| if let Some(l) = label {
        spec.local.payload = Payload::Label(l.clone());
    } },
    /// Bytes per splice (netperf -m).
    #[arg(short = 'm', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    send_size: u32 => spec.send_size [sweep "send_size", ','],
    /// Bytes per receive (netperf -M).
    #[arg(short = 'M', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    recv_size: u32 => spec.recv_size [sweep "recv_size", ','],
    #[command(flatten)]
    plot: PlotArgs,
}
}

/// `--plot` on a test (and on each sweep).
#[derive(Args, Debug, Clone)]
pub struct PlotArgs {
    /// Draw an SVG: throughput (or transactions/s) and CPU over time from the interval
    /// samples, plus the round-trip CDF for rr; under `sweep`, the --figure over the grid.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct EnginesArgs {
    /// The workload: stream runs every engine pair (below); rr, crr, udp-rr and udp-stream
    /// run their default harness and the other one, side by side.
    #[arg(value_name = "WORKLOAD", default_value = "stream", value_parser = ["stream", "rr", "crr", "udp-stream", "udp-rr"])]
    pub workload: String,
    #[command(flatten)]
    pub test: TestArgs,
    /// Bytes per send (netperf -m; udp-stream: per datagram) [default: 128K; udp-stream: 1024].
    #[arg(short = 'm', value_name = "SIZE", value_parser = parse_one_size)]
    pub send_size: Option<u32>,
    /// Bytes per receive (netperf -M) [default: 128K; udp-stream: -m].
    #[arg(short = 'M', value_name = "SIZE", value_parser = parse_one_size)]
    pub recv_size: Option<u32>,
    /// Request and response sizes of rr, crr and udp-rr (netperf -r) [default: 1,1; udp-rr: 8,8].
    #[arg(short = 'r', value_name = "REQ,RSP", value_parser = parse_sizes)]
    pub sizes: Option<(Option<u32>, Option<u32>)>,
    /// Server sends, client receives (stream).
    #[arg(long)]
    pub reverse: bool,
    /// Send engines to try (default: every one), each against --recv-engine.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_send_engine)]
    pub send_engines: Vec<SendEngine>,
    /// Receive engines to try (default: every one), each against --send-engine.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_recv_engine)]
    pub recv_engines: Vec<RecvEngine>,
    /// Run every send engine with every receive engine (the full product of the two lists)
    /// instead of each engine against the other side's default.
    #[arg(long)]
    pub matrix: bool,
}

/// `ringperf load`: a probe test that runs the whole time and load tests that join it once
/// its idle phase is over, each its own session on the same server.
#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Server to test against, as for a test (-p is its control port) [default: a server
    /// embedded on 127.0.0.1, shared by the probes and the load].
    #[arg(short = 'H', long = "host", value_name = "HOST", value_parser = parse_host)]
    pub host: Option<String>,
    /// Control port of the server.
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// File holding the server's pre-shared key (default: the RINGPERF_PSK variable, if set).
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<std::path::PathBuf>,
    /// Length of the loaded phase in seconds: how long the load runs.
    #[arg(short = 'l', long = "length", value_name = "SECS", default_value = "10", value_parser = parse_seconds)]
    pub length_ms: u64,
    /// Length of the idle phase in seconds: the probes alone, before the load starts; at
    /// least one interval (-D).
    #[arg(long = "idle", value_name = "SECS", default_value = "2", value_parser = parse_idle)]
    pub idle_ms: u64,
    /// The probe workload: rr (TCP) or udp-rr.
    #[arg(long, value_name = "rr|udp-rr", default_value = "rr", value_parser = ["rr", "udp-rr"])]
    pub probe: String,
    /// Probe requests per second per flow, on a fixed schedule (rr's --rate: a stall shows in
    /// every request it delays) [default: 200].
    #[arg(long, value_name = "R", value_parser = parse_tx_rate, conflicts_with = "probe_closed_loop")]
    pub probe_rate: Option<u64>,
    /// Run the probes closed loop (one transaction in flight per flow, the next when the
    /// last is answered) instead of on a schedule.
    #[arg(long)]
    pub probe_closed_loop: bool,
    /// Probe flows.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub probe_flows: u32,
    /// Probe request and response sizes (-r of rr and udp-rr) [default: the probe
    /// workload's: 1,1 for rr, 8,8 for udp-rr].
    #[arg(short = 'r', value_name = "REQ,RSP", value_parser = parse_sizes)]
    pub probe_sizes: Option<(Option<u32>, Option<u32>)>,
    /// The probes' send engine, both sides [default: the probe workload's].
    #[arg(long, value_name = "ENGINE", value_parser = parse_send_engine)]
    pub probe_send_engine: Option<SendEngine>,
    /// The probes' receive engine, both sides [default: the probe workload's].
    #[arg(long, value_name = "ENGINE", value_parser = parse_recv_engine)]
    pub probe_recv_engine: Option<RecvEngine>,
    /// Pin the probes' workers (both sides) to these CPUs, e.g. 0 or 0-1 [default: unpinned].
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_list)]
    pub probe_cpus: Option<CpuList>,
    /// The load: TCP streams up (client to server), down, both (one test each way), or a
    /// paced UDP flood up (needs --load-rate).
    #[arg(long, value_name = "up|down|both|udp", default_value = "both", value_parser = parse_load_kind)]
    pub load: LoadKind,
    /// Stream flows per direction (udp: datagram flows).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_engine::spec::MAX_FLOWS)))]
    pub load_flows: u32,
    /// Pace each direction's load to this total rate in bits/s (k/m/g); required with
    /// --load udp [default: TCP streams unpaced].
    #[arg(long, value_name = "RATE", value_parser = parse_rate_arg)]
    pub load_rate: Option<u64>,
    /// Bytes per load send: a stream's -m, a UDP datagram's payload [default: 128K for
    /// streams, 1024 for udp].
    #[arg(short = 'm', value_name = "SIZE", value_parser = parse_one_size)]
    pub load_send_size: Option<u32>,
    /// The load's send engine, both sides [default: the load workload's].
    #[arg(long, value_name = "ENGINE", value_parser = parse_send_engine)]
    pub load_send_engine: Option<SendEngine>,
    /// The load's receive engine, both sides [default: the load workload's].
    #[arg(long, value_name = "ENGINE", value_parser = parse_recv_engine)]
    pub load_recv_engine: Option<RecvEngine>,
    /// Pin the load's workers (both sides) to these CPUs, e.g. 1 or 2-3 [default: unpinned].
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_list)]
    pub load_cpus: Option<CpuList>,
    /// TCP congestion control of every TCP data socket, probes' and load's [default: the
    /// system's].
    // Not `congestion_control`: that id is the test commands' --cc, whose mark limits it.
    #[arg(long = "cc", value_name = "NAME")]
    pub cc: Option<String>,
    /// Interval of the time series in seconds: probe percentiles and load throughput per
    /// interval; the idle phase ends on the interval tick nearest --idle.
    #[arg(short = 'D', value_name = "SECS", default_value = "0.2", value_parser = parse_interval)]
    pub interval_ms: u64,
    /// Throughput units: k/m/g are 10^3/10^6/10^9 bits/s, K/M/G are KiB/MiB/GiB per second.
    #[arg(short = 'f', value_name = "UNIT", default_value = "m", value_parser = ["k", "m", "g", "K", "M", "G"])]
    pub units: String,
    /// Take the kernel cost profile over the probe's window, which spans the whole run (both
    /// phases, probes and load): where the busy CPU went, by category.
    #[arg(long)]
    pub profile: bool,
    /// Print the whole run as one JSON object (the probe's and each load test's full
    /// reports inside).
    #[arg(long, conflicts_with_all = ["keyval", "csv"])]
    pub json: bool,
    /// Print NAME=value lines of the run's figures (latencies in us, throughput in -f units).
    #[arg(long, conflicts_with = "csv")]
    pub keyval: bool,
    /// Print a CSV header of the --keyval names and one row.
    #[arg(long)]
    pub csv: bool,
    /// Draw an SVG: load throughput (left axis) and probe round trip p50/p99 (right, log
    /// axis) over time, the load's start marked.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
}

/// What a sweep chart shows (`sweep` and `plot`).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Sweep chart")]
pub struct ChartArgs {
    /// The figure on the y axis, and under `sweep` a column of the table: throughput,
    /// transactions, local_cpu, remote_cpu, local_sd, remote_sd, local_ns_per_segment,
    /// remote_ns_per_segment, local_softirq, local_packets_per_net_rx, p50, p99, ...; with
    /// --profile also local_tool_overhead_with_kernel, local_network_sd and each category's
    /// cost per unit, local_cost_tcp, remote_cost_copy, ... (remote_ for the server's side;
    /// an unknown name lists them all). Default: the workload's rate.
    #[arg(long, value_name = "NAME", value_parser = parse_chart_figure)]
    pub figure: Option<String>,
    /// The swept parameter on the x axis (e.g. send_size); the other varied parameters get
    /// a line each. Default: the first list on the command line.
    #[arg(long = "x", value_name = "PARAM")]
    pub x: Option<String>,
}

const SWEEP_HELP: &str = "Lists (the grid is their cartesian product, the first list varying slowest):
  -m, -M, --send-engine, --recv-engine,       comma lists: -m 1K,16K,64K --send-engine copy,zc
  --cc, --burst
  -r, -s, -S                                   pairs separated by ':': -r 1,1:64,64:1K,1K
Every other flag applies to each point; -i/-I iterate each point to its own confidence.
--json prints [{\"point\": {...}, \"report\": {...}}, ...]; a failed point has \"error\" instead of
\"report\", the other points still run, and the exit code is the failure's.
Ctrl-C stops the sweep and prints the points it has; its JSON is then
{\"partial\": true, \"partial_reason\": ..., \"points\": [...]} and the exit code 130.";

#[derive(Args, Debug)]
#[command(after_help = SWEEP_HELP)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub workload: SweepWorkload,
}

#[derive(Subcommand, Debug)]
pub enum SweepWorkload {
    /// TCP_STREAM over the grid.
    #[command(after_help = SWEEP_HELP)]
    Stream(SweepStreamArgs),
    /// TCP_RR over the grid.
    #[command(after_help = SWEEP_HELP)]
    Rr(SweepRrArgs),
    /// TCP_SENDFILE over the grid.
    #[command(after_help = SWEEP_HELP)]
    Sendfile(SweepSendfileArgs),
}

/// Flags only a sweep has.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Sweep")]
pub struct SweepOutArgs {
    /// Also write the JSON array of every point's full report to FILE (rewritten after each
    /// point, so an interrupted sweep keeps what it measured).
    #[arg(long, value_name = "FILE.json")]
    pub output: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub chart: ChartArgs,
}

#[derive(Args, Debug)]
pub struct SweepStreamArgs {
    #[command(flatten)]
    pub args: StreamArgs,
    #[command(flatten)]
    pub out: SweepOutArgs,
}

#[derive(Args, Debug)]
pub struct SweepRrArgs {
    #[command(flatten)]
    pub args: RrArgs,
    #[command(flatten)]
    pub out: SweepOutArgs,
}

#[derive(Args, Debug)]
pub struct SweepSendfileArgs {
    #[command(flatten)]
    pub args: SendfileArgs,
    #[command(flatten)]
    pub out: SweepOutArgs,
}

#[derive(Args, Debug)]
pub struct PlotCmdArgs {
    /// A --json report, the JSON array of `sweep --json` / `sweep --output`, or the folded
    /// stacks of `--profile-out` (drawn as a flame graph); `-` reads stdin. A regular file
    /// of at most 1 GiB.
    pub input: std::path::PathBuf,
    /// Where to write the SVG.
    #[arg(short = 'o', long = "output", value_name = "FILE.svg")]
    pub output: std::path::PathBuf,
    #[command(flatten)]
    pub chart: ChartArgs,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The baseline report (a --json output, a regular file of at most 1 GiB; `-` reads
    /// stdin).
    pub a: std::path::PathBuf,
    /// The report to compare against it (the same; one of the two may be `-`).
    pub b: std::path::PathBuf,
    /// Exit 1 if any of these figures got significantly worse: throughput, transactions,
    /// local_cpu, remote_cpu, local_sd, remote_sd, p50, p99, or a profile category's cost
    /// per unit (local_cost_tcp, remote_cost_io_uring, ...: the names diff prints).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_figure)]
    pub fail_on: Vec<String>,
    /// Confidence level (percent) for "significant".
    #[arg(long, value_name = "PERCENT", default_value_t = 95.0)]
    pub level: f64,
    /// Throughput units, as for a test: k/m/g are 10^3/10^6/10^9 bits/s, K/M/G are
    /// KiB/MiB/GiB per second.
    #[arg(short = 'f', value_name = "UNIT", default_value = "m", value_parser = ["k", "m", "g", "K", "M", "G"])]
    pub units: String,
}

#[derive(Args, Debug)]
pub struct InstallLinksArgs {
    /// Directory for the links (one in PATH, e.g. /usr/local/bin or ~/.local/bin).
    #[arg(value_name = "DIR")]
    pub dir: std::path::PathBuf,
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Print the probe as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on [default: every address of both families: [::] with IPv4
    /// accepted on the same socket, or 0.0.0.0 on a host without IPv6].
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// Control port.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Require clients to prove they hold the pre-shared key in FILE (mode 600) [default: no key].
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<std::path::PathBuf>,
    /// Accept connections only from this address or block (repeatable), e.g. 10.0.0.0/8 [default: everyone].
    #[arg(long, value_name = "CIDR", value_parser = parse_cidr)]
    pub allow: Vec<Cidr>,
    /// Longest test a client may ask for, in seconds [default: 86400].
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub max_duration: Option<u64>,
    /// Most data connections per test [default: 4096].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_engine::spec::MAX_FLOWS)))]
    pub max_flows: Option<u32>,
    /// Most sessions at once, logged-in ones waiting for their test included; more clients are told to retry later.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS, value_parser = clap::value_parser!(u64).range(1..=4096).map(|n| n as usize))]
    pub max_sessions: usize,
    /// Most sessions from one source address at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS_PER_HOST, value_parser = clap::value_parser!(u64).range(1..=4096).map(|n| n as usize))]
    pub max_sessions_per_host: usize,
    /// Most connections still in their handshake; past it the oldest is closed.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_HANDSHAKES, value_parser = clap::value_parser!(u64).range(1..=65536).map(|n| n as usize))]
    pub max_handshakes: usize,
    /// Highest send rate of one test in bits/s (e.g. 1g): clients must pace to it or below (-b, --flow-rate), and the server paces what it sends in every workload to it whatever they ask [default: none].
    #[arg(long, value_name = "BITS", value_parser = parse_rate_arg)]
    pub max_rate: Option<u64>,
    /// Largest message, request, response or receive buffer a client may ask for (K/M/G: KiB/MiB/GiB).
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = parse_limit_size)]
    pub max_message: u64,
    /// Most payload buffer memory the server may allocate for one test.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_limit_size)]
    pub max_memory: u64,
    /// Most payload buffer memory all running tests together may hold [default: a quarter of MemTotal].
    #[arg(long, value_name = "SIZE", value_parser = parse_limit_size)]
    pub max_total_memory: Option<u64>,
    /// Let a controller that holds the key have this agent run a test's client side against
    /// another agent (`--from`, `ringperf plan`); needs --psk-file, and the other agent must
    /// prove it holds the same key [default: refused].
    #[arg(long, requires = "psk_file")]
    pub allow_third_party: bool,
    /// An address and port that forwards to this server (NAT, a port forward, a proxy),
    /// which clients may dial to reach it (repeatable; a name is resolved at start): the
    /// server proves it is the host dialled there too [default: only the address and port a
    /// connection arrives on].
    #[arg(long, value_name = "HOST:PORT", requires = "psk_file")]
    pub public_endpoint: Vec<String>,
    /// A file a controller may have this agent send, by LABEL (repeatable): `--payload-file
    /// big=/srv/big.bin` lets `sendfile --from` this agent `--payload big`. Checked at start
    /// (a readable, non-empty regular file), opened again non-blocking when sent [default:
    /// none: an agent sends only ringperf's pattern].
    #[arg(long = "payload-file", value_name = "LABEL=PATH", value_parser = parse_payload_file)]
    pub payload_files: Vec<PayloadFile>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The plan: agents, and the tests to run at once between them (TOML, a regular file of
    /// at most 64 MiB; see the README).
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Print the plan's report as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Throughput units: k/m/g are 10^3/10^6/10^9 bits/s, K/M/G are KiB/MiB/GiB per second.
    #[arg(short = 'f', value_name = "UNIT", default_value = "m", value_parser = ["k", "m", "g", "K", "M", "G"])]
    pub units: String,
}

// The marks of every group above and in `test_flags`, for the parser, `sweep` and `--keyval`.

/// Every flag marked `[only ...]` where it is declared.
pub(super) fn flag_scopes() -> impl Iterator<Item = &'static FlagScope> {
    [
        TestArgs::ONLY,
        StatsArgs::ONLY,
        EngineArgs::ONLY,
        ProfileArgs::ONLY,
        StreamArgs::ONLY,
        RrArgs::ONLY,
        SendfileArgs::ONLY,
    ]
    .into_iter()
    .flatten()
}

/// Every setting marked `[keyval ...]` where it is declared, once each (a flag several
/// commands declare carries the mark on one of them).
pub fn keyval_settings() -> Vec<&'static KeyvalSetting> {
    let groups = [
        TestArgs::KEYVAL,
        EngineArgs::KEYVAL,
        ProfileArgs::KEYVAL,
        StreamArgs::KEYVAL,
        RrArgs::KEYVAL,
        SendfileArgs::KEYVAL,
    ];
    let mut out: Vec<&'static KeyvalSetting> = Vec::new();
    for setting in groups.into_iter().flatten() {
        if !out.iter().any(|s| s.name == setting.name) {
            out.push(setting);
        }
    }
    out
}

/// A flag a sweep takes a list for. The lists' cartesian product is the grid, the first
/// one given varying slowest; every other flag applies to every point.
pub struct SweepList {
    /// How the flag is spelled (`-m`, `--send-engine`).
    pub flag: String,
    /// The parameter's name in the table, the JSON `point` and `--x`.
    pub name: &'static str,
    /// What separates the values: ',' for single values, ':' for pairs that contain commas.
    pub separator: char,
}

/// Every flag marked `[sweep ...]` where it is declared, spelled as its clap definition has
/// it (the short form when there is one).
pub fn sweep_lists() -> Vec<SweepList> {
    use clap::Args as _;
    let groups = [
        (StreamArgs::augment_args(clap::Command::new("g")), StreamArgs::SWEEP),
        (RrArgs::augment_args(clap::Command::new("g")), RrArgs::SWEEP),
        (SendfileArgs::augment_args(clap::Command::new("g")), SendfileArgs::SWEEP),
        (TestArgs::augment_args(clap::Command::new("g")), TestArgs::SWEEP),
        (EngineArgs::augment_args(clap::Command::new("g")), EngineArgs::SWEEP),
    ];
    let mut out: Vec<SweepList> = Vec::new();
    for (cmd, marked) in &groups {
        for &(id, name, separator) in *marked {
            let Some(arg) = cmd.get_arguments().find(|a| a.get_id() == id) else { continue };
            let flag = match (arg.get_short(), arg.get_long()) {
                (Some(c), _) => format!("-{c}"),
                (None, Some(l)) => format!("--{l}"),
                (None, None) => continue,
            };
            if !out.iter().any(|l| l.name == name) {
                out.push(SweepList { flag, name, separator });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sweepability comes from the `[sweep ...]` marks on the declarations: these are the
    /// lists `sweep` takes, spelled as the parser has them.
    #[test]
    fn sweep_lists_come_from_the_marked_flags() {
        let mut got: Vec<(String, &str, char)> =
            sweep_lists().into_iter().map(|l| (l.flag, l.name, l.separator)).collect();
        got.sort();
        let mut want = vec![
            ("--burst".to_string(), "burst", ','),
            ("-m".to_string(), "send_size", ','),
            ("-M".to_string(), "recv_size", ','),
            ("-r".to_string(), "req_rsp", ':'),
            ("-s".to_string(), "local_buffers", ':'),
            ("-S".to_string(), "remote_buffers", ':'),
            ("--send-engine".to_string(), "send_engine", ','),
            ("--recv-engine".to_string(), "recv_engine", ','),
            ("--cc".to_string(), "cc", ','),
        ];
        want.sort();
        assert_eq!(got, want);
    }
}
