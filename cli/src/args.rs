//! Every flag ringperf takes, defined and documented in one place.

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};

use ringperf_engine::control::access::Cidr;
use ringperf_engine::control::limits::{
    DEFAULT_MAX_HANDSHAKES, DEFAULT_MAX_MEMORY, DEFAULT_MAX_MESSAGE, DEFAULT_MAX_SESSIONS,
};
use ringperf_engine::spec::{RecvEngine, SendEngine};
use ringperf_engine::units::{check_size, parse_pair, parse_rate, parse_size};
use ringperf_engine::{Error, DEFAULT_PORT};

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
    /// TCP request/response, one transaction in flight (netperf TCP_RR).
    Rr(RrArgs),
    /// Stream from a file (or a memfd) through file -> pipe -> socket splices (netperf TCP_SENDFILE).
    Sendfile(SendfileArgs),
    /// Run one stream per engine combination and print one table.
    Engines(EnginesArgs),
    /// Show what this kernel's io_uring supports.
    Probe(ProbeArgs),
    /// Run the server that tests connect to (netperf's netserver).
    Serve(ServeArgs),
}

/// Flags every test takes.
#[derive(Args, Debug, Clone)]
pub struct TestArgs {
    /// Server to test against; without it the test runs against an embedded server on 127.0.0.1.
    #[arg(short = 'H', long = "host", value_name = "HOST")]
    pub host: Option<String>,
    /// Control port of the server.
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// File holding the server's pre-shared key (default: the RINGPERF_PSK variable, if set).
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<std::path::PathBuf>,
    /// Data connections (flows) in the test.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_engine::spec::MAX_FLOWS)))]
    pub flows: u32,
    /// Test length in seconds (fractions allowed).
    #[arg(short = 'l', long = "length", value_name = "SECS", default_value = "10", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub length_ms: u64,
    /// Pin the local and the remote worker to these CPUs (one number pins both).
    #[arg(short = 'T', value_name = "LCPU,RCPU", value_parser = parse_cpus)]
    pub cpus: Option<(Option<usize>, Option<usize>)>,
    /// Local socket buffers (SO_SNDBUF,SO_RCVBUF), e.g. 256K,256K; default: kernel autotuning.
    #[arg(short = 's', value_name = "SNDBUF,RCVBUF", value_parser = parse_sizes)]
    pub local_buffers: Option<(Option<u32>, Option<u32>)>,
    /// Remote socket buffers (SO_SNDBUF,SO_RCVBUF).
    #[arg(short = 'S', value_name = "SNDBUF,RCVBUF", value_parser = parse_sizes)]
    pub remote_buffers: Option<(Option<u32>, Option<u32>)>,
    /// Throughput units: k/m/g are 10^3/10^6/10^9 bits/s, K/M/G are KiB/MiB/GiB per second.
    #[arg(short = 'f', value_name = "UNIT", default_value = "m", value_parser = ["k", "m", "g", "K", "M", "G"])]
    pub units: String,
    /// TCP congestion control for every data socket on both sides (e.g. cubic, bbr).
    #[arg(long = "cc", value_name = "NAME")]
    pub congestion_control: Option<String>,
    /// Accepted for netperf compatibility: local CPU is always measured.
    #[arg(short = 'c')]
    pub local_cpu: bool,
    /// Accepted for netperf compatibility: remote CPU is always measured.
    #[arg(short = 'C')]
    pub remote_cpu: bool,
    /// Print the whole report as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Engines and ring tuning, on both sides.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Engines and ring tuning")]
pub struct EngineArgs {
    /// How the sending side puts payload on the socket (copy, zc, zc-msg, splice).
    #[arg(long, value_name = "ENGINE", default_value = "copy", value_parser = parse_send_engine)]
    pub send_engine: SendEngine,
    /// How the receiving side takes payload off the socket (recv, multishot, bundle, trunc).
    #[arg(long, value_name = "ENGINE", default_value = "recv", value_parser = parse_recv_engine)]
    pub recv_engine: RecvEngine,
    /// Fill the payload with a pattern and check every received byte (its cost is reported).
    #[arg(long)]
    pub verify: bool,
    /// Fail (exit 1) if the kernel copied any zero-copy send.
    #[arg(long = "require-zc")]
    pub require_zero_copy: bool,
    /// Linked sends in flight per flow in a stream.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub send_depth: u32,
    /// Provided buffers per ring (multishot, bundle); a power of two.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub buf_count: u32,
    /// Bytes per provided buffer.
    #[arg(long, value_name = "SIZE", default_value = "64K", value_parser = parse_one_size)]
    pub buf_size: u32,
    /// Submission queue entries per ring; a power of two.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub sq_entries: u32,
    /// Submit as soon as this many SQEs are queued.
    #[arg(long, value_name = "N")]
    pub sq_batch: Option<u32>,
    /// Completions to wait for per io_uring_enter (needs --cq-wait-us above 1).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub cq_batch: u32,
    /// With --cq-batch: return after this many microseconds once one completion is ready.
    #[arg(long, value_name = "US", default_value_t = 0)]
    pub cq_wait_us: u32,
    /// Use a kernel SQ polling thread, optionally pinned to CPU (--sqpoll=1).
    #[arg(long, value_name = "CPU", num_args = 0..=1, require_equals = true, default_missing_value = "any")]
    pub sqpoll: Option<String>,
    /// NAPI busy polling per wait, in microseconds.
    #[arg(long, value_name = "US")]
    pub napi_busy_poll_us: Option<u32>,
    /// Do not register the ring fd (every io_uring_enter then looks the fd up).
    #[arg(long)]
    pub no_registered_ring: bool,
    /// Do not register the data sockets as fixed files.
    #[arg(long)]
    pub no_fixed_files: bool,
}

#[derive(Args, Debug)]
pub struct StreamArgs {
    #[command(flatten)]
    pub test: TestArgs,
    /// Bytes per send (netperf -m).
    #[arg(short = 'm', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    pub send_size: u32,
    /// Bytes per receive (netperf -M).
    #[arg(short = 'M', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    pub recv_size: u32,
    /// Server sends, client receives (netperf TCP_MAERTS).
    #[arg(long)]
    pub reverse: bool,
    /// Pace the sender to this many bits/s over all flows (e.g. 500m, 2g); default: as fast as it can.
    #[arg(short = 'b', long = "rate", value_name = "BITS", value_parser = parse_bits)]
    pub rate: Option<u64>,
}

#[derive(Args, Debug)]
pub struct RrArgs {
    #[command(flatten)]
    pub test: TestArgs,
    /// Request and response sizes (netperf -r); one number sets both.
    #[arg(short = 'r', value_name = "REQ,RSP", default_value = "1,1", value_parser = parse_sizes)]
    pub sizes: (Option<u32>, Option<u32>),
}

#[derive(Args, Debug)]
pub struct SendfileArgs {
    #[command(flatten)]
    pub test: TestArgs,
    /// File to send; without it, a memfd of patterned payload.
    #[arg(short = 'F', value_name = "FILE")]
    pub file: Option<String>,
    /// Bytes per splice (netperf -m).
    #[arg(short = 'm', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    pub send_size: u32,
    /// Bytes per receive (netperf -M).
    #[arg(short = 'M', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    pub recv_size: u32,
    /// Pace the sender to this many bits/s over all flows (e.g. 500m, 2g).
    #[arg(short = 'b', long = "rate", value_name = "BITS", value_parser = parse_bits)]
    pub rate: Option<u64>,
}

#[derive(Args, Debug)]
pub struct EnginesArgs {
    #[command(flatten)]
    pub test: TestArgs,
    /// Bytes per send (netperf -m).
    #[arg(short = 'm', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    pub send_size: u32,
    /// Bytes per receive (netperf -M).
    #[arg(short = 'M', value_name = "SIZE", default_value = "128K", value_parser = parse_one_size)]
    pub recv_size: u32,
    /// Server sends, client receives.
    #[arg(long)]
    pub reverse: bool,
    /// Send engines to try (default: every one, each with --recv-engine).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_send_engine)]
    pub send_engines: Vec<SendEngine>,
    /// Receive engines to try (default: every one, each with --send-engine).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_recv_engine)]
    pub recv_engines: Vec<RecvEngine>,
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Print the probe as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind: std::net::IpAddr,
    /// Control port.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Require clients to prove they hold the pre-shared key in FILE (mode 600).
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<std::path::PathBuf>,
    /// Accept connections only from this address or block (repeatable), e.g. 10.0.0.0/8.
    #[arg(long, value_name = "CIDR", value_parser = parse_cidr)]
    pub allow: Vec<Cidr>,
    /// Longest test a client may ask for, in seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub max_duration: Option<u64>,
    /// Most data connections per test.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_engine::spec::MAX_FLOWS)))]
    pub max_flows: Option<u32>,
    /// Most tests running at once; more clients are told to retry later.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS, value_parser = clap::value_parser!(u64).range(1..=4096).map(|n| n as usize))]
    pub max_sessions: usize,
    /// Most connections still in their handshake; past it the oldest is closed.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_HANDSHAKES, value_parser = clap::value_parser!(u64).range(1..=65536).map(|n| n as usize))]
    pub max_handshakes: usize,
    /// Highest send rate of one test in bits/s (e.g. 1g): clients must pass -b at or below it; rr is refused.
    #[arg(long, value_name = "BITS", value_parser = parse_bits)]
    pub max_rate: Option<u64>,
    /// Largest message, request, response or receive buffer a client may ask for.
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_MAX_MESSAGE, value_parser = parse_limit_size)]
    pub max_message: u64,
    /// Most payload buffer memory the server may allocate for one test.
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_MAX_MEMORY, value_parser = parse_limit_size)]
    pub max_memory: u64,
}

fn msg(e: Error) -> String {
    e.to_string()
}

fn parse_seconds(s: &str) -> Result<u64, String> {
    let secs: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("test length must be a positive number of seconds, not '{s}'"));
    }
    let ms = (secs * 1000.0).round();
    if ms < 1.0 {
        return Err("test length must be at least 0.001 s".into());
    }
    let max_s = ringperf_engine::spec::MAX_DURATION_MS / 1000;
    if secs > max_s as f64 {
        return Err(format!("test length '{s}' is over {max_s} s: use at most {max_s}"));
    }
    Ok(ms as u64)
}

fn parse_bits(s: &str) -> Result<u64, String> {
    parse_rate(s).map_err(msg)
}

fn parse_cidr(s: &str) -> Result<Cidr, String> {
    s.parse().map_err(msg)
}

fn parse_limit_size(s: &str) -> Result<u64, String> {
    let n = parse_size(s).map_err(msg)?;
    if n == 0 {
        return Err("a limit of 0 bytes would refuse every test: give a size like 64M".into());
    }
    Ok(n)
}

fn parse_one_size(s: &str) -> Result<u32, String> {
    check_size("size", parse_size(s).map_err(msg)?).map_err(msg)
}

fn parse_sizes(s: &str) -> Result<(Option<u32>, Option<u32>), String> {
    parse_pair(s, |p| check_size("size", parse_size(p)?)).map_err(msg)
}

fn parse_send_engine(s: &str) -> Result<SendEngine, String> {
    SendEngine::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
        let names: Vec<_> = SendEngine::ALL.iter().map(|e| e.name()).collect();
        format!("unknown send engine '{s}': use one of {}", names.join(", "))
    })
}

fn parse_recv_engine(s: &str) -> Result<RecvEngine, String> {
    RecvEngine::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
        let names: Vec<_> = RecvEngine::ALL.iter().map(|e| e.name()).collect();
        format!("unknown receive engine '{s}': use one of {}", names.join(", "))
    })
}

fn parse_cpus(s: &str) -> Result<(Option<usize>, Option<usize>), String> {
    parse_pair(s, |p| {
        p.trim().parse::<usize>().map_err(|_| Error::Usage(format!("'{p}' is not a CPU number")))
    })
    .map_err(msg)
}
