//! UDP data sockets and their handshake.
//!
//! Design: the server binds one UDP socket per flow on an ephemeral port of the control
//! connection's address and lists the ports in `Ready` (flow order). The client connects
//! one UDP socket per flow to its port and sends a hello datagram (the session cookie with
//! its top bit set, then the flow index: 12 bytes, like a TCP flow header) every 50 ms until
//! the server echoes it. The server takes a hello only from the control connection's peer
//! address, checks cookie and flow, `connect()`s its socket to the hello's source (from
//! then on the kernel drops datagrams from anyone else) and echoes the hello; it keeps
//! echoing repeated hellos (an echo may be lost) until the client sends `Go` on the control
//! connection, which the client does only when every flow was echoed. So a lossy path
//! delays the handshake, never breaks it, and no stranger can feed a flow.
//!
//! The address check is what stops reflection: the cookie travels in the clear, so without
//! it a client could claim another host's address in its hellos (a keyless server asks for
//! no proof at all) and have the server send a udp-rr's responses or a udp-stream there.
//! Datagrams from other addresses are dropped and counted ([`Foreign`]). The client connects
//! each socket to the server's port before it sends, so it takes datagrams only from there.
//!
//! Data datagrams start with an 8-byte sequence number below 2^63; a datagram whose first
//! word has the top bit set is a (late) hello, which the data path ignores.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::net::connections::{setsockopt_int, FLOW_HEADER_LEN, SETUP_TIMEOUT};
use ringperf_core::error::{Error, Result};
use ringperf_core::setting::Setting;
use ringperf_core::spec::{SocketBuffers, SocketOptions, TestSpec};

/// Marks the first word of a hello: sequence numbers never have it.
pub const HELLO_BIT: u64 = 1 << 63;

/// How often the client repeats an unanswered hello.
const HELLO_EVERY: Duration = Duration::from_millis(50);

/// setsockopt(SOL_UDP) option numbers (linux/udp.h).
const UDP_SEGMENT: i32 = 103;
const UDP_GRO: i32 = 104;

/// Flow `flow`'s hello datagram for the session `cookie`.
pub fn hello(cookie: u64, flow: u32) -> [u8; FLOW_HEADER_LEN] {
    let mut h = [0u8; FLOW_HEADER_LEN];
    h[..8].copy_from_slice(&(cookie | HELLO_BIT).to_le_bytes());
    h[8..].copy_from_slice(&flow.to_le_bytes());
    h
}

/// UDP_SEGMENT: every send of N x `segment` bytes leaves as N datagrams (GSO).
pub fn set_gso(sock: &Socket, segment: u32) -> Result<()> {
    setsockopt_int(
        sock.as_raw_fd(),
        libc::SOL_UDP,
        UDP_SEGMENT,
        segment as i32,
        &format!("setting UDP_SEGMENT to {segment} ({} needs Linux 4.18)", Setting::Gso.token()),
    )
}

/// UDP_GRO: the kernel may hand several datagrams of one flow to one receive.
pub fn set_gro(sock: &Socket) -> Result<()> {
    setsockopt_int(sock.as_raw_fd(), libc::SOL_UDP, UDP_GRO, 1, "setting UDP_GRO ({gro} needs Linux 5.0)")
}

fn new_socket(addr: SocketAddr, bufs: SocketBuffers, o: &SocketOptions) -> Result<Socket> {
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| Error::io("creating a UDP data socket", e))?;
    crate::net::connections::configure(&sock, bufs, None)?;
    crate::net::connections::tune(&sock, o)?;
    Ok(sock)
}

/// Server: one socket per flow, bound to `ip` on an ephemeral port; returns them and their ports.
pub fn bind_flows(ip: IpAddr, spec: &TestSpec) -> Result<(Vec<Socket>, Vec<u16>)> {
    let mut socks = Vec::with_capacity(spec.flows as usize);
    let mut ports = Vec::with_capacity(spec.flows as usize);
    for _ in 0..spec.flows {
        let addr = SocketAddr::new(ip, 0);
        let sock = new_socket(addr, spec.remote.socket_buffers, &spec.socket)?;
        if spec.udp.gro {
            set_gro(&sock)?;
        }
        sock.bind(&addr.into()).map_err(|e| Error::io(format!("binding a UDP data socket to {addr}"), e))?;
        sock.set_nonblocking(true).map_err(|e| Error::io("making a UDP socket non-blocking", e))?;
        let port = sock.local_addr().ok().and_then(|a| a.as_socket()).map_or(0, |a| a.port());
        socks.push(sock);
        ports.push(port);
    }
    Ok((socks, ports))
}

/// Datagrams the server's UDP setup dropped because they came from another address than
/// the control connection's peer (hellos claiming another host's address, or a NAT that
/// maps the client's UDP to another address than its TCP).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Foreign {
    pub datagrams: u64,
    /// The first one's source, for the log.
    pub first: Option<SocketAddr>,
}

impl Foreign {
    fn note(&mut self, from: SocketAddr) {
        self.datagrams += 1;
        self.first.get_or_insert(from);
    }
}

/// Waits up to `timeout` for any of `fds` to be readable; returns which are.
fn poll_many(fds: &[RawFd], timeout: Duration) -> Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `p` is a valid array of pollfd of the length given.
    let n = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(Error::io("poll", e));
    }
    Ok(p.iter().map(|x| x.revents != 0).collect())
}

/// Server: waits for every flow's hello from `peer` (the control connection's peer
/// address), connects each socket to its client and echoes; datagrams from any other
/// address are dropped and counted in `foreign`.
pub fn accept_flows(socks: &[Socket], cookie: u64, peer: IpAddr, foreign: &mut Foreign) -> Result<()> {
    let peer = peer.to_canonical();
    let deadline = Instant::now() + SETUP_TIMEOUT;
    let mut connected = vec![false; socks.len()];
    let mut missing = socks.len();
    let mut buf = [0u8; 64];
    while missing > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let elsewhere = match foreign.first {
                Some(from) => format!(
                    " {} datagrams came from other addresses than {peer}, the control connection's (the first from {from}), and were dropped: the UDP flows must come from the control connection's address",
                    foreign.datagrams
                ),
                None => " is a firewall dropping UDP to the server's ephemeral ports?".into(),
            };
            return Err(Error::Peer(format!(
                "only {} of {} UDP flows said hello within {} s:{elsewhere}",
                socks.len() - missing,
                socks.len(),
                SETUP_TIMEOUT.as_secs()
            )));
        }
        let fds: Vec<RawFd> = socks.iter().map(AsRawFd::as_raw_fd).collect();
        let ready = poll_many(&fds, left.min(Duration::from_millis(100)))?;
        for (f, sock) in socks.iter().enumerate() {
            if !ready[f] {
                continue;
            }
            let udp = as_udp(sock.as_raw_fd());
            while let Ok((n, from)) = udp.recv_from(&mut buf) {
                // Before the connect below, and for what was queued before it.
                if from.ip().to_canonical() != peer {
                    foreign.note(from);
                    continue;
                }
                if n != FLOW_HEADER_LEN || buf[..n] != hello(cookie, f as u32) {
                    continue; // a stranger: ignore
                }
                if !connected[f] {
                    udp.connect(from)
                        .map_err(|e| Error::io(format!("connecting UDP flow {f} to {from}"), e))?;
                    connected[f] = true;
                    missing -= 1;
                }
                let _ = udp.send(&buf[..n]);
            }
        }
    }
    Ok(())
}

/// Server, after [`accept_flows`]: echoes repeated hellos until `control` is readable (the
/// client's `Go`, sent once every echo arrived), then makes the sockets blocking again.
pub fn echo_hellos_until(socks: &[RawFd], cookie: u64, control: RawFd) -> Result<()> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    let mut fds: Vec<RawFd> = socks.to_vec();
    fds.push(control);
    let mut buf = [0u8; 64];
    while Instant::now() < deadline {
        let ready = poll_many(&fds, Duration::from_millis(100))?;
        if ready[socks.len()] {
            break;
        }
        for (f, &fd) in socks.iter().enumerate() {
            if !ready[f] {
                continue;
            }
            let udp = as_udp(fd);
            while let Ok(n) = udp.recv(&mut buf) {
                if n == FLOW_HEADER_LEN && buf[..n] == hello(cookie, f as u32) {
                    let _ = udp.send(&buf[..n]);
                }
            }
        }
    }
    for &fd in socks {
        as_udp(fd).set_nonblocking(false).map_err(|e| Error::io("making a UDP socket blocking", e))?;
    }
    Ok(())
}

/// Client: one socket per flow connected to the server's port for it, each handshake done.
pub fn connect_flows(
    ip: IpAddr,
    ports: &[u16],
    cookie: u64,
    spec: &TestSpec,
    bind: Option<IpAddr>,
) -> Result<Vec<Socket>> {
    if ports.len() != spec.flows as usize {
        return Err(Error::Protocol(format!(
            "the server offered {} UDP ports for {} flows",
            ports.len(),
            spec.flows
        )));
    }
    let mut socks = Vec::with_capacity(ports.len());
    for &port in ports {
        let addr = SocketAddr::new(ip, port);
        let sock = new_socket(addr, spec.local.socket_buffers, &spec.socket)?;
        if let Some(seg) = spec.udp.gso_segment {
            set_gso(&sock, seg)?;
        }
        crate::net::connections::bind_local(&sock, bind)?;
        sock.connect(&addr.into()).map_err(|e| Error::io(format!("connecting a UDP socket to {addr}"), e))?;
        sock.set_nonblocking(true).map_err(|e| Error::io("making a UDP socket non-blocking", e))?;
        // Connected, it takes datagrams only from the server's port; what came between the
        // bind and the connect is from someone else (nothing was sent to the server yet).
        while as_udp(sock.as_raw_fd()).recv(&mut [0u8; 1]).is_ok() {}
        socks.push(sock);
    }
    let deadline = Instant::now() + SETUP_TIMEOUT;
    let mut acked = vec![false; socks.len()];
    let mut missing = socks.len();
    let mut buf = [0u8; 64];
    while missing > 0 {
        if Instant::now() >= deadline {
            return Err(Error::Peer(format!(
                "the server answered the hello of only {} of {} UDP flows within {} s: is UDP to {ip} blocked or heavily lossy?",
                socks.len() - missing,
                socks.len(),
                SETUP_TIMEOUT.as_secs()
            )));
        }
        for (f, sock) in socks.iter().enumerate() {
            if !acked[f] {
                // A refused send (ICMP from an earlier try) is retried like a lost one.
                let _ = as_udp(sock.as_raw_fd()).send(&hello(cookie, f as u32));
            }
        }
        let wait_until = Instant::now() + HELLO_EVERY;
        while Instant::now() < wait_until && missing > 0 {
            let fds: Vec<RawFd> = socks.iter().map(AsRawFd::as_raw_fd).collect();
            let ready = poll_many(&fds, wait_until.saturating_duration_since(Instant::now()))?;
            for (f, sock) in socks.iter().enumerate() {
                if !ready[f] {
                    continue;
                }
                while let Ok(n) = as_udp(sock.as_raw_fd()).recv(&mut buf) {
                    if !acked[f] && n == FLOW_HEADER_LEN && buf[..n] == hello(cookie, f as u32) {
                        acked[f] = true;
                        missing -= 1;
                    }
                }
            }
        }
    }
    for s in &socks {
        s.set_nonblocking(false).map_err(|e| Error::io("making a UDP socket blocking", e))?;
    }
    Ok(socks)
}

/// A borrowed view of an open UDP socket as a std UdpSocket (ManuallyDrop: never closes it).
fn as_udp(fd: RawFd) -> std::mem::ManuallyDrop<UdpSocket> {
    use std::os::fd::FromRawFd;
    // SAFETY: the caller's socket stays open while the view is used, and the view never
    // closes the descriptor.
    std::mem::ManuallyDrop::new(unsafe { UdpSocket::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use ringperf_core::spec::Workload;

    /// A hello from another address than the control peer's is dropped and counted, the
    /// peer's is echoed, and the socket is connected to the peer's flow: the stranger gets
    /// nothing, neither the echo nor what is sent afterwards.
    #[test]
    fn a_hello_from_another_address_is_dropped_and_counted() {
        let spec = TestSpec::for_workload(Workload::UdpRr);
        let (socks, ports) = bind_flows(Ipv4Addr::LOCALHOST.into(), &spec).expect("a flow socket");
        let to = SocketAddr::from((Ipv4Addr::LOCALHOST, ports[0]));
        let stranger = UdpSocket::bind((Ipv4Addr::new(127, 0, 0, 77), 0)).expect("a socket on 127.0.0.77");
        let peer = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("a socket on 127.0.0.1");
        let cookie = 0x1234_5678;
        stranger.send_to(&hello(cookie, 0), to).expect("the stranger's hello");
        peer.send_to(&hello(cookie, 0), to).expect("the peer's hello");
        let mut foreign = Foreign::default();
        accept_flows(&socks, cookie, Ipv4Addr::LOCALHOST.into(), &mut foreign).expect("the peer's flow");
        assert_eq!(
            foreign,
            Foreign { datagrams: 1, first: Some(stranger.local_addr().expect("an address")) }
        );
        peer.set_read_timeout(Some(SETUP_TIMEOUT)).expect("a timeout");
        let mut buf = [0u8; 64];
        let (n, from) = peer.recv_from(&mut buf).expect("the echo");
        assert_eq!((&buf[..n], from), (&hello(cookie, 0)[..], to));
        as_udp(socks[0].as_raw_fd()).send(b"after").expect("a send on the connected flow");
        assert_eq!(peer.recv(&mut buf).expect("the flow's datagram"), 5);
        stranger.set_nonblocking(true).expect("non-blocking");
        let got = stranger.recv_from(&mut buf);
        assert!(matches!(&got, Err(e) if e.kind() == io::ErrorKind::WouldBlock), "{got:?}");
    }
}
