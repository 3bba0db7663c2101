//! Request/response against the embedded server: both sides count the same transactions,
//! the latency histogram covers all of them, and its percentiles are ordered.

use ringperf_tests::{check_rr_report, ringperf, u64_at};

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
