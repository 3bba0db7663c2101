//! The binary under test as a client: [`Ringperf`] runs it with a deadline and parses
//! what it prints; [`run_with_a_stalled_server`] runs it against a server it stops midway.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::process::{run_with_timeout, ChildGuard, Outcome};
use crate::reports::{parse, SideReportExt, TestReport};

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

    /// Runs a command that must succeed with `--json` added, and returns its JSON as it is
    /// (for tests of the JSON's shape, and outputs that are no report).
    pub fn run_json(&self, args: &[&str]) -> Value {
        self.run_with_json(args).json()
    }

    /// Runs a test that must succeed with `--json` added, and returns its report.
    pub fn run_report(&self, args: &[&str]) -> TestReport {
        self.run_with_json(args).report()
    }

    /// Runs the test `args` (which must succeed, `--json` added) once for every ring send
    /// engine with every ring receive engine, `--send-engine SEND --recv-engine RECV`
    /// appended, and hands `check` each pair and its report as it comes.
    pub fn run_report_per_engine_pair(&self, args: &[&str], mut check: impl FnMut(&str, &str, &TestReport)) {
        for send in ["copy", "zc", "zc-msg", "splice"] {
            for recv in ["recv", "multishot", "bundle"] {
                let mut all = args.to_vec();
                all.extend(["--send-engine", send, "--recv-engine", recv]);
                check(send, recv, &self.run_report(&all));
            }
        }
    }

    /// Runs a command that must succeed with `--json` added, and returns what it printed as
    /// a `T` (the reports of `engines`, the environment `probe` finds, ...).
    pub fn run_parsed<T: DeserializeOwned>(&self, args: &[&str]) -> T {
        self.run_with_json(args).parsed()
    }

    fn run_with_json(&self, args: &[&str]) -> Outcome {
        let mut all = args.to_vec();
        all.push("--json");
        self.run(&all).success()
    }
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
pub fn run_with_a_stalled_server(rp: &Ringperf, args: &[&str], stall: Duration) -> TestReport {
    const ATTEMPTS: usize = 3;
    let mut missed = Vec::new();
    for _ in 0..ATTEMPTS {
        let (report, stopped, resumed) = stall_once(rp, args, stall);
        let start = report.local.window_start_ns();
        let end = start + report.spec.duration_ms * 1_000_000;
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
fn stall_once(rp: &Ringperf, args: &[&str], stall: Duration) -> (TestReport, u64, u64) {
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
    let report = parse("the client's last line", &last);
    (report, stopped, resumed)
}
