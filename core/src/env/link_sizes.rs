//! The largest packets a device's stack builds and coalesces: the GSO, GRO and TSO size
//! limits of rtnetlink's link message (what `ip -d link show` prints), BIG TCP's knobs.
//! Each is read from its own attribute; a kernel older than an attribute does not send it,
//! and that limit is then missing, never 0.

use std::io;

use serde::{Deserialize, Serialize};

use super::netlink::{attr_u32, attributes, Netlink, IFINFOMSG_LEN, RTM_GETLINK, RTM_NEWLINK};

// Attribute numbers of linux/if_link.h (enum IFLA_*).
const IFLA_GSO_MAX_SEGS: u16 = 40;
const IFLA_GSO_MAX_SIZE: u16 = 41;
const IFLA_GRO_MAX_SIZE: u16 = 58;
const IFLA_TSO_MAX_SIZE: u16 = 59;
const IFLA_TSO_MAX_SEGS: u16 = 60;
const IFLA_GSO_IPV4_MAX_SIZE: u16 = 63;
const IFLA_GRO_IPV4_MAX_SIZE: u16 = 64;

/// A device's packet size limits, in bytes (segments for the `_segs` ones). The IPv6 and
/// IPv4 limits are separate since Linux 6.3: an IPv4 flow is held to `gso_ipv4_max_size`
/// whatever `gso_max_size` says. Above 65536 is BIG TCP.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkSizes {
    /// The largest GSO packet the stack builds for the device (IPv6; before Linux 6.3 also IPv4).
    pub gso_max_size: Option<u32>,
    pub gso_max_segs: Option<u32>,
    /// The largest packet GRO coalesces on receive (IPv6; before Linux 6.3 also IPv4).
    pub gro_max_size: Option<u32>,
    /// The IPv4 GSO limit (Linux 6.3 and later).
    pub gso_ipv4_max_size: Option<u32>,
    /// The IPv4 GRO limit (Linux 6.3 and later).
    pub gro_ipv4_max_size: Option<u32>,
    /// The most the device (or its driver) can segment in one TSO packet: the ceiling of
    /// the GSO limits (Linux 5.19 and later).
    pub tso_max_size: Option<u32>,
    pub tso_max_segs: Option<u32>,
}

impl LinkSizes {
    /// The limits in one RTM_NEWLINK payload (ifinfomsg, then attributes).
    pub fn parse(payload: &[u8]) -> Result<LinkSizes, String> {
        let attrs = payload.get(IFINFOMSG_LEN..).ok_or("RTM_NEWLINK shorter than its ifinfomsg")?;
        let mut s = LinkSizes::default();
        for (kind, value) in attributes(attrs) {
            let slot = match kind {
                IFLA_GSO_MAX_SIZE => &mut s.gso_max_size,
                IFLA_GSO_MAX_SEGS => &mut s.gso_max_segs,
                IFLA_GRO_MAX_SIZE => &mut s.gro_max_size,
                IFLA_GSO_IPV4_MAX_SIZE => &mut s.gso_ipv4_max_size,
                IFLA_GRO_IPV4_MAX_SIZE => &mut s.gro_ipv4_max_size,
                IFLA_TSO_MAX_SIZE => &mut s.tso_max_size,
                IFLA_TSO_MAX_SEGS => &mut s.tso_max_segs,
                _ => continue,
            };
            *slot = attr_u32(value);
        }
        Ok(s)
    }

    /// The names of the limits this kernel did not report.
    pub fn missing(&self) -> Vec<&'static str> {
        [
            ("gso_max_size", self.gso_max_size),
            ("gso_max_segs", self.gso_max_segs),
            ("gro_max_size", self.gro_max_size),
            ("gso_ipv4_max_size", self.gso_ipv4_max_size),
            ("gro_ipv4_max_size", self.gro_ipv4_max_size),
            ("tso_max_size", self.tso_max_size),
            ("tso_max_segs", self.tso_max_segs),
        ]
        .into_iter()
        .filter(|(_, v)| v.is_none())
        .map(|(name, _)| name)
        .collect()
    }
}

/// The size limits of the device `ifindex` in this process's network namespace.
pub fn read(nl: &mut Netlink, ifindex: u32) -> io::Result<LinkSizes> {
    let mut ifinfo = [0u8; IFINFOMSG_LEN];
    ifinfo[4..8].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    let replies = nl.request(RTM_GETLINK, 0, &ifinfo, RTM_NEWLINK)?;
    let first = replies.first().ok_or_else(|| io::Error::other("no RTM_NEWLINK reply"))?;
    LinkSizes::parse(first).map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::super::netlink::push_attribute;
    use super::*;

    #[test]
    fn each_limit_comes_from_its_own_attribute_and_an_absent_one_is_missing() {
        let mut payload = vec![0u8; IFINFOMSG_LEN];
        push_attribute(&mut payload, 3, b"lab0\0");
        push_attribute(&mut payload, IFLA_GSO_MAX_SIZE, &65536u32.to_ne_bytes());
        push_attribute(&mut payload, IFLA_GRO_MAX_SIZE, &131072u32.to_ne_bytes());
        push_attribute(&mut payload, IFLA_TSO_MAX_SIZE, &524280u32.to_ne_bytes());
        push_attribute(&mut payload, IFLA_GSO_IPV4_MAX_SIZE, &262144u32.to_ne_bytes());
        let s = LinkSizes::parse(&payload).expect("parses");
        assert_eq!(s.gso_max_size, Some(65536));
        assert_eq!(s.gro_max_size, Some(131072));
        assert_eq!(s.tso_max_size, Some(524280));
        assert_eq!(s.gso_ipv4_max_size, Some(262144));
        // A kernel before 6.3 sends no IPv4 GRO limit: missing, not 0.
        assert_eq!(s.gro_ipv4_max_size, None);
        assert_eq!(s.missing(), vec!["gso_max_segs", "gro_ipv4_max_size", "tso_max_segs"]);
        assert!(LinkSizes::parse(&[0u8; 4]).is_err());
    }

    #[test]
    fn lo_reports_its_limits() {
        let mut nl = Netlink::open().expect("a NETLINK_ROUTE socket");
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        let s = read(&mut nl, index).expect("lo's link message");
        // Every kernel this tool runs on (6.1+) has the GSO, GRO and TSO limits.
        let gso = s.gso_max_size.expect("gso_max_size");
        assert!(gso >= 1 && gso <= s.tso_max_size.expect("tso_max_size"), "{s:?}");
        assert!(s.gro_max_size.is_some(), "{s:?}");
    }
}
