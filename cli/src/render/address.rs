//! Addresses as a report shows them.

/// A `host:port` as it should be read: an IPv6 address in brackets (`[::1]:12866`), so the
/// port cannot be taken for part of the address. Anything else is returned as it is.
pub fn socket_addr(s: &str) -> String {
    if s.starts_with('[') {
        return s.to_string();
    }
    match s.rsplit_once(':') {
        Some((host, port)) if host.parse::<std::net::Ipv6Addr>().is_ok() => format!("[{host}]:{port}"),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_socket_addresses_get_brackets() {
        assert_eq!(socket_addr("::1:40124"), "[::1]:40124");
        assert_eq!(socket_addr("fe80::1:2:12866"), "[fe80::1:2]:12866");
        assert_eq!(socket_addr("[::1]:40124"), "[::1]:40124");
        assert_eq!(socket_addr("127.0.0.1:12866"), "127.0.0.1:12866");
        assert_eq!(socket_addr("host.example:12866"), "host.example:12866");
    }
}
