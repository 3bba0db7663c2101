//! TestSpec: everything both sides need to run one test. The client builds it from the
//! command line; what goes to the other host is its wire form ([`WireSpec`]),
//! the same settings with payloads that can name no path.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::payload::{Payload, WirePayload};
use crate::retype::retype;
use crate::setting::Setting;
use crate::spec_error::SpecError;
use crate::text::peer_text;
use crate::units::{check_size, MAX_SIZE};

/// What traffic pattern to run.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// Bulk TCP transfer (netperf TCP_STREAM, or TCP_MAERTS when reversed).
    Stream,
    /// TCP request/response, `burst` transactions in flight per flow (netperf TCP_RR).
    Rr,
    /// TCP connect, request, response, close, repeated (netperf TCP_CRR).
    Crr,
    /// UDP datagrams with sequence numbers, client to server (netperf UDP_STREAM).
    UdpStream,
    /// UDP request/response with a per-transaction timeout and retransmission (netperf UDP_RR).
    UdpRr,
}

impl Workload {
    /// Workloads whose data sockets are UDP.
    pub fn is_udp(self) -> bool {
        matches!(self, Workload::UdpStream | Workload::UdpRr)
    }

    /// Workloads that count transactions (request/response cycles).
    pub fn is_transactional(self) -> bool {
        matches!(self, Workload::Rr | Workload::Crr | Workload::UdpRr)
    }
}

/// TCP_CRR settings: how each cycle's connection ends and which client ports it uses.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct CrrOptions {
    /// SO_LINGER 0 on the client: close sends RST, so no TIME_WAIT is left behind.
    pub linger0: bool,
    /// Bind client sockets to ports from this inclusive range, round-robin, instead of
    /// the kernel's ephemeral choice.
    pub client_ports: Option<(u16, u16)>,
    /// Which side closes each connection first. Left out of the spec when it is the
    /// server (netperf's order), so an older server still takes the default.
    #[serde(default, skip_serializing_if = "CloseFirst::is_server")]
    pub close_first: CloseFirst,
}

/// Which end of a crr connection closes first, once the response is out. netperf's
/// netserver closes right after sending its response (HTTP/1.0's order: the server ends
/// in TIME_WAIT); neper's server waits for the client's close (the client does).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CloseFirst {
    /// The server closes once its response is sent (netperf TCP_CRR).
    #[default]
    Server,
    /// The server waits for the client's close (neper tcp_crr).
    Client,
}

impl CloseFirst {
    pub const ALL: [CloseFirst; 2] = [CloseFirst::Server, CloseFirst::Client];

    pub fn name(self) -> &'static str {
        match self {
            CloseFirst::Server => "server",
            CloseFirst::Client => "client",
        }
    }

    fn is_server(&self) -> bool {
        *self == CloseFirst::Server
    }
}

/// UDP settings of udp-stream and udp-rr.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UdpOptions {
    /// UDP_SEGMENT: each send carries several datagrams of this many bytes (GSO).
    pub gso_segment: Option<u32>,
    /// UDP_GRO on the receiving sockets: one receive may return several datagrams.
    pub gro: bool,
    /// udp-rr: a transaction without a response after this long is sent again.
    pub timeout_us: u32,
}

impl Default for UdpOptions {
    fn default() -> Self {
        UdpOptions { gso_segment: None, gro: false, timeout_us: 10_000 }
    }
}

/// Bytes of the sequence number at the start of every UDP datagram.
pub const UDP_SEQ_LEN: u32 = 8;
/// Bytes a UDP datagram needs to carry its sender's send stamp (8 bytes, little endian,
/// CLOCK_MONOTONIC ns on the client's clock) after its sequence number: smaller datagrams
/// go unstamped, and their direction's one-way delay is not measured.
pub const UDP_STAMPED_LEN: u32 = UDP_SEQ_LEN + 8;
/// The largest UDP payload (IPv4: 65535 - 20 - 8).
pub const MAX_UDP_PAYLOAD: u32 = 65_507;
/// The kernel sends at most this many segments in one UDP_SEGMENT send (UDP_MAX_SEGMENTS).
pub const MAX_GSO_SEGMENTS: u32 = 64;

/// Which way the payload of a stream test flows.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

/// How a side puts payload on a socket.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SendEngine {
    /// IORING_OP_SEND from a user buffer: the kernel copies the payload.
    #[default]
    Copy,
    /// IORING_OP_SEND_ZC from a registered arena, REPORT_USAGE on every send.
    Zc,
    /// IORING_OP_SENDMSG_ZC from a registered arena, same accounting as `zc`.
    ZcMsg,
    /// File (or memfd) -> pipe -> socket with IORING_OP_SPLICE.
    Splice,
    /// Classic send(2), no ring: blocking with one flow per worker, non-blocking over epoll
    /// with several (the reference the io_uring engines are measured against).
    Syscall,
    /// Classic zero copy, no ring: SO_ZEROCOPY and send(MSG_ZEROCOPY), completions read
    /// from the socket's error queue (stream only).
    MsgZerocopy,
}

impl SendEngine {
    pub const ALL: [SendEngine; 6] = [
        SendEngine::Copy,
        SendEngine::Zc,
        SendEngine::ZcMsg,
        SendEngine::Splice,
        SendEngine::Syscall,
        SendEngine::MsgZerocopy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SendEngine::Copy => "copy",
            SendEngine::Zc => "zc",
            SendEngine::ZcMsg => "zc-msg",
            SendEngine::Splice => "splice",
            SendEngine::Syscall => "syscall",
            SendEngine::MsgZerocopy => "msg-zerocopy",
        }
    }

    /// True for the classic engines that run without a ring.
    pub fn is_classic(self) -> bool {
        matches!(self, SendEngine::Syscall | SendEngine::MsgZerocopy)
    }

    /// True for the engines whose sends produce zero-copy notifications.
    pub fn is_zero_copy(self) -> bool {
        matches!(self, SendEngine::Zc | SendEngine::ZcMsg | SendEngine::MsgZerocopy)
    }
}

/// How a side takes payload off a socket.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RecvEngine {
    /// IORING_OP_RECV into a user buffer.
    #[default]
    Recv,
    /// Multishot IORING_OP_RECV on a provided-buffer ring.
    Multishot,
    /// Multishot receive bundles: one CQE may cover many provided buffers.
    Bundle,
    /// MSG_TRUNC: the kernel discards the payload without copying it.
    Trunc,
    /// Classic recv(2), no ring: blocking with one flow per worker, non-blocking over epoll
    /// with several.
    Syscall,
    /// Classic zero-copy receive, no ring: TCP_ZEROCOPY_RECEIVE into an mmap'd window of the
    /// socket (stream only).
    ZerocopyReceive,
}

impl RecvEngine {
    pub const ALL: [RecvEngine; 6] = [
        RecvEngine::Recv,
        RecvEngine::Multishot,
        RecvEngine::Bundle,
        RecvEngine::Trunc,
        RecvEngine::Syscall,
        RecvEngine::ZerocopyReceive,
    ];

    /// The ring's receive engine for a workload when none is named. rr keeps a
    /// multishot receive standing on each socket: one-shot receives re-arm and re-poll the
    /// socket every transaction, which cost 1-byte rr 7-12 % more service demand on both
    /// sides (measured same-CPU and across CPUs, see docs/figures.md, "Which engine adds least").
    /// crr makes a socket per transaction, so a standing receive saves nothing there. A
    /// stream keeps one standing too: with SO_RCVLOWAT at one provided buffer it is woken
    /// once per buffer filled rather than per train of segments, and is never re-armed
    /// (docs/figures.md, "Which engine adds least"). Multishot rather than bundle: it needs
    /// no more than the rings themselves (Linux 6.1), so the default runs wherever they do.
    pub fn default_for(workload: Workload) -> RecvEngine {
        match workload {
            Workload::Rr | Workload::Stream => RecvEngine::Multishot,
            _ => RecvEngine::Recv,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RecvEngine::Recv => "recv",
            RecvEngine::Multishot => "multishot",
            RecvEngine::Bundle => "bundle",
            RecvEngine::Trunc => "trunc",
            RecvEngine::Syscall => "syscall",
            RecvEngine::ZerocopyReceive => "zerocopy-receive",
        }
    }

    /// True for the classic engines that run without a ring.
    pub fn is_classic(self) -> bool {
        matches!(self, RecvEngine::Syscall | RecvEngine::ZerocopyReceive)
    }

    /// Engines that receive through a provided-buffer ring.
    pub fn uses_buffer_ring(self) -> bool {
        matches!(self, RecvEngine::Multishot | RecvEngine::Bundle)
    }
}

/// The two families of engines a side can run.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Harness {
    /// One ring per worker: the io_uring send and receive engines.
    IoUring,
    /// Loops of send(2) and recv(2): blocking with one flow per worker, epoll with several.
    Classic,
}

impl Harness {
    pub const ALL: [Harness; 2] = [Harness::IoUring, Harness::Classic];

    pub fn name(self) -> &'static str {
        match self {
            Harness::IoUring => "io-uring",
            Harness::Classic => "classic",
        }
    }

    /// The other harness.
    pub fn other(self) -> Harness {
        match self {
            Harness::IoUring => Harness::Classic,
            Harness::Classic => Harness::IoUring,
        }
    }

    /// The engines this harness runs `workload` with when none is named.
    pub fn engines(self, workload: Workload) -> (SendEngine, RecvEngine) {
        match self {
            Harness::IoUring => (SendEngine::Copy, RecvEngine::default_for(workload)),
            Harness::Classic => (SendEngine::Syscall, RecvEngine::Syscall),
        }
    }

    /// The harness a send engine belongs to.
    pub fn of_send(engine: SendEngine) -> Harness {
        if engine.is_classic() {
            Harness::Classic
        } else {
            Harness::IoUring
        }
    }

    /// The harness a receive engine belongs to.
    pub fn of_recv(engine: RecvEngine) -> Harness {
        if engine.is_classic() {
            Harness::Classic
        } else {
            Harness::IoUring
        }
    }
}

/// Why an engine of a spec is the one it is: asked for, or the ground on which the
/// default rule chose its harness.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum EngineReason {
    /// The engine was named (or the command implies it: sendfile splices).
    Asked,
    /// The harness was named, not the engine.
    HarnessAsked,
    /// The other engine was named, and this one is its harness's: a request/response or
    /// UDP side runs one loop for both, and a classic stream sender pairs with recv(2).
    Paired,
    /// Default: one transaction in flight per worker waits alone (classic).
    OneInFlight,
    /// Default: a worker serves several flows (ring).
    SeveralFlows,
    /// Default: a burst keeps several transactions in flight per flow (ring).
    Burst,
    /// Default: an open loop keeps its schedule on the ring's timers (ring).
    OpenLoop,
    /// Default: a bulk stream batches its sends and receives (ring).
    Bulk,
    /// Default: datagrams batch through the ring (ring).
    Datagrams,
    /// Default: a transaction count, which the classic loops do not keep (ring).
    Counted,
    /// Default: crr with payload checks, which the classic crr loop does not make (ring).
    Verified,
    /// Default: ring settings were given, so the ring is what is measured (ring).
    RingTuned,
}

impl EngineReason {
    /// A short name, as the JSON has it.
    pub fn name(self) -> &'static str {
        match self {
            EngineReason::Asked => "asked",
            EngineReason::HarnessAsked => "harness-asked",
            EngineReason::Paired => "paired",
            EngineReason::OneInFlight => "one-in-flight",
            EngineReason::SeveralFlows => "several-flows",
            EngineReason::Burst => "burst",
            EngineReason::OpenLoop => "open-loop",
            EngineReason::Bulk => "bulk",
            EngineReason::Datagrams => "datagrams",
            EngineReason::Counted => "counted",
            EngineReason::Verified => "verified",
            EngineReason::RingTuned => "ring-tuned",
        }
    }
}

/// Why each engine of a spec is the one it is. Informational: no side acts on it; the
/// report's header says it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EngineChoice {
    pub send: EngineReason,
    pub recv: EngineReason,
}

/// Requested socket buffer sizes (SO_SNDBUF / SO_RCVBUF); `None` keeps the kernel's autotuning.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct SocketBuffers {
    pub send: Option<u32>,
    pub recv: Option<u32>,
}

/// Socket options set on every data socket of both sides, all echoed in the report.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct SocketOptions {
    /// TCP_NODELAY: no Nagle.
    pub nodelay: bool,
    /// TCP_MAXSEG, set before connect/listen.
    pub mss: Option<u32>,
    /// TCP_CORK for the whole test.
    pub cork: bool,
    /// IP_TOS / IPV6_TCLASS byte.
    pub tos: Option<u8>,
    /// SO_MAX_PACING_RATE in bits per second (enforced by the fq qdisc or TCP's internal pacing).
    pub max_pacing_rate_bps: Option<u64>,
    /// SO_RCVLOWAT on a stream receiver's data sockets: the bytes that must be queued before
    /// a receive is woken. `None`: the receive engine's own (see `io::recv::stream_rcvlowat`).
    #[serde(default)]
    pub rcvlowat: Option<u32>,
    /// Multipath TCP (IPPROTO_MPTCP) data sockets on both sides: the server listens MPTCP
    /// when the client asks. Left out when off, so a server that predates it still runs
    /// every plain TCP test, and refuses this one by name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mptcp: bool,
}

/// Application pacing: a token bucket per flow, refilled by a timeout on the ring.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct Pacing {
    /// The whole test's payload rate in bits per second, split evenly over the flows.
    pub total_bps: Option<u64>,
    /// Each flow's payload rate in bits per second.
    pub per_flow_bps: Option<u64>,
}

impl Pacing {
    /// Each flow's rate: the tighter of the per-flow rate and its share of the total.
    pub fn flow_rate_bps(&self, flows: u32) -> Option<u64> {
        let share = self.total_bps.map(|t| (t / u64::from(flows.max(1))).max(1));
        match (share, self.per_flow_bps) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The whole test's effective payload rate over `flows` flows (each flow's rate times
    /// the flows), in bits per second; `None` when nothing is paced.
    pub fn effective_total_bps(&self, flows: u32) -> Option<u64> {
        self.flow_rate_bps(flows).map(|r| r.saturating_mul(u64::from(flows.max(1))))
    }
}

/// Settings that belong to one side of the test. `P` is how the side's payload is known:
/// [`Payload`] on the host that builds or runs the spec, [`crate::payload::WirePayload`]
/// on the wire.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct SideSpec<P = Payload> {
    pub socket_buffers: SocketBuffers,
    /// CPUs the side's workers are pinned to, round-robin (netperf `-T` gives one).
    pub cpus: Vec<usize>,
    pub send_engine: SendEngine,
    pub recv_engine: RecvEngine,
    /// What the side's `splice` sender reads: the pattern from a memfd, or a file.
    pub payload: P,
}

/// How the rings are set up and driven.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RingTuning {
    /// Submission queue entries per ring.
    pub sq_entries: u32,
    /// Submit once this many SQEs are queued, even before the loop would wait.
    pub sq_batch: u32,
    /// Completions to wait for per io_uring_enter.
    pub cq_batch: u32,
    /// With `cq_batch` > 1: return after this many microseconds if at least one completion
    /// is ready (the kernel's min-wait, Linux 6.12).
    pub cq_wait_us: u32,
    /// Kernel submission-queue polling thread, optionally pinned to a CPU.
    pub sqpoll: Option<SqPoll>,
    /// NAPI busy polling for this long per wait (Linux 6.9).
    pub napi_busy_poll_us: Option<u32>,
    /// Register the ring fd so io_uring_enter skips the fd lookup.
    pub registered_ring_fd: bool,
    /// Register the data sockets as fixed files.
    pub fixed_files: bool,
    /// Linked sends in flight per flow (stream): more keeps the pipe full with fewer enters.
    pub send_depth: u32,
    /// Linked receives in flight per flow (stream, recv and trunc engines), each waiting
    /// for its whole length (MSG_WAITALL); 1 is one plain receive at a time. A peer that
    /// predates the field sends none and means 1.
    #[serde(default = "one")]
    pub recv_depth: u32,
    /// Provided buffers per ring for multishot and bundle receive.
    pub buf_count: u32,
    /// Bytes per provided buffer.
    pub buf_size: u32,
    /// When the kernel runs the rings' task work; `None` lets each role choose (deferred,
    /// cooperative for a splice stream, whose work runs on io-wq). A peer that predates the
    /// field sends none.
    #[serde(default)]
    pub task_run: Option<TaskRun>,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Most transactions one rr flow may keep in flight: the client keeps a timestamp per
/// transaction, and a deeper burst only queues more in the socket buffers.
pub const MAX_BURST: u32 = 4096;

/// Most transactions in flight over all flows: 8 bytes of timestamp each, so the client's
/// FIFOs stay within 8 MiB however --flows and --burst combine.
pub const MAX_IN_FLIGHT: u64 = 1 << 20;

/// Requests one open-loop rr flow keeps outstanding (due and not yet answered) unless
/// `--backlog` says otherwise: a 1 s stall at 1000 requests/s still fits.
pub const DEFAULT_BACKLOG: u32 = 1024;

/// rr open loop: each flow's requests come due on a fixed schedule, whatever the responses
/// do, and a round trip counts from when its request was due.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OpenLoop {
    /// Requests per second: per flow, or over all flows when `total`.
    pub rate: u64,
    pub total: bool,
    /// Most requests one flow keeps outstanding (due, sent or not, and not yet answered);
    /// a request that comes due beyond it is dropped from the schedule and counted.
    pub backlog: u32,
}

impl OpenLoop {
    /// Nanoseconds between two requests of one flow of `flows` (at least 1).
    pub fn interval_ns(&self, flows: u32) -> u64 {
        let per_flow = if self.total { self.rate as f64 / f64::from(flows.max(1)) } else { self.rate as f64 };
        (1e9 / per_flow.max(1e-9)).round().max(1.0) as u64
    }
}

/// When the kernel runs a ring's task work (the completion steps that need the owner).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TaskRun {
    /// DEFER_TASKRUN: only while the owner waits, so socket completions wake it lazily,
    /// once as many are pending as it waits for.
    Deferred,
    /// COOP_TASKRUN: at the owner's next kernel entry. io-wq then posts CQEs itself and a
    /// completion that skips its CQE wakes nobody; under DEFER_TASKRUN every io-wq
    /// completion (splice) is task work that wakes a waiting owner.
    Cooperative,
}

impl TaskRun {
    pub const ALL: [TaskRun; 2] = [TaskRun::Deferred, TaskRun::Cooperative];

    pub fn name(self) -> &'static str {
        match self {
            TaskRun::Deferred => "deferred",
            TaskRun::Cooperative => "cooperative",
        }
    }
}

/// SQPOLL settings.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SqPoll {
    pub cpu: Option<u32>,
    pub idle_ms: u32,
}

impl Default for RingTuning {
    fn default() -> Self {
        RingTuning {
            sq_entries: 256,
            sq_batch: 256,
            cq_batch: 1,
            cq_wait_us: 0,
            sqpoll: None,
            napi_busy_poll_us: None,
            registered_ring_fd: true,
            fixed_files: true,
            send_depth: 1,
            recv_depth: 1,
            buf_count: 256,
            buf_size: 64 * 1024,
            task_run: None,
        }
    }
}

/// One test, as agreed between client ("local") and server ("remote"). `P` is how each
/// side's payload is known (see [`SideSpec`]): a `TestSpec` is this host's, a
/// [`WireSpec`] what travels.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TestSpec<P = Payload> {
    pub workload: Workload,
    pub direction: Direction,
    /// Length of the measurement window.
    pub duration_ms: u64,
    /// Bytes per send call in a stream test (netperf `-m`).
    pub send_size: u32,
    /// Bytes per receive call in a stream test (netperf `-M`).
    pub recv_size: u32,
    /// Request and response sizes of an rr test (netperf `-r`).
    pub request_size: u32,
    pub response_size: u32,
    /// rr, udp-rr: transactions in flight per flow (netperf `-b`, which counts those beyond the
    /// first). Left out at 1, so a default spec still runs against a server that predates it.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub burst: u32,
    /// rr and udp-rr open loop (`--rate`, `--rate-total`): requests leave on a schedule instead of
    /// after each response. Left out when closed loop; a server that predates it refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoop>,
    /// stream: each flow's sender stops after this many bytes (netperf's negative -l) and
    /// the window ends once they have arrived; `duration_ms` is then the longest the test
    /// may take. Left out of a timed test; a server that predates it refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_limit: Option<u64>,
    /// rr: each flow makes this many transactions and stops (netperf's negative -l); the
    /// window ends with the last. Left out of a timed test; a server that predates it
    /// refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_limit: Option<u64>,
    /// Data connections, dealt round-robin over the workers.
    pub flows: u32,
    /// Worker threads per side, each with its own ring (at most one per flow).
    pub threads: u32,
    /// Stream in both directions at once: `flows` connections each way.
    pub bidir: bool,
    /// TCP congestion control set on every data socket (TCP_CONGESTION); `None` keeps the default.
    pub congestion_control: Option<String>,
    pub socket: SocketOptions,
    pub pacing: Pacing,
    /// Fill the payload with a pattern and check it on receipt.
    pub verify: bool,
    /// Fail (exit 1) if any zero-copy send was copied by the kernel.
    pub require_zero_copy: bool,
    /// Interval sample period in milliseconds (0: no interval samples).
    pub interval_ms: u64,
    /// Record every transaction's round trip (rr); off saves one clock read per transaction.
    pub record_latency: bool,
    /// Split the round trips in two phases at the interval tick nearest this offset from
    /// the window start (`ringperf load`: idle, then loaded), each with its own histogram.
    /// Only the client's side reads it; left out when not split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_split_ms: Option<u64>,
    pub local: SideSpec<P>,
    pub remote: SideSpec<P>,
    pub ring: RingTuning,
    /// TCP_CRR settings (ignored by other workloads).
    #[serde(default)]
    pub crr: CrrOptions,
    /// UDP settings (ignored by TCP workloads).
    #[serde(default)]
    pub udp: UdpOptions,
    /// The kernel cost profile of each side's window. A peer that predates it sends none
    /// and gets none; left out when off, so --no-profile still runs against such a server.
    #[serde(default, skip_serializing_if = "ProfileSpec::is_off")]
    pub profile: ProfileSpec,
    /// Why each engine is the one it is (asked for, or the default rule's ground), for the
    /// report's header; no side acts on it, so the wire form leaves it out
    /// ([`TestSpec::to_wire`]). Absent from specs that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_choice: Option<EngineChoice>,
    /// This side's CLOCK_MONOTONIC minus the client's, as the client estimated it before
    /// the test (0 on the client, and on one host). A UDP side subtracts it from every
    /// one-way stamp and arrival time it takes, so both ends' times are on the client's
    /// clock. Not part of the spec on the wire: the Test message carries it beside.
    #[serde(skip)]
    pub clock_offset_ns: i64,
}

/// A test spec as it travels between hosts.
pub type WireSpec = TestSpec<WirePayload>;

/// Whether a single test (`ringperf stream`, `rr`, ...) samples its windows without
/// `--profile`: yes, at [`LIGHT_PROFILE_HZ`], for the default report's tool overhead with
/// its kernel share; a default may cost at most 1 % of service demand. `ringperf-bench
/// profile` on this 2-vCPU VM (docs/figures.md, "What the figures mean"): at 999 Hz 1.06x on
/// same-CPU 1-byte rr and 1.07x on a 64 KiB stream; with two samplers, 1.088x and 1.141x at
/// 999 Hz, 1.012x and 1.022x at 99 Hz (intervals spanning 1.0): the cost is mostly per
/// sample, a little more than proportional at 99 Hz, so the default takes half that rate
/// (`ringperf-bench profile --hz 9999 --project-to 49`: +0.09 % on rr and +0.15 % on the
/// stream at 49 Hz, both intervals under 1 %). A spec built in code
/// ([`TestSpec::default`]) takes none: the command line adds it.
pub const PROFILE_BY_DEFAULT: bool = true;
/// The default profile's samples per second per CPU: 1/20 of the full rate's cost, still
/// ~1000 samples in a 10 s test on 2 CPUs (a 5 % share to about ±1.4 points at 95 %). Odd,
/// like the full rate, so it does not beat with timers at round rates.
pub const LIGHT_PROFILE_HZ: u32 = 49;
/// Samples per second per CPU (`--profile-hz`): an odd rate, so it does not beat with
/// timers at round rates.
pub const DEFAULT_PROFILE_HZ: u32 = 999;
/// Above this, sampling costs more than it tells (and kernels throttle it).
pub const MAX_PROFILE_HZ: u32 = 20_000;

/// What each side's profile does.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    pub enabled: bool,
    pub hz: u32,
    /// Carry folded stacks in the report (--profile-out).
    pub folded: bool,
}

impl ProfileSpec {
    /// Off, as a spec without the field means.
    pub fn is_off(&self) -> bool {
        *self == ProfileSpec::default()
    }
}

impl Default for ProfileSpec {
    /// What a peer that predates profiles means: none.
    fn default() -> Self {
        ProfileSpec { enabled: false, hz: DEFAULT_PROFILE_HZ, folded: false }
    }
}

/// The longest test one spec may ask for; longer runs are iterations (`-i`).
pub const MAX_DURATION_MS: u64 = 24 * 3600 * 1000;
/// Data connections one test may open.
pub const MAX_FLOWS: u32 = 4096;
/// Worker threads per side.
pub const MAX_THREADS: u32 = 64;
/// Interval samples one test may ask for: each is an entry in both sides' reports, and the
/// server's report must fit one control frame (see `protocol::report_frame_cap`).
pub const MAX_INTERVAL_SAMPLES: u64 = 100_000;

/// Settings whose default depends on the rest of the spec, as the user gave them: `None`
/// is "not given", and [`TestSpec::resolve`] fills it from the workload, engines, sizes,
/// flows and length. Every way a spec is built (the CLI, the tests, `TestSpec::default()`)
/// goes through that one function, so each gets the same defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Explicit {
    pub send_depth: Option<u32>,
    pub recv_depth: Option<u32>,
    pub buf_count: Option<u32>,
    pub buf_size: Option<u32>,
    pub sq_batch: Option<u32>,
    /// The interval sample period in milliseconds; `Some(0)` takes no samples.
    pub interval_ms: Option<u64>,
    /// Engines named for both sides, and the harness named for both: unnamed ones follow
    /// the default rule ([`TestSpec::default_harness`]).
    pub send_engine: Option<SendEngine>,
    pub recv_engine: Option<RecvEngine>,
    pub harness: Option<Harness>,
}

/// Which side of a spec: the client's ("local") or the server's ("remote").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecSide {
    Local,
    Remote,
}

impl<P> TestSpec<P> {
    /// The same spec with each side's payload mapped by `f` (told which side it is), every
    /// other setting unchanged: how a spec crosses between its local and wire forms.
    pub fn map_payloads<Q>(self, mut f: impl FnMut(SpecSide, P) -> Result<Q>) -> Result<TestSpec<Q>> {
        // Every field by name (see `retype!`): a field added to the spec cannot be forgotten.
        Ok(retype!(self => TestSpec {
            workload,
            direction,
            duration_ms,
            send_size,
            recv_size,
            request_size,
            response_size,
            burst,
            open_loop,
            byte_limit,
            transaction_limit,
            flows,
            threads,
            bidir,
            congestion_control,
            socket,
            pacing,
            verify,
            require_zero_copy,
            interval_ms,
            record_latency,
            latency_split_ms,
            ring,
            crr,
            udp,
            profile,
            engine_choice,
            clock_offset_ns;
            local: local => local.map_payload(|p| f(SpecSide::Local, p))?,
            remote: remote => remote.map_payload(|p| f(SpecSide::Remote, p))?,
        }))
    }
}

impl<P> SideSpec<P> {
    fn map_payload<Q>(self, f: impl FnOnce(P) -> Result<Q>) -> Result<SideSpec<Q>> {
        let SideSpec { socket_buffers, cpus, send_engine, recv_engine, payload } = self;
        Ok(SideSpec { socket_buffers, cpus, send_engine, recv_engine, payload: f(payload)? })
    }
}

impl Default for TestSpec {
    /// What `ringperf stream` with no flags runs.
    fn default() -> Self {
        TestSpec::for_workload(Workload::Stream)
    }
}

impl TestSpec {
    /// What the command for `workload` runs when given no flags: its message sizes, and
    /// every dependent default resolved.
    pub fn for_workload(workload: Workload) -> TestSpec {
        let (send_size, request_size) = match workload {
            Workload::UdpStream => (1024, 1),
            Workload::UdpRr => (128 * 1024, 8),
            _ => (128 * 1024, 1),
        };
        let mut spec = TestSpec {
            workload,
            direction: Direction::ClientToServer,
            duration_ms: 10_000,
            send_size,
            recv_size: send_size,
            request_size,
            response_size: request_size,
            burst: 1,
            open_loop: None,
            byte_limit: None,
            transaction_limit: None,
            latency_split_ms: None,
            flows: 1,
            threads: 1,
            bidir: false,
            congestion_control: None,
            socket: SocketOptions::default(),
            pacing: Pacing::default(),
            verify: false,
            require_zero_copy: false,
            interval_ms: 0,
            record_latency: true,
            local: SideSpec::default(),
            remote: SideSpec::default(),
            ring: RingTuning::default(),
            crr: CrrOptions::default(),
            udp: UdpOptions::default(),
            profile: ProfileSpec::default(),
            engine_choice: None,
            clock_offset_ns: 0,
        };
        spec.resolve(&Explicit::default());
        spec
    }

    /// Fills every setting whose default depends on the rest of the spec, keeping what
    /// `given` holds. Call it after the other fields are final (it may be called again
    /// after changing them: only what was not given is recomputed).
    pub fn resolve(&mut self, given: &Explicit) {
        self.resolve_engines(given);
        let splice = [self.local.send_engine, self.remote.send_engine].contains(&SendEngine::Splice);
        // A chain of sends is submitted in one enter and waited for in one, so the worker's
        // own cost per byte falls with its length; a splice chain runs on io-wq and wakes the
        // worker once, so it gets a longer one. UDP chains 32 datagrams' worth of sends.
        self.ring.send_depth = given.send_depth.unwrap_or(match self.workload {
            Workload::Stream if splice => 32,
            Workload::Stream => 4,
            Workload::UdpStream => udp_chain_sends(self.udp_datagrams_per_send()),
            _ => 1,
        });
        // A chain of receives is reaped in one wait, as a sender's sends are.
        self.ring.recv_depth =
            given.recv_depth.unwrap_or(if self.workload == Workload::Stream { 4 } else { 1 });
        self.ring.sq_batch = given.sq_batch.unwrap_or(self.ring.sq_entries);
        self.interval_ms = given.interval_ms.unwrap_or(if self.duration_ms > 10_000 {
            1000
        } else {
            (self.duration_ms / 20).clamp(100, 1000)
        });
        self.resolve_buffers(given);
    }

    /// Provided buffers (multishot, bundle) that stay in cache, unless given: the kernel
    /// copies every received byte into them, and copying into 16 MiB of cold buffers cost
    /// a multishot stream receiver ~20 % more CPU per byte than a one-shot receive into one
    /// warm buffer (about the same or less with 1 MiB). So: buffers of the largest receive,
    /// 4 KiB to 64 KiB. Unchecked buffers share one landing area (see `BufRing`), so there
    /// can be many: 256, or four per flow a worker serves, whichever is more (a receive
    /// woken for a whole buffer may find many queued, and a ring that runs dry ends the
    /// multishot). Checked buffers each have their own memory: 1 MiB of them, and at least
    /// four per flow. Workloads without provided-buffer receives keep 256 of 64 KiB.
    fn resolve_buffers(&mut self, given: &Explicit) {
        let largest_receive = match self.workload {
            Workload::Stream => Some(self.recv_size),
            Workload::Rr | Workload::Crr => Some(self.request_size.max(self.response_size)),
            _ => None,
        };
        let Some(largest_receive) = largest_receive else {
            self.ring.buf_size = given.buf_size.unwrap_or(64 * 1024);
            self.ring.buf_count = given.buf_count.unwrap_or(256);
            return;
        };
        self.ring.buf_size = given.buf_size.unwrap_or(largest_receive.clamp(4 * 1024, 64 * 1024));
        let per_worker = self.flows.div_ceil(self.threads.max(1));
        self.ring.buf_count = given.buf_count.unwrap_or(if self.verify {
            let count = ((1u32 << 20) / self.ring.buf_size.max(1)).max(per_worker.saturating_mul(4));
            count.min(256).next_power_of_two().max(16)
        } else {
            per_worker.saturating_mul(4).min(32768).next_power_of_two().max(256)
        });
    }
}

impl TestSpec {
    /// Workers per side: no more than there are flows.
    pub fn workers(&self) -> usize {
        self.threads.min(self.flows).max(1) as usize
    }

    /// Checks every field a peer or a user controls. The server runs this on every spec it
    /// receives, so it must reject anything that would make it misbehave.
    pub fn validate(&self) -> Result<()> {
        Ok(self.check()?)
    }

    /// [`validate`](Self::validate)'s checks, each refusal naming the settings at fault.
    pub fn check(&self) -> Result<(), SpecError> {
        self.check_length_and_counts()?;
        self.check_sizes_and_rates()?;
        self.check_stream_options()?;
        self.check_scale()?;
        self.ring.check()?;
        self.check_intervals()?;
        self.validate_burst()?;
        self.validate_open_loop()?;
        self.validate_workload()?;
        self.validate_classic()?;
        self.validate_payloads()?;
        self.validate_mptcp()?;
        let zero_copy = [self.local.send_engine, self.remote.send_engine].iter().any(|e| e.is_zero_copy());
        if self.require_zero_copy && !zero_copy {
            return Err(SpecError::Invalid(format!(
                "{} needs a zero-copy send engine: add {} zc or zc-msg",
                Setting::RequireZeroCopy.token(),
                Setting::SendEngine.token()
            )));
        }
        Ok(())
    }

    /// How long the test runs and what may end it early: the window, the profiler's rate,
    /// a byte or transaction count, and a latency split inside the window.
    fn check_length_and_counts(&self) -> Result<(), SpecError> {
        if self.duration_ms == 0 || self.duration_ms > MAX_DURATION_MS {
            return Err(SpecError::Invalid(format!(
                "test length of {} ms is out of range: use {} with 0.001 to {} seconds",
                self.duration_ms,
                Setting::Duration.token(),
                MAX_DURATION_MS / 1000
            )));
        }
        if self.profile.enabled && !(1..=MAX_PROFILE_HZ).contains(&self.profile.hz) {
            return Err(SpecError::out_of_range(
                Setting::ProfileHz,
                self.profile.hz,
                format!("1 to {MAX_PROFILE_HZ}"),
            ));
        }
        if let Some(limit) = self.byte_limit {
            let (sender, receiver) = match self.direction {
                Direction::ClientToServer => (&self.local, &self.remote),
                Direction::ServerToClient => (&self.remote, &self.local),
            };
            let classic = sender.send_engine.is_classic() || receiver.recv_engine.is_classic();
            // A UDP receiver sees no end of stream: the client's sender counts, and the
            // session tells the server when it is done.
            let udp_forward =
                self.workload == Workload::UdpStream && self.direction == Direction::ClientToServer;
            if limit == 0 || !(self.workload == Workload::Stream || udp_forward) || self.bidir || classic {
                return Err(SpecError::Invalid(format!(
                    "a byte count ({limit} bytes per flow) needs a one-way stream (udp-stream: client to server) with an io_uring send engine: drop {} (or a negative {}) or run stream without {} and a classic engine",
                    Setting::ByteLimit.token(),
                    Setting::Duration.token(),
                    Setting::Bidir.token(),
                )));
            }
        }
        if let Some(limit) = self.transaction_limit {
            let classic = [&self.local, &self.remote]
                .iter()
                .any(|s| s.send_engine.is_classic() || s.recv_engine.is_classic());
            let counted = matches!(self.workload, Workload::Rr | Workload::Crr | Workload::UdpRr);
            if limit == 0 || !counted || self.open_loop.is_some() || classic {
                return Err(SpecError::Invalid(format!(
                    "a transaction count ({limit} per flow) needs a closed-loop rr, crr or udp-rr on io_uring engines: drop {} (or a negative {}), {} and classic engines",
                    Setting::TransactionLimit.token(),
                    Setting::Duration.token(),
                    Setting::OpenLoopRate.token(),
                )));
            }
        }
        if let Some(split) = self.latency_split_ms {
            if self.interval_ms == 0 || split == 0 || split >= self.duration_ms {
                return Err(SpecError::Invalid(format!(
                    "a latency split at {split} ms needs interval samples and must fall inside the {} ms window: give a split between 0 and the test length",
                    self.duration_ms
                )));
            }
        }
        Ok(())
    }

    /// Message sizes, the MSS and pacing rates: each within what a side can honour.
    fn check_sizes_and_rates(&self) -> Result<(), SpecError> {
        for (setting, n) in [
            (Setting::SendSize, self.send_size),
            (Setting::RecvSize, self.recv_size),
            (Setting::RequestSize, self.request_size),
            (Setting::ResponseSize, self.response_size),
        ] {
            check_size(
                &format!("{} ({})", setting.words().trim_start_matches("the "), setting.token()),
                u64::from(n),
            )
            .map_err(|e| SpecError::Invalid(e.unspelled()))?;
        }
        if let Some(mss) = self.socket.mss {
            if !(88..=65535).contains(&mss) {
                return Err(SpecError::out_of_range(Setting::Mss, mss, "88 to 65535"));
            }
        }
        for (what, r) in [
            (Setting::TotalRate, self.pacing.total_bps),
            (Setting::FlowRate, self.pacing.per_flow_bps),
            (Setting::FqRate, self.socket.max_pacing_rate_bps),
        ] {
            if r == Some(0) {
                return Err(SpecError::Invalid(format!(
                    "{} 0 would never send: give a positive rate like 100M",
                    what.token()
                )));
            }
        }
        Ok(())
    }

    /// Options only a stream test uses: both directions at once and the receive low-water mark.
    fn check_stream_options(&self) -> Result<(), SpecError> {
        if self.bidir && self.workload != Workload::Stream {
            return Err(SpecError::NotForThisTest { settings: vec![Setting::Bidir], tests: "stream tests" });
        }
        if let Some(n) = self.socket.rcvlowat {
            if self.workload != Workload::Stream {
                return Err(SpecError::Invalid(format!(
                    "{} applies to stream and sendfile receivers: a request smaller than it would never wake its receive",
                    Setting::Rcvlowat.token()
                )));
            }
            if n == 0 || u64::from(n) > MAX_SIZE {
                return Err(SpecError::out_of_range(
                    Setting::Rcvlowat,
                    n,
                    "1 byte (the kernel's default) to 1G",
                ));
            }
        }
        if self.bidir && self.direction == Direction::ServerToClient {
            return Err(SpecError::Invalid(format!(
                "{} already runs both directions: drop {}",
                Setting::Bidir.token(),
                Setting::Reverse.token()
            )));
        }
        Ok(())
    }

    /// What a test asks a host to hold: threads, CPU lists, flows, socket buffers and a
    /// congestion control name that reaches the kernel.
    fn check_scale(&self) -> Result<(), SpecError> {
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(SpecError::Invalid(format!(
                "{} threads is out of range: use 1 to {MAX_THREADS}",
                self.threads
            )));
        }
        for (side, s) in [("local", &self.local), ("remote", &self.remote)] {
            if s.cpus.len() > 1024 {
                return Err(SpecError::Invalid(format!(
                    "{side} CPU list has {} entries: at most 1024",
                    s.cpus.len()
                )));
            }
        }
        if self.flows == 0 || self.flows > MAX_FLOWS {
            return Err(SpecError::Invalid(format!(
                "{} flows is out of range: use 1 to {MAX_FLOWS}",
                self.flows
            )));
        }
        for (side, s) in [("local", &self.local), ("remote", &self.remote)] {
            for (what, v) in [("send", s.socket_buffers.send), ("receive", s.socket_buffers.recv)] {
                if let Some(v) = v {
                    if v == 0 || u64::from(v) > MAX_SIZE {
                        return Err(SpecError::Invalid(format!(
                            "{side} socket {what} buffer of {v} bytes is out of range: use 1 byte to 1G"
                        )));
                    }
                }
            }
        }
        if let Some(cc) = &self.congestion_control {
            if cc.is_empty() || cc.len() > 15 || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(SpecError::Invalid(format!(
                    "congestion control '{}' is not a valid name: see /proc/sys/net/ipv4/tcp_available_congestion_control",
                    peer_text(cc)
                )));
            }
        }
        Ok(())
    }

    /// Interval samples: not too short, and no more of them than a report carries.
    fn check_intervals(&self) -> Result<(), SpecError> {
        if self.interval_ms != 0 && self.interval_ms < 10 {
            return Err(SpecError::Invalid(format!(
                "an interval of {} ms is too short: use {} with at least 0.01 s",
                self.interval_ms,
                Setting::Interval.token()
            )));
        }
        if self.interval_samples() > MAX_INTERVAL_SAMPLES {
            let shortest = self.duration_ms.div_ceil(MAX_INTERVAL_SAMPLES).max(10);
            return Err(SpecError::Invalid(format!(
                "{duration} {} s with {interval} {} s makes {} interval samples, over the {MAX_INTERVAL_SAMPLES} a report carries: use {interval} {} or more, or a shorter {duration}",
                self.duration_ms as f64 / 1000.0,
                self.interval_ms as f64 / 1000.0,
                self.interval_samples(),
                shortest as f64 / 1000.0,
                duration = Setting::Duration.token(),
                interval = Setting::Interval.token(),
            )));
        }
        Ok(())
    }

    /// Interval samples a side records: one per whole or partial interval of the window.
    pub fn interval_samples(&self) -> u64 {
        if self.interval_ms == 0 {
            0
        } else {
            self.duration_ms.div_ceil(self.interval_ms)
        }
    }

    /// Data connections the test opens: `flows`, or twice that for --bidir.
    pub fn connections(&self) -> u32 {
        if self.bidir {
            2 * self.flows
        } else {
            self.flows
        }
    }

    /// The role of each group of connections on one side, in connection order: one group,
    /// or for --bidir the client-to-server half then the server-to-client half.
    pub fn group_roles(&self, local: bool) -> Vec<Role> {
        match (self.bidir, local) {
            (true, true) => vec![Role::StreamSender, Role::StreamReceiver],
            (true, false) => vec![Role::StreamReceiver, Role::StreamSender],
            (false, true) => vec![self.local_role()],
            (false, false) => vec![self.remote_role()],
        }
    }

    /// The checks that belong to CRR and UDP workloads: engines and options they do not
    /// use are refused rather than silently ignored.
    fn validate_workload(&self) -> Result<(), SpecError> {
        let usage = |m: String| Err(SpecError::Invalid(m));
        let name = self.netperf_name();
        let crr_only = SpecError::NotForThisTest {
            settings: vec![Setting::Linger0, Setting::ClientPorts],
            tests: "crr",
        };
        let udp_stream_only =
            SpecError::NotForThisTest { settings: vec![Setting::Gso, Setting::Gro], tests: "udp-stream" };
        if matches!(self.workload, Workload::Stream | Workload::Rr) {
            if self.crr != CrrOptions::default() {
                return Err(crr_only);
            }
            if self.udp.gso_segment.is_some() || self.udp.gro {
                return Err(udp_stream_only);
            }
            return Ok(());
        }
        // crr moves its payload through the send and receive paths, so it takes any engine;
        // the UDP tests use their own io_uring operations, or the classic loop (syscall on
        // both counts).
        let own_or_classic = [&self.local, &self.remote].iter().all(|s| {
            (s.send_engine == SendEngine::Copy && s.recv_engine == RecvEngine::Recv)
                || (s.send_engine.is_classic()
                    && s.recv_engine.is_classic()
                    && self.classic_serves_workload())
        });
        if self.workload.is_udp() && (!own_or_classic || self.verify || self.require_zero_copy) {
            return usage(format!(
                "{name} uses its own send and receive operations: drop {send}, {recv}, {} and {}, or give {send} syscall {recv} syscall for the classic loop",
                Setting::Verify.token(),
                Setting::RequireZeroCopy.token(),
                send = Setting::SendEngine.token(),
                recv = Setting::RecvEngine.token(),
            ));
        }
        if self.workload != Workload::Crr && self.crr != CrrOptions::default() {
            return Err(crr_only);
        }
        if let Some((lo, hi)) = self.crr.client_ports {
            if lo == 0 || lo > hi {
                return usage(format!(
                    "{} {lo}-{hi} is not a range: give LOW-HIGH with 1 <= LOW <= HIGH",
                    Setting::ClientPorts.token()
                ));
            }
        }
        if self.workload.is_udp() {
            if self.socket.nodelay
                || self.socket.cork
                || self.socket.mss.is_some()
                || self.congestion_control.is_some()
            {
                return usage(format!(
                    "{name} is UDP: {}, {}, {} and {} are TCP options",
                    Setting::Nodelay.token(),
                    Setting::Cork.token(),
                    Setting::Mss.token(),
                    Setting::CongestionControl.token()
                ));
            }
            let sizes: &[(Setting, u32)] = match self.workload {
                Workload::UdpStream => &[(Setting::SendSize, self.send_size)],
                _ => {
                    &[(Setting::RequestSize, self.request_size), (Setting::ResponseSize, self.response_size)]
                }
            };
            for &(what, v) in sizes {
                if !(UDP_SEQ_LEN..=MAX_UDP_PAYLOAD).contains(&v) {
                    return usage(format!(
                        "{} {v} does not fit a UDP datagram with its sequence number: use {UDP_SEQ_LEN} to {MAX_UDP_PAYLOAD} bytes",
                        what.token()
                    ));
                }
            }
        }
        if self.workload != Workload::UdpStream && (self.udp.gso_segment.is_some() || self.udp.gro) {
            return Err(udp_stream_only);
        }
        if let Some(seg) = self.udp.gso_segment {
            if seg != self.send_size {
                return usage(format!(
                    "{gso} {seg} is the datagram size, so {size} must be the same ({} given): drop {size} or make it {seg}",
                    self.send_size,
                    gso = Setting::Gso.token(),
                    size = Setting::SendSize.token(),
                ));
            }
        }
        if self.workload == Workload::UdpRr && !(100..=10_000_000).contains(&self.udp.timeout_us) {
            return Err(SpecError::out_of_range(Setting::UdpTimeout, self.udp.timeout_us, "100 us to 10 s"));
        }
        if self.workload.is_udp() && self.direction != Direction::ClientToServer {
            return usage(format!("{name} runs client to server only"));
        }
        Ok(())
    }

    /// MPTCP is TCP's: no UDP test takes it. Its sockets (Linux 6.18) refuse zero-copy
    /// sends (SendZc, SendMsgZc and MSG_ZEROCOPY give EOPNOTSUPP) and TCP's zero-copy
    /// receive mapping (ENODEV), so those engines are refused here, naming the ones that
    /// work: copy, splice (and sendfile) and syscall sends; recv, multishot, bundle, trunc
    /// and syscall receives.
    fn validate_mptcp(&self) -> Result<(), SpecError> {
        if !self.socket.mptcp {
            return Ok(());
        }
        if self.workload.is_udp() {
            return Err(SpecError::Invalid(format!(
                "{} is UDP: {} is for the TCP tests (stream, rr, crr, sendfile)",
                self.command_name(),
                Setting::Mptcp.token()
            )));
        }
        for s in [&self.local, &self.remote] {
            if s.send_engine.is_zero_copy() {
                return Err(SpecError::Invalid(format!(
                    "{send} {} does not work on an MPTCP socket: the kernel's MPTCP has no zero-copy send (EOPNOTSUPP); use {send} copy or splice on the ring, or syscall for the classic loop",
                    s.send_engine.name(),
                    send = Setting::SendEngine.token()
                )));
            }
            if s.recv_engine == RecvEngine::ZerocopyReceive {
                return Err(SpecError::Invalid(format!(
                    "{recv} zerocopy-receive does not work on an MPTCP socket: the kernel maps only plain TCP receive queues (ENODEV); use {recv} syscall for the classic loop, or recv, multishot, bundle or trunc on the ring",
                    recv = Setting::RecvEngine.token()
                )));
            }
        }
        Ok(())
    }

    /// The classic engines replace a worker's ring with a loop of system calls: a side that
    /// sends and receives on one socket (rr, crr, udp-rr) runs one such loop, so it takes
    /// both classic engines or neither.
    fn validate_classic(&self) -> Result<(), SpecError> {
        for (flag, stream_only) in [
            (
                format!("{} msg-zerocopy", Setting::SendEngine.token()),
                [&self.local, &self.remote].iter().any(|s| s.send_engine == SendEngine::MsgZerocopy),
            ),
            (
                format!("{} zerocopy-receive", Setting::RecvEngine.token()),
                [&self.local, &self.remote].iter().any(|s| s.recv_engine == RecvEngine::ZerocopyReceive),
            ),
        ] {
            if stream_only && self.workload != Workload::Stream {
                return Err(SpecError::Invalid(format!(
                    "{flag} serves stream only, not {}: use syscall for the classic loop",
                    self.command_name()
                )));
            }
        }
        if self.workload.is_transactional() {
            for s in [&self.local, &self.remote] {
                if s.send_engine.is_classic() != s.recv_engine.is_classic() {
                    return Err(SpecError::Invalid(format!(
                        "{} sends and receives in one loop on each side: give {} syscall with {} syscall, or neither",
                        self.command_name(),
                        Setting::SendEngine.token(),
                        Setting::RecvEngine.token()
                    )));
                }
            }
        }
        Ok(())
    }

    /// A payload file (`-F`, or a label an operator listed) is what a splice stream sender
    /// reads: on a side that does not send that way it would never be read, and --verify
    /// checks ringperf's own pattern.
    fn validate_payloads(&self) -> Result<(), SpecError> {
        let stream = self.workload == Workload::Stream;
        let local_sends = stream && (self.bidir || self.direction == Direction::ClientToServer);
        let remote_sends = stream && (self.bidir || self.direction == Direction::ServerToClient);
        for (name, side, sends) in
            [("local", &self.local, local_sends), ("remote", &self.remote, remote_sends)]
        {
            if side.payload == Payload::Pattern {
                continue;
            }
            if self.verify {
                return Err(SpecError::Invalid(format!(
                    "{} checks ringperf's own pattern, so it cannot be combined with a payload file ({} FILE or a label): drop one",
                    Setting::Verify.token(),
                    Setting::PayloadFile.token()
                )));
            }
            if !sends || side.send_engine != SendEngine::Splice {
                return Err(SpecError::Invalid(format!(
                    "the {name} side has a payload file but does not send a stream by splice, so nothing would read it: use sendfile (or {} splice on the side that sends)",
                    Setting::SendEngine.token()
                )));
            }
        }
        Ok(())
    }

    /// --burst: rr and udp-rr over the ring engines only, within [`MAX_BURST`].
    fn validate_burst(&self) -> Result<(), SpecError> {
        if !(1..=MAX_BURST).contains(&self.burst) {
            return Err(SpecError::out_of_range(
                Setting::Burst,
                self.burst,
                format!("1 to {MAX_BURST} transactions in flight per flow"),
            ));
        }
        if self.burst == 1 {
            return Ok(());
        }
        let in_flight = u64::from(self.burst) * u64::from(self.flows);
        if in_flight > MAX_IN_FLIGHT {
            return Err(SpecError::Invalid(format!(
                "{burst} {} over {} flows is {in_flight} transactions in flight, more than {MAX_IN_FLIGHT}: lower {burst} or {}",
                self.burst,
                self.flows,
                Setting::Flows.token(),
                burst = Setting::Burst.token(),
            )));
        }
        if !matches!(self.workload, Workload::Rr | Workload::UdpRr) {
            return Err(SpecError::Invalid(format!(
                "{burst} applies to rr and udp-rr only, not {}: drop {burst}",
                self.command_name(),
                burst = Setting::Burst.token(),
            )));
        }
        let classic = [&self.local, &self.remote].iter().any(|s| s.send_engine.is_classic());
        if classic {
            return Err(SpecError::Invalid(format!(
                "the syscall engine runs one transaction at a time: drop {}, or drop {} syscall to burst through the ring",
                Setting::Burst.token(),
                Setting::SendEngine.token()
            )));
        }
        Ok(())
    }

    /// --rate/--rate-total: rr and udp-rr through the ring (its timers keep the schedule), a depth
    /// of its own (--backlog, not --burst), within the bounds a burst has.
    fn validate_open_loop(&self) -> Result<(), SpecError> {
        let Some(o) = self.open_loop else { return Ok(()) };
        let usage = |m: String| Err(SpecError::Invalid(m));
        if !matches!(self.workload, Workload::Rr | Workload::UdpRr) {
            return usage(format!(
                "{} and {} apply to rr and udp-rr only, not {}: drop them",
                Setting::OpenLoopRate.token(),
                Setting::OpenLoopTotal.token(),
                self.command_name()
            ));
        }
        if o.rate == 0 {
            return usage(format!(
                "{} 0 sends nothing: give at least 1 request per second",
                Setting::OpenLoopRate.token()
            ));
        }
        if self.burst > 1 {
            return usage(format!(
                "{burst} keeps N in flight closed loop; with {} the schedule sets the depth: drop {burst} ({} bounds it)",
                Setting::OpenLoopRate.token(),
                Setting::Backlog.token(),
                burst = Setting::Burst.token(),
            ));
        }
        if !(1..=MAX_BURST).contains(&o.backlog) {
            return Err(SpecError::out_of_range(
                Setting::Backlog,
                o.backlog,
                format!("1 to {MAX_BURST} requests outstanding per flow"),
            ));
        }
        let outstanding = u64::from(o.backlog) * u64::from(self.flows);
        if outstanding > MAX_IN_FLIGHT {
            return usage(format!(
                "{backlog} {} over {} flows is {outstanding} requests outstanding, more than {MAX_IN_FLIGHT}: lower {backlog} or {}",
                o.backlog,
                self.flows,
                Setting::Flows.token(),
                backlog = Setting::Backlog.token(),
            ));
        }
        if [&self.local, &self.remote].iter().any(|s| s.send_engine.is_classic()) {
            return usage(format!(
                "the syscall engine has no ring timers to keep a schedule: drop {}, or drop {} syscall",
                Setting::OpenLoopRate.token(),
                Setting::SendEngine.token()
            ));
        }
        Ok(())
    }

    /// Whether the client tells the server when its flows are done (FlowsDone), the end
    /// the server waits for: crr's server cannot tell a last connection from a pause, and
    /// a counted UDP test's server sees no end of stream.
    pub fn client_says_flows_done(&self) -> bool {
        let counted = self.byte_limit.is_some() || self.transaction_limit.is_some();
        self.workload == Workload::Crr || (self.workload.is_udp() && counted)
    }

    /// How many transactions one rr flow may have outstanding: the burst closed loop, the
    /// backlog open loop. Both sides size their buffers and FIFOs for it.
    pub fn rr_depth(&self) -> u32 {
        self.open_loop.map_or(self.burst, |o| o.backlog)
    }

    /// Workloads beyond stream and rr that the classic engines serve.
    fn classic_serves_workload(&self) -> bool {
        matches!(self.workload, Workload::Crr | Workload::UdpStream | Workload::UdpRr)
    }

    /// The ringperf command that runs this workload.
    pub fn command_name(&self) -> &'static str {
        match self.workload {
            Workload::Stream => "stream",
            Workload::Rr => "rr",
            Workload::Crr => "crr",
            Workload::UdpStream => "udp-stream",
            Workload::UdpRr => "udp-rr",
        }
    }

    /// The role the client ("local") side plays.
    pub fn local_role(&self) -> Role {
        if self.bidir {
            return Role::StreamBidir;
        }
        match (self.workload, self.direction) {
            (Workload::Stream, Direction::ClientToServer) => Role::StreamSender,
            (Workload::Stream, Direction::ServerToClient) => Role::StreamReceiver,
            (Workload::Rr, _) => Role::RrClient,
            (Workload::Crr, _) => Role::CrrClient,
            (Workload::UdpStream, _) => Role::UdpSender,
            (Workload::UdpRr, _) => Role::UdpRrClient,
        }
    }

    /// The role the server ("remote") side plays.
    pub fn remote_role(&self) -> Role {
        match self.local_role() {
            Role::StreamSender => Role::StreamReceiver,
            Role::StreamReceiver => Role::StreamSender,
            Role::StreamBidir => Role::StreamBidir,
            Role::RrClient | Role::RrServer => Role::RrServer,
            Role::CrrClient | Role::CrrServer => Role::CrrServer,
            Role::UdpSender | Role::UdpReceiver => Role::UdpReceiver,
            Role::UdpRrClient | Role::UdpRrServer => Role::UdpRrServer,
        }
    }

    /// The netperf name of this test, for banners and keyval output.
    pub fn netperf_name(&self) -> &'static str {
        if self.bidir {
            return "TCP_BIDIR";
        }
        match (self.workload, self.direction) {
            // netperf's TCP_SENDFILE is a stream whose sender splices from a file.
            (Workload::Stream, Direction::ClientToServer) if self.local.send_engine == SendEngine::Splice => {
                "TCP_SENDFILE"
            }
            (Workload::Stream, Direction::ClientToServer) => "TCP_STREAM",
            (Workload::Stream, Direction::ServerToClient) => "TCP_MAERTS",
            (Workload::Rr, _) => "TCP_RR",
            (Workload::Crr, _) => "TCP_CRR",
            (Workload::UdpStream, _) => "UDP_STREAM",
            (Workload::UdpRr, _) => "UDP_RR",
        }
    }

    /// Why the one-way delay of a UDP test's datagrams in one direction (`request`: client
    /// to server, the only one of udp-stream; else udp-rr's responses) is not measured, or
    /// `None` when it is: stamps need both sides on the ring engines and room in the
    /// datagram.
    pub fn one_way_unmeasured(&self, request: bool) -> Option<String> {
        let size = match (self.workload, request) {
            (Workload::UdpStream, true) => self.send_size,
            (Workload::UdpRr, true) => self.request_size,
            (Workload::UdpRr, false) => self.response_size,
            _ => return Some("only udp-stream and udp-rr stamp their datagrams".into()),
        };
        if [&self.local, &self.remote]
            .iter()
            .any(|s| s.send_engine.is_classic() || s.recv_engine.is_classic())
        {
            return Some("the syscall engine does not stamp datagrams".into());
        }
        (size < UDP_STAMPED_LEN).then(|| format!("datagrams smaller than {UDP_STAMPED_LEN} B"))
    }

    /// This side's CLOCK_MONOTONIC `ns` on the client's clock (see `clock_offset_ns`).
    #[inline]
    pub fn on_client_clock(&self, ns: u64) -> u64 {
        (ns as i64).wrapping_sub(self.clock_offset_ns) as u64
    }

    /// Datagrams per UDP send: one, or with GSO as many segments as one send may carry.
    pub fn udp_datagrams_per_send(&self) -> u32 {
        match self.udp.gso_segment {
            Some(seg) => (MAX_UDP_PAYLOAD / seg.max(1)).clamp(1, MAX_GSO_SEGMENTS),
            None => 1,
        }
    }
}

impl RingTuning {
    /// Checks the knobs a peer or a user controls.
    pub fn validate(&self) -> Result<()> {
        Ok(self.check()?)
    }

    /// [`validate`](Self::validate)'s checks, each refusal naming the settings at fault.
    pub fn check(&self) -> Result<(), SpecError> {
        let usage = |m: String| Err(SpecError::Invalid(m));
        if !(8..=32768).contains(&self.sq_entries) || !self.sq_entries.is_power_of_two() {
            return usage(format!(
                "ring size {} is invalid: use a power of two from 8 to 32768",
                self.sq_entries
            ));
        }
        if self.sq_batch == 0 {
            return usage(format!("{} must be at least 1", Setting::SqBatch.token()));
        }
        if self.cq_batch == 0 || self.cq_batch > 4096 {
            return Err(SpecError::out_of_range(Setting::CqBatch, self.cq_batch, "1 to 4096"));
        }
        if self.cq_batch > 1 && self.cq_wait_us == 0 {
            return usage(format!(
                "{} {} needs {}: without a min-wait the last completions of a run could wait forever",
                Setting::CqBatch.token(),
                self.cq_batch,
                Setting::CqWait.token()
            ));
        }
        if let (Some(t), Some(_)) = (self.task_run, self.sqpoll) {
            return usage(format!(
                "{} {} and {} exclude each other (the kernel refuses task-run modes with an SQ thread): drop one",
                Setting::TaskRun.token(),
                t.name(),
                Setting::Sqpoll.token()
            ));
        }
        if self.cq_wait_us > 1_000_000 {
            return usage(format!("{} {} is over one second", Setting::CqWait.token(), self.cq_wait_us));
        }
        if self.send_depth == 0 || self.send_depth > 64 {
            return Err(SpecError::out_of_range(Setting::SendDepth, self.send_depth, "1 to 64"));
        }
        if self.recv_depth == 0 || self.recv_depth > 64 {
            return Err(SpecError::out_of_range(Setting::RecvDepth, self.recv_depth, "1 to 64"));
        }
        if self.buf_count == 0 || self.buf_count > 32768 || !self.buf_count.is_power_of_two() {
            return usage(format!(
                "{} {} is invalid: provided-buffer rings need a power of two from 1 to 32768",
                Setting::BufCount.token(),
                self.buf_count
            ));
        }
        if self.buf_size < 64 || u64::from(self.buf_size) * u64::from(self.buf_count) > MAX_SIZE {
            return Err(SpecError::out_of_range(
                Setting::BufSize,
                self.buf_size,
                "at least 64 bytes, and buf-count x buf-size up to 1 GiB",
            ));
        }
        if let Some(us) = self.napi_busy_poll_us {
            if us == 0 || us > 1_000_000 {
                return Err(SpecError::out_of_range(Setting::NapiBusyPoll, us, "1 to 1000000"));
            }
        }
        Ok(())
    }
}

/// What one side's worker does with its flows.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    StreamSender,
    StreamReceiver,
    /// Both at once (--bidir): some workers send, others receive.
    StreamBidir,
    RrClient,
    RrServer,
    CrrClient,
    CrrServer,
    UdpSender,
    UdpReceiver,
    UdpRrClient,
    UdpRrServer,
}

impl Role {
    /// Roles that report transactions and (client side) their latency.
    pub fn is_transactional(self) -> bool {
        matches!(
            self,
            Role::RrClient
                | Role::RrServer
                | Role::CrrClient
                | Role::CrrServer
                | Role::UdpRrClient
                | Role::UdpRrServer
        )
    }
}

/// Datagrams per linked chain of a UDP sender's sends when --send-depth is not given.
const UDP_CHAIN_DATAGRAMS: u32 = 32;

/// Sends per chain when the user gives no --send-depth: 32 datagrams' worth, since one
/// datagram per io_uring_enter caps small datagrams far below what the stack can do.
fn udp_chain_sends(datagrams_per_send: u32) -> u32 {
    (UDP_CHAIN_DATAGRAMS / datagrams_per_send.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use Harness;

    /// `workload`'s default spec on the ring's engines, which every feature takes.
    fn ring(workload: Workload) -> TestSpec {
        TestSpec::for_workload(workload).on_harness(Harness::IoUring)
    }

    /// A byte count ends a one-way stream on ring engines; elsewhere nothing would honour it.
    #[test]
    fn a_byte_count_needs_a_one_way_ring_stream() {
        let counted = TestSpec { byte_limit: Some(1000), ..TestSpec::default() };
        assert!(counted.validate().is_ok());
        let reverse = TestSpec { direction: Direction::ServerToClient, ..counted.clone() };
        assert!(reverse.validate().is_ok());
        let mut classic_receiver = reverse.clone();
        classic_receiver.local.recv_engine = RecvEngine::Syscall;
        let mut classic_sender = counted.clone();
        classic_sender.local.send_engine = SendEngine::Syscall;
        let rr = TestSpec { byte_limit: Some(1000), ..TestSpec::for_workload(Workload::Rr) };
        let rr_counted = TestSpec { transaction_limit: Some(10), ..ring(Workload::Rr) };
        assert!(rr_counted.validate().is_ok());
        let open = TestSpec {
            open_loop: Some(OpenLoop { rate: 100, total: false, backlog: 8 }),
            ..rr_counted.clone()
        };
        assert!(open.validate().is_err(), "an open loop keeps its schedule, not a count");
        assert!(
            TestSpec { transaction_limit: Some(10), ..counted.clone() }.validate().is_err(),
            "a stream counts bytes"
        );
        for w in [Workload::Crr, Workload::UdpRr] {
            let t = TestSpec { transaction_limit: Some(10), ..ring(w) };
            assert!(t.validate().is_ok(), "{w:?} counts transactions");
        }
        let udp = TestSpec { byte_limit: Some(1000), ..TestSpec::for_workload(Workload::UdpStream) };
        assert!(udp.validate().is_ok(), "udp-stream counts the client's bytes");
        let udp_reverse = TestSpec { direction: Direction::ServerToClient, ..udp.clone() };
        for bad in [
            udp_reverse,
            TestSpec { transaction_limit: Some(10), ..udp },
            TestSpec { byte_limit: Some(0), ..counted.clone() },
            TestSpec { bidir: true, ..counted.clone() },
            classic_receiver,
            classic_sender,
            rr,
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn default_spec_is_valid_and_roles_pair_up() {
        let mut s = TestSpec::default();
        s.validate().unwrap();
        assert_eq!(s.local_role(), Role::StreamSender);
        assert_eq!(s.remote_role(), Role::StreamReceiver);
        s.direction = Direction::ServerToClient;
        assert_eq!(s.local_role(), Role::StreamReceiver);
        assert_eq!(s.remote_role(), Role::StreamSender);
        s.workload = Workload::Rr;
        assert_eq!(s.remote_role(), Role::RrServer);
    }

    #[test]
    fn validate_rejects_what_a_peer_could_abuse() {
        let bad = [
            TestSpec { duration_ms: 0, ..TestSpec::default() },
            TestSpec { flows: 1_000_000_000, ..TestSpec::default() },
            TestSpec { send_size: 0, ..TestSpec::default() },
            TestSpec { response_size: u32::MAX, ..TestSpec::default() },
            TestSpec { congestion_control: Some("../etc".into()), ..TestSpec::default() },
            TestSpec { ring: RingTuning { sq_entries: 3, ..RingTuning::default() }, ..TestSpec::default() },
            TestSpec { ring: RingTuning { cq_batch: 8, ..RingTuning::default() }, ..TestSpec::default() },
            TestSpec { ring: RingTuning { buf_count: 3, ..RingTuning::default() }, ..TestSpec::default() },
            TestSpec { require_zero_copy: true, ..TestSpec::default() },
        ];
        for s in bad {
            assert!(matches!(s.validate(), Err(Error::Usage(_))), "{s:?} was accepted");
        }
    }

    /// Open loop is rr's, through the ring, with a backlog of its own within a burst's
    /// bounds; closed-loop specs leave it out of the wire message.
    #[test]
    fn open_loop_is_rrs_and_its_interval_spreads_a_total_over_the_flows() {
        let rr = ring(Workload::Rr);
        assert!(!serde_json::to_string(&rr).expect("json").contains("open_loop"));
        let per_flow = OpenLoop { rate: 2000, total: false, backlog: DEFAULT_BACKLOG };
        let open = TestSpec { open_loop: Some(per_flow), flows: 4, ..rr.clone() };
        assert!(open.validate().is_ok());
        assert_eq!(open.rr_depth(), DEFAULT_BACKLOG);
        let udp_open = TestSpec { open_loop: Some(per_flow), ..ring(Workload::UdpRr) };
        assert!(udp_open.validate().is_ok(), "udp-rr keeps a schedule too");
        assert_eq!(per_flow.interval_ns(4), 500_000);
        assert_eq!(OpenLoop { total: true, ..per_flow }.interval_ns(4), 2_000_000);
        assert_eq!(OpenLoop { rate: 3, total: true, ..per_flow }.interval_ns(4), 1_333_333_333);
        let back: TestSpec =
            serde_json::from_str(&serde_json::to_string(&open).expect("json")).expect("parse");
        assert_eq!(back, open);
        let classic = SideSpec {
            send_engine: SendEngine::Syscall,
            recv_engine: RecvEngine::Syscall,
            ..SideSpec::default()
        };
        for (s, says) in [
            (TestSpec { open_loop: Some(per_flow), ..TestSpec::for_workload(Workload::Crr) }, "udp-rr only"),
            (
                TestSpec { open_loop: Some(OpenLoop { rate: 0, ..per_flow }), ..rr.clone() },
                "{open-loop-rate} 0",
            ),
            (TestSpec { open_loop: Some(per_flow), burst: 4, ..rr.clone() }, "drop {burst}"),
            (TestSpec { open_loop: Some(OpenLoop { backlog: 0, ..per_flow }), ..rr.clone() }, "{backlog} 0"),
            (
                TestSpec {
                    open_loop: Some(OpenLoop { backlog: MAX_BURST, ..per_flow }),
                    flows: 4096,
                    ..rr.clone()
                },
                "lower {backlog} or {flows}",
            ),
            (
                TestSpec {
                    open_loop: Some(per_flow),
                    local: classic.clone(),
                    remote: classic.clone(),
                    ..rr.clone()
                },
                "syscall engine",
            ),
            (TestSpec { local: classic.clone(), remote: classic, ..udp_open }, "drop {open-loop-rate}"),
        ] {
            match s.validate() {
                Err(Error::Usage(m)) => assert!(m.contains(says), "{m}"),
                other => panic!("{s:?}: expected a usage error saying {says:?}, got {other:?}"),
            }
        }
    }

    /// A burst is rr's, through the ring, within its bound; a default spec leaves it out of
    /// the wire message, so a server that predates it still takes the spec.
    #[test]
    fn a_burst_is_rrs_through_the_ring_and_absent_from_a_default_spec() {
        let rr = ring(Workload::Rr);
        assert!(!serde_json::to_string(&rr).expect("json").contains("burst"));
        let back: TestSpec = serde_json::from_str(&serde_json::to_string(&rr).expect("json")).expect("parse");
        assert_eq!(back.burst, 1);
        assert!(TestSpec { burst: 16, ..rr.clone() }.validate().is_ok());
        let udp_rr = ring(Workload::UdpRr);
        assert!(TestSpec { burst: 16, ..udp_rr.clone() }.validate().is_ok(), "udp-rr bursts too");
        let many = TestSpec { burst: MAX_BURST, flows: 4096, ..rr.clone() };
        assert!(many.validate().unwrap_err().to_string().contains("lower {burst} or {flows}"));
        assert!(serde_json::to_string(&TestSpec { burst: 16, ..rr.clone() })
            .expect("json")
            .contains("\"burst\":16"));
        let classic = SideSpec {
            send_engine: SendEngine::Syscall,
            recv_engine: RecvEngine::Syscall,
            ..SideSpec::default()
        };
        let bad = [
            TestSpec { burst: 0, ..rr.clone() },
            TestSpec { burst: MAX_BURST + 1, ..rr.clone() },
            TestSpec { burst: 2, ..TestSpec::for_workload(Workload::Crr) },
            TestSpec { burst: 2, ..TestSpec::for_workload(Workload::Stream) },
            TestSpec { burst: 2, local: classic.clone(), remote: classic.clone(), ..rr },
            TestSpec { burst: 2, local: classic.clone(), remote: classic, ..udp_rr },
        ];
        for s in bad {
            assert!(
                matches!(s.validate(), Err(Error::Usage(_))),
                "burst {} of {:?} was accepted",
                s.burst,
                s.workload
            );
        }
    }
}
