//! What a server lets one client ask for. `TestSpec::validate` rejects what no ringperf
//! would ever run; these limits are the operator's own, tighter bounds, and each refusal
//! names the limit, its value and what the client can do instead.

use ringperf_core::error::{Error, Result};
use ringperf_core::setting::Setting;
use ringperf_core::spec::{RecvEngine, Role, SendEngine, SideSpec, TestSpec, MAX_DURATION_MS, MAX_FLOWS};
use ringperf_engine::io::send::{zc_arena_bytes_per_flow, zc_slots_per_flow, ZC_STREAM_UNNOTIFIED_BYTES};

/// The operator's limits. The defaults let any valid spec through except ones that would
/// make the server allocate more than [`Limits::max_memory`] or a message over 64 MiB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest test, in milliseconds (`--max-duration`).
    pub max_duration_ms: u64,
    /// Most data connections per test (`--max-flows`).
    pub max_flows: u32,
    /// Most tests running at once (`--max-sessions`); the next client is told to retry.
    pub max_sessions: usize,
    /// Most connections that have not yet authenticated (`--max-handshakes`); past it the
    /// oldest is closed, so a flood of silent connections cannot lock others out.
    pub max_handshakes: usize,
    /// Highest send rate of one session, in bits/s (`--max-rate`): a session must ask for
    /// a rate at or below it (`-b`), and whatever it asked, the server paces what it sends
    /// in every workload to it (a stream, responses, datagrams) and holds a stream it
    /// receives to it.
    pub max_rate_bps: Option<u64>,
    /// Largest message, request, response or receive buffer (`--max-message`).
    pub max_message: u64,
    /// Most payload memory the server's side of one session may allocate (`--max-memory`).
    pub max_memory: u64,
    /// Most payload memory all live sessions together may hold (`--max-total-memory`):
    /// each test reserves its estimate when its spec is accepted and frees it when it ends.
    pub max_total_memory: u64,
    /// Most sessions from one source address (`--max-sessions-per-host`), logged-in ones
    /// waiting for their spec included, so one host cannot take every slot.
    pub max_sessions_per_host: usize,
}

/// Default for `--max-sessions`.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// Default for `--max-handshakes`.
pub const DEFAULT_MAX_HANDSHAKES: usize = 128;
/// Default for `--max-message`: far above any message a network test needs, far below
/// what would hurt a host.
pub const DEFAULT_MAX_MESSAGE: u64 = 64 << 20;
/// Default for `--max-memory`.
pub const DEFAULT_MAX_MEMORY: u64 = 1 << 30;
/// Default for `--max-sessions-per-host`.
pub const DEFAULT_MAX_SESSIONS_PER_HOST: usize = 8;
/// `--max-total-memory` where /proc/meminfo cannot be read.
const FALLBACK_TOTAL_MEMORY: u64 = 4 << 30;

/// Default for `--max-total-memory`: a quarter of the host's memory (MemTotal), leaving
/// the rest to the kernel's socket buffers, the page cache and everything else on it.
pub fn default_total_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .as_deref()
        .and_then(mem_total)
        .map_or(FALLBACK_TOTAL_MEMORY, |total| total / 4)
}

/// MemTotal in bytes from the text of /proc/meminfo ("MemTotal:  24563432 kB").
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_duration_ms: MAX_DURATION_MS,
            max_flows: MAX_FLOWS,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_handshakes: DEFAULT_MAX_HANDSHAKES,
            max_rate_bps: None,
            max_message: DEFAULT_MAX_MESSAGE,
            max_memory: DEFAULT_MAX_MEMORY,
            max_total_memory: default_total_memory(),
            max_sessions_per_host: DEFAULT_MAX_SESSIONS_PER_HOST,
        }
    }
}

impl Limits {
    /// Checks a (valid) spec against the limits for a server running its server side; the
    /// error is a usage error the client shows as is.
    pub fn check(&self, spec: &TestSpec) -> Result<()> {
        self.check_side(spec, false)
    }

    /// [`Limits::check`] for the side this host runs: the server's (`local` false) or, for
    /// an agent's third-party run, the client's (`local` true), whose payload memory is
    /// what `--max-memory` bounds then.
    pub fn check_side(&self, spec: &TestSpec, local: bool) -> Result<()> {
        let refuse = |m: String| Err(Error::Usage(m));
        if spec.duration_ms > self.max_duration_ms {
            return refuse(format!(
                "this server allows tests of at most {} s ({} {}): ask for {} {} or less",
                secs(self.max_duration_ms),
                Setting::MaxDuration.token(),
                secs(self.max_duration_ms),
                Setting::Duration.token(),
                secs(self.max_duration_ms)
            ));
        }
        if spec.connections() > self.max_flows {
            // --bidir opens two connections per flow.
            let most = self.max_flows / (spec.connections() / spec.flows.max(1)).max(1);
            return refuse(format!(
                "this server allows at most {} flows per test ({} {}): ask for {} {most} or fewer",
                self.max_flows,
                Setting::MaxFlows.token(),
                self.max_flows,
                Setting::Flows.token()
            ));
        }
        let sizes = [
            (Setting::SendSize, u64::from(spec.send_size)),
            (Setting::RecvSize, u64::from(spec.recv_size)),
            (Setting::RequestSize, u64::from(spec.request_size)),
            (Setting::ResponseSize, u64::from(spec.response_size)),
            (Setting::BufSize, u64::from(spec.ring.buf_size)),
        ];
        for (what, n) in sizes {
            if n > self.max_message {
                return refuse(format!(
                    "{} ({}) of {n} bytes is over this server's {} of {} bytes: use a smaller size",
                    what.words().trim_start_matches("the "),
                    what.token(),
                    Setting::MaxMessage.token(),
                    self.max_message
                ));
            }
        }
        let roles = spec.group_roles(false);
        let memory = side_memory(spec, local);
        if memory > self.max_memory {
            let who = if local { "this agent's client side" } else { "the server" };
            return refuse(format!(
                "this test would make {who} allocate about {} MiB of payload buffers, over its {} of {} MiB: use fewer flows or smaller sizes",
                memory >> 20,
                Setting::MaxMemory.token(),
                self.max_memory >> 20
            ));
        }
        if let Some(max) = self.max_rate_bps {
            if roles.contains(&Role::StreamReceiver) && spec.remote.recv_engine.is_classic() {
                return refuse(format!(
                    "this server holds what it receives to {max} bit/s ({}) with ring timers, which the syscall receive engine has not: use {} recv, multishot, bundle or trunc",
                    Setting::MaxRate.token(),
                    Setting::RecvEngine.token()
                ));
            }
            // What the client's pacing (-b, --flow-rate) adds up to over its flows. Each side
            // paces what it sends to it: this server's sending is the stream of maerts or
            // bidir, and the responses of rr, crr and udp-rr, which are paced like the
            // requests however large they are; the server paces to this limit even if the
            // client asked for more (see `pacer::flow_send_rate_bps`).
            match spec.pacing.effective_total_bps(spec.flows) {
                Some(r) if r <= max => {}
                Some(r) => {
                    return refuse(format!(
                    "a rate of {r} bit/s is over this server's {} of {max} bit/s: ask for {} {max} or less",
                    Setting::MaxRate.token(),
                    Setting::TotalRate.token()
                ))
                }
                None => {
                    return refuse(format!(
                        "this server limits each session to {max} bit/s ({}): pass {} {max} or less",
                        Setting::MaxRate.token(),
                        Setting::TotalRate.token()
                    ))
                }
            }
        }
        Ok(())
    }
}

fn secs(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        (ms / 1000).to_string()
    } else {
        format!("{:.3}", ms as f64 / 1000.0)
    }
}

/// Payload memory the server's side of `spec` allocates, over all its groups of workers:
/// what one session reserves of `--max-total-memory`.
pub fn session_memory(spec: &TestSpec) -> u64 {
    side_memory(spec, false)
}

/// Payload memory one side of `spec` allocates over all its groups of workers: the
/// server's (`local` false), or the client's (`local` true), which an agent runs for a
/// third-party request and reserves instead.
pub fn side_memory(spec: &TestSpec, local: bool) -> u64 {
    let side = if local { &spec.local } else { &spec.remote };
    spec.group_roles(local).iter().fold(0u64, |m, &role| m.saturating_add(payload_memory(spec, role, side)))
}

/// Payload memory the workers of one group of `role` allocate for `spec` (user buffers,
/// the splice memfd and the pipes a root process may grow past pipe-max-size), in bytes.
/// An estimate from above: what the send and receive paths size their buffers by, once
/// per worker for what a worker shares between its flows.
pub fn payload_memory(spec: &TestSpec, role: Role, side: &SideSpec) -> u64 {
    let flows = u64::from(spec.flows);
    let workers = spec.workers() as u64;
    let (send_len, recv_len) = match role {
        Role::StreamSender => (u64::from(spec.send_size), 0),
        Role::StreamReceiver => (0, u64::from(spec.recv_size)),
        Role::StreamBidir => (u64::from(spec.send_size), u64::from(spec.recv_size)),
        Role::RrClient => (u64::from(spec.request_size), u64::from(spec.response_size)),
        Role::RrServer => (u64::from(spec.response_size), u64::from(spec.request_size)),
        Role::CrrClient | Role::UdpRrClient => (u64::from(spec.request_size), u64::from(spec.response_size)),
        Role::CrrServer | Role::UdpRrServer => (u64::from(spec.response_size), u64::from(spec.request_size)),
        // A UDP send carries up to 64 datagrams with GSO; a GRO receive as many.
        Role::UdpSender => (u64::from(spec.send_size) * u64::from(spec.udp_datagrams_per_send()), 0),
        Role::UdpReceiver => (0, u64::from(spec.recv_size) * 64),
    };
    let mut total = 0u64;
    if send_len > 0 {
        let depth = if matches!(role, Role::StreamSender | Role::StreamBidir | Role::UdpSender) {
            u64::from(spec.ring.send_depth)
        } else {
            1
        };
        // Saturating: a spec that did not pass validate() must not overflow here either.
        total = total.saturating_add(match side.send_engine {
            // A UDP sender numbers every datagram of a chain: a buffer per send in flight.
            SendEngine::Copy if role == Role::UdpSender => {
                flows.saturating_mul(depth).saturating_mul(send_len)
            }
            // udp-rr: a buffer per send a flow keeps in flight (several with a burst or
            // a backlog).
            SendEngine::Copy if matches!(role, Role::UdpRrClient | Role::UdpRrServer) => {
                let sends = ringperf_engine::workload::udp_rr::udp_rr_send_depth(spec.rr_depth()) as u64;
                flows.saturating_mul(sends).saturating_mul(send_len)
            }
            SendEngine::Copy => workers.saturating_mul(send_len),
            // One patterned buffer per worker, a pattern period longer than a send.
            SendEngine::Syscall | SendEngine::MsgZerocopy => {
                workers.saturating_mul(send_len.saturating_add(251))
            }
            // Every flow of a worker has the zero-copy buffers `zc_slots_per_flow` gives it
            // (a stream as if no memory lock limit shrank them); the busiest worker's
            // share, for every worker.
            SendEngine::Zc | SendEngine::ZcMsg => {
                let streaming = matches!(role, Role::StreamSender | Role::StreamBidir);
                let unnotified = if streaming { ZC_STREAM_UNNOTIFIED_BYTES } else { 0 };
                let per_worker = flows.div_ceil(workers.max(1));
                let len = usize::try_from(send_len).unwrap_or(usize::MAX);
                let slots = zc_slots_per_flow(len, depth as usize, per_worker as usize, unnotified);
                let region = zc_arena_bytes_per_flow(len, slots) as u64;
                workers.saturating_mul(per_worker).saturating_mul(region)
            }
            // memfd span plus its fill buffer, and one pipe per flow holding a chain's sends
            // (at most pipe-max-size, 1 MiB by default).
            SendEngine::Splice => {
                workers.saturating_mul(2 * (send_len.max(1 << 20) + send_len)).saturating_add(
                    flows.saturating_mul(depth.saturating_mul(send_len).saturating_add(4096).min(1 << 20)),
                )
            }
        });
    }
    if recv_len > 0 {
        total = total.saturating_add(match side.recv_engine {
            // udp-rr's standing receives land in a provided-buffer ring per worker.
            RecvEngine::Recv if matches!(role, Role::UdpRrClient | Role::UdpRrServer) => {
                let per_worker = flows.div_ceil(workers.max(1));
                let count = ringperf_engine::workload::udp_rr::udp_rr_recv_buffers(
                    usize::try_from(per_worker).unwrap_or(usize::MAX),
                    spec.rr_depth(),
                );
                workers.saturating_mul(u64::from(count)).saturating_mul(recv_len)
            }
            // A checked chain lands each of its receives in a buffer of its own.
            RecvEngine::Recv if spec.verify => {
                let depth = if role == Role::StreamReceiver { u64::from(spec.ring.recv_depth) } else { 1 };
                flows.saturating_mul(depth).saturating_mul(recv_len)
            }
            RecvEngine::Recv | RecvEngine::Trunc | RecvEngine::Syscall => workers.saturating_mul(recv_len),
            // A receive buffer and a 16 KiB copy buffer per worker; the windows map the
            // socket's own pages.
            RecvEngine::ZerocopyReceive => workers.saturating_mul(recv_len.saturating_add(16 << 10)),
            // Unchecked provided buffers share one landing area (see `buf::BufRing`).
            RecvEngine::Multishot | RecvEngine::Bundle => {
                let count = if spec.verify { u64::from(spec.ring.buf_count) } else { 1 };
                workers.saturating_mul(count * u64::from(spec.ring.buf_size))
            }
        });
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::spec::{Pacing, Workload};

    fn refused(l: &Limits, s: &TestSpec, needle: &str) {
        match l.check(s) {
            Err(Error::Usage(m)) => assert!(m.contains(needle), "'{m}' lacks '{needle}'"),
            other => panic!("expected a refusal naming '{needle}', got {other:?}"),
        }
    }

    #[test]
    fn defaults_let_ordinary_tests_through() {
        Limits::default().check(&TestSpec::default()).unwrap();
        let rr = TestSpec { workload: Workload::Rr, ..TestSpec::default() };
        Limits::default().check(&rr).unwrap();
    }

    #[test]
    fn each_limit_refuses_with_its_name_and_value() {
        let l = Limits { max_duration_ms: 5000, max_flows: 4, max_message: 1 << 20, ..Limits::default() };
        let short = TestSpec { duration_ms: 1000, ..TestSpec::default() };
        l.check(&short).unwrap();
        refused(&l, &TestSpec { duration_ms: 6000, ..short.clone() }, "{max-duration} 5");
        refused(&l, &TestSpec { flows: 5, ..short.clone() }, "{max-flows} 4");
        refused(&l, &TestSpec { recv_size: 2 << 20, ..short }, "{max-message} of 1048576");
        let l = Limits { max_memory: 64 << 20, ..Limits::default() };
        // Checked one-shot receives: a buffer per flow and place in its chain.
        let mut big = TestSpec { flows: 1000, recv_size: 1 << 20, verify: true, ..TestSpec::default() };
        big.remote.recv_engine = RecvEngine::Recv;
        refused(&l, &big, "{max-memory} of 64 MiB");
        let l = Limits { max_rate_bps: Some(1_000_000), ..Limits::default() };
        refused(&l, &TestSpec::default(), "pass {total-rate} 1000000");
        let paced = |total_bps, per_flow_bps, flows| TestSpec {
            pacing: Pacing { total_bps, per_flow_bps },
            flows,
            ..TestSpec::default()
        };
        refused(&l, &paced(Some(2_000_000), None, 1), "{total-rate} 1000000 or less");
        // Every workload is paced: rr, crr and udp-rr are held to the limit like a stream
        // (each side's -b is what it sends: the server's responses however large), and
        // must ask for a rate within it like a stream.
        for workload in [Workload::Rr, Workload::Crr, Workload::UdpRr] {
            let big = TestSpec { workload, request_size: 64, response_size: 60_000, ..TestSpec::default() };
            refused(&l, &big, "pass {total-rate} 1000000");
            let asked = |total| TestSpec {
                pacing: Pacing { total_bps: Some(total), per_flow_bps: None },
                ..big.clone()
            };
            l.check(&asked(1_000_000)).unwrap();
            refused(&l, &asked(1_000_001), "{total-rate} 1000000 or less");
        }
        l.check(&paced(Some(1_000_000), None, 1)).unwrap();
        // --flow-rate counts for every flow; -b with it is the tighter of the two.
        refused(&l, &paced(None, Some(600_000), 2), "{total-rate} 1000000 or less");
        l.check(&paced(None, Some(500_000), 2)).unwrap();
        l.check(&paced(Some(4_000_000), Some(500_000), 2)).unwrap();
        let bidir = TestSpec { bidir: true, flows: 3, duration_ms: 1000, ..TestSpec::default() };
        let l = Limits { max_flows: 4, ..Limits::default() };
        refused(&l, &bidir, "{flows} 2 or fewer");
    }

    /// The probe's third-party run: 64 MiB zero-copy sends on 8 flows and 8 threads. The
    /// server's side receives into 4 KiB buffers (the 32 KiB the agent reserved); the client
    /// side, which the agent runs, holds gigabytes of arena, and that is what is checked.
    #[test]
    fn an_agent_checks_the_client_side_it_runs() {
        let mut s =
            TestSpec { send_size: 64 << 20, recv_size: 4096, flows: 8, threads: 8, ..TestSpec::default() };
        s.local.send_engine = SendEngine::Zc;
        s.remote.recv_engine = RecvEngine::Recv;
        assert_eq!(side_memory(&s, false), 8 * 4096);
        assert_eq!(side_memory(&s, false), session_memory(&s));
        let client = side_memory(&s, true);
        assert_eq!(client, payload_memory(&s, Role::StreamSender, &s.local));
        assert!(client > 3 << 30, "the client side's estimate is {client} bytes");
        let l = Limits { max_memory: 64 << 20, ..Limits::default() };
        l.check(&s).unwrap();
        match l.check_side(&s, true) {
            Err(Error::Usage(m)) => {
                assert!(m.contains("client side") && m.contains("{max-memory} of 64 MiB"), "{m}")
            }
            other => panic!("the client side was not refused: {other:?}"),
        }
        // --bidir: both groups of each side, with that side's engines.
        let b = TestSpec { bidir: true, ..s.clone() };
        assert_eq!(side_memory(&b, true), client + payload_memory(&b, Role::StreamReceiver, &b.local));
    }

    #[test]
    fn total_memory_defaults_to_a_quarter_of_mem_total() {
        let meminfo = "MemTotal:       24563432 kB\nMemFree:         1000 kB\n";
        assert_eq!(mem_total(meminfo), Some(24_563_432 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert!(default_total_memory() > 0);
    }

    #[test]
    fn memory_estimate_follows_the_engines() {
        // One receive in flight per flow (a default spec chains 4).
        let mut s = TestSpec { flows: 8, ..TestSpec::default() };
        s.remote.recv_engine = RecvEngine::Recv;
        s.ring.recv_depth = 1;
        let one = payload_memory(&s, Role::StreamReceiver, &s.remote);
        assert_eq!(one, u64::from(s.recv_size));
        let v = TestSpec { verify: true, ..s.clone() };
        assert_eq!(payload_memory(&v, Role::StreamReceiver, &v.remote), 8 * one);
        let threads = TestSpec { threads: 4, ..s.clone() };
        assert_eq!(
            payload_memory(&threads, Role::StreamReceiver, &threads.remote),
            4 * one,
            "one buffer per worker"
        );
        let mut udp = TestSpec { flows: 2, send_size: 64, ..TestSpec::default() };
        udp.ring.send_depth = 32;
        assert_eq!(
            payload_memory(&udp, Role::UdpSender, &udp.local),
            2 * 32 * 64,
            "a buffer per send in flight"
        );
        // udp-rr lands its responses in a provided-buffer ring per worker: two buffers per
        // flow, at least 64.
        let mut udp_rr = TestSpec {
            workload: Workload::UdpRr,
            flows: 1000,
            request_size: 8,
            response_size: 100,
            ..TestSpec::default()
        };
        // udp-rr's own engines (the default spec is a stream's).
        udp_rr.local.recv_engine = RecvEngine::Recv;
        udp_rr.remote.recv_engine = RecvEngine::Recv;
        assert_eq!(
            payload_memory(&udp_rr, Role::UdpRrClient, &udp_rr.local),
            1000 * 8 + 2048 * 100,
            "a request buffer per flow and the response ring"
        );
        // With 16 outstanding per flow: 8 sends in flight per flow, and two receive
        // buffers per request outstanding, up to the ring's 32768.
        let burst = TestSpec { burst: 16, flows: 4, ..udp_rr.clone() };
        assert_eq!(payload_memory(&burst, Role::UdpRrServer, &burst.remote), 4 * 8 * 100 + 128 * 8);
        let deep = TestSpec { burst: 4096, flows: 8, ..udp_rr.clone() };
        assert_eq!(payload_memory(&deep, Role::UdpRrClient, &deep.local), 8 * 8 * 8 + 32_768 * 100);
        // A zero-copy stream sender's region covers 4 MiB of unnotified sends per worker,
        // and one send more.
        let mut zc = TestSpec { send_size: 1024, ..TestSpec::default() };
        zc.local.send_engine = SendEngine::Zc;
        zc.ring.send_depth = 4;
        let one = payload_memory(&zc, Role::StreamSender, &zc.local);
        assert_eq!(one, zc_arena_bytes_per_flow(1024, 4096) as u64);
        assert!(((4 << 20) + 1024..(4 << 20) + 4096).contains(&one), "{one}");
        let two = TestSpec { flows: 2, threads: 2, ..zc.clone() };
        assert_eq!(payload_memory(&two, Role::StreamSender, &two.local), 2 * one, "per worker");
        let shared = TestSpec { flows: 2, ..zc.clone() };
        let half = zc_arena_bytes_per_flow(1024, 2048) as u64;
        assert_eq!(payload_memory(&shared, Role::StreamSender, &shared.local), 2 * half, "flows share");
        // Request/response keeps one buffer more than its single send in flight.
        let mut rr = TestSpec { workload: Workload::Rr, request_size: 1024, ..zc.clone() };
        rr.local.recv_engine = RecvEngine::Recv;
        assert_eq!(
            payload_memory(&rr, Role::RrClient, &rr.local),
            zc_arena_bytes_per_flow(1024, 2) as u64 + u64::from(rr.response_size)
        );
    }
}
