//! Which interface a connection's packets leave through: the kernel's own route lookup
//! (what `ip route get PEER from LOCAL` asks). Matching the local address to an interface
//! is not enough: a connection between two addresses of one host leaves through `lo`
//! whatever interface carries the addresses.

use std::io;
use std::net::IpAddr;

use super::netlink::{attr_u32, attributes, push_attribute, Netlink, RTM_GETROUTE, RTM_NEWROUTE};

const RTA_DST: u16 = 1;
const RTA_SRC: u16 = 2;
const RTA_OIF: u16 = 4;
/// struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type (u8 each), flags u32.
const RTMSG_LEN: usize = 12;

/// The ifindex of the route from `local` to `peer`.
pub fn egress_ifindex(nl: &mut Netlink, local: IpAddr, peer: IpAddr) -> io::Result<u32> {
    let reply = nl.request(RTM_GETROUTE, 0, &request(local, peer), RTM_NEWROUTE)?;
    let payload = reply.first().ok_or_else(|| io::Error::other("the kernel returned no route"))?;
    oif(payload).ok_or_else(|| io::Error::other("the route the kernel returned names no output interface"))
}

/// The body of a route lookup for one (source, destination) pair.
fn request(local: IpAddr, peer: IpAddr) -> Vec<u8> {
    // A v4-mapped v6 address is a v4 connection on a dual-stack socket.
    let (local, peer) = (local.to_canonical(), peer.to_canonical());
    let (family, bits) = match peer {
        IpAddr::V4(_) => (libc::AF_INET as u8, 32u8),
        IpAddr::V6(_) => (libc::AF_INET6 as u8, 128u8),
    };
    let mut body = vec![0u8; RTMSG_LEN];
    body[0] = family;
    body[1] = bits;
    push_attribute(&mut body, RTA_DST, &octets(peer));
    if local.is_ipv4() == peer.is_ipv4() && !local.is_unspecified() {
        body[2] = bits;
        push_attribute(&mut body, RTA_SRC, &octets(local));
    }
    body
}

fn octets(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// RTA_OIF of an RTM_NEWROUTE payload.
fn oif(payload: &[u8]) -> Option<u32> {
    attributes(payload.get(RTMSG_LEN..)?).find(|(k, _)| *k == RTA_OIF).and_then(|(_, v)| attr_u32(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn request_carries_both_addresses() {
        let b = request(IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)), IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)));
        assert_eq!(&b[..3], &[libc::AF_INET as u8, 32, 32]);
        let attrs: Vec<(u16, Vec<u8>)> = attributes(&b[RTMSG_LEN..]).map(|(k, v)| (k, v.to_vec())).collect();
        assert_eq!(attrs, vec![(RTA_DST, vec![198, 18, 0, 2]), (RTA_SRC, vec![198, 18, 0, 1])]);
    }

    #[test]
    fn mapped_v4_is_asked_as_v4() {
        let b = request(
            IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped()),
            IpAddr::V6(Ipv4Addr::new(127, 0, 0, 2).to_ipv6_mapped()),
        );
        assert_eq!(b[0], libc::AF_INET as u8);
        let b6 = request(IpAddr::V6(Ipv6Addr::UNSPECIFIED), IpAddr::V6(Ipv6Addr::LOCALHOST));
        assert_eq!(&b6[..3], &[libc::AF_INET6 as u8, 128, 0], "no source for an unspecified local address");
    }

    #[test]
    fn loopback_leaves_through_lo() {
        let mut nl = Netlink::open().expect("netlink");
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let oif = egress_ifindex(&mut nl, ip, ip).expect("a route to 127.0.0.1");
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert_eq!(oif, lo);
    }
}
