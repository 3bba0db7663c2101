//! Data connections: socket options, the per-session listener, and the flow handshake that
//! ties each accepted connection to its session (a cookie plus the flow index).

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use ringperf_core::error::{Error, Result};
use ringperf_core::measure::mptcp::IPPROTO_MPTCP;
use ringperf_core::Setting;

use ringperf_core::spec::{SocketBuffers, SocketOptions, TestSpec};

/// Bytes a client writes first on every data connection: session cookie, then flow index.
pub const FLOW_HEADER_LEN: usize = 12;

/// How long connecting, accepting and the flow handshake may take.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Applies the per-socket options of the spec that work on a connected socket: called on
/// every data socket of both sides (accepted sockets do not inherit all of them).
pub fn tune(sock: &Socket, o: &SocketOptions) -> Result<()> {
    let fail = |what: String| move |e: io::Error| Error::io(what, e);
    if o.nodelay {
        sock.set_nodelay(true).map_err(fail("setting TCP_NODELAY".into()))?;
    }
    if o.cork {
        sock.set_cork(true).map_err(fail("setting TCP_CORK".into()))?;
    }
    if let Some(tos) = o.tos {
        let v6 = sock.local_addr().ok().and_then(|a| a.as_socket()).is_some_and(|a| a.is_ipv6());
        if v6 {
            sock.set_tclass_v6(u32::from(tos)).map_err(fail(format!("setting IPV6_TCLASS to {tos}")))?;
        } else {
            sock.set_tos(u32::from(tos)).map_err(fail(format!("setting IP_TOS to {tos}")))?;
        }
    }
    if let Some(bps) = o.max_pacing_rate_bps {
        // The kernel takes bytes per second.
        let bytes = (bps / 8).max(1);
        let v: u64 = bytes;
        // SAFETY: setsockopt with a valid u64 option value of the size given.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_MAX_PACING_RATE,
                (&v as *const u64).cast(),
                std::mem::size_of::<u64>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(Error::io(
                format!("setting SO_MAX_PACING_RATE to {bps} bit/s"),
                io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}

/// SO_RCVLOWAT: a receive is not woken until `bytes` are queued (see
/// `io::recv::stream_rcvlowat`). The kernel caps it at half the largest receive buffer.
pub fn set_rcvlowat(sock: &Socket, bytes: u32) -> Result<()> {
    let v = bytes.min(i32::MAX as u32) as i32;
    setsockopt_int(
        sock.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_RCVLOWAT,
        v,
        &format!("setting SO_RCVLOWAT to {bytes}"),
    )
}

/// An int socket option, or an error that names `what` was being set.
pub(crate) fn setsockopt_int(fd: RawFd, level: i32, name: i32, v: i32, what: &str) -> Result<()> {
    // SAFETY: a valid i32 option value of the size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(Error::io(what.to_string(), io::Error::last_os_error()));
    }
    Ok(())
}

/// SO_RCVLOWAT as the socket has it (1 unless set); 0 if the kernel would not say.
pub fn rcvlowat(sock: &Socket) -> u32 {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into a valid int with its size.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r == 0 {
        v.max(0) as u32
    } else {
        0
    }
}

/// Applies buffer sizes and congestion control; called before connect or listen so that
/// window scaling is negotiated for the requested buffer.
pub fn configure(sock: &Socket, bufs: SocketBuffers, congestion_control: Option<&str>) -> Result<()> {
    if let Some(n) = bufs.send {
        sock.set_send_buffer_size(n as usize)
            .map_err(|e| Error::io(format!("setting SO_SNDBUF to {n}"), e))?;
    }
    if let Some(n) = bufs.recv {
        sock.set_recv_buffer_size(n as usize)
            .map_err(|e| Error::io(format!("setting SO_RCVBUF to {n}"), e))?;
    }
    if let Some(cc) = congestion_control {
        sock.set_tcp_congestion(cc.as_bytes()).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) => Error::Usage(format!(
                "congestion control '{cc}' is not available in this kernel: see /proc/sys/net/ipv4/tcp_available_congestion_control (or modprobe tcp_{cc})"
            )),
            _ => Error::io(format!("setting TCP_CONGESTION to {cc}"), e),
        })?;
    }
    Ok(())
}

/// TCP_MAXSEG before the handshake, so it is what the connection negotiates.
fn set_mss(sock: &Socket, mss: Option<u32>) -> Result<()> {
    if let Some(m) = mss {
        sock.set_mss(m).map_err(|e| Error::io(format!("setting TCP_MAXSEG to {m}"), e))?;
    }
    Ok(())
}

/// A TCP data socket for `addr`'s family, or an MPTCP one when `mptcp`; `what` names it
/// in the error. A kernel that refuses MPTCP gets an error that says how to enable it.
pub fn stream_socket(addr: SocketAddr, mptcp: bool, what: &str) -> Result<Socket> {
    let protocol = if mptcp { Protocol::from(IPPROTO_MPTCP) } else { Protocol::TCP };
    Socket::new(Domain::for_address(addr), Type::STREAM, Some(protocol)).map_err(|e| {
        if mptcp {
            mptcp_refused(what, &e)
        } else {
            Error::io(format!("creating {what}"), e)
        }
    })
}

/// Why this host could not open an MPTCP socket, and what to do.
pub fn mptcp_refused(what: &str, e: &io::Error) -> Error {
    let why = match e.raw_os_error() {
        Some(libc::ENOPROTOOPT) => "MPTCP is disabled on this host (net.mptcp.enabled = 0 in its network namespace): enable it with `sysctl -w net.mptcp.enabled=1`",
        Some(libc::EPROTONOSUPPORT) | Some(libc::EINVAL) => {
            "this kernel has no MPTCP (CONFIG_MPTCP, Linux 5.6 or later): run on a kernel with it"
        }
        _ => "see the error",
    };
    Error::Usage(format!(
        "cannot create {what} as an MPTCP socket ({e}): {why}, or drop {}",
        Setting::Mptcp.token()
    ))
}

/// The per-session data listener on the control connection's address, ephemeral port. An
/// MPTCP listener takes every address of this host instead: a subflow the client joins
/// later may arrive at another of them (one the server's path manager announced), and the
/// first subflow's peer address and the flow header still decide what is accepted.
pub fn listen(ip: IpAddr, spec: &TestSpec) -> Result<Socket> {
    let addr = SocketAddr::new(ip, 0);
    let sock = stream_socket(addr, spec.socket.mptcp, "the data listener")?;
    let addr = match (spec.socket.mptcp, ip) {
        (false, _) => addr,
        (true, IpAddr::V4(_)) => SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), 0),
        (true, IpAddr::V6(_)) => SocketAddr::new(std::net::Ipv6Addr::UNSPECIFIED.into(), 0),
    };
    configure(&sock, spec.remote.socket_buffers, spec.congestion_control.as_deref())?;
    set_mss(&sock, spec.socket.mss)?;
    sock.bind(&addr.into()).map_err(|e| Error::io(format!("binding the data listener to {addr}"), e))?;
    sock.listen(spec.connections().min(4096) as i32 + 16)
        .map_err(|e| Error::io("listening for data connections", e))?;
    Ok(sock)
}

/// Opens `spec.flows` data connections to `addr` (from local address `bind`, if given)
/// and sends each one's header.
pub fn connect_flows(
    addr: SocketAddr,
    cookie: u64,
    spec: &TestSpec,
    bind: Option<IpAddr>,
) -> Result<Vec<Socket>> {
    (0..spec.connections())
        .map(|flow| {
            let sock = stream_socket(addr, spec.socket.mptcp, "a data socket")?;
            configure(&sock, spec.local.socket_buffers, spec.congestion_control.as_deref())?;
            set_mss(&sock, spec.socket.mss)?;
            bind_local(&sock, bind)?;
            sock.connect_timeout(&SockAddr::from(addr), SETUP_TIMEOUT).map_err(|e| {
                Error::Peer(format!("cannot open data connection {flow} to {addr}: {e} (is a firewall blocking ephemeral ports?)"))
            })?;
            let mut header = [0u8; FLOW_HEADER_LEN];
            header[..8].copy_from_slice(&cookie.to_le_bytes());
            header[8..].copy_from_slice(&flow.to_le_bytes());
            (&sock).write_all(&header).map_err(|e| Error::Peer(format!("data connection {flow} to {addr} failed: {e}")))?;
            Ok(sock)
        })
        .collect()
}

/// Binds a client socket to local address `ip` (a port of the kernel's choice), if given.
pub fn bind_local(sock: &Socket, ip: Option<IpAddr>) -> Result<()> {
    match ip {
        Some(ip) => sock
            .bind(&SocketAddr::new(ip, 0).into())
            .map_err(|e| Error::io(format!("binding a data socket to the local address {ip}"), e)),
        None => Ok(()),
    }
}

/// Accepts the session's flows. Only connections from `peer` (the control connection's
/// address) are considered; anything else, a wrong cookie, a bad or repeated flow index, or
/// a header that does not arrive is closed at once and does not count. Headers are read
/// without blocking, so a connection that sends nothing cannot hold the others up; the
/// whole wait is bounded by SETUP_TIMEOUT.
pub fn accept_flows(listener: &Socket, cookie: u64, flows: u32, peer: IpAddr) -> Result<Vec<Socket>> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    listener.set_nonblocking(true).map_err(|e| Error::io("making the data listener non-blocking", e))?;
    let mut slots: Vec<Option<Socket>> = (0..flows).map(|_| None).collect();
    let mut missing = flows as usize;
    // Connections whose header is still arriving: (socket, header bytes, bytes so far).
    let mut heads: Vec<(Socket, [u8; FLOW_HEADER_LEN], usize)> = Vec::new();
    let most_heads = flows as usize + 16;
    let mut fds: Vec<libc::pollfd> = Vec::new();
    while missing > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Peer(format!(
                "only {} of {flows} data connections arrived within {} s",
                flows as usize - missing,
                SETUP_TIMEOUT.as_secs()
            )));
        }
        fds.clear();
        fds.push(libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        fds.extend(heads.iter().map(|h| libc::pollfd {
            fd: h.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of pollfds for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::io("poll", e));
        }
        let mut keep = Vec::with_capacity(heads.len());
        for (mut h, fd) in heads.drain(..).zip(fds[1..].iter()) {
            if fd.revents == 0 {
                keep.push(h);
                continue;
            }
            let n = match (&h.0).read(&mut h.1[h.2..]) {
                Ok(n) if n > 0 => n,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {
                    keep.push(h);
                    continue;
                }
                _ => continue, // EOF or an error before the header: drop it
            };
            h.2 += n;
            if h.2 < FLOW_HEADER_LEN {
                keep.push(h);
                continue;
            }
            let got_cookie = u64::from_le_bytes(h.1[..8].try_into().expect("8 bytes"));
            let flow = u32::from_le_bytes(h.1[8..].try_into().expect("4 bytes")) as usize;
            if got_cookie != cookie || flow >= slots.len() || slots[flow].is_some() {
                continue; // a stranger: dropped, which closes it
            }
            h.0.set_nonblocking(false).map_err(|e| Error::io("making a data connection blocking", e))?;
            slots[flow] = Some(h.0);
            missing -= 1;
        }
        heads = keep;
        if fds[0].revents != 0 {
            loop {
                let (sock, from) = match listener.accept() {
                    Ok(pair) => pair,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                    Err(e) => return Err(Error::io("accepting a data connection", e)),
                };
                if from.as_socket().map(|a| a.ip().to_canonical()) != Some(peer.to_canonical()) {
                    continue; // not the client of this session: closed at once
                }
                sock.set_nonblocking(true)
                    .map_err(|e| Error::io("making a data connection non-blocking", e))?;
                if heads.len() >= most_heads {
                    heads.remove(0);
                }
                heads.push((sock, [0; FLOW_HEADER_LEN], 0));
            }
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Waits until `fd` is readable (a pending accept counts) or `timeout` passes.
pub fn poll_readable(fd: i32, timeout: Duration) -> Result<bool> {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(Error::io("poll", e));
    }
    Ok(n > 0)
}

/// A random session cookie from the kernel's CSPRNG.
pub fn random_cookie() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: writes at most 8 bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 8 {
        // getrandom cannot fail for 8 bytes after boot; fall back to a clock-derived value.
        return ringperf_core::measure::clock::monotonic_ns() ^ 0x9e37_79b9_7f4a_7c15;
    }
    u64::from_le_bytes(b)
}
