//! The flags every test takes (`TestArgs`) and the groups it flattens: statistics, engines
//! and ring tuning, the kernel cost profile.

use clap::Args;

use ringperf_core::harness::Harness;
use ringperf_core::report::OpenLoopReport;
use ringperf_core::spec::{
    OpenLoop, ProfileSpec, RecvEngine, SendEngine, SocketBuffers, TaskRun, DEFAULT_BACKLOG,
};
use ringperf_core::{TestReport, TestSpec};

use super::registry::{flag_group, rr_only};
use super::values::{
    parse_confidence, parse_cpu_list, parse_cpus, parse_harness, parse_host, parse_interval,
    parse_iterations, parse_limit_size, parse_local, parse_one_size, parse_rate_arg, parse_recv_engine,
    parse_seconds, parse_send_engine, parse_sizes, parse_task_run, parse_tos, parse_tx_rate, CpuList,
    HostPort,
};

/// Both sides' socket buffers of a `-s`/`-S` pair, either side left to the kernel.
fn socket_buffers(pair: Option<(Option<u32>, Option<u32>)>) -> SocketBuffers {
    let (send, recv) = pair.unwrap_or((None, None));
    SocketBuffers { send, recv }
}

/// An open-loop figure of the client's side, empty for a closed-loop run.
fn open_loop_field(r: &TestReport, value: impl Fn(&OpenLoopReport, u64) -> String) -> String {
    match r.local.rr.and_then(|rr| rr.open_loop) {
        Some(o) => value(&o, r.local.elapsed_ns),
        None => String::new(),
    }
}

flag_group! {
/// Flags every test takes.
#[derive(Args, Debug, Clone)]
pub struct TestArgs {
    /// Server to test against: a name or an address, with its control port or without
    /// (server.example, 192.0.2.1:12866, ::1, [::1]:12866) [default: an embedded server on
    /// 127.0.0.1].
    #[arg(short = 'H', long = "host", value_name = "HOST[:PORT]", value_parser = parse_host)]
    host: Option<HostPort>,
    /// Control port of the server, when -H names none [default: 12866].
    #[arg(short = 'p', long = "port", value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    /// Local address the control and data connections leave from (netperf -L) [default: the
    /// kernel's choice by route].
    #[arg(short = 'L', long = "local", value_name = "ADDR", value_parser = parse_local)]
    local_bind: Option<std::net::IpAddr> [only "stream", "rr", "udp-stream", "udp-rr", "sendfile"; "crr's connections come and go on the ring"],
    /// File holding the server's pre-shared key (default: the RINGPERF_PSK variable, if set).
    #[arg(long, value_name = "FILE")]
    psk_file: Option<std::path::PathBuf>,
    /// Third party: this agent (a `ringperf serve --allow-third-party`, as -H takes a host,
    /// with its control port or without) runs the client side against -H and sends back the
    /// report; this host carries no test traffic. -H is then the address the agent reaches
    /// the server at.
    #[arg(long = "from", value_name = "AGENT[:PORT]", value_parser = parse_host, requires = "host")]
    from: Option<HostPort>,
    /// Control port of the --from agent, when --from names none [default: 12866].
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    from_port: Option<u16>,
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
    /// Multipath TCP: every data socket on both sides is IPPROTO_MPTCP, the server listens
    /// MPTCP for this test, and the report says per connection whether it stayed MPTCP or
    /// fell back to TCP, its subflows and the bytes each carried (subflows beyond the first
    /// come from the kernel's path manager: `ip mptcp endpoint`, see tools/lab).
    #[arg(long)]
    mptcp: bool => spec.socket.mptcp [only "stream", "rr", "crr", "sendfile", "engines" as "the TCP tests"],
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
          value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_core::spec::MAX_BURST)))]
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
          value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_core::spec::MAX_BURST)))]
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
    /// Print NAME=value lines with netperf's omni names (see docs/confidence.md).
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
    /// Take the kernel cost profile at the full rate (--profile-hz) and show its whole
    /// tables: every category's share and cost per unit, and the top kernel functions.
    #[arg(long = "profile", conflicts_with = "no_profile")]
    show: bool => with { |spec, show| if *show {
        spec.profile.enabled = true;
        spec.profile.hz = ringperf_core::spec::DEFAULT_PROFILE_HZ;
    } },
    /// Take no kernel cost profile: no sampling, no tool overhead with its kernel share, no
    /// network-path service demand (a test otherwise takes a light one).
    #[arg(long)]
    no_profile: bool => with { |spec, off| if *off { spec.profile = ProfileSpec::default() } },
    /// Write each side's folded stacks to PREFIX.local.folded and PREFIX.remote.folded
    /// (the flame graph format; draw them with `ringperf plot`); takes the full-rate profile.
    #[arg(long = "profile-out", value_name = "PREFIX", conflicts_with = "no_profile")]
    out: Option<std::path::PathBuf> => with { |spec, out| if out.is_some() {
        spec.profile.enabled = true;
        spec.profile.hz = ringperf_core::spec::DEFAULT_PROFILE_HZ;
        spec.profile.folded = true;
    } },
    /// Profile samples per second per CPU [default: 49, the light profile a test takes
    /// without --profile; 999 with --profile or --profile-out].
    #[arg(long = "profile-hz", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(ringperf_core::spec::MAX_PROFILE_HZ)),
          conflicts_with = "no_profile")]
    hz: Option<u32> => with { |spec, hz| if let Some(hz) = *hz { spec.profile.hz = hz } },
}
}

impl ProfileArgs {
    /// `spec` with the light profile a single test takes when no profile flag says otherwise
    /// (`PROFILE_BY_DEFAULT`, at `LIGHT_PROFILE_HZ`): what measures the default report's tool
    /// overhead with its kernel share. Sweeps, the engines table, plans and the netperf
    /// drop-in show nothing of it, so they take none unless asked.
    pub fn with_default(&self, spec: &TestSpec) -> TestSpec {
        let mut spec = spec.clone();
        if ringperf_core::spec::PROFILE_BY_DEFAULT && !self.no_profile && !spec.profile.enabled {
            spec.profile.enabled = true;
            spec.profile.hz = self.hz.unwrap_or(ringperf_core::spec::LIGHT_PROFILE_HZ);
        }
        spec
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
    /// Print the whole report: ring, TCP_INFO, offloads, engines' counters, the profile's
    /// note and the kernel counters (CPU split, softirqs, interrupts, NIC counters, placement)
    /// of each side; twice (-vv) also the kernel counters' per-CPU, per-line and per-queue
    /// tables [default: the short report: the table, how sure, the tool overhead, zero-copy
    /// proof and what makes the figures doubtful].
    #[arg(short = 'v', long, action = clap::ArgAction::Count)]
    verbose: u8,
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
    /// multishot for rr and stream (a standing receive, never re-armed) and recv otherwise].
    #[arg(long, value_name = "ENGINE", value_parser = parse_recv_engine)]
    recv_engine: Option<RecvEngine>
        [sweep "recv_engine", ',']
        [keyval "RECV_ENGINE" after "SEND_ENGINE" = |r| r.engine_pair().1.name().into()],
    /// Run both sides on the io_uring engines or on the classic send(2)/recv(2) loops,
    /// whatever the default rule picks; a named --send-engine or --recv-engine still wins
    /// [default: classic where one TCP transaction waits alone: rr or crr closed loop, one
    /// flow per worker, no burst, nothing the classic loops lack (docs/figures.md: "The default
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
