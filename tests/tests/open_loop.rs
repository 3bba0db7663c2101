//! Open-loop rr (`--rate`): requests leave on a schedule, a round trip counts from the
//! request's intended send time (no coordinated omission), and the report accounts for
//! every request the schedule made: sent, dropped at the backlog, or due at the end.

use std::time::Duration;

use ringperf_tests::{
    check_rr_report, ringperf, run_with_a_stalled_server, SideReportExt, TestReport, TestReportExt,
};

/// Every request the client's schedule made is sent, dropped or left unsent at the end,
/// and every one sent is a transaction both sides counted.
fn check_schedule_accounts_for_every_request(r: &TestReport) {
    check_rr_report(r);
    let (rr, ol) = (r.local.rr(), r.local.open_loop());
    assert_eq!(ol.scheduled, ol.sent + ol.dropped + ol.unsent_at_end, "{rr:?}");
    assert_eq!(ol.sent, r.local.transactions, "a sent request was not answered");
    assert!(ol.slipped <= ol.sent + ol.unsent_at_end, "{rr:?}");
    assert!(r.remote().rr().open_loop.is_none(), "the server has no schedule of its own");
}

/// Requests per second the client sent over its window.
fn achieved(r: &TestReport) -> f64 {
    r.local.open_loop().sent as f64 * 1e9 / r.local.elapsed_ns as f64
}

/// At a modest rate the schedule is kept: the client sends about the target rate (the
/// count of due times in the window, not a speed), nothing is dropped, and both sides
/// count the same transactions.
#[test]
fn open_loop_sends_at_its_target_rate() {
    let r = ringperf!().run_report(&["rr", "-l", "2", "--rate", "2000"]);
    check_schedule_accounts_for_every_request(&r);
    assert_eq!(r.spec.open_loop.expect("spec.open_loop").rate, 2000);
    let ol = r.local.open_loop();
    assert_eq!(ol.target_rate, 2000.0);
    assert_eq!(ol.dropped, 0);
    // The schedule covers the window exactly, however late a wakeup came at its end.
    assert_eq!(ol.scheduled, 4000);
    let rate = achieved(&r);
    assert!((1800.0..=2200.0).contains(&rate), "achieved {rate:.1} requests/s of a 2000/s schedule");
    assert_eq!(r.local.latency().count, r.local.transactions);
}

/// --rate-total splits the rate over the flows, and the workers' schedules add up to it.
#[test]
fn rate_total_is_split_over_the_flows() {
    let r =
        ringperf!().run_report(&["rr", "-l", "1", "--rate-total", "2000", "--flows", "4", "--threads", "2"]);
    check_schedule_accounts_for_every_request(&r);
    let target = r.local.open_loop().target_rate;
    assert!((target - 2000.0).abs() < 1.0, "target {target} over 4 flows of 500/s");
    assert_eq!(r.local.open_loop().scheduled, 2000);
    let rate = achieved(&r);
    assert!((1800.0..=2200.0).contains(&rate), "achieved {rate:.1} requests/s of a 2000/s schedule");
}

/// Runs `rr` for 3 s against a server stalled for 200 ms once its window is open.
fn rr_with_a_stalled_server(extra: &[&str]) -> TestReport {
    let mut args = vec!["rr", "-l", "3", "-D", "0.5"];
    args.extend_from_slice(extra);
    run_with_a_stalled_server(&ringperf!(), &args, Duration::from_millis(200))
}

/// The issue's stall test: a server stopped for 200 ms delays every request the schedule
/// made meanwhile, so about 100 of an open loop's 3000 requests (1000/s) wait 100 ms or
/// more and its p99 shows the stall; a closed loop sends nothing while it waits, so the
/// stall is one transaction: in its max, not its p99.
#[test]
fn a_stalled_server_shows_in_the_open_loop_percentiles_only() {
    let open = rr_with_a_stalled_server(&["--rate", "1000"]);
    check_schedule_accounts_for_every_request(&open);
    assert_eq!(open.local.open_loop().dropped, 0, "a 200 ms stall fits the default backlog");
    assert!(
        open.local.rr().max_in_flight >= 100,
        "the schedule kept sending through the stall: {:?}",
        open.local.rr()
    );
    let p99 = open.local.latency().p99_ns;
    assert!(p99 >= 100_000_000, "open loop p99 {} us hides a 200 ms stall", p99 / 1000);
    let closed = rr_with_a_stalled_server(&[]);
    check_rr_report(&closed);
    let (p99, max) = (closed.local.latency().p99_ns, closed.local.latency().max_ns);
    assert!(max >= 150_000_000, "the closed loop's max {} us missed the stall", max / 1000);
    assert!(p99 < 50_000_000, "closed loop p99 {} us: the stall is one transaction there", p99 / 1000);
}

/// A schedule the backlog cannot hold drops requests and says how many, instead of
/// blocking or queueing without bound; the run still ends and both sides agree.
#[test]
fn a_rate_beyond_the_backlog_reports_dropped_requests() {
    let r = ringperf!().run_report(&["rr", "-l", "1", "--rate", "1m", "--backlog", "2"]);
    check_schedule_accounts_for_every_request(&r);
    let dropped = r.local.open_loop().dropped;
    assert!(dropped > 0, "a million requests/s with 2 outstanding dropped none: {:?}", r.local.rr());
    assert!(r.local.rr().max_in_flight <= 2, "{:?}", r.local.rr());
    let out = ringperf!().run(&["rr", "-l", "0.5", "--rate", "1m", "--backlog", "2", "-v"]).success();
    assert!(out.stdout.contains("dropped with 2 outstanding"), "{out}");
    let keyval =
        ringperf!().run(&["rr", "-l", "0.5", "--rate", "1m", "--backlog", "2", "--keyval"]).success();
    let line =
        keyval.stdout.lines().find(|l| l.starts_with("OPEN_LOOP_DROPPED=")).expect("OPEN_LOOP_DROPPED");
    let n: u64 = line["OPEN_LOOP_DROPPED=".len()..].parse().expect("a count");
    assert!(n > 0, "{line}");
}

/// Where the open loop does not apply it is refused, saying why.
#[test]
fn open_loop_is_refused_where_it_does_not_apply() {
    ringperf!().run(&["crr", "-l", "0.2", "--rate", "100"]).failure(2, &["--rate", "crr", "rr and udp-rr"]);
    ringperf!().run(&["rr", "-l", "0.2", "--rate", "100", "--burst", "4"]).failure(2, &["drop --burst"]);
    ringperf!().run(&["rr", "-l", "0.2", "--backlog", "4"]).failure(2, &["--rate"]);
    ringperf!()
        .run(&["rr", "-l", "0.2", "--rate", "100", "--rate-total", "100"])
        .failure(2, &["--rate-total"]);
    ringperf!().run(&["rr", "-l", "0.2", "--rate", "0"]).failure(2, &["--rate"]);
    ringperf!()
        .run(&["rr", "-l", "0.2", "--rate", "100", "--send-engine", "syscall", "--recv-engine", "syscall"])
        .failure(2, &["drop --rate"]);
}

/// Every send engine with every receive engine keeps the schedule's books alike on both
/// sides, and requests that pile up behind a send in flight leave intact (--verify). The
/// rate keeps the CPU busy for well over /proc/stat's 10 ms tick in 0.3 s, so the report's
/// busy time cannot round to zero.
#[test]
fn every_engine_pair_keeps_an_open_loop_intact() {
    let args = ["rr", "-l", "0.3", "--rate", "20000", "-r", "100,3000", "--verify"];
    ringperf!().run_report_per_engine_pair(&args, |send, recv, r| {
        check_schedule_accounts_for_every_request(r);
        for (side, x) in r.sides() {
            assert_eq!(x.verify().mismatches, 0, "{send}/{recv} {side}");
        }
        let t = r.local.transactions;
        assert_eq!(r.local.verify().bytes_checked, t * 3000, "{send}/{recv}");
    });
}

/// A backlog of one is one request outstanding per flow: the client never has two out,
/// and what comes due meanwhile is dropped and counted, not queued.
#[test]
fn a_backlog_of_one_keeps_one_request_outstanding() {
    for recv in ["recv", "multishot"] {
        let r = ringperf!().run_report(&[
            "rr",
            "-l",
            "0.5",
            "--rate",
            "5000",
            "--backlog",
            "1",
            "--recv-engine",
            recv,
        ]);
        check_schedule_accounts_for_every_request(&r);
        assert_eq!(r.local.rr().burst, 1, "{recv}");
        assert_eq!(r.local.rr().max_in_flight, 1, "{recv}");
        assert_eq!(r.remote().rr().max_in_flight, 1, "{recv}");
    }
}
