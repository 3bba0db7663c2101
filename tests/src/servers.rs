//! Servers a test talks to: a `ringperf serve` child with its log, the server process's
//! resources as /proc shows them, and a port that refuses connections.

use std::io::{self, BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::clients::Ringperf;
use crate::namespaces::Netns;
use crate::process::ChildGuard;

/// A `ringperf serve` child on 127.0.0.1 and an ephemeral port, with its stderr log
/// collected line by line.
pub struct Server {
    child: ChildGuard,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

/// How long the server may take to print its listening line.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(20);

/// A client's binary is also the server: these start it as one.
impl Ringperf {
    /// Starts `ringperf serve` on 127.0.0.1 with an ephemeral port.
    pub fn serve(&self) -> Server {
        Server::spawn(self)
    }

    /// Starts `ringperf serve` on 127.0.0.1 with an ephemeral port and `extra` flags.
    pub fn serve_with(&self, extra: &[&str]) -> Server {
        Server::spawn_with(self, extra)
    }
}

impl Server {
    pub fn spawn(rp: &Ringperf) -> Server {
        Server::spawn_with(rp, &[])
    }

    pub fn spawn_with(rp: &Ringperf, extra: &[&str]) -> Server {
        let mut cmd = rp.command(&["serve", "--bind", "127.0.0.1", "--port", "0"]);
        cmd.args(extra);
        Server::start_at(cmd, Ipv4Addr::LOCALHOST)
    }

    /// `ringperf serve` inside `ns`, bound to `ip` there.
    pub fn spawn_in(rp: &Ringperf, ns: &Netns, ip: Ipv4Addr, extra: &[&str]) -> Server {
        let ip_s = ip.to_string();
        let mut args = vec!["serve", "--bind", &ip_s, "--port", "0"];
        args.extend_from_slice(extra);
        Server::start_at(ns.exec(rp.path(), &args), ip)
    }

    /// [`Server::start`], checking that the server bound to `ip`.
    fn start_at(cmd: Command, ip: Ipv4Addr) -> Server {
        let server = Server::start(cmd);
        assert_eq!(server.addr.ip(), ip, "the server did not bind where asked: {:?}", server.log());
        server
    }

    /// Starts `cmd`, a `ringperf serve` (perhaps wrapped in `ip netns exec` or `tools/lab
    /// exec`, which exec it in place), and waits for its listening line.
    pub fn start(mut cmd: Command) -> Server {
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = ChildGuard::spawn(cmd);
        let stderr = child.child_mut().stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        {
            let log = log.clone();
            thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    log.lock().expect("log lock").push(line);
                }
            });
        }
        let mut server = Server { child, addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)), log };
        let line = server
            .wait_for_log("listening on", SERVER_START_TIMEOUT)
            .unwrap_or_else(|| panic!("the server did not say it was listening: {:?}", server.log()));
        let addr = line.rsplit_once("listening on ").map(|(_, a)| a.trim()).unwrap_or_default();
        server.addr = addr.parse().unwrap_or_else(|e| panic!("cannot parse the address in '{line}': {e}"));
        assert_ne!(server.addr.port(), 0, "the server reported port 0: {line}");
        server
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn port_arg(&self) -> String {
        self.port().to_string()
    }

    /// Every stderr line so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().expect("log lock").clone()
    }

    /// Waits up to `timeout` for a stderr line containing `needle` and returns it.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(l) = self.log().into_iter().find(|l| l.contains(needle)) {
                return Some(l);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Panics if the server has exited.
    pub fn assert_running(&mut self) {
        if let Some(s) = self.child.try_status() {
            panic!("the server exited ({s}); its log: {:?}", self.log());
        }
    }

    pub fn child(&mut self) -> &mut ChildGuard {
        &mut self.child
    }

    /// The server's PID (for /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Open descriptors of the server process.
    pub fn fds(&self) -> usize {
        proc_count(self.pid(), "fd")
    }

    /// Threads of the server process.
    pub fn threads(&self) -> usize {
        proc_count(self.pid(), "task")
    }

    /// Resident memory of the server process, in KiB (VmRSS).
    pub fn rss_kib(&self) -> u64 {
        rss_kib(self.pid()).expect("VmRSS in /proc/PID/status")
    }

    /// Waits up to `timeout` for the server's fds and threads to come back to at most
    /// `baseline` (fds, threads); returns what it saw last.
    pub fn settle_to(&self, baseline: (usize, usize), timeout: Duration) -> (usize, usize) {
        let deadline = Instant::now() + timeout;
        loop {
            let now = (self.fds(), self.threads());
            if (now.0 <= baseline.0 && now.1 <= baseline.1) || Instant::now() >= deadline {
                return now;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Resident memory of process `pid`, in KiB (VmRSS); `None` once it is gone.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn proc_count(pid: u32, dir: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/{dir}"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/{dir}: {e}"))
        .count()
}

/// A TCP port on 127.0.0.1 that is bound but not listening, for as long as this lives:
/// connecting to it is refused, and no other test can start listening on it meanwhile.
pub struct RefusingPort {
    _fd: OwnedFd,
    port: u16,
}

impl RefusingPort {
    pub fn new() -> RefusingPort {
        // SAFETY: socket(2) has no memory effects.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        assert!(raw >= 0, "socket: {}", io::Error::last_os_error());
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: all-zero is a valid sockaddr_in.
        let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_addr.s_addr = u32::from(Ipv4Addr::LOCALHOST).to_be();
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: `sa` is a valid sockaddr_in of `len` bytes.
        let rc = unsafe { libc::bind(fd.as_raw_fd(), (&raw const sa).cast(), len) };
        assert_eq!(rc, 0, "bind: {}", io::Error::last_os_error());
        // SAFETY: `sa` and `len` are valid and writable; the kernel writes at most `len` bytes.
        let rc = unsafe { libc::getsockname(fd.as_raw_fd(), (&raw mut sa).cast(), &mut len) };
        assert_eq!(rc, 0, "getsockname: {}", io::Error::last_os_error());
        RefusingPort { _fd: fd, port: u16::from_be(sa.sin_port) }
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Default for RefusingPort {
    fn default() -> Self {
        Self::new()
    }
}
