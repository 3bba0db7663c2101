//! The kernel cost profile over loopback: categories that add up, costs that add up to the
//! busy time, a receive engine that copies less showing less copy, the tool's honest
//! overhead and the network path's service demand, folded stacks, a run where the kernel
//! refuses to sample, and (in a lab veth pair) TSO off raising the sender's stack cost.
//!
//! A profile samples every CPU of the host, and its categories count whatever kernel work
//! ran there: the tests of this file take turns (see [`host_to_myself`]), or one test's
//! traffic is charged to another's categories. That is what made the TSO comparison fail
//! now and then: a loopback stream of a test running beside it landed in one lab's window
//! and raised its TCP, IP and device costs per KB.

use std::path::PathBuf;
use std::process::Command;

use ringperf_tests::{
    at, have_program, is_root, lab_name, report_of, ringperf, run_with_timeout, skip, skip_unless, Category,
    CategoryCost, Lab, ProfileReport, Server, SideReportExt, TestReport, TestReportExt, LAB_PROGRAMS,
    RUN_TIMEOUT,
};

/// Tests of one binary run in parallel threads; a profile test holds this for its whole
/// run, so that no other test of the file sends traffic while it measures.
static HOST: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Waits for the other profile tests to finish (a bounded wait: each is bounded by its
/// commands' timeouts), and keeps them out until the returned guard drops. A test that
/// panicked while holding it leaves nothing behind to fear: its processes are reaped.
fn host_to_myself() -> std::sync::MutexGuard<'static, ()> {
    HOST.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The side's profile, or `None` (after saying SKIPPED) when the kernel refused one here.
fn profile<'a>(r: &'a TestReport, side: &str, test: &str) -> Option<&'a ProfileReport> {
    let x = if side == "local" { &r.local } else { r.remote() };
    let p = x.profile.as_ref().unwrap_or_else(|| panic!("{side} has no profile"));
    if let Some(why) = &p.unavailable {
        skip(test, &format!("the kernel refused the profile here: {why}"));
        return None;
    }
    Some(p)
}

fn category(p: &ProfileReport, id: Category) -> Option<&CategoryCost> {
    p.categories.iter().find(|c| c.category == id)
}

fn share(p: &ProfileReport, id: Category) -> f64 {
    category(p, id).map_or(0.0, |c| c.share_percent)
}

#[test]
fn profile_categories_add_up_and_their_costs_are_the_busy_time() {
    let _host = host_to_myself();
    let test = "profile_categories_add_up_and_their_costs_are_the_busy_time";
    let r = ringperf!().run_report(&["rr", "-l", "1", "--profile"]);
    for (side, x) in r.sides() {
        let Some(p) = profile(&r, side, test) else { return };
        let cats = &p.categories;
        let samples: u64 = cats.iter().map(|c| c.samples).sum();
        assert_eq!(samples, p.busy_samples, "{side}: categories do not cover every busy sample");
        assert_eq!(p.busy_samples + p.idle_samples, p.samples);
        assert!(p.samples > 0, "{side}: no samples in a 1 s window");
        let shares: f64 = cats.iter().map(|c| c.share_percent).sum();
        assert!((shares - 100.0).abs() < 1e-6, "{side}: shares add up to {shares}");
        // Per-unit cost times the work is the side's busy time, as service demand counts it.
        let busy_us = x.cpu.system.busy_us;
        let transactions = x.transactions as f64;
        let total: f64 = cats.iter().map(|c| c.us_per_transaction.unwrap() * transactions).sum();
        assert!(
            (total - busy_us).abs() <= 1e-6 * busy_us.max(1.0),
            "{side}: costs add to {total} us, busy {busy_us}"
        );
        assert!(!p.top_functions.is_empty(), "{side}: no top functions");
        assert!(p.top_functions.len() <= 15);
        assert!(matches!(p.event.as_str(), "cycles" | "cpu-clock"), "{}", p.event);
        assert_eq!(p.hz, 999);
    }
}

/// The embedded server lives in the client's process, whose sampler already covers every
/// CPU: one sampler serves both sides (a second would double the sampling cost and see the
/// same CPUs), so both profiles hold the same samples. A separate server samples for itself.
#[test]
fn the_embedded_server_shares_the_clients_sampler() {
    let _host = host_to_myself();
    let test = "the_embedded_server_shares_the_clients_sampler";
    let r = ringperf!().run_report(&["rr", "-l", "0.5", "--profile"]);
    let (Some(local), Some(remote)) = (profile(&r, "local", test), profile(&r, "remote", test)) else {
        return;
    };
    let counts = |p: &ProfileReport| {
        [
            ("samples", p.samples),
            ("busy_samples", p.busy_samples),
            ("idle_samples", p.idle_samples),
            ("lost", p.lost),
        ]
    };
    for ((f, l), (_, m)) in counts(local).into_iter().zip(counts(remote)) {
        assert_eq!(l, m, "{f}: the embedded server took samples of its own");
    }
    // Each side's costs are still its own: per unit of its own work, over its own busy time.
    let sd = r.remote().service_demand.us_per_transaction.expect("remote.service_demand.us_per_transaction");
    let total: f64 = remote.categories.iter().map(|c| c.us_per_transaction.unwrap()).sum();
    assert!((total - sd).abs() <= 1e-6 * sd.max(1.0), "remote: costs add to {total} us/Tr, not {sd}");

    let rp = ringperf!();
    let mut server = rp.serve();
    let port = server.port_arg();
    let r = rp.run_report(&["rr", "-H", "127.0.0.1", "-p", &port, "-l", "0.5", "--profile"]);
    let Some(remote) = profile(&r, "remote", test) else { return };
    assert!(remote.samples > 0, "a separate server took no samples");
    server.assert_running();
}

#[test]
fn tool_overhead_counts_io_uring_and_the_network_path_costs_less() {
    let _host = host_to_myself();
    let test = "tool_overhead_counts_io_uring_and_the_network_path_costs_less";
    // One-flow rr runs the classic loop by default: ask for the ring this test is about.
    let r = ringperf!().run_report(&["rr", "-l", "1", "--profile", "--harness", "io-uring"]);
    for (side, x) in r.sides() {
        let Some(p) = profile(&r, side, test) else { return };
        assert!(share(p, Category::IoUring) > 0.0, "{side}: no io_uring machinery in an io_uring run: {p:?}");
        let honest = p.tool_overhead_percent;
        let user_only = x.cpu.tool_overhead_percent;
        assert!(honest >= user_only, "{side}: tool overhead {honest} % is below the user-only {user_only} %");
        // Every io_uring_enter comes in through the syscall entry, and that is the tool's.
        assert!(share(p, Category::Syscall) > 0.0, "{side}: no syscall entry/exit in an io_uring run: {p:?}");
        let tool: f64 = [Category::ToolUser, Category::ToolThreads, Category::IoUring, Category::Syscall]
            .iter()
            .map(|&c| share(p, c))
            .sum();
        assert!(
            (honest - tool).abs() < 1e-6,
            "{side}: tool overhead {honest} % is not user space + helper threads + io_uring + syscall entry/exit ({tool} %)"
        );
        let plain = x.service_demand.us_per_transaction.expect("service_demand.us_per_transaction");
        let net =
            p.network_service_demand.us_per_transaction.expect("network_service_demand.us_per_transaction");
        assert!(net < plain, "{side}: network path {net} us/Tr is not below plain {plain}");
        // Below by exactly the tool's share.
        let want = plain * (1.0 - honest / 100.0);
        assert!((net - want).abs() <= 1e-9 * plain, "{side}: network path {net}, want {want}");
    }
    let human = ringperf!().run(&["rr", "-l", "0.5", "--profile", "-v"]).success().stdout;
    for side in ["local ", "remote"] {
        for needle in [format!("{side}  tool overhead"), format!("{side}  tool user-space overhead")] {
            assert!(human.contains(&needle), "no '{needle}' line:\n{human}");
        }
    }
    assert!(human.contains("network path"), "{human}");
    assert!(
        human.contains("+ syscall entry/exit "),
        "the tool overhead line names the syscall share: {human}"
    );
}

/// The receiving side's data-copy cost per KB, mean of `runs` 2 s streams with `engine`.
fn receive_copy_per_kb(engine: &str, runs: usize, test: &str) -> Option<f64> {
    let mut total = 0.0;
    for _ in 0..runs {
        let r = ringperf!().run_report(&["stream", "-l", "2", "--profile", "--recv-engine", engine]);
        // Client to server: the server receives.
        let p = profile(&r, "remote", test)?;
        total += category(p, Category::Copy).and_then(|c| c.us_per_kb).unwrap_or(0.0);
    }
    Some(total / runs as f64)
}

#[test]
fn trunc_receiver_copies_less_than_recv() {
    let _host = host_to_myself();
    let test = "trunc_receiver_copies_less_than_recv";
    // Alternating runs, so a change in the machine's load hits both engines alike.
    let (mut recv, mut trunc) = (0.0, 0.0);
    for _ in 0..2 {
        let Some(c) = receive_copy_per_kb("recv", 1, test) else { return };
        recv += c;
        let Some(c) = receive_copy_per_kb("trunc", 1, test) else { return };
        trunc += c;
    }
    assert!(recv > 0.0, "recv copied nothing per KB");
    // The sender still copies into socket buffers on the same CPUs; only the receive copy goes.
    assert!(trunc < recv, "trunc's receive side copies {trunc} us/KB, recv's {recv} us/KB");
}

#[test]
fn no_profile_takes_none() {
    let _host = host_to_myself();
    let json = ringperf!().run_json(&["rr", "-l", "0.3", "--no-profile"]);
    let r = report_of(&json);
    assert!(r.local.profile.is_none(), "{:?}", r.local.profile);
    assert!(r.remote().profile.is_none());
    // Left out of the spec's JSON when off (so it still runs against a server that predates it).
    assert!(at(&json, "spec").get("profile").is_none(), "{}", at(&json, "spec"));
    let out = ringperf!().run(&["rr", "-l", "0.3", "--no-profile", "-v"]).success().stdout;
    assert!(out.contains("local   tool overhead with its kernel share: not profiled"), "{out}");
    // Without either flag, the one default decides.
    let d = ringperf!().run_report(&["rr", "-l", "0.3"]);
    let profiled = d.local.profile.is_some();
    assert_eq!(profiled, ringperf_core::spec::PROFILE_BY_DEFAULT, "{:?}", d.local.profile);
    let bad = ringperf!().run(&["rr", "-l", "0.3", "--profile-hz", "0"]);
    assert_eq!(bad.code(), 2, "{bad}");
}

#[test]
fn profile_out_writes_folded_stacks_that_plot_draws() {
    let _host = host_to_myself();
    let test = "profile_out_writes_folded_stacks_that_plot_draws";
    let dir = std::env::temp_dir().join(format!("ringperf-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("run");
    let r = ringperf!().run_report(&["rr", "-l", "0.5", "--profile-out", prefix.to_str().unwrap()]);
    let Some(_) = profile(&r, "local", test) else { return };
    for (side, x) in r.sides() {
        let path = PathBuf::from(format!("{}.{side}.folded", prefix.display()));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut total = 0u64;
        for line in text.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not folded: {line}"));
            assert!(!stack.is_empty());
            total += n.parse::<u64>().unwrap_or_else(|_| panic!("not a count: {line}"));
        }
        assert_eq!(total, x.profile().samples, "{side}: folded counts");
        assert!(text.contains("_[k]"), "{side}: no kernel frames");
        let svg = dir.join(format!("{side}.svg"));
        ringperf!().run(&["plot", path.to_str().unwrap(), "-o", svg.to_str().unwrap()]).success();
        let drawn = std::fs::read_to_string(&svg).unwrap();
        assert!(drawn.contains("<svg"), "{side}: not an SVG");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Puts kernel.perf_event_paranoid back however the test ends.
struct Paranoid(String);

impl Drop for Paranoid {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/kernel/perf_event_paranoid", &self.0);
    }
}

/// Root with CAP_PERFMON or CAP_SYS_ADMIN samples whatever perf_event_paranoid says (even
/// 3), so the run drops every capability (setpriv) as well as raising it to 3: it is the
/// capabilities that make perf_event_open fail here.
#[test]
fn a_refused_profile_still_completes_and_says_why() {
    let _host = host_to_myself();
    let test = "a_refused_profile_still_completes_and_says_why";
    if !is_root() {
        skip(test, "needs root to raise kernel.perf_event_paranoid and drop capabilities");
        return;
    }
    if !have_program("setpriv") {
        skip(test, "needs setpriv (util-linux) to drop capabilities: apt-get install util-linux");
        return;
    }
    let Ok(old) = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid") else {
        skip(test, "no /proc/sys/kernel/perf_event_paranoid: this kernel has no perf events");
        return;
    };
    let _restore = Paranoid(old);
    std::fs::write("/proc/sys/kernel/perf_event_paranoid", "3").expect("raising perf_event_paranoid");
    let bin = ringperf!().path().to_path_buf();
    // A 0.3 s profiled rr with every capability dropped, shown as `output` says.
    let without_capabilities = |output: &str| {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--inh-caps=-all", "--bounding-set=-all", "--"]).arg(&bin).args([
            "rr",
            "-l",
            "0.3",
            "--profile",
            output,
        ]);
        run_with_timeout(cmd, RUN_TIMEOUT).success()
    };
    let r = without_capabilities("--json").report();
    for (side, x) in r.sides() {
        let p = x.profile();
        let why = p
            .unavailable
            .as_deref()
            .unwrap_or_else(|| panic!("{side}: the profile was taken without capabilities: {p:?}"));
        assert!(why.contains("perf_event_paranoid") && why.contains("CAP_PERFMON"), "{why}");
        assert!(!why.contains('\n'));
    }
    // The rest of the report is whole.
    assert!(r.local.transactions > 0);
    let human = without_capabilities("-v").stdout;
    assert!(human.contains("local   tool overhead: profile unavailable: perf_event_open refused"), "{human}");
}

/// A server in its own process profiles its window and sends the profile in its report;
/// keyval carries both sides' honest overhead and network-path service demand.
#[test]
fn a_separate_server_sends_its_profile_and_keyval_carries_both_sides() {
    let _host = host_to_myself();
    let test = "a_separate_server_sends_its_profile_and_keyval_carries_both_sides";
    let rp = ringperf!();
    let server = rp.serve();
    let port = server.port_arg();
    // On the ring, whose work the server's profile must show (one-flow rr runs the classic
    // loop by default).
    let ring = ["rr", "-H", "127.0.0.1", "-p", &port, "-l", "0.5", "--profile", "--harness", "io-uring"];
    let r = rp.run_report(&ring);
    let Some(remote) = profile(&r, "remote", test) else { return };
    assert!(remote.samples > 0);
    assert!(share(remote, Category::IoUring) > 0.0, "the server's io_uring work is missing: {remote:?}");
    let kv = rp
        .run(&["rr", "-H", "127.0.0.1", "-p", &port, "-l", "0.5", "--keyval", "--profile"])
        .success()
        .stdout;
    for name in [
        "LOCAL_TOOL_OVERHEAD_WITH_KERNEL",
        "REMOTE_TOOL_OVERHEAD_WITH_KERNEL",
        "LOCAL_NETWORK_SD",
        "REMOTE_NETWORK_SD",
        "LOCAL_NETWORK_SD_PER_SEGMENT",
        "REMOTE_NETWORK_SD_PER_SEGMENT",
    ] {
        let value = kv
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in:\n{kv}"));
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("{name}={value} is not a number"));
        assert!(v > 0.0, "{name}={value}");
    }
    let kv = rp
        .run(&["rr", "-H", "127.0.0.1", "-p", &port, "-l", "0.3", "--keyval", "--no-profile"])
        .success()
        .stdout;
    assert!(
        kv.lines().any(|l| l == "REMOTE_NETWORK_SD="),
        "a run without a profile has no network SD:\n{kv}"
    );
}

/// The sender's cost per KB in the TCP, IP and device categories, per iteration, of a
/// 5-iteration stream from host a to host b of a lab brought up with `lab_args`.
fn sender_stack_cost_per_kb(tag: &str, lab_args: &[&str], test: &str) -> Option<Vec<f64>> {
    let rp = ringperf!();
    let lab = Lab::up(&lab_name(tag), lab_args);
    let mut server =
        Server::start(lab.exec("b", rp.path(), &["serve", "--bind", "198.18.0.2", "--port", "0"]));
    let port = server.port_arg();
    let o = run_with_timeout(
        lab.exec(
            "a",
            rp.path(),
            &["stream", "-H", "198.18.0.2", "-p", &port, "-l", "1", "-i", "5,5", "--profile", "--json"],
        ),
        RUN_TIMEOUT,
    )
    .success();
    server.assert_running();
    let r = o.report();
    let p = profile(&r, "local", test)?;
    let iterations = &p.iterations;
    assert_eq!(iterations.len(), 5, "{iterations:?}");
    let stack = |costs: &Vec<(Category, f64)>| -> f64 {
        costs
            .iter()
            .filter(|(c, _)| matches!(c, Category::Tcp | Category::Ip | Category::Device))
            .map(|(_, cost)| cost)
            .sum()
    };
    Some(iterations.iter().map(stack).collect())
}

/// The seed experiment as a test: with TSO off on the sender's veth, the stack segments
/// every 64 KiB send itself (GSO), so the sender pays more per KB in TCP, IP and the
/// device path than with TSO on.
#[test]
fn tso_off_raises_the_senders_stack_cost_per_kb() {
    let _host = host_to_myself();
    let test = "tso_off_raises_the_senders_stack_cost_per_kb";
    if skip_unless(test, true, LAB_PROGRAMS) {
        return;
    }
    let Some(on) = sender_stack_cost_per_kb("tsoon", &[], test) else { return };
    let Some(off) = sender_stack_cost_per_kb("tsooff", &["--tso", "a=off"], test) else { return };
    // The median: one iteration that something else on the host disturbed (a scheduler
    // hiccup, another process's kernel work in the window) does not decide it.
    let median = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s[s.len() / 2]
    };
    assert!(median(&on) > 0.0, "no TCP/IP/device cost with TSO on: {on:?}");
    assert!(median(&off) > median(&on), "TSO off {off:?} us/KB is not above TSO on {on:?}");
}
