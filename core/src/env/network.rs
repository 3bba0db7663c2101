//! The network path one side's data took: its egress device, that device's driver,
//! offloads, MTU, qdisc and coalescing, and the namespace's sysctls. Captured per side
//! once the data connections exist, since only then is the device known.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};
use socket2::Socket;

use super::ethtool::{self, Coalescing, Offloads};
use super::link_sizes::{self, LinkSizes};
use super::netdev::IfSocket;
use super::netlink::Netlink;
use super::{qdisc, route, sysctl};

/// Where one side's data connections left the host, and the settings that shape it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct NetworkEnvironment {
    /// The first data connection's addresses (all flows share the route).
    pub local_address: String,
    pub peer_address: String,
    /// The egress interface, from the kernel's route lookup (`lo` between two local addresses).
    pub device: Option<String>,
    /// Its driver (ETHTOOL_GDRVINFO; `loopback` for the loopback device, which has none).
    pub driver: Option<String>,
    /// The driver's bus address (a PCI slot for a NIC; empty for virtual devices).
    pub bus_info: Option<String>,
    pub firmware: Option<String>,
    pub mtu: Option<u32>,
    pub offloads: Offloads,
    /// The device's GSO/GRO/TSO size limits (BIG TCP's knobs); each None where this kernel
    /// does not report it. Absent from reports of versions before it existed.
    #[serde(default)]
    pub sizes: LinkSizes,
    /// The root egress qdisc (`noqueue`, `mq`, `fq_codel`, `netem`, ...).
    pub qdisc: Option<String>,
    /// Distinct kinds of the qdiscs under the root (the per-queue ones under `mq`).
    pub qdisc_children: Vec<String>,
    /// Interrupt coalescing; None where the driver does not expose it (see `unavailable`).
    pub coalescing: Option<Coalescing>,
    /// The sysctls that change results, by dotted name, as one line each.
    pub sysctls: BTreeMap<String, String>,
    /// What could not be read, and why: a missing figure is explained, never silently zero.
    pub unavailable: Vec<String>,
}

impl NetworkEnvironment {
    /// Captures the path of `socket`, a connected data socket. Never fails: whatever cannot
    /// be read is listed in `unavailable`.
    pub fn capture(socket: &Socket) -> NetworkEnvironment {
        let mut env = NetworkEnvironment::default();
        let addr = |a: std::io::Result<socket2::SockAddr>| a.ok().and_then(|a| a.as_socket());
        let (local, peer) = (addr(socket.local_addr()), addr(socket.peer_addr()));
        env.local_address = local.map(|a| a.ip().to_string()).unwrap_or_default();
        env.peer_address = peer.map(|a| a.ip().to_string()).unwrap_or_default();
        let (sysctls, notes) = sysctl::read_all(Path::new("/proc/sys"));
        env.sysctls = sysctls;
        env.unavailable.extend(notes);
        match (local, peer) {
            (Some(l), Some(p)) => env.capture_device(l, p),
            _ => env.unavailable.push("device: the data socket has no local or peer address".into()),
        }
        env
    }

    /// [`NetworkEnvironment::capture`] for a side that holds no data socket before its run
    /// (the crr client): a UDP socket connected to `peer` learns the route's local
    /// address without sending anything.
    pub fn capture_towards(peer: SocketAddr) -> NetworkEnvironment {
        let probe = Socket::new(socket2::Domain::for_address(peer), socket2::Type::DGRAM, None)
            .and_then(|s| s.connect(&peer.into()).map(|()| s));
        match probe {
            Ok(s) => NetworkEnvironment::capture(&s),
            Err(e) => NetworkEnvironment {
                unavailable: vec![format!("device: cannot find the route to {peer}: {e}")],
                ..NetworkEnvironment::default()
            },
        }
    }

    fn capture_device(&mut self, local: SocketAddr, peer: SocketAddr) {
        let mut nl = match Netlink::open() {
            Ok(nl) => nl,
            Err(e) => {
                return self.unavailable.push(format!("device and qdisc: cannot open a netlink socket: {e}"))
            }
        };
        let ifindex = match route::egress_ifindex(&mut nl, local.ip(), peer.ip()) {
            Ok(i) => i,
            Err(e) => return self.unavailable.push(format!("device: route lookup {local} -> {peer}: {e}")),
        };
        let sock = match IfSocket::open() {
            Ok(s) => s,
            Err(e) => return self.unavailable.push(format!("device: cannot open an ioctl socket: {e}")),
        };
        let dev = match sock.name_of(ifindex) {
            Ok(d) => d,
            Err(e) => return self.unavailable.push(format!("device: name of ifindex {ifindex}: {e}")),
        };

        match ethtool::driver(&sock, &dev) {
            Ok(d) => {
                let some = |s: String| if s.is_empty() { None } else { Some(s) };
                self.driver = some(d.driver);
                self.bus_info = some(d.bus_info);
                self.firmware = some(d.firmware);
            }
            // The loopback device has no driver to ask; its flags say what it is.
            Err(_) if sock.is_loopback(&dev).unwrap_or(false) => self.driver = Some("loopback".into()),
            Err(e) => self.unavailable.push(format!("driver of {dev}: {e}")),
        }
        match sock.mtu(&dev) {
            Ok(m) => self.mtu = Some(m),
            Err(e) => self.unavailable.push(format!("mtu of {dev}: {e}")),
        }
        let (offloads, notes) = ethtool::offloads(&sock, &dev);
        self.offloads = offloads;
        self.unavailable.extend(notes);
        match link_sizes::read(&mut nl, ifindex) {
            Ok(s) => {
                let missing = s.missing();
                if !missing.is_empty() {
                    self.unavailable
                        .push(format!("{} of {dev}: this kernel does not report them", missing.join(", ")));
                }
                self.sizes = s;
            }
            Err(e) => self.unavailable.push(format!("gso/gro/tso size limits of {dev}: {e}")),
        }
        match ethtool::coalescing(&sock, &dev) {
            Ok(c) => self.coalescing = Some(c),
            Err(e) => self.unavailable.push(format!("coalescing of {dev}: {}", not_supported(&e))),
        }
        match qdisc::dump(&mut nl) {
            Ok(all) => {
                let e = qdisc::egress(&all, ifindex);
                if e.root.is_none() {
                    self.unavailable.push(format!("qdisc of {dev}: none in the dump"));
                }
                self.qdisc = e.root;
                self.qdisc_children = e.children;
            }
            Err(e) => self.unavailable.push(format!("qdisc of {dev}: {e}")),
        }
        self.device = Some(dev);
    }
}

/// EOPNOTSUPP is the driver's "I don't have that"; say it in words.
fn not_supported(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        "not supported by the driver".into()
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_loopback_connection_leaves_through_lo() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let s = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let env = NetworkEnvironment::capture(&Socket::from(s));
        assert_eq!(env.device.as_deref(), Some("lo"), "{env:?}");
        assert_eq!(env.driver.as_deref(), Some("loopback"));
        assert_eq!(env.local_address, "127.0.0.1");
        assert!(env.mtu.is_some() && env.qdisc.is_some(), "{env:?}");
        assert_eq!(env.offloads.sg, Some(true));
        assert!(env.sizes.gso_max_size.is_some() && env.sizes.tso_max_size.is_some(), "{env:?}");
        assert!(env.sysctls.contains_key("net.ipv4.tcp_limit_output_bytes"));
        // lo has no coalescing; that must be said, not left as a silent gap.
        if env.coalescing.is_none() {
            assert!(env.unavailable.iter().any(|n| n.starts_with("coalescing of lo")), "{env:?}");
        }
    }
}
