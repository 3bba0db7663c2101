//! A plan: several third-party tests at once between agents, started together. The
//! controller opens one control connection per test to the agent that runs its client
//! side, measures that agent's clock against its own with clock probes, has every test set
//! up (ThirdParty, synchronized), and once all are armed sends each a start time on its own
//! agent's clock. What a failed test measured is lost, never what the others did: the plan
//! is then partial.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::os::fd::BorrowedFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::auth::Psk;
use crate::connection::{connect, resolve};
use crate::run::RunOptions;
use crate::third_party::{AgentSession, MAX_ARMED_WAIT};
use ringperf_core::error::{Error, Result};
use ringperf_core::measure::clock::monotonic_ns;
use ringperf_core::measure::latency::merge_summaries;
use ringperf_core::report::{LatencySummary, SideReport, TestReport};
use ringperf_core::spec::TestSpec;

/// Clock probes per control connection.
pub const PLAN_CLOCK_PROBES: u32 = 8;

/// The start time lies this far after the last test armed, plus [`START_LEAD_PER_TEST`]
/// for each test: time for the StartAt messages to reach every agent. The lead grows with
/// the count because the messages go out one after another once the last test armed: each
/// test's thread is woken with the start time and writes its own StartAt.
const START_LEAD: Duration = Duration::from_millis(30);
const START_LEAD_PER_TEST: Duration = Duration::from_micros(500);

/// How long the controller waits for every test to connect, log in, probe and set up:
/// [`ARM_WAIT`] plus [`ARM_WAIT_PER_TEST`] for each test, since the controller's own share
/// of every test's setup (a login, clock probes, a Welcome to read) adds up. Past it the
/// plan starts without the tests still setting up (their threads find no start time and
/// give up).
const ARM_WAIT: Duration = Duration::from_secs(45);
const ARM_WAIT_PER_TEST: Duration = Duration::from_millis(2);

/// The start's lead over the moment the last of `tests` tests armed.
pub fn start_lead(tests: usize) -> Duration {
    START_LEAD + START_LEAD_PER_TEST.saturating_mul(u32::try_from(tests).unwrap_or(u32::MAX))
}

/// How long the controller waits for `tests` tests to arm.
pub fn arm_wait(tests: usize) -> Duration {
    ARM_WAIT + ARM_WAIT_PER_TEST.saturating_mul(u32::try_from(tests).unwrap_or(u32::MAX))
}

/// How long an armed test of a plan of `tests` tests may wait for its start: the others
/// may take [`arm_wait`] to arm, and the start lies [`start_lead`] after. Each agent is told
/// (ThirdParty's `start_within_ms`), and tells its peer, so that neither gives up first: a
/// fixed wait would make a plan past some thousands of tests fail every test.
pub fn armed_wait(tests: usize) -> Duration {
    arm_wait(tests) + start_lead(tests)
}

/// Version of the plan report's JSON shape.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// An agent of a plan.
#[derive(Clone, Debug)]
pub struct Agent {
    pub name: String,
    /// Where the controller reaches it.
    pub host: String,
    pub port: u16,
    /// Where the other agents reach it (a data network apart from the management one).
    pub data_host: String,
    /// The key the controller logs in to it with; the agent logs in to its peers with its own.
    pub psk: Option<Psk>,
}

/// One test: `from` runs the client side against `to` (indices into the agents).
#[derive(Clone, Debug)]
pub struct PlannedTest {
    pub name: String,
    pub from: usize,
    pub to: usize,
    pub spec: TestSpec,
}

/// What one test of the plan gave.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct PlanTest {
    pub name: String,
    pub from: String,
    pub to: String,
    pub workload: String,
    /// The agent's clock minus the controller's, and how sure, ns (absent if unreached).
    pub clock_offset_ns: Option<i64>,
    pub clock_uncertainty_ns: Option<u64>,
    /// When its window opened on the controller's clock, minus the start time sent, ns.
    pub start_late_ns: Option<i64>,
    /// Why the test gave no report, or why its report is partial.
    pub error: Option<String>,
    pub report: Option<TestReport>,
}

/// A host's figures over the plan.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct HostFigures {
    pub name: String,
    /// Payload it sent and received, over all its tests, in bits/s of each test's window.
    pub sent_bits_per_sec: f64,
    pub received_bits_per_sec: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Tests it took part in (either side).
    pub tests: usize,
    /// Busy CPU of the whole host, measured once: over the window of `cpu_from_test`, which
    /// overlaps every other test of the host since they all start together.
    pub busy_percent: Option<f64>,
    pub busy_us: Option<f64>,
    pub cpu_from_test: Option<String>,
    /// Busy CPU µs per KB the host moved over all its tests.
    pub service_demand_us_per_kb: Option<f64>,
}

/// How closely the tests started together.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct StartFigures {
    /// The latest window start minus the earliest, on the controller's clock, ns.
    pub skew_ns: Option<u64>,
    /// The largest clock-estimate uncertainty among the tests: the skew is known to about
    /// twice this.
    pub uncertainty_ns: Option<u64>,
    /// From sending the first request to the last test armed, ns.
    pub setup_ns: u64,
}

/// What running the plan cost the controller.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct ControllerFigures {
    /// User and system CPU of the controller process over the plan, ns.
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// Control connections it held.
    pub connections: usize,
    /// Bytes of the agents' reports as received (JSON).
    pub report_bytes: u64,
}

/// The whole plan's report.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct PlanReport {
    pub schema_version: u32,
    /// True when a test failed or was cut short: the others' figures stand.
    pub partial: bool,
    pub tests: Vec<PlanTest>,
    pub hosts: Vec<HostFigures>,
    /// Sum of every whole or partial test's headline throughput, bits/s.
    pub total_bits_per_sec: f64,
    /// Jain's fairness index of the tests' headline throughputs, per workload (a stream's
    /// and an rr's rates are not shares of one thing): 1 when equal, 1/n when one takes all.
    pub fairness: BTreeMap<String, f64>,
    /// Every test's round trips merged exactly (rr tests).
    pub latency: Option<LatencySummary>,
    pub start: StartFigures,
    pub controller: ControllerFigures,
}

/// Jain's fairness index of `x`: (Σx)² / (n·Σx²); `None` for no values or all zero.
pub fn jain(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || squares <= 0.0 {
        return None;
    }
    Some(sum * sum / (x.len() as f64 * squares))
}

/// A test thread's news for the controller's main thread.
enum Armed {
    Yes { offset_ns: i64 },
    No,
}

/// What one test's thread ends with.
struct Outcome {
    report: Option<TestReport>,
    error: Option<Error>,
    clock: Option<(i64, u64)>,
    report_bytes: u64,
}

/// Runs every test of the plan at once. Checks first that each test names agents of the
/// plan and that each agent resolves, so that a bad plan starts nothing.
pub fn run_plan(
    agents: &[Agent],
    tests: &[PlannedTest],
    interrupt: Option<BorrowedFd<'_>>,
) -> Result<PlanReport> {
    if armed_wait(tests.len()) > MAX_ARMED_WAIT {
        return Err(Error::Usage(format!(
            "a plan of {} tests may take {} s to start, past the {} s an agent waits armed: split it into plans of at most {} tests",
            tests.len(),
            armed_wait(tests.len()).as_secs(),
            MAX_ARMED_WAIT.as_secs(),
            max_tests()
        )));
    }
    for t in tests {
        if t.from >= agents.len() || t.to >= agents.len() {
            return Err(Error::Usage(format!(
                "test {} names a host that is not an agent of the plan: list every host under [[agent]]",
                t.name
            )));
        }
        t.spec.validate()?;
        crate::wire::to_wire(&t.spec, crate::wire::Recipient::Agent)?;
    }
    let mut addrs = Vec::with_capacity(agents.len());
    for a in agents {
        addrs.push(resolve(&a.host, a.port, format!("agent {}'s address", a.name))?);
    }
    let cpu_before = process_cpu_ns();
    let began = Instant::now();
    let n = tests.len();
    let (armed_tx, armed_rx) = mpsc::channel::<(usize, Armed)>();
    let (outcomes, setup_ns, start) = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        let mut start_txs = Vec::with_capacity(n);
        for (i, t) in tests.iter().enumerate() {
            let (start_tx, start_rx) = mpsc::channel::<Option<u64>>();
            start_txs.push(start_tx);
            let armed_tx = armed_tx.clone();
            let (from, to) = (&agents[t.from], &agents[t.to]);
            let from_addrs = &addrs[t.from];
            let spawned =
                std::thread::Builder::new().name("ringperf-plan".into()).spawn_scoped(scope, move || {
                    one_test(i, t, from, to, from_addrs, interrupt, &armed_tx, &start_rx, armed_wait(n))
                });
            handles.push(spawned);
        }
        drop(armed_tx);
        // Every test arms or fails (its thread drops its sender either way); then all get
        // one start time, each on its own agent's clock.
        let mut offsets: Vec<Option<i64>> = vec![None; n];
        // Each thread says once; the bound only guards against one that never could.
        let by = Instant::now() + arm_wait(n);
        for _ in 0..n {
            match armed_rx.recv_timeout(by.saturating_duration_since(Instant::now())) {
                Ok((i, Armed::Yes { offset_ns })) => offsets[i] = Some(offset_ns),
                Ok((_, Armed::No)) => {}
                Err(_) => break,
            }
        }
        let setup_ns = began.elapsed().as_nanos() as u64;
        let start = monotonic_ns() + start_lead(n).as_nanos() as u64;
        for (tx, off) in start_txs.iter().zip(&offsets) {
            let _ = tx.send(off.map(|o| start.wrapping_add_signed(o)));
        }
        let outcomes: Vec<Outcome> = handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Outcome::failed(Error::Protocol("a plan thread panicked".into()))),
                Err(e) => Outcome::failed(Error::io("starting a plan thread", e)),
            })
            .collect();
        (outcomes, setup_ns, start)
    });
    let controller = ControllerFigures {
        cpu_ns: process_cpu_ns().saturating_sub(cpu_before),
        wall_ns: began.elapsed().as_nanos() as u64,
        connections: n,
        report_bytes: outcomes.iter().map(|o| o.report_bytes).sum(),
    };
    Ok(assemble(agents, tests, outcomes, start, setup_ns, controller))
}

impl Outcome {
    fn failed(e: Error) -> Outcome {
        Outcome { report: None, error: Some(e), clock: None, report_bytes: 0 }
    }
}

/// One test from its own thread: connect, log in, probe the clock, set up, say armed (or
/// not), wait for the start time, and take the report.
#[allow(clippy::too_many_arguments)]
fn one_test(
    i: usize,
    t: &PlannedTest,
    from: &Agent,
    to: &Agent,
    from_addrs: &[std::net::SocketAddr],
    interrupt: Option<BorrowedFd<'_>>,
    armed: &mpsc::Sender<(usize, Armed)>,
    start: &mpsc::Receiver<Option<u64>>,
    armed_wait: Duration,
) -> Outcome {
    let opts = RunOptions { psk: from.psk.clone(), interrupt, ..RunOptions::default() };
    let agent = format!("{}:{}", from.host, from.port);
    let mut clock = None;
    let mut setup = || -> Result<AgentSession<'_>> {
        let stream: TcpStream = connect(from_addrs)?;
        let mut s = AgentSession::login(stream, &agent, &opts)?;
        let c = s.probe_clock(PLAN_CLOCK_PROBES)?;
        clock = Some(c);
        s.request(&t.spec, &to.data_host, to.port, Some(armed_wait))?;
        s.armed()?;
        Ok(s)
    };
    let session = setup();
    let mut session = match session {
        Ok(s) => s,
        Err(e) => {
            let _ = armed.send((i, Armed::No));
            return Outcome { clock, ..Outcome::failed(named(e, from, to)) };
        }
    };
    let offset_ns = clock.map_or(0, |c| c.0);
    let _ = armed.send((i, Armed::Yes { offset_ns }));
    match start.recv() {
        Ok(Some(agent_ns)) => {
            if let Err(e) = session.start_at(agent_ns) {
                return Outcome { clock, ..Outcome::failed(named(e, from, to)) };
            }
        }
        _ => {
            session.abort();
            return Outcome {
                clock,
                ..Outcome::failed(Error::Peer("the plan stopped before it started".into()))
            };
        }
    }
    match session.report() {
        Ok(r) => {
            let report_bytes = serde_json::to_vec(&r).map_or(0, |v| v.len() as u64);
            let error = r
                .partial_reason
                .clone()
                .map(|m| Error::Peer(format!("{} (from {} to {})", m, from.name, to.name)));
            Outcome { report: Some(r), error, clock, report_bytes }
        }
        Err(e) => Outcome { clock, ..Outcome::failed(named(e, from, to)) },
    }
}

/// The most tests a plan may have: past it, [`armed_wait`] would pass [`MAX_ARMED_WAIT`].
pub fn max_tests() -> usize {
    let per_test = START_LEAD_PER_TEST + ARM_WAIT_PER_TEST;
    ((MAX_ARMED_WAIT - ARM_WAIT - START_LEAD).as_nanos() / per_test.as_nanos()) as usize
}

/// `e` with the test's agents named, so a plan's error lines say which test failed.
fn named(e: Error, from: &Agent, to: &Agent) -> Error {
    let m = format!("{e} (agent {} running the test against agent {})", from.name, to.name);
    match e {
        Error::Interrupted(_) => Error::Interrupted(m),
        Error::Usage(_) => Error::Usage(m),
        Error::Requirement(_) => Error::Requirement(m),
        Error::Protocol(_) => Error::Protocol(m),
        _ => Error::Peer(m),
    }
}

/// The plan's report from every test's outcome.
fn assemble(
    agents: &[Agent],
    tests: &[PlannedTest],
    outcomes: Vec<Outcome>,
    start: u64,
    setup_ns: u64,
    controller: ControllerFigures,
) -> PlanReport {
    let mut rows = Vec::with_capacity(tests.len());
    let mut hosts: Vec<HostFigures> =
        agents.iter().map(|a| HostFigures { name: a.name.clone(), ..HostFigures::default() }).collect();
    let mut throughputs = Vec::new();
    let mut per_workload: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut latencies: Vec<&LatencySummary> = Vec::new();
    let mut starts = Vec::new();
    let mut uncertainty: Option<u64> = None;
    let mut partial = false;
    for (t, o) in tests.iter().zip(&outcomes) {
        partial |= o.error.is_some() || o.report.as_ref().is_none_or(|r| r.partial);
        let mut late = None;
        if let Some(r) = &o.report {
            throughputs.push(r.summary.throughput_bits_per_sec);
            per_workload.entry(r.test.clone()).or_default().push(r.summary.throughput_bits_per_sec);
            latencies.extend(r.local.latency.as_ref());
            if let (Some(w), Some((off, unc))) = (r.local.window_start_ns, o.clock) {
                let on_controller = (w as i64).wrapping_sub(off);
                starts.push(on_controller);
                late = Some(on_controller.wrapping_sub(start as i64));
                uncertainty = Some(uncertainty.unwrap_or(0).max(unc));
            }
            let sides = [(t.from, Some(&r.local)), (t.to, r.remote.as_ref())];
            for (h, side) in sides {
                let Some(side) = side else { continue };
                add_side(&mut hosts[h], side, &t.name);
            }
        }
        rows.push(PlanTest {
            name: t.name.clone(),
            from: agents[t.from].name.clone(),
            to: agents[t.to].name.clone(),
            workload: t.spec.netperf_name().to_string(),
            clock_offset_ns: o.clock.map(|c| c.0),
            clock_uncertainty_ns: o.clock.map(|c| c.1),
            start_late_ns: late,
            error: o.error.as_ref().map(|e| e.to_string()),
            report: o.report.clone(),
        });
    }
    for h in &mut hosts {
        let kb = (h.bytes_sent + h.bytes_received) as f64 / 1024.0;
        h.service_demand_us_per_kb = h.busy_us.filter(|_| kb > 0.0).map(|us| us / kb);
    }
    let skew_ns = match (starts.iter().max(), starts.iter().min()) {
        (Some(hi), Some(lo)) => Some(hi.abs_diff(*lo)),
        _ => None,
    };
    PlanReport {
        schema_version: PLAN_SCHEMA_VERSION,
        partial,
        tests: rows,
        hosts,
        total_bits_per_sec: throughputs.iter().sum(),
        fairness: per_workload.iter().filter_map(|(w, x)| Some((w.clone(), jain(x)?))).collect(),
        latency: merge_summaries(&latencies),
        start: StartFigures { skew_ns, uncertainty_ns: uncertainty, setup_ns },
        controller,
    }
}

/// Adds one side a host ran to its figures; its CPU is taken from its first side only.
fn add_side(h: &mut HostFigures, side: &SideReport, test: &str) {
    let secs = side.elapsed_ns.max(1) as f64 / 1e9;
    h.bytes_sent += side.bytes_sent;
    h.bytes_received += side.bytes_received;
    h.sent_bits_per_sec += side.bytes_sent as f64 * 8.0 / secs;
    h.received_bits_per_sec += side.bytes_received as f64 * 8.0 / secs;
    h.tests += 1;
    if h.busy_us.is_none() {
        h.busy_percent = Some(side.cpu.system.busy_percent);
        h.busy_us = Some(side.cpu.system.busy_us);
        h.cpu_from_test = Some(test.to_string());
    }
}

/// User plus system CPU of this process so far, ns.
fn process_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, exclusively borrowed rusage for the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_when_equal_and_one_over_n_when_one_takes_all() {
        assert_eq!(jain(&[5.0, 5.0, 5.0]), Some(1.0));
        let j = jain(&[9.0, 0.0, 0.0]).unwrap();
        assert!((j - 1.0 / 3.0).abs() < 1e-12, "{j}");
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
        let j = jain(&[1.0, 2.0]).unwrap();
        assert!((j - 0.9).abs() < 1e-12, "{j}");
    }

    /// A plan's waits grow with it. At 100,000 tests (ten times the count at which the old
    /// fixed 5 s made every test fail) the start's lead fits inside the wait every agent
    /// grants its armed test, and the peer agent's wait for Go covers the agent's own. The
    /// integration test (tests/adversarial/plans.rs) checks the same on real agents with a
    /// plan whose arming takes longer than the old fixed waits; 100,000 real tests would
    /// need far more threads and sockets than a test machine has.
    #[test]
    fn the_waits_of_a_plan_of_100000_tests_hold_its_start() {
        use crate::protocol::whole_ms;
        use crate::third_party::{armed_wait as granted, go_wait, granted_go_wait};
        for n in [1, 50, 9_950, 10_000, 100_000] {
            let asked = armed_wait(n);
            let armed = granted(Some(whole_ms(asked)));
            assert!(armed >= asked, "{n} tests: the agent cuts the wait the controller asks");
            // The first test may arm at once and the last at the end of arm_wait; the start
            // then lies start_lead ahead: all within the first one's wait.
            assert!(arm_wait(n) + start_lead(n) <= armed, "{n} tests");
            let peer = granted_go_wait(Some(whole_ms(go_wait(armed))));
            assert!(
                peer > armed,
                "{n} tests: the peer gives up on Go ({peer:?}) before the agent's start ({armed:?})"
            );
        }
        assert!(start_lead(100_000) > Duration::from_secs(5), "this count broke the old fixed 5 s");
        assert!(max_tests() >= 100_000, "{}", max_tests());
        assert!(armed_wait(max_tests()) <= MAX_ARMED_WAIT && armed_wait(max_tests() + 1) > MAX_ARMED_WAIT);
    }

    #[test]
    fn a_plan_too_large_for_its_agents_waits_is_refused_before_it_starts() {
        let agents = vec![
            Agent {
                name: "a".into(),
                host: "127.0.0.1".into(),
                port: 1,
                data_host: "127.0.0.1".into(),
                psk: None
            };
            2
        ];
        let tests: Vec<PlannedTest> = (0..=max_tests())
            .map(|i| PlannedTest { name: format!("t{i}"), from: 0, to: 1, spec: TestSpec::default() })
            .collect();
        let e = run_plan(&agents, &tests, None).unwrap_err();
        assert!(matches!(e, Error::Usage(_)) && e.to_string().contains("split it"), "{e}");
    }

    #[test]
    fn a_test_naming_a_missing_agent_starts_nothing() {
        let agents = vec![Agent {
            name: "a".into(),
            host: "127.0.0.1".into(),
            port: 1,
            data_host: "127.0.0.1".into(),
            psk: None,
        }];
        let tests = vec![PlannedTest { name: "t".into(), from: 0, to: 3, spec: TestSpec::default() }];
        let e = run_plan(&agents, &tests, None).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");
        assert!(e.to_string().contains("not an agent of the plan"), "{e}");
    }
}
