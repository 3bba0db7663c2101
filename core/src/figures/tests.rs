use super::text::call_size;
use super::*;
use crate::measure::profile::diff_name;
use crate::spec::{Direction, TestSpec, Workload};

/// Each reader finds a figure by one of its names: two figures under one name would let
/// one reader show a different figure than another under the same name.
#[test]
fn no_name_is_given_twice() {
    for (what, names) in [
        ("name", all().iter().filter_map(|f| f.name).collect::<Vec<_>>()),
        ("keyval", all().iter().filter_map(|f| f.keyval).collect()),
        ("netperf", all().iter().filter_map(|f| f.netperf).collect()),
    ] {
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "a {what} given twice: {names:?}");
    }
}

/// What each reader needs of a figure is there: a chart's figure is taken from each
/// iteration (or from the profile), a judged one too, a named field has its text.
#[test]
fn every_figure_can_be_taken_by_each_reader_that_names_it() {
    for f in all() {
        let what = f.name.or(f.keyval).or(f.netperf).expect("a figure has a name");
        if f.name.is_some() {
            assert!(f.take.iteration.is_some() || f.take.cost.is_some(), "{what}: no samples");
            assert!(
                !f.label().is_empty() && f.unit != Unit::Text,
                "{what}: a chart needs a label and a unit"
            );
        }
        if f.take.interval.is_some() {
            assert!(f.take.iteration.is_some(), "{what}: interval samples back up iterations");
        }
        assert_eq!(
            f.keyval.is_some(),
            f.take.text.is_some(),
            "{what}: a keyval name and its text go together"
        );
        if f.take.netperf_text.is_some() {
            assert!(f.netperf.is_some(), "{what}: netperf text without a netperf name");
        }
        if f.netperf.is_some() {
            assert!(f.take.text.is_some() || f.take.netperf_text.is_some(), "{what}: netperf prints nothing");
        }
    }
}

#[test]
fn every_busy_category_is_a_figure_on_both_sides_under_its_diff_name() {
    for row in CATEGORIES.iter() {
        for local in [true, false] {
            let f = by_name(diff_name(local, row.category));
            if row.category == Category::Idle {
                assert!(f.is_none(), "idle is no cost");
                continue;
            }
            let f = f.expect("a figure per busy category and side");
            assert!(f.needs_profile() && f.better == Some(Better::Lower), "{:?}", f.name);
            assert!(f.label().contains(row.label), "{}", f.label());
            assert!(std::ptr::eq(cost(local, row.category).expect("by its category"), f));
            assert!(judged_names().any(|n| Some(n) == f.name), "diff --fail-on takes {:?}", f.name);
        }
    }
    assert!(!by_name("throughput").expect("throughput").needs_profile());
    assert!(by_name("local_network_sd").expect("network sd").needs_profile());
}

/// diff's table lists its judged figures in this order, rates first; adding one to the
/// registry must not reorder them.
#[test]
fn diff_judges_the_headline_figures_in_its_order() {
    let names: Vec<&str> = judged().filter_map(|f| f.name).collect();
    assert_eq!(
        names,
        [
            "throughput",
            "transactions",
            "local_cpu",
            "remote_cpu",
            "local_sd",
            "remote_sd",
            "p50",
            "p99",
            "local_rwnd_limited",
            "remote_rwnd_limited",
            "local_sndbuf_limited",
            "remote_sndbuf_limited",
            "local_delivered_ce",
            "remote_delivered_ce",
            "local_min_rtt",
            "remote_min_rtt"
        ]
    );
    let better = |n: &str| by_name(n).and_then(|f| f.better);
    assert_eq!(better("throughput"), Some(Better::Higher));
    assert_eq!(better("p99"), Some(Better::Lower));
}

#[test]
fn axis_labels_carry_the_charted_unit() {
    let label = |n: &str| by_name(n).expect(n).axis_label();
    assert_eq!(label("throughput"), "throughput (10^6 bits/s)");
    assert_eq!(label("transactions"), "transactions/s");
    assert_eq!(label("p50"), "p50 round trip (us)");
    assert_eq!(label("local_cost_tcp"), "local cost in TCP (us/KB or us/Tr)");
    assert_eq!(by_name("p99").expect("p99").unit.scale(), 1e-3, "ns charted in us");
}

/// LOCAL_SEND_SIZE and its kin mean what netperf's omni output means: the size of one
/// side's calls, 0 for the direction a stream side does not move, -r's sizes in
/// request/response.
#[test]
fn call_sizes_follow_netperfs_meaning() {
    let mut s = TestSpec::for_workload(Workload::Stream);
    s.send_size = 1000;
    s.recv_size = 2000;
    let sizes = |s: &TestSpec| {
        [(true, true), (true, false), (false, true), (false, false)].map(|(l, send)| call_size(s, l, send))
    };
    // LOCAL_SEND, LOCAL_RECV, REMOTE_SEND, REMOTE_RECV
    assert_eq!(sizes(&s), ["1000", "0", "0", "2000"]);
    s.direction = Direction::ServerToClient;
    assert_eq!(sizes(&s), ["0", "2000", "1000", "0"], "the server sends in a reversed stream");
    let mut rr = TestSpec::for_workload(Workload::Rr);
    rr.request_size = 64;
    rr.response_size = 1024;
    assert_eq!(sizes(&rr), ["64", "1024", "1024", "64"]);
}

#[test]
fn netperf_reads_whole_microseconds_but_keeps_an_empty_field() {
    assert_eq!(text::whole_us("12.600".into()).as_deref(), Some("13"));
    assert_eq!(text::whole_us(String::new()).as_deref(), Some(""));
}
