//! The comparison itself: the tools take turns (ringperf, peer, ringperf, peer, ...), each
//! run measured the same way, and the results go to the report.

use std::io::Write;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use crate::cost_table;
use crate::error::{BenchError, Result};
use crate::peers::iperf3::Iperf3;
use crate::peers::neper::Neper;
use crate::peers::netperf::Netperf;
use crate::peers::ringperf::{self, Ringperf};
use crate::peers::sockperf::{self, Sockperf};
use crate::peers::{Config, RunResult, Tool, Workload};
use crate::plan::{Host, Plan, CLIENT_FIRST};
use crate::progress::Progress;
use crate::report;
use ringperf_core::harness::Harness;

/// The label of `--baseline`'s ringperf.
pub const BASELINE: &str = "ringperf baseline";

/// The labels of `--classic`'s ringperf: the same build on the harness its default rule
/// does not pick for the workload.
pub const OTHER_CLASSIC: &str = "ringperf classic";
pub const OTHER_IO_URING: &str = "ringperf io_uring";

/// The label of the member on `harness`.
pub fn other_label(harness: Harness) -> &'static str {
    match harness {
        Harness::Classic => OTHER_CLASSIC,
        Harness::IoUring => OTHER_IO_URING,
    }
}

/// crr's member that closes in neper's order (`--close-first client`: the server waits for
/// the client's close), so neper is compared with a ringperf that does what it does;
/// ringperf's default closes as netperf's netserver does (the server first).
fn client_first_member(plan: &Plan, bin: &std::path::Path) -> Option<Ringperf> {
    (plan.cfg.workload == Workload::Crr).then(|| Ringperf {
        label: CLIENT_FIRST,
        extra: vec!["--close-first".into(), "client".into()],
        ..Ringperf::new(bin.to_path_buf())
    })
}

/// What a report must show for ringperf to have run `harness`'s engines on the workload.
fn expect_harness(cfg: &crate::peers::Config, harness: Harness) -> ringperf::Expect {
    let (send, recv) = harness.engines(engine_workload(cfg.workload));
    ringperf::Expect {
        send_engine: Some(send.name()),
        recv_engine: Some(recv.name()),
        ..ringperf::Expect::default()
    }
}

/// The engine's workload of a bench workload.
fn engine_workload(w: Workload) -> ringperf_core::spec::Workload {
    use ringperf_core::spec::Workload as W;
    match w {
        Workload::Stream => W::Stream,
        Workload::Rr => W::Rr,
        Workload::Crr => W::Crr,
        Workload::UdpRr => W::UdpRr,
        Workload::UdpStream => W::UdpStream,
    }
}

/// The plain ringperf member, checked to run the engines its default rule picks (so a
/// changed rule cannot pass for the harness the report names).
fn default_member(plan: &Plan, bin: PathBuf) -> Ringperf {
    let expect = ringperf::default_harness(&plan.cfg)
        .map_or_else(ringperf::Expect::default, |h| expect_harness(&plan.cfg, h));
    Ringperf { expect, ..Ringperf::new(bin) }
}

/// `--classic`'s member: ringperf on the harness its default rule does not pick for the
/// workload (`--harness classic` where the default is io_uring, `--harness io-uring` where
/// it is the classic loop), the counterpart the default must at least match. None where
/// the workload has no other harness (sendfile always splices).
fn other_harness_member(plan: &Plan, bin: &std::path::Path) -> Option<Ringperf> {
    if !plan.classic {
        return None;
    }
    let other = ringperf::default_harness(&plan.cfg)?.other();
    Some(Ringperf {
        label: other_label(other),
        extra: vec!["--harness".into(), other.name().into()],
        expect: expect_harness(&plan.cfg, other),
        ..Ringperf::new(bin.to_path_buf())
    })
}

/// Checks the plan against the host, finds the tools, runs them in turn and prints the report.
pub fn run(plan: &Plan) -> Result<()> {
    run_collect(plan).map(|_| ())
}

/// `run`, returning ringperf's ratio to each peer as well.
pub fn run_collect(plan: &Plan) -> Result<Vec<report::RatioRow>> {
    let cfg = &plan.cfg;
    let host = check_host(cfg)?;
    // The peers first: a missing package should not wait for a ringperf build.
    let peers = find_peers(cfg)?;
    let ringperf = default_member(plan, ringperf::locate(plan.ringperf.as_deref())?);
    let baseline = plan.baseline.clone().map(|bin| Ringperf { label: BASELINE, ..Ringperf::new(bin) });
    let classic = other_harness_member(plan, &ringperf.bin);
    let client_first = client_first_member(plan, &ringperf.bin);
    let tools: Vec<&dyn Tool> = std::iter::once(&ringperf as &dyn Tool)
        .chain(baseline.as_ref().map(|b| b as &dyn Tool))
        .chain(client_first.as_ref().map(|c| c as &dyn Tool))
        .chain(classic.as_ref().map(|c| c as &dyn Tool))
        .chain(peers.iter().map(|p| p.as_ref()))
        .collect();

    print!("{}", report::header(plan, &host, &tools));
    let _ = std::io::stdout().flush();
    let results = alternate(plan, &tools)?;
    print!("{}", report::runs_table(cfg, &results));
    print!("{}", report::summary(cfg, &host, &results, &tools));
    if cfg.profile {
        let names: Vec<&'static str> = tools.iter().map(|t| t.name()).collect();
        print!("{}", cost_table::table(cfg, &results, &names));
    }
    let sums: Vec<report::ToolSummary> =
        tools.iter().map(|t| report::summarize(t.name(), &results)).collect();
    let mut rows = report::ratio_rows(&results, &sums);
    rows.extend(report::matched_rows(&results, &sums).into_iter().map(|(_, _, row)| row));
    Ok(rows)
}

/// Every peer of the workload that is installed: netperf and neper always (the tools the
/// users compare against), iperf3 for a stream, sockperf for rr when it can take part (its
/// messages are at least 14 bytes, and it cannot set a congestion control). A missing peer
/// is named with how to get it; the comparison goes on with the others, and fails only
/// when none is there.
pub fn find_peers(cfg: &Config) -> Result<Vec<Box<dyn Tool>>> {
    type Finder = fn() -> Result<Box<dyn Tool>>;
    let iperf3: Finder = || Ok(Box::new(Iperf3::find()?));
    let netperf: Finder = || Ok(Box::new(Netperf::find()?));
    let neper: Finder = || Ok(Box::new(Neper::find()?));
    let sockperf: Finder = || Ok(Box::new(Sockperf::find()?));
    let finders: Vec<Finder> = match cfg.workload {
        // neper has no reverse or sendfile stream; netperf's TCP_SENDFILE cannot set a
        // congestion control, so it joins only under the system default.
        Workload::Stream if cfg.stream.sendfile.is_some() && cfg.cc.is_some() => {
            eprintln!("ringperf-bench: left out: netperf TCP_SENDFILE cannot set a congestion control (--cc system includes it)");
            vec![iperf3]
        }
        Workload::Stream if cfg.stream.sendfile.is_some() || cfg.stream.reverse => vec![iperf3, netperf],
        Workload::Stream => vec![iperf3, netperf, neper],
        Workload::UdpStream => vec![iperf3, netperf],
        Workload::Rr if sockperf_can_join(cfg) => vec![netperf, neper, sockperf],
        Workload::Rr | Workload::Crr | Workload::UdpRr => vec![netperf, neper],
    };
    let mut missing = None;
    let mut peers = Vec::new();
    for find in finders {
        match find() {
            Ok(p) => peers.push(p),
            Err(e) => {
                eprintln!("ringperf-bench: left out: {e}");
                missing.get_or_insert(e);
            }
        }
    }
    match (peers.is_empty(), missing) {
        (true, Some(e)) => Err(e),
        _ => Ok(peers),
    }
}

/// One peer, or None after saying why it is left out.
pub fn find_peer(find: impl FnOnce() -> Result<Box<dyn Tool>>) -> Option<Box<dyn Tool>> {
    find().map_err(|e| eprintln!("ringperf-bench: left out: {e}")).ok()
}

/// sockperf sends messages of at least 14 bytes and has no congestion-control option.
pub fn sockperf_can_join(cfg: &Config) -> bool {
    cfg.workload == Workload::Rr && cfg.size >= sockperf::MIN_MESSAGE && cfg.cc.is_none()
}

/// The host, after checking that it has the CPUs the plan pins to (and warning when the
/// congestion control is not available).
pub fn check_host(cfg: &Config) -> Result<Host> {
    let host = Host::read()?;
    for (what, cpu) in [("client", cfg.client_cpu), ("server", cfg.server_cpu)] {
        if cpu >= host.cpus {
            return Err(BenchError::Usage(format!(
                "the {what} CPU {cpu} does not exist: this host has CPUs 0..={}; pick others with --cpus",
                host.cpus - 1
            )));
        }
    }
    if let Some(cc) = &cfg.cc {
        if !host.available_cc.iter().any(|c| c == cc) {
            eprintln!(
                "ringperf-bench: warning: congestion control '{cc}' is not in tcp_available_congestion_control ({}); \
                 the tools will fail unless the kernel can load tcp_{cc}",
                host.available_cc.join(" ")
            );
        }
    }
    Ok(host)
}

/// ringperf, peer, ringperf, peer, ...: `plan.runs` each, a pause between runs. The first
/// failure ends the comparison.
pub fn alternate(plan: &Plan, tools: &[&dyn Tool]) -> Result<Vec<RunResult>> {
    alternate_retrying(plan, tools, 0).map(|(results, _)| results)
}

/// A run that failed and was repeated: which tool, which round, and the error.
#[derive(Debug)]
pub struct Failure {
    pub tool: &'static str,
    pub round: u32,
    pub error: String,
}

/// Like [`alternate`], but a failed run is repeated (after the pause) up to `retries` times
/// before the comparison ends; the failures that were repeated are returned with the
/// results so the report can list them. For long many-tool runs, where one flaky run would
/// otherwise throw away every other measurement.
pub fn alternate_retrying(
    plan: &Plan,
    tools: &[&dyn Tool],
    retries: u32,
) -> Result<(Vec<RunResult>, Vec<Failure>)> {
    let entries: Vec<Entry> = tools.iter().map(|&tool| Entry { tool, cfg: &plan.cfg }).collect();
    let mut first = true;
    alternate_entries(&entries, plan.runs, plan.pause, retries, &mut first)
}

/// A tool with the settings it runs with: tools compared in one part may differ in more
/// than the tool (ringperf with 1 flow beside ringperf with 2).
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub tool: &'a dyn Tool,
    pub cfg: &'a Config,
}

/// The one alternation every comparison uses: round after round, each entry once, a pause
/// before every run but the very first (`first` carries that across parts); a failed run is
/// repeated up to `retries` times, then ends the comparison.
pub fn alternate_entries(
    entries: &[Entry],
    runs: u32,
    pause: Duration,
    retries: u32,
    first: &mut bool,
) -> Result<(Vec<RunResult>, Vec<Failure>)> {
    let mut results = Vec::with_capacity(runs as usize * entries.len());
    let mut failures = Vec::new();
    let progress = Progress::start(u64::from(runs) * entries.len() as u64);
    for round in 0..runs {
        for (i, e) in entries.iter().enumerate() {
            let done = u64::from(round) * entries.len() as u64 + i as u64;
            let work = format!("{} {} B", e.cfg.netperf_test(), e.cfg.size);
            let mut attempt = 0;
            loop {
                if !*first && !pause.is_zero() {
                    thread::sleep(pause);
                }
                *first = false;
                let left = Duration::from_secs(secs_left(entries, runs, round, i, pause));
                progress.run_starts(done, e.tool.name(), &work, left);
                let children_before = children_cpu_us();
                match e.tool.run(e.cfg) {
                    Ok(mut r) => {
                        // A tool's run reaps every process it started (client and server)
                        // before it returns, so the delta is exactly their CPU.
                        r.process_cpu_us =
                            children_cpu_us().zip(children_before).map(|(a, b)| a.saturating_sub(b) as f64);
                        progress.run_ends(done, e.tool.name(), &report::one_line(e.cfg, &r));
                        results.push(r);
                        break;
                    }
                    Err(err) if attempt < retries => {
                        progress.run_ends(done, e.tool.name(), &format!("failed, repeating it: {err}"));
                        failures.push(Failure {
                            tool: e.tool.name(),
                            round: round + 1,
                            error: err.to_string(),
                        });
                        attempt += 1;
                    }
                    Err(err) => {
                        progress.run_ends(done, e.tool.name(), "failed");
                        progress.finish();
                        return Err(err);
                    }
                }
            }
        }
    }
    progress.finish();
    Ok((results, failures))
}

/// How long the comparison has left from entry `i` of `round` on, this run included: every
/// run to come at its length, with the pause before it.
fn secs_left(entries: &[Entry], runs: u32, round: u32, i: usize, pause: Duration) -> u64 {
    let run = |e: &Entry| Duration::from_secs(u64::from(e.cfg.secs)) + pause;
    let this_round: Duration = entries[i..].iter().map(run).sum();
    let whole_round: Duration = entries.iter().map(run).sum();
    (this_round + whole_round * runs.saturating_sub(round + 1)).as_secs()
}

/// The failed and repeated runs, for the end of a report; empty when there were none.
pub fn failures_note(failures: &[Failure]) -> String {
    if failures.is_empty() {
        return String::new();
    }
    let mut s = format!("Runs that failed and were repeated ({}):\n", failures.len());
    for f in failures {
        let first = f.error.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let last = f.error.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        s.push_str(&format!("- round {} {}: {}", f.round, f.tool, first.trim()));
        if last != first {
            s.push_str(&format!(" / {}", last.trim()));
        }
        s.push('\n');
    }
    s.push('\n');
    s
}

/// User + system CPU of every child this process has reaped so far, µs.
fn children_cpu_us() -> Option<u64> {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid and writable for the call.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return None;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Some(us(ru.ru_utime) + us(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::cpu::CpuWindow;
    use crate::peers::Work;
    use ringperf_core::measure::cpu::ProcStat;

    /// Fails its first `fail` runs, then succeeds.
    struct Flaky {
        fail: Cell<u32>,
    }

    impl Tool for Flaky {
        fn name(&self) -> &'static str {
            "flaky"
        }
        fn describe(&self, _: &Config) -> String {
            String::new()
        }
        fn run(&self, _: &Config) -> Result<RunResult> {
            if self.fail.get() > 0 {
                self.fail.set(self.fail.get() - 1);
                return Err(BenchError::Tool("boom\n    detail".into()));
            }
            let s = ProcStat::parse("cpu0 0 0 0 0 0 0 0 0\n").unwrap();
            Ok(RunResult {
                tool: "flaky",
                cpu: CpuWindow::from_stats(&s, &s, 1),
                work: Work::Stream { bytes: 1024, bits_per_sec: 1.0 },
                own_service_demand: None,
                process_cpu_us: None,
                ringperf: None,
                profile: None,
            })
        }
    }

    fn plan() -> Plan {
        Plan {
            cfg: Config::new(Workload::Stream, 1, (0, 0), 1, None),
            runs: 2,
            pause: Duration::ZERO,
            ringperf: None,
            baseline: None,
            classic: false,
        }
    }

    /// Time left counts this run and every one after it, each with its pause.
    #[test]
    fn time_left_counts_the_runs_to_come() {
        let (a, b) = (
            Config::new(Workload::Stream, 5, (0, 0), 1, None),
            Config::new(Workload::Rr, 10, (0, 0), 1, None),
        );
        let t = Flaky { fail: Cell::new(0) };
        let entries = [Entry { tool: &t, cfg: &a }, Entry { tool: &t, cfg: &b }];
        let pause = Duration::from_secs(1);
        assert_eq!(secs_left(&entries, 3, 0, 0, pause), 3 * (6 + 11));
        assert_eq!(secs_left(&entries, 3, 0, 1, pause), 11 + 2 * 17);
        assert_eq!(secs_left(&entries, 3, 2, 1, pause), 11);
    }

    #[test]
    fn failed_runs_are_repeated_and_listed() {
        let t = Flaky { fail: Cell::new(2) };
        let (results, failures) = alternate_retrying(&plan(), &[&t], 2).unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(failures.len(), 2);
        assert_eq!(failures_note(&failures).lines().nth(1), Some("- round 1 flaky: boom / detail"));
        assert!(failures_note(&[]).is_empty());
    }

    /// `--classic` adds the harness the rule does not pick: the classic loop beside a
    /// stream's io_uring default, the ring beside one-flow rr's classic default; the default
    /// member is checked to run what the rule picks.
    #[test]
    fn classic_adds_the_other_harness_except_where_there_is_none() {
        let bin = std::path::Path::new("/bin/ringperf");
        assert!(other_harness_member(&plan(), bin).is_none(), "not asked for");
        let asked = Plan { classic: true, ..plan() };
        let m = other_harness_member(&asked, bin).expect("a plain stream has a classic loop");
        assert_eq!(m.label, OTHER_CLASSIC);
        let args = m.args(&asked.cfg);
        assert!(args.windows(2).any(|w| w == ["--harness", "classic"]), "{args:?}");
        assert_eq!((m.expect.send_engine, m.expect.recv_engine), (Some("syscall"), Some("syscall")));
        let d = default_member(&asked, bin.to_path_buf());
        assert_eq!(
            (d.label, d.expect.send_engine, d.expect.recv_engine),
            ("ringperf", Some("copy"), Some("multishot"))
        );
        let mut rr = asked.clone();
        rr.cfg.workload = Workload::Rr;
        let m = other_harness_member(&rr, bin).expect("rr has a ring");
        assert_eq!(m.label, OTHER_IO_URING);
        assert!(m.args(&rr.cfg).windows(2).any(|w| w == ["--harness", "io-uring"]));
        assert_eq!((m.expect.send_engine, m.expect.recv_engine), (Some("copy"), Some("multishot")));
        assert_eq!(default_member(&rr, bin.to_path_buf()).expect.send_engine, Some("syscall"));
        let mut sendfile = asked.clone();
        sendfile.cfg.stream.sendfile = Some("/tmp/f".into());
        assert!(other_harness_member(&sendfile, bin).is_none(), "sendfile always splices");
        assert_eq!(default_member(&sendfile, bin.to_path_buf()).expect, ringperf::Expect::default());
    }

    #[test]
    fn crr_adds_a_member_that_closes_in_nepers_order() {
        let bin = std::path::Path::new("/bin/ringperf");
        assert!(client_first_member(&plan(), bin).is_none(), "a stream has no close order");
        let mut crr = plan();
        crr.cfg.workload = Workload::Crr;
        let m = client_first_member(&crr, bin).expect("crr");
        assert_eq!(m.label, CLIENT_FIRST);
        let args = m.args(&crr.cfg);
        assert_eq!(args[0], "crr");
        assert!(args.windows(2).any(|w| w == ["--close-first", "client"]), "{args:?}");
    }

    #[test]
    fn too_many_failures_end_the_comparison() {
        let t = Flaky { fail: Cell::new(2) };
        assert!(alternate_retrying(&plan(), &[&t], 1).is_err());
        let t = Flaky { fail: Cell::new(1) };
        assert!(alternate(&plan(), &[&t]).is_err());
    }
}
