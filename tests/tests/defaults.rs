//! The default engines (issue 31): which engines each command resolves to and why, the
//! report naming them (JSON, header, keyval), and every workload's default run with both
//! sides' counts equal, against the embedded server.

use ringperf_tests::{
    check_rr_report, check_side_common, check_stream_report, ringperf, EngineChoice, EngineReason,
    SideReportExt, TestReport, TestReportExt,
};

/// The engines both sides ran, as the sides report them, and the spec's reasons.
fn engines(r: &TestReport) -> (String, String, EngineChoice) {
    for (side, x) in r.sides() {
        assert_eq!(
            (x.send_engine, x.recv_engine),
            (r.spec.local.send_engine, r.spec.local.recv_engine),
            "{side} ran other engines than the spec's"
        );
    }
    let pair = (r.local.send_engine.name().to_string(), r.local.recv_engine.name().to_string());
    (pair.0, pair.1, r.spec.engine_choice.expect("spec.engine_choice"))
}

fn both(why: EngineReason) -> EngineChoice {
    EngineChoice { send: why, recv: why }
}

/// One transaction alone per worker runs the classic loops; several flows per worker the
/// ring; `--harness` and named engines override the rule; each report says why.
#[test]
fn each_command_resolves_its_engines_and_the_report_says_why() {
    let rp = ringperf!();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-l", "0.5"]);
        rp.run_report(&all)
    };
    let syscall = ("syscall".to_string(), "syscall".to_string());
    let r = rp.run_report(&["rr", "-l", "1"]);
    check_rr_report(&r);
    let (s, v, why) = engines(&r);
    assert_eq!(((s, v), why), (syscall.clone(), both(EngineReason::OneInFlight)));
    assert!(r.local.ring.syscalls.is_some(), "the classic loop counts its system calls");
    assert_eq!(r.local.ring.enters, 0, "and enters no ring");

    let r = run(&["rr", "--flows", "4", "--threads", "1"]);
    check_rr_report(&r);
    assert_eq!(engines(&r), ("copy".into(), "multishot".into(), both(EngineReason::SeveralFlows)));
    assert!(r.local.ring.enters > 0);

    let r = run(&["rr", "--harness", "io-uring"]);
    check_rr_report(&r);
    assert_eq!(engines(&r), ("copy".into(), "multishot".into(), both(EngineReason::HarnessAsked)));

    let r = run(&["rr", "--flows", "2", "--harness", "classic"]);
    check_rr_report(&r);
    assert_eq!(engines(&r), (syscall.0.clone(), syscall.1.clone(), both(EngineReason::HarnessAsked)));

    let r = run(&["rr", "--send-engine", "copy", "--recv-engine", "recv", "--harness", "classic"]);
    check_rr_report(&r);
    assert_eq!(engines(&r), ("copy".into(), "recv".into(), both(EngineReason::Asked)), "named engines win");

    let r = run(&["rr", "--send-engine", "zc"]);
    check_rr_report(&r);
    let asked_and_paired = EngineChoice { send: EngineReason::Asked, recv: EngineReason::Paired };
    assert_eq!(engines(&r), ("zc".into(), "multishot".into(), asked_and_paired));

    // A count ends the window early, so the timed report's checks do not apply.
    let r = run(&["rr", "--transactions", "200"]);
    assert_eq!(
        engines(&r),
        ("copy".into(), "multishot".into(), both(EngineReason::Counted)),
        "a count needs the ring"
    );
    assert_eq!((r.local.transactions, r.remote().transactions), (200, 200));
}

/// The human header names the engines and why, in the words the reasons have.
#[test]
fn the_header_names_the_engines_and_why() {
    let rp = ringperf!();
    for (args, want) in [
        (
            &["rr", "-l", "0.3"][..],
            "send engine syscall, receive engine syscall (default: one transaction in flight per worker)",
        ),
        (
            &["rr", "-l", "0.3", "--flows", "2"][..],
            "send engine copy, receive engine multishot (default: several flows per worker)",
        ),
        (
            &["rr", "-l", "0.3", "--harness", "io-uring"][..],
            "receive engine multishot (as asked by --harness)",
        ),
        (
            &["rr", "-l", "0.3", "--send-engine", "zc"][..],
            "send engine zc (as asked), receive engine multishot (paired with the send engine asked for)",
        ),
        (
            &["stream", "-l", "0.3"][..],
            "send engine copy, receive engine multishot (default: a bulk stream batches on the ring)",
        ),
        (&["crr", "-l", "0.3"][..], "receive engine syscall (default: one transaction in flight per worker)"),
        // netperf's form builds its spec through the same rule.
        (&["-t", "TCP_RR", "-l", "0.3"][..], "send engine syscall, receive engine syscall (default: one"),
    ] {
        let out = rp.run(args).success();
        let header = out.stdout.lines().next().unwrap_or_default();
        assert!(header.contains(want), "{args:?}: the header does not say {want:?}: {header}");
    }
    let out = rp.run(&["rr", "-l", "0.3", "--keyval"]).success();
    assert!(out.stdout.lines().any(|l| l == "ENGINE_REASON=one-in-flight"), "{out}");
    let out = rp.run(&["udp-rr", "-l", "0.3", "--keyval"]).success();
    assert!(out.stdout.lines().any(|l| l == "ENGINE_REASON=datagrams"), "udp-rr runs on the ring: {out}");
}

/// Every workload's default run: both sides count the same transactions and bytes (TCP),
/// and UDP's counts add up with its losses counted.
#[test]
fn every_default_counts_alike_on_both_sides() {
    let rp = ringperf!();
    let r = rp.run_report(&["rr", "-l", "1"]);
    check_rr_report(&r);

    let r = rp.run_report(&["crr", "-l", "1"]);
    assert_eq!(engines(&r).0, "syscall");
    let (local, remote) = (&r.local, r.remote());
    let t = local.transactions;
    assert!(t > 0, "crr made no connection");
    assert_eq!(t, remote.transactions, "client and server count different connections");
    assert_eq!(local.crr().connections, t);
    assert_eq!(remote.crr().connections, t);
    assert_eq!((local.bytes_sent, remote.bytes_received), (t, t));
    assert_eq!((remote.bytes_sent, local.bytes_received), (t, t));

    for (args, reverse) in
        [(&["stream", "-l", "1"][..], false), (&["stream", "-l", "1", "--reverse"][..], true)]
    {
        let r = rp.run_report(args);
        assert_eq!(engines(&r).2, both(EngineReason::Bulk), "{args:?}");
        check_stream_report(&r, reverse);
    }

    let r = rp.run_report(&["udp-rr", "-l", "1"]);
    assert_eq!(engines(&r).2, both(EngineReason::Datagrams), "udp-rr runs on the ring");
    let t = r.local.transactions;
    assert!(t > 0, "udp-rr completed no transaction");
    assert_eq!(r.local.latency().count, t);
    assert_eq!((r.local.bytes_sent, r.local.bytes_received), (t * 8, t * 8));
    // The server counts each request once; the client may give up on its last one at the
    // deadline after the server answered it.
    let served = r.remote().transactions;
    assert!(served >= t && served <= t + 1, "the server counted {served} transactions, the client {t}");
    let (tx, rx) = (r.local.udp(), r.remote().udp());
    let (sent, retrans) = (tx.datagrams_sent, tx.retransmissions);
    assert!(retrans <= tx.timeouts);
    assert!(sent >= t + retrans && sent <= t + retrans + 1, "{sent} requests for {t} transactions");
    // Loopback loses nothing: every request arrived, a retransmitted one as a duplicate.
    assert_eq!(rx.datagrams_received + rx.duplicated, sent);
    for (side, x) in r.sides() {
        check_side_common(side, x);
    }

    let r = rp.run_report(&["udp-stream", "-l", "1", "-m", "64"]);
    assert_eq!(engines(&r).2, both(EngineReason::Datagrams));
    let (tx, rx) = (r.local.udp(), r.remote().udp());
    let (sent, received) = (tx.datagrams_sent, rx.datagrams_received);
    assert!(received > 0 && received <= sent, "{received} received of {sent} sent");
    let span = rx.sequence_span;
    assert_eq!(received + rx.lost, span, "received + lost != the sequence span seen");
    assert!(span <= sent + tx.send_errors);
    assert_eq!(r.local.bytes_sent, sent * 64);
    assert_eq!(r.remote().bytes_received, (received + rx.duplicated) * 64);
    for (side, x) in r.sides() {
        check_side_common(side, x);
    }
}

/// `ringperf engines rr` runs the default harness, then the other, each counting alike on
/// both sides, and prints the difference per transaction.
#[test]
fn engines_runs_a_workload_on_both_harnesses_side_by_side() {
    let rp = ringperf!();
    let reports: Vec<TestReport> = rp.run_parsed(&["engines", "rr", "-l", "0.3"]);
    let pairs: Vec<(String, String, EngineChoice)> = reports.iter().map(engines).collect();
    assert_eq!(
        pairs.iter().map(|(s, v, _)| (s.as_str(), v.as_str())).collect::<Vec<_>>(),
        [("syscall", "syscall"), ("copy", "multishot")]
    );
    for x in &reports {
        check_rr_report(x);
    }
    let out = rp.run(&["engines", "crr", "-l", "0.3"]).success();
    let line = out.stdout.lines().find(|l| l.starts_with("crr: ")).unwrap_or_default();
    assert!(line.contains("syscall ") && line.contains("us/tr (default), io_uring copy/recv "), "{out}");
    assert!(line.contains(" %)"), "the difference in percent: {line}");
    rp.run(&["engines", "rr", "--send-engine", "zc", "-l", "0.3"]).failure(2, &["--send-engines"]);
    rp.run(&["engines", "stream", "--harness", "classic"])
        .failure(2, &["--harness does not apply to engines"]);
}
