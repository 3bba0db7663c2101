//! `--allow CIDR`: which peers may talk to the server at all. Everyone else is closed
//! at once, before a byte is read.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use ringperf_core::error::Error;
use ringperf_core::setting::Setting;

/// An address block such as `198.18.0.0/15`, `10.1.2.3` (one host) or `fd00::/8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// True if `ip` is inside the block. An IPv4-mapped IPv6 peer (::ffff:a.b.c.d) counts
    /// as its IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(&n.octets(), &a.octets(), self.prefix),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(&n.octets(), &a.octets(), self.prefix),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let (whole, rest) = (usize::from(prefix / 8), prefix % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    a[whole] & mask == b[whole] & mask
}

impl FromStr for Cidr {
    type Err = Error;

    fn from_str(s: &str) -> Result<Cidr, Error> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "{} '{s}' {why}: give an address or a block, like 10.0.0.0/8 or fd00::/8",
                Setting::Allow.token()
            ))
        };
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let net: IpAddr = addr.parse().map_err(|_| bad("is not an IP address"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|&p| p <= max)
                .ok_or_else(|| bad("has an invalid prefix length"))?,
        };
        Ok(Cidr { net: net.to_canonical(), prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.net, self.prefix)
    }
}

/// True if `ip` may connect: no list means everyone.
pub fn allowed(list: &[Cidr], ip: IpAddr) -> bool {
    list.is_empty() || list.iter().any(|c| c.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_match_what_they_cover() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(c("198.18.0.0/15").contains(ip("198.19.255.1")));
        assert!(!c("198.18.0.0/15").contains(ip("198.20.0.1")));
        assert!(c("127.0.0.1").contains(ip("127.0.0.1")));
        assert!(!c("127.0.0.1").contains(ip("127.0.0.2")));
        assert!(c("10.0.0.0/8").contains(ip("::ffff:10.1.2.3")));
        assert!(c("0.0.0.0/0").contains(ip("8.8.8.8")));
        assert!(c("fd00::/8").contains(ip("fd12::1")));
        assert!(!c("fd00::/8").contains(ip("127.0.0.1")));
        assert!(c("10.1.2.0/23").contains(ip("10.1.3.7")));
        assert!(!c("10.1.2.0/23").contains(ip("10.1.4.7")));
        assert!(allowed(&[], ip("1.2.3.4")));
        assert_eq!(c("10.0.0.0/8").to_string(), "10.0.0.0/8");
    }

    #[test]
    fn malformed_blocks_are_usage_errors() {
        for s in ["", "10.0.0.0/33", "fd00::/129", "host.example", "10.0.0.0/x", "10.0.0.0/-1"] {
            assert!(matches!(s.parse::<Cidr>(), Err(Error::Usage(_))), "{s}");
        }
    }
}
