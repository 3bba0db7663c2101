//! Helpers shared by the integration tests: run the binary under test with a deadline,
//! spawn a standalone server, speak raw control frames, read JSON reports, and make
//! throw-away network namespaces. Every child process is killed and reaped by a guard, so a
//! failing test never leaves one behind, and every wait has a deadline, so no test hangs.
//!
//! The binary's path is only known when an integration test is compiled; use the
//! [`ringperf!`] macro there to get a [`Ringperf`] for it.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod fabric;

/// How long one test command may run before it is killed and the test fails. A 1 s test
/// takes about 1.2 s; the engine's own error paths are bounded by 10 s timeouts, so this
/// is generous without letting a hang go unnoticed.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(45);

/// The binary under test, as a [`Ringperf`].
#[macro_export]
macro_rules! ringperf {
    () => {
        $crate::Ringperf::new(env!("CARGO_BIN_EXE_ringperf-under-test"))
    };
}

/// The ringperf binary under test.
#[derive(Clone, Debug)]
pub struct Ringperf {
    bin: PathBuf,
}

impl Ringperf {
    pub fn new(bin: impl Into<PathBuf>) -> Ringperf {
        Ringperf { bin: bin.into() }
    }

    pub fn path(&self) -> &Path {
        &self.bin
    }

    /// A command for the binary with `args`.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args);
        c
    }

    /// Runs the binary with `args` to completion (killed after [`RUN_TIMEOUT`]).
    pub fn run(&self, args: &[&str]) -> Outcome {
        run_with_timeout(self.command(args), RUN_TIMEOUT)
    }

    /// Runs a test that must succeed with `--json` added, and returns the parsed report.
    pub fn run_json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        self.run(&all).success().json()
    }

    /// Starts `ringperf serve` on 127.0.0.1 with an ephemeral port.
    pub fn serve(&self) -> Server {
        Server::spawn(self)
    }

    /// Starts `ringperf serve` on 127.0.0.1 with an ephemeral port and `extra` flags.
    pub fn serve_with(&self, extra: &[&str]) -> Server {
        Server::spawn_with(self, extra)
    }
}

/// A child process that is killed and reaped when dropped, so a panicking test does not
/// leave it behind.
pub struct ChildGuard {
    child: Child,
    what: String,
    reaped: Option<ExitStatus>,
}

impl ChildGuard {
    pub fn spawn(mut cmd: Command) -> ChildGuard {
        let what = describe(&cmd);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        ChildGuard { child, what, reaped: None }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The exit status if the child has exited, without waiting.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.reaped.is_none() {
            self.reaped = self.child.try_wait().unwrap_or_else(|e| panic!("waiting for {}: {e}", self.what));
        }
        self.reaped
    }

    /// Waits up to `timeout` for the child to exit.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_status() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `sig` to the child. Only ever this child: while it is not reaped its PID
    /// cannot have been reused by another process.
    pub fn signal(&mut self, sig: libc::c_int) {
        assert!(self.try_status().is_none(), "{} already exited; not signalling a stale PID", self.what);
        let pid = libc::pid_t::try_from(self.child.id()).expect("PID fits pid_t");
        // SAFETY: kill(2) has no memory effects; `pid` is our own unreaped child.
        let rc = unsafe { libc::kill(pid, sig) };
        assert_eq!(rc, 0, "kill({pid}, {sig}): {}", io::Error::last_os_error());
    }

    /// SIGKILLs the child (if it still runs) and reaps it.
    pub fn kill(&mut self) -> ExitStatus {
        if let Some(s) = self.try_status() {
            return s;
        }
        let _ = self.child.kill();
        let s = self.child.wait().unwrap_or_else(|e| panic!("reaping {}: {e}", self.what));
        self.reaped = Some(s);
        s
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What a finished command did.
#[derive(Debug)]
pub struct Outcome {
    pub what: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// The exit code; panics if the process died from a signal.
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or_else(|| panic!("{} died from a signal: {self}", self.what))
    }

    /// Asserts exit code 0.
    pub fn success(self) -> Outcome {
        assert_eq!(self.status.code(), Some(0), "{} failed: {self}", self.what);
        self
    }

    /// Asserts a failure with `code`, nothing on stdout, and exactly one line on stderr that
    /// contains every one of `needles` (case-insensitive). Returns that line.
    pub fn failure(&self, code: i32, needles: &[&str]) -> String {
        assert_eq!(self.status.code(), Some(code), "wrong exit code from {}: {self}", self.what);
        assert!(self.stdout.is_empty(), "a failed run printed to stdout: {self}");
        let lines: Vec<&str> = self.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "expected a one-line error message on stderr: {self}");
        let line = lines[0];
        let lower = line.to_lowercase();
        for n in needles {
            assert!(lower.contains(&n.to_lowercase()), "error message lacks '{n}': {line}");
        }
        line.to_string()
    }

    /// stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout of {} is not JSON ({e}): {self}", self.what))
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cut = |s: &str| -> String { s.chars().take(4000).collect() };
        write!(
            f,
            "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            cut(&self.stdout),
            cut(&self.stderr)
        )
    }
}

fn describe(cmd: &Command) -> String {
    let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    format!("`{} {}`", cmd.get_program().to_string_lossy(), args.join(" "))
}

fn drain(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `cmd` with stdin closed and stdout/stderr captured. If it has not exited after
/// `timeout` it is killed and the test fails with whatever it printed.
pub fn run_with_timeout(cmd: Command, timeout: Duration) -> Outcome {
    let what = describe(&cmd);
    try_run_with_timeout(cmd, timeout).unwrap_or_else(|e| panic!("cannot start {what}: {e}"))
}

/// [`run_with_timeout`], except that a program that cannot be started is an error
/// rather than a test failure.
pub fn try_run_with_timeout(mut cmd: Command, timeout: Duration) -> io::Result<Outcome> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let what = describe(&cmd);
    let mut child = ChildGuard { child: cmd.spawn()?, what, reaped: None };
    let out = drain(child.child_mut().stdout.take().expect("piped stdout"));
    let err = drain(child.child_mut().stderr.take().expect("piped stderr"));
    let finished = child.wait_timeout(timeout);
    let status = child.kill();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let o = Outcome { what: child.what.clone(), status, stdout, stderr };
    assert!(finished.is_some(), "{} did not finish within {timeout:?} and was killed: {o}", o.what);
    Ok(o)
}

/// A `ringperf serve` child on 127.0.0.1 and an ephemeral port, with its stderr log
/// collected line by line.
pub struct Server {
    child: ChildGuard,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

/// How long the server may take to print its listening line.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(20);

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

/// A raw control connection, for feeding the server what a real client never sends.
pub struct Control {
    stream: TcpStream,
    /// The client nonce (hex) and server endpoint the last Hello sent.
    login: Option<(String, String)>,
}

/// What the server did after we sent something.
#[derive(Debug)]
pub enum Reply {
    /// A length-prefixed JSON frame.
    Frame(Value),
    /// The server closed the connection (EOF or reset) without a frame.
    Closed,
}

/// The largest reply frame we accept from the server (its own cap is 1 MiB).
const MAX_REPLY: usize = 1 << 20;
const CONTROL_IO_TIMEOUT: Duration = Duration::from_secs(15);

impl Control {
    pub fn connect(port: u16) -> Control {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connecting to the server at {addr}: {e}"));
        Control::on(stream)
    }

    /// Connects to the server on 127.0.0.1 from `source` (another loopback address), so a
    /// test can be a second host to a server's per-address limits.
    pub fn connect_from(source: Ipv4Addr, port: u16) -> Control {
        let sockaddr = |ip: Ipv4Addr, port: u16| {
            // SAFETY: all-zero is a valid sockaddr_in.
            let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = u32::from(ip).to_be();
            sa.sin_port = port.to_be();
            sa
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: socket(2) has no memory effects.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        assert!(raw >= 0, "socket: {}", io::Error::last_os_error());
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let from = sockaddr(source, 0);
        // SAFETY: `from` is a valid sockaddr_in of `len` bytes.
        let rc = unsafe { libc::bind(fd.as_raw_fd(), (&raw const from).cast(), len) };
        assert_eq!(rc, 0, "binding to {source}: {}", io::Error::last_os_error());
        let to = sockaddr(Ipv4Addr::LOCALHOST, port);
        // SAFETY: `to` is a valid sockaddr_in of `len` bytes; a blocking connect on loopback.
        let rc = unsafe { libc::connect(fd.as_raw_fd(), (&raw const to).cast(), len) };
        assert_eq!(rc, 0, "connecting from {source} to port {port}: {}", io::Error::last_os_error());
        Control::on(TcpStream::from(fd))
    }

    fn on(stream: TcpStream) -> Control {
        stream.set_read_timeout(Some(CONTROL_IO_TIMEOUT)).expect("read timeout");
        stream.set_write_timeout(Some(CONTROL_IO_TIMEOUT)).expect("write timeout");
        let _ = stream.set_nodelay(true);
        Control { stream, login: None }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("writing to the control connection");
    }

    /// Sends `body` as one frame: 4-byte big-endian length, then the body.
    pub fn send_frame(&mut self, body: &[u8]) {
        let mut f = u32::try_from(body.len()).expect("frame fits u32").to_be_bytes().to_vec();
        f.extend_from_slice(body);
        self.send_raw(&f);
    }

    pub fn send_json(&mut self, v: &Value) {
        self.send_frame(&serde_json::to_vec(v).expect("JSON encodes"));
    }

    /// Asks for the test `spec` (a TestSpec as JSON) and returns the data port and the
    /// session cookie of the server's 'ready'; anything else fails the test.
    pub fn start_test(&mut self, spec: &Value) -> (u16, u64) {
        self.send_json(&serde_json::json!({"type": "test", "spec": spec}));
        match self.read_reply() {
            Reply::Frame(v) if v["type"] == "ready" => {
                (v["data_port"].as_u64().expect("data_port") as u16, v["cookie"].as_u64().expect("cookie"))
            }
            other => panic!("expected 'ready', got {other:?}"),
        }
    }

    /// Asks for the UDP test `spec` and returns the server's UDP ports (in flow order) and
    /// the session cookie of its 'ready'; anything else fails the test.
    pub fn start_udp_test(&mut self, spec: &Value) -> (Vec<u16>, u64) {
        self.send_json(&serde_json::json!({"type": "test", "spec": spec}));
        match self.read_reply() {
            Reply::Frame(v) if v["type"] == "ready" => {
                let ports = v["udp_ports"].as_array().expect("udp_ports");
                let ports = ports.iter().map(|p| p.as_u64().expect("a port") as u16).collect();
                (ports, v["cookie"].as_u64().expect("cookie"))
            }
            other => panic!("expected 'ready', got {other:?}"),
        }
    }

    /// Opens the one data connection of a one-flow TCP test the server is 'ready' for on
    /// `port` (its header: `cookie`, flow 0), waits for 'armed' and says 'go': the window is
    /// open when this returns.
    pub fn open_flow_and_go(&mut self, port: u16, cookie: u64) -> TcpStream {
        let mut flow = TcpStream::connect(("127.0.0.1", port)).expect("data connection");
        let mut h = cookie.to_le_bytes().to_vec();
        h.extend_from_slice(&0u32.to_le_bytes());
        flow.write_all(&h).expect("flow header");
        assert!(matches!(self.read_reply(), Reply::Frame(v) if v["type"] == "armed"), "no 'armed' before go");
        self.send_json(&serde_json::json!({"type": "go"}));
        flow
    }

    /// Reads the server's next frame, or notes that it closed the connection. A read
    /// timeout fails the test: the server must answer or close, never leave us hanging.
    pub fn read_reply(&mut self) -> Reply {
        let mut len = [0u8; 4];
        match read_full(&mut self.stream, &mut len) {
            Ok(true) => {}
            Ok(false) => return Reply::Closed,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Reply::Closed,
            Err(e) => panic!("waiting for the server's reply: {e}"),
        }
        let n = u32::from_be_bytes(len) as usize;
        assert!((1..=MAX_REPLY).contains(&n), "the server sent a frame of {n} bytes");
        let mut body = vec![0u8; n];
        match read_full(&mut self.stream, &mut body) {
            Ok(true) => {}
            other => panic!("the server's frame of {n} bytes was cut short: {other:?}"),
        }
        Reply::Frame(serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!("the server's reply is not JSON ({e}): {:?}", String::from_utf8_lossy(&body))
        }))
    }

    /// Reads a reply that must be an error frame and returns (kind, message).
    pub fn expect_error(&mut self) -> (String, String) {
        match self.read_reply() {
            Reply::Frame(v) => {
                assert_eq!(v["type"], "error", "expected an error reply, got {v}");
                let kind = v["kind"].as_str().unwrap_or_else(|| panic!("error reply without kind: {v}"));
                let msg = v["message"].as_str().unwrap_or_else(|| panic!("error reply without message: {v}"));
                assert!(!msg.is_empty(), "empty error message: {v}");
                (kind.to_string(), msg.to_string())
            }
            Reply::Closed => panic!("the server closed the connection without an error reply"),
        }
    }

    /// Says hello with this build's protocol version, a fresh client nonce and the
    /// endpoint dialled, and returns the challenge.
    pub fn hello(&mut self) -> Value {
        let nonce = ringperf_control::auth::hex(&ringperf_control::auth::nonce().expect("nonce"));
        let dialled = self.stream.peer_addr().expect("the server's address");
        let endpoint = ringperf_control::auth::Endpoint::of(dialled).to_string();
        self.hello_with(&nonce, &endpoint)
    }

    /// Says hello with this client nonce (hex) and server endpoint, and returns the
    /// challenge (to replay a recorded hello, or to name an endpoint not dialled).
    pub fn hello_with(&mut self, client_nonce: &str, server_endpoint: &str) -> Value {
        let v = ringperf_control::protocol::PROTOCOL_VERSION;
        self.send_json(&serde_json::json!({
            "type": "hello",
            "protocol": v,
            "tool_version": "test",
            "client_nonce": client_nonce,
            "server_endpoint": server_endpoint,
        }));
        self.login = Some((client_nonce.to_string(), server_endpoint.to_string()));
        match self.read_reply() {
            Reply::Frame(c) if c["type"] == "challenge" => c,
            other => panic!("expected a challenge, got {other:?}"),
        }
    }

    /// Answers a challenge: with a key, checks that the server proved it holds it for the
    /// endpoint the hello named, and sends the client's proof. Returns the proof sent.
    pub fn answer(&mut self, challenge: &Value, psk: Option<&str>) -> Option<String> {
        use ringperf_control::auth::{self, Endpoint, Party, Psk, Session};
        let (nonce, endpoint) = self.login.clone().expect("answer follows hello");
        let server_nonce = auth::unhex(challenge["server_nonce"].as_str().expect("server_nonce"))
            .expect("the server nonce is hex");
        let client_nonce = auth::unhex(&nonce).expect("the client nonce is hex");
        let server_endpoint: Endpoint = endpoint.parse().expect("an endpoint");
        let session = Session { server_nonce: &server_nonce, client_nonce: &client_nonce, server_endpoint };
        let proof = psk.map(|k| {
            let key = Psk::from_secret(k, "test key").expect("test key");
            let theirs = challenge["proof"]
                .as_str()
                .unwrap_or_else(|| panic!("the server sent no proof: {challenge}"));
            assert!(key.verify(Party::Server, &session, theirs), "the server's proof is wrong: {challenge}");
            key.proof(Party::Client, &session)
        });
        self.send_json(&serde_json::json!({"type": "auth", "proof": proof}));
        proof
    }

    /// Hello and auth (with `psk` if given); returns the welcome.
    pub fn handshake(&mut self, psk: Option<&str>) -> Value {
        let challenge = self.hello();
        self.answer(&challenge, psk);
        match self.read_reply() {
            Reply::Frame(w) if w["type"] == "welcome" => w,
            other => panic!("expected a welcome, got {other:?}"),
        }
    }

    /// Asserts the server closes the connection (after any reply) rather than waiting.
    pub fn expect_closed(&mut self) {
        match self.read_reply() {
            Reply::Closed => {}
            Reply::Frame(v) => panic!("expected the server to close the session, got another frame: {v}"),
        }
    }
}

/// Fills `buf`; Ok(false) on EOF before the first byte.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("EOF after {got} bytes")))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
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

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and has no memory effects.
    unsafe { libc::geteuid() == 0 }
}

/// The environment variable naming a file that [`skip`] appends its line to, so that
/// `tools/test` can count and list the skipped tests after cargo is done.
pub const SKIP_LOG_ENV: &str = "RINGPERF_SKIP_LOG";

/// Says that `test` did not run and why: `SKIPPED: <test>: <reason>` on the process's own
/// stderr and, when `RINGPERF_SKIP_LOG` names a file, appended to it. The test then returns
/// and libtest counts it as passed, so this line is the only sign that it did not run.
///
/// libtest captures `eprintln!` (and shows it only for failures), so the line is written to
/// file descriptor 2 directly.
pub fn skip(test: &str, reason: &str) {
    let line = skip_line(test, reason);
    let bytes = line.as_bytes();
    // SAFETY: write(2) reads `bytes.len()` bytes from a live slice; fd 2 is the process's
    // stderr (a short write or a closed stderr loses the line, nothing else).
    let _ = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    if let Some(log) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        // One write of a short line to a file opened O_APPEND: tests skipping in parallel
        // threads and processes do not interleave their lines.
        if let Err(e) = append_line(Path::new(&log), &line) {
            let warn = format!("warning: cannot append to {}: {e}\n", Path::new(&log).display());
            // SAFETY: as above.
            let _ = unsafe { libc::write(2, warn.as_ptr().cast(), warn.len()) };
        }
    }
}

/// Appends `line` to `log` (created if need be) in one write.
fn append_line(log: &Path, line: &str) -> io::Result<()> {
    std::fs::OpenOptions::new().create(true).append(true).open(log)?.write_all(line.as_bytes())
}

/// The line [`skip`] writes, newline included.
pub fn skip_line(test: &str, reason: &str) -> String {
    format!("SKIPPED: {test}: {reason}\n")
}

/// A program some tests run, and the Debian package it comes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program {
    pub name: &'static str,
    pub package: &'static str,
}

pub const IP: Program = Program { name: "ip", package: "iproute2" };
pub const TC: Program = Program { name: "tc", package: "iproute2" };
pub const SS: Program = Program { name: "ss", package: "iproute2" };
pub const ETHTOOL: Program = Program { name: "ethtool", package: "ethtool" };
pub const NFT: Program = Program { name: "nft", package: "nftables" };
pub const FLOCK: Program = Program { name: "flock", package: "util-linux" };
pub const PYTHON3: Program = Program { name: "python3", package: "python3" };

/// What `tools/lab` checks for before it does anything (its `need_tools`).
pub const LAB_PROGRAMS: &[Program] = &[IP, TC, ETHTOOL, FLOCK];

/// Whether `name` is an executable file in a directory of `PATH`, as the shell and
/// `Command` would find it.
pub fn have_program(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = std::env::var_os("PATH") else { return false };
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(name)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Why a test that needs `root` (when true) and `programs` cannot run here, or `None`
/// when it can. The reason names the missing programs and the command that installs them.
pub fn missing_requirements(root: bool, programs: &[Program]) -> Option<String> {
    let mut why = Vec::new();
    if root && !is_root() {
        why.push("needs root for network namespaces (CI runs as root)".to_string());
    }
    let missing: Vec<Program> = programs.iter().copied().filter(|p| !have_program(p.name)).collect();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|p| format!("'{}'", p.name)).collect();
        let mut packages: Vec<&str> = missing.iter().map(|p| p.package).collect();
        packages.dedup();
        packages.sort_unstable();
        packages.dedup();
        why.push(format!(
            "needs {} (not found in PATH): apt-get install -y {}",
            names.join(", "),
            packages.join(" ")
        ));
    }
    if why.is_empty() {
        None
    } else {
        Some(why.join("; "))
    }
}

/// [`skip`]s `test` and returns true when it cannot run here (see [`missing_requirements`]).
pub fn skip_unless(test: &str, root: bool, programs: &[Program]) -> bool {
    match missing_requirements(root, programs) {
        Some(why) => {
            skip(test, &why);
            true
        }
        None => false,
    }
}

/// A network namespace made for one test and deleted when dropped.
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates the namespace, or says why not (no `ip` command, no permission).
    pub fn create(name: &str) -> Result<Netns, String> {
        let o = try_run_with_timeout(ip(&["netns", "add", name]), Duration::from_secs(10))
            .map_err(|e| format!("cannot run `ip` (install iproute2): {e}"))?;
        if o.status.success() {
            Ok(Netns { name: name.to_string() })
        } else {
            Err(format!("`ip netns add {name}` failed: {}", o.stderr.trim()))
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip netns exec NAME program args...`
    pub fn exec(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program).args(args);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let mut c = ip(&["netns", "del", &self.name]);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut g = ChildGuard::spawn(c);
        if g.wait_timeout(Duration::from_secs(10)).is_none() {
            eprintln!("warning: `ip netns del {}` did not finish in 10 s", self.name);
        }
    }
}

/// Two namespaces joined by a veth pair, `a` at 198.18.N.1 and `b` at 198.18.N.2 (/24),
/// removed (with the veth) when dropped. N comes from the caller so concurrent tests in
/// different files do not collide.
pub struct NetnsPair {
    pub a: Netns,
    pub b: Netns,
    pub a_addr: String,
    pub b_addr: String,
}

impl NetnsPair {
    pub fn create(tag: &str, n: u8) -> Result<NetnsPair, String> {
        let a = Netns::create(&format!("rp-{tag}-a"))?;
        let b = Netns::create(&format!("rp-{tag}-b"))?;
        let (va, vb) = (format!("rp{n}a"), format!("rp{n}b"));
        let (a_addr, b_addr) = (format!("198.18.{n}.1"), format!("198.18.{n}.2"));
        let pair = NetnsPair { a, b, a_addr, b_addr };
        let (an, bn) = (pair.a.name().to_string(), pair.b.name().to_string());
        let steps: Vec<Vec<String>> = vec![
            vec!["link", "add", &va, "netns", &an, "type", "veth", "peer", "name", &vb, "netns", &bn]
                .into_iter()
                .map(String::from)
                .collect(),
            ["-n", &an, "addr", "add", &format!("{}/24", pair.a_addr), "dev", &va].map(String::from).to_vec(),
            ["-n", &bn, "addr", "add", &format!("{}/24", pair.b_addr), "dev", &vb].map(String::from).to_vec(),
            ["-n", &an, "link", "set", &va, "up"].map(String::from).to_vec(),
            ["-n", &bn, "link", "set", &vb, "up"].map(String::from).to_vec(),
            ["-n", &an, "link", "set", "lo", "up"].map(String::from).to_vec(),
            ["-n", &bn, "link", "set", "lo", "up"].map(String::from).to_vec(),
        ];
        for args in steps {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            pair.run_checked(ip(&args))?;
        }
        Ok(pair)
    }

    /// Runs a set-up command; an error names it.
    pub fn run_checked(&self, cmd: Command) -> Result<(), String> {
        let what = describe(&cmd);
        let o = try_run_with_timeout(cmd, Duration::from_secs(10)).map_err(|e| format!("{what}: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("{what} failed: {}", o.stderr.trim()))
        }
    }

    /// Makes the path lossy and slow: every TCP segment leaving either namespace is dropped
    /// with `loss_percent` % probability (nftables), and `b`'s egress is shaped to
    /// `rate` with a queue of `latency` (tbf: this kernel has no netem).
    pub fn degrade(&self, loss_percent: u32, rate: &str, latency: &str) -> Result<(), String> {
        for ns in [&self.a, &self.b] {
            let nft = |args: &[&str]| {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns.name(), "nft"]).args(args);
                c
            };
            self.run_checked(nft(&["add", "table", "inet", "rploss"]))?;
            self.run_checked(nft(&[
                "add",
                "chain",
                "inet",
                "rploss",
                "out",
                "{ type filter hook output priority 0; }",
            ]))?;
            let lt = loss_percent.to_string();
            self.run_checked(nft(&[
                "add", "rule", "inet", "rploss", "out", "meta", "l4proto", "tcp", "numgen", "random", "mod",
                "100", "<", &lt, "drop",
            ]))?;
        }
        let dev = format!("rp{}b", self.b_addr.split('.').nth(2).unwrap_or("0"));
        let mut tc = Command::new("ip");
        tc.args([
            "netns",
            "exec",
            self.b.name(),
            "tc",
            "qdisc",
            "add",
            "dev",
            &dev,
            "root",
            "tbf",
            "rate",
            rate,
        ])
        .args(["burst", "32kb", "latency", latency]);
        self.run_checked(tc)
    }
}

/// `tools/lab` of this repository.
pub fn lab_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/lab")
}

/// A lab name unique to this test process and `tag` (tests in one binary run in parallel,
/// each with its own lab): lowercase letters and digits, at most 12.
pub fn lab_name(tag: &str) -> String {
    let name = format!("{tag}{}", std::process::id() % 1_000_000);
    assert!(name.len() <= 12 && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    name
}

/// Runs `tools/lab --lab NAME args...` to completion.
pub fn lab(name: &str, args: &[&str]) -> Outcome {
    let mut c = Command::new(lab_script());
    c.args(["--lab", name]).args(args);
    run_with_timeout(c, Duration::from_secs(60))
}

/// A lab brought up for one test and taken down (`tools/lab down`) when dropped, so a
/// failing test leaves no namespace behind.
pub struct Lab {
    name: String,
}

impl Lab {
    /// `tools/lab --lab NAME up args...`; panics with the script's message if it fails.
    pub fn up(name: &str, args: &[&str]) -> Lab {
        let lab = Lab { name: name.to_string() };
        let mut all = vec!["up"];
        all.extend_from_slice(args);
        let o = self::lab(name, &all);
        assert!(o.status.success(), "tools/lab up failed: {o}");
        lab
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace of host `host` (a, b, ...).
    pub fn namespace(&self, host: &str) -> String {
        format!("rplab-{}-{host}", self.name)
    }

    /// `tools/lab --lab NAME exec HOST program args...`
    pub fn exec(&self, host: &str, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(lab_script());
        c.args(["--lab", &self.name, "exec", host]).arg(program).args(args);
        c
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let mut c = Command::new(lab_script());
        c.args(["--lab", &self.name, "down"]).stdin(Stdio::null()).stdout(Stdio::null());
        let mut g = ChildGuard::spawn(c);
        if g.wait_timeout(Duration::from_secs(60)).is_none() {
            eprintln!("warning: `tools/lab --lab {} down` did not finish in 60 s", self.name);
        }
    }
}

/// The names `ip netns list` shows.
pub fn netns_list() -> Vec<String> {
    let o = run_with_timeout(ip(&["netns", "list"]), Duration::from_secs(10)).success();
    o.stdout.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

fn ip(args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(args);
    c
}

// ---------------------------------------------------------------------------------------
// Reading reports.

/// The value at a dotted path (`local.cpu.system.busy_percent`); panics naming the path.
pub fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for key in path.split('.') {
        cur = cur.get(key).unwrap_or_else(|| panic!("report has no field '{path}' (missing '{key}')"));
    }
    cur
}

pub fn u64_at(v: &Value, path: &str) -> u64 {
    at(v, path).as_u64().unwrap_or_else(|| panic!("'{path}' is not an unsigned integer: {}", at(v, path)))
}

pub fn f64_at(v: &Value, path: &str) -> f64 {
    let x = at(v, path).as_f64().unwrap_or_else(|| panic!("'{path}' is not a number: {}", at(v, path)));
    assert!(x.is_finite(), "'{path}' is not finite: {x}");
    x
}

pub fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path).as_str().unwrap_or_else(|| panic!("'{path}' is not a string: {}", at(v, path)))
}

pub fn bool_at(v: &Value, path: &str) -> bool {
    at(v, path).as_bool().unwrap_or_else(|| panic!("'{path}' is not a boolean: {}", at(v, path)))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn busy_us_of(r: &Value, side: &str) -> f64 {
    f64_at(r, &format!("{side}.cpu.system.busy_us"))
}

/// Checks what every side report must satisfy, whatever the test: CPU shares within
/// [0, 100], busy time within what the CPUs could give, the ring used, the tool measured.
pub fn check_side_common(r: &Value, side: &str) {
    let p = |f: &str| format!("{side}.{f}");
    let elapsed_ns = u64_at(r, &p("elapsed_ns"));
    assert!(elapsed_ns > 0, "{side}: elapsed_ns is 0");

    let cpus = u64_at(r, &p("cpu.system.cpus"));
    assert!(cpus >= 1, "{side}: cpu.system.cpus is 0");
    let busy = f64_at(r, &p("cpu.system.busy_percent"));
    assert!((0.0..=100.0).contains(&busy), "{side}: busy_percent {busy} outside [0, 100]");
    let steal = f64_at(r, &p("cpu.system.steal_percent"));
    assert!((0.0..=100.0).contains(&steal), "{side}: steal_percent {steal} outside [0, 100]");
    assert!(busy + steal <= 100.0 + 1e-6, "{side}: busy {busy} + steal {steal} exceed 100 %");
    let per_cpu = at(r, &p("cpu.system.per_cpu_busy_percent"))
        .as_array()
        .unwrap_or_else(|| panic!("{side}: per_cpu_busy_percent is not an array"));
    assert_eq!(per_cpu.len() as u64, cpus, "{side}: per-CPU list does not cover cpu.system.cpus");
    for (i, c) in per_cpu.iter().enumerate() {
        let c = c.as_f64().unwrap_or(f64::NAN);
        assert!((0.0..=100.0).contains(&c), "{side}: CPU {i} busy {c} outside [0, 100]");
    }
    let busy_us = f64_at(r, &p("cpu.system.busy_us"));
    let capacity_us = cpus as f64 * elapsed_ns as f64 / 1e3;
    // /proc/stat counts scheduler ticks, so a side whose threads ran a few ms in all (a
    // paced test) can honestly see none; past 50 ms of exact thread time (a dozen ticks or
    // more) a zero means the counter is broken.
    let thread_ns = u64_at(r, &p("cpu.tool.thread_ns"));
    assert!(
        busy_us > 0.0 || thread_ns < 50_000_000,
        "{side}: no busy CPU time measured while the worker threads ran {thread_ns} ns"
    );
    assert!(
        busy_us <= capacity_us * (1.0 + 1e-9),
        "{side}: busy {busy_us} us over {cpus} CPUs x {elapsed_ns} ns"
    );

    assert!(u64_at(r, &p("cpu.tool.thread_ns")) > 0, "{side}: the worker thread's CPU time is 0");
    let overhead = f64_at(r, &p("cpu.tool_overhead_percent"));
    assert!(overhead >= 0.0, "{side}: tool overhead {overhead} is negative");

    let syscalls = at(r, &p("ring.syscalls"));
    if syscalls.is_null() {
        for f in ["enters", "sqes", "cqes"] {
            assert!(u64_at(r, &p(&format!("ring.{f}"))) > 0, "{side}: ring.{f} is 0");
        }
    } else {
        // A classic engine has no ring: it counts its system calls instead, and no enters.
        for f in ["enters", "sqes", "cqes"] {
            assert_eq!(u64_at(r, &p(&format!("ring.{f}"))), 0, "{side}: a classic side reports ring.{f}");
        }
        let calls: u64 = ["sends", "recvs", "epoll_waits", "other"].iter().map(|f| u64_at(syscalls, f)).sum();
        assert!(calls > 0, "{side}: a classic side counted no system calls: {syscalls}");
    }
    assert!(at(r, &p("socket.send_buffer")).is_u64() && at(r, &p("socket.recv_buffer")).is_u64());
}

/// Checks a stream report: exact byte conservation between sender and receiver, positive
/// throughput consistent with the sender's counts, sane CPU, positive service demand.
pub fn check_stream_report(r: &Value, reverse: bool) {
    let (test, dir, sender, receiver) = if reverse {
        ("TCP_MAERTS", "server_to_client", "remote", "local")
    } else {
        // netperf calls a stream whose sender splices from a file TCP_SENDFILE.
        let splice = str_at(r, "spec.local.send_engine") == "splice";
        (if splice { "TCP_SENDFILE" } else { "TCP_STREAM" }, "client_to_server", "local", "remote")
    };
    assert_eq!(str_at(r, "test"), test);
    assert_eq!(str_at(r, "spec.workload"), "stream");
    assert_eq!(str_at(r, "spec.direction"), dir);
    assert_eq!(str_at(r, &format!("{sender}.role")), "stream_sender");
    assert_eq!(str_at(r, &format!("{receiver}.role")), "stream_receiver");

    let sent = u64_at(r, &format!("{sender}.bytes_sent"));
    let received = u64_at(r, &format!("{receiver}.bytes_received"));
    assert!(sent > 0, "the sender sent nothing");
    assert_eq!(sent, received, "bytes sent by the {sender} side != bytes received by the {receiver} side");
    assert_eq!(u64_at(r, &format!("{sender}.bytes_received")), 0, "the sender received payload");
    assert_eq!(u64_at(r, &format!("{receiver}.bytes_sent")), 0, "the receiver sent payload");

    for side in ["local", "remote"] {
        check_side_common(r, side);
        assert_eq!(u64_at(r, &format!("{side}.transactions")), 0, "{side}: transactions in a stream test");
        assert!(at(r, &format!("{side}.latency")).is_null(), "{side}: latency in a stream test");
        let sd = f64_at(r, &format!("{side}.service_demand.us_per_kb"));
        assert!(
            sd > 0.0 || sd == 0.0 && busy_us_of(r, side) == 0.0,
            "{side}: us_per_kb {sd} is not positive"
        );
        // netperf's definition, from this side's own counts.
        let moved = u64_at(r, &format!("{side}.bytes_sent")) + u64_at(r, &format!("{side}.bytes_received"));
        let busy_us = f64_at(r, &format!("{side}.cpu.system.busy_us"));
        assert!(
            close(sd, busy_us / (moved as f64 / 1024.0)),
            "{side}: us_per_kb {sd} != busy_us {busy_us} / ({moved} B / 1024)"
        );
        assert!(at(r, &format!("{side}.service_demand.us_per_transaction")).is_null());
    }

    let tput = f64_at(r, "summary.throughput_bits_per_sec");
    assert!(tput > 0.0, "throughput {tput} is not positive");
    let elapsed = u64_at(r, &format!("{sender}.elapsed_ns"));
    assert!(
        close(tput, sent as f64 * 8.0 / (elapsed as f64 / 1e9)),
        "throughput {tput} does not match the sender's {sent} bytes over {elapsed} ns"
    );
    // The sender's window cannot close before its deadline (an absolute ring timeout).
    let want_ns = u64_at(r, "spec.duration_ms") * 1_000_000;
    assert!(elapsed >= want_ns, "the sender stopped after {elapsed} ns, before the {want_ns} ns test length");
    assert!(at(r, "summary.transactions_per_sec").is_null());
}

/// Checks an rr report: both sides count the same transactions, bytes match the sizes,
/// the latency histogram covers every transaction with ordered percentiles.
pub fn check_rr_report(r: &Value) {
    assert_eq!(str_at(r, "test"), "TCP_RR");
    assert_eq!(str_at(r, "spec.workload"), "rr");
    assert_eq!(str_at(r, "local.role"), "rr_client");
    assert_eq!(str_at(r, "remote.role"), "rr_server");
    let t = u64_at(r, "local.transactions");
    assert!(t > 0, "the client completed no transactions");
    assert!(u64_at(r, "remote.transactions") > 0, "the server completed no transactions");
    assert_eq!(t, u64_at(r, "remote.transactions"), "client and server count different transactions");

    let req = u64_at(r, "spec.request_size");
    let rsp = u64_at(r, "spec.response_size");
    assert_eq!(u64_at(r, "local.bytes_sent"), t * req, "client bytes sent != transactions x request size");
    assert_eq!(
        u64_at(r, "local.bytes_received"),
        t * rsp,
        "client bytes received != transactions x response"
    );
    assert_eq!(
        u64_at(r, "remote.bytes_received"),
        t * req,
        "server bytes received != transactions x request"
    );
    assert_eq!(u64_at(r, "remote.bytes_sent"), t * rsp, "server bytes sent != transactions x response size");

    for side in ["local", "remote"] {
        check_side_common(r, side);
        let sd = f64_at(r, &format!("{side}.service_demand.us_per_transaction"));
        assert!(
            sd > 0.0 || sd == 0.0 && busy_us_of(r, side) == 0.0,
            "{side}: us_per_transaction {sd} is not positive"
        );
        let busy_us = f64_at(r, &format!("{side}.cpu.system.busy_us"));
        assert!(close(sd, busy_us / t as f64), "{side}: us_per_transaction {sd} != busy_us {busy_us} / {t}");
    }

    let l = at(r, "local.latency");
    assert!(l.is_object(), "the rr client reported no latency: {l}");
    assert_eq!(u64_at(l, "count"), t, "latency.count != local.transactions");
    let names = ["min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns"];
    let vals: Vec<u64> = names.iter().map(|n| u64_at(l, n)).collect();
    for i in 1..vals.len() {
        assert!(
            vals[i - 1] <= vals[i],
            "latency {} = {} > {} = {}",
            names[i - 1],
            vals[i - 1],
            names[i],
            vals[i]
        );
    }
    assert!(vals[0] > 0, "a round trip of 0 ns");
    let mean = f64_at(l, "mean_ns");
    assert!(
        mean >= vals[0] as f64 && mean <= *vals.last().expect("max") as f64,
        "mean {mean} outside [min, max]"
    );
    let hist = str_at(l, "histogram");
    assert!(!hist.is_empty(), "empty serialized histogram");
    assert!(
        hist.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)),
        "the histogram is not base64"
    );
    assert!(at(r, "remote.latency").is_null(), "the rr server reported latency");

    let tps = f64_at(r, "summary.transactions_per_sec");
    let elapsed = u64_at(r, "local.elapsed_ns");
    assert!(tps > 0.0);
    assert!(
        close(tps, t as f64 / (elapsed as f64 / 1e9)),
        "transactions_per_sec {tps} != {t} / {elapsed} ns"
    );
    assert!(close(f64_at(r, "summary.mean_latency_ns"), mean), "summary.mean_latency_ns != latency.mean_ns");
    assert!(f64_at(r, "summary.throughput_bits_per_sec") > 0.0);
    let want_ns = u64_at(r, "spec.duration_ms") * 1_000_000;
    assert!(elapsed >= want_ns, "the client stopped after {elapsed} ns, before the {want_ns} ns test length");
}

/// Runs a test (`args`: the command and its flags, with `-l` and `-D` so that the first
/// interval comes well before the end) against a separate `ringperf serve`, stopping the
/// server with SIGSTOP for `stall` once the client's first interval line shows its window
/// is open, then resuming it; returns the client's final report. The open-loop tests of rr
/// and udp-rr share it to show a stall in the percentiles.
///
/// What the test asserts needs the whole stall inside the client's window, with time after
/// it for the stalled requests to be answered before the deadline. The stall starts when
/// this process reads the interval line, which a loaded machine may delay past the window's
/// end: so the stall's ends are read on the clock the report's `window_start_ns` is on, and
/// a run whose stall did not fall inside the window is run again (a bounded number of
/// times) instead of being asserted on.
pub fn run_with_a_stalled_server(rp: &Ringperf, args: &[&str], stall: Duration) -> Value {
    const ATTEMPTS: usize = 3;
    let mut missed = Vec::new();
    for _ in 0..ATTEMPTS {
        let (report, stopped, resumed) = stall_once(rp, args, stall);
        let start = u64_at(&report, "local.window_start_ns");
        let end = start + u64_at(&report, "spec.duration_ms") * 1_000_000;
        if stopped >= start && resumed + STALL_ANSWER_MARGIN.as_nanos() as u64 <= end {
            return report;
        }
        let ms = |t: u64| (t as i64 - start as i64) / 1_000_000;
        let at = format!("{} to {} ms of a {} ms window", ms(stopped), ms(resumed), ms(end));
        eprintln!("the stall fell at {at} (a loaded machine read the interval line late): running again");
        missed.push(at);
    }
    panic!("in {ATTEMPTS} runs of {args:?} the stall never fell inside the window: {missed:?}")
}

/// Time the requests held up by a stall get after it to be answered before the deadline.
const STALL_ANSWER_MARGIN: Duration = Duration::from_millis(200);

/// One run of [`run_with_a_stalled_server`]: the report, and when the server was stopped
/// and resumed (CLOCK_MONOTONIC, as the report's `window_start_ns`).
fn stall_once(rp: &Ringperf, args: &[&str], stall: Duration) -> (Value, u64, u64) {
    use ringperf_core::measure::clock::monotonic_ns;
    let mut server = rp.serve();
    let port = server.port_arg();
    let mut all = args.to_vec();
    all.extend_from_slice(&["-H", "127.0.0.1", "-p", &port, "--json-stream"]);
    let mut cmd = rp.command(&all);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut client = ChildGuard::spawn(cmd);
    let stdout = client.child_mut().stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    // The first interval: the data window is open and both sides are moving.
    let first = lines.next().and_then(Result::ok);
    assert!(first.is_some(), "the client {args:?} printed no interval: {:?}", server.log());
    let pid = server.pid() as libc::pid_t;
    let stopped = monotonic_ns();
    // SAFETY: signals only the server process this test started (its PID, still our child).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0, "cannot stop the server");
    thread::sleep(stall);
    // SAFETY: as above; resumes the process stopped just before.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0, "cannot resume the server");
    let resumed = monotonic_ns();
    let last = lines.map_while(Result::ok).last().unwrap_or_default();
    let status = client.wait_timeout(Duration::from_secs(60));
    assert!(status.is_some_and(|s| s.success()), "the client {args:?} failed: {status:?}");
    server.assert_running();
    let report =
        serde_json::from_str(&last).unwrap_or_else(|e| panic!("the last line is no report ({e}): {last}"));
    (report, stopped, resumed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_line_is_one_line_tools_test_can_count() {
        let line = skip_line("some_test", "needs root");
        assert_eq!(line, "SKIPPED: some_test: needs root\n");
        let log = std::env::temp_dir().join(format!("ringperf-skiplog-{}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        append_line(&log, &line).expect("first append");
        append_line(&log, &skip_line("other_test", "needs 'nft'")).expect("second append");
        let got = std::fs::read_to_string(&log).expect("the log");
        let _ = std::fs::remove_file(&log);
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines, ["SKIPPED: some_test: needs root", "SKIPPED: other_test: needs 'nft'"]);
    }

    #[test]
    fn a_missing_program_is_named_with_its_package() {
        let absent = Program { name: "ringperf-no-such-program", package: "no-such-package" };
        let why = missing_requirements(false, &[absent, absent]).expect("an absent program is missing");
        assert!(why.contains("'ringperf-no-such-program'"), "{why}");
        assert!(why.ends_with("apt-get install -y no-such-package"), "{why}");
        // `sh` is in every PATH these tests run with.
        let sh = Program { name: "sh", package: "dash" };
        assert_eq!(missing_requirements(false, &[sh]), None);
    }
}
