//! TCP_INFO per data connection: what the kernel's TCP state machine did, read with one
//! getsockopt per flow at interval ticks and at the end (never per operation).

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The TCP_INFO fields a performance report needs, for one flow.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
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
}

impl TcpFlowInfo {
    /// Reads TCP_INFO of `fd`; `None` if the kernel refuses (not TCP, closed).
    pub fn read(fd: RawFd) -> Option<TcpFlowInfo> {
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
        if r != 0 {
            return None;
        }
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
}

impl TcpReport {
    /// Sums `flows`; `bytes_per_flow` (what each flow moved) feeds the fairness index.
    pub fn new(flows: Vec<TcpFlowInfo>, bytes_per_flow: &[u64]) -> TcpReport {
        let n = flows.len().max(1) as f64;
        let sum = |f: &dyn Fn(&TcpFlowInfo) -> u64| flows.iter().map(f).sum::<u64>();
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
    }
}
