//! `ringperf plan`: several third-party tests at once. Between namespaces (root only): an
//! incast of three senders into one receiver, a mesh of four, an agent killed mid-plan. On
//! loopback: a plan naming a host that is not an agent is refused before anything starts,
//! an unreachable agent leaves the others' figures standing, a controller killed mid-plan
//! leaves its agents ready, and fifty agents start together.

use std::time::{Duration, Instant};

use ringperf_tests::fabric::{Fabric, KeyFile, PlanFile};
use ringperf_tests::{
    ringperf, run_with_timeout, skip_unless, HostFigures, Outcome, PlanReport, PlanTest, RefusingPort,
    Ringperf, Server, SideReportExt, TestReport, TestReportExt, IP, LAB_PROGRAMS,
};

fn run_plan(rp: &Ringperf, plan: &PlanFile, timeout: Duration) -> Outcome {
    run_with_timeout(rp.command(&["plan", plan.arg(), "--json"]), timeout)
}

fn host<'a>(r: &'a PlanReport, name: &str) -> &'a HostFigures {
    r.hosts.iter().find(|h| h.name == name).expect("the host")
}

/// The report of a plan's test that must have one.
fn test_report(t: &PlanTest) -> &TestReport {
    t.report.as_ref().unwrap_or_else(|| panic!("{}: no report: {t:?}", t.name))
}

/// Every test of `r` that has a report moved as many bytes out of its sender as into its
/// receiver (TCP: nothing is lost), and something.
fn check_conserved<'a>(tests: impl IntoIterator<Item = &'a PlanTest>) {
    for t in tests {
        let name = &t.name;
        let rep = test_report(t);
        let sent = rep.local.bytes_sent;
        assert!(sent > 0, "{name}: nothing sent");
        assert_eq!(sent, rep.remote().bytes_received, "{name}: bytes lost");
    }
}

/// Loopback agents that all take third-party work with `key`.
fn loopback_agents(rp: &Ringperf, key: &KeyFile, n: usize) -> Vec<Server> {
    (0..n).map(|_| Server::spawn_with(rp, &["--psk-file", key.arg(), "--allow-third-party"])).collect()
}

/// [[agent]] entries for loopback agents named a0, a1, ...
fn loopback_plan(key: &KeyFile, agents: &[(String, u16)], tests: &str) -> String {
    let mut p = String::new();
    for (name, port) in agents {
        p.push_str(&format!(
            "[[agent]]\nname = \"{name}\"\naddress = \"127.0.0.1\"\nport = {port}\nkey_file = \"{}\"\n\n",
            key.arg()
        ));
    }
    p + tests
}

fn named(agents: &[Server]) -> Vec<(String, u16)> {
    agents.iter().enumerate().map(|(i, s)| (format!("a{i}"), s.port())).collect()
}

fn needs_namespaces(test: &str) -> bool {
    let mut needs = LAB_PROGRAMS.to_vec();
    needs.push(IP);
    skip_unless(test, true, &needs)
}

#[test]
fn incast_of_three_into_one() {
    if needs_namespaces("incast_of_three_into_one") {
        return;
    }
    let rp = ringperf!();
    let fabric = Fabric::up("mhin", 62, 4, &rp, &["--allow-third-party"]);
    let plan = PlanFile::new(
        "incast",
        &fabric.plan(
            "[[test]]\nname = \"incast\"\nworkload = \"stream\"\noptions = \"-l 2\"\nsenders = [\"a\", \"b\", \"c\"]\nreceiver = \"d\"\n",
        ),
    );
    let r: PlanReport = run_plan(&rp, &plan, Duration::from_secs(90)).success().parsed();
    assert!(!r.partial, "{r:?}");
    assert_eq!(r.tests.len(), 3);
    check_conserved(&r.tests);
    // The receiver's aggregate is the sum of its tests, in bytes and in rate.
    let d = host(&r, "d");
    let bytes: u64 = r.tests.iter().map(|t| test_report(t).remote().bytes_received).sum();
    assert_eq!(d.bytes_received, bytes);
    let rate: f64 = r
        .tests
        .iter()
        .map(|t| {
            let remote = test_report(t).remote();
            remote.bytes_received as f64 * 8.0 / (remote.elapsed_ns as f64 / 1e9)
        })
        .sum();
    assert!((d.received_bits_per_sec - rate).abs() <= rate * 1e-9, "{d:?}");
    assert_eq!(d.tests, 3);
    for s in ["a", "b", "c"] {
        assert_eq!(host(&r, s).bytes_received, 0, "sender {s} received payload");
    }
    // Jain's index of the three senders' throughputs, as the report computes it.
    let x: Vec<f64> = r.tests.iter().map(|t| test_report(t).summary.throughput_bits_per_sec).collect();
    let jain = x.iter().sum::<f64>().powi(2) / (3.0 * x.iter().map(|v| v * v).sum::<f64>());
    let got = *r.fairness.get("TCP_STREAM").expect("a fairness for TCP_STREAM");
    assert!((got - jain).abs() < 1e-9 && (1.0 / 3.0..=1.0).contains(&got), "fairness {got}, expected {jain}");
    let total: f64 = x.iter().sum();
    assert!((r.total_bits_per_sec - total).abs() <= total * 1e-9);
    let skew = r.start.skew_ns.unwrap_or_else(|| panic!("no start skew: {:?}", r.start));
    eprintln!(
        "incast 3->1: {:.0} Mbit/s into d, fairness {got:.4}, start skew {skew} ns (±{} ns)",
        rate / 1e6,
        r.start.uncertainty_ns.expect("start.uncertainty_ns")
    );
}

#[test]
fn mesh_of_four() {
    if needs_namespaces("mesh_of_four") {
        return;
    }
    let rp = ringperf!();
    let fabric = Fabric::up("mhmesh", 63, 4, &rp, &["--allow-third-party"]);
    let plan = PlanFile::new(
        "mesh",
        &fabric.plan(concat!(
            "[[test]]\nname = \"mesh\"\nworkload = \"stream\"\noptions = \"-l 1 -b 200m\"\nmesh = [\"a\", \"b\", \"c\", \"d\"]\n\n",
            "[[test]]\nname = \"lat\"\nworkload = \"rr\"\noptions = \"-l 1\"\npairs = [[\"a\", \"b\"], [\"c\", \"d\"]]\n",
        )),
    );
    let r: PlanReport = run_plan(&rp, &plan, Duration::from_secs(90)).success().parsed();
    assert!(!r.partial, "{r:?}");
    let tests = &r.tests;
    assert_eq!(tests.len(), 12 + 2, "every ordered pair of four, and two rr pairs");
    check_conserved(tests.iter().filter(|t| t.workload == "TCP_STREAM"));
    // Each host sent to three and received from three, plus one rr test; its CPU is one
    // figure, taken over one of its windows, not a sum over its seven tests.
    for h in ["a", "b", "c", "d"] {
        let f = host(&r, h);
        assert_eq!(f.tests, 7, "{f:?}");
        let busy = f.busy_percent.unwrap_or_else(|| panic!("{h}: no busy_percent: {f:?}"));
        assert!((0.0..=100.0).contains(&busy), "{h}: CPU {busy} % is not one host's figure");
        assert!(f.service_demand_us_per_kb.unwrap_or_else(|| panic!("{f:?}")) > 0.0, "{f:?}");
    }
    // The rr tests' histograms merged exactly: every transaction of both counted once.
    let count: u64 =
        tests.iter().filter(|t| t.workload == "TCP_RR").map(|t| test_report(t).local.latency().count).sum();
    let latency = r.latency.as_ref().expect("the plan's merged latency");
    assert_eq!(latency.count, count);
    assert!(latency.p99_ns >= latency.p50_ns);
}

#[test]
fn an_agent_killed_mid_plan_leaves_a_partial_plan_and_exit_3() {
    if needs_namespaces("an_agent_killed_mid_plan_leaves_a_partial_plan_and_exit_3") {
        return;
    }
    let rp = ringperf!();
    let mut fabric = Fabric::up("mhkill", 64, 4, &rp, &["--allow-third-party"]);
    let plan = PlanFile::new(
        "kill",
        &fabric.plan(
            "[[test]]\nname = \"p\"\nworkload = \"stream\"\noptions = \"-l 4 -b 100m\"\npairs = [[\"a\", \"b\"], [\"c\", \"d\"]]\n",
        ),
    );
    let controller = {
        let rp = rp.clone();
        let path = plan.arg().to_string();
        std::thread::spawn(move || {
            run_with_timeout(rp.command(&["plan", &path, "--json"]), Duration::from_secs(90))
        })
    };
    let b = &mut fabric.hosts[1].agent;
    assert!(b.wait_for_log("accepted", Duration::from_secs(30)).is_some(), "b never started: {:?}", b.log());
    std::thread::sleep(Duration::from_secs(1));
    b.child().kill();
    let o = controller.join().expect("the controller thread");
    assert_eq!(o.code(), 3, "{o}");
    assert!(o.stderr.contains("partial plan"), "{o}");
    let r: PlanReport = o.parsed();
    assert!(r.partial, "{r:?}");
    let t = &r.tests;
    let (ab, cd) = (&t[0], &t[1]);
    assert!(ab.error.is_some(), "the test into the killed agent has no error: {ab:?}");
    // The other pair's figures stand, whole.
    assert!(cd.error.is_none(), "{cd:?}");
    let cd = test_report(cd);
    assert!(!cd.partial);
    assert_eq!(cd.local.bytes_sent, cd.remote().bytes_received);
    assert!(cd.local.bytes_sent > 0);
}

#[test]
fn a_plan_naming_a_host_that_is_not_an_agent_is_refused_before_anything_starts() {
    let rp = ringperf!();
    let key = KeyFile::new("plnon");
    let agents = loopback_agents(&rp, &key, 2);
    let tests = "[[test]]\nworkload = \"stream\"\noptions = \"-l 1\"\npairs = [[\"a0\", \"a1\"], [\"a0\", \"db.example\"]]\n";
    let plan = PlanFile::new("non", &loopback_plan(&key, &named(&agents), tests));
    let o = run_plan(&rp, &plan, Duration::from_secs(30));
    o.failure(2, &["'db.example' is not an agent of this plan"]);
    // Not even the valid pair started.
    std::thread::sleep(Duration::from_millis(200));
    for a in &agents {
        assert!(!a.log().iter().any(|l| l.contains("session started")), "{:?}", a.log());
    }
    // Host flags in a test's options would aim it elsewhere: refused too.
    let tests =
        "[[test]]\nworkload = \"stream\"\noptions = \"-l 1 -H 192.0.2.1\"\npairs = [[\"a0\", \"a1\"]]\n";
    let plan = PlanFile::new("nonh", &loopback_plan(&key, &named(&agents), tests));
    run_plan(&rp, &plan, Duration::from_secs(30)).failure(2, &["-H/--host in the stream options"]);
}

#[test]
fn an_unreachable_agent_leaves_the_others_figures_standing() {
    let rp = ringperf!();
    let key = KeyFile::new("plunr");
    let agents = loopback_agents(&rp, &key, 2);
    let refusing = RefusingPort::new();
    let mut names = named(&agents);
    names.push(("gone".to_string(), refusing.port()));
    let tests = "[[test]]\nworkload = \"stream\"\noptions = \"-l 1\"\npairs = [[\"a0\", \"a1\"], [\"gone\", \"a1\"]]\n";
    let plan = PlanFile::new("unr", &loopback_plan(&key, &names, tests));
    let o = run_plan(&rp, &plan, Duration::from_secs(60));
    assert_eq!(o.code(), 3, "{o}");
    let r: PlanReport = o.parsed();
    assert!(r.partial);
    let t = &r.tests;
    assert!(t[0].error.is_none() && t[0].report.is_some(), "{:?}", t[0]);
    let e = t[1].error.as_deref().expect("an error for the unreachable agent");
    assert!(e.contains("refused") && e.contains("agent gone"), "{e}");
}

#[test]
fn a_controller_killed_mid_plan_leaves_its_agents_ready() {
    let rp = ringperf!();
    let key = KeyFile::new("plctl");
    let mut agents = loopback_agents(&rp, &key, 4);
    let tests = "[[test]]\nworkload = \"stream\"\noptions = \"-l 20 -b 50m\"\npairs = [[\"a0\", \"a1\"], [\"a2\", \"a3\"]]\n";
    let plan = PlanFile::new("ctl", &loopback_plan(&key, &named(&agents), tests));
    let mut controller = ringperf_tests::ChildGuard::spawn(rp.command(&["plan", plan.arg()]));
    for a in &agents {
        assert!(a.wait_for_log("accepted", Duration::from_secs(20)).is_some(), "{:?}", a.log());
    }
    std::thread::sleep(Duration::from_millis(500));
    controller.kill();
    // The receivers' sessions end (stopped mid-run, or failed had the kill come first).
    for a in [&agents[1], &agents[3]] {
        let ended = a.wait_for_log("stopped by the client", Duration::from_secs(10)).is_some()
            || a.wait_for_log("session failed", Duration::from_secs(1)).is_some();
        assert!(ended, "{:?}", a.log());
    }
    for a in &mut agents {
        a.assert_running();
    }
    let tests = "[[test]]\nworkload = \"stream\"\noptions = \"-l 0.5\"\npairs = [[\"a0\", \"a1\"], [\"a2\", \"a3\"]]\n";
    let again = PlanFile::new("ctl2", &loopback_plan(&key, &named(&agents), tests));
    let r: PlanReport = run_plan(&rp, &again, Duration::from_secs(60)).success().parsed();
    check_conserved(&r.tests);
}

/// Fifty agents on loopback ports, as 25 pairs: every test reports, and the start skew and
/// the controller's cost are measured (printed, not asserted: timing is bench's business).
#[test]
fn fifty_agents_start_together() {
    let rp = ringperf!();
    let key = KeyFile::new("pl50");
    let agents = loopback_agents(&rp, &key, 50);
    let names = named(&agents);
    let pairs: Vec<String> = (0..25).map(|i| format!("[\"a{}\", \"a{}\"]", 2 * i, 2 * i + 1)).collect();
    let tests = format!(
        "[[test]]\nworkload = \"stream\"\noptions = \"-l 1 -b 10m\"\npairs = [{}]\n",
        pairs.join(", ")
    );
    let plan = PlanFile::new("fifty", &loopback_plan(&key, &names, &tests));
    let began = Instant::now();
    let r: PlanReport = run_plan(&rp, &plan, Duration::from_secs(120)).success().parsed();
    let wall = began.elapsed();
    assert_eq!(r.tests.len(), 25);
    check_conserved(&r.tests);
    assert_eq!(r.controller.connections, 25);
    let skew = r.start.skew_ns.expect("start.skew_ns");
    eprintln!(
        "50 agents, 25 tests: start skew {:.3} ms (clocks ±{:.3} ms), set up {:.1} ms, controller CPU {:.1} ms over {:.1} ms, {} bytes of reports, {:.1} s in all",
        skew as f64 / 1e6,
        r.start.uncertainty_ns.expect("start.uncertainty_ns") as f64 / 1e6,
        r.start.setup_ns as f64 / 1e6,
        r.controller.cpu_ns as f64 / 1e6,
        r.controller.wall_ns as f64 / 1e6,
        r.controller.report_bytes,
        wall.as_secs_f64()
    );
}
