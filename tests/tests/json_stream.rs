//! `--json-stream`: one JSON object per line while the test runs, interval objects first and
//! the whole report last, each line out as soon as it happens.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use ringperf_tests::{
    at, check_rr_report, check_stream_report, report_of, ringperf, u64_at, ChildGuard, IntervalSample,
    TestReport,
};
use serde_json::Value;

/// Parses every line of `out`, failing on the first that is not one JSON object.
fn lines(out: &str) -> Vec<Value> {
    out.lines()
        .enumerate()
        .map(|(i, l)| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("line {} is not JSON ({e}): {l}", i + 1));
            assert!(v.is_object(), "line {} is not an object: {l}", i + 1);
            v
        })
        .collect()
}

/// An interval line's sample: the fields it shares with the report's interval samples.
fn sample(line: &Value) -> IntervalSample {
    serde_json::from_value(line.clone()).unwrap_or_else(|e| panic!("not an interval sample ({e}): {line}"))
}

/// Splits the lines into the interval objects and the report, checking that every line but
/// the last is an interval and the last is not.
fn intervals_then_report(all: &[Value]) -> (&[Value], TestReport) {
    let (report, intervals) = all.split_last().expect("no line at all");
    assert!(!intervals.is_empty(), "no interval line before the report");
    for (i, v) in intervals.iter().enumerate() {
        assert_eq!(
            v.get("type").and_then(Value::as_str),
            Some("interval"),
            "line {} is no interval: {v}",
            i + 1
        );
    }
    assert!(report.get("type").is_none(), "the last line is not the report: {report}");
    (intervals, report_of(report))
}

/// The streamed intervals are the local side's samples of this same run: each equals the
/// report's own `local.intervals` entry of that index, counters and all.
fn same_as_reported(intervals: &[Value], report: &TestReport) {
    let reported = &report.local.intervals;
    assert_eq!(intervals.len(), reported.len(), "streamed and reported interval counts differ");
    let counters = |s: &IntervalSample| {
        (s.index, s.start_ns, s.duration_ns, s.bytes_sent, s.bytes_received, s.transactions, s.retransmits)
    };
    for (line, reported) in intervals.iter().zip(reported) {
        let streamed = sample(line);
        assert_eq!(counters(&streamed), counters(reported), "streamed {line} reported {reported:?}");
        // The line's own field, which the report's samples do not have.
        assert_eq!(u64_at(line, "end_ns"), streamed.start_ns + streamed.duration_ns);
    }
}

#[test]
fn rr_lines_parse_intervals_come_first_and_the_report_last() {
    let out = ringperf!().run(&["rr", "-l", "1", "-D", "0.2", "--json-stream"]).success();
    let all = lines(&out.stdout);
    let (intervals, report) = intervals_then_report(&all);
    check_rr_report(&report);
    same_as_reported(intervals, &report);
    for v in intervals {
        // rr times its transactions: each interval has its rate, CPU and percentiles.
        let tps = v["transactions_per_sec"].as_f64().expect("transactions_per_sec");
        assert!(tps >= 0.0, "{v}");
        let s = sample(v);
        assert!(s.busy_percent.is_some_and(|c| (0.0..=100.0).contains(&c)), "{v}");
        if s.transactions > 0 {
            let p = |q: Option<u64>| q.unwrap_or_else(|| panic!("an rr interval without percentiles: {v}"));
            assert!(p(s.latency_p50_ns) <= p(s.latency_p99_ns), "{v}");
        }
    }
    let streamed: u64 = intervals.iter().map(|v| sample(v).transactions).sum();
    assert!(streamed <= report.local.transactions, "intervals counted more than the run");
}

/// The last line is the object `--json` prints: the same keys at the top and on each side,
/// and the same schema version.
#[test]
fn the_last_line_is_the_json_report() {
    let out = ringperf!().run(&["stream", "-l", "1", "--json-stream"]).success();
    let all = lines(&out.stdout);
    let (intervals, report) = intervals_then_report(&all);
    check_stream_report(&report, false);
    same_as_reported(intervals, &report);
    for v in intervals {
        assert!(v["throughput_bits_per_sec"].as_f64().is_some_and(|t| t >= 0.0), "{v}");
        assert!(v["transactions_per_sec"].is_null(), "a stream interval with a transaction rate: {v}");
    }
    // The keys as a user's script sees them: the last line's and --json's.
    let streamed = all.last().expect("the report line");
    let json = ringperf!().run_json(&["stream", "-l", "0.5"]);
    assert_eq!(report.schema_version, report_of(&json).schema_version);
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(streamed), keys(&json), "top-level keys differ");
    for side in ["local", "remote", "spec", "summary"] {
        assert_eq!(keys(at(streamed, side)), keys(at(&json, side)), "{side} keys differ");
    }
}

/// Lines leave as they happen: on a 3 s test the first interval line is read while the
/// process still runs.
#[test]
fn interval_lines_arrive_while_the_test_runs() {
    let mut cmd = ringperf!().command(&["rr", "-l", "3", "-D", "0.5", "--json-stream"]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::null()).stdin(Stdio::null());
    let mut child = ChildGuard::spawn(cmd);
    let stdout = child.child_mut().stdout.take().expect("a stdout pipe");
    let mut reader = BufReader::new(stdout);
    let mut first = String::new();
    reader.read_line(&mut first).expect("reading the first line");
    assert!(child.try_status().is_none(), "the first line came only when the process ended: {first}");
    let v: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("not JSON ({e}): {first}"));
    assert_eq!(v["type"], "interval", "{v}");
    let mut rest = String::new();
    for line in reader.lines() {
        rest.push_str(&line.expect("reading a line"));
        rest.push('\n');
    }
    let status = child.wait_timeout(std::time::Duration::from_secs(30)).expect("the run ended");
    assert!(status.success(), "{status}");
    let all = lines(&format!("{first}{rest}"));
    let (intervals, report) = intervals_then_report(&all);
    check_rr_report(&report);
    same_as_reported(intervals, &report);
}

/// Where one line per report cannot follow one test, --json-stream is refused.
#[test]
fn json_stream_is_refused_where_it_cannot_follow_one_test() {
    ringperf!().run(&["engines", "-l", "0.2", "--json-stream"]).failure(2, &["--json-stream", "engines"]);
    ringperf!().run(&["sweep", "rr", "-l", "0.2", "--json-stream"]).failure(2, &["--json-stream", "--json"]);
    ringperf!().run(&["rr", "-l", "0.2", "--json-stream", "--no-intervals"]).failure(2, &["--json-stream"]);
    ringperf!().run(&["rr", "-l", "0.2", "--json-stream", "--json"]).failure(2, &["--json-stream"]);
}
