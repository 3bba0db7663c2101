//! Request/response against the embedded server: both sides count the same transactions
//! (one in flight, or a --burst of them), the latency histogram covers all of them, and its
//! percentiles are ordered.

use ringperf_tests::{at, check_rr_report, report_of, ringperf, RecvEngine, SideReportExt, TestReportExt};

#[test]
fn rr_sides_agree_and_latency_is_ordered() {
    let r = ringperf!().run_report(&["rr", "-l", "1"]);
    check_rr_report(&r);
    assert_eq!(r.spec.request_size, 1);
    assert_eq!(r.spec.response_size, 1);
}

/// Unequal request and response sizes: a swap of the two anywhere shows in the byte counts.
#[test]
fn rr_unequal_sizes_are_counted_per_direction() {
    let r = ringperf!().run_report(&["rr", "-l", "1", "-r", "100,3000"]);
    check_rr_report(&r);
    assert_eq!(r.spec.request_size, 100);
    assert_eq!(r.spec.response_size, 3000);
}

/// rr's receive on the ring is a standing multishot receive on both sides; the one-shot
/// chain stays one flag away, and both count the same transactions on each side.
#[test]
fn rr_on_the_ring_defaults_to_a_standing_receive_and_the_chain_still_works() {
    let r = ringperf!().run_report(&["rr", "-l", "0.5", "--harness", "io-uring"]);
    check_rr_report(&r);
    for (side, x) in r.sides() {
        assert_eq!(x.recv_engine, RecvEngine::Multishot, "{side}");
    }
    // A standing receive posts one CQE per response and is never re-armed: no receive SQE
    // per transaction on the client, so it submits about one SQE (the send) per transaction.
    let tx = r.local.transactions;
    let sqes = r.local.ring.sqes;
    assert!(sqes < tx + tx / 4 + 64, "{sqes} SQEs for {tx} transactions: the receive is re-armed");
    let r = ringperf!().run_report(&["rr", "-l", "0.5", "--recv-engine", "recv"]);
    check_rr_report(&r);
    assert_eq!(r.local.recv_engine, RecvEngine::Recv);
    let tx = r.local.transactions;
    assert!(r.local.ring.sqes >= 2 * tx, "the chain submits a send and a receive per transaction");
}

/// Both task-run modes drive rr to the same counts, and the report says which one ran.
#[test]
fn rr_runs_under_either_task_run_mode() {
    for (mode, deferred) in [("deferred", true), ("cooperative", false)] {
        let r = ringperf!().run_report(&["rr", "-l", "0.5", "--task-run", mode]);
        check_rr_report(&r);
        for (side, x) in r.sides() {
            assert_eq!(x.ring_setup.defer_taskrun, deferred, "{mode} {side}");
        }
    }
}

/// --burst N: the client sends the first N requests at once, so the server finds all N
/// waiting together (its own view of the depth); both sides count the same transactions
/// and the latency histogram still holds every one of them.
#[test]
fn burst_depth_is_what_the_server_sees_waiting() {
    let r = ringperf!().run_report(&["rr", "-l", "1", "--burst", "8"]);
    check_rr_report(&r);
    assert_eq!(r.spec.burst, 8);
    for (side, x) in r.sides() {
        assert_eq!(x.rr().burst, 8, "{side}");
    }
    assert_eq!(r.remote().rr().max_in_flight, 8, "the server never saw the whole burst waiting");
    assert_eq!(r.local.rr().max_in_flight, 8, "the client never had the whole burst out");
}

/// Without --burst the spec carries no burst (so an older server still takes it) and each
/// side saw one transaction at a time.
#[test]
fn without_a_burst_each_side_sees_one_transaction_at_a_time() {
    // The ring's workload measures its depth; the classic loop is one deep by construction.
    let json = ringperf!().run_json(&["rr", "-l", "0.5", "--harness", "io-uring"]);
    let r = report_of(&json);
    check_rr_report(&r);
    // The JSON a server reads: no "burst" key at all.
    assert!(at(&json, "spec").get("burst").is_none(), "a default spec names a burst: {}", at(&json, "spec"));
    for (side, x) in r.sides() {
        assert_eq!(x.rr().burst, 1, "{side}");
        assert_eq!(x.rr().max_in_flight, 1, "{side}");
    }
}

/// More transactions in flight per flow keep the loopback path busier than one ping-pong:
/// the rate with 16 in flight is above the rate with one (a ratio, not a threshold).
#[test]
fn transactions_per_second_rise_with_the_burst() {
    let rate = |burst: &str| {
        // Both on the ring, which a burst needs: one harness against itself.
        let r = ringperf!().run_report(&["rr", "-l", "1", "--burst", burst, "--harness", "io-uring"]);
        check_rr_report(&r);
        r.summary.transactions_per_sec.expect("summary.transactions_per_sec")
    };
    let (one, sixteen) = (rate("1"), rate("16"));
    assert!(sixteen > one, "16 in flight ran {sixteen:.0} trans/s, one in flight {one:.0}");
}

/// Large responses with a burst fill the send buffers, where two sends in flight on one
/// socket would reorder the stream: --verify checks every byte on both sides.
#[test]
fn a_burst_of_large_responses_keeps_both_streams_intact() {
    for recv in ["recv", "multishot"] {
        let r = ringperf!().run_report(&[
            "rr",
            "-l",
            "1",
            "--burst",
            "8",
            "-r",
            "1000,50000",
            "--verify",
            "--recv-engine",
            recv,
        ]);
        check_rr_report(&r);
        for (side, x) in r.sides() {
            assert_eq!(x.verify().mismatches, 0, "{recv} {side}");
            assert!(x.verify().bytes_checked > 0, "{recv} {side}");
        }
        let t = r.local.transactions;
        assert_eq!(r.local.verify().bytes_checked, t * 50_000, "{recv}: client checked");
        assert_eq!(r.remote().verify().bytes_checked, t * 1000, "{recv}: server checked");
    }
}

/// Every send engine with every receive engine keeps a burst of 4 counted alike on both
/// sides.
#[test]
fn every_engine_pair_counts_a_burst_alike() {
    ringperf!().run_report_per_engine_pair(&["rr", "-l", "0.3", "--burst", "4"], |send, recv, r| {
        check_rr_report(r);
        assert_eq!(r.local.send_engine.name(), send);
        assert_eq!(r.local.recv_engine.name(), recv);
        assert_eq!(r.remote().rr().max_in_flight, 4, "{send}/{recv}");
    });
}

/// Where --burst does not apply it is refused, saying what to drop.
#[test]
fn burst_is_refused_where_it_does_not_apply() {
    let out = ringperf!().run(&["crr", "-l", "0.2", "--burst", "2"]);
    out.failure(2, &["--burst", "crr", "rr and udp-rr"]);
    let out = ringperf!().run(&[
        "rr",
        "-l",
        "0.2",
        "--burst",
        "2",
        "--send-engine",
        "syscall",
        "--recv-engine",
        "syscall",
    ]);
    out.failure(2, &["drop --burst"]);
    let out = ringperf!().run(&["rr", "-l", "0.2", "--burst", "0"]);
    out.failure(2, &["--burst"]);
}
