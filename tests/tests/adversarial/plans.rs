//! Plans and third-party requests, attacked as a key holder would: options that aim a
//! test elsewhere in any spelling, a pair of three names, a peer name made to flood an
//! agent's log, a refused request; and a plan whose tests arm more slowly than any fixed
//! wait allowed, which must start whole. Each checks the agents serve on afterwards.

use std::time::{Duration, Instant};

use ringperf_tests::fabric::{KeyFile, PlanFile};
use ringperf_tests::{ringperf, run_with_timeout, Outcome, PlanReport, Ringperf, Server, TestReportExt};

use crate::outputs::{dev_full, run_into};
use crate::{baseline, still_serves};

/// Loopback agents that take third-party work with `key` (and `extra` flags).
fn agents(rp: &Ringperf, key: &KeyFile, n: usize, extra: &[&str]) -> Vec<Server> {
    let mut flags = vec!["--psk-file", key.arg(), "--allow-third-party"];
    flags.extend_from_slice(extra);
    (0..n).map(|_| Server::spawn_with(rp, &flags)).collect()
}

/// [[agent]] entries a0, a1, ... for `agents`, keyed with `key` unless it is None.
fn plan_text(agents: &[Server], key: Option<&KeyFile>, tests: &str) -> String {
    let mut p = String::new();
    for (i, a) in agents.iter().enumerate() {
        p.push_str(&format!("[[agent]]\nname = \"a{i}\"\naddress = \"127.0.0.1\"\nport = {}\n", a.port()));
        if let Some(k) = key {
            p.push_str(&format!("key_file = \"{}\"\n", k.arg()));
        }
        p.push('\n');
    }
    p + tests
}

fn run_plan(rp: &Ringperf, plan: &PlanFile, env: &[(&str, &str)], timeout: Duration) -> Outcome {
    let mut cmd = rp.command(&["plan", plan.arg(), "--json"]);
    cmd.env_remove("RINGPERF_PSK");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_timeout(cmd, timeout)
}

/// A whole plan: not partial, every test with a report, no error, bytes conserved.
fn check_whole(r: &PlanReport, tests: usize) {
    assert!(!r.partial, "a partial plan: {r:?}");
    let rows = &r.tests;
    assert_eq!(rows.len(), tests);
    for t in rows {
        assert!(t.error.is_none(), "{}: {:?}", t.name, t.error);
        let rep = t.report.as_ref().unwrap_or_else(|| panic!("{}: no report", t.name));
        let sent = rep.local.bytes_sent;
        assert!(sent > 0, "{}: nothing sent", t.name);
        assert_eq!(sent, rep.remote().bytes_received, "{}: bytes lost", t.name);
    }
}

/// No agent logged a session: the plan was refused before anything started.
fn nothing_started(agents: &[Server]) {
    for a in agents {
        assert!(!a.log().iter().any(|l| l.contains("session started")), "{:?}", a.log());
    }
}

#[test]
fn options_that_aim_a_test_elsewhere_are_refused_however_spelled() {
    let rp = ringperf!();
    let key = KeyFile::new("advplopt");
    let mut ag = agents(&rp, &key, 2, &[]);
    let base = baseline(&ag[0]);
    for (options, flag) in [
        ("-H127.0.0.3", "-H/--host"),
        ("--host=127.0.0.3", "-H/--host"),
        ("-p41005", "-p/--port"),
        ("-L127.0.0.1", "-L/--local"),
        ("-i3", "-i"),
        ("-I99,5", "-I"),
        ("--profile-out /tmp/x", "--profile-out"),
        ("--from=127.0.0.1 -H 127.0.0.3", "-H/--host"),
    ] {
        let tests = format!(
            "[[test]]\nworkload = \"stream\"\noptions = \"-l 1 {options}\"\npairs = [[\"a0\", \"a1\"]]\n"
        );
        let plan = PlanFile::new("opt", &plan_text(&ag, Some(&key), &tests));
        run_plan(&rp, &plan, &[], Duration::from_secs(30))
            .failure(2, &[&format!("{flag} in the stream options")]);
    }
    // A pair of three names is not a pair whose third is dropped.
    let tests = "[[test]]\nworkload = \"stream\"\noptions = \"-l 1\"\npairs = [[\"a0\", \"a1\", \"a0\"]]\n";
    let plan = PlanFile::new("three", &plan_text(&ag, Some(&key), tests));
    run_plan(&rp, &plan, &[], Duration::from_secs(30)).failure(2, &["is not a pair"]);
    nothing_started(&ag);
    still_serves(&rp, &mut ag[0], base, Some(key.path()));
}

/// A plan keys its agents as every client does: RINGPERF_PSK when an agent has no
/// key_file; with neither, the error names the plan's own setting.
#[test]
fn a_plan_takes_the_key_from_ringperf_psk() {
    let rp = ringperf!();
    let key = KeyFile::new("advplenv");
    let mut ag = agents(&rp, &key, 2, &[]);
    let base = baseline(&ag[0]);
    let tests = "[[test]]\nworkload = \"stream\"\noptions = \"-l 0.5\"\npairs = [[\"a0\", \"a1\"]]\n";
    let plan = PlanFile::new("env", &plan_text(&ag, None, tests));
    let secret = std::fs::read_to_string(key.path()).unwrap();
    let r: PlanReport =
        run_plan(&rp, &plan, &[("RINGPERF_PSK", secret.trim())], Duration::from_secs(60)).success().parsed();
    check_whole(&r, 1);
    // The plan's report into a full device: named, and the exit says so.
    let mut cmd = rp.command(&["plan", plan.arg()]);
    cmd.env("RINGPERF_PSK", secret.trim());
    let (status, err) = run_into(cmd, dev_full());
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("writing the plan report to standard output: No space left on device"), "{err}");
    let o = run_plan(&rp, &plan, &[], Duration::from_secs(60));
    assert_eq!(o.code(), 3, "{o}");
    assert!(o.stderr.contains("(in a plan: the agent's key_file, or RINGPERF_PSK)"), "{o}");
    still_serves(&rp, &mut ag[0], base, Some(key.path()));
}

/// A 1 s stream to `to` (-H and maybe -p) that the client asks `agent` to run for it
/// (--from 127.0.0.1 --from-port, with `key`): the test must fail.
fn failed_third_party_stream(rp: &Ringperf, agent: &Server, key: &KeyFile, to: &[&str]) {
    let port = agent.port_arg();
    let mut args = vec!["stream", "-l", "1"];
    args.extend_from_slice(to);
    args.extend(["--from", "127.0.0.1", "--from-port", &port, "--psk-file", key.arg()]);
    let o = rp.run(&args);
    assert_ne!(o.code(), 0, "{o}");
}

/// An agent that takes no third-party work logs a refused request as one: what it was
/// asked to run, against whom, and for which address.
#[test]
fn a_refused_third_party_request_is_logged_with_its_target() {
    let rp = ringperf!();
    let key = KeyFile::new("advplref");
    let mut agent = Server::spawn_with(&rp, &["--psk-file", key.arg()]);
    let base = baseline(&agent);
    failed_third_party_stream(&rp, &agent, &key, &["-H", "127.0.0.9", "-p", "4321"]);
    let line = agent
        .wait_for_log(
            "third-party request refused (TCP_STREAM against 127.0.0.9:4321)",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("no refusal logged: {:?}", agent.log()));
    assert!(
        line.contains("ringperf serve: 127.0.0.1:"),
        "the controller's address is not on the line: {line}"
    );
    assert!(line.contains("--allow-third-party"), "{line}");
    still_serves(&rp, &mut agent, base, Some(key.path()));
}

/// A controller names a peer of thousands of characters, or one too long to quote: the
/// agent's log never carries more than 120 of them in a row.
#[test]
fn a_peer_name_cannot_flood_an_agents_log() {
    let rp = ringperf!();
    let key = KeyFile::new("advpllong");
    let mut agent = Server::spawn_with(&rp, &["--psk-file", key.arg(), "--allow-third-party"]);
    let base = baseline(&agent);
    for (k, n) in [200, 5000].into_iter().enumerate() {
        let host = "a".repeat(n);
        failed_third_party_stream(&rp, &agent, &key, &["-H", &host]);
        // Bounded wait for this request's failure line.
        let by = Instant::now() + Duration::from_secs(20);
        while agent.log().iter().filter(|l| l.contains("session failed")).count() <= k && Instant::now() < by
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let failed: Vec<String> = agent.log().into_iter().filter(|l| l.contains("session failed")).collect();
    assert_eq!(failed.len(), 2, "{:?}", agent.log());
    assert!(failed.iter().all(|l| l.contains("more bytes)")), "the name was not cut: {failed:?}");
    for l in agent.log() {
        let longest = l.split(|c| c != 'a').map(str::len).max().unwrap_or(0);
        assert!(longest <= 120, "{longest} characters of the peer's name in one log line: {l}");
    }
    still_serves(&rp, &mut agent, base, Some(key.path()));
}

/// A plan whose last test arms 12 s after its first, longer than the 8 s an armed agent
/// used to wait for its start and the 10 s its peer waited for Go: both of a plan's waits
/// grow with the plan (and with its lead, the count's share: see the engine's unit test of
/// a 100,000-test plan), so it starts whole. The slow test's agents are stopped while it
/// sets up (SIGSTOP, then SIGCONT 6 s apart), each stop shorter than any one control wait.
#[test]
fn a_plan_that_arms_slower_than_the_old_fixed_waits_starts_whole() {
    let rp = ringperf!();
    let key = KeyFile::new("advplslow");
    let mut ag = agents(&rp, &key, 4, &[]);
    let base = baseline(&ag[0]);
    let tests = "[[test]]\nworkload = \"stream\"\noptions = \"-l 1 -b 50m\"\npairs = [[\"a0\", \"a1\"], [\"a2\", \"a3\"]]\n";
    let plan = PlanFile::new("slow", &plan_text(&ag, Some(&key), tests));
    ag[2].child().signal(libc::SIGSTOP);
    ag[3].child().signal(libc::SIGSTOP);
    let mut cmd = rp.command(&["plan", plan.arg(), "--json"]);
    cmd.env_remove("RINGPERF_PSK");
    let began = Instant::now();
    let controller = std::thread::spawn(move || run_with_timeout(cmd, Duration::from_secs(90)));
    // The first test arms meanwhile; the second waits for its agent, then for its peer.
    let first_armed = Duration::from_secs(6);
    std::thread::sleep(first_armed);
    ag[2].child().signal(libc::SIGCONT);
    std::thread::sleep(first_armed);
    ag[3].child().signal(libc::SIGCONT);
    let o = controller.join().expect("the controller thread");
    let r: PlanReport = o.success().parsed();
    check_whole(&r, 2);
    assert!(r.start.setup_ns >= 11_000_000_000, "the plan armed in under 11 s: the delay did not hold");
    eprintln!(
        "a plan armed over {:.1} s started with a skew of {:.3} ms ({:.1} s in all)",
        r.start.setup_ns as f64 / 1e9,
        r.start.skew_ns.expect("start.skew_ns") as f64 / 1e6,
        began.elapsed().as_secs_f64()
    );
    still_serves(&rp, &mut ag[0], base, Some(key.path()));
}

/// As many tests as run in a few seconds here, between four agents: all arm, all start,
/// all report. Prints what setting each up cost (measured, not asserted).
#[test]
fn a_plan_of_many_tests_starts_whole() {
    const TESTS: usize = 48;
    let rp = ringperf!();
    let key = KeyFile::new("advplmany");
    let limits = ["--max-sessions", "256", "--max-sessions-per-host", "256"];
    let mut ag = agents(&rp, &key, 4, &limits);
    let base = baseline(&ag[0]);
    let pairs: Vec<String> =
        (0..TESTS).map(|i| format!("[\"a{}\", \"a{}\"]", i % 4, (i + 1 + i / 4 % 3) % 4)).collect();
    let tests = format!(
        "[[test]]\nworkload = \"stream\"\noptions = \"-l 1 -b 5m\"\npairs = [{}]\n",
        pairs.join(", ")
    );
    let plan = PlanFile::new("many", &plan_text(&ag, Some(&key), &tests));
    let r: PlanReport = run_plan(&rp, &plan, &[], Duration::from_secs(120)).success().parsed();
    check_whole(&r, TESTS);
    let setup = r.start.setup_ns as f64;
    eprintln!(
        "{TESTS} tests: set up in {:.1} ms ({:.2} ms a test), start skew {:.3} ms, controller CPU {:.1} ms",
        setup / 1e6,
        setup / 1e6 / TESTS as f64,
        r.start.skew_ns.expect("start.skew_ns") as f64 / 1e6,
        r.controller.cpu_ns as f64 / 1e6
    );
    still_serves(&rp, &mut ag[0], base, Some(key.path()));
}
