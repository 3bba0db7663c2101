//! Child processes of a test: each is killed and reaped by a guard, so a failing test
//! never leaves one behind, and every wait has a deadline, so no test hangs.

use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::reports::TestReport;

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
        self.parsed()
    }

    /// stdout parsed as the report of one test.
    pub fn report(&self) -> TestReport {
        self.parsed()
    }

    /// stdout parsed as a `T` (the report of a plan, a load run, a sweep).
    pub fn parsed<T: DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("stdout of {} is not a {} ({e}): {self}", self.what, std::any::type_name::<T>())
        })
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

pub(crate) fn describe(cmd: &Command) -> String {
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
