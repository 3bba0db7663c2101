//! TCP_INFO per data connection: what the kernel's TCP state machine did, read with one
//! getsockopt per flow at interval ticks and at the end (never per operation).

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use crate::measure::tcp_limits::{Chronos, Limits};

/// The TCP_INFO fields a performance report needs, for one flow.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct TcpFlowInfo {
    pub total_retrans: u32,
    pub snd_cwnd: u32,
    pub snd_mss: u32,
    /// Smoothed RTT and its variance, microseconds.
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub delivery_rate_bps: u64,
    pub pacing_rate_bps: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub data_segs_out: u32,
    pub data_segs_in: u32,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub bytes_retrans: u64,
    /// Segments the peer acknowledged (SACKed included), and of them those it echoed as
    /// CE-marked (ECN): `None` where this kernel lacks the field (see [`TcpReport::missing`]).
    #[serde(default)]
    pub delivered: Option<u32>,
    #[serde(default)]
    pub delivered_ce: Option<u32>,
    /// Reorderings the sender detected.
    #[serde(default)]
    pub reord_seen: Option<u32>,
    /// The smallest RTT the connection saw (windowed), µs; `None` also before a sample.
    #[serde(default)]
    pub min_rtt_us: Option<u32>,
    /// Bytes written to the socket and not yet sent, at the end.
    #[serde(default)]
    pub notsent_bytes: Option<u32>,
    /// Who held the flow back over the window (absent where the kernel keeps no
    /// chronographs, and from reports of versions before they were read).
    #[serde(default)]
    pub limits: Option<Limits>,
    /// How many bytes of tcp_info the kernel filled (0: never read).
    #[serde(skip)]
    pub filled: u32,
}

/// One tcp_info field of Linux's uapi struct: its name and where it ends. A kernel fills
/// the struct up to the size it knows, so a field that ends past the returned length is
/// one this kernel lacks.
struct Field {
    name: &'static str,
    end: usize,
}

macro_rules! field {
    ($f:ident) => {
        Field {
            name: stringify!($f),
            end: std::mem::offset_of!(libc::tcp_info, $f) + size_of_field(|t: &libc::tcp_info| &t.$f),
        }
    };
}

fn size_of_field<T>(_: impl Fn(&libc::tcp_info) -> &T) -> usize {
    std::mem::size_of::<T>()
}

/// The fields the report reads, in the struct's order.
fn fields() -> [Field; 22] {
    [
        field!(tcpi_snd_mss),
        field!(tcpi_rtt),
        field!(tcpi_rttvar),
        field!(tcpi_snd_cwnd),
        field!(tcpi_total_retrans),
        field!(tcpi_pacing_rate),
        field!(tcpi_bytes_acked),
        field!(tcpi_bytes_received),
        field!(tcpi_segs_out),
        field!(tcpi_segs_in),
        field!(tcpi_notsent_bytes),
        field!(tcpi_min_rtt),
        field!(tcpi_data_segs_in),
        field!(tcpi_data_segs_out),
        field!(tcpi_delivery_rate),
        field!(tcpi_busy_time),
        field!(tcpi_rwnd_limited),
        field!(tcpi_sndbuf_limited),
        field!(tcpi_delivered),
        field!(tcpi_delivered_ce),
        field!(tcpi_bytes_retrans),
        field!(tcpi_reord_seen),
    ]
}

/// Whether a kernel that filled `filled` bytes gave field `f`.
fn has(filled: usize, f: Field) -> bool {
    f.end <= filled
}

/// The fields of [`fields`] that a kernel filling `filled` bytes lacks.
pub fn lacking(filled: u32) -> Vec<&'static str> {
    fields().into_iter().filter(|f| f.end > filled as usize).map(|f| f.name).collect()
}

/// One TCP_INFO read of `fd`: the struct and the bytes of it the kernel filled.
fn read_raw(fd: RawFd) -> Option<(libc::tcp_info, usize)> {
    // SAFETY: tcp_info is plain old data; all-zero is valid.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `ti` is writable for `len` bytes; the kernel writes at most that much.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (r == 0).then_some((ti, len as usize))
}

impl TcpFlowInfo {
    /// Reads TCP_INFO of `fd`; `None` if the kernel refuses (not TCP, closed).
    pub fn read(fd: RawFd) -> Option<TcpFlowInfo> {
        let (ti, len) = read_raw(fd)?;
        let given = |f: Field| has(len, f);
        Some(TcpFlowInfo {
            total_retrans: ti.tcpi_total_retrans,
            snd_cwnd: ti.tcpi_snd_cwnd,
            snd_mss: ti.tcpi_snd_mss,
            rtt_us: ti.tcpi_rtt,
            rttvar_us: ti.tcpi_rttvar,
            delivery_rate_bps: ti.tcpi_delivery_rate.saturating_mul(8),
            pacing_rate_bps: if ti.tcpi_pacing_rate == u64::MAX {
                0
            } else {
                ti.tcpi_pacing_rate.saturating_mul(8)
            },
            segs_out: ti.tcpi_segs_out,
            segs_in: ti.tcpi_segs_in,
            data_segs_out: ti.tcpi_data_segs_out,
            data_segs_in: ti.tcpi_data_segs_in,
            bytes_acked: ti.tcpi_bytes_acked,
            bytes_received: ti.tcpi_bytes_received,
            bytes_retrans: ti.tcpi_bytes_retrans,
            delivered: given(field!(tcpi_delivered)).then_some(ti.tcpi_delivered),
            delivered_ce: given(field!(tcpi_delivered_ce)).then_some(ti.tcpi_delivered_ce),
            reord_seen: given(field!(tcpi_reord_seen)).then_some(ti.tcpi_reord_seen),
            // The kernel's "no sample yet" is ~0.
            min_rtt_us: given(field!(tcpi_min_rtt)).then_some(ti.tcpi_min_rtt).filter(|&m| m != u32::MAX),
            notsent_bytes: given(field!(tcpi_notsent_bytes)).then_some(ti.tcpi_notsent_bytes),
            limits: None,
            filled: len as u32,
        })
    }
}

impl Chronos {
    /// Reads the chronographs of `fd` now; `None` if the kernel refuses TCP_INFO or keeps
    /// none (before 4.10).
    pub fn read(fd: RawFd) -> Option<Chronos> {
        let (ti, len) = read_raw(fd)?;
        let at_ns = crate::measure::clock::monotonic_ns();
        has(len, field!(tcpi_sndbuf_limited)).then_some(Chronos {
            at_ns,
            busy_us: ti.tcpi_busy_time,
            rwnd_limited_us: ti.tcpi_rwnd_limited,
            sndbuf_limited_us: ti.tcpi_sndbuf_limited,
        })
    }
}

/// Waits, at most `limit`, until every socket in `fds` has put on the wire all it was
/// given (SIOCOUTQNSD reads 0). A send completes once its bytes are in the socket buffer,
/// not once they were transmitted: a sender that read TCP_INFO right after its last send
/// would miss the segments still queued, and count fewer than its receiver.
pub fn wait_until_sent(fds: &[RawFd], limit: Duration) {
    let give_up = Instant::now() + limit;
    for &fd in fds {
        loop {
            let mut unsent: libc::c_int = 0;
            // SAFETY: SIOCOUTQNSD writes one int to the pointer, which is valid for it.
            let r = unsafe { libc::ioctl(fd, libc::SIOCOUTQNSD, &mut unsent) };
            if r != 0 || unsent == 0 || Instant::now() >= give_up {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// TCP_INFO over all of a side's flows: per flow, summed, and how fairly they shared.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct TcpReport {
    pub flows: Vec<TcpFlowInfo>,
    pub total_retrans: u64,
    pub data_segs_out: u64,
    pub data_segs_in: u64,
    pub segs_out: u64,
    pub segs_in: u64,
    pub bytes_retrans: u64,
    pub mean_rtt_us: f64,
    pub mean_cwnd: f64,
    /// Jain's fairness index of the flows' payload bytes (1 = perfectly even); `None`
    /// with one flow.
    pub jain_fairness: Option<f64>,
    /// Who held the side's flows back over the window: the flows that sent payload summed
    /// (all flows where none did), as shares of their flow-time (flows × window). `None`
    /// where the kernel keeps no chronographs.
    #[serde(default)]
    pub limits: Option<Limits>,
    /// At the end, over the flows: segments delivered and CE-echoed, reorderings seen and
    /// bytes not yet sent (sums), and the smallest min RTT (µs). `None` where the kernel
    /// lacks the field.
    #[serde(default)]
    pub delivered: Option<u64>,
    #[serde(default)]
    pub delivered_ce: Option<u64>,
    #[serde(default)]
    pub reord_seen: Option<u64>,
    #[serde(default)]
    pub min_rtt_us: Option<u32>,
    #[serde(default)]
    pub notsent_bytes: Option<u64>,
    /// The tcp_info fields this side's kernel lacks (it filled less of the struct than
    /// they need): their figures are absent, never 0.
    #[serde(default)]
    pub missing: Vec<String>,
}

impl TcpReport {
    /// Sums `flows`; `bytes_per_flow` (what each flow moved) feeds the fairness index and
    /// `sent_per_flow` (what each flow sent) says which flows' limits are a sender's.
    pub fn new(flows: Vec<TcpFlowInfo>, bytes_per_flow: &[u64], sent_per_flow: &[u64]) -> TcpReport {
        let n = flows.len().max(1) as f64;
        let sum = |f: &dyn Fn(&TcpFlowInfo) -> u64| flows.iter().map(f).sum::<u64>();
        // A field is the side's sum only where every flow that was read has it.
        let read: Vec<&TcpFlowInfo> = flows.iter().filter(|f| f.filled > 0).collect();
        let total = |f: &dyn Fn(&TcpFlowInfo) -> Option<u32>| -> Option<u64> {
            (!read.is_empty()).then_some(())?;
            read.iter().map(|t| f(t).map(u64::from)).sum()
        };
        let senders: Vec<&Limits> = flows
            .iter()
            .zip(sent_per_flow.iter().chain(std::iter::repeat(&0)))
            .filter(|(_, &sent)| sent > 0)
            .filter_map(|(f, _)| f.limits.as_ref())
            .collect();
        let limits = if senders.is_empty() {
            Limits::sum(flows.iter().filter_map(|f| f.limits.as_ref()))
        } else {
            Limits::sum(senders)
        };
        let mut missing: Vec<String> = Vec::new();
        for f in &read {
            for name in lacking(f.filled) {
                if !missing.iter().any(|m| m == name) {
                    missing.push(name.to_string());
                }
            }
        }
        TcpReport {
            total_retrans: sum(&|f| u64::from(f.total_retrans)),
            data_segs_out: sum(&|f| u64::from(f.data_segs_out)),
            data_segs_in: sum(&|f| u64::from(f.data_segs_in)),
            segs_out: sum(&|f| u64::from(f.segs_out)),
            segs_in: sum(&|f| u64::from(f.segs_in)),
            bytes_retrans: sum(&|f| f.bytes_retrans),
            mean_rtt_us: sum(&|f| u64::from(f.rtt_us)) as f64 / n,
            mean_cwnd: sum(&|f| u64::from(f.snd_cwnd)) as f64 / n,
            jain_fairness: (bytes_per_flow.len() > 1).then(|| jain(bytes_per_flow)),
            limits,
            delivered: total(&|f| f.delivered),
            delivered_ce: total(&|f| f.delivered_ce),
            reord_seen: total(&|f| f.reord_seen),
            min_rtt_us: read.iter().filter_map(|f| f.min_rtt_us).min(),
            notsent_bytes: total(&|f| f.notsent_bytes),
            missing,
            flows,
        }
    }
}

/// Jain's fairness index: (Σx)² / (n·Σx²), 1/n (one flow took all) to 1 (all equal).
pub fn jain(x: &[u64]) -> f64 {
    let s: f64 = x.iter().map(|&v| v as f64).sum();
    let s2: f64 = x.iter().map(|&v| (v as f64) * (v as f64)).sum();
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (x.len() as f64 * s2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_bounds() {
        assert!((jain(&[5, 5, 5, 5]) - 1.0).abs() < 1e-12);
        assert!((jain(&[10, 0, 0, 0]) - 0.25).abs() < 1e-12);
        let mid = jain(&[1, 2, 3, 4]);
        assert!(mid > 0.25 && mid < 1.0);
    }

    #[test]
    fn reads_a_live_connection() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s, _) = l.accept().unwrap();
        c.write_all(&[0u8; 10_000]).unwrap();
        let t = TcpFlowInfo::read(c.as_raw_fd()).unwrap();
        assert!(t.data_segs_out >= 1 && t.snd_mss > 0 && t.snd_cwnd > 0);
        assert!(TcpFlowInfo::read(-1).is_none());
        // This kernel (6.x) fills every field the report reads: none is missing.
        assert!(lacking(t.filled).is_empty(), "{:?}", lacking(t.filled));
        assert!(t.delivered.is_some_and(|d| d >= 1) && t.delivered_ce == Some(0), "{t:?}");
        assert!(Chronos::read(c.as_raw_fd()).is_some());
    }

    #[test]
    fn a_kernel_that_fills_less_lacks_the_later_fields() {
        // A 4.9 kernel's struct ended after tcpi_delivery_rate.
        let end = std::mem::offset_of!(libc::tcp_info, tcpi_busy_time) as u32;
        let lacks = lacking(end);
        assert_eq!(lacks.first(), Some(&"tcpi_busy_time"), "{lacks:?}");
        assert!(lacks.contains(&"tcpi_delivered_ce") && !lacks.contains(&"tcpi_min_rtt"), "{lacks:?}");
        let flow = TcpFlowInfo { filled: end, ..TcpFlowInfo::default() };
        let r = TcpReport::new(vec![flow], &[1], &[1]);
        assert_eq!(r.missing.len(), lacks.len());
        assert_eq!(r.delivered, None, "a field the kernel lacks is not 0");
        assert!(r.limits.is_none());
    }
}
