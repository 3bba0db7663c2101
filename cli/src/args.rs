//! Every flag ringperf takes, defined and documented in one place.

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};

use ringperf_engine::control::access::Cidr;
use ringperf_engine::control::limits::{
    DEFAULT_MAX_HANDSHAKES, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_HOST,
};
use ringperf_engine::harness::Harness;
use ringperf_engine::load::LoadKind;
use ringperf_engine::payload::{Payload, PayloadFile};
use ringperf_engine::report::OpenLoopReport;
use ringperf_engine::spec::{
    CloseFirst, Direction, OpenLoop, RecvEngine, SendEngine, SocketBuffers, TaskRun, DEFAULT_BACKLOG,
};
use ringperf_engine::units::{check_size, parse_pair, parse_size};
use ringperf_engine::{Error, DEFAULT_PORT};
use ringperf_engine::{TestReport, TestSpec};

/// Declares a group of flags once: each field's doc comment is its help, its `#[arg]` its
/// clap definition and default, and `=> spec.PATH` (for a flag that is a TestSpec field as
/// it is) or `=> with { |spec, value| ... }` (for one that sets fields its own way: both
/// sides, a negation, a pair) what [`copy_to`](TestArgs::copy_to) does with it, in
/// declaration order. The README's table is rendered from the same definitions
/// ([`flags_markdown`]). `[sweep "name", sep]` makes it a list under `sweep`
/// ([`sweep_lists`]): the parameter's name, and what separates its values.
/// `[only "cmd", ... ; "why"]` (or `as "label"`) names the test commands a flag applies
/// to: the others hide it from their help and refuse it, saying where it applies (the
/// listed commands and the why, or the label instead) ([`command`], [`parse`]).
/// `[keyval "NAME" after "PREV" = |report| value]` (repeatable) makes the setting a
/// `--keyval`/`--csv` field ([`keyval_settings`]): its name, the field it follows (without
/// `after`, it goes at the end, so existing CSV columns keep their places) and how its
/// value is read back from a report.
macro_rules! flag_group {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty $(=> spec $(. $path:ident)+)? $(=> with { $set:expr })?
                $([sweep $param:literal, $sep:literal])?
                $([only $($cmd:literal),+ $(; $why:literal)? $(as $label:literal)?])?
                $([keyval $kv:literal $(after $prev:literal)? = $value:expr])*
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// Sets every spec field these flags give, in declaration order (a group may
            /// have none, hence the allow).
            #[allow(clippy::clone_on_copy, unused_variables)]
            pub fn copy_to(&self, spec: &mut TestSpec) {
                $(
                    $( spec $(. $path)+ = self.$field.clone(); )?
                    $( apply(spec, &self.$field, $set); )?
                )*
            }

            /// The flags `sweep` takes a list of: (clap id, parameter name, separator).
            pub const SWEEP: &'static [(&'static str, &'static str, char)] =
                &[ $( $( (stringify!($field), $param, $sep), )? )* ];

            /// The flags that apply to some test commands only.
            pub const ONLY: &'static [FlagScope] = &[ $( $( FlagScope {
                id: stringify!($field),
                commands: &[$($cmd),+],
                why: first(&[$($why)?]),
                label: first(&[$($label)?]),
            }, )? )* ];

            /// The settings `--keyval` and `--csv` echo, in declaration order.
            pub const KEYVAL: &'static [KeyvalSetting] = &[ $( $( KeyvalSetting {
                name: $kv,
                after: first(&[$($prev)?]),
                value: $value,
            }, )* )* ];
        }
    };
}

/// Runs a flag's `=> with { ... }` setter with its argument types spelled out, so the
/// closure where the flag is declared needs no annotations.
#[inline]
fn apply<T>(spec: &mut TestSpec, value: &T, set: impl FnOnce(&mut TestSpec, &T)) {
    set(spec, value)
}

/// Both sides' socket buffers of a `-s`/`-S` pair, either side left to the kernel.
fn socket_buffers(pair: Option<(Option<u32>, Option<u32>)>) -> SocketBuffers {
    let (send, recv) = pair.unwrap_or((None, None));
    SocketBuffers { send, recv }
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

/// A setting echoed as a `--keyval`/`--csv` field, declared on its flag.
pub struct KeyvalSetting {
    pub name: &'static str,
    /// The field it comes right after (it may come later in the list: a kernel or profile
    /// figure); `None`: after the figures and settings, before the kernel counters.
    pub after: Option<&'static str>,
    pub value: fn(&TestReport) -> String,
}

/// A flag that applies to some test commands only, as its `[only ...]` mark says.
pub struct FlagScope {
    /// Its clap id (the field's name).
    pub id: &'static str,
    /// The commands it applies to (and `sweep`'s workloads of the same names).
    pub commands: &'static [&'static str],
    /// Why the others do not take it, said after the list.
    pub why: Option<&'static str>,
    /// What to say instead of the list, when the commands have a shorter name.
    pub label: Option<&'static str>,
}

impl FlagScope {
    /// Where it applies, for the message that refuses it elsewhere.
    fn applies_to(&self) -> String {
        if let Some(label) = self.label {
            return label.to_string();
        }
        let list = match self.commands {
            [] => String::new(),
            [one] => one.to_string(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        };
        match self.why {
            Some(why) => format!("{list} ({why})"),
            None => list,
        }
    }
}

/// Every flag marked `[only ...]` where it is declared.
fn flag_scopes() -> impl Iterator<Item = &'static FlagScope> {
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

/// The optional parts of a mark (`Option::or` is not const). (`Option::or` is not const).
const fn first(names: &[&'static str]) -> Option<&'static str> {
    match names {
        [name, ..] => Some(*name),
        [] => None,
    }
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

/// Hides from a test command's help each flag whose `[only ...]` mark leaves it out, so each
/// command's help lists what applies to it; given anyway, [`parse`] refuses it.
fn hide_unused(mut cmd: clap::Command) -> clap::Command {
    let name = cmd.get_name().to_string();
    for scope in flag_scopes() {
        let takes = cmd.get_arguments().any(|a| a.get_id() == scope.id);
        if takes && !scope.commands.contains(&name.as_str()) {
            cmd = cmd.mut_arg(scope.id, |a| a.hide(true));
        }
    }
    cmd
}

/// The clap command with each test command's help cut to the flags it uses; `sweep`'s
/// workloads get the same as their single-test commands.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let names: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().to_string()).collect();
    for name in &names {
        cmd = cmd.mut_subcommand(name, hide_unused);
    }
    cmd.mut_subcommand("sweep", |mut sweep| {
        let names: Vec<String> = sweep.get_subcommands().map(|c| c.get_name().to_string()).collect();
        for name in &names {
            sweep = sweep.mut_subcommand(name, hide_unused);
        }
        sweep
    })
}

/// Where a hidden flag does apply, for the message that refuses it elsewhere.
fn applies_to(id: &str) -> String {
    flag_scopes().find(|s| s.id == id).map_or_else(|| "other commands".to_string(), FlagScope::applies_to)
}

/// Parses a command line with [`command`]; a flag hidden from the command's help is
/// refused, saying where it applies, instead of being silently ignored.
pub fn parse(argv: &[String]) -> Result<Cli, clap::Error> {
    use clap::parser::ValueSource;
    use clap::FromArgMatches;
    let cmd = command();
    let mut matches = cmd.clone().try_get_matches_from(argv)?;
    let (mut name, mut sub) = (String::new(), matches.subcommand());
    let mut c = &cmd;
    while let Some((n, m)) = sub {
        let Some(next) = c.find_subcommand(n) else { break };
        c = next;
        name = if name.is_empty() { n.to_string() } else { format!("{name} {n}") };
        if m.subcommand().is_none() {
            for arg in c.get_arguments().filter(|a| a.is_hide_set()) {
                let id = arg.get_id().as_str();
                if m.value_source(id) == Some(ValueSource::CommandLine) {
                    let flag = arg.get_long().map_or_else(
                        || arg.get_short().map_or_else(|| id.to_string(), |s| format!("-{s}")),
                        |l| format!("--{l}"),
                    );
                    return Err(clap::Error::raw(
                        clap::error::ErrorKind::ArgumentConflict,
                        format!("{flag} does not apply to {name}: it applies to {}", applies_to(id)),
                    ));
                }
            }
        }
        sub = m.subcommand();
    }
    Cli::from_arg_matches_mut(&mut matches)
}

flag_group! {
/// Flags every test takes.
#[derive(Args, Debug, Clone)]
pub struct TestArgs {
    /// Server to test against: a name or an address, IPv6 bare or in brackets (::1, [::1]; the
    /// port is -p's) [default: an embedded server on 127.0.0.1].
    #[arg(short = 'H', long = "host", value_name = "HOST", value_parser = parse_host)]
    host: Option<String>,
    /// Control port of the server.
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Local address the control and data connections leave from (netperf -L) [default: the
    /// kernel's choice by route].
    #[arg(short = 'L', long = "local", value_name = "ADDR")]
    local_bind: Option<std::net::IpAddr> [only "stream", "rr", "udp-stream", "udp-rr", "sendfile"; "crr's connections come and go on the ring"],
    /// File holding the server's pre-shared key (default: the RINGPERF_PSK variable, if set).
    #[arg(long, value_name = "FILE")]
    psk_file: Option<std::path::PathBuf>,
    /// Third party: this agent (a `ringperf serve --allow-third-party`) runs the client side
    /// against -H and sends back the report; this host carries no test traffic. -H is then
    /// the address the agent reaches the server at.
    #[arg(long = "from", value_name = "AGENT", value_parser = parse_host, requires = "host")]
    from: Option<String>,
    /// Control port of the --from agent.
    #[arg(long, value_name = "PORT", default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    from_port: u16,
    /// Test length in seconds (fractions allowed).
    #[arg(short = 'l', long = "length", value_name = "SECS", default_value = "10", value_parser = parse_seconds, allow_hyphen_values = true)]
    length_ms: u64 => spec.duration_ms,
    /// Each flow sends SIZE bytes and stops (udp-stream: in whole datagrams, rounded up);
    /// the test ends when they have arrived, or after -l at the latest (netperf's negative
    /// -l) [default: timed by -l].
    #[arg(long = "bytes", value_name = "SIZE", value_parser = parse_limit_size)]
    byte_limit: Option<u64> => spec.byte_limit [only "stream", "sendfile", "udp-stream"],
    /// Each flow makes N transactions and stops; the test ends with the last, or after -l at
    /// the latest (netperf's negative -l) [default: timed by -l].
    #[arg(long = "transactions", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    transaction_limit: Option<u64> => spec.transaction_limit [only "rr", "crr", "udp-rr"],
    /// Pin the local and the remote worker to these CPUs (one number pins both) [default: unpinned].
    #[arg(short = 'T', value_name = "LCPU,RCPU", value_parser = parse_cpus, conflicts_with = "cpu_list")]
    cpus: Option<(Option<usize>, Option<usize>)> => with { |spec, cpus| if let Some((l, r)) = *cpus {
        spec.local.cpus = l.into_iter().collect();
        spec.remote.cpus = r.into_iter().collect();
    } },
    /// Data connections in total, dealt round-robin over the worker threads.
    #[arg(long, value_name = "N", default_value_t = TestSpec::default().flows)]
    flows: u32 => spec.flows,
    /// Worker threads per side, each with its own ring.
    #[arg(long, value_name = "N", default_value_t = TestSpec::default().threads)]
    threads: u32 => spec.threads,
    /// Pin the workers of both sides to these CPUs, round-robin (e.g. 0,1 or 0-3) [default: unpinned].
    #[arg(long = "cpus", value_name = "LIST", value_parser = parse_cpu_list)]
    cpu_list: Option<CpuList> => with { |spec, list| if let Some(CpuList(cpus)) = list {
        spec.local.cpus = cpus.clone();
        spec.remote.cpus = cpus.clone();
    } },
    /// Pace the payload each side sends to this total rate in bits/s over all flows (k/m/g
    /// suffixes, powers of 10): a stream's sends; for rr, crr and udp-rr the requests, and the
    /// server paces its responses to it too. A token bucket per flow refilled by a ring
    /// timeout (the syscall engines: by the clock, sleeping while in debt) [default: unpaced].
    #[arg(short = 'b', value_name = "RATE", value_parser = parse_rate_arg)]
    rate: Option<u64> => spec.pacing.total_bps,
    /// Pace each flow to at most this rate in bits/s.
    #[arg(long, value_name = "RATE", value_parser = parse_rate_arg)]
    flow_rate: Option<u64> => spec.pacing.per_flow_bps,
    /// SO_MAX_PACING_RATE on every data socket, bits/s (the fq qdisc or TCP pacing enforces it).
    #[arg(long, value_name = "RATE", value_parser = parse_rate_arg)]
    fq_rate: Option<u64> => spec.socket.max_pacing_rate_bps,
    /// TCP_NODELAY on every data socket.
    #[arg(long)]
    nodelay: bool => spec.socket.nodelay [only "stream", "rr", "crr", "sendfile", "engines" as "the TCP tests"],
    /// SO_RCVLOWAT on a stream receiver's data sockets: bytes queued before a receive is
    /// woken; 1 wakes on any byte, the kernel's default [default: one provided buffer for
    /// multishot and bundle, 1 for recv and trunc].
    #[arg(long, value_name = "BYTES", value_parser = parse_one_size)]
    rcvlowat: Option<u32> => spec.socket.rcvlowat [only "stream", "sendfile", "engines"]
        // As the receiver's data sockets had it (TCP; empty when that side did not say).
        [keyval "RCVLOWAT" after "CRR_CONNECTIONS" = |r| match r.sender_and_receiver().1 {
            Some(rx) if !r.spec.workload.is_udp() && rx.socket.rcvlowat > 0 => rx.socket.rcvlowat.to_string(),
            _ => String::new(),
        }],
    /// TCP_MAXSEG on every data socket, set before the handshake.
    #[arg(long, value_name = "BYTES")]
    mss: Option<u32> => spec.socket.mss [only "stream", "rr", "crr", "sendfile", "engines" as "the TCP tests"],
    /// TCP_CORK on every data socket.
    #[arg(long)]
    cork: bool => spec.socket.cork [only "stream", "rr", "crr", "sendfile", "engines" as "the TCP tests"],
    /// IP_TOS (IPV6_TCLASS) byte on every data socket, e.g. 0x10.
    #[arg(long, value_name = "TOS", value_parser = parse_tos)]
    tos: Option<u8> => spec.socket.tos,
    /// Local socket buffers (SO_SNDBUF,SO_RCVBUF), e.g. 256K,256K [default: kernel autotuning].
    #[arg(short = 's', value_name = "SNDBUF,RCVBUF", value_parser = parse_sizes)]
    local_buffers: Option<(Option<u32>, Option<u32>)>
        => with { |spec, pair| spec.local.socket_buffers = socket_buffers(*pair) }
        [sweep "local_buffers", ':'],
    /// Remote socket buffers (SO_SNDBUF,SO_RCVBUF) [default: kernel autotuning].
    #[arg(short = 'S', value_name = "SNDBUF,RCVBUF", value_parser = parse_sizes)]
    remote_buffers: Option<(Option<u32>, Option<u32>)>
        => with { |spec, pair| spec.remote.socket_buffers = socket_buffers(*pair) }
        [sweep "remote_buffers", ':'],
    /// Throughput units: k/m/g are 10^3/10^6/10^9 bits/s, K/M/G are KiB/MiB/GiB per second.
    #[arg(short = 'f', value_name = "UNIT", default_value = "m", value_parser = ["k", "m", "g", "K", "M", "G"])]
    units: String,
    /// TCP congestion control for every data socket on both sides (e.g. cubic, bbr) [default:
    /// the system's].
    #[arg(long = "cc", value_name = "NAME")]
    congestion_control: Option<String> => spec.congestion_control [sweep "cc", ',']
        [only "stream", "rr", "crr", "sendfile", "engines" as "the TCP tests"]
        // What each side's data sockets really used, so the system default shows too.
        [keyval "LOCAL_CONG_CONTROL" = |r| r.local.socket.congestion_control.clone()]
        [keyval "REMOTE_CONG_CONTROL" = |r| r.remote.as_ref().map_or_else(String::new, |s| s.socket.congestion_control.clone())],
    /// Transactions in flight per flow: the client sends the first N at once and each
    /// response makes the next one due; a round trip counts from when it came due. netperf's
    /// -b counts those beyond the first (-b 3 is --burst 4).
    #[arg(long, value_name = "N", default_value_t = TestSpec::default().burst,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_engine::spec::MAX_BURST)))]
    burst: u32 => spec.burst [sweep "burst", ','] [only "rr", "udp-rr"]
        // netperf's meaning: requests beyond the first (0 without a burst). After the
        // profile's last figure: it came later, and CSV columns before it keep their places.
        [keyval "BURST_SIZE" after "REMOTE_NETWORK_SD_PER_SEGMENT" = |r| rr_only(r, r.spec.burst.saturating_sub(1))],
    /// Open loop: each flow sends R requests per second on a fixed schedule (k/m suffixes),
    /// whatever the responses do, with requests still unanswered kept in flight; a round
    /// trip counts from the request's intended send time, so a stall shows in every request
    /// it delayed. Not -b, which paces each side's payload in bits/s [default: closed loop].
    #[arg(long = "rate", value_name = "R", value_parser = parse_tx_rate, group = "open_loop")]
    tx_rate: Option<u64> => with { |spec, rate| if let Some(rate) = *rate {
        spec.open_loop = Some(OpenLoop { rate, total: false, backlog: DEFAULT_BACKLOG });
    } } [only "rr", "udp-rr"]
        // After BURST_SIZE, the last column before them, so no older CSV column moves.
        [keyval "OPEN_LOOP_TARGET_RATE" after "BURST_SIZE" = |r| open_loop_field(r, |o, _| format!("{:.1}", o.target_rate))]
        [keyval "OPEN_LOOP_ACHIEVED_RATE" after "OPEN_LOOP_TARGET_RATE" = |r| open_loop_field(r, |o, ns| format!("{:.1}", o.achieved_rate(ns)))]
        [keyval "OPEN_LOOP_SLIPS" after "OPEN_LOOP_ACHIEVED_RATE" = |r| open_loop_field(r, |o, _| o.slipped.to_string())]
        [keyval "OPEN_LOOP_SLIP_PERCENT" after "OPEN_LOOP_SLIPS" = |r| open_loop_field(r, |o, _| format!("{:.3}", 100.0 * o.slip_share()))]
        [keyval "OPEN_LOOP_DROPPED" after "OPEN_LOOP_SLIP_PERCENT" = |r| open_loop_field(r, |o, _| o.dropped.to_string())],
    /// Open loop at R requests per second over all flows, split evenly between them.
    #[arg(long, value_name = "R", value_parser = parse_tx_rate, group = "open_loop")]
    rate_total: Option<u64> => with { |spec, rate| if let Some(rate) = *rate {
        spec.open_loop = Some(OpenLoop { rate, total: true, backlog: DEFAULT_BACKLOG });
    } } [only "rr", "udp-rr"],
    /// Open loop: the most requests one flow keeps outstanding (due and not yet answered);
    /// a request that comes due beyond it is dropped from the schedule and counted [default:
    /// 1024].
    #[arg(long, value_name = "N", requires = "open_loop",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_engine::spec::MAX_BURST)))]
    backlog: Option<u32> => with { |spec, backlog| if let (Some(o), Some(b)) = (spec.open_loop.as_mut(), *backlog) {
        o.backlog = b;
    } } [only "rr", "udp-rr"],
    /// Accepted for netperf compatibility: local CPU is always measured.
    #[arg(short = 'c')]
    local_cpu: bool,
    /// Accepted for netperf compatibility: remote CPU is always measured.
    #[arg(short = 'C')]
    remote_cpu: bool,
    /// Print the whole report as JSON instead of the table.
    #[arg(long, conflicts_with_all = ["keyval", "csv"])]
    json: bool,
    /// Print one JSON object per line as the test runs: an interval object per interval
    /// (every -D, or the default interval), then the whole --json report on the last line.
    #[arg(long, conflicts_with_all = ["json", "keyval", "csv", "no_intervals"])]
    json_stream: bool [only "stream", "rr", "crr", "udp-stream", "udp-rr", "sendfile"; "engines and sweep print several reports"],
    /// Print NAME=value lines with netperf's omni names (see the README).
    #[arg(long, conflicts_with = "csv")]
    keyval: bool,
    /// Print a CSV header of the keyval names and one row per iteration.
    #[arg(long)]
    csv: bool,
    /// 0 drops headers and banners (netperf -P).
    #[arg(short = 'P', value_name = "0|1", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    banner: u8,
    #[command(flatten)]
    stats: StatsArgs,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    profile: ProfileArgs,
}
}

flag_group! {
/// The kernel cost profile of each side's window.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Kernel cost profile")]
pub struct ProfileArgs {
    /// Take the kernel cost profile and show its whole tables: every category's share and
    /// cost per unit, and the top kernel functions.
    #[arg(long = "profile", conflicts_with = "no_profile")]
    show: bool => with { |spec, show| spec.profile.enabled |= *show },
    /// Take no kernel cost profile: no sampling, no honest tool overhead, no network-path
    /// service demand.
    #[arg(long)]
    no_profile: bool => with { |spec, off| spec.profile.enabled &= !*off },
    /// Profile samples per second per CPU.
    #[arg(long = "profile-hz", value_name = "N", default_value_t = ringperf_engine::spec::DEFAULT_PROFILE_HZ,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_engine::spec::MAX_PROFILE_HZ)),
          conflicts_with = "no_profile")]
    hz: u32 => spec.profile.hz,
    /// Write each side's folded stacks to PREFIX.local.folded and PREFIX.remote.folded
    /// (the flame graph format; draw them with `ringperf plot`).
    #[arg(long = "profile-out", value_name = "PREFIX", conflicts_with = "no_profile")]
    out: Option<std::path::PathBuf> => with { |spec, out| if out.is_some() {
        spec.profile.enabled = true;
        spec.profile.folded = true;
    } },
}
}

flag_group! {
/// Iterations, confidence, intervals and latency recording.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Statistics")]
pub struct StatsArgs {
    /// Iterate: at most MAX and at least MIN full runs (netperf -i); one number sets both
    /// [default: 1 run].
    #[arg(short = 'i', value_name = "MAX,MIN", value_parser = parse_iterations)]
    iterations: Option<(u32, u32)>,
    /// Confidence LEVEL (percent) and full interval WIDTH (percent of the mean), netperf -I
    /// (-I 99,5 is ±2.5 %); implies -i 10,3 when -i is not given.
    #[arg(short = 'I', value_name = "LEVEL,WIDTH", value_parser = parse_confidence)]
    confidence: Option<(f64, f64)>,
    /// Print a line per interval of SECS while the test runs (netperf demo mode). Runs over
    /// 10 s print one per second on a terminal by default.
    #[arg(short = 'D', value_name = "SECS", value_parser = parse_interval)]
    interval: Option<u64>,
    /// Take no interval samples (no within-run confidence, no interval series in the JSON).
    #[arg(long, conflicts_with = "interval")]
    no_intervals: bool,
    /// Do not time transactions (rr): saves one clock read per transaction.
    #[arg(long)]
    no_latency: bool => with { |spec, off| spec.record_latency = !off }
        [only "rr", "crr", "udp-rr"; "the tests that time transactions"],
    /// Print a text histogram of the round trips (rr).
    #[arg(long)]
    histogram: bool [only "rr", "crr", "udp-rr"; "the tests that time transactions"],
    /// Print the kernel counters in full: per-CPU split, softirqs and softnet, the device's
    /// interrupt lines and driver counters, every flow's placement.
    #[arg(long)]
    verbose: bool,
}
}

flag_group! {
/// Engines and ring tuning, on both sides.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Engines and ring tuning")]
pub struct EngineArgs {
    /// How the sending side puts payload on the socket (copy, zc, zc-msg, splice; without a
    /// ring, the classic references: syscall, send(2); msg-zerocopy, MSG_ZEROCOPY for stream);
    /// crr sends each request and response this way on the connection it is for [default:
    /// the harness's (see --harness): syscall or copy].
    #[arg(long, value_name = "ENGINE", value_parser = parse_send_engine)]
    send_engine: Option<SendEngine>
        [sweep "send_engine", ',']
        [only "stream", "rr", "crr", "udp-stream", "udp-rr", "engines"; "sendfile always splices"]
        [keyval "SEND_ENGINE" after "CONFIDENCE_ITERATION" = |r| r.engine_pair().0.name().into()],
    /// How the receiving side takes payload off the socket (recv, multishot, bundle, trunc;
    /// without a ring: syscall, recv(2); zerocopy-receive, TCP_ZEROCOPY_RECEIVE for stream)
    /// [default: a named --send-engine's harness where one loop sends and receives (rr, crr,
    /// UDP) or the send engine is classic; else the harness's: syscall, or on the ring
    /// multishot for rr (a standing receive, never re-armed) and recv otherwise].
    #[arg(long, value_name = "ENGINE", value_parser = parse_recv_engine)]
    recv_engine: Option<RecvEngine>
        [sweep "recv_engine", ',']
        [keyval "RECV_ENGINE" after "SEND_ENGINE" = |r| r.engine_pair().1.name().into()],
    /// Run both sides on the io_uring engines or on the classic send(2)/recv(2) loops,
    /// whatever the default rule picks; a named --send-engine or --recv-engine still wins
    /// [default: classic where one TCP transaction waits alone: rr or crr closed loop, one
    /// flow per worker, no burst, nothing the classic loops lack (README: "The default
    /// engines"); io-uring otherwise].
    #[arg(long, value_name = "io-uring|classic", value_parser = parse_harness)]
    harness: Option<Harness> [only "stream", "rr", "crr", "udp-stream", "udp-rr"; "sendfile always splices, engines runs both"]
        // Why the send engine (and the receive engine, when it differs) is the one it is;
        // at the end, so no older CSV column moves.
        [keyval "ENGINE_REASON" after "ONE_WAY_CLOCK_UNCERTAINTY" = |r| crate::render::engine_choice::keyval(r)],
    /// Fill the payload with a pattern and check every received byte (its cost is reported).
    #[arg(long)]
    verify: bool => spec.verify [only "stream", "rr", "crr", "sendfile", "engines"; "the UDP tests use their own operations"],
    /// Fail (exit 1) if the kernel copied any zero-copy send.
    #[arg(long = "require-zc")]
    require_zero_copy: bool => spec.require_zero_copy
        [only "stream", "rr", "crr", "sendfile", "engines"; "the UDP tests use their own operations"],
    /// Linked sends in flight per flow in a stream, submitted and reaped together
    /// [default: 4; 32 for splice, whose chains run on io-wq and wake the worker once per
    /// chain; 32 datagrams for udp-stream].
    #[arg(long, value_name = "N")]
    send_depth: Option<u32> [only "stream", "sendfile", "engines", "udp-stream"],
    /// Linked receives in flight per flow in a stream (recv and trunc), each waiting for a
    /// whole -M (MSG_WAITALL), reaped together; 1 is one receive at a time that takes what
    /// has arrived, as netperf's recv does [default: 4 for a stream, 1 otherwise].
    #[arg(long, value_name = "N")]
    recv_depth: Option<u32> [only "stream", "sendfile", "engines"],
    /// Provided buffers per ring (multishot, bundle); a power of two [default: 256, or 4
    /// per flow if more; they share one landing area. With --verify each has its own:
    /// 1 MiB worth of --buf-size, so they stay in cache, and at least 4 per flow; 16 to 256].
    #[arg(long, value_name = "N")]
    buf_count: Option<u32> [only "stream", "rr", "crr", "sendfile", "engines"; "the UDP tests use their own operations"],
    /// Bytes per provided buffer [default: the receive size -M (rr, crr: the larger
    /// message), 4K to 64K].
    #[arg(long, value_name = "SIZE", value_parser = parse_one_size)]
    buf_size: Option<u32> [only "stream", "rr", "crr", "sendfile", "engines"; "the UDP tests use their own operations"],
    /// Submission queue entries per ring; a power of two.
    #[arg(long, value_name = "N", default_value_t = TestSpec::default().ring.sq_entries)]
    sq_entries: u32 => spec.ring.sq_entries,
    /// Submit as soon as this many SQEs are queued [default: --sq-entries].
    #[arg(long, value_name = "N")]
    sq_batch: Option<u32>,
    /// Completions to wait for per io_uring_enter (needs --cq-wait-us above 1).
    #[arg(long, value_name = "N", default_value_t = TestSpec::default().ring.cq_batch)]
    cq_batch: u32 => spec.ring.cq_batch,
    /// With --cq-batch: return after this many microseconds once one completion is ready.
    #[arg(long, value_name = "US", default_value_t = TestSpec::default().ring.cq_wait_us)]
    cq_wait_us: u32 => spec.ring.cq_wait_us,
    /// Use a kernel SQ polling thread (instead of DEFER_TASKRUN), optionally pinned to CPU
    /// (--sqpoll=1).
    #[arg(long, value_name = "CPU", num_args = 0..=1, require_equals = true, default_missing_value = "any")]
    sqpoll: Option<String>,
    /// When the kernel runs the rings' task work (receive and poll completions): deferred
    /// (DEFER_TASKRUN: only while the worker waits, in one batch) or cooperative
    /// (COOP_TASKRUN: at the worker's next kernel entry) [default: deferred; cooperative for
    /// a splice stream, whose steps run on io-wq].
    #[arg(long, value_name = "MODE", value_parser = parse_task_run, conflicts_with = "sqpoll")]
    task_run: Option<TaskRun> => spec.ring.task_run,
    /// NAPI busy polling per wait, in microseconds.
    #[arg(long, value_name = "US")]
    napi_busy_poll_us: Option<u32> => spec.ring.napi_busy_poll_us,
    /// Do not register the ring fd (every io_uring_enter then looks the fd up).
    #[arg(long)]
    no_registered_ring: bool => with { |spec, off| spec.ring.registered_ring_fd = !off },
    /// Do not register the data sockets as fixed files.
    #[arg(long)]
    no_fixed_files: bool => with { |spec, off| spec.ring.fixed_files = !off },
}
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

fn parse_idle(s: &str) -> Result<u64, String> {
    let secs: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!(
            "--idle {s} leaves no idle phase to compare the loaded one with: give at least one interval, like --idle 2"
        ));
    }
    parse_seconds(s)
}

fn parse_load_kind(s: &str) -> Result<LoadKind, String> {
    LoadKind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
        let names: Vec<&str> = LoadKind::ALL.iter().map(|k| k.name()).collect();
        format!("unknown load '{s}': use one of {}", names.join(", "))
    })
}

/// A size field that only request/response has (empty for a stream).
fn rr_only(r: &TestReport, v: u32) -> String {
    if r.spec.workload.is_transactional() {
        v.to_string()
    } else {
        String::new()
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

fn parse_chart_figure(s: &str) -> Result<String, String> {
    let names = ringperf_engine::figures::names();
    if names.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!("unknown figure '{s}': use {}", names.join(", ")))
    }
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

/// A figure `ringperf diff` judges, by the names `--fail-on` takes (the figures' registry).
fn parse_figure(s: &str) -> Result<String, String> {
    use ringperf_engine::figures;
    if figures::judged_names().any(|n| n == s) {
        Ok(s.to_string())
    } else {
        let headline: Vec<&str> = figures::judged().filter_map(|f| f.name).collect();
        Err(format!(
            "unknown figure '{s}': use {}, or a profile category's cost (local_cost_tcp, remote_cost_copy, ...)",
            headline.join(", ")
        ))
    }
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

fn msg(e: Error) -> String {
    e.to_string()
}

fn parse_label(s: &str) -> Result<String, String> {
    ringperf_engine::payload::check_label(s).map_err(msg)?;
    Ok(s.to_string())
}

fn parse_payload_file(s: &str) -> Result<PayloadFile, String> {
    PayloadFile::parse(s).map_err(msg)
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

/// -H: a name or an address; an IPv6 address may come in brackets (`[::1]`), which are
/// dropped for the lookup. The port is -p's: a `host:port` is refused with that hint rather
/// than looked up as a name.
fn parse_host(s: &str) -> Result<String, String> {
    let t = s.trim();
    if let Some(inner) = t.strip_prefix('[') {
        return match inner.split_once(']') {
            Some((addr, "")) if addr.parse::<std::net::Ipv6Addr>().is_ok() => Ok(addr.to_string()),
            Some((addr, rest)) if rest.starts_with(':') && addr.parse::<std::net::Ipv6Addr>().is_ok() => {
                Err(format!("give the port with -p: -H {addr} -p {}", &rest[1..]))
            }
            _ => Err(format!("'{s}' is not a bracketed IPv6 address: give it as [::1] or ::1")),
        };
    }
    if t.is_empty() {
        return Err("give a host name or address, like 192.0.2.1, ::1 or server.example".into());
    }
    // One colon is host:port; more are an IPv6 address.
    if let Some((host, port)) = t.split_once(':').filter(|_| t.matches(':').count() == 1) {
        return Err(format!("give the port with -p: -H {host} -p {port}"));
    }
    Ok(t.to_string())
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

/// A pair flag takes one or two values: a third is a typo, not something to ignore.
fn two_at_most(s: &str) -> Result<(), String> {
    if s.matches(',').count() > 1 {
        return Err(format!("'{s}' has more than two values: give two, separated by one ','"));
    }
    Ok(())
}

/// SIZE,SIZE (one number sets both, either may be left out); a pair with neither side is
/// refused rather than silently meaning "the defaults".
fn parse_sizes(s: &str) -> Result<(Option<u32>, Option<u32>), String> {
    two_at_most(s)?;
    let pair = parse_pair(s, |p| check_size("size", parse_size(p)?)).map_err(msg)?;
    if pair == (None, None) {
        return Err(format!(
            "'{s}' has no size on either side of the ',': give A,B, A, or ,B (e.g. 64K,64K)"
        ));
    }
    Ok(pair)
}

fn parse_iterations(s: &str) -> Result<(u32, u32), String> {
    two_at_most(s)?;
    let (max, min) = parse_pair(s, |p| {
        p.trim().parse::<u32>().map_err(|_| Error::Usage(format!("'{p}' is not a number of iterations")))
    })
    .map_err(msg)?;
    let max = max.ok_or("give at least MAX, as in -i 10,3")?;
    if !(1..=100).contains(&max) {
        return Err(format!("MAX {max}: use 1 to 100 iterations"));
    }
    let min = min.unwrap_or(max);
    if min == 0 {
        return Err(format!(
            "MIN 0 in '{s}': at least one run is made; give MIN from 1 to MAX, as in -i {max},1"
        ));
    }
    if min > max {
        return Err(format!(
            "MIN {min} is above MAX {max}: the order is MAX,MIN (netperf's), as in -i {min},{max}"
        ));
    }
    Ok((max, min))
}

fn parse_confidence(s: &str) -> Result<(f64, f64), String> {
    two_at_most(s)?;
    let num = |p: &str| p.trim().parse::<f64>().map_err(|_| Error::Usage(format!("'{p}' is not a number")));
    let (level, width) = parse_pair(s, num).map_err(msg)?;
    let level = level.unwrap_or(99.0);
    let width = width.unwrap_or(5.0);
    if !(50.0..100.0).contains(&level) {
        return Err(format!("confidence level {level} %: use 50 to 99.99"));
    }
    if !(width > 0.0 && width <= 100.0) {
        return Err(format!("interval width {width} %: use more than 0 and at most 100"));
    }
    Ok((level, width))
}

fn parse_interval(s: &str) -> Result<u64, String> {
    let secs: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(0.01..=3600.0).contains(&secs) {
        return Err(format!("interval '{s}': use 0.01 to 3600 seconds"));
    }
    Ok((secs * 1000.0).round() as u64)
}

fn parse_send_engine(s: &str) -> Result<SendEngine, String> {
    SendEngine::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
        let names: Vec<_> = SendEngine::ALL.iter().map(|e| e.name()).collect();
        format!("unknown send engine '{s}': use one of {}", names.join(", "))
    })
}

fn parse_close_first(s: &str) -> Result<CloseFirst, String> {
    CloseFirst::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| {
        let names: Vec<&str> = CloseFirst::ALL.iter().map(|c| c.name()).collect();
        format!("unknown side '{s}' for --close-first: use one of {}", names.join(", "))
    })
}

fn parse_task_run(s: &str) -> Result<TaskRun, String> {
    TaskRun::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| {
        let names: Vec<&str> = TaskRun::ALL.iter().map(|t| t.name()).collect();
        format!("unknown task-run mode '{s}': use one of {}", names.join(", "))
    })
}

fn parse_harness(s: &str) -> Result<Harness, String> {
    Harness::ALL.into_iter().find(|h| h.name() == s).ok_or_else(|| {
        let names: Vec<&str> = Harness::ALL.iter().map(|h| h.name()).collect();
        format!("unknown harness '{s}': use one of {}", names.join(", "))
    })
}

fn parse_recv_engine(s: &str) -> Result<RecvEngine, String> {
    RecvEngine::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
        let names: Vec<_> = RecvEngine::ALL.iter().map(|e| e.name()).collect();
        format!("unknown receive engine '{s}': use one of {}", names.join(", "))
    })
}

/// Requests per second: a whole number with an optional k or m suffix (powers of 10).
fn parse_tx_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    let rate = num.parse::<f64>().map(|v| v * mult).unwrap_or(f64::NAN);
    if !(1.0..=1e9).contains(&rate) {
        return Err(format!("invalid rate '{s}': use requests per second from 1 to 1000m, like 2000 or 50k"));
    }
    Ok(rate.round() as u64)
}

/// An open-loop figure of the client's side, empty for a closed-loop run.
fn open_loop_field(r: &TestReport, value: impl Fn(&OpenLoopReport, u64) -> String) -> String {
    match r.local.rr.and_then(|rr| rr.open_loop) {
        Some(o) => value(&o, r.local.elapsed_ns),
        None => String::new(),
    }
}

fn parse_rate_arg(s: &str) -> Result<u64, String> {
    ringperf_engine::units::parse_rate(s).map_err(msg)
}

fn parse_tos(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => t.parse::<u8>(),
    };
    v.map_err(|_| format!("'{s}' is not a TOS byte: use 0 to 255 or 0x00 to 0xff"))
}

/// A parsed `--cpus` list (a newtype, so clap takes it as one value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// `0,1,4-7`: CPU numbers and inclusive ranges.
fn parse_cpu_list(s: &str) -> Result<CpuList, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |p: &str| p.trim().parse::<usize>().map_err(|_| format!("'{p}' is not a CPU number"));
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b || b - a > 1024 {
                    return Err(format!("CPU range '{part}' is not a range from low to high"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err("give at least one CPU, like 0,1 or 0-3".into());
    }
    Ok(CpuList(out))
}

fn parse_port_range(s: &str) -> Result<(u16, u16), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("'{s}' is not a port range: give LO-HI, like 40000-49999"))?;
    let port =
        |p: &str| p.trim().parse::<u16>().map_err(|_| format!("'{p}' is not a port number (1 to 65535)"));
    let (lo, hi) = (port(a)?, port(b)?);
    if lo == 0 || lo > hi {
        return Err(format!("'{s}' is not a range from low to high: use 1 <= LO <= HI"));
    }
    Ok((lo, hi))
}

fn parse_cpus(s: &str) -> Result<(Option<usize>, Option<usize>), String> {
    two_at_most(s)?;
    let pair = parse_pair(s, |p| {
        p.trim().parse::<usize>().map_err(|_| Error::Usage(format!("'{p}' is not a CPU number")))
    })
    .map_err(msg)?;
    if pair == (None, None) {
        return Err(format!("'{s}' names no CPU: give LCPU,RCPU, one CPU for both, or ,RCPU"));
    }
    Ok(pair)
}

/// The README's table of the flags every test takes, rendered from their clap definitions
/// above (help, value names, defaults, whether `sweep` takes a list): `ringperf --help-markdown`
/// prints it, and a test fails when the README's copy differs.
pub fn flags_markdown() -> String {
    use clap::Args as _;
    let mut cmd = TestArgs::augment_args(clap::Command::new("test"));
    cmd.build();
    let lists = sweep_lists();
    let mut o = String::from("| flag | meaning | default | sweep |\n|---|---|---|---|\n");
    for arg in cmd.get_arguments() {
        let (short, long) =
            (arg.get_short().map(|s| format!("-{s}")), arg.get_long().map(|l| format!("--{l}")));
        let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
        let value = match arg.get_value_names().and_then(|v| v.first()) {
            Some(v) if takes_value && arg.get_num_args().is_some_and(|n| n.min_values() == 0) => {
                format!("[={v}]")
            }
            Some(v) if takes_value => format!(" {v}"),
            _ => String::new(),
        };
        let flag = match (&short, &long) {
            _ if arg.get_id() == "help" => continue,
            (Some(s), Some(l)) => format!("`{s}`, `{l}{value}`"),
            (Some(n), None) | (None, Some(n)) => format!("`{n}{value}`"),
            (None, None) => continue,
        };
        let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        // A "[default: ...]" at the end of the help is the default column's text.
        let (meaning, default) = match help.rfind("[default: ") {
            Some(at) if help.ends_with(']') => {
                (help[..at].trim_end().to_string(), help[at + 10..help.len() - 1].to_string())
            }
            _ => {
                let values: Vec<String> =
                    arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
                let default = if takes_value { values.join(",") } else { String::new() };
                (help, default)
            }
        };
        let sweep = lists
            .iter()
            .find(|l| Some(l.flag.as_str()) == short.as_deref() || Some(l.flag.as_str()) == long.as_deref())
            .map_or("", |l| if l.separator == ',' { "comma list" } else { "':' list" });
        let cell = |s: &str| s.replace('|', "\\|");
        o.push_str(&format!("| {} | {} | {} | {sweep} |\n", cell(&flag), cell(&meaning), cell(&default)));
    }
    o
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

    /// The README's flag table is the one the definitions render; `ringperf --help-markdown`
    /// prints the table to paste between the markers.
    #[test]
    fn readme_flag_table_is_rendered_from_the_definitions() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"));
        let (begin, end) = ("<!-- flags: ringperf --help-markdown -->\n", "<!-- end of flags -->");
        let start = readme.find(begin).expect("README has the flags marker") + begin.len();
        let len = readme[start..].find(end).expect("README has the end-of-flags marker");
        assert!(
            readme[start..start + len] == flags_markdown(),
            "README's flag table differs from the flag definitions: regenerate it with `ringperf --help-markdown`"
        );
    }

    /// A misspelt command in an `[only ...]` mark would hide the flag everywhere.
    #[test]
    fn only_marks_name_commands_that_exist() {
        let cmd = command();
        for scope in flag_scopes() {
            for name in scope.commands {
                assert!(cmd.find_subcommand(name).is_some(), "--{}: no command {name}", scope.id);
            }
        }
    }

    /// Help and refusal come from the same mark: a flag hidden from a command's help is the
    /// one refused there, with where its mark says it applies.
    #[test]
    fn a_flag_is_hidden_and_refused_where_its_mark_leaves_it_out() {
        let refusal = |args: &[&str]| {
            let argv: Vec<String> = ["ringperf"].iter().chain(args).map(|a| a.to_string()).collect();
            parse(&argv).map(|_| ()).expect_err("refused").to_string()
        };
        let hidden = |path: &[&str], id: &str| {
            let mut c = command();
            for name in path {
                c = c.find_subcommand(name).expect("a command").clone();
            }
            let is_hidden = c.get_arguments().find(|a| a.get_id() == id).expect("the flag").is_hide_set();
            is_hidden
        };
        assert!(refusal(&["udp-rr", "--send-depth", "4"]).contains(
            "--send-depth does not apply to udp-rr: it applies to stream, sendfile, engines and udp-stream"
        ));
        assert!(hidden(&["udp-rr"], "send_depth") && !hidden(&["udp-stream"], "send_depth"));
        assert!(refusal(&["udp-stream", "--cc", "cubic"]).contains("it applies to the TCP tests"));
        assert!(refusal(&["sweep", "sendfile", "--send-engine", "zc"])
            .contains("does not apply to sweep sendfile: it applies to stream, rr, crr, udp-stream, udp-rr and engines (sendfile always splices)"));
        assert!(
            hidden(&["sweep", "sendfile"], "send_engine") && !hidden(&["sweep", "stream"], "send_engine")
        );
        assert!(refusal(&["udp-rr", "--verify"])
            .contains("stream, rr, crr, sendfile and engines (the UDP tests use their own operations)"));
        assert!(parse(
            &["ringperf", "crr", "--send-engine", "zc", "--recv-engine", "bundle", "--verify"]
                .map(String::from)
        )
        .is_ok());
        assert!(parse(&["ringperf".to_string(), "rr".to_string(), "--histogram".to_string()]).is_ok());
    }
}
