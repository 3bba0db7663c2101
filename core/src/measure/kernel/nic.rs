//! The egress device's own counters: the kernel's generic link statistics (rtnetlink
//! RTM_GETLINK, IFLA_STATS64: what `ip -s link` prints) and the driver's private ones
//! (the ETHTOOL_GSTATS ioctl: what `ethtool -S` prints), both read natively on the
//! netlink and ioctl sockets the environment capture already uses.

use std::io;

use serde::{Deserialize, Serialize};

use crate::env::netdev::{IfReq, IfSocket};
use crate::env::netlink::{attributes, Netlink, IFINFOMSG_LEN, RTM_GETLINK, RTM_NEWLINK};

const IFLA_STATS64: u16 = 23;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;
/// The kernel writes as many names or values as the driver has *now*, whatever the buffer
/// we pass: room for this many more than it said a moment before keeps a driver that
/// grew its queues in between from writing past the end.
fn with_headroom(n: usize) -> usize {
    n * 2 + 64
}

/// The first eight fields of struct rtnl_link_stats64, over a window.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
}

impl LinkStats {
    /// The IFLA_STATS64 attribute of one RTM_NEWLINK payload.
    pub fn parse_link_message(payload: &[u8]) -> Result<LinkStats, String> {
        let attrs = payload.get(IFINFOMSG_LEN..).ok_or("RTM_NEWLINK shorter than its ifinfomsg")?;
        let (_, v) =
            attributes(attrs).find(|(k, _)| *k == IFLA_STATS64).ok_or("RTM_NEWLINK without IFLA_STATS64")?;
        let field = |i: usize| -> Result<u64, String> {
            let b = v
                .get(i * 8..i * 8 + 8)
                .ok_or_else(|| format!("IFLA_STATS64 of {} bytes is too short", v.len()))?;
            Ok(u64::from_ne_bytes(b.try_into().map_err(|_| "IFLA_STATS64 field")?))
        };
        Ok(LinkStats {
            rx_packets: field(0)?,
            tx_packets: field(1)?,
            rx_bytes: field(2)?,
            tx_bytes: field(3)?,
            rx_errors: field(4)?,
            tx_errors: field(5)?,
            rx_dropped: field(6)?,
            tx_dropped: field(7)?,
        })
    }

    pub fn since(&self, b: &LinkStats) -> LinkStats {
        LinkStats {
            rx_packets: self.rx_packets.saturating_sub(b.rx_packets),
            tx_packets: self.tx_packets.saturating_sub(b.tx_packets),
            rx_bytes: self.rx_bytes.saturating_sub(b.rx_bytes),
            tx_bytes: self.tx_bytes.saturating_sub(b.tx_bytes),
            rx_errors: self.rx_errors.saturating_sub(b.rx_errors),
            tx_errors: self.tx_errors.saturating_sub(b.tx_errors),
            rx_dropped: self.rx_dropped.saturating_sub(b.rx_dropped),
            tx_dropped: self.tx_dropped.saturating_sub(b.tx_dropped),
        }
    }
}

/// One driver counter's change over the window.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct NamedCount {
    pub name: String,
    pub delta: u64,
}

/// The driver counters of one queue (`rx0`, `tx3`), the queue taken out of their names.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    pub queue: String,
    pub counters: Vec<NamedCount>,
}

/// Splits a driver counter's name into its queue and the counter, for the usual naming
/// schemes: `rx_queue_0_packets` (virtio_net, veth, ixgbe), `tx-0.packets` (i40e, ena),
/// `rx0_packets` (mlx5). `None` for a device-wide counter.
pub fn split_queue(name: &str) -> Option<(String, String)> {
    for dir in ["rx", "tx"] {
        let Some(rest) = name.strip_prefix(dir) else { continue };
        for sep in ["_queue_", "-queue-", "_", "-", ""] {
            let Some(rest) = rest.strip_prefix(sep) else { continue };
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                continue;
            }
            let Some(counter) = rest[digits..].strip_prefix(['_', '.', '-']) else { continue };
            if counter.is_empty() {
                continue;
            }
            return Some((format!("{dir}{}", &rest[..digits]), counter.to_string()));
        }
    }
    None
}

/// Groups counters by queue: device-wide ones first, then each queue in rx, tx and
/// numeric order.
pub fn group(counts: Vec<NamedCount>) -> (Vec<NamedCount>, Vec<QueueCounters>) {
    let mut device = Vec::new();
    let mut queues: std::collections::BTreeMap<(String, u64), QueueCounters> = Default::default();
    for c in counts {
        match split_queue(&c.name) {
            Some((queue, counter)) => {
                let key = (queue[..2].to_string(), queue[2..].parse().unwrap_or(u64::MAX));
                let q = queues.entry(key).or_insert_with(|| QueueCounters { queue, counters: Vec::new() });
                q.counters.push(NamedCount { name: counter, delta: c.delta });
            }
            None => device.push(c),
        }
    }
    (device, queues.into_values().collect())
}

/// Reads one device's counters; opened before the window (names are read once).
pub struct NicReader {
    pub device: String,
    ifindex: u32,
    nl: Option<Netlink>,
    sock: Option<IfSocket>,
    /// The driver's counter names (ETHTOOL_GSTRINGS), empty when it has none.
    pub names: Vec<String>,
    /// Why there are no link statistics or driver counters, when there are not.
    pub unavailable: Vec<String>,
}

/// The counters at one instant.
#[derive(Clone, Debug, Default)]
pub struct NicSnapshot {
    pub link: Option<LinkStats>,
    pub driver: Option<Vec<u64>>,
}

impl NicReader {
    pub fn open(device: &str) -> NicReader {
        let mut r = NicReader {
            device: device.to_string(),
            ifindex: 0,
            nl: None,
            sock: None,
            names: Vec::new(),
            unavailable: Vec::new(),
        };
        let Ok(name) = std::ffi::CString::new(device) else {
            r.unavailable.push(format!("NIC counters: '{device}' is not an interface name"));
            return r;
        };
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        r.ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if r.ifindex == 0 {
            r.unavailable
                .push(format!("NIC counters: no interface {device}: {}", io::Error::last_os_error()));
            return r;
        }
        match Netlink::open() {
            Ok(nl) => r.nl = Some(nl),
            Err(e) => {
                r.unavailable.push(format!("link statistics of {device}: cannot open a netlink socket: {e}"))
            }
        }
        match IfSocket::open() {
            Ok(s) => {
                match stat_names(&s, device) {
                    Ok(names) if names.is_empty() => {
                        r.unavailable.push(format!("driver counters of {device}: the driver has none"))
                    }
                    Ok(names) => r.names = names,
                    Err(e) => r.unavailable.push(format!("driver counters of {device}: {}", in_words(&e))),
                }
                r.sock = Some(s);
            }
            Err(e) => {
                r.unavailable.push(format!("driver counters of {device}: cannot open an ioctl socket: {e}"))
            }
        }
        r
    }

    /// Both sets of counters now; a set that cannot be read is `None` (and noted).
    pub fn snapshot(&mut self) -> NicSnapshot {
        let mut s = NicSnapshot::default();
        if let Some(nl) = &mut self.nl {
            match link_stats(nl, self.ifindex) {
                Ok(l) => s.link = Some(l),
                Err(e) => self.unavailable.push(format!("link statistics of {}: {e}", self.device)),
            }
        }
        if let (Some(sock), false) = (&self.sock, self.names.is_empty()) {
            match stat_values(sock, &self.device, self.names.len()) {
                Ok(v) => s.driver = Some(v),
                Err(e) => self.unavailable.push(format!("driver counters of {}: {e}", self.device)),
            }
        }
        s
    }
}

/// EOPNOTSUPP is the driver's "I have none"; say it in words.
fn in_words(e: &io::Error) -> String {
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        "the driver has none (ETHTOOL_GSSET_INFO not supported)".into()
    } else {
        e.to_string()
    }
}

fn link_stats(nl: &mut Netlink, ifindex: u32) -> io::Result<LinkStats> {
    let mut ifinfo = [0u8; IFINFOMSG_LEN];
    ifinfo[4..8].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    let replies = nl.request(RTM_GETLINK, 0, &ifinfo, RTM_NEWLINK)?;
    let first = replies.first().ok_or_else(|| io::Error::other("no RTM_NEWLINK reply"))?;
    LinkStats::parse_link_message(first).map_err(io::Error::other)
}

/// Runs an ethtool command whose struct is the bytes of `buf`.
///
/// # Safety
/// `buf` must be at least as long as what the kernel writes for the command in its first word.
unsafe fn ethtool_bytes(sock: &IfSocket, dev: &str, buf: &mut [u8]) -> io::Result<()> {
    let mut req = IfReq::named(dev)?;
    req.data.data = buf.as_mut_ptr().cast();
    // SAFETY: SIOCETHTOOL reads the command from `buf` and writes at most what the caller
    // sized it for; `buf` outlives the call.
    unsafe { sock.ioctl(SIOCETHTOOL, &mut req) }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_ne_bytes)
}

/// The driver's counter names (ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS).
fn stat_names(sock: &IfSocket, dev: &str) -> io::Result<Vec<String>> {
    // struct ethtool_sset_info: cmd u32, reserved u32, sset_mask u64, data u32[popcount].
    let mut info = [0u8; 24];
    info[..4].copy_from_slice(&ETHTOOL_GSSET_INFO.to_ne_bytes());
    info[8..16].copy_from_slice(&(1u64 << ETH_SS_STATS).to_ne_bytes());
    // SAFETY: GSSET_INFO with one bit in the mask writes the 16-byte header and one u32.
    unsafe { ethtool_bytes(sock, dev, &mut info)? };
    let mask = u64::from_ne_bytes(info[8..16].try_into().map_err(io::Error::other)?);
    if mask & (1 << ETH_SS_STATS) == 0 {
        return Ok(Vec::new());
    }
    let n = u32_at(&info, 16) as usize;
    if n == 0 {
        return Ok(Vec::new());
    }
    // struct ethtool_gstrings: cmd u32, string_set u32, len u32, then len * 32 bytes.
    let mut buf = vec![0u8; 12 + with_headroom(n) * ETH_GSTRING_LEN];
    buf[..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
    buf[4..8].copy_from_slice(&ETH_SS_STATS.to_ne_bytes());
    buf[8..12].copy_from_slice(&(n as u32).to_ne_bytes());
    // SAFETY: the kernel writes the header and `len` names of 32 bytes; the buffer has room
    // for twice the count it gave plus 64.
    unsafe { ethtool_bytes(sock, dev, &mut buf)? };
    let len = u32_at(&buf, 8) as usize;
    if len != n {
        return Err(io::Error::other(format!("the driver's counter count changed from {n} to {len}")));
    }
    Ok(buf[12..12 + n * ETH_GSTRING_LEN]
        .chunks(ETH_GSTRING_LEN)
        .map(|c| {
            let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect())
}

/// The driver's counter values (ETHTOOL_GSTATS), `n` of them as the names said.
fn stat_values(sock: &IfSocket, dev: &str, n: usize) -> io::Result<Vec<u64>> {
    // struct ethtool_stats: cmd u32, n_stats u32, then n_stats u64.
    let mut buf = vec![0u8; 8 + with_headroom(n) * 8];
    buf[..4].copy_from_slice(&ETHTOOL_GSTATS.to_ne_bytes());
    buf[4..8].copy_from_slice(&(n as u32).to_ne_bytes());
    // SAFETY: the kernel writes the header and n_stats u64s; the buffer has headroom.
    unsafe { ethtool_bytes(sock, dev, &mut buf)? };
    let got = u32_at(&buf, 4) as usize;
    if got != n {
        return Err(io::Error::other(format!("the driver's counter count changed from {n} to {got}")));
    }
    Ok(buf[8..8 + n * 8].chunks(8).map(|c| c.try_into().map_or(0, u64::from_ne_bytes)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::netlink::push_attribute;

    #[test]
    fn queue_names_of_the_usual_drivers() {
        let s = |n: &str| split_queue(n).map(|(q, c)| format!("{q}/{c}"));
        assert_eq!(s("rx_queue_0_packets").as_deref(), Some("rx0/packets"));
        assert_eq!(s("rx_queue_12_xdp_packets").as_deref(), Some("rx12/xdp_packets"));
        assert_eq!(s("tx-3.bytes").as_deref(), Some("tx3/bytes"));
        assert_eq!(s("rx0_packets").as_deref(), Some("rx0/packets"));
        assert_eq!(s("tx_queue_1_xdp_xmit").as_deref(), Some("tx1/xdp_xmit"));
        assert_eq!(s("rx_packets"), None);
        assert_eq!(s("peer_ifindex"), None);
        assert_eq!(s("tx_timeout"), None);
        assert_eq!(s("rx_queue_"), None);
        assert_eq!(s("rx5"), None);
        let (device, queues) = group(vec![
            NamedCount { name: "peer_ifindex".into(), delta: 0 },
            NamedCount { name: "tx_queue_0_xdp_xmit".into(), delta: 1 },
            NamedCount { name: "rx_queue_10_xdp_packets".into(), delta: 2 },
            NamedCount { name: "rx_queue_2_xdp_packets".into(), delta: 3 },
        ]);
        assert_eq!(device.len(), 1);
        let order: Vec<&str> = queues.iter().map(|q| q.queue.as_str()).collect();
        assert_eq!(order, vec!["rx2", "rx10", "tx0"]);
    }

    #[test]
    fn link_messages_parse_or_say_why_not() {
        let mut payload = vec![0u8; IFINFOMSG_LEN];
        let stats: Vec<u8> = (1..=25u64).flat_map(|v| v.to_ne_bytes()).collect();
        push_attribute(&mut payload, 3, b"lo\0");
        push_attribute(&mut payload, IFLA_STATS64, &stats);
        let l = LinkStats::parse_link_message(&payload).unwrap();
        assert_eq!((l.rx_packets, l.tx_packets, l.rx_dropped, l.tx_dropped), (1, 2, 7, 8));
        assert!(LinkStats::parse_link_message(&payload[..10]).is_err(), "truncated ifinfomsg");
        assert!(LinkStats::parse_link_message(&payload[..IFINFOMSG_LEN + 8]).is_err(), "no stats");
        let mut short = vec![0u8; IFINFOMSG_LEN];
        push_attribute(&mut short, IFLA_STATS64, &[0u8; 20]);
        assert!(LinkStats::parse_link_message(&short).is_err(), "stats too short");
    }

    #[test]
    fn lo_has_link_statistics_and_no_driver_counters() {
        let mut r = NicReader::open("lo");
        assert!(r.names.is_empty());
        assert!(r.unavailable.iter().any(|u| u.contains("driver counters of lo")), "{:?}", r.unavailable);
        let a = r.snapshot();
        let b = r.snapshot();
        let (a, b) = (a.link.expect("lo's stats64"), b.link.expect("lo's stats64"));
        assert!(b.rx_packets >= a.rx_packets);
        let missing = NicReader::open("no-such-dev0");
        assert!(!missing.unavailable.is_empty());
    }
}
