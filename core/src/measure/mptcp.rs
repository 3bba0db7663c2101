//! Multipath TCP per data connection: whether it stayed MPTCP or fell back to plain TCP,
//! how many subflows it had and what each carried. Read once per connection at the end of
//! the window (`SOL_MPTCP` getsockopts), never per operation.
//!
//! The uapi structures are declared here (`include/uapi/linux/mptcp.h`); the kernel copies
//! at most the sizes it is given, so an older or newer kernel fills what both know and the
//! sizes it returns say which fields are real.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

use serde::{Deserialize, Serialize};

/// IPPROTO_MPTCP: the protocol number of an MPTCP socket (`socket(AF_INET, SOCK_STREAM, 262)`).
pub const IPPROTO_MPTCP: i32 = 262;
/// SOL_MPTCP: the getsockopt level of the MPTCP options.
const SOL_MPTCP: i32 = 284;
/// MPTCP_INFO: `struct mptcp_info` of the connection.
const MPTCP_INFO: i32 = 1;
/// MPTCP_FULL_INFO: the connection's info and, per subflow, its id, addresses and tcp_info.
const MPTCP_FULL_INFO: i32 = 4;
/// `mptcpi_flags`: the connection fell back to plain TCP.
const MPTCP_INFO_FLAG_FALLBACK: u32 = 1;
/// The most subflows read per connection (the kernel's path manager allows at most 8).
const MAX_SUBFLOWS: usize = 8;

/// `struct mptcp_info` (uapi). Fields after `bytes_retrans` came in later kernels; the
/// length the kernel returns says whether they are there.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawMptcpInfo {
    subflows: u8,
    add_addr_signal: u8,
    add_addr_accepted: u8,
    subflows_max: u8,
    add_addr_signal_max: u8,
    add_addr_accepted_max: u8,
    flags: u32,
    token: u32,
    write_seq: u64,
    snd_una: u64,
    rcv_nxt: u64,
    local_addr_used: u8,
    local_addr_max: u8,
    csum_enabled: u8,
    retransmits: u32,
    bytes_retrans: u64,
    bytes_sent: u64,
    bytes_received: u64,
    bytes_acked: u64,
    subflows_total: u8,
    reserved: [u8; 3],
    last_data_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
}

/// `struct mptcp_subflow_info` (uapi): the subflow's id and its two addresses, each in a
/// `__kernel_sockaddr_storage` (128 bytes, 8-aligned).
#[repr(C)]
#[derive(Clone, Copy)]
struct RawSubflowInfo {
    id: u32,
    local: libc::sockaddr_storage,
    remote: libc::sockaddr_storage,
}

/// `struct mptcp_full_info` (uapi): the arrays are the caller's, named by address.
#[repr(C)]
struct RawFullInfo {
    size_tcpinfo_kernel: u32,
    size_tcpinfo_user: u32,
    size_sfinfo_kernel: u32,
    size_sfinfo_user: u32,
    num_subflows: u32,
    size_arrays_user: u32,
    subflow_info: u64,
    tcp_info: u64,
    mptcp_info: RawMptcpInfo,
}

/// One subflow of an MPTCP connection at the end of the window, from its own tcp_info.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MptcpSubflow {
    /// The path manager's id of the subflow.
    pub id: u32,
    /// Its local and remote address and port ("" if the kernel did not say).
    pub local: String,
    pub remote: String,
    /// Payload bytes this subflow sent (tcpi_bytes_sent, retransmissions included), was
    /// acknowledged for, and received.
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub total_retrans: u32,
    /// Smoothed RTT, microseconds.
    pub rtt_us: u32,
}

/// One data connection asked to be MPTCP, at the end of the window.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MptcpFlowInfo {
    /// The connection runs as plain TCP: the peer (or something on the path) did not take
    /// MPTCP, or this side's socket was never MPTCP.
    pub fallback: bool,
    /// Subflows at the end, the first one included (`None` on fallback).
    pub subflows: Option<u32>,
    /// Connection-level payload bytes (MPTCP_INFO); `None` where the kernel lacks them.
    pub bytes_sent: Option<u64>,
    pub bytes_received: Option<u64>,
    pub bytes_retrans: Option<u64>,
    /// Each subflow (MPTCP_FULL_INFO); empty on fallback or where the kernel lacks it.
    pub subflow: Vec<MptcpSubflow>,
}

impl MptcpFlowInfo {
    /// Reads the MPTCP state of `fd`, a socket that was asked to be MPTCP. A socket the
    /// kernel answers with EOPNOTSUPP for SOL_MPTCP is plain TCP (fallen back, or accepted
    /// as TCP); `None` for anything else (a closed socket).
    pub fn read(fd: RawFd) -> Option<MptcpFlowInfo> {
        // SAFETY: mptcp_info is plain old data; all-zero is valid.
        let mut mi: RawMptcpInfo = unsafe { std::mem::zeroed() };
        let len = match getsockopt(fd, MPTCP_INFO, (&mut mi as *mut RawMptcpInfo).cast(), size_of_val(&mi)) {
            Ok(len) => len,
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                return Some(MptcpFlowInfo { fallback: true, ..MptcpFlowInfo::default() })
            }
            Err(_) => return None,
        };
        let fallback = mi.flags & MPTCP_INFO_FLAG_FALLBACK != 0;
        let has = |end: usize| len >= end;
        let subflows = if has(std::mem::offset_of!(RawMptcpInfo, subflows_total) + 1) && mi.subflows_total > 0
        {
            u32::from(mi.subflows_total)
        } else {
            // mptcpi_subflows counts the subflows beyond the first.
            u32::from(mi.subflows) + 1
        };
        let bytes = |field: u64, off: usize| has(off + 8).then_some(field);
        Some(MptcpFlowInfo {
            fallback,
            subflows: (!fallback).then_some(subflows),
            bytes_sent: bytes(mi.bytes_sent, std::mem::offset_of!(RawMptcpInfo, bytes_sent)),
            bytes_received: bytes(mi.bytes_received, std::mem::offset_of!(RawMptcpInfo, bytes_received)),
            bytes_retrans: bytes(mi.bytes_retrans, std::mem::offset_of!(RawMptcpInfo, bytes_retrans)),
            subflow: if fallback { Vec::new() } else { read_subflows(fd) },
        })
    }
}

/// Every subflow's id, addresses and tcp_info (MPTCP_FULL_INFO); empty if the kernel
/// lacks it.
fn read_subflows(fd: RawFd) -> Vec<MptcpSubflow> {
    // SAFETY: both element types are plain old data; all-zero is valid.
    let mut sf: [RawSubflowInfo; MAX_SUBFLOWS] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut ti: [libc::tcp_info; MAX_SUBFLOWS] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut full: RawFullInfo = unsafe { std::mem::zeroed() };
    full.size_tcpinfo_user = size_of::<libc::tcp_info>() as u32;
    full.size_sfinfo_user = size_of::<RawSubflowInfo>() as u32;
    full.size_arrays_user = MAX_SUBFLOWS as u32;
    full.subflow_info = sf.as_mut_ptr() as u64;
    full.tcp_info = ti.as_mut_ptr() as u64;
    if getsockopt(fd, MPTCP_FULL_INFO, (&mut full as *mut RawFullInfo).cast(), size_of_val(&full)).is_err() {
        return Vec::new();
    }
    let n = (full.num_subflows as usize).min(MAX_SUBFLOWS);
    (0..n)
        .map(|i| MptcpSubflow {
            id: sf[i].id,
            local: address(&sf[i].local).map(|a| a.to_string()).unwrap_or_default(),
            remote: address(&sf[i].remote).map(|a| a.to_string()).unwrap_or_default(),
            bytes_sent: ti[i].tcpi_bytes_sent,
            bytes_acked: ti[i].tcpi_bytes_acked,
            bytes_received: ti[i].tcpi_bytes_received,
            total_retrans: ti[i].tcpi_total_retrans,
            rtt_us: ti[i].tcpi_rtt,
        })
        .collect()
}

/// getsockopt(SOL_MPTCP, `name`) into `len` bytes at `val`: the length the kernel wrote.
fn getsockopt(fd: RawFd, name: i32, val: *mut libc::c_void, len: usize) -> std::io::Result<usize> {
    let mut l = len as libc::socklen_t;
    // SAFETY: `val` is writable for `len` bytes (and any array it names, for its size).
    let r = unsafe { libc::getsockopt(fd, SOL_MPTCP, name, val, &mut l) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(l as usize)
}

/// The IPv4 or IPv6 address in `ss`, if it holds one.
fn address(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in, which fits in the storage.
            let a: &libc::sockaddr_in = unsafe { &*(ss as *const libc::sockaddr_storage).cast() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6, which fits in the storage.
            let a: &libc::sockaddr_in6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            let port = u16::from_be(a.sin6_port);
            // A v4 peer of a dual-stack socket reads as its plain v4 address.
            Some(match ip.to_ipv4_mapped() {
                Some(v4) => SocketAddr::new(v4.into(), port),
                None => SocketAddr::V6(SocketAddrV6::new(ip, port, 0, a.sin6_scope_id)),
            })
        }
        _ => None,
    }
}

/// MPTCP's MIB counters of this network namespace (MPTcpExt in /proc/net/netstat) that
/// say how each connection's handshake ended, for crr, whose connections close within their
/// cycle and cannot be read at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MptcpMib {
    /// Client: SYN/ACKs that carried MP_CAPABLE, and those that did not (a fallback).
    pub synack_rx: u64,
    pub fallback_synack: u64,
    /// Server: third ACKs that carried MP_CAPABLE, and those that did not.
    pub ack_rx: u64,
    pub fallback_ack: u64,
}

impl MptcpMib {
    /// The counters now; `None` where the kernel has none (no MPTCP).
    pub fn read() -> Option<MptcpMib> {
        MptcpMib::parse(&std::fs::read_to_string("/proc/net/netstat").ok()?)
    }

    fn parse(text: &str) -> Option<MptcpMib> {
        let mut rows = text.lines().filter(|l| l.starts_with("MPTcpExt:"));
        let (names, values) = (rows.next()?, rows.next()?);
        let get = |name: &str| -> Option<u64> {
            let at = names.split_whitespace().position(|n| n == name)?;
            values.split_whitespace().nth(at)?.parse().ok()
        };
        Some(MptcpMib {
            synack_rx: get("MPCapableSYNACKRX")?,
            fallback_synack: get("MPCapableFallbackSYNACK")?,
            ack_rx: get("MPCapableACKRX")?,
            fallback_ack: get("MPCapableFallbackACK")?,
        })
    }

    /// What `client` or server connections did between `before` and `self`.
    pub fn since(&self, before: &MptcpMib, client: bool) -> MptcpHandshakes {
        let (ok, fell) = if client {
            (
                self.synack_rx.saturating_sub(before.synack_rx),
                self.fallback_synack.saturating_sub(before.fallback_synack),
            )
        } else {
            (self.ack_rx.saturating_sub(before.ack_rx), self.fallback_ack.saturating_sub(before.fallback_ack))
        };
        MptcpHandshakes { mptcp: ok, fallback: fell }
    }
}

/// How the MPTCP handshakes of a side's connections ended over its window, from the
/// namespace's MIB counters: crr's account (its connections close within their cycle).
/// Every MPTCP connection of the namespace in that time counts, not only the test's.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MptcpHandshakes {
    /// Handshakes that ended MPTCP (the client's MP_CAPABLE SYN/ACKs, the server's ACKs).
    pub mptcp: u64,
    /// Handshakes that fell back to TCP.
    pub fallback: u64,
}

/// MPTCP over all of a side's data connections: per flow, and how many stayed MPTCP.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MptcpReport {
    /// Connections that stayed MPTCP to the end.
    pub mptcp: u32,
    /// Connections that fell back to plain TCP.
    pub fallback: u32,
    /// The most subflows any connection had.
    pub max_subflows: u32,
    /// Every flow, in flow order (`None`: the kernel would not say, e.g. a closed socket).
    pub flows: Vec<Option<MptcpFlowInfo>>,
    /// crr: how its connections' handshakes ended (`flows` is then empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshakes: Option<MptcpHandshakes>,
}

impl MptcpReport {
    /// Counts `flows`.
    pub fn new(flows: Vec<Option<MptcpFlowInfo>>) -> MptcpReport {
        let known = || flows.iter().flatten();
        MptcpReport {
            mptcp: known().filter(|f| !f.fallback).count() as u32,
            fallback: known().filter(|f| f.fallback).count() as u32,
            max_subflows: known().filter_map(|f| f.subflows).max().unwrap_or(0),
            flows,
            handshakes: None,
        }
    }

    /// crr's report: its handshakes, no flow read.
    pub fn of_handshakes(h: MptcpHandshakes) -> MptcpReport {
        MptcpReport {
            mptcp: h.mptcp.min(u64::from(u32::MAX)) as u32,
            fallback: h.fallback.min(u64::from(u32::MAX)) as u32,
            handshakes: Some(h),
            ..MptcpReport::default()
        }
    }

    /// Payload bytes of every subflow, summed over the flows by subflow position: what
    /// each path carried when every flow lays out its subflows alike.
    pub fn subflow_bytes(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for f in self.flows.iter().flatten() {
            for (i, s) in f.subflow.iter().enumerate() {
                if out.len() <= i {
                    out.resize(i + 1, 0);
                }
                out[i] += s.bytes_acked.max(s.bytes_received);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd};

    fn mptcp_pair(
        listen_proto: i32,
        connect_proto: i32,
    ) -> Option<(std::net::TcpStream, std::net::TcpStream)> {
        use socket2::{Domain, Protocol, Socket, Type};
        let l = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::from(listen_proto))).ok()?;
        l.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into()).unwrap();
        l.listen(4).unwrap();
        let c = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::from(connect_proto))).ok()?;
        c.connect(&l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        // SAFETY: each descriptor is moved out of its Socket, which no longer owns it.
        unsafe {
            use std::os::fd::IntoRawFd;
            Some((
                std::net::TcpStream::from_raw_fd(c.into_raw_fd()),
                std::net::TcpStream::from_raw_fd(a.into_raw_fd()),
            ))
        }
    }

    #[test]
    fn mib_counters_are_read_by_name_and_split_by_role() {
        let text = "TcpExt: A B\nTcpExt: 1 2\nMPTcpExt: MPCapableSYNRX MPCapableSYNACKRX MPCapableACKRX MPCapableFallbackACK MPCapableFallbackSYNACK\nMPTcpExt: 9 5 7 1 2\n";
        let now = MptcpMib::parse(text).unwrap();
        assert_eq!(now, MptcpMib { synack_rx: 5, fallback_synack: 2, ack_rx: 7, fallback_ack: 1 });
        let zero = MptcpMib::default();
        assert_eq!(now.since(&zero, true), MptcpHandshakes { mptcp: 5, fallback: 2 });
        assert_eq!(now.since(&zero, false), MptcpHandshakes { mptcp: 7, fallback: 1 });
        assert!(MptcpMib::parse("TcpExt: A\nTcpExt: 1\n").is_none());
    }

    #[test]
    fn an_mptcp_connection_says_so_and_a_tcp_peer_makes_it_fall_back() {
        let Some((mut c, mut a)) = mptcp_pair(IPPROTO_MPTCP, IPPROTO_MPTCP) else {
            eprintln!("SKIPPED: this kernel has no MPTCP (net.mptcp.enabled=0 or no CONFIG_MPTCP)");
            return;
        };
        c.write_all(&[7u8; 100_000]).unwrap();
        let mut buf = vec![0u8; 100_000];
        a.read_exact(&mut buf).unwrap();
        let i = MptcpFlowInfo::read(c.as_raw_fd()).unwrap();
        assert!(!i.fallback, "{i:?}");
        assert_eq!(i.subflows, Some(1), "{i:?}");
        assert!(i.bytes_sent.unwrap_or(100_000) >= 100_000, "{i:?}");
        if let Some(s) = i.subflow.first() {
            assert!(s.bytes_acked >= 100_000 || s.bytes_sent >= 100_000, "{s:?}");
            assert!(s.remote.starts_with("127.0.0.1:"), "{s:?}");
        }
        let (c, _a) = mptcp_pair(libc::IPPROTO_TCP, IPPROTO_MPTCP).unwrap();
        let i = MptcpFlowInfo::read(c.as_raw_fd()).unwrap();
        assert!(i.fallback && i.subflows.is_none(), "{i:?}");
        let r = MptcpReport::new(vec![Some(i), None]);
        assert_eq!((r.mptcp, r.fallback), (0, 1));
    }
}
