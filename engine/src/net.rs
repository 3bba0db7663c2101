//! Data connections: socket options, the per-session listener, and the flow handshake that
//! ties each accepted connection to its session (a cookie plus the flow index).

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::error::{Error, Result};

pub mod udp;
use crate::spec::{SocketBuffers, SocketOptions, TestSpec};

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

/// The per-session data listener on the control connection's address, ephemeral port.
pub fn listen(ip: IpAddr, spec: &TestSpec) -> Result<Socket> {
    let addr = SocketAddr::new(ip, 0);
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| Error::io("creating the data listener", e))?;
    configure(&sock, spec.remote.socket_buffers, spec.congestion_control.as_deref())?;
    set_mss(&sock, spec.socket.mss)?;
    sock.bind(&addr.into()).map_err(|e| Error::io(format!("binding the data listener to {addr}"), e))?;
    sock.listen(spec.connections().min(4096) as i32 + 16)
        .map_err(|e| Error::io("listening for data connections", e))?;
    Ok(sock)
}

/// Opens `spec.flows` data connections to `addr` and sends each one's header.
pub fn connect_flows(addr: SocketAddr, cookie: u64, spec: &TestSpec) -> Result<Vec<Socket>> {
    (0..spec.connections())
        .map(|flow| {
            let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
                .map_err(|e| Error::io("creating a data socket", e))?;
            configure(&sock, spec.local.socket_buffers, spec.congestion_control.as_deref())?;
            set_mss(&sock, spec.socket.mss)?;
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

/// Accepts the session's flows. A connection with the wrong cookie or a bad flow index is
/// closed at once and does not count; the whole wait is bounded by SETUP_TIMEOUT.
pub fn accept_flows(listener: &Socket, cookie: u64, flows: u32) -> Result<Vec<Socket>> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    let mut slots: Vec<Option<Socket>> = (0..flows).map(|_| None).collect();
    let mut missing = flows as usize;
    while missing > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !poll_readable(listener.as_raw_fd(), left)? {
            return Err(Error::Peer(format!(
                "only {} of {flows} data connections arrived within {} s",
                flows as usize - missing,
                SETUP_TIMEOUT.as_secs()
            )));
        }
        let (sock, _) = match listener.accept() {
            Ok(pair) => pair,
            Err(e) if e.kind() == io::ErrorKind::Interrupted || e.kind() == io::ErrorKind::WouldBlock => {
                continue
            }
            Err(e) => return Err(Error::io("accepting a data connection", e)),
        };
        sock.set_read_timeout(Some(left.min(Duration::from_secs(5))))
            .map_err(|e| Error::io("setting a read timeout", e))?;
        let mut header = [0u8; FLOW_HEADER_LEN];
        if (&sock).read_exact(&mut header).is_err() {
            continue; // a stranger or a dead client: drop it
        }
        let got_cookie = u64::from_le_bytes(header[..8].try_into().expect("8 bytes"));
        let flow = u32::from_le_bytes(header[8..].try_into().expect("4 bytes")) as usize;
        if got_cookie != cookie || flow >= slots.len() || slots[flow].is_some() {
            continue;
        }
        sock.set_read_timeout(None).map_err(|e| Error::io("clearing a read timeout", e))?;
        slots[flow] = Some(sock);
        missing -= 1;
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
        return crate::measure::clock::monotonic_ns() ^ 0x9e37_79b9_7f4a_7c15;
    }
    u64::from_le_bytes(b)
}
