//! Every flag ringperf takes, defined and documented in one place.

use clap::{Args, Parser, Subcommand};

use ringperf_engine::units::{check_size, parse_pair, parse_size};
use ringperf_engine::{Error, DEFAULT_PORT};

#[derive(Parser, Debug)]
#[command(
    name = "ringperf",
    version,
    about = "An io_uring network traffic engine: netperf-style tests whose numbers describe the kernel, not the tool",
    after_help = "Without -H, a test runs against a server embedded in the same process on 127.0.0.1.\nExit codes: 0 ok, 1 a requirement failed, 2 usage error, 3 peer or network error."
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
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_PORT)]
    pub port: u16,
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
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind: std::net::IpAddr,
    /// Control port.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
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
    Ok(ms as u64)
}

fn parse_one_size(s: &str) -> Result<u32, String> {
    check_size("size", parse_size(s).map_err(msg)?).map_err(msg)
}

fn parse_sizes(s: &str) -> Result<(Option<u32>, Option<u32>), String> {
    parse_pair(s, |p| check_size("size", parse_size(p)?)).map_err(msg)
}

fn parse_cpus(s: &str) -> Result<(Option<usize>, Option<usize>), String> {
    parse_pair(s, |p| {
        p.trim().parse::<usize>().map_err(|_| Error::Usage(format!("'{p}' is not a CPU number")))
    })
    .map_err(msg)
}
