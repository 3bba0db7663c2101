//! ringperf-bench: ringperf against its peers in one run (stream: iperf3, netperf, neper;
//! rr: netperf, neper, and sockperf where it can), the tools taking turns, every tool's CPU
//! measured the same way from /proc/stat.
//!
//!   cargo run --release -p ringperf-bench -- stream [--secs 10] [--runs 3] [--cc cubic]
//!   cargo run --release -p ringperf-bench -- rr [--secs 10] [--runs 3] [--size 1] [--cc cubic]
//!   cargo run --release -p ringperf-bench -- crr|udp-rr [--secs 10] [--runs 3]
//!   cargo run --release -p ringperf-bench -- rr|crr|udp-rr|stream --profile [...]
//!   cargo run --release -p ringperf-bench -- all [--secs 10] [--runs 3] [--classic] [--profile]
//!   cargo run --release -p ringperf-bench -- engines [--secs 10] [--runs 3] [--sizes 64K,1M]
//!   cargo run --release -p ringperf-bench -- stats [--secs 10] [--runs 5]
//!   cargo run --release -p ringperf-bench -- profile [--secs 10] [--runs 5]
//!   cargo run --release -p ringperf-bench -- big-tcp [--secs 10] [--runs 3] [--size 1M]
//!   cargo run --release -p ringperf-bench -- scale [--secs 10] [--runs 3] [--gso-rate 1G] [--parts udp64,gso]

mod all;
mod bench;
mod big_tcp;
mod cost_table;
mod cpu;
mod engines;
mod error;
mod peers;
mod plan;
mod process;
mod profile_cost;
mod progress;
mod report;
mod scale;
mod stats;
mod stats_cost;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::peers::{sockperf, Config, StreamOptions, Workload};
use crate::process::PayloadFile;

#[derive(Parser, Debug)]
#[command(
    name = "ringperf-bench",
    about = "ringperf side by side with its peers (stream: iperf3, netperf, neper; rr: netperf, neper, sockperf): alternating runs, same sizes, pinning and congestion control, every tool's CPU measured the same way",
    after_help = "Exit codes: 0 ok, 2 usage error, 3 a tool is missing or failed."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// TCP bulk transfer: ringperf stream against iperf3, netperf TCP_STREAM and neper tcp_stream.
    Stream(StreamArgs),
    /// TCP request/response: ringperf rr against netperf TCP_RR and neper tcp_rr (1 byte by default).
    Rr(RrArgs),
    /// TCP connect/request/response/close: ringperf crr against netperf TCP_CRR and neper tcp_crr.
    Crr(RrArgs),
    /// UDP request/response: ringperf udp-rr against netperf UDP_RR and neper udp_rr.
    UdpRr(UdpRrArgs),
    /// Every seed workload against its peers (stream, maerts, sendfile, rr on one CPU and
    /// across two, crr, udp-rr, udp-stream of 1400 and of 64 bytes) and one table of ratios
    /// with their intervals; --classic adds ringperf's other harness, --profile the
    /// network-path service demand.
    All(AllArgs),
    /// Every send/receive engine pair's stream against copy/recv, and splice against iperf3 -Z.
    Engines(EnginesArgs),
    /// What ringperf's statistics cost: rr with latency histograms and intervals on vs off.
    Stats(StatsArgs),
    /// What the kernel cost profile costs: rr on one CPU and a 64 KiB stream with the
    /// profile and with --no-profile; its service demand ratio decides the default.
    Profile(ProfileArgs),
    /// Many flows over two threads (stream 8 flows vs iperf3 -P 8, rr 100 flows vs iperf 2
    /// bounceback -P 100) and UDP (64-byte datagrams vs iperf3 -u, --gso vs plain).
    Scale(ScaleArgs),
    /// BIG TCP: one stream on lo with lo's GSO/GRO limits at 64 KiB and at 512 KiB, taking
    /// turns, service demand per KB side by side (root: it sets lo's limits around each run
    /// and puts the old values back, also on Ctrl-C).
    BigTcp(BigTcpArgs),
}

#[derive(Args, Debug)]
struct BigTcpArgs {
    #[command(flatten)]
    common: Common,
    /// Bytes per send and per receive (ringperf -m/-M); K = 1024. 1 MiB by default: a
    /// super-packet seldom outgrows the write that filled it, so smaller writes hide the
    /// 512 KiB limit.
    #[arg(long, value_name = "SIZE", default_value = "1M", value_parser = parse_write_size)]
    size: u32,
    /// Congestion control (ringperf --cc); `system` leaves the system default.
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    cc: String,
}

#[derive(Args, Debug)]
struct Common {
    /// Seconds per run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3600))]
    secs: u32,
    /// Runs per tool (they alternate: ringperf, peer, ringperf, peer, ...) [default: 3; stats: 5].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: Option<u32>,
    /// Client and server CPU for every tool.
    #[arg(long, value_name = "CLIENT,SERVER", default_value = "0,1", value_parser = parse_cpus)]
    cpus: (usize, usize),
    /// Idle seconds between runs (outside every measurement window).
    #[arg(long, value_name = "SECS", default_value_t = 1.0, value_parser = parse_pause)]
    pause: f64,
    /// The ringperf binary (default: $RINGPERF, else target/release/ringperf, built if missing).
    #[arg(long, value_name = "PATH")]
    ringperf: Option<PathBuf>,
    /// An older ringperf binary, run as one more peer ("ringperf baseline"): the ratio of this
    /// build to it, with its interval, says whether a change moved a figure (stream, rr, crr,
    /// udp-rr, all).
    #[arg(long, value_name = "PATH")]
    baseline: Option<PathBuf>,
    /// Also run this ringperf on the harness its default rule does not pick for the workload
    /// as one more peer: "ringperf classic" (`--harness classic`) beside an io_uring default,
    /// "ringperf io_uring" (`--harness io-uring`) beside a classic one; whether the default
    /// adds least (stream, rr, crr, udp-rr, all; sendfile has none).
    #[arg(long, alias = "other-harness")]
    classic: bool,
}

#[derive(Args, Debug)]
struct StreamArgs {
    #[command(flatten)]
    common: Common,
    /// Bytes per write on every tool (ringperf -m/-M, iperf3 -l, netperf -m/-M, neper -B); K = 1024.
    #[arg(long, value_name = "SIZE", default_value = "128K", value_parser = parse_write_size)]
    size: u32,
    /// Congestion control for every tool (ringperf --cc, iperf3 -C, netperf -K, neper
    /// --congestion-control); `system` leaves the system default on every tool.
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    cc: String,
    /// Server to client: ringperf --reverse, netperf TCP_MAERTS, iperf3 -R.
    #[arg(long, conflicts_with = "sendfile")]
    reverse: bool,
    /// Send a 16 MiB file: ringperf sendfile -F, netperf TCP_SENDFILE -F, iperf3 -Z.
    #[arg(long)]
    sendfile: bool,
    #[command(flatten)]
    profile: ProfileFlag,
}

#[derive(Args, Debug)]
struct ProfileFlag {
    /// Profile every run's window (every CPU sampled at ringperf's default --profile-hz;
    /// ringperf with its own --profile, a peer with its client and server processes counted
    /// as the tool) and add a table of each tool's cost per unit of work by category.
    #[arg(long)]
    profile: bool,
}

#[derive(Args, Debug)]
struct RrArgs {
    #[command(flatten)]
    common: Common,
    /// Request and response bytes on every tool (netperf -r, neper -Q/-R; sockperf, which
    /// needs at least 14, joins only from 14 bytes and with --cc system).
    #[arg(long, value_name = "BYTES", default_value_t = 1, value_parser = parse_message_size)]
    size: u32,
    /// Congestion control for every tool (ringperf --cc, netperf -K, neper
    /// --congestion-control); `system` leaves the system default on every tool.
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    cc: String,
    #[command(flatten)]
    profile: ProfileFlag,
}

#[derive(Args, Debug)]
struct UdpRrArgs {
    #[command(flatten)]
    common: Common,
    /// Request and response bytes on every tool (ringperf's UDP transactions carry an 8-byte
    /// sequence number, so 8 is the smallest).
    #[arg(long, value_name = "BYTES", default_value_t = 8, value_parser = clap::value_parser!(u32).range(8..=65507))]
    size: u32,
    #[command(flatten)]
    profile: ProfileFlag,
}

#[derive(Args, Debug)]
struct AllArgs {
    #[command(flatten)]
    common: Common,
    /// Congestion control for every TCP workload on every tool; `system` leaves the system
    /// default (netperf's TCP_SENDFILE can take part only then).
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    cc: String,
    /// Profile every run's window and add, per case, each tool's cost table (with its
    /// network path: service demand less the tool's own share) and to the final table the
    /// ratio of the network-path service demands.
    #[arg(long)]
    profile: bool,
}

#[derive(Args, Debug)]
struct EnginesArgs {
    #[command(flatten)]
    common: Common,
    /// Bytes per send and per receive, one comparison each (ringperf -m/-M, iperf3 -l); K = 1024.
    #[arg(long, value_name = "LIST", default_value = "64K,1M", value_delimiter = ',', value_parser = parse_write_size)]
    sizes: Vec<u32>,
    /// Congestion control for every tool (ringperf --cc, iperf3 -C).
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    cc: String,
    /// Engine pairs (SEND/RECV) to run besides the named ones, candidates for the best pair.
    #[arg(long, value_name = "LIST", default_value = engines::DEFAULT_EXTRA, value_delimiter = ',', value_parser = engines::parse_pair)]
    extra: Vec<engines::Pair>,
}

#[derive(Args, Debug)]
struct StatsArgs {
    #[command(flatten)]
    common: Common,
    /// Request and response bytes (ringperf -r; its default is 1).
    #[arg(long, value_name = "BYTES", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    size: u32,
}

#[derive(Args, Debug)]
struct ProfileArgs {
    #[command(flatten)]
    common: Common,
    /// Samples per second per CPU of the profiled runs (ringperf --profile-hz); its default
    /// rate if not given.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=20000))]
    hz: Option<u32>,
    /// Judge the cost projected linearly from --hz down to this rate (a sample costs no
    /// less at a high rate): how a cost too small for the runs' spread at the light rate is
    /// measured, e.g. `--hz 999 --project-to 49`.
    #[arg(long, value_name = "HZ", requires = "hz", value_parser = clap::value_parser!(u32).range(1..=20000))]
    project_to: Option<u32>,
}

#[derive(Args, Debug)]
struct ScaleArgs {
    #[command(flatten)]
    common: Common,
    /// Bytes per write in the stream part (ringperf -m/-M, iperf3 -l); K = 1024.
    #[arg(long, value_name = "SIZE", default_value = "128K", value_parser = parse_write_size)]
    size: u32,
    /// Congestion control for both tools in the stream part (ringperf --cc, iperf3 -C).
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    cc: String,
    /// Pace both GSO-part runs (--gso 1400 and -m 1400) with this -b, so service demand is
    /// compared at the same payload rate (plain 1400-byte sends reach about 2 Gbit/s on
    /// this 2-vCPU VM); 0 runs both unpaced.
    #[arg(long, value_name = "RATE", default_value = "1G")]
    gso_rate: String,
    /// The parts to run (comma-separated): stream (8 flows), rr (100 flows), udp64 (64-byte
    /// datagrams against iperf3 -u), gso (--gso 1400 against -m 1400).
    #[arg(long, value_name = "PART,...", value_delimiter = ',', default_value = "stream,rr,udp64,gso")]
    parts: Vec<scale::Part>,
}

fn parse_cpus(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s.split_once(',').ok_or_else(|| format!("'{s}' is not CLIENT,SERVER, like 0,1"))?;
    let cpu = |x: &str| x.trim().parse::<usize>().map_err(|_| format!("'{x}' is not a CPU number"));
    Ok((cpu(a)?, cpu(b)?))
}

fn parse_pause(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=600.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds between 0 and 600")),
    }
}

fn parse_write_size(s: &str) -> Result<u32, String> {
    let n = ringperf_core::units::parse_size(s).map_err(|e| e.to_string())?;
    // iperf3 refuses blocks over 1 MiB for TCP.
    if !(1..=1 << 20).contains(&n) {
        return Err(format!("write size {n} must be 1 byte to 1M (iperf3's limit)"));
    }
    Ok(n as u32)
}

fn parse_message_size(s: &str) -> Result<u32, String> {
    let n: u32 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of bytes"))?;
    if !(1..=sockperf::MAX_MESSAGE).contains(&n) {
        return Err(format!("requests and responses are 1 to {} bytes", sockperf::MAX_MESSAGE));
    }
    Ok(n)
}

/// The comparisons whose every run is a plain ringperf run take --baseline; the others
/// compare ringperf with itself already.
fn no_baseline(c: &Common, command: &str) -> error::Result<()> {
    match c.baseline {
        Some(_) => Err(error::BenchError::Usage(format!(
            "--baseline works with stream, rr, crr, udp-rr and all, not {command}: compare two builds with `ringperf-bench all --baseline OLD`"
        ))),
        None if c.classic => Err(error::BenchError::Usage(format!(
            "--classic works with stream, rr, crr, udp-rr and all, not {command}: `ringperf-bench all --classic` compares every workload's engines"
        ))),
        None => Ok(()),
    }
}

/// `--cc`: a name, or `system` for the system default on every tool.
fn cc_arg(cc: String) -> Option<String> {
    (cc != "system").then_some(cc)
}

/// Stream and rr: ringperf against its peer.
fn plan(common: Common, workload: Workload, size: u32, cc: Option<String>) -> plan::Plan {
    plan::Plan {
        cfg: Config::new(workload, common.secs, common.cpus, size, cc),
        runs: common.runs.unwrap_or(3),
        pause: Duration::from_secs_f64(common.pause),
        ringperf: common.ringperf,
        baseline: common.baseline,
        classic: common.classic,
    }
}

/// The plan with `--profile` as asked.
fn profiled(mut p: plan::Plan, flag: ProfileFlag) -> plan::Plan {
    p.cfg.profile = flag.profile;
    p
}

fn run(cli: Cli) -> error::Result<()> {
    match cli.command {
        Command::Stream(a) => {
            let file = if a.sendfile { Some(PayloadFile::create()?) } else { None };
            let mut p = plan(a.common, Workload::Stream, a.size, cc_arg(a.cc));
            p.cfg.stream =
                StreamOptions { reverse: a.reverse, sendfile: file.as_ref().map(|f| f.path.clone()) };
            p.cfg.profile = a.profile.profile;
            bench::run(&p)
        }
        Command::Rr(a) => {
            bench::run(&profiled(plan(a.common, Workload::Rr, a.size, cc_arg(a.cc)), a.profile))
        }
        Command::Crr(a) => {
            bench::run(&profiled(plan(a.common, Workload::Crr, a.size, cc_arg(a.cc)), a.profile))
        }
        Command::UdpRr(a) => bench::run(&profiled(plan(a.common, Workload::UdpRr, a.size, None), a.profile)),
        Command::All(a) => {
            let c = a.common;
            let file = PayloadFile::create()?;
            let mut cases = all::cases(c.secs, c.cpus, cc_arg(a.cc).as_deref(), &file.path);
            for case in &mut cases {
                case.cfg.profile = a.profile;
            }
            all::run(
                &cases,
                c.runs.unwrap_or(3),
                Duration::from_secs_f64(c.pause),
                c.ringperf,
                c.baseline,
                c.classic,
            )
        }
        Command::Engines(a) => {
            let c = a.common;
            no_baseline(&c, "engines")?;
            let cfg = engines::config(c.secs, c.cpus, a.cc);
            let pause = Duration::from_secs_f64(c.pause);
            engines::run(&engines::plan(cfg, c.runs.unwrap_or(3), pause, c.ringperf, a.sizes, a.extra))
        }
        Command::Scale(a) => {
            let c = a.common;
            no_baseline(&c, "scale")?;
            scale::run(&scale::ScalePlan {
                secs: c.secs,
                runs: c.runs.unwrap_or(3),
                pause: Duration::from_secs_f64(c.pause),
                cpus: c.cpus,
                size: a.size,
                cc: a.cc,
                gso_rate: (a.gso_rate != "0").then_some(a.gso_rate),
                ringperf: c.ringperf,
                parts: a.parts,
            })
        }
        Command::BigTcp(a) => {
            let c = a.common;
            no_baseline(&c, "big-tcp")?;
            big_tcp::run(&plan::Plan {
                cfg: big_tcp::config(c.secs, c.cpus, a.size, cc_arg(a.cc)),
                runs: c.runs.unwrap_or(3),
                pause: Duration::from_secs_f64(c.pause),
                ringperf: c.ringperf,
                baseline: None,
                classic: false,
            })
        }
        Command::Stats(a) => {
            let c = a.common;
            no_baseline(&c, "stats")?;
            stats_cost::run(&plan::Plan {
                cfg: stats_cost::config(c.secs, c.cpus, a.size),
                runs: c.runs.unwrap_or(5),
                pause: Duration::from_secs_f64(c.pause),
                ringperf: c.ringperf,
                baseline: None,
                classic: false,
            })
        }
        Command::Profile(a) => {
            let c = a.common;
            no_baseline(&c, "profile")?;
            let plans = profile_cost::configs(c.secs, c.cpus).map(|cfg| plan::Plan {
                cfg,
                runs: c.runs.unwrap_or(5),
                pause: Duration::from_secs_f64(c.pause),
                ringperf: c.ringperf.clone(),
                baseline: None,
                classic: false,
            });
            let projection = match (a.hz, a.project_to) {
                (Some(measured_hz), Some(to_hz)) if to_hz < measured_hz => {
                    Some(profile_cost::Projection { measured_hz, to_hz })
                }
                (Some(hz), Some(to)) => {
                    return Err(error::BenchError::Usage(format!(
                        "--project-to {to} is not below --hz {hz}: measure at a higher rate than the one the cost is projected to, e.g. --hz 999 --project-to 49"
                    )))
                }
                _ => None,
            };
            profile_cost::run(&plans, a.hz, projection)
        }
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 2 } else { 0 });
        }
    };
    if let Err(e) = run(cli) {
        eprintln!("ringperf-bench: {e}");
        std::process::exit(e.exit_code());
    }
}
