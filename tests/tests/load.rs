//! Load, two ways. A server's load: one server holds 32 clients at once, each with 3 flows,
//! refuses none of them (all are within its limits), and keeps each session's figures
//! separate: every client's report conserves its own bytes, and the server's log holds one
//! line per client with exactly that client's count. And `ringperf load`, latency under
//! load: the probes' idle phase has no load traffic and the loaded phase has it, the two
//! latency phases account for every probe, and bad flags are refused with what to do.

use std::thread;
use std::time::Duration;

use ringperf_tests::{
    check_stream_report, parse, ringperf, LatencySummary, LoadDirection, LoadReport, SideReportExt,
    TestReport, TestReportExt,
};

const CLIENTS: usize = 32;
const FLOWS: &str = "3";

#[test]
fn thirty_two_clients_with_three_flows_each_are_served_at_once_and_kept_apart() {
    let rp = ringperf!();
    // All 32 come from 127.0.0.1: one host, so the per-host cap must allow them.
    let per_host = CLIENTS.to_string();
    let mut server = rp.serve_with(&["--max-sessions-per-host", &per_host]);
    let port = server.port_arg();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (rp, port) = (rp.clone(), port.clone());
            thread::spawn(move || {
                let mut args =
                    vec!["stream", "-H", "127.0.0.1", "-p", &port, "-l", "3", "--flows", FLOWS, "--json"];
                // Every fourth client paces itself, so the sessions move different amounts.
                let rate = format!("{}m", 20 * (i + 1));
                if i % 4 == 0 {
                    args.extend(["-b", &rate]);
                }
                rp.run(&args)
            })
        })
        .collect();
    // While they run: how many sessions does the server hold at once?
    let mut most = 0;
    for _ in 0..20 {
        thread::sleep(Duration::from_millis(100));
        let started = server.log().iter().filter(|l| l.contains("session started")).count();
        let ended = server.log().iter().filter(|l| l.contains(" done (") || l.contains("failed")).count();
        most = most.max(started.saturating_sub(ended));
    }
    let reports: Vec<TestReport> =
        clients.into_iter().map(|c| c.join().expect("client").success().report()).collect();
    let mut received = Vec::new();
    for r in &reports {
        check_stream_report(r, false);
        assert!(!r.partial);
        assert_eq!(r.spec.flows, 3);
        received.push(r.remote().bytes_received);
    }
    // The server's log: one line per session, each with one client's own byte count. Two
    // clients may move exactly the same bytes (counts are whole 128 KiB sends, and 24
    // unpaced clients share the CPUs evenly), so each count must appear on as many lines
    // as there are clients that reported it.
    let log = server.log();
    for bytes in &received {
        let want = format!("TCP_STREAM done ({bytes} bytes");
        let clients = received.iter().filter(|&b| b == bytes).count();
        assert_eq!(
            log.iter().filter(|l| l.contains(&want)).count(),
            clients,
            "not one log line per client that moved {bytes} bytes ({clients} did)"
        );
    }
    let rejected = log.iter().filter(|l| l.contains("rejected")).count();
    assert_eq!(rejected, 0, "the server refused clients within its limits: {log:?}");
    eprintln!(
        "figures: {CLIENTS} clients x {FLOWS} flows: all served, {most} sessions seen at once, 0 refused, totals {} .. {} bytes",
        received.iter().min().unwrap_or(&0),
        received.iter().max().unwrap_or(&0)
    );
    assert!(most >= CLIENTS / 2, "the server never held more than {most} sessions at once");
    server.assert_running();
}

/// min <= p50 <= p90 <= p99 <= p99.9 <= max of one latency summary.
fn check_ordered(l: &LatencySummary, what: &str) {
    let v = [l.min_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.p999_ns, l.p9999_ns, l.max_ns];
    assert!(v.windows(2).all(|w| w[0] <= w[1]), "{what}: percentiles out of order: {v:?}");
}

/// The idle and loaded phases' round trips, which a whole run has.
fn phases(r: &LoadReport) -> (&LatencySummary, &LatencySummary) {
    let idle = r.idle.as_ref().unwrap_or_else(|| panic!("no idle phase: {:?}", r.partial_reason));
    let loaded = r.loaded.as_ref().unwrap_or_else(|| panic!("no loaded phase: {:?}", r.partial_reason));
    (idle, loaded)
}

/// The probes' two phases hold every probe round trip, each once, with its percentiles in
/// order; returns (idle, loaded) counts.
fn check_phases(r: &LoadReport) -> (u64, u64) {
    let (idle_phase, loaded_phase) = phases(r);
    let (idle, loaded) = (idle_phase.count, loaded_phase.count);
    assert!(idle > 0 && loaded > 0, "a phase has no probes: idle {idle}, loaded {loaded}");
    let probe = &r.probe.local;
    assert_eq!(idle + loaded, probe.latency().count, "the phases do not add up to the whole");
    assert_eq!(probe.latency().count, probe.transactions);
    check_ordered(idle_phase, "idle");
    check_ordered(loaded_phase, "loaded");
    (idle, loaded)
}

/// From the time series: no load byte in any probe interval that ended before the load's
/// window opened, and load in every direction in each interval wholly inside the load's
/// window. The load opened after the idle phase's tick.
fn check_series(r: &LoadReport) {
    let split = r.split_ns.expect("split_ns");
    let start = r.load_start_ns.expect("load_start_ns");
    assert!(start >= split, "the load opened at {start} ns, before the idle phase ended at {split} ns");
    let loaded_ns = r.loaded_ms * 1_000_000;
    let directions = r.loads.len();
    let (mut before, mut during) = (0, 0);
    for p in &r.series {
        let (lo, hi) = (p.start_ns, p.start_ns + p.duration_ns);
        let bytes = &p.load_bytes;
        assert_eq!(bytes.len(), directions);
        if hi <= start {
            before += 1;
            assert!(bytes.iter().all(|&b| b == 0), "load bytes before the load started: {p:?}");
        } else if lo >= start && hi <= start + loaded_ns {
            during += 1;
            assert!(bytes.iter().all(|&b| b > 0), "an interval of the loaded phase without load: {p:?}");
        }
    }
    assert!(before > 0 && during > 0, "the series has {before} idle and {during} loaded intervals");
}

/// TCP streams both ways under open-loop rr probes: the phases, the series, every load
/// test's bytes conserved, the probe's schedule kept, and the chart drawn with both series.
#[test]
fn latency_under_load_has_an_idle_phase_without_load_and_a_loaded_phase_with_it() {
    let svg = std::env::temp_dir().join(format!("ringperf-load-{}.svg", std::process::id()));
    let svg_path = svg.to_string_lossy().into_owned();
    let mut args: Vec<&str> =
        "load --idle 1 -l 2 --load both --load-flows 4 --cc cubic --json".split(' ').collect();
    args.extend(["--plot", &svg_path]);
    let r: LoadReport = ringperf!().run(&args).success().parsed();
    assert_eq!(r.test, "LOAD");
    assert_eq!(r.probe_test, "TCP_RR");
    let probe = &r.probe.local;
    assert_eq!(probe.socket.congestion_control, "cubic", "--cc reaches the probes");
    assert!(probe.socket.nodelay, "the probes' requests do not wait for Nagle");
    assert!(!r.partial, "{:?}", r.partial_reason);
    let (idle, loaded) = check_phases(&r);
    check_series(&r);
    let directions: Vec<LoadDirection> = r.loads.iter().map(|l| l.direction).collect();
    assert_eq!(directions, [LoadDirection::Up, LoadDirection::Down]);
    for l in &r.loads {
        let t = l.report.as_ref().unwrap_or_else(|| panic!("{:?}: no report: {:?}", l.direction, l.error));
        check_stream_report(t, l.direction == LoadDirection::Down);
        assert_eq!(t.spec.flows, 4);
        assert_eq!(t.local.socket.congestion_control, "cubic", "--cc reaches the load");
        let (sent, received) = match l.direction {
            LoadDirection::Up => (t.local.bytes_sent, t.remote().bytes_received),
            _ => (t.remote().bytes_sent, t.local.bytes_received),
        };
        assert!(sent > 0 && sent == received, "{:?}: sent {sent}, received {received}", l.direction);
        assert!(l.throughput_bits_per_sec.expect("throughput_bits_per_sec") > 0.0);
    }
    // Open loop at the default 200/s: the schedule made about that, and inflation is the
    // ratio of the phases' own figures (its size on loopback is not asserted).
    assert_eq!(r.probe_rate.target_per_sec, Some(200.0));
    let achieved = r.probe_rate.achieved_per_sec;
    assert!((100.0..=300.0).contains(&achieved), "achieved {achieved}/s of 200/s");
    let (idle_phase, loaded_phase) = phases(&r);
    let ratio = loaded_phase.p99_ns as f64 / idle_phase.p99_ns as f64;
    assert!((r.inflation.expect("inflation").p99 - ratio).abs() < 1e-9 * ratio.max(1.0));
    let busy = r.cpu.expect("cpu").local_busy_percent;
    assert!((0.0..=100.0).contains(&busy), "busy {busy} %");
    let chart = std::fs::read_to_string(&svg).expect("--plot wrote the chart");
    let _ = std::fs::remove_file(&svg);
    assert!(chart.contains("<svg"));
    for series in ["load up", "load down", "probe p50", "probe p99", "load start"] {
        assert!(chart.contains(series), "the chart has no '{series}'");
    }
    eprintln!(
        "figures: idle {idle} probes p99 {} us, loaded {loaded} probes p99 {} us",
        idle_phase.p99_ns / 1000,
        loaded_phase.p99_ns / 1000
    );
}

/// udp-rr probes under a paced UDP flood, on their schedule by default and closed loop when
/// asked (said so): the same phases and series.
#[test]
fn latency_under_a_udp_flood_with_udp_probes_open_and_closed_loop() {
    let rp = ringperf!();
    let args = "load --probe udp-rr --idle 0.6 -l 1 --load udp --load-rate 200m --load-flows 2";
    let mut args: Vec<&str> = args.split_whitespace().collect();
    for closed in [false, true] {
        if closed {
            args.push("--probe-closed-loop");
        }
        let r: LoadReport = rp.run_parsed(&args);
        assert!(!r.partial, "{:?}", r.partial_reason);
        assert_eq!(r.probe_test, "UDP_RR");
        let rate = &r.probe_rate;
        if closed {
            assert!(rate.target_per_sec.is_none());
            let why = rate.closed_loop_reason.as_deref().expect("probe_rate.closed_loop_reason");
            assert!(why.contains("--probe-closed-loop"));
        } else {
            assert_eq!(rate.target_per_sec, Some(200.0), "the default probe rate");
            let achieved = rate.achieved_per_sec;
            assert!(achieved > 100.0, "udp-rr probes kept no schedule: {achieved}/s of 200/s");
            assert!(rate.closed_loop_reason.is_none());
        }
        check_phases(&r);
        check_series(&r);
        let l = &r.loads[0];
        assert_eq!(l.direction, LoadDirection::UdpUp);
        assert!(l.report.as_ref().expect("the load's report").local.bytes_sent > 0);
    }
}

/// A load test the server refuses: the probes' figures still come out, marked partial, with
/// a non-zero exit and the refusal on stderr.
#[test]
fn a_failed_load_still_reports_the_probes() {
    let rp = ringperf!();
    let server = rp.serve_with(&["--max-flows", "2"]);
    let port = server.port_arg();
    let mut args: Vec<&str> =
        "load -H 127.0.0.1 --idle 0.4 -l 0.6 --load up --load-flows 4 --json".split(' ').collect();
    args.extend(["-p", &port]);
    let out = rp.run(&args);
    assert_ne!(out.code(), 0, "a failed load must not exit 0: {out}");
    let r: LoadReport = out.parsed();
    assert!(r.partial);
    let why = r.partial_reason.as_deref().expect("partial_reason");
    assert!(why.contains("up load"), "{why}");
    assert!(r.loads[0].error.as_deref().expect("the load's error").contains("--max-flows"));
    assert!(r.probe.local.transactions > 0, "the probes' figures are there");
    assert!(out.stderr.contains("partial result"), "{out}");
}

/// Bad flag combinations exit 2 with one line that says what to give instead.
#[test]
fn load_refuses_bad_flags_with_what_to_do() {
    let rp = ringperf!();
    for (args, needles) in [
        (&["load", "--idle", "0"][..], &["--idle", "give at least"][..]),
        (&["load", "--load", "udp"], &["--load-rate"]),
        (&["load", "--idle", "0.5", "-D", "1"], &["-D", "at most --idle"]),
        (&["load", "--load", "sideways"], &["up, down, both, udp"]),
        (&["load", "--probe-rate", "100", "--probe-closed-loop"], &["--probe-closed-loop"]),
    ] {
        rp.run(args).failure(2, needles);
    }
}

/// Ctrl-C in the loaded phase: the probes' figures (and the load's so far) are printed,
/// marked partial, exit 130, and the phases still account for every probe that completed.
#[test]
fn ctrl_c_under_load_prints_the_probes_partial() {
    let out = std::env::temp_dir().join(format!("ringperf-load-ctrl-c-{}.json", std::process::id()));
    let file = std::fs::File::create(&out).expect("a scratch file");
    let mut cmd = ringperf!().command(&["load", "--idle", "0.6", "-l", "30", "--load", "up", "--json"]);
    cmd.stdin(std::process::Stdio::null()).stdout(file).stderr(std::process::Stdio::piped());
    let mut client = ringperf_tests::ChildGuard::spawn(cmd);
    // Past the idle phase and the load's set-up; a slower start still stops a partial run.
    thread::sleep(Duration::from_secs(2));
    client.signal(libc::SIGINT);
    let status = client.wait_timeout(Duration::from_secs(20)).expect("ringperf load stopped after Ctrl-C");
    let text = std::fs::read_to_string(&out).expect("the report");
    let _ = std::fs::remove_file(&out);
    assert_eq!(status.code(), Some(130), "stdout: {text}");
    let r: LoadReport = parse("the partial report", &text);
    assert!(r.partial);
    let why = r.partial_reason.as_deref().expect("partial_reason");
    assert!(why.contains("Ctrl-C"), "{why}");
    assert!(r.probe.local.transactions > 0);
    if r.split_ns.is_some() {
        check_phases(&r);
    }
}

/// --keyval and --csv give the same names; the phases' counts add up to the probe's
/// transactions there too, and the load's direction has a throughput, the others none.
#[test]
fn load_keyval_and_csv_carry_the_phases() {
    let rp = ringperf!();
    let run = |format: &str| {
        let args = format!("load --idle 0.4 -l 0.6 --load up --load-flows 1 {format}");
        rp.run(&args.split(' ').collect::<Vec<_>>()).success().stdout
    };
    let keyval: Vec<(String, String)> = run("--keyval")
        .lines()
        .map(|l| l.split_once('=').map(|(n, v)| (n.to_string(), v.to_string())).expect("NAME=value"))
        .collect();
    let get = |name: &str| {
        keyval.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("no {name}"))
    };
    let count = |name: &str| get(name).parse::<u64>().unwrap_or_else(|_| panic!("{name} is not a count"));
    assert_eq!(count("IDLE_COUNT") + count("LOADED_COUNT"), count("PROBE_TRANSACTIONS"));
    assert!(get("LOAD_UP_THROUGHPUT").parse::<f64>().expect("a rate") > 0.0);
    assert_eq!(get("LOAD_DOWN_THROUGHPUT"), "", "no load down: no figure, not 0");
    assert_eq!(get("PARTIAL"), "0");
    let csv = run("--csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one row: {csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let names: Vec<&str> = keyval.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(header, names);
    assert_eq!(lines[1].split(',').count(), header.len());
}
