//! Request/response against the embedded server: both sides count the same transactions,
//! the latency histogram covers all of them, and its percentiles are ordered.

use ringperf_tests::{bool_at, check_rr_report, ringperf, str_at, u64_at};

#[test]
fn rr_sides_agree_and_latency_is_ordered() {
    let r = ringperf!().run_json(&["rr", "-l", "1"]);
    check_rr_report(&r);
    assert_eq!(u64_at(&r, "spec.request_size"), 1);
    assert_eq!(u64_at(&r, "spec.response_size"), 1);
}

/// Unequal request and response sizes: a swap of the two anywhere shows in the byte counts.
#[test]
fn rr_unequal_sizes_are_counted_per_direction() {
    let r = ringperf!().run_json(&["rr", "-l", "1", "-r", "100,3000"]);
    check_rr_report(&r);
    assert_eq!(u64_at(&r, "spec.request_size"), 100);
    assert_eq!(u64_at(&r, "spec.response_size"), 3000);
}

/// rr's default receive is a standing multishot receive on both sides; the one-shot chain
/// stays one flag away, and both count the same transactions on each side.
#[test]
fn rr_defaults_to_a_standing_receive_and_the_chain_still_works() {
    let r = ringperf!().run_json(&["rr", "-l", "0.5"]);
    check_rr_report(&r);
    for side in ["local", "remote"] {
        assert_eq!(str_at(&r, &format!("{side}.recv_engine")), "multishot", "{side}");
    }
    // A standing receive posts one CQE per response and is never re-armed: no receive SQE
    // per transaction on the client, so it submits about one SQE (the send) per transaction.
    let tx = u64_at(&r, "local.transactions");
    let sqes = u64_at(&r, "local.ring.sqes");
    assert!(sqes < tx + tx / 4 + 64, "{sqes} SQEs for {tx} transactions: the receive is re-armed");
    let r = ringperf!().run_json(&["rr", "-l", "0.5", "--recv-engine", "recv"]);
    check_rr_report(&r);
    assert_eq!(str_at(&r, "local.recv_engine"), "recv");
    let tx = u64_at(&r, "local.transactions");
    assert!(
        u64_at(&r, "local.ring.sqes") >= 2 * tx,
        "the chain submits a send and a receive per transaction"
    );
}

/// Both task-run modes drive rr to the same counts, and the report says which one ran.
#[test]
fn rr_runs_under_either_task_run_mode() {
    for (mode, deferred) in [("deferred", true), ("cooperative", false)] {
        let r = ringperf!().run_json(&["rr", "-l", "0.5", "--task-run", mode]);
        check_rr_report(&r);
        for side in ["local", "remote"] {
            assert_eq!(bool_at(&r, &format!("{side}.ring_setup.defer_taskrun")), deferred, "{mode} {side}");
        }
    }
}
