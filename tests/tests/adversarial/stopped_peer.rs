//! A peer that stops answering ends every run. The server stopped (SIGSTOP) mid-test,
//! whatever the workload and engine family, makes the client give up within the peer grace
//! after the test's end, print what it measured as a partial report and exit 3; the same
//! through `--from` and in a plan, where the agent then frees the session. A client stopped
//! mid-crr leaves the server no connection (no CLOSE-WAIT) once its session ends. SIGHUP
//! gives a client's partial report; one SIGTERM ends a server within its grace whatever its
//! sessions wait for, a second signal at once. Each resumed server keeps serving, with its
//! descriptors and threads back where they were.
//!
//! Every run waits out the 10 s grace, so the runs of one test go in parallel, each against
//! its own server.

use std::any::Any;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ringperf_control::server::SHUTDOWN_GRACE;
use ringperf_engine::workload::PEER_GRACE_NS;
use ringperf_tests::fabric::KeyFile;
use ringperf_tests::{
    parse, ringperf, run_with_timeout, skip_unless, ChildGuard, PlanReport, Program, Ringperf, Server,
    TestReport, SS,
};

use crate::{baseline, still_serves, SETTLE};

/// The manual's grace (docs/commands.md): how long after the test's end a side waits for a silent peer.
const GRACE: Duration = Duration::from_nanos(PEER_GRACE_NS);

/// What a run may take besides its length and the grace: starting the processes, the
/// handshake and setup, and the report, on a loaded 2-vCPU host. A run that waits on past
/// the grace fails: before the fix, rr and crr hung for good, and UDP waited twice the
/// grace.
const MARGIN: Duration = Duration::from_secs(7);

/// Test length of the runs a stop cuts (`-l`), and when their first interval line comes
/// (`-D`): the stop comes then, with the window open and data moving.
const LENGTH: Duration = Duration::from_secs(2);
const FIRST_INTERVAL: &str = "0.5";

/// How long a run may take to open its window (its first interval line).
const START_WAIT: Duration = Duration::from_secs(30);

const CLASSIC: [&str; 4] = ["--send-engine", "syscall", "--recv-engine", "syscall"];

#[test]
fn a_stopped_server_ends_every_ring_workload_within_the_grace() {
    let rp = ringperf!();
    every_run_ends(
        &rp,
        &[
            &["stream"],
            &["stream", "--reverse"],
            &["stream", "--bidir"],
            &["sendfile"],
            &["rr"],
            &["rr", "--burst", "4"],
            &["rr", "--rate", "2000"],
            &["crr"],
            &["udp-stream"],
            &["udp-rr"],
            &["udp-rr", "--burst", "4"],
            &["udp-rr", "--rate", "2000"],
        ],
    );
}

#[test]
fn a_stopped_server_ends_every_classic_loop_within_the_grace() {
    let rp = ringperf!();
    // One flow: blocking system calls; two: non-blocking sockets over epoll.
    let runs: Vec<Vec<&str>> = [
        &["stream"][..],
        &["stream", "--reverse"],
        &["stream", "--bidir"],
        &["rr"],
        &["rr", "--flows", "2"],
        &["crr"],
        &["crr", "--flows", "2"],
        &["udp-stream"],
        &["udp-rr"],
    ]
    .iter()
    .map(|w| w.iter().chain(&CLASSIC).copied().collect())
    .collect();
    let runs: Vec<&[&str]> = runs.iter().map(Vec::as_slice).collect();
    every_run_ends(&rp, &runs);
}

/// Runs [`a_stopped_server_ends_the_run`] for each of `runs` at once; fails naming every
/// run that failed.
fn every_run_ends(rp: &Ringperf, runs: &[&[&str]]) {
    thread::scope(|s| {
        let handles = runs
            .iter()
            .map(|&args| (format!("{args:?}"), s.spawn(move || a_stopped_server_ends_the_run(rp, args))));
        all_pass(handles.collect());
    });
}

/// Joins each named run; fails naming every run that failed, and why.
fn all_pass(runs: Vec<(String, thread::ScopedJoinHandle<'_, ()>)>) {
    let n = runs.len();
    let failures: Vec<String> = runs
        .into_iter()
        .filter_map(|(what, h)| h.join().err().map(|e| format!("{what}: {}", panic_text(&*e))))
        .collect();
    assert!(failures.is_empty(), "{} of {n} runs failed:\n{}", failures.len(), failures.join("\n\n"));
}

/// The client `args` against its own server, stopped as the client's first interval shows
/// the window open: the client gives up within the grace after the test's end, exits 3
/// and prints a partial report of what it measured; the server, resumed, serves on.
fn a_stopped_server_ends_the_run(rp: &Ringperf, args: &[&str]) {
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let length = LENGTH.as_secs().to_string();
    let mut all = args.to_vec();
    all.extend(["-H", "127.0.0.1", "-p", &port, "-l", &length, "-D", FIRST_INTERVAL, "--json-stream"]);
    let began = Instant::now();
    let mut client = Streaming::start(rp, &all);
    client.first_interval(&server);
    server.child().signal(libc::SIGSTOP);
    let status = client.guard.wait_timeout((LENGTH + GRACE + MARGIN).saturating_sub(began.elapsed()));
    let took = began.elapsed();
    // Resumed before anything is asserted, so a failure leaves no stopped process behind.
    server.child().signal(libc::SIGCONT);
    let status = status.unwrap_or_else(|| {
        panic!("still running {took:?} after it started, {LENGTH:?} + {GRACE:?} grace: {:?}", server.log())
    });
    let (lines, err) = client.finish();
    assert_eq!(status.code(), Some(3), "exit {status}: {err}");
    let report = last_report(&lines, &err);
    check_partial(&report, &err);
    // The stopped server never reported.
    assert!(report.remote.is_none(), "a report from a stopped server: {:?}", report.remote);
    still_serves(rp, &mut server, base, None);
}

/// A third-party rr (`--from`) whose peer agent B is stopped mid-run: the controller gets
/// agent A's partial report within the grace and exits 3; A frees the session (its fds and
/// threads back where they were) and both agents serve on. The same for a plan's test.
#[test]
fn a_stopped_peer_agent_ends_a_third_party_run_and_a_plan_within_the_grace() {
    let test = "a_stopped_peer_agent_ends_a_third_party_run_and_a_plan_within_the_grace";
    if skip_unless(test, false, &[SS]) {
        return;
    }
    let rp = ringperf!();
    let key = KeyFile::new("stopped-peer");
    thread::scope(|s| {
        let from = s.spawn(|| through_an_agent(&rp, &key, false));
        let plan = s.spawn(|| through_an_agent(&rp, &key, true));
        all_pass(vec![("--from".into(), from), ("plan".into(), plan)]);
    });
}

/// Agent A runs rr against agent B for a controller (`--from`, or a plan of one test), and
/// B is stopped once its data connection has received requests.
fn through_an_agent(rp: &Ringperf, key: &KeyFile, plan: bool) {
    let mut a = Server::spawn_with(rp, &["--psk-file", key.arg(), "--allow-third-party"]);
    let mut b = Server::spawn_with(rp, &["--psk-file", key.arg()]);
    let (base_a, base_b) = (baseline(&a), baseline(&b));
    let (pa, pb) = (a.port_arg(), b.port_arg());
    let length = Duration::from_secs(3);
    let plan_file;
    let cmd = if plan {
        let text = format!(
            "[[agent]]\nname = \"a\"\naddress = \"127.0.0.1\"\nport = {pa}\nkey_file = \"{k}\"\n\n\
             [[agent]]\nname = \"b\"\naddress = \"127.0.0.1\"\nport = {pb}\nkey_file = \"{k}\"\n\n\
             [[test]]\nname = \"lat\"\nworkload = \"rr\"\noptions = \"-l {}\"\npairs = [[\"a\", \"b\"]]\n",
            length.as_secs(),
            k = key.arg()
        );
        plan_file = TempFile::new("stopped-peer-plan.toml", &text);
        rp.command(&["plan", plan_file.arg(), "--json"])
    } else {
        let l = length.as_secs().to_string();
        let from = ["-H", "127.0.0.1", "-p", &pb, "--from", "127.0.0.1", "--from-port", &pa];
        let mut args = vec!["rr", "-l", &l, "--psk-file", key.arg(), "--json"];
        args.extend(from);
        rp.command(&args)
    };
    let began = Instant::now();
    let controller = thread::spawn(move || run_with_timeout(cmd, Duration::from_secs(120)));
    wait_for(START_WAIT, || receiving_data(&b), || format!("no data reached B: {:?}", b.log()));
    b.child().signal(libc::SIGSTOP);
    let o = controller.join().expect("the controller thread");
    let took = began.elapsed();
    b.child().signal(libc::SIGCONT);
    assert!(took <= length + GRACE + MARGIN, "the controller took {took:?}: {o}");
    assert_eq!(o.code(), 3, "{o}");
    let report = if plan {
        let r: PlanReport = o.parsed();
        assert!(r.partial, "{r:?}");
        let t = &r.tests[0];
        assert!(t.error.is_some(), "the stopped test has no error: {t:?}");
        t.report.clone().unwrap_or_else(|| panic!("the stopped test has no report: {t:?}"))
    } else {
        o.report()
    };
    check_partial(&report, &o.stderr);
    let now = a.settle_to(base_a, SETTLE);
    assert!(now.0 <= base_a.0 && now.1 <= base_a.1, "A holds {now:?}, before {base_a:?}: {:?}", a.log());
    still_serves(rp, &mut a, base_a, Some(key.path()));
    still_serves(rp, &mut b, base_b, Some(key.path()));
}

/// A crr client stopped mid-run, the server closing last (`--close-first client`): the
/// server's session ends at its deadline with every connection closed (its fds and threads
/// back), and once the client resumes and closes its end, no socket of the server is left
/// in CLOSE-WAIT. For the ring, and for the classic loops with one flow and with two.
#[test]
fn a_crr_server_keeps_no_connection_of_a_stopped_client() {
    let test = "a_crr_server_keeps_no_connection_of_a_stopped_client";
    if skip_unless(test, false, &[SS]) {
        return;
    }
    let rp = ringperf!();
    let ring: &[&str] = &[];
    let classic2: Vec<&str> = CLASSIC.iter().copied().chain(["--flows", "2"]).collect();
    let runs: [&[&str]; 3] = [ring, &CLASSIC, &classic2];
    thread::scope(|s| {
        let handles =
            runs.iter().map(|&extra| (format!("crr {extra:?}"), s.spawn(|| crr_client_stopped(&rp, extra))));
        all_pass(handles.collect());
    });
}

fn crr_client_stopped(rp: &Ringperf, extra: &[&str]) {
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let length = LENGTH.as_secs().to_string();
    let mut args = vec!["crr", "--close-first", "client", "-H", "127.0.0.1", "-p", &port, "-l", &length];
    args.extend(["-D", FIRST_INTERVAL, "--json-stream"]);
    args.extend(extra);
    let began = Instant::now();
    let mut client = Streaming::start(rp, &args);
    client.first_interval(&server);
    client.guard.signal(libc::SIGSTOP);
    let ended =
        server.wait_for_log("session failed", (LENGTH + GRACE + MARGIN).saturating_sub(began.elapsed()));
    let held = server.settle_to(base, SETTLE);
    client.guard.signal(libc::SIGCONT);
    assert!(ended.is_some(), "the session outlived its deadline: {:?}", server.log());
    assert!(held.0 <= base.0 && held.1 <= base.1, "the ended session holds {held:?}, before {base:?}");
    let status = client.guard.wait_timeout(GRACE + MARGIN);
    assert!(status.is_some(), "the resumed client did not end");
    // The client has closed its end: a connection the server kept would sit in CLOSE-WAIT.
    let waiting = sockets_of(&server, "close-wait");
    assert!(waiting.is_empty(), "the server keeps connections in CLOSE-WAIT: {waiting:?}");
    still_serves(rp, &mut server, base, None);
}

/// SIGHUP to a client mid-run stops it as Ctrl-C does: the partial report, exit 130.
#[test]
fn sighup_gives_a_client_s_partial_report() {
    let rp = ringperf!();
    let mut server = rp.serve();
    let base = baseline(&server);
    let port = server.port_arg();
    let args = ["rr", "-H", "127.0.0.1", "-p", &port, "-l", "30", "-D", "0.2", "--json-stream"];
    let mut client = Streaming::start(&rp, &args);
    client.first_interval(&server);
    client.guard.signal(libc::SIGHUP);
    let status = client.guard.wait_timeout(Duration::from_secs(10));
    let (lines, err) = client.finish();
    let status = status.unwrap_or_else(|| panic!("SIGHUP did not stop the client: {err}"));
    assert_eq!(status.code(), Some(130), "{err}");
    let report = last_report(&lines, &err);
    assert!(report.partial, "{report:?}");
    let why = report.partial_reason.as_deref().unwrap_or_default();
    assert!(why.contains("interrupted"), "{why}");
    assert!(report.local.transactions > 0, "nothing measured before SIGHUP");
    still_serves(&rp, &mut server, base, None);
}

/// One SIGTERM ends a server within its grace though a session waits on a stopped client,
/// logging the signal and the session it cut; a second signal (here SIGHUP) ends a
/// stopping server at once, with 130; SIGHUP alone stops an idle server, saying so, unless
/// it was started under `nohup`.
#[test]
fn one_sigterm_ends_a_server_whatever_its_sessions_wait_for() {
    let rp = ringperf!();
    thread::scope(|s| {
        let graceful = s.spawn(|| {
            let (mut server, mut client) = a_session_on_a_stopped_client(&rp);
            let asked = Instant::now();
            server.child().signal(libc::SIGTERM);
            let status = server.child().wait_timeout(SHUTDOWN_GRACE + MARGIN);
            let took = asked.elapsed();
            client.guard.signal(libc::SIGCONT);
            let status = status
                .unwrap_or_else(|| panic!("the server ignored SIGTERM for {took:?}: {:?}", server.log()));
            assert_eq!(status.code(), Some(0), "{:?}", server.log());
            assert!(server.wait_for_log("stopping on SIGTERM", LOG_DRAIN).is_some(), "{:?}", server.log());
            let cut = server.wait_for_log("TCP_RR cut", LOG_DRAIN);
            assert!(cut.is_some_and(|l| l.contains("grace")), "no cut session logged: {:?}", server.log());
            // The client learns its server is gone and still reports what it measured.
            let status = client.guard.wait_timeout(GRACE + MARGIN).expect("the client did not end");
            let (lines, err) = client.finish();
            assert_eq!(status.code(), Some(3), "{err}");
            check_partial(&last_report(&lines, &err), &err);
        });
        let at_once = s.spawn(|| {
            let (mut server, mut client) = a_session_on_a_stopped_client(&rp);
            server.child().signal(libc::SIGTERM);
            let hint = server.wait_for_log("stopping on SIGTERM", Duration::from_secs(10));
            server.child().signal(libc::SIGHUP);
            let status = server.child().wait_timeout(Duration::from_secs(3));
            client.guard.signal(libc::SIGCONT);
            assert!(hint.is_some_and(|l| l.contains("1 session")), "{:?}", server.log());
            let status =
                status.unwrap_or_else(|| panic!("a second signal did not stop it: {:?}", server.log()));
            assert_eq!(status.code(), Some(130), "{:?}", server.log());
        });
        let idle = s.spawn(|| {
            let mut server = rp.serve();
            server.child().signal(libc::SIGHUP);
            let status = server.child().wait_timeout(Duration::from_secs(10));
            let status =
                status.unwrap_or_else(|| panic!("SIGHUP did not stop an idle server: {:?}", server.log()));
            assert_eq!(status.code(), Some(0), "{:?}", server.log());
            assert!(server.wait_for_log("stopping on SIGHUP", LOG_DRAIN).is_some(), "{:?}", server.log());
        });
        let nohup = s.spawn(|| {
            // Started to outlive its terminal, a server keeps serving through SIGHUP.
            let nohup = Program { name: "nohup", package: "coreutils" };
            if skip_unless(
                "one_sigterm_ends_a_server_whatever_its_sessions_wait_for (nohup)",
                false,
                &[nohup],
            ) {
                return;
            }
            let mut cmd = Command::new("nohup");
            cmd.arg(rp.path()).args(["serve", "--bind", "127.0.0.1", "--port", "0"]);
            let mut server = Server::start(cmd);
            let base = baseline(&server);
            server.child().signal(libc::SIGHUP);
            still_serves(&rp, &mut server, base, None);
            assert!(server.wait_for_log("stopping", Duration::ZERO).is_none(), "{:?}", server.log());
        });
        let runs =
            [("one SIGTERM", graceful), ("a second signal", at_once), ("SIGHUP", idle), ("nohup", nohup)];
        all_pass(runs.into_iter().map(|(what, h)| (what.to_string(), h)).collect());
    });
}

/// How long the test's reader of a server's stderr may lag behind the server's exit: a
/// line the server wrote before it ended can still be on its way into the log.
const LOG_DRAIN: Duration = Duration::from_secs(5);

/// A server with one session whose client (rr, 30 s) was stopped once its window opened.
fn a_session_on_a_stopped_client(rp: &Ringperf) -> (Server, Streaming) {
    let server = rp.serve();
    let port = server.port_arg();
    let args = ["rr", "-H", "127.0.0.1", "-p", &port, "-l", "30", "-D", "0.2", "--json-stream"];
    let mut client = Streaming::start(rp, &args);
    client.first_interval(&server);
    client.guard.signal(libc::SIGSTOP);
    (server, client)
}

/// A client run with `--json-stream`, its lines read as they come.
struct Streaming {
    guard: ChildGuard,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: thread::JoinHandle<String>,
}

impl Streaming {
    fn start(rp: &Ringperf, args: &[&str]) -> Streaming {
        let mut cmd = rp.command(args);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut guard = ChildGuard::spawn(cmd);
        let out = guard.child_mut().stdout.take().expect("piped stdout");
        let mut err = guard.child_mut().stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr = thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Streaming { guard, lines, seen: Vec::new(), stderr }
    }

    /// Waits for the first interval line: the window is open and data moves.
    fn first_interval(&mut self, server: &Server) {
        match self.lines.recv_timeout(START_WAIT) {
            Ok(line) => self.seen.push(line),
            Err(_) => panic!("no interval within {START_WAIT:?}; server log: {:?}", server.log()),
        }
    }

    /// Every stdout line and the stderr of a client that has exited.
    fn finish(mut self) -> (Vec<String>, String) {
        let _ = self.guard.kill();
        self.seen.extend(self.lines.iter());
        (self.seen, self.stderr.join().unwrap_or_default())
    }
}

/// The report on the last line of a `--json-stream` run.
fn last_report(lines: &[String], stderr: &str) -> TestReport {
    let last = lines.last().unwrap_or_else(|| panic!("no output; stderr: {stderr}"));
    parse(&format!("the last line (stderr: {stderr})"), last)
}

/// A partial report that says why, and carries what the local side measured.
fn check_partial(r: &TestReport, stderr: &str) {
    assert!(r.partial, "not marked partial: {r:?}");
    let why = r.partial_reason.as_deref().unwrap_or_default();
    assert!(!why.is_empty(), "a partial report without its reason");
    let moved = r.local.bytes_sent + r.local.bytes_received;
    assert!(moved > 0, "the partial report lost what was measured: {r:?}");
    assert!(stderr.contains("partial"), "stderr does not say the result is partial: {stderr}");
}

/// Polls `ready` every 20 ms for up to `within`; fails with `why()` if it never holds.
fn wait_for(within: Duration, ready: impl Fn() -> bool, why: impl Fn() -> String) {
    let until = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < until, "{}", why());
        thread::sleep(Duration::from_millis(20));
    }
}

/// `ss -tinp state STATE` for `server`'s process: (local address, the info line).
fn sockets_of(server: &Server, state: &str) -> Vec<(String, String)> {
    let out = Command::new("ss").args(["-tinpH", "state", state]).output().expect("running ss");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let tag = format!("pid={},", server.pid());
    let mut found = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        // An info line is indented under its socket's line.
        let info = match lines.peek() {
            Some(l) if l.starts_with(char::is_whitespace) => lines.next().unwrap_or_default(),
            _ => "",
        };
        if line.contains(&tag) {
            let local = line.split_whitespace().nth(2).unwrap_or_default().to_string();
            found.push((local, info.to_string()));
        }
    }
    found
}

/// Whether a data connection of `server` (not its control port) has received more than a
/// flow header: its test's window is open and requests arrive.
fn receiving_data(server: &Server) -> bool {
    let control = format!(":{}", server.port());
    sockets_of(server, "established").iter().any(|(local, info)| {
        let received = info
            .split_whitespace()
            .find_map(|f| f.strip_prefix("bytes_received:"))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        !local.ends_with(&control) && received > 1024
    })
}

/// A file in the temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let p = std::env::temp_dir().join(format!("ringperf-{}-{name}", std::process::id()));
        std::fs::write(&p, text).expect("writing a temp file");
        TempFile(p)
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn panic_text(e: &(dyn Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
