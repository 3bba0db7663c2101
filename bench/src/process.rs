//! Running the tools: a measured, time-bounded client run, and servers that are always
//! reaped. Only processes this bench started are ever signalled, always by their PID.

use std::env;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use ringperf_core::measure::profile::{Profiler, Stopped};
use ringperf_core::spec::{ProfileSpec, DEFAULT_PROFILE_HZ};

use crate::cpu::{CpuWindow, Sample};
use crate::error::{BenchError, Result};
use crate::peers::{LISTEN_TIMEOUT, PORT_ATTEMPTS};

/// The first executable called `name` on PATH.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// `name` from PATH, or an error that says how to install it.
pub fn require(name: &str, hint: &str) -> Result<PathBuf> {
    find_in_path(name).ok_or_else(|| BenchError::Missing { tool: name.into(), hint: hint.into() })
}

/// `bin` as a command, under `taskset -c SET` when the layout gives both sides one CPU set
/// (tools that pin themselves, like iperf3's -A, are not pinned again otherwise).
pub fn within_cpu_set(cfg: &crate::peers::Config, bin: &Path) -> Command {
    match &cfg.layout.cpu_set {
        Some(set) => {
            let mut c = Command::new("taskset");
            c.args(["-c", set]).arg(bin);
            c
        }
        None => Command::new(bin),
    }
}

/// A server listening on a fresh port: `make(port)` gives its command. Tried on a few
/// ports, since another process may take a free port before the server binds it.
pub fn start_listening(name: &str, mut make: impl FnMut(u16) -> Result<Command>) -> Result<(Server, u16)> {
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port()?;
        let mut server = Server::spawn(name, &mut make(port)?)?;
        match server.wait_listening(port, LISTEN_TIMEOUT) {
            Ok(()) => return Ok((server, port)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| BenchError::Tool(format!("the {name} server did not start"))))
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| BenchError::io("finding a free port on 127.0.0.1", e))?;
    let port = l.local_addr().map_err(|e| BenchError::io("reading a bound port", e))?.port();
    Ok(port)
}

/// Ports in LISTEN state in a /proc/net/tcp or /proc/net/tcp6 table.
pub fn listening_ports(table: &str) -> Vec<u16> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (local, state) = (f.get(1)?, f.get(3)?);
            if *state != "0A" {
                return None;
            }
            let port = local.rsplit(':').next()?;
            u16::from_str_radix(port, 16).ok()
        })
        .collect()
}

fn is_listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| fs::read_to_string(p).ok())
        .any(|t| listening_ports(&t).contains(&port))
}

/// Reads a pipe to its end on its own thread, so that a chatty child never blocks on a full pipe.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn spawn(name: &str, cmd: &mut Command) -> Result<Child> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            BenchError::Missing { tool: name.into(), hint: format!("cannot execute {:?}", cmd.get_program()) }
        } else {
            BenchError::io(format!("starting {name}"), e)
        }
    })
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: plain syscall on a PID this bench spawned and has not reaped yet (callers
    // guarantee it), so the PID cannot have been reused by an unrelated process.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Blocks until `pid` has exited, without reaping it: the PID stays ours until `Child::wait`.
fn wait_exited_unreaped(pid: u32) -> Result<()> {
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid and writable; WNOWAIT leaves the child waitable.
        let r =
            unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(BenchError::io("waiting for a tool to exit", e));
        }
    }
}

/// What one measured client run produced.
pub struct Measured {
    pub stdout: String,
    pub stderr: String,
    pub status: ExitStatus,
    pub cpu: CpuWindow,
    /// The client's process id (reaped by now: only for telling its samples apart).
    pub pid: u32,
    /// The kernel cost profile of the window, not yet symbolized, when one was asked for.
    pub profile: Option<Stopped>,
}

impl std::fmt::Debug for Measured {
    /// The samples are left out: they are many, and say nothing until symbolized.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Measured")
            .field("status", &self.status)
            .field("pid", &self.pid)
            .field("profiled", &self.profile.is_some())
            .finish_non_exhaustive()
    }
}

impl Measured {
    /// stdout and stderr, for error messages.
    pub fn output_excerpt(&self) -> String {
        excerpt(&format!("{}{}", self.stdout, self.stderr))
    }
}

/// The last few lines of a tool's output, for an error message.
pub fn excerpt(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(8)..];
    if tail.is_empty() {
        "(no output)".into()
    } else {
        tail.iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
    }
}

/// Runs `cmd` to completion, at most `timeout`, with /proc/stat sampled right before it
/// starts and right after it exits. With `window_opens_at`, the first sample is taken
/// instead when a stdout line contains that text (for tools that idle before their test).
pub fn run_measured(
    name: &str,
    cmd: &mut Command,
    timeout: Duration,
    window_opens_at: Option<&str>,
) -> Result<Measured> {
    run_measured_profiled(name, cmd, timeout, window_opens_at, false)
}

/// What `--profile` samples a peer's window with: ringperf's own default rate, so both
/// sides of a comparison pay the same sampling cost and get as many samples.
pub const PEER_PROFILE: ProfileSpec = ProfileSpec { enabled: true, hz: DEFAULT_PROFILE_HZ, folded: false };

/// [`run_measured`], and with `profile` every CPU sampled over the same window (the
/// engine's profiler, started just before the first /proc/stat sample and stopped just
/// after the last, as ringperf does around its own window).
pub fn run_measured_profiled(
    name: &str,
    cmd: &mut Command,
    timeout: Duration,
    window_opens_at: Option<&str>,
    profile: bool,
) -> Result<Measured> {
    let spec = if profile { PEER_PROFILE } else { ProfileSpec::default() };
    let mut profiler = None;
    let mut before = match window_opens_at {
        None => {
            profiler = Profiler::start(&spec);
            Some(Sample::now()?)
        }
        Some(_) => None,
    };
    let mut child = spawn(name, cmd)?;
    let pid = child.id();
    let stderr = drain(child.stderr.take());

    let timed_out = Arc::new(AtomicBool::new(false));
    let (cancel, cancelled) = mpsc::channel::<()>();
    let watchdog = {
        let timed_out = timed_out.clone();
        thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(timeout) {
                timed_out.store(true, Ordering::SeqCst);
                signal(pid, libc::SIGKILL);
            }
        })
    };

    let mut stdout = String::new();
    if let Some(pipe) = child.stdout.take() {
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    if before.is_none() && window_opens_at.is_some_and(|m| text.contains(m)) {
                        profiler = Profiler::start(&spec);
                        before = Some(Sample::now()?);
                    }
                    stdout.push_str(&text);
                }
            }
        }
    }
    let exited = wait_exited_unreaped(pid);
    let after = Sample::now();
    let profile = profiler.map(Profiler::stop);
    // Stop the watchdog before reaping, so it can never signal a recycled PID.
    drop(cancel);
    let _ = watchdog.join();
    let status = child.wait().map_err(|e| BenchError::io(format!("reaping {name}"), e))?;
    exited?;
    let after = after?;
    let stderr = stderr.join().unwrap_or_default();
    if timed_out.load(Ordering::SeqCst) {
        return Err(BenchError::Tool(format!(
            "{name} did not finish within {} s and was killed; its output:\n{}",
            timeout.as_secs(),
            excerpt(&format!("{stdout}{stderr}"))
        )));
    }
    let Some(before) = before else {
        return Err(BenchError::Tool(format!(
            "{name} never printed '{}', so its test did not start; its output:\n{}",
            window_opens_at.unwrap_or_default(),
            excerpt(&format!("{stdout}{stderr}"))
        )));
    };
    Ok(Measured { stdout, stderr, status, cpu: CpuWindow::between(&before, &after), pid, profile })
}

/// A server process this bench started. Dropping it stops and reaps it.
pub struct Server {
    name: String,
    child: Option<Child>,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

/// What a server printed and how it ended.
#[derive(Debug)]
pub struct ServerExit {
    pub output: String,
    /// None when the bench had to stop it.
    pub status: Option<ExitStatus>,
}

impl ServerExit {
    /// "server (exit status: 0):" and its last lines, for an error message.
    pub fn describe(&self) -> String {
        let how = self.status.map_or_else(|| "stopped by the bench".to_string(), |s| s.to_string());
        format!("server ({how}):\n{}", excerpt(&self.output))
    }
}

impl Server {
    /// The server's process id while it runs (it is not reaped before `stop` or `wait`).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn spawn(name: &str, cmd: &mut Command) -> Result<Server> {
        let mut child = spawn(name, cmd)?;
        let stdout = Some(drain(child.stdout.take()));
        let stderr = Some(drain(child.stderr.take()));
        Ok(Server { name: name.into(), child: Some(child), stdout, stderr })
    }

    /// Waits until the server listens on `port` (checked in /proc/net, without connecting:
    /// a one-shot server would take a probe connection for its one client).
    pub fn wait_listening(&mut self, port: u16, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if is_listening(port) {
                return Ok(());
            }
            let exited = match self.child.as_mut() {
                Some(c) => c.try_wait().map_err(|e| BenchError::io(format!("checking {}", self.name), e))?,
                None => None,
            };
            if exited.is_some() || Instant::now() >= deadline {
                let why = if exited.is_some() { "exited" } else { "is not listening" };
                let out = self.stop().output;
                return Err(BenchError::Tool(format!(
                    "the {} server {why} on 127.0.0.1:{port} after {} s; its output:\n{}",
                    self.name,
                    timeout.as_secs(),
                    excerpt(&out)
                )));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits up to `timeout` for the server to exit by itself, then stops it.
    pub fn wait(&mut self, timeout: Duration) -> ServerExit {
        let deadline = Instant::now() + timeout;
        while let Some(c) = self.child.as_mut() {
            match c.try_wait() {
                Ok(Some(status)) => {
                    self.child = None;
                    return ServerExit { output: self.output(), status: Some(status) };
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                _ => break,
            }
        }
        self.stop()
    }

    /// Asks the server to stop (SIGINT), kills it if it does not within 2 s, and reaps it.
    pub fn stop(&mut self) -> ServerExit {
        let mut status = None;
        if let Some(mut c) = self.child.take() {
            if let Ok(Some(s)) = c.try_wait() {
                status = Some(s);
            } else {
                // Not reaped yet (try_wait said so), so the PID is still this child's.
                signal(c.id(), libc::SIGINT);
                let deadline = Instant::now() + Duration::from_secs(2);
                while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(10));
                }
                if matches!(c.try_wait(), Ok(None)) {
                    let _ = c.kill();
                }
                let _ = c.wait();
            }
        }
        ServerExit { output: self.output(), status }
    }

    fn output(&mut self) -> String {
        let mut out = String::new();
        for h in [self.stdout.take(), self.stderr.take()].into_iter().flatten() {
            out.push_str(&h.join().unwrap_or_default());
        }
        out
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// ANSI colour codes out of a tool's output (sockperf colours its results).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// A payload file for sendfile runs, removed when dropped.
pub struct PayloadFile {
    pub path: PathBuf,
}

impl PayloadFile {
    /// Size of the file every sendfile run sends (looping over it): large next to a send,
    /// small enough to stay in the page cache.
    pub const BYTES: usize = 16 << 20;

    /// Writes a patterned file in the temp directory.
    pub fn create() -> Result<PayloadFile> {
        let path = env::temp_dir().join(format!("ringperf-bench-sendfile-{}.bin", std::process::id()));
        let data: Vec<u8> = (0..Self::BYTES).map(|i| (i % 251) as u8).collect();
        fs::write(&path, data)
            .map_err(|e| BenchError::io(format!("writing the sendfile payload {}", path.display()), e))?;
        Ok(PayloadFile { path })
    }
}

impl Drop for PayloadFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:3B14 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 14219 1 0 100 0 0 10 0\n\
   1: 0100007F:9C40 0100007F:3B14 01 00000000:00000000 00:00000000 00000000     0        0 14220 1 0 100 0 0 10 0\n";
    const TCP6: &str =
        "  sl  local_address                         remote_address                        st\n\
   0: 00000000000000000000000000000000:1451 00000000000000000000000000000000:0000 0A 0:0 0:0 0 0 0 1\n";

    #[test]
    fn listening_ports_reads_only_listen_sockets() {
        assert_eq!(listening_ports(TCP), vec![0x3B14]);
        assert_eq!(listening_ports(TCP6), vec![5201]);
        assert!(listening_ports("header only\n").is_empty());
    }

    #[test]
    fn strip_ansi_removes_colour_codes() {
        assert_eq!(strip_ansi("a \u{1b}[2;35m====> avg-rtt=1.5\u{1b}[0m b"), "a ====> avg-rtt=1.5 b");
        assert_eq!(strip_ansi("plain"), "plain");
    }

    #[test]
    fn missing_tool_is_reported_with_the_hint() {
        let e = require("ringperf-bench-no-such-tool", "install it").unwrap_err();
        assert!(matches!(e, BenchError::Missing { .. }));
        assert!(e.to_string().contains("install it"));
        assert_eq!(e.exit_code(), 3);
    }

    #[test]
    fn measured_run_captures_output_and_status() {
        let m = run_measured(
            "sh",
            Command::new("sh").args(["-c", "echo hi; echo oops >&2; exit 3"]),
            Duration::from_secs(60),
            None,
        )
        .unwrap();
        assert_eq!(m.stdout, "hi\n");
        assert_eq!(m.stderr, "oops\n");
        assert_eq!(m.status.code(), Some(3));
        assert!((0.0..=100.0).contains(&m.cpu.busy_percent()));
    }

    #[test]
    fn window_marker_that_never_appears_is_an_error() {
        let e = run_measured(
            "sh",
            Command::new("sh").args(["-c", "echo hi"]),
            Duration::from_secs(60),
            Some("GO"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("never printed 'GO'"), "{e}");
    }

    #[test]
    fn a_hung_run_is_killed_and_reported() {
        let e = run_measured("sleep", Command::new("sleep").arg("60"), Duration::from_millis(200), None)
            .unwrap_err();
        assert!(e.to_string().contains("did not finish"), "{e}");
    }

    #[test]
    fn a_server_is_stopped_and_reaped() {
        let mut s = Server::spawn("sleep", Command::new("sleep").arg("60")).unwrap();
        let exit = s.stop();
        assert!(exit.status.is_none());
        // A second stop is harmless.
        assert!(s.stop().status.is_none());
    }

    #[test]
    fn a_server_that_exits_is_not_waited_for_forever() {
        let mut s = Server::spawn("sh", Command::new("sh").args(["-c", "echo bye"])).unwrap();
        let exit = s.wait(Duration::from_secs(60));
        assert_eq!(exit.output, "bye\n");
        assert!(exit.status.is_some_and(|s| s.success()));
    }
}
